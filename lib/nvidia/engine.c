// SPDX-License-Identifier: Apache-2.0
/*
 * engine.c - the pieces the CUPTI engines above Trace share (engine.h).
 */
#include "nvidia/engine.h"

#include "core/clock.h"
#include "util/error.h"
#include "util/idmap.h"
#include "util/log.h"
#include "nvidia/rebind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Atomic uint64_t null_names;

static char *null_safe_strdup(const char *s) {
    if (s == NULL) {
        atomic_fetch_add(&null_names, 1);
        s = "";
    }
    return strdup(s);
}

int gpufl__engine_guard_names(const void *inside, char *why, size_t why_size) {
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
    static int done, rc;
    static char reason[200];
    pthread_mutex_lock(&once);
    if (!done) {
        done = 1;
        int n =
            gpufl__rebind_import(inside, "strdup", (void *)null_safe_strdup, reason, sizeof reason);
        rc = n < 0 ? n : 0;
    }
    if (rc != 0) snprintf(why, why_size, "%s", reason);
    pthread_mutex_unlock(&once);
    return rc;
}

uint64_t gpufl__engine_null_names(void) { return atomic_load(&null_names); }

/* The names kept (gpufl__engine_keep_name), by address: the table holds
 * each address, which keeps the string reachable for a leak checker. */
static struct {
    pthread_mutex_t lock;
    int ready;
    gpufl__idmap_t seen;
} kept = {.lock = PTHREAD_MUTEX_INITIALIZER};

void gpufl__engine_keep_name(const char *name) {
    if (name == NULL) return;
    pthread_mutex_lock(&kept.lock);
    if (!kept.ready) {
        gpufl__idmap_init(&kept.seen);
        kept.ready = 1;
    }
    gpufl__idmap_put(&kept.seen, (uint64_t)(uintptr_t)name, 0, NULL);
    pthread_mutex_unlock(&kept.lock);
}

static atomic_int patched;

void gpufl__engine_mark_patched(void) { atomic_store(&patched, 1); }

int gpufl__engine_patched(void) { return atomic_load(&patched); }

void gpufl__engine_forget_patched(void) { atomic_store(&patched, 0); }

int gpufl__engine_resolve(gpufl__cupti_t *cupti, const gpufl__engine_sym_t *syms, size_t n,
                          const char *needs, char *why, size_t why_size) {
    for (size_t i = 0; i < n; i++) {
        void *f = gpufl__cupti_symbol(cupti, syms[i].name);
        if (f == NULL) {
            snprintf(why, why_size, "%s lacks %s (%s)", gpufl__cupti_library(cupti), syms[i].name,
                     needs);
            return GPUFL_ENOTSUP;
        }
        memcpy(syms[i].slot, &f, sizeof f);
    }
    return 0;
}

void gpufl__engine_explain(CUptiResult (*result_string)(CUptiResult, const char **), CUptiResult r,
                           const char *what, char *out, size_t size) {
    const char *text = NULL;
    if (result_string == NULL || result_string(r, &text) != CUPTI_SUCCESS) text = NULL;
    snprintf(out, size, "%s failed: %s (CUPTI error %d)", what, text ? text : "unknown error",
             (int)r);
}

CUptiResult gpufl__engine_profiler_init(CUptiResult (*init)(CUpti_Profiler_Initialize_Params *),
                                        CUptiResult (*result_string)(CUptiResult, const char **),
                                        char *why, size_t why_size) {
    CUpti_Profiler_Initialize_Params p = {.structSize =
                                              CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CUptiResult r = init(&p);
    if (r != CUPTI_SUCCESS)
        gpufl__engine_explain(result_string, r, "cuptiProfilerInitialize", why, why_size);
    return r;
}

int gpufl__engine_refusal(CUptiResult r) {
    switch (r) {
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED: return 1;
    default: return 0;
    }
}

void gpufl__engine_note_error(gpufl__engine_errors_t *e, const char *message) {
    e->count++;
    snprintf(e->last, sizeof e->last, "%s", message);
}

int gpufl__engine_lock_within(pthread_mutex_t *m, int ms, gpufl__engine_errors_t *e) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)ms * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    if (pthread_mutex_timedlock(m, &until) == 0) return 0;
    atomic_fetch_add(&e->lock_timeouts, 1);
    return -1;
}

void gpufl__engine_report_errors(gpufl__engine_errors_t *e, gpufl__collector_t *c,
                                 const char *prefix, const char *code, const char *waiter,
                                 const char *effect) {
    uint64_t timeouts = atomic_exchange(&e->lock_timeouts, 0);
    if (timeouts) {
        e->count += timeouts;
        snprintf(e->last, sizeof e->last, "%s gave up waiting %d ms for the collector (%s)", waiter,
                 GPUFL_ENGINE_CALLBACK_LOCK_MS, effect);
    }
    if (e->count == e->reported) return;
    char msg[320];
    snprintf(msg, sizeof msg, "%s: %s (%llu failed calls so far)", prefix, e->last,
             (unsigned long long)e->count);
    e->reported = e->count;
    gpufl__collector_event(c, GPUFL_FILE_DEVICE, "warn", code, msg);
}

void gpufl__engine_write_totals(gpufl__collector_t *c, const char *type,
                                const gpufl__engine_count_t *counts, size_t ncounts,
                                const gpufl__wire_measure_t *measures, size_t nmeasures) {
    gpufl__line_t l;
    gpufl__wire_totals(&l, type, gpufl__collector_session_ns(c, gpufl__mono_ns()), counts, ncounts,
                       measures, nmeasures);
    gpufl__collector_record(c, GPUFL_FILE_DEVICE, &l);
}

long gpufl__engine_env_long_else(const char *name, long lo, long hi, long fallback,
                                 const char *what, const char *otherwise) {
    const char *text = getenv(name);
    if (text == NULL || *text == '\0') return fallback;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (end != NULL && *end == '\0' && v >= lo && v <= hi) return v;
    if (otherwise)
        gpufl__warn("%s=%s is not %s from %ld to %ld; %s", name, text, what, lo, hi, otherwise);
    else
        gpufl__warn("%s=%s is not %s from %ld to %ld; using %ld", name, text, what, lo, hi,
                    fallback);
    return fallback;
}

long gpufl__engine_env_long(const char *name, long lo, long hi, long fallback, const char *what) {
    return gpufl__engine_env_long_else(name, lo, hi, fallback, what, NULL);
}
