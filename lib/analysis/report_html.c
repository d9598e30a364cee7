/*
 * report_html.c - the report as ONE self-contained HTML file: inline CSS and
 * inline SVG, no script, font, image or link to load, so it opens offline.
 * The sections come from report_doc.c; this file adds the timeline (kernels
 * per device and stream, scopes per thread, copies and memsets per device)
 * and the metric plots (GPU utilisation, memory used, power and SM clock per
 * device, host CPU). Big sessions stay small files: a lane of more than
 * BARS_MAX bars is drawn as BARS_MAX time bins of merged bars, a plot as at
 * most PLOT_POINTS points (bin means), and the page says so.
 */
#include "analysis/report.h"

#include "core/error.h"

#include <stdlib.h>
#include <string.h>

#define LANES_MAX   48   /* timeline lanes drawn */
#define BARS_MAX    1000 /* bars per lane before merging into bins */
#define DEPTH_ROWS  4    /* scope rows per thread lane (deeper ones share the last) */
#define TL_WIDTH    1000 /* time axis, px */
#define TL_LABEL    170  /* lane label column, px */
#define ROW_H       12
#define PLOT_W      560
#define PLOT_H      110
#define PLOT_POINTS 560

/* ---------------------------------------------------------------------- */
/* Escaping and the emitter                                                 */
/* ---------------------------------------------------------------------- */

static void esc(FILE *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t') fputc(*s, out);
        }
    }
}

static void h_heading(FILE *out, int level, const char *text) {
    fprintf(out, "<h%d>", level);
    esc(out, text);
    fprintf(out, "</h%d>\n", level);
}

static void h_para(FILE *out, const char *text) {
    fputs("<p>", out);
    esc(out, text);
    fputs("</p>\n", out);
}

static void h_fields_begin(FILE *out) { fputs("<table class=\"f\">\n", out); }

static void h_field(FILE *out, const char *label, const char *value) {
    fputs("<tr><th>", out);
    esc(out, label);
    fputs("</th><td>", out);
    esc(out, value);
    fputs("</td></tr>\n", out);
}

static void h_fields_end(FILE *out) { fputs("</table>\n", out); }

static void h_table_begin(FILE *out, size_t cols, const char *const *heads, const char *aligns) {
    fputs("<table class=\"t\">\n<tr>", out);
    for (size_t i = 0; i < cols; i++) {
        fputs(aligns[i] == 'r' ? "<th class=\"r\">" : "<th>", out);
        esc(out, heads[i]);
        fputs("</th>", out);
    }
    fputs("</tr>\n", out);
}

static void h_row(FILE *out, size_t cols, const char *const *cells) {
    fputs("<tr>", out);
    for (size_t i = 0; i < cols; i++) {
        /* the first column is a name, the others mostly numbers */
        fputs(i ? "<td class=\"r\">" : "<td>", out);
        esc(out, cells[i]);
        fputs("</td>", out);
    }
    fputs("</tr>\n", out);
}

static void h_table_end(FILE *out) { fputs("</table>\n", out); }

/* ---------------------------------------------------------------------- */
/* Timeline                                                                 */
/* ---------------------------------------------------------------------- */

enum { LANE_KERNEL, LANE_COPY, LANE_SCOPE };

typedef struct lane {
    int kind;
    int64_t device, stream; /* stream: the tid for a scope lane */
    size_t count;           /* items */
    size_t first;           /* into the lane-ordered index */
} lane_t;

typedef struct timeline {
    lane_t lanes[LANES_MAX];
    size_t n_lanes;
    uint64_t not_drawn; /* items of lanes past LANES_MAX */
    int64_t t0, t1;
} timeline_t;

