// SPDX-License-Identifier: Apache-2.0
/*
 * pc_sampling.c - the PcSampling engine (see pc_sampling.h): per-context
 * enable and configuration, periodic GetData on the collector thread, a
 * window table of (function, PC, reason) -> samples written as pc_sample
 * rows, and the accounting of every sample in pc_window rows.
 *
 * Why these settings (measured on an H100, docs/design/pc-sampling.md):
 * period 2^18 cycles per SM keeps every sample in continuous collection
 * (CUPTI's own default, 2^11, filled its hardware buffer within 1.6 s, and
 * 2^16 a training loop's after about a minute, each losing all later data
 * without counting it as dropped); GetData every 100 to 500 ms, adapted to
 * what each drain brings (each call holds up the application's launches
 * for its length: adapt_drain_period); only the
 * plain stall reasons are kept, since CUPTI also lists a total, a dropped
 * count and a `_not_issued` twin of each reason.
 */
#include "nvidia/pc_sampling.h"

#include "core/clock.h"
#include "util/demangle.h"
#include "util/error.h"
#include "util/idmap.h"
#include "util/log.h"
#include "nvidia/engine.h"
#include "nvidia/rebind.h"
#include "nvidia/sass_log.h"

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CUPTI's scratch buffer, where its worker thread decodes the hardware
 * buffer: 16 MiB, about 88,000 PCs with every reason (CUPTI's default,
 * 1 MiB, holds about 5500, so that a training loop's drain took 16 GetData
 * calls of 2048 PCs while the worker refilled it, docs/design/pc-sampling.md;
 * the GetData crash of long runs was CUPTI's strdup(NULL): engine.h,
 * gpufl__engine_guard_names). */
#define SCRATCH_BYTES ((size_t)16 << 20)
#define COLLECT_PCS   16384 /* PC records per GetData call (about 9 MB with every reason) */
/* PC records the disable buffer holds: CUPTI discards what does not fit
 * (measured: a training loop's last hand-over held ~6000 PCs with the 1 MiB
 * scratch buffer). */
#define FINAL_PCS 16384
/* PC records the scratch buffer holds (measured with every reason). A drain
 * that brings more than a quarter of it shortens the GetData period, one
 * that brings less than a sixteenth doubles it (adapt_drain_period, between
 * GPUFL_PC_SAMPLING_DRAIN_MIN_NS and _MAX_NS): the buffer must never fill between
 * two drains, since CUPTI's hardware buffer then fills behind it and stays
 * full. */
#define SCRATCH_PCS 88000
/* Distinct (function, PC, reason) per window, at most: 2^20 slots of 40
 * bytes (40 MiB), past what one window holds (a training loop's drains
 * bring tens of thousands of PCs, each with a few reasons). */
#define AGG_SLOTS_MAX ((size_t)1 << 20)
#define DRAIN_LOOPS   64 /* GetData calls per drain at most (COLLECT_PCS each) */
#define NAME_BYTES    CUPTI_STALL_REASON_STRING_SIZE
#define REASONS_MAX   1024 /* stall reasons a device may offer */
#define UNNAMED_MAX   256  /* functions named from their module for CUPTI, at most */

typedef struct pc_sampling_fn {
    CUptiResult (*enable)(CUpti_PCSamplingEnableParams *);
    CUptiResult (*disable)(CUpti_PCSamplingDisableParams *);
    CUptiResult (*get_data)(CUpti_PCSamplingGetDataParams *);
    CUptiResult (*num_reasons)(CUpti_PCSamplingGetNumStallReasonsParams *);
    CUptiResult (*reasons)(CUpti_PCSamplingGetStallReasonsParams *);
    CUptiResult (*set_attr)(CUpti_PCSamplingConfigurationInfoParams *);
    CUptiResult (*get_attr)(CUpti_PCSamplingConfigurationInfoParams *);
    CUptiResult (*context_id)(CUcontext, uint32_t *);
    CUptiResult (*device_id)(CUcontext, uint32_t *);
    CUptiResult (*cubin_crc)(CUpti_GetCubinCrcParams *);
    CUptiResult (*result_string)(CUptiResult, const char **);
} pc_sampling_fn_t;

/* Counters of one window (or of the session, for the totals). */
typedef struct pc_sampling_counts {
    uint64_t drains, samples, recorded, non_user, dropped, buffer_full;
    uint64_t lost;     /* in records CUPTI gave but gpufl could not keep (no memory) */
    uint64_t unplaced; /* in records CUPTI gave with neither function nor module */
} pc_sampling_counts_t;

enum ctx_state { CTX_FREE = 0, CTX_ON, CTX_FAILED, CTX_GONE };

typedef struct pc_sampling_ctx {
    CUcontext ctx;
    enum ctx_state state;
    uint32_t id, device;
    int late, announced;
    char error[200];
    int64_t started_ns, enable_ns;
    uint32_t period, sleep_ms;
    uint64_t scratch_bytes, hw_bytes;
    size_t reason_count;
    uint32_t *reason_index; /* CUPTI's index of each reason */
    char (*reason_name)[NAME_BYTES];
    uint8_t *reason_plain; /* by position: 1 for a plain stall reason */
    uint32_t *reason_dict; /* by position: dict id, set when announced */
    CUpti_PCSamplingData *drain_buf, *final_buf;
    pc_sampling_counts_t window;
    size_t pc_sampling_left;
    int64_t window_t0;        /* session clock; the end of this context's previous window */
    int64_t drained_ns;       /* CLOCK_MONOTONIC of its last drain, on any thread; 0 none */
    size_t drain_pc_sampling; /* PC records its last drain brought */
    int drain_trouble;        /* its last drain: 0 fine, 1 buffer full, 2 a call failed */
    int64_t folded_ns;        /* CLOCK_MONOTONIC of its last counts taken; started_ns before */
    int window_written_once;
    int needs_restart;   /* its hardware buffer filled: restart() at the collector's next pass */
    int restart_refused; /* a restart's disable failed: none is tried again */
} pc_sampling_ctx_t;

/* A function CUPTI handed over without a name, and the name gpufl gave it. */
typedef struct unnamed {
    uint64_t crc;
    uint32_t index;
    const char *name; /* from the module's symbol table, else a placeholder; owned */
    int from_module;
} unnamed_t;

/* One (context, module, function, PC, reason) of the current window. */
typedef struct agg {
    uint64_t crc, pc, samples;
    const char *function; /* CUPTI's string; NULL marks an empty slot */
    uint32_t reason_pos;
    uint16_t ctx;
} agg_t;

struct gpufl__pc_sampling {
    gpufl__cupti_t *cupti;
    gpufl__collector_t *collector;
    gpufl__pc_sampling_config_t cfg;
    pc_sampling_fn_t fn;
    pthread_mutex_t lock;
    pc_sampling_ctx_t ctx[GPUFL_PC_SAMPLING_CONTEXTS_MAX];
    int ctx_count;
    agg_t *agg;
    size_t agg_slots, agg_count;
    int64_t next_drain_ns, window_end_ns, last_drain_ns;
    gpufl__idmap_t names;     /* CUPTI's function name pointer -> dict id, 0 until interned */
    gpufl__idmap_t cubins;    /* a module's CRC -> dict id of its hex form */
    gpufl__idmap_t demangled; /* dict id -> dict id of the demangled name */
    gpufl__idmap_t functions; /* dict id of a sampled function -> 1 */
    gpufl__batch_t rows, windows;
    gpufl__launch_hooks_t hooks;
    pc_sampling_counts_t total;
    gpufl__sass_log_t *sass; /* NULL: no SASS records (sass_why says why) */
    int sass_owned;          /* 0: the SassMetrics engine's (Deep), which keeps the cubins */
    char sass_why[200];
    uint64_t rows_written, contexts;
    gpufl__engine_errors_t errors;
    int64_t drain_every_ns;   /* GetData period (adapt_drain_period) */
    int drain_fixed;          /* GPUFL_PC_SAMPLING_DRAIN_MS set it */
    uint64_t drain_shortened; /* times adapt_drain_period shortened it */
    uint32_t decode_ms; /* CUPTI's decode period: GPUFL_PC_SAMPLING_DECODE_MS; 0 its default */
    int64_t get_data_ns, get_data_max_ns; /* time spent in CUPTI's GetData, total and longest */
    int warned_full, warned_dropped, warned_table;
    gpufl__launch_t *gate; /* restarts (and under Deep drains) pass it; NULL none */
    gpufl__pc_sampling_enable_hook_t enable_hook; /* around cuptiPCSamplingEnable; NULL none */
    void *enable_hook_user;
    uint64_t drains_deferred; /* the gate stayed busy: the drain was put off */
    int defer_streak;         /* drains put off in a row (the collector's own) */
    _Atomic uint64_t modules_loaded, modules_unloaded; /* seen by the resource callbacks */
    int restart_full;     /* GPUFL_PC_SAMPLING_RESTART: restart a context whose buffer filled */
    uint64_t restarts;    /* contexts restarted after CUPTI's hardware buffer filled */
    int64_t restart_ns;   /* time those took */
    _Atomic int finished; /* finish ran: callbacks that come later are ignored */
    _Atomic int holding;  /* enables wait (gpufl__pc_sampling_hold_enables) */
    unnamed_t unnamed[UNNAMED_MAX];
    size_t unnamed_count;
    uint64_t unnamed_records, unnamed_named; /* see name_unnamed */
    uint64_t implausible_records;            /* see implausible */
    int warned_unnamed;
};

