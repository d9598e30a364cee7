// SPDX-License-Identifier: Apache-2.0
/*
 * test_session.c - sessions end to end through the public C API: the
 * directory layout and headers, the lifecycle and its misuse, the kill
 * switch, scopes and their bad ends, names, system windows and sampling
 * policy, rotation, flushing and the memory added at init.
 */
#include "test_util.h"
#include "core/trace_marker.h"

#include <gpufl/gpufl_log.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <errno.h>
#include <time.h>

#define SUITE "session"

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ns on clock (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID). */
static int64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void before_any_init(void **state) {
    (void)state;
    gpufl_stats_t s = {.size = sizeof s};
    char buf[64];
    gpufl_shutdown(); /* without init: nothing happens */
    gpufl_shutdown();
    assert_int_equal(gpufl_get_stats(&s), GPUFL_ENOTINIT);
    assert_int_equal(gpufl_session_dir(buf, sizeof buf), GPUFL_ENOTINIT);
    assert_int_equal(gpufl_flush(), GPUFL_ENOTINIT);
    assert_int_equal(gpufl_system_start("x"), GPUFL_ENOTINIT);
    assert_int_equal(gpufl_scope_begin("x", NULL), 0);
    gpufl_scope_end(0);
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl_report_write(NULL), GPUFL_ENOTINIT);
    gpufl_set_log_hook(NULL, NULL);
    assert_non_null(strstr(cap.last, "call init() first"));
    assert_false(gpufl_is_active());
}

static void layout_and_headers(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "layout");
    gpufl_options_t o = tu_options(root);
    assert_int_equal(gpufl_init(&o), 0);
    assert_true(gpufl_is_active());
    const char *dir = tu_session_dir();
    assert_memory_equal(dir, root, strlen(root));
    gpufl_scope_end(gpufl_scope_begin("a", NULL));
    gpufl_shutdown();
    assert_false(gpufl_is_active());

    const char *id = strrchr(dir, '/') + 1;
    const char *files[] = {"device.log", "scope.log", "system.log"};
    for (int i = 0; i < 3; i++) {
        tu_lines_t L = tu_read(dir, files[i]);
        assert_true(L.n >= 2);
        assert_string_equal(tu_type(L.v[0]), "header");
        assert_string_equal(json_string_value(json_object_get(L.v[0], "session_id")), id);
        assert_int_equal(json_integer_value(json_object_get(L.v[0], "pid")), getpid());
        assert_string_equal(tu_type(L.v[L.n - 1]), "session_end");
        tu_free(&L);
    }
    tu_lines_t D = tu_read(dir, "device.log");
    json_t *opts = tu_first(&D, "options");
    assert_non_null(opts);
    json_t *app = json_object_get(opts, "app_name");
    assert_string_equal(json_string_value(json_object_get(app, "value")), "unit");
    assert_string_equal(json_string_value(json_object_get(app, "from")), "code");
    json_t *caps = tu_first(&D, "capabilities");
    assert_non_null(caps);
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Monitor");
    tu_free(&D);
}

/* The job id of the header: the first of SLURM_JOB_ID, TORCHELASTIC_RUN_ID, GPUFL_JOB_ID set
 * and not empty, with its variable; none set writes neither field. */
static const char *job_header_field(const char *name, const char *field) {
    static char got[2][128];
    const char *root = tu_log_dir(SUITE, name);
    gpufl_options_t o = tu_options(root);
    assert_int_equal(gpufl_init(&o), 0);
    const char *dir = tu_session_dir();
    gpufl_shutdown();
    tu_lines_t L = tu_read(dir, "device.log");
    const char *v = json_string_value(json_object_get(L.v[0], field));
    char *slot = got[!strcmp(field, "job_id_from")];
    snprintf(slot, sizeof got[0], "%s", v ? v : "(none)");
    tu_free(&L);
    return slot;
}

static void header_records_the_job_id(void **state) {
    (void)state;
    unsetenv("SLURM_JOB_ID"), unsetenv("TORCHELASTIC_RUN_ID"), unsetenv("GPUFL_JOB_ID");
    assert_string_equal(job_header_field("job0", "job_id"), "(none)");
    setenv("GPUFL_JOB_ID", "nightly-7", 1);
    setenv("TORCHELASTIC_RUN_ID", "", 1); /* empty: not a job id */
    assert_string_equal(job_header_field("job1", "job_id"), "nightly-7");
    assert_string_equal(job_header_field("job1b", "job_id_from"), "GPUFL_JOB_ID");
    setenv("TORCHELASTIC_RUN_ID", "te-run", 1);
    assert_string_equal(job_header_field("job2", "job_id_from"), "TORCHELASTIC_RUN_ID");
    setenv("SLURM_JOB_ID", "4242", 1);
    assert_string_equal(job_header_field("job3", "job_id"), "4242");
    assert_string_equal(job_header_field("job3b", "job_id_from"), "SLURM_JOB_ID");
    unsetenv("SLURM_JOB_ID"), unsetenv("TORCHELASTIC_RUN_ID"), unsetenv("GPUFL_JOB_ID");
}