/* The lane of (kind, device, stream), added when new; -1 past the cap. */
static int lane_of(timeline_t *t, int *last, int kind, int64_t device, int64_t stream) {
    if (*last >= 0) {
        const lane_t *l = &t->lanes[*last];
        if (l->kind == kind && l->device == device && l->stream == stream) return *last;
    }
    for (size_t i = 0; i < t->n_lanes; i++) {
        const lane_t *l = &t->lanes[i];
        if (l->kind == kind && l->device == device && l->stream == stream) return *last = (int)i;
    }
    if (t->n_lanes == LANES_MAX) return -1;
    t->lanes[t->n_lanes] = (lane_t){kind, device, stream, 0, 0};
    return *last = (int)t->n_lanes++;
}

static int cmp_lane(const void *a, const void *b) {
    const lane_t *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return (x->stream > y->stream) - (x->stream < y->stream);
}

/* One timed item: a kernel, copy, memset or scope. */
typedef struct item {
    int64_t start, end;
    const char *name; /* NULL for copies and memsets */
    int depth;
} item_t;

static item_t get_item(const gpufl_model_t *m, size_t i) {
    size_t nk = m->n_kernels, nc = m->n_copies, nm = m->n_memsets;
    if (i < nk)
        return (item_t){m->kernels[i].start_ns, m->kernels[i].end_ns, m->kernels[i].demangled, 0};
    i -= nk;
    if (i < nc) return (item_t){m->copies[i].start_ns, m->copies[i].end_ns, NULL, 0};
    i -= nc;
    if (i < nm) return (item_t){m->memsets[i].start_ns, m->memsets[i].end_ns, NULL, 1};
    i -= nm;
    const gpufl_model_scope_t *s = &m->scopes[i];
    return (item_t){s->begin_ns, s->open ? -1 : s->end_ns, s->path,
                    s->depth > 0 ? s->depth - 1 : 0};
}

static int item_lane(const gpufl_model_t *m, timeline_t *t, int *last, size_t i) {
    size_t nk = m->n_kernels, nc = m->n_copies, nm = m->n_memsets;
    if (i < nk) return lane_of(t, last, LANE_KERNEL, m->kernels[i].device, m->kernels[i].stream);
    i -= nk;
    if (i < nc) return lane_of(t, last, LANE_COPY, m->copies[i].device, 0);
    i -= nc;
    if (i < nm) return lane_of(t, last, LANE_COPY, m->memsets[i].device, 0);
    i -= nm;
    return lane_of(t, last, LANE_SCOPE, 0, m->scopes[i].tid);
}

static uint32_t hash_name(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Differences of times in double: a damaged log's extreme times must not
 * overflow int64 (the span is at least 1). */
static double span_of(int64_t t0, int64_t t1) {
    double d = (double)t1 - (double)t0;
    return d >= 1 ? d : 1;
}

static double x_of(const timeline_t *t, int64_t ns) {
    return TL_LABEL + ((double)ns - (double)t->t0) / span_of(t->t0, t->t1) * TL_WIDTH;
}

static void bar(FILE *out, const timeline_t *t, const item_t *it, double y, double h,
                const char *fill) {
    char d[32];
    int64_t end = it->end >= it->start ? it->end : t->t1;
    double x0 = x_of(t, it->start), x1 = x_of(t, end);
    gpufl__report_fmt_ns(d, sizeof d, (double)(end - it->start));
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
            x0, y, x1 - x0 < 0.5 ? 0.5 : x1 - x0, h, fill);
    if (it->name) esc(out, it->name);
    fprintf(out, "%s%s%s</title></rect>\n", it->name ? " (" : "", d, it->name ? ")" : "");
}

