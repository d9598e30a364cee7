// SPDX-License-Identifier: Apache-2.0
/*
 * report_html.c - the report as ONE self-contained HTML file: inline CSS and
 * inline SVG, no script, font, image or link to load, so it opens offline.
 * The sections come from report_doc.c; this file adds the timeline (kernels
 * per device and stream, scopes per thread, copies and memsets per device:
 * a time axis of round steps, a colour per name, names inside the bars that
 * hold them, open scopes hatched to the session end; an SVG as wide as the
 * page) and the metric plots (GPU utilisation, memory used, power and SM
 * clock per device, host CPU). Big sessions stay small files: a lane of more
 * than BARS_MAX bars is drawn as BARS_MAX time bins of merged bars, a plot
 * as at most PLOT_POINTS points (bin means), and the page says so.
 */
#include "analysis/report.h"

#include "util/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LANES_MAX   48   /* timeline lanes drawn */
#define BARS_MAX    1000 /* bars per lane before merging into bins */
#define DEPTH_ROWS  6    /* scope rows per thread lane (deeper ones share the last) */
#define VIEW_W      1200 /* the timeline's width in SVG units; the page scales it to fit */
#define TL_LABEL    150  /* lane label column */
#define TL_WIDTH    (VIEW_W - TL_LABEL - 10) /* the time axis */
#define ROW_H       18
#define BAR_H       16
#define LANE_GAP    6
#define AXIS_H      28
#define LEGEND_H    24
#define TICKS_MAX   10  /* ticks at most, before labels widen the step */
#define CHAR_W      7.0 /* a character of the 11-unit font, an upper estimate */
#define LABEL_PAD   6   /* space around a label inside its bar */
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

/* The aligns of the table being written on this thread: a row is written
 * without them (tables do not nest, and each thread writes its own). */
#define ALIGNS_MAX 32
static _Thread_local char table_aligns[ALIGNS_MAX + 1];

static void h_table_begin(FILE *out, size_t cols, const char *const *heads, const char *aligns) {
    snprintf(table_aligns, sizeof table_aligns, "%.*s",
             (int)(cols < ALIGNS_MAX ? cols : ALIGNS_MAX), aligns);
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
    size_t known = strlen(table_aligns);
    for (size_t i = 0; i < cols; i++) {
        /* past the aligns given: the first column a name, the others numbers */
        int right = i < known ? table_aligns[i] == 'r' : i > 0;
        fputs(right ? "<td class=\"r\">" : "<td>", out);
        esc(out, cells[i]);
        fputs("</td>", out);
    }
    fputs("</tr>\n", out);
}

static void h_table_end(FILE *out) {
    table_aligns[0] = '\0';
    fputs("</table>\n", out);
}

/* ---------------------------------------------------------------------- */
/* Timeline                                                                 */
/* ---------------------------------------------------------------------- */

enum { LANE_KERNEL, LANE_COPY, LANE_SCOPE };

typedef struct lane {
    int kind;
    int64_t device, stream; /* stream: the tid for a scope lane */
    size_t count;           /* items */
    size_t first;           /* into the lane-ordered index */
    int rows;               /* rows drawn: nesting depth of scopes, up to DEPTH_ROWS */
} lane_t;

typedef struct timeline {
    lane_t lanes[LANES_MAX];
    size_t n_lanes;
    uint64_t not_drawn; /* items of lanes past LANES_MAX */
    int64_t t0, t1;
    size_t open, copies, memsets; /* drawn one by one: what the legend names */
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
    t->lanes[t->n_lanes] = (lane_t){kind, device, stream, 0, 0, 1};
    return *last = (int)t->n_lanes++;
}

static int cmp_lane(const void *a, const void *b) {
    const lane_t *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return (x->stream > y->stream) - (x->stream < y->stream);
}

enum { ITEM_KERNEL, ITEM_COPY, ITEM_MEMSET, ITEM_SCOPE };

