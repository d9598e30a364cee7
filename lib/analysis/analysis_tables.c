// SPDX-License-Identifier: Apache-2.0
/*
 * analysis_tables.c - the tables of the public read API, column by column
 * (docs/python.md lists them). Each builder walks the model's rows once and
 * writes every column of a row, so a table of a million rows is one pass
 * over memory. Values are copied as the model holds them; the only joins
 * are lookups the model offers (a kernel's config, a row's scope, a PC's
 * source line), so no figure here can disagree with the report.
 */
#include "analysis/analysis.h"

#include "util/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define I            GPUFL_COLUMN_INT64
#define D            GPUFL_COLUMN_DOUBLE
#define S            GPUFL_COLUMN_STRING
#define N_DEFS(defs) (sizeof defs / sizeof defs[0])

/* Writes the cells of one row, column after column in the table's order. */
typedef struct row {
    gpufl_analysis_t *a;
    gpufl__an_table_t *t;
    size_t i, c;
} row_t;

static void put_i(row_t *w, int64_t v) { ((int64_t *)w->t->data[w->c++])[w->i] = v; }
static void put_d(row_t *w, double v) { ((double *)w->t->data[w->c++])[w->i] = v; }
/* A string, NULL for none. */
static void put_s(row_t *w, const char *s) { put_i(w, gpufl__analysis_str(w->a, s)); }
/* A string where "" also means none. */
static void put_sn(row_t *w, const char *s) { put_s(w, s && *s ? s : NULL); }
/* An integer value unknown when negative, as a double (NaN unknown). */
static void put_di(row_t *w, int64_t v) { put_d(w, v < 0 ? NAN : (double)v); }
static void put_dd(row_t *w, double v) { put_d(w, v < 0 ? NAN : v); }
/* A duration, -1 while either end is unknown. */
static void put_dur(row_t *w, int64_t start, int64_t end) {
    put_i(w, start >= 0 && end >= start ? end - start : -1);
}

static int alloc_table(gpufl__an_table_t *t, const gpufl__an_coldef_t *defs, size_t ncols,
                       size_t rows) {
    t->defs = defs;
    t->ncols = ncols;
    t->rows = rows;
    t->data = calloc(ncols, sizeof *t->data);
    if (!t->data) return -1;
    for (size_t c = 0; c < ncols; c++)
        if (!(t->data[c] = malloc((rows ? rows : 1) * 8))) return -1;
    return 0;
}

/* The path of the scope instance `id`, NULL when none or unknown. */
static const char *scope_path(const gpufl__model_t *m, int64_t id) {
    const gpufl__model_scope_t *s = id > 0 ? gpufl__model_scope_find(m, id) : NULL;
    return s ? s->path : NULL;
}

/* Where a scope-attributed row was launched: its scope id and path. */
static void put_scope(row_t *w, int64_t id) {
    put_i(w, id);
    put_s(w, scope_path(w->a->m, id));
}

/* The source line and SASS text of an instruction, from its sass record. */
static void put_source(row_t *w, uint32_t cubin, uint32_t function, uint32_t pc) {
    const gpufl__model_t *m = w->a->m;
    const gpufl__model_sass_t *s = gpufl__model_sass_find(m, cubin, function);
    const gpufl__model_sass_insn_t *in = s ? gpufl__model_sass_insn(m, s, pc) : NULL;
    put_sn(w, in ? in->file : NULL);
    put_i(w, in && in->line > 0 ? in->line : -1);
    put_sn(w, in ? in->text : NULL);
}

/* A kernel function of PC sampling or SASS metrics rows: demangled (the
 * mangled name when the log has no other) and mangled, then the module. */
static void put_function(row_t *w, uint32_t demangled, uint32_t function, uint32_t cubin) {
    const char *mangled = gpufl__model_str(w->a->m, function);
    const char *shown = demangled ? gpufl__model_str(w->a->m, demangled) : NULL;
    put_sn(w, shown && *shown ? shown : mangled);
    put_sn(w, mangled);
    put_sn(w, gpufl__model_str(w->a->m, cubin));
}

