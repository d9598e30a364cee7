// SPDX-License-Identifier: Apache-2.0
/*
 * report.c - the text report for people, rendered from the sections that
 * report_data.c computed, and the entry points of every format.
 *
 * Sections: session summary, insights, scope timing (a tree of scope paths),
 * system metrics, GPU devices (identity and what their NVML samples say, one
 * block per device; or why there is no GPU data), kernel hotspots, kernel
 * details (launch configurations and occupancy), memory transfers and GPU
 * time per scope (Trace engine rows, when there are any) and the log
 * problems met while reading. Values use human units with three significant
 * digits; nothing here depends on the clock, the locale's time zone or
 * memory addresses, so the same logs always give the same bytes.
 */
#include "analysis/report.h"

#include "util/error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LIST_MAX     GPUFL_REPORT_LIST_MAX
#define NAME_COL_MAX 50 /* widest scope column, in characters */
#define INDENT_MAX   20 /* deepest indentation level shown */

#define fmt_ns    gpufl__report_fmt_ns
#define fmt_bytes gpufl__report_fmt_bytes
#define fmt_pct   gpufl__report_fmt_pct
#define fmt_si    gpufl__report_fmt_si
#define sig3      gpufl__report_sig3

/* ---------------------------------------------------------------------- */
/* Cells and lines                                                          */
/* ---------------------------------------------------------------------- */

/* Display width of UTF-8 text: one column per code point. */
static size_t text_width(const char *s) {
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80) w++;
    return w;
}

/* Writes s padded to width columns (right-aligned when right), cutting it
 * with "..." when too wide. */
static void put_cell(FILE *out, const char *s, size_t width, int right) {
    size_t w = text_width(s);
    if (w > width && width > 3) {
        size_t keep = width - 3, cols = 0;
        const char *p = s;
        while (*p) {
            if (((unsigned char)*p & 0xc0) != 0x80) {
                if (cols == keep) break;
                cols++;
            }
            p++;
        }
        fprintf(out, "%.*s...", (int)(p - s), s);
        return;
    }
    if (right)
        for (size_t i = w; i < width; i++) fputc(' ', out);
    fputs(s, out);
    if (!right)
        for (size_t i = w; i < width; i++) fputc(' ', out);
}

void gpufl__report_text_table(FILE *out, size_t nrow, size_t ncol, gpufl__report_cells_t *rows,
                              const char *aligns) {
    size_t w[GPUFL_REPORT_TABLE_COLS] = {0};
    for (size_t i = 0; i < nrow; i++)
        for (size_t c = 0; c < ncol; c++) {
            size_t x = text_width(rows[i][c]);
            if (x > 50 && c + 1 < ncol) x = 50;
            if (x > w[c]) w[c] = x;
        }
    for (size_t i = 0; i < nrow; i++) {
        fputs("  ", out);
        for (size_t c = 0; c < ncol; c++) {
            const char *s = rows[i][c];
            size_t x = text_width(s);
            int left = aligns[c] == 'l';
            if (x > w[c]) { /* cut: ASCII names in practice; count bytes */
                fprintf(out, "%.*s...", (int)(w[c] - 3), s);
            } else {
                if (!left) fprintf(out, "%*s", (int)(w[c] - x), "");
                fputs(s, out);
                if (left && c + 1 < ncol) fprintf(out, "%*s", (int)(w[c] - x), "");
            }
            if (c + 1 < ncol) fputs("  ", out);
        }
        fputc('\n', out);
    }
}

/* A "label      value" line of a section. */
static void put_field(FILE *out, const char *label, const char *value) {
    fprintf(out, "  %-18s %s\n", label, value);
}

/* A "label      value" line of a device block. */
static void put_gfield(FILE *out, const char *label, const char *value) {
    fprintf(out, "    %-18s %s\n", label, value);
}

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

static const char *or_unknown(const char *s) { return s && *s ? s : "?"; }

#define cat gpufl__report_cat

void gpufl__report_cat(char *line, size_t size, size_t *n, const char *fmt, ...) {
    if (*n >= size) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line + *n, size - *n, fmt, ap);
    va_end(ap);
    if (k > 0) *n += (size_t)k;
    if (*n >= size) *n = size - 1;
}

/* ---------------------------------------------------------------------- */
/* Session summary                                                          */
/* ---------------------------------------------------------------------- */

static void put_cap_line(FILE *out, const char *kind, const gpufl__report_cap_t *c) {
    char line[512];
    int n = snprintf(line, sizeof line, "asked %s, running %s", c->requested ? c->requested : "?",
                     c->running ? c->running : "?");
    if (c->reason && n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, ": %s", c->reason);
    put_field(out, kind, line);
}

/* The features: those on in one line, then one line per feature off with
 * its reason. */
static void put_features(FILE *out, const gpufl__report_summary_t *s) {
    size_t shown = 0;
    for (size_t i = 0; i < s->n_features; i++) {
        if (!s->features[i].on) continue;
        if (shown == 0) fprintf(out, "  %-18s ", "features on");
        fprintf(out, "%s%s", shown ? ", " : "", s->features[i].name);
        shown++;
    }
    if (shown) fputc('\n', out);
    shown = 0;
    for (size_t i = 0; i < s->n_features; i++) {
        if (s->features[i].on) continue;
        fprintf(out, "  %-18s %s", shown ? "" : "features off", s->features[i].name);
        if (s->features[i].reason) fprintf(out, ": %s", s->features[i].reason);
        fputc('\n', out);
        shown++;
    }
}

static void put_host(FILE *out, const gpufl__report_summary_t *s) {
    char line[512], num[32];
    size_t n = 0;
    cat(line, sizeof line, &n, "%s", s->hostname);
    if (s->has_host_info) {
        const char *sep = " (";
        if (s->cpu_count >= 0) {
            cat(line, sizeof line, &n, "%s%lld CPUs", sep, (long long)s->cpu_count);
            sep = ", ";
        }
        if (s->mem_total_bytes >= 0) {
            fmt_bytes(num, sizeof num, (double)s->mem_total_bytes);
            cat(line, sizeof line, &n, "%s%s memory", sep, num);
            sep = ", ";
        }
        if (s->kernel_release) {
            cat(line, sizeof line, &n, "%sLinux %s", sep, s->kernel_release);
            sep = ", ";
        }
        if (s->cgroup_version > 0) {
            cat(line, sizeof line, &n, "%scgroup v%lld", sep, (long long)s->cgroup_version);
            sep = ", ";
        }
        if (strcmp(sep, ", ") == 0) cat(line, sizeof line, &n, ")");
    }
    put_field(out, "host", line);
}

static void put_start(FILE *out, int64_t us) {
    char line[64];
    time_t secs = (time_t)(us / 1000000);
    struct tm tm;
    if (us < 0 || !gmtime_r(&secs, &tm)) {
        put_field(out, "started", "?");
        return;
    }
    snprintf(line, sizeof line, "%04d-%02d-%02d %02d:%02d:%02d.%03d UTC", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(us % 1000000 / 1000));
    put_field(out, "started", line);
}

static void put_events(FILE *out, const gpufl__model_t *m, const gpufl__report_summary_t *s) {
    char line[256];
    if (!s->warn_events)
        snprintf(line, sizeof line, "none recorded");
    else
        snprintf(line, sizeof line, "%zu recorded", s->warn_events);
    if (s->other_events) {
        size_t len = strlen(line);
        snprintf(line + len, sizeof line - len, " (and %zu debug/info events)", s->other_events);
    }
    put_field(out, "warnings", line);
    for (size_t i = 0; i < s->warn_events && i < LIST_MAX; i++) {
        const gpufl__model_event_t *e = &m->events[s->warn_order[i]];
        char at[32];
        fmt_ns(at, sizeof at, (double)e->ts_ns);
        fprintf(out, "    at %s: %s %s: %s\n", at, e->level_name, or_unknown(e->code), e->message);
    }
    if (s->warn_events > LIST_MAX)
        fprintf(out, "    ... and %zu more\n", s->warn_events - LIST_MAX);
}

static void put_log_lines(FILE *out, const gpufl__model_t *m, const gpufl__report_summary_t *s) {
    const gpufl__reader_stats_t *r = &m->read;
    char line[512];
    size_t n = 0;
    cat(line, sizeof line, &n, "%llu lines in %u file%s", (unsigned long long)r->lines,
        s->log_files, s->log_files == 1 ? "" : "s");
    for (int f = 0; f < GPUFL_LOG_FILE_COUNT; f++)
        if (!r->segments[f])
            cat(line, sizeof line, &n, ", no %s", gpufl__reader_file_name((gpufl__log_file_t)f));
    if (r->truncated_lines)
        cat(line, sizeof line, &n, ", %llu incomplete last line%s ignored",
            (unsigned long long)r->truncated_lines, r->truncated_lines == 1 ? "" : "s");
    put_field(out, "log lines", line);
    if (s->problems)
        snprintf(line, sizeof line, "%zu (listed at the end)", s->problems);
    else
        snprintf(line, sizeof line, "none");
    put_field(out, "log problems", line);
    for (size_t i = 0; i < s->n_damage; i++) put_field(out, "", s->damage[i]);
}

