// SPDX-License-Identifier: Apache-2.0
/*
 * gpufl.h - the C API of libgpufl, the GPU flight recorder.
 *
 * This header is the reference for the library: every exported symbol is
 * declared and documented here. The C++ API (gpufl.hpp) and the Python
 * extension are thin layers over it.
 *
 * Conventions
 *  - Fallible calls return int: 0 on success or a negative GPUFL_E* code.
 *    gpufl_strerror() names a code; gpufl_last_error() returns a detailed,
 *    thread-local message about the most recent failure on the calling thread.
 *  - Hot-path calls (scope begin/end) return no error: they never block,
 *    allocate or make a system call; what cannot be recorded is dropped and
 *    counted, and the counts are written to the session log.
 *  - Options structs begin with their own size; fields are only appended, so
 *    a program built against an older header keeps working.
 *  - Thread safety: every function may be called from any thread. init and
 *    shutdown are serialised internally.
 */
#ifndef GPUFL_H
#define GPUFL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#if defined(GPUFL_BUILDING_LIBRARY)
#define GPUFL_API __declspec(dllexport)
#else
#define GPUFL_API
#endif
#elif defined(__GNUC__)
#define GPUFL_API __attribute__((visibility("default")))
#else
#define GPUFL_API
#endif

/** @cond internal
 * The scope calls of the inline wrappers go through the GOT directly, not
 * through a PLT stub (one indirect jump less per call; the linker turns them
 * into direct calls when it links gpufl statically). */
#if defined(__has_attribute) && !defined(GPUFL_BUILDING_LIBRARY)
#if __has_attribute(noplt)
#define GPUFL_INTERNAL_NOPLT __attribute__((noplt))
#endif
#endif
#ifndef GPUFL_INTERNAL_NOPLT
#define GPUFL_INTERNAL_NOPLT
#endif
/** @endcond */

#define GPUFL_VERSION_MAJOR 0
#define GPUFL_VERSION_MINOR 1
#define GPUFL_VERSION_PATCH 0
/** One integer that orders versions: major * 10000 + minor * 100 + patch. */
#define GPUFL_VERSION_NUMBER                                                                       \
    (GPUFL_VERSION_MAJOR * 10000 + GPUFL_VERSION_MINOR * 100 + GPUFL_VERSION_PATCH)

/* ---------------------------------------------------------------------- */
/* Errors. The values are stable: they are never renumbered or reused.     */
/* ---------------------------------------------------------------------- */
enum {
    GPUFL_OK = 0,
    GPUFL_EINVAL = -1,    /**< an argument or option value is invalid */
    GPUFL_ENOMEM = -2,    /**< out of memory, or a stated memory cap reached */
    GPUFL_EIO = -3,       /**< a file could not be created, read or written */
    GPUFL_ECONFIG = -4,   /**< the config file is unreadable or malformed */
    GPUFL_EALREADY = -5,  /**< init called while a session is running */
    GPUFL_ENOTINIT = -6,  /**< the call needs a running or finished session */
    GPUFL_EDISABLED = -7, /**< gpufl is switched off (enabled=0 or GPUFL_DISABLED) */
    GPUFL_ENOTSUP = -8,   /**< the feature is not built yet or not available here */
    GPUFL_ENOTFOUND = -9, /**< a session, file or name does not exist */
    GPUFL_EFORMAT = -10,  /**< a log file is not in the expected format */
    GPUFL_ETHREAD = -11,  /**< a background thread could not be started */
    /** a service the call needs (gpufl-server's database) is down or refuses connections;
     *  trying again later may succeed */
    GPUFL_EUNAVAILABLE = -12
};

/** Static, English name of an error code ("invalid argument", ...). Never NULL. */
GPUFL_API const char *gpufl_strerror(int code);

/**
 * Detailed message about the last failure on the calling thread, e.g.
 * "config file 'x.json' line 3 column 7: ']' expected". Empty string when
 * nothing failed. The pointer stays valid until the next gpufl call on this
 * thread.
 */
GPUFL_API const char *gpufl_last_error(void);

/** @cond internal
 * Sets the calling thread's gpufl_last_error() message (copied, cut to 1023
 * bytes). Exported only so that libgpufl-analysis reports its failures
 * through the same message as libgpufl; applications never call it. */
GPUFL_API void gpufl_internal_set_last_error(const char *message);
/** @endcond */

/* ---------------------------------------------------------------------- */
/* Version                                                                  */
/* ---------------------------------------------------------------------- */

/** The library's version as "MAJOR.MINOR.PATCH". */
GPUFL_API const char *gpufl_version(void);
/** The library's GPUFL_VERSION_NUMBER, to compare with the header's. */
GPUFL_API int gpufl_version_number(void);

/* ---------------------------------------------------------------------- */
/* Options                                                                  */
/* ---------------------------------------------------------------------- */

typedef enum gpufl_backend {
    GPUFL_BACKEND_AUTO = 0,
    GPUFL_BACKEND_NVIDIA = 1,
    GPUFL_BACKEND_AMD = 2,
    GPUFL_BACKEND_NONE = 3
} gpufl_backend_t;

