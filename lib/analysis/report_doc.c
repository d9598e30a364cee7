// SPDX-License-Identifier: Apache-2.0
/*
 * report_doc.c - the report's sections as headings, field lists and tables,
 * written once for Markdown and HTML through the emitter each provides
 * (report_md.c, report_html.c). The numbers come from report_data.c; here
 * they only become human units (the same as the text report's).
 */
#include "analysis/report.h"

#include "util/error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define cat       gpufl__report_cat
#define fmt_ns    gpufl__report_fmt_ns
#define fmt_bytes gpufl__report_fmt_bytes
#define fmt_pct   gpufl__report_fmt_pct

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

/* printf into buf (of size), cut at the end. */
static const char *f(char *buf, size_t size, const char *fmt, ...) GPUFL__PRINTF(3, 4);
static const char *f(char *buf, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return buf;
}

/* ---------------------------------------------------------------------- */
/* Summary                                                                  */
/* ---------------------------------------------------------------------- */

static void cap_value(char *buf, size_t size, const gpufl__report_cap_t *c) {
    size_t n = 0;
    buf[0] = '\0';
    cat(buf, size, &n, "asked %s, running %s", c->requested ? c->requested : "?",
        c->running ? c->running : "?");
    if (c->reason) cat(buf, size, &n, ": %s", c->reason);
}

static void summary(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    const gpufl__report_summary_t *s = &r->summary;
    char v[1024], num[48];
    size_t n = 0;
    FILE *o = e->out;
    e->heading(o, 2, "Session");
    e->fields_begin(o);
    e->field(o, "app", s->app);
    e->field(o, "session id", s->session_id);
    v[0] = '\0';
    cat(v, sizeof v, &n, "%s", s->hostname);
    if (s->cpu_count >= 0) cat(v, sizeof v, &n, ", %lld CPUs", (long long)s->cpu_count);
    if (s->mem_total_bytes >= 0) {
        fmt_bytes(num, sizeof num, (double)s->mem_total_bytes);
        cat(v, sizeof v, &n, ", %s memory", num);
    }
    if (s->kernel_release) cat(v, sizeof v, &n, ", Linux %s", s->kernel_release);
    if (s->cgroup_version > 0) cat(v, sizeof v, &n, ", cgroup v%lld", (long long)s->cgroup_version);
    e->field(o, "host", v);
    e->field(o, "pid", s->pid >= 0 ? f(v, sizeof v, "%lld", (long long)s->pid) : "?");
    e->field(o, "gpufl version", s->gpufl_version);
    time_t secs = (time_t)(s->start_unix_us / 1000000);
    struct tm tm;
    if (s->start_unix_us >= 0 && gmtime_r(&secs, &tm))
        e->field(o, "started",
                 f(v, sizeof v, "%04d-%02d-%02d %02d:%02d:%02d.%03d UTC", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                   (int)(s->start_unix_us % 1000000 / 1000)));
    else
        e->field(o, "started", "?");
    fmt_ns(num, sizeof num, (double)s->duration_ns);
    e->field(o, "duration",
             s->ended ? num : f(v, sizeof v, "%s (no session_end: still running or killed)", num));
    if (s->has_caps) {
        cap_value(v, sizeof v, &s->backend);
        e->field(o, "backend", v);
        cap_value(v, sizeof v, &s->engine);
        e->field(o, "engine", v);
        n = 0;
        v[0] = '\0';
        for (size_t i = 0; i < s->n_features; i++)
            if (s->features[i].on) cat(v, sizeof v, &n, "%s%s", n ? ", " : "", s->features[i].name);
        if (n) e->field(o, "features on", v);
        for (size_t i = 0; i < s->n_features; i++) {
            if (s->features[i].on) continue;
            e->field(o, "feature off",
                     f(v, sizeof v, "%s%s%s", s->features[i].name,
                       s->features[i].reason ? ": " : "",
                       s->features[i].reason ? s->features[i].reason : ""));
        }
    } else {
        e->field(o, "engine", "? (no capabilities record)");
    }
    n = 0;
    v[0] = '\0';
    cat(v, sizeof v, &n,
        "%zu scope%s (%zu open), %zu host sample%s, %zu system window%s, %zu event%s", m->n_scopes,
        plural(m->n_scopes), m->n_open_scopes, m->n_samples, plural(m->n_samples), s->window_starts,
        plural(s->window_starts), m->n_events, plural(m->n_events));
    if (m->n_gpu_samples || m->n_gpus)
        cat(v, sizeof v, &n, ", %zu GPU sample%s (%zu device%s)", m->n_gpu_samples,
            plural(m->n_gpu_samples), m->n_gpus, plural(m->n_gpus));
    if (m->n_kernels || m->n_copies || m->n_memsets)
        cat(v, sizeof v, &n, ", %zu kernel%s, %zu cop%s, %zu memset%s", m->n_kernels,
            plural(m->n_kernels), m->n_copies, m->n_copies == 1 ? "y" : "ies", m->n_memsets,
            plural(m->n_memsets));
    if (m->n_launches)
        cat(v, sizeof v, &n, ", %zu launch%s", m->n_launches, m->n_launches == 1 ? "" : "es");
    e->field(o, "records", v);
    n = 0;
    v[0] = '\0';
    for (size_t i = 0; i < s->n_drops; i++)
        cat(v, sizeof v, &n, "%s%s %lld", n ? ", " : "", s->drops[i].name,
            (long long)s->drops[i].count);
    e->field(o, "drops", n ? v : "no records dropped");
    e->field(o, "warnings",
             s->warn_events ? f(v, sizeof v, "%zu recorded", s->warn_events) : "none recorded");
    for (size_t i = 0; i < s->warn_events && i < GPUFL_REPORT_LIST_MAX; i++) {
        const gpufl__model_event_t *ev = &m->events[s->warn_order[i]];
        fmt_ns(num, sizeof num, (double)ev->ts_ns);
        e->field(o, "",
                 f(v, sizeof v, "at %s: %s %s: %s", num, ev->level_name,
                   ev->code && *ev->code ? ev->code : "?", ev->message));
    }
    if (s->warn_events > GPUFL_REPORT_LIST_MAX)
        e->field(o, "", f(v, sizeof v, "... and %zu more", s->warn_events - GPUFL_REPORT_LIST_MAX));
    e->field(o, "log lines",
             f(v, sizeof v, "%llu lines in %u file%s", (unsigned long long)m->read.lines,
               s->log_files, plural(s->log_files)));
    e->field(o, "log problems",
             s->problems ? f(v, sizeof v, "%zu (listed at the end)", s->problems) : "none");
    for (size_t i = 0; i < s->n_damage; i++) e->field(o, "", s->damage[i]);
    e->fields_end(o);
}

