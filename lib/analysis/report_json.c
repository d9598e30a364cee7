// SPDX-License-Identifier: Apache-2.0
/*
 * report_json.c - the report as one JSON document for programs: the sections
 * report_data.c computed, in base units (ns, bytes, percent 0-100), keys in
 * a fixed order, unknown values as null, never NaN or Infinity. The shape is
 * documented in docs/report-json.md ("format":"gpufl-report","version":1).
 */
#include "analysis/report.h"

#include "util/error.h"

#include <math.h>
#include <string.h>

#define JSON_LIST_MAX 100 /* hotspots, detailed kernel names, configs per name */

/* A number: an integer when it is one, null when not finite or unknown (< 0
 * where unknown_below_zero). */
static json_t *num(double v) {
    if (!isfinite(v)) return json_null();
    if (v == floor(v) && fabs(v) < 9e15) return json_integer((json_int_t)v);
    return json_real(v);
}

static json_t *known(double v) { return v < 0 ? json_null() : num(v); }
static json_t *str(const char *s) { return s ? json_string(s) : json_null(); }

/* Sets key of obj; a NULL value (out of memory) is caught by the final check. */
static void put(json_t *obj, const char *key, json_t *v) {
    if (v) json_object_set_new(obj, key, v);
}

static json_t *stat_json(const gpufl__report_stat_t *s) {
    if (!s->n) return json_null();
    json_t *o = json_object();
    put(o, "avg", num(s->sum / (double)s->n));
    put(o, "min", num(s->min));
    put(o, "max", num(s->max));
    put(o, "samples", json_integer((json_int_t)s->n));
    return o;
}

static json_t *cap_json(const gpufl__report_cap_t *c) {
    json_t *o = json_object();
    put(o, "requested", str(c->requested));
    put(o, "running", str(c->running));
    put(o, "reason", str(c->reason));
    return o;
}

