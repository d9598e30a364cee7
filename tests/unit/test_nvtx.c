// SPDX-License-Identifier: Apache-2.0
/*
 * test_nvtx.c - NVTX ranges as scopes: a program built against the
 * toolkit's NVTX v3 headers (header-only) makes NVTX calls under Trace
 * sessions over the fake libcupti and libcuda. This program links gpufl
 * statically, so NVTX finds gpufl through its pre-injection pointer. Push/pop
 * ranges nested with kernels inside, a domain, a registered string, named
 * categories, payloads, a start/end range ended on another thread; nothing
 * under Monitor; a preset NVTX_INJECTION64_PATH warned about.
 */
#include "test_util.h"

#include "analysis/model.h"
#include "analysis/model_internal.h"

#include <cuda.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#define SUITE "nvtx"

static struct {
    uint32_t (*call)(uint32_t cbid, const void *params, const char *symbol);
    int (*add_record)(const char *json);
    CUfunction (*function)(int regs, int static_smem, int local, int max_threads,
                           int driver_blocks);
} fake;

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
    resolve(cupti, "fake_cupti_add_record", &fake.add_record);
    resolve(cuda, "fake_cuda_function", &fake.function);
    setenv("GPUFL_CUPTI_LIBRARY", GPUFL_FAKE_CUPTI_PATH, 1);
    setenv("GPUFL_CUDA_LIBRARY", GPUFL_FAKE_CUDA_PATH, 1);
    unsetenv("GPUFL_FAKE_CUPTI");
    unsetenv("NVTX_INJECTION64_PATH");
    return 0;
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static tu_log_capture_t capture;
static void start(const char *name, gpufl_engine_t engine) {
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, name));
    o.profiling_engine = engine;
    o.backend = GPUFL_BACKEND_NVIDIA;
    memset(&capture, 0, sizeof capture);
    gpufl_set_log_hook(tu_capture_hook, &capture);
    assert_int_equal(gpufl_init(&o), 0);
}

static void stop(void) {
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);
}

/* cuLaunchKernel and its activity record; returns the correlation id. */
static uint32_t launch(const char *name) {
    static CUfunction f;
    if (!f) f = fake.function(32, 0, 0, 1024, 8);
    cuLaunchKernel_params p = {.f = f,
                               .gridDimX = 8,
                               .blockDimX = 256,
                               .gridDimY = 1,
                               .gridDimZ = 1,
                               .blockDimY = 1,
                               .blockDimZ = 1};
    uint32_t corr = fake.call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, name);
    char json[512];
    int64_t t = now_ns();
    snprintf(json, sizeof json,
             "{\"kind\": 10, \"start\": %lld, \"end\": %lld, \"name\": \"%s\", "
             "\"correlationId\": %u, \"streamId\": 7, \"gridX\": 8, \"gridY\": 1, "
             "\"gridZ\": 1, \"blockX\": 256, \"blockY\": 1, \"blockZ\": 1}",
             (long long)t, (long long)t + 3000, name, corr);
    assert_int_equal(fake.add_record(json), 0);
    return corr;
}

/* ---- reading back ---- */

typedef struct row {
    int64_t id, tid, source;
    const char *domain, *category, *payload;
} row_t;

/* The scope_begin row of path (the only one), its NVTX columns resolved
 * ("" for 0). */
static row_t scope_row(const tu_lines_t *L, const char *path) {
    row_t r = {-1, 0, 0, "", "", ""};
    for (size_t i = 0; i < L->n; i++) {
        json_t *j = L->v[i];
        if (strcmp(tu_type(j), "scope_begin") != 0) continue;
        json_t *paths = json_object_get(j, "path");
        for (size_t k = 0; k < json_array_size(paths); k++) {
            if (strcmp(tu_dict(L, json_integer_value(json_array_get(paths, k))), path) != 0)
                continue;
            if (r.id >= 0) fail_msg("two scopes %s", path);
#define COL(name) json_integer_value(json_array_get(json_object_get(j, name), k))
            r.id = COL("id");
            r.tid = COL("tid");
            r.source = COL("source");
            r.domain = COL("domain") ? tu_dict(L, COL("domain")) : "";
            r.category = COL("category") ? tu_dict(L, COL("category")) : "";
            r.payload = COL("payload") ? tu_dict(L, COL("payload")) : "";
#undef COL
        }
    }
    if (r.id < 0) fail_msg("no scope %s", path);
    return r;
}

/* The tid of the scope_end row of id. */
static int64_t end_tid(const tu_lines_t *L, int64_t id) {
    size_t n;
    int64_t *ids = tu_column(L, "scope_end", "id", &n);
    int64_t *tids = tu_column(L, "scope_end", "tid", &n);
    int64_t tid = -1;
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id) tid = tids[i];
    free(ids);
    free(tids);
    return tid;
}