/* The run id of gpufl trace (GPUFL_RUN_ID) in the header, beside a job id, cut to 63 bytes;
 * unset or empty, no field. */
static void header_records_the_run_id(void **state) {
    (void)state;
    unsetenv("GPUFL_RUN_ID");
    assert_string_equal(job_header_field("run0", "run_id"), "(none)");
    setenv("GPUFL_RUN_ID", "", 1);
    assert_string_equal(job_header_field("run1", "run_id"), "(none)");
    setenv("GPUFL_RUN_ID", "20261127T223251Z-16766-ff3850ac", 1);
    setenv("SLURM_JOB_ID", "4242", 1);
    assert_string_equal(job_header_field("run2", "run_id"), "20261127T223251Z-16766-ff3850ac");
    assert_string_equal(job_header_field("run2b", "job_id"), "4242");
    char long_id[101];
    memset(long_id, 'r', 100);
    long_id[100] = '\0';
    setenv("GPUFL_RUN_ID", long_id, 1);
    long_id[63] = '\0';
    assert_string_equal(job_header_field("run3", "run_id"), long_id);
    unsetenv("GPUFL_RUN_ID"), unsetenv("SLURM_JOB_ID");
}

/* Under gpufl trace (core/trace_marker.h): the injection's init marks the session injected;
 * the program's init then joins it (noted, not a second session) and its shutdown leaves it
 * running until the injection's exit path marks it ending. Without the variable, nothing
 * changes: a second init is refused, the first shutdown ends the session. */
static void program_init_joins_the_injected_session(void **state) {
    (void)state;
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "joined"));
    gpufl__trace_mark(GPUFL_TRACE_STARTING);
    assert_int_equal(gpufl_init(&o), 0);
    assert_int_equal(gpufl__trace_state(), GPUFL_TRACE_INJECTED);
    const char *dir = tu_session_dir();
    gpufl_options_t mine = tu_options("/elsewhere");
    mine.app_name = "mine";
    assert_int_equal(gpufl_init(&mine), 0); /* joins */
    gpufl_shutdown();                       /* the program's: the session goes on */
    assert_true(gpufl_is_active());
    gpufl_scope_end(gpufl_scope_begin("after_the_program_shutdown", NULL));
    gpufl__trace_mark(GPUFL_TRACE_ENDING); /* the injection's exit path */
    gpufl_shutdown();
    assert_false(gpufl_is_active());
    assert_int_equal(gpufl__trace_state(), GPUFL_TRACE_OTHER); /* the process holds none now */
    tu_lines_t D = tu_read(dir, "device.log"), S = tu_read(dir, "scope.log");
    json_t *joined = tu_event(&D, "program_init_joined");
    assert_non_null(joined);
    const char *message = json_string_value(json_object_get(joined, "message"));
    assert_non_null(strstr(message, "app_name mine"));
    assert_non_null(strstr(message, "log_path /elsewhere"));
    assert_non_null(tu_first(&D, "session_end"));
    int named = 0; /* the scope after the program's shutdown was recorded */
    for (size_t i = 0; i < S.n; i++) {
        json_t *strs = json_object_get(S.v[i], "str");
        for (size_t k = 0; strcmp(tu_type(S.v[i]), "dict") == 0 && k < json_array_size(strs); k++)
            named |= strcmp(json_string_value(json_array_get(strs, k)),
                            "after_the_program_shutdown") == 0;
    }
    assert_true(named);
    tu_free(&D), tu_free(&S);

    /* Marked by the program itself: the injection would stand down. */
    assert_int_equal(gpufl_init(&o), 0);
    assert_int_equal(gpufl__trace_state(), GPUFL_TRACE_PROGRAM);
    assert_int_equal(gpufl_init(&o), GPUFL_EALREADY);
    gpufl_shutdown();
    assert_false(gpufl_is_active());
    unsetenv(GPUFL_TRACE_MARKER_VAR);
    assert_int_equal(gpufl_init(&o), 0);
    assert_null(getenv(GPUFL_TRACE_MARKER_VAR)); /* not under gpufl trace: nothing written */
    assert_int_equal(gpufl_init(&o), GPUFL_EALREADY);
    gpufl_shutdown();
    assert_false(gpufl_is_active());
}

/* names holds every value 0 .. count-1 of an enum, by the header's name,
 * and nothing else. */
static void expect_names(json_t *names, int count, const char *(*name)(int)) {
    assert_true(json_is_object(names));
    assert_int_equal(json_object_size(names), count);
    for (int v = 0; v < count; v++) {
        char key[16];
        snprintf(key, sizeof key, "%d", v);
        assert_non_null(name(v));
        assert_string_equal(json_string_value(json_object_get(names, key)), name(v));
    }
    assert_null(name(count)); /* the header lists no value past its count */
}

/* Every session's device.log names gpufl's values once (gpufl_log.h), so a
 * reader can print them without the header; no GPU needed. */
