// SPDX-License-Identifier: Apache-2.0
/*
 * trace_source.c - CUPTI activity records into device.log batches, each
 * joined with the note its launching thread left (launch.h): scope,
 * configuration, external id. Synchronization and graph-launch rows come
 * from the callbacks' queues; kernel_config records from the configurations
 * first launched since the last pass; trace_stats at the end.
 *
 * Kernel names are interned (dict column), with their demangled form. Times
 * are CLOCK_MONOTONIC from CUPTI's timestamp callback, so they share the
 * session clock. What CUPTI reports as dropped is counted and written as a
 * cupti_records_dropped event.
 */
#include "nvidia/trace_source.h"

#include "core/clock.h"
#include "core/wire_engines.h"
#include "util/error.h"
#include "util/demangle.h"
#include "util/log.h"
#include "core/ring.h"
#include "core/stack_log.h"
#include "nvidia/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NCOLS(a) ((int)(sizeof a / sizeof a[0]))

/* Timed launches waiting for their events: at most one per event pair. */
#define PENDING_MAX ((size_t)GPUFL_KERNEL_EVENTS_PAIRS * GPUFL_KERNEL_EVENTS_CONTEXTS)
/* With event pairs, the collector takes the launches and reads the done
 * pairs this often: 10 ms of launches at 250,000 a second (an empty-kernel
 * loop) fit in one context's 4096 pairs. */
#define EVENTS_PASS_NS 10000000LL

static gpufl__cell_t *next(gpufl__trace_source_t *t, gpufl__batch_t *b) {
    return gpufl__collector_row(t->collector, GPUFL_FILE_DEVICE, b);
}

static int64_t ts(const gpufl__trace_source_t *t, int64_t ns) {
    return gpufl__collector_session_ns(t->collector, ns);
}

static gpufl__intern_t *dict(gpufl__trace_source_t *t) {
    return (gpufl__intern_t *)gpufl__collector_dict(t->collector);
}

/* CUPTI's "none" for a sync's stream or event becomes null in the log. */
static int64_t opt_u32(uint32_t v) { return v == 0xffffffffu ? -1 : (int64_t)v; }
/* 0 (none) becomes null. */
static int64_t opt_id(uint64_t v) { return v ? (int64_t)v : -1; }

/* The `stack` column of a row: the stack written before it, or null. */
static int64_t stack_col(gpufl__trace_source_t *t, uint32_t id) {
    if (id == 0 || !t->stacks_on) return -1;
    return gpufl__stack_log_put(&t->stack_log, t->collector, GPUFL_FILE_DEVICE, id);
}

/* The host time of a launch: null when the note is gone. */
static int64_t launch_col(const gpufl__trace_source_t *t, const gpufl__launch_info_t *info) {
    return info->mono_ns > 0 ? ts(t, info->mono_ns) : -1;
}

/* What the launching thread left for the call of correlation; a record
 * without a note (work launched before the session, or a note overwritten
 * by 2^18 later calls) is counted. */
static void attribution(gpufl__trace_source_t *t, uint32_t correlation,
                        gpufl__launch_info_t *info) {
    if (!gpufl__launch_lookup(info, t->launch, correlation)) t->counts.unattributed++;
}

/* The dict id of the demangled form of the name with dict id `name`. */
static uint32_t demangled_id(gpufl__trace_source_t *t, uint32_t name, const char *text) {
    if (name >= t->demangled_cap) {
        uint32_t cap = t->demangled_cap ? t->demangled_cap : 256;
        while (cap <= name) cap *= 2;
        uint32_t *grown = realloc(t->demangled, cap * sizeof *grown);
        if (grown == NULL) return name;
        memset(grown + t->demangled_cap, 0, (cap - t->demangled_cap) * sizeof *grown);
        t->demangled = grown;
        t->demangled_cap = cap;
    }
    if (t->demangled[name] == 0) {
        char *out = gpufl__demangle(text);
        t->demangled[name] = out ? gpufl__intern(dict(t), out, strlen(out)) : name;
        free(out);
    }
    return t->demangled[name];
}

/* A kernel row: the record, and what its launching thread left. */
static void write_kernel(gpufl__trace_source_t *t, const gpufl__cupti_kernel_t *k,
                         const gpufl__launch_info_t *info) {
    gpufl__cell_t *r = next(t, &t->kernels);
    const char *name = k->name ? k->name : "";
    uint32_t name_id = gpufl__intern(dict(t), name, strlen(name));
    int64_t v[] = {ts(t, k->start_ns),
                   ts(t, k->end_ns),
                   k->device_id,
                   k->context_id,
                   k->stream_id,
                   k->correlation_id,
                   name_id,
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
                   k->graph_id,
                   (int64_t)k->graph_node_id,
                   demangled_id(t, name_id, name),
                   opt_id(info->scope),
                   opt_id(info->config),
                   info->has_external ? (int64_t)info->external_kind : -1,
                   info->has_external ? (int64_t)(info->external_id & INT64_MAX) : -1,
                   launch_col(t, info),
                   info->tid > 0 ? info->tid : -1,
                   stack_col(t, info->stack)};
    for (int i = 0; i < NCOLS(v); i++) r[i].i = v[i];
    t->counts.kernels++;
}

static void on_kernel(void *user, const gpufl__cupti_kernel_t *k) {
    gpufl__trace_source_t *t = user;
#ifdef GPUFL_DIAGNOSE_NO_ROWS
    /* Overhead diagnosis builds only (bench/gpu/diagnose_overhead.sh): the
     * records are counted, not joined nor written. */
    t->counts.kernels++;
    return;
#endif
    gpufl__launch_info_t info;
    attribution(t, k->correlation_id, &info);
    write_kernel(t, k, &info);
}

