/*
 * model.h - the session model: everything a session's logs say, in plain C
 * arrays, built once by gpufl__model_load() and then only read.
 *
 * The report, the insights, the exporters and the CLI all read this model;
 * none of them parses logs. Each record kind is an array with a count, grown
 * up to a cap; what passes a cap is counted (`*_over_cap`), never silently
 * lost. Later record kinds (kernels, copies, syncs, device metrics) are added
 * the same way: a row struct, an array, a count, a cap.
 *
 * A loaded model is immutable: any number of threads may read it at once.
 */
#ifndef GPUFL_ANALYSIS_MODEL_H
#define GPUFL_ANALYSIS_MODEL_H

#include "analysis/reader.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* An unknown value (null in the log, or the column is absent). Every value
 * with this meaning is otherwise >= 0. */
#define GPUFL_MODEL_UNKNOWN (-1)

/* The header of the session (from the first header line read). Strings are
 * never NULL: "" when absent. */
typedef struct gpufl_model_header {
    int present;
    const char *session_id;
    const char *app_name;
    const char *hostname;
    const char *clock;
    const char *gpufl_version;
    int64_t pid;           /* GPUFL_MODEL_UNKNOWN when absent */
    uint64_t epoch_ns;     /* CLOCK_MONOTONIC at init */
    int64_t epoch_unix_us; /* wall clock at the epoch; GPUFL_MODEL_UNKNOWN when absent */
} gpufl_model_header_t;

/* One scope instance: a scope_begin row joined with its scope_end row. */
typedef struct gpufl_model_scope {
    int64_t id;       /* scope instance id, unique in the session */
    int64_t parent;   /* id of the enclosing scope, 0 at top level */
    int64_t tid;
    int64_t begin_ns; /* since the session epoch */
    int64_t end_ns;   /* GPUFL_MODEL_UNKNOWN while open */
    int64_t name_id, tag_id, path_id; /* dict ids */
    const char *name; /* resolved after loading; "?" for an undefined id */
    const char *tag;  /* "" for no tag */
    const char *path;
    int32_t depth;
    int32_t repeat;   /* measured iterations (GFL_BENCH), 0 for a plain scope */
    int32_t warmup;
    uint8_t open;     /* no scope_end: still open when the log ends */
    uint8_t implicit; /* closed because an enclosing scope closed first */
} gpufl_model_scope_t;

/* One host sample (host_sample row, or the snapshot of system_start/stop).
 * Unknown values are GPUFL_MODEL_UNKNOWN (doubles: < 0). */
typedef struct gpufl_model_host_sample {
    int64_t ts_ns;
    double cpu_pct;
    double proc_cpu_pct;
    double cg_cpu_pct;
    double cg_cpu_limit_cores;
    int64_t mem_used_bytes;
    int64_t mem_total_bytes;
    int64_t proc_rss_bytes;
    int64_t cg_mem_used_bytes;
    int64_t cg_mem_limit_bytes;
} gpufl_model_host_sample_t;

/* A system_start or system_stop record. */
typedef struct gpufl_model_window {
    int64_t ts_ns;
    int64_t tid;
    int64_t active; /* windows open after the call; GPUFL_MODEL_UNKNOWN when absent */
    int64_t name_id; /* dict id when the name was written as one, else 0 */
    const char *name;
    int is_stop;    /* 0: system_start, 1: system_stop */
    int has_snapshot;
    gpufl_model_host_sample_t snapshot;
} gpufl_model_window_t;

typedef enum gpufl_model_level {
    GPUFL_MODEL_LEVEL_UNKNOWN = -1,
    GPUFL_MODEL_LEVEL_DEBUG = 0,
    GPUFL_MODEL_LEVEL_INFO = 1,
    GPUFL_MODEL_LEVEL_WARN = 2,
    GPUFL_MODEL_LEVEL_ERROR = 3
} gpufl_model_level_t;

/* An `event` record: something the recorder met while recording. */
typedef struct gpufl_model_event {
    int64_t ts_ns;
    gpufl_model_level_t level;
    const char *level_name; /* as written */
    const char *code;
    const char *message;
    gpufl_log_file_t file;
} gpufl_model_event_t;

/* The last `drops` record (cumulative counters). */
typedef struct gpufl_model_drops {
    int present;
    int64_t ts_ns;
    int64_t records;
    int64_t threads_unbuffered;
    int64_t names_truncated;
    int64_t unbalanced_ends;
    int64_t depth_overflow;
    json_t *rec; /* the whole record, for counters added later; NULL when absent */
} gpufl_model_drops_t;

