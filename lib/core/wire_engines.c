// SPDX-License-Identifier: Apache-2.0
/*
 * wire_engines.c - the encoders of the GPU profiling engines' records
 * (wire_engines.h): what each engine started with per context, the ranges
 * it evaluated, the SASS of the functions it saw, and its totals.
 */
#include "core/wire_engines.h"

#include <math.h>
#include <string.h>

static void put_bool(gpufl__buf_t *b, const char *key, int v) {
    gpufl__buf_key(b, key);
    gpufl__buf_puts(b, v ? "true" : "false");
}

static void put_fixed(gpufl__buf_t *b, const char *key, double v, int decimals) {
    gpufl__buf_key(b, key);
    gpufl__buf_put_fixed(b, v, decimals);
}

/* names as a JSON array, under key (NULL: an array element). */
static void put_names(gpufl__buf_t *b, const char *key, const gpufl__wire_names_t *n) {
    if (key != NULL) gpufl__buf_key(b, key);
    gpufl__buf_putc(b, '[');
    for (int i = 0; i < n->count; i++) {
        if (i) gpufl__buf_putc(b, ',');
        gpufl__buf_put_str(b, n->names[i], strlen(n->names[i]));
    }
    gpufl__buf_putc(b, ']');
}

/* What every per-context record opens with; late: NULL where the record
 * has no such member. */
static gpufl__buf_t *context_begin(gpufl__line_t *l, const char *type, int64_t ts_ns,
                                   int64_t device, int64_t context, const int *late,
                                   double enable_ms) {
    gpufl__buf_t *b = gpufl__line_begin(l, type);
    gpufl__buf_kv_i64(b, "ts_ns", ts_ns);
    gpufl__buf_kv_i64(b, "device", device);
    gpufl__buf_kv_i64(b, "context", context);
    if (late) put_bool(b, "late", *late);
    put_fixed(b, "enable_ms", enable_ms, 1);
    return b;
}

void gpufl__wire_totals(gpufl__line_t *l, const char *type, int64_t ts_ns,
                        const gpufl__wire_count_t *counts, size_t ncounts,
                        const gpufl__wire_measure_t *measures, size_t nmeasures) {
    gpufl__buf_t *b = gpufl__line_begin(l, type);
    gpufl__buf_kv_i64(b, "ts_ns", ts_ns);
    for (size_t i = 0; i < ncounts; i++)
        gpufl__buf_kv_i64(b, counts[i].key, (int64_t)counts[i].value);
    for (size_t i = 0; i < nmeasures; i++) {
        const gpufl__wire_measure_t *m = &measures[i];
        if (m->decimals > 0)
            put_fixed(b, m->key, m->value, m->decimals);
        else
            gpufl__buf_kv_i64(b, m->key, (int64_t)m->value);
    }
    gpufl__line_end(l);
}

void gpufl__wire_pc_sampling(gpufl__line_t *l, const gpufl__wire_pc_sampling_t *r) {
    gpufl__buf_t *b =
        context_begin(l, "pc_sampling", r->ts_ns, r->device, r->context, &r->late, r->enable_ms);
    if (r->error) {
        gpufl__buf_kv_str(b, "error", r->error);
    } else {
        gpufl__buf_kv_i64(b, "period", r->period);
        gpufl__buf_kv_str(b, "mode", r->mode);
        gpufl__buf_kv_i64(b, "scratch_bytes", r->scratch_bytes);
        gpufl__buf_kv_i64(b, "hardware_buffer_bytes", r->hardware_buffer_bytes);
        gpufl__buf_kv_i64(b, "worker_sleep_ms", r->worker_sleep_ms);
        put_names(b, "reasons", &r->reasons);
    }
    gpufl__line_end(l);
}

