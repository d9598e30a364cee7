// SPDX-License-Identifier: Apache-2.0
/*
 * symbols.c - pc -> module, function, file:line (and the line's text) for
 * the captured stack traces, through elfutils' libdwfl loaded with dlopen,
 * or dladdr alone when libdw is absent (see symbols.h).
 *
 * Everything returned is interned in a string arena (util/strarena.h) whose
 * copies never move, so they stay valid until destroy; each resolved pc is cached.
 */
#include "core/symbols.h"

#include "util/demangle.h"
#include "util/error.h"
#include "util/log.h"
#include "util/strarena.h"
#include "util/dl.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NO_LIBDW_HINT "frames have no file or line"

/* ---------------------------------------------------------------------- */
/* libdw, resolved at run time                                              */
/* ---------------------------------------------------------------------- */

/* The header gives the exact types; the addresses come from dlsym. */
typedef struct libdw_api {
    __typeof__(dwfl_begin) *begin;
    __typeof__(dwfl_end) *end;
    __typeof__(dwfl_errmsg) *errmsg;
    __typeof__(dwfl_linux_proc_report) *proc_report;
    __typeof__(dwfl_linux_proc_find_elf) *proc_find_elf;
    __typeof__(dwfl_build_id_find_debuginfo) *build_id_find_debuginfo;
    __typeof__(dwfl_report_begin) *report_begin;
    __typeof__(dwfl_report_end) *report_end;
    __typeof__(dwfl_addrmodule) *addrmodule;
    __typeof__(dwfl_module_info) *module_info;
    __typeof__(dwfl_module_getelf) *module_getelf;
    __typeof__(dwfl_module_addrinfo) *module_addrinfo;
    __typeof__(dwfl_module_getsrc) *module_getsrc;
    __typeof__(dwfl_lineinfo) *lineinfo;
    /* Optional, from libelf (a dependency of libdw): checks of segments. */
    __typeof__(elf_getphdrnum) *getphdrnum;
    __typeof__(gelf_getphdr) *getphdr;
    /* Optional: the name of the innermost inlined function. */
    __typeof__(dwfl_module_addrdie) *module_addrdie;
    __typeof__(dwarf_getscopes) *getscopes;
    __typeof__(dwarf_tag) *tag;
    __typeof__(dwarf_attr_integrate) *attr_integrate;
    __typeof__(dwarf_formstring) *formstring;
} libdw_api_t;

/* ---------------------------------------------------------------------- */
/* The instance                                                             */
/* ---------------------------------------------------------------------- */

typedef struct frame_entry {
    uintptr_t key; /* pc << 1 | return_address; 0 = empty slot */
    gpufl__frame_info_t info;
} frame_entry_t;

typedef struct source_file {
    struct source_file *next; /* in its bucket */
    const char *path;         /* interned: compared by pointer */
    char *text;               /* NULL: unreadable, too large or over the total cap */
    uint32_t *line_starts;    /* offset of each line's first byte */
    uint32_t line_count;
    size_t size;
} source_file_t;

#define SOURCE_BUCKETS 64

struct gpufl__symbols {
    unsigned int flags;
    int full; /* libdw loaded and the process reported */
    pid_t pid;
    gpufl__dl_t dl;
    libdw_api_t dw;
    Dwfl_Callbacks callbacks; /* libdwfl keeps a pointer to it */
    Dwfl *dwfl;
    char exe[PATH_MAX]; /* the main program, for dladdr's "" */

    gpufl__strarena_t arena; /* the interned strings: never moved before destroy */
    const char **strings;   /* open addressing, NULL = empty */
    size_t strings_mask, strings_count, string_bytes;

    frame_entry_t *frames;
    size_t frames_mask, frames_count;

    source_file_t *sources[SOURCE_BUCKETS];
    size_t source_bytes;
};

static const char empty[] = "";

static void set_why(char *why, size_t why_size, const char *text) {
    if (why != NULL && why_size > 0) snprintf(why, why_size, "%s", text);
}

/* ---------------------------------------------------------------------- */
/* Interned strings                                                         */
/* ---------------------------------------------------------------------- */