static void legend_names_every_value(void **state) {
    (void)state;
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "legend"));
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_shutdown();
    tu_lines_t D = tu_read(tu_session_dir(), "device.log");
    assert_int_equal(tu_count(&D, "legend"), 1);
    json_t *legend = tu_first(&D, "legend");
    assert_int_equal(json_integer_value(json_object_get(legend, "v")), 1);
    expect_names(json_object_get(legend, "copy_kind"), GPUFL_COPY_KIND_COUNT, gpufl_copy_kind_name);
    expect_names(json_object_get(legend, "memory_kind"), GPUFL_MEMORY_KIND_COUNT,
                 gpufl_memory_kind_name);
    expect_names(json_object_get(legend, "sync_type"), GPUFL_SYNC_TYPE_COUNT, gpufl_sync_type_name);
    /* Spot checks against the documented numbers (docs/log-format.md). */
    json_t *copy = json_object_get(legend, "copy_kind");
    assert_string_equal(json_string_value(json_object_get(copy, "0")), "unknown");
    assert_string_equal(json_string_value(json_object_get(copy, "3")), "device_to_device");
    assert_string_equal(json_string_value(json_object_get(copy, "4")), "peer");
    json_t *sync = json_object_get(legend, "sync_type");
    assert_string_equal(json_string_value(json_object_get(sync, "1")), "device");
    assert_string_equal(json_string_value(json_object_get(sync, "2")), "stream");
    tu_free(&D);
}

static void session_ids_unique_and_sorted(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "ids");
    char ids[4][128];
    for (int i = 0; i < 4; i++) {
        gpufl_options_t o = tu_options(root);
        assert_int_equal(gpufl_init(&o), 0);
        snprintf(ids[i], sizeof ids[i], "%s", strrchr(tu_session_dir(), '/') + 1);
        gpufl_shutdown();
        sleep_ms(2);
    }
    for (int i = 1; i < 4; i++) assert_true(strcmp(ids[i - 1], ids[i]) < 0);
}

static void default_log_path_is_app_name_dot_log(void **state) {
    (void)state;
    char cwd[4096];
    const char *root = tu_log_dir(SUITE, "default_path");
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(root), 0);
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "myapp";
    assert_int_equal(gpufl_init(&o), 0);
    assert_memory_equal(tu_session_dir(), "myapp.log/", 10);
    gpufl_shutdown();
    assert_true(tu_exists(root, "myapp.log"));
    assert_int_equal(chdir(cwd), 0);
}

static void unwritable_log_path_fails_cleanly(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "unwritable");
    char blocker[1200], bad[1300];
    snprintf(blocker, sizeof blocker, "%s/a_file", root);
    FILE *f = fopen(blocker, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(bad, sizeof bad, "%s/sub", blocker); /* a directory below a regular file */
    int threads = tu_thread_count();
    gpufl_options_t o = tu_options(bad);
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl_init(&o), GPUFL_EIO);
    gpufl_set_log_hook(NULL, NULL);
    assert_non_null(strstr(gpufl_last_error(), "a_file"));
    assert_int_equal(cap.warnings, 1);
    assert_false(gpufl_is_active());
    assert_int_equal(tu_thread_count_settled(threads), threads);
    assert_int_equal(gpufl_scope_begin("x", NULL), 0);
}

static void init_twice_keeps_first_session(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "twice");
    gpufl_options_t o = tu_options(root);
    assert_int_equal(gpufl_init(&o), 0);
    char first[4096];
    snprintf(first, sizeof first, "%s", tu_session_dir());
    gpufl_set_log_hook(tu_capture_hook, &(tu_log_capture_t){0});
    assert_int_equal(gpufl_init(&o), GPUFL_EALREADY);
    gpufl_set_log_hook(NULL, NULL);
    assert_non_null(strstr(gpufl_last_error(), "already running"));
    assert_string_equal(tu_session_dir(), first);
    gpufl_scope_end(gpufl_scope_begin("still_recorded", NULL));
    gpufl_shutdown();
    tu_lines_t L = tu_read(first, "scope.log");
    assert_int_equal(tu_count(&L, "scope_begin"), 1);
    tu_free(&L);
    /* and a new init after shutdown starts a new session */
    assert_int_equal(gpufl_init(&o), 0);
    assert_string_not_equal(tu_session_dir(), first);
    gpufl_shutdown();
}

static void scopes_after_shutdown_are_noops(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "after_shutdown");
    gpufl_options_t o = tu_options(root);
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_scope_t open = gpufl_scope_begin("open_at_shutdown", NULL);
    gpufl_shutdown();
    const char *dir = tu_session_dir();
    long size = tu_file_size(dir, "scope.log");
    assert_int_equal(gpufl_scope_begin("late", NULL), 0);
    gpufl_scope_end(open); /* begun in the old session: ignored */
    assert_int_equal(gpufl_system_start("late"), GPUFL_ENOTINIT);
    assert_int_equal(tu_file_size(dir, "scope.log"), size);
    tu_lines_t L = tu_read(dir, "scope.log");
    assert_int_equal(tu_count(&L, "scope_begin"), 1);
    assert_int_equal(tu_count(&L, "scope_end"), 0); /* still open when the session ended */
    tu_free(&L);
}

