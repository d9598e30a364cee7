// SPDX-License-Identifier: Apache-2.0
/*
 * test_flight_recorder.c - flight_recorder_s: a session that writes no file,
 * keeps the last seconds of every channel in memory, and writes them as a
 * session directory of their own on gpufl_snapshot() or its signal; the
 * report reads the snapshot; the window and the memory cap let go of the
 * oldest rows, counted.
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(snapshot_is_a_readable_session),
        cmocka_unit_test(window_keeps_the_last_seconds),
        cmocka_unit_test(cap_evicts_oldest_first),
        cmocka_unit_test(signal_takes_a_snapshot),
        cmocka_unit_test(snapshot_needs_the_flight_recorder),
        cmocka_unit_test(environment_turns_it_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
