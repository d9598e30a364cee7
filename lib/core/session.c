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
#include "core/backend.h"
#include "core/clock.h"
#include "core/collector.h"
#include "core/flight_recorder.h"
#include "core/forward.h"
#include "core/interp.h"
#include "util/log.h"
#include "core/ops.h"
#include "core/options.h"
#include "core/scope.h"
#include "core/session.h"
#include "core/trace_marker.h"

#include <gpufl/gpufl_log.h>

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
    gpufl__settings_t settings;
    gpufl__session_ident_t ident;
    char dir[4096];      /* the session's files; a flight recorder's last snapshot */
    char log_path[4096]; /* where session directories go */
    int snapshots;       /* taken by the flight recorder this session */
    gpufl__collector_t *collector;
    gpufl__ring_pool_t *pool;
    int host_started; /* how many of gpufl__host_sources run */
    gpufl_stats_t last_stats;
    /* Under `gpufl trace` (core/trace_marker.h): the program's inits that
     * joined the injected session running here, and whether the program's
     * init found it running in another copy of the library. */
    int joined;
    int joined_elsewhere;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

const char *gpufl_version(void) {
    return STR(GPUFL_VERSION_MAJOR) "." STR(GPUFL_VERSION_MINOR) "." STR(GPUFL_VERSION_PATCH);
}

int gpufl_version_number(void) { return GPUFL_VERSION_NUMBER; }

/* ---------------- directories and ids ---------------- */

static int mkdir_error(const char *dir) {
    return gpufl__set_error(GPUFL_EIO, "cannot create log directory '%s': %s", dir,
                            strerror(errno));
}

static int make_dirs(const char *path) {
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp)
        return gpufl__set_error(GPUFL_EINVAL, "log_path '%s' is empty or too long", path);
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return mkdir_error(tmp);
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return mkdir_error(tmp);
    return 0;
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

/* A new directory for ident under log_path, named by a session id of the
 * time id_unix_us (the session's start; a snapshot's own time). */
static int create_session_dir(const char *log_path, gpufl__session_ident_t *ident,
                              int64_t id_unix_us, char *dir, size_t size) {
    int rc = make_dirs(log_path);
    if (rc) return rc;
    for (int attempt = 0; attempt < 8; attempt++) {
        make_session_id(ident->session_id, sizeof ident->session_id, id_unix_us);
        if ((size_t)snprintf(dir, size, "%s/%s", log_path, ident->session_id) >= size)
            return gpufl__set_error(GPUFL_EINVAL, "log_path '%s' is too long", log_path);
        if (mkdir(dir, 0755) == 0) return 0;
        if (errno != EEXIST) break;
    }
    return gpufl__set_error(GPUFL_EIO, "cannot create session directory '%s': %s", dir,
                            strerror(errno));
}

/* ---------------- records written at init ---------------- */

static void write_options(gpufl__collector_t *c, const gpufl__settings_t *s) {
    gpufl__wire_option_t v[GPUFL_OPTION_COUNT];
    for (int i = 0; i < GPUFL_OPTION_COUNT; i++) {
        gpufl__option_source_t src;
        gpufl__settings_get(s, i, &v[i].name, &src, &v[i].str, &v[i].num);
        v[i].from = gpufl__option_source_name(src);
    }
    gpufl__line_t l;
    gpufl__wire_options(&l, v, GPUFL_OPTION_COUNT);
    gpufl__collector_record(c, GPUFL_FILE_DEVICE, &l);
}

static void write_legend(gpufl__collector_t *c) {
    gpufl__line_t l;
    gpufl__wire_legend(&l);
    gpufl__collector_record(c, GPUFL_FILE_DEVICE, &l);
}

/* The session's backend: the first of the table asked for (by name or
 * Auto) whose device library answers, NONE when none does. Every backend of
 * the table starts its engine (one not asked for only records why not); the
 * engine is the first one above Monitor. opened[i]: backend i answered. A
 * missing driver is a normal state: recorded, and said aloud only when the
 * backend was asked for by name. */
