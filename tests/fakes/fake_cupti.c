// SPDX-License-Identifier: Apache-2.0
/*
 * fake_cupti.c - a scriptable libcupti for the tests: the activity API that
 * lib/nvidia/cupti.c loads, records built in the real cupti_activity.h
 * layouts and delivered on a thread of its own at cuptiActivityFlushAll.
 *
 * Script: $GPUFL_FAKE_CUPTI names a JSON file, read when callbacks are
 * registered:
 *   {"register_error": 0,                 CUptiResult of RegisterCallbacks
 *    "enable_errors": {"38": 35},         CUpti_ActivityKind -> CUptiResult
 *    "errors_while_sampling": {"10": 0},  the same, once PC sampling was
 *                                         enabled on a context (fake_cupti_pcs.c);
 *                                         by default the concurrent-kernel kind
 *                                         is refused then, as CUPTI 13 does on an
 *                                         H100 and H200 (CUPTI_ERROR_NOT_COMPATIBLE)
 *    "records_per_buffer": 2,             0: as many as fit
 *    "records_per_flush": 10,             0: all pending
 *    "dropped": 5,                        added to the next dropped count
 *    "holds_partial": 1,                  an unforced flush keeps the buffer it
 *                                         wrote the pending records into (CUPTI
 *                                         completes a buffer still being filled
 *                                         only at a forced flush); a forced one
 *                                         completes every buffer kept
 *    "records": [{"kind": 10, "start": 1, "name": "k", ...}]}
 * Record fields carry the CUPTI struct's member names; absent ones are 0.
 * A record is delivered only if its kind was enabled; one added (by
 * fake_cupti_add_record) while its kind is disabled again is not kept, as
 * CUPTI records nothing of a kind while it is off; one that finds no
 * buffer (the client answered NULL) is dropped and counted, as CUPTI does.
 * Built with FAKE_CUPTI_OLD: no cuptiActivityRegisterTimestampCallback and
 * cuptiGetVersion says 12.0 (CUPTI API 120000).
 *
 * Replay: $GPUFL_FAKE_CUPTI_REPLAY names a file of activity buffers recorded
 * from the real CUPTI on a GPU machine (tests/gpu/record_cupti.cu writes it;
 * its header comment gives the layout). The first flush after the callbacks
 * are registered delivers each buffer byte for byte, with its kernel names
 * pointed at copies and every timestamp moved by one offset so that the
 * first record starts at that flush.
 *
 * The callback API: one subscriber at a time (a second is refused with
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, as CUPTI does), driver
 * callback names for the calls gpufl notes, per-thread external-correlation
 * stacks. A test makes a driver call happen with fake_cupti_call (the
 * subscriber's enter and exit callbacks run on the calling thread with a new
 * correlation id) and adds the activity record the call would produce with
 * fake_cupti_add_record. fake_cupti_call_across runs a function between a
 * call's enter and exit (a blocking call the subscription changes around);
 * fake_cupti_call_late runs it after the subscriber was looked up and before
 * its callbacks run (a delivery CUPTI began before an unsubscribe).
 */
#include <cupti.h>
#include <jansson.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT      __attribute__((visibility("default")))
#define KINDS_MAX   64
#define RECORDS_MAX 16384 /* a session of more than one full line (4096 rows) */
#define NAMES_MAX   256

typedef union any_record {
    CUpti_Activity base;
    CUpti_ActivityKernel10 kernel;
    CUpti_ActivityMemcpy6 copy;
    CUpti_ActivityMemset4 memset;
    CUpti_ActivitySynchronization2 sync;
    CUpti_ActivityMemory4 memory;
    CUpti_ActivityExternalCorrelation external;
} any_record_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc requested_fn;
static CUpti_BuffersCallbackCompleteFunc completed_fn;
static CUpti_TimestampCallbackFunc timestamp_fn;
static int enable_errors[KINDS_MAX], errors_while_sampling[KINDS_MAX];
/* Set by fake_cupti_pcs.c's cuptiPCSamplingEnable. */
_Atomic int fake__pc_sampling_enabled, fake__live_at_pcs_enable;
int fake__live_kinds(void);
static unsigned long enable_counts[KINDS_MAX], disable_counts[KINDS_MAX];
/* Kinds enabled since the script loaded: the scripted records stand for
 * activity that happened while they were on, so a later disable keeps them. */
