// SPDX-License-Identifier: Apache-2.0
/*
 * nvtx.c - NVTX ranges as gpufl scopes, through NVTX's own injection: NVTX
 * hands gpufl its callback tables (gpufl_nvtx_inject), and push/pop and
 * start/end ranges become scope records marked with their source, domain,
 * category and payload (docs/nvtx.md). Callbacks return at once unless a
 * session runs an engine from Trace up.
 */
#include "nvidia/nvtx.h"

#include "core/scope.h"
#include "util/log.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#define LIKELY(x)   __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

#define DOMAINS_MAX          1024 /* nvtxDomainCreate: never freed, so capped */
#define CATEGORIES_MAX       256  /* named categories per domain */
#define STRINGS_MAX          (1u << 16)
#define STRINGS_BYTES_MAX    ((size_t)16 << 20)
#define PUSH_STACK_MAX       GPUFL_SCOPE_STACK_MAX
#define INJECTION_VAR        "NVTX_INJECTION64_PATH"
#define RANGE_GENERATION_BIT 53 /* scope ids stay below 2^53; the session's generation above */

/* Set while a session runs an engine from Trace up. */
static atomic_int capturing;

/* The running session's generation while ranges are recorded, else 0. */
static inline uint64_t live(void) {
    if (LIKELY(!atomic_load_explicit(&capturing, memory_order_relaxed))) return 0;
    return gpufl__scope_generation();
}
static char why_off[320];     /* why NVTX ranges are not recorded, when they are not */
static atomic_int injections; /* NVTX instances (modules) that gave gpufl their tables */

/* ---------------- domains, categories, registered strings ---------------- */

typedef struct category {
    uint32_t id;
    uint16_t len;
    char *name;
} category_t;

/* NVTX's opaque domain handle is ours to define. Never freed: a range on
 * another thread may still name it after nvtxDomainDestroy. */
struct nvtxDomainRegistration_st {
    struct nvtxDomainRegistration_st *next; /* all of them, from `domains` */
    char *name;
    size_t len;
    /* named categories, published by count (release) after the entry */
    category_t categories[CATEGORIES_MAX];
    _Atomic uint32_t n_categories;
};

struct nvtxStringRegistration_st {
    struct nvtxStringRegistration_st *next; /* all of them, from `strings` */
    size_t len;
    char text[];
};

static struct nvtxDomainRegistration_st default_domain = {NULL, "", 0, {{0, 0, NULL}}, 0};
/* Every registration, owned by gpufl for the life of the process. */
static struct nvtxDomainRegistration_st *domains;
static struct nvtxStringRegistration_st *strings;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t n_domains, n_strings, string_bytes;
static _Atomic uint64_t registry_full; /* domains, categories or strings past their caps */

/* Counts a registration past its cap; says so the first time (registration
 * is not the hot path: NVTX's create and register calls). */
static void registry_over(const char *what) {
    if (atomic_fetch_add(&registry_full, 1) == 0)
        gpufl__warn("NVTX: more %s than gpufl keeps: ranges naming the rest fall back to "
                    "the default domain, no category name or (unnamed) (docs/nvtx.md)",
                    what);
}

static struct nvtxDomainRegistration_st *domain_of(nvtxDomainHandle_t d) {
    return d ? d : &default_domain;
}

/* UTF-32 (Linux wchar_t) to UTF-8, at most cap bytes; returns the length. */
static size_t to_utf8(const wchar_t *w, char *out, size_t cap) {
    size_t n = 0;
    for (; w && *w; w++) {
        uint32_t c = (uint32_t)*w;
        char b[4];
        size_t k;
        if (c < 0x80) {
            b[0] = (char)c, k = 1;
        } else if (c < 0x800) {
            b[0] = (char)(0xC0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3F)), k = 2;
        } else if (c < 0x10000) {
            if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;
            b[0] = (char)(0xE0 | c >> 12), b[1] = (char)(0x80 | (c >> 6 & 0x3F));
            b[2] = (char)(0x80 | (c & 0x3F)), k = 3;
        } else if (c < 0x110000) {
            b[0] = (char)(0xF0 | c >> 18), b[1] = (char)(0x80 | (c >> 12 & 0x3F));
            b[2] = (char)(0x80 | (c >> 6 & 0x3F)), b[3] = (char)(0x80 | (c & 0x3F)), k = 4;
        } else {
            b[0] = (char)0xEF, b[1] = (char)0xBF, b[2] = (char)0xBD, k = 3; /* U+FFFD */
        }
        if (n + k > cap) break;
        memcpy(out + n, b, k);
        n += k;
    }
    return n;
}

