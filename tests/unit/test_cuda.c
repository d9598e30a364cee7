// SPDX-License-Identifier: Apache-2.0
/*
 * test_cuda.c - lib/nvidia/cuda.c against the fake libcuda
 * (tests/fakes/fake_cuda.c): the driver's occupancy next to ours, the
 * attributes read, device attributes read once per device (also from many
 * threads), a driver that disagrees, failing calls, a missing library and
 * one without the occupancy query.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cuda.h>

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "nvidia/cuda.h"

#ifndef GPUFL_FAKE_CUDA_PATH
#error "GPUFL_FAKE_CUDA_PATH must name libfake_cuda.so"
#endif
#ifndef GPUFL_FAKE_CUDA_NO_OCCUPANCY_PATH
#error "GPUFL_FAKE_CUDA_NO_OCCUPANCY_PATH must name libfake_cuda_no_occupancy.so"
#endif

#define DEVICE_ATTRIBUTES 11 /* cuDeviceGetAttribute calls per device */
#define THREADS           8
#define CALLS_PER_THREAD  2000

#define assert_close(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-12)

/* The fake's helpers, through a handle on the same library the module loads. */
static struct fake {
    void *handle;
    CUfunction (*function)(int regs, int static_smem, int local, int max_threads,
                           int driver_blocks);
    void (*function_carveout)(CUfunction function, int pct);
    void (*set_device_attribute)(int attr, int value);
    void (*set_device)(int ordinal);
    void (*set_error)(const char *function, int cuda_result);
    unsigned long (*calls)(const char *function);
    void (*reset)(void);
} fake;

static gpufl__cuda_t *cuda;