/* ---------------------------------------------------------------------- */

static const gpufl__an_coldef_t session_defs[] = {
    {"session_id", S},    {"app_name", S},         {"hostname", S},
    {"gpufl_version", S}, {"directory", S},        {"pid", I},
    {"epoch_unix_us", I}, {"duration_ns", I},      {"ended", I},
    {"first_ts_ns", I},   {"last_ts_ns", I},       {"backend", S},
    {"engine", S},        {"engine_requested", S}, {"segments", I},
    {"lines", I},         {"corrupt_lines", I},    {"truncated_lines", I},
    {"warnings", I},      {"records_dropped", I}};

static void session_row(row_t *w) {
    const gpufl__model_t *m = w->a->m;
    const gpufl__model_header_t *h = &m->header;
    unsigned segments = 0;
    for (int f = 0; f < GPUFL_LOG_FILE_COUNT; f++) segments += m->read.segments[f];
    put_sn(w, h->session_id);
    put_sn(w, h->app_name);
    put_sn(w, h->hostname);
    put_sn(w, h->gpufl_version);
    put_s(w, w->a->dir);
    put_i(w, h->pid);
    put_i(w, h->epoch_unix_us);
    put_i(w, m->session_end.present ? m->session_end.duration_ns : -1);
    put_i(w, m->session_end.present);
    put_i(w, m->first_ts_ns);
    put_i(w, m->last_ts_ns);
    put_sn(w, gpufl__model_json_str(m->capabilities, "backend"));
    put_sn(w, gpufl__model_json_str(m->capabilities, "engine"));
    put_sn(w, gpufl__model_json_str(m->capabilities, "engine_requested"));
    put_i(w, segments);
    put_i(w, (int64_t)m->read.lines);
    put_i(w, (int64_t)m->read.corrupt_lines);
    put_i(w, (int64_t)m->read.truncated_lines);
    put_i(w, (int64_t)(m->n_warnings + m->warnings_over_cap));
    put_i(w, m->drops.present ? m->drops.records : -1);
}

static const gpufl__an_coldef_t kernel_defs[] = {{"start_ns", I},
                                                 {"end_ns", I},
                                                 {"duration_ns", I},
                                                 {"name", S},
                                                 {"mangled", S},
                                                 {"device", I},
                                                 {"stream", I},
                                                 {"correlation", I},
                                                 {"grid_x", I},
                                                 {"grid_y", I},
                                                 {"grid_z", I},
                                                 {"block_x", I},
                                                 {"block_y", I},
                                                 {"block_z", I},
                                                 {"registers", I},
                                                 {"static_smem_bytes", I},
                                                 {"dynamic_smem_bytes", I},
                                                 {"local_bytes_per_thread", I},
                                                 {"config", I},
                                                 {"occupancy", D},
                                                 {"limiter", S},
                                                 {"scope", I},
                                                 {"scope_path", S},
                                                 {"graph_id", I},
                                                 {"graph_node", I},
                                                 {"launch_ns", I},
                                                 {"tid", I},
                                                 {"stack", I},
                                                 {"external_kind", I},
                                                 {"external_id", I},
                                                 {"op", S}};

static void kernel_row(row_t *w) {
    const gpufl__model_kernel_t *k = &w->a->m->kernels[w->i];
    const gpufl__model_kernel_config_t *c = gpufl__model_config_find(w->a->m, k->config);
    put_i(w, k->start_ns);
    put_i(w, k->end_ns);
    put_dur(w, k->start_ns, k->end_ns);
    put_s(w, k->demangled);
    put_s(w, k->name);
    put_i(w, k->device);
    put_i(w, k->stream);
    put_i(w, k->correlation);
    put_i(w, k->grid_x);
    put_i(w, k->grid_y);
    put_i(w, k->grid_z);
    put_i(w, k->block_x);
    put_i(w, k->block_y);
    put_i(w, k->block_z);
    put_i(w, k->registers);
    put_i(w, k->static_smem_bytes);
    put_i(w, k->dynamic_smem_bytes);
    put_i(w, k->local_bytes_per_thread);
    put_i(w, k->config);
    put_dd(w, c ? c->occupancy : -1);
    put_sn(w, c ? c->limiter : NULL);
    put_scope(w, k->scope);
    put_i(w, k->graph_id);
    put_i(w, k->graph_node);
    put_i(w, k->launch_ns);
    put_i(w, k->tid);
    put_i(w, k->stack);
    put_i(w, k->external_kind);
    put_i(w, k->external_id);
    put_sn(w, gpufl__model_op_name(w->a->m, k->external_kind, k->external_id));
}