static size_t hash_text(const char *text, size_t length) {
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (size_t i = 0; i < length; i++) h = (h ^ (unsigned char)text[i]) * 1099511628211u;
    return (size_t)h;
}

static int grow_strings(gpufl__symbols_t *s) {
    size_t n = (s->strings_mask + 1) * 2;
    const char **slots = calloc(n, sizeof *slots);
    if (slots == NULL) return -1;
    for (size_t i = 0; i <= s->strings_mask; i++) {
        const char *text = s->strings[i];
        if (text == NULL) continue;
        size_t j = hash_text(text, strlen(text)) & (n - 1);
        while (slots[j] != NULL) j = (j + 1) & (n - 1);
        slots[j] = text;
    }
    free(s->strings);
    s->strings = slots;
    s->strings_mask = n - 1;
    return 0;
}

/* The one stable copy of text[0..length) (no NUL inside); "" for the empty
 * string, past the cap, or out of memory. */
static const char *intern(gpufl__symbols_t *s, const char *text, size_t length) {
    if (text == NULL || length == 0) return empty;
    size_t i = hash_text(text, length) & s->strings_mask;
    for (; s->strings[i] != NULL; i = (i + 1) & s->strings_mask) {
        const char *known = s->strings[i];
        if (strncmp(known, text, length) == 0 && known[length] == '\0') return known;
    }
    if (s->string_bytes + length + 1 > GPUFL_SYMBOLS_MAX_STRING_BYTES) return empty;
    const char *copy = gpufl__strarena_copy(&s->arena, text, length);
    if (copy == NULL) return empty;
    s->string_bytes += length + 1;
    s->strings[i] = copy;
    if (++s->strings_count * 2 > s->strings_mask) grow_strings(s); /* failing: fills up more */
    return copy;
}

static const char *intern_c(gpufl__symbols_t *s, const char *text) {
    return text ? intern(s, text, strlen(text)) : empty;
}

/* A function name, demangled when it is a C++ one. Symbol tables of debug
 * files name versioned symbols "__libc_start_main@@GLIBC_2.34": the version
 * is dropped, as dladdr drops it. */
static const char *intern_function(gpufl__symbols_t *s, const char *name) {
    if (name == NULL) return empty;
    const char *at = strchr(name, '@');
    size_t length = at ? (size_t)(at - name) : strlen(name);
    char plain[1024];
    if (at != NULL && length < sizeof plain) {
        memcpy(plain, name, length);
        plain[length] = '\0';
        name = plain;
    }
    char *demangled = gpufl__demangle(name);
    const char *text = demangled ? intern_c(s, demangled) : intern(s, name, length);
    free(demangled);
    return text;
}

/* ---------------------------------------------------------------------- */
/* Resolved addresses                                                       */
/* ---------------------------------------------------------------------- */

static frame_entry_t *find_frame(gpufl__symbols_t *s, uintptr_t key) {
    size_t i = (size_t)(key * 0x9E3779B97F4A7C15u >> 20) & s->frames_mask;
    for (; s->frames[i].key != 0; i = (i + 1) & s->frames_mask)
        if (s->frames[i].key == key) return &s->frames[i];
    return &s->frames[i]; /* the empty slot where it would go */
}

static int grow_frames(gpufl__symbols_t *s) {
    frame_entry_t *old = s->frames;
    size_t old_size = s->frames_mask + 1, n = old_size * 2;
    frame_entry_t *slots = calloc(n, sizeof *slots);
    if (slots == NULL) return -1;
    s->frames = slots;
    s->frames_mask = n - 1;
    for (size_t i = 0; i < old_size; i++)
        if (old[i].key != 0) *find_frame(s, old[i].key) = old[i];
    free(old);
    return 0;
}

static void remember_frame(gpufl__symbols_t *s, uintptr_t key, const gpufl__frame_info_t *info) {
    if (s->frames_count >= GPUFL_SYMBOLS_MAX_FRAMES) return;
    if ((s->frames_count + 1) * 2 > s->frames_mask && grow_frames(s) != 0) return;
    frame_entry_t *e = find_frame(s, key);
    e->key = key;
    e->info = *info;
    s->frames_count++;
}

