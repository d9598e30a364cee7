// SPDX-License-Identifier: Apache-2.0
/*
 * sass_metrics.c - the SassMetrics engine (see sass_metrics.h): one CUPTI
 * configuration per device, counting enabled per context with lazy
 * patching, one read per context when its work has finished, and the
 * counts written as sass_metric rows (one per instruction that ran).
 *
 * CUPTI hands the counts over as one record per (instruction, metric); the
 * read folds them into one entry per instruction, sorted by module,
 * function and offset, which the collector turns into rows.
 */
#include "nvidia/sass_metrics.h"

#include "core/clock.h"
#include "util/demangle.h"
#include "util/error.h"
#include "util/idmap.h"
#include "util/log.h"
#include "nvidia/engine.h"

#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PENDING_CUBINS 4096              /* module images waiting for their CRC */
#define RECORDS_MAX    ((size_t)1 << 22) /* CUPTI records one read takes (about 230 MB) */
#define INSTANCES_MAX  1024              /* values per record: 1 at GPU level */
#define READ_WAIT_MS   2000              /* a destroying thread waits this long for finish's read */

/* The metrics, in the order of the sass_metric columns they fill. */
static const char *const metric_names[GPUFL_SASS_METRICS_METRICS] = {
    "smsp__sass_inst_executed", "smsp__sass_thread_inst_executed", "smsp__sass_sectors_mem_global",
    "smsp__sass_sectors_mem_global_ideal"};

typedef struct sass_metrics_fn {
    CUptiResult (*profiler_init)(CUpti_Profiler_Initialize_Params *);
    CUptiResult (*profiler_deinit)(CUpti_Profiler_DeInitialize_Params *);
    CUptiResult (*chip_name)(CUpti_Device_GetChipName_Params *);
    CUptiResult (*properties)(CUpti_SassMetrics_GetProperties_Params *);
    CUptiResult (*set_config)(CUpti_SassMetricsSetConfig_Params *);
    CUptiResult (*enable)(CUpti_SassMetricsEnable_Params *);
    CUptiResult (*disable)(CUpti_SassMetricsDisable_Params *);
    CUptiResult (*data_properties)(CUpti_SassMetricsGetDataProperties_Params *);
    CUptiResult (*flush_data)(CUpti_SassMetricsFlushData_Params *);
    CUptiResult (*context_id)(CUcontext, uint32_t *);
    CUptiResult (*device_id)(CUcontext, uint32_t *);
    CUptiResult (*cubin_crc)(CUpti_GetCubinCrcParams *);
    CUptiResult (*result_string)(CUptiResult, const char **);
} sass_metrics_fn_t;

/* One instruction's counts, as read. */
typedef struct entry {
    uint32_t crc, function_index, pc;
    const char *function; /* CUPTI's string (never freed: see read_context) */
    int64_t value[GPUFL_SASS_METRICS_METRICS];
} entry_t;

/* CTX_READING: finish is reading it with the engine's lock released (while
 * the context's work finishes); a destroying thread waits for that. */
enum ctx_state { CTX_FREE = 0, CTX_ON, CTX_FAILED, CTX_READING, CTX_READ };

typedef struct sass_metrics_ctx {
    CUcontext ctx;
    enum ctx_state state;
    uint32_t id, device;
    int late, announced;
    char error[240];
    int64_t started_ns, enable_ns;
    entry_t *entries; /* read, not yet written */
    size_t entry_count;
    int64_t read_ns; /* when it was read (CLOCK_MONOTONIC) */
} sass_metrics_ctx_t;

typedef struct sass_metrics_device {
    int state; /* 0 not tried, 1 configured, -1 failed */
    char chip[64];
    char error[240];
    uint64_t metric_id[GPUFL_SASS_METRICS_METRICS];
} sass_metrics_device_t;

typedef struct pending_cubin {
    void *image;
    size_t size;
} pending_cubin_t;

struct gpufl__sass_metrics {
    gpufl__cupti_t *cupti;
    gpufl__cuda_t *cuda;
    gpufl__collector_t *collector;
    sass_metrics_fn_t fn;
    pthread_mutex_t lock;
    sass_metrics_ctx_t ctx[GPUFL_SASS_METRICS_CONTEXTS_MAX];
    int ctx_count;
    sass_metrics_device_t devices[GPUFL_SASS_METRICS_DEVICES_MAX];
    int profiler_ready;
    gpufl__batch_t rows;
    gpufl__launch_hooks_t hooks;
    gpufl__sass_log_t *sass;
    char sass_why[200];
    pthread_mutex_t cubin_lock; /* the pending list only; never held across a call out */
    pending_cubin_t pending[PENDING_CUBINS];
    size_t pending_count, pending_bytes;
    pthread_cond_t read_done; /* a CTX_READING slot became CTX_READ */
    /* Contexts destroyed while their thread could not take the lock: their
     * slots are retired at the next locked pass, never read. */
    _Atomic(void *) dead[GPUFL_SASS_METRICS_CONTEXTS_MAX];
    _Atomic int dead_count;
    int dead_settled;
    uint64_t cubins_unfiled; /* images not kept: the pending list was full, or no memory */
    uint64_t contexts, reads, records, rows_written, functions, dropped, lost;
    uint64_t configs_reused; /* devices configured by an earlier session (kept_devices) */
    gpufl__engine_errors_t errors;
    int64_t read_ns_total;
    int warned_table, warned_failure;
    int stopped; /* gpufl__sass_metrics_stop ran */
    _Atomic int finished;
};

