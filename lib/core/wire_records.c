// SPDX-License-Identifier: Apache-2.0
/*
 * wire_records.c - single-line records: the line a record becomes, and the
 * encoders of the records that several parts of the library write (events,
 * costs, counters, drops, the end of a session, process lists, operations).
 */
#include "core/wire.h"

#include <gpufl/gpufl_log.h>

#include <stdio.h>
#include <string.h>

/* A record past this (a whole function's SASS is the largest) is dropped. */
#define LINE_MAX_BYTES ((size_t)64 << 20)

gpufl__buf_t *gpufl__line_begin(gpufl__line_t *l, const char *type) {
    l->type = type;
    l->ndict = 0;
    l->describes = 0;
    gpufl__buf_init(&l->buf, LINE_MAX_BYTES);
    gpufl__buf_record(&l->buf, type);
    return &l->buf;
}

gpufl__buf_t *gpufl__line_begin_describing(gpufl__line_t *l, const char *type) {
    gpufl__buf_t *b = gpufl__line_begin(l, type);
    l->describes = 1;
    return b;
}

int gpufl__line_end(gpufl__line_t *l) {
    gpufl__buf_puts(&l->buf, "}\n");
    if (!l->buf.overflow) return 0;
    l->buf.len = 0; /* all or nothing: never half a line */
    return -1;
}

void gpufl__line_dict(gpufl__line_t *l, uint32_t id) {
    if (id != 0 && l->ndict < GPUFL_LINE_DICT_MAX) l->dict_ids[l->ndict++] = id;
}

void gpufl__line_fini(gpufl__line_t *l) { gpufl__buf_fini(&l->buf); }

void gpufl__wire_event(gpufl__line_t *l, int64_t ts_ns, const char *level, const char *code,
                       const char *message) {
    gpufl__buf_t *b = gpufl__line_begin(l, "event");
    gpufl__buf_kv_i64(b, "ts_ns", ts_ns);
    gpufl__buf_kv_str(b, "level", level);
    gpufl__buf_kv_str(b, "code", code);
    gpufl__buf_kv_str(b, "message", message);
    gpufl__line_end(l);
}

void gpufl__wire_source_cost(gpufl__line_t *l, const char *source, const gpufl__cost_t *cost,
                             const gpufl__cost_part_t *parts, int nparts) {
    int64_t samples = cost->samples, total_ns = cost->total_ns;
    gpufl__buf_t *b = gpufl__line_begin(l, "source_cost");
    gpufl__buf_kv_str(b, "source", source);
    gpufl__buf_kv_i64(b, "samples", samples);
    gpufl__buf_kv_i64(b, "total_ns", total_ns);
    gpufl__buf_kv_i64(b, "mean_ns", samples ? total_ns / samples : 0);
    gpufl__buf_kv_i64(b, "median_ns", gpufl__cost_quantile(cost, 0.5));
    gpufl__buf_kv_i64(b, "p99_ns", gpufl__cost_quantile(cost, 0.99));
    gpufl__buf_kv_i64(b, "missed", cost->missed);
    if (nparts > 0) {
        gpufl__buf_key(b, "parts_mean_ns");
        gpufl__buf_putc(b, '{');
        for (int i = 0; i < nparts; i++) gpufl__buf_kv_i64(b, parts[i].name, parts[i].mean_ns);
        gpufl__buf_putc(b, '}');
    }
    gpufl__line_end(l);
}

void gpufl__wire_counts(gpufl__line_t *l, const char *type, int64_t ts_ns,
                        const gpufl__wire_count_t *v, size_t n) {
    gpufl__buf_t *b = gpufl__line_begin(l, type);
    gpufl__buf_kv_i64(b, "ts_ns", ts_ns);
    for (size_t i = 0; i < n; i++) gpufl__buf_kv_i64(b, v[i].key, (int64_t)v[i].value);
    gpufl__line_end(l);
}

void gpufl__wire_drops(gpufl__line_t *l, const gpufl__wire_drops_t *d) {
    gpufl__buf_t *b = gpufl__line_begin(l, "drops");
    gpufl__buf_kv_i64(b, "ts_ns", d->ts_ns);
    gpufl__buf_kv_i64(b, "records", (int64_t)d->dropped);
    gpufl__buf_kv_i64(b, "threads_unbuffered", (int64_t)d->unbuffered);
    gpufl__buf_kv_i64(b, "names_truncated", (int64_t)d->truncated);
    gpufl__buf_kv_i64(b, "unbalanced_ends", (int64_t)d->unbalanced);
    gpufl__buf_kv_i64(b, "depth_overflow", (int64_t)d->depth_overflow);
    gpufl__line_end(l);
}

