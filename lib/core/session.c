// SPDX-License-Identifier: Apache-2.0
/*
 * session.c - init and shutdown: one session at a time per process.
 *
 * init resolves the options, creates <log_path>/<session_id>/, writes the
 * options and capability records, and starts the collector; shutdown drains
 * and closes everything. Both are serialised by one lock and are safe to
 * repeat. A session still running at exit is shut down by an atexit handler;
 * a forked child starts with no session (it may call init for its own).
 */
#include "core/clock.h"
#include "core/collector.h"
#include "core/interp.h"
#include "util/log.h"
#include "core/ops.h"
#include "core/options.h"
#include "core/scope.h"
#include "core/session.h"
#include "host/host_sampler.h"
#include "nvidia/gpu_sampler.h"
#if GPUFL_HAVE_CUPTI
#include "nvidia/trace_source.h"
#endif

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STR2(x) #x
#define STR(x)  STR2(x)

static struct session_state {
    pthread_mutex_t lock;
    int running;
    int ran_once;      /* a session ran in this process: reports can find it */
    int last_disabled; /* the last init found gpufl switched off */
    int hooks_installed;
    uint64_t generation;
    gpufl_settings_t settings;
    gpufl_session_ident_t ident;
    char dir[4096];
    gpufl_collector_t *collector;
    gpufl_ring_pool_t *pool;
    gpufl_host_sampler_t host;
    gpufl_gpu_sampler_t gpu; /* zeroed when no NVIDIA backend runs */
#if GPUFL_HAVE_CUPTI
    gpufl_trace_source_t trace; /* zeroed unless the Trace engine runs */
#endif
    gpufl_stats_t last_stats;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

const char *gpufl_version(void) {
    return STR(GPUFL_VERSION_MAJOR) "." STR(GPUFL_VERSION_MINOR) "." STR(GPUFL_VERSION_PATCH);
}

int gpufl_version_number(void) { return GPUFL_VERSION_NUMBER; }

/* ---------------- directories and ids ---------------- */

static int make_dirs(const char *path) {
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp)
        return gpufl__set_error(GPUFL_EINVAL, "log_path '%s' is empty or too long", path);
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) goto fail;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) goto fail;
    return 0;
fail:
    return gpufl__set_error(GPUFL_EIO, "cannot create log directory '%s': %s", tmp,
                            strerror(errno));
}

static unsigned random16(void) {
    unsigned short r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (unsigned short)(gpufl__mono_ns() ^ ((int64_t)getpid() << 7));
    return r;
}