static void put_summary(FILE *out, const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    const gpufl__report_summary_t *s = &r->summary;
    char line[512], num[32];
    size_t n = 0;
    fprintf(out, "Session\n");
    put_field(out, "app", s->app);
    put_field(out, "session id", s->session_id);
    put_host(out, s);
    if (s->pid >= 0)
        snprintf(line, sizeof line, "%lld", (long long)s->pid);
    else
        snprintf(line, sizeof line, "?");
    put_field(out, "pid", line);
    put_field(out, "gpufl version", s->gpufl_version);
    put_start(out, s->start_unix_us);
    if (s->duration_ns >= 0)
        fmt_ns(num, sizeof num, (double)s->duration_ns);
    else
        snprintf(num, sizeof num, "?");
    if (s->ended) {
        put_field(out, "duration", num);
    } else {
        snprintf(line, sizeof line, "%s (no session_end: still running or killed)", num);
        put_field(out, "duration", line);
    }
    if (s->has_caps) {
        put_cap_line(out, "backend", &s->backend);
        put_cap_line(out, "engine", &s->engine);
        put_features(out, s);
    } else {
        put_field(out, "engine", "? (no capabilities record)");
    }
    snprintf(line, sizeof line,
             "%zu scope%s (%zu open), %zu host sample%s, %zu system window%s, "
             "%zu event%s",
             m->n_scopes, plural(m->n_scopes), m->n_open_scopes, m->n_samples, plural(m->n_samples),
             s->window_starts, plural(s->window_starts), m->n_events, plural(m->n_events));
    if (m->n_gpu_samples || m->n_gpus) {
        size_t len = strlen(line);
        snprintf(line + len, sizeof line - len, ", %zu GPU sample%s (%zu device%s)",
                 m->n_gpu_samples, plural(m->n_gpu_samples), m->n_gpus, plural(m->n_gpus));
    }
    put_field(out, "records", line);
    n = 0;
    line[0] = '\0';
    for (size_t i = 0; i < s->n_drops; i++)
        cat(line, sizeof line, &n, "%s%s %lld", n ? ", " : "", s->drops[i].name,
            (long long)s->drops[i].count);
    put_field(out, "drops", n ? line : "no records dropped");
    put_events(out, m, s);
    put_log_lines(out, m, s);
}

/* ---------------------------------------------------------------------- */
/* Insights                                                                 */
/* ---------------------------------------------------------------------- */

static void put_insights(FILE *out, const gpufl__insights_t *ins) {
    fprintf(out, "\nInsights\n");
    if (ins->n) {
        size_t sev[4] = {0};
        for (size_t i = 0; i < ins->n; i++)
            if (ins->items[i].severity >= 1 && ins->items[i].severity <= 3)
                sev[ins->items[i].severity]++;
        fprintf(out, "  %zu finding%s (%zu high, %zu medium, %zu low)\n\n", ins->n, plural(ins->n),
                sev[GPUFL_SEVERITY_HIGH], sev[GPUFL_SEVERITY_MEDIUM], sev[GPUFL_SEVERITY_LOW]);
    }
    gpufl__insights_write_text(ins, GPUFL_SEVERITY_LOW, "  ", out);
}

/* ---------------------------------------------------------------------- */
/* Scope timing                                                             */
/* ---------------------------------------------------------------------- */

/* The name of a scope path indented by its depth, into label (LABEL_SIZE). */
#define LABEL_SIZE (NAME_COL_MAX * 4 + INDENT_MAX * 2 + 8)
static void indented(char *label, size_t depth, const char *name) {
    size_t d = depth < INDENT_MAX ? depth : INDENT_MAX;
    snprintf(label, LABEL_SIZE, "%*s%.*s", (int)(2 * d), "", NAME_COL_MAX * 4, name);
}

static void count_or_dash(char *buf, size_t size, size_t v) {
    if (v)
        snprintf(buf, size, "%zu", v);
    else
        snprintf(buf, size, "-");
}

static void put_scope_row(FILE *out, size_t name_w, size_t calls_w, const char *name,
                          const char *calls, const char *open, const char *const t[5],
                          const char *tags) {
    fputs("  ", out);
    put_cell(out, name, name_w, 0);
    fputc(' ', out);
    put_cell(out, calls, calls_w, 1);
    fputc(' ', out);
    put_cell(out, open, 5, 1);
    for (int i = 0; i < 5; i++) {
        fputc(' ', out);
        put_cell(out, t[i], 9, 1);
    }
    fprintf(out, "  %s\n", tags); /* the last column: values, as wide as they are */
}

static void put_open_scopes(FILE *out, const gpufl__report_t *r) {
    const gpufl__report_scopes_t *sc = &r->scopes;
    fprintf(out, "\n  Open scopes (begun, never ended: still running or killed): %zu\n",
            r->m->n_open_scopes);
    for (size_t i = 0; i < sc->n_open; i++) {
        const gpufl__model_scope_t *s = sc->open[i];
        char at[32], tag[GPUFL_REPORT_TAG_CELL];
        fmt_ns(at, sizeof at, (double)s->begin_ns);
        gpufl__report_fmt_tags(tag, sizeof tag, &s->tag, *s->tag != '\0');
        fprintf(out, "    %s  (tid %lld, begun at %s%s%s)\n", s->path, (long long)s->tid, at,
                *s->tag ? ", tag " : "", *s->tag ? tag : "");
    }
    if (r->m->n_open_scopes > sc->n_open)
        fprintf(out, "    ... and %zu more\n", r->m->n_open_scopes - sc->n_open);
}