static char *copy_text(const char *s, size_t len) {
    char *p = malloc(len + 1);
    if (!p) return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

static nvtxDomainHandle_t domain_create(const char *name, size_t len) {
    if (len > GPUFL_NVTX_NAME_MAX) len = GPUFL_NVTX_NAME_MAX;
    pthread_mutex_lock(&registry_lock);
    struct nvtxDomainRegistration_st *d = NULL;
    if (n_domains < DOMAINS_MAX && (d = calloc(1, sizeof *d)) != NULL &&
        (d->name = copy_text(name ? name : "", name ? len : 0)) != NULL) {
        d->len = name ? len : 0;
        d->next = domains;
        domains = d;
        n_domains++;
    } else {
        free(d);
        d = NULL;
        registry_over("domains (1024)");
    }
    pthread_mutex_unlock(&registry_lock);
    return d; /* NULL: ranges of it fall in the default domain */
}

static void name_category(nvtxDomainHandle_t handle, uint32_t id, const char *name, size_t len) {
    struct nvtxDomainRegistration_st *d = domain_of(handle);
    if (len > GPUFL_NVTX_NAME_MAX) len = GPUFL_NVTX_NAME_MAX;
    pthread_mutex_lock(&registry_lock);
    uint32_t n = atomic_load_explicit(&d->n_categories, memory_order_relaxed);
    char *text = n < CATEGORIES_MAX && name ? copy_text(name, len) : NULL;
    if (text) {
        /* A category named again keeps its first name: readers hold no lock. */
        d->categories[n] = (category_t){id, (uint16_t)len, text};
        atomic_store_explicit(&d->n_categories, n + 1, memory_order_release);
    } else {
        registry_over("named categories in a domain (256)");
    }
    pthread_mutex_unlock(&registry_lock);
}

static nvtxStringHandle_t register_string(const char *s, size_t len) {
    if (len > GPUFL_TEXT_MAX) len = GPUFL_TEXT_MAX;
    pthread_mutex_lock(&registry_lock);
    struct nvtxStringRegistration_st *r = NULL;
    if (n_strings < STRINGS_MAX && string_bytes + len <= STRINGS_BYTES_MAX &&
        (r = malloc(sizeof *r + len + 1)) != NULL) {
        r->len = len;
        memcpy(r->text, s, len);
        r->text[len] = '\0';
        r->next = strings;
        strings = r;
        n_strings++;
        string_bytes += len;
    } else {
        registry_over("registered strings (65536 or 16 MiB)");
    }
    pthread_mutex_unlock(&registry_lock);
    return r;
}

/* ---------------- ranges ---------------- */

/* The thread's open push/pop ranges, innermost last: their scope ids and
 * domains, for nvtxRangePop / nvtxDomainRangePop, which name no range. */
typedef struct pushed {
    uint64_t id;
    const struct nvtxDomainRegistration_st *domain;
    uint8_t closed; /* ended with an enclosing range of another domain */
} pushed_t;
static __thread struct {
    uint64_t generation; /* the session the entries belong to */
    uint32_t depth;
    pushed_t stack[PUSH_STACK_MAX];
} pushes;

/* The name of an event: its message (ASCII, wide or registered). */
static const char *message_of(const nvtxEventAttributes_t *e, char *buf, size_t cap, size_t *len) {
    switch (e->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        if (!e->message.ascii) break;
        *len = strnlen(e->message.ascii, GPUFL_TEXT_MAX + 1);
        return e->message.ascii;
    case NVTX_MESSAGE_TYPE_UNICODE: *len = to_utf8(e->message.unicode, buf, cap); return buf;
    case NVTX_MESSAGE_TYPE_REGISTERED:
        if (!e->message.registered) break;
        *len = e->message.registered->len;
        return e->message.registered->text;
    default: break;
    }
    *len = 9;
    return "(unnamed)";
}

static void fill_attr(gpufl__nvtx_attr_t *a, const struct nvtxDomainRegistration_st *d,
                      const nvtxEventAttributes_t *e) {
    a->domain = d->name;
    a->domain_len = d->len;
    a->category_name = NULL;
    a->category_name_len = 0;
    a->category = 0;
    a->payload_kind = GPUFL_NVTX_PAYLOAD_NONE;
    a->payload_i = 0;
    a->payload_f = 0;
    if (!e) return;
    a->category = e->category;
    if (e->category) {
        uint32_t n = atomic_load_explicit(&d->n_categories, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++)
            if (d->categories[i].id == e->category) {
                a->category_name = d->categories[i].name;
                a->category_name_len = d->categories[i].len;
                break;
            }
    }
    switch (e->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
        a->payload_kind = GPUFL_NVTX_PAYLOAD_UINT;
        a->payload_i = (int64_t)e->payload.ullValue;
        break;
    case NVTX_PAYLOAD_TYPE_INT64:
        a->payload_kind = GPUFL_NVTX_PAYLOAD_INT;
        a->payload_i = e->payload.llValue;
        break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
        a->payload_kind = GPUFL_NVTX_PAYLOAD_UINT;
        a->payload_i = e->payload.uiValue;
        break;
    case NVTX_PAYLOAD_TYPE_INT32:
        a->payload_kind = GPUFL_NVTX_PAYLOAD_INT;
        a->payload_i = e->payload.iValue;
        break;
    case NVTX_PAYLOAD_TYPE_DOUBLE:
        a->payload_kind = GPUFL_NVTX_PAYLOAD_REAL;
        a->payload_f = e->payload.dValue;
        break;
    case NVTX_PAYLOAD_TYPE_FLOAT:
        a->payload_kind = GPUFL_NVTX_PAYLOAD_REAL;
        a->payload_f = e->payload.fValue;
        break;
    default: break; /* none, or an extended payload gpufl does not decode */
    }
}

static int push(nvtxDomainHandle_t handle, const char *name, size_t len,
                const nvtxEventAttributes_t *e) {
    uint64_t generation = live();
    if (LIKELY(!generation)) return 0;
    const struct nvtxDomainRegistration_st *d = domain_of(handle);
    gpufl__nvtx_attr_t a;
    fill_attr(&a, d, e);
    if (pushes.generation != generation) pushes.generation = generation, pushes.depth = 0;
    if (pushes.depth >= PUSH_STACK_MAX) return (int)pushes.depth;
    uint64_t id = gpufl__scope_begin_nvtx(name, len, &a, 0);
    /* An id of 0 (ring full) is kept too, so that the matching pop finds it. */
    pushes.stack[pushes.depth++] = (pushed_t){id, d, 0};
    return (int)pushes.depth - 1;
}

static int pop(nvtxDomainHandle_t handle) {
    uint64_t generation = live();
    if (LIKELY(!generation) || pushes.generation != generation) return -1;
    const struct nvtxDomainRegistration_st *d = domain_of(handle);
    uint32_t pos = pushes.depth;
    while (pos > 0 && pushes.stack[pos - 1].domain != d) pos--;
    if (pos == 0) return -1;
    pushed_t *p = &pushes.stack[pos - 1];
    /* Ending it ends the scopes opened inside it (gpufl's and other
     * domains' ranges): those are marked implicit, and their own pops
     * later end nothing. */
    if (!p->closed && p->id) gpufl_scope_end(p->id);
    for (uint32_t k = pos; k < pushes.depth; k++) pushes.stack[k].closed = 1;
    memmove(p, p + 1, (pushes.depth - pos) * sizeof *p);
    pushes.depth--;
    return (int)pos - 1;
}

static nvtxRangeId_t start(nvtxDomainHandle_t handle, const char *name, size_t len,
                           const nvtxEventAttributes_t *e) {
    uint64_t generation = live();
    if (LIKELY(!generation)) return 0;
    gpufl__nvtx_attr_t a;
    fill_attr(&a, domain_of(handle), e);
    uint64_t id = gpufl__scope_begin_nvtx(name, len, &a, 1);
    /* The session's generation above the id: an end after the session that
     * started the range is over names nothing of the next one. */
    return id ? id | (generation & 0x3FF) << RANGE_GENERATION_BIT : 0;
}

static void end(nvtxRangeId_t range) {
    uint64_t generation = live();
    if (LIKELY(!generation) || range == 0) return;
    if ((range >> RANGE_GENERATION_BIT) != (generation & 0x3FF)) return;
    gpufl__scope_end_detached(range & (((uint64_t)1 << RANGE_GENERATION_BIT) - 1));
}

/* ---------------- the callbacks NVTX calls ---------------- */

#define WIDE_BYTES (GPUFL_TEXT_MAX + 4)

static int cb_push_a(const char *m) {
    return push(NULL, m, m ? strnlen(m, GPUFL_TEXT_MAX + 1) : 0, NULL);
}
static int cb_push_w(const wchar_t *m) {
    char buf[WIDE_BYTES];
    return push(NULL, buf, to_utf8(m, buf, GPUFL_TEXT_MAX), NULL);
}
static int cb_pop(void) { return pop(NULL); }
static nvtxRangeId_t cb_start_a(const char *m) {
    return start(NULL, m, m ? strnlen(m, GPUFL_TEXT_MAX + 1) : 0, NULL);
}
static nvtxRangeId_t cb_start_w(const wchar_t *m) {
    char buf[WIDE_BYTES];
    return start(NULL, buf, to_utf8(m, buf, GPUFL_TEXT_MAX), NULL);
}
static void cb_end(nvtxRangeId_t id) { end(id); }
static void cb_name_category_a(uint32_t id, const char *name) {
    if (name) name_category(NULL, id, name, strlen(name));
}
static void cb_name_category_w(uint32_t id, const wchar_t *name) {
    char buf[GPUFL_NVTX_NAME_MAX];
    name_category(NULL, id, buf, to_utf8(name, buf, sizeof buf));
}

static int cb_domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *e) {
    char buf[WIDE_BYTES];
    size_t len;
    const char *name = e ? message_of(e, buf, GPUFL_TEXT_MAX, &len) : NULL;
    return push(d, name, name ? len : 0, e);
}
static int cb_domain_pop(nvtxDomainHandle_t d) { return pop(d); }
static nvtxRangeId_t cb_domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *e) {
    char buf[WIDE_BYTES];
    size_t len;
    const char *name = e ? message_of(e, buf, GPUFL_TEXT_MAX, &len) : NULL;
    return start(d, name, name ? len : 0, e);
}
/* The default domain's calls: NVTX's NULL domain. */
static int cb_push_ex(const nvtxEventAttributes_t *e) { return cb_domain_push_ex(NULL, e); }
static nvtxRangeId_t cb_start_ex(const nvtxEventAttributes_t *e) {
    return cb_domain_start_ex(NULL, e);
}
static void cb_domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
    (void)d;
    end(id);
}
static void cb_domain_name_category_a(nvtxDomainHandle_t d, uint32_t id, const char *name) {
    if (name) name_category(d, id, name, strlen(name));
}
static void cb_domain_name_category_w(nvtxDomainHandle_t d, uint32_t id, const wchar_t *name) {
    char buf[GPUFL_NVTX_NAME_MAX];
    name_category(d, id, buf, to_utf8(name, buf, sizeof buf));
}
static nvtxStringHandle_t cb_register_string_a(nvtxDomainHandle_t d, const char *s) {
    (void)d;
    return s ? register_string(s, strnlen(s, GPUFL_TEXT_MAX)) : NULL;
}
static nvtxStringHandle_t cb_register_string_w(nvtxDomainHandle_t d, const wchar_t *s) {
    (void)d;
    char buf[WIDE_BYTES];
    return s ? register_string(buf, to_utf8(s, buf, GPUFL_TEXT_MAX)) : NULL;
}
static nvtxDomainHandle_t cb_domain_create_a(const char *name) {
    return domain_create(name, name ? strlen(name) : 0);
}
static nvtxDomainHandle_t cb_domain_create_w(const wchar_t *name) {
    char buf[GPUFL_NVTX_NAME_MAX];
    return domain_create(buf, to_utf8(name, buf, sizeof buf));
}
static void cb_domain_destroy(nvtxDomainHandle_t d) {
    (void)d; /* kept: ranges on other threads may still name it (counted in its cap) */
}