/* ---------------------------------------------------------------------- */
/* Insights                                                                 */
/* ---------------------------------------------------------------------- */

static void insights(const gpufl__report_emitter_t *e, const gpufl__insights_t *ins) {
    FILE *o = e->out;
    char v[2048], num[48];
    e->heading(o, 2, "Insights");
    if (!ins->n) e->para(o, "No findings");
    for (size_t i = 0; i < ins->n; i++) {
        const gpufl__insight_t *in = &ins->items[i];
        e->heading(o, 3,
                   f(v, sizeof v, "[%s] %s: %s", gpufl_severity_name(in->severity), in->category,
                     in->title ? in->title : in->rule));
        e->fields_begin(o);
        e->field(o, "rule", in->rule);
        if (in->message) e->field(o, "found", in->message);
        if (in->advice) e->field(o, "advice", in->advice);
        if (in->file || in->function) {
            size_t n = 0;
            v[0] = '\0';
            cat(v, sizeof v, &n, "%s", in->file ? in->file : "?");
            if (in->line > 0) cat(v, sizeof v, &n, ":%lld", (long long)in->line);
            if (in->function) cat(v, sizeof v, &n, " in %s", in->function);
            e->field(o, "location", v);
            if (in->source) e->field(o, "source", in->source);
        }
        if (in->kernel) e->field(o, "kernel", in->kernel);
        for (size_t k = 0; k < in->n_evidence; k++) {
            gpufl__report_fmt_evidence(num, sizeof num, in->evidence[k].value,
                                       in->evidence[k].unit);
            e->field(o, in->evidence[k].name, num);
        }
        e->fields_end(o);
    }
    if (ins->n_skipped) {
        e->para(o, "Not judged (the session lacks what these rules need):");
        e->fields_begin(o);
        for (size_t i = 0; i < ins->n_skipped; i++)
            e->field(o, ins->skipped[i].rule, ins->skipped[i].why);
        e->fields_end(o);
    }
}

/* ---------------------------------------------------------------------- */
/* Scopes and system                                                        */
/* ---------------------------------------------------------------------- */

/* A tree label: "· · name" for depth 2 (indentation survives both formats). */
static const char *tree_label(char *buf, size_t size, size_t depth, const char *name) {
    size_t n = 0;
    buf[0] = '\0';
    for (size_t d = 0; d < depth && d < 20; d++) cat(buf, size, &n, "\xc2\xb7 ");
    cat(buf, size, &n, "%s", name);
    return buf;
}

/* The open scopes, as the text report lists them: the first ones, then how
 * many more. */