/** The profiling-engine ladder, cheapest first; each level adds to the one below. */
typedef enum gpufl_engine {
    GPUFL_ENGINE_MONITOR = 0,        /**< device and host telemetry only, no CUPTI */
    GPUFL_ENGINE_TRACE = 1,          /**< + kernel, copy and sync activity */
    GPUFL_ENGINE_PC_SAMPLING = 2,    /**< + program-counter stall sampling */
    GPUFL_ENGINE_SASS_METRICS = 3,   /**< + per-instruction SASS counters */
    GPUFL_ENGINE_RANGE_PROFILER = 4, /**< + hardware counters per scope */
    GPUFL_ENGINE_DEEP = 5            /**< PC sampling and SASS metrics together */
} gpufl_engine_t;

/** Name of an engine as the spec spells it ("Monitor", "PcSampling", ...). */
GPUFL_API const char *gpufl_engine_name(gpufl_engine_t engine);
/**
 * Parses an engine name, in any letter case. Returns 0 and sets *out, or
 * GPUFL_EINVAL with a message that lists the valid names.
 */
GPUFL_API int gpufl_engine_parse(const char *name, gpufl_engine_t *out);
/** Name of a backend: "Auto", "Nvidia", "Amd" or "None". */
GPUFL_API const char *gpufl_backend_name(gpufl_backend_t backend);

/**
 * Session options. Always fill with gpufl_options_init() first, then change
 * fields: it sets `size` and every default. Strings are copied by
 * gpufl_init(); NULL and "" both mean "not set".
 *
 * How the final value of each field is chosen, lowest to highest priority:
 * built-in default, then the JSON config file (config_file or
 * GPUFL_CONFIG_FILE), then GPUFL_* environment variables for fields left at
 * their default here, then fields set here to a non-default value.
 * GPUFL_DISABLED=1 overrides everything and disables the library.
 */
typedef struct gpufl_options {
    size_t size; /**< sizeof(gpufl_options_t) of the caller; set by options_init */

    /* identity */
    const char *app_name; /**< default "gpufl" */
    const char *log_path; /**< default "<app_name>.log": directory of sessions */

    /* fleet upload: the server and key gpufl_upload_logs() uses after
     * shutdown when its own options name none */
    const char *backend_url;
    const char *api_key;
    const char *api_path; /**< default "" meaning "/api/v1" */
    int remote_upload;    /**< deprecated, no effect; prints a notice at init */

    /* what to capture */
    int enable_stack_trace;          /**< default 0 */
    int enable_source_collection;    /**< default 1 */
    int enable_external_correlation; /**< default 1 */
    int enable_synchronization;      /**< default 1 */
    int enable_memory_tracking;      /**< default 0 */
    int enable_cuda_graphs_tracking; /**< default 0 */

    /* sampling */
    int system_sample_rate_ms;      /**< default 0 = no periodic sampling; >= 0 */
    int kernel_sample_rate_ms;      /**< deprecated, no effect; prints a notice at init */
    int continuous_system_sampling; /**< default 0: sample only inside scopes / system_start */

    /* profiling engine */
    gpufl_backend_t backend;         /**< default GPUFL_BACKEND_AUTO */
    gpufl_engine_t profiling_engine; /**< default GPUFL_ENGINE_MONITOR */

    /* advanced */
    const char *config_file;
    int flush_logs_always;   /**< default 0: fdatasync after every write */
    int enable_debug_output; /**< default 0: verbose messages through the log hook */
    int enabled;             /**< default 1: 0 makes init and every later call a no-op */

    /* limits (gpufl's own, beyond the documented InitOptions) */
    size_t ring_capacity_records; /**< per-thread ring size, default 8192 (64 B each) */
    size_t memory_cap_bytes;      /**< cap on capture buffers, default 32 MiB */
    size_t log_rotate_bytes;      /**< start a new segment past this size, default 64 MiB */
    int flush_interval_ms; /**< longest time data waits before write() (but batch_hold_ms), default 250 */
    int pc_sampling_period; /**< PcSampling: one sample per SM every 2^period cycles, 5..31, default 18 */
    /** Also start a new segment this often, whatever its size (a window a shipper can take
     * while the session runs); 0 (default): on size only. 0..86400000. */
    int log_rotate_interval_ms;
    /** Trace and the engines above it: kernel, copy, memset and sync rows wait up to this long
     * for more rows of their log line, which then compresses better; 0..60000, default 2000;
     * 0: written every flush_interval_ms. gpufl_flush() and shutdown write them at once. */
    int batch_hold_ms;
    /** Flight recorder: > 0 keeps only the last this many seconds of every channel in memory
     * and writes no file until a trigger (gpufl_snapshot(), flight_recorder_signal, a fatal
     * signal, an XID or a lost GPU, flight_recorder_trigger) writes them as a session
     * directory of their own; 0..86400, default 0 (the session files). */
    int flight_recorder_s;
    /** The flight recorder's memory cap: what its rings hold at most, oldest lines evicted
     * first and counted; 64 KiB..16 GiB, default 64 MiB. */
    size_t flight_recorder_bytes;
    /** The signal that takes a flight-recorder snapshot; default SIGUSR2 (12); 0: none. Any
     * handler the program had for it is put back at shutdown. */
    int flight_recorder_signal;
    /** Flight recorder: conditions that take a snapshot when they hold, comma-separated:
     * `gpu_idle>P%forD` (a GPU's utilization below 100-P % for D, D as `30s` or `500ms`; one
     * snapshot per idle stretch) and `sync>D` (a synchronization longer than D). Each
     * condition takes at most one snapshot per flight_recorder_s seconds. NULL or "": none.
     * Text that does not parse fails init (GPUFL_EINVAL naming the option). */
    const char *flight_recorder_trigger;
    /** PcSampling: what it keeps of Trace's activity beside its PC samples (docs/options.md
     * has what each gives and costs, measured): "late" (NULL, "" or default: copies, memsets
     * and syncs, kernels as launches with host times; the samples stay whole), "kernels"
     * (kernel GPU times; 12-14 % of the samples lost on an H100), "all", "none", "events",
     * "alternate". Any other text fails init (GPUFL_EINVAL naming the option). */
    const char *pc_sampling_trace;
} gpufl_options_t;

