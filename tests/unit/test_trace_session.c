// SPDX-License-Identifier: Apache-2.0
/*
 * test_trace_session.c - whole Trace sessions against the fake libcupti and
 * libcuda: driver calls made on application threads (their callbacks run
 * through the real lib/nvidia/launch.c) and the activity records those
 * calls produce, joined in device.log. Scope attribution (nested, several
 * threads at once, work from before init), kernel configurations with
 * occupancy, demangled names, external correlation ids, graph launches,
 * allocations, sync capture switched off, no libcuda, and another CUPTI
 * client already present. The PcSampling engine on top: contexts found at
 * creation and at a first launch, samples drained into windows, the
 * reasons that are not stall reasons left out, a full hardware buffer, a
 * refused enable and a CUPTI without the PC Sampling API.
 */
#include "test_util.h"

#include "analysis/insights.h"
#include "analysis/model.h"
#include "nvidia/engine.h"
#include "nvidia/launch.h"
#include "nvidia/pc_sampling.h"
#include "nvidia/range_profiler.h"

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#define SUITE "trace_session"

/* The fakes' helpers, through handles on the libraries gpufl loads. */
static struct {
    uint32_t (*call)(uint32_t cbid, const void *params, const char *symbol);
    uint32_t (*call_across)(uint32_t cbid, const void *params, const char *symbol,
                            void (*between)(void *), void *arg);
    uint32_t (*call_late)(uint32_t cbid, const void *params, const char *symbol,
                          void (*between)(void *), void *arg);
    int (*add_record)(const char *json);
    int (*callbacks_on)(void);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*push_external)(CUpti_ExternalCorrelationKind, uint64_t);
    CUptiResult (*pop_external)(CUpti_ExternalCorrelationKind, uint64_t *);
    CUfunction (*function)(int regs, int static_smem, int local, int max_threads,
                           int driver_blocks);
    CUkernel (*kernel)(CUfunction function);
    void (*set_context)(CUcontext context);
    int (*resource)(uint32_t cbid, CUcontext context, const void *cubin, size_t size);
    int (*pc_sampling_add_nameless)(CUcontext ctx, uint64_t crc, uint32_t index, uint64_t pc,
                                    uint32_t reason, uint32_t samples);
    int (*pc_sampling_strdup_rebound)(void);
    int (*pc_sampling_add_uncounted)(CUcontext ctx, uint64_t crc, const char *function, uint64_t pc,
                                     uint32_t reason, uint32_t samples);
    int (*pc_sampling_add)(CUcontext ctx, uint64_t crc, const char *function, uint64_t pc,
                           uint32_t reason, uint32_t samples);
    void (*pc_sampling_count)(CUcontext ctx, uint64_t non_user, uint64_t dropped);
    void (*pc_sampling_buffer_full)(CUcontext ctx, int full);
    int (*pc_sampling_add_many)(CUcontext ctx, uint64_t crc, const char *function,
                                uint64_t first_pc, uint64_t count, uint32_t reason,
                                uint32_t samples);
    void (*pc_sampling_enable_error)(CUptiResult r);
    int (*pc_sampling_state)(CUcontext ctx, uint32_t *period, uint32_t *mode, int *enables,
                             int *disables);
    void (*pc_sampling_reset)(void);
    void (*pc_sampling_patching)(int on);
    unsigned long (*pc_sampling_unsafe_calls)(void);
    CUptiResult (*cubin_crc)(CUpti_GetCubinCrcParams *);
    unsigned long (*enable_count)(int kind);
    unsigned long (*disable_count)(int kind);
    int (*live_at_pcs_enable)(void);
    unsigned long (*flushes)(void), (*flushes_forced)(void);
    int (*sass_metrics_add)(CUcontext ctx, uint32_t crc, uint32_t function_index,
                            const char *function, uint32_t pc, uint64_t inst, uint64_t thread_inst,
                            uint64_t sectors, uint64_t ideal);
    void (*sass_metrics_error)(const char *call, CUptiResult result, int times);
    int (*sass_metrics_state)(CUcontext ctx, int *enabled, int *lazy, int *flushes, int *disables);
    void (*sass_metrics_reset)(void);
    int (*range_work)(CUcontext ctx, double work);
    void (*range_error)(const char *call, CUptiResult result, int times);
    void (*range_support)(int level);
    void (*range_nan)(const char *metric);
    int (*range_state)(CUcontext ctx, int *enabled, int *pushes, int *pops, int *max_depth,
                       int *decodes);
    void (*range_reset)(void);
    void (*range_start_delay)(int microseconds);
    void (*event_pending)(int on);
    void (*set_capturing)(int on);
    CUresult (*push_current)(CUcontext ctx);
    CUresult (*pop_current)(CUcontext *ctx);
} fake;

/* A fresh PC sampling fake, and the engines' mark of SASS metrics counted
 * earlier forgotten: the test stands in for a new process. */
static void fresh_pc_sampling(void) {
    fake.pc_sampling_reset();
    gpufl__engine_forget_patched();
}

static void resolve(void *handle, const char *name, void *slot) {
    void *p = dlsym(handle, name);
    if (p == NULL) fail_msg("fake lacks %s", name);
    memcpy(slot, &p, sizeof p);
}

static int setup(void **state) {
    (void)state;
    void *cupti = dlopen(GPUFL_FAKE_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL);
    void *cuda = dlopen(GPUFL_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (cupti == NULL || cuda == NULL) fail_msg("cannot load the fakes: %s", dlerror());
    resolve(cupti, "fake_cupti_call", &fake.call);
    resolve(cupti, "fake_cupti_call_across", &fake.call_across);
    resolve(cupti, "fake_cupti_call_late", &fake.call_late);
    resolve(cupti, "fake_cupti_add_record", &fake.add_record);
    resolve(cupti, "fake_cupti_callbacks_on", &fake.callbacks_on);
    resolve(cupti, "cuptiSubscribe", &fake.subscribe);
    resolve(cupti, "cuptiUnsubscribe", &fake.unsubscribe);
    resolve(cupti, "cuptiActivityPushExternalCorrelationId", &fake.push_external);
    resolve(cupti, "cuptiActivityPopExternalCorrelationId", &fake.pop_external);
    resolve(cupti, "fake_cupti_set_context", &fake.set_context);
    resolve(cupti, "fake_cupti_resource", &fake.resource);
    resolve(cupti, "fake_cupti_pcs_add", &fake.pc_sampling_add);
    resolve(cupti, "fake_cupti_pcs_add_nameless", &fake.pc_sampling_add_nameless);
    resolve(cupti, "fake_cupti_pcs_strdup_rebound", &fake.pc_sampling_strdup_rebound);
    resolve(cupti, "fake_cupti_pcs_add_uncounted", &fake.pc_sampling_add_uncounted);
    resolve(cupti, "fake_cupti_pcs_count", &fake.pc_sampling_count);
    resolve(cupti, "fake_cupti_pcs_buffer_full", &fake.pc_sampling_buffer_full);
    resolve(cupti, "fake_cupti_pcs_add_many", &fake.pc_sampling_add_many);
    resolve(cupti, "fake_cupti_pcs_enable_error", &fake.pc_sampling_enable_error);
    resolve(cupti, "fake_cupti_pcs_state", &fake.pc_sampling_state);
    resolve(cupti, "fake_cupti_pcs_reset", &fake.pc_sampling_reset);
    resolve(cupti, "fake_cupti_pcs_patching", &fake.pc_sampling_patching);
    resolve(cupti, "fake_cupti_pcs_unsafe_calls", &fake.pc_sampling_unsafe_calls);
    resolve(cupti, "cuptiGetCubinCrc", &fake.cubin_crc);
    resolve(cupti, "fake_cupti_enable_count", &fake.enable_count);
    resolve(cupti, "fake_cupti_disable_count", &fake.disable_count);
    resolve(cupti, "fake_cupti_live_at_pcs_enable", &fake.live_at_pcs_enable);
    resolve(cupti, "fake_cupti_flushes", &fake.flushes);
    resolve(cupti, "fake_cupti_flushes_forced", &fake.flushes_forced);
    resolve(cupti, "fake_cupti_sassm_add", &fake.sass_metrics_add);
    resolve(cupti, "fake_cupti_sassm_error", &fake.sass_metrics_error);
    resolve(cupti, "fake_cupti_sassm_state", &fake.sass_metrics_state);
    resolve(cupti, "fake_cupti_sassm_reset", &fake.sass_metrics_reset);
    resolve(cupti, "fake_cupti_range_work", &fake.range_work);
    resolve(cupti, "fake_cupti_range_error", &fake.range_error);
    resolve(cupti, "fake_cupti_range_support", &fake.range_support);
    resolve(cupti, "fake_cupti_range_nan", &fake.range_nan);
    resolve(cupti, "fake_cupti_range_state", &fake.range_state);
    resolve(cupti, "fake_cupti_range_reset", &fake.range_reset);
    resolve(cupti, "fake_cupti_range_start_delay", &fake.range_start_delay);
    resolve(cuda, "cuCtxPushCurrent_v2", &fake.push_current);
    resolve(cuda, "cuCtxPopCurrent_v2", &fake.pop_current);
    resolve(cuda, "fake_cuda_event_pending", &fake.event_pending);
    resolve(cuda, "fake_cuda_set_capturing", &fake.set_capturing);
    resolve(cuda, "fake_cuda_function", &fake.function);
    resolve(cuda, "fake_cuda_kernel", &fake.kernel);
    setenv("GPUFL_CUPTI_LIBRARY", GPUFL_FAKE_CUPTI_PATH, 1);
    setenv("GPUFL_CUDA_LIBRARY", GPUFL_FAKE_CUDA_PATH, 1);
    unsetenv("GPUFL_FAKE_CUPTI"); /* no scripted records: each test makes its own */
    return 0;
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static gpufl_options_t trace_options(const char *name) {
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, name));
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.backend = GPUFL_BACKEND_NVIDIA;
    return o;
}

/* Starts a Trace session; no NVML here, so its warning is captured. */
static tu_log_capture_t capture;
static void start(gpufl_options_t *o) {
    memset(&capture, 0, sizeof capture);
    gpufl_set_log_hook(tu_capture_hook, &capture);
    assert_int_equal(gpufl_init(o), 0);
}

static void stop(void) {
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);
}

/* ---- the calls an application makes, and what CUPTI then records ---- */

/* cuLaunchKernel of function with 256 threads a block; returns the
 * correlation id and adds the kernel's activity record. */
static uint32_t launch(CUfunction function, const char *name, unsigned int threads,
                       unsigned int dynamic_smem) {
    cuLaunchKernel_params p = {.f = function,
                               .gridDimX = 132,
                               .gridDimY = 1,
                               .gridDimZ = 1,
                               .blockDimX = threads,
                               .blockDimY = 1,
                               .blockDimZ = 1,
                               .sharedMemBytes = dynamic_smem};
    uint32_t corr = fake.call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, name);
    char json[512];
    int64_t t = now_ns();
    snprintf(json, sizeof json,
             "{\"kind\": 10, \"start\": %lld, \"end\": %lld, \"name\": \"%s\", "
             "\"correlationId\": %u, \"streamId\": 7, \"gridX\": 132, \"gridY\": 1, "
             "\"gridZ\": 1, \"blockX\": %u, \"blockY\": 1, \"blockZ\": 1, "
             "\"registersPerThread\": 32, \"dynamicSharedMemory\": %u}",
             (long long)t, (long long)t + 2000, name, corr, threads, dynamic_smem);
    assert_int_equal(fake.add_record(json), 0);
    return corr;
}

/* A record of `kind` (the script's JSON fields) for the call cbid. */
static uint32_t call_with_record(uint32_t cbid, const void *params, const char *fields) {
    uint32_t corr = fake.call(cbid, params, NULL);
    char json[512];
    int64_t t = now_ns();
    snprintf(json, sizeof json, "{%s, \"start\": %lld, \"end\": %lld, \"correlationId\": %u}",
             fields, (long long)t, (long long)t + 1000, corr);
    assert_int_equal(fake.add_record(json), 0);
    return corr;
}

/* cuMemAlloc_v2 and CUPTI's record of the allocation, of CUPTI's memory
 * kind; returns the correlation id. */
static uint32_t allocate(int memory_kind, int64_t bytes) {
    cuMemAlloc_v2_params ap = {0};
    uint32_t corr = fake.call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &ap, NULL);
    char json[256];
    snprintf(json, sizeof json,
             "{\"kind\": 49, \"timestamp\": %lld, \"memoryOperationType\": 1, "
             "\"memoryKind\": %d, \"address\": 140000000, \"bytes\": %lld, "
             "\"correlationId\": %u}",
             (long long)now_ns(), memory_kind, (long long)bytes, corr);
    assert_int_equal(fake.add_record(json), 0);
    return corr;
}

/* ---- reading the session back ---- */

typedef struct session {
    tu_lines_t device, scope;
} session_t;

static session_t read_session(void) {
    session_t s = {tu_read(tu_session_dir(), "device.log"), tu_read(tu_session_dir(), "scope.log")};
    return s;
}

static void free_session(session_t *s) {
    tu_free(&s->device);
    tu_free(&s->scope);
}

/* The scope id of the (only) scope instance with this path. */
static int64_t scope_id(const session_t *s, const char *path) {
    size_t n;
    int64_t *ids = tu_column(&s->scope, "scope_begin", "id", &n);
    int64_t *paths = tu_column(&s->scope, "scope_begin", "path", &n);
    int64_t found = -1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(tu_dict(&s->scope, paths[i]), path) == 0) found = ids[i];
    free(ids);
    free(paths);
    if (found < 0) fail_msg("no scope %s", path);
    return found;
}

/* The cell of column col in the row of `type` whose correlation is corr;
 * json null for a null cell. */
static json_t *cell(const session_t *s, const char *type, uint32_t corr, const char *col) {
    for (size_t i = 0; i < s->device.n; i++) {
        json_t *j = s->device.v[i];
        if (strcmp(tu_type(j), type) != 0) continue;
        json_t *corrs = json_object_get(j, "correlation");
        for (size_t k = 0; k < json_array_size(corrs); k++)
            if (json_integer_value(json_array_get(corrs, k)) == corr)
                return json_array_get(json_object_get(j, col), k);
    }
    fail_msg("no %s row with correlation %u", type, corr);
    return NULL;
}

/* Whether a row of `type` has correlation corr. */
static int has_row(const session_t *s, const char *type, uint32_t corr) {
    for (size_t i = 0; i < s->device.n; i++) {
        json_t *j = s->device.v[i];
        if (strcmp(tu_type(j), type) != 0) continue;
        json_t *corrs = json_object_get(j, "correlation");
        for (size_t k = 0; k < json_array_size(corrs); k++)
            if (json_integer_value(json_array_get(corrs, k)) == corr) return 1;
    }
    return 0;
}

static int64_t cell_int(const session_t *s, const char *type, uint32_t corr, const char *col) {
    json_t *v = cell(s, type, corr, col);
    if (!json_is_integer(v)) fail_msg("%s.%s of %u is not an integer", type, col, corr);
    return json_integer_value(v);
}

static json_t *stats(const session_t *s) {
    json_t *t = tu_first(&s->device, "trace_stats");
    assert_non_null(t);
    return t;
}

static int64_t stat_of(const session_t *s, const char *key) {
    return json_integer_value(json_object_get(stats(s), key));
}

/* ---------------------------------------------------------------------- */

/* Kernels, a copy and a sync inside nested scopes, one kernel outside any,
 * one from before init: each row carries its launching thread's scope. */
static void rows_carry_the_scope_of_their_launch(void **state) {
    (void)state;
    CUfunction gemm = fake.function(32, 0, 0, 1024, 8);
    /* A record for a call made before the session: CUPTI delivers it, no
     * callback saw the call. */
    gpufl_options_t o = trace_options("scopes");
    start(&o);
    assert_true(fake.callbacks_on() > 0);
    char early[256];
    int64_t t = now_ns();
    snprintf(early, sizeof early,
             "{\"kind\": 10, \"start\": %lld, \"end\": %lld, \"name\": \"_Z5earlyv\", "
             "\"correlationId\": 5}",
             (long long)t, (long long)t + 10);
    assert_int_equal(fake.add_record(early), 0);

    uint32_t outside = launch(gemm, "_Z4gemmPf", 256, 0);
    uint32_t in_outer, in_inner, copy, sync;
    gpufl_scope_t outer = gpufl_scope_begin("forward", NULL);
    in_outer = launch(gemm, "_Z4gemmPf", 256, 0);
    gpufl_scope_t inner = gpufl_scope_begin("attention", NULL);
    in_inner = launch(gemm, "_Z4gemmPf", 256, 0);
    cuMemcpyHtoD_v2_params cp = {0};
    copy = call_with_record(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &cp,
                            "\"kind\": 1, \"bytes\": 4096, \"copyKind\": 1");
    gpufl_scope_end(inner);
    /* Synchronization is timed by gpufl's own callbacks at the call. */
    cuStreamSynchronize_params sp = {.hStream = (CUstream)(uintptr_t)13};
    sync = fake.call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &sp, NULL);
    uint32_t device_sync = fake.call(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, NULL, NULL);
    gpufl_scope_end(outer);
    stop();

    session_t s = read_session();
    int64_t forward = scope_id(&s, "forward"), attention = scope_id(&s, "forward/attention");
    assert_true(json_is_null(cell(&s, "kernel", outside, "scope")));
    assert_int_equal(cell_int(&s, "kernel", in_outer, "scope"), forward);
    assert_int_equal(cell_int(&s, "kernel", in_inner, "scope"), attention);
    assert_int_equal(cell_int(&s, "copy", copy, "scope"), attention);
    assert_int_equal(cell_int(&s, "sync", sync, "scope"), forward);
    assert_int_equal(cell_int(&s, "sync", sync, "sync_type"), GPUFL_SYNC_TYPE_STREAM);
    assert_int_equal(cell_int(&s, "sync", sync, "stream"), 13);
    assert_true(json_is_null(cell(&s, "sync", sync, "event")));
    assert_true(cell_int(&s, "sync", sync, "end_ns") >= cell_int(&s, "sync", sync, "start_ns"));
    assert_int_equal(cell_int(&s, "sync", device_sync, "sync_type"), GPUFL_SYNC_TYPE_DEVICE);
    assert_true(json_is_null(cell(&s, "sync", device_sync, "stream")));
    assert_int_equal(cell_int(&s, "sync", device_sync, "scope"), forward);
    /* The early kernel is written, unattributed and counted. */
    assert_true(json_is_null(cell(&s, "kernel", 5, "scope")));
    assert_true(json_is_null(cell(&s, "kernel", 5, "config")));
    assert_int_equal(stat_of(&s, "unattributed"), 1);
    assert_int_equal(stat_of(&s, "kernels"), 4);
    assert_int_equal(stat_of(&s, "copies"), 1);
    assert_int_equal(stat_of(&s, "syncs"), 2);
    /* Names: mangled and demangled, through the dict. */
    assert_string_equal(tu_dict(&s.device, cell_int(&s, "kernel", in_inner, "name")), "_Z4gemmPf");
    assert_string_equal(tu_dict(&s.device, cell_int(&s, "kernel", in_inner, "demangled")),
                        "gemm(float*)");
    free_session(&s);
}

/* One configuration per (function, block size, dynamic shared memory),
 * written once with the driver's occupancy and our breakdown. */
