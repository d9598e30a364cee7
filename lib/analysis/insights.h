// SPDX-License-Identifier: Apache-2.0
/*
 * insights.h - findings a GPU engineer acts on, computed from a session
 * model by one set of rules that the report, the CLI and (later) the server
 * all share.
 *
 * Each insight has a category (SYNCHRONIZATION, OCCUPANCY, ...), a severity,
 * a one-line title, a message that says what was found, advice that says
 * what to do, and the numbers it rests on (evidence). An insight about a
 * place in the program names it (file, line, function, and the source text
 * when the session collected it); one about a kernel names the kernel.
 *
 * Rules that could not be judged (the session lacks the records they need)
 * are listed in `skipped` with the reason, so a missing insight never reads
 * as a clean bill. The thresholds of every rule are in docs/insights.md.
 *
 * The output is deterministic: insights sorted by severity (HIGH first),
 * then by rule order, then by their evidence's weight.
 */
#ifndef GPUFL_ANALYSIS_INSIGHTS_H
#define GPUFL_ANALYSIS_INSIGHTS_H

#include "analysis/model.h"

#include <gpufl/gpufl_analysis.h>

#include <stddef.h>
#include <stdio.h>

/* gpufl_severity_t and its names: gpufl_analysis.h. */

#define GPUFL_INSIGHT_EVIDENCE_MAX 12

/* One number an insight rests on: name ("sync_ns"), value and unit ("ns",
 * "%", "count", "bytes", "ratio"). */
typedef struct gpufl__evidence {
    const char *name; /* a static string */
    double value;
    const char *unit; /* a static string */
} gpufl__evidence_t;

typedef struct gpufl__insight {
    const char *rule;     /* stable id: "sync_attribution", "in_loop_sync", ... (static) */
    const char *category; /* "SYNCHRONIZATION", "OCCUPANCY", ... (static) */
    gpufl_severity_t severity;
    char *title;   /* one line */
    char *message; /* what was found, with the figures */
    char *advice;  /* what to do */
    /* Where in the program: NULL when the insight has no place. */
    char *file;
    int64_t line; /* 0 unknown */
    char *function;
    char *source;  /* the source line's text, when the session collected it */
    char *kernel;  /* the kernel it is about (demangled), NULL when none */
    double weight; /* orders insights of one rule and severity: larger first */
    gpufl__evidence_t evidence[GPUFL_INSIGHT_EVIDENCE_MAX];
    size_t n_evidence;
} gpufl__insight_t;

/* A rule that was not judged, and why. */
typedef struct gpufl__insight_skip {
    const char *rule; /* static */
    char *why;
} gpufl__insight_skip_t;

typedef struct gpufl__insights {
    gpufl__insight_t *items;
    size_t n;
    gpufl__insight_skip_t *skipped;
    size_t n_skipped;
    size_t cap, skipped_cap; /* internal */
} gpufl__insights_t;

/* Runs every rule on m into *out (zeroed first). Returns 0 or GPUFL_ENOMEM
 * (out then holds what was made before; free it either way). */
int gpufl__insights_compute(gpufl__insights_t *out, const gpufl__model_t *m);

/* Frees what compute made; accepts a zeroed struct. */
void gpufl__insights_free(gpufl__insights_t *in);

/* Writes the insights as text for people: one block per insight (severity,
 * category, title, place and quoted source, kernel, message, advice,
 * evidence), then the rules not judged and why; each line begins with
 * indent. min: the lowest severity shown. Returns 0 or GPUFL_EIO. */
int gpufl__insights_write_text(const gpufl__insights_t *in, gpufl_severity_t min,
                               const char *indent, FILE *out);

/* Writes the insights as one JSON document ({"format":"gpufl-insights",
 * "version":1,"insights":[...],"skipped":[...]}; docs/insights.md). Returns 0
 * or GPUFL_EIO. */
int gpufl__insights_write_json(const gpufl__insights_t *in, gpufl_severity_t min, FILE *out);

#endif