static const gpufl__an_coldef_t copy_defs[] = {
    {"start_ns", I},  {"end_ns", I},    {"duration_ns", I}, {"bytes", I},
    {"direction", S}, {"copy_kind", I}, {"src_kind", I},    {"dst_kind", I},
    {"device", I},    {"scope", I},     {"scope_path", S}};

static void copy_row(row_t *w) {
    const gpufl__model_copy_t *c = &w->a->m->copies[w->i];
    put_i(w, c->start_ns);
    put_i(w, c->end_ns);
    put_dur(w, c->start_ns, c->end_ns);
    put_i(w, c->bytes);
    put_s(w, gpufl__report_dir_name(gpufl__report_copy_dir(c->copy_kind)));
    put_i(w, c->copy_kind);
    put_i(w, c->src_kind);
    put_i(w, c->dst_kind);
    put_i(w, c->device);
    put_scope(w, c->scope);
}

static const gpufl__an_coldef_t memset_defs[] = {
    {"start_ns", I},    {"end_ns", I}, {"duration_ns", I}, {"bytes", I},
    {"memory_kind", I}, {"device", I}, {"scope", I},       {"scope_path", S}};

static void memset_row(row_t *w) {
    const gpufl__model_memset_t *s = &w->a->m->memsets[w->i];
    put_i(w, s->start_ns);
    put_i(w, s->end_ns);
    put_dur(w, s->start_ns, s->end_ns);
    put_i(w, s->bytes);
    put_i(w, s->memory_kind);
    put_i(w, s->device);
    put_scope(w, s->scope);
}

static const gpufl__an_coldef_t sync_defs[] = {
    {"start_ns", I},   {"end_ns", I}, {"duration_ns", I},   {"sync_type", I},   {"call", S},
    {"tid", I},        {"stream", I}, {"event", I},         {"correlation", I}, {"scope", I},
    {"scope_path", S}, {"stack", I},  {"site_function", S}, {"site_file", S},   {"site_line", I}};

static void sync_row(row_t *w) {
    const gpufl__model_sync_t *s = &w->a->m->syncs[w->i];
    const gpufl__model_frame_t *site = gpufl__model_stack_site(w->a->m, s->stack);
    put_i(w, s->start_ns);
    put_i(w, s->end_ns);
    put_dur(w, s->start_ns, s->end_ns);
    put_i(w, s->sync_type);
    put_s(w, gpufl__model_sync_name(s->sync_type));
    put_i(w, s->tid);
    put_i(w, s->stream);
    put_i(w, s->event);
    put_i(w, s->correlation);
    put_scope(w, s->scope);
    put_i(w, s->stack);
    put_sn(w, site ? site->function : NULL);
    put_sn(w, site ? site->file : NULL);
    put_i(w, site && site->line > 0 ? site->line : -1);
}

static const gpufl__an_coldef_t launch_defs[] = {
    {"ts_ns", I},         {"name", S},        {"config", I}, {"tid", I},
    {"context", I},       {"correlation", I}, {"scope", I},  {"scope_path", S},
    {"external_kind", I}, {"external_id", I}, {"stack", I},  {"op", S}};

