// SPDX-License-Identifier: Apache-2.0
/*
 * insight_spans.h - time spans for the insight rules: merging the intervals
 * of GPU work into the time a device was busy, and the overlap of two such
 * sets. Internal to the insights module (rules_kernel.c, rules_device.c);
 * small enough to live inline in one header.
 */
#ifndef GPUFL_ANALYSIS_INSIGHT_SPANS_H
#define GPUFL_ANALYSIS_INSIGHT_SPANS_H

#include "analysis/insight_rules.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* One interval of GPU work, [start_ns, end_ns). */
typedef struct gpufl__span {
    int64_t start_ns, end_ns;
} gpufl__span_t;

/* A growable list of spans (caller-owned; free `v`). */
typedef struct gpufl__spans {
    gpufl__span_t *v;
    size_t n, cap;
} gpufl__spans_t;

/* Appends [start, end); 0 or -1 when out of memory. An end before start
 * (never written by the recorder) counts as an instant. */
static inline int gpufl__spans_add(gpufl__spans_t *s, int64_t start, int64_t end) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        gpufl__span_t *v = realloc(s->v, cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (gpufl__span_t){start, end < start ? start : end};
    return 0;
}

static inline int gpufl__span_cmp(const void *a, const void *b) {
    const gpufl__span_t *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    if (x->end_ns != y->end_ns) return x->end_ns < y->end_ns ? -1 : 1;
    return 0;
}

/* Sorts and merges overlapping or touching spans in place; returns the
 * summed length of the merged spans (the busy time). */
static inline double gpufl__spans_merge(gpufl__spans_t *s) {
    if (s->n == 0) return 0;
    gpufl__insight_sort(s->v, s->n, sizeof *s->v, gpufl__span_cmp);
    size_t k = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (s->v[i].start_ns <= s->v[k].end_ns) {
            if (s->v[i].end_ns > s->v[k].end_ns) s->v[k].end_ns = s->v[i].end_ns;
        } else {
            s->v[++k] = s->v[i];
        }
    }
    s->n = k + 1;
    double total = 0;
    for (size_t i = 0; i < s->n; i++) total += (double)(s->v[i].end_ns - s->v[i].start_ns);
    return total;
}

/* Time covered by both of two merged span lists. */
static inline double gpufl__spans_overlap(const gpufl__spans_t *a, const gpufl__spans_t *b) {
    double both = 0;
    size_t i = 0, j = 0;
    while (i < a->n && j < b->n) {
        int64_t lo = a->v[i].start_ns > b->v[j].start_ns ? a->v[i].start_ns : b->v[j].start_ns;
        int64_t hi = a->v[i].end_ns < b->v[j].end_ns ? a->v[i].end_ns : b->v[j].end_ns;
        if (hi > lo) both += (double)(hi - lo);
        if (a->v[i].end_ns < b->v[j].end_ns)
            i++;
        else
            j++;
    }
    return both;
}

#endif