static void kernel_configs_carry_occupancy(void **state) {
    (void)state;
    /* 64 registers a thread at 256 threads: the register file allows 4
     * blocks an SM; the fake driver says 4 too. */
    CUfunction heavy = fake.function(64, 0, 0, 1024, 4);
    /* A driver answer our computation cannot reach: flagged. */
    CUfunction odd = fake.function(32, 0, 0, 1024, 3);
    gpufl_options_t o = trace_options("configs");
    start(&o);
    uint32_t a = launch(heavy, "_Z5heavyv", 256, 0);
    uint32_t b = launch(heavy, "_Z5heavyv", 256, 0);
    uint32_t c = launch(heavy, "_Z5heavyv", 128, 0);
    uint32_t d = launch(odd, "_Z3oddv", 256, 0);
    /* The CUDA runtime passes a library kernel (CUkernel) where a
     * CUfunction goes: its attributes come through the function it maps to. */
    uint32_t e = launch((CUfunction)(void *)fake.kernel(heavy), "_Z5heavyv", 512, 0);
    stop();

    session_t s = read_session();
    assert_int_equal(tu_count(&s.device, "kernel_config"), 4);
    int64_t ca = cell_int(&s, "kernel", a, "config"), cc = cell_int(&s, "kernel", c, "config");
    assert_int_equal(cell_int(&s, "kernel", b, "config"), ca);
    assert_int_not_equal(ca, cc);
    json_t *first = NULL, *flagged = NULL;
    for (size_t i = 0; i < s.device.n; i++) {
        json_t *j = s.device.v[i];
        if (strcmp(tu_type(j), "kernel_config") != 0) continue;
        int64_t id = json_integer_value(json_object_get(j, "id"));
        if (id == ca) first = j;
        if (id == cell_int(&s, "kernel", d, "config")) flagged = j;
    }
    assert_non_null(first);
    assert_string_equal(json_string_value(json_object_get(first, "name")), "_Z5heavyv");
    assert_int_equal(json_integer_value(json_object_get(first, "block_threads")), 256);
    assert_int_equal(json_integer_value(json_object_get(first, "registers")), 64);
    assert_int_equal(json_integer_value(json_object_get(first, "blocks_per_sm")), 4);
    assert_int_equal(json_integer_value(json_object_get(first, "active_warps")), 32);
    assert_int_equal(json_integer_value(json_object_get(first, "max_warps")), 64);
    assert_true(json_real_value(json_object_get(first, "occupancy")) == 0.5);
    assert_int_equal(json_integer_value(json_object_get(first, "limit_registers")), 4);
    assert_string_equal(json_string_value(json_object_get(first, "limiter")), "registers");
    assert_true(json_is_true(json_object_get(first, "breakdown_agrees")));
    assert_non_null(flagged);
    assert_true(json_is_false(json_object_get(flagged, "breakdown_agrees")));
    assert_int_equal(stat_of(&s, "configs"), 4);
    assert_int_equal(stat_of(&s, "occupancy_failures"), 0);
    json_t *lib = tu_last(&s.device, "kernel_config");
    assert_int_equal(json_integer_value(json_object_get(lib, "id")),
                     cell_int(&s, "kernel", e, "config"));
    assert_int_equal(json_integer_value(json_object_get(lib, "registers")), 64);
    json_t *occ = json_object_get(json_object_get(tu_first(&s.device, "capabilities"), "features"),
                                  "occupancy");
    assert_true(json_is_true(json_object_get(occ, "on")));
    free_session(&s);
}

/* Without libcuda the kernels are traced, each configuration says why it
 * has no occupancy, and the capability record says why too. */
static void no_libcuda_no_occupancy(void **state) {
    (void)state;
    setenv("GPUFL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    gpufl_options_t o = trace_options("no_libcuda");
    start(&o);
    uint32_t a = launch(f, "_Z1fv", 256, 0);
    stop();
    setenv("GPUFL_CUDA_LIBRARY", GPUFL_FAKE_CUDA_PATH, 1);

    session_t s = read_session();
    json_t *caps = tu_first(&s.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Trace");
    json_t *occ = json_object_get(json_object_get(caps, "features"), "occupancy");
    assert_true(json_is_false(json_object_get(occ, "on")));
    assert_non_null(strstr(json_string_value(json_object_get(occ, "why")), "nonexistent"));
    json_t *k = tu_first(&s.device, "kernel_config");
    assert_non_null(k);
    assert_non_null(json_object_get(k, "occupancy_unknown"));
    assert_null(json_object_get(k, "blocks_per_sm"));
    assert_int_equal(cell_int(&s, "kernel", a, "config"),
                     json_integer_value(json_object_get(k, "id")));
    free_session(&s);
}

/* An id a framework pushed is read at the launch and left in place. */
static void external_correlation_ids(void **state) {
    (void)state;
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    gpufl_options_t o = trace_options("external");
    start(&o);
    uint32_t plain = launch(f, "_Z1fv", 256, 0);
    assert_int_equal(fake.push_external(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 4242), 0);
    uint32_t tagged = launch(f, "_Z1fv", 256, 0);
    uint64_t popped = 0;
    assert_int_equal(fake.pop_external(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &popped), 0);
    assert_int_equal(popped, 4242); /* still there after gpufl looked */
    stop();

    session_t s = read_session();
    assert_true(json_is_null(cell(&s, "kernel", plain, "external_id")));
    assert_int_equal(cell_int(&s, "kernel", tagged, "external_id"), 4242);
    assert_int_equal(cell_int(&s, "kernel", tagged, "external_kind"),
                     CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
    free_session(&s);
}

/* A thread with no external id for 1024 launches is looked at every 64th
 * launch (looking costs a pop and a push per kind at each launch); once an
 * id is found it is looked at every launch again. */
static void external_ids_on_a_quiet_thread(void **state) {
    (void)state;
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    gpufl_options_t o = trace_options("external_quiet");
    start(&o);
    for (int i = 0; i < 1024; i++) launch(f, "_Z1fv", 256, 0);
    assert_int_equal(fake.push_external(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 99), 0);
    uint32_t tagged[74];
    for (int i = 0; i < 74; i++) tagged[i] = launch(f, "_Z1fv", 256, 0);
    uint64_t popped = 0;
    assert_int_equal(fake.pop_external(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, &popped), 0);
    uint32_t after = launch(f, "_Z1fv", 256, 0);
    stop();

    session_t s = read_session();
    for (int i = 0; i < 63; i++) /* not looked at: the cost of a quiet thread */
        assert_true(json_is_null(cell(&s, "kernel", tagged[i], "external_id")));
    for (int i = 63; i < 74; i++) /* the 64th looked, found, and every one after */
        assert_int_equal(cell_int(&s, "kernel", tagged[i], "external_id"), 99);
    assert_true(json_is_null(cell(&s, "kernel", after, "external_id")));
    free_session(&s);
}

/* With graph tracking, a graph launch is a row of its own, and the kernels
 * it ran share its correlation id and carry its scope. */
static void graph_launches(void **state) {
    (void)state;
    gpufl_options_t o = trace_options("graphs");
    o.enable_cuda_graphs_tracking = 1;
    start(&o);
    gpufl_scope_t step = gpufl_scope_begin("step", NULL);
    cuGraphLaunch_params gp = {.hGraph = (CUgraphExec)(uintptr_t)7};
    uint32_t corr = fake.call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &gp, NULL);
    gpufl_scope_end(step);
    int64_t t0 = now_ns();
    for (int node = 1; node <= 2; node++) {
        char json[256];
        snprintf(json, sizeof json,
                 "{\"kind\": 10, \"start\": %lld, \"end\": %lld, \"name\": \"_Z4nodev\", "
                 "\"correlationId\": %u, \"graphId\": 3, \"graphNodeId\": %d}",
                 (long long)t0, (long long)t0 + 100, corr, node);
        assert_int_equal(fake.add_record(json), 0);
    }
    stop();

    session_t s = read_session();
    int64_t id = scope_id(&s, "step");
    json_t *g = tu_first(&s.device, "graph_launch");
    assert_non_null(g);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(g, "correlation"), 0)),
                     corr);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(g, "graph_exec"), 0)), 7);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(g, "scope"), 0)), id);
    size_t n;
    int64_t *scopes = tu_column(&s.device, "kernel", "scope", &n);
    int64_t *nodes = tu_column(&s.device, "kernel", "graph_node", &n);
    assert_int_equal(n, 2);
    assert_int_equal(scopes[0], id);
    assert_int_equal(scopes[1], id);
    assert_int_equal(nodes[0] + nodes[1], 3);
    assert_int_equal(stat_of(&s, "graph_launches"), 1);
    free(scopes);
    free(nodes);
    free_session(&s);
}

/* The kinds and types in the rows are gpufl's values (gpufl_log.h), not
 * CUPTI's numbers, in lines of version 2; a number gpufl has no value for is
 * written as unknown, counted, and said once. */
static void rows_carry_gpufl_values(void **state) {
    (void)state;
    gpufl_options_t o = trace_options("values");
    o.enable_memory_tracking = 1;
    start(&o);
    cuMemcpyDtoD_v2_params dp = {0};
    uint32_t dtod = call_with_record(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, &dp,
                                     "\"kind\": 1, \"bytes\": 64, \"copyKind\": 8, "
                                     "\"srcKind\": 3, \"dstKind\": 5");
    uint32_t peer = call_with_record(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, &dp,
                                     "\"kind\": 1, \"bytes\": 64, \"copyKind\": 10, "
                                     "\"srcKind\": 4, \"dstKind\": 6");
    /* 42 and 99: numbers no CUPTI gives today */
    uint32_t odd = call_with_record(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, &dp,
                                    "\"kind\": 1, \"bytes\": 64, \"copyKind\": 42, "
                                    "\"srcKind\": 2, \"dstKind\": 99");
    cuMemsetD8_v2_params mp = {0};
    uint32_t mset = call_with_record(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, &mp,
                                     "\"kind\": 2, \"bytes\": 64, \"memoryKind\": 5");
    uint32_t alloc = allocate(7, 64);
    cuEventSynchronize_params ep = {.hEvent = (CUevent)(uintptr_t)0x1000};
    uint32_t event = fake.call(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, &ep, NULL);
    cuStreamWaitEvent_params wp = {.hStream = (CUstream)(uintptr_t)13,
                                   .hEvent = (CUevent)(uintptr_t)0x1000};
    uint32_t wait = fake.call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, &wp, NULL);
    stop();

    session_t s = read_session();
    assert_int_equal(cell_int(&s, "copy", dtod, "copy_kind"), GPUFL_COPY_KIND_DEVICE_TO_DEVICE);
    assert_int_equal(cell_int(&s, "copy", dtod, "src_kind"), GPUFL_MEMORY_KIND_DEVICE);
    assert_int_equal(cell_int(&s, "copy", dtod, "dst_kind"), GPUFL_MEMORY_KIND_MANAGED);
    assert_int_equal(cell_int(&s, "copy", peer, "copy_kind"), GPUFL_COPY_KIND_PEER);
    assert_int_equal(cell_int(&s, "copy", peer, "src_kind"), GPUFL_MEMORY_KIND_ARRAY);
    assert_int_equal(cell_int(&s, "copy", peer, "dst_kind"), GPUFL_MEMORY_KIND_DEVICE_STATIC);
    assert_int_equal(cell_int(&s, "copy", odd, "copy_kind"), GPUFL_COPY_KIND_UNKNOWN);
    assert_int_equal(cell_int(&s, "copy", odd, "src_kind"), GPUFL_MEMORY_KIND_PINNED);
    assert_int_equal(cell_int(&s, "copy", odd, "dst_kind"), GPUFL_MEMORY_KIND_UNKNOWN);
    assert_int_equal(cell_int(&s, "copy", odd, "bytes"), 64); /* kept, not dropped */
    assert_int_equal(cell_int(&s, "memset", mset, "memory_kind"), GPUFL_MEMORY_KIND_MANAGED);
    assert_int_equal(cell_int(&s, "alloc", alloc, "memory_kind"), GPUFL_MEMORY_KIND_MANAGED_STATIC);
    assert_int_equal(cell_int(&s, "sync", event, "sync_type"), GPUFL_SYNC_TYPE_EVENT);
    assert_int_equal(cell_int(&s, "sync", wait, "sync_type"), GPUFL_SYNC_TYPE_STREAM_WAIT_EVENT);
    assert_int_equal(stat_of(&s, "values_unmapped"), 2);
    json_t *said = tu_event(&s.device, "cupti_value_unmapped");
    assert_non_null(said);
    assert_non_null(strstr(json_string_value(json_object_get(said, "message")), "copy kind 42"));
    size_t events = 0;
    for (size_t i = 0; i < s.device.n; i++) {
        const char *type = tu_type(s.device.v[i]);
        json_int_t v = json_integer_value(json_object_get(s.device.v[i], "v"));
        const char *code = json_string_value(json_object_get(s.device.v[i], "code"));
        events += strcmp(type, "event") == 0 && code && strcmp(code, "cupti_value_unmapped") == 0;
        if (!strcmp(type, "alloc"))
            assert_int_equal(v, GPUFL_LOG_VALUES_VERSION);
        else if (!strcmp(type, "copy") || !strcmp(type, "memset") || !strcmp(type, "sync"))
            assert_int_equal(v, 3); /* gpufl's values, in compact lines */
        else if (!strcmp(type, "kernel"))
            assert_int_equal(v, 2); /* compact lines */
        else
            assert_int_equal(v, 1);
    }
    assert_int_equal(events, 1);
    free_session(&s);
}

/* Kernel rows (and copies, memsets, syncs) wait for more rows of their line up to
 * batch_hold_ms, across the collector's passes; gpufl_flush and shutdown write them at once.
 * With batch_hold_ms 0 a pass writes what it has, as before. */
static size_t kernel_lines(size_t *rows) {
    session_t s = read_session();
    size_t lines = 0;
    *rows = 0;
    for (size_t i = 0; i < s.device.n; i++) {
        if (strcmp(tu_type(s.device.v[i]), "kernel") != 0) continue;
        json_t *start = json_object_get(s.device.v[i], "start_ns");
        lines++;
        *rows += json_is_array(start) ? json_array_size(start) : 1;
    }
    free_session(&s);
    return lines;
}

static void kernel_rows_wait_for_their_line(void **state) {
    (void)state;
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    size_t rows;
    gpufl_options_t o = trace_options("hold");
    o.flush_interval_ms = 5;
    o.batch_hold_ms = 60000;
    start(&o);
    for (int burst = 0; burst < 4; burst++) {
        for (int k = 0; k < 5; k++) launch(f, "held", 128, 0);
        usleep(30000); /* several passes, each of which drains CUPTI */
    }
    assert_int_equal(kernel_lines(&rows), 0); /* held: no pass was asked to write */
    /* A line that fills is written whole; the rows after it wait for theirs. */
    for (int k = 0; k < 4096; k++) launch(f, "held", 128, 0);
    usleep(100000);
    assert_int_equal(kernel_lines(&rows), 1);
    assert_int_equal(rows, 4096);
    assert_int_equal(gpufl_flush(), 0);
    size_t lines = kernel_lines(&rows);
    assert_true(lines >= 2 &&
                lines <= 3); /* and the 20 left, in one line (two if CUPTI was late) */
    stop();
    assert_true(kernel_lines(&rows) <= 3);
    assert_int_equal(rows, 4096 + 20);

    o = trace_options("no_hold");
    o.flush_interval_ms = 5;
    o.batch_hold_ms = 0;
    start(&o);
    launch(f, "prompt", 128, 0);
    int64_t t0 = now_ns();
    while (kernel_lines(&rows) == 0 && now_ns() - t0 < 5000000000LL) usleep(5000);
    assert_int_equal(rows, 1); /* written by a pass nobody asked for */
    stop();
}

/* Memory tracking adds allocation rows, attributed like the rest; sync
 * capture switched off leaves no sync rows and no sync kind enabled. */
static void allocations_and_no_sync(void **state) {
    (void)state;
    gpufl_options_t o = trace_options("alloc");
    o.enable_memory_tracking = 1;
    o.enable_synchronization = 0;
    start(&o);
    gpufl_scope_t load = gpufl_scope_begin("load", NULL);
    uint32_t corr = allocate(3, 1048576);
    cuStreamSynchronize_params sp = {0};
    fake.call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &sp, NULL);
    gpufl_scope_end(load);
    stop();

    session_t s = read_session();
    assert_int_equal(cell_int(&s, "alloc", corr, "bytes"), 1048576);
    assert_int_equal(cell_int(&s, "alloc", corr, "op"), 1);
    assert_int_equal(cell_int(&s, "alloc", corr, "scope"), scope_id(&s, "load"));
    assert_int_equal(tu_count(&s.device, "sync"), 0);
    assert_int_equal(stat_of(&s, "syncs"), 0);
    assert_int_equal(stat_of(&s, "allocs"), 1);
    free_session(&s);
}

/* Several threads launching at once, each in its own scope: every kernel
 * carries its own thread's scope. */
#define THREADS  4
#define LAUNCHES 200
typedef struct worker {
    int index;
    CUfunction function;
    uint32_t corr[LAUNCHES];
} worker_t;

static void *work(void *arg) {
    worker_t *w = arg;
    char name[32];
    snprintf(name, sizeof name, "worker%d", w->index);
    gpufl_scope_t s = gpufl_scope_begin(name, NULL);
    for (int i = 0; i < LAUNCHES; i++)
        w->corr[i] = launch(w->function, "_Z1wv", (unsigned)(64 * (w->index + 1)), 0);
    gpufl_scope_end(s);
    return NULL;
}

static void threads_launching_at_once(void **state) {
    (void)state;
    static worker_t w[THREADS];
    pthread_t t[THREADS];
    gpufl_options_t o = trace_options("threads");
    start(&o);
    for (int i = 0; i < THREADS; i++) {
        w[i].index = i;
        w[i].function = fake.function(32, 0, 0, 1024, 8);
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    stop();

    session_t s = read_session();
    for (int i = 0; i < THREADS; i++) {
        char path[32];
        snprintf(path, sizeof path, "worker%d", i);
        int64_t id = scope_id(&s, path);
        for (int k = 0; k < LAUNCHES; k += 17)
            assert_int_equal(cell_int(&s, "kernel", w[i].corr[k], "scope"), id);
    }
    assert_int_equal(stat_of(&s, "kernels"), THREADS * LAUNCHES);
    assert_int_equal(stat_of(&s, "unattributed"), 0);
    assert_int_equal(stat_of(&s, "configs"), THREADS);
    free_session(&s);
}

/* Another CUPTI client (a profiler) subscribed first: gpufl leaves CUPTI to
 * it, runs Monitor, and says why; the application goes on. */
static void another_cupti_client_present(void **state) {
    (void)state;
    CUpti_SubscriberHandle other = NULL;
    assert_int_equal(fake.subscribe(&other, NULL, NULL), CUPTI_SUCCESS);
    gpufl_options_t o = trace_options("other_client");
    start(&o);
    assert_true(capture.warnings > 0);
    assert_non_null(strstr(capture.last, "MULTIPLE_SUBSCRIBERS"));
    gpufl_scope_t s = gpufl_scope_begin("still_recorded", NULL);
    gpufl_scope_end(s);
    stop();
    assert_int_equal(fake.unsubscribe(other), CUPTI_SUCCESS);

    session_t d = read_session();
    json_t *caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Monitor");
    json_t *trace = json_object_get(json_object_get(caps, "features"), "cupti_trace");
    assert_true(json_is_false(json_object_get(trace, "on")));
    assert_non_null(
        strstr(json_string_value(json_object_get(trace, "why")), "another CUPTI client"));
    assert_non_null(strstr(json_string_value(json_object_get(trace, "why")),
                           "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"));
    assert_true(scope_id(&d, "still_recorded") > 0);
    free_session(&d);

    /* And once it is gone, Trace runs again in the same process. */
    gpufl_options_t again = trace_options("after_other_client");
    start(&again);
    stop();
    d = read_session();
    caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Trace");
    free_session(&d);
}

/* Gives the fake CUPTI the script "{"<key>": {"<concurrent kernel>": error}}"
 * (in a scratch directory named dir, through GPUFL_FAKE_CUPTI, which the
 * caller unsets). */
static void script_kernel_kind(const char *dir, const char *key, CUptiResult error) {
    char path[1200];
    snprintf(path, sizeof path, "%s/script.json", tu_scratch_dir(SUITE, dir));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"%s\": {\"%d\": %d}}", key, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, error);
    fclose(f);
    setenv("GPUFL_FAKE_CUPTI", path, 1);
}

/* Has the fake CUPTI refuse the concurrent-kernel activity kind with error. */
static void refuse_kernel_activity(const char *dir, CUptiResult error) {
    script_kernel_kind(dir, "enable_errors", error);
}

/* Profiling restricted to administrators: CUPTI refuses kernel activity.
 * gpufl runs Monitor, unsubscribed again, and says why. */