typedef struct gpufl_model_session_end {
    int present;   /* some file holds a session_end line */
    unsigned files; /* how many files do */
    int64_t ts_ns;
    int64_t duration_ns;
    json_t *rec;   /* the record with the largest ts_ns, final counters included */
} gpufl_model_session_end_t;

/* A problem found while reading: a corrupt line, a dict conflict, ... */
typedef struct gpufl_model_warning {
    const char *file; /* "scope.log.1"; "" when about the session as a whole */
    uint64_t line;    /* 1-based; 0 when about a whole file */
    const char *message;
} gpufl_model_warning_t;

/* Caps on the model's arrays. Zero fields take the defaults. */
typedef struct gpufl_model_limits {
    size_t max_scopes;    /* default 16 Mi */
    size_t max_samples;   /* host samples, default 16 Mi */
    size_t max_windows;   /* system_start/stop records, default 1 Mi */
    size_t max_events;    /* default 1 Mi */
    size_t max_warnings;  /* default 1000 */
    size_t max_dict;      /* dict entries, default 16 Mi */
    size_t max_string_bytes; /* all strings together, default 1 GiB */
    size_t max_line_bytes;   /* default 64 MiB */
} gpufl_model_limits_t;

typedef struct gpufl_model {
    gpufl_model_header_t header;
    json_t *options;      /* the `options` record, NULL when absent */
    json_t *capabilities; /* the `capabilities` record, NULL when absent */
    json_t *host_info;    /* the `host_info` record, NULL when absent */

    gpufl_model_scope_t *scopes; /* in scope_begin order */
    size_t n_scopes;
    size_t n_open_scopes;
    uint64_t scopes_over_cap;       /* scope_begin rows past the cap, not kept */
    uint64_t scope_ends_over_cap;   /* scope_end rows past the cap (max_scopes), not kept */
    uint64_t scope_ends_unmatched;  /* scope_end rows with no scope_begin */
    uint64_t scope_ends_duplicate;  /* a second scope_end for one id */

    gpufl_model_host_sample_t *samples; /* host_sample rows, in log order */
    size_t n_samples;
    uint64_t samples_over_cap;

    gpufl_model_window_t *windows; /* system_start/stop records, in log order */
    size_t n_windows;
    uint64_t windows_over_cap;

    gpufl_model_event_t *events; /* in log order */
    size_t n_events;
    uint64_t events_over_cap;

    gpufl_model_drops_t drops;
    gpufl_model_session_end_t session_end;

    int64_t first_ts_ns; /* smallest / largest ts_ns seen in any record; */
    int64_t last_ts_ns;  /* GPUFL_MODEL_UNKNOWN when none */

    gpufl_model_warning_t *warnings;
    size_t n_warnings;
    uint64_t warnings_over_cap;

    uint64_t unknown_versions; /* known types with a "v" this reader does not know */
    uint64_t undefined_ids;    /* references to dict ids never defined */

    gpufl_reader_stats_t read; /* lines, bytes, truncated and corrupt lines, segments */
    gpufl_dict_t dict;         /* the session's interned strings */

    /* Internal. */
    gpufl_model_limits_t limits;
    gpufl_strpool_t strings; /* strings other than dict entries */
    gpufl_idmap_t scope_index; /* scope id -> index in scopes */
    size_t scopes_alloc, samples_alloc, windows_alloc, events_alloc, warnings_alloc;
    void *load_state; /* only during loading */
} gpufl_model_t;

/*
 * Reads the session in session_dir into a new model (*out; NULL on failure).
 * Damaged lines do not fail the load: they become warnings. Returns 0,
 * GPUFL_ENOTFOUND when the directory does not exist or holds no log file,
 * GPUFL_EIO, GPUFL_ENOMEM. Sets gpufl_last_error() on failure.
 */
int gpufl__model_load(const char *session_dir, gpufl_model_t **out);
/* As gpufl__model_load, with caps (NULL: defaults). */
int gpufl__model_load_limits(const char *session_dir, const gpufl_model_limits_t *limits,
                             gpufl_model_t **out);
/* Frees a model; accepts NULL. */
void gpufl__model_destroy(gpufl_model_t *m);

/* The string of a dict id: "" for 0, NULL when undefined. */
const char *gpufl__model_str(const gpufl_model_t *m, int64_t id);
/* The scope with instance id `id`, or NULL. */
const gpufl_model_scope_t *gpufl__model_scope_find(const gpufl_model_t *m, int64_t id);
/* A string member of a record object (e.g. of m->capabilities), or NULL. */
const char *gpufl__model_json_str(const json_t *obj, const char *key);

#endif
