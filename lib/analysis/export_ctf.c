// SPDX-License-Identifier: Apache-2.0
/*
 * export_ctf.c - a session as a CTF 1.8 trace directory (a TSDL `metadata`
 * file and one binary data stream file per CPU thread, GPU stream, device's
 * copies and samples), which babeltrace2 and Trace Compass read: scopes,
 * syncs and launch calls per thread, kernels, copies and memsets per GPU
 * stream, GPU and host samples.
 *
 * CTF 1.8 rather than CTF 2: Debian 12's babeltrace2 (2.0) reads only 1.8.
 * Unlike the viewer formats, nothing is drawn or cut to nest: every row of
 * the model becomes one event record at its start time (scopes: a begin and
 * an end record), its other times as fields. docs/design/ctf-export.md has
 * the layout; the event classes below are its one definition, used both to
 * write the metadata and to check each record written against it.
 */
#include "analysis/export_timeline.h"
#include "analysis/export_trace.h"

#include "util/error.h"
#include "util/jsonw.h"

#include <gpufl/gpufl_log.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A packet is closed once its content passes this (one record may pass it). */
#define PACKET_BYTES (256u << 10)
/* One packet at most: a record holding the largest dict strings. */
#define BUF_MAX_BYTES ((size_t)512 << 20)
/* Data stream files one trace may have (threads, GPU streams, devices). */
#define STREAMS_MAX 65536u
#define PATH_BYTES  4096
#define CTF_MAGIC   0xC1FC1FC1u
/* Bytes of the packet header: magic, trace UUID, stream class id. */
#define PACKET_HEADER_BYTES 24u

/* ---------------------------------------------------------------------- */
/* The layout: stream classes, event classes, fields                        */
/* ---------------------------------------------------------------------- */

enum { SC_THREAD = 0, SC_GPU = 1, SC_COUNTERS = 2, SC_COUNT };

typedef enum ftype {
    T_U8,
    T_I32,
    T_I64,
    T_F64,
    T_STR,
    T_COPY_KIND,   /* enum copy_kind_t: gpufl_log.h's values */
    T_MEMORY_KIND, /* enum memory_kind_t */
    T_SYNC_TYPE    /* enum sync_type_t */
} ftype_t;

typedef struct field {
    const char *name;
    ftype_t type;
} field_t;

typedef struct event_class {
    const char *name;
    unsigned stream_class;
    unsigned id; /* within its stream class */
    const field_t *fields;
    size_t n_fields;
} event_class_t;

/* The kinds of record, one per event class, in the order of `classes`. */
typedef enum kind {
    K_SCOPE_BEGIN,
    K_SCOPE_END,
    K_SYNC,
    K_LAUNCH,
    K_KERNEL,
    K_COPY,
    K_MEMSET,
    K_GPU_SAMPLE,
    K_HOST_SAMPLE,
    K_COUNT,
    K_LOST_END = K_COUNT /* a scope_end whose begin was lost: class scope_end */
} kind_t;

static const field_t scope_begin_fields[] = {
    {"scope_id", T_I64}, {"parent_id", T_I64}, {"name", T_STR},     {"path", T_STR},
    {"tag", T_STR},      {"depth", T_I32},     {"repeat", T_I32},   {"warmup", T_I32},
    {"source", T_U8},    {"domain", T_STR},    {"category", T_STR}, {"payload", T_STR}};
static const field_t scope_end_fields[] = {{"scope_id", T_I64},    {"name", T_STR},
                                           {"path", T_STR},        {"duration_ns", T_I64},
                                           {"implicit_end", T_U8}, {"begin_lost", T_U8}};
static const field_t sync_fields[] = {
    {"sync_type", T_SYNC_TYPE}, {"name", T_STR},       {"duration_ns", T_I64},
    {"cuda_stream", T_I64},     {"cuda_event", T_I64}, {"correlation", T_I64},
    {"scope_id", T_I64},        {"scope_path", T_STR}, {"site", T_STR}};
static const field_t launch_fields[] = {
    {"name", T_STR},        {"correlation", T_I64}, {"config", T_I64},     {"context", T_I64},
    {"external_id", T_I64}, {"scope_id", T_I64},    {"scope_path", T_STR}, {"site", T_STR}};
static const field_t kernel_fields[] = {{"name", T_STR},
                                        {"mangled", T_STR},
                                        {"duration_ns", T_I64},
                                        {"correlation", T_I64},
                                        {"grid_x", T_I32},
                                        {"grid_y", T_I32},
                                        {"grid_z", T_I32},
                                        {"block_x", T_I32},
                                        {"block_y", T_I32},
                                        {"block_z", T_I32},
                                        {"registers_per_thread", T_I32},
                                        {"static_smem_bytes", T_I64},
                                        {"dynamic_smem_bytes", T_I64},
                                        {"local_bytes_per_thread", T_I64},
                                        {"occupancy_pct", T_F64},
                                        {"limiter", T_STR},
                                        {"graph_id", T_I64},
                                        {"graph_node", T_I64},
                                        {"external_id", T_I64},
                                        {"scope_id", T_I64},
                                        {"scope_path", T_STR},
                                        {"launch_ns", T_I64},
                                        {"launch_tid", T_I64},
                                        {"site", T_STR}};
static const field_t copy_fields[] = {{"copy_kind", T_COPY_KIND},  {"bytes", T_I64},
                                      {"duration_ns", T_I64},      {"src_kind", T_MEMORY_KIND},
                                      {"dst_kind", T_MEMORY_KIND}, {"scope_id", T_I64},
                                      {"scope_path", T_STR}};
