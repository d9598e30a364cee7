// SPDX-License-Identifier: Apache-2.0
/*
 * insight_rules.h - what the insight rules share; internal to the insights
 * module (insights.c holds the framework, each rules_*.c file a family of
 * rules). A rule reads the model, appends insights with the builders below,
 * or records why it could not judge the session.
 */
#ifndef GPUFL_ANALYSIS_INSIGHT_RULES_H
#define GPUFL_ANALYSIS_INSIGHT_RULES_H

#include "analysis/insights.h"

/* A new insight at the end of out, zeroed but for its identity; NULL when
 * out of memory. rule and category must be static strings. */
gpufl__insight_t *gpufl__insight_add(gpufl__insights_t *out, const char *rule, const char *category,
                                     gpufl_severity_t severity);

/* *field = the formatted text (a previous value is freed). 0 or GPUFL_ENOMEM. */
int gpufl__insight_text(char **field, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends one evidence number (name and unit static); past
 * GPUFL_INSIGHT_EVIDENCE_MAX it is left out. */
void gpufl__insight_evidence(gpufl__insight_t *in, const char *name, double value,
                             const char *unit);

/* Records that `rule` was not judged and why. 0 or GPUFL_ENOMEM. */
int gpufl__insight_skip(gpufl__insights_t *out, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Session wall time in ns: from the session's first to its last record
 * (session_end's duration when present); 0 when unknown. */
double gpufl__insight_session_ns(const gpufl__model_t *m);

/* "1.23 s", "45.6 ms", "789 us", "12 ns": a duration for a title. */
const char *gpufl__insight_duration(double ns, char *buf, size_t size);

/* Sorts base (n elements of size) by cmp, unless it already is: rows of a
 * log come mostly in time order, and checking costs one pass. */
void gpufl__insight_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* The median of v[0..n) (reorders v; linear time); the mean of the middle
 * two for an even n; 0 when n is 0. */
double gpufl__insight_median_i64(int64_t *v, size_t n);

/* The families of rules, each in its own file; each returns 0 or
 * GPUFL_ENOMEM. The order here is the order of rules in the output. */
int gpufl__rules_sync(gpufl__insights_t *out, const gpufl__model_t *m);   /* rules_sync.c */
int gpufl__rules_kernel(gpufl__insights_t *out, const gpufl__model_t *m); /* rules_kernel.c */
int gpufl__rules_device(gpufl__insights_t *out, const gpufl__model_t *m); /* rules_device.c */
int gpufl__rules_stall(gpufl__insights_t *out, const gpufl__model_t *m);  /* rules_stall.c */
int gpufl__rules_sass(gpufl__insights_t *out, const gpufl__model_t *m);   /* rules_sass.c */

#endif