static int put_scopes(FILE *out, const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    const gpufl__report_scopes_t *sc = &r->scopes;
    fprintf(out, "\nScope timing\n");
    if (sc->n_rows == 0) {
        fprintf(out, "  %s\n", *sc->lost ? sc->lost : "no scopes recorded");
        return 0;
    }
    char *label = malloc(LABEL_SIZE);
    if (!label) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    size_t n = sc->n_rows, name_w = 5;
    for (size_t i = 0; i < n; i++) {
        const gpufl__model_scope_path_t *p = sc->rows[i].path;
        size_t d = p->depth < INDENT_MAX ? p->depth : INDENT_MAX;
        char shown[LABEL_SIZE];
        size_t w = 2 * d + text_width(gpufl__report_scope_label(p, shown, sizeof shown));
        if (w > name_w) name_w = w;
    }
    if (name_w > NAME_COL_MAX) name_w = NAME_COL_MAX;
    size_t calls_w = 6; /* wider only for "2 +1 lost" */
    for (size_t i = 0; i < n; i++) {
        char calls[48];
        gpufl__report_fmt_calls(calls, sizeof calls, sc->rows[i].path);
        if (strlen(calls) > calls_w) calls_w = strlen(calls);
    }
    fprintf(out, "  %zu scope path%s, %zu call%s ended, %zu open; wall time per scope path\n", n,
            plural(n), sc->closed, plural(sc->closed), m->n_open_scopes);
    if (sc->bench)
        fprintf(out,
                "  per iter: total / measured iterations, for GFL_BENCH scopes (repeat > 0)\n");
    fputc('\n', out);
    static const char *const heads[5] = {"total", "avg", "min", "max", "per iter"};
    put_scope_row(out, name_w, calls_w, "scope", "calls", "open", heads, "tags");
    for (size_t k = 0; k < n; k++) {
        const gpufl__report_scope_row_t *row = &sc->rows[k];
        const gpufl__model_scope_path_t *p = row->path;
        char shown[LABEL_SIZE];
        indented(label, p->depth, gpufl__report_scope_label(p, shown, sizeof shown));
        char calls[48], open[24], tags[GPUFL_REPORT_TAG_CELL], t[5][32];
        const char *tp[5] = {t[0], t[1], t[2], t[3], t[4]};
        gpufl__report_fmt_calls(calls, sizeof calls, p);
        count_or_dash(open, sizeof open, p->open);
        gpufl__report_fmt_tags(tags, sizeof tags, row->tags, row->n_tags);
        if (p->calls) {
            fmt_ns(t[0], sizeof t[0], p->total_ns);
            fmt_ns(t[1], sizeof t[1], row->avg_ns);
            fmt_ns(t[2], sizeof t[2], p->min_ns);
            fmt_ns(t[3], sizeof t[3], p->max_ns);
        } else {
            for (int i = 0; i < 4; i++) snprintf(t[i], sizeof t[i], "-");
        }
        if (row->per_iter_ns >= 0)
            fmt_ns(t[4], sizeof t[4], row->per_iter_ns);
        else
            snprintf(t[4], sizeof t[4], "-");
        put_scope_row(out, name_w, calls_w, label, calls, open, tp, tags);
    }
    if (sc->implicit)
        fprintf(out, "\n  %zu scope%s closed implicitly (an enclosing scope ended first)\n",
                sc->implicit, sc->implicit == 1 ? " was" : "s were");
    if (*sc->lost) fprintf(out, "\n  %s\n", sc->lost);
    if (m->n_open_scopes) put_open_scopes(out, r);
    free(label);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* System metrics                                                           */
/* ---------------------------------------------------------------------- */

/* " (k of n samples)" when some samples lacked the value. */
static void coverage(char *buf, size_t size, const gpufl__report_stat_t *a, size_t total) {
    if (a->n < total)
        snprintf(buf, size, " (%zu of %zu samples)", a->n, total);
    else
        buf[0] = '\0';
}

/* A CPU figure's line. s: the system figures, for the line's notes; over:
 * its figures above what the CPUs allow. */
static void put_pct_line(FILE *out, const char *label, const gpufl__report_stat_t *a, size_t total,
                         const char *note, const gpufl__report_system_t *s, size_t over) {
    char avg[32], max[32], cov[128], line[384];
    if (!a->n) return;
    fmt_pct(avg, sizeof avg, a->sum / (double)a->n);
    fmt_pct(max, sizeof max, a->max);
    if (s->period_below_min && a->n < total) /* samples closer than that carry none */
        snprintf(cov, sizeof cov, " (%zu of %zu samples: %s)", a->n, total, s->cpu_why);
    else
        coverage(cov, sizeof cov, a, total);
    size_t n = 0;
    cat(line, sizeof line, &n, "avg %s, max %s%s%s", avg, max, note, cov);
    if (over)
        cat(line, sizeof line, &n, "; %zu above the %lld%% %lld CPU%s allow", over,
            (long long)(100 * s->cpus), (long long)s->cpus, s->cpus == 1 ? "" : "s");
    put_field(out, label, line);
}

static void put_windows(FILE *out, const gpufl__report_t *r) {
    const gpufl__report_system_t *s = &r->system;
    if (!r->m->n_windows) return;
    fprintf(out, "  %-18s %zu started, %zu stopped:", "windows", r->summary.window_starts,
            r->summary.window_stops);
    for (size_t i = 0; i < s->n_window_names; i++) {
        if (i == LIST_MAX) {
            fprintf(out, " ...");
            break;
        }
        fprintf(out, "%s %s", i ? "," : "", or_unknown(s->window_names[i]));
    }
    fputc('\n', out);
}

static void put_system(FILE *out, const gpufl__report_t *r) {
    const gpufl__report_system_t *s = &r->system;
    const gpufl__report_stat_t *st = s->st;
    fprintf(out, "\nSystem metrics\n");
    size_t n = s->n;
    if (n == 0) {
        fprintf(out, "  no samples (system_sample_rate_ms is 0 or no sampling window was open)\n");
        put_windows(out, r);
        return;
    }
    char a[32], b[32], c[32], cov[64], line[256];
    fmt_ns(a, sizeof a, (double)s->first_ts_ns);
    fmt_ns(b, sizeof b, (double)s->last_ts_ns);
    fprintf(out, "  %zu host sample%s from %s to %s\n", n, n == 1 ? "" : "s", a, b);
    put_pct_line(out, "host CPU", &st[GPUFL_RH_CPU], n, "", s, 0);
    put_pct_line(out, "process CPU", &st[GPUFL_RH_PROC_CPU], n, " of one CPU", s, s->proc_cpu_over);
    const gpufl__report_stat_t *mem = &st[GPUFL_RH_MEM_USED], *total = &st[GPUFL_RH_MEM_TOTAL];
    if (mem->n) {
        fmt_bytes(a, sizeof a, mem->sum / (double)mem->n);
        fmt_bytes(b, sizeof b, mem->max);
        coverage(cov, sizeof cov, mem, n);
        if (total->n) {
            fmt_bytes(c, sizeof c, total->max);
            snprintf(line, sizeof line, "avg %s, max %s of %s%s", a, b, c, cov);
        } else {
            snprintf(line, sizeof line, "avg %s, max %s%s", a, b, cov);
        }
        put_field(out, "host memory used", line);
    }
    const gpufl__report_stat_t *rss = &st[GPUFL_RH_RSS];
    if (rss->n) {
        fmt_bytes(a, sizeof a, rss->sum / (double)rss->n);
        fmt_bytes(b, sizeof b, rss->max);
        coverage(cov, sizeof cov, rss, n);
        snprintf(line, sizeof line, "avg %s, max %s%s", a, b, cov);
        put_field(out, "process RSS", line);
    }
    const gpufl__report_stat_t *cg_mem = &st[GPUFL_RH_CG_MEM], *cg_limit = &st[GPUFL_RH_CG_LIMIT];
    if (cg_mem->n) {
        fmt_bytes(a, sizeof a, cg_mem->max);
        coverage(cov, sizeof cov, cg_mem, n);
        if (cg_limit->n) {
            fmt_bytes(b, sizeof b, cg_limit->max);
            snprintf(line, sizeof line, "max %s of limit %s%s", a, b, cov);
        } else {
            snprintf(line, sizeof line, "max %s, no limit%s", a, cov);
        }
        put_field(out, "cgroup memory used", line);
    }
    put_pct_line(out, "cgroup CPU", &st[GPUFL_RH_CG_CPU], n, " of one CPU", s, s->cg_cpu_over);
    if (st[GPUFL_RH_CG_CORES].n) {
        snprintf(line, sizeof line, "%.2f cores", st[GPUFL_RH_CG_CORES].max);
        put_field(out, "cgroup CPU limit", line);
    }
    if (*s->cpu_none) put_field(out, "CPU figures", s->cpu_none);
    put_windows(out, r);
}

/* ---------------------------------------------------------------------- */
/* GPU devices                                                              */
/* ---------------------------------------------------------------------- */

static double st_avg(const gpufl__report_stat_t *a) { return a->sum / (double)a->n; }

static void fmt_rate(char *buf, size_t size, double bytes_per_s) {
    char num[32];
    fmt_bytes(num, sizeof num, bytes_per_s);
    snprintf(buf, size, "%.24s/s", num); /* "999 GiB": never near 24 */
}

static void fmt_watts(char *buf, size_t size, double mw) { fmt_si(buf, size, mw / 1000, "W"); }

/* " (k of n samples)" appended when some samples lacked the value. */
static void cat_coverage(char *line, size_t size, size_t *n, size_t known, size_t total) {
    if (known < total) cat(line, size, n, " (%zu of %zu samples)", known, total);
}

/* "avg X, max Y" (or "avg X, min Y") of a statistic, formatted by fmt. */
static void cat_avg_ext(char *line, size_t size, size_t *n, const gpufl__report_stat_t *a,
                        int use_min, void (*fmt)(char *, size_t, double)) {
    char avg[32], ext[32];
    fmt(avg, sizeof avg, st_avg(a));
    fmt(ext, sizeof ext, use_min ? a->min : a->max);
    cat(line, size, n, "avg %s, %s %s", avg, use_min ? "min" : "max", ext);
}

static void fmt_mhz(char *buf, size_t size, double v) { snprintf(buf, size, "%.0f MHz", v); }

static void fmt_celsius(char *buf, size_t size, double v) {
    /* whole degrees stay whole: "66 °C", an average "58.5 °C" */
    if (v == (double)(int64_t)v)
        snprintf(buf, size,
                 "%.0f \xc2\xb0"
                 "C",
                 v);
    else
        snprintf(buf, size,
                 "%.1f \xc2\xb0"
                 "C",
                 v);
}

/* A line of one statistic: "avg X, max Y" with coverage; nothing when unknown. */
static void put_stat(FILE *out, const char *label, const gpufl__report_stat_t *a, size_t total,
                     int use_min, void (*fmt)(char *, size_t, double)) {
    char line[256];
    size_t n = 0;
    if (!a->n) return;
    line[0] = '\0';
    cat_avg_ext(line, sizeof line, &n, a, use_min, fmt);
    cat_coverage(line, sizeof line, &n, a->n, total);
    put_gfield(out, label, line);
}

/* Two statistics on one line: "<na> avg X, max Y; <nb> avg ..." (either may be unknown). */
static void put_stat_pair(FILE *out, const char *label, const char *na,
                          const gpufl__report_stat_t *a, const char *nb,
                          const gpufl__report_stat_t *b, size_t total,
                          void (*fmt)(char *, size_t, double)) {
    char line[320];
    size_t n = 0;
    const gpufl__report_stat_t *st[2] = {a, b};
    const char *names[2] = {na, nb};
    line[0] = '\0';
    for (int i = 0; i < 2; i++) {
        if (!st[i]->n) continue;
        cat(line, sizeof line, &n, "%s%s ", n ? "; " : "", names[i]);
        cat_avg_ext(line, sizeof line, &n, st[i], 0, fmt);
        cat_coverage(line, sizeof line, &n, st[i]->n, total);
    }
    if (n) put_gfield(out, label, line);
}

/* "GPU-5f2c9a1e" of "GPU-5f2c9a1e-7b3d-...": the prefixes and 8 characters. */
static void short_uuid(char *buf, size_t size, const char *uuid) {
    const char *p = uuid;
    while (strncmp(p, "GPU-", 4) == 0 || strncmp(p, "MIG-", 4) == 0) p += 4;
    size_t keep = (size_t)(p - uuid) + 8;
    snprintf(buf, size, "%.*s", (int)keep, uuid);
}

static void put_gpu_identity(FILE *out, const gpufl__model_gpu_t *g) {
    char line[320], num[32];
    size_t n = 0;
    line[0] = '\0';
    if (*g->uuid) {
        short_uuid(line, sizeof line, g->uuid);
        put_gfield(out, "uuid", line);
    }
    if (*g->pci_bus_id) put_gfield(out, "PCI bus id", g->pci_bus_id);
    n = 0;
    line[0] = '\0';
    if (*g->compute_capability) cat(line, sizeof line, &n, "%s", g->compute_capability);
    if (g->sm_count >= 0)
        cat(line, sizeof line, &n, "%s%lld SMs", n ? ", " : "", (long long)g->sm_count);
    if (g->mem_total_bytes >= 0) {
        fmt_bytes(num, sizeof num, (double)g->mem_total_bytes);
        cat(line, sizeof line, &n, "%s%s memory", n ? ", " : "", num);
    }
    if (n) put_gfield(out, "compute capability", line);
    n = 0;
    line[0] = '\0';
    if (*g->driver_version) cat(line, sizeof line, &n, "%s", g->driver_version);
    if (g->cuda_driver_version >= 0)
        cat(line, sizeof line, &n, "%sCUDA %lld.%lld", n ? ", " : "",
            (long long)(g->cuda_driver_version / 1000),
            (long long)(g->cuda_driver_version % 1000 / 10));
    if (*g->nvml_version) cat(line, sizeof line, &n, "%sNVML %s", n ? ", " : "", g->nvml_version);
    if (n) put_gfield(out, "driver", line);
    if (g->mig_index >= 0) {
        snprintf(line, sizeof line, "instance %lld of NVML GPU %lld", (long long)g->mig_index,
                 (long long)g->nvml_index);
        put_gfield(out, "MIG", line);
    } else if (g->mig_mode == 1) {
        put_gfield(out, "MIG", "on (its instances are devices of their own)");
    } else if (g->mig_mode == 0) {
        put_gfield(out, "MIG", "off");
    } else {
        put_gfield(out, "MIG", "not supported");
    }
}

static void put_gpu_memory(FILE *out, const gpufl__report_gpu_t *a) {
    const gpufl__report_stat_t *used = &a->st[GPUFL_RG_MEM_USED];
    char line[256], b1[32], b2[32];
    size_t n = 0;
    if (!used->n) return;
    fmt_bytes(b1, sizeof b1, used->max);
    cat(line, sizeof line, &n, "max %s", b1);
    if (a->mem_total_bytes > 0) {
        fmt_bytes(b2, sizeof b2, a->mem_total_bytes);
        cat(line, sizeof line, &n, " of %s (%.1f%%)", b2, 100.0 * used->max / a->mem_total_bytes);
    }
    cat_coverage(line, sizeof line, &n, used->n, a->n);
    put_gfield(out, "memory used", line);
}

static void put_gpu_power(FILE *out, const gpufl__report_gpu_t *a) {
    const gpufl__report_stat_t *p = &a->st[GPUFL_RG_POWER];
    char line[256], b1[32], b2[32], b3[32];
    size_t n = 0;
    if (p->n) {
        fmt_watts(b1, sizeof b1, st_avg(p));
        fmt_watts(b2, sizeof b2, p->max);
        cat(line, sizeof line, &n, "avg %s, max %s", b1, b2);
        if (a->power_limit_mw > 0) {
            fmt_watts(b3, sizeof b3, a->power_limit_mw);
            cat(line, sizeof line, &n, " of %s limit", b3);
        }
        cat_coverage(line, sizeof line, &n, p->n, a->n);
        put_gfield(out, "power", line);
    }
    /* Energy from the driver's counter: last - first, over the time between. */
    const gpufl__report_counter_t *e = &a->energy;
    if (e->n >= 2 && e->last_ts > e->first_ts) {
        n = 0;
        line[0] = '\0';
        if (e->last < e->first) {
            cat(line, sizeof line, &n, "? (the energy counter went back)");
        } else {
            double joules = (double)(e->last - e->first) / 1000.0;
            double secs = (double)(e->last_ts - e->first_ts) / 1e9;
            fmt_si(b1, sizeof b1, joules, "J");
            fmt_ns(b2, sizeof b2, (double)(e->last_ts - e->first_ts));
            fmt_si(b3, sizeof b3, joules / secs, "W");
            cat(line, sizeof line, &n, "%s over %s of samples (mean %s)", b1, b2, b3);
        }
        put_gfield(out, "energy", line);
    }
}

static void put_gpu_ecc(FILE *out, const gpufl__report_gpu_t *a) {
    const gpufl__report_counter_t *sbe = &a->sbe, *dbe = &a->dbe;
    char line[256];
    size_t n = 0;
    if (!sbe->n && !dbe->n) return;
    if ((!sbe->n || sbe->last == 0) && (!dbe->n || dbe->last == 0)) {
        put_gfield(out, "ECC errors", "none");
        return;
    }
    const gpufl__report_counter_t *c[2] = {sbe, dbe};
    const char *what[2] = {"corrected", "uncorrected"};
    for (int i = 0; i < 2; i++) {
        if (!c[i]->n) continue;
        cat(line, sizeof line, &n, "%s%lld %s", n ? ", " : "", (long long)c[i]->last, what[i]);
    }
    cat(line, sizeof line, &n, " since boot");
    size_t k = 0;
    for (int i = 0; i < 2; i++) {
        if (!c[i]->n || c[i]->last <= c[i]->first) continue;
        cat(line, sizeof line, &n, "%s+%lld %s", k++ ? ", " : " (",
            (long long)(c[i]->last - c[i]->first), what[i]);
    }
    if (k) cat(line, sizeof line, &n, " during the session)");
    put_gfield(out, "ECC errors", line);
}

static void put_gpu_throttle(FILE *out, const gpufl__report_t *r, const gpufl__report_gpu_t *a) {
    const gpufl__model_t *m = r->m;
    char line[512], cov[64];
    size_t n = 0, cn = 0;
    if (!a->throttle_n) return;
    cov[0] = '\0';
    cat_coverage(cov, sizeof cov, &cn, a->throttle_n, a->n);
    line[0] = '\0';
    for (size_t i = 0; i < a->n_shares; i++) {
        const char *name = m->throttle_names[a->shares[i].bit];
        double pct = 100.0 * (double)a->shares[i].n / (double)a->throttle_n;
        if (name)
            cat(line, sizeof line, &n, "%s%s %.1f%%", i ? ", " : "", name, pct);
        else
            cat(line, sizeof line, &n, "%sbit %d %.1f%%", i ? ", " : "", a->shares[i].bit, pct);
        if (i == 0) cat(line, sizeof line, &n, " of samples");
    }
    if (!a->n_shares) cat(line, sizeof line, &n, "none");
    cat(line, sizeof line, &n, "%s", cov);
    put_gfield(out, "throttle reasons", line);
    if (r->idle_bit >= 0) {
        snprintf(line, sizeof line, "%.1f%% of samples%s",
                 100.0 * (double)a->bit_n[r->idle_bit] / (double)a->throttle_n, cov);
        put_gfield(out, "idle", line);
    }
}

/* GPM: how busy the SMs, warps, tensor pipes and DRAM really were. */
static void put_gpu_gpm(FILE *out, const gpufl__report_gpu_t *a) {
    put_stat(out, "GPM SM active", &a->st[GPUFL_RG_SM_ACTIVE], a->n, 0, fmt_pct);
    put_stat(out, "GPM SM occupancy", &a->st[GPUFL_RG_SM_OCCUPANCY], a->n, 0, fmt_pct);
    put_stat(out, "GPM tensor active", &a->st[GPUFL_RG_TENSOR], a->n, 0, fmt_pct);
    put_stat(out, "GPM DRAM bandwidth", &a->st[GPUFL_RG_DRAM_BW], a->n, 0, fmt_pct);
    const gpufl__report_stat_t *util = &a->st[GPUFL_RG_UTIL], *sm = &a->st[GPUFL_RG_SM_ACTIVE];
    if (util->n && sm->n && st_avg(util) >= 80 && st_avg(sm) < 50) {
        char line[256];
        snprintf(line, sizeof line,
                 "busy but not efficient: a kernel runs most of the time (GPU util avg %.1f%%), "
                 "yet most SMs are idle (SM active avg %.1f%%)",
                 st_avg(util), st_avg(sm));
        put_gfield(out, "efficiency", line);
    }
}

/* The core values a device did not report at all (MIG instances report few). */
static void put_gpu_missing(FILE *out, const gpufl__report_gpu_t *a) {
    static const struct {
        int stat;
        const char *name;
    } core[] = {{GPUFL_RG_UTIL, "GPU util"},        {GPUFL_RG_MEM_USED, "memory used"},
                {GPUFL_RG_TEMP_GPU, "temperature"}, {GPUFL_RG_POWER, "power"},
                {GPUFL_RG_CLOCK_SM, "clocks"},      {GPUFL_RG_PCIE_TX, "PCIe"}};
    char line[256];
    size_t n = 0;
    line[0] = '\0';
    for (size_t i = 0; i < sizeof core / sizeof core[0]; i++)
        if (!a->st[core[i].stat].n) cat(line, sizeof line, &n, "%s%s", n ? ", " : "", core[i].name);
    if (!a->throttle_n) cat(line, sizeof line, &n, "%sthrottle reasons", n ? ", " : "");
    if (n) put_gfield(out, "not reported", line);
}

static void put_gpu_procs(FILE *out, const gpufl__model_gpu_t *g) {
    char line[1024], at[32], num[32];
    size_t n = 0;
    if (!g->procs_records) return;
    fmt_ns(at, sizeof at, (double)g->procs_ts_ns);
    cat(line, sizeof line, &n, "peak %lld; last (at %s): ", (long long)g->procs_peak, at);
    if (g->procs_count == 0) cat(line, sizeof line, &n, "none");
    size_t shown = g->n_procs < LIST_MAX ? g->n_procs : LIST_MAX;
    for (size_t i = 0; i < shown; i++) {
        cat(line, sizeof line, &n, "%spid %lld", i ? ", " : "", (long long)g->procs[i].pid);
        if (g->procs[i].used_bytes >= 0) {
            fmt_bytes(num, sizeof num, (double)g->procs[i].used_bytes);
            cat(line, sizeof line, &n, " (%s)", num);
        }
    }
    if (g->procs_count > (int64_t)shown)
        cat(line, sizeof line, &n, "%s... and %lld more", shown ? ", " : "",
            (long long)(g->procs_count - (int64_t)shown));
    put_gfield(out, "processes", line);
}

static void put_gpu_device(FILE *out, const gpufl__report_t *r, const gpufl__report_gpu_t *a) {
    const gpufl__model_gpu_t *g = a->gpu;
    char line[256], b1[32], b2[32];
    fprintf(out, "\n  GPU %lld  %s\n", (long long)g->device,
            g->has_info ? or_unknown(g->name) : "(no gpu_info record)");
    if (g->has_info) put_gpu_identity(out, g);
    if (!a->n) {
        put_gfield(out, "samples", "none");
    } else {
        fmt_ns(b1, sizeof b1, (double)a->first_ts_ns);
        fmt_ns(b2, sizeof b2, (double)a->last_ts_ns);
        snprintf(line, sizeof line, "%zu from %s to %s", a->n, b1, b2);
        put_gfield(out, "samples", line);
        put_stat(out, "GPU util", &a->st[GPUFL_RG_UTIL], a->n, 0, fmt_pct);
        put_stat(out, "memory util", &a->st[GPUFL_RG_MEM_UTIL], a->n, 0, fmt_pct);
        put_gpu_memory(out, a);
        put_stat_pair(out, "temperature", "GPU", &a->st[GPUFL_RG_TEMP_GPU], "memory",
                      &a->st[GPUFL_RG_TEMP_MEM], a->n, fmt_celsius);
        put_gpu_power(out, a);
        put_stat(out, "SM clock", &a->st[GPUFL_RG_CLOCK_SM], a->n, 1, fmt_mhz);
        put_stat(out, "memory clock", &a->st[GPUFL_RG_CLOCK_MEM], a->n, 1, fmt_mhz);
        put_stat(out, "fan", &a->st[GPUFL_RG_FAN], a->n, 0, fmt_pct);
        put_stat_pair(out, "PCIe", "TX", &a->st[GPUFL_RG_PCIE_TX], "RX", &a->st[GPUFL_RG_PCIE_RX],
                      a->n, fmt_rate);
        put_stat_pair(out, "NVLink", "TX", &a->st[GPUFL_RG_NVLINK_TX], "RX",
                      &a->st[GPUFL_RG_NVLINK_RX], a->n, fmt_rate);
        put_gpu_ecc(out, a);
        put_gpu_throttle(out, r, a);
        put_gpu_gpm(out, a);
        put_gpu_missing(out, a);
    }
    put_gpu_procs(out, g);
}

/* "sampling cost: host X µs, NVML Y µs per device and sample". */
static void put_source_costs(FILE *out, const gpufl__report_t *r) {
    char line[512], num[32];
    size_t n = 0;
    line[0] = '\0';
    for (size_t i = 0; i < r->n_costs; i++) {
        const gpufl__report_cost_t *c = &r->costs[i];
        fmt_ns(num, sizeof num, c->mean_ns);
        cat(line, sizeof line, &n, "%s%s %s%s", n ? ", " : "", c->is_nvml ? "NVML" : c->source, num,
            c->is_nvml ? " per device and sample" : "");
    }
    if (n) fprintf(out, "\n  sampling cost: %s\n", line);
}

static void put_gpu(FILE *out, const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    if (!m->n_gpus) {
        fprintf(out, "\nGPU\n");
        const char *why = r->no_gpu_reason;
        if (why && strstr(why, "not built"))
            fprintf(out, "  GPU sections: no GPU activity recorded (%s backend not built yet)\n",
                    strstr(why, "AMD") ? "AMD" : "NVIDIA");
        else if (why)
            fprintf(out, "  GPU sections: no GPU activity recorded (%s)\n", why);
        else
            fprintf(out, "  GPU sections: no GPU records found\n");
        put_source_costs(out, r);
        return;
    }
    fprintf(out, "\nGPU devices\n");
    fprintf(out, "  %zu device%s, %zu GPU sample%s\n", m->n_gpus, plural(m->n_gpus),
            m->n_gpu_samples, plural(m->n_gpu_samples));
    for (size_t i = 0; i < m->n_gpus; i++) put_gpu_device(out, r, &r->gpus[i]);
    put_source_costs(out, r);
}

/* ---------------------------------------------------------------------- */
/* Kernel hotspots and memory transfers (Trace engine)                      */
/* ---------------------------------------------------------------------- */

static void put_hotspot_row(FILE *out, size_t name_w, const char *name, const char *const c[8]) {
    fputs("  ", out);
    put_cell(out, name, name_w, 0);
    for (int i = 0; i < 8; i++) {
        fputc(' ', out);
        put_cell(out, c[i], i == 0 ? 6 : 9, 1);
    }
    fputc('\n', out);
}

static void put_kernels(FILE *out, const gpufl__report_t *r) {
    size_t n = r->m->n_kernels, ng = r->n_kgroups;
    if (r->untimed) fprintf(out, "\nKernel hotspots\n  %s\n", GPUFL_REPORT_UNTIMED);
    if (!n) return;
    size_t shown = gpufl__report_top(r, ng);
    size_t name_w = 6;
    for (size_t i = 0; i < shown; i++) {
        size_t w = text_width(r->kgroups[i].name);
        if (w > name_w) name_w = w;
    }
    if (name_w > NAME_COL_MAX) name_w = NAME_COL_MAX;

    fprintf(out, "\nKernel hotspots\n");
    fprintf(out, "  top %zu kernel name%s by total GPU time; p50, p99: exact order statistics\n\n",
            shown, plural(shown));
    static const char *const heads[8] = {"calls", "total", "avg", "min",
                                         "max",   "p50",   "p99", "share"};
    put_hotspot_row(out, name_w, "kernel", heads);
    for (size_t i = 0; i < shown; i++) {
        const gpufl__report_kgroup_t *g = &r->kgroups[i];
        char c[8][32];
        const char *cp[8] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]};
        snprintf(c[0], sizeof c[0], "%zu", g->calls);
        fmt_ns(c[1], sizeof c[1], g->total_ns);
        fmt_ns(c[2], sizeof c[2], g->total_ns / (double)g->calls);
        fmt_ns(c[3], sizeof c[3], (double)g->min_ns);
        fmt_ns(c[4], sizeof c[4], (double)g->max_ns);
        fmt_ns(c[5], sizeof c[5], (double)g->p50_ns);
        fmt_ns(c[6], sizeof c[6], (double)g->p99_ns);
        fmt_pct(c[7], sizeof c[7], r->kernel_ns > 0 ? 100.0 * g->total_ns / r->kernel_ns : 0);
        put_hotspot_row(out, name_w, g->name, cp);
    }
    if (ng > shown) fprintf(out, "  ... and %zu more name%s\n", ng - shown, plural(ng - shown));
    char total[32];
    fmt_ns(total, sizeof total, r->kernel_ns);
    fprintf(out, "\n  %zu kernel%s, %zu distinct name%s, %s GPU time\n", n, plural(n), ng,
            plural(ng), total);
}

