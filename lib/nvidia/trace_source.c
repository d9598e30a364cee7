/*
 * trace_source.c - CUPTI activity records into device.log batches.
 *
 * Kernel names are interned (dict column). Times are CLOCK_MONOTONIC from
 * CUPTI's timestamp callback, so they share the session clock. What CUPTI
 * reports as dropped is counted and written as a drops-style event.
 */
#include "nvidia/trace_source.h"

#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const gpufl_col_def_t kernel_cols[] = {{"start_ns", GPUFL_COL_INT},
                                              {"end_ns", GPUFL_COL_INT},
                                              {"device", GPUFL_COL_INT},
                                              {"context", GPUFL_COL_INT},
                                              {"stream", GPUFL_COL_INT},
                                              {"correlation", GPUFL_COL_INT},
                                              {"name", GPUFL_COL_DICT},
                                              {"grid_x", GPUFL_COL_INT},
                                              {"grid_y", GPUFL_COL_INT},
                                              {"grid_z", GPUFL_COL_INT},
                                              {"block_x", GPUFL_COL_INT},
                                              {"block_y", GPUFL_COL_INT},
                                              {"block_z", GPUFL_COL_INT},
                                              {"registers", GPUFL_COL_INT},
                                              {"static_smem_bytes", GPUFL_COL_INT},
                                              {"dynamic_smem_bytes", GPUFL_COL_INT},
                                              {"local_bytes_per_thread", GPUFL_COL_INT},
                                              {"graph_id", GPUFL_COL_INT}};
static const gpufl_col_def_t copy_cols[] = {
    {"start_ns", GPUFL_COL_INT},  {"end_ns", GPUFL_COL_INT},      {"device", GPUFL_COL_INT},
    {"stream", GPUFL_COL_INT},    {"correlation", GPUFL_COL_INT}, {"bytes", GPUFL_COL_INT},
    {"copy_kind", GPUFL_COL_INT}, {"src_kind", GPUFL_COL_INT},    {"dst_kind", GPUFL_COL_INT},
    {"async", GPUFL_COL_INT}};
static const gpufl_col_def_t memset_cols[] = {
    {"start_ns", GPUFL_COL_INT},   {"end_ns", GPUFL_COL_INT},      {"device", GPUFL_COL_INT},
    {"stream", GPUFL_COL_INT},     {"correlation", GPUFL_COL_INT}, {"bytes", GPUFL_COL_INT},
    {"memory_kind", GPUFL_COL_INT}};
static const gpufl_col_def_t sync_cols[] = {
    {"start_ns", GPUFL_COL_INT},   {"end_ns", GPUFL_COL_INT}, {"sync_type", GPUFL_COL_INT},
    {"context", GPUFL_COL_INT},    {"stream", GPUFL_COL_OPT}, {"event", GPUFL_COL_OPT},
    {"correlation", GPUFL_COL_INT}};
#define NCOLS(a) ((int)(sizeof a / sizeof a[0]))

static gpufl_cell_t *next(gpufl_trace_source_t *t, gpufl_batch_t *b) {
    return gpufl__batch_next(b, gpufl__collector_file(t->collector, GPUFL_FILE_DEVICE),
                             gpufl__collector_dict(t->collector));
}

static int64_t ts(const gpufl_trace_source_t *t, int64_t ns) {
    return gpufl__collector_session_ns(t->collector, ns);
}

/* CUPTI's "none" for a sync's stream or event becomes null in the log. */
static int64_t opt_u32(uint32_t v) { return v == 0xffffffffu ? -1 : (int64_t)v; }

static void on_kernel(void *user, const gpufl_cupti_kernel_t *k) {
    gpufl_trace_source_t *t = user;
    gpufl_cell_t *r = next(t, &t->kernels);
    const char *name = k->name ? k->name : "";
    int64_t v[] = {
        ts(t, k->start_ns),
        ts(t, k->end_ns),
        k->device_id,
        k->context_id,
        k->stream_id,
        k->correlation_id,
        gpufl__intern((gpufl_intern_t *)gpufl__collector_dict(t->collector), name, strlen(name)),
        k->grid_x,
        k->grid_y,
        k->grid_z,
        k->block_x,
        k->block_y,
        k->block_z,
        k->registers_per_thread,
        k->static_shared_bytes,
        k->dynamic_shared_bytes,
        k->local_bytes_per_thread,
        k->graph_id};
    for (int i = 0; i < NCOLS(kernel_cols); i++) r[i].i = v[i];
}

static void on_copy(void *user, const gpufl_cupti_copy_t *c) {
    gpufl_trace_source_t *t = user;
    gpufl_cell_t *r = next(t, &t->copies);
    int64_t v[] = {ts(t, c->start_ns), ts(t, c->end_ns),  c->device_id, c->stream_id,
                   c->correlation_id,  (int64_t)c->bytes, c->copy_kind, c->src_kind,
                   c->dst_kind,        c->async};
    for (int i = 0; i < NCOLS(copy_cols); i++) r[i].i = v[i];
}

static void on_memset(void *user, const gpufl_cupti_memset_t *m) {
    gpufl_trace_source_t *t = user;
    gpufl_cell_t *r = next(t, &t->memsets);
    int64_t v[] = {ts(t, m->start_ns), ts(t, m->end_ns),  m->device_id,  m->stream_id,
                   m->correlation_id,  (int64_t)m->bytes, m->memory_kind};
    for (int i = 0; i < NCOLS(memset_cols); i++) r[i].i = v[i];
}