static void insufficient_privileges(void **state) {
    (void)state;
    refuse_kernel_activity("privileges", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
    gpufl_options_t o = trace_options("privileges");
    start(&o);
    assert_int_equal(fake.callbacks_on(), 0); /* the subscription was given back */
    stop();
    unsetenv("GPUFL_FAKE_CUPTI");

    session_t s = read_session();
    json_t *caps = tu_first(&s.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Monitor");
    const char *why = json_string_value(
        json_object_get(json_object_get(json_object_get(caps, "features"), "cupti_trace"), "why"));
    assert_non_null(strstr(why, "insufficient privileges"));
    assert_non_null(strstr(why, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"));
    free_session(&s);
}

/* Buffers recorded from the real CUPTI on an H100 (CUDA 13), replayed byte
 * for byte: every record of the recording comes out as a row, with the
 * fields a GPU gave. */
static void replay_of_recorded_buffers(void **state) {
    (void)state;
    const char *recorded = GPUFL_TEST_SOURCE_DIR "/fixtures/cupti/h100-cuda13.cupti";
    json_error_t error;
    json_t *want =
        json_load_file(GPUFL_TEST_SOURCE_DIR "/fixtures/cupti/h100-cuda13.cupti.json", 0, &error);
    assert_non_null(want);
    setenv("GPUFL_FAKE_CUPTI_REPLAY", recorded, 1);
    gpufl_options_t o = trace_options("replay");
    o.enable_memory_tracking = 1;
    start(&o);
    stop();
    unsetenv("GPUFL_FAKE_CUPTI_REPLAY");

    session_t s = read_session();
    const char *keys[] = {"kernels", "copies", "memsets", "syncs", "allocs"};
    int64_t total = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int64_t n = json_integer_value(json_object_get(want, keys[i]));
        assert_true(n > 0);
        assert_int_equal(stat_of(&s, keys[i]), n);
        if (i < 4) total += n;
    }
    /* No callback saw these calls: none is attributed, and each is counted. */
    assert_int_equal(stat_of(&s, "unattributed"), total);
    size_t n;
    int64_t *start_ns = tu_column(&s.device, "kernel", "start_ns", &n);
    int64_t *end_ns = tu_column(&s.device, "kernel", "end_ns", &n);
    int64_t *demangled = tu_column(&s.device, "kernel", "demangled", &n);
    int64_t *graph = tu_column(&s.device, "kernel", "graph_id", &n);
    int scale = 0, in_graph = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(end_ns[i] > start_ns[i]);
        assert_true(start_ns[i] > 0);
        if (strcmp(tu_dict(&s.device, demangled[i]), "scale(float*, float, int)") == 0) scale++;
        in_graph += graph[i] != 0;
    }
    assert_int_equal(scale, 7); /* 6 on a stream, 1 in the graph */
    assert_int_equal(in_graph, 2);
    int64_t *kind = tu_column(&s.device, "copy", "copy_kind", &n);
    int directions = 0;
    for (size_t i = 0; i < n; i++) directions |= 1 << kind[i];
    assert_int_equal(directions, (1 << GPUFL_COPY_KIND_HOST_TO_DEVICE) |
                                     (1 << GPUFL_COPY_KIND_DEVICE_TO_HOST) |
                                     (1 << GPUFL_COPY_KIND_DEVICE_TO_DEVICE));
    free(start_ns), free(end_ns), free(demangled), free(graph), free(kind);
    json_decref(want);
    free_session(&s);
}

/* Writes a recording of one buffer of 64 zero bytes whose name table says
 * `names` names, the first at offset, or nothing past the count when
 * offset is 0. */
static void write_recording(const char *path, uint32_t names, uint64_t offset) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint32_t version = 1, count = 1, length = 1;
    uint64_t valid = 64;
    unsigned char bytes[64] = {0};
    fwrite("GPUFLCUPTI1\n", 1, 12, f);
    fwrite(&version, 4, 1, f);
    fwrite(&count, 4, 1, f);
    fwrite(&valid, 8, 1, f);
    fwrite(bytes, 1, sizeof bytes, f);
    fwrite(&names, 4, 1, f);
    if (offset != 0) {
        fwrite(&offset, 8, 1, f);
        fwrite(&length, 4, 1, f);
        fwrite("k", 1, 1, f);
    }
    fclose(f);
}

/* Starts and stops a session replaying path: refused (Monitor), no crash. */
static void replay_refused(const char *path, const char *name) {
    setenv("GPUFL_FAKE_CUPTI_REPLAY", path, 1);
    gpufl_options_t o = trace_options(name);
    start(&o);
    stop();
    unsetenv("GPUFL_FAKE_CUPTI_REPLAY");
    session_t s = read_session();
    json_t *caps = tu_first(&s.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Monitor");
    free_session(&s);
}

/* A damaged recording is refused with a message; gpufl stays up. */
static void replay_of_damaged_recording(void **state) {
    (void)state;
    const char *dir = tu_scratch_dir(SUITE, "damaged");
    char path[1200];
    snprintf(path, sizeof path, "%s/cut.cupti", dir);
    FILE *in = fopen(GPUFL_TEST_SOURCE_DIR "/fixtures/cupti/h100-cuda13.cupti", "rb");
    FILE *out = fopen(path, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buffer[100];
    size_t got = fread(buffer, 1, sizeof buffer, in); /* cut in the first buffer */
    fwrite(buffer, 1, got, out);
    fclose(in);
    fclose(out);
    setenv("GPUFL_FAKE_CUPTI_REPLAY", path, 1);
    gpufl_options_t o = trace_options("replay_damaged");
    start(&o);
    stop();
    unsetenv("GPUFL_FAKE_CUPTI_REPLAY");
    session_t s = read_session();
    json_t *caps = tu_first(&s.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Monitor");
    free_session(&s);

    /* A name count past the limit, and a name offset that wraps around. */
    snprintf(path, sizeof path, "%s/names.cupti", dir);
    write_recording(path, UINT32_MAX, 0);
    replay_refused(path, "replay_names");
    snprintf(path, sizeof path, "%s/offset.cupti", dir);
    write_recording(path, 1, UINT64_MAX - sizeof(CUpti_ActivityKernel10) + 1);
    replay_refused(path, "replay_offset");
}

/* Sessions started and stopped from inside a call (fake_cupti_call_across
 * and _late run these between a call's callbacks). */
static void start_session(void *arg) { start(arg); }
static void restart_session(void *arg) {
    stop();
    start(arg);
}

/* A synchronization the thread was blocked in when the session started: its
 * exit is seen, its enter was not (or was seen by the session before). It
 * is left out, not written with the start of another call, before the
 * session began. */
static void sync_begun_before_the_session(void **state) {
    (void)state;
    cuStreamSynchronize_params sp = {.hStream = (CUstream)(uintptr_t)13};
    gpufl_options_t a = trace_options("sync_across_a");
    start(&a);
    fake.call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &sp, NULL); /* seen whole */
    gpufl_options_t b = trace_options("sync_across_b");
    /* Entered in session a, left in session b. */
    uint32_t straddling =
        fake.call_across(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, NULL, NULL, restart_session, &b);
    uint32_t whole = fake.call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &sp, NULL);
    stop();
    session_t s = read_session();
    assert_false(has_row(&s, "sync", straddling));
    assert_true(cell_int(&s, "sync", whole, "start_ns") >= 0);
    assert_int_equal(stat_of(&s, "syncs"), 1);
    free_session(&s);

    /* Entered before any session. */
    gpufl_options_t c = trace_options("sync_across_c");
    uint32_t unseen =
        fake.call_across(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, NULL, NULL, start_session, &c);
    stop();
    s = read_session();
    assert_false(has_row(&s, "sync", unseen));
    assert_int_equal(stat_of(&s, "syncs"), 0);
    free_session(&s);
}

/* A callback CUPTI began to deliver before a session ended runs after the
 * next one started: it reaches the new session's data only once that is
 * complete (TSan checks the order). */
static atomic_int late_ready, late_go;
static void wait_for_go(void *arg) {
    (void)arg;
    atomic_store_explicit(&late_ready, 1, memory_order_release);
    /* Relaxed: nothing the sessions did is ordered before the callback. */
    while (!atomic_load_explicit(&late_go, memory_order_relaxed)) sched_yield();
}

static void *launch_late(void *arg) {
    cuLaunchKernel_params p = {.f = arg,
                               .gridDimX = 1,
                               .gridDimY = 1,
                               .gridDimZ = 1,
                               .blockDimX = 32,
                               .blockDimY = 1,
                               .blockDimZ = 1};
    fake.call_late(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "_Z4latev", wait_for_go, NULL);
    return NULL;
}

static void callback_begun_before_a_restart(void **state) {
    (void)state;
    gpufl_options_t a = trace_options("late_callback_a");
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    atomic_store(&late_ready, 0);
    atomic_store(&late_go, 0);
    start(&a);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, launch_late, (void *)f), 0);
    while (!atomic_load_explicit(&late_ready, memory_order_acquire)) sched_yield();
    stop();
    gpufl_options_t b = trace_options("late_callback_b");
    start(&b);
    atomic_store_explicit(&late_go, 1, memory_order_relaxed);
    pthread_join(t, NULL);
    stop();
    session_t s = read_session();
    assert_int_equal(tu_count(&s.device, "kernel_config"), 1); /* noted by session b */
    free_session(&s);
}

/* A launch whose block size overflows an int (the driver refuses it) gets
 * no configuration, rather than one with a negative block size. */
static void launch_with_an_impossible_block(void **state) {
    (void)state;
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    gpufl_options_t o = trace_options("impossible_block");
    start(&o);
    cuLaunchKernel_params p = {.f = f,
                               .gridDimX = 1,
                               .gridDimY = 1,
                               .gridDimZ = 1,
                               .blockDimX = 2048,
                               .blockDimY = 1024,
                               .blockDimZ = 1024};
    fake.call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "_Z1fv");
    launch(f, "_Z1fv", 256, 0);
    stop();
    session_t s = read_session();
    assert_int_equal(tu_count(&s.device, "kernel_config"), 1);
    json_t *k = tu_first(&s.device, "kernel_config");
    assert_int_equal(json_integer_value(json_object_get(k, "block_threads")), 256);
    free_session(&s);
}

/* ---- CPU stacks: the sync line a user would fix ---- */

static int sync_line; /* the line of the synchronization call in train_step */

/* A training step as an application writes it: kernels, then a sync. */
__attribute__((noinline)) static void train_step(CUfunction gemm) {
    for (int k = 0; k < 4; k++) launch(gemm, "_Z4gemmPf", 256, 0);
    cuStreamSynchronize_params sp = {.hStream = (CUstream)(uintptr_t)13};
    sync_line = __LINE__ + 1;
    fake.call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &sp, NULL);
    __asm__ volatile(""); /* keeps the call from being a tail call */
}

/* With enable_stack_trace, every launch and sync row names its stack; the
 * frames are described once (this file is built with -g), and the in-loop
 * and attribution insights name this file's line and function. */
static void stacks_name_the_sync_line(void **state) {
    (void)state;
    CUfunction gemm = fake.function(32, 0, 0, 1024, 8);
    gpufl_options_t o = trace_options("stacks");
    o.enable_stack_trace = 1;
    start(&o);
    for (int step = 0; step < 6; step++) train_step(gemm);
    stop();

    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, tu_session_dir()), 0);
    assert_int_equal(m->n_syncs, 6);
    assert_int_equal(m->n_kernels, 24);
    assert_int_equal(m->stacks_missing, 0);
    for (size_t i = 0; i < m->n_kernels; i++) {
        assert_true(m->kernels[i].stack > 0);
        assert_true(m->kernels[i].tid > 0);
        assert_true(m->kernels[i].launch_ns >= 0);
        assert_true(m->kernels[i].launch_ns <= m->kernels[i].start_ns + 1000000);
    }
    /* One call site: one stack for all six syncs, its site this file. */
    int64_t stack = m->syncs[0].stack;
    for (size_t i = 0; i < m->n_syncs; i++) assert_int_equal(m->syncs[i].stack, stack);
    const gpufl__model_frame_t *site = gpufl__model_stack_site(m, stack);
    assert_non_null(site);
    assert_non_null(strstr(site->file, "test_trace_session.c"));
    assert_int_equal(site->line, sync_line);
    assert_non_null(strstr(site->function, "train_step"));
    assert_non_null(strstr(site->source, "cuStreamSynchronize"));
    /* The frames above it are CUDA's (here the fake libcupti): not user code. */
    const gpufl__model_stack_t *st = gpufl__model_stack_find(m, stack);
    assert_non_null(st);
    const gpufl__model_frame_t *top = gpufl__model_stack_frame(m, st, 0);
    assert_non_null(strstr(top->module, "libcupti"));
    assert_false(top->user);

    gpufl__insights_t in;
    assert_int_equal(gpufl__insights_compute(&in, m), 0);
    const gpufl__insight_t *loop = NULL, *attr = NULL;
    for (size_t i = 0; i < in.n; i++) {
        if (strcmp(in.items[i].rule, "in_loop_sync") == 0) loop = &in.items[i];
        if (strcmp(in.items[i].rule, "sync_attribution") == 0) attr = &in.items[i];
    }
    assert_non_null(loop);
    assert_non_null(attr);
    char where[64];
    snprintf(where, sizeof where, "test_trace_session.c:%d", sync_line);
    assert_non_null(strstr(attr->title, "cudaStreamSynchronize \xc3\x97 6 @ "));
    assert_non_null(strstr(attr->title, where));
    assert_non_null(strstr(loop->message, where));
    assert_non_null(strstr(loop->message, "train_step"));
    assert_int_equal(loop->line, sync_line);
    gpufl__insights_free(&in);
    gpufl__model_destroy(m);

    session_t s = read_session();
    assert_int_equal(stat_of(&s, "stacks"), 30);
    assert_int_equal(stat_of(&s, "stacks_lost"), 0);
    free_session(&s);
}

/* Past the cap on configurations a launch gets none and is counted as
 * dropped; occupancy failures count configurations, not launches. */
static void configurations_past_the_cap(void **state) {
    (void)state;
    setenv("GPUFL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    /* A scratch directory: 65536 kernel_config lines are not worth a schema check. */
    gpufl_options_t o = tu_options(tu_scratch_dir(SUITE, "config_cap"));
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.backend = GPUFL_BACKEND_NVIDIA;
    start(&o);
    cuLaunchKernel_params p = {
        .f = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimY = 1, .blockDimZ = 1};
    for (unsigned int i = 0; i < GPUFL_LAUNCH_CONFIGS_MAX + 3; i++) {
        p.blockDimX = 1 + i % 1024;
        p.sharedMemBytes = i / 1024;
        fake.call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "_Z1fv");
    }
    stop();
    setenv("GPUFL_CUDA_LIBRARY", GPUFL_FAKE_CUDA_PATH, 1);
    session_t s = read_session();
    assert_int_equal(stat_of(&s, "configs"), GPUFL_LAUNCH_CONFIGS_MAX);
    assert_int_equal(stat_of(&s, "configs_dropped"), 3);
    assert_int_equal(stat_of(&s, "occupancy_failures"), GPUFL_LAUNCH_CONFIGS_MAX);
    free_session(&s);
}

/* ---------------------------------------------------------------------- */
/* PcSampling                                                               */
/* ---------------------------------------------------------------------- */

/* The fake's stall reason indices (fake_cupti_pcs.c). */
enum {
    R_TOTAL = 0,
    R_DROPPED = 1,
    R_LONG_SB = 2,
    R_LONG_SB_NOT_ISSUED = 3,
    R_MATH = 4,
    R_SELECTED = 5
};
#define CTX_A ((CUcontext)(uintptr_t)0x1234)
#define CTX_B ((CUcontext)(uintptr_t)0x2345)

static gpufl_options_t pc_sampling_options(const char *name) {
    gpufl_options_t o = trace_options(name);
    o.profiling_engine = GPUFL_ENGINE_PC_SAMPLING;
    return o;
}

/* Lets the collector drain at least once (every 100 ms) and close a window
 * (flush_interval_ms is short). */
/* At least one whole collector pass (gpufl_flush waits for it: a loaded
 * machine may not give the collector a pass within any fixed sleep), then
 * some time, as sources that poll on their own clock expect. */
static void let_collector_run(void) {
    (void)gpufl_flush();
    struct timespec t = {0, 250 * 1000000L};
    nanosleep(&t, NULL);
}

/* The `pc_sampling` record of context id, or NULL. */
static json_t *pc_sampling_record(const session_t *s, int64_t context) {
    for (size_t i = 0; i < s->device.n; i++) {
        json_t *j = s->device.v[i];
        if (strcmp(tu_type(j), "pc_sampling") == 0 &&
            json_integer_value(json_object_get(j, "context")) == context)
            return j;
    }
    return NULL;
}

/* Sums pc_sample samples of a context; with reason and function not NULL,
 * only those (names as in the dict). */
static int64_t samples_of(const session_t *s, int64_t context, const char *reason,
                          const char *function) {
    int64_t sum = 0;
    for (size_t i = 0; i < s->device.n; i++) {
        json_t *j = s->device.v[i];
        if (strcmp(tu_type(j), "pc_sample") != 0) continue;
        json_t *ctx = json_object_get(j, "context"), *n = json_object_get(j, "samples");
        json_t *r = json_object_get(j, "reason"), *f = json_object_get(j, "function");
        for (size_t k = 0; k < json_array_size(n); k++) {
            if (json_integer_value(json_array_get(ctx, k)) != context) continue;
            if (reason &&
                strcmp(tu_dict(&s->device, json_integer_value(json_array_get(r, k))), reason) != 0)
                continue;
            if (function && strcmp(tu_dict(&s->device, json_integer_value(json_array_get(f, k))),
                                   function) != 0)
                continue;
            sum += json_integer_value(json_array_get(n, k));
        }
    }
    return sum;
}

/* Sums a pc_window column over a context's rows. */
static int64_t window_sum(const session_t *s, int64_t context, const char *col) {
    size_t n, m;
    int64_t *ctx = tu_column(&s->device, "pc_window", "context", &n);
    int64_t *v = tu_column(&s->device, "pc_window", col, &m);
    int64_t sum = 0;
    for (size_t i = 0; i < n && i < m; i++)
        if (ctx[i] == context) sum += v[i];
    free(ctx);
    free(v);
    return sum;
}

static int64_t pc_sampling_stat(const session_t *s, const char *key) {
    json_t *t = tu_first(&s->device, "pc_sampling_stats");
    assert_non_null(t);
    return json_integer_value(json_object_get(t, key));
}

#define LONG_SB "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
#define MATH    "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"

/* A context that existed before init is found at its first launch (late),
 * one created during the session at its creation; samples of both are
 * drained while the program runs, windowed, and accounted for. */
static void pc_samples_of_two_contexts(void **state) {
    (void)state;
    fresh_pc_sampling();
    gpufl_options_t o = pc_sampling_options("pcs_two_contexts");
    o.flush_interval_ms = 10;
    o.pc_sampling_period = 14;
    start(&o);
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    fake.set_context(CTX_A);
    uint32_t corr = launch(f, "_Z4axpyPf", 256, 0); /* CTX_A is seen here */
    assert_int_equal(fake.pc_sampling_add(CTX_A, 0xabc, "_Z4axpyPf", 0x10, R_LONG_SB, 500), 0);
    assert_int_equal(
        fake.pc_sampling_add(CTX_A, 0xabc, "_Z4axpyPf", 0x10, R_LONG_SB_NOT_ISSUED, 400), 0);
    assert_int_equal(fake.pc_sampling_add(CTX_A, 0xabc, "_Z4axpyPf", 0x10, R_SELECTED, 100), 0);
    assert_int_equal(fake.pc_sampling_add(CTX_A, 0xabc, "_Z4axpyPf", 0x20, R_MATH, 200), 0);
    assert_int_equal(fake.pc_sampling_add(CTX_A, 0xabc, "_Z4axpyPf", 0x30, R_TOTAL, 999), 0);
    fake.pc_sampling_count(CTX_A, 30, 0);
    let_collector_run();
    /* Later samples of the same PC go to a later window. */
    assert_int_equal(fake.pc_sampling_add(CTX_A, 0xabc, "_Z4axpyPf", 0x10, R_LONG_SB, 50), 0);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_B, NULL, 0), 1);
    assert_int_equal(fake.pc_sampling_add(CTX_B, 0xdef, "plain_c_kernel", 0x40, R_MATH, 70), 0);
    let_collector_run();
    fake.set_context(NULL);
    stop();

    session_t d = read_session();
    json_t *caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "PcSampling");
    json_t *feature = json_object_get(json_object_get(caps, "features"), "pc_sampling");
    assert_true(json_is_true(json_object_get(feature, "on")));

    json_t *a = pc_sampling_record(&d, 0x1234), *b = pc_sampling_record(&d, 0x2345);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(json_is_true(json_object_get(a, "late")));
    assert_true(json_is_false(json_object_get(b, "late")));
    assert_int_equal(json_integer_value(json_object_get(a, "period")), 14);
    assert_string_equal(json_string_value(json_object_get(a, "mode")), "continuous");
    assert_int_equal(json_integer_value(json_object_get(a, "worker_sleep_ms")), 100);
    /* Only the plain reasons: no total, no dropped count, no _not_issued twin. */
    json_t *reasons = json_object_get(a, "reasons");
    assert_int_equal(json_array_size(reasons), 3);
    for (size_t i = 0; i < json_array_size(reasons); i++) {
        const char *r = json_string_value(json_array_get(reasons, i));
        assert_null(strstr(r, "not_issued"));
        assert_null(strstr(r, "sample_count"));
        assert_null(strstr(r, "dropped"));
    }

    assert_int_equal(samples_of(&d, 0x1234, LONG_SB, "_Z4axpyPf"), 550);
    assert_int_equal(samples_of(&d, 0x1234, MATH, NULL), 200);
    assert_int_equal(samples_of(&d, 0x1234, NULL, NULL), 850);
    assert_int_equal(samples_of(&d, 0x2345, MATH, "plain_c_kernel"), 70);
    /* The two batches of PC 0x10 were drained in different windows. */
    size_t rows;
    int64_t *t0 = tu_column(&d.device, "pc_sample", "t0_ns", &rows);
    int64_t *t1 = tu_column(&d.device, "pc_sample", "t1_ns", &rows);
    int windows_seen = 0;
    for (size_t i = 0; i < rows; i++) {
        assert_true(t0[i] <= t1[i]);
        if (i > 0 && t0[i] != t0[0]) windows_seen = 1;
    }
    assert_true(windows_seen);
    free(t0);
    free(t1);

    /* Every sample CUPTI counted is accounted for. */
    assert_int_equal(window_sum(&d, 0x1234, "samples"), 850 + 30);
    assert_int_equal(window_sum(&d, 0x1234, "recorded"), 850);
    assert_int_equal(window_sum(&d, 0x1234, "non_user"), 30);
    assert_int_equal(window_sum(&d, 0x1234, "buffer_full"), 0);
    assert_int_equal(pc_sampling_stat(&d, "contexts"), 2);
    assert_int_equal(pc_sampling_stat(&d, "recorded"), 920);
    assert_int_equal(pc_sampling_stat(&d, "samples"), 950);
    assert_int_equal(pc_sampling_stat(&d, "functions"), 2);
    assert_int_equal(pc_sampling_stat(&d, "errors"), 0);
    /* The activity kinds are off while PC sampling is enabled on each
     * context and on again after, where CUPTI refuses the kernel kind (the
     * fake's default, as CUPTI on an H100): the launch is written from the
     * callback, with its context and configuration. (The fake counts enables
     * from the session's buffer registration on: the start, then after each
     * of the two contexts.) */
    assert_int_equal(fake.enable_count(CUPTI_ACTIVITY_KIND_MEMCPY), 3);
    assert_int_equal(fake.live_at_pcs_enable(), 0); /* off while either context was enabled */
    assert_int_equal(tu_count(&d.device, "kernel"), 0);
    assert_int_equal(cell_int(&d, "launch", corr, "context"), 0x1234);
    assert_true(cell_int(&d, "launch", corr, "config") > 0);
    assert_int_equal(stat_of(&d, "launches"), 1);
    assert_int_equal(stat_of(&d, "launches_lost"), 0);
    free_session(&d);

    /* CUPTI was set up as the engine wants it, and let go at the end. */
    uint32_t period, mode;
    int enables, disables;
    assert_true(fake.pc_sampling_state(CTX_A, &period, &mode, &enables, &disables));
    assert_int_equal(period, 14);
    assert_int_equal(mode, CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS);
    assert_int_equal(enables, 1);
    assert_int_equal(disables, 1);
}

