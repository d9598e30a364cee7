// SPDX-License-Identifier: Apache-2.0
/*
 * fake_cupti_range.c - the Range Profiler API of the fake libcupti (built
 * into cupti/libcupti.so only, like the PC Sampling and SASS Metrics APIs):
 * device support, counter availability, the profiler host object (metric
 * names into a configuration image, its passes, evaluation) and the range
 * profiler object of a context (Enable, SetConfig, Start, Push/Pop, Stop,
 * Decode, the counter data image and its ranges).
 *
 * Behaviour mirrors what was measured on an H100
 * (docs/design/range-profiler.md): sm__throughput needs 8 passes,
 * lts__t_sector_hit_rate and two of SM throughput's parts 2 alone; the L2
 * lookup hit and miss sums and the L2 sector count need a pass each, and so does every pair of SM
 * pipe activities (GH100 fits two); everything else fits in one; with one nesting
 * level an inner push is accepted and not recorded (the outer range counts
 * the inner work); two ranges of one name become one; ranges past
 * maxRangesPerPass are dropped and counted by Decode. A range's values come
 * from the "work" a test puts into it: every `.sum` metric is 1000 x work,
 * every other metric 10 x work (capped at 100).
 *
 * Tests script it with fake_cupti_range_work (work into the open range of a
 * context), fake_cupti_range_error (make one call fail, once or always),
 * fake_cupti_range_support (the device's support level), fake_cupti_range_nan
 * (a metric that evaluates to NaN), fake_cupti_range_state and
 * fake_cupti_range_start_delay and fake_cupti_range_reset.
 */
#include "nvidia/cupti_host.h"

#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT     __attribute__((visibility("default")))
#define CTX_MAX    8
#define RANGES_MAX 512
#define NAME_BYTES 32
#define MAGIC      0x52504344u /* "RPCD" */

typedef struct fake_range {
    char name[NAME_BYTES];
    double work;
} fake_range_t;

/* The counter data image as the fake lays it out in the caller's buffer. */
typedef struct image {
    uint32_t magic, count;
    size_t capacity;
    char layout[4096];  /* the metrics it holds: the object's last size query's */
    char counted[4096]; /* what the hardware counted: the object's first configuration */
    fake_range_t range[];
} image_t;

struct CUpti_RangeProfiler_Object {
    CUcontext ctx;
    int enabled, collecting, depth, levels, max_depth;
    size_t max_ranges, dropped;
    int pushes, pops, decodes, set_configs;
    char layout[4096];     /* the metrics of the last GetCounterDataSize, newline-separated */
    char programmed[4096]; /* the first configuration since Enable: what is counted */
    size_t passes;
    image_t *image;
    fake_range_t ranges[RANGES_MAX];
    size_t count;
    int current; /* index of the open level-1 range, -1 none */
};