/**
 * Fills the first `size` bytes of *opts (the caller's sizeof) with the
 * documented defaults and sets opts->size. Call it through
 * gpufl_options_init(), which passes the size the program was built with:
 * a program built against an older, shorter struct is never written past.
 */
GPUFL_API void gpufl_options_init_sized(gpufl_options_t *opts, size_t size);
/** Fills *opts with the documented defaults and sets opts->size. */
static inline void gpufl_options_init(gpufl_options_t *opts) {
    gpufl_options_init_sized(opts, sizeof *opts);
}

/* ---------------------------------------------------------------------- */
/* Session lifecycle                                                        */
/* ---------------------------------------------------------------------- */

/**
 * Starts a session: resolves the options, creates
 * <log_path>/<session_id>/{device,scope,system}.log and starts the collector
 * thread. opts may be NULL for all defaults.
 *
 * Returns 0, or: GPUFL_EDISABLED when switched off (nothing is started and no
 * file is written); GPUFL_EALREADY when a session is already running (it goes
 * on untouched); GPUFL_EINVAL for an invalid option set in code;
 * GPUFL_ECONFIG for a malformed or unreadable config file; GPUFL_EIO when the
 * log directory cannot be created or written; GPUFL_ETHREAD. On failure no
 * session runs and gpufl_last_error() says why.
 *
 * A new init after gpufl_shutdown() starts a new session with a new id.
 */
GPUFL_API int gpufl_init(const gpufl_options_t *opts);

/**
 * Ends the session: stops sampling, drains every buffer, writes the drop
 * counts and a session footer, and closes the files. Safe without init and
 * safe to repeat. Called automatically at process exit if still running.
 */
GPUFL_API void gpufl_shutdown(void);

/** 1 while a session is running, else 0. */
GPUFL_API int gpufl_is_active(void);

/**
 * Copies the directory of the running session, or of the last one if none
 * runs, into buf (NUL-terminated). Returns its length, GPUFL_ENOTINIT when no
 * session ran in this process, or GPUFL_EINVAL when buf is too small.
 */
GPUFL_API int gpufl_session_dir(char *buf, size_t buf_size);

/* ---------------------------------------------------------------------- */
/* Scopes (hot path)                                                        */
/* ---------------------------------------------------------------------- */

/** Handle of an open scope; 0 means "not recorded" (inactive, dropped). */
typedef uint64_t gpufl_scope_t;

/**
 * Opens a named scope on the calling thread. Scopes nest per thread; kernels
 * launched inside are attributed to the innermost scope's path. tag may be
 * NULL. Names and tags longer than 1024 bytes are truncated (and counted).
 * Never blocks, allocates or makes a system call; returns 0 when inactive or
 * when the record had to be dropped.
 */
GPUFL_API gpufl_scope_t gpufl_scope_begin(const char *name, const char *tag);

/**
 * As gpufl_scope_begin, for benchmark loops: records that the body runs
 * `repeat` measured times inside the scope after `warmup` runs before it.
 */
GPUFL_API gpufl_scope_t gpufl_scope_begin_repeat(const char *name, const char *tag, int32_t repeat,
                                                 int32_t warmup);

/**
 * As gpufl_scope_begin_repeat, with the lengths of name and tag given (they
 * need no NUL and may hold any bytes; tag may be NULL). The fastest form:
 * the inline wrappers pass lengths the compiler knows for string literals.
 */
GPUFL_API GPUFL_INTERNAL_NOPLT gpufl_scope_t gpufl_scope_begin_n(const char *name, size_t name_len,
                                                                 const char *tag, size_t tag_len,
                                                                 int32_t repeat, int32_t warmup);

/**
 * Closes a scope opened on this thread. Closing a scope that is not the
 * innermost also closes the scopes opened inside it (each recorded as closed
 * implicitly). A handle of 0 (the begin was not recorded) is ignored
 * silently. A handle already closed, or from another thread or session, is
 * ignored and counted as an unbalanced end, with a warning.
 */