/* Samples CUPTI still holds when a context goes are taken before it goes;
 * a PC that never reached a GetData comes back through the disable buffer. */
static void pc_samples_of_a_destroyed_context(void **state) {
    (void)state;
    fresh_pc_sampling();
    gpufl_options_t o = pc_sampling_options("pcs_destroyed");
    o.flush_interval_ms = 60000; /* nothing drained by the collector before the end */
    start(&o);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_B, NULL, 0), 1);
    assert_int_equal(fake.pc_sampling_add(CTX_B, 0xdef, "k", 0x40, R_LONG_SB, 7), 0);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, CTX_B, NULL, 0),
                     1);
    stop();
    session_t d = read_session();
    assert_int_equal(samples_of(&d, 0x2345, LONG_SB, "k"), 7);
    assert_int_equal(pc_sampling_stat(&d, "recorded"), 7);
    free_session(&d);
    uint32_t period, mode;
    int enables, disables;
    assert_true(fake.pc_sampling_state(CTX_B, &period, &mode, &enables, &disables));
    assert_int_equal(period, 18); /* the default */
    assert_int_equal(disables, 1);
}

/* A one-block launch of a fresh function. */
static cuLaunchKernel_params small_launch(void) {
    return (cuLaunchKernel_params){.f = fake.function(32, 0, 0, 1024, 8),
                                   .gridDimX = 1,
                                   .gridDimY = 1,
                                   .gridDimZ = 1,
                                   .blockDimX = 128,
                                   .blockDimY = 1,
                                   .blockDimZ = 1};
}

/* A session of o on CTX_A whose hardware buffer is full, after the
 * collector has run a few times. */
static void start_with_a_full_buffer(gpufl_options_t *o) {
    start(o);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    fake.pc_sampling_buffer_full(CTX_A, 1);
    let_collector_run();
}

/* The fake's count of enables (that succeeded) and disables on ctx. */
static void assert_pc_sampling_toggles(CUcontext ctx, int enables, int disables) {
    uint32_t period, mode;
    int e, d;
    assert_true(fake.pc_sampling_state(ctx, &period, &mode, &e, &d));
    assert_int_equal(e, enables);
    assert_int_equal(d, disables);
}

/* CUPTI's hardware buffer full: a loss no counter of CUPTI shows. It is
 * counted per window, warned about once and written as an event. The
 * buffer stays full until sampling is disabled: by default the loss lasts
 * to the end, said; with GPUFL_PC_SAMPLING_RESTART=1 the context's sampling
 * is restarted, and later samples are recorded again. */
static void pc_sampling_buffer_full(void **state) {
    (void)state;
    fresh_pc_sampling();
    gpufl_options_t o = pc_sampling_options("pcs_buffer_stays_full");
    o.flush_interval_ms = 10;
    start_with_a_full_buffer(&o);
    assert_pc_sampling_toggles(CTX_A, 1, 0);
    stop();
    assert_non_null(strstr(capture.last, "unless GPUFL_PC_SAMPLING_RESTART=1"));
    session_t kept = read_session();
    assert_int_equal(pc_sampling_stat(&kept, "restarts"), 0);
    free_session(&kept);

    fresh_pc_sampling();
    o = pc_sampling_options("pcs_buffer_full");
    o.flush_interval_ms = 10;
    setenv("GPUFL_PC_SAMPLING_RESTART", "1", 1);
    start(&o);
    unsetenv("GPUFL_PC_SAMPLING_RESTART");
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    fake.pc_sampling_buffer_full(CTX_A, 1);
    let_collector_run();
    assert_pc_sampling_toggles(CTX_A, 2, 1);
    assert_int_equal(fake.pc_sampling_add(CTX_A, 0x99, "_Z4axpyPf", 0x40, R_LONG_SB, 70), 0);
    let_collector_run();
    stop();
    assert_non_null(strstr(capture.last, "hardware buffer was full"));
    assert_non_null(strstr(capture.last, "sampling was restarted"));
    session_t d = read_session();
    assert_true(window_sum(&d, 0x1234, "buffer_full") > 0);
    assert_true(pc_sampling_stat(&d, "buffer_full") > 0);
    assert_int_equal(pc_sampling_stat(&d, "restarts"), 1);
    assert_int_equal(samples_of(&d, 0x1234, LONG_SB, "_Z4axpyPf"), 70);
    int events = 0;
    for (size_t i = 0; i < d.device.n; i++) {
        json_t *j = d.device.v[i];
        if (strcmp(tu_type(j), "event") == 0 &&
            strcmp(json_string_value(json_object_get(j, "code")), "pc_buffer_full") == 0)
            events++;
    }
    assert_int_equal(events, 1);
    free_session(&d);
}

/* A first launch of a kernel on CTX_A, on a thread of its own (the thread's
 * first launch on the context goes to the engine's context_seen hook). */
static void *first_launch_on_a(void *arg) {
    (void)arg;
    cuLaunchKernel_params p = small_launch();
    fake.call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "_Z4axpyPf");
    return NULL;
}

/* Where a restart is not done: under Deep, even when its SASS log is
 * missing (no nvdisasm); and after a restart that failed, a later first
 * launch does not enable the context again. */
static void pc_sampling_restart_limits(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    fresh_pc_sampling();
    setenv("GPUFL_NVDISASM", "/nonexistent/nvdisasm", 1);
    setenv("GPUFL_PC_SAMPLING_RESTART", "1", 1);
    gpufl_options_t o = trace_options("deep_no_restart");
    o.profiling_engine = GPUFL_ENGINE_DEEP;
    o.flush_interval_ms = 10;
    start_with_a_full_buffer(&o);
    assert_pc_sampling_toggles(CTX_A, 1, 0);
    stop();
    unsetenv("GPUFL_NVDISASM");
    assert_non_null(strstr(capture.last, "under Deep sampling cannot restart"));

    fresh_pc_sampling();
    o = pc_sampling_options("pcs_restart_fails");
    o.flush_interval_ms = 10;
    start(&o);
    unsetenv("GPUFL_PC_SAMPLING_RESTART");
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    fake.pc_sampling_enable_error(CUPTI_ERROR_UNKNOWN);
    fake.pc_sampling_buffer_full(CTX_A, 1);
    let_collector_run();
    fake.pc_sampling_enable_error(CUPTI_SUCCESS);
    fake.set_context(CTX_A);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, first_launch_on_a, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    fake.set_context(NULL);
    /* The first enable only (the fake counts those that succeed): the
     * restart disabled, its enable failed, and the later first launch did
     * not enable the context again. */
    assert_pc_sampling_toggles(CTX_A, 1, 1);
    stop();
    assert_non_null(strstr(capture.last, "could not restart"));
    session_t d = read_session();
    assert_int_equal(pc_sampling_stat(&d, "restarts"), 0);
    assert_int_equal(tu_count(&d.device, "pc_sampling"), 1);
    free_session(&d);
}

/* Counts no GPU can make (CUPTI once handed over 7.3 * 10^11 samples in a
 * 20 s run) are said and left out of the totals; the next call's are kept.
 * So is a PC record with such a count (an H100 run recorded 8.5 times the
 * samples CUPTI counted). */
static void pc_sampling_impossible_counts(void **state) {
    (void)state;
    fresh_pc_sampling();
    gpufl_options_t o = pc_sampling_options("pcs_impossible");
    o.flush_interval_ms = 10;
    start(&o);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    fake.pc_sampling_count(CTX_A, UINT64_C(732011570154), 0);
    let_collector_run();
    fake.pc_sampling_count(CTX_A, 500, 0);
    let_collector_run();
    /* A record of one PC with more samples than the GPU takes in a second
     * at the default period (about 1.1 * 10^7), outside CUPTI's total as
     * on the H100: left out whole, said once; a plausible one beside it is
     * kept, and the totals hold. */
    assert_int_equal(
        fake.pc_sampling_add_uncounted(CTX_A, 0xabc, "_Z4axpyPf", 0x10, R_LONG_SB, 3000000000u), 0);
    assert_int_equal(fake.pc_sampling_add(CTX_A, 0xabc, "_Z4axpyPf", 0x20, R_LONG_SB, 40), 0);
    let_collector_run();
    stop();
    session_t d = read_session();
    assert_int_equal(pc_sampling_stat(&d, "non_user"), 500);
    assert_int_equal(pc_sampling_stat(&d, "samples"), 540);
    assert_int_equal(pc_sampling_stat(&d, "recorded"), 40);
    assert_int_equal(pc_sampling_stat(&d, "errors"),
                     1); /* the impossible total; the record is an event */
    assert_int_equal(pc_sampling_stat(&d, "implausible_records"), 1);
    assert_int_equal(samples_of(&d, 0x1234, LONG_SB, "_Z4axpyPf"), 40);
    json_t *e = tu_event(&d.device, "pc_counts_implausible");
    assert_non_null(e);
    assert_non_null(
        strstr(json_string_value(json_object_get(e, "message")),
               "3000000000 samples, more than the GPU takes at period 2^18 (_Z4axpyPf"));
    int said = 0;
    for (size_t i = 0; i < d.device.n; i++) {
        json_t *j = d.device.v[i];
        const char *m = json_string_value(json_object_get(j, "message"));
        said += strcmp(tu_type(j), "event") == 0 && m && strstr(m, "more than a GPU makes");
    }
    assert_true(said >= 1);
    free_session(&d);
}

/* A context CUPTI will not sample (another profiler holds the hardware,
 * say): the record says why, the warning too, and Trace goes on. */
static void pc_sampling_refused(void **state) {
    (void)state;
    fresh_pc_sampling();
    fake.pc_sampling_enable_error(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
    gpufl_options_t o = pc_sampling_options("pcs_refused");
    start(&o);
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    fake.set_context(CTX_A);
    uint32_t corr = launch(f, "k", 256, 0);
    fake.set_context(NULL);
    stop();
    fake.pc_sampling_enable_error(CUPTI_SUCCESS);
    assert_non_null(strstr(capture.last, "not sampling context"));
    session_t d = read_session();
    json_t *a = pc_sampling_record(&d, 0x1234);
    assert_non_null(a);
    assert_non_null(
        strstr(json_string_value(json_object_get(a, "error")), "cuptiPCSamplingEnable"));
    assert_null(json_object_get(a, "period"));
    /* Not sampled: CUPTI takes the kernel kind again, the kernel is timed. */
    assert_true(has_row(&d, "kernel", corr));
    assert_int_equal(pc_sampling_stat(&d, "contexts"), 0);
    assert_int_equal(pc_sampling_stat(&d, "errors"), 1);
    free_session(&d);
}

/* A CUPTI without the PC Sampling API: Trace runs and says why; Deep
 * (whose SASS metrics are not built) degrades to PcSampling. */
static void pc_sampling_unavailable_and_deep(void **state) {
    (void)state;
    setenv("GPUFL_CUPTI_LIBRARY", GPUFL_FAKE_CUPTI_OLD_PATH, 1);
    gpufl_options_t o = pc_sampling_options("pcs_unavailable");
    start(&o);
    stop();
    setenv("GPUFL_CUPTI_LIBRARY", GPUFL_FAKE_CUPTI_PATH, 1);
    assert_non_null(strstr(capture.last, "PC sampling cannot run"));
    session_t d = read_session();
    json_t *caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Trace");
    json_t *feature = json_object_get(json_object_get(caps, "features"), "pc_sampling");
    assert_true(json_is_false(json_object_get(feature, "on")));
    assert_non_null(
        strstr(json_string_value(json_object_get(feature, "why")), "cuptiPCSamplingEnable"));
    assert_null(tu_first(&d.device, "pc_sampling_stats"));
    free_session(&d);

    /* Deep where the profiler cannot start: PC sampling alone, and why. */
    fresh_pc_sampling();
    fake.sass_metrics_reset();
    fake.sass_metrics_error("cuptiProfilerInitialize", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, 0);
    gpufl_options_t deep = pc_sampling_options("pcs_deep");
    deep.profiling_engine = GPUFL_ENGINE_DEEP;
    start(&deep);
    stop();
    fake.sass_metrics_reset();
    assert_non_null(strstr(capture.last, "Deep"));
    assert_non_null(strstr(capture.last, "cuptiProfilerInitialize"));
    assert_non_null(strstr(capture.last, "running PcSampling"));
    d = read_session();
    caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine_requested")), "Deep");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "PcSampling");
    feature = json_object_get(json_object_get(caps, "features"), "sass_metrics");
    assert_true(json_is_false(json_object_get(feature, "on")));
    assert_non_null(strstr(json_string_value(json_object_get(feature, "why")),
                           "cuptiProfilerInitialize failed"));
    free_session(&d);
}

/* The `sass` record of a function, or NULL. */
static json_t *sass_of(const session_t *s, const char *function) {
    for (size_t i = 0; i < s->device.n; i++) {
        json_t *j = s->device.v[i];
        if (strcmp(tu_type(j), "sass") == 0 &&
            strcmp(tu_dict(&s->device, json_integer_value(json_object_get(j, "function"))),
                   function) == 0)
            return j;
    }
    return NULL;
}

/* nvdisasm for the session about to start: the fake, printing the fixture
 * of two functions (_Z1ff, _Z6kernelPfi) with line info. */
static void use_fake_nvdisasm(void) {
    setenv("GPUFL_NVDISASM", GPUFL_TEST_SOURCE_DIR "/fakes/fake_nvdisasm.sh", 1);
    setenv("FAKE_NVDISASM_FIXTURE", GPUFL_TEST_SOURCE_DIR "/fixtures/sass/two_functions.txt", 1);
    unsetenv("FAKE_NVDISASM_MODE");
}

/* Context ctx created in the session, and a module of the fixture's two
 * functions loaded on it; returns the module's CRC as CUPTI computes it. */
static uint64_t load_two_functions(CUcontext ctx) {
    unsigned char cubin[512];
    const char *const functions[] = {"_Z1ff", "_Z6kernelPfi"};
    size_t size = tu_fake_cubin(cubin, functions, 2);
    CUpti_GetCubinCrcParams crc = {
        .size = CUpti_GetCubinCrcParamsSize, .cubinSize = size, .cubin = cubin};
    assert_int_equal(fake.cubin_crc(&crc), CUPTI_SUCCESS);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, ctx, NULL, 0), 1);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_MODULE_LOADED, ctx, cubin, size), 1);
    return crc.cubinCrc;
}

/* A module loaded during the session is kept; the first samples of one of
 * its functions get that function's SASS with its source lines, once. A
 * function of a module loaded before the session gets a record saying why
 * there is none. */
static void pc_samples_carry_their_sass(void **state) {
    (void)state;
    fresh_pc_sampling();
    use_fake_nvdisasm();
    gpufl_options_t o = pc_sampling_options("pcs_sass");
    o.flush_interval_ms = 10;
    start(&o);
    /* A cubin of the fixture's two functions (the fake nvdisasm prints it). */
    uint64_t crc = load_two_functions(CTX_A);
    assert_int_equal(fake.pc_sampling_add(CTX_A, crc, "_Z6kernelPfi", 0xa0, R_LONG_SB, 90), 0);
    assert_int_equal(fake.pc_sampling_add(CTX_A, 0x999, "_Z5olderv", 0x10, R_MATH, 5), 0);
    let_collector_run();
    assert_int_equal(fake.pc_sampling_add(CTX_A, crc, "_Z6kernelPfi", 0xa0, R_LONG_SB, 10), 0);
    let_collector_run();
    stop();
    unsetenv("GPUFL_NVDISASM");

    session_t d = read_session();
    json_t *caps = tu_first(&d.device, "capabilities");
    json_t *feature = json_object_get(json_object_get(caps, "features"), "sass");
    assert_true(json_is_true(json_object_get(feature, "on")));
    assert_int_equal(tu_count(&d.device, "sass"), 2); /* once per function */
    json_t *k = sass_of(&d, "_Z6kernelPfi");
    assert_non_null(k);
    assert_string_equal(json_string_value(json_object_get(k, "arch")), "sm_90");
    json_t *pcs = json_object_get(k, "pc"), *text = json_object_get(k, "text");
    json_t *file = json_object_get(k, "file"), *line = json_object_get(k, "line");
    json_t *files = json_object_get(k, "files");
    size_t at = json_array_size(pcs);
    for (size_t i = 0; i < json_array_size(pcs); i++)
        if (json_integer_value(json_array_get(pcs, i)) == 0xa0) at = i;
    assert_true(at < json_array_size(pcs));
    assert_string_equal(json_string_value(json_array_get(text, at)), "LDG.E R4, desc[UR4][R2.64]");
    /* The innermost frame of the inlined call. */
    assert_int_equal(json_integer_value(json_array_get(line, at)), 3);
    assert_string_equal(
        json_string_value(json_array_get(files, json_integer_value(json_array_get(file, at)))),
        "/home/user/src/helpers.cuh");
    /* The first instruction has no line info. */
    assert_true(json_is_null(json_array_get(line, 0)));
    assert_true(json_is_null(json_array_get(file, 0)));
    json_t *older = sass_of(&d, "_Z5olderv");
    assert_non_null(older);
    assert_non_null(strstr(json_string_value(json_object_get(older, "error")),
                           "loaded before the engine started"));
    free_session(&d);

    /* Without nvdisasm: sampling runs, the capability says why there is no SASS. */
    fresh_pc_sampling();
    setenv("GPUFL_NVDISASM", "/nonexistent/nvdisasm", 1);
    gpufl_options_t again = pc_sampling_options("pcs_no_nvdisasm");
    start(&again);
    stop();
    unsetenv("GPUFL_NVDISASM");
    d = read_session();
    caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "PcSampling");
    feature = json_object_get(json_object_get(caps, "features"), "sass");
    assert_true(json_is_false(json_object_get(feature, "on")));
    assert_non_null(strstr(json_string_value(json_object_get(feature, "why")), "GPUFL_NVDISASM"));
    free_session(&d);
}

/* CUPTI's GetData copies a PC record's function name with strdup, and
 * gives some records none (measured on an H100): the fake does the same,
 * so gpufl must have given it a strdup of its own that takes NULL (checked
 * first: without it the collector thread would die). A record with a
 * module is named from the module's symbol table, or by a placeholder when
 * the cubin was not kept; one without (what the H100 gave) is counted as
 * unplaced. Said once as a pc_unnamed_records event. */