#define NCOLS(a) ((int)(sizeof a / sizeof a[0]))

/* ---------------------------------------------------------------------- */
/* CUPTI calls                                                              */
/* ---------------------------------------------------------------------- */

/* Lock held. A failed call, counted and kept for the collector's event. */
static void note_error(gpufl__pc_sampling_t *p, const char *message) {
    gpufl__engine_note_error(&p->errors, message);
}

static void explain(const gpufl__pc_sampling_t *p, CUptiResult r, const char *what, char *out,
                    size_t size) {
    gpufl__engine_explain(p->fn.result_string, r, what, out, size);
}

#define SYM(field, name)                                                                           \
    { &p->fn.field, name }

int gpufl__pc_sampling_create(gpufl__pc_sampling_t **out, gpufl__cupti_t *cupti,
                              gpufl__collector_t *collector, const gpufl__pc_sampling_config_t *cfg,
                              char *why, size_t why_size) {
    *out = NULL;
    gpufl__pc_sampling_t *p = calloc(1, sizeof *p);
    if (p == NULL || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        snprintf(why, why_size, "out of memory");
        return GPUFL_ENOMEM;
    }
    p->cupti = cupti;
    p->collector = collector;
    p->cfg = *cfg;
    if (p->cfg.period < 5 || p->cfg.period > 31) p->cfg.period = GPUFL_PC_SAMPLING_PERIOD_DEFAULT;
    if (p->cfg.window_ns <= 0) p->cfg.window_ns = 250 * 1000000LL;
    /* Knobs (docs/options.md): whether a context whose hardware buffer
     * filled is restarted, and how often the collector calls GetData. */
    p->restart_full = (int)gpufl__engine_env_long("GPUFL_PC_SAMPLING_RESTART", 0, 1, 0, "0 or 1");
    long drain_ms = /* 0, unset or not valid: adapted */
        gpufl__engine_env_long_else("GPUFL_PC_SAMPLING_DRAIN_MS", 10, 10000, 0, "a number of ms",
                                    "the period adapts (100 to 500 ms)");
    p->drain_fixed = drain_ms > 0;
    /* Adapted: from the shortest, growing while drains bring little. */
    p->drain_every_ns = p->drain_fixed ? drain_ms * 1000000LL : GPUFL_PC_SAMPLING_DRAIN_MIN_NS;
    /* 0: CUPTI's own decode period (its worker thread's sleep span). */
    p->decode_ms = (uint32_t)gpufl__engine_env_long("GPUFL_PC_SAMPLING_DECODE_MS", 0, 10000, 0,
                                                    "a number of ms");
    const gpufl__engine_sym_t syms[] = {SYM(enable, "cuptiPCSamplingEnable"),
                                        SYM(disable, "cuptiPCSamplingDisable"),
                                        SYM(get_data, "cuptiPCSamplingGetData"),
                                        SYM(num_reasons, "cuptiPCSamplingGetNumStallReasons"),
                                        SYM(reasons, "cuptiPCSamplingGetStallReasons"),
                                        SYM(set_attr, "cuptiPCSamplingSetConfigurationAttribute"),
                                        SYM(get_attr, "cuptiPCSamplingGetConfigurationAttribute"),
                                        SYM(context_id, "cuptiGetContextId"),
                                        SYM(device_id, "cuptiGetDeviceId"),
                                        SYM(cubin_crc, "cuptiGetCubinCrc"),
                                        SYM(result_string, "cuptiGetResultString")};
    if (gpufl__engine_resolve(cupti, syms, sizeof syms / sizeof syms[0],
                              "the PC Sampling API needs CUPTI 11.3 or newer", why, why_size)) {
        gpufl__pc_sampling_destroy(p);
        return GPUFL_ENOTSUP;
    }
    char guard_why[200];
    if (gpufl__engine_guard_names((const void *)p->fn.get_data, guard_why, sizeof guard_why) != 0) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "cannot guard CUPTI's copy of PC records without a function name (%s): such a "
                 "record crashes the process inside cuptiPCSamplingGetData",
                 guard_why);
        note_error(p, msg);
    }
    gpufl__idmap_init(&p->names);
    gpufl__idmap_init(&p->cubins);
    gpufl__idmap_init(&p->demangled);
    gpufl__idmap_init(&p->functions);
    if (gpufl__batch_init_table(&p->rows, &gpufl__wire_pc_sample) ||
        gpufl__batch_init_table(&p->windows, &gpufl__wire_pc_window)) {
        snprintf(why, why_size, "%s", gpufl_last_error());
        gpufl__pc_sampling_destroy(p);
        return GPUFL_ENOMEM;
    }
    if (!p->cfg.disassemble)
        snprintf(p->sass_why, sizeof p->sass_why, "off");
    else if (p->cfg.shared_sass != NULL)
        p->sass = p->cfg.shared_sass;
    else if (gpufl__sass_log_create(&p->sass, collector, GPUFL_PC_SAMPLING_CUBIN_BYTES, p->sass_why,
                                    sizeof p->sass_why) != 0)
        p->sass = NULL;
    else
        p->sass_owned = 1;
    *out = p;
    return 0;
}

static CUpti_PCSamplingData *alloc_data(size_t reasons, size_t pcs) {
    CUpti_PCSamplingData *d = calloc(1, sizeof *d);
    if (d == NULL) return NULL;
    d->size = sizeof *d;
    d->collectNumPcs = pcs;
    d->pPcData = calloc(pcs, sizeof *d->pPcData);
    CUpti_PCSamplingStallReason *all = calloc(pcs * (reasons ? reasons : 1), sizeof *all);
    if (d->pPcData == NULL || all == NULL) {
        free(d->pPcData);
        free(all);
        free(d);
        return NULL;
    }
    for (size_t i = 0; i < pcs; i++) {
        d->pPcData[i].size = sizeof d->pPcData[i];
        d->pPcData[i].stallReason = all + i * reasons;
    }
    return d;
}

static void free_data(CUpti_PCSamplingData *d) {
    if (d == NULL) return;
    if (d->pPcData) free(d->pPcData[0].stallReason);
    free(d->pPcData);
    free(d);
}

/* The sample buffers (megabytes): not needed once a context stopped. */
static void free_buffers(pc_sampling_ctx_t *x) {
    free_data(x->drain_buf);
    free_data(x->final_buf);
    x->drain_buf = x->final_buf = NULL;
}

static void free_ctx(pc_sampling_ctx_t *x) {
    free(x->reason_index);
    free(x->reason_name);
    free(x->reason_plain);
    free(x->reason_dict);
    x->reason_index = NULL;
    x->reason_name = NULL;
    x->reason_plain = NULL;
    x->reason_dict = NULL;
    free_buffers(x);
}

/* A plain stall reason: not CUPTI's total, its dropped count, nor the
 * `_not_issued` twin of a reason. */
static int plain_reason(const char *name) {
    static const char suffix[] = "_not_issued";
    size_t n = strlen(name), s = sizeof suffix - 1;
    if (strstr(name, "sample_count") != NULL || strstr(name, "samples_data_dropped") != NULL)
        return 0;
    return !(n >= s && strcmp(name + n - s, suffix) == 0);
}

static int set_attr(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x,
                    CUpti_PCSamplingConfigurationInfo *info, const char *what) {
    CUpti_PCSamplingConfigurationInfoParams prm = {.size =
                                                       CUpti_PCSamplingConfigurationInfoParamsSize};
    prm.ctx = x->ctx;
    prm.numAttributes = 1;
    prm.pPCSamplingConfigurationInfo = info;
    CUptiResult r = p->fn.set_attr(&prm);
    if (r == CUPTI_SUCCESS) r = info->attributeStatus;
    if (r == CUPTI_SUCCESS) return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "setting the %s", what);
    explain(p, r, msg, x->error, sizeof x->error);
    return -1;
}