static void on_copy(void *user, const gpufl__cupti_copy_t *c) {
    gpufl__trace_source_t *t = user;
    gpufl__launch_info_t info;
    attribution(t, c->correlation_id, &info);
    gpufl__cell_t *r = next(t, &t->copies);
    int64_t v[] = {ts(t, c->start_ns),
                   ts(t, c->end_ns),
                   c->device_id,
                   c->stream_id,
                   c->correlation_id,
                   (int64_t)c->bytes,
                   gpufl__cupti_values_copy_kind(&t->misses, c->copy_kind),
                   gpufl__cupti_values_memory_kind(&t->misses, c->src_kind),
                   gpufl__cupti_values_memory_kind(&t->misses, c->dst_kind),
                   c->async,
                   opt_id(info.scope)};
    for (int i = 0; i < NCOLS(v); i++) r[i].i = v[i];
    t->counts.copies++;
}

static void on_memset(void *user, const gpufl__cupti_memset_t *m) {
    gpufl__trace_source_t *t = user;
    gpufl__launch_info_t info;
    attribution(t, m->correlation_id, &info);
    gpufl__cell_t *r = next(t, &t->memsets);
    int64_t v[] = {ts(t, m->start_ns),
                   ts(t, m->end_ns),
                   m->device_id,
                   m->stream_id,
                   m->correlation_id,
                   (int64_t)m->bytes,
                   gpufl__cupti_values_memory_kind(&t->misses, m->memory_kind),
                   opt_id(info.scope)};
    for (int i = 0; i < NCOLS(v); i++) r[i].i = v[i];
    t->counts.memsets++;
}

static void on_sync(void *user, const gpufl__cupti_sync_t *s) {
    gpufl__trace_source_t *t = user;
    gpufl__launch_info_t info;
    attribution(t, s->correlation_id, &info);
    gpufl__cell_t *r = next(t, &t->syncs);
    int64_t v[] = {ts(t, s->start_ns),
                   ts(t, s->end_ns),
                   gpufl__cupti_values_sync_type(&t->misses, s->type),
                   s->context_id,
                   opt_u32(s->stream_id),
                   opt_u32(s->cuda_event_id),
                   s->correlation_id,
                   opt_id(info.scope),
                   -1,
                   -1};
    for (int i = 0; i < NCOLS(v); i++) r[i].i = v[i];
    t->counts.syncs++;
}

static void on_alloc(void *user, const gpufl__cupti_alloc_t *a) {
    gpufl__trace_source_t *t = user;
    gpufl__launch_info_t info;
    /* Frees at context teardown and pool trims have no call: not counted. */
    gpufl__launch_lookup(&info, t->launch, a->correlation_id);
    gpufl__cell_t *r = next(t, &t->allocs);
    int64_t v[] = {ts(t, a->timestamp_ns),
                   a->operation,
                   gpufl__cupti_values_memory_kind(&t->misses, a->memory_kind),
                   a->device_id,
                   (int64_t)(a->address & INT64_MAX),
                   (int64_t)a->bytes,
                   opt_u32(a->stream_id),
                   a->correlation_id,
                   a->async != 0,
                   opt_id(info.scope)};
    for (int i = 0; i < NCOLS(v); i++) r[i].i = v[i];
    t->counts.allocs++;
}

static void on_dropped(void *user, uint64_t records) {
    ((gpufl__trace_source_t *)user)->dropped += records;
}

static const gpufl__cupti_sink_t sink = {on_kernel, on_copy, on_memset, on_sync,
                                         on_alloc,  NULL,    on_dropped};

/* The engine's id of a launch's context (the last one asked is kept). */
static uint32_t context_id_of(gpufl__trace_source_t *t, void *context) {
    if (context != t->last_context) {
        t->last_context = context;
        t->last_context_id = t->pc_sampling
                                 ? gpufl__pc_sampling_context_id(t->pc_sampling, context)
                                 : gpufl__sass_metrics_context_id(t->sass_metrics, context);
    }
    return t->last_context_id;
}

/* A launch row: the host's side of a launch with no GPU time. */
static void write_launch(gpufl__trace_source_t *t, const gpufl__kernel_launch_t *k) {
    uint32_t context = context_id_of(t, k->context);
    gpufl__cell_t *r = next(t, &t->launches);
    int64_t v[] = {ts(t, k->mono_ns),
                   k->tid > 0 ? k->tid : -1,
                   context ? (int64_t)context : -1,
                   k->correlation,
                   opt_id(k->config),
                   opt_id(k->scope),
                   k->external_kind ? (int64_t)k->external_kind - 1 : -1,
                   k->external_kind ? (int64_t)(k->external_id & INT64_MAX) : -1,
                   stack_col(t, k->stack)};
    for (int c = 0; c < NCOLS(v); c++) r[c].i = v[c];
}

/* A timed launch (pcs_trace `events`) as a kernel row: its events' times
 * and what the launch call knew. */