GPUFL_API GPUFL_INTERNAL_NOPLT void gpufl_scope_end(gpufl_scope_t scope);

/** @cond internal
 * Nonzero while a session runs. Exported only so that the inline wrappers
 * (GFL_SCOPE, ScopedMonitor) skip the call into the library when gpufl is
 * off; read it with gpufl_internal_live(), never write it. */
GPUFL_API extern uint64_t gpufl_internal_live_generation;
#if defined(__GNUC__) || defined(__clang__)
static inline int gpufl_internal_live(void) {
    return __atomic_load_n(&gpufl_internal_live_generation, __ATOMIC_RELAXED) != 0;
}
#else
static inline int gpufl_internal_live(void) { return 1; }
#endif
/** @endcond */

#if !defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
/** @cond internal: the cleanup handler and helpers behind GFL_SCOPE in C. */
static inline void gpufl_internal_scope_cleanup(gpufl_scope_t *scope) {
    if (*scope) gpufl_scope_end(*scope);
}
#define GPUFL_INTERNAL_CAT2(a, b) a##b
#define GPUFL_INTERNAL_CAT(a, b)  GPUFL_INTERNAL_CAT2(a, b)
#define GPUFL_INTERNAL_SCOPE(name, n)                                                              \
    for (gpufl_scope_t GPUFL_INTERNAL_CAT(gpufl_scope_, n) __attribute__((                         \
             cleanup(gpufl_internal_scope_cleanup), unused)) =                                     \
             gpufl_internal_live()                                                                 \
                 ? gpufl_scope_begin_n((name), __builtin_strlen(name), NULL, 0, 0, 0)              \
                 : 0,                                                                              \
                                                    GPUFL_INTERNAL_CAT(gpufl_once_, n) = 1;        \
         GPUFL_INTERNAL_CAT(gpufl_once_, n); GPUFL_INTERNAL_CAT(gpufl_once_, n) = 0)
/** @endcond */
/**
 * GFL_SCOPE(name) { ... } in C: the block runs once inside a scope that
 * closes when the block exits, also through return, break or goto (it relies
 * on the cleanup attribute of GCC and Clang). The block always runs, also
 * when gpufl is off.
 */
#define GFL_SCOPE(name) GPUFL_INTERNAL_SCOPE(name, __COUNTER__)
#endif

/* ---------------------------------------------------------------------- */
/* System sampling windows                                                  */
/* ---------------------------------------------------------------------- */

/**
 * Opens a named system-sampling window and writes a system_start record with
 * a snapshot of the host metrics. While any window or scope is open, the
 * sampler runs every system_sample_rate_ms (windows are reference-counted, so
 * nested and overlapping windows are fine). Returns 0, GPUFL_ENOTINIT when no
 * session runs, or GPUFL_EINVAL for a NULL name.
 */
GPUFL_API int gpufl_system_start(const char *name);
/**
 * Closes the most recent open window of that name and writes a system_stop
 * record with a snapshot. Returns GPUFL_ENOTFOUND when no such window is open.
 */
GPUFL_API int gpufl_system_stop(const char *name);

/* ---------------------------------------------------------------------- */
/* Reports                                                                  */
/* ---------------------------------------------------------------------- */

/*
 * The report is computed by libgpufl-analysis (gpufl_analysis.h), which an
 * application need not link: these two calls load it at call time, from the
 * file named by GPUFL_ANALYSIS_LIBRARY when set, else from the directory
 * libgpufl itself was loaded from, else through the dynamic linker's search
 * (LD_LIBRARY_PATH, the system directories). Without it they return
 * GPUFL_ENOTSUP, and gpufl_last_error() names the library and where it was
 * looked for. Thread-safe; each call reads the logs afresh.
 */

/**
 * Writes a text report of the last session of this process (the running one
 * is flushed first) to output_path, or to stdout when output_path is NULL or
 * "". Returns 0, GPUFL_ENOTINIT when no session ran, GPUFL_EIO, or
 * GPUFL_EFORMAT when the logs cannot be read, GPUFL_ENOTSUP when
 * libgpufl-analysis cannot be loaded.
 */
GPUFL_API int gpufl_report_write(const char *output_path);

/**
 * Writes a text report of the session in session_dir (a directory holding
 * scope.log etc.) to output_path, or stdout when NULL or "". Returns 0,
 * GPUFL_EINVAL for a NULL session_dir, GPUFL_ENOTFOUND when it holds no
 * session, GPUFL_EIO, GPUFL_ENOMEM, GPUFL_ENOTSUP when libgpufl-analysis
 * cannot be loaded.
 */
GPUFL_API int gpufl_report_session(const char *session_dir, const char *output_path);

/* ---------------------------------------------------------------------- */
/* What this machine gives gpufl                                           */
/* ---------------------------------------------------------------------- */

/**
 * One capability entry: a feature, whether it is available, and why not.
 * The same names as the session's capability record where both have one
 * ("nvml", ...); the vendor libraries ("cupti", "libcuda"), the driver
 * ("driver") and the engines by their names ("Monitor", "Trace",
 * "PcSampling", "SassMetrics", "Deep", "RangeProfiler"). Fields are only
 * appended.
 */
