// SPDX-License-Identifier: Apache-2.0
/*
 * wire.h - the log's wire format in one place: every batch type's name and
 * column table, typed rows (cells), and the encoders that turn rows, dict
 * entries and single-line records into NDJSON (docs/log-format.md).
 *
 * Sources fill rows of these tables and hand them to the collector, which
 * gives them to every sink (sink.h); only the encoders here write JSON.
 * Nothing here names a vendor: turning a vendor's values into row fields is
 * the vendor's own code.
 */
#ifndef GPUFL_CORE_WIRE_H
#define GPUFL_CORE_WIRE_H

#include "core/cost.h"
#include "util/colcode.h"
#include "util/intern.h"
#include "util/jsonw.h"

#include <stddef.h>
#include <stdint.h>

#define GPUFL_BATCH_MAX_ROWS 4096
#define GPUFL_BATCH_MAX_COLS 32

/* What a header needs; shared by the session's three files. */
typedef struct gpufl__session_ident {
    char session_id[64];
    char app_name[256];
    char hostname[256];
    int pid;
    int64_t epoch_ns;      /* CLOCK_MONOTONIC at init */
    int64_t epoch_unix_us; /* wall clock at the same moment */
    char job_id[128];      /* the batch job this process runs in; "" when none */
    char job_id_from[24];  /* the variable it came from: SLURM_JOB_ID, TORCHELASTIC_RUN_ID, ... */
    char run_id[64];       /* the `gpufl trace` run (GPUFL_RUN_ID) this session belongs to; "" */
} gpufl__session_ident_t;

/* ---- column tables ---- */

typedef enum gpufl__col_kind {
    GPUFL_COL_INT = 0,  /* integer */
    GPUFL_COL_DICT = 1, /* integer dict id (0 = none), written to the dict first */
    GPUFL_COL_PCT = 2,  /* double with one decimal; negative = null */
    GPUFL_COL_OPT = 3,  /* integer, negative = null */
    GPUFL_COL_FIX2 = 4  /* double with two decimals; negative = null */
} gpufl__col_kind_t;

typedef struct gpufl__col_def {
    const char *name;
    gpufl__col_kind_t kind;
} gpufl__col_def_t;

typedef union gpufl__cell {
    int64_t i;
    double d;
} gpufl__cell_t;

/* gauge_key of a table: not a gauge; one instance; else the column whose
 * value names the instance (a device index). */
#define GPUFL_WIRE_NOT_GAUGE (-2)
#define GPUFL_WIRE_GAUGE_ONE (-1)

/* One batch record type. */
typedef struct gpufl__wire_table {
    const char *type;
    const gpufl__col_def_t *cols;
    int ncols;
    int gauge_key;
    int version; /* the "v" of its lines */
    /* Compact lines (docs/log-format.md, "Compact batches"): the column encodings of this
     * version, NULL for plain lines. */
    const gpufl__colcode_table_t *codes;
} gpufl__wire_table_t;

/* The kernel table's columns, in their order (what a row's cells hold). */
enum gpufl__wire_kernel_col {
    GPUFL_KCOL_START,
    GPUFL_KCOL_END,
    GPUFL_KCOL_DEVICE,
    GPUFL_KCOL_CONTEXT,
    GPUFL_KCOL_STREAM,
    GPUFL_KCOL_CORRELATION,
    GPUFL_KCOL_NAME,
    GPUFL_KCOL_GRID_X,
    GPUFL_KCOL_GRID_Y,
    GPUFL_KCOL_GRID_Z,
    GPUFL_KCOL_BLOCK_X,
    GPUFL_KCOL_BLOCK_Y,
    GPUFL_KCOL_BLOCK_Z,
    GPUFL_KCOL_REGISTERS,
    GPUFL_KCOL_STATIC_SMEM,
    GPUFL_KCOL_DYNAMIC_SMEM,
    GPUFL_KCOL_LOCAL,
    GPUFL_KCOL_GRAPH_ID,
    GPUFL_KCOL_GRAPH_NODE,
    GPUFL_KCOL_DEMANGLED,
    GPUFL_KCOL_SCOPE,
    GPUFL_KCOL_CONFIG,
    GPUFL_KCOL_EXTERNAL_KIND,
    GPUFL_KCOL_EXTERNAL_ID,
    GPUFL_KCOL_LAUNCH,
    GPUFL_KCOL_TID,
    GPUFL_KCOL_STACK,
    GPUFL_KCOL_COUNT
};