static void open_scopes(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    static const char *const heads[] = {"scope", "thread", "begun at", "tag"};
    const gpufl__report_scopes_t *sc = &r->scopes;
    FILE *o = e->out;
    char v[128];
    e->para(o, f(v, sizeof v, "Open scopes (begun, never ended: still running or killed): %zu",
                 r->m->n_open_scopes));
    e->table_begin(o, 4, heads, "lrrl");
    for (size_t i = 0; i < sc->n_open; i++) {
        const gpufl__model_scope_t *s = sc->open[i];
        char tid[24], at[32], tag[GPUFL_REPORT_TAG_CELL];
        const char *cells[4] = {s->path, tid, at, tag};
        snprintf(tid, sizeof tid, "%lld", (long long)s->tid);
        fmt_ns(at, sizeof at, (double)s->begin_ns);
        gpufl__report_fmt_tags(tag, sizeof tag, &s->tag, *s->tag != '\0');
        e->row(o, 4, cells);
    }
    e->table_end(o);
    if (r->m->n_open_scopes > sc->n_open)
        e->para(o, f(v, sizeof v, "... and %zu more", r->m->n_open_scopes - sc->n_open));
}

static void scopes(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    FILE *o = e->out;
    const gpufl__report_scopes_t *sc = &r->scopes;
    char v[512];
    e->heading(o, 2, "Scope timing");
    if (!sc->n_rows) {
        e->para(o, *sc->lost ? sc->lost : "no scopes recorded");
        return;
    }
    e->para(o,
            f(v, sizeof v, "%zu scope path%s, %zu call%s ended, %zu open; wall time per scope path",
              sc->n_rows, plural(sc->n_rows), sc->closed, plural(sc->closed), r->m->n_open_scopes));
    static const char *const heads[] = {"scope", "calls", "open",     "total", "avg",
                                        "min",   "max",   "per iter", "tags"};
    e->table_begin(o, 9, heads, "lrrrrrrrl");
    for (size_t i = 0; i < sc->n_rows; i++) {
        const gpufl__report_scope_row_t *row = &sc->rows[i];
        const gpufl__model_scope_path_t *p = row->path;
        char c[9][256];
        const char *cp[9];
        for (int k = 0; k < 9; k++) cp[k] = c[k], snprintf(c[k], sizeof c[k], "-");
        char shown[512];
        tree_label(c[0], sizeof c[0], p->depth, gpufl__report_scope_label(p, shown, sizeof shown));
        gpufl__report_fmt_calls(c[1], sizeof c[1], p);
        if (p->open) snprintf(c[2], sizeof c[2], "%zu", p->open);
        if (p->calls) {
            fmt_ns(c[3], sizeof c[3], p->total_ns);
            fmt_ns(c[4], sizeof c[4], row->avg_ns);
            fmt_ns(c[5], sizeof c[5], p->min_ns);
            fmt_ns(c[6], sizeof c[6], p->max_ns);
        }
        if (row->per_iter_ns >= 0) fmt_ns(c[7], sizeof c[7], row->per_iter_ns);
        gpufl__report_fmt_tags(c[8], sizeof c[8], row->tags, row->n_tags);
        e->row(o, 9, cp);
    }
    e->table_end(o);
    if (sc->implicit)
        e->para(o, f(v, sizeof v, "%zu scope%s closed implicitly (an enclosing scope ended first)",
                     sc->implicit, sc->implicit == 1 ? " was" : "s were"));
    if (*sc->lost) e->para(o, sc->lost);
    if (r->m->n_open_scopes) open_scopes(e, r);
}

typedef void (*fmt_fn)(char *, size_t, double);

static void fmt_plain(char *buf, size_t size, double v) { snprintf(buf, size, "%.2f", v); }
static void fmt_mhz(char *buf, size_t size, double v) { snprintf(buf, size, "%.0f MHz", v); }
static void fmt_celsius(char *buf, size_t size, double v) {
    snprintf(buf, size,
             "%.1f \xc2\xb0"
             "C",
             v);
}
static void fmt_watts(char *buf, size_t size, double mw) {
    gpufl__report_fmt_si(buf, size, mw / 1000, "W");
}
static void fmt_rate(char *buf, size_t size, double v) {
    char num[32];
    fmt_bytes(num, sizeof num, v);
    snprintf(buf, size, "%.24s/s", num);
}

/* One row of a metric table: name, avg, min, max, samples. */
/* why: appended to a partial sample count ("5 of 27: a figure needs 90 ms"), or NULL. */
static void stat_row(const gpufl__report_emitter_t *e, const char *name,
                     const gpufl__report_stat_t *s, size_t total, fmt_fn fmt, const char *why) {
    if (!s->n) return;
    char c[5][64];
    const char *cp[5] = {name, c[1], c[2], c[3], c[4]};
    fmt(c[1], sizeof c[1], s->sum / (double)s->n);
    fmt(c[2], sizeof c[2], s->min);
    fmt(c[3], sizeof c[3], s->max);
    if (s->n < total && why && *why)
        snprintf(c[4], sizeof c[4], "%zu of %zu: %s", s->n, total, why);
    else if (s->n < total)
        snprintf(c[4], sizeof c[4], "%zu of %zu", s->n, total);
    else
        snprintf(c[4], sizeof c[4], "%zu", s->n);
    e->row(e->out, 5, cp);
}