/* One timed item: a kernel, copy, memset or scope. */
typedef struct item {
    int kind;
    int64_t start, end;             /* end: start for an open scope */
    int open;                       /* a scope with no end recorded */
    const char *name;               /* kernel: demangled; scope: its name */
    const char *path, *tag;         /* scopes */
    const gpufl__model_copy_t *copy; /* copies */
    int64_t bytes;                  /* copies and memsets */
    int depth;
} item_t;

static item_t get_item(const gpufl__model_t *m, size_t i) {
    size_t nk = m->n_kernels, nc = m->n_copies, nm = m->n_memsets;
    if (i < nk) {
        const gpufl__model_kernel_t *k = &m->kernels[i];
        return (item_t){
            .kind = ITEM_KERNEL, .start = k->start_ns, .end = k->end_ns, .name = k->demangled};
    }
    if ((i -= nk) < nc) {
        const gpufl__model_copy_t *c = &m->copies[i];
        return (item_t){.kind = ITEM_COPY,
                        .start = c->start_ns,
                        .end = c->end_ns,
                        .copy = c,
                        .bytes = c->bytes};
    }
    if ((i -= nc) < nm) {
        const gpufl__model_memset_t *s = &m->memsets[i];
        return (item_t){
            .kind = ITEM_MEMSET, .start = s->start_ns, .end = s->end_ns, .bytes = s->bytes};
    }
    const gpufl__model_scope_t *s = &m->scopes[i - nm];
    return (item_t){.kind = ITEM_SCOPE,
                    .start = s->begin_ns,
                    .end = s->open ? s->begin_ns : s->end_ns,
                    .open = s->open,
                    .name = s->name,
                    .path = s->path,
                    .tag = s->tag,
                    .depth = s->depth > 0 ? s->depth - 1 : 0};
}

static int item_lane(const gpufl__model_t *m, timeline_t *t, int *last, size_t i) {
    size_t nk = m->n_kernels, nc = m->n_copies, nm = m->n_memsets;
    if (i < nk) return lane_of(t, last, LANE_KERNEL, m->kernels[i].device, m->kernels[i].stream);
    i -= nk;
    if (i < nc) return lane_of(t, last, LANE_COPY, m->copies[i].device, 0);
    i -= nc;
    if (i < nm) return lane_of(t, last, LANE_COPY, m->memsets[i].device, 0);
    i -= nm;
    return lane_of(t, last, LANE_SCOPE, 0, m->scopes[i].tid);
}

/* The colours of kernel and scope names: 16 hues in a light and a mid tone
 * that dark text reads on and that stand apart on a white page; a name's
 * FNV-1a hash picks one, so a name has the same colour in every row and
 * every report. */
static const char *const palette[] = {
    "#eaa9a9", "#eac1a9", "#eadaa9", "#e2eaa9", "#c9eaa9", "#b1eaa9", "#a9eab9", "#a9ead1",
    "#a9eaea", "#a9d1ea", "#a9b9ea", "#b1a9ea", "#c9a9ea", "#e2a9ea", "#eaa9da", "#eaa9c1",
    "#d58181", "#d5a081", "#d5c081", "#cad581", "#abd581", "#8bd581", "#81d596", "#81d5b5",
    "#81d5d5", "#81b5d5", "#8196d5", "#8b81d5", "#ab81d5", "#ca81d5", "#d581c0", "#d581a0",
};
#define PALETTE_N (sizeof palette / sizeof palette[0])
/* Copies and memsets in greys, which no palette entry is, so that the legend's
 * two colours never stand for a name too. */
#define COPY_FILL  "#8f8f8f"
#define MSET_FILL  "#c9c9c9"
#define OPEN_HATCH "url(#open-hatch)"

static uint32_t hash_name(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static const char *item_fill(const item_t *it) {
    if (it->kind == ITEM_COPY) return COPY_FILL;
    if (it->kind == ITEM_MEMSET) return MSET_FILL;
    return palette[hash_name(it->name ? it->name : "") % PALETTE_N];
}

/* Differences of times in double: a damaged log's extreme times must not
 * overflow int64 (the span is at least 1). */
static double span_of(int64_t t0, int64_t t1) {
    double d = (double)t1 - (double)t0;
    return d >= 1 ? d : 1;
}

static double x_of(const timeline_t *t, double ns) {
    return TL_LABEL + (ns - (double)t->t0) / span_of(t->t0, t->t1) * TL_WIDTH;
}

/* Width of text in the timeline's font, an upper estimate (no font metrics
 * without a script): one CHAR_W per code point. */
static double text_w(const char *s, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len && s[i]; i++) n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return (double)n * CHAR_W;
}