static int enabled[KINDS_MAX];
static int paused[KINDS_MAX]; /* disabled since its last enable: added records are not kept */
static any_record_t records[RECORDS_MAX];
static int record_count, record_next;
static char *names[NAMES_MAX];
static int name_count;
static int records_per_buffer, records_per_flush;
static size_t dropped;
static unsigned long flushes, flushes_forced;
static uint64_t last_timestamp;
/* holds_partial: buffers written at unforced flushes and not completed. */
#define HELD_MAX 64
static int holds_partial;
static struct {
    uint8_t *buffer;
    size_t size, used;
} held[HELD_MAX];
static int held_count;

typedef struct replay_buffer {
    uint8_t *bytes;
    size_t valid;
    uint32_t names;
    uint64_t *offsets; /* of the kernel records whose name is texts[i] */
    char **texts;
} replay_buffer_t;

static replay_buffer_t *replay;
static uint32_t replay_count;
static int replay_done;

/* Size of a record of kind in the buffers; 0 for kinds the fake lacks. */
static size_t record_size(CUpti_ActivityKind kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    /* An unread kind, to show that the client skips what it does not know. */
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    default: return 0;
    }
}

static uint64_t u64(json_t *o, const char *key) {
    return (uint64_t)json_integer_value(json_object_get(o, key));
}

static const char *keep_name(const char *name) {
    if (name == NULL || name_count == NAMES_MAX) return NULL;
    names[name_count] = strdup(name);
    return names[name_count++];
}

#define SET(rec, field) (rec).field = (__typeof__((rec).field))u64(o, #field)

static int build(json_t *o, any_record_t *r) {
    CUpti_ActivityKind kind = (CUpti_ActivityKind)u64(o, "kind");
    memset(r, 0, sizeof *r);
    r->base.kind = kind;
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        SET(r->kernel, registersPerThread);
        SET(r->kernel, start);
        SET(r->kernel, end);
        SET(r->kernel, completed);
        SET(r->kernel, deviceId);
        SET(r->kernel, contextId);
        SET(r->kernel, streamId);
        SET(r->kernel, gridX);
        SET(r->kernel, gridY);
        SET(r->kernel, gridZ);
        SET(r->kernel, blockX);
        SET(r->kernel, blockY);
        SET(r->kernel, blockZ);
        SET(r->kernel, staticSharedMemory);
        SET(r->kernel, dynamicSharedMemory);
        SET(r->kernel, localMemoryPerThread);
        SET(r->kernel, localMemoryTotal);
        SET(r->kernel, correlationId);
        SET(r->kernel, gridId);
        SET(r->kernel, launchType);
        SET(r->kernel, sharedMemoryExecuted);
        SET(r->kernel, graphNodeId);
        SET(r->kernel, graphId);
        SET(r->kernel, clusterX);
        SET(r->kernel, clusterY);
        SET(r->kernel, clusterZ);
        SET(r->kernel, localMemoryTotal_v2);
        SET(r->kernel, isDeviceLaunched);
        r->kernel.name = keep_name(json_string_value(json_object_get(o, "name")));
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        SET(r->copy, copyKind);
        SET(r->copy, srcKind);
        SET(r->copy, dstKind);
        SET(r->copy, flags);
        SET(r->copy, bytes);
        SET(r->copy, start);
        SET(r->copy, end);
        SET(r->copy, deviceId);
        SET(r->copy, contextId);
        SET(r->copy, streamId);
        SET(r->copy, correlationId);
        SET(r->copy, graphNodeId);
        SET(r->copy, graphId);
        SET(r->copy, isDeviceLaunched);
        SET(r->copy, copyCount);
        break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        SET(r->memset, value);
        SET(r->memset, bytes);
        SET(r->memset, start);
        SET(r->memset, end);
        SET(r->memset, deviceId);
        SET(r->memset, contextId);
        SET(r->memset, streamId);
        SET(r->memset, correlationId);
        SET(r->memset, flags);
        SET(r->memset, memoryKind);
        SET(r->memset, graphNodeId);
        SET(r->memset, graphId);
        break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        SET(r->sync, type);
        SET(r->sync, start);
        SET(r->sync, end);
        SET(r->sync, correlationId);
        SET(r->sync, contextId);
        SET(r->sync, streamId);
        SET(r->sync, cudaEventId);
        SET(r->sync, cudaEventSyncId);
        SET(r->sync, returnValue);
        break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        SET(r->memory, memoryOperationType);
        SET(r->memory, memoryKind);
        SET(r->memory, correlationId);
        SET(r->memory, address);
        SET(r->memory, bytes);
        SET(r->memory, timestamp);
        SET(r->memory, PC);
        SET(r->memory, processId);
        SET(r->memory, deviceId);
        SET(r->memory, contextId);
        SET(r->memory, streamId);
        SET(r->memory, isAsync);
        r->memory.memoryPoolConfig.memoryPoolType =
            (CUpti_ActivityMemoryPoolType)u64(o, "memoryPoolType");
        r->memory.memoryPoolConfig.address = u64(o, "poolAddress");
        break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        SET(r->external, externalKind);
        SET(r->external, externalId);
        SET(r->external, correlationId);
        break;
    case CUPTI_ACTIVITY_KIND_CONTEXT: break;
    default: return -1;
    }
    return 0;
}