/* <UTC time to the ms>Z-<pid>-<4 hex>: sorts by start time as a string. */
static void make_session_id(char *out, size_t size, int64_t unix_us) {
    time_t secs = (time_t)(unix_us / 1000000);
    struct tm tm;
    char stamp[32];
    gmtime_r(&secs, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
    snprintf(out, size, "%s.%03dZ-%d-%04x", stamp, (int)(unix_us / 1000 % 1000), (int)getpid(),
             random16());
}

static int create_session_dir(const char *log_path, gpufl_session_ident_t *ident, char *dir,
                              size_t size) {
    int rc = make_dirs(log_path);
    if (rc) return rc;
    for (int attempt = 0; attempt < 8; attempt++) {
        make_session_id(ident->session_id, sizeof ident->session_id, ident->epoch_unix_us);
        if ((size_t)snprintf(dir, size, "%s/%s", log_path, ident->session_id) >= size)
            return gpufl__set_error(GPUFL_EINVAL, "log_path '%s' is too long", log_path);
        if (mkdir(dir, 0755) == 0) return 0;
        if (errno != EEXIST) break;
    }
    return gpufl__set_error(GPUFL_EIO, "cannot create session directory '%s': %s", dir,
                            strerror(errno));
}

/* ---------------- records written at init ---------------- */

static void write_options(gpufl_writer_t *f, const gpufl_settings_t *s) {
    gpufl_buf_t *b = gpufl__writer_record(f, "options");
    for (int i = 0; i < GPUFL_OPTION_COUNT; i++) {
        const char *name, *str;
        int64_t num;
        gpufl_option_source_t src;
        gpufl__settings_get(s, i, &name, &src, &str, &num);
        gpufl__buf_key(b, name);
        gpufl__buf_puts(b, "{\"value\":");
        if (str)
            gpufl__buf_put_str(b, str, strlen(str));
        else
            gpufl__buf_put_i64(b, num);
        gpufl__buf_kv_str(b, "from", gpufl__option_source_name(src));
        gpufl__buf_putc(b, '}');
    }
    gpufl__writer_end_record(f);
}

static void put_feature(gpufl_buf_t *b, const char *name, int on, const char *why) {
    gpufl__buf_key(b, name);
    gpufl__buf_puts(b, on ? "{\"on\":true" : "{\"on\":false");
    if (why) gpufl__buf_kv_str(b, "why", why);
    gpufl__buf_putc(b, '}');
}

/* Why the NVIDIA backend is not running, or NULL when it is. */
typedef struct backend_state {
    gpufl_backend_t running;
    char why[256];         /* why NVML is off, when it is */
    gpufl_engine_t engine; /* the engine that runs */
    char trace_why[256];   /* why CUPTI tracing is off, when it is */
    char pcs_why[256];     /* why PC sampling is off when it was asked for */
    char sassm_why[256];   /* why SASS metrics are off when they were asked for */
    char rp_why[256];      /* why the range profiler is off when it was asked for */
} backend_state_t;

/* Says what runs and, for what does not, why. */
static void write_capabilities(gpufl_writer_t *f, const gpufl_settings_t *s, int host_ok,
                               const backend_state_t *be) {
    gpufl_buf_t *b = gpufl__writer_record(f, "capabilities");
    gpufl__buf_kv_str(b, "backend_requested", gpufl_backend_name(s->backend));
    gpufl__buf_kv_str(b, "backend", gpufl_backend_name(be->running));
    gpufl__buf_kv_str(b, "engine_requested", gpufl_engine_name(s->profiling_engine));
    gpufl__buf_kv_str(b, "engine", gpufl_engine_name(be->engine));
    gpufl__buf_key(b, "features");
    gpufl__buf_putc(b, '{');
    put_feature(b, "host_metrics", host_ok, host_ok ? NULL : "cannot read /proc");
    put_feature(b, "nvml", be->running == GPUFL_BACKEND_NVIDIA,
                be->running == GPUFL_BACKEND_NVIDIA ? NULL : be->why);
    int tracing = be->engine >= GPUFL_ENGINE_TRACE;
    put_feature(b, "cupti_trace", tracing, tracing ? NULL : be->trace_why);
    gpufl_engine_t asked = s->profiling_engine;
    int sampling = be->engine == GPUFL_ENGINE_PC_SAMPLING || be->engine == GPUFL_ENGINE_DEEP;
    int wants_sampling = asked == GPUFL_ENGINE_PC_SAMPLING || asked == GPUFL_ENGINE_DEEP;
    put_feature(b, "pc_sampling", sampling,
                sampling          ? NULL
                : !wants_sampling ? "needs engine PcSampling or Deep"
                : be->pcs_why[0]  ? be->pcs_why
                                  : be->trace_why);
    int counting = be->engine == GPUFL_ENGINE_SASS_METRICS || be->engine == GPUFL_ENGINE_DEEP;
    int wants_counting = asked == GPUFL_ENGINE_SASS_METRICS || asked == GPUFL_ENGINE_DEEP;
    put_feature(b, "sass_metrics", counting,
                counting           ? NULL
                : !wants_counting  ? "needs engine SassMetrics or Deep"
                : be->sassm_why[0] ? be->sassm_why
                                   : be->trace_why);
    int ranging = be->engine == GPUFL_ENGINE_RANGE_PROFILER;
    put_feature(b, "range_profiler", ranging,
                ranging                                ? NULL
                : asked != GPUFL_ENGINE_RANGE_PROFILER ? "needs engine RangeProfiler"
                : be->rp_why[0]                        ? be->rp_why
                                                       : be->trace_why);
#if GPUFL_HAVE_CUPTI
    const char *sass_why =
        g.trace.sassm ? gpufl__sassm_sass_why(g.trace.sassm) : gpufl__pcs_sass_why(g.trace.pcs);
    int disassembly = sampling || counting;
    put_feature(b, "sass", disassembly && sass_why == NULL,
                disassembly ? sass_why : "needs engine PcSampling, SassMetrics or Deep");
    /* Theoretical occupancy needs libcuda besides CUPTI. */
    int occupancy = tracing && g.trace.cuda != NULL;
    put_feature(b, "occupancy", occupancy,
                occupancy  ? NULL
                : !tracing ? "needs the Trace engine"
                           : g.trace.occupancy_why);
    /* CPU stacks: on with a note when walked or described in a reduced way. */
    int stacks = tracing && g.trace.stacks_on;
    put_feature(b, "stack_trace", stacks,
                stacks ? (g.trace.stack_log.note[0] ? g.trace.stack_log.note : NULL)
                : !s->enable_stack_trace ? "off by option (enable_stack_trace)"
                                         : "needs the Trace engine");
#endif
    gpufl__buf_putc(b, '}');
    gpufl__writer_end_record(f);

    if (asked == be->engine) return;
    if (asked == GPUFL_ENGINE_DEEP && be->engine == GPUFL_ENGINE_PC_SAMPLING)
        gpufl__warn("profiling engine Deep: SASS metrics cannot run: %s; running PcSampling",
                    be->sassm_why);
    else if (asked == GPUFL_ENGINE_DEEP && be->engine == GPUFL_ENGINE_SASS_METRICS)
        gpufl__warn("profiling engine Deep: PC sampling cannot run: %s; running SassMetrics",
                    be->pcs_why);
    else if (asked == GPUFL_ENGINE_SASS_METRICS && be->engine == GPUFL_ENGINE_TRACE &&
             be->sassm_why[0])
        gpufl__warn("profiling engine SassMetrics: SASS metrics cannot run: %s; running Trace",
                    be->sassm_why);
    else if (asked == GPUFL_ENGINE_DEEP && be->engine == GPUFL_ENGINE_TRACE)
        gpufl__warn("profiling engine Deep: neither PC sampling (%s) nor SASS metrics (%s) can "
                    "run; running Trace",
                    be->pcs_why, be->sassm_why);
    else if (asked == GPUFL_ENGINE_RANGE_PROFILER && be->engine == GPUFL_ENGINE_TRACE &&
             be->rp_why[0])
        gpufl__warn("profiling engine RangeProfiler: the range profiler cannot run: %s; running "
                    "Trace",
                    be->rp_why);
    else if (asked >= GPUFL_ENGINE_PC_SAMPLING && be->engine == GPUFL_ENGINE_TRACE &&
             be->pcs_why[0])
        gpufl__warn("profiling engine %s: PC sampling cannot run: %s; running Trace",
                    gpufl_engine_name(asked), be->pcs_why);
    else if (asked > GPUFL_ENGINE_TRACE && be->engine == GPUFL_ENGINE_TRACE)
        gpufl__warn("profiling engine %s is not built yet; running Trace",
                    gpufl_engine_name(asked));
    else
        gpufl__warn("profiling engine %s: %s; running %s", gpufl_engine_name(s->profiling_engine),
                    be->trace_why, gpufl_engine_name(be->engine));
}

/* Starts the Trace engine's source when an engine from Trace up is asked for. */
static void start_trace(const gpufl_settings_t *s, backend_state_t *be, gpufl_source_t *source,
                        int *have_source) {
    *have_source = 0;
    be->engine = GPUFL_ENGINE_MONITOR;
    if (s->profiling_engine == GPUFL_ENGINE_MONITOR) {
        snprintf(be->trace_why, sizeof be->trace_why, "engine Monitor runs no CUPTI");
        return;
    }
    if (s->backend == GPUFL_BACKEND_NONE || s->backend == GPUFL_BACKEND_AMD) {
        snprintf(be->trace_why, sizeof be->trace_why, "CUPTI needs the NVIDIA backend");
        return;
    }
#if GPUFL_HAVE_CUPTI
    if (gpufl__trace_source_init(&g.trace, g.collector, s, be->trace_why, sizeof be->trace_why,
                                 source) == 0) {
        be->engine = GPUFL_ENGINE_TRACE;
        *have_source = 1;
        if (g.trace.pcs != NULL && g.trace.sassm != NULL)
            be->engine = GPUFL_ENGINE_DEEP;
        else if (g.trace.pcs != NULL)
            be->engine = GPUFL_ENGINE_PC_SAMPLING;
        else if (g.trace.sassm != NULL)
            be->engine = GPUFL_ENGINE_SASS_METRICS;
        else if (g.trace.rp != NULL)
            be->engine = GPUFL_ENGINE_RANGE_PROFILER;
    }
    /* Also when tracing failed: an engine refused before that (PC sampling
     * after SASS metrics, say) keeps its own reason. */
    snprintf(be->rp_why, sizeof be->rp_why, "%s", g.trace.rp_why);
    snprintf(be->pcs_why, sizeof be->pcs_why, "%s", g.trace.pcs_why);
    snprintf(be->sassm_why, sizeof be->sassm_why, "%s", g.trace.sassm_why);
#else
    (void)source;
    snprintf(be->trace_why, sizeof be->trace_why,
             "this gpufl was built without the CUDA toolkit's CUPTI headers");
#endif
}

/* Picks the backend: NVIDIA when asked for or Auto and NVML answers. A
 * missing driver is a normal state: recorded, and said aloud only when the
 * NVIDIA backend was asked for by name. */
static gpufl_nvml_t *open_backend(const gpufl_settings_t *s, backend_state_t *be) {
    gpufl_nvml_t *nvml = NULL;
    be->running = GPUFL_BACKEND_NONE;
    switch (s->backend) {
    case GPUFL_BACKEND_NONE: snprintf(be->why, sizeof be->why, "backend None was asked for"); break;
    case GPUFL_BACKEND_AMD:
        snprintf(be->why, sizeof be->why, "the AMD backend is not built yet in this release");
        gpufl__warn("backend Amd: %s", be->why);
        break;
    default:
        if (gpufl__nvml_open(NULL, &nvml, be->why, sizeof be->why) == 0) {
            be->running = GPUFL_BACKEND_NVIDIA;
            break;
        }
        if (s->backend == GPUFL_BACKEND_NVIDIA)
            gpufl__warn("backend Nvidia: %s", be->why);
        else
            gpufl__debug("no NVIDIA backend: %s", be->why);
    }
    return nvml;
}

static void trace_fini(void) {
#if GPUFL_HAVE_CUPTI
    gpufl__trace_source_fini(&g.trace);
    memset(&g.trace, 0, sizeof g.trace);
#endif
}

/* ---------------- process hooks ---------------- */

static void at_exit(void) { gpufl_shutdown(); }
static void fork_prepare(void) {
    pthread_mutex_lock(&g.lock);
    gpufl__log_before_fork();
}
static void fork_parent(void) {
    gpufl__log_after_fork(0);
    pthread_mutex_unlock(&g.lock);
}

/* The child has no collector thread: it forgets the parent's session
 * (without touching its files or buffers) and may start its own. */
static void fork_child(void) {
    gpufl__scope_after_fork_child();
    gpufl__ops_after_fork_child();
    gpufl__interp_after_fork_child();
    gpufl__log_after_fork(1);
    g.running = 0;
    g.collector = NULL;              /* the parent's: left alone (its thread is not here) */
    memset(&g.gpu, 0, sizeof g.gpu); /* the parent's NVML handle: not ours to close */
#if GPUFL_HAVE_CUPTI
    memset(&g.trace, 0, sizeof g.trace); /* nor its CUPTI */
    gpufl__cupti_after_fork_child();
#endif
    pthread_mutex_init(&g.lock, NULL);
}

static void install_hooks(void) {
    if (g.hooks_installed) return;
    g.hooks_installed = 1;
    atexit(at_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---------------- init and shutdown ---------------- */

static int start_session(void) {
    gpufl_settings_t *s = &g.settings;
    gpufl_ring_pool_t *pool;
    gpufl_source_t host_source;
    char log_path[4096];
    int rc;

    if (*s->log_path)
        snprintf(log_path, sizeof log_path, "%s", s->log_path);
    else
        snprintf(log_path, sizeof log_path, "%s.log", s->app_name);

    memset(&g.ident, 0, sizeof g.ident);
    snprintf(g.ident.app_name, sizeof g.ident.app_name, "%s", s->app_name);
    if (gethostname(g.ident.hostname, sizeof g.ident.hostname - 1) != 0)
        snprintf(g.ident.hostname, sizeof g.ident.hostname, "unknown");
    g.ident.pid = (int)getpid();

    /* Two limits that are each in range can still clash: a ring larger than
     * the whole cap. Keep the cap (it is the promise about memory) and shrink
     * the rings to fit four, saying so. */
    uint64_t ring_bytes = (uint64_t)s->ring_capacity_records * sizeof(gpufl_rec_t);
    if (ring_bytes * 4 > (uint64_t)s->memory_cap_bytes) {
        int64_t fit = 64;
        while ((uint64_t)(fit * 2) * sizeof(gpufl_rec_t) * 4 <= (uint64_t)s->memory_cap_bytes)
            fit *= 2;
        gpufl__warn("ring_capacity_records %lld does not fit memory_cap_bytes %lld four times; "
                    "using %lld records per ring",
                    (long long)s->ring_capacity_records, (long long)s->memory_cap_bytes,
                    (long long)fit);
        s->ring_capacity_records = fit;
    }
    rc = gpufl__ring_pool_get((uint64_t)s->ring_capacity_records, (uint64_t)s->memory_cap_bytes,
                              &pool);
    if (rc) return rc;
    gpufl__clock_setup();
    gpufl__clock_reset();
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    g.ident.epoch_ns = gpufl__mono_ns();
    g.ident.epoch_unix_us = (int64_t)wall.tv_sec * 1000000 + wall.tv_nsec / 1000;

    rc = create_session_dir(log_path, &g.ident, g.dir, sizeof g.dir);
    if (rc) return rc;
    /* Said once, here, rather than as a failure at the end of the program. */
    if (*s->backend_url) {
        gpufl__warn("backend_url is set, but " GPUFL__UPLOAD_NOT_BUILT "; the logs stay in %s",
                    g.dir);
        gpufl__upload_said(1);
    }
    gpufl__ring_pool_reset(pool);
    rc = gpufl__collector_create(s, pool, g.dir, &g.ident, &g.collector);
    if (rc) return rc;

    gpufl_writer_t *device = gpufl__collector_file(g.collector, GPUFL_FILE_DEVICE);
    rc = gpufl__host_sampler_init(&g.host, g.collector, s, NULL, &host_source);
    if (rc) goto fail;
    backend_state_t be;
    gpufl_nvml_t *nvml = open_backend(s, &be);
    gpufl_source_t trace_source;
    int have_trace;
    start_trace(s, &be, &trace_source, &have_trace);
    write_options(device, s);
    write_capabilities(device, s, g.host.reader_ok, &be);
    if (have_trace && (rc = gpufl__collector_add_source(g.collector, &trace_source))) {
        if (nvml) gpufl__nvml_close(nvml);
        goto stop;
    }
    memset(&g.gpu, 0, sizeof g.gpu);
    if (nvml) {
        gpufl_source_t gpu_source;
        rc = gpufl__gpu_sampler_init(&g.gpu, nvml, g.collector, s, &gpu_source);
        if (rc == 0) rc = gpufl__collector_add_source(g.collector, &gpu_source);
        if (rc) {
            if (!g.gpu.nvml) gpufl__nvml_close(nvml);
            goto stop;
        }
    }
    if ((rc = gpufl__collector_add_source(g.collector, &host_source)) ||
        (rc = gpufl__collector_start(g.collector)))
        goto stop;
    g.pool = pool;
    gpufl__scope_attach(pool, ++g.generation);
    gpufl__debug("session %s started in %s", g.ident.session_id, g.dir);
    return 0;
stop:
    gpufl__collector_destroy(g.collector, NULL);
    trace_fini();
    gpufl__gpu_sampler_fini(&g.gpu);
    gpufl__host_sampler_fini(&g.host);
    g.collector = NULL;
    return rc;
fail:
    gpufl__collector_destroy(g.collector, NULL);
    g.collector = NULL;
    return rc;
}

int gpufl_init(const gpufl_options_t *opts) {
    int rc;
    gpufl__clear_error();
    if (gpufl__env_disabled() ||
        (opts && opts->size >= offsetof(gpufl_options_t, enabled) + sizeof opts->enabled &&
         !opts->enabled)) {
        g.last_disabled = 1;
        return gpufl__set_error(GPUFL_EDISABLED, "gpufl is disabled (%s); nothing is recorded",
                                gpufl__env_disabled() ? "GPUFL_DISABLED is set" : "enabled=false");
    }
    pthread_mutex_lock(&g.lock);
    if (g.running) {
        rc = gpufl__set_error(GPUFL_EALREADY,
                              "a session is already running (%s); call shutdown() before "
                              "init() again",
                              g.ident.session_id);
        goto out;
    }
    gpufl__settings_fini(&g.settings);
    gpufl__upload_said(0);
    rc = gpufl__settings_resolve(opts, &g.settings);
    if (rc) goto out;
    gpufl__log_set_debug(g.settings.enable_debug_output);
    g.last_disabled = !g.settings.enabled;
    if (!g.settings.enabled) {
        rc = gpufl__set_error(GPUFL_EDISABLED, "gpufl is disabled by the config file");
        goto out;
    }
    rc = start_session();
    if (rc) goto out;
    install_hooks();
    g.running = 1;
    g.ran_once = 1;
out:
    if (rc && rc != GPUFL_EDISABLED) gpufl__warn("init failed: %s", gpufl_last_error());
    pthread_mutex_unlock(&g.lock);
    return rc;
}

void gpufl_shutdown(void) {
    pthread_mutex_lock(&g.lock);
    if (g.running) {
        gpufl__scope_detach();
        g.last_stats.size = sizeof g.last_stats;
        gpufl__collector_destroy(g.collector, &g.last_stats);
        trace_fini();
        gpufl__gpu_sampler_fini(&g.gpu);
        gpufl__host_sampler_fini(&g.host);
        gpufl__ring_pool_release(g.pool);
        g.collector = NULL;
        g.running = 0;
        gpufl__debug("session %s ended", g.ident.session_id);
    }
    pthread_mutex_unlock(&g.lock);
}

/* ---------------- queries ---------------- */

int gpufl__session_disabled(void) { return gpufl__env_disabled() || g.last_disabled; }

int gpufl_is_active(void) {
    return __atomic_load_n(&gpufl_internal_live_generation, __ATOMIC_RELAXED) != 0;
}

int gpufl_session_dir(char *buf, size_t buf_size) {
    int rc;
    pthread_mutex_lock(&g.lock);
    if (!g.ran_once)
        rc = gpufl__set_error(GPUFL_ENOTINIT, "no session has run in this process");
    else if (!buf || strlen(g.dir) + 1 > buf_size)
        rc = gpufl__set_error(GPUFL_EINVAL, "buffer too small for the session directory");
    else
        rc = (int)strlen(memcpy(buf, g.dir, strlen(g.dir) + 1));
    pthread_mutex_unlock(&g.lock);
    return rc;
}

int gpufl_get_stats(gpufl_stats_t *out) {
    int rc = 0;
    pthread_mutex_lock(&g.lock);
    if (g.running) {
        gpufl__collector_stats(g.collector, out);
    } else if (g.ran_once) {
        size_t size =
            out->size && out->size < sizeof g.last_stats ? out->size : sizeof g.last_stats;
        memcpy(out, &g.last_stats, size);
        out->size = size;
    } else {
        rc = gpufl__set_error(GPUFL_ENOTINIT, "no session has run in this process");
    }
    pthread_mutex_unlock(&g.lock);
    return rc;
}

int gpufl_flush(void) {
    int rc;
    pthread_mutex_lock(&g.lock);
    rc = g.running ? gpufl__collector_flush(g.collector)
                   : gpufl__set_error(GPUFL_ENOTINIT, "no session is running");
    pthread_mutex_unlock(&g.lock);
    return rc;
}

static int system_window(const char *name, int open) {
    int rc;
    if (!name) return gpufl__set_error(GPUFL_EINVAL, "system window name is NULL");
    pthread_mutex_lock(&g.lock);
    if (g.running)
        rc = gpufl__host_sampler_window(&g.host, name, open);
    else if (g.last_disabled)
        rc = GPUFL_EDISABLED;
    else
        rc = gpufl__set_error(GPUFL_ENOTINIT, "system_%s(\"%s\"): no session is running",
                              open ? "start" : "stop", name);
    pthread_mutex_unlock(&g.lock);
    return rc;
}

int gpufl_system_start(const char *name) { return system_window(name, 1); }
int gpufl_system_stop(const char *name) { return system_window(name, 0); }

/* ---------------- reports ---------------- */

/* The report itself is the analysis side's (lib/analysis/report_entry.c):
 * the session gives it the directory of the last session, flushed. */
int gpufl__session_report_dir(char *dir, size_t size) {
    if (gpufl__session_disabled()) return GPUFL_EDISABLED; /* off: a no-op like every call */
    pthread_mutex_lock(&g.lock);
    if (!g.ran_once) {
        pthread_mutex_unlock(&g.lock);
        int rc = gpufl__set_error(GPUFL_ENOTINIT, g.last_disabled
                                                      ? "gpufl is disabled: no session to report"
                                                      : "no session has run in this process; "
                                                        "call init() first");
        if (!g.last_disabled) gpufl__warn("generateReport: %s", gpufl_last_error());
        return rc;
    }
    if (g.running) gpufl__collector_flush(g.collector);
    snprintf(dir, size, "%s", g.dir);
    pthread_mutex_unlock(&g.lock);
    return 0;
}