static const field_t memset_fields[] = {{"memory_kind", T_MEMORY_KIND},
                                        {"bytes", T_I64},
                                        {"duration_ns", T_I64},
                                        {"scope_id", T_I64},
                                        {"scope_path", T_STR}};
static const field_t gpu_sample_fields[] = {{"gpu_util_pct", T_I32},
                                            {"mem_util_pct", T_I32},
                                            {"mem_used_bytes", T_I64},
                                            {"mem_free_bytes", T_I64},
                                            {"mem_total_bytes", T_I64},
                                            {"power_mw", T_I64},
                                            {"power_limit_mw", T_I64},
                                            {"energy_mj", T_I64},
                                            {"temp_gpu_c", T_I32},
                                            {"temp_mem_c", T_I32},
                                            {"clock_sm_mhz", T_I32},
                                            {"clock_gfx_mhz", T_I32},
                                            {"clock_mem_mhz", T_I32},
                                            {"fan_pct", T_I32},
                                            {"pcie_tx_bytes_per_s", T_I64},
                                            {"pcie_rx_bytes_per_s", T_I64},
                                            {"nvlink_tx_bytes_per_s", T_I64},
                                            {"nvlink_rx_bytes_per_s", T_I64},
                                            {"ecc_sbe_volatile", T_I64},
                                            {"ecc_dbe_volatile", T_I64},
                                            {"throttle_reasons", T_I64},
                                            {"sm_active_pct", T_F64},
                                            {"sm_occupancy_pct", T_F64},
                                            {"tensor_active_pct", T_F64},
                                            {"dram_bw_util_pct", T_F64}};
static const field_t host_sample_fields[] = {
    {"cpu_pct", T_F64},           {"proc_cpu_pct", T_F64},
    {"cg_cpu_pct", T_F64},        {"cg_cpu_limit_cores", T_F64},
    {"mem_used_bytes", T_I64},    {"mem_total_bytes", T_I64},
    {"proc_rss_bytes", T_I64},    {"cg_mem_used_bytes", T_I64},
    {"cg_mem_limit_bytes", T_I64}};

#define FIELDS(a) a, sizeof a / sizeof a[0]
static const event_class_t classes[K_COUNT] = {
    [K_SCOPE_BEGIN] = {"scope_begin", SC_THREAD, 0, FIELDS(scope_begin_fields)},
    [K_SCOPE_END] = {"scope_end", SC_THREAD, 1, FIELDS(scope_end_fields)},
    [K_SYNC] = {"sync", SC_THREAD, 2, FIELDS(sync_fields)},
    [K_LAUNCH] = {"launch", SC_THREAD, 3, FIELDS(launch_fields)},
    [K_KERNEL] = {"kernel", SC_GPU, 0, FIELDS(kernel_fields)},
    [K_COPY] = {"copy", SC_GPU, 1, FIELDS(copy_fields)},
    [K_MEMSET] = {"memset", SC_GPU, 2, FIELDS(memset_fields)},
    [K_GPU_SAMPLE] = {"gpu_sample", SC_COUNTERS, 0, FIELDS(gpu_sample_fields)},
    [K_HOST_SAMPLE] = {"host_sample", SC_COUNTERS, 1, FIELDS(host_sample_fields)}};

/* The packet context of each stream class after the common fields: what
 * names the data stream (its thread, its device and CUDA stream). */
static const char *const stream_context[SC_COUNT] = {
    [SC_THREAD] = "        int64_t tid;\n",
    [SC_GPU] = "        int32_t device;\n        int64_t cuda_stream;\n",
    [SC_COUNTERS] = "        int32_t device;\n"};
static const char *const stream_class_name[SC_COUNT] = {"thread", "gpu", "counters"};

/* ---------------------------------------------------------------------- */
/* Records in stream and time order                                         */
/* ---------------------------------------------------------------------- */

/* Keys of the streams that are not a thread's, a CUDA stream's or a device's. */
#define KEY_COPIES INT64_MIN /* key_b of a device's copies and memsets */
#define KEY_HOST   INT64_MIN /* key_a of the host samples */

typedef struct item {
    int64_t ts_ns;        /* session clock */
    int64_t key_a, key_b; /* the data stream within its class */
    uint32_t index;       /* in the model array of its kind */
    int32_t sub;          /* order at one time, after rank */
    uint8_t stream_class;
    uint8_t rank; /* order at one time on a thread: ends, begins, empty scopes' ends */
    uint8_t kind; /* kind_t */
} item_t;

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

static int item_cmp(const void *pa, const void *pb) {
    const item_t *a = pa, *b = pb;
    int c;
    if (a->stream_class != b->stream_class) return a->stream_class < b->stream_class ? -1 : 1;
    if ((c = cmp_i64(a->key_a, b->key_a)) || (c = cmp_i64(a->key_b, b->key_b)) ||
        (c = cmp_i64(a->ts_ns, b->ts_ns)))
        return c;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    if ((c = cmp_i64(a->sub, b->sub))) return c;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    return cmp_i64(a->index, b->index);
}

typedef struct items {
    item_t *v;
    size_t n;
} items_t;

static void add(items_t *it, kind_t kind, size_t index, int64_t ts, int64_t a, int64_t b) {
    item_t *x = &it->v[it->n++];
    memset(x, 0, sizeof *x);
    x->ts_ns = ts;
    x->key_a = a;
    x->key_b = b;
    x->index = (uint32_t)index;
    x->kind = (uint8_t)kind;
    x->stream_class = (uint8_t)classes[kind == K_LOST_END ? K_SCOPE_END : kind].stream_class;
}