static json_t *summary_json(const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    const gpufl__report_summary_t *s = &r->summary;
    json_t *o = json_object(), *a;
    put(o, "app", json_string(s->app));
    put(o, "session_id", json_string(s->session_id));
    put(o, "hostname", json_string(s->hostname));
    put(o, "pid", known((double)s->pid));
    put(o, "gpufl_version", json_string(s->gpufl_version));
    put(o, "start_unix_us", known((double)s->start_unix_us));
    put(o, "duration_ns", known((double)s->duration_ns));
    put(o, "ended", json_boolean(s->ended));
    json_t *h = json_object();
    put(h, "cpu_count", known((double)s->cpu_count));
    put(h, "mem_total_bytes", known((double)s->mem_total_bytes));
    put(h, "kernel_release", str(s->kernel_release));
    put(h, "cgroup_version", known((double)s->cgroup_version));
    put(o, "host", h);
    put(o, "backend", s->has_caps ? cap_json(&s->backend) : json_null());
    put(o, "engine", s->has_caps ? cap_json(&s->engine) : json_null());
    put(o, "features", a = json_array());
    for (size_t i = 0; a && i < s->n_features; i++) {
        json_t *f = json_object();
        put(f, "name", json_string(s->features[i].name));
        put(f, "on", json_boolean(s->features[i].on));
        put(f, "reason", str(s->features[i].reason));
        json_array_append_new(a, f);
    }
    json_t *rec = json_object();
    put(rec, "scopes", json_integer((json_int_t)m->n_scopes));
    put(rec, "open_scopes", json_integer((json_int_t)m->n_open_scopes));
    put(rec, "host_samples", json_integer((json_int_t)m->n_samples));
    put(rec, "system_windows", json_integer((json_int_t)s->window_starts));
    put(rec, "events", json_integer((json_int_t)m->n_events));
    put(rec, "gpu_samples", json_integer((json_int_t)m->n_gpu_samples));
    put(rec, "devices", json_integer((json_int_t)m->n_gpus));
    put(rec, "kernels", json_integer((json_int_t)m->n_kernels));
    put(rec, "launches", json_integer((json_int_t)m->n_launches));
    put(rec, "copies", json_integer((json_int_t)m->n_copies));
    put(rec, "memsets", json_integer((json_int_t)m->n_memsets));
    put(o, "records", rec);
    json_t *d = json_object();
    for (size_t i = 0; d && i < s->n_drops; i++)
        put(d, s->drops[i].name, json_integer((json_int_t)s->drops[i].count));
    put(o, "drops", d);
    put(o, "warning_events", json_integer((json_int_t)s->warn_events));
    put(o, "other_events", json_integer((json_int_t)s->other_events));
    put(o, "warnings", a = json_array());
    for (size_t i = 0; a && i < s->warn_events && i < GPUFL_REPORT_LIST_MAX; i++) {
        const gpufl__model_event_t *e = &m->events[s->warn_order[i]];
        json_t *w = json_object();
        put(w, "ts_ns", num((double)e->ts_ns));
        put(w, "level", json_string(e->level_name ? e->level_name : ""));
        put(w, "code", str(e->code));
        put(w, "message", str(e->message));
        json_array_append_new(a, w);
    }
    json_t *log = json_object();
    put(log, "lines", json_integer((json_int_t)m->read.lines));
    put(log, "files", json_integer((json_int_t)s->log_files));
    put(log, "missing", a = json_array());
    for (int f = 0; a && f < GPUFL_LOG_FILE_COUNT; f++)
        if (!m->read.segments[f])
            json_array_append_new(a, json_string(gpufl__reader_file_name((gpufl__log_file_t)f)));
    put(log, "truncated_lines", json_integer((json_int_t)m->read.truncated_lines));
    put(log, "problems", json_integer((json_int_t)s->problems));
    json_t *dmg = json_object();
    put(dmg, "lines", json_integer((json_int_t)s->damage_lines));
    put(dmg, "rows_lost", json_integer((json_int_t)s->damage_rows));
    put(dmg, "rows_at_least", json_boolean(s->damage_rows_at_least || s->damage_rows_unknown));
    put(dmg, "rows_unknown", json_integer((json_int_t)s->damage_rows_unknown));
    put(log, "damaged", dmg);
    put(o, "log", log);
    return o;
}

static json_t *insights_json(const gpufl__insights_t *ins) {
    json_t *o = json_object(), *list = json_array(), *skipped = json_array();
    put(o, "findings", list);
    put(o, "skipped", skipped);
    for (size_t i = 0; list && i < ins->n; i++) {
        const gpufl__insight_t *in = &ins->items[i];
        json_t *x = json_object(), *loc = json_null(), *ev = json_array();
        put(x, "rule", json_string(in->rule));
        put(x, "severity", json_string(gpufl_severity_name(in->severity)));
        put(x, "category", json_string(in->category));
        put(x, "title", str(in->title));
        put(x, "message", str(in->message));
        put(x, "advice", str(in->advice));
        if (in->file || in->function) {
            json_decref(loc);
            loc = json_object();
            put(loc, "file", str(in->file));
            put(loc, "line", in->line > 0 ? json_integer((json_int_t)in->line) : json_null());
            put(loc, "function", str(in->function));
            put(loc, "source", str(in->source));
        }
        put(x, "location", loc);
        put(x, "kernel", str(in->kernel));
        for (size_t k = 0; ev && k < in->n_evidence; k++) {
            json_t *e = json_object();
            put(e, "name", json_string(in->evidence[k].name));
            put(e, "value", num(in->evidence[k].value));
            put(e, "unit", json_string(in->evidence[k].unit));
            json_array_append_new(ev, e);
        }
        put(x, "evidence", ev);
        json_array_append_new(list, x);
    }
    for (size_t i = 0; skipped && i < ins->n_skipped; i++) {
        json_t *x = json_object();
        put(x, "rule", json_string(ins->skipped[i].rule));
        put(x, "why", str(ins->skipped[i].why));
        json_array_append_new(skipped, x);
    }
    return o;
}