static int setup_suite(void **state) {
    (void)state;
    fake.handle = dlopen(GPUFL_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (fake.handle == NULL) fail_msg("dlopen %s: %s", GPUFL_FAKE_CUDA_PATH, dlerror());
    void *p;
#define RESOLVE(member, name)                                                                      \
    p = dlsym(fake.handle, name);                                                                  \
    assert_non_null(p);                                                                            \
    memcpy(&fake.member, &p, sizeof p)
    RESOLVE(function, "fake_cuda_function");
    RESOLVE(function_carveout, "fake_cuda_function_carveout");
    RESOLVE(set_device_attribute, "fake_cuda_set_device_attribute");
    RESOLVE(set_device, "fake_cuda_set_device");
    RESOLVE(set_error, "fake_cuda_set_error");
    RESOLVE(calls, "fake_cuda_calls");
    RESOLVE(reset, "fake_cuda_reset");
#undef RESOLVE
    return 0;
}

static int teardown_suite(void **state) {
    (void)state;
    dlclose(fake.handle);
    return 0;
}

/* Each test: the fake at its defaults, and a fresh module (empty cache). */
static int setup_test(void **state) {
    (void)state;
    fake.reset();
    setenv("GPUFL_CUDA_LIBRARY", GPUFL_FAKE_CUDA_PATH, 1);
    char why[256] = "";
    int rc = gpufl__cuda_open(&cuda, why, sizeof why);
    if (rc != 0) fail_msg("gpufl__cuda_open: %d: %s", rc, why);
    return 0;
}

static int teardown_test(void **state) {
    (void)state;
    gpufl__cuda_close(cuda);
    cuda = NULL;
    unsetenv("GPUFL_CUDA_LIBRARY");
    return 0;
}

static gpufl__kernel_occupancy_t occupancy_ok(CUfunction f, int threads, size_t dynamic) {
    gpufl__kernel_occupancy_t o;
    int rc = gpufl__cuda_kernel_occupancy(&o, cuda, f, threads, dynamic);
    if (rc != 0) fail_msg("gpufl__cuda_kernel_occupancy: %d: %s", rc, gpufl_last_error());
    return o;
}

static void test_open(void **state) {
    (void)state;
    assert_string_equal(gpufl__cuda_library(cuda), GPUFL_FAKE_CUDA_PATH);
    assert_int_equal(gpufl__cuda_driver_version(cuda), 13000);
    assert_int_equal(fake.calls("cuDriverGetVersion"), 1);
    /* Opening reads no device. */
    assert_int_equal(fake.calls("cuDeviceGetAttribute"), 0);
}

static void test_values(void **state) {
    (void)state;
    /* 256 threads, 32 registers on the fake's H100: 8 blocks, warps-limited
     * (test_occupancy has the arithmetic); the driver says 8 too. */
    CUfunction f = fake.function(32, 0, 24, 1024, 8);
    gpufl__kernel_occupancy_t o = occupancy_ok(f, 256, 0);
    assert_int_equal(o.device, 0);
    assert_int_equal(o.device_attributes.cc_major, 9);
    assert_int_equal(o.device_attributes.sm_count, 132);
    assert_int_equal(o.device_attributes.smem_per_block_optin, 232448);
    assert_int_equal(o.device_attributes.reserved_smem_per_block, 1024);
    assert_int_equal(o.kernel.block_threads, 256);
    assert_int_equal(o.kernel.registers_per_thread, 32);
    assert_int_equal(o.kernel.static_smem_bytes, 0);
    assert_int_equal(o.kernel.dynamic_smem_bytes, 0);
    assert_int_equal(o.kernel.local_bytes_per_thread, 24);
    assert_int_equal(o.kernel.max_threads_per_block, 1024);
    assert_int_equal(o.kernel.carveout_pct, -1);
    assert_int_equal(o.driver_blocks_per_sm, 8);
    assert_int_equal(o.active_warps, 64);
    assert_int_equal(o.max_warps, 64);
    assert_close(o.occupancy, 1.0);
    assert_int_equal(o.computed_status, 0);
    assert_int_equal(o.computed.blocks_per_sm, 8);
    assert_int_equal(o.computed.limiter, GPUFL_OCC_WARPS);
    assert_int_equal(o.computed.limit_registers, 8);
    assert_int_equal(o.computed.limit_smem, 228);
    assert_int_equal(o.computed.limit_blocks, 32);
    assert_true(o.agrees);

    /* 48 KiB of dynamic shared memory: 4 blocks by shared memory, 32 of
     * 64 warps; the driver agrees. */
    f = fake.function(32, 0, 0, 1024, 4);
    o = occupancy_ok(f, 256, 49152);
    assert_int_equal(o.kernel.dynamic_smem_bytes, 49152);
    assert_int_equal(o.computed.limit_smem, 4);
    assert_int_equal(o.computed.limiter, GPUFL_OCC_SHARED_MEMORY);
    assert_int_equal(o.active_warps, 32);
    assert_close(o.occupancy, 0.5);
    assert_true(o.agrees);
    assert_int_equal(fake.calls("cuOccupancyMaxActiveBlocksPerMultiprocessor"), 2);
    assert_int_equal(fake.calls("cuFuncGetAttribute"), 10);
    assert_int_equal(fake.calls("cuCtxGetDevice"), 2);
}

static void test_carveout_read(void **state) {
    (void)state;
    /* Carveout 0 with 48 KiB static: the SM takes 64 KiB, 1 block. */
    CUfunction f = fake.function(32, 49152, 0, 1024, 1);
    fake.function_carveout(f, 0);
    gpufl__kernel_occupancy_t o = occupancy_ok(f, 256, 0);
    assert_int_equal(o.kernel.carveout_pct, 0);
    assert_int_equal(o.computed.limit_smem, 1);
    assert_int_equal(o.computed.smem_config_bytes, 65536);
    assert_int_equal(o.active_warps, 8);
    assert_true(o.agrees);
}

static void test_disagreement(void **state) {
    (void)state;
    /* We compute 8 blocks, the driver says 6: its numbers are reported,
     * ours stay in computed. */
    CUfunction f = fake.function(32, 0, 0, 1024, 6);
    gpufl__kernel_occupancy_t o = occupancy_ok(f, 256, 0);
    assert_int_equal(o.driver_blocks_per_sm, 6);
    assert_int_equal(o.active_warps, 48);
    assert_close(o.occupancy, 0.75);
    assert_int_equal(o.computed_status, 0);
    assert_int_equal(o.computed.blocks_per_sm, 8);
    assert_false(o.agrees);
}

static void test_device_attributes_once(void **state) {
    (void)state;
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    for (int i = 0; i < 100; i++) occupancy_ok(f, 256, 0);
    assert_int_equal(fake.calls("cuDeviceGetAttribute"), DEVICE_ATTRIBUTES);
    /* A second device is read once too; the first is not read again. */
    fake.set_device(1);
    for (int i = 0; i < 10; i++) assert_int_equal(occupancy_ok(f, 256, 0).device, 1);
    fake.set_device(0);
    occupancy_ok(f, 256, 0);
    assert_int_equal(fake.calls("cuDeviceGetAttribute"), 2 * DEVICE_ATTRIBUTES);
    /* An ordinal beyond the cache is read every time. */
    fake.set_device(GPUFL_CUDA_DEVICES_CACHED + 6);
    occupancy_ok(f, 256, 0);
    gpufl__kernel_occupancy_t o = occupancy_ok(f, 256, 0);
    assert_int_equal(o.device, GPUFL_CUDA_DEVICES_CACHED + 6);
    assert_true(o.agrees);
    assert_int_equal(fake.calls("cuDeviceGetAttribute"), 4 * DEVICE_ATTRIBUTES);
}

static void test_device_attribute_values_used(void **state) {
    (void)state;
    /* A device with 16 block slots: the tiny kernel is bound by them. */
    fake.set_device_attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 16);
    CUfunction f = fake.function(16, 0, 0, 1024, 16);
    gpufl__kernel_occupancy_t o = occupancy_ok(f, 32, 0);
    assert_int_equal(o.computed.limit_blocks, 16);
    assert_int_equal(o.computed.limiter, GPUFL_OCC_BLOCKS);
    assert_int_equal(o.active_warps, 16);
    assert_close(o.occupancy, 0.25);
    assert_true(o.agrees);
}