static void pc_records_without_a_name(void **state) {
    (void)state;
    fresh_pc_sampling();
    use_fake_nvdisasm();
    gpufl_options_t o = pc_sampling_options("pcs_nameless");
    o.flush_interval_ms = 10;
    start(&o);
    assert_true(fake.pc_sampling_strdup_rebound());
    uint64_t crc = load_two_functions(CTX_A); /* symbol 2 is _Z6kernelPfi */
    assert_int_equal(fake.pc_sampling_add(CTX_A, crc, "_Z6kernelPfi", 0xa0, R_LONG_SB, 30), 0);
    assert_int_equal(fake.pc_sampling_add_nameless(CTX_A, crc, 2, 0xb0, R_LONG_SB, 40), 0);
    assert_int_equal(fake.pc_sampling_add_nameless(CTX_A, 0x999, 3, 0x10, R_MATH, 5), 0);
    assert_int_equal(fake.pc_sampling_add_nameless(CTX_A, 0, 0, 0, R_LONG_SB, 7), 0);
    let_collector_run();
    assert_int_equal(fake.pc_sampling_add_nameless(CTX_A, 0, 0, 0, R_MATH, 2), 0);
    /* 256 such functions are named at most: the two above and 254 of
     * these; the last 6 have a module but no name, and are lost, not
     * unplaced. */
    for (uint32_t i = 1; i <= 260; i++)
        assert_int_equal(fake.pc_sampling_add_nameless(CTX_A, 0x777, i, 0x2000 + 16 * i, R_MATH, 1),
                         0);
    stop();
    unsetenv("GPUFL_NVDISASM");
    session_t d = read_session();
    assert_int_equal(samples_of(&d, 0x1234, LONG_SB, "_Z6kernelPfi"), 70);
    assert_int_equal(samples_of(&d, 0x1234, MATH, "(unnamed: symbol 3 of module 0000000000000999)"),
                     5);
    assert_int_equal(
        samples_of(&d, 0x1234, MATH, "(unnamed: symbol 254 of module 0000000000000777)"), 1);
    assert_int_equal(window_sum(&d, 0x1234, "unplaced"), 9);
    assert_int_equal(window_sum(&d, 0x1234, "lost"), 6);
    assert_int_equal(window_sum(&d, 0x1234, "recorded"), 75 + 254);
    assert_int_equal(window_sum(&d, 0x1234, "samples"), 84 + 260);
    assert_int_equal(pc_sampling_stat(&d, "unplaced"), 9);
    assert_int_equal(pc_sampling_stat(&d, "lost"), 6);
    assert_int_equal(pc_sampling_stat(&d, "unnamed_records"), 4 + 260);
    assert_int_equal(pc_sampling_stat(&d, "unnamed_named"), 1);
    assert_true(pc_sampling_stat(&d, "cupti_null_names") >= 1);
    json_t *e = tu_event(&d.device, "pc_unnamed_records");
    assert_non_null(e);
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")),
                           "without a function name (module"));
    free_session(&d);
}

/* More PCs than one GetData call returns (2048): the drain goes on until
 * CUPTI has none left, and the counts, which CUPTI reports for the whole
 * hand-over in its first call, add up exactly. */
static void pc_samples_past_one_buffer(void **state) {
    (void)state;
    fresh_pc_sampling();
    gpufl_options_t o = pc_sampling_options("pcs_past_one_buffer");
    o.flush_interval_ms = 10;
    start(&o);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    for (uint64_t pc = 0; pc < 5000; pc++)
        assert_int_equal(fake.pc_sampling_add(CTX_A, 0xabc, "_Z4widev", pc * 16, R_LONG_SB, 2), 0);
    fake.pc_sampling_count(CTX_A, 11, 3);
    let_collector_run();
    for (uint64_t pc = 0; pc < 100; pc++)
        assert_int_equal(fake.pc_sampling_add(CTX_A, 0xabc, "_Z4widev", pc * 16, R_MATH, 1), 0);
    stop();
    session_t d = read_session();
    assert_int_equal(samples_of(&d, 0x1234, LONG_SB, "_Z4widev"), 10000);
    assert_int_equal(samples_of(&d, 0x1234, MATH, "_Z4widev"), 100);
    assert_int_equal(window_sum(&d, 0x1234, "samples"), 10000 + 100 + 11 + 3);
    assert_int_equal(window_sum(&d, 0x1234, "recorded"), 10100);
    assert_int_equal(window_sum(&d, 0x1234, "non_user"), 11);
    assert_int_equal(window_sum(&d, 0x1234, "dropped"), 3);
    assert_int_equal(pc_sampling_stat(&d, "samples"), 10114);
    assert_true(pc_sampling_stat(&d, "drains") >= 3); /* 5000 PCs took three calls at least */
    free_session(&d);
}

/* The GetData period from GPUFL_PC_SAMPLING_DRAIN_MS: fixed, and written
 * in the totals with the time spent in GetData; a bad value is warned about
 * and the adapted period kept. */
static void pc_sampling_drain_period(void **state) {
    (void)state;
    const char *values[] = {"40", "5"};
    for (int i = 0; i < 2; i++) {
        fresh_pc_sampling();
        setenv("GPUFL_PC_SAMPLING_DRAIN_MS", values[i], 1);
        gpufl_options_t o = pc_sampling_options(i ? "pcs_drain_bad" : "pcs_drain");
        start(&o);
        assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
        let_collector_run();
        stop();
        unsetenv("GPUFL_PC_SAMPLING_DRAIN_MS");
        if (i) assert_non_null(strstr(capture.last, "GPUFL_PC_SAMPLING_DRAIN_MS=5"));
        if (i) assert_non_null(strstr(capture.last, "the period adapts"));
        session_t d = read_session();
        json_t *st = tu_first(&d.device, "pc_sampling_stats");
        assert_non_null(st);
        double ms = json_number_value(json_object_get(st, "drain_ms"));
        if (!i) assert_true(ms == 40);
        if (i) assert_true(ms >= 100 && ms <= 500);
        assert_int_equal(pc_sampling_stat(&d, "drain_fixed"), !i);
        assert_true(json_number_value(json_object_get(st, "get_data_ms")) >= 0);
        assert_true(json_number_value(json_object_get(st, "get_data_max_ms")) >= 0);
        if (!i) assert_true(pc_sampling_stat(&d, "drains") >= 2); /* at least one every 40 ms */
        free_session(&d);
    }
}

/* The adapted GetData period. It stays at 100 ms while no context samples
 * (so the first context's first windows are short), doubles while drains
 * bring little, up to 500 ms, shortens in proportion when one brings more
 * than a quarter of what CUPTI's scratch buffer holds, and goes straight to
 * 100 ms when the hardware buffer is full; no sample is lost on the way. */
static void pc_sampling_drain_adapts(void **state) {
    (void)state;
    fresh_pc_sampling();
    gpufl_options_t o = pc_sampling_options("pcs_drain_first_context");
    o.flush_interval_ms = 10;
    start(&o);
    for (int i = 0; i < 3; i++) let_collector_run(); /* no context: nothing to adapt to */
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    assert_int_equal(fake.pc_sampling_add(CTX_A, 0xabc, "_Z4widev", 0x10, R_LONG_SB, 1), 0);
    struct timespec t = {0, 150 * 1000000L};
    nanosleep(&t, NULL); /* one drain, 100 ms after the context came */
    stop();
    session_t d = read_session();
    assert_int_equal(pc_sampling_stat(&d, "drain_fixed"), 0);
    assert_true(json_number_value(
                    json_object_get(tu_first(&d.device, "pc_sampling_stats"), "drain_ms")) <= 200);
    free_session(&d);

    fresh_pc_sampling();
    o = pc_sampling_options("pcs_drain_adapts");
    o.flush_interval_ms = 10;
    start(&o);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    for (int i = 0; i < 4; i++) let_collector_run(); /* drains 100, 200, 400 ms apart */
    /* More than a quarter of the scratch buffer in one drain. */
    assert_int_equal(fake.pc_sampling_add_many(CTX_A, 0xabc, "_Z4widev", 0, 25000, R_LONG_SB, 1),
                     0);
    for (int i = 0; i < 3; i++) let_collector_run();
    fake.pc_sampling_buffer_full(CTX_A, 1);
    for (int i = 0; i < 3; i++) let_collector_run();
    stop();
    d = read_session();
    json_t *st = tu_first(&d.device, "pc_sampling_stats");
    assert_int_equal(pc_sampling_stat(&d, "drain_shortened"),
                     2); /* the heavy drain, the full buffer */
    assert_true(json_number_value(json_object_get(st, "drain_ms")) == 100);
    assert_true(pc_sampling_stat(&d, "buffer_full") >= 1);
    assert_int_equal(samples_of(&d, 0x1234, LONG_SB, "_Z4widev"), 25000);
    assert_int_equal(pc_sampling_stat(&d, "lost"), 0);
    free_session(&d);
}

/* ---- the SassMetrics engine ---- */

/* A column of the sass_metric row of one instruction (rows are batched:
 * a line holds arrays); fails the test when there is no such row. */
static int64_t metric_of(const session_t *s, const char *function, int64_t pc, const char *key) {
    for (size_t i = 0; i < s->device.n; i++) {
        json_t *j = s->device.v[i];
        if (strcmp(tu_type(j), "sass_metric") != 0) continue;
        json_t *pcs = json_object_get(j, "pc"), *fns = json_object_get(j, "function");
        for (size_t r = 0; r < json_array_size(pcs); r++)
            if (json_integer_value(json_array_get(pcs, r)) == pc &&
                strcmp(tu_dict(&s->device, json_integer_value(json_array_get(fns, r))), function) ==
                    0)
                return json_integer_value(json_array_get(json_object_get(j, key), r));
    }
    fail_msg("no sass_metric row of %s at 0x%llx", function, (unsigned long long)pc);
    return -1;
}

/* Rows of one batched record type, over all its lines. */
static size_t rows_of(const session_t *s, const char *type) {
    size_t n = 0;
    for (size_t i = 0; i < s->device.n; i++)
        if (strcmp(tu_type(s->device.v[i]), type) == 0)
            n += json_array_size(json_object_get(s->device.v[i], "pc"));
    return n;
}

static int64_t field(json_t *j, const char *key) {
    assert_non_null(j);
    json_t *v = json_object_get(j, key);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

/* Counting starts when a context is created, or at the first launch on one
 * from before init; CUPTI's per-metric records become one row per
 * instruction, read once when the session ends; the function's SASS comes
 * from the cubin kept at load; no activity kind is enabled (with one on,
 * SASS metrics count nothing). */
static void sass_metrics_count_each_instruction(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    use_fake_nvdisasm();
    gpufl_options_t o = trace_options("sassm_counts");
    o.profiling_engine = GPUFL_ENGINE_SASS_METRICS;
    o.flush_interval_ms = 10;
    start(&o);
    uint64_t crc = load_two_functions(CTX_A);
    /* A context from before init, found at its first launch. */
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    fake.set_context(CTX_B);
    launch(f, "_Z6kernelPfi", 256, 0);
    fake.set_context(NULL);
    uint32_t c = (uint32_t)crc;
    /* CUPTI 13.0 gives every function of a module index 0: names tell them apart. */
    assert_int_equal(fake.sass_metrics_add(CTX_A, c, 0, "_Z6kernelPfi", 0xa0, 100, 1600, 3200, 400),
                     0);
    assert_int_equal(fake.sass_metrics_add(CTX_A, c, 0, "_Z6kernelPfi", 0x10, 50, 800, 0, 0), 0);
    assert_int_equal(fake.sass_metrics_add(CTX_A, c, 0, "_Z1ff", 0x10, 4, 64, 0, 0), 0);
    assert_int_equal(fake.sass_metrics_add(CTX_A, c, 0, "_Z6kernelPfi", 0xa0, 100, 1600, 3200, 400),
                     0);
    assert_int_equal(fake.sass_metrics_add(CTX_B, 0x77, 1, "_Z5otherv", 0x20, 9, 288, 36, 36), 0);
    let_collector_run();
    stop();
    unsetenv("GPUFL_NVDISASM");
    /* (counted from this session's buffer registration on) */
    assert_int_equal(fake.enable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 0);

    session_t d = read_session();
    json_t *caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "SassMetrics");
    json_t *features = json_object_get(caps, "features");
    assert_true(json_is_true(json_object_get(json_object_get(features, "sass_metrics"), "on")));
    assert_true(json_is_false(json_object_get(json_object_get(features, "pc_sampling"), "on")));
    assert_int_equal(tu_count(&d.device, "sass_metrics"), 2);
    json_t *m = tu_first(&d.device, "sass_metrics");
    assert_string_equal(json_string_value(json_object_get(m, "chip")), "GH100");
    assert_int_equal(json_array_size(json_object_get(m, "metrics")), 4);
    assert_true(json_is_true(json_object_get(m, "lazy")));
    assert_int_equal(rows_of(&d, "sass_metric"), 4);
    assert_int_equal(metric_of(&d, "_Z1ff", 0x10, "inst"), 4);
    assert_int_equal(metric_of(&d, "_Z6kernelPfi", 0xa0, "inst"), 200);
    assert_int_equal(metric_of(&d, "_Z6kernelPfi", 0xa0, "thread_inst"), 3200);
    assert_int_equal(metric_of(&d, "_Z6kernelPfi", 0xa0, "sectors"), 6400);
    assert_int_equal(metric_of(&d, "_Z6kernelPfi", 0xa0, "sectors_ideal"), 800);
    assert_int_equal(metric_of(&d, "_Z6kernelPfi", 0x10, "sectors"), 0);
    assert_int_equal(metric_of(&d, "_Z5otherv", 0x20, "inst"), 9);
    assert_true(tu_count(&d.device, "launch") >= 1);
    /* The counted function's SASS, from the cubin kept at load. */
    json_t *k = sass_of(&d, "_Z6kernelPfi");
    assert_non_null(k);
    assert_null(json_object_get(k, "error"));
    json_t *st = tu_first(&d.device, "sass_metrics_stats");
    assert_int_equal(field(st, "contexts"), 2);
    assert_int_equal(field(st, "reads"), 2);
    assert_int_equal(field(st, "records"), 16); /* 4 instructions x 4 metrics */
    assert_int_equal(field(st, "rows"), 4);
    assert_int_equal(field(st, "functions"), 3);
    assert_int_equal(field(st, "dropped"), 0);
    assert_int_equal(field(st, "errors"), 0);
    free_session(&d);
    int enabled, lazy, flushes, disables;
    assert_int_equal(fake.sass_metrics_state(CTX_A, &enabled, &lazy, &flushes, &disables), 0);
    assert_int_equal(enabled, 0);
    assert_int_equal(lazy, 1);
    assert_int_equal(flushes, 1);
    assert_int_equal(disables, 1);
}

/* A context destroyed during the session is read before it goes; a failed
 * read is counted, written as an event, and its records are lost, not
 * hidden. */
static void sass_metrics_of_a_destroyed_context(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    gpufl_options_t o = trace_options("sassm_destroyed");
    o.profiling_engine = GPUFL_ENGINE_SASS_METRICS;
    o.flush_interval_ms = 10;
    start(&o);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_B, NULL, 0), 1);
    assert_int_equal(fake.sass_metrics_add(CTX_B, 0x99, 3, "k", 0x40, 10, 320, 0, 0), 0);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, CTX_B, NULL, 0),
                     1);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    assert_int_equal(fake.sass_metrics_add(CTX_A, 0x99, 3, "k", 0x40, 5, 160, 0, 0), 0);
    fake.sass_metrics_error("cuptiSassMetricsFlushData", CUPTI_ERROR_UNKNOWN, 0);
    stop();
    fake.sass_metrics_error("", CUPTI_SUCCESS, 0);
    session_t d = read_session();
    assert_int_equal(metric_of(&d, "k", 0x40, "inst"), 10);
    assert_int_equal(rows_of(&d, "sass_metric"), 1);
    json_t *st = tu_first(&d.device, "sass_metrics_stats");
    assert_int_equal(field(st, "reads"), 2);
    assert_int_equal(field(st, "lost"), 0);    /* gpufl kept all it was given, */
    assert_int_equal(field(st, "dropped"), 4); /* CTX_A's 4 records: the flush failed */
    assert_int_equal(field(st, "errors"), 1);
    json_t *e = tu_event(&d.device, "sass_metrics_error");
    assert_non_null(e);
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")),
                           "cuptiSassMetricsFlushData failed"));
    free_session(&d);
}

/* Sessions one after another in one process: CUPTI takes one SASS metrics
 * configuration per device and process (a second SetConfig after
 * UnsetConfig ran out of memory on an H100), so the first session's is kept,
 * and the second, which CUPTI tells is already configured, counts with it. */
static void sass_metrics_second_session_in_a_process(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    for (int k = 0; k < 2; k++) {
        gpufl_options_t o = trace_options(k == 0 ? "sassm_first" : "sassm_second");
        o.profiling_engine = GPUFL_ENGINE_SASS_METRICS;
        start(&o);
        assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
        assert_int_equal(fake.sass_metrics_add(CTX_A, 0x99, 3, "k", 0x40, 10 + k, 320, 0, 0), 0);
        stop();
        session_t d = read_session();
        assert_null(json_object_get(tu_first(&d.device, "sass_metrics"), "error"));
        assert_int_equal(metric_of(&d, "k", 0x40, "inst"), 10 + k);
        json_t *st = tu_first(&d.device, "sass_metrics_stats");
        assert_int_equal(field(st, "errors"), 0);
        assert_int_equal(field(st, "configs_reused"), k);
        free_session(&d);
    }
}

/* Once SASS metrics have counted in a process, PC sampling is refused for
 * the rest of it (engine.h, gpufl__engine_mark_patched): PcSampling runs as
 * Trace and Deep as SassMetrics, each saying why. */
static void pc_sampling_refused_after_sass_metrics(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    fresh_pc_sampling();
    const gpufl_engine_t asked[] = {GPUFL_ENGINE_PC_SAMPLING, GPUFL_ENGINE_SASS_METRICS,
                                    GPUFL_ENGINE_PC_SAMPLING, GPUFL_ENGINE_DEEP};
    const char *ran[] = {"PcSampling", "SassMetrics", "Trace", "SassMetrics"};
    for (int k = 0; k < 4; k++) {
        gpufl_options_t o = trace_options("pcs_after_sassm");
        o.profiling_engine = asked[k];
        start(&o);
        /* Delivered where an engine listens (not under plain Trace). */
        int heard = fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0);
        stop();
        assert_int_equal(heard, strcmp(ran[k], "Trace") != 0);
        session_t d = read_session();
        json_t *caps = tu_first(&d.device, "capabilities");
        assert_string_equal(json_string_value(json_object_get(caps, "engine")), ran[k]);
        json_t *pcs = json_object_get(json_object_get(caps, "features"), "pc_sampling");
        if (k >= 2) {
            assert_true(json_is_false(json_object_get(pcs, "on")));
            assert_non_null(strstr(json_string_value(json_object_get(pcs, "why")),
                                   "SASS metrics counted earlier in this process"));
            assert_non_null(strstr(capture.last, "PC sampling cannot run"));
        }
        free_session(&d);
    }
    /* CUPTI refusing Trace's activity kind too (as after Deep on an H100):
     * Monitor runs, and PC sampling keeps its own reason. */
    refuse_kernel_activity("pcs_after_sassm", CUPTI_ERROR_NOT_COMPATIBLE);
    gpufl_options_t o = trace_options("pcs_after_sassm_monitor");
    o.profiling_engine = GPUFL_ENGINE_PC_SAMPLING;
    start(&o);
    stop();
    unsetenv("GPUFL_FAKE_CUPTI");
    session_t d = read_session();
    json_t *caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Monitor");
    json_t *features = json_object_get(caps, "features");
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(features, "pc_sampling"), "why")),
               "SASS metrics counted earlier in this process"));
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(features, "cupti_trace"), "why")),
               "CUPTI_ERROR_NOT_COMPATIBLE"));
    free_session(&d);
    gpufl__engine_forget_patched();
}

/* A device CUPTI will not configure: the context's record says why, the
 * failure is counted, and the session goes on. A CUPTI without the API:
 * SassMetrics runs as Trace and says why. */
