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
 * gpufl_analysis_close() (for a handle being fed: until it is next fed, see
 * gpufl_analysis_feed()). Tables only gain columns at their end in later
 * releases; look columns up by name.
 */
#ifndef GPUFL_ANALYSIS_H
#define GPUFL_ANALYSIS_H

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_log.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A loaded session, or one being fed (opaque). */
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

/** Called now and then while a session is read: bytes read so far of all its log files. */
typedef void (*gpufl_load_progress_fn)(void *user, uint64_t read_bytes, uint64_t total_bytes);

/** How gpufl_analysis_open_with() reads. Fields are only appended. */
typedef struct gpufl_open_options {
    size_t size;                     /**< sizeof(gpufl_open_options_t); set by the init call */
    gpufl_load_progress_fn progress; /**< NULL: none; called on the opening thread */
    void *progress_user;             /**< passed to progress */
} gpufl_open_options_t;

/** Fills the first `size` bytes of *opts with the defaults (no progress) and sets opts->size. */
GPUFL_API void gpufl_open_options_init_sized(gpufl_open_options_t *opts, size_t size);
/** Fills *opts with the defaults. */
static inline void gpufl_open_options_init(gpufl_open_options_t *opts) {
    gpufl_open_options_init_sized(opts, sizeof *opts);
}

/**
 * As gpufl_analysis_open(), with options (NULL: the defaults): the progress
 * of a long read, for a progress bar. Same returns.
 */
GPUFL_API int gpufl_analysis_open_with(gpufl_analysis_t **out, const char *session_dir,
                                       const gpufl_open_options_t *opts);

/** Frees a handle and everything it returned. Accepts NULL. */
GPUFL_API void gpufl_analysis_close(gpufl_analysis_t *a);

/**
 * 1 when dir is a session directory (it holds a device.log or scope.log),
 * else 0 (also for NULL). Thread-safe.
 */
GPUFL_API int gpufl_analysis_is_session(const char *dir);

/* ---------------------------------------------------------------------- */
/* Session listing                                                          */
/* ---------------------------------------------------------------------- */

/** One session directory and what its files say. Fields are only appended. */
typedef struct gpufl_session_info {
    size_t size;            /**< sizeof(gpufl_session_info_t) of the library */
    const char *name;       /**< the directory's name: the session id */
    const char *path;       /**< the directory */
    const char *app_name;   /**< from the header; "" when unknown */
    const char *session_id; /**< from the header; "" when unknown */
    int64_t start_unix_us;  /**< session start from the header; -1 unknown */
    int64_t duration_ns;    /**< from the session's end record; -1 when running or died */
    uint64_t size_bytes;    /**< all files of the session */
} gpufl_session_info_t;

/** The sessions under a log root (opaque). */
typedef struct gpufl_session_list gpufl_session_list_t;

/**
 * Lists the session directories directly under root, newest first (by
 * start, then name), reading only each one's first header and its last
 * segment's tail; at most 100000. A root that is itself a session, or
 * holds none, gives an empty list. Returns 0 and a new list in *out (NULL
 * on failure); GPUFL_ENOTFOUND or GPUFL_EIO when root cannot be read;
 * GPUFL_EINVAL for NULL arguments; GPUFL_ENOMEM. Thread-safe; the list is
 * read-only after creation and may be read from any thread.
 */
GPUFL_API int gpufl_session_list_create(gpufl_session_list_t **out, const char *root);
/** The number of sessions in the list (0 for NULL). */
GPUFL_API size_t gpufl_session_list_count(const gpufl_session_list_t *list);
/** Session `index`, newest first; NULL past the last. Owned by the list. */
GPUFL_API const gpufl_session_info_t *gpufl_session_list_get(const gpufl_session_list_t *list,
                                                             size_t index);
/** Frees a list and everything it returned. Accepts NULL. */
GPUFL_API void gpufl_session_list_destroy(gpufl_session_list_t *list);

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
/* Feeding a session line by line                                           */
/* ---------------------------------------------------------------------- */

/*
 * A handle can also be built from a session's lines as they arrive (a
 * server receiving windows, a live view) instead of from a directory:
 *     gpufl_analysis_create(&a, NULL);
 *     gpufl_analysis_feed(a, "device", bytes, len);   ... any file, any order
 *     gpufl_analysis_report(a, NULL, &text, NULL);   ... at any point
 *     gpufl_analysis_feed_end(a, NULL);              ... the session is complete
 * The lines of device.log, scope.log and system.log may interleave in any
 * way; each file's own lines must come in order (rotated segments of a file
 * one after another: a segment_end line starts the next). Fed in full, a
 * session gives the same tables and report, byte for byte, as opening its
 * directory. A report taken before the end is of what came so far and says
 * the session is still open, as it does for a session that never ended.
 */

