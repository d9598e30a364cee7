// SPDX-License-Identifier: Apache-2.0
/*
 * test_flight_recorder.c - flight_recorder_s: a session that writes no file,
 * keeps the last seconds of every channel in memory, and writes them as a
 * session directory of their own on gpufl_snapshot() or its signal; the
 * report reads the snapshot; the window and the memory cap let go of the
 * oldest rows, counted. The triggers: an XID burst and a lost GPU (the
 * fake NVML), an idle condition, the condition text checked at init. (A
 * fatal signal's snapshot: tests/integration/flight_crash.c.)
 */
#include "test_util.h"

#include <gpufl/gpufl_analysis.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <time.h>

#define SUITE "flight_recorder"

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Entries of dir, but . and .. (-1: no such directory). */
static int dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static gpufl_options_t flight_options(const char *log_path, int seconds, size_t cap_bytes) {
    gpufl_options_t o = tu_options(log_path);
    o.flight_recorder_s = seconds;
    if (cap_bytes) o.flight_recorder_bytes = cap_bytes;
    o.continuous_system_sampling = 1;
    o.system_sample_rate_ms = 20;
    return o;
}

static void scopes(const char *prefix, int from, int to) {
    for (int i = from; i < to; i++) {
        char n[64];
        snprintf(n, sizeof n, "%s_%d", prefix, i);
        uint64_t outer = gpufl_scope_begin(n, NULL);
        gpufl_scope_end(gpufl_scope_begin("inner", NULL));
        gpufl_scope_end(outer);
    }
}

/* Names of the scopes a snapshot holds: how many start with prefix, and
 * whether name is among them. */
typedef struct names {
    size_t rows, with_prefix;
    int has_name;
} names_t;

static names_t scope_names(const char *dir, const char *prefix, const char *name) {
    gpufl_analysis_t *a;
    names_t r = {0};
    gpufl_column_t col = {.size = sizeof col};
    assert_int_equal(gpufl_analysis_open(&a, dir), 0);
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_SCOPES, &r.rows, NULL), 0);
    assert_int_equal(gpufl_analysis_column_find(a, GPUFL_TABLE_SCOPES, "name", &col), 0);
    const int64_t *ids = col.data;
    for (size_t i = 0; i < r.rows; i++) {
        const char *s = gpufl_analysis_string(a, ids[i]);
        assert_non_null(s); /* every name a kept row uses is defined */
        r.with_prefix += strncmp(s, prefix, strlen(prefix)) == 0;
        r.has_name |= strcmp(s, name) == 0;
    }
    gpufl_analysis_close(a);
    return r;
}

/* The device file's snapshot event message. */
static void snapshot_event(const char *dir, char *message, size_t size) {
    tu_lines_t L = tu_read(dir, "device.log");
    message[0] = '\0';
    for (size_t i = 0; i < L.n; i++) {
        json_t *code = json_object_get(L.v[i], "code");
        if (strcmp(tu_type(L.v[i]), "event") == 0 && code &&
            strcmp(json_string_value(code), "flight_recorder_snapshot") == 0)
            snprintf(message, size, "%s", json_string_value(json_object_get(L.v[i], "message")));
    }
    assert_string_equal(tu_type(L.v[L.n - 1]), "session_end");
    assert_int_equal(tu_count(&L, "options"), 1);
    assert_int_equal(tu_count(&L, "capabilities"), 1);
    tu_free(&L);
}

/* The device file's snapshot event (a new reference). */
static json_t *snapshot_json(const char *dir) {
    tu_lines_t L = tu_read(dir, "device.log");
    json_t *event = NULL;
    for (size_t i = 0; i < L.n; i++) {
        const char *code = json_string_value(json_object_get(L.v[i], "code"));
        if (code && strcmp(code, "flight_recorder_snapshot") == 0) event = json_incref(L.v[i]);
    }
    tu_free(&L);
    assert_non_null(event);
    return event;
}

static int64_t member(json_t *j, const char *key) {
    return (int64_t)json_integer_value(json_object_get(j, key));
}

/* The only snapshot under root, after waiting up to ms for one. */
static const char *only_snapshot(const char *root, int ms) {
    static char dir[4096];
    for (int i = 0; i < ms / 10 && dir_entries(root) < 1; i++) sleep_ms(10);
    assert_int_equal(dir_entries(root), 1);
    DIR *d = opendir(root);
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
    closedir(d);
    return dir;
}

/* No file while recording; a snapshot is a session of its own, with the
 * newest scopes, that the report reads; recording goes on after it. */
