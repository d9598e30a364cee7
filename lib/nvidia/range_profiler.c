// SPDX-License-Identifier: Apache-2.0
/*
 * range_profiler.c - the RangeProfiler engine (see range_profiler.h): per
 * device a one-pass metric set and a host object, per context a range
 * profiler object collecting user ranges into a counter data image, the
 * scope hooks that push and pop ranges, and the decode that evaluates each
 * range and queues it for the collector as a range_metrics record.
 *
 * The call order is the probe's (tests/gpu/range_profiler_probe.cu), which
 * gave values on an H100: Enable, counter data image, SetConfig (user
 * range, user replay), Start ... Push/Pop ... Stop, Decode, evaluate per
 * range index. After a complete collection the same object takes a new
 * image initialisation, SetConfig and Start (measured: same values).
 */
#include "nvidia/range_profiler.h"

#include "core/clock.h"
#include "util/error.h"
#include "util/log.h"
#include "core/scope.h"
#include "nvidia/cupti_host.h"
#include "nvidia/engine.h"

#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What gpufl asks for, most wanted first: group 0 keeps each that the set
 * still fits in one pass with; the others go to further groups when they
 * fit in one pass at all (sm__throughput needs 8 passes alone on GH100 and
 * lts__t_sector_hit_rate 2; the lookup hit and miss sums cannot share one,
 * so the miss sum goes to group 1 and the hit rate is derived from both). */
static const char *const wanted[] = {
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed.avg.per_cycle_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "lts__t_sectors_lookup_hit.sum",
    "lts__t_sectors_lookup_miss.sum",
    "lts__t_sectors.sum", /* with the lookup hits: the L2 hit rate as Nsight Compute reads it (checked) */
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
};
#define WANTED ((int)(sizeof wanted / sizeof wanted[0]))

/* The sub-unit throughputs whose largest is sm__throughput: its breakdown
 * as ncu lists it on GH100 (measured: the largest matched sm__throughput on
 * the four reference kernels). Collected in groups of their own when
 * sm__throughput does not fit in group 0; names a chip does not know, and
 * those that do not fit in one pass alone, are left out (and said). */
#define SM_PART(unit) "sm__" unit ".avg.pct_of_peak_sustained_elapsed"
static const char *const sm_parts[] = {
    SM_PART("inst_executed"),
    SM_PART("inst_executed_pipe_adu"),
    SM_PART("inst_executed_pipe_cbu_pred_on_any"),
    SM_PART("inst_executed_pipe_ipa"),
    SM_PART("inst_executed_pipe_lsu"),
    SM_PART("inst_executed_pipe_tex"),
    SM_PART("inst_executed_pipe_uniform"),
    SM_PART("inst_executed_pipe_xu"),
    SM_PART("instruction_throughput_internal_activity"),
    SM_PART("issue_active"),
    SM_PART("memory_throughput_internal_activity"),
    SM_PART("mio2rf_writeback_active"),
    SM_PART("mio_inst_issued"),
    SM_PART("mio_pq_read_cycles_active"),
    SM_PART("mio_pq_write_cycles_active"),
    SM_PART("pipe_alu_cycles_active"),
    SM_PART("pipe_fma_cycles_active"),
    SM_PART("pipe_fmaheavy_cycles_active"),
    SM_PART("pipe_fp64_cycles_active"),
    SM_PART("pipe_shared_cycles_active"),
    SM_PART("pipe_tensor_cycles_active"),
    SM_PART("pipe_tensor_op_dmma_cycles_active"),
    SM_PART("pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active"),
    SM_PART("pipe_tma_cycles_active"),
};
#define SM_PARTS      ((int)(sizeof sm_parts / sizeof sm_parts[0]))
#define SM_THROUGHPUT "sm__throughput.avg.pct_of_peak_sustained_elapsed"
#define GPU_TIME      "gpu__time_duration.sum"