typedef struct gpufl_capability {
    size_t size;         /**< sizeof(gpufl_capability_t) of the library */
    const char *feature; /**< "nvml", "Trace", ... */
    int on;              /**< 1: available; 0: not */
    /** Off: why (never NULL). On: a limit worth knowing ("where the device
     * allows it"), or NULL. */
    const char *reason;
    /** What was found: a library's file and version, the driver version; NULL when nothing. */
    const char *detail;
} gpufl_capability_t;

/** One GPU (or MIG instance) the backend's device library sees. Fields are only appended. */
typedef struct gpufl_device_info {
    size_t size;              /**< sizeof(gpufl_device_info_t) of the library */
    int index;                /**< the device's index */
    int mig_index;            /**< the MIG instance, or -1 for a whole GPU */
    const char *name;         /**< "NVIDIA H100 80GB HBM3" */
    uint64_t mem_total_bytes; /**< 0 when unknown */
    int compute_major;        /**< compute capability; -1 when unknown */
    int compute_minor;
} gpufl_device_info_t;

/** What gpufl_probe_create() found (opaque). */
typedef struct gpufl_probe gpufl_probe_t;

/**
 * Asks every backend built into this gpufl what the machine gives it, as a
 * session would find it (the same libraries, environment overrides such as
 * GPUFL_NVML_LIBRARY, and reasons), without starting a session or
 * writing anything. A missing driver is an entry with its reason, not a
 * failure. Returns 0 and a new handle in *out (NULL on failure),
 * GPUFL_EINVAL for a NULL out, GPUFL_ENOMEM. Safe from any thread, also
 * while a session runs.
 */
GPUFL_API int gpufl_probe_create(gpufl_probe_t **out);
/** Entry `index` (0, 1, ... in the order the backends give them), NULL past the last. Owned by
 * the probe. */
GPUFL_API const gpufl_capability_t *gpufl_probe_capability(const gpufl_probe_t *probe,
                                                           size_t index);
/** The entry of a feature, or NULL when no backend gave one. Owned by the probe. */
GPUFL_API const gpufl_capability_t *gpufl_probe_find(const gpufl_probe_t *probe,
                                                     const char *feature);
/** Device `index` (0, 1, ...), NULL past the last. Owned by the probe. */
GPUFL_API const gpufl_device_info_t *gpufl_probe_device(const gpufl_probe_t *probe, size_t index);
/** Frees a probe and everything it returned. Accepts NULL. */
GPUFL_API void gpufl_probe_destroy(gpufl_probe_t *probe);

/* ---------------------------------------------------------------------- */
/* Latest readings (what a sidecar such as gpufl-monitor serves)            */
/* ---------------------------------------------------------------------- */

/**
 * Latest-value readings of the running session: the newest host_sample row,
 * the newest gpu_sample row of each device, each device's identity (from its
 * gpu_info record), each device's latest process list (gpu_processes, with
 * who each process is from process_info), each device's XID errors counted
 * per code (xid records), the throttle-reason names (gpu_legend) and whether the
 * GPU backend runs (the capability record). Columns are named and in the
 * units the session log uses (docs/log-format.md). Opaque.
 *
 * Rows are kept behind a seqlock: the collector thread stores a row without
 * ever waiting for a reader, and a reader retries while a store overlaps.
 * Identities change only when a describing record arrives; they are kept
 * under a short lock that rows never take.
 */
typedef struct gpufl_readings gpufl_readings_t;

/** Most columns a readings row holds (gpu_sample has the most). */
#define GPUFL_READINGS_MAX_COLUMNS 32

/**
 * One row copied out of the readings. Set `size` to sizeof before a read;
 * fields are only appended. Column names are static strings of the library
 * (the log's column names); the row's time and device columns are not
 * among them (see ts_ns and the device argument of the read).
 */
typedef struct gpufl_readings_row {
    size_t size;      /**< sizeof(gpufl_readings_row_t) of the caller */
    int64_t ts_ns;    /**< when it was sampled, CLOCK_MONOTONIC nanoseconds */
    uint64_t updates; /**< rows stored so far for this host or device */
    int ncolumns;
    const char *columns[GPUFL_READINGS_MAX_COLUMNS]; /**< "gpu_util_pct", "power_mw", ... */
    double values[GPUFL_READINGS_MAX_COLUMNS];
    /** 1 when the host or device gave the value, 0 when it is null in the log. */
    unsigned char present[GPUFL_READINGS_MAX_COLUMNS];
} gpufl_readings_row_t;

/** A device's identity as its gpu_info record gives it. Set `size` before a read. */
typedef struct gpufl_readings_device {
    size_t size;          /**< sizeof(gpufl_readings_device_t) of the caller */
    int index;            /**< gpufl's device index (the log's "device") */
    int mig_index;        /**< the MIG instance, or -1 for a whole GPU */
    char uuid[96];        /**< "GPU-..." or "MIG-..." */
    char pci_bus_id[32];  /**< "00000000:1B:00.0" */
    char name[96];        /**< "NVIDIA H100 80GB HBM3", a MIG device's with " MIG 1g.10gb" */
    char mig_profile[32]; /**< "1g.10gb" (from the MIG device's name); "" for a whole GPU */
    int lost;             /**< it stopped answering (GPU_IS_LOST): no newer row will come */
} gpufl_readings_device_t;