typedef struct worker {
    CUfunction function;
    int failures, disagreements;
} worker_t;

static void *work(void *arg) {
    worker_t *w = arg;
    for (int i = 0; i < CALLS_PER_THREAD; i++) {
        gpufl__kernel_occupancy_t o;
        if (gpufl__cuda_kernel_occupancy(&o, cuda, w->function, 256, 0) != 0)
            w->failures++;
        else if (!o.agrees || o.computed.blocks_per_sm != 8 || o.device_attributes.sm_count != 132)
            w->disagreements++;
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    /* Every thread's first call races to fill the one device's cache. */
    pthread_t threads[THREADS];
    worker_t workers[THREADS];
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker_t){f, 0, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(workers[i].failures, 0);
        assert_int_equal(workers[i].disagreements, 0);
    }
    assert_int_equal(fake.calls("cuDeviceGetAttribute"), DEVICE_ATTRIBUTES);
    assert_int_equal(fake.calls("cuOccupancyMaxActiveBlocksPerMultiprocessor"),
                     THREADS * CALLS_PER_THREAD);
}

static void expect_failure(CUfunction f, int code, const char *message) {
    gpufl__kernel_occupancy_t o;
    assert_int_equal(gpufl__cuda_kernel_occupancy(&o, cuda, f, 256, 0), code);
    assert_string_equal(gpufl_last_error(), message);
}

static void test_failing_calls(void **state) {
    (void)state;
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    /* A failed device read is not cached: the next call reads again. */
    fake.set_error("cuDeviceGetAttribute", CUDA_ERROR_INVALID_DEVICE);
    expect_failure(f, GPUFL_EIO,
                   "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) failed: "
                   "CUDA_ERROR_INVALID_DEVICE (101)");
    fake.set_error("cuDeviceGetAttribute", CUDA_SUCCESS);
    assert_true(occupancy_ok(f, 256, 0).agrees);
    assert_int_equal(fake.calls("cuDeviceGetAttribute"), 1 + DEVICE_ATTRIBUTES);

    fake.set_error("cuFuncGetAttribute", CUDA_ERROR_INVALID_HANDLE);
    expect_failure(f, GPUFL_EIO,
                   "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS) failed: "
                   "CUDA_ERROR_INVALID_HANDLE (400)");
    fake.set_error("cuFuncGetAttribute", CUDA_SUCCESS);

    fake.set_error("cuCtxGetDevice", CUDA_ERROR_INVALID_CONTEXT);
    expect_failure(f, GPUFL_EIO, "cuCtxGetDevice failed: CUDA_ERROR_INVALID_CONTEXT (201)");
    fake.set_error("cuCtxGetDevice", CUDA_SUCCESS);

    fake.set_error("cuOccupancyMaxActiveBlocksPerMultiprocessor", 999);
    expect_failure(f, GPUFL_EIO,
                   "cuOccupancyMaxActiveBlocksPerMultiprocessor failed: CUDA error (999)");
    fake.set_error("cuOccupancyMaxActiveBlocksPerMultiprocessor", CUDA_SUCCESS);
}

