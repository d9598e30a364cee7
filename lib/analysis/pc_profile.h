// SPDX-License-Identifier: Apache-2.0
/*
 * pc_profile.h - the PC samples of a session summed up once for the report
 * and the insights: per function (kernel), per source line and per
 * instruction, each with its samples per stall reason.
 *
 * Functions are keyed by the dict id of their mangled name; source lines
 * by (function, file, line) from the function's sass record; an instruction
 * without line info (no sass record, or code built without -lineinfo) is a
 * "line" of its own, keyed by its PC (file NULL). Deterministic order:
 * most samples first, ties by name, file, line and PC.
 */
#ifndef GPUFL_ANALYSIS_PC_PROFILE_H
#define GPUFL_ANALYSIS_PC_PROFILE_H

#include "analysis/model.h"

typedef struct gpufl__pc_function {
    uint32_t function; /* dict id of the mangled name */
    const char *name;  /* the demangled name (the one to show) */
    const char *mangled;
    double samples;
    double *by_reason; /* per m->pc_reasons */
    size_t id;         /* internal: its place before sorting */
} gpufl__pc_function_t;

typedef struct gpufl__pc_line {
    size_t fn;        /* index in functions */
    const char *file; /* NULL: no line info; pc is the key */
    int32_t line;
    uint32_t pc; /* the first PC of the line */
    double samples;
    double *by_reason;
    size_t id; /* internal: its place before sorting */
} gpufl__pc_line_t;

typedef struct gpufl__pc_insn {
    size_t line; /* index in lines */
    uint32_t pc;
    const char *text; /* the SASS instruction; NULL without a sass record */
    double samples;
    uint32_t reason; /* its most frequent reason */
} gpufl__pc_insn_t;

typedef struct gpufl__pc_profile {
    size_t n_reasons;
    double samples; /* of all rows */
    gpufl__pc_function_t *functions;
    size_t n_functions;
    gpufl__pc_line_t *lines;
    size_t n_lines;
    gpufl__pc_insn_t *insns;
    size_t n_insns;
    int has_sass_lines; /* some line came from a sass record's line info */
    double *pool;
} gpufl__pc_profile_t;

/* Sums up m's pc_sample rows into p (zeroed first). Returns 0 or
 * GPUFL_ENOMEM (free p either way). */
int gpufl__pc_profile_build(const gpufl__model_t *m, gpufl__pc_profile_t *p);
void gpufl__pc_profile_free(gpufl__pc_profile_t *p);

/* The reason (index in m->pc_reasons) with the most samples in by_reason,
 * leaving out "selected" (issued, not a stall) when skip_issued; -1 when
 * none has samples. */
long gpufl__pc_top_reason(const gpufl__model_t *m, const double *by_reason, int skip_issued);

/* The line of function fn with the most samples of reason, or NULL. */
const gpufl__pc_line_t *gpufl__pc_hottest_line(const gpufl__pc_profile_t *p, size_t fn,
                                               uint32_t reason);

#endif
