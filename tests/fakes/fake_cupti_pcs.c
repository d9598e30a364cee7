// SPDX-License-Identifier: Apache-2.0
/*
 * fake_cupti_pcs.c - the PC Sampling API of the fake libcupti (built into
 * cupti/libcupti.so, not into the old variant, which stands for a CUPTI
 * without it): per-context enable, configuration attributes read back,
 * stall reasons, and PC records a test queues, handed out by GetData and,
 * at Disable, copied into the client's sampling data buffer as CUPTI does.
 *
 * Its stall reasons mirror the real list's shape (docs/design/pc-sampling.md):
 * a total and a dropped count that are not reasons, and a `_not_issued`
 * twin of each reason, listed out of index order.
 *
 * A test queues records with fake_cupti_pcs_add (and _add_nameless), adds driver-internal or
 * dropped samples with fake_cupti_pcs_count, and makes GetData answer
 * "hardware buffer full" with fake_cupti_pcs_buffer_full (until the next
 * disable: the real buffer, once full, stays so). A test marks
 * the stretch of a launch call where the real driver patches a function
 * for SASS metrics with fake_cupti_pcs_patching; a GetData inside it (which
 * crashed the real CUPTI) is counted, fake_cupti_pcs_unsafe_calls. Function names
 * are allocated here once per distinct name and context; the client frees
 * them, as the real API asks. A record queued without a name has its NULL
 * copied through strdup at hand-over, as CUPTI 2025.3.1's GetData does
 * (docs/design/pc-sampling.md): the process dies unless the client gave
 * this library a strdup that accepts NULL.
 */
#include <cupti.h>
#include <cupti_pcsampling.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

extern _Atomic int fake__pc_sampling_enabled; /* fake_cupti.c: errors_while_sampling */
extern _Atomic int fake__live_at_pcs_enable;  /* fake_cupti.c */
int fake__live_kinds(void);

#define EXPORT    __attribute__((visibility("default")))
#define CTX_MAX   8
#define PCS_MAX   32768 /* past a quarter of the engine's scratch buffer (SCRATCH_PCS) */
#define NAMES_MAX 64