static void unbalanced_and_implicit_ends(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "unbalanced");
    gpufl_options_t o = tu_options(root);
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_scope_t a = gpufl_scope_begin("a", NULL);
    gpufl_scope_t b = gpufl_scope_begin("b", "tagged");
    gpufl_scope_end(a); /* closes b implicitly, then a */
    gpufl_scope_end(b); /* already closed: unbalanced */
    gpufl_scope_end(a); /* twice: unbalanced */
    gpufl_scope_end(0x123456);
    gpufl_stats_t s = {.size = sizeof s};
    gpufl_flush();
    assert_int_equal(gpufl_get_stats(&s), 0);
    assert_int_equal(s.unbalanced_ends, 3);
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);
    assert_true(cap.warnings >= 1);
    assert_non_null(strstr(cap.last, "scope end"));

    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    size_t n, m;
    int64_t *ids = tu_column(&L, "scope_end", "id", &n);
    int64_t *implicit = tu_column(&L, "scope_end", "implicit", &m);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], (int64_t)b);
    assert_int_equal(implicit[0], 1);
    assert_int_equal(ids[1], (int64_t)a);
    assert_int_equal(implicit[1], 0);
    json_t *ev = tu_first(&L, "event");
    assert_non_null(ev);
    assert_string_equal(json_string_value(json_object_get(ev, "code")), "unbalanced_scope_end");
    json_t *drops = tu_last(&L, "drops");
    assert_int_equal(json_integer_value(json_object_get(drops, "unbalanced_ends")), 3);
    size_t k;
    int64_t *tags = tu_column(&L, "scope_begin", "tag", &k);
    assert_int_equal(tags[0], 0);
    assert_string_equal(tu_dict(&L, tags[1]), "tagged");
    free(ids);
    free(implicit);
    free(tags);
    tu_free(&L);
}

/* A handle from an earlier session never closes a scope of the current one,
 * even when the same thread holds the same ring. */
static void stale_handle_from_an_earlier_session(void **state) {
    (void)state;
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "stale"));
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_scope_t old = gpufl_scope_begin("old", NULL);
    gpufl_shutdown();
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_scope_t b = gpufl_scope_begin("b", NULL);
    gpufl_scope_t c = gpufl_scope_begin("c", NULL);
    assert_int_not_equal(old, b);
    assert_int_not_equal(old, c);
    gpufl_scope_end(old); /* ignored and counted */
    gpufl_scope_end(c);
    gpufl_scope_end(b);
    gpufl_stats_t s = {.size = sizeof s};
    gpufl_flush();
    gpufl_get_stats(&s);
    gpufl_shutdown();
    assert_int_equal(s.unbalanced_ends, 1);
    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    size_t n;
    int64_t *implicit = tu_column(&L, "scope_end", "implicit", &n);
    assert_int_equal(n, 2);
    assert_int_equal(implicit[0] + implicit[1], 0);
    free(implicit);
    tu_free(&L);
}

/* A long flush interval with a stream of long, distinct names: the pending
 * buffers are written early, so nothing is lost and every line is whole. */
static void long_flush_interval_loses_nothing(void **state) {
    (void)state;
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "long_interval"));
    o.flush_interval_ms = 60000;
    /* This test is about the writer, not full rings: the ring holds the whole
     * burst (12000 scopes of 16 records), however slow the collector runs
     * (it is ten times slower under TSan). */
    o.ring_capacity_records = 1 << 18;
    o.memory_cap_bytes = (size_t)64 << 20;
    char name[1000];
    assert_int_equal(gpufl_init(&o), 0);
    for (int i = 0; i < 12000; i++) {
        snprintf(name, sizeof name, "%0900d", i);
        gpufl_scope_end(gpufl_scope_begin(name, NULL));
    }
    gpufl_stats_t s = {.size = sizeof s};
    gpufl_flush();
    gpufl_get_stats(&s);
    gpufl_shutdown();
    assert_int_equal(s.write_errors, 0);
    assert_int_equal(s.records_dropped, 0);
    tu_lines_t L = tu_read(tu_session_dir(), "scope.log"); /* every line parses */
    size_t n;
    int64_t *names = tu_column(&L, "scope_begin", "name", &n);
    assert_int_equal(n, 12000);
    assert_non_null(tu_dict(&L, names[n - 1]));
    free(names);
    tu_free(&L);
}

static void kill_switch(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "disabled");
    int threads = tu_thread_count();
    const char *truthy[] = {"1", "true", "YES", "On"};
    for (int i = 0; i < 4; i++) {
        gpufl_options_t o = tu_options(root);
        setenv("GPUFL_DISABLED", truthy[i], 1);
        assert_int_equal(gpufl_init(&o), GPUFL_EDISABLED);
        assert_false(gpufl_is_active());
        assert_int_equal(gpufl_scope_begin("x", NULL), 0);
        assert_int_equal(gpufl_system_start("x"), GPUFL_EDISABLED);
        gpufl_upload_options_t u;
        gpufl_upload_options_init(&u);
        assert_int_equal(gpufl_upload_logs(&u), GPUFL_EDISABLED);
        assert_int_equal(gpufl_report_write(NULL), GPUFL_EDISABLED);
        gpufl_shutdown();
        unsetenv("GPUFL_DISABLED");
    }
    /* GPUFL_DISABLED=0 does not disable */
    setenv("GPUFL_DISABLED", "0", 1);
    gpufl_options_t o = tu_options(root);
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_shutdown();
    unsetenv("GPUFL_DISABLED");
    /* enabled=0 in code: same, and it wins over everything else set */
    o = tu_options(root);
    o.enabled = 0;
    o.system_sample_rate_ms = -5; /* not even validated: nothing runs */
    char other[1200];
    snprintf(other, sizeof other, "%s/never", root);
    o.log_path = other;
    assert_int_equal(gpufl_init(&o), GPUFL_EDISABLED);
    assert_false(tu_exists(root, "never"));
    assert_int_equal(tu_thread_count_settled(threads), threads);
}