/* The depth of brackets ('<' and '(') after c, from depth. */
static int bracket_depth(char c, int depth) {
    if (c == '<' || c == '(') return depth + 1;
    if ((c == '>' || c == ')') && depth > 0) return depth - 1;
    return depth;
}

/* A kernel's name without its return type and parameters ("void
 * ns::k<8>(float*)" -> "ns::k<8>"), or, bare, without namespaces and
 * template arguments too ("k"): *len bytes from the returned start. */
static const char *kernel_base(const char *name, size_t *len, int bare) {
    const char *s = name, *end = name + strlen(name);
    int depth = 0;
    for (const char *p = name; *p; p++) { /* the parameters: the last '(' at depth 0 */
        if (*p == '(' && depth == 0 && p > name) end = p;
        depth = bracket_depth(*p, depth);
    }
    depth = 0;
    for (const char *p = name; p < end; p++) { /* a return type: up to a space at depth 0 */
        if (*p == ' ' && depth == 0) s = p + 1;
        depth = bracket_depth(*p, depth);
    }
    if (bare) {
        depth = 0;
        const char *p = s, *last = s;
        for (; p < end && !(*p == '<' && depth == 0); p++) {
            if (depth == 0 && p[0] == ':' && p + 1 < end && p[1] == ':') last = p + 2;
            depth = bracket_depth(*p, depth);
        }
        s = last;
        end = p;
    }
    *len = (size_t)(end - s);
    return s;
}

/* Copies the len bytes of s into buf when they fit in room. */
static int fit(char *buf, size_t size, const char *s, size_t len, double room) {
    if (!len || text_w(s, len) > room) return 0;
    snprintf(buf, size, "%.*s", (int)len, s);
    return 1;
}

/* The label drawn inside a bar of width w: the longest form of the item's
 * name that fits, or none. */
static int bar_label(const item_t *it, double w, char *buf, size_t size) {
    double room = w - LABEL_PAD;
    size_t len;
    char full[GPUFL_REPORT_CELL], num[32];
    if (it->kind == ITEM_SCOPE) {
        snprintf(full, sizeof full, "%s [%s]", it->name, it->tag);
        return (*it->tag && fit(buf, size, full, strlen(full), room)) ||
               fit(buf, size, it->name, strlen(it->name), room);
    }
    if (it->kind == ITEM_KERNEL) {
        if (fit(buf, size, it->name, strlen(it->name), room)) return 1;
        for (int bare = 0; bare <= 1; bare++) {
            const char *s = kernel_base(it->name, &len, bare);
            if (fit(buf, size, s, len, room)) return 1;
        }
        return 0;
    }
    static const char *const short_dir[GPUFL_REPORT_DIR_COUNT] = {"HtoD", "DtoH", "DtoD", "peer",
                                                                  "copy"};
    const char *what = "memset";
    if (it->copy) {
        int dir = gpufl__report_copy_dir(it->copy->copy_kind);
        what = dir >= 0 && dir < GPUFL_REPORT_DIR_COUNT ? short_dir[dir] : "copy";
    }
    gpufl__report_fmt_bytes(num, sizeof num, (double)it->bytes);
    snprintf(full, sizeof full, "%s %s", what, num);
    return fit(buf, size, full, strlen(full), room) || fit(buf, size, what, strlen(what), room);
}