static void sass_metrics_refused_or_unavailable(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    fake.sass_metrics_error("cuptiSassMetricsSetConfig", CUPTI_ERROR_NOT_SUPPORTED, 0);
    gpufl_options_t o = trace_options("sassm_refused");
    o.profiling_engine = GPUFL_ENGINE_SASS_METRICS;
    start(&o);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    stop();
    fake.sass_metrics_error("", CUPTI_SUCCESS, 0);
    session_t d = read_session();
    json_t *m = tu_first(&d.device, "sass_metrics");
    assert_non_null(m);
    assert_non_null(
        strstr(json_string_value(json_object_get(m, "error")), "cuptiSassMetricsSetConfig failed"));
    assert_int_equal(field(tu_first(&d.device, "sass_metrics_stats"), "errors"), 1);
    assert_int_equal(field(tu_first(&d.device, "sass_metrics_stats"), "contexts"), 0);
    free_session(&d);

    /* Before CUDA is initialised the profiler fails to start (not a
     * refusal): it starts at the first context, and counting runs. */
    fake.sass_metrics_reset();
    fake.sass_metrics_error("cuptiProfilerInitialize", CUPTI_ERROR_UNKNOWN, 1);
    gpufl_options_t early = trace_options("sassm_early");
    early.profiling_engine = GPUFL_ENGINE_SASS_METRICS;
    start(&early);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    assert_int_equal(fake.sass_metrics_add(CTX_A, 0x99, 0, "k", 0x40, 5, 160, 0, 0), 0);
    stop();
    d = read_session();
    assert_string_equal(
        json_string_value(json_object_get(tu_first(&d.device, "capabilities"), "engine")),
        "SassMetrics");
    assert_null(json_object_get(tu_first(&d.device, "sass_metrics"), "error"));
    assert_int_equal(metric_of(&d, "k", 0x40, "thread_inst"), 160);
    free_session(&d);

    setenv("GPUFL_CUPTI_LIBRARY", GPUFL_FAKE_CUPTI_OLD_PATH, 1);
    gpufl_options_t old = trace_options("sassm_unavailable");
    old.profiling_engine = GPUFL_ENGINE_SASS_METRICS;
    start(&old);
    stop();
    setenv("GPUFL_CUPTI_LIBRARY", GPUFL_FAKE_CUPTI_PATH, 1);
    assert_non_null(strstr(capture.last, "SASS metrics cannot run"));
    d = read_session();
    json_t *caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Trace");
    json_t *feature = json_object_get(json_object_get(caps, "features"), "sass_metrics");
    assert_non_null(strstr(json_string_value(json_object_get(feature, "why")),
                           "lacks cuptiProfilerInitialize"));
    free_session(&d);
}

/* Deep: PC sampling and SASS metrics on the same context, one SASS log
 * (one sass record per function, whichever engine names it). */
static void deep_runs_both_engines(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    fresh_pc_sampling();
    use_fake_nvdisasm();
    gpufl_options_t o = trace_options("deep_both");
    o.profiling_engine = GPUFL_ENGINE_DEEP;
    o.flush_interval_ms = 10;
    start(&o);
    uint64_t crc = load_two_functions(CTX_A);
    assert_int_equal(fake.pc_sampling_add(CTX_A, crc, "_Z6kernelPfi", 0xa0, R_LONG_SB, 90), 0);
    assert_int_equal(
        fake.sass_metrics_add(CTX_A, (uint32_t)crc, 7, "_Z6kernelPfi", 0xa0, 8, 256, 32, 8), 0);
    let_collector_run();
    stop();
    unsetenv("GPUFL_NVDISASM");
    session_t d = read_session();
    json_t *caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Deep");
    assert_int_equal(metric_of(&d, "_Z6kernelPfi", 0xa0, "sectors"), 32);
    assert_int_equal(samples_of(&d, 0x1234, LONG_SB, "_Z6kernelPfi"), 90);
    assert_int_equal(tu_count(&d.device, "sass"), 1);
    assert_null(json_object_get(sass_of(&d, "_Z6kernelPfi"), "error"));
    json_t *st = tu_first(&d.device, "pc_sampling_stats");
    double ms = json_number_value(json_object_get(st, "drain_ms"));
    assert_true(ms >= 100 && ms <= 500);
    free_session(&d);
}

/* The stretch of a launch call where the driver patches the function for
 * SASS metrics (the fake counts a GetData made inside it), arg: its ms. */
static void patch_for(void *arg) {
    fake.pc_sampling_patching(1);
    struct timespec t = {0, *(const long *)arg * 1000000L};
    nanosleep(&t, NULL);
    fake.pc_sampling_patching(0);
}

/* Deep drains PC samples periodically, never while a launch is inside the
 * driver (where SASS metrics patch functions: a GetData meanwhile crashed
 * inside CUPTI); a launch that stays in longer than a drain waits puts the
 * drain off, counted, and it is taken later. */
static void deep_drains_between_launches(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    fresh_pc_sampling();
    use_fake_nvdisasm();
    gpufl_options_t o = trace_options("deep_gate");
    o.profiling_engine = GPUFL_ENGINE_DEEP;
    o.flush_interval_ms = 10;
    setenv("GPUFL_PC_SAMPLING_DRAIN_MS", "10", 1);
    start(&o);
    unsetenv("GPUFL_PC_SAMPLING_DRAIN_MS");
    uint64_t crc = load_two_functions(CTX_A);
    fake.set_context(CTX_A);
    cuLaunchKernel_params p = small_launch();
    long short_ms = 4, long_ms = GPUFL_PC_SAMPLING_GATE_WAIT_NS / 1000000 + 150;
    for (int i = 0; i < 60; i++) {
        assert_int_equal(fake.pc_sampling_add(CTX_A, crc, "_Z6kernelPfi", 0xa0, R_LONG_SB, 1), 0);
        fake.call_across(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "_Z6kernelPfi", patch_for,
                         &short_ms);
    }
    fake.call_across(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "_Z6kernelPfi", patch_for,
                     &long_ms);
    let_collector_run();
    stop();
    fake.set_context(NULL);
    unsetenv("GPUFL_NVDISASM");
    assert_int_equal(fake.pc_sampling_unsafe_calls(), 0);
    session_t d = read_session();
    json_t *st = tu_first(&d.device, "pc_sampling_stats");
    assert_true(json_number_value(json_object_get(st, "drain_ms")) == 10);
    /* 61 launches over about 0.6 s, a drain due every 10 ms */
    assert_true(field(st, "drains") >= 10);
    assert_true(field(st, "drains_deferred") >= 1);
    assert_int_equal(samples_of(&d, 0x1234, LONG_SB, "_Z6kernelPfi"), 60);
    assert_int_equal(field(tu_first(&d.device, "trace_stats"), "launches"), 61);
    free_session(&d);
}

/* ---- the RangeProfiler engine ---- */

static gpufl_options_t range_options(const char *name) {
    gpufl_options_t o = trace_options(name);
    o.profiling_engine = GPUFL_ENGINE_RANGE_PROFILER;
    return o;
}

/* Starts a RangeProfiler session over a fresh fake: a decode at the first
 * range end flush_ms after a collection began, and switching metric groups
 * within switch_pct of the time (GPUFL_RANGE_PROFILER_SWITCH_PCT, read at
 * start only). */
static void start_range(const char *name, int flush_ms, const char *switch_pct) {
    fake.sass_metrics_reset();
    fake.range_reset();
    gpufl_options_t o = range_options(name);
    o.flush_interval_ms = flush_ms;
    setenv("GPUFL_RANGE_PROFILER_SWITCH_PCT", switch_pct, 1);
    start(&o);
    unsetenv("GPUFL_RANGE_PROFILER_SWITCH_PCT");
}

/* The range_metrics record of the scope with this path (the only one). */
static json_t *range_of(const session_t *s, const char *path) {
    json_t *found = NULL;
    for (size_t i = 0; i < s->device.n; i++) {
        json_t *j = s->device.v[i];
        if (strcmp(tu_type(j), "range_metrics") != 0) continue;
        if (strcmp(tu_dict(&s->device, field(j, "path")), path) != 0) continue;
        if (found != NULL) fail_msg("two range_metrics records of %s", path);
        found = j;
    }
    if (found == NULL) fail_msg("no range_metrics record of %s", path);
    return found;
}

static double range_metric(const session_t *s, const char *path, const char *metric) {
    json_t *v = json_object_get(json_object_get(range_of(s, path), "metrics"), metric);
    if (!json_is_number(v)) fail_msg("%s of %s is not a number", metric, path);
    return json_number_value(v);
}

static int64_t range_stat(const session_t *s, const char *key) {
    return field(tu_first(&s->device, "range_profiler_stats"), key);
}

/* Outermost scopes on a thread with a current context become ranges, each
 * under its own scope id (two scopes of one name are two records); scopes
 * inside one are counted and their work is the outer range's (one nesting
 * level: a second needs a second pass); the metric set is what fits in one
 * pass, and what was left out says why; a metric that does not evaluate is
 * null and named. */
static void range_profiler_scopes_become_ranges(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    fake.range_reset();
    fake.range_nan("l1tex__t_sector_hit_rate.pct");
    gpufl_options_t o = range_options("range_scopes");
    o.flush_interval_ms = 10;
    start(&o);
    assert_int_equal(fake.push_current(CTX_A), CUDA_SUCCESS);
    gpufl_scope_t train = gpufl_scope_begin("train", NULL);
    assert_int_equal(fake.range_work(CTX_A, 2), 0);
    gpufl_scope_t inner = gpufl_scope_begin("inner", NULL);
    assert_int_equal(fake.range_work(CTX_A, 1), 0);
    gpufl_scope_end(inner);
    gpufl_scope_end(train);
    for (int i = 0; i < 2; i++) {
        gpufl_scope_t step = gpufl_scope_begin("step", NULL);
        assert_int_equal(fake.range_work(CTX_A, 5 + i), 0);
        gpufl_scope_end(step);
    }
    assert_int_equal(fake.range_work(CTX_A, 1), -1); /* outside any scope: no range open */
    let_collector_run();
    stop();
    CUcontext popped;
    assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
    fake.range_nan("");

    /* No activity kind is enabled: the kernel timestamps CUPTI adds would
     * show in the counters. */
    assert_int_equal(fake.enable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 0);
    assert_int_equal(fake.enable_count(CUPTI_ACTIVITY_KIND_MEMCPY), 0);
    session_t d = read_session();
    json_t *caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "RangeProfiler");
    json_t *feature = json_object_get(json_object_get(caps, "features"), "range_profiler");
    assert_true(json_is_true(json_object_get(feature, "on")));
    json_t *rp = tu_first(&d.device, "range_profiler");
    assert_non_null(rp);
    assert_null(json_object_get(rp, "error"));
    assert_string_equal(json_string_value(json_object_get(rp, "chip")), "GH100");
    assert_int_equal(field(rp, "context"), 0x1234);
    assert_int_equal(field(rp, "nesting_levels"), 1);
    /* The L2 lookup hit and miss sums cannot share a pass: the miss goes to
     * group 1. */
    assert_int_equal(json_array_size(json_object_get(rp, "metrics")), 11);
    json_t *left = json_object_get(rp, "left_out");
    assert_non_null(strstr(json_string_value(json_object_get(
                               left, "sm__throughput.avg.pct_of_peak_sustained_elapsed")),
                           "needs 8 passes"));
    assert_non_null(strstr(json_string_value(json_object_get(left, "lts__t_sector_hit_rate.pct")),
                           "needs 2 passes"));
    assert_int_equal(tu_count(&d.device, "range_metrics"), 3);
    /* The outer range counts the inner scope's work. */
    assert_true(range_metric(&d, "train", "dram__bytes_read.sum") == 3000.0);
    assert_true(range_metric(&d, "train", "sm__warps_active.avg.pct_of_peak_sustained_active") ==
                30.0);
    assert_int_equal(field(range_of(&d, "train"), "scope"), scope_id(&d, "train"));
    assert_int_equal(field(range_of(&d, "train"), "context"), 0x1234);
    json_t *train_metrics = json_object_get(range_of(&d, "train"), "metrics");
    assert_true(json_is_null(json_object_get(train_metrics, "l1tex__t_sector_hit_rate.pct")));
    json_t *unevaluated = json_object_get(range_of(&d, "train"), "unevaluated");
    assert_int_equal(json_array_size(unevaluated), 1);
    assert_string_equal(json_string_value(json_array_get(unevaluated, 0)),
                        "l1tex__t_sector_hit_rate.pct");
    /* Two scopes of one name: two ranges, each with its own work. */
    double steps = 0;
    size_t step_records = 0;
    for (size_t i = 0; i < d.device.n; i++) {
        json_t *j = d.device.v[i];
        if (strcmp(tu_type(j), "range_metrics") != 0 ||
            strcmp(tu_dict(&d.device, field(j, "path")), "step") != 0)
            continue;
        step_records++;
        steps += json_number_value(
            json_object_get(json_object_get(j, "metrics"), "gpu__time_duration.sum"));
    }
    assert_int_equal(step_records, 2);
    assert_true(steps == 11000.0);
    assert_int_equal(range_stat(&d, "ranges_pushed"), 3);
    assert_int_equal(range_stat(&d, "ranges"), 3);
    assert_int_equal(range_stat(&d, "nested"), 1);
    assert_int_equal(range_stat(&d, "lost"), 0);
    assert_int_equal(range_stat(&d, "errors"), 0);
    assert_true(range_stat(&d, "decodes") >= 1);
    free_session(&d);
    int enabled, pushes, pops, depth, decodes;
    assert_int_equal(fake.range_state(CTX_A, &enabled, &pushes, &pops, &depth, &decodes), 0);
    assert_int_equal(enabled, 0); /* disabled at finish */
    assert_int_equal(pushes, 3);
    assert_int_equal(pops, 3);
    assert_int_equal(depth, 1);
}

/* The metrics that do not fit in group 0 go to further one-pass groups,
 * each with the GPU time: the L2 lookup miss sum and, since sm__throughput
 * needs 8 passes, the parts whose largest it is; a part that needs more
 * than one pass alone is left out. Collections take group 0 every other
 * time and the other groups in turn between, each range saying its group
 * and holding that group's metrics. */
static void range_profiler_groups_rotate(void **state) {
    (void)state;
    /* A decode at every range end past the flush interval; the next group
     * once the one in use (from the first Start, and after each switch)
     * has had a range past the settling ones; switching costs no limit. */
    start_range("range_groups", 1, "100");
    assert_int_equal(fake.push_current(CTX_A), CUDA_SUCCESS);
    for (int i = 0; i < 20; i++) {
        gpufl_scope_t step = gpufl_scope_begin("step", NULL);
        assert_int_equal(fake.range_work(CTX_A, 1 + i), 0);
        usleep(3000); /* past the flush interval: the range's end decodes */
        gpufl_scope_end(step);
    }
    let_collector_run();
    stop();
    CUcontext popped;
    assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);

    session_t d = read_session();
    json_t *rp = tu_first(&d.device, "range_profiler");
    json_t *groups = json_object_get(rp, "groups");
    assert_int_equal(json_array_size(groups), 6);
    assert_true(json_equal(json_array_get(groups, 0), json_object_get(rp, "metrics")));
    for (size_t g = 1; g < json_array_size(groups); g++)
        assert_string_equal(json_string_value(json_array_get(json_array_get(groups, g), 0)),
                            "gpu__time_duration.sum");
    assert_string_equal(json_string_value(json_array_get(json_array_get(groups, 1), 1)),
                        "lts__t_sectors_lookup_miss.sum");
    /* 24 parts, two of them 2 passes alone. */
    json_t *parts = json_object_get(rp, "sm_throughput_of");
    assert_int_equal(json_array_size(parts), 22);
    json_t *left = json_object_get(rp, "left_out");
    assert_non_null(strstr(
        json_string_value(json_object_get(
            left,
            "sm__instruction_throughput_internal_activity.avg.pct_of_peak_sustained_elapsed")),
        "needs 2 passes"));
    assert_null(json_object_get(left, "lts__t_sectors_lookup_miss.sum"));
    /* Four ranges a group (three settling and one past them), groups 0, 1,
     * 0, 2, 0. */
    const int expect[20] = {0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0};
    size_t n = 0;
    for (size_t i = 0; i < d.device.n; i++) {
        json_t *j = d.device.v[i];
        if (strcmp(tu_type(j), "range_metrics") != 0) continue;
        assert_true(n < 20);
        int64_t g = field(j, "group");
        assert_int_equal(g, expect[n]);
        json_t *settling = json_object_get(j, "settling");
        if (n % 4 < GPUFL_RANGE_PROFILER_SETTLE_RANGES)
            assert_true(json_is_true(settling));
        else
            assert_null(settling); /* written only when true */
        json_t *metrics = json_object_get(j, "metrics");
        json_t *names = json_array_get(groups, (size_t)g);
        assert_int_equal(json_object_size(metrics), json_array_size(names));
        for (size_t k = 0; k < json_array_size(names); k++)
            assert_true(json_is_number(
                json_object_get(metrics, json_string_value(json_array_get(names, k)))));
        /* The work of the n-th scope, whatever the group. */
        assert_true(json_number_value(json_object_get(metrics, "gpu__time_duration.sum")) ==
                    1000.0 * (double)(n + 1));
        n++;
    }
    assert_int_equal(n, 20);
    assert_int_equal(range_stat(&d, "decodes"), 21); /* and the empty one of group 3 at finish */
    assert_int_equal(range_stat(&d, "switches"), 5);
    assert_int_equal(range_stat(&d, "settling"), 15);
    assert_int_equal(range_stat(&d, "lost"), 0);
    assert_int_equal(range_stat(&d, "errors"), 0);
    free_session(&d);
}

/* The groups of the range_metrics records of a session, in order; their count. */
static size_t range_groups(const session_t *d, int64_t *out, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < d->device.n && n < max; i++)
        if (strcmp(tu_type(d->device.v[i]), "range_metrics") == 0)
            out[n++] = field(d->device.v[i], "group");
    return n;
}

/* Switching groups is dear on a GPU (the profiler is enabled again and the
 * next Start programs the counters). With a Start that takes 4 ms (every
 * Start: restarts at each range end too) and a range every 2 ms or more:
 * at GPUFL_RANGE_PROFILER_SWITCH_PCT 0 a context never leaves group 0; at
 * 100 it leaves whenever a group had its 4 ranges (3 settling), so half the
 * 40 ranges are of other groups; at 5 it leaves group 0 only while its
 * switches took at most 5 % of the time since its first range, fewer. */
static void range_profiler_switch_budget(void **state) {
    (void)state;
    const char *pcts[] = {"0", "100", "5"};
    size_t others_at[3] = {0};
    for (size_t k = 0; k < 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "range_pct%s", pcts[k]);
        start_range(name, 1, pcts[k]);
        fake.range_start_delay(4000);
        assert_int_equal(fake.push_current(CTX_A), CUDA_SUCCESS);
        int64_t t0 = now_ns();
        for (int i = 0; i < 40; i++) {
            gpufl_scope_t step = gpufl_scope_begin("step", NULL);
            assert_int_equal(fake.range_work(CTX_A, 1), 0);
            /* At 5 % the budget must outgrow the switch cost, which a loaded
             * machine inflates (it failed on a 2-core VM under load with 2 ms
             * steps): longer steps there leave room for a switch. */
            usleep(k == 2 ? 6000 : 2000);
            gpufl_scope_end(step);
        }
        int64_t elapsed = now_ns() - t0;
        let_collector_run();
        stop();
        CUcontext popped;
        assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
        fake.range_start_delay(0);

        session_t d = read_session();
        int64_t groups[64];
        size_t n = range_groups(&d, groups, 64);
        assert_int_equal(n, 40);
        size_t others = 0;
        for (size_t i = 0; i < n; i++) others += groups[i] != 0;
        others_at[k] = others;
        json_t *stats = tu_first(&d.device, "range_profiler_stats");
        double switch_ms = json_number_value(json_object_get(stats, "switch_ms"));
        /* A collection ends at every range end (the flush interval passed):
         * restarts of the group in use, which are no new configuration. */
        assert_int_equal(field(stats, "decodes"), 41);
        /* One group at a time, each visit holding a range past the settling
         * ones unless the run ended it, group 0 between two others. */
        for (size_t i = 0, j; i < n; i = j) {
            for (j = i + 1; j < n && groups[j] == groups[i];) j++;
            if (j < n) assert_true(j - i > GPUFL_RANGE_PROFILER_SETTLE_RANGES);
            if (j < n) assert_true(groups[i] == 0 || groups[j] == 0);
        }
        if (k == 0) {
            assert_int_equal(field(stats, "switches"), 0);
            assert_int_equal(field(stats, "settling"), GPUFL_RANGE_PROFILER_SETTLE_RANGES);
            size_t seen = 0; /* in the order pushed: the first three only */
            for (size_t i = 0; i < d.device.n; i++) {
                json_t *j = d.device.v[i];
                if (strcmp(tu_type(j), "range_metrics") != 0) continue;
                assert_int_equal(json_is_true(json_object_get(j, "settling")),
                                 seen++ < GPUFL_RANGE_PROFILER_SETTLE_RANGES);
            }
        } else if (k == 2) {
            /* no more switching than the share allows, plus the excursion
             * that crossed it */
            assert_true(switch_ms <= 0.05 * (double)elapsed / 1e6 + 2 * 4.0 * 2);
        }
        free_session(&d);
    }
    if (others_at[0] != 0 || others_at[1] != 20 || others_at[2] < 1 || others_at[2] >= 20)
        fail_msg("ranges of other groups: %zu at 0 %%, %zu at 100 %%, %zu at 5 %%", others_at[0],
                 others_at[1], others_at[2]);
}