/* A port nothing listens on: bound, then closed. */
static int closed_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* gpufl_upload_logs after a session: which server, key and logs (the call's options, the
 * environment, then init's), each missing one a clear error; a server that does not answer
 * is retried within the budget and reported without the key. The delivery itself is tested
 * against the real server (tests/integration/test_upload.py). */
static void upload_resolves_and_reports(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "upload");
    char url[64], dir[4096];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port());
    gpufl_options_t o = tu_options(root);
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl_init(&o), 0); /* enabled again after the kill-switch test */
    snprintf(dir, sizeof dir, "%s", tu_session_dir());
    gpufl_scope_end(gpufl_scope_begin("work", NULL));
    gpufl_shutdown();
    gpufl_upload_options_t u;
    gpufl_upload_options_init(&u);
    assert_int_equal(gpufl_upload_logs(&u), GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "no server"));
    u.backend_url = url;
    assert_int_equal(gpufl_upload_logs(&u), GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "no API key"));
    u.api_key = "gpfl_abcdefghij_secretsecretsecret";
    u.log_path = "/nonexistent/gpufl-root";
    assert_int_equal(gpufl_upload_logs(&u), GPUFL_ENOTFOUND);
    /* The last session of this process, to a server that does not answer: retried within
     * the budget, then reported; the key never appears. */
    u.log_path = NULL;
    u.budget_ms = 1500;
    gpufl_upload_result_t r = {.size = sizeof r};
    assert_int_equal(gpufl_upload_logs_result(&r, &u), 1);
    assert_false(r.success);
    assert_true(r.errors >= 1 && r.retries >= 1 && r.windows == 0 && r.sessions == 1);
    assert_non_null(strstr(r.error, "gave up"));
    assert_null(strstr(r.error, "secretsecret"));
    assert_null(strstr(gpufl_last_error(), "secretsecret"));
    assert_null(strstr(cap.last, "secretsecret"));
    /* init's backend_url and api_key are used when the call names none; no warning at init. */
    memset(&cap, 0, sizeof cap);
    o = tu_options(root);
    o.backend_url = url;
    o.api_key = "gpfl_abcdefghij_fromtheinitoptions";
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_shutdown();
    assert_int_equal(cap.warnings, 0);
    gpufl_upload_options_init(&u);
    u.budget_ms = 500;
    assert_int_equal(gpufl_upload_logs(&u), 1);
    assert_null(strstr(gpufl_last_error(), "fromtheinit"));
    gpufl_set_log_hook(NULL, NULL);
    (void)dir;
}

/* A sampling period below the kernel's CPU clock tick is warned about once at
 * init (no sample could count CPU time of its own); 20 ms, which only spaces
 * the CPU figures out (the report says so), is not. */
static void sample_period_below_a_tick_warns(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "short_period");
    const int periods[] = {20, 5};
    for (int k = 0; k < 2; k++) {
        gpufl_options_t o = tu_options(root);
        o.system_sample_rate_ms = periods[k];
        o.continuous_system_sampling = 1;
        tu_log_capture_t cap = {0};
        gpufl_set_log_hook(tu_capture_hook, &cap);
        assert_int_equal(gpufl_init(&o), 0);
        gpufl_shutdown();
        gpufl_set_log_hook(NULL, NULL);
        assert_int_equal(cap.warnings, k);
        if (k) assert_non_null(strstr(cap.last, "system_sample_rate_ms is 5, shorter than"));
    }
}

/* Trace asked for on a machine without a driver (like CI's): the session
 * runs Monitor and the capability record and a warning say why. */
static void trace_without_a_driver_runs_monitor(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "engine");
    gpufl_options_t o = tu_options(root);
    tu_log_capture_t cap = {0};
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    setenv("GPUFL_CUPTI_LIBRARY", "/nonexistent/libcupti.so", 1);
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);
    unsetenv("GPUFL_CUPTI_LIBRARY");
    assert_non_null(strstr(cap.last, "running Monitor"));
    tu_lines_t D = tu_read(tu_session_dir(), "device.log");
    json_t *caps = tu_first(&D, "capabilities");
    assert_string_equal(json_string_value(json_object_get(caps, "engine_requested")), "Trace");
    assert_string_equal(json_string_value(json_object_get(caps, "engine")), "Monitor");
    json_t *trace = json_object_get(json_object_get(caps, "features"), "cupti_trace");
    assert_true(json_is_false(json_object_get(trace, "on")));
    assert_non_null(strstr(json_string_value(json_object_get(trace, "why")), "not found"));
    tu_free(&D);
}