static void write_timed_kernel(gpufl__trace_source_t *t, const gpufl__kernel_launch_t *k,
                               int64_t start_ns, int64_t end_ns) {
    const gpufl__kernel_config_t *c = gpufl__launch_config(t->launch, k->config);
    gpufl__cupti_kernel_t row = {.start_ns = start_ns,
                                 .end_ns = end_ns,
                                 .context_id = context_id_of(t, k->context),
                                 .stream_id = k->stream >= 0 ? (uint32_t)k->stream : 0,
                                 .correlation_id = k->correlation,
                                 .grid_x = (int32_t)k->grid[0],
                                 .grid_y = (int32_t)k->grid[1],
                                 .grid_z = (int32_t)k->grid[2],
                                 .block_x = (int32_t)k->block[0],
                                 .block_y = (int32_t)k->block[1],
                                 .block_z = (int32_t)k->block[2],
                                 .name = c ? c->name : NULL};
    if (c != NULL) {
        row.dynamic_shared_bytes = (int32_t)c->dynamic_smem;
        if (c->have_occupancy) {
            const gpufl__occ_kernel_t *o = &c->occupancy.kernel;
            row.device_id = (uint32_t)c->occupancy.device;
            row.registers_per_thread = (uint16_t)o->registers_per_thread;
            row.static_shared_bytes = o->static_smem_bytes;
            row.local_bytes_per_thread = (uint32_t)o->local_bytes_per_thread;
        }
    }
    gpufl__launch_info_t info = {.scope = k->scope,
                                 .config = k->config,
                                 .external_kind = k->external_kind ? k->external_kind - 1 : 0,
                                 .external_id = k->external_id,
                                 .has_external = k->external_kind != 0,
                                 .stack = k->stack,
                                 .tid = k->tid,
                                 .mono_ns = k->mono_ns};
    write_kernel(t, &row, &info);
}

/* Timed launches whose events are done, as kernel rows; one whose timing
 * failed as a launch row. The last pass waits for the GPU. */
static void write_timed(gpufl__trace_source_t *t) {
    /* A stream runs its work in order: once one launch of a stream is not
     * done, its later ones are not asked about in this pass (each question is
     * a driver call that takes the context's lock the application launches
     * under). */
    int64_t busy[32];
    size_t n_busy = 0;
    size_t kept = 0;
    /* The last pass waits with cuEventSynchronize: gpufl's own, not a sync row. */
    if (t->finishing) gpufl__launch_internal(1);
    for (size_t i = 0; i < t->n_pending; i++) {
        const gpufl__kernel_launch_t *k = &t->pending[i];
        int waiting = 0;
        for (size_t b = 0; b < n_busy && !t->finishing; b++) waiting |= busy[b] == k->stream;
        int64_t start_ns = 0, end_ns = 0;
        int done = waiting ? 0
                           : gpufl__kernel_events_read(t->events, k->events, t->finishing,
                                                       &start_ns, &end_ns);
        if (done == 0) {
            if (!waiting && k->stream >= 0 && n_busy < sizeof busy / sizeof busy[0])
                busy[n_busy++] = k->stream;
            t->pending[kept++] = *k;
            continue;
        }
        gpufl__kernel_events_release(t->events, k->events);
        if (done > 0)
            write_timed_kernel(t, k, start_ns, end_ns);
        else
            write_launch(t, k);
    }
    if (t->finishing) gpufl__launch_internal(0);
    t->n_pending = kept;
}

/* Graph launches and synchronization calls the callbacks queued, as rows. */
static void take_queued(gpufl__trace_source_t *t) {
    if (t->launch == NULL) return;
    const gpufl__graph_launch_t *g;
    size_t n = gpufl__launch_take_graphs(t->launch, &g);
    for (size_t i = 0; i < n; i++) {
        gpufl__cell_t *r = next(t, &t->graphs);
        int64_t v[] = {ts(t, g[i].mono_ns), g[i].tid, g[i].correlation, opt_id(g[i].graph_exec),
                       opt_id(g[i].scope)};
        for (int c = 0; c < NCOLS(v); c++) r[c].i = v[c];
    }
    t->counts.graph_launches += n;
    const gpufl__sync_call_t *s;
    n = gpufl__launch_take_syncs(t->launch, &s);
    for (size_t i = 0; i < n; i++) {
        gpufl__cell_t *r = next(t, &t->syncs);
        int64_t v[] = {ts(t, s[i].start_mono_ns),
                       ts(t, s[i].end_mono_ns),
                       gpufl__cupti_values_sync_type(&t->misses, s[i].type),
                       s[i].context,
                       s[i].stream,
                       s[i].event,
                       s[i].correlation,
                       opt_id(s[i].scope),
                       s[i].tid > 0 ? s[i].tid : -1,
                       stack_col(t, s[i].stack)};
        for (int c = 0; c < NCOLS(v); c++) r[c].i = v[c];
    }
    t->counts.syncs += n;
    const gpufl__kernel_launch_t *k;
    n = gpufl__launch_take_launches(t->launch, &k);
    for (size_t i = 0; i < n; i++) {
        if (k[i].events != 0 && t->n_pending < PENDING_MAX) {
            t->pending[t->n_pending++] = k[i]; /* a kernel row once its events are done */
            continue;
        }
        gpufl__kernel_events_release(t->events, k[i].events);
        write_launch(t, &k[i]);
    }
    t->counts.launches += n;
}

/* One kernel_config record per configuration first launched since the
 * last pass. */
