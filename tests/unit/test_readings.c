// SPDX-License-Identifier: Apache-2.0
/*
 * test_readings.c - the public latest-value readings (gpufl_readings_*):
 * identities from gpu_info (a whole GPU and a MIG device), the legend, the
 * capability record with and without a driver, rows by column name, a
 * reader thread that copies rows while the collector stores them (every
 * copy consistent: used + free = total), and destroy during and after a
 * session. Driven by the fake libnvidia-ml.
 */
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define SUITE "readings"

static void write_script(const char *json) { tu_fake_nvml(SUITE, json); }

/* Memory used and free change every sample, their sum never does. */
static const char *two_gpus =
    "{\"driver_version\": \"580.95.05\", \"nvml_version\": \"13.580.95.05\","
    " \"gpus\": [{\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-aaaa\","
    "   \"pci_bus_id\": \"00000000:1B:00.0\", \"cc\": [9, 0], \"memory_total\": 1000,"
    "   \"mig_mode\": 0,"
    "   \"samples\": {\"util_gpu\": [10, 20, 30, 40], \"util_mem\": [5], \"mem_used\": [100, 200, "
    "300, 400],"
    "     \"mem_free\": [900, 800, 700, 600], \"power_mw\": [650000], \"throttle\": [4]}},"
    "  {\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-bbbb\","
    "   \"pci_bus_id\": \"00000000:2B:00.0\", \"cc\": [9, 0], \"memory_total\": 85520809984,"
    "   \"mig_mode\": 1, \"max_mig\": 7,"
    "   \"mig\": [{\"slot\": 0, \"gi\": 3, \"name\": \"NVIDIA H100 80GB HBM3 MIG 1g.10gb\","
    "     \"uuid\": \"MIG-cccc\", \"memory_total\": 10000,"
    "     \"samples\": {\"mem_used\": [1000, 2000], \"mem_free\": [9000, 8000]}}]}]}";

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A session sampling continuously, with readings attached. */
static gpufl_readings_t *start(const char *name, int flush_interval_ms) {
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, name));
    if (flush_interval_ms) o.flush_interval_ms = flush_interval_ms;
    o.system_sample_rate_ms = 10;
    o.continuous_system_sampling = 1;
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_readings_t *r;
    assert_int_equal(gpufl_readings_create(&r), 0);
    return r;
}

static void no_session_no_readings(void **state) {
    (void)state;
    gpufl_readings_t *r = (gpufl_readings_t *)1;
    assert_int_equal(gpufl_readings_create(&r), GPUFL_ENOTINIT);
    assert_null(r);
    assert_int_equal(gpufl_readings_create(NULL), GPUFL_EINVAL);
    gpufl_readings_destroy(NULL);
}

typedef struct reader {
    gpufl_readings_t *r;
    int device;
    atomic_int stop;
    int reads, inconsistent;
} reader_t;

/* Copies the device's row as fast as it can: each copy must be one row. */
static void *read_loop(void *arg) {
    reader_t *t = arg;
    while (!atomic_load(&t->stop)) {
        gpufl_readings_row_t row = {.size = sizeof row};
        double used, free_bytes, total;
        if (gpufl_readings_device_row(&row, t->r, t->device) != 0) continue;
        t->reads++;
        if (gpufl_readings_value(&used, &row, "mem_used_bytes") ||
            gpufl_readings_value(&free_bytes, &row, "mem_free_bytes") ||
            gpufl_readings_value(&total, &row, "mem_total_bytes") || used + free_bytes != total)
            t->inconsistent++;
    }
    return NULL;
}