static void snapshot_is_a_readable_session(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "snapshot");
    char log_path[1100], dir[4096], dir2[4096], report[4200];
    snprintf(log_path, sizeof log_path, "%s/logs", root);
    assert_int_equal(gpufl_snapshot(dir, sizeof dir), GPUFL_ENOTINIT);
    gpufl_options_t o = flight_options(log_path, 60, 0);
    assert_int_equal(gpufl_init(&o), 0);
    scopes("step", 0, 500);
    sleep_ms(100);
    assert_int_equal(gpufl_flush(), 0);
    assert_int_equal(dir_entries(log_path), -1); /* nothing written, not even the directory */
    assert_int_equal(gpufl_session_dir(dir, sizeof dir), GPUFL_ENOTFOUND);

    assert_int_equal(gpufl_snapshot(dir, sizeof dir), 0);
    assert_int_equal(dir_entries(log_path), 1);
    assert_string_equal(tu_session_dir(), dir);
    names_t n = scope_names(dir, "step_", "step_499");
    assert_int_equal(n.with_prefix, 500);
    assert_true(n.has_name);
    char message[512];
    snapshot_event(dir, message, sizeof message);
    assert_non_null(strstr(message, "snapshot 1 of session"));
    assert_non_null(strstr(message, "rows kept"));
    json_t *event = snapshot_json(dir); /* what recording cost, for bytes per second */
    assert_string_equal(json_string_value(json_object_get(event, "reason")), "gpufl_snapshot");
    assert_true(member(event, "kept_bytes") > 500 * 2 * 8); /* 1000 scopes, a few bytes each */
    assert_true(member(event, "in_bytes") >= member(event, "kept_bytes"));
    assert_true(member(event, "span_ns") > 0); /* from the first line's arrival to the snapshot */
    assert_true(member(event, "span_ns") <= member(event, "ts_ns"));
    assert_true(json_is_true(json_object_get(event, "complete")));
    json_decref(event);
    tu_lines_t sys = tu_read(dir, "system.log");
    assert_true(tu_count(&sys, "host_sample") > 0 || sys.n > 2);
    assert_string_equal(tu_type(sys.v[sys.n - 1]), "session_end");
    tu_free(&sys);

    snprintf(report, sizeof report, "%s/report.txt", root);
    assert_int_equal(gpufl_report_session(dir, report), 0);
    FILE *f = fopen(report, "r");
    assert_non_null(f);
    char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "step_"));

    scopes("later", 0, 10); /* recording went on */
    assert_int_equal(gpufl_snapshot(dir2, sizeof dir2), 0);
    assert_string_not_equal(dir, dir2);
    n = scope_names(dir2, "later_", "later_9");
    assert_int_equal(n.with_prefix, 10);
    gpufl_shutdown();
    assert_int_equal(dir_entries(log_path), 2); /* shutdown writes nothing more */
}

/* Rows that reached the recorder more than flight_recorder_s ago are gone. */
static void window_keeps_the_last_seconds(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "window");
    char dir[4096];
    gpufl_options_t o = flight_options(root, 1, 0);
    assert_int_equal(gpufl_init(&o), 0);
    scopes("old", 0, 100);
    assert_int_equal(gpufl_flush(), 0);
    sleep_ms(1500);
    scopes("new", 0, 100);
    assert_int_equal(gpufl_snapshot(dir, sizeof dir), 0);
    gpufl_shutdown();
    assert_int_equal(scope_names(dir, "old_", "").with_prefix, 0);
    names_t n = scope_names(dir, "new_", "new_99");
    assert_int_equal(n.with_prefix, 100);
    assert_true(n.has_name);
    char message[512];
    snapshot_event(dir, message, sizeof message);
    assert_null(strstr(message, " 0 older than the window")); /* the old rows were counted */
}

/* Past the memory cap the oldest rows go first, and the snapshot says how many. */
static void cap_evicts_oldest_first(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "cap");
    char dir[4096];
    gpufl_options_t o = flight_options(root, 3600, 64 << 10);
    assert_int_equal(gpufl_init(&o), 0);
    for (int i = 0; i < 20000; i += 500) {
        scopes("s", i, i + 500);
        assert_int_equal(gpufl_flush(), 0);
    }
    assert_int_equal(gpufl_snapshot(dir, sizeof dir), 0);
    gpufl_shutdown();
    names_t n = scope_names(dir, "s_", "s_19999");
    assert_true(n.has_name);                              /* the newest is kept */
    assert_false(scope_names(dir, "s_", "s_0").has_name); /* the oldest went */
    assert_true(n.with_prefix > 10 && n.with_prefix < 20000);
    char message[512];
    snapshot_event(dir, message, sizeof message);
    assert_null(strstr(message, " 0 evicted by the memory cap"));
    assert_non_null(strstr(message, "evicted by the memory cap"));
}

