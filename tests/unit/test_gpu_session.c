// SPDX-License-Identifier: Apache-2.0
/*
 * test_gpu_session.c - whole sessions with the NVIDIA backend, driven by the
 * fake libnvidia-ml: backend choice and the capability record, gpu_info and
 * gpu_sample lines (validated by the schema test with every other log),
 * processes, the cost record, and that no vendor library is loaded when the
 * backend is off.
 */
#include "test_util.h"

#include <dlfcn.h>
#include <time.h>

#define SUITE "gpu_session"

static void write_script(const char *json) { tu_fake_nvml(SUITE, json); }

static const char *h100 =
    "{\"driver_version\": \"580.95.05\", \"nvml_version\": \"13.580.95.05\","
    " \"cuda_driver_version\": 13000,"
    " \"gpus\": [{\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-11111111-2222\","
    "   \"pci_bus_id\": \"00000000:1B:00.0\", \"cc\": [9, 0], \"cores\": 16896,"
    "   \"memory_total\": 85520809984, \"mig_mode\": 0, \"gpm\": true,"
    "   \"samples\": {\"util_gpu\": [100], \"util_mem\": [40], \"mem_used\": [1073741824],"
    "     \"mem_free\": [84447068160], \"temp_gpu\": [61], \"power_mw\": [650000],"
    "     \"power_limit_mw\": [700000], \"clock_sm\": [1980], \"clock_gfx\": [1980],"
    "     \"clock_mem\": [2619], \"throttle\": [4],"
    "     \"procs\": [[[4242, 1073741824]]],"
    "     \"gpm\": {\"sm_util\": [35.5], \"sm_occupancy\": [20.25], \"tensor\": [12.5],"
    "             \"dram_bw\": [70.0]}}}]}";

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void nvidia_backend_samples_devices(void **state) {
    (void)state;
    write_script(h100);
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "h100"));
    o.system_sample_rate_ms = 10;
    o.continuous_system_sampling = 1;
    assert_int_equal(gpufl_init(&o), 0);
    sleep_ms(1150); /* past one second: GPM and processes come once a second */
    gpufl_shutdown();

    tu_lines_t D = tu_read(tu_session_dir(), "device.log");
    json_t *caps = tu_first(&D, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "backend")), "Nvidia");
    json_t *nvml = json_object_get(json_object_get(caps, "features"), "nvml");
    assert_true(json_is_true(json_object_get(nvml, "on")));
    json_t *info = tu_first(&D, "gpu_info");
    assert_non_null(info);
    assert_string_equal(json_string_value(json_object_get(info, "name")), "NVIDIA H100 80GB HBM3");
    assert_string_equal(json_string_value(json_object_get(info, "vendor")), "nvidia");
    assert_string_equal(json_string_value(json_object_get(info, "compute_capability")), "9.0");
    assert_int_equal(json_integer_value(json_object_get(info, "sm_count")), 132);
    size_t n, m;
    int64_t *util = tu_column(&D, "gpu_sample", "gpu_util_pct", &n);
    int64_t *power = tu_column(&D, "gpu_sample", "power_mw", &m);
    int64_t *throttle = tu_column(&D, "gpu_sample", "throttle_reasons", &m);
    assert_true(n >= 60); /* 1.15 s at 10 ms, the first reading a baseline */
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(util[i], 100);
        assert_int_equal(power[i], 650000);
        assert_int_equal(throttle[i], 4); /* sw_power_cap */
    }
    /* GPM, the costly part, once a second: known in one or two samples (the
     * one a second after the baseline, maybe one near shutdown), null in the
     * rest; never a stale value repeated. */
    int gpm_known = 0, gpm_null = 0;
    for (size_t i = 0; i < D.n; i++) {
        if (strcmp(tu_type(D.v[i]), "gpu_sample") != 0) continue;
        json_t *col = json_object_get(D.v[i], "sm_active_pct");
        for (size_t k = 0; k < json_array_size(col); k++) {
            json_t *v = json_array_get(col, k);
            if (json_is_null(v)) {
                gpm_null++;
                continue;
            }
            assert_true(json_real_value(v) > 35.4 && json_real_value(v) < 35.6);
            gpm_known++;
        }
    }
    assert_true(gpm_known >= 1 && gpm_known <= 2);
    assert_int_equal(gpm_known + gpm_null, n);
    json_t *procs = tu_first(&D, "gpu_processes");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(procs, "pid"), 0)), 4242);
    assert_int_equal(tu_count(&D, "gpu_processes"), 1); /* written again only on change */
    json_t *cost = tu_last(&D, "source_cost");
    assert_string_equal(json_string_value(json_object_get(cost, "source")), "nvml");
    assert_true(json_integer_value(json_object_get(cost, "samples")) >= (json_int_t)n);
    json_t *legend = json_object_get(tu_first(&D, "gpu_legend"), "throttle_reasons");
    assert_string_equal(json_string_value(json_object_get(legend, "2")), "sw_power_cap");
    free(util), free(power), free(throttle);
    tu_free(&D);
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
}

