// SPDX-License-Identifier: Apache-2.0
/*
 * insights.c - the insight framework: runs the families of rules, owns the
 * list they fill and orders it (see insights.h).
 */
#include "analysis/insight_rules.h"

#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rule ids in output order: an insight of a rule listed earlier comes first
 * among insights of equal severity. */
static const char *const rule_order[] = {
    "sync_attribution", "in_loop_sync",   "launch_bound",    "gpu_idle",          "low_occupancy",
    "register_limited", "register_spill", "memcpy_bound",    "pageable_memcpy",   "throttling",
    "low_sm_activity",  "dominant_stall", "warp_divergence", "uncoalesced_global"};

const char *gpufl_severity_name(gpufl_severity_t s) {
    switch (s) {
    case GPUFL_SEVERITY_HIGH: return "HIGH";
    case GPUFL_SEVERITY_MEDIUM: return "MEDIUM";
    case GPUFL_SEVERITY_LOW: return "LOW";
    }
    return "?";
}

gpufl__insight_t *gpufl__insight_add(gpufl__insights_t *out, const char *rule, const char *category,
                                     gpufl_severity_t severity) {
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 16;
        gpufl__insight_t *items = realloc(out->items, cap * sizeof *items);
        if (items == NULL) return NULL;
        out->items = items;
        out->cap = cap;
    }
    gpufl__insight_t *in = &out->items[out->n++];
    memset(in, 0, sizeof *in);
    in->rule = rule;
    in->category = category;
    in->severity = severity;
    return in;
}

static char *vformat(const char *fmt, va_list ap) {
    char *s = NULL;
    return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

int gpufl__insight_text(char **field, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    if (s == NULL) return GPUFL_ENOMEM;
    free(*field);
    *field = s;
    return 0;
}

void gpufl__insight_evidence(gpufl__insight_t *in, const char *name, double value,
                             const char *unit) {
    if (in->n_evidence < GPUFL_INSIGHT_EVIDENCE_MAX)
        in->evidence[in->n_evidence++] = (gpufl__evidence_t){name, value, unit};
}

int gpufl__insight_skip(gpufl__insights_t *out, const char *rule, const char *fmt, ...) {
    if (out->n_skipped == out->skipped_cap) {
        size_t cap = out->skipped_cap ? out->skipped_cap * 2 : 8;
        gpufl__insight_skip_t *s = realloc(out->skipped, cap * sizeof *s);
        if (s == NULL) return GPUFL_ENOMEM;
        out->skipped = s;
        out->skipped_cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *why = vformat(fmt, ap);
    va_end(ap);
    if (why == NULL) return GPUFL_ENOMEM;
    out->skipped[out->n_skipped++] = (gpufl__insight_skip_t){rule, why};
    return 0;
}

double gpufl__insight_session_ns(const gpufl__model_t *m) {
    if (m->session_end.present && m->session_end.duration_ns > 0)
        return (double)m->session_end.duration_ns;
    if (m->first_ts_ns >= 0 && m->last_ts_ns > m->first_ts_ns)
        return (double)(m->last_ts_ns - m->first_ts_ns);
    return 0;
}

const char *gpufl__insight_duration(double ns, char *buf, size_t size) {
    if (ns >= 1e9)
        snprintf(buf, size, "%.2fs", ns / 1e9);
    else if (ns >= 1e6)
        snprintf(buf, size, "%.1fms", ns / 1e6);
    else if (ns >= 1e3)
        snprintf(buf, size, "%.0fus", ns / 1e3);
    else
        snprintf(buf, size, "%.0fns", ns);
    return buf;
}

void gpufl__insight_sort(void *base, size_t n, size_t size,
                         int (*cmp)(const void *, const void *)) {
    const char *p = base;
    for (size_t i = 1; i < n; i++)
        if (cmp(p + (i - 1) * size, p + i * size) > 0) {
            qsort(base, n, size, cmp);
            return;
        }
}

/* The k-th smallest of v[lo..hi] (reorders v): Hoare's selection with the
 * middle element as pivot. */
static int64_t select_i64(int64_t *v, size_t lo, size_t hi, size_t k) {
    while (lo < hi) {
        int64_t pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                int64_t t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

double gpufl__insight_median_i64(int64_t *v, size_t n) {
    if (n == 0) return 0;
    int64_t hi = select_i64(v, 0, n - 1, n / 2);
    if (n % 2) return (double)hi;
    /* v[0 .. n/2) now holds the smaller half: its largest is the other middle. */
    int64_t lo = v[0];
    for (size_t i = 1; i < n / 2; i++)
        if (v[i] > lo) lo = v[i];
    return ((double)lo + (double)hi) / 2;
}

static size_t rule_rank(const char *rule) {
    size_t n = sizeof rule_order / sizeof rule_order[0];
    for (size_t i = 0; i < n; i++)
        if (strcmp(rule_order[i], rule) == 0) return i;
    return n;
}

static int cmp_insight(const void *a, const void *b) {
    const gpufl__insight_t *x = a, *y = b;
    if (x->severity != y->severity) return x->severity > y->severity ? -1 : 1;
    size_t rx = rule_rank(x->rule), ry = rule_rank(y->rule);
    if (rx != ry) return rx < ry ? -1 : 1;
    if (x->weight != y->weight) return x->weight > y->weight ? -1 : 1;
    return strcmp(x->title ? x->title : "", y->title ? y->title : "");
}

int gpufl__insights_compute(gpufl__insights_t *out, const gpufl__model_t *m) {
    memset(out, 0, sizeof *out);
    int rc = gpufl__rules_sync(out, m);
    if (!rc) rc = gpufl__rules_kernel(out, m);
    if (!rc) rc = gpufl__rules_device(out, m);
    if (!rc) rc = gpufl__rules_stall(out, m);
    if (!rc) rc = gpufl__rules_sass(out, m);
    if (rc) return gpufl__set_error(rc, "out of memory while computing insights");
    if (out->n > 1) qsort(out->items, out->n, sizeof *out->items, cmp_insight);
    return 0;
}

void gpufl__insights_free(gpufl__insights_t *in) {
    for (size_t i = 0; i < in->n; i++) {
        gpufl__insight_t *x = &in->items[i];
        free(x->title);
        free(x->message);
        free(x->advice);
        free(x->file);
        free(x->function);
        free(x->source);
        free(x->kernel);
    }
    for (size_t i = 0; i < in->n_skipped; i++) free(in->skipped[i].why);
    free(in->items);
    free(in->skipped);
    memset(in, 0, sizeof *in);
}