/* ---------------------------------------------------------------------- */
/* Source text                                                              */
/* ---------------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at p (n bytes left), 0 if none. */
static size_t utf8_length(const unsigned char *p, size_t n) {
    unsigned char c = p[0];
    size_t length;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF)
        length = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        length = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        length = 4;
    else
        return 0;
    if (length > n) return 0;
    for (size_t i = 1; i < length; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xF0 && p[1] < 0x90)) return 0; /* overlong */
    if (c == 0xED && p[1] > 0x9F) return 0;                                 /* surrogates */
    if (c == 0xF4 && p[1] > 0x8F) return 0;                                 /* past U+10FFFF */
    return length;
}

/* The line as valid UTF-8 (bad bytes and NULs become '?'), at most
 * GPUFL_SYMBOLS_SOURCE_BYTES, trailing white space removed. */
static size_t clean_line(const char *line, size_t length, char *out) {
    const unsigned char *p = (const unsigned char *)line;
    size_t n = 0;
    for (size_t i = 0; i < length;) {
        size_t step = utf8_length(p + i, length - i);
        size_t emit = step ? step : 1;
        if (n + emit > GPUFL_SYMBOLS_SOURCE_BYTES) break;
        if (step == 0 || p[i] == '\0')
            out[n] = '?';
        else
            memcpy(out + n, p + i, step);
        n += emit;
        i += emit;
    }
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t' || out[n - 1] == '\r' ||
                     out[n - 1] == '\f' || out[n - 1] == '\v'))
        n--;
    return n;
}

/* Reads a regular file of at most GPUFL_SYMBOLS_MAX_FILE_BYTES whole; NULL
 * otherwise. O_NONBLOCK: a FIFO named like a source file never blocks. */
static char *read_small_file(const char *path, size_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NULL;
    struct stat st;
    char *text = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
        (uint64_t)st.st_size > GPUFL_SYMBOLS_MAX_FILE_BYTES)
        goto close_file;
    text = malloc((size_t)st.st_size + 1);
    if (text == NULL) goto close_file;
    size_t done = 0;
    while (done < (size_t)st.st_size) {
        ssize_t got = read(fd, text + done, (size_t)st.st_size - done);
        if (got <= 0) break; /* shrank while read: keep what is there */
        done += (size_t)got;
    }
    text[done] = '\0';
    *size = done;
close_file:
    close(fd);
    return text;
}

static void load_source(gpufl__symbols_t *s, source_file_t *f) {
    size_t size = 0;
    if (s->source_bytes >= GPUFL_SYMBOLS_MAX_SOURCE_BYTES) return;
    char *text = read_small_file(f->path, &size);
    if (text == NULL) return;
    uint32_t lines = 1;
    for (size_t i = 0; i < size; i++) lines += text[i] == '\n';
    uint32_t *starts = malloc(lines * sizeof *starts);
    if (starts == NULL || s->source_bytes + size > GPUFL_SYMBOLS_MAX_SOURCE_BYTES) {
        free(starts);
        free(text);
        return;
    }
    uint32_t line = 0;
    starts[line++] = 0;
    for (size_t i = 0; i < size; i++)
        if (text[i] == '\n') starts[line++] = (uint32_t)(i + 1);
    f->text = text;
    f->size = size;
    f->line_starts = starts;
    f->line_count = lines;
    s->source_bytes += size + lines * sizeof *starts;
}

/* The cached file for an interned path, read on first use; NULL only when
 * out of memory. */
static source_file_t *source_file(gpufl__symbols_t *s, const char *path) {
    size_t bucket = ((uintptr_t)path >> 4) % SOURCE_BUCKETS;
    for (source_file_t *f = s->sources[bucket]; f != NULL; f = f->next)
        if (f->path == path) return f;
    source_file_t *f = calloc(1, sizeof *f);
    if (f == NULL) return NULL;
    f->path = path;
    load_source(s, f); /* an unreadable file is remembered too: never retried */
    f->next = s->sources[bucket];
    s->sources[bucket] = f;
    return f;
}