static void on_sync(void *user, const gpufl_cupti_sync_t *s) {
    gpufl_trace_source_t *t = user;
    gpufl_cell_t *r = next(t, &t->syncs);
    int64_t v[] = {ts(t, s->start_ns), ts(t, s->end_ns),      s->type,
                   s->context_id,      opt_u32(s->stream_id), opt_u32(s->cuda_event_id),
                   s->correlation_id};
    for (int i = 0; i < NCOLS(sync_cols); i++) r[i].i = v[i];
}

static void on_dropped(void *user, uint64_t records) {
    ((gpufl_trace_source_t *)user)->dropped += records;
}

static const gpufl_cupti_sink_t sink = {on_kernel, on_copy, on_memset, on_sync,
                                        NULL,      NULL,    on_dropped};

static void encode_all(gpufl_trace_source_t *t) {
    gpufl_writer_t *f = gpufl__collector_file(t->collector, GPUFL_FILE_DEVICE);
    const gpufl_intern_t *dict = gpufl__collector_dict(t->collector);
    pthread_mutex_lock(&f->lock);
    gpufl__batch_encode(&t->kernels, f, dict);
    gpufl__batch_encode(&t->copies, f, dict);
    gpufl__batch_encode(&t->memsets, f, dict);
    gpufl__batch_encode(&t->syncs, f, dict);
    pthread_mutex_unlock(&f->lock);
    if (t->dropped != t->dropped_written) { /* said once per change, with the running total */
        char msg[160];
        snprintf(msg, sizeof msg, "CUPTI dropped %llu activity records so far (no buffer space)",
                 (unsigned long long)t->dropped);
        if (t->dropped_written == 0) gpufl__warn("%s", msg);
        gpufl__collector_event(t->collector, GPUFL_FILE_DEVICE, "warn", "cupti_records_dropped",
                               msg);
        t->dropped_written = t->dropped;
    }
}

static void poll(gpufl_collector_t *c, void *self, int64_t now_ns) {
    gpufl_trace_source_t *t = self;
    (void)c;
    if (now_ns >= t->next_flush_ns) {
        gpufl__cupti_flush(t->cupti, 0);
        t->next_flush_ns = now_ns + t->flush_every_ns;
    }
    gpufl__cupti_drain(t->cupti, &sink, t);
}

static void flush(gpufl_collector_t *c, void *self) {
    (void)c;
    encode_all(self);
}

/* Last records: CUPTI stopped, everything it holds drained and encoded. */
static void finish(gpufl_collector_t *c, void *self) {
    gpufl_trace_source_t *t = self;
    (void)c;
    gpufl__cupti_stop(t->cupti, &sink, t);
    encode_all(t);
}

int gpufl__trace_source_init(gpufl_trace_source_t *t, gpufl_collector_t *c,
                             const gpufl_settings_t *settings, char *why, size_t why_size,
                             gpufl_source_t *source) {
    int rc;
    memset(t, 0, sizeof *t);
    t->collector = c;
    t->flush_every_ns = (int64_t)settings->flush_interval_ms * 1000000;
    if ((rc = gpufl__batch_init(&t->kernels, "kernel", kernel_cols, NCOLS(kernel_cols))) ||
        (rc = gpufl__batch_init(&t->copies, "copy", copy_cols, NCOLS(copy_cols))) ||
        (rc = gpufl__batch_init(&t->memsets, "memset", memset_cols, NCOLS(memset_cols))) ||
        (rc = gpufl__batch_init(&t->syncs, "sync", sync_cols, NCOLS(sync_cols)))) {
        snprintf(why, why_size, "%s", gpufl_last_error());
        goto fail;
    }
    rc = gpufl__cupti_open(NULL, &t->cupti, why, why_size);
    if (rc) goto fail;
    /* Allocation and external-correlation records come with a later step;
     * until they are written somewhere, they are not asked for. */
    gpufl_cupti_config_t cfg = {sizeof cfg, 0, 0, 0};
    if (settings->enable_synchronization) cfg.flags |= GPUFL_CUPTI_SYNC;
    rc = gpufl__cupti_start(t->cupti, &cfg, why, why_size);
    if (rc) {
        /* Without a driver CUPTI loads but fails vaguely: name the real cause. */
        void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
        if (!cuda) cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (!cuda) {
            char cupti_why[200];
            snprintf(cupti_why, sizeof cupti_why, "%s", why);
            snprintf(why, why_size, "libcuda.so.1 not found: no NVIDIA driver (CUPTI: %s)",
                     cupti_why);
        }
        goto fail;
    }
    if (!gpufl__cupti_shared_clock(t->cupti))
        gpufl__warn("this CUPTI has no timestamp callback: GPU times are on CUPTI's clock");
    *source = (gpufl_source_t){"cupti", t, poll, NULL, flush, finish};
    return 0;
fail:
    gpufl__trace_source_fini(t);
    return rc ? rc : GPUFL_ENOTSUP;
}

void gpufl__trace_source_fini(gpufl_trace_source_t *t) {
    gpufl__cupti_close(t->cupti);
    t->cupti = NULL;
    gpufl__batch_fini(&t->kernels);
    gpufl__batch_fini(&t->copies);
    gpufl__batch_fini(&t->memsets);
    gpufl__batch_fini(&t->syncs);
}