static void put_launch_row(FILE *out, size_t name_w, const char *name,
                           const char *const c[GPUFL_REPORT_LGROUP_CELLS]) {
    static const size_t width[GPUFL_REPORT_LGROUP_CELLS] = {6, 8, 6, 5, 4, 19, 9, 0};
    fputs("  ", out);
    put_cell(out, name, name_w, 0);
    for (int i = 0; i < GPUFL_REPORT_LGROUP_CELLS; i++) {
        fputc(' ', out);
        put_cell(out, c[i], width[i], width[i] > 0);
    }
    fputc('\n', out);
}

/* Launch rows (engines that time no kernels): launches per kernel and configuration. */
static void put_launches(FILE *out, const gpufl__report_t *r) {
    size_t ng = r->n_lgroups, n = r->m->n_launches;
    if (!ng) return;
    size_t shown = gpufl__report_top(r, ng);
    size_t name_w = 6;
    for (size_t i = 0; i < shown; i++) {
        size_t w = text_width(r->lgroups[i].name);
        if (w > name_w) name_w = w;
    }
    if (name_w > NAME_COL_MAX) name_w = NAME_COL_MAX;
    fprintf(out, "\nKernel launches\n");
    fprintf(out, "  %zu launch%s of %zu kernel%s, top %zu configuration%s by launches\n", n,
            n == 1 ? "" : "es", r->launch_names, plural(r->launch_names), shown, plural(shown));
    fprintf(out, "  launch rows: the host's launch calls, no GPU time\n");
    fprintf(out, "  config: kernel_config id; scopes: scope paths launched in; block: threads per "
                 "block;\n  regs: per thread; smem: per block, static+dynamic; occupancy: "
                 "theoretical; grid: not\n  recorded\n\n");
    static const char *const heads[GPUFL_REPORT_LGROUP_CELLS] = {
        "config", "launches", "scopes", "block", "regs", "smem", "occupancy", "limiter"};
    put_launch_row(out, name_w, "kernel", heads);
    for (size_t i = 0; i < shown; i++) {
        char c[GPUFL_REPORT_LGROUP_CELLS][GPUFL_REPORT_KCONF_CELL_BYTES];
        const char *cp[GPUFL_REPORT_LGROUP_CELLS];
        gpufl__report_lgroup_cells(&r->lgroups[i], c);
        for (int k = 0; k < GPUFL_REPORT_LGROUP_CELLS; k++) cp[k] = c[k];
        put_launch_row(out, name_w, r->lgroups[i].name, cp);
    }
    if (ng > shown)
        fprintf(out, "  ... and %zu more configuration%s\n", ng - shown, plural(ng - shown));
    if (r->launches_without_config)
        fprintf(out, "  %zu launch%s without a kernel_config record (config \"-\" or \"?\")\n",
                r->launches_without_config, r->launches_without_config == 1 ? "" : "es");
}