/** Lines are applied as they come and not kept (see gpufl_analysis_options_t). */
#define GPUFL_ANALYSIS_IN_ORDER 1u

/** How gpufl_analysis_create() builds a handle. Fields are only appended. */
typedef struct gpufl_analysis_options {
    size_t size; /**< sizeof(gpufl_analysis_options_t); set by the init call */
    /**
     * 0 (default): the lines are kept, in memory, so that files may
     * interleave in any way and a report can be taken at any point (each is
     * built from every line so far). GPUFL_ANALYSIS_IN_ORDER: nothing but
     * the model is kept; the files must come one after another (device,
     * scope, system; any may be absent) and tables and reports wait for
     * gpufl_analysis_feed_end(a, NULL). Opening a directory reads this way.
     */
    unsigned flags;
    /** A longer line is skipped and counted as damaged, never held; 0: 64 MiB. */
    size_t max_line_bytes;
    /** Cap on the lines kept (flags 0); 0: 4 GiB. */
    size_t max_kept_bytes;
} gpufl_analysis_options_t;

/** Fills the first `size` bytes of *opts with the defaults and sets opts->size. */
GPUFL_API void gpufl_analysis_options_init_sized(gpufl_analysis_options_t *opts, size_t size);
/** Fills *opts with the defaults. */
static inline void gpufl_analysis_options_init(gpufl_analysis_options_t *opts) {
    gpufl_analysis_options_init_sized(opts, sizeof *opts);
}

/**
 * Makes an empty handle to be fed (*out, NULL on failure); close it with
 * gpufl_analysis_close(). opts NULL: the defaults. Returns 0, GPUFL_EINVAL
 * (NULL out, an opts->size that is 0, unknown flags), GPUFL_ENOMEM.
 */
GPUFL_API int gpufl_analysis_create(gpufl_analysis_t **out, const gpufl_analysis_options_t *opts);

/**
 * Feeds len bytes of one of the session's files. channel names the file:
 * "device", "scope" or "system" (also "device.log", "scope.log.2", ...: the
 * segment number is not needed); NULL lets the header lines tell: each
 * header line's "file" says whose lines follow on the NULL channel, so
 * whole files may be fed there one after another (a file that ends in an
 * unfinished line, as a killed writer leaves it, would join the next file's
 * header there: name its channel). The bytes may end in the
 * middle of a line: the rest comes with the next call for that channel.
 * Damaged lines (not JSON, longer than max_line_bytes, of a type or version
 * the library does not know) are skipped and counted, as when reading a
 * directory; they do not fail the call. The bytes are copied (kept or
 * applied) before the call returns. Tables, strings and report texts an
 * earlier call returned stay valid until the next feed call or close.
 *
 * Returns 0; GPUFL_EINVAL for a NULL handle or bytes (len > 0), an unknown
 * channel, a handle opened from a directory, a file already ended, after
 * gpufl_analysis_feed_end(a, NULL), or (GPUFL_ANALYSIS_IN_ORDER) a file
 * before one already fed; GPUFL_EFORMAT for a line on the NULL channel
 * before any header line says its file; GPUFL_ENOMEM (max_kept_bytes
 * reached, or out of memory). Thread-safe (calls on one handle are
 * serialised).
 */
GPUFL_API int gpufl_analysis_feed(gpufl_analysis_t *a, const char *channel, const char *bytes,
                                  size_t len);

/**
 * Ends one file (channel as gpufl_analysis_feed's) or, for NULL, the whole
 * session: an unfinished last line is dropped and counted as truncated (what
 * a killed writer leaves), and no more bytes are taken for it. Ending the
 * session is what GPUFL_ANALYSIS_IN_ORDER tables and reports wait for.
 * Returns 0; GPUFL_EINVAL as gpufl_analysis_feed (ending a file twice, or
 * anything after the session's end); GPUFL_ENOMEM.
 */
GPUFL_API int gpufl_analysis_feed_end(gpufl_analysis_t *a, const char *channel);

/* ---------------------------------------------------------------------- */
/* Report                                                                   */
/* ---------------------------------------------------------------------- */