/**
 * Attaches latest-value readings to the running session and returns them in
 * *out (NULL on failure). The records that describe the session so far
 * (capabilities, devices, legends) are given to them at once, so identities
 * are known before the first row. Returns 0, GPUFL_EINVAL for a NULL out,
 * GPUFL_ENOTINIT when no session runs, GPUFL_ENOMEM (also when the session
 * has no room for another sink). Safe from any thread.
 */
GPUFL_API int gpufl_readings_create(gpufl_readings_t **out);

/**
 * Frees readings. It may be called while their session still runs: they
 * are then freed when the session ends (gpufl_shutdown()), and must not be
 * used after this call. Accepts NULL. Not safe against a concurrent read of
 * the same readings.
 */
GPUFL_API void gpufl_readings_destroy(gpufl_readings_t *r);

/**
 * Copies the newest host row into *out (out->size set first). Returns 0,
 * GPUFL_EINVAL for NULL arguments or a size too small for the columns,
 * GPUFL_ENOTFOUND when no host row came yet, GPUFL_EIO when stores kept
 * overlapping the read (try again at the next interval). Never blocks the
 * collector; safe from any thread, concurrently with other reads.
 */
GPUFL_API int gpufl_readings_host(gpufl_readings_row_t *out, gpufl_readings_t *r);

/**
 * As gpufl_readings_host, for device `device` (gpufl's device index).
 * GPUFL_ENOTFOUND when that device gave no row yet (or there is none).
 */
GPUFL_API int gpufl_readings_device_row(gpufl_readings_row_t *out, gpufl_readings_t *r, int device);

/**
 * Looks a column up by name in a row copied out: 0 and *value, or
 * GPUFL_ENOTFOUND when the row has no such column or its value is null.
 */
GPUFL_API int gpufl_readings_value(double *value, const gpufl_readings_row_t *row,
                                   const char *column);

/**
 * The devices known so far: their count (0 without a GPU backend). Thread-safe.
 */
GPUFL_API size_t gpufl_readings_device_count(gpufl_readings_t *r);

/**
 * Copies the identity of the i-th known device (0 .. count - 1, in the order
 * their gpu_info records came) into *out (out->size set first). Returns 0,
 * GPUFL_EINVAL for NULL arguments or a size too small, GPUFL_ENOTFOUND past
 * the last. Thread-safe.
 */
GPUFL_API int gpufl_readings_device_info(gpufl_readings_device_t *out, gpufl_readings_t *r,
                                         size_t i);

/**
 * Copies the name of throttle-reason bit `bit` (0..63) of gpu_sample's
 * throttle_reasons column ("sw_power_cap", ...) into buf. Returns its
 * length, GPUFL_ENOTFOUND when the bit has no name (or no legend came),
 * GPUFL_EINVAL for a bad bit, a NULL buf or one too small. Thread-safe.
 */
GPUFL_API int gpufl_readings_throttle_reason(char *buf, size_t size, gpufl_readings_t *r, int bit);

/**
 * Whether the session's GPU backend runs: returns 1, or 0 and copies why not
 * (the capability record's reason, e.g. "nvmlInit failed: ...") into why
 * (when why is not NULL; cut to size). Before the capability record came it
 * returns 0 with "no capability record yet". Thread-safe.
 */
GPUFL_API int gpufl_readings_gpu_available(char *why, size_t size, gpufl_readings_t *r);

/** Most processes of one device's list the readings keep (NVML may count more). */
#define GPUFL_READINGS_MAX_PROCESSES 16

/**
 * One process on a device: NVML's pid, memory and utilization, and who the process
 * belongs to (its process_info record; docs/process-attribution.md). Set
 * `size` of the first element before a read; fields are only appended.
 * Strings are "" when unknown.
 */
typedef struct gpufl_readings_process {
    size_t size;                /**< sizeof(gpufl_readings_process_t) of the caller */
    int pid;                    /**< as the host's /proc names it */
    uint64_t start_ticks;       /**< /proc/<pid>/stat field 22; 0 unknown */
    int64_t used_bytes;         /**< device memory it uses; -1 when NVML does not say */
    char comm[64];              /**< the kernel's command name */
    int64_t uid;                /**< real uid; -1 unknown */
    char user[64];              /**< uid's name */
    char container_id[65];      /**< 64 hex digits */
    char container_runtime[16]; /**< "docker", "containerd", "cri-o", "podman", "cri" */
    char pod_uid[37];           /**< Kubernetes pod uid */
    char slurm_job_id[24];      /**< Slurm job id (digits) */
    char slurm_job_source[16];  /**< "environ" or "cgroup" */
    int sm_util_pct;  /**< its share of the SMs' time over the last interval, 0-100; -1 unknown */
    int mem_util_pct; /**< its share of device-memory read/write time, the same way; -1 unknown */
} gpufl_readings_process_t;