static void launch_row(row_t *w) {
    const gpufl__model_launch_t *l = &w->a->m->launches[w->i];
    put_i(w, l->ts_ns);
    put_s(w, gpufl__model_launch_name(w->a->m, l));
    put_i(w, l->config);
    put_i(w, l->tid);
    put_i(w, l->context);
    put_i(w, l->correlation);
    put_scope(w, l->scope);
    put_i(w, l->external_kind);
    put_i(w, l->external_id);
    put_i(w, l->stack);
    put_sn(w, gpufl__model_op_name(w->a->m, l->external_kind, l->external_id));
}

static const gpufl__an_coldef_t scope_defs[] = {
    {"id", I},     {"parent", I},   {"name", S},   {"tag", S},         {"path", S},
    {"tid", I},    {"start_ns", I}, {"end_ns", I}, {"duration_ns", I}, {"depth", I},
    {"repeat", I}, {"warmup", I},   {"open", I},   {"implicit", I},    {"source", S},
    {"domain", S}, {"category", S}, {"payload", S}};

static const char *const scope_sources[] = {"gpufl", "nvtx", "nvtx_start_end"};

static void scope_row(row_t *w) {
    const gpufl__model_scope_t *s = &w->a->m->scopes[w->i];
    put_i(w, s->id);
    put_i(w, s->parent);
    put_s(w, s->name);
    put_sn(w, s->tag);
    put_s(w, s->path);
    put_i(w, s->tid);
    put_i(w, s->begin_ns);
    put_i(w, s->end_ns);
    put_dur(w, s->begin_ns, s->end_ns);
    put_i(w, s->depth);
    put_i(w, s->repeat);
    put_i(w, s->warmup);
    put_i(w, s->open);
    put_i(w, s->implicit);
    put_s(w, scope_sources[s->source <= 2 ? s->source : 0]);
    put_sn(w, s->domain);
    put_sn(w, s->category);
    put_sn(w, s->payload);
}

static const gpufl__an_coldef_t device_defs[] = {{"ts_ns", I},
                                                 {"device", I},
                                                 {"gpu_name", S},
                                                 {"gpu_util_pct", D},
                                                 {"mem_util_pct", D},
                                                 {"mem_used_bytes", D},
                                                 {"mem_free_bytes", D},
                                                 {"mem_total_bytes", D},
                                                 {"temp_gpu_c", D},
                                                 {"temp_mem_c", D},
                                                 {"power_mw", D},
                                                 {"power_limit_mw", D},
                                                 {"energy_mj", D},
                                                 {"clock_sm_mhz", D},
                                                 {"clock_gfx_mhz", D},
                                                 {"clock_mem_mhz", D},
                                                 {"fan_pct", D},
                                                 {"pcie_tx_bytes_per_s", D},
                                                 {"pcie_rx_bytes_per_s", D},
                                                 {"nvlink_tx_bytes_per_s", D},
                                                 {"nvlink_rx_bytes_per_s", D},
                                                 {"ecc_sbe_volatile", D},
                                                 {"ecc_dbe_volatile", D},
                                                 {"sm_active_pct", D},
                                                 {"sm_occupancy_pct", D},
                                                 {"tensor_active_pct", D},
                                                 {"dram_bw_util_pct", D},
                                                 {"throttle_reasons", I}};

static void device_row(row_t *w) {
    const gpufl__model_gpu_sample_t *s = &w->a->m->gpu_samples[w->i];
    const gpufl__model_gpu_t *g = gpufl__model_gpu_find(w->a->m, s->device);
    put_i(w, s->ts_ns);
    put_i(w, s->device);
    put_sn(w, g ? g->name : NULL);
    put_di(w, s->gpu_util_pct);
    put_di(w, s->mem_util_pct);
    put_di(w, s->mem_used_bytes);
    put_di(w, s->mem_free_bytes);
    put_di(w, s->mem_total_bytes);
    put_di(w, s->temp_gpu_c);
    put_di(w, s->temp_mem_c);
    put_di(w, s->power_mw);
    put_di(w, s->power_limit_mw);
    put_di(w, s->energy_mj);
    put_di(w, s->clock_sm_mhz);
    put_di(w, s->clock_gfx_mhz);
    put_di(w, s->clock_mem_mhz);
    put_di(w, s->fan_pct);
    put_di(w, s->pcie_tx_bytes_per_s);
    put_di(w, s->pcie_rx_bytes_per_s);
    put_di(w, s->nvlink_tx_bytes_per_s);
    put_di(w, s->nvlink_rx_bytes_per_s);
    put_di(w, s->ecc_sbe_volatile);
    put_di(w, s->ecc_dbe_volatile);
    put_dd(w, s->sm_active_pct);
    put_dd(w, s->sm_occupancy_pct);
    put_dd(w, s->tensor_active_pct);
    put_dd(w, s->dram_bw_util_pct);
    put_i(w, s->throttle_reasons);
}