/* Draws a lane's items, each as a bar or, past BARS_MAX, merged into bins. */
static void draw_lane(FILE *out, const gpufl_model_t *m, const timeline_t *t, const lane_t *l,
                      const size_t *idx, double y, double *bins_ns, size_t *bins_n) {
    int rows = l->kind == LANE_SCOPE ? DEPTH_ROWS : 1;
    double h = ROW_H - 2;
    static const char *const kind_fill[] = {"#4878d0", "#ee854a", "#6acc64"};
    if (l->count <= BARS_MAX) {
        for (size_t k = 0; k < l->count; k++) {
            item_t it = get_item(m, idx[l->first + k]);
            char fill[32];
            if (l->kind == LANE_KERNEL && it.name)
                snprintf(fill, sizeof fill, "hsl(%u,55%%,55%%)", hash_name(it.name) % 360);
            else
                snprintf(fill, sizeof fill, "%s", kind_fill[l->kind]);
            int row = it.depth < rows ? it.depth : rows - 1;
            bar(out, t, &it, y + row * ROW_H, h, fill);
        }
        return;
    }
    memset(bins_ns, 0, BARS_MAX * sizeof *bins_ns);
    memset(bins_n, 0, BARS_MAX * sizeof *bins_n);
    double span = span_of(t->t0, t->t1), bin_ns = span / BARS_MAX;
    for (size_t k = 0; k < l->count; k++) {
        item_t it = get_item(m, idx[l->first + k]);
        int64_t end = it.end >= it.start ? it.end : t->t1;
        size_t b = (size_t)((double)(it.start - t->t0) / span * BARS_MAX);
        if (b >= BARS_MAX) b = BARS_MAX - 1;
        bins_ns[b] += (double)(end - it.start);
        bins_n[b]++;
    }
    for (size_t b = 0; b < BARS_MAX; b++) {
        if (!bins_n[b]) continue;
        double busy = bins_ns[b] / bin_ns;
        if (busy > 1) busy = 1;
        char d[32];
        gpufl__report_fmt_ns(d, sizeof d, bins_ns[b]);
        fprintf(out,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                "fill-opacity=\"%.2f\"><title>%zu merged (%s)</title></rect>\n",
                TL_LABEL + (double)b * TL_WIDTH / BARS_MAX, y, (double)TL_WIDTH / BARS_MAX,
                rows * ROW_H - 2.0, kind_fill[l->kind], 0.25 + 0.75 * busy, bins_n[b], d);
    }
}

static void lane_label(char *buf, size_t size, const lane_t *l) {
    if (l->kind == LANE_KERNEL)
        snprintf(buf, size, "GPU %lld stream %lld", (long long)l->device, (long long)l->stream);
    else if (l->kind == LANE_COPY)
        snprintf(buf, size, "GPU %lld copies/memsets", (long long)l->device);
    else
        snprintf(buf, size, "thread %lld scopes", (long long)l->stream);
}