static void write_configs(gpufl__trace_source_t *t) {
    gpufl__kernel_config_t *const *k;
    size_t n = t->launch ? gpufl__launch_take_configs(t->launch, &k) : 0;
    for (size_t i = 0; i < n; i++) {
        const gpufl__kernel_occupancy_t *o = &k[i]->occupancy;
        const gpufl__occ_result_t *c = &o->computed;
        gpufl__wire_kernel_config_t w = {.ts_ns = ts(t, k[i]->first_mono_ns),
                                         .id = k[i]->id,
                                         .name = k[i]->name,
                                         .block_threads = k[i]->block_threads,
                                         .dynamic_smem_bytes = k[i]->dynamic_smem};
        if (!k[i]->have_occupancy) {
            w.occupancy_unknown = k[i]->why;
        } else {
            w.device = o->device;
            w.registers = o->kernel.registers_per_thread;
            w.static_smem_bytes = o->kernel.static_smem_bytes;
            w.local_bytes_per_thread = o->kernel.local_bytes_per_thread;
            w.max_threads_per_block = o->kernel.max_threads_per_block;
            w.blocks_per_sm = o->driver_blocks_per_sm;
            w.active_warps = o->active_warps;
            w.max_warps = o->max_warps;
            w.occupancy = o->occupancy;
            w.breakdown_agrees = o->agrees;
            if (o->computed_status == 0) {
                w.have_limits = 1;
                w.limit_warps = c->limit_warps;
                w.limit_registers = c->limit_registers;
                w.limit_smem = c->limit_smem;
                w.limit_blocks = c->limit_blocks;
                w.limiter = gpufl__occupancy_limiter_name(c->limiter);
            }
        }
        gpufl__line_t l;
        gpufl__wire_kernel_config(&l, &w);
        gpufl__collector_record(t->collector, GPUFL_FILE_DEVICE, &l);
    }
}

static void encode_all(gpufl__trace_source_t *t, int64_t now_ns, int all) {
    take_queued(t);
    write_timed(t);
    /* Op names and configurations before the rows that name them. */
    gpufl__ops_write_new(t->collector, GPUFL_FILE_DEVICE, &t->ops_written, &t->ops_lost_seen);
    write_configs(t);
    gpufl__batch_t *batches[GPUFL_TRACE_BATCHES] = {&t->kernels, &t->copies, &t->memsets, &t->syncs,
                                                    &t->allocs,  &t->graphs, &t->launches};
    /* Activity rows wait up to batch_hold_ms for more rows of their line, unless a write is
     * asked for: a line restates its configurations and restarts its deltas, so four lines of
     * 1000 kernels gzip to about 10 % more bytes a kernel than one of 4000. A batch that filled
     * since the last pass was written whole; the rows left are newer and wait from now. */
    for (size_t i = 0; i < GPUFL_TRACE_BATCHES; i++) {
        size_t rows = batches[i]->rows;
        if (rows < t->held_rows[i] || !t->held_rows[i]) t->held_since_ns[i] = now_ns;
        if (rows && (all || now_ns - t->held_since_ns[i] >= t->hold_ns)) {
            gpufl__collector_batch(t->collector, GPUFL_FILE_DEVICE, batches[i]);
            rows = 0;
        }
        t->held_rows[i] = rows;
    }
    if (t->dropped != t->dropped_written) { /* said once per change, with the running total */
        char msg[160];
        snprintf(msg, sizeof msg, "CUPTI dropped %llu activity records so far (no buffer space)",
                 (unsigned long long)t->dropped);
        if (t->dropped_written == 0) gpufl__warn("%s", msg);
        gpufl__collector_event(t->collector, GPUFL_FILE_DEVICE, "warn", "cupti_records_dropped",
                               msg);
        t->dropped_written = t->dropped;
    }
    if (t->misses.count > 0 && !t->misses_said) { /* the first one, with its number */
        char msg[160];
        snprintf(msg, sizeof msg,
                 "CUPTI gave %s %u, which gpufl has no value for: written as 0 "
                 "(unknown); trace_stats.values_unmapped counts them",
                 t->misses.first, (unsigned)t->misses.first_value);
        gpufl__collector_event(t->collector, GPUFL_FILE_DEVICE, "warn", "cupti_value_unmapped",
                               msg);
        t->misses_said = 1;
    }
}

/* The capability record's kernel_times: why an engine writes kernel
 * launches (host times) instead of kernels with their GPU times. */
static void say_kernel_times(gpufl__trace_source_t *t, unsigned flags) {
    const char *why = NULL;
    if (!(flags & GPUFL_LAUNCH_ROWS) || t->events != NULL)
        why = NULL;
    else if (t->pcs_trace_on && t->pcs_trace.mode == GPUFL_PCS_TRACE_LATE)
        why = "PcSampling keeps its PC samples whole: CUPTI refuses its kernel kind once PC "
              "sampling is enabled on a context (CUPTI_ERROR_NOT_COMPATIBLE on an H100 and H200; "
              "where it takes it, kernel rows follow and pc_sampling_trace_windows says so), "
              "and enabled before, it times kernels by instrumenting them (GPUs before "
              "Blackwell), which took 12-14 % of the samples and changed a kernel's dominant "
              "stall (docs/design/pcs-with-trace.md); copies, memsets and syncs are kept. "
              "The option pc_sampling_trace=kernels (GPUFL_PC_SAMPLING_TRACE) records kernel GPU "
              "times at that cost";
    else if (t->pcs_trace_on && t->pcs_trace.mode == GPUFL_PCS_TRACE_ALTERNATE)
        why = "pc_sampling_trace=alternate: kernels are launch rows outside its trace "
              "windows, and inside them where CUPTI refuses the kernel kind (docs/options.md)";
    else if (t->pcs_trace_on)
        why = "pc_sampling_trace=none leaves CUPTI's kernel kind off (docs/options.md)";
    else if (t->pc_sampling != NULL && t->sass_metrics != NULL)
        why = "Deep enables no activity kind: its SASS metrics count nothing with one on, and "
              "its counted kernels run many times slower, so their GPU times are not a "
              "production figure (Trace or PcSampling for those)";
    else if (t->sass_metrics != NULL)
        why = "SassMetrics enables no activity kind: its metrics count nothing with one on";
    else if (t->range_profiler != NULL)
        why = "RangeProfiler enables no activity kind: CUPTI's kernel timestamps show in its "
              "counters; its ranges carry the GPU time";
    t->kernel_times_why = why;
}