extern const gpufl__wire_table_t gpufl__wire_scope_begin, gpufl__wire_scope_end,
    gpufl__wire_host_sample, gpufl__wire_gpu_sample, gpufl__wire_kernel, gpufl__wire_copy,
    gpufl__wire_memset, gpufl__wire_sync, gpufl__wire_alloc, gpufl__wire_graph_launch,
    gpufl__wire_launch, gpufl__wire_pc_sample, gpufl__wire_pc_window, gpufl__wire_sass_metric;
/* Every batch table, NULL-terminated. */
extern const gpufl__wire_table_t *const gpufl__wire_tables[];
/* The table of a batch type, NULL when it is not one. */
const gpufl__wire_table_t *gpufl__wire_table(const char *type);

/* ---- batches: rows of one table, encoded column by column ---- */

typedef struct gpufl__batch {
    const gpufl__wire_table_t *table;
    const char *type; /* table->type, cols, ncols, version: what the encoders read */
    int version;
    const gpufl__col_def_t *cols;
    int ncols;
    const gpufl__colcode_table_t *codes; /* table->codes: NULL writes plain lines */
    size_t rows;
    gpufl__cell_t *cells; /* rows x ncols, row-major; GPUFL_BATCH_MAX_ROWS rows */
    uint32_t *dict_ids;   /* scratch: the dict ids one batch uses */
    /* scratch of compact lines, allocated with the batch so that encoding never allocates:
     * the keys of a KEYED or keyed relative column and a running base per key (a KEYED
     * column: its keys' rows, then each row's key) */
    gpufl__colcode_keys_t *keys;
    int64_t *code_last;
} gpufl__batch_t;

/* Rows of table; GPUFL_EINVAL for a bad table, GPUFL_ENOMEM. */
int gpufl__batch_init_table(gpufl__batch_t *b, const gpufl__wire_table_t *table);
/* A batch of an ad hoc table (tests, benchmarks); cols must outlive b. */
int gpufl__batch_init(gpufl__batch_t *b, const char *type, const gpufl__col_def_t *cols, int ncols);
void gpufl__batch_fini(gpufl__batch_t *b);
/* The next row to fill (ncols cells), or NULL when the batch is full. */
static inline gpufl__cell_t *gpufl__batch_row(gpufl__batch_t *b) {
    if (b->rows >= GPUFL_BATCH_MAX_ROWS) return NULL;
    return &b->cells[b->rows++ * (size_t)b->ncols];
}
/* Row r of b. */
static inline const gpufl__cell_t *gpufl__batch_at(const gpufl__batch_t *b, size_t r) {
    return &b->cells[r * (size_t)b->ncols];
}

/* Writes one cell as JSON according to its column kind. */
void gpufl__buf_put_cell(gpufl__buf_t *b, gpufl__col_kind_t kind, const gpufl__cell_t *cell);
/* Puts the dict ids of rows [r0, r1) of b (0 included) into ids (room for
 * (r1 - r0) x its dict columns) and returns how many. */
size_t gpufl__wire_batch_ids(const gpufl__batch_t *b, size_t r0, size_t r1, uint32_t *ids);
/* Encodes rows [r0, r1) of b as one batch line (a compact line when b's table has codes).
 * Uses b's scratch: one thread at a time per batch, as the fan-out calls it. */
void gpufl__wire_batch_line(gpufl__buf_t *o, const gpufl__batch_t *b, size_t r0, size_t r1);

