// SPDX-License-Identifier: Apache-2.0
/*
 * sass_profile.h - the sass_metric rows of a session summed up once for the
 * report and the insights: per function, per source line and per
 * instruction, the warp and thread executions and the global memory
 * sectors against their coalesced ideal.
 *
 * Rows of all contexts are summed (each holds its context's counts since
 * counting started there; model_sass_metrics.c keeps one per context and
 * instruction). Functions are keyed by (cubin, function): the same kernel
 * in two modules is two functions. Source lines come from the function's
 * sass record; a function's instructions without line info (no sass
 * record, or code built without -lineinfo) form one line of their own,
 * "(no line info)" (file NULL).
 */
#ifndef GPUFL_ANALYSIS_SASS_PROFILE_H
#define GPUFL_ANALYSIS_SASS_PROFILE_H

#include "analysis/model.h"

/*
 * Sums of counts. A metric that was not counted (a null column) leaves a
 * row out of the figures that need it, so every ratio below compares counts
 * of the same rows; where every metric was counted, thread_base = inst,
 * request_sectors = ideal_base = sectors.
 */
typedef struct gpufl__sass_counts {
    double inst;            /* warp-level executions */
    double thread_base;     /* inst of the rows that count thread_inst too */
    double thread_inst;     /* thread-level executions of those rows */
    double requests;        /* inst of global memory instructions (sectors > 0) */
    double request_sectors; /* their sectors */
    double sectors;         /* global memory sectors */
    double ideal_base;      /* sectors of the rows that count sectors_ideal too */
    double ideal;           /* sectors_ideal of those rows */
} gpufl__sass_counts_t;

/* Derived figures; a negative value means unknown (nothing to divide). */
double gpufl__sass_thread_efficiency(const gpufl__sass_counts_t *c); /* 0..1 */
double gpufl__sass_idle_lanes(const gpufl__sass_counts_t *c);        /* 32 x inst - thread_inst */
double gpufl__sass_sectors_per_request(const gpufl__sass_counts_t *c);
double gpufl__sass_ideal_per_request(const gpufl__sass_counts_t *c);
double gpufl__sass_coalescing(const gpufl__sass_counts_t *c);     /* ideal / sectors, 0..1 */
double gpufl__sass_excess_sectors(const gpufl__sass_counts_t *c); /* sectors - ideal, >= 0 */

typedef struct gpufl__sass_function {
    uint32_t cubin, function; /* dict ids */
    const char *name;         /* the demangled name (the one to show) */
    const char *mangled;
    gpufl__sass_counts_t counts;
    size_t first_line, n_lines; /* its lines in lines[] */
    int has_sass;               /* a sass record with instructions */
    int has_lines;              /* some instruction has line info */
    size_t id;                  /* internal: its place before sorting */
} gpufl__sass_function_t;

typedef struct gpufl__sass_line {
    size_t fn;        /* index in functions */
    const char *file; /* NULL: the function's instructions without line info */
    int32_t line;
    gpufl__sass_counts_t counts;
    size_t first_insn, n_insns; /* its instructions in insns[], by pc */
} gpufl__sass_line_t;

typedef struct gpufl__sass_insn {
    uint32_t pc;
    const char *text; /* the SASS instruction; NULL without a sass record */
    gpufl__sass_counts_t counts;
} gpufl__sass_insn_t;

typedef struct gpufl__sass_profile {
    gpufl__sass_counts_t total; /* of all rows */
    size_t rows, contexts;     /* rows summed; distinct contexts they name */
    int counted[4];            /* some row counts inst, thread_inst, sectors, sectors_ideal */
    gpufl__sass_function_t *functions; /* most warp instructions first, ties by name */
    size_t n_functions;
    gpufl__sass_line_t *lines; /* by function (as first built), then file and line; the
                                 "(no line info)" line of a function last */
    size_t n_lines;
    gpufl__sass_insn_t *insns;
    size_t n_insns;
    int has_sass_lines; /* some line came from a sass record's line info */
} gpufl__sass_profile_t;

/* Sums up m's sass_metric rows into p (zeroed first). Returns 0 or
 * GPUFL_ENOMEM (free p either way). */
int gpufl__sass_profile_build(const gpufl__model_t *m, gpufl__sass_profile_t *p);
void gpufl__sass_profile_free(gpufl__sass_profile_t *p);

/* What a line or instruction is ranked by. */
typedef enum gpufl__sass_rank {
    GPUFL_SASS_BY_IDLE_LANES,    /* divergence */
    GPUFL_SASS_BY_EXCESS_SECTORS /* coalescing */
} gpufl__sass_rank_t;

double gpufl__sass_rank_value(const gpufl__sass_counts_t *c, gpufl__sass_rank_t by);

/* The line of function fn with line info and the largest value > 0 of
 * `by`, or NULL (the first of a tie, in line order). */
const gpufl__sass_line_t *gpufl__sass_worst_line(const gpufl__sass_profile_t *p, size_t fn,
                                                 gpufl__sass_rank_t by);
/* The instruction of function fn with the largest value > 0 of `by`, or
 * NULL (the first of a tie, in line order). */
const gpufl__sass_insn_t *gpufl__sass_worst_insn(const gpufl__sass_profile_t *p, size_t fn,
                                                 gpufl__sass_rank_t by);

#endif