static void system_windows_are_counted(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "windows");
    gpufl_options_t o = tu_options(root);
    assert_int_equal(gpufl_init(&o), 0);
    assert_int_equal(gpufl_system_start("a"), 0);
    assert_int_equal(gpufl_system_start("b"), 0);
    assert_int_equal(gpufl_system_stop("a"), 0);
    assert_int_equal(gpufl_system_stop("b"), 0);
    assert_int_equal(gpufl_system_stop("c"), GPUFL_ENOTFOUND);
    assert_non_null(strstr(gpufl_last_error(), "\"c\""));
    assert_int_equal(gpufl_system_start(NULL), GPUFL_EINVAL);
    gpufl_shutdown();
    tu_lines_t L = tu_read(tu_session_dir(), "system.log");
    int64_t want_active[] = {1, 2, 1, 0};
    const char *want_name[] = {"a", "b", "a", "b"};
    size_t k = 0;
    for (size_t i = 0; i < L.n; i++) {
        const char *t = tu_type(L.v[i]);
        if (strcmp(t, "system_start") && strcmp(t, "system_stop")) continue;
        assert_true(k < 4);
        assert_int_equal(json_integer_value(json_object_get(L.v[i], "active")), want_active[k]);
        assert_string_equal(json_string_value(json_object_get(L.v[i], "name")), want_name[k]);
        json_t *snap = json_object_get(L.v[i], "snapshot");
        assert_true(json_integer_value(json_object_get(snap, "mem_total_bytes")) > 0);
        k++;
    }
    assert_int_equal(k, 4);
    tu_free(&L);
}

static void samples_only_inside_scopes_without_continuous(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "sampling_scoped");
    gpufl_options_t o = tu_options(root);
    o.system_sample_rate_ms = 5;
    assert_int_equal(gpufl_init(&o), 0);
    sleep_ms(60); /* nothing open: no samples */
    gpufl_scope_t s = gpufl_scope_begin("sampled", NULL);
    sleep_ms(80);
    gpufl_scope_end(s);
    sleep_ms(60);
    gpufl_shutdown();
    tu_lines_t S = tu_read(tu_session_dir(), "system.log");
    tu_lines_t C = tu_read(tu_session_dir(), "scope.log");
    size_t n, m;
    int64_t *ts = tu_column(&S, "host_sample", "ts_ns", &n);
    int64_t *begin = tu_column(&C, "scope_begin", "ts_ns", &m);
    int64_t *end = tu_column(&C, "scope_end", "ts_ns", &m);
    assert_true(n >= 5); /* ~80 ms at 5 ms, less the first period's baseline */
    for (size_t i = 0; i < n; i++) {
        assert_true(ts[i] >= begin[0]);
        assert_true(ts[i] <= end[0] + 2 * 5000000); /* at most one period late */
    }
    free(ts);
    free(begin);
    free(end);
    tu_free(&S);
    tu_free(&C);
}

static void continuous_sampling(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "sampling_continuous");
    gpufl_options_t o = tu_options(root);
    o.system_sample_rate_ms = 10;
    o.continuous_system_sampling = 1;
    assert_int_equal(gpufl_init(&o), 0);
    sleep_ms(120);
    gpufl_shutdown();
    tu_lines_t S = tu_read(tu_session_dir(), "system.log");
    size_t n, m;
    int64_t *ts = tu_column(&S, "host_sample", "ts_ns", &n);
    int64_t *total = tu_column(&S, "host_sample", "mem_total_bytes", &m);
    assert_true(n >= 8 && n <= 13); /* 120 ms at 10 ms, with room for a busy machine */
    assert_true(ts[n - 1] - ts[0] >= (int64_t)(n - 2) * 9000000); /* the cadence holds overall */
    json_t *info = tu_first(&S, "host_info");
    for (size_t i = 0; i < n; i++) {
        /* Fixed-rate: after a late sample the next keeps the cadence, so two may
         * be closer than a period; never at the same time, never backwards. */
        if (i) assert_true(ts[i] > ts[i - 1]);
        assert_int_equal(total[i], json_integer_value(json_object_get(info, "mem_total_bytes")));
    }
    free(ts);
    free(total);
    tu_free(&S);
}

/* A session shorter than the CPU figures' interval (9 ticks) still gets one
 * figure: the last sample, at stop, needs only 2 ticks since the baseline. */