typedef struct slot {
    unsigned id;
    NvtxFunctionPointer fn;
} slot_t;

#define SLOT(id, fn)                                                                               \
    { id, (NvtxFunctionPointer)(void (*)(void))fn }

/* Marks (nvtxMark*) are left to NVTX's no-op: gpufl records ranges only. */
static const slot_t core_slots[] = {
    SLOT(NVTX_CBID_CORE_RangeStartEx, cb_start_ex),
    SLOT(NVTX_CBID_CORE_RangeStartA, cb_start_a),
    SLOT(NVTX_CBID_CORE_RangeStartW, cb_start_w),
    SLOT(NVTX_CBID_CORE_RangeEnd, cb_end),
    SLOT(NVTX_CBID_CORE_RangePushEx, cb_push_ex),
    SLOT(NVTX_CBID_CORE_RangePushA, cb_push_a),
    SLOT(NVTX_CBID_CORE_RangePushW, cb_push_w),
    SLOT(NVTX_CBID_CORE_RangePop, cb_pop),
    SLOT(NVTX_CBID_CORE_NameCategoryA, cb_name_category_a),
    SLOT(NVTX_CBID_CORE_NameCategoryW, cb_name_category_w),
};
static const slot_t core2_slots[] = {
    SLOT(NVTX_CBID_CORE2_DomainRangeStartEx, cb_domain_start_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangeEnd, cb_domain_end),
    SLOT(NVTX_CBID_CORE2_DomainRangePushEx, cb_domain_push_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangePop, cb_domain_pop),
    SLOT(NVTX_CBID_CORE2_DomainNameCategoryA, cb_domain_name_category_a),
    SLOT(NVTX_CBID_CORE2_DomainNameCategoryW, cb_domain_name_category_w),
    SLOT(NVTX_CBID_CORE2_DomainRegisterStringA, cb_register_string_a),
    SLOT(NVTX_CBID_CORE2_DomainRegisterStringW, cb_register_string_w),
    SLOT(NVTX_CBID_CORE2_DomainCreateA, cb_domain_create_a),
    SLOT(NVTX_CBID_CORE2_DomainCreateW, cb_domain_create_w),
    SLOT(NVTX_CBID_CORE2_DomainDestroy, cb_domain_destroy),
};