static const char *const stat_heads[] = {"metric", "avg", "min", "max", "samples"};

static int is_cpu_figure(int st) {
    return st == GPUFL_RH_CPU || st == GPUFL_RH_PROC_CPU || st == GPUFL_RH_CG_CPU;
}

static void system_metrics(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    static const struct {
        int st;
        const char *name;
        fmt_fn fmt;
    } rows[] = {{GPUFL_RH_CPU, "host CPU", gpufl__report_fmt_pct},
                {GPUFL_RH_PROC_CPU, "process CPU (of one CPU)", gpufl__report_fmt_pct},
                {GPUFL_RH_MEM_USED, "host memory used", gpufl__report_fmt_bytes},
                {GPUFL_RH_MEM_TOTAL, "host memory total", gpufl__report_fmt_bytes},
                {GPUFL_RH_RSS, "process RSS", gpufl__report_fmt_bytes},
                {GPUFL_RH_CG_MEM, "cgroup memory used", gpufl__report_fmt_bytes},
                {GPUFL_RH_CG_LIMIT, "cgroup memory limit", gpufl__report_fmt_bytes},
                {GPUFL_RH_CG_CPU, "cgroup CPU (of one CPU)", gpufl__report_fmt_pct},
                {GPUFL_RH_CG_CORES, "cgroup CPU limit (cores)", fmt_plain}};
    const gpufl__report_system_t *s = &r->system;
    FILE *o = e->out;
    char v[1024], a[32], b[32];
    e->heading(o, 2, "System metrics");
    if (!s->n) {
        e->para(o, "no samples (system_sample_rate_ms is 0 or no sampling window was open)");
    } else {
        fmt_ns(a, sizeof a, (double)s->first_ts_ns);
        fmt_ns(b, sizeof b, (double)s->last_ts_ns);
        e->para(o, f(v, sizeof v, "%zu host sample%s from %s to %s", s->n, plural(s->n), a, b));
        e->table_begin(o, 5, stat_heads, "lrrrr");
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            stat_row(e, rows[i].name, &s->st[rows[i].st], s->n, rows[i].fmt,
                     s->period_below_min && is_cpu_figure(rows[i].st) ? s->cpu_why : NULL);
        e->table_end(o);
        if (*s->cpu_none) e->para(o, f(v, sizeof v, "CPU figures: %s", s->cpu_none));
    }
    if (r->m->n_windows) {
        size_t n = 0;
        v[0] = '\0';
        cat(v, sizeof v, &n, "windows: %zu started, %zu stopped:", r->summary.window_starts,
            r->summary.window_stops);
        for (size_t i = 0; i < s->n_window_names && i < GPUFL_REPORT_LIST_MAX; i++)
            cat(v, sizeof v, &n, "%s %s", i ? "," : "",
                s->window_names[i] && *s->window_names[i] ? s->window_names[i] : "?");
        if (s->n_window_names > GPUFL_REPORT_LIST_MAX) cat(v, sizeof v, &n, " ...");
        e->para(o, v);
    }
}

/* ---------------------------------------------------------------------- */
/* GPU devices                                                              */
/* ---------------------------------------------------------------------- */