static void free_replay(void) {
    for (uint32_t i = 0; i < replay_count; i++) {
        for (uint32_t k = 0; k < replay[i].names; k++) free(replay[i].texts[k]);
        free(replay[i].texts);
        free(replay[i].offsets);
        free(replay[i].bytes);
    }
    free(replay);
    replay = NULL;
    replay_count = 0;
    replay_done = 0;
}

static int read_exact(FILE *f, void *out, size_t n) { return fread(out, 1, n, f) == n ? 0 : -1; }

/* Reads a recorded file; -1 (and a message) when it is not one. */
static int load_replay(const char *path) {
    FILE *f = fopen(path, "rb");
    char magic[12];
    uint32_t version, count;
    if (f == NULL || read_exact(f, magic, 12) || memcmp(magic, "GPUFLCUPTI1\n", 12) ||
        read_exact(f, &version, 4) || read_exact(f, &count, 4) || count > 4096) {
        fprintf(stderr, "fake_cupti: %s is not a recorded CUPTI file\n", path);
        if (f) fclose(f);
        return -1;
    }
    replay = calloc(count ? count : 1, sizeof *replay);
    for (uint32_t i = 0; replay && i < count; i++) {
        replay_buffer_t *b = &replay[i];
        uint64_t valid;
        if (read_exact(f, &valid, 8) || valid > ((uint64_t)1 << 30)) goto bad;
        b->valid = (size_t)valid;
        b->bytes = aligned_alloc(8, (b->valid + 7) & ~(size_t)7);
        replay_count = i + 1;
        uint32_t count_names;
        if (b->bytes == NULL || read_exact(f, b->bytes, b->valid) ||
            read_exact(f, &count_names, 4) || count_names > 1u << 20)
            goto bad;
        /* names counts the texts free_replay frees: set once they exist. */
        b->offsets = calloc(count_names + 1, sizeof *b->offsets);
        b->texts = calloc(count_names + 1, sizeof *b->texts);
        if (b->offsets == NULL || b->texts == NULL) goto bad;
        b->names = count_names;
        for (uint32_t k = 0; k < b->names; k++) {
            uint32_t length;
            if (read_exact(f, &b->offsets[k], 8) || read_exact(f, &length, 4) || length > 65536 ||
                b->offsets[k] % 8 != 0 || b->offsets[k] > b->valid ||
                b->valid - b->offsets[k] < sizeof(CUpti_ActivityKernel10))
                goto bad;
            b->texts[k] = calloc(length + 1, 1);
            if (b->texts[k] == NULL || read_exact(f, b->texts[k], length)) goto bad;
        }
    }
    fclose(f);
    return 0;
bad:
    fprintf(stderr, "fake_cupti: %s is cut or damaged\n", path);
    fclose(f);
    free_replay();
    return -1;
}

/* Moves a record's timestamps by shift. */
static void shift_times(CUpti_Activity *r, int64_t shift) {
    any_record_t *a = (any_record_t *)(void *)r;
#define MOVE(field)                                                                                \
    if (field) field = (uint64_t)((int64_t)(field) + shift)
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        MOVE(a->kernel.start);
        MOVE(a->kernel.end);
        MOVE(a->kernel.completed);
        MOVE(a->kernel.queued);
        MOVE(a->kernel.submitted);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        MOVE(a->copy.start);
        MOVE(a->copy.end);
        break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        MOVE(a->memset.start);
        MOVE(a->memset.end);
        break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        MOVE(a->sync.start);
        MOVE(a->sync.end);
        break;
    case CUPTI_ACTIVITY_KIND_MEMORY2: MOVE(a->memory.timestamp); break;
    default: break;
    }
#undef MOVE
}