/* One GPU whose energy read takes 600 ms, well past the pass budget (100 ms
 * at a 20 ms interval): that pass leaves its row out and a gpu_slow event
 * says so, while the other GPU's rows keep coming - no gap in them near the
 * 600 ms the slow read takes. Last in the suite: at shutdown the slow GPU's
 * worker may still be inside NVML, which then stays open. */
static void slow_gpu_does_not_stall_the_others(void **state) {
    (void)state;
    write_script("{\"gpus\": [{\"uuid\": \"GPU-fast\", \"samples\": {\"util_gpu\": [7]}},"
                 " {\"uuid\": \"GPU-slow\", \"energy_delay_us\": 600000,"
                 "  \"samples\": {\"energy_mj\": [1000]}}]}");
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "slow_gpu"));
    o.system_sample_rate_ms = 20;
    o.continuous_system_sampling = 1;
    assert_int_equal(gpufl_init(&o), 0);
    sleep_ms(1200);
    gpufl_shutdown();

    tu_lines_t D = tu_read(tu_session_dir(), "device.log");
    size_t n;
    int64_t *device = tu_column(&D, "gpu_sample", "device", &n);
    int64_t *ts = tu_column(&D, "gpu_sample", "ts_ns", &n);
    int rows[2] = {0, 0};
    int64_t last = -1, widest = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(device[i] == 0 || device[i] == 1);
        rows[device[i]]++;
        if (device[i] != 0) continue;
        if (last >= 0 && ts[i] - last > widest) widest = ts[i] - last;
        last = ts[i];
    }
    assert_true(rows[0] >= 6);
    assert_true(rows[1] < rows[0]); /* the slow GPU's passes are left out */
    /* The budget (100 ms) and slack for a loaded machine; the slow read
     * would have held the fast GPU's rows for 600 ms. */
    assert_true(widest < 400000000LL);
    int slow = 0;
    for (size_t i = 0; i < D.n; i++)
        if (strcmp(tu_type(D.v[i]), "event") == 0 &&
            strcmp(json_string_value(json_object_get(D.v[i], "code")), "gpu_slow") == 0) {
            assert_non_null(
                strstr(json_string_value(json_object_get(D.v[i], "message")), "GPU 1 (GPU-slow)"));
            slow++;
        }
    assert_true(slow >= 1 && slow <= 3); /* once per stall, not once per pass */
    /* The passes it missed are counted in the nvml source_cost: one per
     * pass left out, so at least the rows the fast GPU has beyond it. */
    json_t *cost = NULL;
    for (size_t i = 0; i < D.n && !cost; i++)
        if (strcmp(tu_type(D.v[i]), "source_cost") == 0 &&
            strcmp(json_string_value(json_object_get(D.v[i], "source")), "nvml") == 0)
            cost = D.v[i];
    assert_non_null(cost);
    assert_true(json_integer_value(json_object_get(cost, "missed")) >= rows[0] - rows[1] - 1);
    assert_true(json_integer_value(json_object_get(cost, "missed")) > 0);
    free(device), free(ts);
    tu_free(&D);
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
}

static void driver_that_fails_to_init_is_recorded(void **state) {
    (void)state;
    write_script("{\"init_error\": 9, \"gpus\": []}"); /* 9: driver not loaded */
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "init_error"));
    assert_int_equal(gpufl_init(&o), 0); /* a missing driver is a normal state */
    gpufl_shutdown();
    tu_lines_t D = tu_read(tu_session_dir(), "device.log");
    json_t *caps = tu_first(&D, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "backend")), "None");
    json_t *nvml = json_object_get(json_object_get(caps, "features"), "nvml");
    assert_true(json_is_false(json_object_get(nvml, "on")));
    assert_non_null(strstr(json_string_value(json_object_get(nvml, "why")), "nvmlInit"));
    assert_int_equal(tu_count(&D, "gpu_info"), 0);
    tu_free(&D);
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
}