static void gpu_device(const gpufl__report_emitter_t *e, const gpufl__report_t *r,
                       const gpufl__report_gpu_t *a) {
    static const struct {
        int st;
        const char *name;
        fmt_fn fmt;
    } rows[] = {{GPUFL_RG_UTIL, "GPU util", gpufl__report_fmt_pct},
                {GPUFL_RG_MEM_UTIL, "memory util", gpufl__report_fmt_pct},
                {GPUFL_RG_MEM_USED, "memory used", gpufl__report_fmt_bytes},
                {GPUFL_RG_TEMP_GPU, "GPU temperature", fmt_celsius},
                {GPUFL_RG_TEMP_MEM, "memory temperature", fmt_celsius},
                {GPUFL_RG_POWER, "power", fmt_watts},
                {GPUFL_RG_CLOCK_SM, "SM clock", fmt_mhz},
                {GPUFL_RG_CLOCK_MEM, "memory clock", fmt_mhz},
                {GPUFL_RG_FAN, "fan", gpufl__report_fmt_pct},
                {GPUFL_RG_PCIE_TX, "PCIe TX", fmt_rate},
                {GPUFL_RG_PCIE_RX, "PCIe RX", fmt_rate},
                {GPUFL_RG_NVLINK_TX, "NVLink TX", fmt_rate},
                {GPUFL_RG_NVLINK_RX, "NVLink RX", fmt_rate},
                {GPUFL_RG_SM_ACTIVE, "GPM SM active", gpufl__report_fmt_pct},
                {GPUFL_RG_SM_OCCUPANCY, "GPM SM occupancy", gpufl__report_fmt_pct},
                {GPUFL_RG_TENSOR, "GPM tensor active", gpufl__report_fmt_pct},
                {GPUFL_RG_DRAM_BW, "GPM DRAM bandwidth", gpufl__report_fmt_pct}};
    const gpufl__model_gpu_t *g = a->gpu;
    FILE *o = e->out;
    char v[1024], num[48], t1[32], t2[32];
    size_t n = 0;
    e->heading(o, 3,
               f(v, sizeof v, "GPU %lld: %s", (long long)g->device,
                 g->has_info ? (*g->name ? g->name : "?") : "(no gpu_info record)"));
    e->fields_begin(o);
    if (*g->uuid) e->field(o, "uuid", g->uuid);
    if (*g->pci_bus_id) e->field(o, "PCI bus id", g->pci_bus_id);
    v[0] = '\0';
    if (*g->compute_capability) cat(v, sizeof v, &n, "%s", g->compute_capability);
    if (g->sm_count >= 0) cat(v, sizeof v, &n, "%s%lld SMs", n ? ", " : "", (long long)g->sm_count);
    if (a->mem_total_bytes >= 0) {
        fmt_bytes(num, sizeof num, a->mem_total_bytes);
        cat(v, sizeof v, &n, "%s%s memory", n ? ", " : "", num);
    }
    if (n) e->field(o, "compute capability", v);
    if (*g->driver_version) e->field(o, "driver", g->driver_version);
    if (a->n) {
        fmt_ns(t1, sizeof t1, (double)a->first_ts_ns);
        fmt_ns(t2, sizeof t2, (double)a->last_ts_ns);
        e->field(o, "samples", f(v, sizeof v, "%zu from %s to %s", a->n, t1, t2));
    } else {
        e->field(o, "samples", "none");
    }
    if (a->power_limit_mw > 0) {
        fmt_watts(num, sizeof num, a->power_limit_mw);
        e->field(o, "power limit", num);
    }
    if (a->throttle_n) {
        n = 0;
        v[0] = '\0';
        for (size_t i = 0; i < a->n_shares; i++) {
            const char *name = r->m->throttle_names[a->shares[i].bit];
            double pct = 100.0 * (double)a->shares[i].n / (double)a->throttle_n;
            if (name)
                cat(v, sizeof v, &n, "%s%s %.1f%%", i ? ", " : "", name, pct);
            else
                cat(v, sizeof v, &n, "%sbit %d %.1f%%", i ? ", " : "", a->shares[i].bit, pct);
        }
        e->field(o, "throttle reasons (share of samples)", n ? v : "none");
        if (r->idle_bit >= 0)
            e->field(o, "idle",
                     f(v, sizeof v, "%.1f%% of samples",
                       100.0 * (double)a->bit_n[r->idle_bit] / (double)a->throttle_n));
    }
    if (a->sbe.n || a->dbe.n)
        e->field(o, "ECC errors since boot",
                 f(v, sizeof v, "%lld corrected, %lld uncorrected",
                   (long long)(a->sbe.n ? a->sbe.last : 0),
                   (long long)(a->dbe.n ? a->dbe.last : 0)));
    if (g->procs_records)
        e->field(o, "processes",
                 f(v, sizeof v, "peak %lld, last %lld", (long long)g->procs_peak,
                   (long long)g->procs_count));
    e->fields_end(o);
    if (!a->n) return;
    e->table_begin(o, 5, stat_heads, "lrrrr");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        stat_row(e, rows[i].name, &a->st[rows[i].st], a->n, rows[i].fmt, NULL);
    e->table_end(o);
}

static void gpus(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    FILE *o = e->out;
    char v[1024], num[32];
    if (!r->m->n_gpus) {
        e->heading(o, 2, "GPU");
        e->para(o, r->no_gpu_reason
                       ? f(v, sizeof v, "no GPU activity recorded (%s)", r->no_gpu_reason)
                       : "no GPU records found");
    } else {
        e->heading(o, 2, "GPU devices");
        e->para(o, f(v, sizeof v, "%zu device%s, %zu GPU sample%s", r->m->n_gpus,
                     plural(r->m->n_gpus), r->m->n_gpu_samples, plural(r->m->n_gpu_samples)));
        for (size_t i = 0; i < r->m->n_gpus; i++) gpu_device(e, r, &r->gpus[i]);
    }
    if (r->n_costs) {
        size_t n = 0;
        v[0] = '\0';
        cat(v, sizeof v, &n, "sampling cost:");
        for (size_t i = 0; i < r->n_costs; i++) {
            fmt_ns(num, sizeof num, r->costs[i].mean_ns);
            cat(v, sizeof v, &n, "%s %s %s%s", i ? "," : "",
                r->costs[i].is_nvml ? "NVML" : r->costs[i].source, num,
                r->costs[i].is_nvml ? " per device and sample" : "");
        }
        e->para(o, v);
    }
}

