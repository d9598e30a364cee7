// SPDX-License-Identifier: Apache-2.0
/*
 * model_internal.h - what model.c shares with the files that load further
 * record kinds into the model (model_pc.c, model_sass_metrics.c) and derive from them
 * (pc_attrib.c). Internal to the analysis library; only valid while a model
 * is being loaded. Each domain file (model_<domain>.c) registers its record
 * types in a gpufl__model_handler_t table declared here.
 */
#ifndef GPUFL_ANALYSIS_MODEL_INTERNAL_H
#define GPUFL_ANALYSIS_MODEL_INTERNAL_H

#include "analysis/model.h"

/* A scope_end row, kept until the join. */
typedef struct scope_end_row {
    int64_t ts_ns, tid, id;
    int64_t implicit;
} scope_end_row_t;

/* What survives of a scope_begin row in a damaged line: enough to name the
 * scope whose end finds no begin. 0 where the column did not survive. */
typedef struct salvaged_begin {
    int64_t id, parent, name_id, tag_id, path_id;
} salvaged_begin_t;

/* What loading keeps until everything is read (m->load_state). */
typedef struct load_state {
    scope_end_row_t *ends;
    size_t n_ends, ends_alloc;
    uint64_t scope_ids_duplicate;
    uint64_t scopes_backwards; /* end before begin */
    salvaged_begin_t *salvaged;
    size_t n_salvaged, salvaged_alloc;
} load_state_t;

/* Where the rows of one record type go: a growing array and its cap. */
typedef struct row_array {
    void **data;
    size_t *alloc, *n;
    size_t elem, cap;
    uint64_t *over_cap;
} row_array_t;

/* The row array of model field f (m->f, f_alloc, n_f, f_over_cap), capped
 * by m->limits.cap. */