static CUpti_PCSamplingConfigurationInfo get_attr(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x,
                                                  CUpti_PCSamplingConfigurationAttributeType t) {
    CUpti_PCSamplingConfigurationInfo info = {.attributeType = t};
    CUpti_PCSamplingConfigurationInfoParams prm = {.size =
                                                       CUpti_PCSamplingConfigurationInfoParamsSize};
    prm.ctx = x->ctx;
    prm.numAttributes = 1;
    prm.pPCSamplingConfigurationInfo = &info;
    if (p->fn.get_attr(&prm) != CUPTI_SUCCESS || info.attributeStatus != CUPTI_SUCCESS)
        memset(&info.attributeData, 0, sizeof info.attributeData);
    return info;
}

/* The stall reasons this context's device offers. */
static int read_reasons(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x) {
    size_t n = 0;
    CUpti_PCSamplingGetNumStallReasonsParams np = {
        .size = CUpti_PCSamplingGetNumStallReasonsParamsSize};
    np.ctx = x->ctx;
    np.numStallReasons = &n;
    CUptiResult r = p->fn.num_reasons(&np);
    if (r != CUPTI_SUCCESS) {
        explain(p, r, "cuptiPCSamplingGetNumStallReasons", x->error, sizeof x->error);
        return -1;
    }
    if (n == 0 || n > REASONS_MAX) {
        snprintf(x->error, sizeof x->error, "CUPTI offers %zu stall reasons on this device", n);
        return -1;
    }
    x->reason_count = n;
    x->reason_index = calloc(n, sizeof *x->reason_index);
    x->reason_name = calloc(n, sizeof *x->reason_name);
    x->reason_plain = calloc(n, 1);
    x->reason_dict = calloc(n, sizeof *x->reason_dict);
    char **names = calloc(n, sizeof *names);
    if (!x->reason_index || !x->reason_name || !x->reason_plain || !x->reason_dict || !names) {
        free(names);
        snprintf(x->error, sizeof x->error, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) names[i] = x->reason_name[i];
    CUpti_PCSamplingGetStallReasonsParams rp = {.size = CUpti_PCSamplingGetStallReasonsParamsSize};
    rp.ctx = x->ctx;
    rp.numStallReasons = n;
    rp.stallReasonIndex = x->reason_index;
    rp.stallReasons = names;
    r = p->fn.reasons(&rp);
    free(names);
    if (r != CUPTI_SUCCESS) {
        explain(p, r, "cuptiPCSamplingGetStallReasons", x->error, sizeof x->error);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        x->reason_name[i][NAME_BYTES - 1] = '\0';
        x->reason_plain[i] = (uint8_t)plain_reason(x->reason_name[i]);
    }
    return 0;
}

/* Continuous mode, parsed records, every reason, our period, our scratch
 * buffer, and the buffer CUPTI fills with what is pending when sampling is
 * disabled. */
static int configure(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x) {
    /* A restart keeps the buffers it had (the reasons do not change). */
    if (x->drain_buf == NULL) x->drain_buf = alloc_data(x->reason_count, COLLECT_PCS);
    if (x->final_buf == NULL) x->final_buf = alloc_data(x->reason_count, FINAL_PCS);
    if (x->drain_buf == NULL || x->final_buf == NULL) {
        snprintf(x->error, sizeof x->error, "out of memory for the sample buffers");
        return -1;
    }
    CUpti_PCSamplingConfigurationInfo info = {0};
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    info.attributeData.collectionModeData.collectionMode =
        CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    if (set_attr(p, x, &info, "collection mode")) return -1;
    memset(&info, 0, sizeof info);
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
    info.attributeData.outputDataFormatData.outputDataFormat =
        CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    if (set_attr(p, x, &info, "output format")) return -1;
    memset(&info, 0, sizeof info);
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    info.attributeData.samplingDataBufferData.samplingDataBuffer = x->final_buf;
    if (set_attr(p, x, &info, "sampling data buffer")) return -1;
    memset(&info, 0, sizeof info);
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
    info.attributeData.scratchBufferSizeData.scratchBufferSize = SCRATCH_BYTES;
    if (set_attr(p, x, &info, "scratch buffer size")) return -1;
    memset(&info, 0, sizeof info);
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
    info.attributeData.enableStartStopControlData.enableStartStopControl = 0;
    if (set_attr(p, x, &info, "start/stop control")) return -1;
    memset(&info, 0, sizeof info);
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
    info.attributeData.samplingPeriodData.samplingPeriod = (uint32_t)p->cfg.period;
    if (set_attr(p, x, &info, "sampling period")) return -1;
    if (p->decode_ms > 0) {
        memset(&info, 0, sizeof info);
        info.attributeType =
            CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN;
        info.attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan =
            p->decode_ms;
        if (set_attr(p, x, &info, "decode period")) return -1;
    }

    x->period = get_attr(p, x, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
                    .attributeData.samplingPeriodData.samplingPeriod;
    x->scratch_bytes = get_attr(p, x, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE)
                           .attributeData.scratchBufferSizeData.scratchBufferSize;
    x->hw_bytes = get_attr(p, x, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE)
                      .attributeData.hardwareBufferSizeData.hardwareBufferSize;
    x->sleep_ms =
        get_attr(p, x, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN)
            .attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan;
    return 0;
}

/* Returns 0, or -1 (said) when CUPTI refused. */
static int disable(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x) {
    CUpti_PCSamplingDisableParams prm = {.size = CUpti_PCSamplingDisableParamsSize};
    prm.ctx = x->ctx;
    CUptiResult r = p->fn.disable(&prm);
    if (r == CUPTI_SUCCESS) return 0;
    char msg[200];
    explain(p, r, "cuptiPCSamplingDisable", msg, sizeof msg);
    note_error(p, msg);
    return -1;
}

/* Lock held. Finds the context's slot, or takes a free one; NULL when the
 * table is full. */
static pc_sampling_ctx_t *slot_of(gpufl__pc_sampling_t *p, CUcontext ctx, int *fresh) {
    *fresh = 0;
    for (int i = 0; i < p->ctx_count; i++)
        if (p->ctx[i].ctx == ctx && p->ctx[i].state != CTX_GONE) return &p->ctx[i];
    if (p->ctx_count == GPUFL_PC_SAMPLING_CONTEXTS_MAX) return NULL;
    *fresh = 1;
    return &p->ctx[p->ctx_count++];
}

static int lock_within(gpufl__pc_sampling_t *p, int ms) {
    return gpufl__engine_lock_within(&p->lock, ms, &p->errors);
}

/* cuptiPCSamplingEnable, between the two calls of the enable hook. */
static CUptiResult enable_sampling(gpufl__pc_sampling_t *p, CUpti_PCSamplingEnableParams *prm) {
    if (p->enable_hook) p->enable_hook(p->enable_hook_user, 1, 0);
    CUptiResult r = p->fn.enable(prm);
    if (p->enable_hook) p->enable_hook(p->enable_hook_user, 0, r == CUPTI_SUCCESS);
    return r;
}

/* Enables sampling on ctx unless it is known. With try set (a launch, on
 * the application's hot path) a busy lock is not waited for: returns 0 and
 * the next launch tries again; else returns 1. */

static int start_context(gpufl__pc_sampling_t *p, CUcontext ctx, int late, int try) {
    if (atomic_load(&p->finished)) return 1;
    if (atomic_load(&p->holding)) return 0; /* its first launch after the hold tries again */
    if (try) {
        if (pthread_mutex_trylock(&p->lock) != 0) return 0;
    } else if (lock_within(p, GPUFL_ENGINE_CALLBACK_LOCK_MS) != 0) {
        return 0; /* its first launch tries again */
    }
    if (atomic_load(&p->finished)) { /* finish ran while this thread waited */
        pthread_mutex_unlock(&p->lock);
        return 1;
    }
    int fresh;
    pc_sampling_ctx_t *x = slot_of(p, ctx, &fresh);
    if (x == NULL || !fresh) {
        int first_overflow = x == NULL && !p->warned_table;
        if (first_overflow) {
            p->warned_table = 1;
            note_error(p, "more than 64 CUDA contexts in the session: the others are not sampled");
        }
        pthread_mutex_unlock(&p->lock);
        if (first_overflow)
            gpufl__warn("PC sampling: more than %d CUDA contexts; the others are not sampled",
                        GPUFL_PC_SAMPLING_CONTEXTS_MAX);
        return 1;
    }
    memset(x, 0, sizeof *x);
    x->ctx = ctx;
    x->late = late;
    x->started_ns = gpufl__mono_ns();
    if (p->fn.context_id(ctx, &x->id) != CUPTI_SUCCESS) x->id = 0;
    if (p->fn.device_id(ctx, &x->device) != CUPTI_SUCCESS) x->device = 0;
    CUpti_PCSamplingEnableParams prm = {.size = CUpti_PCSamplingEnableParamsSize};
    prm.ctx = ctx;
    CUptiResult r = enable_sampling(p, &prm);
    x->enable_ns = gpufl__mono_ns() - x->started_ns;
    x->state = CTX_FAILED;
    if (r != CUPTI_SUCCESS) {
        explain(p, r, "cuptiPCSamplingEnable", x->error, sizeof x->error);
    } else if (read_reasons(p, x) != 0 || configure(p, x) != 0) {
        disable(p, x);
    } else {
        x->state = CTX_ON;
        p->contexts++;
    }
    if (x->state == CTX_FAILED) {
        note_error(p, x->error);
        free_ctx(x);
    }
    x->window_t0 = gpufl__collector_session_ns(p->collector, x->started_ns);
    char error[sizeof x->error];
    uint32_t id = x->id;
    snprintf(error, sizeof error, "%s", x->state == CTX_FAILED ? x->error : "");
    pthread_mutex_unlock(&p->lock);
    if (error[0]) gpufl__warn("PC sampling: not sampling context %u: %s", id, error);
    return 1;
}

void gpufl__pc_sampling_context_created(gpufl__pc_sampling_t *p, void *context) {
    if (p && context) start_context(p, (CUcontext)context, 0, 0);
}

int gpufl__pc_sampling_context_seen(gpufl__pc_sampling_t *p, void *context) {
    return p && context ? start_context(p, (CUcontext)context, 1, 1) : 1;
}

/* ---------------------------------------------------------------------- */
/* Draining                                                                 */
/* ---------------------------------------------------------------------- */

static uint64_t hash_key(uint64_t crc, uint64_t pc, const char *f, uint32_t reason, uint16_t ctx) {
    uint64_t h = crc * 0x9e3779b97f4a7c15ull ^ (pc + 0x632be59bd9b4e019ull);
    h ^= (uint64_t)(uintptr_t)f * 0xff51afd7ed558ccdull;
    h ^= ((uint64_t)reason << 16 | ctx) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static int agg_grow(gpufl__pc_sampling_t *p) {
    if (p->agg_slots >= AGG_SLOTS_MAX) return -1; /* past the cap: samples counted as lost */
    size_t slots = p->agg_slots ? p->agg_slots * 2 : 4096;
    agg_t *t = calloc(slots, sizeof *t);
    if (t == NULL) return -1;
    for (size_t i = 0; i < p->agg_slots; i++) {
        agg_t *e = &p->agg[i];
        if (e->function == NULL) continue;
        size_t j = hash_key(e->crc, e->pc, e->function, e->reason_pos, e->ctx) & (slots - 1);
        while (t[j].function != NULL) j = (j + 1) & (slots - 1);
        t[j] = *e;
    }
    free(p->agg);
    p->agg = t;
    p->agg_slots = slots;
    return 0;
}

/* Returns 0, or -1 when the table could not grow (the caller counts the
 * samples as lost). */
static int agg_add(gpufl__pc_sampling_t *p, uint16_t ctx, uint64_t crc, const char *f, uint64_t pc,
                   uint32_t reason_pos, uint64_t n) {
    if ((p->agg_count + 1) * 4 > p->agg_slots * 3 && agg_grow(p) != 0) return -1;
    size_t mask = p->agg_slots - 1, j = hash_key(crc, pc, f, reason_pos, ctx) & mask;
    for (;; j = (j + 1) & mask) {
        agg_t *e = &p->agg[j];
        if (e->function == NULL) {
            *e = (agg_t){crc, pc, n, f, reason_pos, ctx};
            p->agg_count++;
            return 0;
        }
        if (e->function == f && e->crc == crc && e->pc == pc && e->reason_pos == reason_pos &&
            e->ctx == ctx) {
            e->samples += n;
            return 0;
        }
    }
}

/* A name string met in a record: known to this engine (its dict id comes
 * later, function_id) and kept for the process. */
static void own_name(gpufl__pc_sampling_t *p, const char *name) {
    if (gpufl__idmap_put(&p->names, (uint64_t)(uintptr_t)name, 0, NULL) != 0) return;
    gpufl__engine_keep_name(name);
}

/* Position of CUPTI's reason index in the context's list, or -1. */
static int reason_pos(const pc_sampling_ctx_t *x, uint32_t index) {
    if (index < x->reason_count && x->reason_index[index] == index) return (int)index;
    for (size_t i = 0; i < x->reason_count; i++)
        if (x->reason_index[i] == index) return (int)i;
    return -1;
}

/* Lock held. A record that came without a function name (made "" by
 * gpufl__engine_guard_names). With a module (cubinCrc), the function is symbol
 * functionIndex of it, as in every named record: the kept cubin (sass_log)
 * gives its name, else a placeholder names the symbol. Without one (what
 * CUPTI gave on an H100: module 0, symbol 0, PC offset 0) nothing places
 * the samples: NULL, and fold counts them as unplaced. NULL too when one
 * with a module finds no room (UNNAMED_MAX, or no memory): fold counts its
 * samples as lost, as it does a record it has no room for. Said once, with
 * the first record's identity. */
static const char *name_unnamed(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x,
                                const CUpti_PCSamplingPCData *pc) {
    p->unnamed_records++;
    unnamed_t *u = NULL;
    for (size_t i = 0; i < p->unnamed_count && u == NULL; i++)
        if (p->unnamed[i].crc == pc->cubinCrc && p->unnamed[i].index == pc->functionIndex)
            u = &p->unnamed[i];
    if (u == NULL && pc->cubinCrc != 0 && p->unnamed_count < UNNAMED_MAX) {
        char name[512];
        int from_module = gpufl__sass_log_symbol_name(p->sass, pc->cubinCrc, pc->functionIndex,
                                                      name, sizeof name) == 0;
        if (!from_module)
            snprintf(name, sizeof name, "(unnamed: symbol %u of module %016llx)", pc->functionIndex,
                     (unsigned long long)pc->cubinCrc);
        char *copy = strdup(name);
        if (copy != NULL) {
            own_name(p, copy);
            u = &p->unnamed[p->unnamed_count++];
            *u = (unnamed_t){pc->cubinCrc, pc->functionIndex, copy, from_module};
        }
    }
    if (!p->warned_unnamed) {
        p->warned_unnamed = 1;
        char msg[400];
        snprintf(msg, sizeof msg,
                 "context %u: CUPTI handed over a PC record without a function name (module "
                 "%016llx, symbol %u, PC offset %#llx; unguarded, GetData crashes on it): %s",
                 x->id, (unsigned long long)pc->cubinCrc, pc->functionIndex,
                 (unsigned long long)pc->pcOffset,
                 pc->cubinCrc == 0 ? "no module places it, its samples are counted as unplaced"
                 : u == NULL       ? "no room to name it, its samples are counted as lost"
                 : u->from_module  ? "named from the module's symbol table"
                                   : "named by a placeholder (the module's cubin was not kept)");
        gpufl__collector_event(p->collector, GPUFL_FILE_DEVICE, "warn", "pc_unnamed_records", msg);
    }
    if (u == NULL) return NULL;
    p->unnamed_named += u->from_module;
    return u->name;
}

/* Lock held. A record with more samples than the GPU can take (most) is
 * not a count: it is left out whole and counted; the first is said with its
 * identity. */
static int implausible(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x,
                       const CUpti_PCSamplingPCData *pc, double most) {
    size_t reasons =
        pc->stallReasonCount < x->reason_count ? pc->stallReasonCount : x->reason_count;
    uint64_t sum = 0; /* every reason first: below the bound, so are the plain ones */
    for (size_t r = 0; r < reasons; r++) sum += pc->stallReason[r].samples;
    if ((double)sum <= most) return 0;
    sum = 0; /* of the plain reasons, as fold records them */
    for (size_t r = 0; r < reasons; r++) {
        int pos = reason_pos(x, pc->stallReason[r].pcSamplingStallReasonIndex);
        if (pos >= 0 && x->reason_plain[pos]) sum += pc->stallReason[r].samples;
    }
    if ((double)sum <= most) return 0;
    if (p->implausible_records++ == 0) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "context %u: CUPTI handed over a PC record with %llu samples, more than the GPU "
                 "takes at period 2^%u (%s, module %016llx, PC offset %#llx); such records are "
                 "left out (implausible_records)",
                 x->id, (unsigned long long)sum, x->period,
                 pc->functionName[0] ? pc->functionName : "no function name",
                 (unsigned long long)pc->cubinCrc, (unsigned long long)pc->pcOffset);
        gpufl__collector_event(p->collector, GPUFL_FILE_DEVICE, "warn", "pc_counts_implausible",
                               msg);
    }
    return 1;
}

/* Before a call: CUPTI writes the counts only when it has data, and a call
 * that fails leaves the previous call's in place. */
static void clear_counts(CUpti_PCSamplingData *d) {
    d->totalNumPcs = d->remainingNumPcs = 0;
    d->totalSamples = d->droppedSamples = d->nonUsrKernelsTotalSamples = 0;
    d->hardwareBufferFull = 0;
}

/* Lock held. Folds one filled buffer into the window. In continuous mode
 * the counts are per hand-over, not running totals: a drain whose PCs span
 * several calls reports its samples in the first (measured on an H100:
 * summed over a session they equal the samples in the records plus the
 * non-user ones exactly, docs/design/pc-sampling.md). */
static void fold(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x, const CUpti_PCSamplingData *d) {
    uint16_t slot = (uint16_t)(x - p->ctx);
    int64_t now = gpufl__mono_ns(), since = x->folded_ns ? x->folded_ns : x->started_ns;
    x->folded_ns = now;
    /* More samples than any GPU makes in the time (10^10 a second: one per
     * SM every 32 cycles on a thousand SMs at 3 GHz) are not counts: CUPTI
     * once handed over 7.3 * 10^11 in a 20 s run on an H100. Said and left
     * out, so that the window's totals stay true; the PCs are still read. */
    double most = 1e10 * (double)(now - since > 0 ? now - since : 1) / 1e9 + 1e6;
    if ((double)d->totalSamples > most || (double)d->nonUsrKernelsTotalSamples > most) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "context %u: CUPTI reported %llu samples (%llu non-user) in %.0f ms, more than "
                 "a GPU makes; those counts are left out",
                 x->id, (unsigned long long)d->totalSamples,
                 (unsigned long long)d->nonUsrKernelsTotalSamples, (double)(now - since) / 1e6);
        note_error(p, msg);
    } else {
        x->window.samples += d->totalSamples;
        x->window.non_user += d->nonUsrKernelsTotalSamples;
    }
    x->window.dropped += d->droppedSamples;
    /* One PC cannot hold more samples than the whole GPU takes: one per SM
     * each 2^period cycles, on a thousand SMs at 3 GHz, over the time since
     * the last hand-over (a second at least, for CUPTI's decode latency). */
    double seconds = (double)(now - since) / 1e9;
    double most_pc =
        3e12 / (double)(1ull << (x->period < 40 ? x->period : 40)) * (seconds > 1 ? seconds : 1) +
        1000;
    size_t n = d->totalNumPcs < d->collectNumPcs ? d->totalNumPcs : d->collectNumPcs;
    for (size_t i = 0; i < n; i++) {
        const CUpti_PCSamplingPCData *pc = &d->pPcData[i];
        if (pc->functionName == NULL) continue;
        own_name(p, pc->functionName);
        if (implausible(p, x, pc, most_pc)) continue;
        const char *function = pc->functionName[0] ? pc->functionName : name_unnamed(p, x, pc);
        uint64_t *not_kept = function != NULL    ? NULL
                             : pc->cubinCrc == 0 ? &x->window.unplaced
                                                 : &x->window.lost;
        size_t reasons =
            pc->stallReasonCount < x->reason_count ? pc->stallReasonCount : x->reason_count;
        for (size_t r = 0; r < reasons; r++) {
            const CUpti_PCSamplingStallReason *s = &pc->stallReason[r];
            int pos = reason_pos(x, s->pcSamplingStallReasonIndex);
            if (pos < 0 || !x->reason_plain[pos] || s->samples == 0) continue;
            if (not_kept != NULL)
                *not_kept += s->samples;
            else if (agg_add(p, slot, pc->cubinCrc, function, pc->pcOffset, (uint32_t)pos,
                             s->samples) == 0)
                x->window.recorded += s->samples;
            else
                x->window.lost += s->samples;
        }
    }
}