static const gpufl__an_coldef_t host_defs[] = {{"ts_ns", I},
                                               {"cpu_pct", D},
                                               {"proc_cpu_pct", D},
                                               {"mem_used_bytes", D},
                                               {"mem_total_bytes", D},
                                               {"proc_rss_bytes", D},
                                               {"cg_cpu_pct", D},
                                               {"cg_cpu_limit_cores", D},
                                               {"cg_mem_used_bytes", D},
                                               {"cg_mem_limit_bytes", D}};

static void host_row(row_t *w) {
    const gpufl__model_host_sample_t *s = &w->a->m->samples[w->i];
    put_i(w, s->ts_ns);
    put_dd(w, s->cpu_pct);
    put_dd(w, s->proc_cpu_pct);
    put_di(w, s->mem_used_bytes);
    put_di(w, s->mem_total_bytes);
    put_di(w, s->proc_rss_bytes);
    put_dd(w, s->cg_cpu_pct);
    put_dd(w, s->cg_cpu_limit_cores);
    put_di(w, s->cg_mem_used_bytes);
    put_di(w, s->cg_mem_limit_bytes);
}

static const gpufl__an_coldef_t pc_defs[] = {
    {"t0_ns", I}, {"t1_ns", I}, {"context", I},    {"function", S}, {"mangled", S},
    {"cubin", S}, {"pc", I},    {"reason", S},     {"stall", I},    {"samples", I},
    {"file", S},  {"line", I},  {"instruction", S}};

static void pc_row(row_t *w) {
    const gpufl__model_pc_sample_t *p = &w->a->m->pc_samples[w->i];
    const gpufl__model_pc_reason_t *r =
        p->reason < w->a->m->n_pc_reasons ? &w->a->m->pc_reasons[p->reason] : NULL;
    put_i(w, p->t0_ns);
    put_i(w, p->t1_ns);
    put_i(w, p->context);
    put_function(w, p->demangled, p->function, p->cubin);
    put_i(w, p->pc);
    put_s(w, r ? r->short_name : NULL);
    put_i(w, r ? !r->issued : -1);
    put_i(w, p->samples);
    put_source(w, p->cubin, p->function, p->pc);
}

static const gpufl__an_coldef_t sass_metrics_defs[] = {
    {"ts_ns", I}, {"context", I}, {"function", S},    {"mangled", S}, {"cubin", S},
    {"pc", I},    {"inst", I},    {"thread_inst", I}, {"sectors", I}, {"sectors_ideal", I},
    {"file", S},  {"line", I},    {"instruction", S}};

static void sass_metrics_row(row_t *w) {
    const gpufl__model_sass_metric_t *s = &w->a->m->sass_metrics[w->i];
    put_i(w, s->ts_ns);
    put_i(w, s->context);
    put_function(w, s->demangled, s->function, s->cubin);
    put_i(w, s->pc);
    put_i(w, s->inst);
    put_i(w, s->thread_inst);
    put_i(w, s->sectors);
    put_i(w, s->sectors_ideal);
    put_source(w, s->cubin, s->function, s->pc);
}

static const gpufl__an_coldef_t insight_defs[] = {
    {"rule", S},  {"category", S}, {"severity", S}, {"severity_level", I},
    {"title", S}, {"message", S},  {"advice", S},   {"file", S},
    {"line", I},  {"function", S}, {"source", S},   {"kernel", S}};