static json_t *scopes_json(const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    json_t *o = json_object(), *a = json_array();
    put(o, "paths_count", json_integer((json_int_t)r->scopes.n_rows));
    put(o, "calls_ended", json_integer((json_int_t)r->scopes.closed));
    put(o, "open", json_integer((json_int_t)m->n_open_scopes));
    put(o, "implicit", json_integer((json_int_t)r->scopes.implicit));
    put(o, "paths", a);
    for (size_t i = 0; a && i < r->scopes.n_rows; i++) {
        const gpufl__report_scope_row_t *row = &r->scopes.rows[i];
        const gpufl__model_scope_path_t *p = row->path;
        json_t *x = json_object();
        put(x, "path", json_string(p->path));
        put(x, "name", json_string(p->name));
        put(x, "depth", json_integer((json_int_t)p->depth));
        put(x, "parent",
            p->parent >= 0 ? json_string(m->scope_paths[p->parent].path) : json_null());
        put(x, "calls", json_integer((json_int_t)p->calls));
        put(x, "open", json_integer((json_int_t)p->open));
        put(x, "implicit", json_integer((json_int_t)p->implicit));
        put(x, "tags", json_integer((json_int_t)p->tags));
        put(x, "total_ns", p->calls ? num(p->total_ns) : json_null());
        put(x, "avg_ns", known(row->avg_ns));
        put(x, "min_ns", p->calls ? num(p->min_ns) : json_null());
        put(x, "max_ns", p->calls ? num(p->max_ns) : json_null());
        put(x, "per_iter_ns", known(row->per_iter_ns));
        json_t *tags = json_array();
        put(x, "tag_values", tags);
        for (size_t k = 0; tags && k < row->n_tags && k < GPUFL_REPORT_TAGS_JSON; k++)
            json_array_append_new(tags, str(row->tags[k]));
        put(x, "lost", json_integer((json_int_t)p->lost));
        if (p->source != GPUFL__MODEL_SOURCE_GPUFL) { /* absent for gpufl's own scopes */
            put(x, "source",
                json_string(p->source == GPUFL__MODEL_SOURCE_NVTX_START_END ? "nvtx_start_end"
                                                                            : "nvtx"));
            put(x, "domain", json_string(p->domain));
        }
        json_array_append_new(a, x);
    }
    json_t *open = json_array();
    put(o, "open_scopes", open);
    for (size_t i = 0; open && i < r->scopes.n_open; i++) {
        const gpufl__model_scope_t *s = r->scopes.open[i];
        json_t *x = json_object();
        put(x, "path", json_string(s->path));
        put(x, "tid", json_integer((json_int_t)s->tid));
        put(x, "begin_ns", num((double)s->begin_ns));
        put(x, "tag", *s->tag ? str(s->tag) : json_null());
        json_array_append_new(open, x);
    }
    const gpufl__report_scopes_t *sc = &r->scopes;
    json_t *lost = json_object(), *paths = json_array();
    put(lost, "count", json_integer((json_int_t)sc->lost_total));
    put(lost, "paths", paths);
    for (size_t i = 0; paths && i < sc->n_lost_paths && i < GPUFL_REPORT_LIST_MAX; i++) {
        json_t *x = json_object();
        put(x, "path", json_string(sc->lost_paths[i]));
        put(x, "count", json_integer((json_int_t)sc->lost_counts[i]));
        json_array_append_new(paths, x);
    }
    put(lost, "paths_count", json_integer((json_int_t)sc->n_lost_paths));
    put(lost, "no_path", json_integer((json_int_t)sc->lost_pathless));
    put(lost, "unnamed", json_integer((json_int_t)sc->lost_unnamed));
    put(o, "lost_ends", lost);
    return o;
}