static int timeline(FILE *out, const gpufl_model_t *m) {
    size_t n = m->n_kernels + m->n_copies + m->n_memsets + m->n_scopes;
    fputs("<h2>Timeline</h2>\n", out);
    if (!n) {
        fputs("<p>no kernels, copies, memsets or scopes to draw</p>\n", out);
        return 0;
    }
    timeline_t *t = calloc(1, sizeof *t);
    int16_t *lane = malloc(n * sizeof *lane);
    size_t *idx = malloc(n * sizeof *idx);
    double *bins_ns = malloc(BARS_MAX * sizeof *bins_ns);
    size_t *bins_n = malloc(BARS_MAX * sizeof *bins_n);
    int rc = 0, last = -1;
    if (!t || !lane || !idx || !bins_ns || !bins_n) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for the HTML timeline");
        goto free_all;
    }
    t->t0 = INT64_MAX;
    t->t1 = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        item_t it = get_item(m, i);
        if (it.start < t->t0) t->t0 = it.start;
        if (it.start > t->t1) t->t1 = it.start;
        if (it.end > t->t1) t->t1 = it.end;
    }
    if (t->t1 <= t->t0) t->t1 = t->t0 < INT64_MAX ? t->t0 + 1 : t->t0;
    /* Lanes in a fixed order (kind, device, stream), then the items of each
     * lane together, in log order (a counting sort). */
    for (size_t i = 0; i < n; i++) lane[i] = (int16_t)item_lane(m, t, &last, i);
    lane_t by_key[LANES_MAX];
    memcpy(by_key, t->lanes, t->n_lanes * sizeof *by_key);
    qsort(by_key, t->n_lanes, sizeof *by_key, cmp_lane);
    int16_t remap[LANES_MAX];
    for (size_t i = 0; i < t->n_lanes; i++) {
        remap[i] = 0;
        for (size_t k = 0; k < t->n_lanes; k++)
            if (cmp_lane(&by_key[k], &t->lanes[i]) == 0) remap[i] = (int16_t)k;
    }
    memcpy(t->lanes, by_key, t->n_lanes * sizeof *by_key);
    for (size_t i = 0; i < n; i++) {
        if (lane[i] < 0) {
            t->not_drawn++;
            continue;
        }
        lane[i] = remap[lane[i]];
        t->lanes[lane[i]].count++;
    }
    for (size_t i = 0, at = 0; i < t->n_lanes; i++) t->lanes[i].first = at, at += t->lanes[i].count;
    size_t fill[LANES_MAX] = {0};
    for (size_t i = 0; i < n; i++)
        if (lane[i] >= 0) idx[t->lanes[lane[i]].first + fill[lane[i]]++] = i;

    double height = 24;
    for (size_t i = 0; i < t->n_lanes; i++)
        height += (t->lanes[i].kind == LANE_SCOPE ? DEPTH_ROWS : 1) * ROW_H + 4;
    char a[32], b[32];
    gpufl__report_fmt_ns(a, sizeof a, (double)t->t0);
    gpufl__report_fmt_ns(b, sizeof b, (double)t->t1);
    fprintf(out,
            "<p>Session time %s to %s (times since the session epoch). Kernels per device and "
            "stream, copies and memsets per device, scopes per thread (nested scopes one row "
            "lower, up to %d rows). Hover a bar for its name and duration. A lane of more than "
            "%d bars is drawn as %d time bins of merged bars (darker: busier).</p>\n",
            a, b, DEPTH_ROWS, BARS_MAX, BARS_MAX);
    fprintf(out, "<svg class=\"tl\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\">\n",
            TL_LABEL + TL_WIDTH + 10, height, TL_LABEL + TL_WIDTH + 10, height);
    double y = 4;
    for (size_t i = 0; i < t->n_lanes; i++) {
        const lane_t *l = &t->lanes[i];
        char label[96];
        lane_label(label, sizeof label, l);
        int rows = l->kind == LANE_SCOPE ? DEPTH_ROWS : 1;
        fprintf(out, "<text x=\"4\" y=\"%.1f\">%s%s</text>\n", y + ROW_H - 3, label,
                l->count > BARS_MAX ? " *" : "");
        fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                TL_LABEL, y + rows * ROW_H + 1, TL_LABEL + TL_WIDTH, y + rows * ROW_H + 1);
        draw_lane(out, m, t, l, idx, y, bins_ns, bins_n);
        y += rows * ROW_H + 4;
    }
    fprintf(out, "<text x=\"%d\" y=\"%.1f\">%s</text>\n", TL_LABEL, y + 12, a);
    fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", TL_LABEL + TL_WIDTH,
            y + 12, b);
    fputs("</svg>\n", out);
    for (size_t i = 0; i < t->n_lanes; i++)
        if (t->lanes[i].count > BARS_MAX) {
            fputs("<p>* merged: lanes with more bars than drawn individually</p>\n", out);
            break;
        }
    if (t->not_drawn)
        fprintf(out, "<p>%llu records in lanes past the first %d are not drawn</p>\n",
                (unsigned long long)t->not_drawn, LANES_MAX);
free_all:
    free(t);
    free(lane);
    free(idx);
    free(bins_ns);
    free(bins_n);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Metric plots                                                             */
/* ---------------------------------------------------------------------- */