/* Looks up the string of a dict id (NULL when there is none). */
typedef const char *(*gpufl__wire_str_fn)(const void *ctx, uint32_t id, size_t *len);
/* A dict line for ids[0..n) (0 skipped), each string from str(ctx, id);
 * writes nothing when none has a string. */
void gpufl__wire_dict_line(gpufl__buf_t *o, const uint32_t *ids, size_t n, gpufl__wire_str_fn str,
                           const void *ctx);
/* The session intern table as a gpufl__wire_str_fn (ctx: the gpufl__intern_t). */
const char *gpufl__wire_intern_str(const void *ctx, uint32_t id, size_t *len);

/* A file's header line and the line that ends a segment. */
/* Fills id->job_id and job_id_from from the first of SLURM_JOB_ID, TORCHELASTIC_RUN_ID and
 * GPUFL_JOB_ID that is set and not empty (get: getenv, or a test's lookup). A value longer
 * than the field is cut; none set leaves both empty. */
void gpufl__wire_job_id(gpufl__session_ident_t *id, const char *(*get)(const char *name));
/* Fills id->run_id from GPUFL_RUN_ID (get: getenv, or a test's lookup): the id `gpufl trace`
 * gives every session of one run. A value longer than the field is cut; unset leaves it "". */
void gpufl__wire_run_id(gpufl__session_ident_t *id, const char *(*get)(const char *name));
void gpufl__wire_header(gpufl__buf_t *o, const gpufl__session_ident_t *ident, const char *file,
                        int segment);
void gpufl__wire_segment_end(gpufl__buf_t *o, const char *next);

/* ---- single-line records ---- */

#define GPUFL_LINE_DICT_MAX 8

/* One record: its JSON line (ending in '\n') and the dict ids it names,
 * which a sink defines before the line. describes: the record describes the
 * session or defines what later rows name (options, capabilities, devices,
 * legends, frames, stacks, op names, kernel configurations), so the fan-out
 * keeps it for sinks attached later and the ring never evicts it; such a
 * record names no dict id. */
typedef struct gpufl__line {
    const char *type;
    gpufl__buf_t buf;
    uint32_t dict_ids[GPUFL_LINE_DICT_MAX];
    size_t ndict;
    int describes;
} gpufl__line_t;

/* Opens the record {"type":type,"v":1 in l (freed by gpufl__line_fini) and
 * returns the buffer of its members. The record encoders below and in
 * wire_records.c build on it. */
gpufl__buf_t *gpufl__line_begin(gpufl__line_t *l, const char *type);
/* The same for a record that describes the session (see describes). */
gpufl__buf_t *gpufl__line_begin_describing(gpufl__line_t *l, const char *type);
/* Closes the line; -1 (line emptied) when it passed the cap. */
int gpufl__line_end(gpufl__line_t *l);
/* Notes that the record names dict id (defined before it by the sinks). */
void gpufl__line_dict(gpufl__line_t *l, uint32_t id);
void gpufl__line_fini(gpufl__line_t *l);

/* The records every part of the library writes (wire_records.c). */
void gpufl__wire_event(gpufl__line_t *l, int64_t ts_ns, const char *level, const char *code,
                       const char *message);
typedef struct gpufl__cost_part {
    const char *name;
    int64_t mean_ns;
} gpufl__cost_part_t;
void gpufl__wire_source_cost(gpufl__line_t *l, const char *source, const gpufl__cost_t *cost,
                             const gpufl__cost_part_t *parts, int nparts);
/* A record of integer members: ts_ns, then keys[i]: values[i]. */
typedef struct gpufl__wire_count {
    const char *key;
    uint64_t value;
} gpufl__wire_count_t;
void gpufl__wire_counts(gpufl__line_t *l, const char *type, int64_t ts_ns,
                        const gpufl__wire_count_t *v, size_t n);