/* The tooltip: what the item is, its times and duration. */
static void bar_title(FILE *out, const item_t *it, int64_t end) {
    char a[32], b[32], d[32], num[32];
    gpufl__report_fmt_ns(a, sizeof a, (double)it->start);
    gpufl__report_fmt_ns(b, sizeof b, (double)end);
    gpufl__report_fmt_ns(d, sizeof d, (double)end - (double)it->start);
    fputs("<title>", out);
    if (it->kind == ITEM_SCOPE) {
        esc(out, it->path);
        if (*it->tag) {
            fputs(" [", out);
            esc(out, it->tag);
            fputc(']', out);
        }
    } else if (it->kind == ITEM_KERNEL) {
        esc(out, it->name);
    } else {
        gpufl__report_fmt_bytes(num, sizeof num, (double)it->bytes);
        fprintf(out, "%s %s%s", it->copy ? "copy" : "memset",
                it->copy ? gpufl__report_dir_name(gpufl__report_copy_dir(it->copy->copy_kind)) : "",
                it->copy ? " " : "");
        fputs(num, out);
    }
    if (it->open)
        fprintf(out, "\nbegun at %s, open: no end recorded</title>", a);
    else
        fprintf(out, "\n%s to %s (%s)</title>", a, b, d);
}

/* One item: a bar, hatched with a dashed border when open (drawn to the
 * end of the timeline, the session's end), its label inside when it fits. */
static void bar(FILE *out, const timeline_t *t, const item_t *it, double y) {
    int open = it->open;
    int64_t end = open ? t->t1 : it->end;
    double x0 = x_of(t, (double)it->start), x1 = x_of(t, (double)end);
    double min_w = open ? 3 : 0.5; /* visible; an open bar still ends at the session's end */
    double w = x1 - x0 < min_w ? min_w : x1 - x0;
    if (open) x0 = x1 - w;
    char label[GPUFL_REPORT_CELL];
    fputs("<g>", out);
    bar_title(out, it, end);
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"", x0, y + 1,
            w, BAR_H, item_fill(it));
    if (open)
        fprintf(out,
                " stroke=\"#333\" stroke-dasharray=\"3 2\"/><rect x=\"%.1f\" y=\"%.1f\" "
                "width=\"%.1f\" height=\"%d\" fill=\"" OPEN_HATCH "\"",
                x0, y + 1, w, BAR_H);
    fputs("/>", out);
    if (bar_label(it, w, label, sizeof label)) {
        fprintf(out, "<text class=\"bl\" x=\"%.1f\" y=\"%.1f\">", x0 + LABEL_PAD / 2.0,
                y + 1 + BAR_H / 2.0 + 4);
        esc(out, label);
        fputs("</text>", out);
    }
    fputs("</g>\n", out);
}

/* Draws a lane's items, each as a bar or, past BARS_MAX, merged into bins. */
static void draw_lane(FILE *out, const gpufl__model_t *m, timeline_t *t, const lane_t *l,
                      const size_t *idx, double y, double *bins_ns, size_t *bins_n) {
    static const char *const kind_fill[] = {"#4878d0", COPY_FILL, "#6acc64"};
    if (l->count <= BARS_MAX) {
        for (size_t k = 0; k < l->count; k++) {
            item_t it = get_item(m, idx[l->first + k]);
            int row = it.depth < l->rows ? it.depth : l->rows - 1;
            t->open += it.open;
            t->copies += it.kind == ITEM_COPY;
            t->memsets += it.kind == ITEM_MEMSET;
            bar(out, t, &it, y + row * ROW_H);
        }
        return;
    }
    memset(bins_ns, 0, BARS_MAX * sizeof *bins_ns);
    memset(bins_n, 0, BARS_MAX * sizeof *bins_n);
    double span = span_of(t->t0, t->t1), bin_ns = span / BARS_MAX;
    for (size_t k = 0; k < l->count; k++) {
        item_t it = get_item(m, idx[l->first + k]);
        int64_t end = it.open ? t->t1 : it.end;
        size_t b = (size_t)(((double)it.start - (double)t->t0) / span * BARS_MAX);
        if (b >= BARS_MAX) b = BARS_MAX - 1;
        bins_ns[b] += (double)end - (double)it.start;
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
                TL_LABEL + (double)b * TL_WIDTH / BARS_MAX, y + 1, (double)TL_WIDTH / BARS_MAX,
                l->rows * ROW_H - 2.0, kind_fill[l->kind], 0.25 + 0.75 * busy, bins_n[b], d);
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

/* The smallest step of 1, 2 or 5 times a power of ten (ns) of at least
 * min_ns, and at least 1 ns. */
static double nice_step(double min_ns) {
    double p = 1;
    while (p * 10 <= min_ns && p < 1e300) p *= 10;
    return min_ns <= p ? p : min_ns <= 2 * p ? 2 * p : min_ns <= 5 * p ? 5 * p : 10 * p;
}

/* The label of session time ns on an axis of step: in the unit of the
 * largest time shown (unit_ns), with the decimals the step needs. */
static void tick_label(char *buf, size_t size, double ns, double step, double unit_ns,
                       const char *unit) {
    int decimals = 0;
    for (double x = step / unit_ns; x < 0.999 && decimals < 9; x *= 10) decimals++;
    int n = snprintf(buf, size, "%.*f", decimals, ns / unit_ns);
    if (n < 0 || (size_t)n >= size) n = (int)strlen(buf);
    if (decimals) { /* 1.50 -> 1.5, 2.0 -> 2 */
        while (n > 0 && buf[n - 1] == '0') buf[--n] = '\0';
        if (n > 0 && buf[n - 1] == '.') buf[--n] = '\0';
    }
    if (strcmp(buf, "-0") == 0) snprintf(buf, size, "0");
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, " %s", unit);
}

