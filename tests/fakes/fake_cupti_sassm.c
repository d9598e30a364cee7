// SPDX-License-Identifier: Apache-2.0
/*
 * fake_cupti_sassm.c - the SASS Metrics API of the fake libcupti (built into
 * cupti/libcupti.so only, like the PC Sampling API): the profiler's
 * initialisation, chip names, metric properties, one configuration per
 * device, per-context enable and disable, and counts a test queues, handed
 * out by FlushData as CUPTI hands them: one record per (instruction,
 * metric), each with one GPU-level instance value.
 *
 * Behaviour mirrors what was measured on an H100 (docs/design/sass-metrics.md):
 * a second SetConfig after UnsetConfig fails with CUPTI_ERROR_OUT_OF_MEMORY,
 * FlushData hands over and clears the counts, Disable drops (and reports)
 * what was not flushed. Each record's function name is a new allocation
 * that the client frees, as CUPTI's own sample does.
 *
 * Tests script it with fake_cupti_sassm_add (counts of one instruction),
 * fake_cupti_sassm_error (make one call fail, once or always), fake_cupti_sassm_state and
 * fake_cupti_sassm_reset.
 */
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT    __attribute__((visibility("default")))
#define CTX_MAX   8
#define PCS_MAX   4096
#define METRICS   4
#define DEVICES   8
#define NAMES_MAX 64

static const char *const metric_names[METRICS] = {
    "smsp__sass_inst_executed", "smsp__sass_thread_inst_executed", "smsp__sass_sectors_mem_global",
    "smsp__sass_sectors_mem_global_ideal"};
#define METRIC_ID(i) (0x5a550000u + (uint64_t)(i)*7919u)

typedef struct counted {
    uint32_t crc, function_index, pc;
    const char *name;
    uint64_t value[METRICS];
} counted_t;

typedef struct fake_ctx {
    CUcontext ctx;
    int enabled, enables, disables, lazy, flushes;
    counted_t pcs[PCS_MAX];
    size_t count;
} fake_ctx_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fake_ctx_t contexts[CTX_MAX];
static int configured[DEVICES], was_unset[DEVICES], initialized;
static char *names[NAMES_MAX];
static size_t name_count;
static struct {
    char call[64];
    CUptiResult result;
    int times; /* calls left to fail; <= 0: every call */
} failing;

static pthread_mutex_t failing_lock = PTHREAD_MUTEX_INITIALIZER;

static CUptiResult fails(const char *call) {
    pthread_mutex_lock(&failing_lock);
    CUptiResult r = CUPTI_SUCCESS;
    if (strcmp(failing.call, call) == 0) {
        r = failing.result;
        if (failing.times > 0 && --failing.times == 0) failing.call[0] = '\0';
    }
    pthread_mutex_unlock(&failing_lock);
    return r;
}

static fake_ctx_t *find(CUcontext ctx, int create) {
    for (int i = 0; i < CTX_MAX; i++)
        if (contexts[i].ctx == ctx && ctx != NULL) return &contexts[i];
    if (!create) return NULL;
    for (int i = 0; i < CTX_MAX; i++)
        if (contexts[i].ctx == NULL) {
            memset(&contexts[i], 0, sizeof contexts[i]);
            contexts[i].ctx = ctx;
            return &contexts[i];
        }
    return NULL;
}

static const char *name_of(const char *name) {
    for (size_t i = 0; i < name_count; i++)
        if (strcmp(names[i], name) == 0) return names[i];
    if (name_count == NAMES_MAX) return NULL;
    return names[name_count++] = strdup(name);
}

/* One record per instruction and metric. */
static size_t records_of(const fake_ctx_t *c) { return c->count * METRICS; }

EXPORT CUptiResult cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *p) {
    CUptiResult r = fails("cuptiProfilerInitialize");
    if (r == CUPTI_SUCCESS) initialized = 1;
    (void)p;
    return r;
}