/* The earliest timestamp of the recorded buffers. */
static uint64_t replay_first_time(void) {
    uint64_t first = UINT64_MAX;
    for (uint32_t i = 0; i < replay_count; i++) {
        CUpti_Activity *r = NULL;
        while (cuptiActivityGetNextRecord(replay[i].bytes, replay[i].valid, &r) == CUPTI_SUCCESS) {
            any_record_t *a = (any_record_t *)(void *)r;
            uint64_t t = r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? a->kernel.start
                         : r->kind == CUPTI_ACTIVITY_KIND_MEMCPY          ? a->copy.start
                         : r->kind == CUPTI_ACTIVITY_KIND_MEMSET          ? a->memset.start
                         : r->kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ? a->sync.start
                         : r->kind == CUPTI_ACTIVITY_KIND_MEMORY2         ? a->memory.timestamp
                                                                          : 0;
            if (t != 0 && t < first) first = t;
        }
    }
    return first == UINT64_MAX ? 0 : first;
}

/* Delivers the recorded buffers once, into buffers from the client. */
static void deliver_replay(void) {
    if (replay_done || replay_count == 0) return;
    replay_done = 1;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t shift = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec - (int64_t)replay_first_time();
    for (uint32_t i = 0; i < replay_count; i++) {
        uint8_t *buffer = NULL;
        size_t size = 0, max_records = 0;
        requested_fn(&buffer, &size, &max_records);
        if (buffer == NULL || size < replay[i].valid) {
            dropped++;
            continue;
        }
        memcpy(buffer, replay[i].bytes, replay[i].valid);
        for (uint32_t k = 0; k < replay[i].names; k++) {
            CUpti_ActivityKernel10 *kr =
                (CUpti_ActivityKernel10 *)(void *)(buffer + replay[i].offsets[k]);
            kr->name = replay[i].texts[k];
        }
        CUpti_Activity *r = NULL;
        while (cuptiActivityGetNextRecord(buffer, replay[i].valid, &r) == CUPTI_SUCCESS)
            shift_times(r, shift);
        completed_fn(NULL, 0, buffer, size, replay[i].valid);
    }
}

/* Forgets the previous script and reads $GPUFL_FAKE_CUPTI. Under lock. */
static CUptiResult load_script(void) {
    for (int i = 0; i < name_count; i++) free(names[i]);
    name_count = record_count = record_next = records_per_buffer = records_per_flush = 0;
    dropped = 0;
    memset(enable_errors, 0, sizeof enable_errors);
    memset(errors_while_sampling, 0, sizeof errors_while_sampling);
    errors_while_sampling[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] = CUPTI_ERROR_NOT_COMPATIBLE;
    fake__pc_sampling_enabled = 0;
    fake__live_at_pcs_enable = 0;
    memset(enable_counts, 0, sizeof enable_counts);
    memset(disable_counts, 0, sizeof disable_counts);
    memset(enabled, 0, sizeof enabled);
    memset(paused, 0, sizeof paused);
    flushes = flushes_forced = 0;
    holds_partial = 0;
    held_count = 0; /* a new script: what the last session's CUPTI held is gone */
    timestamp_fn = NULL;
    last_timestamp = 0;
    free_replay();
    const char *recorded = getenv("GPUFL_FAKE_CUPTI_REPLAY");
    if (recorded != NULL && recorded[0] != '\0' && load_replay(recorded) != 0)
        return CUPTI_ERROR_UNKNOWN;
    const char *path = getenv("GPUFL_FAKE_CUPTI");
    if (path == NULL || path[0] == '\0') return CUPTI_SUCCESS;
    json_error_t error;
    json_t *root = json_load_file(path, 0, &error);
    if (root == NULL) {
        fprintf(stderr, "fake_cupti: %s:%d: %s\n", path, error.line, error.text);
        return CUPTI_ERROR_UNKNOWN;
    }
    const char *key;
    json_t *value;
    json_object_foreach(json_object_get(root, "enable_errors"), key, value) {
        int kind = atoi(key);
        if (kind >= 0 && kind < KINDS_MAX) enable_errors[kind] = (int)json_integer_value(value);
    }
    json_object_foreach(json_object_get(root, "errors_while_sampling"), key, value) {
        int kind = atoi(key);
        if (kind >= 0 && kind < KINDS_MAX)
            errors_while_sampling[kind] = (int)json_integer_value(value);
    }
    records_per_buffer = (int)json_integer_value(json_object_get(root, "records_per_buffer"));
    records_per_flush = (int)json_integer_value(json_object_get(root, "records_per_flush"));
    dropped = (size_t)json_integer_value(json_object_get(root, "dropped"));
    holds_partial = (int)json_integer_value(json_object_get(root, "holds_partial"));
    size_t i;
    json_array_foreach(json_object_get(root, "records"), i, value) {
        if (record_count < RECORDS_MAX && build(value, &records[record_count]) == 0) record_count++;
    }
    CUptiResult r = (CUptiResult)json_integer_value(json_object_get(root, "register_error"));
    json_decref(root);
    return r;
}