static const char *source_line(gpufl__symbols_t *s, const char *path, int line) {
    if (path[0] == '\0' || line <= 0) return empty;
    source_file_t *f = source_file(s, path);
    if (f == NULL || f->text == NULL || (uint32_t)line > f->line_count) return empty;
    size_t start = f->line_starts[line - 1];
    size_t end = (uint32_t)line < f->line_count ? f->line_starts[line] : f->size;
    while (end > start && (f->text[end - 1] == '\n' || f->text[end - 1] == '\r')) end--;
    char text[GPUFL_SYMBOLS_SOURCE_BYTES + 1];
    size_t length = clean_line(f->text + start, end - start, text);
    return intern(s, text, length);
}

/* ---------------------------------------------------------------------- */
/* Full mode: libdwfl                                                       */
/* ---------------------------------------------------------------------- */

static int load_libdw(gpufl__symbols_t *s, char *why, size_t why_size) {
    static const char *const names[] = {"libdw.so.1", NULL};
    libdw_api_t *dw = &s->dw;
    gpufl__dl_sym_t syms[] = {
        {{"dwfl_begin"}, &dw->begin, 1, -1},
        {{"dwfl_end"}, &dw->end, 1, -1},
        {{"dwfl_errmsg"}, &dw->errmsg, 1, -1},
        {{"dwfl_linux_proc_report"}, &dw->proc_report, 1, -1},
        {{"dwfl_linux_proc_find_elf"}, &dw->proc_find_elf, 1, -1},
        {{"dwfl_build_id_find_debuginfo"}, &dw->build_id_find_debuginfo, 1, -1},
        {{"dwfl_report_begin"}, &dw->report_begin, 1, -1},
        {{"dwfl_report_end"}, &dw->report_end, 1, -1},
        {{"dwfl_addrmodule"}, &dw->addrmodule, 1, -1},
        {{"dwfl_module_info"}, &dw->module_info, 1, -1},
        {{"dwfl_module_getelf"}, &dw->module_getelf, 1, -1},
        {{"dwfl_module_addrinfo"}, &dw->module_addrinfo, 1, -1},
        {{"dwfl_module_getsrc"}, &dw->module_getsrc, 1, -1},
        {{"dwfl_lineinfo"}, &dw->lineinfo, 1, -1},
        {{"elf_getphdrnum"}, &dw->getphdrnum, 0, -1},
        {{"gelf_getphdr"}, &dw->getphdr, 0, -1},
        {{"dwfl_module_addrdie"}, &dw->module_addrdie, 0, -1},
        {{"dwarf_getscopes"}, &dw->getscopes, 0, -1},
        {{"dwarf_tag"}, &dw->tag, 0, -1},
        {{"dwarf_attr_integrate"}, &dw->attr_integrate, 0, -1},
        {{"dwarf_formstring"}, &dw->formstring, 0, -1},
    };
    char reason[512];
    int rc = gpufl__dl_open(&s->dl, getenv("GPUFL_LIBDW_PATH"), names, NO_LIBDW_HINT, reason,
                            sizeof reason);
    if (rc == 0) {
        rc = gpufl__dl_resolve(&s->dl, syms, sizeof syms / sizeof syms[0], reason, sizeof reason);
        if (rc != 0) {
            size_t n = strlen(reason);
            snprintf(reason + n, sizeof reason - n, ": %s", NO_LIBDW_HINT);
            gpufl__dl_close(&s->dl);
        }
    }
    if (rc != 0) {
        /* A GPUFL_LIBDW_PATH that failed names only the path: say what it was for. */
        if (why != NULL && why_size > 0)
            snprintf(why, why_size, "%s%s", strstr(reason, "libdw") ? "" : "libdw: ", reason);
        memset(dw, 0, sizeof *dw);
    }
    return rc;
}

/* Re-reads /proc/<pid>/maps. Modules already known keep what libdwfl read
 * of them; those no longer mapped are dropped. 0 or libdwfl's error. */
static int report_modules(gpufl__symbols_t *s) {
    s->dw.report_begin(s->dwfl);
    int rc = s->dw.proc_report(s->dwfl, s->pid);
    if (s->dw.report_end(s->dwfl, NULL, NULL) != 0 && rc == 0) rc = -1;
    return rc;
}