void gpufl__wire_sass_metrics(gpufl__line_t *l, const gpufl__wire_sass_metrics_t *r) {
    gpufl__buf_t *b =
        context_begin(l, "sass_metrics", r->ts_ns, r->device, r->context, &r->late, r->enable_ms);
    if (r->error) {
        gpufl__buf_kv_str(b, "error", r->error);
    } else {
        gpufl__buf_kv_str(b, "chip", r->chip);
        put_names(b, "metrics", &r->metrics);
        if (r->lazy) put_bool(b, "lazy", 1);
    }
    gpufl__line_end(l);
}

void gpufl__wire_range_profiler(gpufl__line_t *l, const gpufl__wire_range_profiler_t *r) {
    gpufl__buf_t *b =
        context_begin(l, "range_profiler", r->ts_ns, r->device, r->context, NULL, r->enable_ms);
    gpufl__buf_kv_str(b, "started_at", r->started_at);
    if (r->error) {
        gpufl__buf_kv_str(b, "error", r->error);
    } else if (r->planned) {
        gpufl__buf_kv_str(b, "chip", r->chip);
        put_names(b, "metrics", &r->metrics);
        gpufl__buf_key(b, "groups");
        gpufl__buf_putc(b, '[');
        for (int g = 0; g < r->ngroups; g++) {
            if (g) gpufl__buf_putc(b, ',');
            put_names(b, NULL, &r->groups[g]);
        }
        gpufl__buf_putc(b, ']');
        if (r->sm_throughput_of.count) put_names(b, "sm_throughput_of", &r->sm_throughput_of);
        gpufl__buf_key(b, "left_out");
        gpufl__buf_putc(b, '{');
        for (int i = 0; i < r->nleft; i++) gpufl__buf_kv_str(b, r->left_out[i], r->left_why[i]);
        gpufl__buf_putc(b, '}');
        gpufl__buf_kv_i64(b, "max_ranges", r->max_ranges);
        gpufl__buf_kv_i64(b, "nesting_levels", r->nesting_levels);
        put_bool(b, "one_pass", r->one_pass);
        put_fixed(b, "plan_ms", r->plan_ms, 1);
    }
    gpufl__line_end(l);
}

void gpufl__wire_range_metrics(gpufl__line_t *l, const gpufl__wire_range_metrics_t *r) {
    gpufl__buf_t *b = gpufl__line_begin(l, "range_metrics");
    gpufl__line_dict(l, r->path);
    gpufl__buf_kv_i64(b, "ts_ns", r->ts_ns);
    gpufl__buf_kv_i64(b, "start_ns", r->start_ns);
    gpufl__buf_kv_i64(b, "context", r->context);
    gpufl__buf_kv_i64(b, "scope", r->scope);
    gpufl__buf_kv_i64(b, "path", r->path);
    gpufl__buf_kv_i64(b, "tid", r->tid);
    gpufl__buf_kv_i64(b, "group", r->group);
    if (r->settling) put_bool(b, "settling", 1);
    gpufl__buf_key(b, "metrics");
    gpufl__buf_putc(b, '{');
    int missing = 0;
    for (int m = 0; m < r->count; m++) {
        gpufl__buf_key(b, r->metrics[m]);
        if (isfinite(r->values[m])) {
            gpufl__buf_put_fixed(b, r->values[m], 3);
        } else {
            gpufl__buf_puts(b, "null");
            missing++;
        }
    }
    gpufl__buf_putc(b, '}');
    if (missing) {
        gpufl__buf_key(b, "unevaluated");
        gpufl__buf_putc(b, '[');
        for (int m = 0, k = 0; m < r->count; m++) {
            if (isfinite(r->values[m])) continue;
            if (k++) gpufl__buf_putc(b, ',');
            gpufl__buf_put_str(b, r->metrics[m], strlen(r->metrics[m]));
        }
        gpufl__buf_putc(b, ']');
    }
    gpufl__line_end(l);
}