static const struct {
    uint32_t index;
    const char *name;
} reasons[] = {
    {5, "smsp__pcsamp_warps_issue_stalled_selected"},
    {0, "smsp__pcsamp_sample_count"},
    {3, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"},
    {1, "smsp__pcsamp_samples_data_dropped"},
    {2, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
    {4, "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"},
};
#define REASONS ((size_t)(sizeof reasons / sizeof reasons[0]))

typedef struct pending {
    uint64_t crc, pc;
    char *name;     /* NULL: a record without one */
    uint32_t index; /* the function's symbol index in its module */
    uint32_t reason;
    uint32_t samples;
} pending_t;

typedef struct fake_ctx {
    CUcontext ctx;
    int enabled, enables, disables;
    uint32_t period, mode, start_stop, format;
    size_t scratch; /* set by the client; 0: CUPTI's default, 1 MiB */
    CUpti_PCSamplingData *final_buf;
    pending_t pending[PCS_MAX];
    size_t count;
    uint64_t total, dropped, non_user; /* counted since the last hand-over */
    int buffer_full;
    char *names[NAMES_MAX];
    unsigned char handed[NAMES_MAX]; /* given to the client, who frees it */
    size_t name_count;
    char *nameless; /* the copy of a NULL name, made at the first hand-over of one */
} fake_ctx_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fake_ctx_t contexts[CTX_MAX];
static CUptiResult enable_error;
static int patching;               /* launches inside their patching stretch */
static unsigned long unsafe_calls; /* GetData calls made meanwhile */

static fake_ctx_t *find(CUcontext ctx, int create) {
    for (int i = 0; i < CTX_MAX; i++)
        if (contexts[i].ctx == ctx && ctx != NULL) return &contexts[i];
    if (!create) return NULL;
    for (int i = 0; i < CTX_MAX; i++)
        if (contexts[i].ctx == NULL) {
            memset(&contexts[i], 0, sizeof contexts[i]);
            contexts[i].ctx = ctx;
            contexts[i].period = 11; /* CUPTI's own default on an H100 */
            return &contexts[i];
        }
    return NULL;
}

/* One string per distinct name and context, as CUPTI shares them. */
static char *name_of(fake_ctx_t *c, const char *name) {
    for (size_t i = 0; i < c->name_count; i++)
        if (strcmp(c->names[i], name) == 0) return c->names[i];
    if (c->name_count == NAMES_MAX) return NULL;
    return c->names[c->name_count++] = strdup(name);
}

/* CUPTI's copy of a missing name: strdup(NULL), once, then shared. */
static char *copy_nameless(fake_ctx_t *c) {
    if (c->nameless == NULL && c->name_count < NAMES_MAX) {
        const char *volatile missing = NULL; /* hidden from the compiler's nonnull check */
        c->nameless = strdup(missing);
        if (c->nameless != NULL) c->names[c->name_count++] = c->nameless;
    }
    return c->nameless;
}

static void mark_handed(fake_ctx_t *c, const char *name) {
    for (size_t i = 0; i < c->name_count; i++)
        if (c->names[i] == name) c->handed[i] = 1;
}

/* At disable: names handed out are the client's now; the others go. */
static void drop_names(fake_ctx_t *c) {
    for (size_t i = 0; i < c->name_count; i++)
        if (!c->handed[i]) free(c->names[i]);
    c->name_count = 0;
    c->nameless = NULL;
    memset(c->handed, 0, sizeof c->handed);
}

static int plain(uint32_t index) { return index >= 2 && index != 3; }

EXPORT CUptiResult cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams *p) {
    if (p == NULL || p->ctx == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    int live = fake__live_kinds(); /* the activity kinds on while sampling is enabled */
    if (live > fake__live_at_pcs_enable) fake__live_at_pcs_enable = live;
    pthread_mutex_lock(&lock);
    CUptiResult r = enable_error;
    fake_ctx_t *c = find(p->ctx, 1);
    if (r == CUPTI_SUCCESS && c == NULL) r = CUPTI_ERROR_MAX_LIMIT_REACHED;
    if (r == CUPTI_SUCCESS && c->enabled) r = CUPTI_ERROR_INVALID_OPERATION;
    if (r == CUPTI_SUCCESS) {
        c->enabled = 1;
        c->enables++;
        fake__pc_sampling_enabled = 1; /* fake_cupti.c: errors_while_sampling */
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Moves up to the buffer's room of c's pending PCs into d, one record per
 * (PC, function) with its reasons. Lock held. */
static void hand_out(fake_ctx_t *c, CUpti_PCSamplingData *d) {
    size_t n = 0, used = 0;
    while (used < c->count && n < d->collectNumPcs) {
        pending_t *first = &c->pending[used];
        CUpti_PCSamplingPCData *pc = &d->pPcData[n++];
        pc->cubinCrc = first->crc;
        pc->pcOffset = first->pc;
        pc->functionName = first->name ? first->name : copy_nameless(c);
        mark_handed(c, pc->functionName);
        pc->functionIndex = first->index;
        pc->correlationId = 0;
        pc->stallReasonCount = 0;
        while (used < c->count && c->pending[used].pc == first->pc &&
               c->pending[used].name == first->name && c->pending[used].crc == first->crc &&
               pc->stallReasonCount < REASONS) {
            pc->stallReason[pc->stallReasonCount].pcSamplingStallReasonIndex =
                c->pending[used].reason;
            pc->stallReason[pc->stallReasonCount].samples = c->pending[used].samples;
            pc->stallReasonCount++;
            used++;
        }
    }
    memmove(c->pending, c->pending + used, (c->count - used) * sizeof *c->pending);
    c->count -= used;
    d->totalNumPcs = n;
    d->remainingNumPcs = c->count;
    /* As CUPTI does in continuous mode: the counts are per hand-over, all of
     * them in the first call even when the PCs take several calls. */
    d->totalSamples = c->total;
    d->droppedSamples = c->dropped;
    d->nonUsrKernelsTotalSamples = c->non_user;
    c->total = c->dropped = c->non_user = 0;
    d->hardwareBufferFull = 0;
    d->rangeId = 0;
}

EXPORT CUptiResult cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams *p) {
    if (p == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = find(p->ctx, 0);
    CUptiResult r = CUPTI_ERROR_INVALID_OPERATION;
    if (c != NULL && c->enabled) {
        if (c->final_buf != NULL) hand_out(c, c->final_buf);
        c->count = 0; /* what did not fit is discarded */
        drop_names(c);
        c->enabled = 0;
        c->disables++;
        c->buffer_full = 0; /* full until sampling is disabled, as CUPTI's stays */
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams *p) {
    if (p == NULL || p->pcSamplingData == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    if (patching > 0) unsafe_calls++;
    fake_ctx_t *c = find(p->ctx, 0);
    CUptiResult r = CUPTI_ERROR_INVALID_OPERATION;
    if (c != NULL && c->enabled) {
        CUpti_PCSamplingData *d = p->pcSamplingData;
        if (c->buffer_full) { /* no data, and the counts left as they were */
            d->totalNumPcs = 0;
            d->remainingNumPcs = 0;
            d->hardwareBufferFull = 1;
            r = CUPTI_ERROR_OUT_OF_MEMORY;
        } else {
            hand_out(c, d);
            r = CUPTI_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams *p) {
    if (p == NULL || p->numStallReasons == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = find(p->ctx, 0);
    *p->numStallReasons = c && c->enabled ? REASONS : 0;
    pthread_mutex_unlock(&lock);
    return c ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_OPERATION;
}

EXPORT CUptiResult cuptiPCSamplingGetStallReasons(CUpti_PCSamplingGetStallReasonsParams *p) {
    if (p == NULL || p->stallReasonIndex == NULL || p->stallReasons == NULL ||
        p->numStallReasons < REASONS)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < REASONS; i++) {
        p->stallReasonIndex[i] = reasons[i].index;
        strncpy(p->stallReasons[i], reasons[i].name, CUPTI_STALL_REASON_STRING_SIZE - 1);
    }
    return CUPTI_SUCCESS;
}

static CUptiResult attributes(CUpti_PCSamplingConfigurationInfoParams *p, int set) {
    if (p == NULL || p->pPCSamplingConfigurationInfo == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = find(p->ctx, 0);
    if (c == NULL || !c->enabled) {
        pthread_mutex_unlock(&lock);
        return CUPTI_ERROR_INVALID_OPERATION;
    }
    for (size_t i = 0; i < p->numAttributes; i++) {
        CUpti_PCSamplingConfigurationInfo *a = &p->pPCSamplingConfigurationInfo[i];
        a->attributeStatus = CUPTI_SUCCESS;
        switch (a->attributeType) {
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
            if (set && (a->attributeData.samplingPeriodData.samplingPeriod < 5 ||
                        a->attributeData.samplingPeriodData.samplingPeriod > 31))
                a->attributeStatus = CUPTI_ERROR_INVALID_PARAMETER;
            else if (set)
                c->period = a->attributeData.samplingPeriodData.samplingPeriod;
            else
                a->attributeData.samplingPeriodData.samplingPeriod = c->period;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
            if (set) c->mode = a->attributeData.collectionModeData.collectionMode;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT:
            if (set) c->format = a->attributeData.outputDataFormatData.outputDataFormat;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
            if (set)
                c->start_stop = a->attributeData.enableStartStopControlData.enableStartStopControl;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
            if (set) c->final_buf = a->attributeData.samplingDataBufferData.samplingDataBuffer;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE:
            if (set)
                c->scratch = a->attributeData.scratchBufferSizeData.scratchBufferSize;
            else
                a->attributeData.scratchBufferSizeData.scratchBufferSize =
                    c->scratch ? c->scratch : 1 << 20;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE:
            if (!set) a->attributeData.hardwareBufferSizeData.hardwareBufferSize = 512u << 20;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN:
            if (!set)
                a->attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan =
                    100;
            break;
        default: a->attributeStatus = CUPTI_ERROR_INVALID_PARAMETER;
        }
    }
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult
cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *p) {
    return attributes(p, 1);
}

EXPORT CUptiResult
cuptiPCSamplingGetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *p) {
    return attributes(p, 0);
}

/* A fake context's id is its handle's low 16 bits; every context is on
 * device 0. */
EXPORT CUptiResult cuptiGetContextId(CUcontext ctx, uint32_t *id) {
    if (id == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    *id = (uint32_t)((uintptr_t)ctx & 0xffff);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetDeviceId(CUcontext ctx, uint32_t *id) {
    (void)ctx;
    if (id == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    *id = 0;
    return CUPTI_SUCCESS;
}

/* FNV-1a of the bytes folded to 32 bits, standing in for CUPTI's CRC (the
 * SASS Metrics API carries it in 32 bits). */
EXPORT CUptiResult cuptiGetCubinCrc(CUpti_GetCubinCrcParams *p) {
    if (p == NULL || p->cubin == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < p->cubinSize; i++)
        h = (h ^ ((const unsigned char *)p->cubin)[i]) * 0x100000001b3ull;
    p->cubinCrc = (h ^ (h >> 32)) & 0xffffffffu;
    return CUPTI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* For the tests                                                            */
/* ---------------------------------------------------------------------- */

EXPORT int fake_cupti_pcs_add(CUcontext ctx, uint64_t crc, const char *function, uint64_t pc,
                              uint32_t reason, uint32_t samples);
EXPORT int fake_cupti_pcs_add_uncounted(CUcontext ctx, uint64_t crc, const char *function,
                                        uint64_t pc, uint32_t reason, uint32_t samples);
EXPORT int fake_cupti_pcs_add_nameless(CUcontext ctx, uint64_t crc, uint32_t index, uint64_t pc,
                                       uint32_t reason, uint32_t samples);
EXPORT void fake_cupti_pcs_count(CUcontext ctx, uint64_t non_user, uint64_t dropped);
EXPORT int fake_cupti_pcs_strdup_rebound(void);
EXPORT int fake_cupti_pcs_add_many(CUcontext ctx, uint64_t crc, const char *function,
                                   uint64_t first_pc, uint64_t count, uint32_t reason,
                                   uint32_t samples);
EXPORT void fake_cupti_pcs_buffer_full(CUcontext ctx, int full);
EXPORT void fake_cupti_pcs_enable_error(CUptiResult r);
EXPORT int fake_cupti_pcs_state(CUcontext ctx, uint32_t *period, uint32_t *mode, int *enables,
                                int *disables);
EXPORT void fake_cupti_pcs_reset(void);
EXPORT void fake_cupti_pcs_patching(int on);
EXPORT unsigned long fake_cupti_pcs_unsafe_calls(void);

static int add(CUcontext ctx, uint64_t crc, const char *function, uint32_t index, uint64_t pc,
               uint32_t reason, uint32_t samples, int counted) {
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = find(ctx, 0);
    int rc = -1;
    char *name = c && function ? name_of(c, function) : NULL;
    if (c && c->enabled && (name || !function) && c->count < PCS_MAX) {
        c->pending[c->count++] = (pending_t){crc, pc, name, index, reason, samples};
        if (plain(reason) && counted) c->total += samples;
        rc = 0;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Queues samples of one PC and reason index (CUPTI's), in function index 1
 * of the module. The running total counts them as CUPTI counts samples:
 * plain reasons only. Returns 0, or -1 when the context is not enabled or
 * the queue is full. */
int fake_cupti_pcs_add(CUcontext ctx, uint64_t crc, const char *function, uint64_t pc,
                       uint32_t reason, uint32_t samples) {
    return function ? add(ctx, crc, function, 1, pc, reason, samples, 1) : -1;
}

/* The same, left out of the hand-over's total: a record whose count CUPTI
 * did not count, as one H100 run's were (8.5 times the total). */
int fake_cupti_pcs_add_uncounted(CUcontext ctx, uint64_t crc, const char *function, uint64_t pc,
                                 uint32_t reason, uint32_t samples) {
    return function ? add(ctx, crc, function, 1, pc, reason, samples, 0) : -1;
}

/* count records of PCs first_pc, first_pc + 16, ..., queued at once (no
 * GetData between them), each with samples of reason. Returns 0, or -1
 * (nothing queued) when the context is not enabled or they do not fit. */
int fake_cupti_pcs_add_many(CUcontext ctx, uint64_t crc, const char *function, uint64_t first_pc,
                            uint64_t count, uint32_t reason, uint32_t samples) {
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = find(ctx, 0);
    char *name = c && function ? name_of(c, function) : NULL;
    int rc = -1;
    if (c && c->enabled && name && c->count + count <= PCS_MAX) {
        for (uint64_t i = 0; i < count; i++)
            c->pending[c->count++] = (pending_t){crc, first_pc + 16 * i, name, 1, reason, samples};
        if (plain(reason)) c->total += count * samples;
        rc = 0;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* The same for a record without a function name, of symbol `index`. */
int fake_cupti_pcs_add_nameless(CUcontext ctx, uint64_t crc, uint32_t index, uint64_t pc,
                                uint32_t reason, uint32_t samples) {
    return add(ctx, crc, NULL, index, pc, reason, samples, 1);
}

/* 1 when this library's strdup is no longer the process's: its import was
 * pointed elsewhere (gpufl's guard against strdup(NULL)). */
int fake_cupti_pcs_strdup_rebound(void) {
    char *(*mine)(const char *) = strdup; /* read through this library's import slot */
    void *global = dlsym(RTLD_DEFAULT, "strdup");
    void *ours;
    memcpy(&ours, &mine, sizeof ours);
    return ours != global;
}

void fake_cupti_pcs_count(CUcontext ctx, uint64_t non_user, uint64_t dropped) {
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = find(ctx, 0);
    if (c) {
        c->non_user += non_user;
        c->dropped += dropped;
        c->total += non_user + dropped;
    }
    pthread_mutex_unlock(&lock);
}

void fake_cupti_pcs_buffer_full(CUcontext ctx, int full) {
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = find(ctx, 0);
    if (c) c->buffer_full = full;
    pthread_mutex_unlock(&lock);
}

void fake_cupti_pcs_enable_error(CUptiResult r) {
    pthread_mutex_lock(&lock);
    enable_error = r;
    pthread_mutex_unlock(&lock);
}

/* Returns 1 when the context is known, with its settings and counts. */
int fake_cupti_pcs_state(CUcontext ctx, uint32_t *period, uint32_t *mode, int *enables,
                         int *disables) {
    pthread_mutex_lock(&lock);
    fake_ctx_t *c = find(ctx, 0);
    if (c) {
        *period = c->period;
        *mode = c->mode;
        *enables = c->enables;
        *disables = c->disables;
    }
    pthread_mutex_unlock(&lock);
    return c != NULL;
}

/* Forgets every context (the names stay with the client that got them). */
void fake_cupti_pcs_reset(void) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < CTX_MAX; i++) drop_names(&contexts[i]);
    memset(contexts, 0, sizeof contexts);
    enable_error = CUPTI_SUCCESS;
    patching = 0;
    unsafe_calls = 0;
    pthread_mutex_unlock(&lock);
}

/* A launch enters (on = 1) or leaves (0) the part of its call where the
 * driver patches the function. */
void fake_cupti_pcs_patching(int on) {
    pthread_mutex_lock(&lock);
    patching += on ? 1 : -1;
    pthread_mutex_unlock(&lock);
}

unsigned long fake_cupti_pcs_unsafe_calls(void) {
    pthread_mutex_lock(&lock);
    unsigned long n = unsafe_calls;
    pthread_mutex_unlock(&lock);
    return n;
}
