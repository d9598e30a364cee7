// SPDX-License-Identifier: Apache-2.0
/*
 * gpufl_analysis.h - reading a recorded session back: its records as
 * columns, the insights and the report, from the same analysis library the
 * gpufl CLI uses (every number is computed there once). The Python analyzer
 * (gpufl.analyzer) is built on this API.
 *
 * Use
 *     char dir[4096];
 *     gpufl_analysis_t *a;
 *     size_t rows, cols;
 *     gpufl_column_t c;
 *     if (gpufl_analysis_find("train.log", "train", NULL, dir, sizeof dir) == 0 &&
 *         gpufl_analysis_open(&a, dir) == 0) {
 *         c.size = sizeof c;
 *         if (gpufl_analysis_table(a, GPUFL_TABLE_KERNELS, &rows, &cols) == 0 &&
 *             gpufl_analysis_column_find(a, GPUFL_TABLE_KERNELS, "duration_ns", &c) == 0)
 *             ... ((const int64_t *)c.data)[0 .. rows) ...
 *         gpufl_analysis_close(a);
 *     }
 *
 * Conventions (as in gpufl.h): fallible calls return 0 or a negative
 * GPUFL_E* code and set gpufl_last_error(). A handle is safe to use from
 * several threads (calls on one handle are serialised). Everything a handle
 * returns (columns, strings, report text) stays valid and unchanged until
 * gpufl_analysis_close(). Tables only gain columns at their end in later
 * releases; look columns up by name.
 */
#ifndef GPUFL_ANALYSIS_H
#define GPUFL_ANALYSIS_H

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_log.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A loaded session (opaque). */
typedef struct gpufl_analysis gpufl_analysis_t;

/**
 * Finds a session directory and writes its path to buf (NUL-terminated).
 *
 * log_dir may be a session directory itself, a log root holding session
 * directories (a `log_path`), or the directory holding `<app_name>.log`
 * (the default log_path of app_name). app_name (NULL or "": any) keeps the
 * sessions whose header names that app. session_id (NULL or "": the newest
 * session) picks one by its directory name or header session id.
 *
 * Returns 0; GPUFL_ENOTFOUND when log_dir does not exist, holds no session
 * (of app_name), or no session has that id (the message says which, and
 * lists the apps found); GPUFL_EINVAL for a NULL log_dir or buf or a buf
 * too small; GPUFL_EIO, GPUFL_ENOMEM.
 */
GPUFL_API int gpufl_analysis_find(const char *log_dir, const char *app_name, const char *session_id,
                                  char *buf, size_t buf_size);

/**
 * Reads the session in session_dir (every rotated segment of its device,
 * scope and system logs) into a new handle (*out, NULL on failure). A
 * damaged line does not fail the load: it is skipped and counted (table
 * "session", columns corrupt_lines, truncated_lines, warnings), as the
 * report counts it; an incomplete last line (a killed process) is ignored.
 *
 * Returns 0; GPUFL_ENOTFOUND when the directory does not exist or holds no
 * log file; GPUFL_EINVAL for NULL arguments; GPUFL_EIO, GPUFL_ENOMEM.
 */
GPUFL_API int gpufl_analysis_open(gpufl_analysis_t **out, const char *session_dir);

/** Frees a handle and everything it returned. Accepts NULL. */
GPUFL_API void gpufl_analysis_close(gpufl_analysis_t *a);

/* ---------------------------------------------------------------------- */
/* Tables                                                                   */
/* ---------------------------------------------------------------------- */

/**
 * The tables of a session; docs/python.md lists every column. Times are
 * int64 nanoseconds on the session clock (since the session's epoch).
 * Values are stable: never renumbered. The columns copy_kind, src_kind,
 * dst_kind, memory_kind and sync_type hold the values of gpufl_log.h
 * (gpufl_copy_kind_t, gpufl_memory_kind_t, gpufl_sync_type_t), whichever
 * version of the log they were read from.
 */
typedef enum gpufl_table {
    GPUFL_TABLE_SESSION = 0,        /**< one row: header, engine, duration, read problems */
    GPUFL_TABLE_KERNELS = 1,        /**< kernel executions (Trace engine) */
    GPUFL_TABLE_COPIES = 2,         /**< memory copies (Trace engine) */
    GPUFL_TABLE_MEMSETS = 3,        /**< memsets (Trace engine) */
    GPUFL_TABLE_SYNCS = 4,          /**< synchronization calls, with their source site */
    GPUFL_TABLE_LAUNCHES = 5,       /**< kernel launch calls (PcSampling and Deep engines) */
    GPUFL_TABLE_SCOPES = 6,         /**< scope instances: a begin joined with its end */
    GPUFL_TABLE_DEVICE_METRICS = 7, /**< GPU samples (NVML) */
    GPUFL_TABLE_HOST_METRICS = 8,   /**< host samples (CPU, memory, cgroup) */
    GPUFL_TABLE_PC_SAMPLES = 9,     /**< PC sampling rows: stall reason samples per PC */
    GPUFL_TABLE_SASS_METRICS = 10,  /**< SASS metrics rows: counts per instruction */
    GPUFL_TABLE_INSIGHTS = 11,      /**< findings of the insight rules, most severe first */
    GPUFL_TABLE_PERF = 12,          /**< hardware counters per profiled scope (RangeProfiler):
                                         fixed columns, then one double column per metric name */
    GPUFL_TABLE_COUNT = 13
} gpufl_table_t;