static void put_copy_row(FILE *out, const char *dir, const char *const c[6]) {
    fputs("  ", out);
    put_cell(out, dir, 14, 0);
    for (int i = 0; i < 6; i++) {
        fputc(' ', out);
        put_cell(out, c[i], i == 0 ? 6 : i == 3 ? 12 : 9, 1);
    }
    fputc('\n', out);
}

static void put_copies(FILE *out, const gpufl__report_t *r) {
    size_t n = r->m->n_copies;
    if (!n) return;
    char total[32];
    fmt_bytes(total, sizeof total, r->copy_bytes);
    fprintf(out, "\nMemory transfers\n");
    fprintf(out, "  %zu cop%s, %s; bandwidth: bytes / total time\n\n", n, n == 1 ? "y" : "ies",
            total);
    static const char *const heads[6] = {"count",     "bytes",    "time",
                                         "bandwidth", "pageable", "pinned"};
    put_copy_row(out, "direction", heads);
    for (int d = 0; d < GPUFL_REPORT_DIR_COUNT; d++) {
        const gpufl__report_dir_t *a = &r->dirs[d];
        if (!a->count) continue;
        char c[6][32];
        const char *cp[6] = {c[0], c[1], c[2], c[3], c[4], c[5]};
        snprintf(c[0], sizeof c[0], "%zu", a->count);
        fmt_bytes(c[1], sizeof c[1], a->bytes);
        fmt_ns(c[2], sizeof c[2], a->time_ns);
        if (a->time_ns > 0) {
            char num[20];
            sig3(num, sizeof num, a->bytes / (a->time_ns / 1e9) / (1024.0 * 1024.0 * 1024.0));
            snprintf(c[3], sizeof c[3], "%s GiB/s", num);
        } else {
            snprintf(c[3], sizeof c[3], "-");
        }
        if (d == GPUFL_REPORT_DIR_HTOD || d == GPUFL_REPORT_DIR_DTOH) {
            snprintf(c[4], sizeof c[4], "%zu", a->pageable);
            snprintf(c[5], sizeof c[5], "%zu", a->pinned);
        } else {
            snprintf(c[4], sizeof c[4], "-");
            snprintf(c[5], sizeof c[5], "-");
        }
        put_copy_row(out, gpufl__report_dir_name(d), cp);
    }
}