typedef struct rp_fn {
    CUptiResult (*profiler_init)(CUpti_Profiler_Initialize_Params *);
    CUptiResult (*profiler_deinit)(CUpti_Profiler_DeInitialize_Params *);
    CUptiResult (*device_supported)(CUpti_Profiler_DeviceSupported_Params *);
    CUptiResult (*availability)(CUpti_Profiler_GetCounterAvailability_Params *);
    CUptiResult (*chip_name)(CUpti_Device_GetChipName_Params *);
    CUptiResult (*host_init)(gpufl__host_init_params_t *);
    CUptiResult (*host_deinit)(gpufl__host_deinit_params_t *);
    CUptiResult (*add_metrics)(gpufl__host_add_metrics_params_t *);
    CUptiResult (*image_size)(gpufl__host_image_size_params_t *);
    CUptiResult (*image)(gpufl__host_image_params_t *);
    CUptiResult (*passes)(gpufl__host_passes_params_t *);
    CUptiResult (*evaluate)(gpufl__host_evaluate_params_t *);
    CUptiResult (*enable)(CUpti_RangeProfiler_Enable_Params *);
    CUptiResult (*disable)(CUpti_RangeProfiler_Disable_Params *);
    CUptiResult (*start)(CUpti_RangeProfiler_Start_Params *);
    CUptiResult (*stop)(CUpti_RangeProfiler_Stop_Params *);
    CUptiResult (*push)(CUpti_RangeProfiler_PushRange_Params *);
    CUptiResult (*pop)(CUpti_RangeProfiler_PopRange_Params *);
    CUptiResult (*decode)(CUpti_RangeProfiler_DecodeData_Params *);
    CUptiResult (*data_size)(CUpti_RangeProfiler_GetCounterDataSize_Params *);
    CUptiResult (*data_init)(CUpti_RangeProfiler_CounterDataImage_Initialize_Params *);
    CUptiResult (*data_info)(CUpti_RangeProfiler_GetCounterDataInfo_Params *);
    CUptiResult (*range_info)(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params *);
    CUptiResult (*set_config)(CUpti_RangeProfiler_SetConfig_Params *);
    CUptiResult (*context_id)(CUcontext, uint32_t *);
    CUptiResult (*device_id)(CUcontext, uint32_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
} rp_fn_t;

/* A range pushed and not yet evaluated. */
typedef struct rp_range {
    uint64_t scope;
    int32_t tid;
    int64_t begin_ns, end_ns; /* CLOCK_MONOTONIC at push and pop; end 0 while open */
    int settling; /* one of the first GPUFL_RANGE_PROFILER_SETTLE_RANGES after a configuration */
    char path[GPUFL_RANGE_PROFILER_PATH_BYTES];
} rp_range_t;

/* An evaluated range, for the collector. */
typedef struct rp_result {
    rp_range_t range;
    uint32_t context;
    int group;
    int metric_count;
    const char *const *metrics; /* the device's names */
    double value[GPUFL_RANGE_PROFILER_METRICS_MAX];
} rp_result_t;

enum ctx_state { CTX_FREE = 0, CTX_ON, CTX_FAILED, CTX_DONE };

typedef struct rp_ctx {
    CUcontext ctx;
    uint64_t gen; /* tells a slot's uses apart when it is taken again */
    enum ctx_state state;
    uint32_t id, device;
    int announced;
    char error[240];
    int64_t started_ns, enable_ns;
    int at_creation; /* started in the context-created callback (init came before the context) */
    int64_t first_range_ns; /* the first range pushed: the switch budget counts from there */
    CUpti_RangeProfiler_Object *object;
    uint8_t *data[GPUFL_RANGE_PROFILER_GROUPS_MAX]; /* a counter data image per metric group */
    size_t data_size[GPUFL_RANGE_PROFILER_GROUPS_MAX];
    int configured;    /* the group of the object's collections; -1 none yet */
    int ran;           /* collected at all (a failure after that is an event, not the record's) */
    int other;         /* the last group other than 0 collected, 0 none */
    uint64_t switches; /* to another metric group */
    int64_t switch_ns; /* spent on them */
    int64_t last_switch_ns; /* the last switch's cost (before one: the first Start's) */
    int collecting;         /* between Start and Stop */
    uint64_t since_config;  /* ranges pushed since the last configuration (first Start, switch) */
    int open;               /* a range is open (CUPTI keeps one stack per context) */
    rp_range_t *ranges;     /* pushed since the last decode */
    size_t pending;
    int64_t decode_due_ns;
} rp_ctx_t;

/* A set of metrics that fits in one pass: one collection's. */
typedef struct rp_group {
    gpufl__host_object_t *host;
    uint8_t *config;
    size_t config_size;
    const char *metrics[GPUFL_RANGE_PROFILER_METRICS_MAX];
    int metric_count;
} rp_group_t;

typedef struct rp_device {
    int state; /* 0 not tried, 1 configured, -1 failed */
    char chip[64];
    char error[240];
    rp_group_t group[GPUFL_RANGE_PROFILER_GROUPS_MAX];
    int groups;
    const char *sm_of[SM_PARTS]; /* the parts collected, when SM throughput is derived */
    int sm_of_count;
    const char *left_out[WANTED + SM_PARTS];
    char left_why[WANTED + SM_PARTS][96];
    int left_count;
    int64_t plan_ns; /* choosing the groups */
} rp_device_t;

struct gpufl__range_profiler {
    gpufl__cupti_t *cupti;
    gpufl__cuda_t *cuda;
    gpufl__collector_t *collector;
    rp_fn_t fn;
    uint64_t serial; /* tells this engine's thread state from an earlier one's */
    int64_t decode_every_ns;
    int switch_pct; /* GPUFL_RANGE_PROFILER_SWITCH_PCT: see next_group */
    pthread_mutex_t lock;
    rp_ctx_t ctx[GPUFL_RANGE_PROFILER_CONTEXTS_MAX];
    int ctx_count;
    rp_device_t devices[GPUFL_RANGE_PROFILER_DEVICES_MAX];
    int profiler_ready;
    int warned;
    rp_result_t *results;
    size_t result_count, result_cap;
    gpufl__scope_observer_t observer;
    gpufl__launch_hooks_t hooks;
    gpufl__engine_errors_t errors;
    uint64_t contexts, ranges_pushed, ranges_written, decodes, dropped, lost, over_capacity;
    uint64_t settling_written;
    _Atomic uint64_t deferred; /* context-created starts left to the first scope */
    uint64_t slot_gen;
    uint64_t unprofiled, open_at_end;
    _Atomic uint64_t nested, concurrent, no_context;
    int64_t decode_ns_total;
    int64_t stop_ns_total, start_ns_total; /* parts of decode_ns_total: Stop; the next Start */
    _Atomic int finished;
};

/* The scope thread's state: its open scopes' path and the range it has open. */
typedef struct rp_thread {
    uint64_t serial;
    uint32_t depth;
    uint16_t end[GPUFL_SCOPE_STACK_MAX]; /* path length after each level */
    char path[GPUFL_RANGE_PROFILER_PATH_BYTES];
    uint64_t scope; /* the scope whose range is open; 0 none */
    int slot;
    uint64_t gen; /* the slot's, when the range was pushed */
    CUcontext ctx;
} rp_thread_t;

static _Atomic uint64_t serials;
static __thread rp_thread_t tls;

/* ---------------------------------------------------------------------- */
/* CUPTI calls                                                              */
/* ---------------------------------------------------------------------- */

static void note_error(gpufl__range_profiler_t *s, const char *message) {
    gpufl__engine_note_error(&s->errors, message);
}

static void explain(const gpufl__range_profiler_t *s, CUptiResult r, const char *what, char *out,
                    size_t size) {
    gpufl__engine_explain(s->fn.result_string, r, what, out, size);
}

/* Lock held: a failed call, counted; returns r. */
static CUptiResult failed(gpufl__range_profiler_t *s, CUptiResult r, const char *what) {
    if (r != CUPTI_SUCCESS) {
        char msg[240];
        explain(s, r, what, msg, sizeof msg);
        note_error(s, msg);
    }
    return r;
}

static CUptiResult profiler_ready(gpufl__range_profiler_t *s, char *why, size_t why_size) {
    if (s->profiler_ready) return CUPTI_SUCCESS;
    CUptiResult r =
        gpufl__engine_profiler_init(s->fn.profiler_init, s->fn.result_string, why, why_size);
    s->profiler_ready = r == CUPTI_SUCCESS;
    return r;
}

#define SYM(field, name)                                                                           \
    { &s->fn.field, name }

int gpufl__range_profiler_create(gpufl__range_profiler_t **out, gpufl__cupti_t *cupti,
                                 gpufl__cuda_t *cuda, gpufl__collector_t *collector,
                                 int64_t decode_every_ns, char *why, size_t why_size) {
    *out = NULL;
    gpufl__range_profiler_t *s = calloc(1, sizeof *s);
    if (s == NULL || pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        snprintf(why, why_size, "out of memory");
        return GPUFL_ENOMEM;
    }
    s->cupti = cupti;
    s->cuda = cuda;
    s->collector = collector;
    s->decode_every_ns = decode_every_ns > 0 ? decode_every_ns : 1000000000;
    /* A tuning knob (docs/options.md): the share of a context's time that
     * switching metric groups may take, 0 to 100. */
    s->switch_pct =
        (int)gpufl__engine_env_long("GPUFL_RANGE_PROFILER_SWITCH_PCT", 0, 100,
                                    GPUFL_RANGE_PROFILER_SWITCH_PCT, "a whole percentage");
    s->serial = atomic_fetch_add(&serials, 1) + 1;
    const gpufl__engine_sym_t syms[] = {
        SYM(profiler_init, "cuptiProfilerInitialize"),
        SYM(profiler_deinit, "cuptiProfilerDeInitialize"),
        SYM(device_supported, "cuptiProfilerDeviceSupported"),
        SYM(availability, "cuptiProfilerGetCounterAvailability"),
        SYM(chip_name, "cuptiDeviceGetChipName"),
        SYM(host_init, "cuptiProfilerHostInitialize"),
        SYM(host_deinit, "cuptiProfilerHostDeinitialize"),
        SYM(add_metrics, "cuptiProfilerHostConfigAddMetrics"),
        SYM(image_size, "cuptiProfilerHostGetConfigImageSize"),
        SYM(image, "cuptiProfilerHostGetConfigImage"),
        SYM(passes, "cuptiProfilerHostGetNumOfPasses"),
        SYM(evaluate, "cuptiProfilerHostEvaluateToGpuValues"),
        SYM(enable, "cuptiRangeProfilerEnable"),
        SYM(disable, "cuptiRangeProfilerDisable"),
        SYM(start, "cuptiRangeProfilerStart"),
        SYM(stop, "cuptiRangeProfilerStop"),
        SYM(push, "cuptiRangeProfilerPushRange"),
        SYM(pop, "cuptiRangeProfilerPopRange"),
        SYM(decode, "cuptiRangeProfilerDecodeData"),
        SYM(data_size, "cuptiRangeProfilerGetCounterDataSize"),
        SYM(data_init, "cuptiRangeProfilerCounterDataImageInitialize"),
        SYM(data_info, "cuptiRangeProfilerGetCounterDataInfo"),
        SYM(range_info, "cuptiRangeProfilerCounterDataGetRangeInfo"),
        SYM(set_config, "cuptiRangeProfilerSetConfig"),
        SYM(context_id, "cuptiGetContextId"),
        SYM(device_id, "cuptiGetDeviceId"),
        SYM(result_string, "cuptiGetResultString")};
    if (gpufl__engine_resolve(cupti, syms, sizeof syms / sizeof syms[0],
                              "the Range Profiler API needs CUPTI 12.6 or newer", why, why_size)) {
        gpufl__range_profiler_destroy(s);
        return GPUFL_ENOTSUP;
    }
    if (cuda == NULL) {
        snprintf(why, why_size, "no libcuda: a scope's context cannot be known");
        gpufl__range_profiler_destroy(s);
        return GPUFL_ENOTSUP;
    }
    /* As with SASS metrics: a refusal stops the engine at init; other
     * failures (CUDA not initialised yet) are retried at the first scope. */
    CUptiResult r = profiler_ready(s, why, why_size);
    if (r != CUPTI_SUCCESS && gpufl__engine_refusal(r)) {
        gpufl__range_profiler_destroy(s);
        return GPUFL_ENOTSUP;
    }
    why[0] = '\0';
    *out = s;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The metric set of a device                                               */
/* ---------------------------------------------------------------------- */

static void host_free(gpufl__range_profiler_t *s, gpufl__host_object_t *h) {
    if (h == NULL) return;
    gpufl__host_deinit_params_t p = {
        .structSize = GPUFL_HOST_STRUCT_SIZE(gpufl__host_deinit_params_t, pHostObject),
        .pHostObject = h};
    s->fn.host_deinit(&p);
}

/* A host object configured with names; its image in *image (malloc'd) and
 * its passes in *passes. Returns the host object, NULL with *r set. */
static gpufl__host_object_t *host_config(gpufl__range_profiler_t *s, const rp_device_t *d,
                                         const uint8_t *availability, const char **names, size_t n,
                                         uint8_t **image, size_t *image_size, size_t *passes,
                                         CUptiResult *r, const char **what) {
    *image = NULL;
    gpufl__host_init_params_t init = {
        .structSize = GPUFL_HOST_STRUCT_SIZE(gpufl__host_init_params_t, pHostObject),
        .profilerType = GPUFL_HOST_RANGE_PROFILER,
        .pChipName = d->chip,
        .pCounterAvailabilityImage = availability};
    *what = "cuptiProfilerHostInitialize";
    if ((*r = s->fn.host_init(&init)) != CUPTI_SUCCESS) return NULL;
    gpufl__host_object_t *h = init.pHostObject;
    gpufl__host_add_metrics_params_t add = {
        .structSize = GPUFL_HOST_STRUCT_SIZE(gpufl__host_add_metrics_params_t, numMetrics),
        .pHostObject = h,
        .ppMetricNames = names,
        .numMetrics = n};
    gpufl__host_image_size_params_t size = {
        .structSize = GPUFL_HOST_STRUCT_SIZE(gpufl__host_image_size_params_t, configImageSize),
        .pHostObject = h};
    *what = "cuptiProfilerHostConfigAddMetrics";
    if ((*r = s->fn.add_metrics(&add)) != CUPTI_SUCCESS) goto free_image;
    *what = "cuptiProfilerHostGetConfigImageSize";
    if ((*r = s->fn.image_size(&size)) != CUPTI_SUCCESS) goto free_image;
    *image = malloc(size.configImageSize ? size.configImageSize : 1);
    *what = "out of memory";
    if (*image == NULL) {
        *r = CUPTI_ERROR_OUT_OF_MEMORY;
        goto free_image;
    }
    gpufl__host_image_params_t img = {
        .structSize = GPUFL_HOST_STRUCT_SIZE(gpufl__host_image_params_t, pConfigImage),
        .pHostObject = h,
        .configImageSize = size.configImageSize,
        .pConfigImage = *image};
    *what = "cuptiProfilerHostGetConfigImage";
    if ((*r = s->fn.image(&img)) != CUPTI_SUCCESS) goto free_image;
    gpufl__host_passes_params_t np = {
        .structSize = GPUFL_HOST_STRUCT_SIZE(gpufl__host_passes_params_t, numOfPasses),
        .configImageSize = size.configImageSize,
        .pConfigImage = *image};
    *what = "cuptiProfilerHostGetNumOfPasses";
    if ((*r = s->fn.passes(&np)) != CUPTI_SUCCESS) goto free_image;
    *image_size = size.configImageSize;
    *passes = np.numOfPasses;
    return h;
free_image:
    free(*image);
    *image = NULL;
    host_free(s, h);
    return NULL;
}

/* 1 when names[0 .. n) fit in one pass; else 0 with why said. */
static int one_pass(gpufl__range_profiler_t *s, const rp_device_t *d, const uint8_t *availability,
                    const char **names, size_t n, char *why, size_t why_size) {
    uint8_t *image;
    size_t size, passes = 0;
    CUptiResult r;
    const char *what;
    gpufl__host_object_t *h =
        host_config(s, d, availability, names, n, &image, &size, &passes, &r, &what);
    free(image);
    host_free(s, h);
    if (h == NULL && r == CUPTI_ERROR_INVALID_METRIC_NAME)
        snprintf(why, why_size, "not a metric of %s", d->chip);
    else if (h == NULL)
        explain(s, r, what, why, why_size);
    else if (passes > 1)
        snprintf(why, why_size, "needs %zu passes with the metrics before it", passes);
    return h != NULL && passes == 1;
}

static void leave_out(rp_device_t *d, const char *name, const char *why) {
    if (d->left_count == WANTED + SM_PARTS) return;
    snprintf(d->left_why[d->left_count], sizeof d->left_why[0], "%s", why);
    d->left_out[d->left_count++] = name;
}

/* Lock held. The final host object and configuration image of a group. */
static int make_group(gpufl__range_profiler_t *s, rp_device_t *d, const uint8_t *availability,
                      const char **names, size_t n) {
    rp_group_t *g = &d->group[d->groups];
    size_t passes = 0;
    CUptiResult r;
    const char *what;
    g->host =
        host_config(s, d, availability, names, n, &g->config, &g->config_size, &passes, &r, &what);
    if (g->host == NULL) {
        explain(s, r, what, d->error, sizeof d->error);
        return -1;
    }
    for (size_t i = 0; i < n; i++) g->metrics[i] = names[i];
    g->metric_count = (int)n;
    d->groups++;
    return 0;
}

/* Lock held. Groups 1.. for the metrics of extra[0 .. n): each group is
 * GPU time and what else fits with it in one pass, in order; a metric that
 * does not fit even alone is left out, as are those past the last group. */
static void plan_groups(gpufl__range_profiler_t *s, rp_device_t *d, const uint8_t *availability,
                        const char **extra, int n) {
    char why[96];
    while (n > 0 && d->groups < GPUFL_RANGE_PROFILER_GROUPS_MAX) {
        const char *names[GPUFL_RANGE_PROFILER_METRICS_MAX + 1]; /* + 1: the one being tried */
        size_t k = 0;
        int rest = 0;
        names[k++] = GPU_TIME;
        for (int i = 0; i < n; i++) {
            names[k] = extra[i];
            if (k < GPUFL_RANGE_PROFILER_METRICS_MAX &&
                one_pass(s, d, availability, names, k + 1, why, sizeof why))
                k++;
            else if (k == 1) /* not even alone with the GPU time */
                leave_out(d, extra[i], why);
            else
                extra[rest++] = extra[i];
        }
        if (k > 1 && make_group(s, d, availability, names, k) != 0) {
            /* Group 0 still runs: this group's metrics and the rest are left
             * out with the reason. */
            snprintf(why, sizeof why, "%.95s", d->error);
            d->error[0] = '\0';
            for (size_t i = 1; i < k; i++) leave_out(d, names[i], why);
            for (int i = 0; i < rest; i++) leave_out(d, extra[i], why);
            return;
        }
        n = rest;
    }
    snprintf(why, sizeof why, "no room: %d metric groups at most", GPUFL_RANGE_PROFILER_GROUPS_MAX);
    for (int i = 0; i < n; i++) leave_out(d, extra[i], why);
}

static int in_group(const rp_group_t *g, const char *name) {
    for (int i = 0; i < g->metric_count; i++)
        if (strcmp(g->metrics[i], name) == 0) return 1;
    return 0;
}

/* Lock held. Group 0 keeps each wanted metric that the set still fits in
 * one pass with; the wanted metrics it could not keep, and the parts of SM
 * throughput when sm__throughput is not in it, go to further groups. */
static int choose_metrics(gpufl__range_profiler_t *s, rp_device_t *d, const uint8_t *availability) {
    int64_t t0 = gpufl__mono_ns();
    const char *names[GPUFL_RANGE_PROFILER_METRICS_MAX + 1], *extra[WANTED + SM_PARTS];
    char why[96];
    size_t n = 0;
    int n_extra = 0;
    for (int i = 0; i < WANTED; i++) {
        names[n] = wanted[i];
        if (n < GPUFL_RANGE_PROFILER_METRICS_MAX &&
            one_pass(s, d, availability, names, n + 1, why, sizeof why))
            n++;
        else if (strcmp(wanted[i], SM_THROUGHPUT) == 0) /* derived from its parts instead */
            leave_out(d, wanted[i], why);
        else
            extra[n_extra++] = wanted[i];
    }
    if (n == 0) {
        char chip[sizeof d->chip];
        memcpy(chip, d->chip, sizeof chip);
        snprintf(d->error, sizeof d->error, "no wanted metric fits in one pass on %s", chip);
        return -1;
    }
    if (make_group(s, d, availability, names, n) != 0) return -1;
    int derive_sm = !in_group(&d->group[0], SM_THROUGHPUT);
    for (int i = 0; derive_sm && i < SM_PARTS; i++)
        if (!in_group(&d->group[0], sm_parts[i])) extra[n_extra++] = sm_parts[i];
    if (in_group(&d->group[0], GPU_TIME)) /* a group's values are weighed by its GPU time */
        plan_groups(s, d, availability, extra, n_extra);
    else
        for (int i = 0; i < n_extra; i++) leave_out(d, extra[i], "no GPU time to weigh it by");
    for (int i = 0; derive_sm && i < SM_PARTS; i++)
        for (int g = 0; g < d->groups; g++)
            if (in_group(&d->group[g], sm_parts[i])) {
                d->sm_of[d->sm_of_count++] = sm_parts[i];
                break;
            }
    d->plan_ns = gpufl__mono_ns() - t0;
    return 0;
}

/* "architecture unsupported, vGPU disabled" from the support levels. */
static void unsupported_why(const CUpti_Profiler_DeviceSupported_Params *p, char *out,
                            size_t size) {
    const struct {
        const char *name;
        CUpti_Profiler_Support_Level level;
    } v[] = {{"architecture", p->architecture},
             {"SLI", p->sli},
             {"vGPU", p->vGpu},
             {"confidential computing", p->confidentialCompute},
             {"CMP", p->cmp},
             {"WSL", p->wsl}};
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        if (v[i].level == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) continue;
        const char *level = v[i].level == CUPTI_PROFILER_CONFIGURATION_DISABLED      ? "disabled"
                            : v[i].level == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED ? "unsupported"
                                                                                     : "unknown";
        int k = snprintf(out + used, size - used, "%s%s %s", used ? ", " : "", v[i].name, level);
        if (k < 0 || (size_t)k >= size - used) break;
        used += (size_t)k;
    }
}

/* Lock held, the context current on this thread. The device's support,
 * chip and metric set, once. */
static rp_device_t *configure_device(gpufl__range_profiler_t *s, CUcontext ctx, uint32_t device) {
    if (device >= GPUFL_RANGE_PROFILER_DEVICES_MAX) return NULL;
    rp_device_t *d = &s->devices[device];
    if (d->state != 0) return d;
    d->state = -1;
    CUpti_Profiler_DeviceSupported_Params sup = {
        .structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
    sup.cuDevice = (CUdevice)device;
    sup.api = CUPTI_PROFILER_RANGE_PROFILING;
    CUptiResult r = s->fn.device_supported(&sup);
    if (r != CUPTI_SUCCESS) {
        explain(s, r, "cuptiProfilerDeviceSupported", d->error, sizeof d->error);
        return d;
    }
    if (sup.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
        char levels[160];
        unsupported_why(&sup, levels, sizeof levels);
        snprintf(d->error, sizeof d->error, "device %u does not support range profiling (%s)",
                 device, levels[0] ? levels : "no reason given");
        return d;
    }
    CUpti_Device_GetChipName_Params chip = {.structSize =
                                                CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = device;
    r = s->fn.chip_name(&chip);
    if (r != CUPTI_SUCCESS || chip.pChipName == NULL) {
        explain(s, r, "cuptiDeviceGetChipName", d->error, sizeof d->error);
        return d;
    }
    snprintf(d->chip, sizeof d->chip, "%s", chip.pChipName);
    /* Before Enable: it "may fail, if any profiling or sampling session is
     * active" (cupti_profiler_target.h). */
    CUpti_Profiler_GetCounterAvailability_Params av = {
        .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    av.ctx = ctx;
    uint8_t *availability = NULL;
    r = s->fn.availability(&av);
    if (r == CUPTI_SUCCESS && av.counterAvailabilityImageSize > 0 &&
        (availability = malloc(av.counterAvailabilityImageSize)) != NULL) {
        av.pCounterAvailabilityImage = availability;
        r = s->fn.availability(&av);
    }
    if (r != CUPTI_SUCCESS) {
        explain(s, r, "cuptiProfilerGetCounterAvailability", d->error, sizeof d->error);
        free(availability);
        return d;
    }
    int rc = choose_metrics(s, d, availability);
    free(availability);
    if (rc == 0) d->state = 1;
    return d;
}

/* A device's groups freed and its state back to not tried. */
static void forget_device(gpufl__range_profiler_t *s, rp_device_t *d) {
    for (int g = 0; g < d->groups; g++) {
        host_free(s, d->group[g].host);
        free(d->group[g].config);
    }
    memset(d, 0, sizeof *d);
}

/* ---------------------------------------------------------------------- */
/* Collection on a context                                                  */
/* ---------------------------------------------------------------------- */

/* Lock held. The group of the context's next collection: group 0 between
 * any two others, which come in turn (0, 1, 0, 2, ..., 0, n-1, 0, 1, ...).
 * Another group takes the profiler disabled and enabled again, and the
 * next Start then programs the counters: about 0.3 s on an H100 each way.
 * So a context leaves group 0 only while its switches, with the two of
 * this one at the last one's cost, stay within switch_pct of its time
 * (100: whenever a collection ends; 0: never). */
static int next_group(const gpufl__range_profiler_t *s, rp_ctx_t *x, const rp_device_t *d) {
    /* A group stays until a range past the settling ones came in it: its
     * visit gives a settled range, and a Start of the same configuration
     * is no new configuration (measured: no write-back after it). */
    if (x->configured >= 0 && x->since_config <= GPUFL_RANGE_PROFILER_SETTLE_RANGES)
        return x->configured;
    if (d->groups <= 1 || x->configured != 0 || s->switch_pct <= 0) return 0;
    if (s->switch_pct < 100) {
        int64_t elapsed =
            gpufl__mono_ns() - (x->first_range_ns ? x->first_range_ns : x->started_ns);
        int64_t cost = x->switch_ns + 2 * x->last_switch_ns;
        if (cost * 100 > (int64_t)s->switch_pct * elapsed) return 0;
    }
    x->other = x->other % (d->groups - 1) + 1;
    return x->other;
}

static CUptiResult disable(gpufl__range_profiler_t *s, rp_ctx_t *x);

/* Lock held. Lays out the context's image for group g, grown as needed:
 * the range profiler object keeps the metrics of its last size query, and
 * an image initialized after a query for other metrics evaluates to NaN
 * (measured on an H100), so this runs before every initialization. */
static CUptiResult size_image(gpufl__range_profiler_t *s, rp_ctx_t *x, const rp_device_t *d,
                              int g) {
    CUpti_RangeProfiler_GetCounterDataSize_Params sz = {
        .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    sz.pRangeProfilerObject = x->object;
    sz.pMetricNames = (const char **)d->group[g].metrics;
    sz.numMetrics = (size_t)d->group[g].metric_count;
    sz.maxNumOfRanges = GPUFL_RANGE_PROFILER_RANGES_MAX;
    sz.maxNumRangeTreeNodes = GPUFL_RANGE_PROFILER_RANGES_MAX; /* >= maxNumOfRanges */
    CUptiResult r = s->fn.data_size(&sz);
    if (r != CUPTI_SUCCESS) return failed(s, r, "cuptiRangeProfilerGetCounterDataSize");
    if (sz.counterDataSize > x->data_size[g] || x->data[g] == NULL) {
        uint8_t *grown = realloc(x->data[g], sz.counterDataSize ? sz.counterDataSize : 1);
        if (grown == NULL) return failed(s, CUPTI_ERROR_OUT_OF_MEMORY, "the counter data image");
        x->data[g] = grown;
    }
    x->data_size[g] = sz.counterDataSize;
    return CUPTI_SUCCESS;
}

/* Lock held. A fresh image, SetConfig and Start with the next group; 0 or
 * the failed result. */
static CUptiResult begin_collection(gpufl__range_profiler_t *s, rp_ctx_t *x, const rp_device_t *d) {
    int g = next_group(s, x, d);
    int64_t t0 = gpufl__mono_ns();
    int switching = x->configured >= 0 && x->configured != g;
    CUptiResult r;
    if (switching) {
        /* The object keeps counting what its first configuration set up:
         * SetConfig with another group's image gave NaN for every counter
         * the first did not have (measured on an H100). Another group
         * takes the object disabled and enabled again. */
        r = disable(s, x);
        if (r != CUPTI_SUCCESS) return r;
        CUpti_RangeProfiler_Enable_Params en = {.structSize =
                                                    CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
        en.ctx = x->ctx;
        r = s->fn.enable(&en);
        if (r != CUPTI_SUCCESS) return failed(s, r, "cuptiRangeProfilerEnable");
        x->object = en.pRangeProfilerObject;
    }
    r = size_image(s, x, d, g);
    if (r != CUPTI_SUCCESS) return r;
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init = {
        .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    init.pRangeProfilerObject = x->object;
    init.counterDataSize = x->data_size[g];
    init.pCounterData = x->data[g];
    r = s->fn.data_init(&init);
    if (r != CUPTI_SUCCESS) return failed(s, r, "cuptiRangeProfilerCounterDataImageInitialize");
    CUpti_RangeProfiler_SetConfig_Params set = {
        .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    set.pRangeProfilerObject = x->object;
    set.configSize = d->group[g].config_size;
    set.pConfig = d->group[g].config;
    set.counterDataImageSize = x->data_size[g];
    set.pCounterDataImage = x->data[g];
    set.range = CUPTI_UserRange;
    set.replayMode = CUPTI_UserReplay;
    set.maxRangesPerPass = GPUFL_RANGE_PROFILER_RANGES_MAX;
    set.numNestingLevels = 1; /* a second level needs a second pass */
    set.minNestingLevel = 1;
    set.passIndex = 0;
    set.targetNestingLevel = 0; /* as NVIDIA's sample and the probe */
    r = s->fn.set_config(&set);
    if (r != CUPTI_SUCCESS) return failed(s, r, "cuptiRangeProfilerSetConfig");
    CUpti_RangeProfiler_Start_Params st = {.structSize =
                                               CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = x->object;
    r = s->fn.start(&st);
    if (r != CUPTI_SUCCESS) return failed(s, r, "cuptiRangeProfilerStart");
    int first = x->configured < 0;
    x->configured = g;
    x->collecting = 1;
    x->pending = 0;
    if (switching || first) x->since_config = 0;
    if (switching) { /* disable, enable and the Start that programs the counters */
        x->last_switch_ns = gpufl__mono_ns() - t0;
        x->switch_ns += x->last_switch_ns;
        x->switches++;
    } else if (first) {
        x->last_switch_ns = gpufl__mono_ns() - t0; /* the first Start: as dear as a switch */
    }
    x->decode_due_ns = gpufl__mono_ns() + s->decode_every_ns;
    return CUPTI_SUCCESS;
}

/* Lock held, ctx current. Enables the profiler on a new context; the slot
 * says why when it cannot. */
static void enable_context(gpufl__range_profiler_t *s, rp_ctx_t *x) {
    int64_t t0 = gpufl__mono_ns();
    x->started_ns = t0;
    x->state = CTX_FAILED;
    if (s->fn.context_id(x->ctx, &x->id) != CUPTI_SUCCESS) x->id = 0;
    if (profiler_ready(s, x->error, sizeof x->error) != CUPTI_SUCCESS) return;
    CUptiResult r = s->fn.device_id(x->ctx, &x->device);
    if (r != CUPTI_SUCCESS) {
        explain(s, r, "cuptiGetDeviceId", x->error, sizeof x->error);
        return;
    }
    const rp_device_t *d = configure_device(s, x->ctx, x->device);
    if (d == NULL || d->state != 1) {
        snprintf(x->error, sizeof x->error, "%s", d ? d->error : "device ordinal out of range");
        return;
    }
    CUpti_RangeProfiler_Enable_Params en = {.structSize =
                                                CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = x->ctx;
    r = s->fn.enable(&en);
    if (r != CUPTI_SUCCESS) {
        explain(s, r, "cuptiRangeProfilerEnable", x->error, sizeof x->error);
        return;
    }
    x->object = en.pRangeProfilerObject;
    x->configured = -1;
    x->ranges = malloc(GPUFL_RANGE_PROFILER_RANGES_MAX * sizeof *x->ranges);
    if (x->ranges == NULL) {
        snprintf(x->error, sizeof x->error, "out of memory for the ranges");
        goto disable_profiler;
    }
    if (begin_collection(s, x, d) != CUPTI_SUCCESS) {
        snprintf(x->error, sizeof x->error, "%s", s->errors.last);
        goto disable_profiler;
    }
    x->state = CTX_ON;
    x->ran = 1;
    x->enable_ns = gpufl__mono_ns() - t0;
    s->contexts++;
    return;
disable_profiler:;
    CUpti_RangeProfiler_Disable_Params dis = {.structSize =
                                                  CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    dis.pRangeProfilerObject = x->object;
    if (s->fn.disable(&dis) == CUPTI_SUCCESS) x->object = NULL; /* else finish tries again */
}

/* Lock held. A slot for a new context: a free one, or one whose context
 * was destroyed and whose record and ranges are out, else a new one; NULL
 * when the table is full. */
static rp_ctx_t *new_slot(gpufl__range_profiler_t *s, CUcontext ctx) {
    rp_ctx_t *x = NULL;
    for (int i = 0; i < s->ctx_count && x == NULL; i++) {
        rp_ctx_t *o = &s->ctx[i];
        if (o->state == CTX_FREE || (o->ctx == NULL && o->announced && o->state != CTX_ON &&
                                     o->object == NULL && o->pending == 0))
            x = o;
    }
    if (x == NULL && s->ctx_count == GPUFL_RANGE_PROFILER_CONTEXTS_MAX) return NULL;
    if (x == NULL) x = &s->ctx[s->ctx_count++];
    for (int g = 0; g < GPUFL_RANGE_PROFILER_GROUPS_MAX; g++) free(x->data[g]);
    free(x->ranges);
    memset(x, 0, sizeof *x);
    x->ctx = ctx;
    x->gen = ++s->slot_gen;
    return x;
}

/* Lock held. The slot of a context known to the engine, NULL none. */
static rp_ctx_t *find_slot(gpufl__range_profiler_t *s, CUcontext ctx) {
    for (int i = 0; i < s->ctx_count; i++)
        if (s->ctx[i].ctx == ctx && s->ctx[i].state != CTX_FREE) return &s->ctx[i];
    return NULL;
}

/* The context-created callback, on the creating thread inside CUPTI's
 * callback. With init before the context, the profiler starts here, before
 * the context's first kernel, and the first scope does not pay for choosing
 * the metrics and the first Start (1.3-1.9 s on an H100: the creating CUDA
 * call pays it, with the engine's lock held). When it cannot start here
 * (another thread holds the lock, the context cannot be made current, the
 * table is full, or CUPTI refuses inside the callback), the attempt leaves
 * no slot and no error behind (a device whose groups it failed to choose is
 * tried again) and the first scope on the context starts it, as when init
 * comes late; `deferred` counts these. A Disable that fails after a failed
 * start keeps the slot, failed, for finish to disable. */
static void context_created(gpufl__range_profiler_t *s, CUcontext ctx) {
    if (ctx == NULL) return;
    if (pthread_mutex_trylock(&s->lock) != 0) {
        atomic_fetch_add(&s->deferred, 1);
        return;
    }
    int known = find_slot(s, ctx) != NULL;
    rp_ctx_t *x = known || atomic_load(&s->finished) ? NULL : new_slot(s, ctx); /* CTX_FREE */
    if (x != NULL && gpufl__cuda_push_context(s->cuda, ctx) == 0) {
        uint32_t device = 0;
        rp_device_t *d = s->fn.device_id(ctx, &device) == CUPTI_SUCCESS &&
                                 device < GPUFL_RANGE_PROFILER_DEVICES_MAX &&
                                 s->devices[device].state == 0
                             ? &s->devices[device]
                             : NULL; /* tried here first: forgotten if it fails here */
        uint64_t errors = s->errors.count;
        char last[sizeof s->errors.last];
        memcpy(last, s->errors.last, sizeof last);
        enable_context(s, x);
        gpufl__cuda_pop_context(s->cuda);
        if (x->state == CTX_ON) {
            x->at_creation = 1;
        } else if (x->object == NULL) { /* undone: the first scope tries again */
            if (d != NULL && d->state == -1) forget_device(s, d);
            s->errors.count = errors;
            memcpy(s->errors.last, last, sizeof last);
            x->state = CTX_FREE;
        }
    }
    if (x != NULL && x->state == CTX_FREE) x->ctx = NULL; /* not started: the slot is free */
    if (x == NULL ? !known && !atomic_load(&s->finished) : x->state == CTX_FREE)
        atomic_fetch_add(&s->deferred, 1);
    pthread_mutex_unlock(&s->lock);
}

/* Lock held. A context that cannot be profiled is said once, aloud, and
 * counted; its range_profiler record carries the reason. */
static void start_context(gpufl__range_profiler_t *s, rp_ctx_t *x) {
    enable_context(s, x);
    if (x->state == CTX_ON) return;
    char msg[300];
    snprintf(msg, sizeof msg, "context %u: %s", x->id, x->error);
    note_error(s, msg);
    if (!s->warned++) gpufl__warn("range profiler: %s; scopes on it are not profiled", msg);
}

/* Lock held. The context's slot, started when new; NULL when the table is full. */
static rp_ctx_t *slot_of(gpufl__range_profiler_t *s, CUcontext ctx) {
    rp_ctx_t *x = find_slot(s, ctx);
    if (x != NULL) return x;
    x = new_slot(s, ctx);
    if (x != NULL) start_context(s, x);
    return x;
}

/* The scope id a range was pushed under, 0 when the name is not one. */
static uint64_t scope_of_name(const char *name) {
    if (name == NULL) return 0;
    const char *last = strrchr(name, '/'); /* one level: there is none; be safe */
    char *end;
    unsigned long long v = strtoull(last ? last + 1 : name, &end, 10);
    return *end == '\0' ? (uint64_t)v : 0;
}

/* Lock held. Evaluates each decoded range into a result. */
static void evaluate(gpufl__range_profiler_t *s, rp_ctx_t *x, int all_passes) {
    const rp_group_t *grp = &s->devices[x->device].group[x->configured];
    uint8_t *data = x->data[x->configured];
    size_t data_size = x->data_size[x->configured];
    CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
        .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = data;
    info.counterDataImageSize = data_size;
    if (failed(s, s->fn.data_info(&info), "cuptiRangeProfilerGetCounterDataInfo") != CUPTI_SUCCESS)
        return;
    for (size_t i = 0; i < info.numTotalRanges; i++) {
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = {
            .structSize = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
        ri.pCounterDataImage = data;
        ri.counterDataImageSize = data_size;
        ri.rangeIndex = i;
        ri.rangeDelimiter = "/";
        if (failed(s, s->fn.range_info(&ri), "cuptiRangeProfilerCounterDataGetRangeInfo")) continue;
        uint64_t scope = scope_of_name(ri.rangeName);
        rp_range_t *range = NULL;
        for (size_t k = 0; k < x->pending && range == NULL; k++)
            if (x->ranges[k].scope == scope && scope != 0) range = &x->ranges[k];
        if (range == NULL || range->end_ns == 0) continue; /* not one of ours, or still open */
        if (s->result_count == s->result_cap) {
            size_t cap = s->result_cap ? s->result_cap * 2 : 64;
            rp_result_t *grown = cap <= GPUFL_RANGE_PROFILER_RESULTS_MAX
                                     ? realloc(s->results, cap * sizeof *grown)
                                     : NULL;
            if (grown == NULL) continue; /* counted as lost below */
            s->results = grown;
            s->result_cap = cap;
        }
        rp_result_t *res = &s->results[s->result_count];
        res->range = *range;
        res->context = x->id;
        res->group = x->configured;
        res->metrics = grp->metrics;
        res->metric_count = grp->metric_count;
        gpufl__host_evaluate_params_t ev = {
            .structSize = GPUFL_HOST_STRUCT_SIZE(gpufl__host_evaluate_params_t, pMetricValues),
            .pHostObject = grp->host,
            .pCounterDataImage = data,
            .counterDataImageSize = data_size,
            .rangeIndex = i,
            .ppMetricNames = (const char **)grp->metrics,
            .numMetrics = (size_t)grp->metric_count,
            .pMetricValues = res->value};
        if (failed(s, s->fn.evaluate(&ev), "cuptiProfilerHostEvaluateToGpuValues") != CUPTI_SUCCESS)
            for (int m = 0; m < grp->metric_count; m++) res->value[m] = NAN;
        if (!all_passes) /* partial data: what evaluates is not the range's */
            for (int m = 0; m < grp->metric_count; m++) res->value[m] = NAN;
        range->scope = 0; /* evaluated */
        s->result_count++;
        s->ranges_written++;
        s->settling_written += range->settling != 0;
    }
}

/* Lock held, no range open. Stops, decodes and evaluates the ranges
 * collected; with restart a new collection starts. Ranges not evaluated
 * are lost (counted). A failed Stop keeps them for the next try. */
static void decode(gpufl__range_profiler_t *s, rp_ctx_t *x, int restart) {
    if (!x->collecting) return;
    int64_t t0 = gpufl__mono_ns();
    CUpti_RangeProfiler_Stop_Params sp = {.structSize =
                                              CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = x->object;
    CUptiResult stopped = s->fn.stop(&sp);
    s->stop_ns_total += gpufl__mono_ns() - t0;
    if (failed(s, stopped, "cuptiRangeProfilerStop") != CUPTI_SUCCESS) {
        x->decode_due_ns = t0 + s->decode_every_ns; /* not again at every range end */
        if (!restart) {                             /* the last try: what it held is gone */
            for (size_t k = 0; k < x->pending; k++) s->lost += x->ranges[k].scope != 0;
            x->pending = 0;
        }
        return;
    }
    x->collecting = 0;
    CUpti_RangeProfiler_DecodeData_Params dp = {
        .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dp.pRangeProfilerObject = x->object;
    if (failed(s, s->fn.decode(&dp), "cuptiRangeProfilerDecodeData") == CUPTI_SUCCESS) {
        s->dropped += dp.numOfRangeDropped;
        evaluate(s, x, sp.isAllPassSubmitted != 0);
    }
    s->decodes++;
    for (size_t k = 0; k < x->pending; k++) s->lost += x->ranges[k].scope != 0;
    x->pending = 0;
    int64_t t1 = gpufl__mono_ns();
    if (restart && begin_collection(s, x, &s->devices[x->device]) != CUPTI_SUCCESS) {
        x->state = CTX_FAILED; /* its scopes count as unprofiled from here */
        snprintf(x->error, sizeof x->error, "collection stopped: %.200s", s->errors.last);
        disable(s, x); /* an object enabled for a switch, or the one that failed to start */
    }
    int64_t t2 = gpufl__mono_ns();
    s->start_ns_total += t2 - t1;
    s->decode_ns_total += t2 - t0;
}

/* Lock held, the context current. The object is forgotten only once
 * disabled: after a failure, finish or the context's destruction tries again. */
static CUptiResult disable(gpufl__range_profiler_t *s, rp_ctx_t *x) {
    if (x->object == NULL) return CUPTI_SUCCESS;
    CUpti_RangeProfiler_Disable_Params p = {.structSize =
                                                CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = x->object;
    CUptiResult r = failed(s, s->fn.disable(&p), "cuptiRangeProfilerDisable");
    if (r == CUPTI_SUCCESS) x->object = NULL;
    return r;
}

/* ---------------------------------------------------------------------- */
/* Scope hooks (application threads)                                        */
/* ---------------------------------------------------------------------- */

/* The thread's state for this engine, reset when it belonged to another. */
static rp_thread_t *thread_state(const gpufl__range_profiler_t *s) {
    if (tls.serial != s->serial) {
        tls.serial = s->serial;
        tls.depth = 0;
        tls.path[0] = '\0';
        tls.scope = 0;
        tls.ctx = NULL;
    }
    return &tls;
}

/* The path of the scope at depth, its parents' from what this thread saw
 * (levels opened before the engine followed scopes read "(lost)"). */
static void track_path(rp_thread_t *t, const char *name, size_t len, uint32_t depth) {
    if (depth >= GPUFL_SCOPE_STACK_MAX) return;
    while (t->depth < depth) track_path(t, "(lost)", 6, t->depth);
    size_t at = depth ? t->end[depth - 1] : 0;
    if (depth && at < sizeof t->path - 1) t->path[at++] = '/';
    size_t room = sizeof t->path - 1 - at;
    if (len > room) len = room;
    memcpy(t->path + at, name, len);
    t->end[depth] = (uint16_t)(at + len);
    t->path[at + len] = '\0';
    t->depth = depth + 1;
}

static void on_begin(void *user, uint64_t id, const char *name, size_t len, uint32_t depth) {
    gpufl__range_profiler_t *s = user;
    rp_thread_t *t = thread_state(s);
    track_path(t, name, len, depth);
    if (t->scope != 0) {
        atomic_fetch_add(&s->nested, 1);
        return;
    }
    CUcontext ctx = gpufl__cuda_current_context(s->cuda);
    if (ctx == NULL) {
        atomic_fetch_add(&s->no_context, 1);
        return;
    }
    pthread_mutex_lock(&s->lock);
    if (atomic_load(&s->finished)) goto unlock;
    rp_ctx_t *x = slot_of(s, ctx);
    if (x == NULL || x->state != CTX_ON) {
        s->unprofiled++;
        goto unlock;
    }
    if (x->open) {
        atomic_fetch_add(&s->concurrent, 1);
        goto unlock;
    }
    if (x->pending == GPUFL_RANGE_PROFILER_RANGES_MAX)
        decode(s, x, 1);      /* a failed decode left it full */
    if (x->state != CTX_ON) { /* the decode could not start the next collection */
        s->unprofiled++;
        goto unlock;
    }
    if (!x->collecting || x->pending == GPUFL_RANGE_PROFILER_RANGES_MAX) {
        s->over_capacity++;
        goto unlock;
    }
    char range_name[24];
    snprintf(range_name, sizeof range_name, "%llu", (unsigned long long)id);
    CUpti_RangeProfiler_PushRange_Params p = {.structSize =
                                                  CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = x->object;
    p.pRangeName = range_name;
    if (failed(s, s->fn.push(&p), "cuptiRangeProfilerPushRange") != CUPTI_SUCCESS) goto unlock;
    rp_range_t *r = &x->ranges[x->pending++];
    r->scope = id;
    r->tid = gpufl__thread_id();
    r->begin_ns = gpufl__mono_ns();
    r->end_ns = 0;
    r->settling = x->since_config++ < GPUFL_RANGE_PROFILER_SETTLE_RANGES;
    if (x->first_range_ns == 0) x->first_range_ns = r->begin_ns;
    memcpy(r->path, t->path, sizeof r->path);
    x->open = 1;
    s->ranges_pushed++;
    t->scope = id;
    t->slot = (int)(x - s->ctx);
    t->gen = x->gen;
    t->ctx = ctx;
unlock:
    pthread_mutex_unlock(&s->lock);
}

static void on_end(void *user, uint64_t id, uint32_t depth) {
    gpufl__range_profiler_t *s = user;
    rp_thread_t *t = thread_state(s);
    if (depth < t->depth) t->depth = depth;
    if (t->scope != id || id == 0) return;
    t->scope = 0;
    pthread_mutex_lock(&s->lock);
    rp_ctx_t *x = &s->ctx[t->slot];
    if (x->gen != t->gen || x->ctx != t->ctx || x->state != CTX_ON || !x->open ||
        atomic_load(&s->finished))
        goto unlock;
    CUpti_RangeProfiler_PopRange_Params p = {.structSize =
                                                 CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = x->object;
    failed(s, s->fn.pop(&p), "cuptiRangeProfilerPopRange");
    x->open = 0;
    for (size_t k = x->pending; k-- > 0;)
        if (x->ranges[k].scope == id) {
            x->ranges[k].end_ns = gpufl__mono_ns();
            break;
        }
    /* Decoding waits for the context's work: only when the image is full
     * or the interval has passed, and only on a thread where it is current. */
    if ((x->pending == GPUFL_RANGE_PROFILER_RANGES_MAX || gpufl__mono_ns() >= x->decode_due_ns) &&
        gpufl__cuda_current_context(s->cuda) == x->ctx)
        decode(s, x, 1);
unlock:
    pthread_mutex_unlock(&s->lock);
}

void gpufl__range_profiler_observe(gpufl__range_profiler_t *s) {
    if (s == NULL) return;
    s->observer = (gpufl__scope_observer_t){on_begin, on_end, s};
    gpufl__scope_observe(&s->observer);
}

/* Lock held, the context current. Ends a context's profiling: a scope
 * still open there is counted (and with pop, its range popped), what it
 * collected decoded, and its profiler disabled, also one left enabled by a
 * collection that failed to start. */
static void retire(gpufl__range_profiler_t *s, rp_ctx_t *x, int pop) {
    if (x->state == CTX_ON) {
        if (x->open && pop) { /* a scope still open at shutdown: its range ends here, unwritten */
            CUpti_RangeProfiler_PopRange_Params p = {
                .structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
            p.pRangeProfilerObject = x->object;
            failed(s, s->fn.pop(&p), "cuptiRangeProfilerPopRange");
        }
        if (x->open) s->open_at_end++;
        x->open = 0;
        decode(s, x, 0);
    }
    disable(s, x);
    if (x->state == CTX_ON) x->state = CTX_DONE;
}

/* A context being destroyed: what it collected is decoded on the
 * destroying thread (with the context made current), then it is retired. */
static void context_destroying(gpufl__range_profiler_t *s, CUcontext ctx) {
    if (gpufl__engine_lock_within(&s->lock, GPUFL_ENGINE_DESTROY_LOCK_MS, &s->errors) != 0) return;
    for (int i = 0; i < s->ctx_count; i++) {
        rp_ctx_t *x = &s->ctx[i];
        if (x->ctx != ctx || x->state == CTX_FREE) continue;
        if (x->state == CTX_ON || x->object != NULL) {
            int pushed = gpufl__cuda_push_context(s->cuda, ctx) == 0;
            retire(s, x, 0);
            if (pushed) gpufl__cuda_pop_context(s->cuda);
        }
        x->ctx = NULL; /* a new context at that address is a new one */
    }
    pthread_mutex_unlock(&s->lock);
}

static void on_resource(void *user, uint32_t cbid, const void *data) {
    const CUpti_ResourceData *r = data;
    if (r == NULL) return;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) context_created(user, r->context);
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) context_destroying(user, r->context);
}

static int on_context_seen(void *user, void *context) {
    (void)user;
    (void)context;
    return 1;
}

const gpufl__launch_hooks_t *gpufl__range_profiler_hooks(gpufl__range_profiler_t *s) {
    s->hooks = (gpufl__launch_hooks_t){on_resource, on_context_seen, s};
    return &s->hooks;
}

/* ---------------------------------------------------------------------- */
/* Writing (collector thread)                                               */
/* ---------------------------------------------------------------------- */

/* The range_profiler record of a context, once. Lock held. */
static void announce(gpufl__range_profiler_t *s, rp_ctx_t *x) {
    if (x->announced || x->state == CTX_FREE) return;
    x->announced = 1;
    const rp_device_t *d =
        x->device < GPUFL_RANGE_PROFILER_DEVICES_MAX ? &s->devices[x->device] : NULL;
    gpufl__wire_names_t groups[GPUFL_RANGE_PROFILER_GROUPS_MAX];
    const char *why[WANTED + SM_PARTS];
    gpufl__wire_range_profiler_t r = {
        .ts_ns = gpufl__collector_session_ns(s->collector, x->started_ns),
        .device = x->device,
        .context = x->id,
        .enable_ms = (double)x->enable_ns / 1e6,
        .started_at = x->at_creation ? "context_created" : "first_scope",
    };
    if (x->state == CTX_FAILED && !x->ran) { /* never collected: why (a later stop is an event) */
        r.error = x->error;
    } else if (d != NULL) {
        r.planned = 1;
        r.chip = d->chip;
        r.metrics = (gpufl__wire_names_t){d->group[0].metrics, d->group[0].metric_count};
        for (int g = 0; g < d->groups; g++)
            groups[g] = (gpufl__wire_names_t){d->group[g].metrics, d->group[g].metric_count};
        r.groups = groups;
        r.ngroups = d->groups;
        r.sm_throughput_of = (gpufl__wire_names_t){d->sm_of, d->sm_of_count};
        for (int i = 0; i < d->left_count; i++) why[i] = d->left_why[i];
        r.left_out = d->left_out;
        r.left_why = why;
        r.nleft = d->left_count;
        r.max_ranges = GPUFL_RANGE_PROFILER_RANGES_MAX;
        r.nesting_levels = 1;
        r.one_pass = 1;
        r.plan_ms = (double)d->plan_ns / 1e6;
    }
    gpufl__line_t l;
    gpufl__wire_range_profiler(&l, &r);
    gpufl__collector_record(s->collector, GPUFL_FILE_DEVICE, &l);
}

/* Lock held. One range_metrics record per evaluated range. */
static void write_results(gpufl__range_profiler_t *s) {
    if (s->result_count == 0) return;
    gpufl__intern_t *dict = (gpufl__intern_t *)gpufl__collector_dict(s->collector);
    for (size_t i = 0; i < s->result_count; i++) {
        const rp_result_t *res = &s->results[i];
        gpufl__wire_range_metrics_t r = {
            .ts_ns = gpufl__collector_session_ns(s->collector, res->range.end_ns),
            .start_ns = gpufl__collector_session_ns(s->collector, res->range.begin_ns),
            .context = res->context,
            .scope = (int64_t)res->range.scope,
            .path = gpufl__intern(dict, res->range.path, strlen(res->range.path)),
            .tid = res->range.tid,
            .group = res->group,
            .settling = res->range.settling,
            .metrics = res->metrics,
            .values = res->value,
            .count = res->metric_count,
        };
        gpufl__line_t l;
        gpufl__wire_range_metrics(&l, &r);
        gpufl__collector_record(s->collector, GPUFL_FILE_DEVICE, &l);
    }
    s->result_count = 0;
}

static void report_errors(gpufl__range_profiler_t *s) {
    gpufl__engine_report_errors(&s->errors, s->collector, "range profiler", "range_profiler_error",
                                "a context-destroy callback",
                                "the context's last ranges are decoded at finish, if at all");
}

void gpufl__range_profiler_poll(gpufl__range_profiler_t *s) {
    if (s == NULL) return;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->ctx_count; i++) announce(s, &s->ctx[i]);
    write_results(s);
    report_errors(s);
    pthread_mutex_unlock(&s->lock);
}

static void write_stats(gpufl__range_profiler_t *s) {
    gpufl__range_profiler_stats_t st;
    gpufl__range_profiler_stats(&st, s);
    const gpufl__engine_count_t v[] = {{"contexts", st.contexts},
                                       {"ranges_pushed", st.ranges_pushed},
                                       {"ranges", st.ranges},
                                       {"decodes", st.decodes},
                                       {"settling", st.settling},
                                       {"deferred", st.deferred},
                                       {"nested", st.nested},
                                       {"concurrent", st.concurrent},
                                       {"no_context", st.no_context},
                                       {"unprofiled", st.unprofiled},
                                       {"over_capacity", st.over_capacity},
                                       {"dropped", st.dropped},
                                       {"lost", st.lost},
                                       {"open_at_end", st.open_at_end},
                                       {"errors", st.errors}};
    const gpufl__wire_measure_t m[] = {{"decode_ms", st.decode_ms, 1},
                                       {"stop_ms", st.stop_ms, 1},
                                       {"start_ms", st.start_ms, 1},
                                       {"switches", (double)st.switches, 0},
                                       {"switch_ms", st.switch_ms, 1}};
    gpufl__engine_write_totals(s->collector, "range_profiler_stats", v, sizeof v / sizeof v[0], m,
                               sizeof m / sizeof m[0]);
}

void gpufl__range_profiler_finish(gpufl__range_profiler_t *s) {
    if (s == NULL) return;
    if (gpufl__scope_observe(NULL) != 0)
        gpufl__warn("range profiler: a scope hook did not return within 2 s");
    pthread_mutex_lock(&s->lock);
    atomic_store(&s->finished, 1);
    for (int i = 0; i < s->ctx_count; i++) {
        rp_ctx_t *x = &s->ctx[i];
        if ((x->state != CTX_ON && x->object == NULL) || x->ctx == NULL) continue;
        int pushed = gpufl__cuda_push_context(s->cuda, x->ctx) == 0;
        retire(s, x, 1);
        if (pushed) gpufl__cuda_pop_context(s->cuda);
    }
    for (int i = 0; i < s->ctx_count; i++) announce(s, &s->ctx[i]);
    write_results(s);
    report_errors(s);
    pthread_mutex_unlock(&s->lock);
    write_stats(s);
}

void gpufl__range_profiler_stats(gpufl__range_profiler_stats_t *out, gpufl__range_profiler_t *s) {
    memset(out, 0, sizeof *out);
    if (s == NULL) return;
    pthread_mutex_lock(&s->lock);
    out->contexts = s->contexts;
    out->ranges_pushed = s->ranges_pushed;
    out->ranges = s->ranges_written;
    out->decodes = s->decodes;
    out->settling = s->settling_written;
    out->deferred = atomic_load(&s->deferred);
    out->nested = atomic_load(&s->nested);
    out->concurrent = atomic_load(&s->concurrent);
    out->no_context = atomic_load(&s->no_context);
    out->unprofiled = s->unprofiled;
    out->over_capacity = s->over_capacity;
    out->dropped = s->dropped;
    out->lost = s->lost;
    out->open_at_end = s->open_at_end;
    out->errors = s->errors.count;
    out->decode_ms = (double)s->decode_ns_total / 1e6;
    out->stop_ms = (double)s->stop_ns_total / 1e6;
    out->start_ms = (double)s->start_ns_total / 1e6;
    for (int i = 0; i < s->ctx_count; i++) {
        out->switches += s->ctx[i].switches;
        out->switch_ms += (double)s->ctx[i].switch_ns / 1e6;
    }
    pthread_mutex_unlock(&s->lock);
}

void gpufl__range_profiler_destroy(gpufl__range_profiler_t *s) {
    if (s == NULL) return;
    if (s->observer.user == s) gpufl__scope_observe(NULL);
    for (int i = 0; i < s->ctx_count; i++) {
        disable(s, &s->ctx[i]);
        for (int g = 0; g < GPUFL_RANGE_PROFILER_GROUPS_MAX; g++) free(s->ctx[i].data[g]);
        free(s->ctx[i].ranges);
    }
    for (int d = 0; d < GPUFL_RANGE_PROFILER_DEVICES_MAX; d++) forget_device(s, &s->devices[d]);
    if (s->profiler_ready) {
        CUpti_Profiler_DeInitialize_Params p = {.structSize =
                                                    CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
        s->fn.profiler_deinit(&p);
    }
    free(s->results);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