static void around_enable(void *self, int before, int enabled) {
    gpufl__trace_source_t *t = self;
    gpufl__pcs_trace_around_enable(&t->pcs_trace, t->cupti, t->launch, before, enabled);
}

static void poll(gpufl__collector_t *c, void *self, int64_t now_ns) {
    gpufl__trace_source_t *t = self;
    (void)c;
    if (now_ns >= t->next_flush_ns) {
        int64_t every = t->hold_ns > t->flush_every_ns ? t->hold_ns : t->flush_every_ns;
        gpufl__cupti_flush(t->cupti,
                           t->pcs_trace_on && gpufl__pcs_trace_force_flush(&t->pcs_trace, t->cupti,
                                                                           now_ns, every));
        t->next_flush_ns = now_ns + t->flush_every_ns;
    }
    gpufl__cupti_drain(t->cupti, &sink, t);
    gpufl__sass_metrics_poll(
        t->sass_metrics); /* first: it files the cubins Deep's PC sampling asks about */
    gpufl__pc_sampling_poll(t->pc_sampling, now_ns);
    gpufl__range_profiler_poll(t->range_profiler);
    if (t->pcs_trace_on) gpufl__pcs_trace_poll(&t->pcs_trace, t->cupti, t->launch, c, now_ns);
    if (t->events != NULL) { /* give the event pairs back often: the pool is 4096 a context */
        take_queued(t);
        write_timed(t);
    }
}

static int64_t due_in(void *self, int64_t now_ns) {
    const gpufl__trace_source_t *t = self;
    int64_t pc = gpufl__pc_sampling_due_in(t->pc_sampling, now_ns);
    int64_t windows = t->pcs_trace_on ? gpufl__pcs_trace_due_in(&t->pcs_trace, now_ns) : INT64_MAX;
    if (t->events != NULL && windows > EVENTS_PASS_NS) windows = EVENTS_PASS_NS;
    return pc < windows ? pc : windows;
}

static void flush(gpufl__collector_t *c, void *self) {
    encode_all(self, gpufl__mono_ns(), gpufl__collector_write_forced(c));
    gpufl__pc_sampling_flush(((gpufl__trace_source_t *)self)->pc_sampling);
    gpufl__sass_metrics_flush(((gpufl__trace_source_t *)self)->sass_metrics);
}

/* The session's totals: what was traced and what was lost. */
static void write_stats(gpufl__trace_source_t *t) {
    gpufl__launch_stats_t ls;
    gpufl__cupti_stats_t cs;
    gpufl__launch_stats(&ls, t->launch);
    gpufl__cupti_stats(&cs, t->cupti);
    gpufl__stacks_stats_t ss;
    gpufl__stacks_stats(&ss, t->stacks_on ? t->stack_log.stacks : NULL);
    const gpufl__trace_counts_t *n = &t->counts;
    gpufl__wire_count_t v[] = {
        {"kernels", n->kernels},
        {"copies", n->copies},
        {"memsets", n->memsets},
        {"syncs", n->syncs},
        {"allocs", n->allocs},
        {"graph_launches", n->graph_launches},
        {"launches", n->launches},
        {"launches_lost", ls.launches_lost},
        {"gate_waits", ls.gate_waits},
        {"gate_overruns", ls.gate_overruns},
        {"unattributed", n->unattributed},
        {"values_unmapped", t->misses.count},
        {"configs", ls.configs},
        {"configs_dropped", ls.configs_dropped},
        {"occupancy_failures", ls.occupancy_failures},
        {"graph_launches_lost", ls.graph_launches_lost},
        {"syncs_lost", ls.syncs_lost},
        {"stacks", ss.captures},
        {"stacks_distinct", ss.distinct},
        {"stacks_lost", ss.lost},
        {"stacks_interp", ss.interp_walks},
        {"stacks_interp_empty", ss.interp_empty},
        {"stacks_interp_ns", ss.interp_ns},
        {"stacks_interp_max_ns", ss.interp_max_ns},
        {"ops", t->ops_written},
        {"op_pops_mismatched", gpufl__ops_mismatched()},
        {"cupti_dropped", cs.records_dropped},
        {"buffers_refused", cs.buffers_refused},
        {"records_incomplete", cs.records_incomplete},
        {"callbacks_enabled", (uint64_t)gpufl__cupti_callbacks_enabled(t->cupti)}};
    gpufl__line_t l;
    gpufl__wire_counts(&l, "trace_stats", ts(t, gpufl__mono_ns()), v, sizeof v / sizeof v[0]);
    gpufl__collector_record(t->collector, GPUFL_FILE_DEVICE, &l);
    if (n->unattributed > 0)
        gpufl__debug("trace: %llu activity records without a launch note",
                     (unsigned long long)n->unattributed);
}

/* Last records: CUPTI stopped, everything it holds drained and encoded. */
static void finish(gpufl__collector_t *c, void *self) {
    gpufl__trace_source_t *t = self;
    /* SASS metrics read and stopped first (Deep: PC sampling's disable
     * crashed inside CUPTI while kernels were still patched), their cubins
     * filed before PC sampling asks about its last functions, and the
     * shared SASS log finished last. */
    gpufl__sass_metrics_stop(t->sass_metrics);
    gpufl__pc_sampling_finish(t->pc_sampling);
    gpufl__sass_metrics_finish(t->sass_metrics);
    gpufl__range_profiler_finish(t->range_profiler); /* while CUPTI still runs: the last decode */
    if (t->pcs_trace_on) gpufl__pcs_trace_finish(&t->pcs_trace, c);
    gpufl__cupti_stop(t->cupti, &sink, t);
    t->finishing = 1; /* timed launches: their events are waited for */
    encode_all(t, gpufl__mono_ns(), 1);
    if (t->events) {
        gpufl__kernel_events_stats_t es;
        gpufl__kernel_events_stats(&es, t->events);
        char msg[240];
        snprintf(msg, sizeof msg,
                 "PC sampling with activity mode events: %llu launches timed, %llu untimed, %llu "
                 "failed driver calls",
                 (unsigned long long)es.timed, (unsigned long long)es.untimed,
                 (unsigned long long)es.failures);
        gpufl__collector_event(c, GPUFL_FILE_DEVICE, "info", "pc_sampling_trace_events", msg);
    }
    write_stats(t);
}