/* ---------------------------------------------------------------------- */
/* Kernel details: launch configurations and occupancy (Trace engine)       */
/* ---------------------------------------------------------------------- */

#define KERNEL_NAME_MAX 100 /* widest kernel name line, in characters */
#define DETAIL_COLS     GPUFL_REPORT_KCONF_CELLS

static void put_detail_row(FILE *out, const char *const c[DETAIL_COLS]) {
    static const size_t width[DETAIL_COLS] = {6, 6, 9, 14, 12, 5, 19, 8, 9, 7, 14, 0};
    fputs("    ", out);
    for (int i = 0; i < DETAIL_COLS; i++) {
        if (i) fputc(' ', out);
        if (width[i])
            put_cell(out, c[i], width[i], 1);
        else
            fputs(c[i], out);
    }
    fputc('\n', out);
}

#define fmt_int gpufl__report_fmt_count

static void put_kconf(FILE *out, const gpufl__report_kconf_t *c) {
    char v[GPUFL_REPORT_KCONF_CELLS][GPUFL_REPORT_KCONF_CELL_BYTES];
    const char *cp[DETAIL_COLS];
    gpufl__report_kconf_cells(c, " *", v);
    for (int i = 0; i < DETAIL_COLS; i++) cp[i] = v[i];
    put_detail_row(out, cp);
}

/* Footnotes for the groups shown: config ids without a record, why the
 * occupancy is unknown, configs without a breakdown, and configs whose
 * limits do not give the driver's blocks per SM. */
static void put_kconf_notes(FILE *out, const gpufl__report_kconf_t *g, size_t ng) {
    size_t no_breakdown = 0;
    for (size_t i = 0; i < ng; i++) {
        const gpufl__model_kernel_config_t *r = g[i].rec;
        if (g[i].config > 0 && !r)
            fprintf(out, "  ? config %lld: no kernel_config record in the log\n",
                    (long long)g[i].config);
        if (!r) continue;
        if (*r->occupancy_why) {
            size_t same = 0, seen = 0;
            for (size_t k = 0; k < ng; k++) {
                const char *why = g[k].rec ? g[k].rec->occupancy_why : "";
                if (strcmp(why, r->occupancy_why) != 0) continue;
                seen += k < i;
                same++;
            }
            if (!seen)
                fprintf(out, "  occupancy unknown for %zu configuration%s: %s\n", same,
                        plural(same), r->occupancy_why);
            continue;
        }
        if (!gpufl__report_has_limits(r)) {
            no_breakdown++;
            continue;
        }
        if (r->breakdown_agrees != 0) continue;
        int64_t lim[4] = {r->limit_warps, r->limit_registers, r->limit_smem, r->limit_blocks};
        int64_t low = -1;
        for (int k = 0; k < 4; k++)
            if (lim[k] >= 0 && (low < 0 || lim[k] < low)) low = lim[k];
        char a[24], b[24];
        fmt_int(a, sizeof a, low);
        fmt_int(b, sizeof b, r->blocks_per_sm);
        fprintf(out,
                "  * config %lld: the limits allow %s blocks per SM, the occupancy calculator "
                "says %s (breakdown_agrees false)\n",
                (long long)r->id, a, b);
    }
    if (no_breakdown)
        fprintf(out, "  limits unknown for %zu configuration%s: no breakdown rules for the GPU\n",
                no_breakdown, plural(no_breakdown));
}