/* Lock held. What a disable handed over in final_buf, said when it filled. */
static void fold_final(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x) {
    fold(p, x, x->final_buf);
    if (x->final_buf->totalNumPcs < x->final_buf->collectNumPcs) return;
    char msg[200];
    snprintf(msg, sizeof msg,
             "context %u: the disable buffer was full (%zu PCs); CUPTI discarded the rest "
             "(in pc_window: samples not recorded)",
             x->id, x->final_buf->collectNumPcs);
    note_error(p, msg);
}

/* Lock held. Once CUPTI's hardware buffer is full it stays full: every
 * later GetData answers CUPTI_ERROR_OUT_OF_MEMORY with no data, for the
 * rest of the run (measured on an H100, docs/design/pc-sampling.md: at
 * period 12 from 1.6 s on; at period 16 in most runs of a training loop
 * after a minute). Sampling on the context is therefore restarted:
 * disabled (what CUPTI still holds comes in final_buf), enabled and
 * configured again. Not under Deep, where a disable while SASS metrics
 * count crashed inside CUPTI: there the loss lasts to the end, said in the
 * warning. A restart that fails leaves the context unsampled, said. The
 * collector restarts with the launch gate closed: a disable and enable on
 * the collector thread while the application launched hung both (period
 * 12 on an H100). Even so one of three long runs of a training loop hung
 * after its restart (docs/design/pc-sampling.md), so restarts are asked
 * for: GPUFL_PC_SAMPLING_RESTART=1. */