struct gpufl__host_object {
    char names[4096]; /* newline-separated */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUpti_RangeProfiler_Object objects[CTX_MAX];
static CUpti_Profiler_Support_Level support = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
static char nan_metric[128];
static int start_delay_us; /* each Start takes this long (programming the counters) */
static struct {
    char call[64];
    CUptiResult result;
    int times;
} failing;

static CUptiResult fails(const char *call) {
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_SUCCESS;
    if (strcmp(failing.call, call) == 0) {
        r = failing.result;
        if (failing.times > 0 && --failing.times == 0) failing.call[0] = '\0';
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static size_t passes_of(const char *name) {
    if (strncmp(name, "sm__throughput.", 15) == 0) return 8;
    if (strncmp(name, "lts__t_sector_hit_rate.", 23) == 0) return 2;
    if (strncmp(name, "sm__instruction_throughput_internal_activity.", 45) == 0) return 2;
    if (strncmp(name, "sm__mio_inst_issued.", 20) == 0) return 2;
    return 1;
}

/* The passes a set of counters that share hardware adds. */
static size_t conflicts(int lookup_hit, int lookup_miss, int sectors, int pipes) {
    return (size_t)(lookup_hit + lookup_miss + sectors > 1) +
           (pipes > 2 ? (size_t)(pipes - 1) / 2 : 0);
}

static int known(const char *name) {
    return strncmp(name, "sm__", 4) == 0 || strncmp(name, "l1tex__", 7) == 0 ||
           strncmp(name, "lts__", 5) == 0 || strncmp(name, "dram__", 6) == 0 ||
           strncmp(name, "gpu__", 5) == 0;
}

static double value_of(const char *name, double work) {
    if (nan_metric[0] && strcmp(name, nan_metric) == 0) return NAN;
    size_t n = strlen(name);
    if (n > 4 && strcmp(name + n - 4, ".sum") == 0) return 1000.0 * work;
    return work * 10 > 100 ? 100 : work * 10;
}

/* ---- support and availability ---- */

EXPORT CUptiResult cuptiProfilerDeviceSupported(CUpti_Profiler_DeviceSupported_Params *p) {
    CUptiResult r = fails("cuptiProfilerDeviceSupported");
    if (r != CUPTI_SUCCESS) return r;
    p->isSupported = support;
    p->architecture = p->sli = p->cmp = p->wsl = p->confidentialCompute =
        CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    p->vGpu = support; /* a vGPU without profiling enabled */
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult
cuptiProfilerGetCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params *p) {
    CUptiResult r = fails("cuptiProfilerGetCounterAvailability");
    if (r != CUPTI_SUCCESS) return r;
    if (p->pCounterAvailabilityImage == NULL) {
        p->counterAvailabilityImageSize = 64;
        return CUPTI_SUCCESS;
    }
    memset(p->pCounterAvailabilityImage, 0xa5, p->counterAvailabilityImageSize);
    return CUPTI_SUCCESS;
}

/* ---- the host object (gpufl's declarations: the toolkit's header is C++) ---- */

EXPORT CUptiResult cuptiProfilerHostInitialize(gpufl__host_init_params_t *p);
EXPORT CUptiResult cuptiProfilerHostDeinitialize(gpufl__host_deinit_params_t *p);
EXPORT CUptiResult cuptiProfilerHostConfigAddMetrics(gpufl__host_add_metrics_params_t *p);
EXPORT CUptiResult cuptiProfilerHostGetConfigImageSize(gpufl__host_image_size_params_t *p);
EXPORT CUptiResult cuptiProfilerHostGetConfigImage(gpufl__host_image_params_t *p);
EXPORT CUptiResult cuptiProfilerHostGetNumOfPasses(gpufl__host_passes_params_t *p);
EXPORT CUptiResult cuptiProfilerHostEvaluateToGpuValues(gpufl__host_evaluate_params_t *p);

EXPORT CUptiResult cuptiProfilerHostInitialize(gpufl__host_init_params_t *p) {
    CUptiResult r = fails("cuptiProfilerHostInitialize");
    if (r != CUPTI_SUCCESS) return r;
    if (p->pChipName == NULL || p->pCounterAvailabilityImage == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->pHostObject = calloc(1, sizeof *p->pHostObject);
    return p->pHostObject ? CUPTI_SUCCESS : CUPTI_ERROR_OUT_OF_MEMORY;
}

EXPORT CUptiResult cuptiProfilerHostDeinitialize(gpufl__host_deinit_params_t *p) {
    free(p->pHostObject);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerHostConfigAddMetrics(gpufl__host_add_metrics_params_t *p) {
    for (size_t i = 0; i < p->numMetrics; i++)
        if (!known(p->ppMetricNames[i])) return CUPTI_ERROR_INVALID_METRIC_NAME;
    for (size_t i = 0; i < p->numMetrics; i++) {
        size_t used = strlen(p->pHostObject->names);
        snprintf(p->pHostObject->names + used, sizeof p->pHostObject->names - used, "%s\n",
                 p->ppMetricNames[i]);
    }
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerHostGetConfigImageSize(gpufl__host_image_size_params_t *p) {
    p->configImageSize = strlen(p->pHostObject->names) + 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerHostGetConfigImage(gpufl__host_image_params_t *p) {
    if (p->configImageSize < strlen(p->pHostObject->names) + 1)
        return CUPTI_ERROR_INVALID_PARAMETER;
    memcpy(p->pConfigImage, p->pHostObject->names, strlen(p->pHostObject->names) + 1);
    return CUPTI_SUCCESS;
}

/* The image's passes: one, plus what each multi-pass metric adds. */
static size_t image_passes(const uint8_t *image) {
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", (const char *)image);
    size_t passes = 1;
    int hit = 0, miss = 0, sectors = 0, pipes = 0;
    for (char *save, *name = strtok_r(copy, "\n", &save); name;
         name = strtok_r(NULL, "\n", &save)) {
        passes += passes_of(name) - 1;
        hit |= strncmp(name, "lts__t_sectors_lookup_hit.", 26) == 0;
        miss |= strncmp(name, "lts__t_sectors_lookup_miss.", 27) == 0;
        sectors |= strncmp(name, "lts__t_sectors.", 15) == 0;
        pipes += strncmp(name, "sm__pipe_", 9) == 0 &&
                 strstr(name, "_cycles_active.avg.pct_of_peak_sustained_elapsed");
    }
    return passes + conflicts(hit, miss, sectors, pipes);
}

EXPORT CUptiResult cuptiProfilerHostGetNumOfPasses(gpufl__host_passes_params_t *p) {
    p->numOfPasses = image_passes(p->pConfigImage);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerHostEvaluateToGpuValues(gpufl__host_evaluate_params_t *p) {
    CUptiResult r = fails("cuptiProfilerHostEvaluateToGpuValues");
    if (r != CUPTI_SUCCESS) return r;
    const image_t *im = (const image_t *)p->pCounterDataImage;
    if (im == NULL || im->magic != MAGIC || p->rangeIndex >= im->count)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t m = 0; m < p->numMetrics; m++) {
        char needle[140];
        snprintf(needle, sizeof needle, "%s\n", p->ppMetricNames[m]);
        if (strstr(p->pHostObject->names, needle) == NULL) return CUPTI_ERROR_INVALID_METRIC_NAME;
        /* A metric the image was not laid out for evaluates to NaN, as on an H100. */
        p->pMetricValues[m] =
            strstr(im->layout, needle) == NULL || strstr(im->counted, needle) == NULL
                ? NAN
                : value_of(p->ppMetricNames[m], im->range[p->rangeIndex].work);
    }
    return CUPTI_SUCCESS;
}

/* ---- the range profiler object ---- */

static struct CUpti_RangeProfiler_Object *object_of(CUcontext ctx, int create) {
    for (int i = 0; i < CTX_MAX; i++)
        if (objects[i].ctx == ctx && ctx != NULL) return &objects[i];
    if (!create) return NULL;
    for (int i = 0; i < CTX_MAX; i++)
        if (objects[i].ctx == NULL) {
            memset(&objects[i], 0, sizeof objects[i]);
            objects[i].ctx = ctx;
            objects[i].current = -1;
            return &objects[i];
        }
    return NULL;
}

EXPORT CUptiResult cuptiRangeProfilerEnable(CUpti_RangeProfiler_Enable_Params *p) {
    CUptiResult r = fails("cuptiRangeProfilerEnable");
    if (r != CUPTI_SUCCESS) return r;
    pthread_mutex_lock(&lock);
    struct CUpti_RangeProfiler_Object *o = object_of(p->ctx, 1);
    if (o == NULL || o->enabled) r = CUPTI_ERROR_INVALID_OPERATION;
    if (r == CUPTI_SUCCESS) {
        o->enabled = 1;
        o->programmed[0] = '\0';
    }
    p->pRangeProfilerObject = r == CUPTI_SUCCESS ? o : NULL;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiRangeProfilerDisable(CUpti_RangeProfiler_Disable_Params *p) {
    pthread_mutex_lock(&lock);
    CUptiResult r = p->pRangeProfilerObject && p->pRangeProfilerObject->enabled
                        ? CUPTI_SUCCESS
                        : CUPTI_ERROR_INVALID_OPERATION;
    if (r == CUPTI_SUCCESS) p->pRangeProfilerObject->enabled = 0;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult
cuptiRangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params *p) {
    CUptiResult r = fails("cuptiRangeProfilerGetCounterDataSize");
    if (r != CUPTI_SUCCESS) return r;
    if (p->maxNumRangeTreeNodes < p->maxNumOfRanges || p->numMetrics == 0 ||
        p->pRangeProfilerObject == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    /* As CUPTI: the object keeps these metrics as the layout of the images
     * initialized after this call. */
    char *layout = p->pRangeProfilerObject->layout;
    layout[0] = '\0';
    for (size_t i = 0; i < p->numMetrics; i++) {
        size_t used = strlen(layout);
        snprintf(layout + used, sizeof p->pRangeProfilerObject->layout - used, "%s\n",
                 p->pMetricNames[i]);
    }
    p->counterDataSize = sizeof(image_t) + p->maxNumOfRanges * sizeof(fake_range_t);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiRangeProfilerCounterDataImageInitialize(
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p) {
    if (p->counterDataSize < sizeof(image_t)) return CUPTI_ERROR_INVALID_PARAMETER;
    image_t *im = (image_t *)p->pCounterData;
    if (p->pRangeProfilerObject == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    im->magic = MAGIC;
    im->count = 0;
    memcpy(im->layout, p->pRangeProfilerObject->layout, sizeof im->layout);
    im->capacity = (p->counterDataSize - sizeof(image_t)) / sizeof(fake_range_t);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiRangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params *p) {
    CUptiResult r = fails("cuptiRangeProfilerSetConfig");
    if (r != CUPTI_SUCCESS) return r;
    struct CUpti_RangeProfiler_Object *o = p->pRangeProfilerObject;
    image_t *im = (image_t *)p->pCounterDataImage;
    if (o == NULL || !o->enabled || im == NULL || im->magic != MAGIC ||
        p->range != CUPTI_UserRange || p->replayMode != CUPTI_UserReplay)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    o->image = im;
    o->levels = p->numNestingLevels;
    o->max_ranges = p->maxRangesPerPass < im->capacity ? p->maxRangesPerPass : im->capacity;
    o->passes = image_passes(p->pConfig);
    o->set_configs++;
    /* As on an H100: the counters stay those of the first configuration
     * until the object is disabled. */
    if (o->programmed[0] == '\0')
        snprintf(o->programmed, sizeof o->programmed, "%s", (const char *)p->pConfig);
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiRangeProfilerStart(CUpti_RangeProfiler_Start_Params *p) {
    CUptiResult r = fails("cuptiRangeProfilerStart");
    if (r != CUPTI_SUCCESS) return r;
    if (start_delay_us > 0) usleep((useconds_t)start_delay_us);
    struct CUpti_RangeProfiler_Object *o = p->pRangeProfilerObject;
    pthread_mutex_lock(&lock);
    if (o == NULL || o->image == NULL || o->collecting)
        r = CUPTI_ERROR_INVALID_OPERATION;
    else
        o->collecting = 1;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiRangeProfilerStop(CUpti_RangeProfiler_Stop_Params *p) {
    CUptiResult r = fails("cuptiRangeProfilerStop");
    if (r != CUPTI_SUCCESS) return r;
    struct CUpti_RangeProfiler_Object *o = p->pRangeProfilerObject;
    pthread_mutex_lock(&lock);
    if (o == NULL || !o->collecting) {
        r = CUPTI_ERROR_INVALID_OPERATION;
    } else {
        o->collecting = 0;
        p->passIndex = o->passes > 1 ? 1 : 0;
        p->targetNestingLevel = 1;
        p->isAllPassSubmitted = o->passes == 1;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiRangeProfilerPushRange(CUpti_RangeProfiler_PushRange_Params *p) {
    CUptiResult r = fails("cuptiRangeProfilerPushRange");
    if (r != CUPTI_SUCCESS) return r;
    struct CUpti_RangeProfiler_Object *o = p->pRangeProfilerObject;
    pthread_mutex_lock(&lock);
    if (o == NULL || !o->collecting || p->pRangeName == NULL) {
        r = CUPTI_ERROR_INVALID_OPERATION;
    } else {
        o->pushes++;
        if (++o->depth > o->max_depth) o->max_depth = o->depth;
        if (o->depth == 1) { /* one level recorded; deeper pushes are accepted, not recorded */
            o->current = -1;
            for (size_t i = 0; i < o->count && o->current < 0; i++)
                if (strcmp(o->ranges[i].name, p->pRangeName) == 0) o->current = (int)i;
            if (o->current < 0 && o->count < o->max_ranges) {
                snprintf(o->ranges[o->count].name, NAME_BYTES, "%s", p->pRangeName);
                o->ranges[o->count].work = 0;
                o->current = (int)o->count++;
            } else if (o->current < 0) {
                o->dropped++;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiRangeProfilerPopRange(CUpti_RangeProfiler_PopRange_Params *p) {
    CUptiResult r = fails("cuptiRangeProfilerPopRange");
    if (r != CUPTI_SUCCESS) return r;
    struct CUpti_RangeProfiler_Object *o = p->pRangeProfilerObject;
    pthread_mutex_lock(&lock);
    if (o == NULL || o->depth == 0) {
        r = CUPTI_ERROR_INVALID_OPERATION;
    } else {
        o->pops++;
        if (--o->depth == 0) o->current = -1;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiRangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params *p) {
    CUptiResult r = fails("cuptiRangeProfilerDecodeData");
    if (r != CUPTI_SUCCESS) return r;
    struct CUpti_RangeProfiler_Object *o = p->pRangeProfilerObject;
    pthread_mutex_lock(&lock);
    if (o == NULL || o->collecting || o->image == NULL) {
        r = CUPTI_ERROR_INVALID_OPERATION;
    } else {
        image_t *im = o->image;
        for (size_t i = 0; i < o->count && im->count < im->capacity; i++)
            im->range[im->count++] = o->ranges[i];
        memcpy(im->counted, o->programmed, sizeof im->counted);
        p->numOfRangeDropped = o->dropped;
        o->count = 0;
        o->dropped = 0;
        o->decodes++;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult
cuptiRangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params *p) {
    const image_t *im = (const image_t *)p->pCounterDataImage;
    if (im == NULL || im->magic != MAGIC) return CUPTI_ERROR_INVALID_PARAMETER;
    p->numTotalRanges = im->count;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult
cuptiRangeProfilerCounterDataGetRangeInfo(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params *p) {
    const image_t *im = (const image_t *)p->pCounterDataImage;
    if (im == NULL || im->magic != MAGIC || p->rangeIndex >= im->count)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->rangeName = im->range[p->rangeIndex].name;
    return CUPTI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* For the tests                                                            */
/* ---------------------------------------------------------------------- */

EXPORT int fake_cupti_range_work(CUcontext ctx, double work);
EXPORT void fake_cupti_range_error(const char *call, CUptiResult result, int times);
EXPORT void fake_cupti_range_support(int level);
EXPORT void fake_cupti_range_nan(const char *metric);
EXPORT int fake_cupti_range_state(CUcontext ctx, int *enabled, int *pushes, int *pops,
                                  int *max_depth, int *decodes);
EXPORT void fake_cupti_range_reset(void);
EXPORT void fake_cupti_range_start_delay(int microseconds);

/* Work done on ctx now, counted into its open level-1 range. Returns 0, or
 * -1 when no range is open there. */
int fake_cupti_range_work(CUcontext ctx, double work) {
    pthread_mutex_lock(&lock);
    struct CUpti_RangeProfiler_Object *o = object_of(ctx, 0);
    int rc = -1;
    if (o && o->collecting && o->current >= 0) {
        o->ranges[o->current].work += work;
        rc = 0;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* The named call fails with result, the next `times` calls (every call
 * when times <= 0); "" clears. */
void fake_cupti_range_error(const char *call, CUptiResult result, int times) {
    pthread_mutex_lock(&lock);
    snprintf(failing.call, sizeof failing.call, "%s", call ? call : "");
    failing.result = result;
    failing.times = times;
    pthread_mutex_unlock(&lock);
}

/* What DeviceSupported answers (a CUpti_Profiler_Support_Level). */
void fake_cupti_range_support(int level) { support = (CUpti_Profiler_Support_Level)level; }

void fake_cupti_range_nan(const char *metric) {
    snprintf(nan_metric, sizeof nan_metric, "%s", metric ? metric : "");
}

int fake_cupti_range_state(CUcontext ctx, int *enabled, int *pushes, int *pops, int *max_depth,
                           int *decodes) {
    pthread_mutex_lock(&lock);
    struct CUpti_RangeProfiler_Object *o = object_of(ctx, 0);
    if (o) {
        *enabled = o->enabled;
        *pushes = o->pushes;
        *pops = o->pops;
        *max_depth = o->max_depth;
        *decodes = o->decodes;
    }
    pthread_mutex_unlock(&lock);
    return o ? 0 : -1;
}

/* Every Start from now on sleeps this long (the real one programs the
 * counters: about 0.3 s after an Enable on an H100). */
void fake_cupti_range_start_delay(int microseconds) { start_delay_us = microseconds; }

void fake_cupti_range_reset(void) {
    start_delay_us = 0;
    pthread_mutex_lock(&lock);
    memset(objects, 0, sizeof objects);
    support = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    nan_metric[0] = '\0';
    failing.call[0] = '\0';
    pthread_mutex_unlock(&lock);
}