static void short_session_gets_a_final_cpu_figure(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "sampling_final");
    gpufl_options_t o = tu_options(root);
    o.system_sample_rate_ms = 20;
    o.continuous_system_sampling = 1;
    assert_int_equal(gpufl_init(&o), 0);
    /* Busy for 50 ms of wall time: the session stays shorter than the figures' interval
     * however loaded the machine is, and what CPU it got is this process's own clock. */
    int64_t t0 = clock_ns(CLOCK_MONOTONIC), cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    while (clock_ns(CLOCK_MONOTONIC) - t0 < 50000000) {
    }
    int64_t cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    gpufl_shutdown();
    tu_lines_t S = tu_read(tu_session_dir(), "system.log");
    json_t *last = tu_last(&S, "host_sample");
    assert_non_null(last);
    json_t *proc = json_object_get(last, "proc_cpu_pct");
    json_t *host = json_object_get(last, "cpu_pct");
    size_t k = json_array_size(proc);
    assert_true(k > 0);
    assert_true(json_is_number(json_array_get(proc, k - 1)));
    assert_true(json_is_number(json_array_get(host, k - 1)));
    /* Busy: a share above 0 once it had 3 ticks of CPU (a loaded machine may give it less, and
     * then 0 is the right figure). */
    if (cpu_ns >= 30000000) assert_true(json_number_value(json_array_get(proc, k - 1)) > 0);
    assert_true(json_number_value(json_array_get(proc, k - 1)) >= 0);
    tu_free(&S);
}

static void data_reaches_disk_within_a_second(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "live");
    gpufl_options_t o = tu_options(root);
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_scope_end(gpufl_scope_begin("live", NULL));
    sleep_ms(1000);
    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    assert_int_equal(tu_count(&L, "scope_begin"), 1); /* no flush, no shutdown */
    tu_free(&L);
    gpufl_shutdown();
}

static void flush_logs_always_writes_promptly(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "flush_always");
    gpufl_options_t o = tu_options(root);
    o.flush_logs_always = 1;
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_scope_end(gpufl_scope_begin("prompt", NULL));
    sleep_ms(150); /* well under the 250 ms flush interval plus a pass */
    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    assert_int_equal(tu_count(&L, "scope_end"), 1);
    tu_free(&L);
    gpufl_shutdown();
}

static void names_are_escaped_and_capped(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "names");
    gpufl_options_t o = tu_options(root);
    char longname[3000];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    const char *odd = "quote\" back\\ nl\n tab\t bad\xff utf8 \xc3\xa9";
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_scope_end(gpufl_scope_begin(longname, NULL));
    gpufl_scope_end(gpufl_scope_begin(odd, "t\x01g"));
    gpufl_scope_end(gpufl_scope_begin(NULL, NULL));
    gpufl_scope_end(gpufl_scope_begin("mid-length name of forty bytes...", "and a tag too"));
    gpufl_stats_t s = {.size = sizeof s};
    gpufl_flush();
    gpufl_get_stats(&s);
    assert_int_equal(s.names_truncated, 1);
    gpufl_shutdown();
    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    size_t n;
    int64_t *names = tu_column(&L, "scope_begin", "name", &n);
    int64_t *tags = tu_column(&L, "scope_begin", "tag", &n);
    assert_int_equal(n, 4);
    assert_int_equal(strlen(tu_dict(&L, names[0])), 1024);
    assert_string_equal(tu_dict(&L, names[1]),
                        "quote\" back\\ nl\n tab\t bad\xef\xbf\xbd utf8 \xc3\xa9");
    assert_string_equal(tu_dict(&L, tags[1]), "t\x01g");
    assert_string_equal(tu_dict(&L, names[2]), "(unnamed)");
    assert_string_equal(tu_dict(&L, names[3]), "mid-length name of forty bytes...");
    assert_string_equal(tu_dict(&L, tags[3]), "and a tag too");
    free(names);
    free(tags);
    tu_free(&L);
}

static void rotation_into_segments(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "rotation");
    gpufl_options_t o = tu_options(root);
    o.log_rotate_bytes = 64 * 1024;
    assert_int_equal(gpufl_init(&o), 0);
    for (int i = 0; i < 6000; i++) {
        gpufl_scope_end(gpufl_scope_begin(i % 2 ? "odd" : "even", NULL));
        if (i % 1000 == 999) gpufl_flush();
    }
    gpufl_shutdown();
    const char *dir = tu_session_dir();
    assert_true(tu_exists(dir, "scope.log.1"));
    tu_lines_t A = tu_read(dir, "scope.log");
    tu_lines_t B = tu_read(dir, "scope.log.1");
    json_t *end = A.v[A.n - 1];
    assert_string_equal(tu_type(end), "segment_end");
    assert_string_equal(json_string_value(json_object_get(end, "next")), "scope.log.1");
    assert_string_equal(tu_type(B.v[0]), "header");
    assert_int_equal(json_integer_value(json_object_get(B.v[0], "segment")), 1);
    /* the segment defines its names again before it uses them */
    assert_string_equal(tu_type(B.v[1]), "dict");
    size_t n;
    int64_t *names = tu_column(&B, "scope_begin", "name", &n);
    assert_true(n > 0);
    assert_non_null(tu_dict(&B, names[0]));
    free(names);
    tu_free(&A);
    tu_free(&B);
}

static long rss_kib(void) {
    long kib = -1;
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kib = atol(line + 6);
    if (f) fclose(f);
    return kib;
}