#define NCOLS(a) ((int)(sizeof a / sizeof a[0]))

/* ---------------------------------------------------------------------- */
/* CUPTI calls                                                              */
/* ---------------------------------------------------------------------- */

/* Lock held. A failed call, counted and kept for the collector's event. */
static void note_error(gpufl__sass_metrics_t *s, const char *message) {
    gpufl__engine_note_error(&s->errors, message);
}

static void explain(const gpufl__sass_metrics_t *s, CUptiResult r, const char *what, char *out,
                    size_t size) {
    gpufl__engine_explain(s->fn.result_string, r, what, out, size);
}

/* The profiler's libraries and driver hooks, once, before the first
 * configuration (lock held, or from create). Returns 0, or the failed
 * result with why filled. */
static CUptiResult profiler_ready(gpufl__sass_metrics_t *s, char *why, size_t why_size) {
    if (s->profiler_ready) return CUPTI_SUCCESS;
    CUptiResult r =
        gpufl__engine_profiler_init(s->fn.profiler_init, s->fn.result_string, why, why_size);
    s->profiler_ready = r == CUPTI_SUCCESS;
    return r;
}

#define SYM(field, name)                                                                           \
    { &s->fn.field, name }

int gpufl__sass_metrics_create(gpufl__sass_metrics_t **out, gpufl__cupti_t *cupti,
                               gpufl__cuda_t *cuda, gpufl__collector_t *collector, int disassemble,
                               char *why, size_t why_size) {
    *out = NULL;
    gpufl__sass_metrics_t *s = calloc(1, sizeof *s);
    if (s == NULL || pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        snprintf(why, why_size, "out of memory");
        return GPUFL_ENOMEM;
    }
    pthread_mutex_init(&s->cubin_lock, NULL);
    pthread_cond_init(&s->read_done, NULL);
    s->cupti = cupti;
    s->cuda = cuda;
    s->collector = collector;
    const gpufl__engine_sym_t syms[] = {SYM(profiler_init, "cuptiProfilerInitialize"),
                                        SYM(profiler_deinit, "cuptiProfilerDeInitialize"),
                                        SYM(chip_name, "cuptiDeviceGetChipName"),
                                        SYM(properties, "cuptiSassMetricsGetProperties"),
                                        SYM(set_config, "cuptiSassMetricsSetConfig"),
                                        SYM(enable, "cuptiSassMetricsEnable"),
                                        SYM(disable, "cuptiSassMetricsDisable"),
                                        SYM(data_properties, "cuptiSassMetricsGetDataProperties"),
                                        SYM(flush_data, "cuptiSassMetricsFlushData"),
                                        SYM(context_id, "cuptiGetContextId"),
                                        SYM(device_id, "cuptiGetDeviceId"),
                                        SYM(cubin_crc, "cuptiGetCubinCrc"),
                                        SYM(result_string, "cuptiGetResultString")};
    if (gpufl__engine_resolve(cupti, syms, sizeof syms / sizeof syms[0],
                              "SASS metrics need CUPTI 12.5 or newer", why, why_size)) {
        gpufl__sass_metrics_destroy(s);
        return GPUFL_ENOTSUP;
    }
    /* Its records' function names may pass the name cache whose copy of a
     * missing one crashed PC sampling (engine.h): the same guard. */
    char guard_why[200];
    if (gpufl__engine_guard_names((const void *)s->fn.flush_data, guard_why, sizeof guard_why) !=
        0) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "cannot guard CUPTI's copy of a missing function name (%s): such a record "
                 "would crash the process",
                 guard_why);
        note_error(s, msg);
    }
    /* Started now when it can be; a refusal stops the engine here, so the
     * session says why at init. Before CUDA is initialised it fails
     * otherwise (CUPTI_ERROR_UNKNOWN, measured with gpufl_init first): the
     * first context starts it then. */
    CUptiResult r = profiler_ready(s, why, why_size);
    if (r != CUPTI_SUCCESS && gpufl__engine_refusal(r)) {
        gpufl__sass_metrics_destroy(s);
        return GPUFL_ENOTSUP;
    }
    why[0] = '\0';
    if (gpufl__batch_init_table(&s->rows, &gpufl__wire_sass_metric)) {
        snprintf(why, why_size, "%s", gpufl_last_error());
        gpufl__sass_metrics_destroy(s);
        return GPUFL_ENOMEM;
    }
    if (!disassemble)
        snprintf(s->sass_why, sizeof s->sass_why, "off");
    else if (gpufl__sass_log_create(&s->sass, collector, GPUFL_SASS_METRICS_CUBIN_BYTES,
                                    s->sass_why, sizeof s->sass_why) != 0)
        s->sass = NULL;
    *out = s;
    return 0;
}