static void test_bad_arguments(void **state) {
    (void)state;
    gpufl__kernel_occupancy_t o;
    CUfunction f = fake.function(32, 0, 0, 1024, 8);
    assert_int_equal(gpufl__cuda_kernel_occupancy(&o, cuda, NULL, 256, 0), GPUFL_EINVAL);
    assert_int_equal(gpufl__cuda_kernel_occupancy(&o, NULL, f, 256, 0), GPUFL_EINVAL);
    assert_int_equal(gpufl__cuda_kernel_occupancy(NULL, cuda, f, 256, 0), GPUFL_EINVAL);
    assert_int_equal(gpufl__cuda_kernel_occupancy(&o, cuda, f, 0, 0), GPUFL_EINVAL);
    assert_int_equal(gpufl__cuda_kernel_occupancy(&o, cuda, f, 256, (size_t)1 << 31), GPUFL_EINVAL);
    /* Refused before any driver call. */
    assert_int_equal(fake.calls("cuCtxGetDevice"), 0);
}

static void test_computation_refused(void **state) {
    (void)state;
    /* A block above the kernel's limit: the driver's answer (scripted 0) is
     * still reported; our computation refuses it and says why. */
    CUfunction f = fake.function(32, 0, 0, 512, 0);
    gpufl__kernel_occupancy_t o = occupancy_ok(f, 1024, 0);
    assert_int_equal(o.driver_blocks_per_sm, 0);
    assert_int_equal(o.computed_status, GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "above the kernel's limit of 512"));
    assert_int_equal(o.computed.blocks_per_sm, 0);
    assert_false(o.agrees);

    /* An architecture the rules do not know (a device not yet read, which
     * says 13.0): the driver's numbers stand alone. */
    fake.set_device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 13);
    fake.set_device(1);
    f = fake.function(32, 0, 0, 1024, 8);
    o = occupancy_ok(f, 256, 0);
    assert_int_equal(o.computed_status, GPUFL_ENOTSUP);
    assert_int_equal(o.driver_blocks_per_sm, 8);
    assert_close(o.occupancy, 1.0);
    assert_false(o.agrees);
}

static void test_missing_library(void **state) {
    (void)state;
    static char dummy;
    gpufl__cuda_t *c = (gpufl__cuda_t *)(void *)&dummy; /* open must set it to NULL */
    char why[256] = "";
    setenv("GPUFL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    assert_int_equal(gpufl__cuda_open(&c, why, sizeof why), GPUFL_ENOTSUP);
    assert_null(c);
    assert_string_equal(why, "/nonexistent/libcuda.so.1 not found: no NVIDIA driver");
}

static void test_lacks_occupancy(void **state) {
    (void)state;
    gpufl__cuda_t *c = NULL;
    char why[512] = "";
    setenv("GPUFL_CUDA_LIBRARY", GPUFL_FAKE_CUDA_NO_OCCUPANCY_PATH, 1);
    assert_int_equal(gpufl__cuda_open(&c, why, sizeof why), GPUFL_ENOTSUP);
    assert_null(c);
    char expected[512];
    snprintf(expected, sizeof expected, "%s lacks cuOccupancyMaxActiveBlocksPerMultiprocessor",
             GPUFL_FAKE_CUDA_NO_OCCUPANCY_PATH);
    assert_string_equal(why, expected);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open, setup_test, teardown_test),
        cmocka_unit_test_setup_teardown(test_values, setup_test, teardown_test),
        cmocka_unit_test_setup_teardown(test_carveout_read, setup_test, teardown_test),
        cmocka_unit_test_setup_teardown(test_disagreement, setup_test, teardown_test),
        cmocka_unit_test_setup_teardown(test_device_attributes_once, setup_test, teardown_test),
        cmocka_unit_test_setup_teardown(test_device_attribute_values_used, setup_test,
                                        teardown_test),
        cmocka_unit_test_setup_teardown(test_threads, setup_test, teardown_test),
        cmocka_unit_test_setup_teardown(test_failing_calls, setup_test, teardown_test),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup_test, teardown_test),
        cmocka_unit_test_setup_teardown(test_computation_refused, setup_test, teardown_test),
        cmocka_unit_test_setup_teardown(test_missing_library, NULL, teardown_test),
        cmocka_unit_test_setup_teardown(test_lacks_occupancy, NULL, teardown_test),
    };
    return cmocka_run_group_tests(tests, setup_suite, teardown_suite);
}