static json_t *system_json(const gpufl__report_t *r) {
    const gpufl__report_system_t *s = &r->system;
    static const char *const keys[GPUFL_RH_COUNT] = {"cpu_pct",
                                                     "process_cpu_pct",
                                                     "mem_used_bytes",
                                                     "mem_total_bytes",
                                                     "process_rss_bytes",
                                                     "cgroup_mem_used_bytes",
                                                     "cgroup_mem_limit_bytes",
                                                     "cgroup_cpu_pct",
                                                     "cgroup_cpu_limit_cores"};
    json_t *o = json_object(), *a;
    put(o, "samples", json_integer((json_int_t)s->n));
    put(o, "first_ts_ns", s->n ? num((double)s->first_ts_ns) : json_null());
    put(o, "last_ts_ns", s->n ? num((double)s->last_ts_ns) : json_null());
    for (int i = 0; i < GPUFL_RH_COUNT; i++) put(o, keys[i], stat_json(&s->st[i]));
    json_t *w = json_object();
    put(w, "started", json_integer((json_int_t)r->summary.window_starts));
    put(w, "stopped", json_integer((json_int_t)r->summary.window_stops));
    put(w, "names", a = json_array());
    for (size_t i = 0; a && i < s->n_window_names; i++)
        json_array_append_new(a, json_string(s->window_names[i] ? s->window_names[i] : ""));
    put(o, "windows", w);
    put(o, "cpu_min_interval_ns",
        s->cpu_min_interval_ns > 0 ? num((double)s->cpu_min_interval_ns) : json_null());
    put(o, "cpu_none", *s->cpu_none ? json_string(s->cpu_none) : json_null());
    return o;
}

static json_t *counter_json(const gpufl__report_counter_t *c) {
    if (!c->n) return json_null();
    json_t *o = json_object();
    put(o, "first", num((double)c->first));
    put(o, "last", num((double)c->last));
    return o;
}

static json_t *gpu_json(const gpufl__report_t *r, const gpufl__report_gpu_t *a) {
    static const char *const keys[GPUFL_RG_COUNT] = {"gpu_util_pct",
                                                     "mem_util_pct",
                                                     "mem_used_bytes",
                                                     "mem_total_bytes",
                                                     "temp_gpu_c",
                                                     "temp_mem_c",
                                                     "power_mw",
                                                     "power_limit_mw",
                                                     "clock_sm_mhz",
                                                     "clock_mem_mhz",
                                                     "fan_pct",
                                                     "pcie_tx_bytes_per_s",
                                                     "pcie_rx_bytes_per_s",
                                                     "nvlink_tx_bytes_per_s",
                                                     "nvlink_rx_bytes_per_s",
                                                     "sm_active_pct",
                                                     "sm_occupancy_pct",
                                                     "tensor_active_pct",
                                                     "dram_bw_util_pct"};
    const gpufl__model_gpu_t *g = a->gpu;
    json_t *o = json_object(), *x;
    put(o, "device", json_integer((json_int_t)g->device));
    put(o, "has_info", json_boolean(g->has_info));
    put(o, "name", json_string(g->name));
    put(o, "uuid", json_string(g->uuid));
    put(o, "pci_bus_id", json_string(g->pci_bus_id));
    put(o, "compute_capability", json_string(g->compute_capability));
    put(o, "sm_count", known((double)g->sm_count));
    put(o, "mem_total_bytes", known(a->mem_total_bytes));
    put(o, "driver_version", json_string(g->driver_version));
    put(o, "cuda_driver_version", known((double)g->cuda_driver_version));
    put(o, "nvml_version", json_string(g->nvml_version));
    put(o, "mig_mode", known((double)g->mig_mode));
    put(o, "mig_index", known((double)g->mig_index));
    put(o, "power_limit_mw", known(a->power_limit_mw));
    put(o, "samples", json_integer((json_int_t)a->n));
    put(o, "first_ts_ns", a->n ? num((double)a->first_ts_ns) : json_null());
    put(o, "last_ts_ns", a->n ? num((double)a->last_ts_ns) : json_null());
    json_t *mt = json_object();
    for (int i = 0; i < GPUFL_RG_COUNT; i++) put(mt, keys[i], stat_json(&a->st[i]));
    put(o, "metrics", mt);
    put(o, "energy_mj", counter_json(&a->energy));
    put(o, "ecc_corrected", counter_json(&a->sbe));
    put(o, "ecc_uncorrected", counter_json(&a->dbe));
    put(o, "throttle_samples", json_integer((json_int_t)a->throttle_n));
    put(o, "throttle", x = json_array());
    for (size_t i = 0; x && i < a->n_shares; i++) {
        const char *name = r->m->throttle_names[a->shares[i].bit];
        json_t *t = json_object();
        put(t, "bit", json_integer(a->shares[i].bit));
        put(t, "reason", str(name));
        put(t, "samples_pct", num(100.0 * (double)a->shares[i].n / (double)a->throttle_n));
        json_array_append_new(x, t);
    }
    put(o, "idle_pct",
        r->idle_bit >= 0 && a->throttle_n
            ? num(100.0 * (double)a->bit_n[r->idle_bit] / (double)a->throttle_n)
            : json_null());
    json_t *p = json_null();
    if (g->procs_records) {
        json_decref(p);
        p = json_object();
        put(p, "peak", known((double)g->procs_peak));
        put(p, "last_ts_ns", known((double)g->procs_ts_ns));
        put(p, "last_count", known((double)g->procs_count));
        put(p, "listed", x = json_array());
        for (size_t i = 0; x && i < g->n_procs; i++) {
            json_t *t = json_object();
            put(t, "pid", json_integer((json_int_t)g->procs[i].pid));
            put(t, "used_bytes", known((double)g->procs[i].used_bytes));
            json_array_append_new(x, t);
        }
    }
    put(o, "processes", p);
    return o;
}