/* The time axis at the top: ticks at round steps (1, 2, 5 x 10^k) whose
 * labels never overlap, in session time, with grid lines down to bottom. */
static void axis(FILE *out, const timeline_t *t, double bottom) {
    static const double units_ns[] = {1, 1e3, 1e6, 1e9};
    static const char *const units[] = {"ns", "\xc2\xb5s", "ms", "s"};
    double span = span_of(t->t0, t->t1), step = nice_step(span / TICKS_MAX);
    double far =
        fabs((double)t->t0) > fabs((double)t->t1) ? fabs((double)t->t0) : fabs((double)t->t1);
    int u = 0;
    while (u < 3 && far >= units_ns[u + 1]) u++;
    char label[48];
    for (int tries = 0; tries < 64; tries++) { /* widen the step until the labels fit */
        tick_label(label, sizeof label, (double)t->t1, step, units_ns[u], units[u]);
        double w = text_w(label, sizeof label) + 12;
        tick_label(label, sizeof label, (double)t->t0, step, units_ns[u], units[u]);
        double w0 = text_w(label, sizeof label) + 12;
        if (w0 > w) w = w0;
        if (step / span * TL_WIDTH >= w) break;
        step = nice_step(step * 1.01);
    }
    static const char caption[] = "session time";
    fprintf(out, "<text x=\"4\" y=\"%d\" class=\"ax\">%s</text>\n", AXIS_H - 10, caption);
    double k0 = ceil((double)t->t0 / step), drawn_to = 4 + text_w(caption, sizeof caption) + 4;
    for (int i = 0; i <= TICKS_MAX + 1; i++) {
        double ns = (k0 + i) * step;
        if (ns > (double)t->t1) break;
        double x = x_of(t, ns);
        tick_label(label, sizeof label, ns, step, units_ns[u], units[u]);
        double half = text_w(label, sizeof label) / 2;
        int at_end = x + half > VIEW_W - 2;
        double left = at_end ? VIEW_W - 2 - 2 * half : x - half;
        if (left < drawn_to) continue; /* times past double's precision: one label */
        drawn_to = left + 2 * half + 4;
        const char *anchor = at_end ? "end" : "middle";
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#777\"/>"
                "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>\n",
                x, AXIS_H, x, bottom, x, AXIS_H - 5, x, AXIS_H, at_end ? VIEW_W - 2.0 : x,
                AXIS_H - 10, anchor, label);
    }
    fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#777\"/>\n", TL_LABEL,
            AXIS_H, TL_LABEL + TL_WIDTH, AXIS_H);
}

/* What the colours and marks mean, under the lanes: swatches are paths, so
 * that every rect of the page is a bar. */