/* The scope column of the kernel row of corr; -1 for null. */
static int64_t kernel_scope(const tu_lines_t *L, uint32_t corr) {
    for (size_t i = 0; i < L->n; i++) {
        json_t *j = L->v[i];
        if (strcmp(tu_type(j), "kernel") != 0) continue;
        json_t *corrs = json_object_get(j, "correlation");
        for (size_t k = 0; k < json_array_size(corrs); k++)
            if (json_integer_value(json_array_get(corrs, k)) == corr) {
                json_t *s = json_array_get(json_object_get(j, "scope"), k);
                return json_is_null(s) ? -1 : json_integer_value(s);
            }
    }
    fail_msg("no kernel %u", corr);
    return -1;
}

static const gpufl__model_scope_path_t *path_of(const gpufl__model_t *m, const char *path) {
    long k = gpufl__model_path_find(m, path, strlen(path));
    if (k < 0) fail_msg("no scope path %s in the model", path);
    return &m->scope_paths[k];
}

/* The capability entry `feature`: its on flag (why in *why). */
static int feature_on(const tu_lines_t *L, const char *feature, const char **why) {
    json_t *caps = tu_first(L, "capabilities");
    assert_non_null(caps);
    json_t *f = json_object_get(json_object_get(caps, "features"), feature);
    if (!f) fail_msg("no capability %s", feature);
    json_t *w = json_object_get(f, "why");
    *why = json_is_string(w) ? json_string_value(w) : "";
    return json_is_true(json_object_get(f, "on"));
}

static void *end_range(void *arg) {
    nvtxRangeEnd(*(nvtxRangeId_t *)arg);
    return NULL;
}

/* ---------------------------------------------------------------------- */

/* Every kind of range under Trace: the scope records, their source,
 * domain, category and payload, and the kernels they hold. */
static void ranges_become_scopes(void **state) {
    (void)state;
    start("ranges", GPUFL_ENGINE_TRACE);
    /* A statically linked program needs no variable: gpufl sets none. */
    assert_null(getenv("NVTX_INJECTION64_PATH"));
    nvtxNameCategoryA(3, "io");
    nvtxDomainHandle_t training = nvtxDomainCreateA("training");
    assert_non_null(training);
    nvtxDomainNameCategoryA(training, 5, "compute");
    nvtxStringHandle_t step = nvtxDomainRegisterStringA(training, "step");
    assert_non_null(step);

    assert_int_equal(nvtxRangePushA("outer"), 0);
    uint32_t k_outer = launch("_Z5outerv");
    nvtxEventAttributes_t e = {0};
    e.version = NVTX_VERSION;
    e.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    e.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    e.message.registered = step;
    e.category = 5;
    e.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    e.payload.llValue = -42;
    assert_int_equal(nvtxDomainRangePushEx(training, &e), 1);
    uint32_t k_step = launch("_Z4stepv");
    gpufl_scope_t mine = gpufl_scope_begin("mine", NULL);
    uint32_t k_mine = launch("_Z4minev");
    gpufl_scope_end(mine);
    assert_int_equal(nvtxDomainRangePop(training), 1);
    assert_int_equal(nvtxRangePop(), 0);

    /* A start/end range, ended on another thread; the kernel launched while
     * it is open has no push/pop range around it. */
    nvtxEventAttributes_t s = {0};
    s.version = NVTX_VERSION;
    s.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    s.messageType = NVTX_MESSAGE_TYPE_ASCII;
    s.message.ascii = "request";
    s.category = 3;
    s.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    s.payload.dValue = 2.5;
    nvtxRangeId_t request = nvtxRangeStartEx(&s);
    assert_true(request != 0);
    uint32_t k_request = launch("_Z7requestv");
    pthread_t ender;
    assert_int_equal(pthread_create(&ender, NULL, end_range, &request), 0);
    pthread_join(ender, NULL);
    uint32_t k_after = launch("_Z5afterv");

    nvtxRangePushW(L"wide\u00e9");
    nvtxRangePop();
    nvtxDomainRangePushEx(training, &e); /* a domain range left open */
    stop();

    tu_lines_t scope = tu_read(tu_session_dir(), "scope.log");
    tu_lines_t device = tu_read(tu_session_dir(), "device.log");
    const char *why;
    assert_true(feature_on(&device, "nvtx", &why));
    row_t outer = scope_row(&scope, "outer");
    row_t r_step = scope_row(&scope, "outer/step");
    row_t r_mine = scope_row(&scope, "outer/step/mine");
    row_t r_request = scope_row(&scope, "request");
    row_t wide = scope_row(&scope, "wide\xc3\xa9");
    assert_int_equal(outer.source, 1);
    assert_string_equal(outer.domain, "");
    assert_string_equal(outer.payload, "");
    assert_int_equal(r_step.source, 1);
    assert_string_equal(r_step.domain, "training");
    assert_string_equal(r_step.category, "compute");
    assert_string_equal(r_step.payload, "-42");
    assert_int_equal(r_mine.source, 0); /* a gpufl scope inside NVTX ranges */
    assert_int_equal(r_request.source, 2);
    assert_string_equal(r_request.category, "io");
    assert_string_equal(r_request.payload, "2.5");
    assert_int_equal(wide.source, 1);
    /* The start/end range ended on the other thread. */
    assert_true(end_tid(&scope, r_request.id) > 0);
    assert_true(end_tid(&scope, r_request.id) != r_request.tid);
    assert_int_equal(end_tid(&scope, outer.id), outer.tid);
    /* Kernels carry the innermost push/pop range or scope of their thread. */
    assert_int_equal(kernel_scope(&device, k_outer), outer.id);
    assert_int_equal(kernel_scope(&device, k_step), r_step.id);
    assert_int_equal(kernel_scope(&device, k_mine), r_mine.id);
    assert_int_equal(kernel_scope(&device, k_request), -1);
    assert_int_equal(kernel_scope(&device, k_after), -1);
    tu_free(&scope);
    tu_free(&device);

    /* The analysis: push/pop ranges hold their kernels as scopes do; the
     * start/end range the kernels launched while it was open. */
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, tu_session_dir()), 0);
    const gpufl__model_scope_path_t *p_outer = path_of(m, "outer");
    const gpufl__model_scope_path_t *p_step = path_of(m, "outer/step");
    const gpufl__model_scope_path_t *p_request = path_of(m, "request");
    assert_int_equal(p_outer->source, 1);
    assert_int_equal(p_outer->gpu.self.kernels, 1);
    assert_int_equal(p_outer->gpu.total.kernels, 3);
    assert_int_equal(p_step->gpu.self.kernels, 1);
    assert_string_equal(p_step->domain, "training");
    assert_int_equal(p_request->source, 2);
    assert_int_equal(p_request->gpu.self.kernels, 1);
    assert_int_equal(p_request->gpu.total.kernels, 1);
    assert_string_equal(p_request->gpu.top[0].name, "request()");
    gpufl__model_destroy(m);
}