static void restart(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x) {
    x->needs_restart = 0; /* set by drain only where a restart is allowed */
    if (x->state != CTX_ON) return;
    int64_t t0 = gpufl__mono_ns();
    clear_counts(x->final_buf);
    if (disable(p, x) != 0) {
        /* Still sampling, final_buf still CUPTI's: kept, and left to
         * finish or destroy; no more restarts here. */
        x->restart_refused = 1;
        return;
    }
    fold_final(p, x);
    CUpti_PCSamplingEnableParams prm = {.size = CUpti_PCSamplingEnableParamsSize};
    prm.ctx = x->ctx;
    CUptiResult r = enable_sampling(p, &prm);
    if (r != CUPTI_SUCCESS) {
        explain(p, r, "cuptiPCSamplingEnable (restart)", x->error, sizeof x->error);
    } else if (configure(p, x) != 0) {
        disable(p, x);
    } else {
        p->restarts++;
        p->restart_ns += gpufl__mono_ns() - t0;
        return;
    }
    char msg[sizeof x->error + 80];
    snprintf(msg, sizeof msg, "context %u: sampling could not restart and stops: %s", x->id,
             x->error);
    note_error(p, msg);
    free_buffers(x);
    /* FAILED, not GONE: a later first launch on the context must not
     * enable it again, ungated (context_destroying frees the slot). */
    x->state = CTX_FAILED;
}

/* Lock held. GetData until CUPTI has nothing more for this context. */
static void drain(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x) {
    if (x->state != CTX_ON) return;
    x->drained_ns = gpufl__mono_ns();
    x->drain_pc_sampling = 0;
    x->drain_trouble = 0;
    CUpti_PCSamplingData *d = x->drain_buf;
    for (int loop = 0; loop < DRAIN_LOOPS; loop++) {
        CUpti_PCSamplingGetDataParams prm = {.size = CUpti_PCSamplingGetDataParamsSize};
        prm.ctx = x->ctx;
        prm.pcSamplingData = d;
        clear_counts(d);
        int64_t t0 = gpufl__mono_ns();
        CUptiResult r = p->fn.get_data(&prm);
        int64_t took = gpufl__mono_ns() - t0;
        p->get_data_ns += took;
        if (took > p->get_data_max_ns) p->get_data_max_ns = took;
        x->window.drains++;
        if (r == CUPTI_ERROR_OUT_OF_MEMORY || d->hardwareBufferFull) {
            x->window.buffer_full++;
            x->drain_trouble = 1;
            x->drain_pc_sampling += d->totalNumPcs;
            fold(p, x, d); /* counts, if CUPTI gave any */
            x->pc_sampling_left = 0;
            /* by the collector, through the gate */
            x->needs_restart = p->restart_full && !p->cfg.deep && !x->restart_refused;
            return;
        }
        if (r != CUPTI_SUCCESS) {
            char msg[200];
            explain(p, r, "cuptiPCSamplingGetData", msg, sizeof msg);
            note_error(p, msg);
            x->drain_trouble = 2;
            break;
        }
        uint64_t before = x->window.recorded;
        x->drain_pc_sampling += d->totalNumPcs;
        fold(p, x, d);
        /* The call's start on CLOCK_MONOTONIC and its length, so that a
         * study of step times can line them up (bench/gpu/pc_sampling_overhead.py). */
        gpufl__debug(
            "PC sampling: context %u GetData at %.1f ms (mono %lld ns, took %lld ns): %zu PCs, "
            "%zu left, recorded %llu, total %llu, dropped %llu, non-user %llu",
            x->id, (double)gpufl__collector_session_ns(p->collector, t0) / 1e6, (long long)t0,
            (long long)took, d->totalNumPcs, d->remainingNumPcs,
            (unsigned long long)(x->window.recorded - before), (unsigned long long)d->totalSamples,
            (unsigned long long)d->droppedSamples,
            (unsigned long long)d->nonUsrKernelsTotalSamples);
        if (d->remainingNumPcs == 0) break;
    }
    x->pc_sampling_left = d->remainingNumPcs;
}