/* What lost scope records the collector counted (`drops`). */
typedef struct gpufl__wire_drops {
    int64_t ts_ns;
    uint64_t dropped, unbuffered, truncated, unbalanced, depth_overflow;
} gpufl__wire_drops_t;
void gpufl__wire_drops(gpufl__line_t *l, const gpufl__wire_drops_t *d);
typedef struct gpufl__wire_session_end {
    int64_t ts_ns;
    uint64_t records_written, records_dropped, bytes_written, write_errors;
} gpufl__wire_session_end_t;
void gpufl__wire_session_end(gpufl__buf_t *o, const gpufl__wire_session_end_t *e);
/* A record of one row of table (its columns as members), e.g. a snapshot. */
void gpufl__wire_row_object(gpufl__buf_t *o, const gpufl__wire_table_t *table,
                            const gpufl__cell_t *row);
/* gpu_processes: n processes, parallel arrays; a negative value is written as null. */
typedef struct gpufl__wire_processes {
    const int64_t *pid, *used_bytes, *sm_util_pct, *mem_util_pct;
} gpufl__wire_processes_t;
void gpufl__wire_gpu_processes(gpufl__line_t *l, int64_t ts_ns, int device, int count,
                               const gpufl__wire_processes_t *p, int n);
/* process_info: who a GPU process is, written once per process (pid and
 * start time) when a device's process list first names it. Empty strings
 * and negative numbers are written as null. */
typedef struct gpufl__wire_process_info {
    int64_t ts_ns;
    int device; /* the device whose list named it first */
    int64_t pid;
    uint64_t start_ticks; /* /proc/<pid>/stat field 22; 0: unknown */
    const char *comm, *user;
    int64_t uid;
    const char *cgroup_path, *container_id, *container_runtime, *pod_uid, *pod_qos;
    const char *slurm_job_id, *slurm_job_source;
} gpufl__wire_process_info_t;
void gpufl__wire_process_info(gpufl__line_t *l, const gpufl__wire_process_info_t *p);
/* xid: one critical XID error of a device; negative instance ids (not a
 * MIG event, or the driver did not say) are written as null. */
void gpufl__wire_xid(gpufl__line_t *l, int64_t ts_ns, int device, uint64_t code,
                     int64_t gpu_instance_id, int64_t compute_instance_id);
/* frame: one code address described (NULL or "" strings: null). */
typedef struct gpufl__wire_frame {
    uint32_t id;
    uint64_t pc;
    const char *module; /* offset written only with a module */
    uint64_t offset;
    const char *language; /* an interpreted frame's (then library too); NULL: native */
    int library;
    const char *function, *file;
    int line;           /* written when > 0 */
    const char *source; /* written when not empty */
} gpufl__wire_frame_t;
void gpufl__wire_frame(gpufl__line_t *l, const gpufl__wire_frame_t *f);
/* stack: its frame ids, innermost first. */
void gpufl__wire_stack(gpufl__line_t *l, uint32_t id, const uint32_t *frames, size_t depth);
/* host_info: what the host sampler read at start, or why it could not. */
typedef struct gpufl__wire_host_info {
    const char *error; /* not NULL: the only member written */
    const char *hostname, *kernel, *cgroup_path;
    int64_t cpu_count, mem_total_bytes, cgroup_version, cg_mem_limit_bytes;
    double cg_cpu_limit_cores;
    int64_t cpus_allowed, clock_ticks_per_s, cpu_min_interval_ns;
} gpufl__wire_host_info_t;
void gpufl__wire_host_info(gpufl__line_t *l, const gpufl__wire_host_info_t *h);
/* system_start / system_stop: snapshot is a host_sample row, or NULL. */
void gpufl__wire_system_window(gpufl__line_t *l, const char *type, int64_t ts_ns, int64_t tid,
                               const char *name, int active, const gpufl__cell_t *snapshot);
/* legend: the name of every value of gpufl's own enums (gpufl_log.h). */
void gpufl__wire_legend(gpufl__line_t *l);
/* op: an operation name's index. */
void gpufl__wire_op(gpufl__line_t *l, int64_t index, const char *name);

#endif