static int fill_module(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module,
                       const slot_t *slots, size_t n) {
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table) return -1;
    for (size_t i = 0; i < n; i++)
        if (slots[i].id < size && table[slots[i].id]) *table[slots[i].id] = slots[i].fn;
    return 0;
}

int gpufl_nvtx_inject(const void *(*get_export_table)(uint32_t)) {
    if (!get_export_table) return -1;
    const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable) return -1;
    if (fill_module(cb, NVTX_CB_MODULE_CORE, core_slots, sizeof core_slots / sizeof *core_slots))
        return -1;
    /* An NVTX older than domains has no CORE2 module: its core ranges work. */
    fill_module(cb, NVTX_CB_MODULE_CORE2, core2_slots, sizeof core2_slots / sizeof *core2_slots);
    atomic_fetch_add(&injections, 1);
    return 0;
}

/* A program that links libgpufl statically has its NVTX find gpufl without
 * any variable: NVTX's weak pointer binds to this definition at link time
 * (hidden: in libgpufl.so it would bind other libraries by load order). */
static int initialize_injection(NvtxGetExportTableFunc_t get_export_table) {
    return gpufl_nvtx_inject((const void *(*)(uint32_t))get_export_table) == 0;
}
__attribute__((visibility("hidden")))
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = initialize_injection;