static gpufl_backend_t start_backends(const gpufl__settings_t *s, gpufl_engine_t *engine,
                                      int *opened, gpufl__source_t *sources, int *nsources) {
    const char *absent = gpufl__backend_absent_why(s->backend);
    gpufl_backend_t running = GPUFL_BACKEND_NONE;
    char other[64];
    *engine = GPUFL_ENGINE_MONITOR;
    *nsources = 0;
    if (absent && s->backend != GPUFL_BACKEND_NONE)
        gpufl__warn("backend %s: %s", gpufl_backend_name(s->backend), absent);
    snprintf(other, sizeof other, "backend %s was asked for", gpufl_backend_name(s->backend));
    for (int i = 0; i < GPUFL__BACKENDS_MAX && gpufl__backends[i]; i++) {
        const gpufl__backend_ops_t *b = gpufl__backends[i];
        int asked = !absent && (s->backend == GPUFL_BACKEND_AUTO || s->backend == b->kind);
        char why[256];
        opened[i] = 0;
        if (asked && b->open(s, why, sizeof why) == 0) {
            opened[i] = 1;
            if (running == GPUFL_BACKEND_NONE) running = b->kind;
        } else if (asked && s->backend == b->kind) {
            gpufl__warn("backend %s: %s", gpufl_backend_name(b->kind), why);
        } else if (asked) {
            gpufl__debug("no %s backend: %s", b->name, why);
        }
        const char *off_why = NULL;
        if (!asked) off_why = absent ? absent : other;
        gpufl_engine_t e;
        int have = 0;
        if (*nsources < GPUFL_MAX_SOURCES)
            b->start_engine(g.collector, s, off_why, &e, &sources[*nsources], &have);
        else
            e = GPUFL_ENGINE_MONITOR;
        *nsources += have;
        if (*engine == GPUFL_ENGINE_MONITOR) *engine = e;
    }
    return running;
}

/* Says what runs and, for what does not, why: the host sources' entries,
 * then each backend's; then each backend explains an engine downgrade. */
static void write_capabilities(gpufl__collector_t *c, const gpufl__settings_t *s,
                               const gpufl__feature_t *host, int nhost, gpufl_backend_t running,
                               gpufl_engine_t engine) {
    gpufl__feature_t features[GPUFL__FEATURES_MAX * (GPUFL__BACKENDS_MAX + 1)];
    size_t n = 0;
    for (int i = 0; i < nhost && n < GPUFL__FEATURES_MAX; i++) features[n++] = host[i];
    for (int i = 0; i < GPUFL__BACKENDS_MAX && gpufl__backends[i]; i++)
        n += (size_t)gpufl__backends[i]->features(s, &features[n], GPUFL__FEATURES_MAX);
    gpufl__wire_capabilities_t caps = {gpufl_backend_name(s->backend),
                                       gpufl_backend_name(running),
                                       gpufl_engine_name(s->profiling_engine),
                                       gpufl_engine_name(engine),
                                       features,
                                       n};
    gpufl__line_t l;
    gpufl__wire_capabilities(&l, &caps);
    gpufl__collector_record(c, GPUFL_FILE_DEVICE, &l);
    for (int i = 0; gpufl__backends[i]; i++) gpufl__backends[i]->explain_engine(s);
}

/* After the collector stopped: the backends, then the host sources started. */
static void stop_sources(void) {
    for (int i = 0; gpufl__backends[i]; i++) gpufl__backends[i]->stop();
    for (int i = g.host_started - 1; i >= 0; i--) gpufl__host_sources[i]->stop();
    g.host_started = 0;
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
    gpufl__flight_crash_disarm();
    gpufl__flight_after_fork_child();
    gpufl__scope_after_fork_child();
    gpufl__ops_after_fork_child();
    gpufl__interp_after_fork_child();
    gpufl__log_after_fork(1);
    g.running = 0;
    g.joined = g.joined_elsewhere = 0;
    gpufl__forward_close(); /* the recording copy forgets its session in the child too */
    g.collector = NULL;     /* the parent's: left alone (its thread is not here) */
    for (int i = 0; gpufl__backends[i]; i++) gpufl__backends[i]->after_fork_child();
    pthread_mutex_init(&g.lock, NULL);
}