static int start_dwfl(gpufl__symbols_t *s, char *why, size_t why_size) {
    /* Only the local build-id lookup (/usr/lib/debug/.build-id, where
     * Debian's and Fedora's debug packages put their files): the standard
     * search ends in libdw's debuginfod client, which fetches over the
     * network from inside the profiled process and, even with no
     * DEBUGINFOD_URLS, starts curl and OpenSSL. Started on the collector
     * thread while the process exits, after OpenSSL's exit handler ran, that
     * crashed a process (a Python program ending with daemon threads, under
     * ASan). Binaries built with -g carry their DWARF and need no search. */
    s->callbacks.find_elf = s->dw.proc_find_elf;
    s->callbacks.find_debuginfo = s->dw.build_id_find_debuginfo;
    s->callbacks.debuginfo_path = NULL; /* the default: ":.debug:/usr/lib/debug" */
    s->dwfl = s->dw.begin(&s->callbacks);
    if (s->dwfl == NULL) {
        if (why != NULL && why_size > 0)
            snprintf(why, why_size, "dwfl_begin failed: %s: " NO_LIBDW_HINT, s->dw.errmsg(-1));
        return GPUFL_ENOTSUP;
    }
    int rc = report_modules(s);
    if (rc != 0) {
        if (why != NULL && why_size > 0)
            snprintf(why, why_size, "cannot read the modules of process %d: %s: " NO_LIBDW_HINT,
                     (int)s->pid, rc > 0 ? strerror(rc) : s->dw.errmsg(-1));
        s->dw.end(s->dwfl);
        s->dwfl = NULL;
        return GPUFL_ENOTSUP;
    }
    return 0;
}

/* A string attribute of die or of the declaration it stands for. */
static const char *die_string(const libdw_api_t *dw, Dwarf_Die *die, unsigned int name) {
    Dwarf_Attribute attribute;
    Dwarf_Attribute *found = dw->attr_integrate(die, name, &attribute);
    return found ? dw->formstring(found) : NULL;
}

/* The name of the innermost inlined function that holds address, when the
 * address lies in one; NULL otherwise (or without the DWARF functions). */
static const char *inlined_function(gpufl__symbols_t *s, Dwfl_Module *mod, Dwarf_Addr address) {
    const libdw_api_t *dw = &s->dw;
    if (!dw->module_addrdie || !dw->getscopes || !dw->tag || !dw->attr_integrate || !dw->formstring)
        return NULL;
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dw->module_addrdie(mod, address, &bias);
    if (cu == NULL) return NULL;
    Dwarf_Die *scopes = NULL;
    int count = dw->getscopes(cu, address - bias, &scopes);
    const char *name = NULL;
    for (int i = 0; i < count; i++) { /* innermost first */
        int tag = dw->tag(&scopes[i]);
        if (tag == DW_TAG_subprogram) break; /* not inlined: the symbol says it */
        if (tag != DW_TAG_inlined_subroutine) continue;
        const char *linkage = die_string(dw, &scopes[i], DW_AT_linkage_name);
        if (linkage == NULL) linkage = die_string(dw, &scopes[i], DW_AT_MIPS_linkage_name);
        char *demangled = gpufl__demangle(linkage);
        name = demangled ? intern_c(s, demangled) : NULL;
        free(demangled);
        if (name == NULL || name[0] == '\0') {
            const char *short_name = die_string(dw, &scopes[i], DW_AT_name);
            name = short_name ? intern_c(s, short_name) : NULL;
        }
        break;
    }
    free(scopes); /* dwarf_getscopes allocates it with malloc */
    return name;
}

/* The line table's file name, joined with the compilation directory when
 * it is relative (libdw joins a file with its include directory only). */