static void *scope_without_context(void *arg) {
    (void)arg;
    gpufl_scope_end(gpufl_scope_begin("no_context", NULL));
    return NULL;
}

static void *scope_on_the_busy_context(void *arg) {
    CUcontext ctx = arg;
    assert_int_equal(fake.push_current(ctx), CUDA_SUCCESS);
    gpufl_scope_end(gpufl_scope_begin("concurrent", NULL));
    CUcontext popped;
    fake.pop_current(&popped);
    return NULL;
}

/* A scope on a thread with no current context is not profiled, nor one on
 * another thread while the context has a range open (CUPTI keeps one range
 * stack per context): both counted. */
static void range_profiler_threads_and_contexts(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    fake.range_reset();
    gpufl_options_t o = range_options("range_threads");
    start(&o);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, scope_without_context, NULL), 0);
    pthread_join(t, NULL);
    assert_int_equal(fake.push_current(CTX_A), CUDA_SUCCESS);
    gpufl_scope_t outer = gpufl_scope_begin("outer", NULL);
    assert_int_equal(pthread_create(&t, NULL, scope_on_the_busy_context, CTX_A), 0);
    pthread_join(t, NULL);
    gpufl_scope_end(outer);
    CUcontext popped;
    assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
    /* A second context on this thread: a range of its own. */
    assert_int_equal(fake.push_current(CTX_B), CUDA_SUCCESS);
    gpufl_scope_t other = gpufl_scope_begin("other", NULL);
    assert_int_equal(fake.range_work(CTX_B, 4), 0);
    gpufl_scope_end(other);
    assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
    stop();
    session_t d = read_session();
    assert_int_equal(range_stat(&d, "no_context"), 1);
    assert_int_equal(range_stat(&d, "concurrent"), 1);
    assert_int_equal(range_stat(&d, "nested"), 0); /* the outer range was popped at its end */
    assert_int_equal(range_stat(&d, "open_at_end"), 0);
    assert_int_equal(range_stat(&d, "lost"), 0);
    assert_int_equal(range_stat(&d, "contexts"), 2);
    assert_int_equal(range_stat(&d, "ranges"), 2);
    assert_int_equal(tu_count(&d.device, "range_profiler"), 2);
    assert_int_equal(field(range_of(&d, "other"), "context"), 0x2345);
    assert_true(range_metric(&d, "other", "dram__bytes_write.sum") == 4000.0);
    assert_true(range_metric(&d, "outer", "dram__bytes_write.sum") == 0.0);
    free_session(&d);
}

/* The range_profiler record of a context (by CUPTI's id). */
static json_t *range_profiler_of(const session_t *d, int64_t context) {
    for (size_t i = 0; i < d->device.n; i++)
        if (strcmp(tu_type(d->device.v[i]), "range_profiler") == 0 &&
            field(d->device.v[i], "context") == context)
            return d->device.v[i];
    fail_msg("no range_profiler record of context %lld", (long long)context);
    return NULL;
}

/* A scope named name on ctx (pushed current for it) that does work there. */
static void scope_with_work(CUcontext ctx, const char *name, double work) {
    assert_int_equal(fake.push_current(ctx), CUDA_SUCCESS);
    gpufl_scope_t sc = gpufl_scope_begin(name, NULL);
    assert_int_equal(fake.range_work(ctx, work), 0);
    gpufl_scope_end(sc);
    CUcontext popped;
    assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
}

/* With init before the context, the profiler starts in the context-created
 * callback, before any scope; where CUPTI refuses there, nothing of the
 * attempt is kept and the first scope on that context starts it. Each
 * record says where it started. */
static void range_profiler_starts_at_context_creation(void **state) {
    (void)state;
    start_range("range_created", 60000, "5");
    int enabled = 0, pushes, pops, depth, decodes;
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    fake.range_state(CTX_A, &enabled, &pushes, &pops, &depth, &decodes);
    assert_int_equal(enabled, 1); /* before any scope */
    CUcontext popped;             /* the context it made current for the start is popped again */
    assert_int_equal(fake.pop_current(&popped), CUDA_ERROR_INVALID_CONTEXT);
    fake.range_error("cuptiRangeProfilerEnable", CUPTI_ERROR_NOT_READY, 1);
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_B, NULL, 0), 1);
    /* the failed Enable left no object on CTX_B (the fake makes one when it succeeds) */
    assert_int_equal(fake.range_state(CTX_B, &enabled, &pushes, &pops, &depth, &decodes), -1);
    scope_with_work(CTX_A, "on_a", 2);
    scope_with_work(CTX_B, "on_b", 3);
    stop();
    session_t d = read_session();
    assert_int_equal(tu_count(&d.device, "range_profiler"), 2);
    assert_int_equal(range_stat(&d, "deferred"), 1);
    json_t *a = range_profiler_of(&d, 0x1234), *b = range_profiler_of(&d, 0x2345);
    assert_string_equal(json_string_value(json_object_get(a, "started_at")), "context_created");
    assert_string_equal(json_string_value(json_object_get(b, "started_at")), "first_scope");
    assert_null(json_object_get(a, "error"));
    assert_null(json_object_get(b, "error"));
    assert_true(range_metric(&d, "on_a", "dram__bytes_write.sum") == 2000.0);
    assert_true(range_metric(&d, "on_b", "dram__bytes_write.sum") == 3000.0);
    assert_int_equal(range_stat(&d, "contexts"), 2);
    assert_int_equal(range_stat(&d, "errors"), 0);
    free_session(&d);
}

/* A start at context creation that fails after Enable (SetConfig), or in
 * the device's support query, is undone without an error and the first
 * scope starts the profiler: the device's groups are chosen again. */
static void range_profiler_creation_start_undone(void **state) {
    (void)state;
    const char *calls[2] = {"cuptiRangeProfilerSetConfig", "cuptiProfilerDeviceSupported"};
    for (int k = 0; k < 2; k++) {
        start_range(k ? "range_undone_support" : "range_undone_config", 60000, "5");
        fake.range_error(calls[k], CUPTI_ERROR_NOT_READY, 1);
        assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
        scope_with_work(CTX_A, "after", 2);
        stop();
        session_t d = read_session();
        assert_int_equal(tu_count(&d.device, "range_profiler"), 1);
        json_t *rp = range_profiler_of(&d, 0x1234);
        assert_string_equal(json_string_value(json_object_get(rp, "started_at")), "first_scope");
        assert_null(json_object_get(rp, "error"));
        assert_true(range_metric(&d, "after", "dram__bytes_write.sum") == 2000.0);
        assert_int_equal(range_stat(&d, "errors"), 0);
        assert_int_equal(range_stat(&d, "deferred"), 1);
        assert_int_equal(tu_count(&d.device, "range_profiler_error"), 0);
        free_session(&d);
    }
}

/* Contexts created and destroyed without a scope take a slot each only
 * until their record is out: 80 of them, more than the table's 64, and a
 * scope on the next one is still profiled. */
static void range_profiler_slots_taken_again(void **state) {
    (void)state;
    start_range("range_slots", 60000, "5");
    for (int i = 0; i < 80; i++) {
        assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
        assert_int_equal(
            fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, CTX_A, NULL, 0), 1);
        if (i % 20 == 19) let_collector_run(); /* their records written */
    }
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A, NULL, 0), 1);
    scope_with_work(CTX_A, "last", 3);
    stop();
    session_t d = read_session();
    assert_int_equal(tu_count(&d.device, "range_profiler"), 81);
    assert_true(range_metric(&d, "last", "dram__bytes_write.sum") == 3000.0);
    assert_int_equal(range_stat(&d, "unprofiled"), 0);
    assert_int_equal(range_stat(&d, "deferred"), 0);
    assert_int_equal(range_stat(&d, "errors"), 0);
    free_session(&d);
}

/* 130 scopes: the image (128 ranges) is decoded when full and collection
 * goes on. With Stop failing, the full image cannot be decoded: later
 * scopes are counted as over capacity, the ranges it held as lost, and the
 * failure is an event. */
static void range_profiler_more_ranges_than_the_image(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    fake.range_reset();
    gpufl_options_t o = range_options("range_full");
    o.flush_interval_ms = 60000; /* decodes only when the image is full, and at the end */
    start(&o);
    assert_int_equal(fake.push_current(CTX_A), CUDA_SUCCESS);
    for (int i = 0; i < 130; i++) gpufl_scope_end(gpufl_scope_begin("step", NULL));
    stop();
    session_t d = read_session();
    assert_int_equal(range_stat(&d, "ranges"), 130);
    assert_int_equal(range_stat(&d, "decodes"), 2);
    assert_int_equal(range_stat(&d, "over_capacity"), 0);
    assert_int_equal(tu_count(&d.device, "range_metrics"), 130);
    free_session(&d);

    fake.range_reset();
    fake.range_error("cuptiRangeProfilerStop", CUPTI_ERROR_UNKNOWN, 0);
    gpufl_options_t failing = range_options("range_stop_fails");
    failing.flush_interval_ms = 60000;
    start(&failing);
    for (int i = 0; i < 130; i++) gpufl_scope_end(gpufl_scope_begin("step", NULL));
    stop();
    fake.range_error("", CUPTI_SUCCESS, 0);
    CUcontext popped;
    assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
    d = read_session();
    assert_int_equal(range_stat(&d, "ranges_pushed"), 128);
    assert_int_equal(range_stat(&d, "over_capacity"), 2);
    assert_int_equal(range_stat(&d, "lost"), 128);
    assert_int_equal(range_stat(&d, "ranges"), 0);
    assert_true(range_stat(&d, "errors") >= 3);
    int found = 0;
    for (size_t i = 0; i < d.device.n; i++) {
        json_t *j = d.device.v[i];
        const char *code = json_string_value(json_object_get(j, "code"));
        if (strcmp(tu_type(j), "event") == 0 && code && strcmp(code, "range_profiler_error") == 0)
            found += strstr(json_string_value(json_object_get(j, "message")),
                            "cuptiRangeProfilerStop failed") != NULL;
    }
    assert_true(found >= 1);
    free_session(&d);
}

/* A profiler refused at init (privileges) or a CUPTI without the API: the
 * session runs as Trace and says why. A device that does not support it,
 * or an Enable refused: the context's record carries a clear error, a
 * warning says it once, and its scopes are counted as unprofiled. */
static void range_profiler_refused_or_unavailable(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    fake.range_reset();
    fake.sass_metrics_error("cuptiProfilerInitialize", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, 0);
    gpufl_options_t o = range_options("range_privileges");
    start(&o);
    stop();
    fake.sass_metrics_reset();
    assert_non_null(strstr(capture.last, "range profiler cannot run"));
    session_t d = read_session();
    json_t *caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Trace");
    json_t *feature = json_object_get(json_object_get(caps, "features"), "range_profiler");
    assert_true(json_is_false(json_object_get(feature, "on")));
    assert_non_null(strstr(json_string_value(json_object_get(feature, "why")),
                           "cuptiProfilerInitialize failed"));
    free_session(&d);

    const struct {
        const char *name, *error;
    } cases[] = {
        {"range_unsupported", "device 0 does not support range profiling (vGPU unsupported)"},
        {"range_enable_refused", "cuptiRangeProfilerEnable failed"}};
    for (int c = 0; c < 2; c++) {
        fake.range_reset();
        if (c == 0)
            fake.range_support(CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED);
        else
            fake.range_error("cuptiRangeProfilerEnable", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, 0);
        gpufl_options_t u = range_options(cases[c].name);
        start(&u);
        assert_int_equal(fake.push_current(CTX_A), CUDA_SUCCESS);
        gpufl_scope_end(gpufl_scope_begin("a", NULL));
        gpufl_scope_end(gpufl_scope_begin("b", NULL));
        CUcontext popped;
        assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
        stop();
        fake.range_reset();
        assert_non_null(strstr(capture.last, cases[c].error));
        d = read_session();
        assert_string_equal(
            json_string_value(json_object_get(tu_first(&d.device, "capabilities"), "engine")),
            "RangeProfiler");
        json_t *rp = tu_first(&d.device, "range_profiler");
        assert_non_null(rp);
        assert_non_null(strstr(json_string_value(json_object_get(rp, "error")), cases[c].error));
        assert_int_equal(range_stat(&d, "unprofiled"), 2);
        assert_int_equal(range_stat(&d, "contexts"), 0);
        assert_int_equal(tu_count(&d.device, "range_metrics"), 0);
        free_session(&d);
    }

    setenv("GPUFL_CUPTI_LIBRARY", GPUFL_FAKE_CUPTI_OLD_PATH, 1);
    gpufl_options_t old = range_options("range_unavailable");
    start(&old);
    stop();
    setenv("GPUFL_CUPTI_LIBRARY", GPUFL_FAKE_CUPTI_PATH, 1);
    d = read_session();
    caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Trace");
    feature = json_object_get(json_object_get(caps, "features"), "range_profiler");
    assert_non_null(strstr(json_string_value(json_object_get(feature, "why")), "lacks cupti"));
    free_session(&d);
}

/* REVIEW: a switch whose Enable succeeded and whose Start failed leaves the
 * context CTX_FAILED with x->object still enabled; finish and the
 * context-destroy callback only disable CTX_ON contexts, so the profiler
 * stays enabled on a context that is being destroyed (only
 * gpufl__range_profiler_destroy disables it later, after the context is gone). */
static void range_profiler_failed_switch_then_destroy(void **state) {
    (void)state;
    start_range("range_failed_switch", 1, "100");
    assert_int_equal(fake.push_current(CTX_A), CUDA_SUCCESS);
    gpufl_scope_t a = gpufl_scope_begin("a", NULL); /* enabled, group 0 started */
    assert_int_equal(fake.range_work(CTX_A, 1), 0);
    fake.range_error("cuptiRangeProfilerStart", CUPTI_ERROR_UNKNOWN, 1);
    usleep(3000);
    gpufl_scope_end(a); /* decode, then the switch to group 1: Disable, Enable, Start fails */
    assert_int_equal(fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, CTX_A, NULL, 0),
                     1);
    int enabled, pushes, pops, depth, decodes;
    assert_int_equal(fake.range_state(CTX_A, &enabled, &pushes, &pops, &depth, &decodes), 0);
    int enabled_after_destroy = enabled;
    stop();
    CUcontext popped;
    assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
    assert_int_equal(enabled_after_destroy, 0); /* fails: still enabled */
}

static void *destroy_b_soon(void *arg) {
    (void)arg;
    usleep(30000); /* while the other thread's switch holds the engine's lock */
    fake.resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, CTX_B, NULL, 0);
    return NULL;
}

/* REVIEW: a switch holds the engine's lock through Disable, Enable and the
 * Start that programs the counters (~0.3 s on an H100); the context-destroy
 * callback waits 200 ms at most, so a context destroyed on another thread
 * meanwhile is never decoded nor disabled, and keeps its slot (CTX_ON, the
 * dead CUcontext) until finish pushes it and calls Stop/Decode/Disable. */
static void range_profiler_destroy_during_a_switch(void **state) {
    (void)state;
    start_range("range_destroy_during_switch", 1, "100");
    CUcontext popped;
    assert_int_equal(fake.push_current(CTX_B), CUDA_SUCCESS);
    gpufl_scope_end(gpufl_scope_begin("b", NULL)); /* CTX_B profiled */
    assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
    assert_int_equal(fake.push_current(CTX_A), CUDA_SUCCESS);
    gpufl_scope_t a = gpufl_scope_begin("a", NULL);
    fake.range_start_delay(300000); /* the Start after an Enable, as measured */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, destroy_b_soon, NULL), 0);
    usleep(3000);
    gpufl_scope_end(a); /* decode and switch CTX_A to group 1 under the lock */
    pthread_join(t, NULL);
    fake.range_start_delay(0);
    int enabled, pushes, pops, depth, decodes;
    assert_int_equal(fake.range_state(CTX_B, &enabled, &pushes, &pops, &depth, &decodes), 0);
    int b_enabled_after_destroy = enabled;
    stop();
    assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
    assert_int_equal(b_enabled_after_destroy, 0); /* fails: the callback gave up */
}

/* REVIEW: a switch that fails at Enable before the collector announced the
 * context: the range_profiler record is the error one (no groups), so the
 * model reads the context as failed with one group and rejects the group-1
 * range_metrics written before the failure as corrupt lines. */
static void range_profiler_failed_switch_before_announce(void **state) {
    (void)state;
    start_range("range_failed_switch_announce", 60000, "100"); /* decodes when the image is full */
    assert_int_equal(fake.push_current(CTX_A), CUDA_SUCCESS);
    for (int i = 0; i < 128; i++) gpufl_scope_end(gpufl_scope_begin("step", NULL)); /* 0 -> 1 */
    fake.range_error("cuptiRangeProfilerEnable", CUPTI_ERROR_UNKNOWN, 1);
    for (int i = 0; i < 128; i++)
        gpufl_scope_end(gpufl_scope_begin("step", NULL)); /* 1 -> 0 fails */
    stop();
    CUcontext popped;
    assert_int_equal(fake.pop_current(&popped), CUDA_SUCCESS);
    session_t d = read_session();
    assert_int_equal(range_stat(&d, "ranges"), 256);
    json_t *rp = tu_first(&d.device, "range_profiler");
    int said_error = json_object_get(rp, "error") != NULL;
    free_session(&d);
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, tu_session_dir()), 0);
    size_t n_ranges = m->n_ranges;
    uint64_t corrupt = m->read.corrupt_lines;
    gpufl__model_destroy(m);
    if (said_error || n_ranges != 256)
        fail_msg("range_profiler record has error: %d; model kept %zu of 256 ranges, %llu corrupt "
                 "lines",
                 said_error, n_ranges, (unsigned long long)corrupt);
}

/* ---- PcSampling with some of Trace's activity (option pc_sampling_trace) ---- */

/* The info event naming the activity mode, or NULL. */
static const char *pcs_trace_event(const session_t *s, const char *code) {
    for (size_t i = 0; i < s->device.n; i++) {
        json_t *j = s->device.v[i];
        if (strcmp(tu_type(j), "event") == 0 &&
            strcmp(json_string_value(json_object_get(j, "code")), code) == 0)
            return json_string_value(json_object_get(j, "message"));
    }
    return NULL;
}

/* Whether the insights skipped rule. */
static int insight_skipped(const gpufl__model_t *m, const char *rule) {
    gpufl__insights_t in;
    assert_int_equal(gpufl__insights_compute(&in, m), 0);
    int skipped = 0;
    for (size_t i = 0; i < in.n_skipped; i++)
        if (strcmp(in.skipped[i].rule, rule) == 0) skipped = 1;
    gpufl__insights_free(&in);
    return skipped;
}

/* Every warning of a pcs_trace_session. */
static char pcs_trace_warnings[4096];
static void pcs_trace_hook(gpufl_log_level_t level, const char *message, void *user) {
    (void)user;
    size_t used = strlen(pcs_trace_warnings);
    if (level >= GPUFL_LOG_WARN)
        snprintf(pcs_trace_warnings + used, sizeof pcs_trace_warnings - used, "%s\n", message);
}

typedef struct pcs_trace_run {
    uint32_t kernel, copy, memset, sync;
} pcs_trace_run_t;

/* A PcSampling session under GPUFL_PC_SAMPLING_TRACE=mode: in a scope, a
 * kernel (with its activity record), a copy and a memset (with theirs), a
 * stream synchronize, and PC samples of the kernel. */
static pcs_trace_run_t pcs_trace_session(const char *mode, const char *name) {
    fresh_pc_sampling();
    if (mode)
        setenv("GPUFL_PC_SAMPLING_TRACE", mode, 1);
    else
        unsetenv("GPUFL_PC_SAMPLING_TRACE"); /* the default */
    gpufl_options_t o = pc_sampling_options(name);
    o.flush_interval_ms = 10;
    pcs_trace_warnings[0] = '\0';
    gpufl_set_log_hook(pcs_trace_hook, NULL);
    assert_int_equal(gpufl_init(&o), 0);
    pcs_trace_run_t r;
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    fake.set_context(CTX_A);
    gpufl_scope_t step = gpufl_scope_begin("step", NULL);
    r.kernel = launch(f, "_Z4axpyPf", 256, 0);
    cuMemcpyHtoD_v2_params cp = {0};
    r.copy = call_with_record(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &cp,
                              "\"kind\": 1, \"bytes\": 4096, \"copyKind\": 1, \"srcKind\": 1");
    cuMemsetD8_v2_params mp = {0};
    r.memset = call_with_record(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, &mp,
                                "\"kind\": 2, \"bytes\": 64, \"memoryKind\": 3");
    cuStreamSynchronize_params sp = {.hStream = (CUstream)(uintptr_t)13};
    r.sync = fake.call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &sp, NULL);
    gpufl_scope_end(step);
    assert_int_equal(fake.pc_sampling_add(CTX_A, 0xabc, "_Z4axpyPf", 0x10, R_LONG_SB, 500), 0);
    let_collector_run();
    fake.set_context(NULL);
    stop();
    unsetenv("GPUFL_PC_SAMPLING_TRACE");
    return r;
}