/* A scope's end at one time as another's begin comes first (the one closes,
 * then the next opens), inner ends before outer ones, a begin before the end
 * of an empty scope of its own. */
static void add_scope_end(items_t *it, kind_t kind, size_t index, const gpufl__model_scope_t *s) {
    add(it, kind, index, s->end_ns, s->tid, 0);
    item_t *x = &it->v[it->n - 1];
    x->rank = kind != K_LOST_END && s->begin_ns == s->end_ns ? 2 : 0;
    x->sub = -s->depth;
}

static int collect(const gpufl__model_t *m, items_t *it) {
    size_t lost = m->lost_scopes ? m->n_lost_scopes : 0;
    size_t counts[] = {m->n_scopes,  m->n_scopes, lost,         m->n_syncs,       m->n_launches,
                       m->n_kernels, m->n_copies, m->n_memsets, m->n_gpu_samples, m->n_samples};
    size_t n = 0;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        if (counts[i] > UINT32_MAX || n > SIZE_MAX / sizeof(item_t) - counts[i])
            return gpufl__set_error(GPUFL_ENOMEM, "export: too many rows for a CTF trace");
        n += counts[i];
    }
    it->n = 0;
    it->v = n ? malloc(n * sizeof(item_t)) : NULL;
    if (n && !it->v) return gpufl__set_error(GPUFL_ENOMEM, "export: no memory for %zu records", n);
    for (size_t i = 0; i < m->n_scopes; i++) {
        const gpufl__model_scope_t *s = &m->scopes[i];
        add(it, K_SCOPE_BEGIN, i, s->begin_ns, s->tid, 0);
        it->v[it->n - 1].rank = 1;
        it->v[it->n - 1].sub = s->depth;
        if (!s->open && s->end_ns != GPUFL_MODEL_UNKNOWN) add_scope_end(it, K_SCOPE_END, i, s);
    }
    for (size_t i = 0; i < lost; i++) add_scope_end(it, K_LOST_END, i, &m->lost_scopes[i]);
    for (size_t i = 0; i < m->n_syncs; i++) {
        add(it, K_SYNC, i, m->syncs[i].start_ns, m->syncs[i].tid, 0);
        it->v[it->n - 1].rank = 1;
        it->v[it->n - 1].sub = INT32_MAX; /* inside a scope that begins at its time */
    }
    for (size_t i = 0; i < m->n_launches; i++) {
        add(it, K_LAUNCH, i, m->launches[i].ts_ns, m->launches[i].tid, 0);
        it->v[it->n - 1].rank = 1;
        it->v[it->n - 1].sub = INT32_MAX;
    }
    for (size_t i = 0; i < m->n_kernels; i++)
        add(it, K_KERNEL, i, m->kernels[i].start_ns, m->kernels[i].device, m->kernels[i].stream);
    for (size_t i = 0; i < m->n_copies; i++)
        add(it, K_COPY, i, m->copies[i].start_ns, m->copies[i].device, KEY_COPIES);
    for (size_t i = 0; i < m->n_memsets; i++)
        add(it, K_MEMSET, i, m->memsets[i].start_ns, m->memsets[i].device, KEY_COPIES);
    for (size_t i = 0; i < m->n_gpu_samples; i++)
        add(it, K_GPU_SAMPLE, i, m->gpu_samples[i].ts_ns, m->gpu_samples[i].device, 0);
    for (size_t i = 0; i < m->n_samples; i++)
        add(it, K_HOST_SAMPLE, i, m->samples[i].ts_ns, KEY_HOST, 0);
    if (it->n) qsort(it->v, it->n, sizeof(item_t), item_cmp);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The writer                                                               */
/* ---------------------------------------------------------------------- */

typedef struct ctf {
    const gpufl__model_t *m;
    gpufl_export_result_t *res;
    const char *dir;
    int64_t base_ns; /* clock value = session time - base_ns (no time is below it) */
    uint8_t uuid[16];
    gpufl__buf_t buf; /* the packet being written */
    FILE *f;
    char path[PATH_BYTES]; /* the file being written, for messages */
    /* the data stream being written */
    const item_t *stream; /* its first record: class and keys */
    uint64_t packet_seq;
    size_t packet_records;
    uint64_t first_ts, last_ts;
    /* the record being written, checked field by field against its class */
    const event_class_t *ec;
    size_t field;
    int mismatch;
} ctf_t;

static void put_le(gpufl__buf_t *b, uint64_t v, unsigned bytes) {
    char le[8];
    for (unsigned i = 0; i < bytes; i++) le[i] = (char)(v >> (8 * i));
    gpufl__buf_put(b, le, bytes);
}

/* The next field of the record must be of this type. */
static void expect(ctf_t *c, ftype_t type) {
    if (!c->ec || c->field >= c->ec->n_fields || c->ec->fields[c->field].type != type)
        c->mismatch = 1;
    c->field++;
}