/**
 * Copies device `device`'s latest process list (its newest gpu_processes
 * record) into out[0 .. max - 1], out[0].size set first (every element is
 * taken to be that size), at most GPUFL_READINGS_MAX_PROCESSES. Only the
 * processes the session described (a process_info record) are listed: a
 * pid that was gone before it could be read, or that this process cannot
 * see in /proc, is left out. Returns the number copied (0: an empty list),
 * GPUFL_EINVAL for NULL arguments or a size too small, GPUFL_ENOTFOUND when
 * no list came yet for that device. Thread-safe.
 */
GPUFL_API int gpufl_readings_processes(gpufl_readings_process_t *out, size_t max,
                                       gpufl_readings_t *r, int device);

/** Most distinct XID codes the readings count per device; later codes are not counted. */
#define GPUFL_READINGS_MAX_XIDS 32

/**
 * The XID errors of one code on a device (its xid records): how many came
 * since the readings were created. Set `size` of the first element before
 * a read; fields are only appended.
 */
typedef struct gpufl_readings_xid {
    size_t size;        /**< sizeof(gpufl_readings_xid_t) of the caller */
    uint64_t code;      /**< the XID, e.g. 79 (fallen off the bus) */
    uint64_t count;     /**< events of this code so far: only grows */
    int64_t last_ts_ns; /**< when the newest was seen, the log's ts_ns */
} gpufl_readings_xid_t;

/**
 * Copies device `device`'s XID counts, one element per code in the order the
 * codes first came, into out[0 .. max - 1], out[0].size set first (every
 * element is taken to be that size), at most GPUFL_READINGS_MAX_XIDS.
 * Returns the number copied: 0 when the device reported none (or has no XID
 * events), GPUFL_EINVAL for NULL arguments or a size too small. A caller
 * finds new events as counts that grew since its last read. Thread-safe.
 */
GPUFL_API int gpufl_readings_xids(gpufl_readings_xid_t *out, size_t max, gpufl_readings_t *r,
                                  int device);

/* ---------------------------------------------------------------------- */
/* Fleet upload                                                             */
/* ---------------------------------------------------------------------- */

typedef struct gpufl_upload_options {
    size_t size;
    const char *log_path;    /**< a log root; NULL: this process's last session's */
    const char *backend_url; /**< "https://host:port"; NULL: $GPUFL_BACKEND_URL, else init's */
    const char *api_key;     /**< NULL: $GPUFL_API_KEY, else init's; never logged */
    const char *api_path;    /**< NULL: $GPUFL_API_PATH, else init's, else "/api/v1" */
    /* appended in 0.2 */
    const char *session; /**< a session id under log_path, or a session directory; NULL: the
                              latest session (of log_path, or this process's last) */
    int all;             /**< every session under log_path */
    int64_t budget_ms;   /**< the whole upload, retries included; 0: 5 minutes */
    int64_t timeout_ms;  /**< one request; 0: 60 s */
    int tails; /**< also ship windows still open (a running session, or one that died without
                    sealing its file) up to their last complete line, as slices the server
                    appends to; 0: sealed windows only */
    int64_t spool_max_bytes; /**< > 0: after the upload, while the windows of log_path not on
                                  the server pass this many bytes, the oldest sealed ones are
                                  dropped: each replaced by its header, a spool_dropped record
                                  and its last line, counted in the result and logged (the
                                  agent's bounded spool); 0: no bound */
} gpufl_upload_options_t;

/** What an upload did. Set `size` before the call; fields are only appended. */
typedef struct gpufl_upload_result {
    size_t size;
    int success;                 /**< every sealed window is on the server (now or before) */
    int64_t events_uploaded;     /**< records in the windows the server stored now */
    int64_t windows;             /**< windows acknowledged now (stored, or duplicates) */
    int64_t windows_duplicate;   /**< of those, ones the server already had */
    int64_t windows_before;      /**< acknowledged by an earlier upload: not sent */
    int64_t windows_open;        /**< not sealed yet (a running session): not sent, or with
                                      tails sent up to the last complete line */
    int64_t windows_quarantined; /**< refused for good (409): kept aside, reported */
    int64_t bytes;               /**< of the windows acknowledged now, before gzip */
    int64_t errors;              /**< windows not delivered this time */
    int64_t retries;
    int64_t sessions;
    int64_t sessions_completed;
    char error[512]; /**< the first error, "" when none */
    int64_t slices;  /**< parts of windows acknowledged now: open windows' tails, and windows
                         split to fit the server's body cap */
    int64_t windows_dropped; /**< with spool_max_bytes: windows dropped unsent, and their bytes */
    int64_t bytes_dropped;
    int64_t spool_bytes;   /**< with spool_max_bytes: bytes not on the server after the upload */
    int64_t lines_damaged; /**< lines damaged on disk (a crash, a bad write): sent and stored
                                as written, named in a warning */
} gpufl_upload_result_t;