/* ---------------------------------------------------------------------- */
/* Trace engine sections                                                    */
/* ---------------------------------------------------------------------- */

static void hotspots(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    FILE *o = e->out;
    char v[256];
    if (r->untimed) {
        e->heading(o, 2, "Kernel hotspots");
        e->para(o, GPUFL_REPORT_UNTIMED);
    }
    if (!r->m->n_kernels) return;
    size_t shown = gpufl__report_top(r, r->n_kgroups);
    e->heading(o, 2, "Kernel hotspots");
    fmt_ns(v, sizeof v, r->kernel_ns);
    char line[512];
    e->para(o, f(line, sizeof line,
                 "%zu kernel%s, %zu distinct name%s, %s GPU time; top %zu by total GPU time "
                 "(p50, p99: exact order statistics)",
                 r->m->n_kernels, plural(r->m->n_kernels), r->n_kgroups, plural(r->n_kgroups), v,
                 shown));
    static const char *const heads[] = {"kernel", "calls", "total", "avg",  "min",
                                        "max",    "p50",   "p99",   "share"};
    e->table_begin(o, 9, heads, "lrrrrrrrr");
    for (size_t i = 0; i < shown; i++) {
        const gpufl__report_kgroup_t *g = &r->kgroups[i];
        char c[9][32];
        const char *cp[9] = {g->name, c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]};
        snprintf(c[1], sizeof c[1], "%zu", g->calls);
        fmt_ns(c[2], sizeof c[2], g->total_ns);
        fmt_ns(c[3], sizeof c[3], g->total_ns / (double)g->calls);
        fmt_ns(c[4], sizeof c[4], (double)g->min_ns);
        fmt_ns(c[5], sizeof c[5], (double)g->max_ns);
        fmt_ns(c[6], sizeof c[6], (double)g->p50_ns);
        fmt_ns(c[7], sizeof c[7], (double)g->p99_ns);
        fmt_pct(c[8], sizeof c[8], r->kernel_ns > 0 ? 100.0 * g->total_ns / r->kernel_ns : 0);
        e->row(o, 9, cp);
    }
    e->table_end(o);
    if (r->n_kgroups > shown)
        e->para(o, f(v, sizeof v, "... and %zu more name%s", r->n_kgroups - shown,
                     plural(r->n_kgroups - shown)));
}

/* Launch rows (PcSampling, Deep): launches per kernel and configuration. */
static void launches(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    FILE *o = e->out;
    char v[512];
    if (!r->n_lgroups) return;
    size_t n = r->m->n_launches;
    size_t shown = gpufl__report_top(r, r->n_lgroups);
    e->heading(o, 2, "Kernel launches");
    e->para(o, f(v, sizeof v,
                 "%zu launch%s of %zu kernel%s (launch rows: host launch calls, no GPU time); top "
                 "%zu by launches. config: kernel_config id; scopes: scope paths launched in; "
                 "block: threads per block; regs: per thread; smem: per block, static+dynamic; "
                 "occupancy: theoretical; grid: not recorded",
                 n, n == 1 ? "" : "es", r->launch_names, plural(r->launch_names), shown));
    static const char *const heads[] = {"kernel", "config", "launches",  "scopes", "block",
                                        "regs",   "smem",   "occupancy", "limiter"};
    e->table_begin(o, 9, heads, "lrrrrrrrl");
    for (size_t i = 0; i < shown; i++) {
        char c[GPUFL_REPORT_LGROUP_CELLS][GPUFL_REPORT_KCONF_CELL_BYTES];
        const char *cp[GPUFL_REPORT_LGROUP_CELLS + 1] = {r->lgroups[i].name};
        gpufl__report_lgroup_cells(&r->lgroups[i], c);
        for (int k = 0; k < GPUFL_REPORT_LGROUP_CELLS; k++) cp[k + 1] = c[k];
        e->row(o, GPUFL_REPORT_LGROUP_CELLS + 1, cp);
    }
    e->table_end(o);
    if (r->n_lgroups > shown)
        e->para(o, f(v, sizeof v, "... and %zu more configuration%s", r->n_lgroups - shown,
                     plural(r->n_lgroups - shown)));
    if (r->launches_without_config)
        e->para(o, f(v, sizeof v, "%zu launch%s without a kernel_config record",
                     r->launches_without_config, r->launches_without_config == 1 ? "" : "es"));
}

static void kconf_row(const gpufl__report_emitter_t *e, const gpufl__report_kconf_t *c) {
    char v[GPUFL_REPORT_KCONF_CELLS][GPUFL_REPORT_KCONF_CELL_BYTES];
    const char *cp[GPUFL_REPORT_KCONF_CELLS + 1] = {"\xc2\xb7"};
    gpufl__report_kconf_cells(c, " (disagrees)", v);
    for (int i = 0; i < GPUFL_REPORT_KCONF_CELLS; i++) cp[i + 1] = v[i];
    e->row(e->out, GPUFL_REPORT_KCONF_CELLS + 1, cp);
}