/** The report's formats. Values are stable: never renumbered. */
typedef enum gpufl_report_format {
    GPUFL_REPORT_TEXT = 0,     /**< for people; what gpufl_report_session() writes */
    GPUFL_REPORT_JSON = 1,     /**< for programs */
    GPUFL_REPORT_MARKDOWN = 2, /**< Markdown */
    GPUFL_REPORT_HTML = 3      /**< one self-contained HTML file */
} gpufl_report_format_t;

/**
 * A format's name ("text", "json", "markdown" or "md", "html") to *out.
 * Returns 0, or GPUFL_EINVAL for any other name or a NULL argument.
 */
GPUFL_API int gpufl_report_format_parse(const char *name, gpufl_report_format_t *out);

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

/**
 * As gpufl_analysis_report(), written to out instead of kept in memory
 * (a large HTML report is not held twice). opts NULL: the defaults.
 * Returns 0, GPUFL_EINVAL (as gpufl_analysis_report(), or a NULL handle or
 * out), GPUFL_EIO when writing to out failed, GPUFL_ENOMEM. out stays the
 * caller's (not closed). Calls on one handle are serialised.
 */
GPUFL_API int gpufl_analysis_report_write(gpufl_analysis_t *a, const gpufl_report_options_t *opts,
                                          FILE *out);

/* ---------------------------------------------------------------------- */
/* Insights                                                                 */
/* ---------------------------------------------------------------------- */

/** How much an insight matters. Values are stable: never renumbered. */
typedef enum gpufl_severity {
    GPUFL_SEVERITY_LOW = 1,
    GPUFL_SEVERITY_MEDIUM = 2,
    GPUFL_SEVERITY_HIGH = 3
} gpufl_severity_t;

/** "LOW", "MEDIUM", "HIGH"; "?" for another value. */
GPUFL_API const char *gpufl_severity_name(gpufl_severity_t severity);
/**
 * A severity's name, in any letter case, to *out. Returns 0, or GPUFL_EINVAL
 * for another name or a NULL argument.
 */
GPUFL_API int gpufl_severity_parse(const char *name, gpufl_severity_t *out);

/** What gpufl_analysis_insights_write() writes. Fields are only appended. */
typedef struct gpufl_insights_options {
    size_t size;                   /**< sizeof(gpufl_insights_options_t); set by the init call */
    const char *format;            /**< "text" (default, NULL) or "json" */
    gpufl_severity_t min_severity; /**< the lowest severity written; default LOW */
} gpufl_insights_options_t;

/** Fills the first `size` bytes of *opts with the defaults and sets opts->size. */
GPUFL_API void gpufl_insights_options_init_sized(gpufl_insights_options_t *opts, size_t size);
/** Fills *opts with the defaults: text, every severity. */
static inline void gpufl_insights_options_init(gpufl_insights_options_t *opts) {
    gpufl_insights_options_init_sized(opts, sizeof *opts);
}

/**
 * Writes the session's insights (the report's findings, most severe first;
 * docs/insights.md) to out, as `gpufl insights` prints them: text for
 * people, or JSON. opts NULL: the defaults. Returns 0, GPUFL_EINVAL (a NULL
 * handle or out, an unknown format), GPUFL_EIO when writing failed,
 * GPUFL_ENOMEM. Calls on one handle are serialised.
 */
GPUFL_API int gpufl_analysis_insights_write(gpufl_analysis_t *a,
                                            const gpufl_insights_options_t *opts, FILE *out);

/* ---------------------------------------------------------------------- */
/* Export to trace viewers (docs/export.md)                                 */
/* ---------------------------------------------------------------------- */

/** Trace formats. Values are stable: never renumbered. */
typedef enum gpufl_export_format {
    GPUFL_EXPORT_CHROME = 0,   /**< Chrome trace event JSON (chrome://tracing, Perfetto UI) */
    GPUFL_EXPORT_PERFETTO = 1, /**< Perfetto protobuf trace (ui.perfetto.dev, trace_processor) */
    GPUFL_EXPORT_CTF = 2       /**< a CTF 1.8 trace directory (babeltrace2, Trace Compass) */
} gpufl_export_format_t;

/** "chrome", "perfetto" or "ctf" to *out. Returns 0, or GPUFL_EINVAL for any other name. */
GPUFL_API int gpufl_export_format_parse(const char *name, gpufl_export_format_t *out);
/** The file name ending of a format: ".trace.json", ".perfetto-trace", ".ctf" (a directory). */
GPUFL_API const char *gpufl_export_extension(gpufl_export_format_t format);