static void legend(FILE *out, const timeline_t *t, double y) {
    double x = TL_LABEL;
    const struct {
        int shown;
        const char *fill, *text;
    } items[] = {{t->open > 0, OPEN_HATCH, "open: no end recorded (drawn to the session end)"},
                 {t->copies > 0, COPY_FILL, "copy"},
                 {t->memsets > 0, MSET_FILL, "memset"}};
    fprintf(out,
            "<text x=\"4\" y=\"%.1f\" class=\"ax\">legend</text>"
            "<text x=\"%.1f\" y=\"%.1f\">kernels and scopes: one colour per name</text>\n",
            y + 12, x, y + 12);
    x += text_w("kernels and scopes: one colour per name", 64) + 24;
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        if (!items[i].shown) continue;
        fprintf(out,
                "<path d=\"M%.1f %.1fh22v12h-22z\" fill=\"%s\" stroke=\"#333\"%s/>"
                "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                x, y + 2, items[i].fill,
                items[i].fill[0] == 'u' ? " stroke-dasharray=\"3 2\"" : " stroke-width=\"0\"",
                x + 28, y + 12, items[i].text);
        x += 28 + text_w(items[i].text, 64) + 24;
    }
}

static int timeline(FILE *out, const gpufl__report_t *r) {
    const gpufl__model_t *m = r->m;
    size_t n = m->n_kernels + m->n_copies + m->n_memsets + m->n_scopes;
    fputs("<h2 id=\"timeline\">Timeline</h2>\n", out);
    if (!n) {
        fputs("<p>no kernels, copies, memsets or scopes to draw</p>\n", out);
        return 0;
    }
    timeline_t *t = calloc(1, sizeof *t);
    int16_t *lane = malloc(n * sizeof *lane);
    size_t *idx = malloc(n * sizeof *idx);
    double *bins_ns = malloc(BARS_MAX * sizeof *bins_ns);
    size_t *bins_n = malloc(BARS_MAX * sizeof *bins_n);
    int rc = 0, last = -1, any_open = 0;
    if (!t || !lane || !idx || !bins_ns || !bins_n) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for the HTML timeline");
        goto free_temp;
    }
    t->t0 = INT64_MAX;
    t->t1 = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        item_t it = get_item(m, i);
        if (it.start < t->t0) t->t0 = it.start;
        if (it.start > t->t1) t->t1 = it.start;
        if (it.end > t->t1) t->t1 = it.end;
        any_open |= it.open;
    }
    /* open scopes run to the session's end */
    if (any_open && r->summary.duration_ns > t->t1) t->t1 = r->summary.duration_ns;
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
        lane_t *l = &t->lanes[lane[i]];
        l->count++;
        if (l->kind == LANE_SCOPE) {
            int depth = get_item(m, i).depth;
            if (depth >= l->rows) l->rows = depth < DEPTH_ROWS ? depth + 1 : DEPTH_ROWS;
        }
    }
    for (size_t i = 0, at = 0; i < t->n_lanes; i++) t->lanes[i].first = at, at += t->lanes[i].count;
    size_t fill[LANES_MAX] = {0};
    for (size_t i = 0; i < n; i++)
        if (lane[i] >= 0) idx[t->lanes[lane[i]].first + fill[lane[i]]++] = i;

    double lanes_h = 0;
    for (size_t i = 0; i < t->n_lanes; i++) lanes_h += t->lanes[i].rows * ROW_H + LANE_GAP;
    double height = AXIS_H + 4 + lanes_h + LEGEND_H;
    char a[32], b[32];
    gpufl__report_fmt_ns(a, sizeof a, (double)t->t0);
    gpufl__report_fmt_ns(b, sizeof b, (double)t->t1);
    fprintf(out,
            "<p>From %s to %s of session time (since the session started). Kernels per device "
            "and stream, copies and memsets per device, scopes per thread (nested scopes one row "
            "lower, up to %d rows). A bar is labelled when its name fits; hover it for the full "
            "name, its tag, times and duration. Open scopes (no end recorded) are hatched and run "
            "to the session end. A lane of more than %d bars is drawn as %d time bins of merged "
            "bars (darker: busier).</p>\n",
            a, b, DEPTH_ROWS, BARS_MAX, BARS_MAX);
    fprintf(out,
            "<svg class=\"tl\" width=\"100%%\" viewBox=\"0 0 %d %.0f\" "
            "preserveAspectRatio=\"xMinYMin meet\">\n"
            "<defs><pattern id=\"open-hatch\" width=\"6\" height=\"6\" "
            "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
            "<path d=\"M0 0v6\" stroke=\"#333\" stroke-width=\"2\" stroke-opacity=\"0.45\"/>"
            "</pattern></defs>\n",
            VIEW_W, height);
    double y = AXIS_H + 4;
    axis(out, t, y + lanes_h - LANE_GAP);
    for (size_t i = 0; i < t->n_lanes; i++) {
        const lane_t *l = &t->lanes[i];
        char label[96];
        lane_label(label, sizeof label, l);
        fprintf(out, "<text x=\"4\" y=\"%.1f\">%s%s</text>\n", y + 1 + BAR_H / 2.0 + 4, label,
                l->count > BARS_MAX ? " *" : "");
        fprintf(out, "<line x1=\"4\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                y + l->rows * ROW_H + LANE_GAP / 2.0, TL_LABEL + TL_WIDTH,
                y + l->rows * ROW_H + LANE_GAP / 2.0);
        draw_lane(out, m, t, l, idx, y, bins_ns, bins_n);
        y += l->rows * ROW_H + LANE_GAP;
    }
    legend(out, t, y + 4);
    fputs("</svg>\n", out);
    for (size_t i = 0; i < t->n_lanes; i++)
        if (t->lanes[i].count > BARS_MAX) {
            fputs("<p>* merged: lanes with more bars than drawn individually</p>\n", out);
            break;
        }
    if (t->not_drawn)
        fprintf(out, "<p>%llu records in lanes past the first %d are not drawn</p>\n",
                (unsigned long long)t->not_drawn, LANES_MAX);