/* pcs_trace `events`: the event pools and the queue of launches waiting
 * for their events; without them the session runs `none` and says why. */
static void open_events(gpufl__trace_source_t *t) {
    char why[160];
    if (gpufl__kernel_events_create(&t->events, t->cuda, why, sizeof why) != 0) {
        gpufl__pcs_trace_fall_back(&t->pcs_trace, why);
        return;
    }
    t->pending = malloc(PENDING_MAX * sizeof *t->pending);
    if (t->pending == NULL) {
        gpufl__kernel_events_destroy(t->events);
        t->events = NULL;
        gpufl__pcs_trace_fall_back(&t->pcs_trace, "out of memory for the timed launches");
    }
}

/* Occupancy needs the driver API; without it, Trace runs and says why. */
static void open_cuda(gpufl__trace_source_t *t) {
    if (gpufl__cuda_open(&t->cuda, t->occupancy_why, sizeof t->occupancy_why) != 0) {
        t->cuda = NULL;
        gpufl__debug("trace: no occupancy: %s", t->occupancy_why);
    }
}

/* The engines above Trace, resolved before the callbacks start: they
 * change what Trace records. SassMetrics (alone or under Deep) comes first,
 * since Deep's PC sampling shares its SASS log. An engine that cannot run
 * leaves the others going, and its *_why says why. */
static void create_engines(gpufl__trace_source_t *t, const gpufl__settings_t *settings) {
    gpufl_engine_t e = settings->profiling_engine;
    if (e == GPUFL_ENGINE_RANGE_PROFILER &&
        gpufl__range_profiler_create(&t->range_profiler, t->cupti, t->cuda, t->collector,
                                     (int64_t)settings->flush_interval_ms * 1000000,
                                     t->range_profiler_why, sizeof t->range_profiler_why))
        t->range_profiler = NULL;
    if (e == GPUFL_ENGINE_SASS_METRICS || e == GPUFL_ENGINE_DEEP) {
        if (gpufl__sass_metrics_create(&t->sass_metrics, t->cupti, t->cuda, t->collector, 1,
                                       t->sass_metrics_why, sizeof t->sass_metrics_why))
            t->sass_metrics = NULL;
    }
    if (e != GPUFL_ENGINE_PC_SAMPLING && e != GPUFL_ENGINE_DEEP) return;
    if (gpufl__engine_patched()) {
        snprintf(t->pc_sampling_why, sizeof t->pc_sampling_why,
                 "SASS metrics counted earlier in this process, and CUPTI keeps the kernels "
                 "patched: samples would be CUPTI's non-user ones, and sampling after Deep "
                 "crashed CUPTI (docs/design/pc-sampling.md); start a new process");
    } else {
        gpufl__pc_sampling_config_t cfg = {
            settings->pc_sampling_period, (int64_t)settings->flush_interval_ms * 1000000, 1,
            gpufl__sass_metrics_sass_log(t->sass_metrics), t->sass_metrics != NULL};
        if (gpufl__pc_sampling_create(&t->pc_sampling, t->cupti, t->collector, &cfg,
                                      t->pc_sampling_why, sizeof t->pc_sampling_why))
            t->pc_sampling = NULL;
    }
}

/* SASS metrics first, then sampling (both orders worked on an H100; this
 * one matches the order the engines are created in). */
static void both_resource(void *user, uint32_t cbid, const void *data) {
    const gpufl__trace_source_t *t = user;
    t->to_sass_metrics.resource(t->to_sass_metrics.user, cbid, data);
    t->to_pc_sampling.resource(t->to_pc_sampling.user, cbid, data);
}

static int both_context_seen(void *user, void *context) {
    const gpufl__trace_source_t *t = user;
    int a = t->to_sass_metrics.context_seen(t->to_sass_metrics.user, context);
    return t->to_pc_sampling.context_seen(t->to_pc_sampling.user, context) && a;
}

/* Once subscribed: contexts and modules come to the engines. Without the
 * resource callbacks neither can run. */
static void hook_engines(gpufl__trace_source_t *t) {
    if (t->pc_sampling == NULL && t->sass_metrics == NULL && t->range_profiler == NULL) return;
    char why[240];
    if (gpufl__cupti_enable_resource(t->cupti, why, sizeof why) != 0) {
        if (t->range_profiler)
            snprintf(t->range_profiler_why, sizeof t->range_profiler_why, "%s", why);
        gpufl__range_profiler_destroy(t->range_profiler);
        t->range_profiler = NULL;
        if (t->pc_sampling) snprintf(t->pc_sampling_why, sizeof t->pc_sampling_why, "%s", why);
        if (t->sass_metrics) snprintf(t->sass_metrics_why, sizeof t->sass_metrics_why, "%s", why);
        gpufl__pc_sampling_destroy(t->pc_sampling);
        gpufl__sass_metrics_destroy(t->sass_metrics);
        t->pc_sampling = NULL;
        t->sass_metrics = NULL;
        return;
    }
    if (t->range_profiler) { /* RangeProfiler runs alone: the context-destroy callback */
        gpufl__launch_set_hooks(t->launch, gpufl__range_profiler_hooks(t->range_profiler));
    } else if (t->pc_sampling && t->sass_metrics) {
        t->to_pc_sampling = *gpufl__pc_sampling_hooks(t->pc_sampling);
        t->to_sass_metrics = *gpufl__sass_metrics_hooks(t->sass_metrics);
        t->both = (gpufl__launch_hooks_t){both_resource, both_context_seen, t};
        gpufl__launch_set_hooks(t->launch, &t->both);
    } else {
        gpufl__launch_set_hooks(t->launch, t->pc_sampling
                                               ? gpufl__pc_sampling_hooks(t->pc_sampling)
                                               : gpufl__sass_metrics_hooks(t->sass_metrics));
    }
}