static void f_u8(ctf_t *c, int v) {
    expect(c, T_U8);
    put_le(&c->buf, (uint64_t)(v != 0), 1);
}
static void f_i32(ctf_t *c, int64_t v) {
    expect(c, T_I32);
    put_le(&c->buf, (uint64_t)(int64_t)(int32_t)v, 4);
}
static void f_i64(ctf_t *c, int64_t v) {
    expect(c, T_I64);
    put_le(&c->buf, (uint64_t)v, 8);
}
/* The model's unknown doubles are any negative value: written as -1. */
static void f_f64(ctf_t *c, double v) {
    expect(c, T_F64);
    uint64_t u;
    if (!(v >= 0)) v = -1.0;
    memcpy(&u, &v, sizeof u);
    put_le(&c->buf, u, 8);
}
static void f_enum(ctf_t *c, ftype_t type, int64_t v) {
    expect(c, type);
    put_le(&c->buf, (uint64_t)(int64_t)(int32_t)v, 4);
}
/* A NUL-terminated UTF-8 string: invalid bytes become U+FFFD, as in JSON. */
static void f_str(ctf_t *c, const char *s) {
    expect(c, T_STR);
    if (!s) s = "";
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t len = p[i] < 0x80 ? 1 : gpufl__utf8_seq(p + i, n - i);
        if (len) {
            gpufl__buf_put(&c->buf, s + i, len);
            i += len;
        } else {
            gpufl__buf_put(&c->buf, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
    gpufl__buf_putc(&c->buf, '\0');
}

static const char *scope_path(const gpufl__model_t *m, int64_t scope) {
    const gpufl__model_scope_t *s = scope > 0 ? gpufl__model_scope_find(m, scope) : NULL;
    return s && s->path ? s->path : "";
}

static void f_scope(ctf_t *c, int64_t scope) {
    f_i64(c, scope > 0 ? scope : GPUFL_MODEL_UNKNOWN);
    f_str(c, scope_path(c->m, scope));
}

static void f_site(ctf_t *c, int64_t stack) {
    char buf[1024];
    f_str(c, gpufl__export_site(c->m, stack, buf, sizeof buf));
}

static int64_t duration(int64_t start, int64_t end) {
    return end >= start && end != GPUFL_MODEL_UNKNOWN ? end - start : GPUFL_MODEL_UNKNOWN;
}

static void scope_fields(ctf_t *c, const item_t *x) {
    const gpufl__model_t *m = c->m;
    const gpufl__model_scope_t *s =
        x->kind == K_LOST_END ? &m->lost_scopes[x->index] : &m->scopes[x->index];
    f_i64(c, s->id);
    if (x->kind == K_SCOPE_BEGIN) {
        f_i64(c, s->parent);
        f_str(c, s->name);
        f_str(c, s->path);
        f_str(c, s->tag);
        f_i32(c, s->depth);
        f_i32(c, s->repeat);
        f_i32(c, s->warmup);
        f_u8(c, s->source); /* 0 gpufl, 1 NVTX push/pop, 2 NVTX start/end */
        f_str(c, s->domain ? s->domain : "");
        f_str(c, s->category ? s->category : "");
        f_str(c, s->payload ? s->payload : "");
        return;
    }
    f_str(c, s->name);
    f_str(c, s->path);
    f_i64(c, s->lost ? GPUFL_MODEL_UNKNOWN : duration(s->begin_ns, s->end_ns));
    f_u8(c, s->implicit);
    f_u8(c, s->lost);
}

static void sync_fields_put(ctf_t *c, const gpufl__model_sync_t *s) {
    f_enum(c, T_SYNC_TYPE, s->sync_type);
    f_str(c, gpufl__model_sync_name(s->sync_type));
    f_i64(c, duration(s->start_ns, s->end_ns));
    f_i64(c, s->stream);
    f_i64(c, s->event);
    f_i64(c, s->correlation);
    f_scope(c, s->scope);
    f_site(c, s->stack);
}

static void kernel_fields_put(ctf_t *c, const gpufl__model_kernel_t *k) {
    const gpufl__model_kernel_config_t *cfg =
        k->config > 0 ? gpufl__model_config_find(c->m, k->config) : NULL;
    f_str(c, k->demangled && *k->demangled ? k->demangled : k->name);
    f_str(c, k->name);
    f_i64(c, duration(k->start_ns, k->end_ns));
    f_i64(c, k->correlation);
    f_i32(c, k->grid_x);
    f_i32(c, k->grid_y);
    f_i32(c, k->grid_z);
    f_i32(c, k->block_x);
    f_i32(c, k->block_y);
    f_i32(c, k->block_z);
    f_i32(c, k->registers);
    f_i64(c, k->static_smem_bytes);
    f_i64(c, k->dynamic_smem_bytes);
    f_i64(c, k->local_bytes_per_thread);
    f_f64(c, cfg && cfg->occupancy >= 0 ? cfg->occupancy * 100.0 : -1.0);
    f_str(c, cfg ? cfg->limiter : "");
    f_i64(c, k->graph_id);
    f_i64(c, k->graph_node);
    f_i64(c, k->external_id);
    f_scope(c, k->scope);
    f_i64(c, k->launch_ns);
    f_i64(c, k->tid);
    f_site(c, k->stack);
}

static void gpu_sample_fields_put(ctf_t *c, const gpufl__model_gpu_sample_t *s) {
    f_i32(c, s->gpu_util_pct);
    f_i32(c, s->mem_util_pct);
    f_i64(c, s->mem_used_bytes);
    f_i64(c, s->mem_free_bytes);
    f_i64(c, s->mem_total_bytes);
    f_i64(c, s->power_mw);
    f_i64(c, s->power_limit_mw);
    f_i64(c, s->energy_mj);
    f_i32(c, s->temp_gpu_c);
    f_i32(c, s->temp_mem_c);
    f_i32(c, s->clock_sm_mhz);
    f_i32(c, s->clock_gfx_mhz);
    f_i32(c, s->clock_mem_mhz);
    f_i32(c, s->fan_pct);
    f_i64(c, s->pcie_tx_bytes_per_s);
    f_i64(c, s->pcie_rx_bytes_per_s);
    f_i64(c, s->nvlink_tx_bytes_per_s);
    f_i64(c, s->nvlink_rx_bytes_per_s);
    f_i64(c, s->ecc_sbe_volatile);
    f_i64(c, s->ecc_dbe_volatile);
    f_i64(c, s->throttle_reasons);
    f_f64(c, s->sm_active_pct);
    f_f64(c, s->sm_occupancy_pct);
    f_f64(c, s->tensor_active_pct);
    f_f64(c, s->dram_bw_util_pct);
}

static void host_sample_fields_put(ctf_t *c, const gpufl__model_host_sample_t *h) {
    f_f64(c, h->cpu_pct);
    f_f64(c, h->proc_cpu_pct);
    f_f64(c, h->cg_cpu_pct);
    f_f64(c, h->cg_cpu_limit_cores);
    f_i64(c, h->mem_used_bytes);
    f_i64(c, h->mem_total_bytes);
    f_i64(c, h->proc_rss_bytes);
    f_i64(c, h->cg_mem_used_bytes);
    f_i64(c, h->cg_mem_limit_bytes);
}

static void record_fields(ctf_t *c, const item_t *x) {
    const gpufl__model_t *m = c->m;
    switch ((kind_t)x->kind) {
    case K_SCOPE_BEGIN:
    case K_SCOPE_END:
    case K_LOST_END: scope_fields(c, x); break;
    case K_SYNC: sync_fields_put(c, &m->syncs[x->index]); break;
    case K_LAUNCH: {
        const gpufl__model_launch_t *l = &m->launches[x->index];
        f_str(c, gpufl__model_launch_name(m, l));
        f_i64(c, l->correlation);
        f_i64(c, l->config);
        f_i64(c, l->context);
        f_i64(c, l->external_id);
        f_scope(c, l->scope);
        f_site(c, l->stack);
        break;
    }
    case K_KERNEL: kernel_fields_put(c, &m->kernels[x->index]); break;
    case K_COPY: {
        const gpufl__model_copy_t *cp = &m->copies[x->index];
        f_enum(c, T_COPY_KIND, cp->copy_kind);
        f_i64(c, cp->bytes);
        f_i64(c, duration(cp->start_ns, cp->end_ns));
        f_enum(c, T_MEMORY_KIND, cp->src_kind);
        f_enum(c, T_MEMORY_KIND, cp->dst_kind);
        f_scope(c, cp->scope);
        break;
    }
    case K_MEMSET: {
        const gpufl__model_memset_t *s = &m->memsets[x->index];
        f_enum(c, T_MEMORY_KIND, s->memory_kind);
        f_i64(c, s->bytes);
        f_i64(c, duration(s->start_ns, s->end_ns));
        f_scope(c, s->scope);
        break;
    }
    case K_GPU_SAMPLE: gpu_sample_fields_put(c, &m->gpu_samples[x->index]); break;
    case K_HOST_SAMPLE: host_sample_fields_put(c, &m->samples[x->index]); break;
    }
}

/* ---- packets and files ---- */

static int fail_write(ctf_t *c) {
    return gpufl__set_error(GPUFL_EIO, "cannot write '%s': %s", c->path, strerror(errno));
}

static void packet_begin(ctf_t *c) {
    const item_t *s = c->stream;
    c->buf.len = 0;
    c->packet_records = 0;
    put_le(&c->buf, CTF_MAGIC, 4);
    gpufl__buf_put(&c->buf, (const char *)c->uuid, sizeof c->uuid);
    put_le(&c->buf, s->stream_class, 4);
    /* timestamp_begin, timestamp_end, content_size, packet_size: filled at the end */
    put_le(&c->buf, 0, 8);
    put_le(&c->buf, 0, 8);
    put_le(&c->buf, 0, 8);
    put_le(&c->buf, 0, 8);
    put_le(&c->buf, c->packet_seq, 8);
    switch (s->stream_class) {
    case SC_THREAD: put_le(&c->buf, (uint64_t)s->key_a, 8); break;
    case SC_GPU:
        put_le(&c->buf, (uint64_t)(int64_t)(int32_t)s->key_a, 4);
        put_le(&c->buf, (uint64_t)(s->key_b == KEY_COPIES ? GPUFL_MODEL_UNKNOWN : s->key_b), 8);
        break;
    default: put_le(&c->buf, (uint64_t)(int64_t)(s->key_a == KEY_HOST ? -1 : (int32_t)s->key_a), 4);
    }
}

static void patch_u64(gpufl__buf_t *b, size_t at, uint64_t v) {
    for (unsigned i = 0; i < 8; i++) b->data[at + i] = (char)(v >> (8 * i));
}

static int packet_end(ctf_t *c) {
    if (c->buf.overflow)
        return gpufl__set_error(GPUFL_ENOMEM, "export: a packet of '%s' passes %zu bytes", c->path,
                                BUF_MAX_BYTES);
    uint64_t bits = (uint64_t)c->buf.len * 8;
    patch_u64(&c->buf, PACKET_HEADER_BYTES, c->first_ts);
    patch_u64(&c->buf, PACKET_HEADER_BYTES + 8, c->last_ts);
    patch_u64(&c->buf, PACKET_HEADER_BYTES + 16, bits);
    patch_u64(&c->buf, PACKET_HEADER_BYTES + 24, bits);
    if (fwrite(c->buf.data, 1, c->buf.len, c->f) != c->buf.len) return fail_write(c);
    c->res->bytes += c->buf.len;
    c->packet_seq++;
    return 0;
}

static int record(ctf_t *c, const item_t *x) {
    uint64_t ts = (uint64_t)(x->ts_ns - c->base_ns);
    if (c->packet_records && c->buf.len >= PACKET_BYTES) {
        int rc = packet_end(c);
        if (rc) return rc;
        packet_begin(c);
    }
    if (!c->packet_records) c->first_ts = ts;
    c->last_ts = ts;
    c->packet_records++;
    kind_t k = x->kind == K_LOST_END ? K_SCOPE_END : (kind_t)x->kind;
    c->ec = &classes[k];
    c->field = 0;
    put_le(&c->buf, c->ec->id, 2);
    put_le(&c->buf, ts, 8);
    record_fields(c, x);
    if (c->mismatch || c->field != c->ec->n_fields)
        return gpufl__set_error(GPUFL_EINVAL, "export: a %s record does not match its metadata",
                                c->ec->name);
    c->res->events++;
    if (k == K_GPU_SAMPLE || k == K_HOST_SAMPLE)
        c->res->counters++;
    else
        c->res->slices++;
    return 0;
}

/* "thread-4242", "gpu0-stream7", "gpu0-copies", "gpu1-samples", "host-samples". */
static void stream_file_name(const item_t *s, char *out, size_t size) {
    if (s->stream_class == SC_THREAD && s->key_a == GPUFL_MODEL_UNKNOWN)
        snprintf(out, size, "thread-unknown");
    else if (s->stream_class == SC_THREAD)
        snprintf(out, size, "thread-%" PRId64, s->key_a);
    else if (s->stream_class == SC_GPU && s->key_b == KEY_COPIES)
        snprintf(out, size, "gpu%" PRId64 "-copies", s->key_a);
    else if (s->stream_class == SC_GPU && s->key_b == GPUFL_MODEL_UNKNOWN)
        snprintf(out, size, "gpu%" PRId64 "-stream-unknown", s->key_a);
    else if (s->stream_class == SC_GPU)
        snprintf(out, size, "gpu%" PRId64 "-stream%" PRId64, s->key_a, s->key_b);
    else if (s->key_a == KEY_HOST)
        snprintf(out, size, "host-samples");
    else
        snprintf(out, size, "gpu%" PRId64 "-samples", s->key_a);
}

static int open_file(ctf_t *c, const char *name) {
    int n = snprintf(c->path, sizeof c->path, "%s/%s", c->dir, name);
    if (n < 0 || (size_t)n >= sizeof c->path)
        return gpufl__set_error(GPUFL_EINVAL, "export: the path '%s/%s' is too long", c->dir, name);
    c->f = fopen(c->path, "wb");
    if (!c->f)
        return gpufl__set_error(GPUFL_EIO, "cannot create '%s': %s", c->path, strerror(errno));
    return 0;
}

static int close_file(ctf_t *c) {
    int bad = ferror(c->f);
    if (fclose(c->f) != 0) bad = 1;
    c->f = NULL;
    return bad ? fail_write(c) : 0;
}

/* One data stream: the records x[0..n), all of one stream, in time order. */
static int write_stream(ctf_t *c, const item_t *x, size_t n) {
    char name[96];
    stream_file_name(x, name, sizeof name);
    int rc = open_file(c, name);
    if (rc) return rc;
    c->stream = x;
    c->packet_seq = 0;
    packet_begin(c);
    for (size_t i = 0; i < n && !rc; i++) rc = record(c, &x[i]);
    if (!rc) rc = packet_end(c);
    int rc_close = close_file(c);
    return rc ? rc : rc_close;
}

static int same_stream(const item_t *a, const item_t *b) {
    return a->stream_class == b->stream_class && a->key_a == b->key_a && a->key_b == b->key_b;
}

/* ---------------------------------------------------------------------- */
/* Metadata (TSDL)                                                          */
/* ---------------------------------------------------------------------- */

/* A TSDL string literal: quotes and backslashes escaped, control bytes and
 * invalid UTF-8 as '?'. */
static void tsdl_str(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        size_t len = p[i] < 0x80 ? 1 : gpufl__utf8_seq(p + i, n - i);
        if (len == 1 && (p[i] == '"' || p[i] == '\\')) fputc('\\', f);
        if (len == 1 && (p[i] < 0x20 || p[i] == 0x7f)) {
            fputc('?', f);
        } else if (len) {
            fwrite(p + i, 1, len, f);
        } else {
            fputc('?', f);
            len = 1;
        }
        i += len;
    }
    fputc('"', f);
}

static void tsdl_enum(FILE *f, const char *type, int (*names)(int, const char **), int count) {
    fprintf(f, "typealias enum : int32_t {\n");
    for (int v = 0; v < count; v++) {
        const char *name;
        if (names(v, &name)) continue;
        fprintf(f, "    \"%s\" = %d%s\n", name, v, v + 1 < count ? "," : "");
    }
    fprintf(f, "} := %s;\n", type);
}

static int copy_name(int v, const char **out) { return !(*out = gpufl_copy_kind_name(v)); }
static int memory_name(int v, const char **out) { return !(*out = gpufl_memory_kind_name(v)); }
static int sync_name(int v, const char **out) { return !(*out = gpufl_sync_type_name(v)); }

static const char *tsdl_type(ftype_t t) {
    static const char *const names[] = {[T_U8] = "uint8_t",
                                        [T_I32] = "int32_t",
                                        [T_I64] = "int64_t",
                                        [T_F64] = "double",
                                        [T_STR] = "string",
                                        [T_COPY_KIND] = "copy_kind_t",
                                        [T_MEMORY_KIND] = "memory_kind_t",
                                        [T_SYNC_TYPE] = "sync_type_t"};
    return names[t];
}

static void uuid_text(const uint8_t u[16], char out[37]) {
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
        *p++ = hex[u[i] >> 4];
        *p++ = hex[u[i] & 15];
    }
    *p = '\0';
}