/* Lock held. The last data of a context: drained, disabled (CUPTI then
 * copies what it still held into final_buf), folded. */
static void stop_context(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x) {
    if (x->state != CTX_ON) return;
    drain(p, x);
    clear_counts(x->final_buf);
    disable(p, x);
    fold_final(p, x);
    free_buffers(x);
    x->pc_sampling_left = 0;
    x->state = CTX_GONE;
}

void gpufl__pc_sampling_context_destroying(gpufl__pc_sampling_t *p, void *context) {
    if (p == NULL || atomic_load(&p->finished)) return;
    if (lock_within(p, GPUFL_ENGINE_DESTROY_LOCK_MS) != 0)
        return; /* later GetData calls on it fail, counted */
    for (int i = 0; i < p->ctx_count; i++) {
        pc_sampling_ctx_t *x = &p->ctx[i];
        if (x->ctx != (CUcontext)context) continue;
        if (x->state == CTX_ON) stop_context(p, x);
        if (x->state == CTX_FAILED) x->state = CTX_GONE; /* a new context there is tried */
    }
    pthread_mutex_unlock(&p->lock);
}

/* The module's cubin, kept for its SASS under the CRC PC records carry. */
void gpufl__pc_sampling_module_loaded(gpufl__pc_sampling_t *p, void *context, const void *cubin,
                                      size_t size) {
    (void)context;
    if (p != NULL) atomic_fetch_add(&p->modules_loaded, 1);
    if (p == NULL || !p->sass_owned || cubin == NULL || size == 0 || atomic_load(&p->finished))
        return;
    CUpti_GetCubinCrcParams prm = {.size = CUpti_GetCubinCrcParamsSize};
    prm.cubinSize = size;
    prm.cubin = cubin;
    if (p->fn.cubin_crc(&prm) != CUPTI_SUCCESS) return;
    gpufl__sass_log_add_cubin(p->sass, prm.cubinCrc, cubin, size);
}

/* PCs of a module unloaded and another loaded in its place must not mix:
 * what CUPTI has of the old one is taken first. */
void gpufl__pc_sampling_module_unloading(gpufl__pc_sampling_t *p, void *context) {
    if (p == NULL || atomic_load(&p->finished)) return;
    atomic_fetch_add(&p->modules_unloaded, 1);
    gpufl__debug("PC sampling: a module unloads at %.1f ms",
                 (double)gpufl__collector_session_ns(p->collector, gpufl__mono_ns()) / 1e6);
    if (lock_within(p, GPUFL_ENGINE_CALLBACK_LOCK_MS) != 0) return;
    for (int i = 0; i < p->ctx_count; i++)
        if (p->ctx[i].ctx == (CUcontext)context) drain(p, &p->ctx[i]);
    pthread_mutex_unlock(&p->lock);
}

static void on_resource(void *user, uint32_t cbid, const void *data) {
    gpufl__pc_sampling_t *p = user;
    const CUpti_ResourceData *r = data;
    if (r == NULL) return;
    switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
        gpufl__pc_sampling_context_created(p, r->context);
        break;
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
        gpufl__pc_sampling_context_destroying(p, r->context);
        break;
    case CUPTI_CBID_RESOURCE_MODULE_LOADED: {
        const CUpti_ModuleResourceData *m = r->resourceDescriptor;
        if (m != NULL) gpufl__pc_sampling_module_loaded(p, r->context, m->pCubin, m->cubinSize);
        break;
    }
    case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING:
        gpufl__pc_sampling_module_unloading(p, r->context);
        break;
    default: break;
    }
}

static int on_context_seen(void *user, void *context) {
    return gpufl__pc_sampling_context_seen(user, context);
}

const gpufl__launch_hooks_t *gpufl__pc_sampling_hooks(gpufl__pc_sampling_t *p) {
    p->hooks = (gpufl__launch_hooks_t){on_resource, on_context_seen, p};
    return &p->hooks;
}

/* ---------------------------------------------------------------------- */
/* Writing                                                                  */
/* ---------------------------------------------------------------------- */

static gpufl__intern_t *dict(gpufl__pc_sampling_t *p) {
    return (gpufl__intern_t *)gpufl__collector_dict(p->collector);
}

static uint32_t intern(gpufl__pc_sampling_t *p, const char *s) {
    return gpufl__intern(dict(p), s, strlen(s));
}

/* The pc_sampling record of a context, once. Collector thread, lock held. */
static void announce(gpufl__pc_sampling_t *p, pc_sampling_ctx_t *x) {
    if (x->announced || x->state == CTX_FREE) return;
    x->announced = 1;
    const char *reasons[REASONS_MAX];
    gpufl__wire_pc_sampling_t r = {
        .ts_ns = gpufl__collector_session_ns(p->collector, x->started_ns),
        .device = x->device,
        .context = x->id,
        .late = x->late,
        .enable_ms = (double)x->enable_ns / 1e6,
    };
    if (x->reason_count == 0 || x->error[0]) {
        r.error = x->error[0] ? x->error : "sampling did not start";
    } else {
        r.period = x->period;
        r.mode = "continuous";
        r.scratch_bytes = (int64_t)x->scratch_bytes;
        r.hardware_buffer_bytes = (int64_t)x->hw_bytes;
        r.worker_sleep_ms = x->sleep_ms;
        r.reasons.names = reasons;
        for (size_t i = 0; i < x->reason_count; i++) {
            if (!x->reason_plain[i]) continue;
            reasons[r.reasons.count++] = x->reason_name[i];
            x->reason_dict[i] = intern(p, x->reason_name[i]);
        }
    }
    gpufl__line_t l;
    gpufl__wire_pc_sampling(&l, &r);
    gpufl__collector_record(p->collector, GPUFL_FILE_DEVICE, &l);
}

/* The dict id of a function's name, interned once per CUPTI string (rows
 * of every window name it again). */
static uint32_t function_id(gpufl__pc_sampling_t *p, const char *name) {
    size_t *known = gpufl__idmap_value(&p->names, (uint64_t)(uintptr_t)name);
    if (known != NULL && *known != 0) return (uint32_t)*known;
    uint32_t id = intern(p, name);
    if (known != NULL) *known = id;
    size_t d;
    if (gpufl__idmap_get(&p->demangled, id, &d)) return id;
    char *text = gpufl__demangle(name);
    d = text ? intern(p, text) : id;
    free(text);
    gpufl__idmap_put(&p->demangled, id, d, NULL);
    gpufl__idmap_put(&p->functions, id, 1, NULL);
    return id;
}

/* The dict id of a module's CRC as hex ("0x5e1f..."), interned once. */
static uint32_t cubin_id(gpufl__pc_sampling_t *p, uint64_t crc) {
    size_t id;
    if (crc != 0 && gpufl__idmap_get(&p->cubins, crc, &id)) return (uint32_t)id;
    char hex[24];
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)crc);
    uint32_t fresh = intern(p, hex);
    if (crc != 0) gpufl__idmap_put(&p->cubins, crc, fresh, NULL);
    return fresh;
}

/* Returns 0, or -1 when the batch had no room (the caller counts the loss). */
static int add_row(gpufl__pc_sampling_t *p, gpufl__batch_t *b, const int64_t *v, int n) {
    gpufl__cell_t *r = gpufl__collector_row(p->collector, GPUFL_FILE_DEVICE, b);
    if (r == NULL) return -1;
    for (int i = 0; i < n; i++) r[i].i = v[i];
    return 0;
}

/* The end of a context's window: its own last drain (which may be on an
 * application thread, at module unload or context destruction, and after
 * the collector's), never before the window's start. */
static int64_t window_end(const gpufl__pc_sampling_t *p, const pc_sampling_ctx_t *x, int64_t t1) {
    int64_t t = x->drained_ns ? gpufl__collector_session_ns(p->collector, x->drained_ns) : t1;
    return t > x->window_t0 ? t : x->window_t0;
}

/* Lock held. Turns the window's table into rows, and one pc_window row per
 * context that was drained in it. */