EXPORT CUptiResult cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params *p) {
    (void)p;
    initialized = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *p) {
    CUptiResult r = fails("cuptiDeviceGetChipName");
    if (r != CUPTI_SUCCESS) return r;
    if (p == NULL || p->deviceIndex >= DEVICES) return CUPTI_ERROR_INVALID_DEVICE;
    p->pChipName = "GH100";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSassMetricsGetProperties(CUpti_SassMetrics_GetProperties_Params *p) {
    CUptiResult r = fails("cuptiSassMetricsGetProperties");
    if (r != CUPTI_SUCCESS) return r;
    if (p == NULL || p->pChipName == NULL || p->pMetricName == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (int i = 0; i < METRICS; i++)
        if (strcmp(p->pMetricName, metric_names[i]) == 0) {
            p->metric.metricId = METRIC_ID(i);
            p->metric.pMetricName = metric_names[i];
            p->metric.pMetricDescription = "";
            return CUPTI_SUCCESS;
        }
    return CUPTI_ERROR_INVALID_METRIC_NAME;
}

EXPORT CUptiResult cuptiSassMetricsSetConfig(CUpti_SassMetricsSetConfig_Params *p) {
    CUptiResult r = fails("cuptiSassMetricsSetConfig");
    if (r != CUPTI_SUCCESS) return r;
    if (p == NULL || p->deviceIndex >= DEVICES || !initialized)
        return CUPTI_ERROR_INVALID_OPERATION;
    if (configured[p->deviceIndex]) return CUPTI_ERROR_INVALID_OPERATION;
    if (was_unset[p->deviceIndex]) return CUPTI_ERROR_OUT_OF_MEMORY; /* as measured */
    configured[p->deviceIndex] = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSassMetricsUnsetConfig(CUpti_SassMetricsUnsetConfig_Params *p) {
    if (p == NULL || p->deviceIndex >= DEVICES || !configured[p->deviceIndex])
        return CUPTI_ERROR_INVALID_OPERATION;
    configured[p->deviceIndex] = 0;
    was_unset[p->deviceIndex] = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSassMetricsEnable(CUpti_SassMetricsEnable_Params *p) {
    CUptiResult r = fails("cuptiSassMetricsEnable");
    if (r != CUPTI_SUCCESS) return r;
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = p ? find(p->ctx, 1) : NULL;
    if (c == NULL || c->enabled) r = CUPTI_ERROR_INVALID_OPERATION;
    if (r == CUPTI_SUCCESS) {
        c->enabled = 1;
        c->enables++;
        c->lazy = p->enableLazyPatching;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiSassMetricsDisable(CUpti_SassMetricsDisable_Params *p) {
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = p ? find(p->ctx, 0) : NULL;
    CUptiResult r = c && c->enabled ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_OPERATION;
    if (r == CUPTI_SUCCESS) {
        p->numOfDroppedRecords = records_of(c);
        c->count = 0;
        c->enabled = 0;
        c->disables++;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiSassMetricsGetDataProperties(CUpti_SassMetricsGetDataProperties_Params *p) {
    CUptiResult r = fails("cuptiSassMetricsGetDataProperties");
    if (r != CUPTI_SUCCESS) return r;
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = p ? find(p->ctx, 0) : NULL;
    if (c == NULL || !c->enabled) {
        r = CUPTI_ERROR_INVALID_OPERATION;
    } else {
        p->numOfPatchedInstructionRecords = records_of(c);
        p->numOfInstances = c->count ? 1 : 0;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiSassMetricsFlushData(CUpti_SassMetricsFlushData_Params *p) {
    CUptiResult r = fails("cuptiSassMetricsFlushData");
    if (r != CUPTI_SUCCESS) return r;
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = p ? find(p->ctx, 0) : NULL;
    if (c == NULL || !c->enabled || p->pMetricsData == NULL ||
        p->numOfPatchedInstructionRecords < records_of(c) || p->numOfInstances < 1) {
        r = CUPTI_ERROR_INVALID_PARAMETER;
    } else {
        /* Metric-major, as nothing promises an order: records of one
         * instruction are not adjacent. */
        size_t k = 0;
        for (int m = 0; m < METRICS; m++)
            for (size_t i = 0; i < c->count; i++, k++) {
                CUpti_SassMetrics_Data *d = &p->pMetricsData[k];
                d->cubinCrc = c->pcs[i].crc;
                d->functionIndex = c->pcs[i].function_index;
                d->functionName = strdup(c->pcs[i].name);
                d->pcOffset = c->pcs[i].pc;
                d->pInstanceValues[0].metricId = METRIC_ID(m);
                d->pInstanceValues[0].value = c->pcs[i].value[m];
            }
        c->count = 0;
        c->flushes++;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---------------------------------------------------------------------- */
/* For the tests                                                            */
/* ---------------------------------------------------------------------- */

EXPORT int fake_cupti_sassm_add(CUcontext ctx, uint32_t crc, uint32_t function_index,
                                const char *function, uint32_t pc, uint64_t inst,
                                uint64_t thread_inst, uint64_t sectors, uint64_t ideal);
EXPORT void fake_cupti_sassm_error(const char *call, CUptiResult result, int times);
EXPORT int fake_cupti_sassm_state(CUcontext ctx, int *enabled, int *lazy, int *flushes,
                                  int *disables);
EXPORT void fake_cupti_sassm_reset(void);

/* Counts of one instruction, added to what it already has. Returns 0, or
 * -1 when the context is not enabled or the table is full. */
int fake_cupti_sassm_add(CUcontext ctx, uint32_t crc, uint32_t function_index, const char *function,
                         uint32_t pc, uint64_t inst, uint64_t thread_inst, uint64_t sectors,
                         uint64_t ideal) {
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = find(ctx, 0);
    const char *name = name_of(function);
    int rc = -1;
    if (c && c->enabled && name) {
        counted_t *e = NULL;
        for (size_t i = 0; i < c->count && e == NULL; i++)
            if (c->pcs[i].crc == crc && c->pcs[i].function_index == function_index &&
                c->pcs[i].name == name && c->pcs[i].pc == pc)
                e = &c->pcs[i];
        if (e == NULL && c->count < PCS_MAX) {
            e = &c->pcs[c->count++];
            *e = (counted_t){crc, function_index, pc, name, {0}};
        }
        if (e != NULL) {
            uint64_t v[METRICS] = {inst, thread_inst, sectors, ideal};
            for (int m = 0; m < METRICS; m++) e->value[m] += v[m];
            rc = 0;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* The named call fails with result, the next `times` calls (every call
 * when times <= 0); "" clears. */
void fake_cupti_sassm_error(const char *call, CUptiResult result, int times) {
    pthread_mutex_lock(&failing_lock);
    snprintf(failing.call, sizeof failing.call, "%s", call ? call : "");
    failing.result = result;
    failing.times = times;
    pthread_mutex_unlock(&failing_lock);
}

int fake_cupti_sassm_state(CUcontext ctx, int *enabled, int *lazy, int *flushes, int *disables) {
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = find(ctx, 0);
    if (c) {
        *enabled = c->enabled;
        *lazy = c->lazy;
        *flushes = c->flushes;
        *disables = c->disables;
    }
    pthread_mutex_unlock(&lock);
    return c ? 0 : -1;
}

void fake_cupti_sassm_reset(void) {
    pthread_mutex_lock(&lock);
    memset(contexts, 0, sizeof contexts);
    memset(configured, 0, sizeof configured);
    memset(was_unset, 0, sizeof was_unset);
    for (size_t i = 0; i < name_count; i++) free(names[i]);
    name_count = 0;
    initialized = 0;
    pthread_mutex_unlock(&lock);
    fake_cupti_sassm_error("", CUPTI_SUCCESS, 0);
}