/* The clock's origin: the wall-clock time of the session epoch when the
 * header gives it (then the clock is absolute), less base_ns. */
static void write_clock(ctf_t *c, FILE *f) {
    const gpufl__model_header_t *h = &c->m->header;
    int absolute = h->epoch_unix_us != GPUFL_MODEL_UNKNOWN && h->epoch_unix_us >= 0;
    int64_t origin_ns = absolute ? h->epoch_unix_us * 1000 : 0;
    int64_t offset_ns = origin_ns + c->base_ns;
    int64_t offset_s = offset_ns / 1000000000;
    int64_t offset_cycles = offset_ns % 1000000000;
    if (offset_cycles < 0) {
        offset_cycles += 1000000000;
        offset_s--;
    }
    char uuid[37];
    uuid_text(c->uuid, uuid);
    fprintf(f,
            "clock {\n    name = session;\n    uuid = \"%s\";\n"
            "    description = \"gpufl session clock: CLOCK_MONOTONIC nanoseconds since the "
            "session epoch, origin %s\";\n"
            "    freq = 1000000000;\n    precision = 1;\n"
            "    offset_s = %" PRId64 ";\n    offset = %" PRId64 ";\n    absolute = %s;\n};\n\n",
            uuid,
            absolute ? "its wall-clock time (epoch_unix_us)" : "the epoch (wall time unknown)",
            offset_s, offset_cycles, absolute ? "true" : "false");
}