static const char *intern_file(gpufl__symbols_t *s, Dwfl_Module *mod, Dwarf_Addr address,
                               const char *file) {
    const libdw_api_t *dw = &s->dw;
    if (file == NULL || file[0] == '/' || file[0] == '\0' || !dw->module_addrdie ||
        !dw->attr_integrate || !dw->formstring)
        return intern_c(s, file);
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dw->module_addrdie(mod, address, &bias);
    const char *dir = cu ? die_string(dw, cu, DW_AT_comp_dir) : NULL;
    char path[2 * PATH_MAX];
    if (dir == NULL || dir[0] != '/' ||
        (size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path)
        return intern_c(s, file);
    return intern_c(s, path);
}

/* 1 when address is in one of the segments the ELF file loads (or that
 * cannot be told), else 0. */
static int in_loaded_segment(const libdw_api_t *dw, Elf *elf, Dwarf_Addr bias, Dwarf_Addr address) {
    size_t count = 0;
    if (elf == NULL || !dw->getphdrnum || !dw->getphdr || dw->getphdrnum(elf, &count) != 0)
        return 1;
    for (size_t i = 0; i < count && i <= INT_MAX; i++) {
        GElf_Phdr header;
        if (dw->getphdr(elf, (int)i, &header) == NULL || header.p_type != PT_LOAD) continue;
        if (address - bias - header.p_vaddr < header.p_memsz) return 1;
    }
    return 0;
}

/* The module whose loaded segments hold address, or NULL. libdwfl answers
 * from a module's first mapping to its last and, past the highest module,
 * with that module for any address (the stack, a library mapped since):
 * its answer is checked against the object's segments. */
static Dwfl_Module *find_module(gpufl__symbols_t *s, Dwarf_Addr address, Dwarf_Addr *start,
                                Dwarf_Addr *bias, const char **name) {
    const libdw_api_t *dw = &s->dw;
    Dwfl_Module *mod = dw->addrmodule(s->dwfl, address);
    if (mod == NULL) return NULL;
    Dwarf_Addr end = 0;
    *name = dw->module_info(mod, NULL, start, &end, NULL, NULL, NULL, NULL);
    if (address < *start || address >= end) return NULL;
    Elf *elf = dw->module_getelf(mod, bias);
    if (elf == NULL) *bias = *start;
    return in_loaded_segment(dw, elf, *bias, address) ? mod : NULL;
}

static int resolve_dwfl(gpufl__symbols_t *s, uintptr_t pc, uintptr_t address,
                        gpufl__frame_info_t *out) {
    const libdw_api_t *dw = &s->dw;
    Dwarf_Addr start = 0, bias = 0;
    const char *name = NULL;
    Dwfl_Module *mod = find_module(s, address, &start, &bias, &name);
    if (mod == NULL) {
        /* Perhaps dlopen'ed since the last report. */
        if (report_modules(s) != 0) return 0;
        mod = find_module(s, address, &start, &bias, &name);
        if (mod == NULL) return 0;
    }
    out->module = intern_c(s, name);
    out->module_offset = pc - bias;

    GElf_Off offset = 0;
    GElf_Sym sym;
    GElf_Word section = 0;
    Elf *elf = NULL;
    Dwarf_Addr sym_bias = 0;
    const char *function =
        dw->module_addrinfo(mod, address, &offset, &sym, &section, &elf, &sym_bias);
    if (function != NULL) {
        out->function = intern_function(s, function);
        out->function_offset = offset + (pc - address);
    }

    Dwfl_Line *line = dw->module_getsrc(mod, address);
    if (line != NULL) {
        Dwarf_Addr line_address = 0;
        Dwarf_Word mtime = 0, length = 0;
        int number = 0, column = 0;
        const char *file = dw->lineinfo(line, &line_address, &number, &column, &mtime, &length);
        out->file = intern_file(s, mod, address, file);
        out->line = number > 0 ? number : 0;
        const char *inlined = inlined_function(s, mod, address);
        if (inlined != NULL && inlined[0] != '\0') out->function = inlined;
    }
    return 1;
}

/* ---------------------------------------------------------------------- */
/* Reduced mode: dladdr                                                     */
/* ---------------------------------------------------------------------- */

static int resolve_dladdr(gpufl__symbols_t *s, uintptr_t pc, uintptr_t address,
                          gpufl__frame_info_t *out) {
    Dl_info info;
    struct link_map *map = NULL;
    if (dladdr1((void *)address, &info, (void **)&map, RTLD_DL_LINKMAP) == 0) return 0;
    /* The main program has no name of its own in the link map. */
    int main_program = map != NULL && (map->l_name == NULL || map->l_name[0] == '\0');
    out->module = intern_c(s, main_program ? s->exe : info.dli_fname);
    out->module_offset = pc - (map != NULL ? (uintptr_t)map->l_addr : (uintptr_t)info.dli_fbase);
    if (info.dli_sname != NULL && info.dli_saddr != NULL) {
        out->function = intern_function(s, info.dli_sname);
        out->function_offset = pc - (uintptr_t)info.dli_saddr;
    }
    return 1;
}

/* ---------------------------------------------------------------------- */
/* Interface                                                                */
/* ---------------------------------------------------------------------- */

int gpufl__symbols_create(gpufl__symbols_t **out, unsigned int flags, char *why, size_t why_size) {
    *out = NULL;
    set_why(why, why_size, "");
    gpufl__symbols_t *s = calloc(1, sizeof *s);
    if (s == NULL) goto destroy_symbols;
    s->flags = flags;
    s->pid = getpid();
    s->strings_mask = 1023;
    s->frames_mask = 1023;
    s->strings = calloc(s->strings_mask + 1, sizeof *s->strings);
    s->frames = calloc(s->frames_mask + 1, sizeof *s->frames);
    if (s->strings == NULL || s->frames == NULL) goto destroy_symbols;
    ssize_t n = readlink("/proc/self/exe", s->exe, sizeof s->exe - 1);
    s->exe[n > 0 ? n : 0] = '\0';

    if (load_libdw(s, why, why_size) == 0) {
        if (start_dwfl(s, why, why_size) == 0)
            s->full = 1;
        else
            gpufl__dl_close(&s->dl);
    }
    if (s->full)
        gpufl__debug("symbols: %s loaded, DWARF file and line available", s->dl.name);
    else
        gpufl__debug("symbols: reduced mode: %s", why ? why : "");
    *out = s;
    return 0;

destroy_symbols:
    gpufl__symbols_destroy(s);
    set_why(why, why_size, "out of memory");
    return GPUFL_ENOMEM;
}

int gpufl__symbols_resolve(gpufl__frame_info_t *out, gpufl__symbols_t *s, uintptr_t pc,
                           int return_address) {
    if (out == NULL) return 0;
    *out = (gpufl__frame_info_t){empty, 0, empty, 0, empty, 0, empty};
    /* The first page is never mapped; that also keeps pc - 1 and the key
     * from wrapping. Kernel addresses are in no module and come back 0. */
    if (s == NULL || pc < 4096 || pc > UINTPTR_MAX / 2) return 0;
    uintptr_t key = pc << 1 | (return_address != 0);
    frame_entry_t *cached = find_frame(s, key);
    if (cached->key == key) {
        *out = cached->info;
        return 1;
    }
    uintptr_t address = return_address ? pc - 1 : pc;
    int found = s->full ? resolve_dwfl(s, pc, address, out) : resolve_dladdr(s, pc, address, out);
    if (!found) {
        *out = (gpufl__frame_info_t){empty, 0, empty, 0, empty, 0, empty};
        return 0;
    }
    if (s->flags & GPUFL_SYMBOLS_SOURCE) out->source = source_line(s, out->file, out->line);
    remember_frame(s, key, out);
    return 1;
}

const char *gpufl__symbols_source(gpufl__symbols_t *s, const char *path, int line) {
    if (s == NULL || path == NULL || !(s->flags & GPUFL_SYMBOLS_SOURCE)) return empty;
    return source_line(s, path, line);
}

int gpufl__symbols_full(const gpufl__symbols_t *s) { return s != NULL && s->full; }

void gpufl__symbols_destroy(gpufl__symbols_t *s) {
    if (s == NULL) return;
    if (s->dwfl != NULL) s->dw.end(s->dwfl);
    gpufl__dl_close(&s->dl);
    for (size_t b = 0; b < SOURCE_BUCKETS; b++) {
        source_file_t *f = s->sources[b];
        while (f != NULL) {
            source_file_t *next = f->next;
            free(f->text);
            free(f->line_starts);
            free(f);
            f = next;
        }
    }
    gpufl__strarena_free(&s->arena);
    free(s->strings);
    free(s->frames);
    free(s);
}