void gpufl__wire_session_end(gpufl__buf_t *b, const gpufl__wire_session_end_t *e) {
    gpufl__buf_record(b, "session_end");
    gpufl__buf_kv_i64(b, "ts_ns", e->ts_ns);
    gpufl__buf_kv_i64(b, "duration_ns", e->ts_ns);
    gpufl__buf_kv_i64(b, "records_written", (int64_t)e->records_written);
    gpufl__buf_kv_i64(b, "records_dropped", (int64_t)e->records_dropped);
    gpufl__buf_kv_i64(b, "bytes_written", (int64_t)e->bytes_written);
    gpufl__buf_kv_i64(b, "write_errors", (int64_t)e->write_errors);
    gpufl__buf_puts(b, "}\n");
}

void gpufl__wire_row_object(gpufl__buf_t *b, const gpufl__wire_table_t *table,
                            const gpufl__cell_t *row) {
    gpufl__buf_putc(b, '{');
    for (int i = 0; i < table->ncols; i++) {
        gpufl__buf_key(b, table->cols[i].name);
        gpufl__buf_put_cell(b, table->cols[i].kind, &row[i]);
    }
    gpufl__buf_putc(b, '}');
}

static void put_i64_array(gpufl__buf_t *b, const int64_t *v, int n, int negative_null) {
    gpufl__buf_putc(b, '[');
    for (int i = 0; i < n; i++) {
        if (i) gpufl__buf_putc(b, ',');
        if (negative_null && v[i] < 0)
            gpufl__buf_puts(b, "null");
        else
            gpufl__buf_put_i64(b, v[i]);
    }
    gpufl__buf_putc(b, ']');
}

void gpufl__wire_gpu_processes(gpufl__line_t *l, int64_t ts_ns, int device, int count,
                               const gpufl__wire_processes_t *p, int n) {
    gpufl__buf_t *b = gpufl__line_begin(l, "gpu_processes");
    gpufl__buf_kv_i64(b, "ts_ns", ts_ns);
    gpufl__buf_kv_i64(b, "device", device);
    gpufl__buf_kv_i64(b, "count", count);
    gpufl__buf_key(b, "pid");
    put_i64_array(b, p->pid, n, 0);
    gpufl__buf_key(b, "used_bytes");
    put_i64_array(b, p->used_bytes, n, 1);
    gpufl__buf_key(b, "sm_util_pct");
    put_i64_array(b, p->sm_util_pct, n, 1);
    gpufl__buf_key(b, "mem_util_pct");
    put_i64_array(b, p->mem_util_pct, n, 1);
    gpufl__line_end(l);
}

void gpufl__wire_op(gpufl__line_t *l, int64_t index, const char *name) {
    gpufl__buf_t *b = gpufl__line_begin_describing(l, "op");
    gpufl__buf_kv_i64(b, "index", index);
    gpufl__buf_kv_str(b, "name", name);
    gpufl__line_end(l);
}

static void kv_hex(gpufl__buf_t *b, const char *key, uint64_t v) {
    char hex[24];
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)v);
    gpufl__buf_kv_str(b, key, hex);
}

static void kv_str_or_null(gpufl__buf_t *b, const char *key, const char *s) {
    if (s && *s) {
        gpufl__buf_kv_str(b, key, s);
    } else {
        gpufl__buf_key(b, key);
        gpufl__buf_puts(b, "null");
    }
}

static void kv_i64_or_null(gpufl__buf_t *b, const char *key, int64_t v) {
    gpufl__buf_key(b, key);
    if (v >= 0)
        gpufl__buf_put_i64(b, v);
    else
        gpufl__buf_puts(b, "null");
}

void gpufl__wire_process_info(gpufl__line_t *l, const gpufl__wire_process_info_t *p) {
    gpufl__buf_t *b = gpufl__line_begin(l, "process_info");
    gpufl__buf_kv_i64(b, "ts_ns", p->ts_ns);
    gpufl__buf_kv_i64(b, "device", p->device);
    gpufl__buf_kv_i64(b, "pid", p->pid);
    kv_i64_or_null(b, "start_ticks", p->start_ticks ? (int64_t)p->start_ticks : -1);
    kv_str_or_null(b, "comm", p->comm);
    kv_i64_or_null(b, "uid", p->uid);
    kv_str_or_null(b, "user", p->user);
    kv_str_or_null(b, "cgroup_path", p->cgroup_path);
    kv_str_or_null(b, "container_id", p->container_id);
    kv_str_or_null(b, "container_runtime", p->container_runtime);
    kv_str_or_null(b, "pod_uid", p->pod_uid);
    kv_str_or_null(b, "pod_qos", p->pod_qos);
    kv_str_or_null(b, "slurm_job_id", p->slurm_job_id);
    kv_str_or_null(b, "slurm_job_source", p->slurm_job_source);
    gpufl__line_end(l);
}

void gpufl__wire_xid(gpufl__line_t *l, int64_t ts_ns, int device, uint64_t code,
                     int64_t gpu_instance_id, int64_t compute_instance_id) {
    gpufl__buf_t *b = gpufl__line_begin(l, "xid");
    gpufl__buf_kv_i64(b, "ts_ns", ts_ns);
    gpufl__buf_kv_i64(b, "device", device);
    gpufl__buf_kv_i64(b, "code", code > INT64_MAX ? INT64_MAX : (int64_t)code);
    kv_i64_or_null(b, "gpu_instance_id", gpu_instance_id);
    kv_i64_or_null(b, "compute_instance_id", compute_instance_id);
    gpufl__line_end(l);
}