/* ---------------------------------------------------------------------- */
/* The activity API                                                         */
/* ---------------------------------------------------------------------- */

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                  CUpti_BuffersCallbackCompleteFunc complete) {
    pthread_mutex_lock(&lock);
    CUptiResult r = load_script();
    if (r == CUPTI_SUCCESS) {
        requested_fn = request;
        completed_fn = complete;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

#ifndef FAKE_CUPTI_OLD
EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
    pthread_mutex_lock(&lock);
    timestamp_fn = fn;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}
#endif

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
    if ((int)kind < 0 || kind >= KINDS_MAX) return CUPTI_ERROR_INVALID_KIND;
    pthread_mutex_lock(&lock);
    enable_counts[kind]++;
    CUptiResult r = (CUptiResult)enable_errors[kind];
    if (r == CUPTI_SUCCESS && fake__pc_sampling_enabled)
        r = (CUptiResult)errors_while_sampling[kind];
    if (r == CUPTI_SUCCESS) enabled[kind] = 1;
    if (r == CUPTI_SUCCESS) paused[kind] = 0;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
    if ((int)kind < 0 || kind >= KINDS_MAX) return CUPTI_ERROR_INVALID_KIND;
    pthread_mutex_lock(&lock);
    disable_counts[kind]++;
    paused[kind] = 1;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                              CUpti_Activity **record) {
    size_t offset = 0;
    if (buffer == NULL || record == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    if (*record != NULL) {
        size_t size = record_size((*record)->kind);
        if (size == 0) return CUPTI_ERROR_INVALID_KIND;
        offset = (size_t)((uint8_t *)*record - buffer) + size;
    }
    if (offset + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    CUpti_Activity *next = (CUpti_Activity *)(void *)(buffer + offset);
    size_t size = record_size(next->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    if (offset + size > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = next;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream,
                                                     size_t *out) {
    (void)context;
    (void)stream;
    if (out == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    *out = dropped;
    dropped = 0;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

/* Writes the pending records of enabled kinds into buffers from the client,
 * completing each when full (or at records_per_buffer), the last one at the
 * end (under holds_partial, at an unforced flush, kept instead). Runs on its
 * own thread, as CUPTI's worker does; arg is non-NULL for a forced flush. */
static void *deliver(void *arg) {
    int forced = arg != NULL;
    uint8_t *buffer = NULL;
    size_t size = 0, used = 0;
    int in_buffer = 0, end;
    pthread_mutex_lock(&lock);
    deliver_replay();
    if (forced) {
        for (int i = 0; i < held_count; i++)
            completed_fn(NULL, 0, held[i].buffer, held[i].size, held[i].used);
        held_count = 0;
    }
    end = records_per_flush > 0 && record_next + records_per_flush < record_count
              ? record_next + records_per_flush
              : record_count;
    if (timestamp_fn) last_timestamp = timestamp_fn();
    for (; record_next < end; record_next++) {
        const any_record_t *r = &records[record_next];
        size_t bytes = record_size(r->base.kind);
        if (!enabled[r->base.kind]) continue;
        if (buffer != NULL &&
            (used + bytes > size || (records_per_buffer > 0 && in_buffer == records_per_buffer))) {
            completed_fn(NULL, 0, buffer, size, used);
            buffer = NULL;
        }
        if (buffer == NULL) {
            size_t max_records = 0;
            requested_fn(&buffer, &size, &max_records);
            used = 0;
            in_buffer = 0;
            if (buffer == NULL || size < bytes) {
                buffer = NULL;
                dropped++;
                continue;
            }
        }
        memcpy(buffer + used, r, bytes);
        used += bytes;
        in_buffer++;
    }
    if (buffer != NULL && holds_partial && !forced && held_count < HELD_MAX) {
        held[held_count].buffer = buffer;
        held[held_count].size = size;
        held[held_count].used = used;
        held_count++;
    } else if (buffer != NULL) {
        completed_fn(NULL, 0, buffer, size, used);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    static int forced_arg;
    int forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
    pthread_t thread;
    pthread_mutex_lock(&flush_lock);
    pthread_mutex_lock(&lock);
    flushes++;
    flushes_forced += forced;
    int ready = requested_fn != NULL && completed_fn != NULL;
    pthread_mutex_unlock(&lock);
    if (ready && pthread_create(&thread, NULL, deliver, forced ? &forced_arg : NULL) == 0)
        pthread_join(thread, NULL);
    pthread_mutex_unlock(&flush_lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **text) {
    (void)result;
    if (text == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    *text = "CUPTI_ERROR_FAKE";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetVersion(uint32_t *version) {
#ifdef FAKE_CUPTI_OLD
    *version = 120000;
#else
    *version = CUPTI_API_VERSION;
#endif
    return CUPTI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* The callback API                                                         */
/* ---------------------------------------------------------------------- */

#define CBIDS_MAX      1024
#define EXTERNAL_KINDS 8
#define EXTERNAL_DEPTH 16

static CUpti_CallbackFunc subscriber_fn;
static void *subscriber_user;
static int subscribed;
static unsigned char callback_on[CBIDS_MAX];
static int resource_on;           /* the resource domain is enabled */
static CUcontext current_context; /* what launch callbacks carry as their context */
static uint32_t next_correlation = 1000;
/* The calling thread's external-id stacks, in a pthread key rather than thread-local storage:
 * a dlopen()ed library's TLS confuses LeakSanitizer's scan of the threads at exit. */
typedef struct external_tls {
    uint64_t stack[EXTERNAL_KINDS][EXTERNAL_DEPTH];
    int depth[EXTERNAL_KINDS];
} external_tls_t;
static pthread_key_t external_key;
static pthread_once_t external_once = PTHREAD_ONCE_INIT;
static void external_key_make(void) { pthread_key_create(&external_key, free); }
static external_tls_t *external_tls(void) {
    pthread_once(&external_once, external_key_make);
    external_tls_t *t = pthread_getspecific(external_key);
    if (!t && (t = calloc(1, sizeof *t)) != NULL) pthread_setspecific(external_key, t);
    return t;
}

static const struct {
    uint32_t cbid;
    const char *name;
} driver_names[] = {
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, "cuLaunchKernel_ptsz"},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx"},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel"},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice,
     "cuLaunchCooperativeKernelMultiDevice"},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, "cuLaunchHostFunc"},
    {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2"},
    {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync_v2"},
    {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, "cuMemsetD8Async"},
    {CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize"},
    {CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize"},
    {CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, "cuEventSynchronize"},
    {CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, "cuStreamWaitEvent"},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch"},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2"},
    {CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2"},
    {CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute, "cuDeviceGetAttribute"},
};

EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                        const char **name) {
    if (name == NULL || domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid == 0 ||
        cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *name = "cuFakeOtherCall";
    for (size_t i = 0; i < sizeof driver_names / sizeof driver_names[0]; i++)
        if (driver_names[i].cbid == cbid) *name = driver_names[i].name;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc fn,
                                  void *user) {
    if (subscriber == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    if (!subscribed) {
        subscribed = 1;
        subscriber_fn = fn;
        subscriber_user = user;
        memset(callback_on, 0, sizeof callback_on);
        *subscriber = (CUpti_SubscriberHandle)&subscribed;
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
    if (subscribed && subscriber == (CUpti_SubscriberHandle)&subscribed) {
        subscribed = 0;
        subscriber_fn = NULL;
        memset(callback_on, 0, sizeof callback_on);
        resource_on = 0;
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= CBIDS_MAX)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
    if (subscribed && subscriber == (CUpti_SubscriberHandle)&subscribed) {
        callback_on[cbid] = enable != 0;
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                     CUpti_CallbackDomain domain) {
    if (domain != CUPTI_CB_DOMAIN_RESOURCE) return CUPTI_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
    if (subscribed && subscriber == (CUpti_SubscriberHandle)&subscribed) {
        resource_on = enable != 0;
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                          uint64_t id) {
    if ((unsigned)kind >= EXTERNAL_KINDS) return CUPTI_ERROR_INVALID_PARAMETER;
    external_tls_t *t = external_tls();
    if (!t) return CUPTI_ERROR_UNKNOWN;
    if (t->depth[kind] == EXTERNAL_DEPTH) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    t->stack[kind][t->depth[kind]++] = id;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                         uint64_t *last) {
    if ((unsigned)kind >= EXTERNAL_KINDS) return CUPTI_ERROR_INVALID_PARAMETER;
    external_tls_t *t = external_tls();
    if (!t || t->depth[kind] == 0) return CUPTI_ERROR_QUEUE_EMPTY;
    uint64_t id = t->stack[kind][--t->depth[kind]];
    if (last) *last = id;
    return CUPTI_SUCCESS;
}

/* A fake stream is its own id; the default stream is 7, or 8 per thread. */
EXPORT CUptiResult cuptiGetStreamIdEx(CUcontext context, CUstream stream, uint8_t per_thread,
                                      uint32_t *id) {
    (void)context;
    if (id == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    *id = stream ? (uint32_t)(uintptr_t)stream : per_thread ? 8u : 7u;
    return CUPTI_SUCCESS;
}

/* A fake graph exec is its own id. */
EXPORT CUptiResult cuptiGetGraphExecId(CUgraphExec exec, uint32_t *id) {
    if (id == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
    *id = (uint32_t)(uintptr_t)exec;
    return CUPTI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* For the tests                                                            */
/* ---------------------------------------------------------------------- */

EXPORT uint32_t fake_cupti_call(uint32_t cbid, const void *params, const char *symbol);
EXPORT uint32_t fake_cupti_call_across(uint32_t cbid, const void *params, const char *symbol,
                                       void (*between)(void *), void *arg);
EXPORT uint32_t fake_cupti_call_late(uint32_t cbid, const void *params, const char *symbol,
                                     void (*between)(void *), void *arg);
EXPORT int fake_cupti_add_record(const char *json);
EXPORT int fake_cupti_callbacks_on(void);
EXPORT void fake_cupti_set_context(CUcontext context);
EXPORT int fake_cupti_resource(uint32_t cbid, CUcontext context, const void *cubin, size_t size);

/* The subscriber's function when it enabled cbid, else NULL. */
static CUpti_CallbackFunc subscriber_of(uint32_t cbid, void **user) {
    pthread_mutex_lock(&lock);
    CUpti_CallbackFunc fn =
        subscribed && cbid < CBIDS_MAX && callback_on[cbid] ? subscriber_fn : NULL;
    *user = subscriber_user;
    pthread_mutex_unlock(&lock);
    return fn;
}

static uint32_t new_correlation(void) {
    pthread_mutex_lock(&lock);
    uint32_t correlation = next_correlation++;
    pthread_mutex_unlock(&lock);
    return correlation;
}

/* One callback of a call: its enter or its exit. */
static void callback(CUpti_CallbackFunc fn, void *user, uint32_t cbid, const void *params,
                     const char *symbol, uint32_t correlation, CUpti_ApiCallbackSite site) {
    if (fn == NULL) return;
    const char *name = "cuFakeOtherCall";
    for (size_t i = 0; i < sizeof driver_names / sizeof driver_names[0]; i++)
        if (driver_names[i].cbid == cbid) name = driver_names[i].name;
    CUpti_CallbackData data = {.callbackSite = site,
                               .functionName = name,
                               .functionParams = params,
                               .correlationId = correlation,
                               .symbolName = symbol,
                               .context = current_context};
    fn(user, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
}

/* A driver call on the calling thread: the subscriber's enter and exit
 * callbacks when it enabled cbid. Returns the call's correlation id. */
uint32_t fake_cupti_call(uint32_t cbid, const void *params, const char *symbol) {
    uint32_t correlation = new_correlation();
    void *user;
    CUpti_CallbackFunc fn = subscriber_of(cbid, &user);
    callback(fn, user, cbid, params, symbol, correlation, CUPTI_API_ENTER);
    callback(fn, user, cbid, params, symbol, correlation, CUPTI_API_EXIT);
    return correlation;
}

/* A call that blocks while between(arg) runs (a synchronization that the
 * subscription changes around): its enter goes to the subscriber of the
 * time, its exit to the subscriber after between. */
uint32_t fake_cupti_call_across(uint32_t cbid, const void *params, const char *symbol,
                                void (*between)(void *), void *arg) {
    uint32_t correlation = new_correlation();
    void *user;
    CUpti_CallbackFunc fn = subscriber_of(cbid, &user);
    callback(fn, user, cbid, params, symbol, correlation, CUPTI_API_ENTER);
    between(arg);
    fn = subscriber_of(cbid, &user);
    callback(fn, user, cbid, params, symbol, correlation, CUPTI_API_EXIT);
    return correlation;
}

/* A call whose callbacks CUPTI began to deliver before between(arg) ran
 * (an unsubscribe, say): the subscriber is the one of before, its function
 * runs after. */
uint32_t fake_cupti_call_late(uint32_t cbid, const void *params, const char *symbol,
                              void (*between)(void *), void *arg) {
    uint32_t correlation = new_correlation();
    void *user;
    CUpti_CallbackFunc fn = subscriber_of(cbid, &user);
    between(arg);
    callback(fn, user, cbid, params, symbol, correlation, CUPTI_API_ENTER);
    callback(fn, user, cbid, params, symbol, correlation, CUPTI_API_EXIT);
    return correlation;
}

/* Adds one record (a JSON object in the script's form) to deliver at the
 * next flush. Returns 0, or -1 for bad JSON, an unknown kind or no room. */
int fake_cupti_add_record(const char *json) {
    json_error_t error;
    json_t *o = json_loads(json, 0, &error);
    if (o == NULL) return -1;
    pthread_mutex_lock(&lock);
    int rc = -1;
    if (record_count < RECORDS_MAX && build(o, &records[record_count]) == 0) {
        if (!paused[records[record_count].base.kind]) record_count++;
        rc = 0;
    }
    pthread_mutex_unlock(&lock);
    json_decref(o);
    return rc;
}

/* The context the next driver calls are made on (NULL: none). */
void fake_cupti_set_context(CUcontext context) {
    pthread_mutex_lock(&lock);
    current_context = context;
    pthread_mutex_unlock(&lock);
}

/* A resource callback (context or module created or destroyed) on the
 * calling thread, when the subscriber enabled the domain. Returns 1 when
 * delivered. */
int fake_cupti_resource(uint32_t cbid, CUcontext context, const void *cubin, size_t size) {
    pthread_mutex_lock(&lock);
    CUpti_CallbackFunc fn = subscribed && resource_on ? subscriber_fn : NULL;
    void *user = subscriber_user;
    pthread_mutex_unlock(&lock);
    if (fn == NULL) return 0;
    CUpti_ModuleResourceData module = {.moduleId = 1, .cubinSize = size, .pCubin = cubin};
    CUpti_ResourceData data = {.context = context, .resourceDescriptor = cubin ? &module : NULL};
    fn(user, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
    return 1;
}

int fake_cupti_callbacks_on(void) {
    pthread_mutex_lock(&lock);
    int n = 0;
    for (int i = 0; i < CBIDS_MAX; i++) n += callback_on[i];
    pthread_mutex_unlock(&lock);
    return n;
}

EXPORT unsigned long fake_cupti_enable_count(int kind);
EXPORT unsigned long fake_cupti_disable_count(int kind);
EXPORT int fake_cupti_live_at_pcs_enable(void);
EXPORT int fake_cupti_timestamp_registered(void);
EXPORT uint64_t fake_cupti_last_timestamp(void);
EXPORT unsigned long fake_cupti_flushes(void);
EXPORT unsigned long fake_cupti_flushes_forced(void);

unsigned long fake_cupti_enable_count(int kind) {
    pthread_mutex_lock(&lock);
    unsigned long n = kind >= 0 && kind < KINDS_MAX ? enable_counts[kind] : 0;
    pthread_mutex_unlock(&lock);
    return n;
}

/* The kinds enabled and not paused now (fake_cupti_pcs.c asks at each
 * cuptiPCSamplingEnable). */
int fake__live_kinds(void) {
    pthread_mutex_lock(&lock);
    int n = 0;
    for (int k = 0; k < KINDS_MAX; k++) n += enabled[k] && !paused[k];
    pthread_mutex_unlock(&lock);
    return n;
}

/* The most kinds live at any cuptiPCSamplingEnable since the last script. */
int fake_cupti_live_at_pcs_enable(void) { return fake__live_at_pcs_enable; }

unsigned long fake_cupti_disable_count(int kind) {
    pthread_mutex_lock(&lock);
    unsigned long n = kind >= 0 && kind < KINDS_MAX ? disable_counts[kind] : 0;
    pthread_mutex_unlock(&lock);
    return n;
}

int fake_cupti_timestamp_registered(void) {
    pthread_mutex_lock(&lock);
    int on = timestamp_fn != NULL;
    pthread_mutex_unlock(&lock);
    return on;
}

uint64_t fake_cupti_last_timestamp(void) {
    pthread_mutex_lock(&lock);
    uint64_t t = last_timestamp;
    pthread_mutex_unlock(&lock);
    return t;
}

unsigned long fake_cupti_flushes(void) {
    pthread_mutex_lock(&lock);
    unsigned long n = flushes;
    pthread_mutex_unlock(&lock);
    return n;
}

/* The forced flushes (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) since the last script. */
unsigned long fake_cupti_flushes_forced(void) {
    pthread_mutex_lock(&lock);
    unsigned long n = flushes_forced;
    pthread_mutex_unlock(&lock);
    return n;
}