/* Each device's configuration, kept for the life of the process: CUPTI
 * refuses a second SetConfig in a process (OUT_OF_MEMORY after UnsetConfig,
 * measured on an H100), so none is unset, and a later session whose
 * SetConfig CUPTI refuses as already done (INVALID_OPERATION, as its header
 * says of a second SetConfig without UnsetConfig) goes on with the kept
 * one. */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static sass_metrics_device_t kept_devices[GPUFL_SASS_METRICS_DEVICES_MAX];

/* Sets device's configuration in CUPTI, filling d; CUPTI_SUCCESS, or the
 * failed call's result with d->error. */
static CUptiResult set_device_config(gpufl__sass_metrics_t *s, uint32_t device,
                                     sass_metrics_device_t *d) {
    CUpti_Device_GetChipName_Params chip = {.structSize =
                                                CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = device;
    CUptiResult r = s->fn.chip_name(&chip);
    if (r != CUPTI_SUCCESS || chip.pChipName == NULL) {
        explain(s, r, "cuptiDeviceGetChipName", d->error, sizeof d->error);
        return r != CUPTI_SUCCESS ? r : CUPTI_ERROR_UNKNOWN;
    }
    snprintf(d->chip, sizeof d->chip, "%s", chip.pChipName);
    CUpti_SassMetrics_Config cfg[GPUFL_SASS_METRICS_METRICS];
    for (int i = 0; i < GPUFL_SASS_METRICS_METRICS; i++) {
        CUpti_SassMetrics_GetProperties_Params p = {
            .structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
        p.pChipName = d->chip;
        p.pMetricName = metric_names[i];
        r = s->fn.properties(&p);
        if (r != CUPTI_SUCCESS) {
            char what[160];
            snprintf(what, sizeof what, "cuptiSassMetricsGetProperties(%s on %s)", metric_names[i],
                     d->chip);
            explain(s, r, what, d->error, sizeof d->error);
            return r;
        }
        d->metric_id[i] = p.metric.metricId;
        cfg[i].metricId = p.metric.metricId;
        cfg[i].outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
    }
    CUpti_SassMetricsSetConfig_Params set = {.structSize =
                                                 CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
    set.pConfigs = cfg;
    set.numOfMetricConfig = GPUFL_SASS_METRICS_METRICS;
    set.deviceIndex = device;
    r = s->fn.set_config(&set);
    if (r != CUPTI_SUCCESS) explain(s, r, "cuptiSassMetricsSetConfig", d->error, sizeof d->error);
    return r;
}

/* Lock held. The device's configuration: set now and kept, or the one an
 * earlier session of the process set (kept_devices). */
static sass_metrics_device_t *configure_device(gpufl__sass_metrics_t *s, uint32_t device) {
    if (device >= GPUFL_SASS_METRICS_DEVICES_MAX) return NULL;
    sass_metrics_device_t *d = &s->devices[device];
    if (d->state != 0) return d;
    pthread_mutex_lock(&kept_lock);
    CUptiResult r = set_device_config(s, device, d);
    sass_metrics_device_t *kept = &kept_devices[device];
    if (r == CUPTI_SUCCESS) {
        d->state = 1;
        *kept = *d;
    } else if (r == CUPTI_ERROR_INVALID_OPERATION && kept->state == 1 &&
               strcmp(kept->chip, d->chip) == 0) {
        *d = *kept; /* set by an earlier session: still in force */
        s->configs_reused++;
    } else {
        d->state = -1;
    }
    pthread_mutex_unlock(&kept_lock);
    return d;
}

static int lock_within(gpufl__sass_metrics_t *s, int ms) {
    return gpufl__engine_lock_within(&s->lock, ms, &s->errors);
}

/* Lock held. Retires the slots of contexts destroyed while their thread
 * could not take the lock: their counts are gone with them (an error says
 * so), and a new context at the same address gets a slot of its own. */
static void settle_dead(gpufl__sass_metrics_t *s) {
    int n = atomic_load(&s->dead_count);
    if (n > GPUFL_SASS_METRICS_CONTEXTS_MAX) n = GPUFL_SASS_METRICS_CONTEXTS_MAX;
    for (; s->dead_settled < n; s->dead_settled++) {
        void *ctx = atomic_load(&s->dead[s->dead_settled]);
        for (int i = 0; i < s->ctx_count; i++) {
            sass_metrics_ctx_t *x = &s->ctx[i];
            if (ctx == NULL || x->ctx != (CUcontext)ctx) continue;
            if (x->state == CTX_ON) {
                char msg[240];
                snprintf(msg, sizeof msg,
                         "context %u was destroyed while the engine was busy: its counts are lost",
                         x->id);
                note_error(s, msg);
                x->state = CTX_READ;
                x->read_ns = gpufl__mono_ns();
            }
            x->ctx = NULL;
        }
    }
}

/* Lock held. The context's slot, or a free one; NULL when the table is full. */
static sass_metrics_ctx_t *slot_of(gpufl__sass_metrics_t *s, CUcontext ctx, int *fresh) {
    *fresh = 0;
    for (int i = 0; i < s->ctx_count; i++)
        if (s->ctx[i].ctx == ctx && s->ctx[i].state != CTX_FREE) return &s->ctx[i];
    if (s->ctx_count == GPUFL_SASS_METRICS_CONTEXTS_MAX) return NULL;
    *fresh = 1;
    return &s->ctx[s->ctx_count++];
}

/* Enables counting on ctx unless it is known; with try set (a launch) a
 * busy lock is not waited for (returns 0: the next launch tries again). */
static int start_context(gpufl__sass_metrics_t *s, CUcontext ctx, int late, int try) {
    if (atomic_load(&s->finished)) return 1;
    if (try) {
        if (pthread_mutex_trylock(&s->lock) != 0) return 0;
    } else if (lock_within(s, GPUFL_ENGINE_CALLBACK_LOCK_MS) != 0) {
        return 0;
    }
    if (atomic_load(&s->finished)) {
        pthread_mutex_unlock(&s->lock);
        return 1;
    }
    settle_dead(s);
    char why[240];
    if (!try && profiler_ready(s, why, sizeof why) != CUPTI_SUCCESS) {
        /* Inside the context-created callback the driver may not be ready
         * for it yet: the context's first launch tries again. */
        pthread_mutex_unlock(&s->lock);
        return 1;
    }
    int fresh;
    sass_metrics_ctx_t *x = slot_of(s, ctx, &fresh);
    if (x == NULL || !fresh) {
        int first_overflow = x == NULL && !s->warned_table;
        if (first_overflow) {
            s->warned_table = 1;
            note_error(s, "more than 64 CUDA contexts in the session: the others are not counted");
        }
        pthread_mutex_unlock(&s->lock);
        return 1;
    }
    memset(x, 0, sizeof *x);
    x->ctx = ctx;
    x->late = late;
    x->started_ns = gpufl__mono_ns();
    x->state = CTX_FAILED;
    if (s->fn.context_id(ctx, &x->id) != CUPTI_SUCCESS) x->id = 0;
    if (s->fn.device_id(ctx, &x->device) != CUPTI_SUCCESS) x->device = 0;
    sass_metrics_device_t *d = profiler_ready(s, x->error, sizeof x->error) == CUPTI_SUCCESS
                                   ? configure_device(s, x->device)
                                   : NULL;
    if (x->error[0]) {
        /* the profiler did not start: x->error says why */
    } else if (d == NULL) {
        snprintf(x->error, sizeof x->error, "device %u: past the %d devices the engine keeps",
                 x->device, GPUFL_SASS_METRICS_DEVICES_MAX);
    } else if (d->state != 1) {
        memcpy(x->error, d->error, sizeof x->error);
    } else {
        CUpti_SassMetricsEnable_Params p = {.structSize =
                                                CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
        p.ctx = ctx;
        p.enableLazyPatching = 1; /* eager patching counted nothing (measured) */
        CUptiResult r = s->fn.enable(&p);
        if (r == CUPTI_SUCCESS) {
            x->state = CTX_ON;
            s->contexts++;
            gpufl__engine_mark_patched();
        } else {
            explain(s, r, "cuptiSassMetricsEnable", x->error, sizeof x->error);
        }
    }
    x->enable_ns = gpufl__mono_ns() - x->started_ns;
    int first_failure = x->state == CTX_FAILED && s->contexts == 0 && !s->warned_failure;
    if (x->state == CTX_FAILED) note_error(s, x->error);
    if (first_failure) s->warned_failure = 1;
    char message[240];
    memcpy(message, x->error, sizeof message);
    pthread_mutex_unlock(&s->lock);
    /* The capability record was written at init, before any context: say
     * aloud that the engine counts nothing after all. */
    if (first_failure)
        gpufl__warn("SASS metrics cannot run on this context: %s; its kernels are not counted",
                    message);
    return 1;
}

void gpufl__sass_metrics_context_created(gpufl__sass_metrics_t *s, void *context) {
    if (s && context) start_context(s, (CUcontext)context, 0, 0);
}

int gpufl__sass_metrics_context_seen(gpufl__sass_metrics_t *s, void *context) {
    return s && context ? start_context(s, (CUcontext)context, 1, 1) : 1;
}

/* ---------------------------------------------------------------------- */
/* Reading                                                                  */
/* ---------------------------------------------------------------------- */

static int entry_order(const void *a, const void *b) {
    const entry_t *x = a, *y = b;
    if (x->crc != y->crc) return x->crc < y->crc ? -1 : 1;
    /* By name: CUPTI 13.0 gave every function of a module functionIndex 0
     * (measured), so the index cannot tell them apart. */
    int c = strcmp(x->function, y->function);
    if (c != 0) return c;
    if (x->pc != y->pc) return x->pc < y->pc ? -1 : 1;
    return 0;
}

/* Folds records (one per instruction and metric) into one entry per
 * instruction: sorted, then merged. Returns the entry count. */
static size_t fold(const sass_metrics_device_t *d, const CUpti_SassMetrics_Data *data, size_t n,
                   size_t instances, entry_t *out) {
    for (size_t i = 0; i < n; i++) {
        entry_t *e = &out[i];
        e->crc = data[i].cubinCrc;
        e->function_index = data[i].functionIndex;
        e->pc = data[i].pcOffset;
        e->function = data[i].functionName ? data[i].functionName : "";
        for (int m = 0; m < GPUFL_SASS_METRICS_METRICS; m++) e->value[m] = -1;
        for (size_t k = 0; k < instances; k++) {
            const CUpti_SassMetrics_InstanceValue *v = &data[i].pInstanceValues[k];
            for (int m = 0; m < GPUFL_SASS_METRICS_METRICS; m++) {
                if (v->metricId != d->metric_id[m]) continue;
                int64_t add = v->value > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v->value;
                e->value[m] = (e->value[m] < 0 ? 0 : e->value[m]) + add;
            }
        }
    }
    qsort(out, n, sizeof *out, entry_order);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w > 0 && entry_order(&out[w - 1], &out[i]) == 0) {
            for (int m = 0; m < GPUFL_SASS_METRICS_METRICS; m++)
                if (out[i].value[m] >= 0)
                    out[w - 1].value[m] =
                        (out[w - 1].value[m] < 0 ? 0 : out[w - 1].value[m]) + out[i].value[m];
            continue;
        }
        out[w++] = out[i];
    }
    return w;
}

/* Lock held; the context's work has finished. Reads its counts into
 * x->entries, then disables counting. */
static void read_context(gpufl__sass_metrics_t *s, sass_metrics_ctx_t *x) {
    if (x->state != CTX_ON) return;
    char msg[240];
    const sass_metrics_device_t *d =
        &s->devices[x->device < GPUFL_SASS_METRICS_DEVICES_MAX ? x->device : 0];
    CUpti_SassMetricsGetDataProperties_Params dp = {
        .structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
    dp.ctx = x->ctx;
    CUptiResult r = s->fn.data_properties(&dp);
    size_t n = dp.numOfPatchedInstructionRecords, k = dp.numOfInstances;
    if (r != CUPTI_SUCCESS) {
        explain(s, r, "cuptiSassMetricsGetDataProperties", msg, sizeof msg);
        note_error(s, msg);
        n = 0;
    } else if (n > RECORDS_MAX || k > INSTANCES_MAX) {
        /* Not read: Disable below counts them as dropped. */
        snprintf(msg, sizeof msg,
                 "context %u: %zu records of %zu values, past the %zu records of at most %d "
                 "values one read keeps",
                 x->id, n, k, RECORDS_MAX, INSTANCES_MAX);
        note_error(s, msg);
        n = 0;
    }
    CUpti_SassMetrics_Data *data = NULL;
    CUpti_SassMetrics_InstanceValue *values = NULL;
    entry_t *entries = NULL;
    if (n > 0 && k > 0) {
        data = calloc(n, sizeof *data);
        values = calloc(n * k, sizeof *values);
        entries = calloc(n, sizeof *entries);
        if (data == NULL || values == NULL || entries == NULL) {
            note_error(s, "out of memory for the SASS metric records (Disable drops them)");
            n = 0;
        }
    }
    if (n > 0 && k > 0) {
        for (size_t i = 0; i < n; i++) {
            data[i].structSize = sizeof data[i];
            data[i].pInstanceValues = values + i * k;
        }
        CUpti_SassMetricsFlushData_Params fp = {.structSize =
                                                    CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
        fp.ctx = x->ctx;
        fp.numOfPatchedInstructionRecords = n;
        fp.numOfInstances = k;
        fp.pMetricsData = data;
        r = s->fn.flush_data(&fp);
        if (r != CUPTI_SUCCESS) { /* Disable below counts them as dropped */
            explain(s, r, "cuptiSassMetricsFlushData", msg, sizeof msg);
            note_error(s, msg);
        } else {
            s->records += n;
            for (size_t i = 0; i < n; i++) gpufl__engine_keep_name(data[i].functionName);
            x->entry_count = fold(d, data, n, k, entries);
            x->entries = entries;
            entries = NULL;
        }
    }
    free(data);
    free(values);
    free(entries);
    s->reads++;
    CUpti_SassMetricsDisable_Params off = {.structSize =
                                               CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
    off.ctx = x->ctx;
    r = s->fn.disable(&off);
    if (r != CUPTI_SUCCESS) {
        explain(s, r, "cuptiSassMetricsDisable", msg, sizeof msg);
        note_error(s, msg);
    } else {
        s->dropped += off.numOfDroppedRecords;
    }
    x->read_ns = gpufl__mono_ns();
    x->state = CTX_READ;
}

/* A context about to go: its work is done (the driver waits for it before
 * destroying), so its counts are read here, on the destroying thread. When
 * the lock cannot be had, the context is listed as dead (never read); when
 * finish is reading it, the thread waits for that read, 2 s at most. */
void gpufl__sass_metrics_context_destroying(gpufl__sass_metrics_t *s, void *context) {
    if (s == NULL) return;
    if (lock_within(s, GPUFL_ENGINE_CALLBACK_LOCK_MS) != 0) {
        int slot = atomic_fetch_add(&s->dead_count, 1);
        if (slot < GPUFL_SASS_METRICS_CONTEXTS_MAX) atomic_store(&s->dead[slot], context);
        return;
    }
    settle_dead(s);
    for (int i = 0; i < s->ctx_count; i++) {
        sass_metrics_ctx_t *x = &s->ctx[i];
        if (x->ctx != (CUcontext)context) continue;
        if (x->state == CTX_READING) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += READ_WAIT_MS / 1000;
            while (x->state == CTX_READING &&
                   pthread_cond_timedwait(&s->read_done, &s->lock, &until) == 0) {
            }
        }
        if (x->state == CTX_ON) {
            int64_t t0 = gpufl__mono_ns();
            read_context(s, x);
            s->read_ns_total += gpufl__mono_ns() - t0;
        }
        x->ctx = NULL; /* a new context at that address is a new one; finish skips this one */
    }
    pthread_mutex_unlock(&s->lock);
}

/* The image is copied; its CRC is taken later by the collector, since a
 * CUPTI call in the module-load callback can wait on the patching locks. */
void gpufl__sass_metrics_module_loaded(gpufl__sass_metrics_t *s, const void *cubin, size_t size) {
    if (s == NULL || s->sass == NULL || cubin == NULL || size == 0 || atomic_load(&s->finished))
        return;
    void *copy = malloc(size);
    pthread_mutex_lock(&s->cubin_lock);
    if (copy != NULL && s->pending_count < PENDING_CUBINS &&
        s->pending_bytes + size <= GPUFL_SASS_METRICS_CUBIN_BYTES) {
        memcpy(copy, cubin, size);
        s->pending[s->pending_count++] = (pending_cubin_t){copy, size};
        s->pending_bytes += size;
        copy = NULL;
    } else {
        s->cubins_unfiled++;
    }
    pthread_mutex_unlock(&s->cubin_lock);
    free(copy);
}

static void on_resource(void *user, uint32_t cbid, const void *data) {
    gpufl__sass_metrics_t *s = user;
    const CUpti_ResourceData *r = data;
    if (r == NULL) return;
    switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
        gpufl__sass_metrics_context_created(s, r->context);
        break;
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
        gpufl__sass_metrics_context_destroying(s, r->context);
        break;
    case CUPTI_CBID_RESOURCE_MODULE_LOADED: {
        const CUpti_ModuleResourceData *m = r->resourceDescriptor;
        if (m != NULL) gpufl__sass_metrics_module_loaded(s, m->pCubin, m->cubinSize);
        break;
    }
    default: break;
    }
}

static int on_context_seen(void *user, void *context) {
    return gpufl__sass_metrics_context_seen(user, context);
}

const gpufl__launch_hooks_t *gpufl__sass_metrics_hooks(gpufl__sass_metrics_t *s) {
    s->hooks = (gpufl__launch_hooks_t){on_resource, on_context_seen, s};
    return &s->hooks;
}

gpufl__sass_log_t *gpufl__sass_metrics_sass_log(gpufl__sass_metrics_t *s) {
    return s ? s->sass : NULL;
}

/* ---------------------------------------------------------------------- */
/* Writing (collector thread)                                               */
/* ---------------------------------------------------------------------- */

static uint32_t intern(gpufl__sass_metrics_t *s, const char *str) {
    return gpufl__intern((gpufl__intern_t *)gpufl__collector_dict(s->collector), str, strlen(str));
}

/* The sass_metrics record of a context, once. Lock held. */
static void announce(gpufl__sass_metrics_t *s, sass_metrics_ctx_t *x) {
    if (x->announced || x->state == CTX_FREE) return;
    x->announced = 1;
    const sass_metrics_device_t *d =
        x->device < GPUFL_SASS_METRICS_DEVICES_MAX ? &s->devices[x->device] : NULL;
    gpufl__wire_sass_metrics_t r = {
        .ts_ns = gpufl__collector_session_ns(s->collector, x->started_ns),
        .device = x->device,
        .context = x->id,
        .late = x->late,
        .enable_ms = (double)x->enable_ns / 1e6,
        .chip = d ? d->chip : "",
        .metrics = {metric_names, GPUFL_SASS_METRICS_METRICS},
        .lazy = 1,
    };
    if (x->state == CTX_FAILED) r.error = x->error[0] ? x->error : "counting did not start";
    gpufl__line_t l;
    gpufl__wire_sass_metrics(&l, &r);
    gpufl__collector_record(s->collector, GPUFL_FILE_DEVICE, &l);
}

/* Lock held. A read context's entries as rows, and its functions' SASS
 * asked for. */
static void write_entries(gpufl__sass_metrics_t *s, sass_metrics_ctx_t *x) {
    if (x->entries == NULL) return;
    int64_t ts = gpufl__collector_session_ns(s->collector, x->read_ns);
    uint32_t fid = 0, did = 0, cid = 0;
    const entry_t *prev = NULL;
    for (size_t i = 0; i < x->entry_count; i++) {
        const entry_t *e = &x->entries[i];
        if (prev == NULL || e->crc != prev->crc) {
            char hex[24];
            snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)e->crc);
            cid = intern(s, hex);
        }
        if (prev == NULL || e->crc != prev->crc || strcmp(e->function, prev->function) != 0) {
            fid = intern(s, e->function);
            char *text = gpufl__demangle(e->function);
            did = text ? intern(s, text) : fid;
            free(text);
            s->functions++;
            gpufl__sass_log_want(s->sass, e->crc, e->function, fid);
        }
        prev = e;
        gpufl__cell_t *r = gpufl__collector_row(s->collector, GPUFL_FILE_DEVICE, &s->rows);
        if (r == NULL) { /* the counts CUPTI gave for this instruction */
            s->lost += GPUFL_SASS_METRICS_METRICS;
            continue;
        }
        int64_t v[] = {ts,    x->id,       cid,         fid,         did,
                       e->pc, e->value[0], e->value[1], e->value[2], e->value[3]};
        for (int c = 0; c < NCOLS(v); c++) r[c].i = v[c];
        s->rows_written++;
    }
    free(x->entries);
    x->entries = NULL;
    x->entry_count = 0;
}

/* Module images that came since the last pass, filed under their CRC. */
static void file_cubins(gpufl__sass_metrics_t *s) {
    pending_cubin_t batch[64];
    for (;;) {
        size_t n = 0;
        pthread_mutex_lock(&s->cubin_lock);
        while (n < 64 && s->pending_count > 0) {
            batch[n] = s->pending[--s->pending_count];
            s->pending_bytes -= batch[n++].size;
        }
        pthread_mutex_unlock(&s->cubin_lock);
        if (n == 0) return;
        for (size_t i = 0; i < n; i++) {
            CUpti_GetCubinCrcParams prm = {.size = CUpti_GetCubinCrcParamsSize};
            prm.cubinSize = batch[i].size;
            prm.cubin = batch[i].image;
            if (s->fn.cubin_crc(&prm) == CUPTI_SUCCESS)
                gpufl__sass_log_add_cubin(s->sass, prm.cubinCrc, batch[i].image, batch[i].size);
            else
                s->cubins_unfiled++;
            free(batch[i].image);
        }
    }
}

/* Lock held: failed calls since the last pass, as one event. */
static void report_errors(gpufl__sass_metrics_t *s) {
    gpufl__engine_report_errors(&s->errors, s->collector, "SASS metrics", "sass_metrics_error",
                                "a context callback",
                                "the context is enabled at its first launch; a destroyed "
                                "context's counts are lost");
}

void gpufl__sass_metrics_poll(gpufl__sass_metrics_t *s) {
    if (s == NULL) return;
    file_cubins(s);
    pthread_mutex_lock(&s->lock);
    settle_dead(s);
    for (int i = 0; i < s->ctx_count; i++) {
        announce(s, &s->ctx[i]);
        write_entries(s, &s->ctx[i]);
    }
    report_errors(s);
    pthread_mutex_unlock(&s->lock);
}

void gpufl__sass_metrics_flush(gpufl__sass_metrics_t *s) {
    if (s == NULL) return;
    gpufl__collector_batch(s->collector, GPUFL_FILE_DEVICE, &s->rows);
    gpufl__sass_log_write(s->sass); /* after the rows that define its dict ids */
}

static void write_stats(gpufl__sass_metrics_t *s) {
    gpufl__sass_metrics_stats_t st;
    gpufl__sass_metrics_stats(s, &st);
    const gpufl__engine_count_t v[] = {{"contexts", st.contexts},
                                       {"reads", st.reads},
                                       {"records", st.records},
                                       {"rows", st.rows},
                                       {"functions", st.functions},
                                       {"dropped", st.dropped},
                                       {"lost", st.lost},
                                       {"errors", st.errors},
                                       {"configs_reused", st.configs_reused},
                                       {"cubins", st.cubins},
                                       {"cubins_over_cap", st.cubins_skipped},
                                       {"sass_functions", st.sass_functions},
                                       {"sass_failed", st.sass_failed}};
    const gpufl__wire_measure_t m[] = {{"read_ms", st.read_ms, 1}};
    gpufl__engine_write_totals(s->collector, "sass_metrics_stats", v, sizeof v / sizeof v[0], m, 1);
}

/* Lock held on entry and exit. Waits for the context's work with the lock
 * released (counts are read only when the context is idle: reading while
 * kernels ran lost every later count, docs/design/sass-metrics.md), then
 * reads it, unless its thread destroyed it meanwhile. */
static void finish_context(gpufl__sass_metrics_t *s, sass_metrics_ctx_t *x) {
    int64_t t0 = gpufl__mono_ns();
    CUcontext ctx = x->ctx;
    x->state = CTX_READING;
    pthread_mutex_unlock(&s->lock);
    gpufl__launch_internal(1); /* gpufl's own synchronize: not a sync row */
    int rc = gpufl__cuda_context_synchronize(s->cuda, ctx);
    gpufl__launch_internal(0);
    char why[160];
    snprintf(why, sizeof why, "%s", rc ? gpufl_last_error() : "");
    pthread_mutex_lock(&s->lock);
    if (rc != 0) {
        char msg[240];
        snprintf(msg, sizeof msg, "context %u: read without waiting for its work (%s)", x->id, why);
        note_error(s, msg);
    }
    x->state = CTX_ON;
    read_context(s, x);
    pthread_cond_broadcast(&s->read_done);
    s->read_ns_total += gpufl__mono_ns() - t0;
}

void gpufl__sass_metrics_stop(gpufl__sass_metrics_t *s) {
    if (s == NULL) return;
    file_cubins(s);
    pthread_mutex_lock(&s->lock);
    if (s->stopped) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    s->stopped = 1;
    atomic_store(&s->finished, 1); /* callbacks from now on start and read nothing */
    settle_dead(s);
    for (int i = 0; i < s->ctx_count; i++)
        if (s->ctx[i].state == CTX_ON && s->ctx[i].ctx != NULL) finish_context(s, &s->ctx[i]);
    /* The devices' configurations stay set: see kept_devices. */
    pthread_mutex_unlock(&s->lock);
}

void gpufl__sass_metrics_finish(gpufl__sass_metrics_t *s) {
    if (s == NULL) return;
    gpufl__sass_metrics_stop(s);
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->ctx_count; i++) {
        announce(s, &s->ctx[i]);
        write_entries(s, &s->ctx[i]);
    }
    report_errors(s);
    pthread_mutex_unlock(&s->lock);
    gpufl__sass_metrics_flush(s);
    gpufl__sass_log_finish(s->sass, GPUFL_SASS_LOG_FINISH_NS);
    write_stats(s);
}