int gpufl__trace_source_init(gpufl__trace_source_t *t, gpufl__collector_t *c,
                             const gpufl__settings_t *settings, char *why, size_t why_size,
                             gpufl__source_t *source) {
    int rc;
    memset(t, 0, sizeof *t);
    t->collector = c;
    t->flush_every_ns = (int64_t)settings->flush_interval_ms * 1000000;
    t->hold_ns = (int64_t)settings->batch_hold_ms * 1000000;
    /* A flight recorder's snapshot wants the last moments before its trigger more than long
     * lines: a fatal signal's snapshot cannot wait for held rows, so they wait no longer than
     * the collector's pass. */
    if (settings->flight_recorder_s > 0 && t->hold_ns > t->flush_every_ns)
        t->hold_ns = t->flush_every_ns;
    if ((rc = gpufl__batch_init_table(&t->kernels, &gpufl__wire_kernel)) ||
        (rc = gpufl__batch_init_table(&t->copies, &gpufl__wire_copy)) ||
        (rc = gpufl__batch_init_table(&t->memsets, &gpufl__wire_memset)) ||
        (rc = gpufl__batch_init_table(&t->syncs, &gpufl__wire_sync)) ||
        (rc = gpufl__batch_init_table(&t->allocs, &gpufl__wire_alloc)) ||
        (rc = gpufl__batch_init_table(&t->graphs, &gpufl__wire_graph_launch)) ||
        (rc = gpufl__batch_init_table(&t->launches, &gpufl__wire_launch))) {
        snprintf(why, why_size, "%s", gpufl_last_error());
        goto fini_source;
    }
    rc = gpufl__cupti_open(&t->cupti, NULL, why, why_size);
    if (rc) goto fini_source;
    open_cuda(t);
    if (settings->enable_stack_trace) {
        rc = gpufl__stack_log_init(&t->stack_log, settings->enable_source_collection);
        if (rc) {
            snprintf(why, why_size, "out of memory for the stack table");
            goto fini_source;
        }
        t->stacks_on = 1;
    }

    /* The callbacks first: CUPTI refuses a second subscriber, and when
     * another client holds CUPTI, taking its activity buffers would break
     * it; Trace then stays off. */
    unsigned int flags = 0;
    if (settings->enable_external_correlation) flags |= GPUFL_LAUNCH_EXTERNAL;
    if (settings->enable_cuda_graphs_tracking) flags |= GPUFL_LAUNCH_GRAPHS;
    if (settings->enable_memory_tracking) flags |= GPUFL_LAUNCH_MEMORY;
    if (settings->enable_synchronization) flags |= GPUFL_LAUNCH_SYNC;
    create_engines(t, settings);
    /* With CUPTI's activity kinds on, PC samples go partly or wholly to
     * CUPTI's non-user count, SASS metrics count nothing, and the kernel
     * timestamps CUPTI adds to every kernel show in the range profiler's
     * counters (+19 % instructions per cycle on a kernel doing little per
     * block, measured on an H100; docs/log-format.md, `launch`): with any of
     * these engines, launches are written from the callbacks and no kind is
     * enabled. */
    if (t->pc_sampling != NULL || t->sass_metrics != NULL) flags |= GPUFL_LAUNCH_ROWS;
    /* PcSampling keeps some of Trace's activity (option pc_sampling_trace,
     * docs/design/pcs-with-trace.md). Deep keeps none: with late's order a
     * Deep run deadlocked inside CUPTI and the driver (the SASS patching at a
     * launch against the activity flush; an H200), gated flush or not. */
    t->pcs_trace_on = t->pc_sampling != NULL && t->sass_metrics == NULL;
    if (t->pc_sampling != NULL && t->sass_metrics != NULL &&
        strcasecmp(settings->pc_sampling_trace, "late") != 0)
        gpufl__warn("pc_sampling_trace=%s has no effect under Deep, which enables no CUPTI "
                    "activity kind (docs/options.md)",
                    settings->pc_sampling_trace);
    if (t->pcs_trace_on) {
        gpufl__pcs_trace_init(&t->pcs_trace, settings->pc_sampling_trace);
        /* Before the callbacks can enable PC sampling on a context; enables
         * wait until the kinds are set up (released below). */
        gpufl__pc_sampling_set_enable_hook(t->pc_sampling, around_enable, t);
        gpufl__pc_sampling_hold_enables(t->pc_sampling, 1);
        if (!gpufl__pcs_trace_launch_rows(&t->pcs_trace)) flags &= ~GPUFL_LAUNCH_ROWS;
        if (gpufl__pcs_trace_timed(&t->pcs_trace)) open_events(t);
    }
#ifndef GPUFL_DIAGNOSE_RANGE_PROFILER_WITH_ACTIVITY /* diagnosis build: the range profiler beside them */
    if (t->range_profiler != NULL) flags |= GPUFL_LAUNCH_ROWS;
#endif
    /* PC sampling restarts (and under Deep, its drains) wait for launches
     * to leave the driver (pc_sampling.h). */
    if (t->pc_sampling != NULL) flags |= GPUFL_LAUNCH_GATE;
    rc = gpufl__launch_create(&t->launch, t->cupti, t->cuda, t->occupancy_why, flags,
                              t->stacks_on ? t->stack_log.stacks : NULL, why, why_size);
    if (rc) goto explain_missing_driver;
    if (flags & GPUFL_LAUNCH_GATE) gpufl__pc_sampling_set_gate(t->pc_sampling, t->launch);
    hook_engines(t);
    if (t->pc_sampling == NULL) t->pcs_trace_on = 0;
    if (t->pcs_trace_on && t->events) gpufl__launch_set_events(t->launch, t->events);
    if (t->pc_sampling == NULL && t->sass_metrics == NULL && t->range_profiler == NULL &&
        (flags & GPUFL_LAUNCH_ROWS)) {
        /* The engines could not hook in: plain Trace, with CUPTI's records. */
        gpufl__launch_destroy(t->launch);
        t->launch = NULL;
        flags &= ~(GPUFL_LAUNCH_ROWS | GPUFL_LAUNCH_GATE);
        rc = gpufl__launch_create(&t->launch, t->cupti, t->cuda, t->occupancy_why, flags,
                                  t->stacks_on ? t->stack_log.stacks : NULL, why, why_size);
        if (rc) goto explain_missing_driver;
    }
    say_kernel_times(t, flags);

    /* Synchronization is timed by the callbacks at the sync calls: CUPTI's
     * synchronization kind costs about 0.5 us on every launch (measured on
     * an H100, bench/results/2026-11-22-trace-overhead.md). */
    gpufl__cupti_config_t cfg = {sizeof cfg, 0, 0, 0};
    if (settings->enable_memory_tracking) cfg.flags |= GPUFL_CUPTI_MEMORY;
#ifndef GPUFL_DIAGNOSE_PC_SAMPLING_WITH_ACTIVITY /* diagnosis builds: tests/gpu/run_pc_sampling_checks.sh, study */
    if (t->pcs_trace_on)
        cfg.flags |= gpufl__pcs_trace_cupti_flags(&t->pcs_trace);
    else if (flags & GPUFL_LAUNCH_ROWS)
        cfg.flags |= GPUFL_CUPTI_NO_ACTIVITY;
#endif
    rc = gpufl__cupti_start(t->cupti, &cfg, why, why_size);
    if (t->pcs_trace_on && rc == 0) gpufl__pcs_trace_started(&t->pcs_trace, t->cupti);
    gpufl__pc_sampling_hold_enables(t->pc_sampling, 0);
    if (rc) goto explain_missing_driver;
    if (!gpufl__cupti_shared_clock(t->cupti))
        gpufl__warn("this CUPTI has no timestamp callback: GPU times are on CUPTI's clock");
    gpufl__range_profiler_observe(t->range_profiler); /* scopes become ranges from here on */
    const gpufl__ops_hooks_t *ops = gpufl__cupti_ops_hooks(t->cupti);
    if ((flags & GPUFL_LAUNCH_EXTERNAL) && ops) { /* framework ops (gpufl_ops.h) tagged from here */
        gpufl__ops_attach(ops);
        t->ops_attached = 1;
    }
    *source = (gpufl__source_t){"cupti", t, poll, due_in, flush, finish};
    return 0;
explain_missing_driver:
    if (t->cuda == NULL && strstr(t->occupancy_why, "not found") != NULL) {
        /* Without a driver CUPTI loads but fails vaguely: name the real cause. */
        char cupti_why[200];
        snprintf(cupti_why, sizeof cupti_why, "%s", why);
        snprintf(why, why_size, "libcuda.so.1 not found: no NVIDIA driver (CUPTI: %s)", cupti_why);
    }
fini_source:
    gpufl__trace_source_fini(t);
    return rc ? rc : GPUFL_ENOTSUP;
}