static void close_window(gpufl__pc_sampling_t *p, int64_t now_ns) {
    int64_t t1 =
        gpufl__collector_session_ns(p->collector, p->last_drain_ns ? p->last_drain_ns : now_ns);
    for (int i = 0; i < p->ctx_count; i++) announce(p, &p->ctx[i]); /* names the reasons */
    for (size_t i = 0; i < p->agg_slots; i++) {
        agg_t *e = &p->agg[i];
        if (e->function == NULL) continue;
        pc_sampling_ctx_t *x = &p->ctx[e->ctx];
        uint32_t fid = function_id(p, e->function);
        gpufl__sass_log_want(p->sass, e->crc, e->function, fid);
        size_t dem = fid;
        gpufl__idmap_get(&p->demangled, fid, &dem);
        int64_t v[] = {x->window_t0,
                       window_end(p, x, t1),
                       x->id,
                       cubin_id(p, e->crc),
                       fid,
                       (int64_t)dem,
                       (int64_t)e->pc,
                       x->reason_dict[e->reason_pos],
                       (int64_t)e->samples};
        if (add_row(p, &p->rows, v, NCOLS(v)) == 0) {
            p->rows_written++;
        } else {
            x->window.recorded -= e->samples;
            x->window.lost += e->samples;
        }
    }
    if (p->agg_count) memset(p->agg, 0, p->agg_slots * sizeof *p->agg);
    p->agg_count = 0;
    for (int i = 0; i < p->ctx_count; i++) {
        pc_sampling_ctx_t *x = &p->ctx[i];
        pc_sampling_counts_t *w = &x->window;
        if (w->drains == 0) continue;
        int64_t end = window_end(p, x, t1);
        int64_t v[] = {x->window_t0,
                       end,
                       x->id,
                       (int64_t)w->drains,
                       (int64_t)w->samples,
                       (int64_t)w->recorded,
                       (int64_t)w->non_user,
                       (int64_t)w->dropped,
                       (int64_t)w->buffer_full,
                       (int64_t)x->pc_sampling_left,
                       (int64_t)w->lost,
                       (int64_t)w->unplaced};
        add_row(p, &p->windows, v, NCOLS(v));
        p->total.drains += w->drains;
        p->total.samples += w->samples;
        p->total.recorded += w->recorded;
        p->total.non_user += w->non_user;
        p->total.dropped += w->dropped;
        p->total.buffer_full += w->buffer_full;
        p->total.lost += w->lost;
        p->total.unplaced += w->unplaced;
        if (w->buffer_full && !p->warned_full) {
            p->warned_full = 1;
            const char *then =
                p->cfg.deep ? "under Deep sampling cannot restart, so samples are lost until "
                              "the end"
                : !p->restart_full ? "samples are lost until the end unless "
                                     "GPUFL_PC_SAMPLING_RESTART=1"
                : x->state != CTX_ON || x->restart_refused
                    ? "sampling could not restart (see pc_sampling_error)"
                : x->needs_restart ? "sampling restarts after the next drain"
                                   : "sampling was restarted";
            char msg[300];
            snprintf(msg, sizeof msg,
                     "PC sampling: CUPTI's hardware buffer was full on context %u; samples were "
                     "lost that CUPTI does not count; %s (set a longer "
                     "GPUFL_PC_SAMPLING_PERIOD than %u)",
                     x->id, then, x->period);
            gpufl__warn("%s", msg);
            gpufl__collector_event(p->collector, GPUFL_FILE_DEVICE, "warn", "pc_buffer_full", msg);
        }
        if (w->dropped && !p->warned_dropped) {
            p->warned_dropped = 1;
            char msg[200];
            snprintf(msg, sizeof msg,
                     "PC sampling: the hardware dropped %llu samples on context %u",
                     (unsigned long long)w->dropped, x->id);
            gpufl__collector_event(p->collector, GPUFL_FILE_DEVICE, "warn", "pc_samples_dropped",
                                   msg);
        }
        memset(w, 0, sizeof *w);
        x->window_t0 = end;
    }
}

/* Lock held: failed calls since the last pass, as one event with the
 * latest message and the running count. */
static void report_errors(gpufl__pc_sampling_t *p) {
    gpufl__engine_report_errors(&p->errors, p->collector, "PC sampling", "pc_sampling_error",
                                "a context or module callback",
                                "its context is enabled at its first launch, its samples may be "
                                "lost");
}

void gpufl__pc_sampling_set_gate(gpufl__pc_sampling_t *p, gpufl__launch_t *gate) {
    if (p != NULL) p->gate = gate;
}

void gpufl__pc_sampling_hold_enables(gpufl__pc_sampling_t *p, int hold) {
    if (p != NULL) atomic_store(&p->holding, hold);
}

void gpufl__pc_sampling_set_enable_hook(gpufl__pc_sampling_t *p,
                                        gpufl__pc_sampling_enable_hook_t hook, void *user) {
    if (p == NULL) return;
    p->enable_hook = hook;
    p->enable_hook_user = user;
}

#ifndef GPUFL_DIAGNOSE_DEEP_UNGATED
#define GATED_DRAINS(p) ((p)->cfg.deep && (p)->gate != NULL) /* Deep's drains pass the gate */
#else
#define GATED_DRAINS(p) 0 /* diagnosis build: Deep's drains without the gate */
#endif

/* Lock held, after a periodic drain of every context: the GetData period
 * for the next, from what the fullest context's drain brought (SCRATCH_PCS).
 * Nothing changes while no context samples (a period grown before the
 * first context would make its first windows long) or after a failed call;
 * a full buffer, or records left behind, go straight to the shortest; a
 * heavy drain shortens in proportion, aiming at an eighth of the buffer. */
static void adapt_drain_period(gpufl__pc_sampling_t *p) {
    if (p->drain_fixed) return;
    size_t most = 0;
    int on = 0, left = 0, full = 0, failed = 0;
    for (int i = 0; i < p->ctx_count; i++) {
        const pc_sampling_ctx_t *x = &p->ctx[i];
        if (x->state != CTX_ON) continue;
        on++;
        if (x->drain_pc_sampling > most) most = x->drain_pc_sampling;
        left |= x->pc_sampling_left > 0;
        full |= x->drain_trouble == 1;
        failed |= x->drain_trouble == 2;
    }
    if (on == 0 || failed) return;
    int64_t period = p->drain_every_ns;
    if (full || left) {
        period = GPUFL_PC_SAMPLING_DRAIN_MIN_NS;
    } else if (most > SCRATCH_PCS / 4) {
        period = (int64_t)((double)period * (SCRATCH_PCS / 8) / (double)most);
        if (period > p->drain_every_ns / 2) period = p->drain_every_ns / 2;
    } else if (most < SCRATCH_PCS / 16) {
        period *= 2;
    }
    if (period < GPUFL_PC_SAMPLING_DRAIN_MIN_NS) period = GPUFL_PC_SAMPLING_DRAIN_MIN_NS;
    if (period > GPUFL_PC_SAMPLING_DRAIN_MAX_NS) period = GPUFL_PC_SAMPLING_DRAIN_MAX_NS;
    if (period < p->drain_every_ns) p->drain_shortened++;
    p->drain_every_ns = period;
}

/* The periodic drain of every context. The gate is closed before the lock
 * is taken: a launch may wait on the lock in its enter callback (a context
 * seen first), before it counts itself in. */
static void drain_due(gpufl__pc_sampling_t *p, int64_t now_ns) {
    if (now_ns < p->next_drain_ns) return; /* next_drain_ns: the collector's own */
    int gated = GATED_DRAINS(p);
    if (gated && gpufl__launch_gate_close(p->gate, GPUFL_PC_SAMPLING_GATE_WAIT_NS) != 0) {
        /* A launch stays inside the driver: tried again later and later (a
         * closed gate holds every other launch for its wait), and said
         * once when it lasts (a launch whose exit never came keeps it). */
        int streak = p->defer_streak < 30 ? ++p->defer_streak : p->defer_streak;
        int64_t retry = GPUFL_PC_SAMPLING_GATE_RETRY_NS << (streak < 10 ? streak - 1 : 9);
        pthread_mutex_lock(&p->lock);
        p->drains_deferred++;
        if (streak == 20)
            note_error(p, "Deep: drains put off 20 times in a row: a kernel launch "
                          "stays inside the driver (the launch gate)");
        pthread_mutex_unlock(&p->lock);
        p->next_drain_ns = now_ns + (retry < p->drain_every_ns ? retry : p->drain_every_ns);
        return;
    }
    p->defer_streak = 0;
    pthread_mutex_lock(&p->lock);
    int restarts = 0;
    for (int i = 0; i < p->ctx_count; i++) {
        drain(p, &p->ctx[i]);
        restarts += p->ctx[i].needs_restart;
    }
    adapt_drain_period(p);
    p->last_drain_ns = now_ns;
    pthread_mutex_unlock(&p->lock);
    if (gated) gpufl__launch_gate_open(p->gate);
    p->next_drain_ns = now_ns + p->drain_every_ns;
    if (restarts == 0 || gpufl__launch_gate_close(p->gate, GPUFL_PC_SAMPLING_GATE_WAIT_NS) != 0)
        return; /* tried again after the next drain */
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->ctx_count; i++)
        if (p->ctx[i].needs_restart) restart(p, &p->ctx[i]);
    pthread_mutex_unlock(&p->lock);
    gpufl__launch_gate_open(p->gate);
}