/** As gpufl_options_init_sized, for the upload options. */
GPUFL_API void gpufl_upload_options_init_sized(gpufl_upload_options_t *opts, size_t size);
static inline void gpufl_upload_options_init(gpufl_upload_options_t *opts) {
    gpufl_upload_options_init_sized(opts, sizeof *opts);
}
/**
 * Sends the sealed windows of finished sessions to gpufl-server (docs/protocol.md), each
 * once: a cursor file in the log root (.gpufl-upload.json) records what the server
 * acknowledged, shared with `gpufl upload` and gpufl-agent. Call it after gpufl_shutdown():
 * all network I/O happens inside this call, within opts->budget_ms. Retries network errors,
 * 408, 429 and 5xx with backoff; stops at a refused key (naming its prefix only).
 * Returns 0 when everything sealed is on the server, 1 when some windows are not (out says
 * which), GPUFL_EDISABLED when gpufl is switched off (a success with nothing sent),
 * GPUFL_EINVAL (no server URL or key), GPUFL_ENOTFOUND (no session), GPUFL_ENOTSUP (libcurl
 * missing). out may be NULL. Thread-safe; blocks.
 */
GPUFL_API int gpufl_upload_logs_result(gpufl_upload_result_t *out,
                                       const gpufl_upload_options_t *opts);
/** gpufl_upload_logs_result without the result. */
GPUFL_API int gpufl_upload_logs(const gpufl_upload_options_t *opts);

/* ---------------------------------------------------------------------- */
/* Diagnostics                                                              */
/* ---------------------------------------------------------------------- */

typedef enum gpufl_log_level {
    GPUFL_LOG_DEBUG = 0,
    GPUFL_LOG_INFO = 1,
    GPUFL_LOG_WARN = 2,
    GPUFL_LOG_ERROR = 3
} gpufl_log_level_t;

/**
 * Where the library's own messages go. The default hook writes warnings and
 * errors as one line to stderr ("gpufl: warning: ..."), and debug/info lines
 * only with enable_debug_output. Pass NULL to restore the default. The hook
 * may be called from any gpufl thread and must not call back into gpufl.
 */
typedef void (*gpufl_log_fn)(gpufl_log_level_t level, const char *message, void *user);
GPUFL_API void gpufl_set_log_hook(gpufl_log_fn fn, void *user);

/** Counters of the running (or last) session; all monotonic within a session. */
typedef struct gpufl_stats {
    size_t size;
    uint64_t records_written;    /**< hot-path records taken from the rings */
    uint64_t records_dropped;    /**< records lost to full rings */
    uint64_t threads_unbuffered; /**< threads that found no free ring (their records dropped) */
    uint64_t unbalanced_ends;    /**< scope ends that matched no open scope */
    uint64_t names_truncated;    /**< names/tags cut to the length cap */
    uint64_t bytes_written;      /**< bytes appended to the session files */
    uint64_t write_errors;       /**< failed or short writes */
} gpufl_stats_t;

/** Fills *out (set out->size first). Returns 0 or GPUFL_ENOTINIT. */
GPUFL_API int gpufl_get_stats(gpufl_stats_t *out);

/**
 * Makes the collector write everything captured so far, and waits for it.
 * Returns 0 or GPUFL_ENOTINIT. Not for the hot path.
 */
GPUFL_API int gpufl_flush(void);

/**
 * Flight recorder (flight_recorder_s > 0): writes what the session holds in
 * memory now (the last flight_recorder_s seconds of every channel, at most
 * flight_recorder_bytes) as a new session directory under log_path, with
 * its own session id, that every tool opens like any other; the recording
 * goes on. Each file holds a header, the records that describe the session
 * (options, capabilities, devices, stacks, configurations), the dict lines
 * the kept rows name, the rows, and a session_end line; the device file
 * also an event `flight_recorder_snapshot` that says what was kept and what
 * the cap and the window let go. dir (optional, dir_size bytes) gets its
 * path, which gpufl_session_dir() and gpufl_report_write() use after it.
 *
 * Returns 0; GPUFL_ENOTINIT without a running session; GPUFL_EDISABLED when
 * switched off; GPUFL_ENOTSUP when the session runs without the flight
 * recorder (its files are written as it goes); GPUFL_EIO when the
 * directory cannot be written. Any thread; not for the hot path (it waits
 * for the collector to pass the rows held back). flight_recorder_signal
 * (SIGUSR2 by default) asks for the same from outside the process.
 */
GPUFL_API int gpufl_snapshot(char *dir, size_t dir_size);

/**
 * NVTX injection (docs/nvtx.md): gives NVTX the callbacks that record its
 * ranges as scopes. NVTX calls a library's `InitializeInjectionNvtx2`
 * (libgpufl.so exports one that calls this); a module that embeds gpufl
 * statically and is named by NVTX_INJECTION64_PATH defines its own entry
 * point over this call. get_export_table is the function NVTX passes to the
 * entry point. Ranges are recorded only while a session runs an engine from
 * Trace up; otherwise the callbacks return at once. Returns 0, or -1 when
 * the table is not one gpufl knows or this gpufl was built without the CUDA
 * toolkit's headers (the entry point then returns 0 to NVTX).
 * Any thread; once per NVTX instance (each module that includes the NVTX
 * headers has its own).
 */
GPUFL_API int gpufl_nvtx_inject(const void *(*get_export_table)(uint32_t));

#ifdef __cplusplus
}
#endif

#endif /* GPUFL_H */