free_temp:
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
    const gpufl__model_t *m;
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
    const gpufl__model_gpu_sample_t *g = &s->m->gpu_samples[i];
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

static int plots(FILE *out, const gpufl__model_t *m) {
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
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}p{max-width:120ch}"
    "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:28px}"
    "h3{font-size:15px}table{border-collapse:collapse;margin:8px 0}"
    "td,th{padding:2px 8px;text-align:left;vertical-align:top}"
    "table.t td,table.t th{border-bottom:1px solid #eee}"
    /* a wide table (long kernel names) scrolls inside itself, not the page */
    "table.t{display:block;overflow-x:auto;max-width:100%}"
    "table.t tr:first-child th{border-bottom:2px solid #ccc}"
    "table.f th{font-weight:normal;color:#555;white-space:nowrap}"
    ".r{text-align:right;font-variant-numeric:tabular-nums}"
    "svg{font:11px system-ui,sans-serif;display:block}"
    "svg.tl{border:1px solid #eee;height:auto;font-family:Arial,'Liberation Sans',Helvetica,"
    "sans-serif}svg.tl .bl{fill:#1a1a1a;pointer-events:none}"
    "svg.tl .tick,svg.tl .ax{fill:#444}"
    ".plots{display:flex;flex-wrap:wrap;gap:8px}";

int gpufl__report_render_html(const gpufl__report_t *r, FILE *out) {
    const gpufl__report_emitter_t e = {out,          h_heading,     h_para, h_fields_begin, h_field,
                                       h_fields_end, h_table_begin, h_row,  h_table_end};
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>gpufl "
          "report: ",
          out);
    esc(out, r->summary.app);
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>gpufl report: ", css);
    esc(out, r->summary.app);
    fputs("</h1>\n", out);
    int rc = gpufl__report_doc_head(&e, r);
    if (!rc) rc = timeline(out, r);
    if (!rc) rc = plots(out, r->m);
    if (!rc) rc = gpufl__report_doc_body(&e, r);
    fputs("</body>\n</html>\n", out);
    return rc;
}