void gpufl__pc_sampling_poll(gpufl__pc_sampling_t *p, int64_t now_ns) {
    if (p == NULL) return;
    drain_due(p, now_ns);
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->ctx_count; i++) announce(p, &p->ctx[i]);
    report_errors(p);
    if (p->window_end_ns == 0) p->window_end_ns = now_ns + p->cfg.window_ns;
    if (now_ns >= p->window_end_ns) {
        close_window(p, now_ns);
        p->window_end_ns = now_ns + p->cfg.window_ns;
    }
    pthread_mutex_unlock(&p->lock);
}

void gpufl__pc_sampling_flush(gpufl__pc_sampling_t *p) {
    if (p == NULL) return;
    gpufl__collector_batch(p->collector, GPUFL_FILE_DEVICE, &p->rows);
    gpufl__collector_batch(p->collector, GPUFL_FILE_DEVICE, &p->windows);
    gpufl__sass_log_write(p->sass); /* after the rows that define its dict ids */
}

static void write_stats(gpufl__pc_sampling_t *p) {
    gpufl__pc_sampling_stats_t s;
    gpufl__pc_sampling_stats(&s, p);
    const gpufl__engine_count_t v[] = {{"contexts", s.contexts},
                                       {"drains", s.drains},
                                       {"samples", s.samples},
                                       {"recorded", s.recorded},
                                       {"non_user", s.non_user},
                                       {"dropped", s.dropped},
                                       {"buffer_full", s.buffer_full},
                                       {"drains_deferred", s.drains_deferred},
                                       {"modules_loaded", s.modules_loaded},
                                       {"modules_unloaded", s.modules_unloaded},
                                       {"restarts", s.restarts},
                                       {"unnamed_records", s.unnamed_records},
                                       {"unplaced", s.unplaced},
                                       {"unnamed_named", s.unnamed_named},
                                       {"cupti_null_names", s.cupti_null_names},
                                       {"implausible_records", s.implausible_records},
                                       {"drain_fixed", s.drain_fixed},
                                       {"drain_shortened", s.drain_shortened},
                                       {"rows", s.rows},
                                       {"functions", s.functions},
                                       {"errors", s.errors},
                                       {"lost", s.lost},
                                       {"cubins", s.cubins},
                                       {"cubins_over_cap", s.cubins_skipped},
                                       {"sass_functions", s.sass_functions},
                                       {"sass_failed", s.sass_failed}};
    const gpufl__wire_measure_t m[] = {{"drain_ms", (double)p->drain_every_ns / 1e6, 1},
                                       {"get_data_ms", (double)p->get_data_ns / 1e6, 1},
                                       {"get_data_max_ms", (double)p->get_data_max_ns / 1e6, 1},
                                       {"restart_ms", (double)p->restart_ns / 1e6, 1}};
    gpufl__engine_write_totals(p->collector, "pc_sampling_stats", v, sizeof v / sizeof v[0], m,
                               sizeof m / sizeof m[0]);
}

void gpufl__pc_sampling_finish(gpufl__pc_sampling_t *p) {
    if (p == NULL) return;
    /* What CUPTI still decodes is handed over at its next period: one
     * drain, one wait, then the disable takes the rest (whatever does not
     * fit its buffer is lost, and shows in pc_window). */
    uint32_t wait_ms = 0;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->finished, 1); /* callbacks from now on find nothing to do */
    for (int i = 0; i < p->ctx_count; i++) {
        if (p->ctx[i].state != CTX_ON) continue;
        drain(p, &p->ctx[i]);
        if (p->ctx[i].sleep_ms + 20 > wait_ms) wait_ms = p->ctx[i].sleep_ms + 20;
    }
    pthread_mutex_unlock(&p->lock);
    if (wait_ms > 1000) wait_ms = 1000;
    struct timespec pause = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L};
    if (wait_ms) nanosleep(&pause, NULL);
    int64_t now = gpufl__mono_ns();
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->ctx_count; i++) {
        announce(p, &p->ctx[i]);
        stop_context(p, &p->ctx[i]);
    }
    p->last_drain_ns = now;
    close_window(p, now);
    report_errors(p);
    pthread_mutex_unlock(&p->lock);
    gpufl__pc_sampling_flush(p);
    if (p->sass_owned) gpufl__sass_log_finish(p->sass, GPUFL_SASS_LOG_FINISH_NS);
    write_stats(p);
}

uint32_t gpufl__pc_sampling_context_id(gpufl__pc_sampling_t *p, void *context) {
    if (p == NULL || context == NULL) return 0;
    uint32_t id = 0;
    pthread_mutex_lock(&p->lock);
    /* A context sampled now first: an address can be reused by a new
     * context after an old one was destroyed. */
    for (int i = p->ctx_count - 1; i >= 0 && id == 0; i--)
        if (p->ctx[i].ctx == (CUcontext)context && p->ctx[i].state == CTX_ON) id = p->ctx[i].id;
    for (int i = p->ctx_count - 1; i >= 0 && id == 0; i--)
        if (p->ctx[i].ctx == (CUcontext)context) id = p->ctx[i].id;
    pthread_mutex_unlock(&p->lock);
    if (id == 0 && p->fn.context_id((CUcontext)context, &id) != CUPTI_SUCCESS) id = 0;
    return id;
}

int64_t gpufl__pc_sampling_due_in(gpufl__pc_sampling_t *p, int64_t now_ns) {
    if (p == NULL) return INT64_MAX;
    int64_t due = p->next_drain_ns - now_ns;
    return due > 0 ? due : 0;
}

const char *gpufl__pc_sampling_sass_why(const gpufl__pc_sampling_t *p) {
    return p == NULL ? "needs engine PcSampling or Deep" : p->sass ? NULL : p->sass_why;
}

int gpufl__pc_sampling_running(gpufl__pc_sampling_t *p) {
    if (p == NULL) return 0;
    pthread_mutex_lock(&p->lock);
    int n = 0;
    for (int i = 0; i < p->ctx_count; i++) n += p->ctx[i].state == CTX_ON;
    pthread_mutex_unlock(&p->lock);
    return n;
}

void gpufl__pc_sampling_stats(gpufl__pc_sampling_stats_t *out, gpufl__pc_sampling_t *p) {
    memset(out, 0, sizeof *out);
    if (p == NULL) return;
    pthread_mutex_lock(&p->lock);
    out->contexts = p->contexts;
    out->drains = p->total.drains;
    out->samples = p->total.samples;
    out->recorded = p->total.recorded;
    out->non_user = p->total.non_user;
    out->dropped = p->total.dropped;
    out->buffer_full = p->total.buffer_full;
    out->lost = p->total.lost;
    out->rows = p->rows_written;
    out->functions = p->functions.count;
    out->errors = p->errors.count;
    out->drains_deferred = p->drains_deferred;
    out->restarts = p->restarts;
    out->unnamed_records = p->unnamed_records;
    out->unnamed_named = p->unnamed_named;
    out->unplaced = p->total.unplaced;
    out->implausible_records = p->implausible_records;
    out->drain_fixed = (uint64_t)p->drain_fixed;
    out->drain_shortened = p->drain_shortened;
    pthread_mutex_unlock(&p->lock);
    out->cupti_null_names = gpufl__engine_null_names();
    out->modules_loaded = atomic_load(&p->modules_loaded);
    out->modules_unloaded = atomic_load(&p->modules_unloaded);
    gpufl__sass_log_stats_t ss;
    gpufl__sass_log_stats(&ss, p->sass);
    out->cubins = ss.cubins;
    out->cubins_skipped = ss.cubins_over_cap;
    out->sass_functions = ss.records;
    out->sass_failed = ss.errors;
}

void gpufl__pc_sampling_destroy(gpufl__pc_sampling_t *p) {
    if (p == NULL) return;
    for (int i = 0; i < p->ctx_count; i++) {
        if (p->ctx[i].state == CTX_ON) disable(p, &p->ctx[i]);
        free_ctx(&p->ctx[i]);
    }
    free(p->agg);
    if (p->sass_owned) gpufl__sass_log_destroy(p->sass);
    gpufl__idmap_fini(&p->names);
    gpufl__idmap_fini(&p->cubins);
    gpufl__idmap_fini(&p->demangled);
    gpufl__idmap_fini(&p->functions);
    gpufl__batch_fini(&p->rows);
    gpufl__batch_fini(&p->windows);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