static void details(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    FILE *o = e->out;
    char v[512], t[32];
    if (!r->m->n_kernels) return;
    e->heading(o, 2, "Kernel details");
    e->para(o,
            f(v, sizeof v,
              "%zu kernel name%s, %zu launch configuration%s, %zu launch%s without one; by total "
              "GPU time. regs: per thread; smem: per block; local: per thread (spills); "
              "occupancy: theoretical, active/max warps per SM; limits: blocks per SM that "
              "warps, registers, shared memory and the block limit allow",
              r->kernel_names, plural(r->kernel_names), r->configs, plural(r->configs),
              r->unconfigured, r->unconfigured == 1 ? "" : "es"));
    static const char *const heads[] = {
        "kernel",          "config", "calls",     "total", "grid",           "block",  "regs",
        "smem static+dyn", "local",  "occupancy", "warps", "limits w/r/s/b", "limiter"};
    e->table_begin(o, 13, heads, "lrrrrrrrrrrrl");
    size_t shown = 0;
    const gpufl__report_kconf_t *g = r->kconfs;
    size_t top = gpufl__report_top(r, r->kernel_names);
    for (size_t i = 0, j; i < r->n_kconfs && shown < top; i = j, shown++) {
        for (j = i; j < r->n_kconfs && g[j].rank == g[i].rank; j++) {
        }
        char calls[32];
        const char *cp[13] = {g[i].name, "", calls, t, "", "", "", "", "", "", "", "", ""};
        snprintf(calls, sizeof calls, "%zu", g[i].name_calls);
        fmt_ns(t, sizeof t, g[i].name_total_ns);
        e->row(o, 13, cp);
        for (size_t k = i; k < j && k < i + GPUFL_REPORT_CONFIGS_MAX; k++) kconf_row(e, &g[k]);
    }
    e->table_end(o);
    if (r->kernel_names > shown)
        e->para(o, f(v, sizeof v, "... and %zu more kernel name%s", r->kernel_names - shown,
                     plural(r->kernel_names - shown)));
}

static void transfers(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    FILE *o = e->out;
    char v[256], b[32];
    if (!r->m->n_copies) return;
    e->heading(o, 2, "Memory transfers");
    fmt_bytes(b, sizeof b, r->copy_bytes);
    e->para(o, f(v, sizeof v, "%zu cop%s, %s; bandwidth: bytes / total time", r->m->n_copies,
                 r->m->n_copies == 1 ? "y" : "ies", b));
    static const char *const heads[] = {"direction", "count",    "bytes", "time",
                                        "bandwidth", "pageable", "pinned"};
    e->table_begin(o, 7, heads, "lrrrrrr");
    for (int d = 0; d < GPUFL_REPORT_DIR_COUNT; d++) {
        const gpufl__report_dir_t *a = &r->dirs[d];
        if (!a->count) continue;
        char c[7][32];
        const char *cp[7] = {gpufl__report_dir_name(d), c[1], c[2], c[3], c[4], c[5], c[6]};
        snprintf(c[1], sizeof c[1], "%zu", a->count);
        fmt_bytes(c[2], sizeof c[2], a->bytes);
        fmt_ns(c[3], sizeof c[3], a->time_ns);
        if (a->time_ns > 0) {
            char num[20];
            gpufl__report_sig3(num, sizeof num, a->bytes / (a->time_ns / 1e9) / 1073741824.0);
            snprintf(c[4], sizeof c[4], "%s GiB/s", num);
        } else {
            snprintf(c[4], sizeof c[4], "-");
        }
        int host = d == GPUFL_REPORT_DIR_HTOD || d == GPUFL_REPORT_DIR_DTOH;
        snprintf(c[5], sizeof c[5], host ? "%zu" : "-", a->pageable);
        snprintf(c[6], sizeof c[6], host ? "%zu" : "-", a->pinned);
        e->row(o, 7, cp);
    }
    e->table_end(o);
}