static void backend_none_loads_no_vendor_library(void **state) {
    (void)state;
    write_script(h100);
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "backend_none"));
    o.backend = GPUFL_BACKEND_NONE;
    o.profiling_engine = GPUFL_ENGINE_DEEP; /* each engine says it needs CUPTI, which is off */
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);
    assert_string_equal(cap.last, "profiling engine Deep: CUPTI needs the NVIDIA backend; "
                                  "running Monitor");
    setenv("GPUFL_DISABLED", "1", 1);
    o.backend = GPUFL_BACKEND_AUTO;
    assert_int_equal(gpufl_init(&o), GPUFL_EDISABLED);
    unsetenv("GPUFL_DISABLED");
    /* This process never loaded the library in these sessions (the first
     * test's load stays, so this runs in a fresh process: see main). */
    tu_lines_t D = tu_read(tu_session_dir(), "device.log");
    json_t *caps = tu_first(&D, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "backend")), "None");
    json_t *nvml = json_object_get(json_object_get(caps, "features"), "nvml");
    assert_string_equal(json_string_value(json_object_get(nvml, "why")),
                        "backend None was asked for");
    const char *engines[] = {"cupti_trace", "pc_sampling", "sass_metrics"};
    for (int i = 0; i < 3; i++) {
        json_t *f = json_object_get(json_object_get(caps, "features"), engines[i]);
        assert_string_equal(json_string_value(json_object_get(f, "why")),
                            "CUPTI needs the NVIDIA backend");
    }
    tu_free(&D);
    assert_null(dlopen(GPUFL_FAKE_NVML_PATH, RTLD_NOW | RTLD_NOLOAD));
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
}

#ifdef GPUFL_FAKE_CUPTI_PATH
/* The Trace engine end to end: CUPTI records (from the fake, in the real
 * CUDA 13 layouts) become kernel and copy rows on the session clock. */
static void trace_engine_writes_gpu_activity(void **state) {
    (void)state;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long t0 = (long long)now.tv_sec * 1000000000LL + now.tv_nsec + 1000000000; /* after init */
    char script[2048], path[1200];
    snprintf(path, sizeof path, "%s/../test-scratch/gpu_session_cupti.json", GPUFL_TEST_LOG_ROOT);
    snprintf(script, sizeof script,
             "{\"records\": ["
             "{\"kind\": 10, \"start\": %lld, \"end\": %lld, \"name\": \"_Z4gemmPf\", "
             " \"correlationId\": 7, \"streamId\": 13, \"gridX\": 132, \"gridY\": 1, "
             " \"gridZ\": 1, \"blockX\": 256, \"blockY\": 1, \"blockZ\": 1, "
             " \"registersPerThread\": 96, \"staticSharedMemory\": 1024, "
             " \"dynamicSharedMemory\": 49152},"
             "{\"kind\": 1, \"start\": %lld, \"end\": %lld, \"bytes\": 4194304, "
             " \"copyKind\": 1, \"srcKind\": 2, \"dstKind\": 3, \"correlationId\": 8},"
             "{\"kind\": 38, \"start\": %lld, \"end\": %lld, \"type\": 3, "
             " \"streamId\": 13, \"cudaEventId\": 4294967295, \"correlationId\": 9}]}",
             t0, t0 + 2500, t0 + 3000, t0 + 9000, t0 + 1000, t0 + 9500);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    setenv("GPUFL_FAKE_CUPTI", path, 1);
    setenv("GPUFL_CUPTI_LIBRARY", GPUFL_FAKE_CUPTI_PATH, 1);
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "trace"));
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.backend = GPUFL_BACKEND_NVIDIA;
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap); /* no NVML here: a warning, expected */
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);
    unsetenv("GPUFL_FAKE_CUPTI");
    unsetenv("GPUFL_CUPTI_LIBRARY");

    tu_lines_t D = tu_read(tu_session_dir(), "device.log");
    json_t *caps = tu_first(&D, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Trace");
    size_t n;
    int64_t *start = tu_column(&D, "kernel", "start_ns", &n);
    int64_t *end = tu_column(&D, "kernel", "end_ns", &n);
    int64_t *name = tu_column(&D, "kernel", "name", &n);
    int64_t *grid = tu_column(&D, "kernel", "grid_x", &n);
    int64_t *regs = tu_column(&D, "kernel", "registers", &n);
    int64_t *dyn = tu_column(&D, "kernel", "dynamic_smem_bytes", &n);
    assert_int_equal(n, 1);
    assert_int_equal(end[0] - start[0], 2500);
    assert_true(start[0] > 0); /* on the session clock, after its epoch */
    assert_string_equal(tu_dict(&D, name[0]), "_Z4gemmPf");
    assert_int_equal(grid[0], 132);
    assert_int_equal(regs[0], 96);
    assert_int_equal(dyn[0], 49152);
    int64_t *bytes = tu_column(&D, "copy", "bytes", &n);
    int64_t *kind = tu_column(&D, "copy", "copy_kind", &n);
    assert_int_equal(n, 1);
    assert_int_equal(bytes[0], 4194304);
    assert_int_equal(kind[0], 1);
    /* Synchronization comes from gpufl's callbacks at the sync calls (see
     * test_trace_session.c), never from CUPTI's synchronization kind, which
     * costs on every launch: the scripted sync record is not asked for. */
    assert_null(tu_first(&D, "sync"));
    free(start), free(end), free(name), free(grid), free(regs), free(dyn), free(bytes), free(kind);
    tu_free(&D);
}
#endif