/* The session as the analysis reads it: its kernel, copy and memset rows;
 * whether the insights that need kernel times were judged; and the PC
 * samples given to the scope of the kernel that ran them (by the kernel's
 * GPU time with kernel rows, by the launch without). */
static void pcs_trace_model(size_t kernels, size_t copies, size_t memsets, int idle_judged) {
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, tu_session_dir()), 0);
    assert_int_equal(m->n_kernels, kernels);
    assert_int_equal(m->n_copies, copies);
    assert_int_equal(m->n_memsets, memsets);
    assert_int_equal(!insight_skipped(m, "gpu_idle"), idle_judged);
    assert_int_equal(m->pc_samples_total, 500);
    const gpufl__model_pc_attrib_t *a = &m->pc_attrib;
    assert_true(a->unattributed == 0);
    assert_true(a->exact + a->split + a->fallback == 500);
    gpufl__model_destroy(m);
}

/* `none` (the default): launches as rows, no activity kind, so no kernel
 * GPU times and the insights that need them are skipped. */
static void pcs_trace_none_keeps_launch_rows(void **state) {
    (void)state;
    pcs_trace_run_t r = pcs_trace_session("none", "pcs_trace_none");
    assert_int_equal(fake.enable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 0);
    assert_int_equal(fake.enable_count(CUPTI_ACTIVITY_KIND_MEMCPY), 0);
    session_t d = read_session();
    assert_true(has_row(&d, "launch", r.kernel));
    assert_false(has_row(&d, "kernel", r.kernel));
    assert_true(has_row(&d, "sync", r.sync));
    assert_non_null(strstr(pcs_trace_event(&d, "pc_sampling_trace"), "mode none"));
    free_session(&d);
    pcs_trace_model(0, 0, 0, 0);
}

/* `kernels`: the concurrent-kernel kind only; kernel rows with GPU times
 * and the launch's scope instead of launch rows; no copies nor memsets;
 * syncs from the callbacks as before; the insights that need kernel times
 * run. */
static void pcs_trace_kernels_has_kernel_rows(void **state) {
    (void)state;
    pcs_trace_run_t r = pcs_trace_session("kernels", "pcs_trace_kernels");
    assert_true(fake.enable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) >= 1);
    assert_int_equal(fake.enable_count(CUPTI_ACTIVITY_KIND_MEMCPY), 0);
    assert_int_equal(fake.enable_count(CUPTI_ACTIVITY_KIND_MEMSET), 0);
    session_t d = read_session();
    assert_false(has_row(&d, "launch", r.kernel));
    assert_int_equal(cell_int(&d, "kernel", r.kernel, "scope"), scope_id(&d, "step"));
    assert_int_equal(cell_int(&d, "kernel", r.kernel, "end_ns") -
                         cell_int(&d, "kernel", r.kernel, "start_ns"),
                     2000);
    assert_false(has_row(&d, "copy", r.copy));
    assert_false(has_row(&d, "memset", r.memset));
    assert_true(has_row(&d, "sync", r.sync));
    assert_true(samples_of(&d, 0x1234, LONG_SB, "_Z4axpyPf") == 500);
    assert_non_null(strstr(pcs_trace_event(&d, "pc_sampling_trace"), "mode kernels"));
    json_t *caps = tu_first(&d.device, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "PcSampling");
    free_session(&d);
    pcs_trace_model(1, 0, 0, 1);
}

/* `all`: Trace's kinds as Trace enables them; kernels, copies and memsets
 * as rows with GPU times. */
static void pcs_trace_all_has_copies(void **state) {
    (void)state;
    pcs_trace_run_t r = pcs_trace_session("all", "pcs_trace_all");
    assert_true(fake.enable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) >= 1);
    assert_true(fake.enable_count(CUPTI_ACTIVITY_KIND_MEMCPY) >= 1);
    assert_true(fake.enable_count(CUPTI_ACTIVITY_KIND_MEMSET) >= 1);
    session_t d = read_session();
    assert_false(has_row(&d, "launch", r.kernel));
    assert_true(has_row(&d, "kernel", r.kernel));
    assert_int_equal(cell_int(&d, "copy", r.copy, "bytes"), 4096);
    assert_int_equal(cell_int(&d, "copy", r.copy, "scope"), scope_id(&d, "step"));
    assert_int_equal(cell_int(&d, "memset", r.memset, "bytes"), 64);
    assert_true(has_row(&d, "sync", r.sync));
    free_session(&d);
    pcs_trace_model(1, 1, 1, 1);
}

/* `alternate`: the kinds are enabled at start and paused at once, so a
 * sampling window has launch rows and no activity records; once a trace
 * window opens, launches leave notes and CUPTI's records become rows. */
static void pcs_trace_alternate_switches_windows(void **state) {
    (void)state;
    /* A sampling window longer than the session: rows only. */
    setenv("GPUFL_PC_SAMPLING_SAMPLE_MS", "60000", 1);
    pcs_trace_run_t r = pcs_trace_session("alternate", "pcs_trace_alternate_sampling");
    assert_true(fake.enable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) >= 1);
    assert_true(fake.disable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) >= 1);
    session_t d = read_session();
    assert_true(has_row(&d, "launch", r.kernel));
    assert_false(has_row(&d, "kernel", r.kernel));
    assert_false(has_row(&d, "copy", r.copy));
    assert_non_null(strstr(pcs_trace_event(&d, "pc_sampling_trace"), "mode alternate"));
    assert_non_null(strstr(pcs_trace_event(&d, "pc_sampling_trace_windows"), ": 0 trace windows"));
    free_session(&d);

    /* A short sampling window, then a trace window longer than the session. */
    fresh_pc_sampling();
    setenv("GPUFL_PC_SAMPLING_TRACE", "alternate", 1);
    setenv("GPUFL_PC_SAMPLING_SAMPLE_MS", "10", 1);
    setenv("GPUFL_PC_SAMPLING_TRACE_MS", "60000", 1);
    gpufl_options_t o = pc_sampling_options("pcs_trace_alternate_tracing");
    o.flush_interval_ms = 10;
    start(&o);
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    fake.set_context(CTX_A);
    let_collector_run(); /* the first pass begins the sampling window, */
    let_collector_run(); /* a pass at least 250 ms later ends it */
    uint32_t traced = launch(f, "_Z4axpyPf", 256, 0);
    let_collector_run();
    fake.set_context(NULL);
    stop();
    unsetenv("GPUFL_PC_SAMPLING_TRACE");
    unsetenv("GPUFL_PC_SAMPLING_SAMPLE_MS");
    unsetenv("GPUFL_PC_SAMPLING_TRACE_MS");
    d = read_session();
    assert_false(has_row(&d, "launch", traced));
    assert_true(has_row(&d, "kernel", traced));
    assert_true(cell_int(&d, "kernel", traced, "config") > 0); /* joined with its note */
    assert_non_null(strstr(pcs_trace_event(&d, "pc_sampling_trace_windows"), ": 1 trace windows"));
    free_session(&d);
}

/* `events`: no activity kind; the launch is timed by an event pair from
 * gpufl's own callbacks and written as a kernel row with the pair's times
 * (the fake's GPU clock moves 5 us a record) once its events are done, here
 * at the session's end; a launch on a stream being captured is not timed. */
static void pcs_trace_events_times_kernels(void **state) {
    (void)state;
    fake.event_pending(1); /* not done while the session runs: waited for at its end */
    pcs_trace_run_t r = pcs_trace_session("events", "pcs_trace_events");
    fake.event_pending(0);
    assert_int_equal(fake.enable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 0);
    assert_int_equal(fake.enable_count(CUPTI_ACTIVITY_KIND_MEMCPY), 0);
    session_t d = read_session();
    assert_false(has_row(&d, "launch", r.kernel));
    int64_t start = cell_int(&d, "kernel", r.kernel, "start_ns");
    assert_int_equal(cell_int(&d, "kernel", r.kernel, "end_ns") - start, 5000);
    assert_true(start >= cell_int(&d, "kernel", r.kernel, "launch_ns"));
    assert_int_equal(cell_int(&d, "kernel", r.kernel, "scope"), scope_id(&d, "step"));
    assert_true(cell_int(&d, "kernel", r.kernel, "config") > 0);
    assert_int_equal(cell_int(&d, "kernel", r.kernel, "grid_x"), 132);
    assert_int_equal(cell_int(&d, "kernel", r.kernel, "block_x"), 256);
    assert_int_equal(cell_int(&d, "kernel", r.kernel, "context"), 0x1234);
    assert_false(has_row(&d, "copy", r.copy));
    assert_true(has_row(&d, "sync", r.sync));
    assert_non_null(strstr(pcs_trace_event(&d, "pc_sampling_trace"), "mode events"));
    assert_non_null(strstr(pcs_trace_event(&d, "pc_sampling_trace_events"),
                           "1 launches timed, 0 untimed, 0 failed"));
    free_session(&d);
    pcs_trace_model(1, 0, 0, 1);

    fake.set_capturing(1); /* an event recorded there would join the graph */
    r = pcs_trace_session("events", "pcs_trace_events_capturing");
    fake.set_capturing(0);
    d = read_session();
    assert_true(has_row(&d, "launch", r.kernel));
    assert_false(has_row(&d, "kernel", r.kernel));
    assert_non_null(
        strstr(pcs_trace_event(&d, "pc_sampling_trace_events"), "0 launches timed, 1 untimed"));
    free_session(&d);
}

/* `late`: Trace's kinds off at the start and on once PC sampling is enabled
 * on the context. When CUPTI takes the kernel kind, launches leave notes and
 * its records are the kernel rows; when it refuses it while sampling (the
 * fake's default, as CUPTI on an H100 and H200), launches stay rows, the
 * copies still come, and the refusal is said with CUPTI's reason. */
static void pcs_trace_late_kinds(void **state) {
    (void)state;
    /* a CUPTI that takes the kernel kind while sampling */
    script_kernel_kind("pcs_trace_late", "errors_while_sampling", CUPTI_SUCCESS);
    pcs_trace_run_t r = pcs_trace_session("late", "pcs_trace_late");
    unsetenv("GPUFL_FAKE_CUPTI");
    session_t d = read_session();
    assert_false(has_row(&d, "launch", r.kernel));
    assert_true(has_row(&d, "kernel", r.kernel));
    assert_int_equal(cell_int(&d, "copy", r.copy, "bytes"), 4096);
    assert_non_null(strstr(pcs_trace_event(&d, "pc_sampling_trace_windows"),
                           "Trace's kinds turned on after PC sampling was enabled 1 times, "
                           "0 switches refused"));
    /* The point of late: no kind is on while PC sampling is being enabled. */
    assert_int_equal(fake.live_at_pcs_enable(), 0);
    free_session(&d);
    pcs_trace_model(1, 1, 1, 1);

    /* The default: refused, as CUPTI 13 does on an H100 and H200. */
    r = pcs_trace_session(NULL, "pcs_trace_late_refused");
    d = read_session();
    assert_true(has_row(&d, "launch", r.kernel));
    assert_false(has_row(&d, "kernel", r.kernel));
    assert_int_equal(cell_int(&d, "copy", r.copy, "bytes"), 4096);
    const char *said = pcs_trace_event(&d, "pc_sampling_trace_windows");
    assert_non_null(strstr(said, "1 switches refused by CUPTI, the first: "));
    assert_non_null(strstr(said, "concurrent kernels: "));
    free_session(&d);
}

/* `late`'s few records leave CUPTI's buffers partly filled, which only a
 * forced flush completes, and a forced flush loses the records still in
 * flight: it is forced when CUPTI holds half the pool (and once per batch
 * hold), not at every pass. With the fake keeping every partly filled
 * buffer, twelve copies in twelve passes all come, none dropped, the pool
 * never dry, in a few forced flushes among many passes. */
static void pcs_trace_late_forces_when_the_pool_runs_low(void **state) {
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/script.json", tu_scratch_dir(SUITE, "pcs_trace_pool"));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"holds_partial\": 1}", f);
    fclose(f);
    setenv("GPUFL_FAKE_CUPTI", path, 1);
    fresh_pc_sampling();
    unsetenv("GPUFL_PC_SAMPLING_TRACE");
    gpufl_options_t o = pc_sampling_options("pcs_trace_pool");
    o.flush_interval_ms = 5;
    o.batch_hold_ms = 60000; /* no forced flush on time within the test */
    start(&o);
    CUfunction fn = fake.function(32, 0, 0, 1024, 8);
    fake.set_context(CTX_A);
    (void)launch(fn, "_Z4axpyPf", 256, 0); /* sampling on, then the kinds */
    uint32_t copies[12];
    for (int i = 0; i < 12; i++) {
        cuMemcpyHtoD_v2_params cp = {0};
        copies[i] = call_with_record(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &cp,
                                     "\"kind\": 1, \"bytes\": 64, \"copyKind\": 1");
        let_collector_run();
    }
    unsigned long passes = fake.flushes(), forced = fake.flushes_forced();
    fake.set_context(NULL);
    stop();
    unsetenv("GPUFL_FAKE_CUPTI");
    session_t d = read_session();
    for (int i = 0; i < 12; i++) assert_true(has_row(&d, "copy", copies[i]));
    assert_int_equal(stat_of(&d, "cupti_dropped"), 0);
    assert_int_equal(stat_of(&d, "buffers_refused"), 0);
    free_session(&d);
    /* the first pass, then each time four of the eight buffers were held */
    assert_in_range(forced, 3, 5);
    assert_true(passes >= 12 && forced * 2 < passes);
}

/* Deep keeps no activity kind whatever the option says, and says so: its
 * kernels are launch rows, and a copy leaves no row. */
static void pcs_trace_not_under_deep(void **state) {
    (void)state;
    fake.sass_metrics_reset();
    fresh_pc_sampling();
    use_fake_nvdisasm();
    unsetenv("GPUFL_PC_SAMPLING_TRACE");
    gpufl_options_t o = trace_options("pcs_trace_deep");
    o.profiling_engine = GPUFL_ENGINE_DEEP;
    o.flush_interval_ms = 10;
    o.pc_sampling_trace = "kernels";
    pcs_trace_warnings[0] = '\0';
    gpufl_set_log_hook(pcs_trace_hook, NULL);
    assert_int_equal(gpufl_init(&o), 0);
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    fake.set_context(CTX_A);
    uint32_t kernel = launch(f, "_Z4axpyPf", 256, 0);
    cuMemcpyHtoD_v2_params cp = {0};
    uint32_t copy =
        call_with_record(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &cp,
                         "\"kind\": 1, \"bytes\": 4096, \"copyKind\": 1, \"srcKind\": 1");
    let_collector_run();
    fake.set_context(NULL);
    stop();
    unsetenv("GPUFL_NVDISASM");
    assert_non_null(
        strstr(pcs_trace_warnings, "pc_sampling_trace=kernels has no effect under Deep"));
    session_t d = read_session();
    assert_true(has_row(&d, "launch", kernel));
    assert_false(has_row(&d, "kernel", kernel));
    assert_false(has_row(&d, "copy", copy));
    assert_null(pcs_trace_event(&d, "pc_sampling_trace"));
    json_t *caps = tu_first(&d.device, "capabilities");
    json_t *kt = json_object_get(json_object_get(caps, "features"), "kernel_times");
    assert_true(json_is_false(json_object_get(kt, "on")));
    assert_non_null(strstr(json_string_value(json_object_get(kt, "why")), "Deep enables no"));
    free_session(&d);
}

/* The option set in code chooses the mode (the environment names it for the
 * other tests), any letter case; text that is not a mode fails init. */
static void pcs_trace_option_in_code(void **state) {
    (void)state;
    fresh_pc_sampling();
    unsetenv("GPUFL_PC_SAMPLING_TRACE");
    gpufl_options_t o = pc_sampling_options("pcs_trace_in_code");
    o.flush_interval_ms = 10;
    o.pc_sampling_trace = "sometimes";
    assert_int_equal(gpufl_init(&o), GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "pc_sampling_trace: 'sometimes' is not one of"));
    o.pc_sampling_trace = "Kernels";
    assert_int_equal(gpufl_init(&o), 0);
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    fake.set_context(CTX_A);
    uint32_t kernel = launch(f, "_Z4axpyPf", 256, 0);
    let_collector_run();
    fake.set_context(NULL);
    stop();
    session_t d = read_session();
    assert_true(has_row(&d, "kernel", kernel));
    assert_false(has_row(&d, "launch", kernel));
    assert_non_null(strstr(pcs_trace_event(&d, "pc_sampling_trace"), "mode kernels"));
    free_session(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_carry_the_scope_of_their_launch),
        cmocka_unit_test(pcs_trace_none_keeps_launch_rows),
        cmocka_unit_test(pcs_trace_kernels_has_kernel_rows),
        cmocka_unit_test(pcs_trace_all_has_copies),
        cmocka_unit_test(pcs_trace_alternate_switches_windows),
        cmocka_unit_test(pcs_trace_events_times_kernels),
        cmocka_unit_test(pcs_trace_late_kinds),
        cmocka_unit_test(pcs_trace_option_in_code),
        cmocka_unit_test(pcs_trace_late_forces_when_the_pool_runs_low),
        cmocka_unit_test(pcs_trace_not_under_deep),
        cmocka_unit_test(kernel_configs_carry_occupancy),
        cmocka_unit_test(no_libcuda_no_occupancy),
        cmocka_unit_test(external_correlation_ids),
        cmocka_unit_test(external_ids_on_a_quiet_thread),
        cmocka_unit_test(graph_launches),
        cmocka_unit_test(allocations_and_no_sync),
        cmocka_unit_test(rows_carry_gpufl_values),
        cmocka_unit_test(kernel_rows_wait_for_their_line),
        cmocka_unit_test(threads_launching_at_once),
        cmocka_unit_test(another_cupti_client_present),
        cmocka_unit_test(insufficient_privileges),
        cmocka_unit_test(replay_of_recorded_buffers),
        cmocka_unit_test(replay_of_damaged_recording),
        cmocka_unit_test(sync_begun_before_the_session),
        cmocka_unit_test(callback_begun_before_a_restart),
        cmocka_unit_test(launch_with_an_impossible_block),
        cmocka_unit_test(configurations_past_the_cap),
        cmocka_unit_test(stacks_name_the_sync_line),
        cmocka_unit_test(pc_samples_of_two_contexts),
        cmocka_unit_test(pc_samples_of_a_destroyed_context),
        cmocka_unit_test(pc_sampling_buffer_full),
        cmocka_unit_test(pc_sampling_restart_limits),
        cmocka_unit_test(pc_sampling_impossible_counts),
        cmocka_unit_test(pc_sampling_refused),
        cmocka_unit_test(pc_sampling_unavailable_and_deep),
        cmocka_unit_test(pc_samples_carry_their_sass),
        cmocka_unit_test(pc_samples_past_one_buffer),
        cmocka_unit_test(pc_records_without_a_name),
        cmocka_unit_test(pc_sampling_drain_period),
        cmocka_unit_test(pc_sampling_drain_adapts),
        cmocka_unit_test(sass_metrics_count_each_instruction),
        cmocka_unit_test(sass_metrics_of_a_destroyed_context),
        cmocka_unit_test(sass_metrics_second_session_in_a_process),
        cmocka_unit_test(pc_sampling_refused_after_sass_metrics),
        cmocka_unit_test(sass_metrics_refused_or_unavailable),
        cmocka_unit_test(deep_runs_both_engines),
        cmocka_unit_test(deep_drains_between_launches),
        cmocka_unit_test(range_profiler_scopes_become_ranges),
        cmocka_unit_test(range_profiler_groups_rotate),
        cmocka_unit_test(range_profiler_switch_budget),
        cmocka_unit_test(range_profiler_starts_at_context_creation),
        cmocka_unit_test(range_profiler_creation_start_undone),
        cmocka_unit_test(range_profiler_slots_taken_again),
        cmocka_unit_test(range_profiler_threads_and_contexts),
        cmocka_unit_test(range_profiler_more_ranges_than_the_image),
        cmocka_unit_test(range_profiler_refused_or_unavailable),
        cmocka_unit_test(range_profiler_failed_switch_then_destroy),
        cmocka_unit_test(range_profiler_destroy_during_a_switch),
        cmocka_unit_test(range_profiler_failed_switch_before_announce),
    };
    return cmocka_run_group_tests_name("trace_session", tests, setup, NULL);
}