/* A series: value v(i) >= 0 at time ts(i) for the samples i that match. */
typedef struct series {
    const gpufl_model_t *m;
    int64_t device; /* -1: host samples */
    int metric;
} series_t;

enum { M_UTIL, M_MEM, M_POWER, M_CLOCK, M_HOST_CPU };

/* Sample i of the series: its time and value (< 0: none). */
static double sample(const series_t *s, size_t i, int64_t *ts) {
    if (s->device < 0) {
        *ts = s->m->samples[i].ts_ns;
        return s->m->samples[i].cpu_pct;
    }
    const gpufl_model_gpu_sample_t *g = &s->m->gpu_samples[i];
    *ts = g->ts_ns;
    if (g->device != s->device) return -1;
    switch (s->metric) {
    case M_UTIL: return g->gpu_util_pct;
    case M_MEM: return g->mem_used_bytes < 0 ? -1 : (double)g->mem_used_bytes / 1073741824.0;
    case M_POWER: return g->power_mw < 0 ? -1 : (double)g->power_mw / 1000.0;
    default: return g->clock_sm_mhz;
    }
}

/* An upper bound for the y axis: 1, 2 or 5 times a power of ten. */
static double nice_max(double v) {
    double p = 1;
    if (v <= 0) return 1;
    while (p * 10 < v) p *= 10;
    while (p > v) p /= 10;
    return v <= p ? p : v <= 2 * p ? 2 * p : v <= 5 * p ? 5 * p : 10 * p;
}