/* Under Monitor the callbacks return at once: no scope records. */
static void nothing_under_monitor(void **state) {
    (void)state;
    start("monitor", GPUFL_ENGINE_MONITOR);
    nvtxRangePushA("quiet");
    nvtxRangeId_t r = nvtxRangeStartA("quiet_too");
    nvtxRangeEnd(r);
    nvtxRangePop();
    stop();
    tu_lines_t scope = tu_read(tu_session_dir(), "scope.log");
    tu_lines_t device = tu_read(tu_session_dir(), "device.log");
    assert_int_equal(tu_count(&scope, "scope_begin"), 0);
    const char *why;
    assert_false(feature_on(&device, "nvtx", &why));
    assert_string_equal(why, "needs the Trace engine");
    tu_free(&scope);
    tu_free(&device);
}

/* NVTX_INJECTION64_PATH naming another library: a warning, the capability
 * off with the reason, and no NVTX ranges recorded. */
static void another_injection_is_named(void **state) {
    (void)state;
    setenv("NVTX_INJECTION64_PATH", "/usr/lib/x86_64-linux-gnu/libnvtx-other.so", 1);
    start("preset", GPUFL_ENGINE_TRACE);
    nvtxRangePushA("elsewhere");
    nvtxRangePop();
    stop();
    unsetenv("NVTX_INJECTION64_PATH");
    assert_true(capture.warnings >= 1);
    assert_non_null(strstr(capture.last, "NVTX_INJECTION64_PATH names another library"));
    tu_lines_t scope = tu_read(tu_session_dir(), "scope.log");
    tu_lines_t device = tu_read(tu_session_dir(), "device.log");
    assert_int_equal(tu_count(&scope, "scope_begin"), 0);
    const char *why;
    assert_false(feature_on(&device, "nvtx", &why));
    assert_non_null(strstr(why, "libnvtx-other.so"));
    tu_free(&scope);
    tu_free(&device);
}

/* Domains are never freed (a range on another thread may name one), so
 * they are capped: past 1024 nvtxDomainCreate gives NULL (NVTX's default
 * domain) and gpufl says so once. Last: it uses up the process's domains. */
static void domains_are_capped(void **state) {
    (void)state;
    memset(&capture, 0, sizeof capture);
    gpufl_set_log_hook(tu_capture_hook, &capture);
    int made = 0;
    nvtxDomainHandle_t d = NULL;
    char name[32];
    do {
        snprintf(name, sizeof name, "domain%d", made);
        d = nvtxDomainCreateA(name);
        made += d != NULL;
    } while (d != NULL && made <= 1024);
    gpufl_set_log_hook(NULL, NULL);
    assert_null(d);
    assert_true(made >= 1000 && made <= 1024); /* the earlier tests made a few */
    assert_int_equal(capture.warnings, 1);
    assert_non_null(strstr(capture.last, "more domains (1024) than gpufl keeps"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nothing_under_monitor),
        cmocka_unit_test(ranges_become_scopes),
        cmocka_unit_test(another_injection_is_named),
        cmocka_unit_test(domains_are_capped),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