/* One column of a sass record's instructions. */
static void put_instruction_column(gpufl__buf_t *b, const gpufl__wire_sass_t *r, int col) {
    static const char *const cols[] = {"pc", "text", "file", "line"};
    gpufl__buf_key(b, cols[col]);
    gpufl__buf_putc(b, '[');
    for (size_t i = 0; i < r->count; i++) {
        const gpufl__wire_instruction_t *in = &r->instructions[i];
        if (i) gpufl__buf_putc(b, ',');
        int known = in->file >= 0 && in->file < r->files.count && in->line > 0;
        switch (col) {
        case 0: gpufl__buf_put_i64(b, in->pc); break;
        case 1: gpufl__buf_put_str(b, in->text, strlen(in->text)); break;
        case 2:
            if (known)
                gpufl__buf_put_i64(b, in->file);
            else
                gpufl__buf_puts(b, "null");
            break;
        default:
            if (known)
                gpufl__buf_put_i64(b, in->line);
            else
                gpufl__buf_puts(b, "null");
        }
    }
    gpufl__buf_putc(b, ']');
}

void gpufl__wire_sass(gpufl__line_t *l, const gpufl__wire_sass_t *r) {
    gpufl__buf_t *b = gpufl__line_begin(l, "sass");
    gpufl__line_dict(l, r->cubin);
    gpufl__line_dict(l, r->function);
    gpufl__buf_kv_i64(b, "cubin", r->cubin);
    gpufl__buf_kv_i64(b, "function", r->function);
    if (r->error) {
        gpufl__buf_kv_str(b, "error", r->error);
        gpufl__line_end(l);
        return;
    }
    gpufl__buf_kv_str(b, "arch", r->arch);
    put_names(b, "files", &r->files);
    for (int col = 0; col < 4; col++) put_instruction_column(b, r, col);
    if (r->truncated) put_bool(b, "truncated", 1);
    gpufl__line_end(l);
}

void gpufl__wire_kernel_config(gpufl__line_t *l, const gpufl__wire_kernel_config_t *k) {
    gpufl__buf_t *b = gpufl__line_begin_describing(l, "kernel_config");
    gpufl__buf_kv_i64(b, "ts_ns", k->ts_ns);
    gpufl__buf_kv_i64(b, "id", k->id);
    gpufl__buf_kv_str(b, "name", k->name);
    gpufl__buf_kv_i64(b, "block_threads", k->block_threads);
    gpufl__buf_kv_i64(b, "dynamic_smem_bytes", k->dynamic_smem_bytes);
    if (k->occupancy_unknown) {
        gpufl__buf_kv_str(b, "occupancy_unknown", k->occupancy_unknown);
        gpufl__line_end(l);
        return;
    }
    gpufl__buf_kv_i64(b, "device", k->device);
    gpufl__buf_kv_i64(b, "registers", k->registers);
    gpufl__buf_kv_i64(b, "static_smem_bytes", k->static_smem_bytes);
    gpufl__buf_kv_i64(b, "local_bytes_per_thread", k->local_bytes_per_thread);
    gpufl__buf_kv_i64(b, "max_threads_per_block", k->max_threads_per_block);
    gpufl__buf_kv_i64(b, "blocks_per_sm", k->blocks_per_sm);
    gpufl__buf_kv_i64(b, "active_warps", k->active_warps);
    gpufl__buf_kv_i64(b, "max_warps", k->max_warps);
    put_fixed(b, "occupancy", k->occupancy, 3);
    if (k->have_limits) {
        gpufl__buf_kv_i64(b, "limit_warps", k->limit_warps);
        gpufl__buf_kv_i64(b, "limit_registers", k->limit_registers);
        gpufl__buf_kv_i64(b, "limit_smem", k->limit_smem);
        gpufl__buf_kv_i64(b, "limit_blocks", k->limit_blocks);
        gpufl__buf_kv_str(b, "limiter", k->limiter);
    }
    put_bool(b, "breakdown_agrees", k->breakdown_agrees);
    gpufl__line_end(l);
}