static json_t *kernels_json(const gpufl__report_t *r) {
    if (!r->m->n_kernels) return json_null();
    json_t *o = json_object(), *a = json_array();
    put(o, "count", json_integer((json_int_t)r->m->n_kernels));
    put(o, "distinct_names", json_integer((json_int_t)r->n_kgroups));
    put(o, "total_ns", num(r->kernel_ns));
    put(o, "hotspots", a);
    for (size_t i = 0; a && i < r->n_kgroups && i < JSON_LIST_MAX; i++) {
        const gpufl__report_kgroup_t *g = &r->kgroups[i];
        json_t *x = json_object();
        put(x, "name", json_string(g->name));
        put(x, "calls", json_integer((json_int_t)g->calls));
        put(x, "total_ns", num(g->total_ns));
        put(x, "avg_ns", num(g->total_ns / (double)g->calls));
        put(x, "min_ns", num((double)g->min_ns));
        put(x, "max_ns", num((double)g->max_ns));
        put(x, "p50_ns", num((double)g->p50_ns));
        put(x, "p99_ns", num((double)g->p99_ns));
        put(x, "share_pct", num(r->kernel_ns > 0 ? 100.0 * g->total_ns / r->kernel_ns : 0));
        json_array_append_new(a, x);
    }
    put(o, "more_names",
        json_integer(
            (json_int_t)(r->n_kgroups > JSON_LIST_MAX ? r->n_kgroups - JSON_LIST_MAX : 0)));
    return o;
}

static json_t *dim3(int same, int32_t x, int32_t y, int32_t z) {
    if (!same) return json_null();
    json_t *a = json_array();
    json_array_append_new(a, json_integer(x));
    json_array_append_new(a, json_integer(y));
    json_array_append_new(a, json_integer(z));
    return a;
}