void gpufl__wire_frame(gpufl__line_t *l, const gpufl__wire_frame_t *f) {
    gpufl__buf_t *b = gpufl__line_begin_describing(l, "frame");
    gpufl__buf_kv_i64(b, "id", f->id);
    kv_hex(b, "pc", f->pc);
    kv_str_or_null(b, "module", f->module);
    if (f->module && *f->module) kv_hex(b, "offset", f->offset);
    if (f->language) {
        gpufl__buf_kv_str(b, "language", f->language);
        gpufl__buf_key(b, "library");
        gpufl__buf_puts(b, f->library ? "true" : "false");
    }
    kv_str_or_null(b, "function", f->function);
    kv_str_or_null(b, "file", f->file);
    if (f->line > 0) gpufl__buf_kv_i64(b, "line", f->line);
    if (f->source && *f->source) gpufl__buf_kv_str(b, "source", f->source);
    gpufl__line_end(l);
}

void gpufl__wire_stack(gpufl__line_t *l, uint32_t id, const uint32_t *frames, size_t depth) {
    gpufl__buf_t *b = gpufl__line_begin_describing(l, "stack");
    gpufl__buf_kv_i64(b, "id", id);
    gpufl__buf_key(b, "frames");
    gpufl__buf_putc(b, '[');
    for (size_t i = 0; i < depth; i++) {
        if (i) gpufl__buf_putc(b, ',');
        gpufl__buf_put_i64(b, frames[i]);
    }
    gpufl__buf_putc(b, ']');
    gpufl__line_end(l);
}

void gpufl__wire_host_info(gpufl__line_t *l, const gpufl__wire_host_info_t *h) {
    gpufl__buf_t *b = gpufl__line_begin_describing(l, "host_info");
    if (h->error) {
        gpufl__buf_kv_str(b, "error", h->error);
        gpufl__line_end(l);
        return;
    }
    gpufl__buf_kv_str(b, "hostname", h->hostname);
    gpufl__buf_kv_str(b, "kernel", h->kernel);
    gpufl__buf_kv_i64(b, "cpu_count", h->cpu_count);
    gpufl__buf_kv_opt(b, "mem_total_bytes", h->mem_total_bytes);
    gpufl__buf_kv_i64(b, "cgroup_version", h->cgroup_version);
    gpufl__buf_kv_str(b, "cgroup_path", h->cgroup_path);
    gpufl__buf_kv_opt(b, "cg_mem_limit_bytes", h->cg_mem_limit_bytes);
    gpufl__buf_key(b, "cg_cpu_limit_cores");
    gpufl__buf_put_fixed(b, h->cg_cpu_limit_cores, 2);
    gpufl__buf_kv_opt(b, "cpus_allowed", h->cpus_allowed);
    gpufl__buf_kv_i64(b, "clock_ticks_per_s", h->clock_ticks_per_s);
    gpufl__buf_kv_i64(b, "cpu_min_interval_ns", h->cpu_min_interval_ns);
    gpufl__line_end(l);
}

void gpufl__wire_system_window(gpufl__line_t *l, const char *type, int64_t ts_ns, int64_t tid,
                               const char *name, int active, const gpufl__cell_t *snapshot) {
    gpufl__buf_t *b = gpufl__line_begin(l, type);
    gpufl__buf_kv_i64(b, "ts_ns", ts_ns);
    gpufl__buf_kv_i64(b, "tid", tid);
    gpufl__buf_kv_str(b, "name", name);
    gpufl__buf_kv_i64(b, "active", active);
    gpufl__buf_key(b, "snapshot");
    if (snapshot)
        gpufl__wire_row_object(b, &gpufl__wire_host_sample, snapshot);
    else
        gpufl__buf_puts(b, "null");
    gpufl__line_end(l);
}

/* The names of gpufl's own values in the log (gpufl_log.h), so that a reader
 * can print them without knowing the enums: one member per column, value
 * (as a string key) -> name. */
static void put_names(gpufl__buf_t *b, const char *column, int count, const char *(*name)(int)) {
    gpufl__buf_key(b, column);
    gpufl__buf_putc(b, '{');
    for (int v = 0; v < count; v++) {
        char key[16];
        snprintf(key, sizeof key, "%d", v);
        gpufl__buf_kv_str(b, key, name(v));
    }
    gpufl__buf_putc(b, '}');
}

void gpufl__wire_legend(gpufl__line_t *l) {
    gpufl__buf_t *b = gpufl__line_begin_describing(l, "legend");
    put_names(b, "copy_kind", GPUFL_COPY_KIND_COUNT, gpufl_copy_kind_name);
    put_names(b, "memory_kind", GPUFL_MEMORY_KIND_COUNT, gpufl_memory_kind_name);
    put_names(b, "sync_type", GPUFL_SYNC_TYPE_COUNT, gpufl_sync_type_name);
    gpufl__line_end(l);
}