static void install_hooks(void) {
    if (g.hooks_installed) return;
    g.hooks_installed = 1;
    atexit(at_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---------------- init and shutdown ---------------- */

static const char *session_getenv(const char *name) { return getenv(name); }

/* The flight recorder's triggers, once the collector runs: the thread that
 * takes the snapshots they ask for (and its signal), the fatal signals'. */
static int flight_recorder_start(const gpufl__settings_t *s) {
    int rc = gpufl__flight_trigger_start(s->flight_recorder_signal, s->flight_recorder_s);
    if (rc == GPUFL_EINVAL)
        gpufl__warn("%s; the flight recorder runs without its signal", gpufl_last_error());
    else if (rc)
        return rc;
    rc = gpufl__flight_crash_arm(gpufl__collector_flight_recorder(g.collector), &g.ident,
                                 g.log_path, s->flight_recorder_s, s->flight_recorder_bytes);
    if (rc) gpufl__flight_trigger_stop();
    return rc;
}

static int start_session(void) {
    gpufl__settings_t *s = &g.settings;
    gpufl__ring_pool_t *pool;
    gpufl__source_t host_sources[GPUFL_MAX_SOURCES], engine_sources[GPUFL_MAX_SOURCES];
    gpufl__feature_t host_features[GPUFL_MAX_SOURCES];
    int opened[GPUFL__BACKENDS_MAX], nengine;
    char *log_path = g.log_path;
    int rc;

    if (*s->log_path)
        snprintf(log_path, sizeof g.log_path, "%s", s->log_path);
    else
        snprintf(log_path, sizeof g.log_path, "%s.log", s->app_name);

    memset(&g.ident, 0, sizeof g.ident);
    snprintf(g.ident.app_name, sizeof g.ident.app_name, "%s", s->app_name);
    if (gethostname(g.ident.hostname, sizeof g.ident.hostname - 1) != 0)
        snprintf(g.ident.hostname, sizeof g.ident.hostname, "unknown");
    g.ident.pid = (int)getpid();
    gpufl__wire_job_id(&g.ident, session_getenv);
    gpufl__wire_run_id(&g.ident, session_getenv);

    /* Two limits that are each in range can still clash: a ring larger than
     * the whole cap. Keep the cap (it is the promise about memory) and shrink
     * the rings to fit four, saying so. */
    uint64_t ring_bytes = (uint64_t)s->ring_capacity_records * sizeof(gpufl__rec_t);
    if (ring_bytes * 4 > (uint64_t)s->memory_cap_bytes) {
        int64_t fit = 64;
        while ((uint64_t)(fit * 2) * sizeof(gpufl__rec_t) * 4 <= (uint64_t)s->memory_cap_bytes)
            fit *= 2;
        gpufl__warn("ring_capacity_records %lld does not fit memory_cap_bytes %lld four times; "
                    "using %lld records per ring",
                    (long long)s->ring_capacity_records, (long long)s->memory_cap_bytes,
                    (long long)fit);
        s->ring_capacity_records = fit;
    }
    rc = gpufl__ring_pool_get(&pool, (uint64_t)s->ring_capacity_records,
                              (uint64_t)s->memory_cap_bytes);
    if (rc) return rc;
    gpufl__clock_setup();
    gpufl__clock_reset();
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    g.ident.epoch_ns = gpufl__mono_ns();
    g.ident.epoch_unix_us = (int64_t)wall.tv_sec * 1000000 + wall.tv_nsec / 1000;

    g.snapshots = 0;
    g.dir[0] = '\0';
    if (s->flight_recorder_s > 0) /* no file until a snapshot, which gets its own directory */
        make_session_id(g.ident.session_id, sizeof g.ident.session_id, g.ident.epoch_unix_us);
    else if ((rc = create_session_dir(log_path, &g.ident, g.ident.epoch_unix_us, g.dir,
                                      sizeof g.dir)))
        return rc;
    gpufl__ring_pool_reset(pool);
    rc = gpufl__collector_create(&g.collector, s, pool, g.dir, &g.ident);
    if (rc) return rc;

    g.host_started = 0;
    for (int i = 0; i < GPUFL_MAX_SOURCES && gpufl__host_sources[i]; i++) {
        rc = gpufl__host_sources[i]->start(g.collector, s, &host_sources[i], &host_features[i]);
        if (rc) goto destroy_collector;
        g.host_started++;
    }
    gpufl_engine_t engine;
    gpufl_backend_t running = start_backends(s, &engine, opened, engine_sources, &nengine);
    write_options(g.collector, s);
    write_capabilities(g.collector, s, host_features, g.host_started, running, engine);
    write_legend(g.collector);
    for (int i = 0; i < nengine; i++)
        if ((rc = gpufl__collector_add_source(g.collector, &engine_sources[i])))
            goto destroy_collector;
    for (int i = 0; i < GPUFL__BACKENDS_MAX && gpufl__backends[i]; i++) {
        gpufl__source_t devices;
        if (!opened[i]) continue;
        if ((rc = gpufl__backends[i]->start_devices(g.collector, s, &devices)) ||
            (rc = gpufl__collector_add_source(g.collector, &devices)))
            goto destroy_collector;
    }
    for (int i = 0; i < g.host_started; i++)
        if ((rc = gpufl__collector_add_source(g.collector, &host_sources[i])))
            goto destroy_collector;
    if ((rc = gpufl__collector_start(g.collector))) goto destroy_collector;
    if (s->flight_recorder_s > 0 && (rc = flight_recorder_start(s))) goto destroy_collector;
    g.pool = pool;
    gpufl__scope_attach(pool, ++g.generation);
    gpufl__debug("session %s started in %s", g.ident.session_id, g.dir);
    return 0;
destroy_collector:
    gpufl__collector_destroy(g.collector, NULL);
    stop_sources();
    g.collector = NULL;
    return rc;
}

/* ---------------- under gpufl trace ---------------- */

/* The program's init while the session `gpufl trace` injected runs: it
 * succeeds and joins that session (one session per process, not two). Its
 * options are noted in the session, not applied. When the injected session
 * runs in another copy of the library (the Python extension's own, say),
 * this copy forwards what it records to that one (core/forward.h); when it
 * cannot find it, it records nothing and says so once. Lock held. */
static int join_injected(const gpufl_options_t *opts) {
    if (!g.running) {
        if (g.joined_elsewhere) return 0;
        g.joined_elsewhere = 1;
        if (gpufl__forward_open() == 0)
            gpufl__debug("gpufl trace's session runs in another copy of libgpufl in this "
                         "process: init joins it, and this copy's scopes, system windows, "
                         "flushes and snapshots go to that copy");
        else
            gpufl__warn("gpufl trace's session runs in another copy of libgpufl in this process, "
                        "which this copy cannot reach (%s): init joins it, and what this copy "
                        "would record (its scopes, system windows, snapshots) is not kept",
                        gpufl_last_error());
        gpufl__clear_error();
        return 0;
    }
    gpufl__settings_t asked;
    char note[1024];
    if (gpufl__settings_resolve(&asked, opts) == 0) {
        snprintf(note, sizeof note,
                 "the program's init joined the session gpufl trace injected; its options "
                 "(app_name %s, profiling_engine %s, log_path %s) are not applied",
                 asked.app_name, gpufl_engine_name(asked.profiling_engine),
                 *asked.log_path ? asked.log_path : "(default)");
        gpufl__settings_fini(&asked);
    } else {
        snprintf(note, sizeof note,
                 "the program's init joined the session gpufl trace injected; its options "
                 "do not resolve: %s",
                 gpufl_last_error());
        gpufl__clear_error();
    }
    gpufl__collector_event(g.collector, GPUFL_FILE_DEVICE, "info", "program_init_joined", note);
    gpufl__debug("%s", note);
    g.joined++;
    return 0;
}

/* The program's shutdown of a session it joined: the session goes on until
 * the injection's exit path ends it (which marks it ending first). Returns 1
 * when shutdown has nothing more to do. */
static int leave_injected(void) {
    int left = 0;
    pthread_mutex_lock(&g.lock);
    if (g.joined_elsewhere && !g.running) {
        g.joined_elsewhere = 0;
        gpufl__forward_close();
        left = 1;
    } else if (g.running && g.joined > 0 && gpufl__trace_state() == GPUFL_TRACE_INJECTED) {
        g.joined--;
        left = 1;
    }
    pthread_mutex_unlock(&g.lock);
    return left;
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
    gpufl__trace_state_t traced = gpufl__trace_state();
    if (traced == GPUFL_TRACE_INJECTED) {
        rc = join_injected(opts);
        goto unlock;
    }
    if (g.running) {
        rc = gpufl__set_error(GPUFL_EALREADY,
                              "a session is already running (%s); call shutdown() before "
                              "init() again",
                              g.ident.session_id);
        goto unlock;
    }
    gpufl__settings_fini(&g.settings);
    rc = gpufl__settings_resolve(&g.settings, opts);
    if (rc) goto unlock;
    gpufl__log_set_debug(g.settings.enable_debug_output);
    g.last_disabled = !g.settings.enabled;
    if (!g.settings.enabled) {
        rc = gpufl__set_error(GPUFL_EDISABLED, "gpufl is disabled by the config file");
        goto unlock;
    }
    /* The injected session this copy joined has ended: this copy's own replaces it. */
    g.joined_elsewhere = 0;
    gpufl__forward_close();
    rc = start_session();
    if (rc) goto unlock;
    install_hooks();
    g.running = 1;
    g.ran_once = 1;
    g.joined = 0;
    if (traced != GPUFL_TRACE_UNMARKED)
        gpufl__trace_mark(traced == GPUFL_TRACE_STARTING ? GPUFL_TRACE_INJECTED
                                                         : GPUFL_TRACE_PROGRAM);
unlock:
    if (rc && rc != GPUFL_EDISABLED) gpufl__warn("init failed: %s", gpufl_last_error());
    pthread_mutex_unlock(&g.lock);
    return rc;
}

void gpufl_shutdown(void) {
    if (leave_injected()) return;
    gpufl__flight_trigger_stop(); /* before the lock: a snapshot it runs may be waiting for it */
    pthread_mutex_lock(&g.lock);
    if (g.running) {
        gpufl__flight_crash_disarm(); /* before the ring goes */
        gpufl__scope_detach();
        g.last_stats.size = sizeof g.last_stats;
        gpufl__collector_destroy(g.collector, &g.last_stats);
        stop_sources();
        gpufl__ring_pool_release(g.pool);
        g.collector = NULL;
        g.running = 0;
        g.joined = 0;
        if (gpufl__trace_state() >= GPUFL_TRACE_STARTING) gpufl__trace_mark(GPUFL_TRACE_OTHER);
        gpufl__debug("session %s ended", g.ident.session_id);
    }
    pthread_mutex_unlock(&g.lock);
}

/* ---------------- queries ---------------- */

int gpufl__session_disabled(void) { return gpufl__env_disabled() || g.last_disabled; }

int gpufl_is_active(void) {
    const gpufl__forward_t *f = gpufl__forward();
    if (f) return f->is_active();
    return __atomic_load_n(&gpufl_internal_live_generation, __ATOMIC_RELAXED) != 0;
}

void gpufl__session_upload_defaults(char *url, size_t url_size, char *key, size_t key_size,
                                    char *path, size_t path_size) {
    pthread_mutex_lock(&g.lock);
    const gpufl__settings_t *s = &g.settings;
    snprintf(url, url_size, "%s", g.ran_once && s->backend_url ? s->backend_url : "");
    snprintf(key, key_size, "%s", g.ran_once && s->api_key ? s->api_key : "");
    snprintf(path, path_size, "%s", g.ran_once && s->api_path ? s->api_path : "");
    pthread_mutex_unlock(&g.lock);
}

int gpufl_session_dir(char *buf, size_t buf_size) {
    int rc;
    const gpufl__forward_t *f = gpufl__forward();
    if (f) return gpufl__forward_rc(f, f->session_dir(buf, buf_size));
    pthread_mutex_lock(&g.lock);
    if (!g.ran_once)
        rc = gpufl__set_error(GPUFL_ENOTINIT, "no session has run in this process");
    else if (!*g.dir)
        rc = gpufl__set_error(GPUFL_ENOTFOUND, "the flight recorder has taken no snapshot yet");
    else if (!buf || strlen(g.dir) + 1 > buf_size)
        rc = gpufl__set_error(GPUFL_EINVAL, "buffer too small for the session directory");
    else
        rc = (int)strlen(memcpy(buf, g.dir, strlen(g.dir) + 1));
    pthread_mutex_unlock(&g.lock);
    return rc;
}

int gpufl_get_stats(gpufl_stats_t *out) {
    int rc = 0;
    const gpufl__forward_t *f = gpufl__forward();
    if (f) return gpufl__forward_rc(f, f->get_stats(out));
    pthread_mutex_lock(&g.lock);
    if (g.running) {
        gpufl__collector_stats(out, g.collector);
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
    const gpufl__forward_t *f = gpufl__forward();
    if (f) return gpufl__forward_rc(f, f->flush());
    pthread_mutex_lock(&g.lock);
    rc = g.running ? gpufl__collector_flush(g.collector)
                   : gpufl__set_error(GPUFL_ENOTINIT, "no session is running");
    pthread_mutex_unlock(&g.lock);
    return rc;
}

static int system_window(const char *name, int open) {
    int rc;
    if (!name) return gpufl__set_error(GPUFL_EINVAL, "system window name is NULL");
    const gpufl__forward_t *f = gpufl__forward();
    if (f) return gpufl__forward_rc(f, open ? f->system_start(name) : f->system_stop(name));
    pthread_mutex_lock(&g.lock);
    if (g.running) {
        rc = gpufl__set_error(GPUFL_ENOTSUP, "system windows need a host source");
        for (int i = 0; i < g.host_started; i++)
            if (gpufl__host_sources[i]->window) {
                rc = gpufl__host_sources[i]->window(name, open);
                break;
            }
    } else if (g.last_disabled)
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
    const gpufl__forward_t *f = gpufl__forward();
    if (f) { /* the session of the copy this one forwards to */
        int rc = f->flush();
        if (rc == 0) rc = f->session_dir(dir, size);
        return gpufl__forward_rc(f, rc < 0 ? rc : 0);
    }
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
    if (!*g.dir) {
        pthread_mutex_unlock(&g.lock);
        return gpufl__set_error(GPUFL_ENOTFOUND, "the flight recorder has taken no snapshot yet: "
                                                 "call gpufl_snapshot() first");
    }
    if (g.running) gpufl__collector_flush(g.collector);
    snprintf(dir, size, "%s", g.dir);
    pthread_mutex_unlock(&g.lock);
    return 0;
}

/* ---------------- the flight recorder ---------------- */

/* The ring as it is now, in a new session directory. Lock held. */
static int take_snapshot(gpufl__ring_sink_t *ring, const char *why, char *dir, size_t size) {
    const gpufl__settings_t *s = &g.settings;
    gpufl__session_ident_t snap = g.ident;
    struct timespec wall;
    int rc = gpufl__collector_flush(g.collector); /* rows held back reach the ring first */
    if (rc) return rc;
    clock_gettime(CLOCK_REALTIME, &wall);
    rc = create_session_dir(g.log_path, &snap, (int64_t)wall.tv_sec * 1000000 + wall.tv_nsec / 1000,
                            dir, size);
    if (rc) return rc;
    gpufl_stats_t st = {.size = sizeof st};
    gpufl__collector_stats(&st, g.collector);
    gpufl__flight_snapshot_t info = {g.snapshots + 1,
                                     g.ident.session_id,
                                     why,
                                     s->flight_recorder_s,
                                     s->flight_recorder_bytes,
                                     gpufl__collector_session_ns(g.collector, gpufl__mono_ns()),
                                     st.records_written,
                                     st.records_dropped,
                                     0,
                                     NULL};
    rc = gpufl__flight_snapshot_write(ring, &snap, dir, &info);
    if (rc) return rc;
    g.snapshots++;
    snprintf(g.dir, sizeof g.dir, "%s", dir);
    return 0;
}

int gpufl_snapshot(char *dir, size_t dir_size) {
    const gpufl__forward_t *f = gpufl__forward();
    if (f) return gpufl__forward_rc(f, f->snapshot(dir, dir_size));
    return gpufl__session_snapshot("gpufl_snapshot", dir, dir_size);
}

int gpufl__session_snapshot(const char *why, char *dir, size_t dir_size) {
    char path[4096];
    int rc;
    pthread_mutex_lock(&g.lock);
    gpufl__ring_sink_t *ring = g.running ? gpufl__collector_flight_recorder(g.collector) : NULL;
    if (!g.running)
        rc = g.last_disabled ? GPUFL_EDISABLED
                             : gpufl__set_error(GPUFL_ENOTINIT, "snapshot: no session is running");
    else if (!ring)
        rc = gpufl__set_error(GPUFL_ENOTSUP, "snapshot: the session runs without the flight "
                                             "recorder (flight_recorder_s is 0) and writes its "
                                             "files as it goes");
    else
        rc = take_snapshot(ring, why, path, sizeof path);
    if (rc == 0 && dir && dir_size) snprintf(dir, dir_size, "%s", path);
    pthread_mutex_unlock(&g.lock);
    return rc;
}

int gpufl__session_attach_sink(const gpufl__sink_ops_t *ops, void *self,
                               gpufl__session_ident_t *ident) {
    int rc;
    pthread_mutex_lock(&g.lock);
    if (!g.running || !g.collector)
        rc = gpufl__set_error(GPUFL_ENOTINIT, "no session is running to attach a sink to");
    else
        rc = gpufl__collector_attach_sink(g.collector, ops, self);
    if (rc == 0 && ident) *ident = g.ident;
    pthread_mutex_unlock(&g.lock);
    return rc;
}