static json_t *kconf_json(const gpufl__report_kconf_t *c) {
    const gpufl__model_kernel_t *k = c->first;
    const gpufl__model_kernel_config_t *rec = c->rec;
    json_t *x = json_object();
    put(x, "config", c->config < 0 ? json_null() : json_integer((json_int_t)c->config));
    put(x, "has_record", json_boolean(rec != NULL));
    put(x, "calls", json_integer((json_int_t)c->calls));
    put(x, "total_ns", num(c->total_ns));
    put(x, "grid", dim3(c->same_grid, k->grid_x, k->grid_y, k->grid_z));
    put(x, "block", dim3(c->same_block, k->block_x, k->block_y, k->block_z));
    put(x, "registers", known(k->registers));
    put(x, "static_smem_bytes", known((double)k->static_smem_bytes));
    put(x, "dynamic_smem_bytes",
        c->same_dsmem ? known((double)k->dynamic_smem_bytes) : json_null());
    put(x, "local_bytes_per_thread", known((double)k->local_bytes_per_thread));
    put(x, "occupancy_pct", rec && rec->occupancy >= 0 ? num(100.0 * rec->occupancy) : json_null());
    put(x, "active_warps", rec ? known((double)rec->active_warps) : json_null());
    put(x, "max_warps", rec ? known((double)rec->max_warps) : json_null());
    put(x, "blocks_per_sm", rec ? known((double)rec->blocks_per_sm) : json_null());
    json_t *lim = json_null();
    if (rec && gpufl__report_has_limits(rec)) {
        json_decref(lim);
        lim = json_object();
        put(lim, "warps", known((double)rec->limit_warps));
        put(lim, "registers", known((double)rec->limit_registers));
        put(lim, "shared_memory", known((double)rec->limit_smem));
        put(lim, "blocks", known((double)rec->limit_blocks));
    }
    put(x, "limits", lim);
    put(x, "limiter", rec && *rec->limiter ? json_string(rec->limiter) : json_null());
    put(x, "breakdown_agrees",
        rec && rec->breakdown_agrees >= 0 ? json_boolean(rec->breakdown_agrees) : json_null());
    put(x, "occupancy_why",
        rec && *rec->occupancy_why ? json_string(rec->occupancy_why) : json_null());
    return x;
}

static json_t *details_json(const gpufl__report_t *r) {
    if (!r->m->n_kernels) return json_null();
    json_t *o = json_object(), *a = json_array();
    put(o, "kernel_names", json_integer((json_int_t)r->kernel_names));
    put(o, "configurations", json_integer((json_int_t)r->configs));
    put(o, "launches_without_config", json_integer((json_int_t)r->unconfigured));
    put(o, "kernels", a);
    size_t shown = 0;
    for (size_t i = 0, j; a && i < r->n_kconfs && shown < JSON_LIST_MAX; i = j, shown++) {
        const gpufl__report_kconf_t *g = r->kconfs;
        for (j = i; j < r->n_kconfs && g[j].rank == g[i].rank; j++) {
        }
        json_t *x = json_object(), *cs = json_array();
        put(x, "name", json_string(g[i].name));
        put(x, "calls", json_integer((json_int_t)g[i].name_calls));
        put(x, "total_ns", num(g[i].name_total_ns));
        put(x, "configs", cs);
        for (size_t k = i; cs && k < j && k < i + JSON_LIST_MAX; k++)
            json_array_append_new(cs, kconf_json(&g[k]));
        put(x, "more_configs",
            json_integer((json_int_t)(j - i > JSON_LIST_MAX ? j - i - JSON_LIST_MAX : 0)));
        json_array_append_new(a, x);
    }
    put(o, "more_names",
        json_integer((json_int_t)(r->kernel_names > shown ? r->kernel_names - shown : 0)));
    return o;
}