/* ---------------- the session ---------------- */

/* Whether `path` is a loaded library in which NVTX's entry point resolves
 * into this gpufl (it may be a library that links libgpufl.so). */
static int entry_in(const char *path, const Dl_info *self) {
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    void *entry = dlsym(h, "InitializeInjectionNvtx2");
    Dl_info where;
    int ours = entry && dladdr(entry, &where) && where.dli_fbase == self->dli_fbase;
    dlclose(h);
    return ours;
}

/* Whether library `path` is this gpufl (the same file, or a loaded library
 * whose NVTX entry point resolves into this one). */
static int is_this_gpufl(const char *path, const Dl_info *self) {
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(path, a) && self->dli_fname && realpath(self->dli_fname, b) && strcmp(a, b) == 0)
        return 1;
    return entry_in(path, self);
}

/* Whether this gpufl's module is a loaded library whose NVTX entry point
 * is this gpufl's (libgpufl.so, the Python extension): NVTX can load it. */
static int exports_entry(const Dl_info *self) { return entry_in(self->dli_fname, self); }

void gpufl__nvtx_start(void) {
    why_off[0] = '\0';
    Dl_info self;
    if (!dladdr((void *)gpufl_nvtx_inject, &self) || !self.dli_fname) {
        snprintf(why_off, sizeof why_off, "gpufl could not find its own library file");
    } else {
        const char *preset = getenv(INJECTION_VAR);
        if (preset && *preset && !is_this_gpufl(preset, &self)) {
            snprintf(why_off, sizeof why_off,
                     INJECTION_VAR " names another library (%.200s): NVTX ranges go there", preset);
            gpufl__warn("NVTX ranges are not recorded: %s", why_off);
        } else if ((!preset || !*preset) && exports_entry(&self)) {
            /* NVTX reads the variable at each module's first NVTX call: a
             * module that made one before this init is not captured. A
             * program that links gpufl statically has no such library to
             * name; its NVTX finds gpufl through the pointer above. */
            setenv(INJECTION_VAR, self.dli_fname, 1);
        }
    }
    atomic_store(&capturing, why_off[0] == '\0');
}

void gpufl__nvtx_stop(void) { atomic_store(&capturing, 0); }

int gpufl__nvtx_feature(int tracing, const char **why) {
    if (!tracing) {
        *why = "needs the Trace engine";
        return 0;
    }
    *why = why_off[0] ? why_off : NULL;
    return why_off[0] == '\0';
}