static void put_kernel_details(FILE *out, const gpufl__report_t *r) {
    if (!r->m->n_kernels) return;
    const gpufl__report_kconf_t *g = r->kconfs;
    size_t ng = r->n_kconfs, names = r->kernel_names, configs = r->configs;
    size_t unconfigured = r->unconfigured;
    fprintf(out, "\nKernel details\n");
    if (configs) {
        fprintf(out, "  %zu kernel name%s, %zu launch configuration%s", names, plural(names),
                configs, plural(configs));
        if (unconfigured)
            fprintf(out, ", %zu launch%s without one", unconfigured, unconfigured == 1 ? "" : "es");
    } else {
        fprintf(out, "  %zu kernel name%s; no launch configuration (kernel_config) in the log",
                names, plural(names));
    }
    fprintf(out, "; by total GPU time\n");
    fprintf(out, "  config: kernel_config id; regs: per thread; smem: per block; local: per thread "
                 "(spills);\n  occupancy: theoretical, active/max warps per SM; limits: blocks "
                 "per SM that warps,\n  registers, shared memory and the block limit allow; "
                 "limiter: the smallest\n\n");
    static const char *const heads[DETAIL_COLS] = {
        "config",          "calls", "total",     "grid",  "block",          "regs",
        "smem static+dyn", "local", "occupancy", "warps", "limits w/r/s/b", "limiter"};
    put_detail_row(out, heads);
    size_t shown = 0, end = 0;
    for (size_t i = 0, j; i < ng && shown < gpufl__report_top(r, names); i = j) {
        for (j = i; j < ng && g[j].rank == g[i].rank; j++) {
        }
        char total[32];
        size_t w = text_width(g[i].name);
        fmt_ns(total, sizeof total, g[i].name_total_ns);
        fputs("  ", out);
        put_cell(out, g[i].name, w < KERNEL_NAME_MAX ? w : KERNEL_NAME_MAX, 0);
        fprintf(out, "  %s in %zu call%s\n", total, g[i].name_calls, plural(g[i].name_calls));
        for (size_t k = i; k < j && k < i + GPUFL_REPORT_CONFIGS_MAX; k++) put_kconf(out, &g[k]);
        if (j - i > GPUFL_REPORT_CONFIGS_MAX)
            fprintf(out, "    ... and %zu more configuration%s\n", j - i - GPUFL_REPORT_CONFIGS_MAX,
                    plural(j - i - GPUFL_REPORT_CONFIGS_MAX));
        shown++;
        end = j;
    }
    if (names > shown)
        fprintf(out, "  ... and %zu more kernel name%s\n", names - shown, plural(names - shown));
    put_kconf_notes(out, g, end);
}

/* ---------------------------------------------------------------------- */
/* GPU time per scope (Trace engine rows attributed to scopes)              */
/* ---------------------------------------------------------------------- */

/* "12 kernels, 2 copies, 1 memset", or "-". */
static void fmt_work(char *buf, size_t size, const gpufl__model_gpu_work_t *w) {
    size_t n = 0;
    buf[0] = '\0';
    if (w->kernels)
        cat(buf, size, &n, "%llu kernel%s", (unsigned long long)w->kernels,
            plural((size_t)w->kernels));
    if (w->copies)
        cat(buf, size, &n, "%s%llu cop%s", n ? ", " : "", (unsigned long long)w->copies,
            w->copies == 1 ? "y" : "ies");
    if (w->memsets)
        cat(buf, size, &n, "%s%llu memset%s", n ? ", " : "", (unsigned long long)w->memsets,
            plural((size_t)w->memsets));
    if (!n) snprintf(buf, size, "-");
}

static int has_work(const gpufl__model_gpu_work_t *w) {
    return w->kernels + w->copies + w->memsets > 0;
}

static void put_scope_gpu_row(FILE *out, size_t name_w, const char *label, const char *host,
                              const char *gpu, const char *self, const char *work) {
    fputs("  ", out);
    put_cell(out, label, name_w, 0);
    fputc(' ', out);
    put_cell(out, host, 9, 1);
    fputc(' ', out);
    put_cell(out, gpu, 9, 1);
    fputc(' ', out);
    put_cell(out, self, 9, 1);
    fprintf(out, "  %s\n", work);
}

/* Kernel lines under a scope begin with a mark, unlike its child scopes. */
#define KERNEL_MARK       "\xc2\xb7 "
#define KERNEL_MARK_WIDTH 2

/* The widest label of a scope row at depth and of its kernel lines. */
static size_t gpu_label_width(size_t w, size_t depth, const char *name,
                              const gpufl__model_scope_gpu_t *g) {
    size_t d = depth < INDENT_MAX ? depth : INDENT_MAX;
    if (2 * d + text_width(name) > w) w = 2 * d + text_width(name);
    d = depth + 1 < INDENT_MAX ? depth + 1 : INDENT_MAX;
    for (size_t i = 0; i < g->n_top; i++) {
        size_t kw = 2 * d + KERNEL_MARK_WIDTH + text_width(g->top[i].name);
        if (kw > w) w = kw;
    }
    return w;
}

/* A scope row (host < 0: none) and its kernel lines below it. */
static void put_scope_gpu(FILE *out, size_t name_w, char *label, size_t depth, const char *name,
                          double host, const gpufl__model_scope_gpu_t *g) {
    char h[32], t[32], self[32], work[128];
    if (host >= 0)
        fmt_ns(h, sizeof h, host);
    else
        snprintf(h, sizeof h, "-");
    fmt_ns(t, sizeof t, gpufl__model_gpu_ns(&g->total));
    fmt_ns(self, sizeof self, gpufl__model_gpu_ns(&g->self));
    fmt_work(work, sizeof work, &g->total);
    indented(label, depth, name);
    put_scope_gpu_row(out, name_w, label, h, t, self, work);
    for (size_t i = 0; i < g->n_top; i++) {
        const gpufl__model_top_kernel_t *k = &g->top[i];
        fmt_ns(t, sizeof t, k->total_ns);
        snprintf(work, sizeof work, "%llu call%s", (unsigned long long)k->calls,
                 plural((size_t)k->calls));
        snprintf(h, sizeof h, KERNEL_MARK);
        indented(label, depth + 1, h);
        size_t len = strlen(label);
        snprintf(label + len, LABEL_SIZE - len, "%.*s", NAME_COL_MAX * 4, k->name);
        put_scope_gpu_row(out, name_w, label, "", "", t, work);
    }
    if (g->kernel_names > g->n_top) {
        snprintf(work, sizeof work, KERNEL_MARK "... and %zu more kernel name%s",
                 g->kernel_names - g->n_top, plural(g->kernel_names - g->n_top));
        indented(label, depth + 1, work);
        put_scope_gpu_row(out, name_w, label, "", "", "", "");
    }
}