void gpufl__trace_source_fini(gpufl__trace_source_t *t) {
    if (t->ops_attached) gpufl__ops_detach(); /* before CUPTI goes */
    t->ops_attached = 0;
    gpufl__pc_sampling_set_gate(t->pc_sampling, NULL);
    gpufl__launch_destroy(t->launch); /* unsubscribes: no callback runs after it */
    t->launch = NULL;
    gpufl__kernel_events_destroy(t->events); /* after the callbacks stopped */
    t->events = NULL;
    free(t->pending);
    t->pending = NULL;
    t->n_pending = 0;
    gpufl__pc_sampling_destroy(
        t->pc_sampling); /* after the callbacks stopped; before the SASS log it shares */
    t->pc_sampling = NULL;
    gpufl__sass_metrics_destroy(t->sass_metrics);
    t->sass_metrics = NULL;
    gpufl__range_profiler_destroy(t->range_profiler); /* stops following scopes first */
    t->range_profiler = NULL;
    gpufl__cupti_close(t->cupti);
    t->cupti = NULL;
    gpufl__cuda_close(t->cuda);
    t->cuda = NULL;
    gpufl__stack_log_fini(&t->stack_log);
    t->stacks_on = 0;
    gpufl__batch_t *batches[] = {&t->kernels, &t->copies, &t->memsets, &t->syncs,
                                 &t->allocs,  &t->graphs, &t->launches};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) gpufl__batch_fini(batches[i]);
    free(t->demangled);
    t->demangled = NULL;
    t->demangled_cap = 0;
}