/* SIGUSR2 takes a snapshot; the program's own handler is back after shutdown. */
static int program_handler_calls;
static void program_handler(int signo) {
    (void)signo;
    program_handler_calls++;
}

static void signal_takes_a_snapshot(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "signal");
    signal(SIGUSR2, program_handler);
    gpufl_options_t o = flight_options(root, 60, 0);
    assert_int_equal(gpufl_init(&o), 0);
    scopes("sig", 0, 50);
    assert_int_equal(dir_entries(root), 0);
    assert_int_equal(raise(SIGUSR2), 0);
    for (int i = 0; i < 500 && dir_entries(root) < 1; i++) sleep_ms(10);
    assert_int_equal(dir_entries(root), 1);
    sleep_ms(200); /* the files are written after the directory */
    char message[512];
    snapshot_event(tu_session_dir(), message, sizeof message);
    assert_non_null(strstr(message, "(signal)"));
    assert_int_equal(scope_names(tu_session_dir(), "sig_", "sig_49").with_prefix, 50);
    gpufl_shutdown();
    assert_int_equal(program_handler_calls, 0);
    assert_int_equal(raise(SIGUSR2), 0);
    assert_int_equal(program_handler_calls, 1);
    signal(SIGUSR2, SIG_DFL);
}

/* Without the flight recorder there is nothing to snapshot: the files are written as it goes. */
static void snapshot_needs_the_flight_recorder(void **state) {
    (void)state;
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "plain"));
    assert_int_equal(gpufl_init(&o), 0);
    assert_int_equal(gpufl_snapshot(NULL, 0), GPUFL_ENOTSUP);
    assert_non_null(strstr(gpufl_last_error(), "flight_recorder_s"));
    gpufl_shutdown();
}

/* GPUFL_FLIGHT_RECORDER_S turns it on for a program that sets nothing. */
static void environment_turns_it_on(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "env");
    setenv("GPUFL_FLIGHT_RECORDER_S", "30", 1);
    gpufl_options_t o = tu_options(root);
    assert_int_equal(gpufl_init(&o), 0);
    unsetenv("GPUFL_FLIGHT_RECORDER_S");
    scopes("env", 0, 5);
    assert_int_equal(dir_entries(root), 0);
    assert_int_equal(gpufl_snapshot(NULL, 0), 0);
    gpufl_shutdown();
    assert_int_equal(dir_entries(root), 1);
}

/* A GPU of the fake NVML with these extra members ("samples" among them). */
static void fake_gpu(const char *members) {
    char json[4096];
    snprintf(json, sizeof json,
             "{\"driver_version\": \"580.95.05\", \"nvml_version\": \"13.580.95.05\","
             " \"cuda_driver_version\": 13000,"
             " \"gpus\": [{\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-1111\","
             "   \"pci_bus_id\": \"00000000:1B:00.0\", \"cc\": [9, 0],"
             "   \"memory_total\": 85520809984, \"mig_mode\": 0, %s}]}",
             members);
    tu_fake_nvml(SUITE, json);
}

static void no_fake_gpu(void) {
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
}

/* A session over the fake GPU scripted by members (and scopes from 0 to
 * nscopes): the one snapshot under name after settle_ms more, with its reason. */
static const char *fault_snapshot(const char *name, const char *members, int nscopes, int settle_ms,
                                  const char *reason) {
    const char *root = tu_log_dir(SUITE, name);
    char all[1024];
    snprintf(all, sizeof all,
             "%s \"samples\": {\"util_gpu\": [100], \"mem_used\": [1], \"mem_free\": [1]}",
             members);
    fake_gpu(all);
    gpufl_options_t o = flight_options(root, 60, 0);
    assert_int_equal(gpufl_init(&o), 0);
    scopes(name, 0, nscopes);
    const char *dir = only_snapshot(root, 5000);
    sleep_ms(settle_ms);
    gpufl_shutdown();
    no_fake_gpu();
    assert_int_equal(dir_entries(root), 1);
    json_t *event = snapshot_json(dir);
    assert_string_equal(json_string_value(json_object_get(event, "reason")), reason);
    json_decref(event);
    return dir;
}

/* A burst of XIDs (two in one sampling pass, one in a later one) is one
 * snapshot, named for the first, holding the XID rows. */