static void write_env(ctf_t *c, FILE *f) {
    const gpufl__model_header_t *h = &c->m->header;
    fprintf(f, "env {\n    tracer_name = \"gpufl\";\n    gpufl_version = ");
    tsdl_str(f, h->gpufl_version);
    fprintf(f, ";\n    session_id = ");
    tsdl_str(f, h->session_id);
    fprintf(f, ";\n    app_name = ");
    tsdl_str(f, h->app_name);
    fprintf(f, ";\n    hostname = ");
    tsdl_str(f, h->hostname);
    fprintf(f, ";\n");
    if (h->pid != GPUFL_MODEL_UNKNOWN) fprintf(f, "    pid = %" PRId64 ";\n", h->pid);
    if (h->epoch_unix_us != GPUFL_MODEL_UNKNOWN)
        fprintf(f, "    epoch_unix_us = %" PRId64 ";\n", h->epoch_unix_us);
    fprintf(f, "    clock_base_ns = %" PRId64 ";\n};\n\n", c->base_ns);
}

static int write_metadata(ctf_t *c) {
    int rc = open_file(c, "metadata");
    if (rc) return rc;
    FILE *f = c->f;
    char uuid[37];
    uuid_text(c->uuid, uuid);
    fprintf(f, "/* CTF 1.8 */\n/* gpufl session %s: docs/design/ctf-export.md */\n\n",
            *c->m->header.session_id ? c->m->header.session_id : "(no id)");
    fprintf(f, "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
               "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
               "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
               "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
               "typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
               "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
               "typealias floating_point { exp_dig = 11; mant_dig = 53; align = 8; } := double;\n");
    tsdl_enum(f, "copy_kind_t", copy_name, GPUFL_COPY_KIND_COUNT);
    tsdl_enum(f, "memory_kind_t", memory_name, GPUFL_MEMORY_KIND_COUNT);
    tsdl_enum(f, "sync_type_t", sync_name, GPUFL_SYNC_TYPE_COUNT);
    fprintf(f,
            "\ntrace {\n    major = 1;\n    minor = 8;\n    uuid = \"%s\";\n"
            "    byte_order = le;\n    packet.header := struct {\n        uint32_t magic;\n"
            "        uint8_t uuid[16];\n        uint32_t stream_id;\n    };\n};\n\n",
            uuid);
    write_env(c, f);
    write_clock(c, f);
    fprintf(f, "typealias integer { size = 64; align = 8; signed = false; "
               "map = clock.session.value; } := session_clock_t;\n\n");
    for (unsigned sc = 0; sc < SC_COUNT; sc++) {
        fprintf(f,
                "/* %s */\nstream {\n    id = %u;\n"
                "    event.header := struct {\n        uint16_t id;\n"
                "        session_clock_t timestamp;\n    };\n"
                "    packet.context := struct {\n        session_clock_t timestamp_begin;\n"
                "        session_clock_t timestamp_end;\n        uint64_t content_size;\n"
                "        uint64_t packet_size;\n        uint64_t packet_seq_num;\n%s    };\n};\n\n",
                stream_class_name[sc], sc, stream_context[sc]);
    }
    for (size_t k = 0; k < K_COUNT; k++) {
        const event_class_t *ec = &classes[k];
        fprintf(f,
                "event {\n    name = \"%s\";\n    id = %u;\n    stream_id = %u;\n"
                "    fields := struct {\n",
                ec->name, ec->id, ec->stream_class);
        for (size_t i = 0; i < ec->n_fields; i++)
            fprintf(f, "        %s %s;\n", tsdl_type(ec->fields[i].type), ec->fields[i].name);
        fprintf(f, "    };\n};\n\n");
    }
    long size = ftell(f);
    rc = close_file(c);
    if (!rc && size > 0) c->res->bytes += (uint64_t)size;
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The directory                                                            */
/* ---------------------------------------------------------------------- */

/* Makes dir, or checks that it is empty; with overwrite, a directory that
 * holds a trace (a metadata file, plain files only) is emptied. Nothing that
 * is not a trace is ever deleted. */
static int prepare_dir(const char *dir, int overwrite) {
    if (mkdir(dir, 0777) == 0) return 0;
    if (errno != EEXIST)
        return gpufl__set_error(GPUFL_EIO, "cannot create directory '%s': %s", dir,
                                strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return gpufl__set_error(GPUFL_EIO, "'%s' exists and is not a directory", dir);
    int pass, has_metadata = 0, has_other = 0, entries = 0;
    char path[PATH_BYTES];
    for (pass = 0; pass < 2; pass++) {
        DIR *d = opendir(dir);
        if (!d) return gpufl__set_error(GPUFL_EIO, "cannot read '%s': %s", dir, strerror(errno));
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (n < 0 || (size_t)n >= sizeof path || lstat(path, &st) != 0 ||
                !S_ISREG(st.st_mode)) {
                has_other = 1;
                continue;
            }
            entries++;
            if (strcmp(e->d_name, "metadata") == 0) has_metadata = 1;
            if (pass == 1 && unlink(path) != 0) {
                int err = errno;
                closedir(d);
                return gpufl__set_error(GPUFL_EIO, "cannot delete '%s': %s", path, strerror(err));
            }
        }
        closedir(d);
        if (pass == 1) break;
        if (!entries && !has_other) return 0;
        if (!overwrite)
            return gpufl__set_error(GPUFL_EINVAL,
                                    "'%s' is not empty: a trace goes into a new or empty "
                                    "directory (set overwrite, `gpufl export --force`, to "
                                    "replace a CTF trace there)",
                                    dir);
        if (!has_metadata || has_other)
            return gpufl__set_error(
                GPUFL_EINVAL,
                "'%s' is not empty and does not hold a CTF trace (%s): "
                "not deleting its files",
                dir, has_other ? "it holds more than plain files" : "no metadata file");
    }
    return 0;
}

/* A UUID of the session (id, host, epoch), the same at every export of it:
 * two FNV-1a hashes, marked as an RFC 9562 version 8 (custom) UUID. */
static void session_uuid(const gpufl__model_header_t *h, uint8_t out[16]) {
    uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
    const char *parts[] = {h->session_id, "\n", h->hostname, "\n", h->app_name};
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++)
        for (const unsigned char *s = (const unsigned char *)parts[p]; s && *s; s++) {
            a = (a ^ *s) * 0x100000001b3ull;
            b = (b ^ *s) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
        }
    a ^= h->epoch_ns;
    b ^= (uint64_t)h->epoch_unix_us * 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(a >> (56 - 8 * i));
        out[8 + i] = (uint8_t)(b >> (56 - 8 * i));
    }
    out[6] = (uint8_t)((out[6] & 0x0f) | 0x80);
    out[8] = (uint8_t)((out[8] & 0x3f) | 0x80);
}