/* Launch rows (PcSampling, Deep): launches per kernel_config id. */
static json_t *launches_json(const gpufl__report_t *r) {
    if (!r->n_lgroups) return json_null();
    json_t *o = json_object(), *a = json_array();
    put(o, "kernels_timed", json_boolean(!r->untimed));
    put(o, "note", r->untimed ? json_string(GPUFL_REPORT_UNTIMED) : json_null());
    put(o, "count", json_integer((json_int_t)r->m->n_launches));
    put(o, "kernel_names", json_integer((json_int_t)r->launch_names));
    put(o, "launches_without_config", json_integer((json_int_t)r->launches_without_config));
    put(o, "configs", a);
    size_t shown = r->n_lgroups < JSON_LIST_MAX ? r->n_lgroups : JSON_LIST_MAX;
    for (size_t i = 0; a && i < shown; i++) {
        const gpufl__report_lgroup_t *g = &r->lgroups[i];
        const gpufl__model_kernel_config_t *c = g->rec;
        json_t *x = json_object();
        put(x, "name", json_string(g->name));
        put(x, "mangled", c ? json_string(c->name) : json_null());
        put(x, "config", g->config >= 0 ? json_integer((json_int_t)g->config) : json_null());
        put(x, "has_record", json_boolean(c != NULL));
        put(x, "launches", json_integer((json_int_t)g->launches));
        put(x, "scopes", json_integer((json_int_t)g->scopes));
        put(x, "block_threads", c ? known((double)c->block_threads) : json_null());
        put(x, "registers", c ? known((double)c->registers) : json_null());
        put(x, "static_smem_bytes", c ? known((double)c->static_smem_bytes) : json_null());
        put(x, "dynamic_smem_bytes", c ? known((double)c->dynamic_smem_bytes) : json_null());
        put(x, "occupancy_pct", c && c->occupancy >= 0 ? num(100.0 * c->occupancy) : json_null());
        put(x, "limiter", c && *c->limiter ? json_string(c->limiter) : json_null());
        json_array_append_new(a, x);
    }
    put(o, "more_configs", json_integer((json_int_t)(r->n_lgroups - shown)));
    return o;
}

static json_t *transfers_json(const gpufl__report_t *r) {
    static const char *const keys[GPUFL_REPORT_DIR_COUNT] = {"htod", "dtoh", "dtod", "peer",
                                                             "other"};
    if (!r->m->n_copies) return json_null();
    json_t *o = json_object(), *a = json_array();
    put(o, "count", json_integer((json_int_t)r->m->n_copies));
    put(o, "bytes", num(r->copy_bytes));
    put(o, "directions", a);
    for (int d = 0; a && d < GPUFL_REPORT_DIR_COUNT; d++) {
        const gpufl__report_dir_t *x = &r->dirs[d];
        if (!x->count) continue;
        int host = d == GPUFL_REPORT_DIR_HTOD || d == GPUFL_REPORT_DIR_DTOH;
        json_t *t = json_object();
        put(t, "direction", json_string(keys[d]));
        put(t, "count", json_integer((json_int_t)x->count));
        put(t, "bytes", num(x->bytes));
        put(t, "time_ns", num(x->time_ns));
        put(t, "bytes_per_s", x->time_ns > 0 ? num(x->bytes / (x->time_ns / 1e9)) : json_null());
        put(t, "pageable", host ? json_integer((json_int_t)x->pageable) : json_null());
        put(t, "pinned", host ? json_integer((json_int_t)x->pinned) : json_null());
        json_array_append_new(a, t);
    }
    return o;
}

static json_t *work_json(const gpufl__model_scope_gpu_t *g, const char *path, double host_ns) {
    json_t *x = json_object(), *a = json_array();
    put(x, "path", str(path));
    put(x, "host_ns", known(host_ns));
    put(x, "gpu_ns", num(gpufl__model_gpu_ns(&g->total)));
    put(x, "self_ns", num(gpufl__model_gpu_ns(&g->self)));
    put(x, "kernels", json_integer((json_int_t)g->total.kernels));
    put(x, "copies", json_integer((json_int_t)g->total.copies));
    put(x, "memsets", json_integer((json_int_t)g->total.memsets));
    put(x, "top_kernels", a);
    for (size_t i = 0; a && i < g->n_top; i++) {
        json_t *k = json_object();
        put(k, "name", json_string(g->top[i].name));
        put(k, "calls", json_integer((json_int_t)g->top[i].calls));
        put(k, "total_ns", num(g->top[i].total_ns));
        json_array_append_new(a, k);
    }
    put(x, "kernel_names", json_integer((json_int_t)g->kernel_names));
    return x;
}