static int plot(FILE *out, const series_t *s, const char *title, const char *unit, double fixed_max,
                double *sum, size_t *cnt) {
    size_t n = s->device < 0 ? s->m->n_samples : s->m->n_gpu_samples, have = 0;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN, ts;
    double vmax = 0;
    for (size_t i = 0; i < n; i++) {
        double v = sample(s, i, &ts);
        if (v < 0) continue;
        have++;
        if (ts < t0) t0 = ts;
        if (ts > t1) t1 = ts;
        if (v > vmax) vmax = v;
    }
    if (!have) return 0;
    if (t1 <= t0) t1 = t0 < INT64_MAX ? t0 + 1 : t0;
    double ymax = fixed_max > 0 ? fixed_max : nice_max(vmax);
    memset(sum, 0, PLOT_POINTS * sizeof *sum);
    memset(cnt, 0, PLOT_POINTS * sizeof *cnt);
    for (size_t i = 0; i < n; i++) {
        double v = sample(s, i, &ts);
        if (v < 0) continue;
        size_t b = (size_t)(((double)ts - (double)t0) / span_of(t0, t1) * (PLOT_POINTS - 1) + 0.5);
        if (b >= PLOT_POINTS) b = PLOT_POINTS - 1;
        sum[b] += v;
        cnt[b]++;
    }
    const int left = 60, top = 18, w = PLOT_W, h = PLOT_H;
    char a[32], b[32];
    gpufl__report_fmt_ns(a, sizeof a, (double)t0);
    gpufl__report_fmt_ns(b, sizeof b, (double)t1);
    fprintf(out, "<svg class=\"plot\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            left + w + 10, top + h + 30, left + w + 10, top + h + 30);
    fprintf(out, "<text x=\"%d\" y=\"12\">", left);
    esc(out, title);
    fprintf(out, " (%s)</text>\n", unit);
    fprintf(out,
            "<path d=\"M%d %d V%d H%d\" stroke=\"#555\" fill=\"none\"/>\n"
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%g</text>\n"
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n"
            "<text x=\"%d\" y=\"%d\">%s</text>\n"
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n",
            left, top, top + h, left + w, left - 4, top + 8, ymax, left - 4, top + h, left,
            top + h + 16, a, left + w, top + h + 16, b);
    fputs("<polyline fill=\"none\" stroke=\"#4878d0\" stroke-width=\"1.5\" points=\"", out);
    for (size_t i = 0; i < PLOT_POINTS; i++) {
        if (!cnt[i]) continue;
        double v = sum[i] / (double)cnt[i];
        if (v > ymax) v = ymax;
        fprintf(out, "%.1f,%.1f ", left + (double)i * w / (PLOT_POINTS - 1),
                top + h - v / ymax * h);
    }
    fputs("\"/>\n</svg>\n", out);
    return 1;
}

static int plots(FILE *out, const gpufl_model_t *m) {
    double *sum = malloc(PLOT_POINTS * sizeof *sum);
    size_t *cnt = malloc(PLOT_POINTS * sizeof *cnt);
    if (!sum || !cnt) {
        free(sum);
        free(cnt);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the HTML plots");
    }
    fputs("<h2>Metric plots</h2>\n", out);
    fprintf(out,
            "<p>Sample values over time; at most %d points per plot (means of the samples "
            "in each time bin).</p>\n",
            PLOT_POINTS);
    int drawn = 0;
    for (size_t g = 0; g < m->n_gpus; g++) {
        char title[96];
        series_t s = {m, m->gpus[g].device, M_UTIL};
        fprintf(out, "<h3>GPU %lld</h3>\n<div class=\"plots\">\n", (long long)m->gpus[g].device);
        snprintf(title, sizeof title, "GPU %lld utilisation", (long long)s.device);
        drawn += plot(out, &s, title, "%", 100, sum, cnt);
        s.metric = M_MEM;
        snprintf(title, sizeof title, "GPU %lld memory used", (long long)s.device);
        drawn += plot(out, &s, title, "GiB", 0, sum, cnt);
        s.metric = M_POWER;
        snprintf(title, sizeof title, "GPU %lld power", (long long)s.device);
        drawn += plot(out, &s, title, "W", 0, sum, cnt);
        s.metric = M_CLOCK;
        snprintf(title, sizeof title, "GPU %lld SM clock", (long long)s.device);
        drawn += plot(out, &s, title, "MHz", 0, sum, cnt);
        fputs("</div>\n", out);
    }
    series_t host = {m, -1, M_HOST_CPU};
    fputs("<h3>Host</h3>\n<div class=\"plots\">\n", out);
    drawn += plot(out, &host, "host CPU", "%", 100, sum, cnt);
    fputs("</div>\n", out);
    if (!drawn) fputs("<p>no samples to plot</p>\n", out);
    free(sum);
    free(cnt);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The page                                                                 */
/* ---------------------------------------------------------------------- */

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1300px}"
    "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:28px}"
    "h3{font-size:15px}table{border-collapse:collapse;margin:8px 0}"
    "td,th{padding:2px 8px;text-align:left;vertical-align:top}"
    "table.t td,table.t th{border-bottom:1px solid #eee}"
    "table.t tr:first-child th{border-bottom:2px solid #ccc}"
    "table.f th{font-weight:normal;color:#555;white-space:nowrap}"
    ".r{text-align:right;font-variant-numeric:tabular-nums}"
    "svg{font:11px system-ui,sans-serif;display:block}svg.tl{border:1px solid #eee}"
    ".plots{display:flex;flex-wrap:wrap;gap:8px}";

int gpufl__report_render_html(const gpufl_report_t *r, FILE *out) {
    const gpufl_report_emitter_t e = {out,          h_heading,     h_para, h_fields_begin, h_field,
                                      h_fields_end, h_table_begin, h_row,  h_table_end};
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>gpufl "
          "report: ",
          out);
    esc(out, r->summary.app);
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>gpufl report: ", css);
    esc(out, r->summary.app);
    fputs("</h1>\n", out);
    int rc = gpufl__report_doc_head(&e, r);
    if (!rc) rc = timeline(out, r->m);
    if (!rc) rc = plots(out, r->m);
    if (!rc) rc = gpufl__report_doc_body(&e, r);
    fputs("</body>\n</html>\n", out);
    return rc;
}