int gpufl__export_ctf(gpufl_export_result_t *res, const gpufl__model_t *m,
                      const gpufl_export_options_t *opt, int overwrite) {
    if (!opt->path || strcmp(opt->path, "-") == 0)
        return gpufl__set_error(GPUFL_EINVAL,
                                "export: a CTF trace is a directory; it cannot go to a stream");
    ctf_t c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.res = res;
    c.dir = opt->path;
    session_uuid(&m->header, c.uuid);
    items_t it = {0};
    int rc = collect(m, &it);
    if (rc) return rc;
    for (size_t i = 0; i < it.n; i++)
        if (it.v[i].ts_ns < c.base_ns) c.base_ns = it.v[i].ts_ns;
    rc = prepare_dir(c.dir, overwrite);
    if (!rc) {
        res->files = malloc(sizeof *res->files);
        if (res->files && (res->files[0] = strdup(c.dir)) != NULL) res->n_files = 1;
        if (!res->n_files) rc = gpufl__set_error(GPUFL_ENOMEM, "export: no memory");
    }
    gpufl__buf_init(&c.buf, BUF_MAX_BYTES);
    if (!rc) rc = write_metadata(&c);
    for (size_t i = 0, j; !rc && i < it.n; i = j) {
        for (j = i + 1; j < it.n && same_stream(&it.v[i], &it.v[j]); j++) {
        }
        if (res->tracks >= STREAMS_MAX) {
            rc = gpufl__set_error(GPUFL_ENOMEM, "export: more than %u data streams", STREAMS_MAX);
            break;
        }
        rc = write_stream(&c, &it.v[i], j - i);
        res->tracks++;
        if (opt->progress) opt->progress(opt->progress_user, (double)j / (double)it.n);
    }
    gpufl__buf_fini(&c.buf);
    free(it.v);
    return rc;
}