static void devices_rows_and_a_concurrent_reader(void **state) {
    (void)state;
    write_script(two_gpus);
    gpufl_readings_t *r = start("two_gpus", 10); /* many stores while the reader copies */

    /* Identities came from the records replayed at attach: the GPU in MIG
     * mode is a device, and so is its MIG instance. */
    assert_int_equal(gpufl_readings_device_count(r), 3);
    gpufl_readings_device_t d = {.size = sizeof d};
    assert_int_equal(gpufl_readings_device_info(&d, r, 0), 0);
    assert_int_equal(d.index, 0);
    assert_int_equal(d.mig_index, -1);
    assert_string_equal(d.uuid, "GPU-aaaa");
    assert_string_equal(d.pci_bus_id, "00000000:1B:00.0");
    assert_string_equal(d.mig_profile, "");
    assert_int_equal(gpufl_readings_device_info(&d, r, 1), 0);
    assert_string_equal(d.uuid, "GPU-bbbb");
    assert_int_equal(gpufl_readings_device_info(&d, r, 2), 0);
    assert_int_equal(d.index, 2);
    assert_int_equal(d.mig_index, 0);
    assert_string_equal(d.uuid, "MIG-cccc");
    assert_string_equal(d.mig_profile, "1g.10gb");
    assert_int_equal(d.lost, 0);
    assert_int_equal(gpufl_readings_device_info(&d, r, 3), GPUFL_ENOTFOUND);
    d.size = 8;
    assert_int_equal(gpufl_readings_device_info(&d, r, 0), GPUFL_EINVAL);
    char name[64], why[128];
    assert_int_equal(gpufl_readings_throttle_reason(name, sizeof name, r, 2), 12);
    assert_string_equal(name, "sw_power_cap");
    assert_int_equal(gpufl_readings_throttle_reason(name, 4, r, 2), GPUFL_EINVAL);
    assert_int_equal(gpufl_readings_throttle_reason(name, sizeof name, r, 64), GPUFL_EINVAL);
    assert_int_equal(gpufl_readings_gpu_available(why, sizeof why, r), 1);
    assert_string_equal(why, "");

    reader_t t = {.r = r, .device = 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, read_loop, &t), 0);
    sleep_ms(300);
    atomic_store(&t.stop, 1);
    pthread_join(th, NULL);
    assert_true(t.reads > 10);
    assert_int_equal(t.inconsistent, 0);

    gpufl_readings_row_t row = {.size = sizeof row}, host = {.size = sizeof host};
    double v;
    assert_int_equal(gpufl_readings_device_row(&row, r, 0), 0);
    assert_true(row.updates >= 4); /* one per batch the collector handed over */
    assert_int_equal(gpufl_readings_value(&v, &row, "gpu_util_pct"), 0);
    assert_true(v == 40); /* the script's last element repeats */
    assert_int_equal(gpufl_readings_value(&v, &row, "power_mw"), 0);
    assert_true(v == 650000);
    assert_int_equal(gpufl_readings_value(&v, &row, "fan_pct"), GPUFL_ENOTFOUND); /* null */
    assert_int_equal(gpufl_readings_value(&v, &row, "no_such_column"), GPUFL_ENOTFOUND);
    assert_int_equal(gpufl_readings_value(&v, &row, "device"), GPUFL_ENOTFOUND); /* the key */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    assert_true(row.ts_ns <= now_ns && row.ts_ns > now_ns - (int64_t)2000000000);
    assert_int_equal(gpufl_readings_device_row(&row, r, 2), 0);
    assert_int_equal(gpufl_readings_value(&v, &row, "mem_total_bytes"), 0);
    assert_true(v == 10000);
    assert_int_equal(gpufl_readings_device_row(&row, r, 7), GPUFL_ENOTFOUND);
    assert_int_equal(gpufl_readings_host(&host, r), 0);
    assert_true(host.updates >= 1);
    assert_int_equal(gpufl_readings_value(&v, &host, "mem_total_bytes"), 0);
    assert_true(v > 0);
    host.size = 4;
    assert_int_equal(gpufl_readings_host(&host, r), GPUFL_EINVAL);

    /* Destroyed while the session runs: freed when it ends (ASan checks). */
    gpufl_readings_destroy(r);
    gpufl_shutdown();
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
}

static void no_driver_says_why(void **state) {
    (void)state;
    write_script("{\"init_error\": 9, \"gpus\": []}");
    gpufl_readings_t *r = start("no_driver", 0);
    char why[256];
    assert_int_equal(gpufl_readings_gpu_available(why, sizeof why, r), 0);
    assert_non_null(strstr(why, "nvml: "));
    assert_non_null(strstr(why, "nvmlInit"));
    assert_int_equal(gpufl_readings_device_count(r), 0);
    gpufl_readings_row_t host = {.size = sizeof host};
    for (int i = 0; i < 200 && gpufl_readings_host(&host, r) != 0; i++) sleep_ms(10);
    assert_int_equal(gpufl_readings_host(&host, r), 0);
    gpufl_shutdown();
    /* After the session: still readable, then freed at once. */
    assert_int_equal(gpufl_readings_host(&host, r), 0);
    gpufl_readings_destroy(r);
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
}

static void lost_gpu_is_marked(void **state) {
    (void)state;
    write_script(
        "{\"gpus\": [{\"name\": \"G\", \"uuid\": \"GPU-lost\", \"pci_bus_id\": \"0:1:0.0\","
        " \"memory_total\": 10, \"lost_at_sample\": 2,"
        " \"samples\": {\"mem_used\": [1], \"mem_free\": [9]}}]}");
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap); /* the warning the loss gives */
    gpufl_readings_t *r = start("lost", 0);
    gpufl_readings_device_t d = {.size = sizeof d};
    for (int i = 0; i < 200 && !d.lost; i++) {
        sleep_ms(5);
        assert_int_equal(gpufl_readings_device_info(&d, r, 0), 0);
    }
    assert_int_equal(d.lost, 1);
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);
    gpufl_readings_destroy(r);
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_session_no_readings),
        cmocka_unit_test(devices_rows_and_a_concurrent_reader),
        cmocka_unit_test(no_driver_says_why),
        cmocka_unit_test(lost_gpu_is_marked),
    };
    return cmocka_run_group_tests_name("readings", tests, NULL, NULL);
}
