// SPDX-License-Identifier: Apache-2.0
/*
 * test_readings.c - the public latest-value readings (gpufl_readings_*):
 * identities from gpu_info (a whole GPU and a MIG device), the legend, the
 * capability record with and without a driver, rows by column name, a
 * reader thread that copies rows while the collector stores them (every
 * copy consistent: used + free = total), and destroy during and after a
 * session, and each device's process list with who each process is (real
 * child processes, so attribution reads the real /proc) and the
 * process_info records behind it. Driven by the fake libnvidia-ml.
 */
#include "test_util.h"

#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* A child running `sleep 60` (comm "sleep"), killed by the caller. */
static pid_t spawn_sleep(void) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execlp("sleep", "sleep", "60", (char *)NULL);
        _exit(127);
    }
    /* comm is the parent's until exec: wait for it to change. */
    char path[64], comm[64] = "";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    for (int i = 0; i < 400 && strcmp(comm, "sleep\n") != 0; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof comm, f)) comm[0] = '\0';
            fclose(f);
        }
        sleep_ms(5);
    }
    assert_string_equal(comm, "sleep\n");
    return pid;
}

/* A pid that no process has: a child that exited and was reaped. */
static pid_t gone_pid(void) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    return pid;
}

static size_t count_process_info(const tu_lines_t *L, pid_t pid) {
    size_t n = 0;
    for (size_t i = 0; i < L->n; i++)
        n += strcmp(tu_type(L->v[i]), "process_info") == 0 &&
             json_integer_value(json_object_get(L->v[i], "pid")) == pid;
    return n;
}

static void process_lists_with_attribution(void **state) {
    (void)state;
    pid_t live = spawn_sleep(), gone = gone_pid();
    char json[1024];
    /* The list changes (the gone pid leaves, memory grows) on the third
     * read: a second gpu_processes record naming the live process again. */
    snprintf(json, sizeof json,
             "{\"gpus\": [{\"name\": \"G\", \"uuid\": \"GPU-procs\", \"pci_bus_id\": \"0:1:0.0\","
             " \"memory_total\": 100000000, \"samples\": {\"mem_used\": [1], \"mem_free\": [9],"
             " \"procs\": [[[%d, 1048576], [%d, 2097152]], [[%d, 1048576], [%d, 2097152]],"
             " [[%d, 3145728]]], \"proc_util\": [[], [], [[%d, 20, 4], [%d, 30, 6]]]}},"
             " {\"name\": \"H\", \"uuid\": \"GPU-none\", \"pci_bus_id\": \"0:2:0.0\","
             " \"memory_total\": 10, \"samples\": {\"mem_used\": [1], \"mem_free\": [9]}}]}",
             (int)live, (int)gone, (int)live, (int)gone, (int)live, (int)live, (int)live);
    write_script(json);
    gpufl_readings_t *r = start("processes", 0);
    gpufl_readings_process_t p[4];
    p[0].size = sizeof p[0];
    int n = GPUFL_ENOTFOUND;
    /* Process lists are read once a second: wait for the third. */
    for (int i = 0; i < 600; i++) {
        n = gpufl_readings_processes(p, 4, r, 0);
        if (n == 1 && p[0].used_bytes == 3145728) break;
        sleep_ms(10);
    }
    assert_int_equal(n, 1); /* the gone pid is not listed */
    assert_int_equal(p[0].pid, live);
    assert_true(p[0].used_bytes == 3145728);
    assert_string_equal(p[0].comm, "sleep");
    assert_true(p[0].uid == (int64_t)getuid());
    struct passwd *pw = getpwuid(getuid());
    assert_non_null(pw);
    assert_string_equal(p[0].user, pw->pw_name);
    assert_true(p[0].start_ticks > 0);
    assert_int_equal(p[0].size, sizeof p[0]);
    assert_int_equal(p[0].sm_util_pct, 25); /* the mean of its two samples */
    assert_int_equal(p[0].mem_util_pct, 5);
    /* A caller built against the first release (without utilization) gets
     * what it knows, and nothing is written past its elements. */
    {
        size_t old = offsetof(gpufl_readings_process_t, sm_util_pct);
        _Alignas(gpufl_readings_process_t) unsigned char raw[2 * sizeof(gpufl_readings_process_t)];
        memset(raw, 0xAB, sizeof raw);
        ((gpufl_readings_process_t *)(void *)raw)->size = old;
        assert_int_equal(gpufl_readings_processes((gpufl_readings_process_t *)(void *)raw, 1, r, 0),
                         1);
        assert_int_equal(((gpufl_readings_process_t *)(void *)raw)->pid, live);
        for (size_t b = old; b < sizeof raw; b++) assert_int_equal(raw[b], 0xAB);
    }
    /* A device NVML gives no process list for has none; bad arguments. */
    assert_int_equal(gpufl_readings_processes(p, 4, r, 1), GPUFL_ENOTFOUND);
    assert_int_equal(gpufl_readings_processes(p, 4, r, 9), GPUFL_ENOTFOUND);
    assert_int_equal(gpufl_readings_processes(p, 0, r, 0), GPUFL_EINVAL);
    assert_int_equal(gpufl_readings_processes(NULL, 4, r, 0), GPUFL_EINVAL);
    p[0].size = 8;
    assert_int_equal(gpufl_readings_processes(p, 4, r, 0), GPUFL_EINVAL);
    gpufl_shutdown();
    kill(live, SIGKILL);
    waitpid(live, NULL, 0);

    /* The log: one process_info for the live process, written before the
     * first list that names it and not again for the second; none for the
     * gone pid, which the lists still name. */
    tu_lines_t D = tu_read(tu_session_dir(), "device.log");
    assert_true(tu_count(&D, "gpu_processes") >= 2);
    assert_int_equal(count_process_info(&D, live), 1);
    assert_int_equal(count_process_info(&D, gone), 0);
    json_t *info = NULL;
    for (size_t i = 0; i < D.n && !info; i++)
        if (strcmp(tu_type(D.v[i]), "process_info") == 0 &&
            json_integer_value(json_object_get(D.v[i], "pid")) == live)
            info = D.v[i];
    assert_string_equal(json_string_value(json_object_get(info, "comm")), "sleep");
    assert_string_equal(json_string_value(json_object_get(info, "user")), pw->pw_name);
    assert_int_equal(json_integer_value(json_object_get(info, "device")), 0);
    assert_true(json_integer_value(json_object_get(info, "start_ticks")) > 0);
    json_t *first = tu_first(&D, "gpu_processes");
    for (size_t i = 0; i < D.n; i++) {
        if (D.v[i] == info) break;
        assert_true(D.v[i] != first); /* described before it is listed */
    }
    tu_free(&D);
    gpufl_readings_destroy(r);
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
}