static void scope_gpu_row(const gpufl__report_emitter_t *e, const char *label, double host,
                          const gpufl__model_scope_gpu_t *g) {
    char h[32], t[32], s[32], work[128], top[1024];
    size_t n = 0;
    const char *cp[6] = {label, h, t, s, work, top};
    if (host >= 0)
        fmt_ns(h, sizeof h, host);
    else
        snprintf(h, sizeof h, "-");
    fmt_ns(t, sizeof t, gpufl__model_gpu_ns(&g->total));
    fmt_ns(s, sizeof s, gpufl__model_gpu_ns(&g->self));
    snprintf(work, sizeof work, "%llu kernels, %llu copies, %llu memsets",
             (unsigned long long)g->total.kernels, (unsigned long long)g->total.copies,
             (unsigned long long)g->total.memsets);
    top[0] = '\0';
    for (size_t i = 0; i < g->n_top; i++) {
        char kt[32];
        fmt_ns(kt, sizeof kt, g->top[i].total_ns);
        cat(top, sizeof top, &n, "%s%s (%s, %llu call%s)", i ? "; " : "", g->top[i].name, kt,
            (unsigned long long)g->top[i].calls, plural((size_t)g->top[i].calls));
    }
    if (g->kernel_names > g->n_top)
        cat(top, sizeof top, &n, "; ... and %zu more", g->kernel_names - g->n_top);
    if (!n) snprintf(top, sizeof top, "-");
    e->row(e->out, 6, cp);
}

static int has_work(const gpufl__model_gpu_work_t *w) {
    return w->kernels + w->copies + w->memsets > 0;
}

static void scope_gpu(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    FILE *o = e->out;
    char v[512], a[32], b[32], label[512];
    if (!r->scope_gpu_shown) return;
    e->heading(o, 2, "GPU time per scope");
    if (!m->gpu_scoped_rows) {
        e->para(o, "no kernel, copy or memset names a scope (none was open at a launch, or the "
                   "log's Trace engine does not attribute work to scopes)");
        return;
    }
    fmt_ns(a, sizeof a, r->gpu_in_scopes_ns);
    fmt_ns(b, sizeof b, r->gpu_all_ns);
    e->para(o, f(v, sizeof v,
                 "%s of %s GPU time (kernels, copies, memsets) ran in scopes. host: wall time of "
                 "all calls; gpu: GPU time of the work launched in the scope and in the scopes "
                 "inside it; self: in the scope alone",
                 a, b));
    if (r->scope_gpu_start_end)
        e->para(o, "[nvtx start/end]: the work launched while the range was open, by any "
                   "thread; it also counts where it was launched (not in the sum above)");
    if (r->unattributed > 0)
        e->para(o, f(v, sizeof v, "%lld record%s without a launch note count under (no scope)",
                     (long long)r->unattributed, r->unattributed == 1 ? "" : "s"));
    static const char *const heads[] = {"scope", "host", "gpu", "self", "work", "top kernels"};
    e->table_begin(o, 6, heads, "lrrrll");
    for (size_t i = 0; i < r->n_scope_gpu_rows; i++) {
        const gpufl__model_scope_path_t *p = r->scope_gpu_rows[i].path;
        char shown[512];
        scope_gpu_row(e,
                      tree_label(label, sizeof label, p->depth,
                                 gpufl__report_scope_label(p, shown, sizeof shown)),
                      p->calls ? p->total_ns : -1, &p->gpu);
    }
    if (has_work(&m->gpu_unknown_scope.self))
        scope_gpu_row(e, "(unknown scope)", -1, &m->gpu_unknown_scope);
    if (has_work(&m->gpu_no_scope.self)) scope_gpu_row(e, "(no scope)", -1, &m->gpu_no_scope);
    e->table_end(o);
    if (r->scope_gpu_hidden)
        e->para(o, f(v, sizeof v, "%zu scope path%s without GPU work not shown",
                     r->scope_gpu_hidden, plural(r->scope_gpu_hidden)));
}

static void problems(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    FILE *o = e->out;
    char where[256], v[64];
    if (!r->summary.problems) return;
    e->heading(o, 2, "Log problems");
    e->fields_begin(o);
    for (size_t i = 0; i < m->n_warnings && i < GPUFL_REPORT_PROBLEMS_MAX; i++) {
        const gpufl__model_warning_t *w = &m->warnings[i];
        if (!*w->file)
            snprintf(where, sizeof where, "session");
        else if (!w->line)
            snprintf(where, sizeof where, "%s", w->file);
        else
            snprintf(where, sizeof where, "%s:%llu", w->file, (unsigned long long)w->line);
        e->field(o, where, w->message);
    }
    if (r->summary.problems > GPUFL_REPORT_PROBLEMS_MAX)
        e->field(
            o, "",
            f(v, sizeof v, "... and %zu more", r->summary.problems - GPUFL_REPORT_PROBLEMS_MAX));
    e->fields_end(o);
}

int gpufl__report_doc_head(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    summary(e, r);
    insights(e, &r->insights);
    return 0;
}

int gpufl__report_doc_body(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    scopes(e, r);
    system_metrics(e, r);
    gpus(e, r);
    hotspots(e, r);
    launches(e, r);
    details(e, r);
    transfers(e, r);
    scope_gpu(e, r);
    gpufl__report_doc_ops(e, r);
    gpufl__report_doc_pc(e, r);
    gpufl__report_doc_sass_metrics(e, r);
    gpufl__report_doc_range(e, r);
    problems(e, r);
    return 0;
}