#define ROWS(m, f, cap)                                                                            \
    ((row_array_t){(void **)&(m)->f, &(m)->f##_alloc, &(m)->n_##f, sizeof *(m)->f,                 \
                   (m)->limits.cap, &(m)->f##_over_cap})

/* The integer columns of one batch type. The first n_required must be
 * present and hold integers; the others may be absent or null, and read as
 * GPUFL_MODEL_UNKNOWN then (and when past int64). Every value is in
 * [0, max[c]] (0 in max: no upper bound). Columns 0 and 1 are a start and an
 * end time (end >= start), unless instant: then column 0 is the one time. */
typedef struct trace_cols {
    const char *type;
    const char *const *names;
    const int64_t *max;
    int ncol, n_required;
    int instant;
} trace_cols_t;

#define TRACE_COLS_MAX 32 /* columns of a batch (kernel has 26) */

/* Makes room for one more element. Returns 0, 1 when the cap is reached (the
 * caller counts the row), or GPUFL_ENOMEM. */
int gpufl__model_reserve(void **data, size_t *alloc, size_t n, size_t elem, size_t max);
/* Appends a zeroed row to a and returns it; NULL with *rc = 0 when the cap
 * is reached (counted in over_cap), or with *rc = GPUFL_ENOMEM. */
void *gpufl__model_append_row(row_array_t a, int *rc);
/* A problem about the session (file "") or a file (line 0) or a line. */
void gpufl__model_warn(gpufl__model_t *m, const char *file, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Reports a bad line of type and returns 2 (the reader's "corrupt"). */
int gpufl__model_bad_line(gpufl__model_t *m, const gpufl__reader_pos_t *pos, const char *type,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A string member of obj copied into the model, "" when absent; NULL only
 * when out of memory. */
const char *gpufl__model_member_str(gpufl__model_t *m, const json_t *obj, const char *key);
/* Copies a string into the model's pool; NULL when out of memory. */
const char *gpufl__model_pool_str(gpufl__model_t *m, const char *s, size_t len);
/* Widens the session's first/last time to ts. */
void gpufl__model_note_ts(gpufl__model_t *m, int64_t ts);
/* The string of a dict id; "?" (and counted) when undefined. */
const char *gpufl__model_resolve(gpufl__model_t *m, int64_t id);
/* Loads the rows of an integer batch, from rec or from the reader's scanned
 * view, each row checked (see trace_cols_t) and handed to fill. A bad row
 * rolls the whole line back; rows past the cap are counted. */
int gpufl__model_load_rows(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                           const gpufl__reader_batch_t *view, const trace_cols_t *t, row_array_t a,
                           void (*fill)(void *row, const int64_t *v));

/* A count member (>= 0), else GPUFL_MODEL_UNKNOWN; a duration in ms (>= 0),
 * else GPUFL_MODEL_UNKNOWN. */
int64_t gpufl__model_count(const json_t *v);
double gpufl__model_ms(const json_t *v);
/* Keeps rec in *slot in place of what it held: for the *_stats records,
 * whose counters are cumulative (the last record wins). Returns 0. */
int gpufl__model_keep_last(json_t **slot, json_t *rec);
/* The head of a per-context record (pc_sampling, sass_metrics): its context
 * id and ts_ns into *context and *ts, its member `names` (an array or
 * null), the time noted. Returns 0, or 2 with the line reported. */
int gpufl__model_context_head(gpufl__model_t *m, const gpufl__reader_pos_t *pos, const char *type,
                              json_t *rec, const char *names, int64_t *context, int64_t *ts);

/*
 * The handler of one record type, in its domain's table (a NULL type ends
 * the table). Exactly one of record and rows is set: record takes the
 * record as JSON; rows takes a high-rate integer batch either as JSON (rec,
 * view NULL) or as the reader's scanned column view (rec NULL), which the
 * reader only builds for types with rows. Both return what a reader
 * callback returns: 0 handled, 1 unknown, 2 corrupt (reported), < 0 stop.
 */
typedef struct gpufl__model_handler {
    const char *type;
    int (*record)(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec);
    int (*rows)(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                const gpufl__reader_batch_t *view);
} gpufl__model_handler_t;

/* The domains' tables (model.c walks them). */
extern const gpufl__model_handler_t gpufl__model_session_handlers[];      /* model_session.c */
extern const gpufl__model_handler_t gpufl__model_host_handlers[];         /* model_host.c */
extern const gpufl__model_handler_t gpufl__model_scope_handlers[];        /* model_scope.c */
extern const gpufl__model_handler_t gpufl__model_gpu_handlers[];          /* model_gpu.c */
extern const gpufl__model_handler_t gpufl__model_trace_handlers[];        /* model_trace.c */
extern const gpufl__model_handler_t gpufl__model_stack_handlers[];        /* model_stack.c */
extern const gpufl__model_handler_t gpufl__model_pc_handlers[];           /* model_pc.c */
extern const gpufl__model_handler_t gpufl__model_sass_metrics_handlers[]; /* model_sass_metrics.c */
extern const gpufl__model_handler_t gpufl__model_range_handlers[];        /* model_range.c */

/* Field readers shared by the domains (model.c). */
int64_t gpufl__model_int_or_unknown(const json_t *v);
/* A value: negative means unknown, like null. */
int64_t gpufl__model_nonneg_or_unknown(const json_t *v);
/* Reads a device number (0 .. INT32_MAX). Returns 0 or -1. */
int gpufl__model_device_number(const json_t *v, int64_t *out);
/* The "name" member of rec, written as a string or as a dict id (then
 * resolved after loading): sets *id (0 for a string) and *out ("" until
 * resolved). Returns 0 or GPUFL_ENOMEM. */
int gpufl__model_name_member(gpufl__model_t *m, const json_t *rec, int64_t *id, const char **out);
/* Keeps rec in *slot unless it holds one already (the first record wins). */
int gpufl__model_keep_first(json_t **slot, json_t *rec);

/* model_gpu.c: the entry of device, created (has_info 0, all unknown) when
 * new. Returns 0, 1 when the device cap is reached, or GPUFL_ENOMEM. */
int gpufl__model_gpu_slot(gpufl__model_gpu_t **out, gpufl__model_t *m, int64_t device);
/* model_scope.c: the index of the first len bytes of path in the sorted
 * scope paths, or -1. */
long gpufl__model_path_find(const gpufl__model_t *m, const char *path, size_t len);

/* The steps after reading, in the order model.c runs them; each returns 0
 * or GPUFL_ENOMEM. Scope joins (model_scope.c); devices (model_gpu.c);
 * scope paths and GPU time per path (model_scope.c); stacks
 * (model_stack.c); kernel_config names and launches (model_trace.c). */
int gpufl__model_finish_scopes(gpufl__model_t *m);
int gpufl__model_finish_gpus(gpufl__model_t *m);
int gpufl__model_finish_paths(gpufl__model_t *m);
void gpufl__model_finish_stacks(gpufl__model_t *m);
int gpufl__model_finish_trace(gpufl__model_t *m);

/* model_pc.c: after reading: the reason table, sass sorted, problems counted. Returns 0
 * or GPUFL_ENOMEM. */
int gpufl__model_finish_pc(gpufl__model_t *m);
/* Frees what model_pc.c allocated. */
void gpufl__model_free_pc(gpufl__model_t *m);

/* model_sass_metrics.c: after reading: the rows sorted, one per (context, cubin, function, pc). */
void gpufl__model_finish_sass_metrics(gpufl__model_t *m);
void gpufl__model_free_sass_metrics(gpufl__model_t *m);

/* model_range.c */
void gpufl__model_free_range(gpufl__model_t *m);

/* model_lost.c: damaged lines and the scopes whose begins went with them.
 * The reader's damaged callback (user: the model): keeps the line and what
 * went with it, and the surviving columns of scope_begin rows. */
int gpufl__model_on_damaged(void *user, const gpufl__reader_pos_t *pos,
                            const gpufl__reader_damage_t *d);
/* Adds a scope_end row that matched no scope_begin to m->lost_scopes.
 * Returns 0 or GPUFL_ENOMEM. */
int gpufl__model_add_lost_scope(gpufl__model_t *m, const scope_end_row_t *e);
/* After the join, before the scope paths: names the lost scopes from what
 * survives (the damaged lines' columns, their children's paths). Returns 0
 * or GPUFL_ENOMEM. */
int gpufl__model_name_lost_scopes(gpufl__model_t *m);
void gpufl__model_free_lost(gpufl__model_t *m);

/* pc_attrib.c: gives the samples of pc_sample rows to scope paths through
 * the kernels that ran at their time (after the scope paths are built).
 * Returns 0 or GPUFL_ENOMEM. */
int gpufl__model_attribute_pc(gpufl__model_t *m);

#endif