/** Chrome JSON: trace events per file (metadata events aside) unless told otherwise. */
#define GPUFL_EXPORT_CHROME_MAX_EVENTS 1000000u
/** Chrome JSON: files one export may split into. */
#define GPUFL_EXPORT_FILES_MAX 10000u

/** Called now and then while writing, on the exporting thread: fraction done, 0..1. */
typedef void (*gpufl_export_progress_fn)(void *user, double fraction);

/** What gpufl_analysis_export() writes. Set `size` (or zero the struct and set it). Fields are
 * only appended. */
typedef struct gpufl_export_options {
    size_t size; /**< sizeof(gpufl_export_options_t) */
    gpufl_export_format_t format;
    /** The file to write; NULL or "-": the stream `out` (never split). CTF: the directory to
     * write the trace into (created when missing; a stream is refused). */
    const char *path;
    FILE *out;
    /** Chrome JSON: at most this many trace events per file (0: the default,
     * GPUFL_EXPORT_CHROME_MAX_EVENTS; UINT64_MAX: one file). A session with
     * more is split by time into <stem>.<n><ending>, each file complete with
     * the process and track metadata. */
    uint64_t max_events_per_file;
    gpufl_export_progress_fn progress; /**< NULL: none */
    void *progress_user;
    /** CTF: an existing directory that is not empty is refused unless this is set; then it
     * must hold a trace (a `metadata` file and plain files only), whose files are deleted
     * before the new trace is written. Chrome and Perfetto overwrite their files anyway. */
    int overwrite;
} gpufl_export_options_t;

/** What an export wrote. Free with gpufl_export_result_fini(). */
typedef struct gpufl_export_result {
    size_t n_files;
    char **files;         /**< the paths written, in time order; NULL for a stream; CTF: the
                               trace's directory */
    uint64_t events;      /**< Chrome: trace events written, metadata included; Perfetto:
                               packets; CTF: event records */
    uint64_t bytes;       /**< written, all files together */
    uint64_t slices;      /**< scopes, syncs, launches, kernels, copies, memsets */
    uint64_t counters;    /**< counter values */
    uint64_t instants;    /**< launch rows drawn as instants (sessions without kernel rows) */
    uint64_t flows;       /**< launch -> kernel arrows written */
    uint64_t flows_cut;   /**< Chrome: arrows left out, their ends in different files */
    uint64_t clipped;     /**< slices shortened to nest inside the one enclosing them */
    uint64_t no_launch;   /**< kernels whose launch time is not in the log: no arrow */
    size_t tracks;        /**< thread, GPU and counter tracks; CTF: data stream files */
    int split_suppressed; /**< Chrome to a stream: more events than one file should hold */
} gpufl_export_result_t;

/**
 * Writes the session's timeline in opt->format: a track per CPU thread
 * (scopes, syncs, launches), per GPU stream (kernels, copies), launch ->
 * kernel arrows and counter tracks (docs/export.md); GPUFL_EXPORT_CTF writes
 * every row as an event record into the directory opt->path instead
 * (docs/design/ctf-export.md). Returns 0, GPUFL_EINVAL (a NULL handle or opt,
 * bad options, a CTF directory that is not empty without overwrite),
 * GPUFL_EIO (a file could not be created or written: the message names it;
 * files already complete stay, and *res lists them), GPUFL_ENOMEM. *res (may be NULL) says what was
 * written; free it with gpufl_export_result_fini(), also after a failure.
 * Calls on one handle are serialised.
 */
GPUFL_API int gpufl_analysis_export(gpufl_export_result_t *res, gpufl_analysis_t *a,
                                    const gpufl_export_options_t *opt);
/** Frees what a result holds; accepts NULL and a result never filled (zeroed). */
GPUFL_API void gpufl_export_result_fini(gpufl_export_result_t *res);

/* ---- Log lines -------------------------------------------------------- */

struct json_t; /* jansson's: this header does not include jansson */

/**
 * Rewrites one parsed log line, in place, as the plain line it stands for when it is a compact
 * batch line (kernel v 2; copy, memset, sync v 3: docs/log-format.md, "Compact batches"): every
 * column an array of one value per row, every code undone, unknown members left alone. Any
 * other line is left as it is. For programs that parse lines with jansson themselves
 * (gpufl-server does); `line` must come from the jansson that this library links.
 * Returns 0, GPUFL_EFORMAT when the encoding is malformed (the message, also in why when not
 * NULL, says why; the line may then be half rewritten), GPUFL_ENOMEM. Thread-safe.
 */
GPUFL_API int gpufl_log_line_decode(struct json_t *line, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif /* GPUFL_ANALYSIS_H */