static int put_scopes_gpu(FILE *out, const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    if (!r->scope_gpu_shown) return 0;
    fprintf(out, "\nGPU time per scope\n");
    if (!m->gpu_scoped_rows) {
        fprintf(out, "  no kernel, copy or memset names a scope (none was open at a launch, or "
                     "the log's\n  Trace engine does not attribute work to scopes)\n");
        return 0;
    }
    char *label = malloc(LABEL_SIZE);
    if (!label) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    size_t name_w = 5;
    for (size_t i = 0; i < r->n_scope_gpu_rows; i++) {
        const gpufl__model_scope_path_t *p = r->scope_gpu_rows[i].path;
        char shown[LABEL_SIZE];
        name_w = gpu_label_width(name_w, p->depth,
                                 gpufl__report_scope_label(p, shown, sizeof shown), &p->gpu);
    }
    name_w = gpu_label_width(name_w, 0, "(unknown scope)", &m->gpu_unknown_scope);
    name_w = gpu_label_width(name_w, 0, "(no scope)", &m->gpu_no_scope);
    if (name_w > NAME_COL_MAX) name_w = NAME_COL_MAX;

    char a[32], b[32];
    fmt_ns(a, sizeof a, r->gpu_in_scopes_ns);
    fmt_ns(b, sizeof b, r->gpu_all_ns);
    fprintf(out, "  %s of %s GPU time (kernels, copies, memsets) ran in scopes\n", a, b);
    int64_t lost = r->unattributed;
    if (lost > 0)
        fprintf(out,
                "  %lld record%s without a launch note (launched before the session, or the note "
                "was\n  overwritten) count%s under (no scope)\n",
                (long long)lost, lost == 1 ? "" : "s", lost == 1 ? "s" : "");
    fprintf(out, "  host: wall time of all calls; gpu: GPU time of the work launched in the scope "
                 "and in\n  the scopes inside it (work counts it); self: in the scope alone; "
                 "\xc2\xb7 kernels launched\n  in the scope itself, by GPU time\n");
    if (r->scope_gpu_start_end)
        fprintf(out, "  [nvtx start/end]: the work launched while the range was open, by any "
                     "thread; it also\n  counts where it was launched (not in the sum above)\n");
    size_t hidden = r->scope_gpu_hidden;
    if (hidden)
        fprintf(out, "  %zu scope path%s without GPU work not shown\n", hidden, plural(hidden));
    fputc('\n', out);
    put_scope_gpu_row(out, name_w, "scope", "host", "gpu", "self", "work");
    for (size_t k = 0; k < r->n_scope_gpu_rows; k++) {
        const gpufl__model_scope_path_t *p = r->scope_gpu_rows[k].path;
        char shown[LABEL_SIZE];
        put_scope_gpu(out, name_w, label, p->depth,
                      gpufl__report_scope_label(p, shown, sizeof shown),
                      p->calls ? p->total_ns : -1, &p->gpu);
    }
    if (has_work(&m->gpu_unknown_scope.self))
        put_scope_gpu(out, name_w, label, 0, "(unknown scope)", -1, &m->gpu_unknown_scope);
    if (has_work(&m->gpu_no_scope.self))
        put_scope_gpu(out, name_w, label, 0, "(no scope)", -1, &m->gpu_no_scope);
    free(label);
    return 0;
}

static void put_problems(FILE *out, const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    size_t total = r->summary.problems;
    if (!total) return;
    fprintf(out, "\nLog problems\n");
    for (size_t i = 0; i < m->n_warnings && i < GPUFL_REPORT_PROBLEMS_MAX; i++) {
        const gpufl__model_warning_t *w = &m->warnings[i];
        if (!*w->file)
            fprintf(out, "  session: %s\n", w->message);
        else if (!w->line)
            fprintf(out, "  %s: %s\n", w->file, w->message);
        else
            fprintf(out, "  %s:%llu: %s\n", w->file, (unsigned long long)w->line, w->message);
    }
    if (total > GPUFL_REPORT_PROBLEMS_MAX)
        fprintf(out, "  ... and %zu more\n", total - GPUFL_REPORT_PROBLEMS_MAX);
}

/* ---------------------------------------------------------------------- */
/* Public                                                                   */
/* ---------------------------------------------------------------------- */

/* put_scopes and put_scopes_gpu may fail (no memory); the others cannot. */
static int put_insights_of(FILE *out, const gpufl__report_t *r) {
    put_insights(out, &r->insights);
    return 0;
}

#define SECTION(fn)                                                                                \
    static int section_##fn(FILE *out, const gpufl__report_t *r) {                                 \
        fn(out, r);                                                                                \
        return 0;                                                                                  \
    }
SECTION(put_summary)
SECTION(put_system)
SECTION(put_gpu)
SECTION(put_kernel_details)
SECTION(put_copies)
SECTION(put_problems)
#undef SECTION

static int section_kernels(FILE *out, const gpufl__report_t *r) {
    put_kernels(out, r);
    put_launches(out, r);
    return 0;
}

static int section_pc(FILE *out, const gpufl__report_t *r) {
    gpufl__report_text_pc(r, out);
    return 0;
}

static int section_sass_metrics(FILE *out, const gpufl__report_t *r) {
    gpufl__report_text_sass_metrics(r, out);
    return 0;
}

static int section_ops(FILE *out, const gpufl__report_t *r) {
    gpufl__report_text_ops(r, out);
    return 0;
}

static int section_range(FILE *out, const gpufl__report_t *r) {
    gpufl__report_text_range(r, out);
    return 0;
}

/* The sections of the text report, in its order. */
static const struct {
    const char *name;
    int (*put)(FILE *out, const gpufl__report_t *r);
} sections[] = {
    {"summary", section_put_summary},
    {"insights", put_insights_of},
    {"scopes", put_scopes},
    {"system", section_put_system},
    {"gpu", section_put_gpu},
    {"kernels", section_kernels},
    {"kernel_details", section_put_kernel_details},
    {"copies", section_put_copies},
    {"scope_gpu", put_scopes_gpu},
    {"framework_ops", section_ops},
    {"pc_sampling", section_pc},
    {"sass_metrics", section_sass_metrics},
    {"hardware_counters", section_range},
    {"problems", section_put_problems},
};
#define N_SECTIONS (sizeof sections / sizeof sections[0])

int gpufl__report_render_text(const gpufl__report_t *r, FILE *out) {
    fprintf(out, "gpufl report: %s\n", r->summary.app);
    size_t w = text_width(r->summary.app) + 14;
    for (size_t i = 0; i < w; i++) fputc('=', out);
    fputs("\n\n", out);
    for (size_t i = 0; i < N_SECTIONS; i++) {
        int rc = sections[i].put(out, r);
        if (rc) return rc;
    }
    return 0;
}

int gpufl__report_render_text_section(const gpufl__report_t *r, const char *section, FILE *out) {
    char names[256];
    size_t n = 0;
    for (size_t i = 0; i < N_SECTIONS; i++) {
        if (section && strcmp(section, sections[i].name) == 0) return sections[i].put(out, r);
        gpufl__report_cat(names, sizeof names, &n, "%s%s", i ? ", " : "", sections[i].name);
    }
    return gpufl__set_error(GPUFL_EINVAL, "unknown report section '%s' (%s)",
                            section ? section : "", names);
}

size_t gpufl__report_top(const gpufl__report_t *r, size_t n) {
    size_t top = r->top_n ? r->top_n : GPUFL_REPORT_HOTSPOTS_MAX;
    return n < top ? n : top;
}

int gpufl_report_format_parse(const char *name, gpufl_report_format_t *out) {
    static const struct {
        const char *name;
        gpufl_report_format_t fmt;
    } names[] = {{"text", GPUFL_REPORT_TEXT},
                 {"json", GPUFL_REPORT_JSON},
                 {"markdown", GPUFL_REPORT_MARKDOWN},
                 {"md", GPUFL_REPORT_MARKDOWN},
                 {"html", GPUFL_REPORT_HTML}};
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(names[i].name, name) == 0) {
            *out = names[i].fmt;
            return 0;
        }
    }
    return gpufl__set_error(GPUFL_EINVAL, "unknown report format '%s' (text, json, markdown, html)",
                            name ? name : "");
}

int gpufl__report_render(const gpufl__report_t *r, gpufl_report_format_t fmt, FILE *out) {
    switch (fmt) {
    case GPUFL_REPORT_TEXT: return gpufl__report_render_text(r, out);
    case GPUFL_REPORT_JSON: return gpufl__report_render_json(r, out);
    case GPUFL_REPORT_MARKDOWN: return gpufl__report_render_markdown(r, out);
    case GPUFL_REPORT_HTML: return gpufl__report_render_html(r, out);
    }
    return gpufl__set_error(GPUFL_EINVAL, "report: unknown format %d", (int)fmt);
}

int gpufl__report_write_format(const gpufl__model_t *m, gpufl_report_format_t fmt, FILE *out) {
    if (!m || !out) return gpufl__set_error(GPUFL_EINVAL, "report: no model or no output");
    gpufl__report_t r;
    int rc = gpufl__report_build(m, &r);
    if (!rc) rc = gpufl__report_render(&r, fmt, out);
    gpufl__report_free(&r);
    if (rc) return rc;
    if (fflush(out) != 0 || ferror(out))
        return gpufl__set_error(GPUFL_EIO, "report: writing the report failed");
    return 0;
}

int gpufl__report_write(const gpufl__model_t *m, FILE *out) {
    return gpufl__report_write_format(m, GPUFL_REPORT_TEXT, out);
}

int gpufl__report_session_dir(const char *session_dir, FILE *out) {
    gpufl__model_t *m = NULL;
    int rc = gpufl__model_load(&m, session_dir);
    if (rc) return rc;
    rc = gpufl__report_write(m, out);
    gpufl__model_destroy(m);
    return rc;
}