const char *gpufl__sass_metrics_sass_why(const gpufl__sass_metrics_t *s) {
    return s == NULL ? "needs engine SassMetrics or Deep" : s->sass ? NULL : s->sass_why;
}

int gpufl__sass_metrics_running(gpufl__sass_metrics_t *s) {
    if (s == NULL) return 0;
    pthread_mutex_lock(&s->lock);
    int n = 0;
    for (int i = 0; i < s->ctx_count; i++) n += s->ctx[i].state == CTX_ON;
    pthread_mutex_unlock(&s->lock);
    return n;
}

uint32_t gpufl__sass_metrics_context_id(gpufl__sass_metrics_t *s, void *context) {
    if (s == NULL || context == NULL) return 0;
    uint32_t id = 0;
    pthread_mutex_lock(&s->lock);
    for (int i = s->ctx_count - 1; i >= 0 && id == 0; i--)
        if (s->ctx[i].ctx == (CUcontext)context) id = s->ctx[i].id;
    pthread_mutex_unlock(&s->lock);
    if (id == 0 && s->fn.context_id((CUcontext)context, &id) != CUPTI_SUCCESS) id = 0;
    return id;
}

void gpufl__sass_metrics_stats(gpufl__sass_metrics_t *s, gpufl__sass_metrics_stats_t *out) {
    memset(out, 0, sizeof *out);
    if (s == NULL) return;
    pthread_mutex_lock(&s->lock);
    out->contexts = s->contexts;
    out->reads = s->reads;
    out->records = s->records;
    out->rows = s->rows_written;
    out->functions = s->functions;
    out->dropped = s->dropped;
    out->lost = s->lost;
    out->configs_reused = s->configs_reused;
    out->errors = s->errors.count;
    out->read_ms = (double)s->read_ns_total / 1e6;
    pthread_mutex_unlock(&s->lock);
    gpufl__sass_log_stats_t ss;
    gpufl__sass_log_stats(&ss, s->sass);
    out->cubins = ss.cubins;
    out->cubins_skipped = ss.cubins_over_cap + s->cubins_unfiled;
    out->sass_functions = ss.records;
    out->sass_failed = ss.errors;
}

void gpufl__sass_metrics_destroy(gpufl__sass_metrics_t *s) {
    if (s == NULL) return;
    for (int i = 0; i < s->ctx_count; i++) {
        if (s->ctx[i].state == CTX_ON) {
            CUpti_SassMetricsDisable_Params p = {.structSize =
                                                     CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
            p.ctx = s->ctx[i].ctx;
            s->fn.disable(&p);
        }
        free(s->ctx[i].entries);
    }
    if (s->profiler_ready) {
        CUpti_Profiler_DeInitialize_Params p = {.structSize =
                                                    CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
        s->fn.profiler_deinit(&p);
    }
    for (size_t i = 0; i < s->pending_count; i++) free(s->pending[i].image);
    gpufl__sass_log_destroy(s->sass);
    gpufl__batch_fini(&s->rows);
    pthread_mutex_destroy(&s->cubin_lock);
    pthread_cond_destroy(&s->read_done);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