static json_t *nth_xid(const tu_lines_t *L, size_t k) {
    for (size_t i = 0; i < L->n; i++)
        if (strcmp(tu_type(L->v[i]), "xid") == 0 && k-- == 0) return L->v[i];
    return NULL;
}

static int64_t member_int(json_t *o, const char *key) {
    return json_integer_value(json_object_get(o, key));
}

/* XID events: each scripted event is one xid record and counted once per
 * code; a GPU that refuses event registration gives none, and no error. */
static void xid_events_counted_per_code(void **state) {
    (void)state;
    write_script("{\"gpus\": [{\"name\": \"G\", \"uuid\": \"GPU-xid\", \"pci_bus_id\": \"0:1:0.0\","
                 " \"memory_total\": 10, \"samples\": {\"mem_used\": [1], \"mem_free\": [9]},"
                 " \"xids\": [[1, 79], [1, 79], [2, 48, 3, 1]]},"
                 " {\"name\": \"H\", \"uuid\": \"GPU-noevents\", \"pci_bus_id\": \"0:2:0.0\","
                 " \"memory_total\": 10, \"samples\": {\"mem_used\": [1], \"mem_free\": [9]},"
                 " \"not_supported\": [\"nvmlDeviceRegisterEvents\"], \"xids\": [[0, 13]]}]}");
    gpufl_readings_t *r = start("xids", 0);
    gpufl_readings_xid_t x[4];
    x[0].size = sizeof x[0];
    int n = 0;
    for (int i = 0; i < 400; i++) {
        n = gpufl_readings_xids(x, 4, r, 0);
        if (n == 2 && x[1].count == 1) break;
        sleep_ms(10);
    }
    assert_int_equal(n, 2);
    assert_true(x[0].code == 79 && x[0].count == 2);
    assert_true(x[1].code == 48 && x[1].count == 1);
    assert_true(x[1].last_ts_ns >= x[0].last_ts_ns && x[0].last_ts_ns > 0);
    assert_int_equal(x[0].size, sizeof x[0]);
    sleep_ms(50); /* more passes deliver nothing again */
    assert_int_equal(gpufl_readings_xids(x, 4, r, 0), 2);
    assert_true(x[0].count == 2 && x[1].count == 1);
    assert_int_equal(gpufl_readings_xids(x, 4, r, 1), 0);
    assert_int_equal(gpufl_readings_xids(x, 4, r, 9), 0);
    assert_int_equal(gpufl_readings_xids(x, 0, r, 0), GPUFL_EINVAL);
    assert_int_equal(gpufl_readings_xids(NULL, 4, r, 0), GPUFL_EINVAL);
    x[0].size = 8;
    assert_int_equal(gpufl_readings_xids(x, 4, r, 0), GPUFL_EINVAL);
    gpufl_shutdown();

    tu_lines_t D = tu_read(tu_session_dir(), "device.log");
    assert_int_equal(tu_count(&D, "xid"), 3);
    for (size_t k = 0; k < 3; k++) {
        json_t *e = nth_xid(&D, k);
        assert_int_equal(member_int(e, "device"), 0);
        assert_int_equal(member_int(e, "code"), k < 2 ? 79 : 48);
        assert_true(member_int(e, "ts_ns") > 0);
        /* The instance ids only where NVML gave them. */
        assert_true(k < 2 ? json_is_null(json_object_get(e, "gpu_instance_id"))
                          : member_int(e, "gpu_instance_id") == 3);
        assert_true(k < 2 ? json_is_null(json_object_get(e, "compute_instance_id"))
                          : member_int(e, "compute_instance_id") == 1);
    }
    for (size_t i = 0; i < D.n; i++)
        assert_true(strcmp(tu_type(D.v[i]), "event") != 0 ||
                    strcmp(json_string_value(json_object_get(D.v[i], "level")), "error") != 0);
    tu_free(&D);
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
        cmocka_unit_test(process_lists_with_attribution),
        cmocka_unit_test(xid_events_counted_per_code),
    };
    return cmocka_run_group_tests_name("readings", tests, NULL, NULL);
}