static void insight_row(row_t *w) {
    const gpufl__insight_t *in = &w->a->report.insights.items[w->i];
    put_s(w, in->rule);
    put_s(w, in->category);
    put_s(w, gpufl_severity_name(in->severity));
    put_i(w, in->severity);
    put_sn(w, in->title);
    put_sn(w, in->message);
    put_sn(w, in->advice);
    put_sn(w, in->file);
    put_i(w, in->line > 0 ? in->line : -1);
    put_sn(w, in->function);
    put_sn(w, in->source);
    put_sn(w, in->kernel);
}

/* perf: the fixed columns, then one per metric name of the range_metrics
 * records (made by perf_defs, in the order first met). */
static const gpufl__an_coldef_t perf_fixed[] = {{"ts_ns", I},   {"start_ns", I}, {"context", I},
                                                {"scope", I},   {"path", S},     {"group", I},
                                                {"settling", I}};
#define PERF_FIXED    N_DEFS(perf_fixed)
#define PERF_COLS_MAX 1024 /* metric columns kept; CUPTI's list is far shorter */

static void perf_row(row_t *w) {
    const gpufl__model_range_t *g = &w->a->m->ranges[w->i];
    put_i(w, g->ts_ns);
    put_i(w, g->start_ns);
    put_i(w, g->context);
    put_i(w, g->scope);
    put_sn(w, g->path);
    put_i(w, g->group);
    put_i(w, g->settling != 0);
    while (w->c < w->t->ncols) {
        double v = NAN;
        json_t *x = json_object_get(g->metrics, w->t->defs[w->c].name);
        if (json_is_number(x)) v = json_number_value(x);
        put_d(w, v);
    }
}

static int perf_has(const gpufl__an_coldef_t *defs, size_t n, const char *name) {
    for (size_t i = PERF_FIXED; i < n; i++)
        if (strcmp(defs[i].name, name) == 0) return 1;
    return 0;
}

/* The columns of perf into *defs (the names belong to the model). */
static int perf_defs(const gpufl__model_t *m, gpufl__an_coldef_t **defs, size_t *n) {
    size_t cap = PERF_FIXED + PERF_COLS_MAX;
    gpufl__an_coldef_t *d = malloc(cap * sizeof *d);
    if (!d) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for table perf");
    memcpy(d, perf_fixed, sizeof perf_fixed);
    size_t k = PERF_FIXED;
    for (size_t i = 0; i < m->n_ranges; i++) {
        const char *name;
        json_t *v;
        json_object_foreach(m->ranges[i].metrics, name, v) {
            if (k < cap && !perf_has(d, k, name)) d[k++] = (gpufl__an_coldef_t){name, D};
        }
    }
    *defs = d;
    *n = k;
    return 0;
}

/* ---------------------------------------------------------------------- */

typedef struct table_spec {
    const gpufl__an_coldef_t *defs;
    size_t ncols;
    void (*row)(row_t *w);
} table_spec_t;

#define SPEC(defs, fn)                                                                             \
    { defs, N_DEFS(defs), fn }
static const table_spec_t specs[GPUFL_TABLE_COUNT] = {
    [GPUFL_TABLE_SESSION] = SPEC(session_defs, session_row),
    [GPUFL_TABLE_KERNELS] = SPEC(kernel_defs, kernel_row),
    [GPUFL_TABLE_COPIES] = SPEC(copy_defs, copy_row),
    [GPUFL_TABLE_MEMSETS] = SPEC(memset_defs, memset_row),
    [GPUFL_TABLE_SYNCS] = SPEC(sync_defs, sync_row),
    [GPUFL_TABLE_LAUNCHES] = SPEC(launch_defs, launch_row),
    [GPUFL_TABLE_SCOPES] = SPEC(scope_defs, scope_row),
    [GPUFL_TABLE_DEVICE_METRICS] = SPEC(device_defs, device_row),
    [GPUFL_TABLE_HOST_METRICS] = SPEC(host_defs, host_row),
    [GPUFL_TABLE_PC_SAMPLES] = SPEC(pc_defs, pc_row),
    [GPUFL_TABLE_SASS_METRICS] = SPEC(sass_metrics_defs, sass_metrics_row),
    [GPUFL_TABLE_INSIGHTS] = SPEC(insight_defs, insight_row),
    [GPUFL_TABLE_PERF] = SPEC(perf_fixed, perf_row), /* its columns: perf_defs */
};