/** The table's name ("kernels", "device_metrics", ...), or NULL for an unknown value. */
GPUFL_API const char *gpufl_table_name(gpufl_table_t table);

typedef enum gpufl_column_type {
    GPUFL_COLUMN_INT64 = 0,  /**< int64_t; -1 where unknown (known values are >= 0) */
    GPUFL_COLUMN_DOUBLE = 1, /**< double; NaN where unknown */
    GPUFL_COLUMN_STRING = 2  /**< int64_t string ids: gpufl_analysis_string(); 0 for none */
} gpufl_column_type_t;

/** One column: `rows` values, contiguous. Set `size` before the call. */
typedef struct gpufl_column {
    size_t size;              /**< sizeof(gpufl_column_t) of the caller */
    const char *name;         /**< "start_ns", ... */
    gpufl_column_type_t type; /**< what data points to */
    const void *data;         /**< int64_t[rows] or double[rows]; NULL when rows is 0 */
    size_t rows;
} gpufl_column_t;

/**
 * Builds a table (once; later calls return at once) and gives its row and
 * column counts (either pointer may be NULL). Returns 0, GPUFL_EINVAL for
 * an unknown table, GPUFL_ENOMEM.
 */
GPUFL_API int gpufl_analysis_table(gpufl_analysis_t *a, gpufl_table_t table, size_t *rows,
                                   size_t *columns);

/** Column `index` (0 .. columns-1) of a table into *out. Returns 0, GPUFL_EINVAL, GPUFL_ENOMEM. */
GPUFL_API int gpufl_analysis_column(gpufl_analysis_t *a, gpufl_table_t table, size_t index,
                                    gpufl_column_t *out);

/** The column named `name` of a table into *out. Returns 0, GPUFL_ENOTFOUND, GPUFL_EINVAL,
 * GPUFL_ENOMEM. */
GPUFL_API int gpufl_analysis_column_find(gpufl_analysis_t *a, gpufl_table_t table, const char *name,
                                         gpufl_column_t *out);

/**
 * The string with id `id` of a STRING column, NULL for 0 or an id the
 * handle never gave. One id per distinct string in the whole handle: equal
 * ids are equal strings and the reverse. Ids run from 1 to
 * gpufl_analysis_string_count() - 1 and only grow as tables are built.
 */
GPUFL_API const char *gpufl_analysis_string(gpufl_analysis_t *a, int64_t id);
/** One past the largest string id given so far. */
GPUFL_API int64_t gpufl_analysis_string_count(gpufl_analysis_t *a);

/* ---------------------------------------------------------------------- */
/* Report                                                                   */
/* ---------------------------------------------------------------------- */

/** What gpufl_analysis_report() renders. Fields are only appended. */
typedef struct gpufl_report_options {
    size_t size;        /**< sizeof(gpufl_report_options_t); set by the init call */
    const char *format; /**< "text" (default, NULL), "json", "markdown", "html" */
    /**
     * NULL: the whole report. Text only: one section, as the whole report
     * shows it: "summary", "insights", "scopes", "system", "gpu", "kernels"
     * (hotspots and launches), "kernel_details", "copies", "scope_gpu",
     * "pc_sampling", "sass_metrics", "hardware_counters", "problems".
     */
    const char *section;
    size_t top_n; /**< kernel names in the hotspots and kernel details; 0: 10 */
} gpufl_report_options_t;

/** Fills the first `size` bytes of *opts with the defaults and sets opts->size. */
GPUFL_API void gpufl_report_options_init_sized(gpufl_report_options_t *opts, size_t size);
/** Fills *opts with the defaults: the whole text report, 10 kernel names. */
static inline void gpufl_report_options_init(gpufl_report_options_t *opts) {
    gpufl_report_options_init_sized(opts, sizeof *opts);
}

/**
 * Renders the session's report, the same bytes `gpufl report` writes for
 * the same options, into *text (NUL-terminated, *len bytes; len may be
 * NULL), owned by the handle. opts NULL: the defaults. Returns 0,
 * GPUFL_EINVAL (unknown format or section, a section of a format other
 * than text), GPUFL_ENOMEM.
 */
GPUFL_API int gpufl_analysis_report(gpufl_analysis_t *a, const gpufl_report_options_t *opts,
                                    const char **text, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* GPUFL_ANALYSIS_H */