/* The probe (gpufl info) and a session's capability record, for the same
 * machine: the same NVML state and reason, the same devices, and a Trace
 * engine that the probe offers exactly when a Trace session gets it. */
static void check_probe_agrees(const char *name) {
    gpufl_probe_t *p = NULL;
    assert_int_equal(gpufl_probe_create(&p), 0);
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, name));
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap); /* a downgrade from Trace warns */
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);

    tu_lines_t D = tu_read(tu_session_dir(), "device.log");
    json_t *features = json_object_get(tu_first(&D, "capabilities"), "features");
    json_t *nvml = json_object_get(features, "nvml");
    const gpufl_capability_t *pn = gpufl_probe_find(p, "nvml");
    assert_non_null(pn);
    assert_int_equal(pn->on, json_is_true(json_object_get(nvml, "on")));
    if (!pn->on) assert_string_equal(pn->reason, json_string_value(json_object_get(nvml, "why")));
    size_t devices = 0;
    while (gpufl_probe_device(p, devices)) devices++;
    assert_int_equal(devices, tu_count(&D, "gpu_info"));
    if (devices)
        assert_string_equal(gpufl_probe_device(p, 0)->name,
                            json_string_value(json_object_get(tu_first(&D, "gpu_info"), "name")));
    json_t *trace = json_object_get(features, "cupti_trace");
    const gpufl_capability_t *pt = gpufl_probe_find(p, "Trace");
    assert_non_null(pt);
    assert_int_equal(pt->on, json_is_true(json_object_get(trace, "on")));
    assert_true(gpufl_probe_find(p, "Monitor")->on);
    tu_free(&D);
    gpufl_probe_destroy(p);
}

static void probe_agrees_with_the_capability_record(void **state) {
    (void)state;
    char missing[1200];
    snprintf(missing, sizeof missing, "%s/no/libnvidia-ml.so.1", GPUFL_TEST_LOG_ROOT);
    setenv("GPUFL_NVML_LIBRARY", missing, 1); /* no driver */
    /* Nor the toolkit's real CUPTI, which a build machine may have: its thread-local storage,
     * loaded with dlopen, trips LeakSanitizer's scan of the threads at exit. */
    char no_cupti[1200];
    snprintf(no_cupti, sizeof no_cupti, "%s/no/libcupti.so", GPUFL_TEST_LOG_ROOT);
    setenv("GPUFL_CUPTI_LIBRARY", no_cupti, 1);
    check_probe_agrees("probe_no_driver");
    write_script(h100);
    check_probe_agrees("probe_h100");
    write_script("{\"init_error\": 9, \"gpus\": []}"); /* a driver that fails to start */
    check_probe_agrees("probe_init_error");
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
    unsetenv("GPUFL_CUPTI_LIBRARY");

    gpufl_probe_t *p = NULL;
    assert_int_equal(gpufl_probe_create(NULL), GPUFL_EINVAL);
    assert_int_equal(gpufl_probe_create(&p), 0);
    assert_null(gpufl_probe_capability(p, 1000));
    assert_null(gpufl_probe_find(p, "no such feature"));
    assert_null(gpufl_probe_device(p, 1000));
    gpufl_probe_destroy(p);
    gpufl_probe_destroy(NULL);
}

int main(void) {
    /* Runs first: checks that nothing loaded the vendor library yet. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backend_none_loads_no_vendor_library),
        cmocka_unit_test(nvidia_backend_samples_devices),
        cmocka_unit_test(driver_that_fails_to_init_is_recorded),
        cmocka_unit_test(probe_agrees_with_the_capability_record),
#ifdef GPUFL_FAKE_CUPTI_PATH
        cmocka_unit_test(trace_engine_writes_gpu_activity),
#endif
        cmocka_unit_test(slow_gpu_does_not_stall_the_others), /* last: may leave NVML open */
    };
    return cmocka_run_group_tests_name("gpu_session", tests, NULL, NULL);
}