/* How many rows table t has; the insights need the report. */
static int row_count(gpufl_analysis_t *a, gpufl_table_t t, size_t *n) {
    const gpufl__model_t *m = a->m;
    switch (t) {
    case GPUFL_TABLE_SESSION: *n = 1; return 0;
    case GPUFL_TABLE_KERNELS: *n = m->n_kernels; return 0;
    case GPUFL_TABLE_COPIES: *n = m->n_copies; return 0;
    case GPUFL_TABLE_MEMSETS: *n = m->n_memsets; return 0;
    case GPUFL_TABLE_SYNCS: *n = m->n_syncs; return 0;
    case GPUFL_TABLE_LAUNCHES: *n = m->n_launches; return 0;
    case GPUFL_TABLE_SCOPES: *n = m->n_scopes; return 0;
    case GPUFL_TABLE_DEVICE_METRICS: *n = m->n_gpu_samples; return 0;
    case GPUFL_TABLE_HOST_METRICS: *n = m->n_samples; return 0;
    case GPUFL_TABLE_PC_SAMPLES: *n = m->n_pc_samples; return 0;
    case GPUFL_TABLE_SASS_METRICS: *n = m->n_sass_metrics; return 0;
    case GPUFL_TABLE_PERF: *n = m->n_ranges; return 0;
    case GPUFL_TABLE_INSIGHTS: {
        int rc = gpufl__analysis_report_built(a);
        *n = rc ? 0 : a->report.insights.n;
        return rc;
    }
    case GPUFL_TABLE_COUNT: break;
    }
    return gpufl__set_error(GPUFL_EINVAL, "no such table: %d", (int)t);
}

void gpufl__analysis_table_free(gpufl__an_table_t *t) {
    for (size_t c = 0; t->data && c < t->ncols; c++) free(t->data[c]);
    free(t->data);
    free(t->owned_defs);
    memset(t, 0, sizeof *t);
}

int gpufl__analysis_table_build(gpufl_analysis_t *a, gpufl_table_t t) {
    size_t n = 0;
    int rc = row_count(a, t, &n);
    if (rc || (unsigned)t >= GPUFL_TABLE_COUNT) return rc; /* row_count said which */
    gpufl__an_table_t *tb = &a->tables[t];
    const table_spec_t *spec = &specs[t];
    const gpufl__an_coldef_t *defs = spec->defs;
    size_t ncols = spec->ncols;
    if (t == GPUFL_TABLE_PERF) {
        if ((rc = perf_defs(a->m, &tb->owned_defs, &ncols))) return rc;
        defs = tb->owned_defs;
    }
    if (alloc_table(tb, defs, ncols, n)) {
        gpufl__analysis_table_free(tb);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for table %s (%zu rows)",
                                gpufl_table_name(t), n);
    }
    row_t w = {a, tb, 0, ncols};
    for (size_t i = 0; i < n; i++) {
        w.i = i;
        w.c = 0;
        spec->row(&w);
    }
    if (w.c != ncols || a->str_failed) {
        rc = a->str_failed
                 ? gpufl__set_error(GPUFL_ENOMEM,
                                    "out of memory for the strings of "
                                    "table %s",
                                    gpufl_table_name(t))
                 : gpufl__set_error(GPUFL_EINVAL, "table %s: %zu columns written, not %zu",
                                    gpufl_table_name(t), w.c, ncols);
        a->str_failed = 0;
        gpufl__analysis_table_free(tb);
        return rc;
    }
    tb->built = 1;
    return 0;
}