static json_t *scope_gpu_json(const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    if (!r->scope_gpu_shown) return json_null();
    json_t *o = json_object(), *a = json_array();
    put(o, "attributed", json_boolean(m->gpu_scoped_rows > 0));
    put(o, "in_scopes_ns", num(r->gpu_in_scopes_ns));
    put(o, "all_ns", num(r->gpu_all_ns));
    put(o, "unattributed", known((double)r->unattributed));
    put(o, "hidden_paths", json_integer((json_int_t)r->scope_gpu_hidden));
    put(o, "paths", a);
    for (size_t i = 0; a && i < r->n_scope_gpu_rows; i++) {
        const gpufl__model_scope_path_t *p = r->scope_gpu_rows[i].path;
        json_array_append_new(a, work_json(&p->gpu, p->path, p->calls ? p->total_ns : -1));
    }
    put(o, "unknown_scope",
        m->gpu_scoped_rows ? work_json(&m->gpu_unknown_scope, NULL, -1) : json_null());
    put(o, "no_scope", m->gpu_scoped_rows ? work_json(&m->gpu_no_scope, NULL, -1) : json_null());
    return o;
}

static json_t *problems_json(const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    json_t *o = json_object(), *a = json_array();
    put(o, "count", json_integer((json_int_t)r->summary.problems));
    put(o, "listed", a);
    for (size_t i = 0; a && i < m->n_warnings && i < GPUFL_REPORT_PROBLEMS_MAX; i++) {
        const gpufl__model_warning_t *w = &m->warnings[i];
        json_t *x = json_object();
        put(x, "file", *w->file ? json_string(w->file) : json_null());
        put(x, "line", w->line ? json_integer((json_int_t)w->line) : json_null());
        put(x, "message", json_string(w->message));
        json_array_append_new(a, x);
    }
    return o;
}

int gpufl__report_render_json(const gpufl__report_t *r, FILE *out) {
    json_t *doc = json_object(), *a;
    if (!doc) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the JSON report");
    put(doc, "format", json_string("gpufl-report"));
    put(doc, "version", json_integer(1));
    put(doc, "session", summary_json(r));
    put(doc, "insights", insights_json(&r->insights));
    put(doc, "scopes", scopes_json(r));
    put(doc, "system", system_json(r));
    put(doc, "gpus", a = json_array());
    for (size_t i = 0; a && i < r->m->n_gpus; i++)
        json_array_append_new(a, gpu_json(r, &r->gpus[i]));
    put(doc, "sampling_cost", a = json_array());
    for (size_t i = 0; a && i < r->n_costs; i++) {
        json_t *c = json_object();
        put(c, "source", json_string(r->costs[i].source));
        put(c, "mean_ns", num(r->costs[i].mean_ns));
        put(c, "per", json_string(r->costs[i].is_nvml ? "device and sample" : "sample"));
        json_array_append_new(a, c);
    }
    put(doc, "kernels", kernels_json(r));
    put(doc, "kernel_details", details_json(r));
    put(doc, "kernel_launches", launches_json(r));
    put(doc, "transfers", transfers_json(r));
    put(doc, "scope_gpu", scope_gpu_json(r));
    put(doc, "pc_sampling", r->pc.shown ? gpufl__report_json_pc(r) : json_null());
    put(doc, "sass_metrics",
        r->sass_metrics.shown ? gpufl__report_json_sass_metrics(r) : json_null());
    put(doc, "problems", problems_json(r));
    put(doc, "hardware_counters", r->range.shown ? gpufl__report_json_range(r) : json_null());
    put(doc, "framework_ops", r->ops.shown ? gpufl__report_json_ops(r) : json_null());
    /* A member dropped for want of memory would give a document of another
     * shape: every top-level key must be there. */
    int rc = json_object_size(doc) == 18 ? 0 : GPUFL_ENOMEM;
    if (!rc &&
        json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) != 0)
        rc = gpufl__set_error(GPUFL_EIO, "report: writing the JSON report failed");
    if (!rc) fputc('\n', out);
    json_decref(doc);
    if (rc == GPUFL_ENOMEM) return gpufl__set_error(rc, "out of memory for the JSON report");
    return rc;
}