static void monitor_init_adds_at_most_8_mib(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "rss");
    gpufl_options_t o = tu_options(root);
    o.system_sample_rate_ms = 10;
    o.continuous_system_sampling = 1;
    long before = rss_kib();
    assert_int_equal(gpufl_init(&o), 0);
    for (int i = 0; i < 1000; i++) gpufl_scope_end(gpufl_scope_begin("rss", NULL));
    sleep_ms(50);
    gpufl_flush();
    long after = rss_kib();
    gpufl_shutdown();
    print_message("RSS added by a Monitor session: %ld KiB\n", after - before);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* Sanitizer runtimes keep shadow memory for everything touched: the limit
     * is the real library's, checked in the normal build. */
    (void)before;
#else
    assert_true(after - before <= 8 * 1024);
#endif
}

static void report_of_last_session(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "report");
    char path[1200], text[65536];
    gpufl_options_t o = tu_options(root);
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_scope_end(gpufl_scope_begin_repeat("reported_bench", NULL, 10, 3));
    snprintf(path, sizeof path, "%s/report.txt", root);
    assert_int_equal(gpufl_report_write(path), 0); /* while running: flushed first */
    gpufl_shutdown();
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_non_null(strstr(text, "reported_bench"));
    assert_non_null(strstr(text, "Scope timing"));
    snprintf(path, sizeof path, "%s/no/such/dir/report.txt", root);
    assert_int_equal(gpufl_report_session(tu_session_dir(), path), GPUFL_EIO);
    snprintf(path, sizeof path, "%s/missing.txt", root);
    assert_int_equal(gpufl_report_session(root, path), GPUFL_ENOTFOUND); /* a root, no session */
}

/* The report is libgpufl-analysis's, loaded at call time: without it the
 * call fails, names the library and writes no file. */
static void report_without_the_analysis_library(void **state) {
    (void)state;
    const char *root = tu_log_dir(SUITE, "report_absent");
    char path[1200], missing[1200], saved[4096] = "";
    const char *env = getenv("GPUFL_ANALYSIS_LIBRARY");
    if (env) snprintf(saved, sizeof saved, "%s", env);
    gpufl_options_t o = tu_options(root);
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_scope_end(gpufl_scope_begin("absent", NULL));
    gpufl_shutdown();
    snprintf(missing, sizeof missing, "%s/no/libgpufl-analysis.so.0", root);
    setenv("GPUFL_ANALYSIS_LIBRARY", missing, 1);
    snprintf(path, sizeof path, "%s/report.txt", root);
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl_report_write(path), GPUFL_ENOTSUP);
    gpufl_set_log_hook(NULL, NULL);
    assert_non_null(strstr(gpufl_last_error(), "libgpufl-analysis"));
    assert_non_null(strstr(gpufl_last_error(), missing));
    assert_non_null(strstr(cap.last, "libgpufl-analysis")); /* generateReport warns */
    assert_int_equal(gpufl_report_session(tu_session_dir(), NULL), GPUFL_ENOTSUP);
    assert_false(tu_exists(root, "report.txt"));
    if (saved[0]) {
        setenv("GPUFL_ANALYSIS_LIBRARY", saved, 1);
        assert_int_equal(gpufl_report_write(path), 0); /* present again */
        assert_true(tu_exists(root, "report.txt"));
    } else {
        unsetenv("GPUFL_ANALYSIS_LIBRARY");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(before_any_init),
        /* first session of the process: the ring pool is not resident yet */
        cmocka_unit_test(monitor_init_adds_at_most_8_mib),
        cmocka_unit_test(layout_and_headers),
        cmocka_unit_test(report_without_the_analysis_library),
        cmocka_unit_test(legend_names_every_value),
        cmocka_unit_test(session_ids_unique_and_sorted),
        cmocka_unit_test(default_log_path_is_app_name_dot_log),
        cmocka_unit_test(unwritable_log_path_fails_cleanly),
        cmocka_unit_test(init_twice_keeps_first_session),
        cmocka_unit_test(scopes_after_shutdown_are_noops),
        cmocka_unit_test(unbalanced_and_implicit_ends),
        cmocka_unit_test(stale_handle_from_an_earlier_session),
        cmocka_unit_test(long_flush_interval_loses_nothing),
        cmocka_unit_test(kill_switch),
        cmocka_unit_test(upload_resolves_and_reports),
        cmocka_unit_test(sample_period_below_a_tick_warns),
        cmocka_unit_test(trace_without_a_driver_runs_monitor),
        cmocka_unit_test(system_windows_are_counted),
        cmocka_unit_test(samples_only_inside_scopes_without_continuous),
        cmocka_unit_test(continuous_sampling),
        cmocka_unit_test(short_session_gets_a_final_cpu_figure),
        cmocka_unit_test(data_reaches_disk_within_a_second),
        cmocka_unit_test(flush_logs_always_writes_promptly),
        cmocka_unit_test(names_are_escaped_and_capped),
        cmocka_unit_test(header_records_the_job_id),
        cmocka_unit_test(header_records_the_run_id),
        cmocka_unit_test(program_init_joins_the_injected_session),
        cmocka_unit_test(rotation_into_segments),
        cmocka_unit_test(report_of_last_session),
    };
    return cmocka_run_group_tests_name("session", tests, NULL, NULL);
}