static void xid_burst_takes_one_snapshot(void **state) {
    (void)state;
    /* 400 ms: the later XID comes, and is held off */
    const char *dir =
        fault_snapshot("xid", "\"xids\": [[3, 79], [3, 48], [5, 79]],", 20, 400, "xid:79");
    tu_lines_t D = tu_read(dir, "device.log");
    json_t *xid = tu_first(&D, "xid");
    assert_non_null(xid);
    assert_int_equal(json_integer_value(json_object_get(xid, "code")), 79);
    assert_non_null(tu_first(&D, "gpu_info"));
    tu_free(&D);
    assert_int_equal(scope_names(dir, "xid_", "xid_19").with_prefix, 20);
}

/* A GPU that stops answering takes a snapshot that holds the gpu_lost event. */
static void gpu_lost_takes_a_snapshot(void **state) {
    (void)state;
    const char *dir = fault_snapshot("gpu_lost", "\"lost_at_sample\": 3,", 0, 200, "gpu_lost");
    tu_lines_t D = tu_read(dir, "device.log");
    int lost = 0;
    for (size_t i = 0; i < D.n; i++) {
        const char *code = json_string_value(json_object_get(D.v[i], "code"));
        lost += code && strcmp(code, "gpu_lost") == 0;
    }
    assert_int_equal(lost, 1);
    tu_free(&D);
}

/* One idle stretch of 2 s, longer than the 1 s window (the hold-off), is
 * one snapshot: the stretch fires once and re-arms only when busy again. */
static void idle_condition_one_snapshot_per_stretch(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "idle");
    char samples[2048] =
        "\"samples\": {\"mem_used\": [1], \"mem_free\": [1], \"util_mem\": [0], \"util_gpu\": [";
    for (int i = 0; i < 110; i++) strcat(samples, i < 10 ? "100," : "3,");
    strcat(samples, "100]}");
    fake_gpu(samples);
    gpufl_options_t o = flight_options(root, 1, 0);
    o.flight_recorder_trigger = "gpu_idle > 90% for 300ms";
    assert_int_equal(gpufl_init(&o), 0);
    const char *dir = only_snapshot(root, 5000);
    char first[4096];
    snprintf(first, sizeof first, "%s", dir);
    for (int i = 0; i < 300; i++) { /* until the samples are busy again, and a little more */
        sleep_ms(10);
        gpufl_flush();
    }
    sleep_ms(500);
    gpufl_shutdown();
    no_fake_gpu();
    assert_int_equal(dir_entries(root), 1);
    json_t *event = snapshot_json(first);
    assert_string_equal(json_string_value(json_object_get(event, "reason")),
                        "insight:gpu_idle>90%for300ms");
    json_decref(event);
    tu_lines_t D = tu_read(first, "device.log");
    assert_true(tu_count(&D, "gpu_sample") > 0); /* the idle samples it was about */
    tu_free(&D);
}

/* flight_recorder_trigger is parsed at init, whatever set it: bad text
 * fails init with the option named; good text of every form starts. */
static void trigger_text_is_checked_at_init(void **state) {
    (void)state;
    static const char *const bad[] = {
        "gpu_idle>90for30s", "gpu_idle>90%",  "gpu_idle>100%for1s", "sync>50",           "sync>0ms",
        "sync>50ms,",        "idle>90%for1s", "sync>50ms;sync>1s",  "gpu_idle>90%for30m"};
    const char *root = tu_log_dir(SUITE, "trigger_text");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gpufl_options_t o = flight_options(root, 10, 0);
        o.flight_recorder_trigger = bad[i];
        assert_int_equal(gpufl_init(&o), GPUFL_EINVAL);
        assert_non_null(strstr(gpufl_last_error(), "flight_recorder_trigger"));
    }
    setenv("GPUFL_FLIGHT_RECORDER_TRIGGER", "gpu_idel>90%for1s", 1);
    gpufl_options_t o = flight_options(root, 10, 0);
    assert_int_equal(gpufl_init(&o), GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "gpu_idel"));
    setenv("GPUFL_FLIGHT_RECORDER_TRIGGER", " gpu_idle>90%for30s , sync > 50ms,sync>2s ", 1);
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_shutdown();
    unsetenv("GPUFL_FLIGHT_RECORDER_TRIGGER");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(snapshot_is_a_readable_session),
        cmocka_unit_test(window_keeps_the_last_seconds),
        cmocka_unit_test(cap_evicts_oldest_first),
        cmocka_unit_test(signal_takes_a_snapshot),
        cmocka_unit_test(snapshot_needs_the_flight_recorder),
        cmocka_unit_test(environment_turns_it_on),
        cmocka_unit_test(xid_burst_takes_one_snapshot),
        cmocka_unit_test(gpu_lost_takes_a_snapshot),
        cmocka_unit_test(idle_condition_one_snapshot_per_stretch),
        cmocka_unit_test(trigger_text_is_checked_at_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
