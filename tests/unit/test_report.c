// SPDX-License-Identifier: Apache-2.0
/*
 * test_report.c - the log reader, the session model and the text report,
 * against hand-written session fixtures (tests/fixtures/sessions/, and
 * deliberately damaged ones in tests/fixtures/bad/) and golden reports
 * (tests/fixtures/golden/, one per format: .txt, .json, .md, .html), the
 * report's formats, its insights section and the load's progress
 * callback. GPUFL_UPDATE_GOLDEN=1 rewrites the goldens.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpufl/gpufl.h>

#include "analysis/model.h"
#include "analysis/reader.h"
#include "analysis/insight_rules.h"
#include "analysis/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef GPUFL_TEST_SOURCE_DIR
#error "GPUFL_TEST_SOURCE_DIR must name the tests/ directory"
#endif

#define MS  1000000LL
#define GIB (1024.0 * 1024.0 * 1024.0)

static const char *fixture(const char *rel) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/fixtures/%s", GPUFL_TEST_SOURCE_DIR, rel);
    return path;
}

static gpufl__model_t *load(const char *rel) {
    gpufl__model_t *m = NULL;
    int rc = gpufl__model_load(&m, fixture(rel));
    if (rc) print_error("load %s: %d %s\n", rel, rc, gpufl_last_error());
    assert_int_equal(rc, 0);
    assert_non_null(m);
    return m;
}

/* Per-path figures computed from the model's instances. */
typedef struct agg {
    size_t calls, open;
    int64_t total, min, max, repeat_sum;
} agg_t;

static agg_t aggregate(const gpufl__model_t *m, const char *path) {
    agg_t a = {0, 0, 0, INT64_MAX, 0, 0};
    for (size_t i = 0; i < m->n_scopes; i++) {
        const gpufl__model_scope_t *s = &m->scopes[i];
        if (strcmp(s->path, path) != 0) continue;
        if (s->open) {
            a.open++;
            continue;
        }
        int64_t d = s->end_ns - s->begin_ns;
        a.calls++;
        a.total += d;
        if (d < a.min) a.min = d;
        if (d > a.max) a.max = d;
        a.repeat_sum += s->repeat;
    }
    return a;
}

static int has_warning(const gpufl__model_t *m, const char *file, uint64_t line, const char *text) {
    for (size_t i = 0; i < m->n_warnings; i++) {
        const gpufl__model_warning_t *w = &m->warnings[i];
        if (strcmp(w->file, file) == 0 && w->line == line && strstr(w->message, text)) return 1;
    }
    return 0;
}

/* Asserts the number of warnings, listing them when it is wrong. */
static void expect_warnings(const gpufl__model_t *m, size_t n) {
    if (m->n_warnings == n) return;
    for (size_t i = 0; i < m->n_warnings; i++)
        print_message("warning: %s:%llu: %s\n", m->warnings[i].file,
                      (unsigned long long)m->warnings[i].line, m->warnings[i].message);
    assert_int_equal(m->n_warnings, n);
}

/* The report of a model as a heap string. */
static char *render(const gpufl__model_t *m, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    assert_int_equal(gpufl__report_write(m, f), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* Loads the session in dir (limits NULL: the defaults) into *m and returns
 * its text report as a heap string. */
static char *load_and_render(const char *dir, const gpufl__model_limits_t *limits,
                             gpufl__model_t **m) {
    size_t len;
    assert_int_equal(gpufl__model_load_limits(m, dir, limits), 0);
    return render(*m, &len);
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

/* The report of a model in one format as a heap string. */
static char *render_fmt(const gpufl__model_t *m, gpufl_report_format_t fmt, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    assert_int_equal(gpufl__report_write_format(m, fmt, f), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* Compares the report of the session in fixtures/<dir>/<name> in format fmt
 * with golden/<name>.<ext>, byte for byte. */
static void check_golden_in(const char *dir, const char *name, gpufl_report_format_t fmt,
                            const char *ext) {
    char rel[256], golden_path[4096];
    snprintf(rel, sizeof rel, "%s/%s", dir, name);
    gpufl__model_t *m = load(rel);
    size_t len, glen = 0;
    char *text = render_fmt(m, fmt, &len);
    snprintf(rel, sizeof rel, "golden/%s.%s", name, ext);
    snprintf(golden_path, sizeof golden_path, "%s", fixture(rel));
    const char *update = getenv("GPUFL_UPDATE_GOLDEN");
    if (update && *update && strcmp(update, "0") != 0) {
        FILE *f = fopen(golden_path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
    }
    char *golden = read_all(golden_path, &glen);
    if (!golden) print_error("cannot read %s\n", golden_path);
    assert_non_null(golden);
    if (glen != len || memcmp(golden, text, len) != 0) {
        size_t i = 0, line = 1;
        while (i < len && i < glen && text[i] == golden[i]) line += text[i++] == '\n';
        char actual_path[512];
        snprintf(actual_path, sizeof actual_path, "/tmp/gpufl-report-%s.%s", name, ext);
        FILE *f = fopen(actual_path, "wb");
        if (f) {
            fwrite(text, 1, len, f);
            fclose(f);
        }
        print_error("report of %s differs from %s at line %zu; actual output in %s\n", name,
                    golden_path, line, actual_path);
        fail();
    }
    free(golden);
    free(text);
    gpufl__model_destroy(m);
}

static void check_golden_fmt(const char *name, gpufl_report_format_t fmt, const char *ext) {
    check_golden_in("sessions", name, fmt, ext);
}

static void check_golden(const char *name) { check_golden_fmt(name, GPUFL_REPORT_TEXT, "txt"); }

/* ---------------------------------------------------------------------- */

static void test_report_model_basic(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/basic");
    expect_warnings(m, 0);

    /* header */
    assert_true(m->header.present);
    assert_string_equal(m->header.session_id, "20261122T031500.123Z-4711-9f3a");
    assert_string_equal(m->header.app_name, "trainer");
    assert_string_equal(m->header.hostname, "node7");
    assert_string_equal(m->header.gpufl_version, "0.1.0");
    assert_int_equal(m->header.pid, 4711);
    assert_int_equal(m->header.epoch_ns, 1234567890123ULL);
    assert_int_equal(m->header.epoch_unix_us, 1795317300123000LL);

    /* reading */
    assert_int_equal(m->read.segments[GPUFL_LOG_FILE_DEVICE], 1);
    assert_int_equal(m->read.segments[GPUFL_LOG_FILE_SCOPE], 1);
    assert_int_equal(m->read.segments[GPUFL_LOG_FILE_SYSTEM], 1);
    assert_int_equal(m->read.lines, 4 + 21 + 7);
    assert_int_equal(m->read.truncated_lines, 0);
    assert_int_equal(m->read.corrupt_lines, 0);
    assert_int_equal(m->read.unknown_records, 0);
    assert_int_equal(m->dict.count, 16);

    /* single records */
    assert_non_null(m->options);
    assert_non_null(m->capabilities);
    assert_non_null(m->host_info);
    assert_string_equal(gpufl__model_json_str(m->capabilities, "engine"), "Monitor");
    assert_string_equal(gpufl__model_json_str(m->capabilities, "engine_requested"), "Trace");

    /* scopes: 16 instances on two threads, one still open */
    assert_int_equal(m->n_scopes, 16);
    assert_int_equal(m->n_open_scopes, 1);
    assert_int_equal(m->scope_ends_unmatched, 0);
    assert_int_equal(m->scope_ends_duplicate, 0);
    const gpufl__model_scope_t *s = gpufl__model_scope_find(m, 16);
    assert_non_null(s);
    assert_true(s->open);
    assert_string_equal(s->path, "prefetch");
    assert_int_equal(s->tid, 4712);
    assert_int_equal(s->end_ns, GPUFL_MODEL_UNKNOWN);
    s = gpufl__model_scope_find(m, 13);
    assert_non_null(s);
    assert_true(s->implicit);
    assert_int_equal(s->parent, 12);
    assert_int_equal(s->depth, 2);
    assert_string_equal(s->name, "decode");
    assert_string_equal(s->path, "load_batch/decode");
    assert_int_equal(s->end_ns - s->begin_ns, 49 * MS);
    s = gpufl__model_scope_find(m, 5);
    assert_string_equal(s->tag, "epoch=1");
    assert_string_equal(gpufl__model_scope_find(m, 2)->tag, "epoch=0");
    assert_string_equal(gpufl__model_scope_find(m, 1)->tag, "");
    assert_null(gpufl__model_scope_find(m, 17));

    agg_t a = aggregate(m, "train");
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.total, 2000 * MS);
    a = aggregate(m, "train/epoch");
    assert_int_equal(a.calls, 2);
    assert_int_equal(a.total, 1970 * MS);
    assert_int_equal(a.min, 980 * MS);
    assert_int_equal(a.max, 990 * MS);
    a = aggregate(m, "train/epoch/backward");
    assert_int_equal(a.total, 1130 * MS);
    a = aggregate(m, "load_batch");
    assert_int_equal(a.calls, 3);
    assert_int_equal(a.total, 120 * MS);
    assert_int_equal(a.min, 30 * MS);
    assert_int_equal(a.max, 50 * MS);
    a = aggregate(m, "load_batch/decode");
    assert_int_equal(a.calls, 3);
    assert_int_equal(a.total, 92 * MS);
    assert_int_equal(a.min, 18 * MS);
    assert_int_equal(a.max, 49 * MS);
    /* GFL_BENCH: two calls of 100 measured iterations after 10 warmups */
    a = aggregate(m, "matmul_bench");
    assert_int_equal(a.calls, 2);
    assert_int_equal(a.total, 1250 * MS);
    assert_int_equal(a.repeat_sum, 200);
    assert_int_equal(a.total / a.repeat_sum, 6250000); /* 6.25 ms per iteration */
    assert_int_equal(gpufl__model_scope_find(m, 8)->warmup, 10);
    a = aggregate(m, "prefetch");
    assert_int_equal(a.calls, 0);
    assert_int_equal(a.open, 1);

    /* host samples: the first has no rates yet; cgroup limits are null */
    assert_int_equal(m->n_samples, 5);
    assert_true(m->samples[0].cpu_pct < 0);
    assert_true(m->samples[0].proc_cpu_pct < 0);
    double sum = 0, max = 0;
    size_t n = 0;
    for (size_t i = 0; i < m->n_samples; i++) {
        assert_int_equal(m->samples[i].cg_mem_limit_bytes, GPUFL_MODEL_UNKNOWN);
        assert_true(m->samples[i].cg_cpu_limit_cores < 0);
        if (m->samples[i].cpu_pct < 0) continue;
        sum += m->samples[i].cpu_pct;
        if (m->samples[i].cpu_pct > max) max = m->samples[i].cpu_pct;
        n++;
    }
    assert_int_equal(n, 4);
    assert_true(sum / (double)n == 46.5);
    assert_true(max == 60.5);
    assert_true(m->samples[2].proc_cpu_pct == 101.5);
    assert_int_equal(m->samples[2].cg_mem_used_bytes, 3LL << 30);
    assert_int_equal(m->samples[4].ts_ns, 2500 * MS);

    /* windows, events, drops, session end */
    assert_int_equal(m->n_windows, 2);
    assert_string_equal(m->windows[0].name, "training");
    assert_false(m->windows[0].is_stop);
    assert_true(m->windows[1].is_stop);
    assert_int_equal(m->windows[1].active, 0);
    assert_true(m->windows[1].has_snapshot);
    assert_true(m->windows[1].snapshot.cpu_pct == 35.0);
    assert_int_equal(m->n_events, 1);
    assert_int_equal(m->events[0].level, GPUFL_MODEL_LEVEL_WARN);
    assert_string_equal(m->events[0].code, "unbalanced_scope_end");
    assert_int_equal(m->events[0].file, GPUFL_LOG_FILE_SCOPE);
    assert_true(m->drops.present);
    assert_int_equal(m->drops.ts_ns, 4000 * MS);
    assert_int_equal(m->drops.unbalanced_ends, 1);
    assert_int_equal(m->drops.records, 0);
    assert_true(m->session_end.present);
    assert_int_equal(m->session_end.files, 3);
    assert_int_equal(m->session_end.duration_ns, 4000 * MS);
    assert_int_equal(m->first_ts_ns, 50 * MS);
    assert_int_equal(m->last_ts_ns, 4000 * MS);
    gpufl__model_destroy(m);
}

static void test_report_golden_basic(void **state) {
    (void)state;
    check_golden("basic");
}

static void test_report_golden_killed(void **state) {
    (void)state;
    check_golden("killed");
}

static void test_report_golden_rotated(void **state) {
    (void)state;
    check_golden("rotated");
}

static void test_report_golden_gpu(void **state) {
    (void)state;
    check_golden("gpu");
}

/* A killed writer: no session_end, open scopes, an incomplete last line. */
static void test_report_truncated_last_line(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/killed");
    expect_warnings(m, 0); /* the incomplete line is expected, not a problem */
    assert_int_equal(m->read.truncated_lines, 1);
    assert_int_equal(m->read.corrupt_lines, 0);
    assert_false(m->session_end.present);
    assert_int_equal(m->n_scopes, 5);
    assert_int_equal(m->n_open_scopes, 2);
    assert_true(gpufl__model_scope_find(m, 5)->open); /* its end was in the cut line */
    assert_true(gpufl__model_scope_find(m, 1)->open);
    agg_t a = aggregate(m, "serve/handle");
    assert_int_equal(a.calls, 3);
    assert_int_equal(a.total, 48 * MS);
    assert_int_equal(a.open, 1);
    assert_int_equal(m->last_ts_ns, 90 * MS);
    assert_int_equal(m->n_samples, 3);
    assert_int_equal(m->samples[0].cg_mem_limit_bytes, 4LL << 30);
    assert_true(m->samples[1].cg_cpu_limit_cores == 2.0);

    size_t len;
    char *text = render(m, &len);
    assert_non_null(strstr(text, "90.0 ms (no session_end: still running or killed)"));
    assert_non_null(strstr(text, "1 incomplete last line ignored"));
    free(text);
    gpufl__model_destroy(m);
}

/* Segments are read in order; scopes join across them; dicts repeat. */
static void test_report_rotated_segments(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/rotated");
    expect_warnings(m, 0);
    assert_int_equal(m->read.segments[GPUFL_LOG_FILE_SCOPE], 2);
    assert_int_equal(m->read.segments[GPUFL_LOG_FILE_DEVICE], 1);
    assert_int_equal(m->read.segments[GPUFL_LOG_FILE_SYSTEM], 0); /* no system.log */
    assert_int_equal(m->n_scopes, 5);
    assert_int_equal(m->n_open_scopes, 0);
    const gpufl__model_scope_t *s = gpufl__model_scope_find(m, 2); /* begun in .0, ended in .1 */
    assert_int_equal(s->begin_ns, 30 * MS);
    assert_int_equal(s->end_ns, 50 * MS);
    agg_t a = aggregate(m, "step");
    assert_int_equal(a.calls, 4);
    assert_int_equal(a.total, 100 * MS);
    assert_int_equal(a.min, 10 * MS);
    assert_int_equal(a.max, 40 * MS);
    assert_string_equal(gpufl__model_str(m, 3), "step/io");
    assert_string_equal(gpufl__model_str(m, 0), "");
    assert_null(gpufl__model_str(m, 99));
    assert_int_equal(m->n_samples, 0);
    gpufl__model_destroy(m);
}

/* Corrupt lines are reported with file:line and skipped; the rest loads. */
static void test_report_corrupt_lines(void **state) {
    (void)state;
    gpufl__model_t *m = load("bad/corrupt");
    expect_warnings(m, 5);
    assert_int_equal(m->read.corrupt_lines, 5);
    assert_true(has_warning(m, "scope.log", 4, "not JSON at column 4: '[' or '{' expected"));
    assert_true(has_warning(m, "scope.log", 5, "scope_begin: column \"tid\" has 1 rows"));
    assert_true(has_warning(m, "scope.log", 6, "scope_end: row 0: ts_ns is not an integer"));
    assert_true(has_warning(m, "scope.log", 8, "not a JSON object"));
    assert_true(has_warning(m, "scope.log", 9, "no \"type\""));
    /* lines 3 and 7 loaded: both scopes closed by line 7, not by the bad line 6 */
    assert_int_equal(m->n_scopes, 2);
    assert_int_equal(m->n_open_scopes, 0);
    assert_int_equal(gpufl__model_scope_find(m, 1)->end_ns, 9 * MS);
    assert_int_equal(gpufl__model_scope_find(m, 2)->end_ns, 5 * MS);
    assert_null(gpufl__model_scope_find(m, 3));
    assert_true(m->session_end.present);

    size_t len;
    char *text = render(m, &len);
    assert_non_null(strstr(text, "\nLog problems\n  scope.log:4: not JSON"));
    assert_non_null(strstr(text, "log problems       5 (listed at the end)"));
    free(text);
    gpufl__model_destroy(m);
}

/* Unknown record types, unknown columns and newer versions are skipped. */
static void test_report_unknown_ignored(void **state) {
    (void)state;
    gpufl__model_t *m = load("bad/unknown");
    expect_warnings(m, 1);
    assert_int_equal(m->read.corrupt_lines, 0);
    assert_int_equal(m->read.unknown_records, 2); /* kernel_frobnicate, scope_begin v2 */
    assert_int_equal(m->unknown_versions, 1);
    assert_true(has_warning(m, "", 0, "1 records of a newer version skipped"));
    assert_int_equal(m->n_scopes, 1);
    assert_int_equal(m->scopes[0].end_ns - m->scopes[0].begin_ns, 2 * MS);
    assert_true(m->session_end.present);
    gpufl__model_destroy(m);
}

static void test_report_missing_dir(void **state) {
    (void)state;
    gpufl__model_t *m = (gpufl__model_t *)&m; /* must be reset to NULL */
    assert_int_equal(gpufl__model_load(&m, fixture("sessions/no-such-session")), GPUFL_ENOTFOUND);
    assert_null(m);
    assert_non_null(strstr(gpufl_last_error(), "no-such-session"));
    /* a file, not a directory */
    assert_int_equal(gpufl__model_load(&m, fixture("sessions/basic/scope.log")), GPUFL_ENOTFOUND);
    /* a directory without any log */
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(gpufl__model_load(&m, dir), GPUFL_ENOTFOUND);
    assert_non_null(strstr(gpufl_last_error(), "no log file"));
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(gpufl__report_session_dir(fixture("sessions/no-such-session"), stdout),
                     GPUFL_ENOTFOUND);
    gpufl__model_destroy(NULL);
}

static void write_file(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void remove_file(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(unlink(path), 0);
}

/* A line past the cap is reported and skipped without being held whole. */
static void test_report_oversized_line(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    size_t big = 3u << 20; /* longer than one read chunk */
    char *text = malloc(big + 4096);
    assert_non_null(text);
    int n = sprintf(text, "{\"type\":\"header\",\"v\":1,\"file\":\"scope\",\"segment\":0}\n"
                          "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"");
    memset(text + n, 'x', big);
    n += (int)big;
    n += sprintf(text + n, "\"]}\n{\"type\":\"dict\",\"v\":1,\"id\":[2],\"str\":[\"ok\"]}\n"
                           "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[5],\"tid\":[1],\"id\":[1],"
                           "\"parent\":[0],\"depth\":[1],\"name\":[2],\"tag\":[0],\"path\":[2],"
                           "\"repeat\":[0],\"warmup\":[0]}\n");
    write_file(dir, "scope.log", text);
    gpufl__model_limits_t lim = {0};
    lim.max_line_bytes = 1 << 20;
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load_limits(&m, dir, &lim), 0);
    expect_warnings(m, 1);
    assert_int_equal(m->read.oversized_lines, 1);
    assert_int_equal(m->read.lines, 4);
    assert_true(has_warning(m, "scope.log", 2, "longer than 1048576 bytes"));
    assert_null(gpufl__model_str(m, 1));
    assert_int_equal(m->n_scopes, 1);
    assert_string_equal(m->scopes[0].name, "ok");
    gpufl__model_destroy(m);

    /* A line just past the cap that arrives whole in one read is skipped too. */
    lim.max_line_bytes = big - 16;
    assert_int_equal(gpufl__model_load_limits(&m, dir, &lim), 0);
    expect_warnings(m, 1);
    assert_int_equal(m->read.oversized_lines, 1);
    assert_null(gpufl__model_str(m, 1));
    assert_int_equal(m->n_scopes, 1);
    gpufl__model_destroy(m);

    /* Without the cap, the same long line loads. */
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    assert_int_equal(m->read.oversized_lines, 0);
    assert_int_equal(strlen(gpufl__model_str(m, 1)), big);
    gpufl__model_destroy(m);
    remove_file(dir, "scope.log");
    assert_int_equal(rmdir(dir), 0);
    free(text);
}

/* Every array has a cap; what passes it is counted, not kept. */
static void test_report_caps_counted(void **state) {
    (void)state;
    gpufl__model_limits_t lim = {0};
    lim.max_scopes = 3;
    lim.max_samples = 2;
    lim.max_events = 1;
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load_limits(&m, fixture("sessions/basic"), &lim), 0);
    assert_int_equal(m->n_scopes, 3);
    assert_int_equal(m->scopes_over_cap, 13);
    assert_int_equal(m->scope_ends_over_cap, 12);
    assert_int_equal(m->n_samples, 2);
    assert_int_equal(m->samples_over_cap, 3);
    assert_int_equal(m->n_events, 1);
    assert_int_equal(m->events_over_cap, 0);
    assert_true(has_warning(m, "", 0, "13 scope rows past the cap of 3"));
    assert_true(has_warning(m, "", 0, "3 host samples past the cap of 2"));
    gpufl__model_destroy(m);

    /* GPU samples and devices have caps of their own */
    lim = (gpufl__model_limits_t){0};
    lim.max_gpu_samples = 5;
    lim.max_gpus = 1;
    assert_int_equal(gpufl__model_load_limits(&m, fixture("sessions/gpu"), &lim), 0);
    assert_int_equal(m->n_gpu_samples, 5);
    assert_int_equal(m->gpu_samples_over_cap, 15);
    assert_int_equal(m->n_gpus, 1);
    assert_int_equal(m->gpus[0].device, 0);
    /* device 1: its gpu_info, its gpu_processes and its 2 kept rows */
    assert_int_equal(m->gpus_over_cap, 4);
    assert_true(has_warning(m, "", 0, "15 GPU samples past the cap of 5"));
    assert_true(has_warning(m, "", 0, "4 GPU records name devices past the cap of 1"));
    size_t len;
    char *text = render(m, &len); /* rows of a device without an entry are left out */
    assert_non_null(strstr(text, "  1 device, 5 GPU samples\n"));
    assert_non_null(strstr(text, "    samples            3 from 1.00 s to 2.00 s\n"));
    free(text);
    gpufl__model_destroy(m);

    lim = (gpufl__model_limits_t){0};
    lim.max_warnings = 2;
    assert_int_equal(gpufl__model_load_limits(&m, fixture("bad/corrupt"), &lim), 0);
    assert_int_equal(m->n_warnings, 2);
    assert_int_equal(m->warnings_over_cap, 3);
    gpufl__model_destroy(m);
}

/* The summary of the CPU figures: one above what the host's CPUs allow (a
 * log written before figures were clamped) is pointed out; samples closer
 * than a figure's shortest interval carry none, and the summary says why. */
static void test_report_host_cpu_bounds(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    /* an older log: no cpus_allowed or cpu_min_interval_ns; 2 CPUs */
    write_file(dir, "system.log",
               "{\"type\":\"header\",\"v\":1,\"segment\":0}\n"
               "{\"type\":\"host_info\",\"v\":1,\"cpu_count\":2}\n"
               "{\"type\":\"host_sample\",\"v\":1,\"ts_ns\":[10000000,20000000,30000000],"
               "\"cpu_pct\":[null,90,95],\"proc_cpu_pct\":[null,0,125],"
               "\"mem_used_bytes\":[1,1,1],\"mem_total_bytes\":[2,2,2],"
               "\"proc_rss_bytes\":[1,1,1],\"cg_mem_used_bytes\":[1,1,1],"
               "\"cg_mem_limit_bytes\":[null,null,null],\"cg_cpu_pct\":[null,236,150],"
               "\"cg_cpu_limit_cores\":[null,null,null]}\n");
    gpufl__model_t *m = NULL;
    char *text = load_and_render(dir, NULL, &m);
    assert_non_null(strstr(text, "  process CPU        avg 62.5%, max 125.0% of one CPU (2 of 3 "
                                 "samples)\n"));
    assert_non_null(strstr(text, "  cgroup CPU         avg 193.0%, max 236.0% of one CPU (2 of 3 "
                                 "samples); 1 above the 200% 2 CPUs allow\n"));
    free(text);
    gpufl__model_destroy(m);

    /* a log of samples 10 ms apart whose CPU figures need 90 ms, on a
     * cpuset of 1 CPU out of 2 */
    write_file(dir, "system.log",
               "{\"type\":\"header\",\"v\":1,\"segment\":0}\n"
               "{\"type\":\"host_info\",\"v\":1,\"cpu_count\":2,\"cpus_allowed\":1,"
               "\"clock_ticks_per_s\":100,\"cpu_min_interval_ns\":90000000}\n"
               "{\"type\":\"host_sample\",\"v\":1,\"ts_ns\":[10000000,20000000,100000000],"
               "\"cpu_pct\":[null,null,40],\"proc_cpu_pct\":[null,null,100],"
               "\"mem_used_bytes\":[1,1,1],\"mem_total_bytes\":[2,2,2],"
               "\"proc_rss_bytes\":[1,1,1],\"cg_mem_used_bytes\":[1,1,1],"
               "\"cg_mem_limit_bytes\":[null,null,null],\"cg_cpu_pct\":[null,null,100],"
               "\"cg_cpu_limit_cores\":[null,null,null]}\n");
    text = load_and_render(dir, NULL, &m);
    assert_non_null(strstr(text, "  host CPU           avg 40.0%, max 40.0% (1 of 3 samples: a "
                                 "figure needs 90 ms)\n"));
    assert_non_null(strstr(text, "  process CPU        avg 100.0%, max 100.0% of one CPU (1 of 3 "
                                 "samples: a figure needs 90 ms)\n"));
    assert_null(strstr(text, "above the"));
    assert_null(strstr(text, "no figure"));
    free(text);
    /* Markdown and HTML give the reason too; JSON carries the interval */
    size_t len;
    char *md = render_fmt(m, GPUFL_REPORT_MARKDOWN, &len);
    assert_non_null(strstr(md, "| 1 of 3: a figure needs 90 ms |"));
    free(md);
    char *html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    assert_non_null(strstr(html, "1 of 3: a figure needs 90 ms"));
    free(html);
    char *js = render_fmt(m, GPUFL_REPORT_JSON, &len);
    assert_non_null(strstr(js, "\"cpu_min_interval_ns\": 90000000"));
    assert_non_null(strstr(js, "\"cpu_none\": null"));
    free(js);
    gpufl__model_destroy(m);

    /* a session shorter than the figures' interval: no figure at all, and
     * every format says why in one line */
    write_file(dir, "system.log",
               "{\"type\":\"header\",\"v\":1,\"segment\":0}\n"
               "{\"type\":\"host_info\",\"v\":1,\"cpu_count\":2,\"cgroup_version\":2,"
               "\"clock_ticks_per_s\":100,\"cpu_min_interval_ns\":90000000}\n"
               "{\"type\":\"host_sample\",\"v\":1,\"ts_ns\":[20000000,40000000,77000000],"
               "\"cpu_pct\":[null,null,null],\"proc_cpu_pct\":[null,null,null],"
               "\"mem_used_bytes\":[1,1,1],\"mem_total_bytes\":[2,2,2],"
               "\"proc_rss_bytes\":[1,1,1],\"cg_mem_used_bytes\":[1,1,1],"
               "\"cg_mem_limit_bytes\":[null,null,null],\"cg_cpu_pct\":[null,null,null],"
               "\"cg_cpu_limit_cores\":[null,null,null]}\n");
    static const char none[] = "no figure for host, process and cgroup CPU: the samples span 57 "
                               "ms; a figure needs 90 ms (9 clock ticks)";
    text = load_and_render(dir, NULL, &m);
    char want[256];
    snprintf(want, sizeof want, "  CPU figures        %s\n", none);
    assert_non_null(strstr(text, want));
    free(text);
    md = render_fmt(m, GPUFL_REPORT_MARKDOWN, &len);
    snprintf(want, sizeof want, "CPU figures: %s", none);
    assert_non_null(strstr(md, want));
    free(md);
    html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    assert_non_null(strstr(html, want));
    free(html);
    js = render_fmt(m, GPUFL_REPORT_JSON, &len);
    snprintf(want, sizeof want, "\"cpu_none\": \"%s\"", none);
    assert_non_null(strstr(js, want));
    free(js);
    gpufl__model_destroy(m);

    /* a log without the interval: plainly none in the log; no cgroup, so
     * only the host and process figures are missed */
    write_file(dir, "system.log",
               "{\"type\":\"header\",\"v\":1,\"segment\":0}\n"
               "{\"type\":\"host_info\",\"v\":1,\"cpu_count\":2}\n"
               "{\"type\":\"host_sample\",\"v\":1,\"ts_ns\":[20000000],"
               "\"cpu_pct\":[null],\"proc_cpu_pct\":[null],\"mem_used_bytes\":[1],"
               "\"mem_total_bytes\":[2],\"proc_rss_bytes\":[1],\"cg_mem_used_bytes\":[null],"
               "\"cg_mem_limit_bytes\":[null],\"cg_cpu_pct\":[null],"
               "\"cg_cpu_limit_cores\":[null]}\n");
    text = load_and_render(dir, NULL, &m);
    assert_non_null(
        strstr(text, "  CPU figures        no figure for host and process CPU in the log\n"));
    free(text);
    gpufl__model_destroy(m);
    remove_file(dir, "system.log");
    assert_int_equal(rmdir(dir), 0);
}

/* Scope ends whose begins were lost: one whose name survives under a lost,
 * unnamed parent has a name but no path, which the report says as such;
 * the JSON report carries the lost ends and the damaged lines' totals. */
static void test_report_lost_name_without_path(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "scope.log",
               "{\"type\":\"header\",\"v\":1,\"format\":\"gpufl-log\",\"file\":\"scope\","
               "\"segment\":0}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[1,2,3],\"str\":[\"epoch\",\"step\","
               "\"epoch/step\"]}\n"
               "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[1000000],\"tid\":[44],\"id\":[1],"
               "\"parent\":[0],\"depth\":[1\n"
               "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[2000000],\"tid\":[44],\"id\":[2],"
               "\"parent\":[1],\"depth\":[2],\"name\":[2],\"tag\":[0],\"pa\n"
               "{\"type\":\"scope_end\",\"v\":1,\"ts_ns\":[5000000,9000000],\"tid\":[44,44],"
               "\"id\":[2,1],\"implicit\":[0,0]}\n");
    gpufl__model_t *m = NULL;
    char *text = load_and_render(dir, NULL, &m);
    assert_non_null(strstr(text, "  2 scope ends had no begin (lost with 2 damaged lines in "
                                 "scope.log); 1 with no name left; 1 with a name but no path "
                                 "(the begin above it was lost too): step\n"));
    assert_null(strstr(text, "no name left for them"));
    free(text);
    size_t len;
    char *js = render_fmt(m, GPUFL_REPORT_JSON, &len);
    json_error_t err;
    json_t *doc = json_loads(js, 0, &err);
    assert_non_null(doc);
    json_t *lost = json_object_get(json_object_get(doc, "scopes"), "lost_ends");
    assert_int_equal(json_integer_value(json_object_get(lost, "count")), 2);
    assert_int_equal(json_integer_value(json_object_get(lost, "unnamed")), 1);
    assert_int_equal(json_integer_value(json_object_get(lost, "no_path")), 1);
    assert_int_equal(json_array_size(json_object_get(lost, "paths")), 0);
    json_t *dmg =
        json_object_get(json_object_get(json_object_get(doc, "session"), "log"), "damaged");
    assert_int_equal(json_integer_value(json_object_get(dmg, "lines")), 2);
    assert_int_equal(json_integer_value(json_object_get(dmg, "rows_lost")), 2);
    assert_true(json_is_false(json_object_get(dmg, "rows_at_least")));
    assert_int_equal(json_integer_value(json_object_get(dmg, "rows_unknown")), 0);
    json_decref(doc);
    free(js);
    gpufl__model_destroy(m);
    remove_file(dir, "scope.log");
    assert_int_equal(rmdir(dir), 0);
}

/* Segment bookkeeping: a missing segment named by segment_end, a header of
 * the wrong segment, a dict id redefined. */
static void test_report_segment_checks(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "scope.log",
               "{\"type\":\"header\",\"v\":1,\"segment\":0}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"a\"]}\n"
               "{\"type\":\"segment_end\",\"v\":1,\"next\":\"scope.log.1\"}\n");
    write_file(dir, "system.log",
               "{\"type\":\"header\",\"v\":1,\"segment\":0}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"b\"]}\n");
    write_file(dir, "device.log", "{\"type\":\"header\",\"v\":1,\"segment\":3}\n");
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    expect_warnings(m, 3);
    assert_true(
        has_warning(m, "scope.log", 0, "segment_end names 'scope.log.1', which is missing"));
    assert_true(has_warning(m, "system.log", 2, "dict: id 1 redefined"));
    assert_true(has_warning(m, "device.log", 1, "header says segment 3"));
    assert_string_equal(gpufl__model_str(m, 1), "a");
    assert_int_equal(m->dict.conflicts, 1);
    gpufl__model_destroy(m);
    remove_file(dir, "scope.log");
    remove_file(dir, "system.log");
    remove_file(dir, "device.log");
    assert_int_equal(rmdir(dir), 0);
}

/* The GPU session: an H100 and a MIG instance of another, sampled ten times. */
static void test_report_model_gpu(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/gpu");
    expect_warnings(m, 0);
    assert_int_equal(m->read.lines, 15 + 5 + 5);
    assert_int_equal(m->read.corrupt_lines, 0);
    assert_int_equal(m->read.unknown_records, 0);
    assert_int_equal(m->first_ts_ns, 900 * MS);
    assert_int_equal(m->last_ts_ns, 6000 * MS);

    /* gpu_info */
    assert_int_equal(m->n_gpus, 2);
    assert_int_equal(m->gpus_over_cap, 0);
    const gpufl__model_gpu_t *g = gpufl__model_gpu_find(m, 0);
    assert_ptr_equal(g, &m->gpus[0]);
    assert_true(g->has_info);
    assert_int_equal(g->device, 0);
    assert_int_equal(g->nvml_index, 0);
    assert_int_equal(g->mig_index, GPUFL_MODEL_UNKNOWN);
    assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(g->uuid, "GPU-5f2c9a1e-7b3d-4c2a-9e8f-0123456789ab");
    assert_string_equal(g->pci_bus_id, "00000000:1B:00.0");
    assert_string_equal(g->compute_capability, "9.0");
    assert_int_equal(g->sm_count, 132);
    assert_int_equal(g->mem_total_bytes, 85520809984LL);
    assert_string_equal(g->driver_version, "580.95.05");
    assert_int_equal(g->cuda_driver_version, 13000);
    assert_int_equal(g->mig_mode, 0);
    assert_int_equal(g->gpm_supported, 1);
    assert_int_equal(g->nvlink_links, 18);
    assert_int_equal(g->power_limit_mw, 700000);
    assert_string_equal(g->nvml_version, "13.580.95.05");
    g = gpufl__model_gpu_find(m, 1);
    assert_ptr_equal(g, &m->gpus[1]);
    assert_string_equal(g->name, "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
    assert_int_equal(g->nvml_index, 1);
    assert_int_equal(g->mig_index, 0);
    assert_int_equal(g->mig_mode, 1);
    assert_int_equal(g->gpm_supported, 0);
    assert_int_equal(g->nvlink_links, 0);
    assert_int_equal(g->sm_count, 60);
    assert_int_equal(g->mem_total_bytes, 40320LL << 20);
    assert_int_equal(g->power_limit_mw, GPUFL_MODEL_UNKNOWN);
    assert_null(gpufl__model_gpu_find(m, 2));
    assert_null(gpufl__model_gpu_find(m, -1));

    /* gpu_legend */
    assert_true(m->has_legend);
    assert_string_equal(m->throttle_names[0], "gpu_idle");
    assert_string_equal(m->throttle_names[2], "sw_power_cap");
    assert_string_equal(m->throttle_names[8], "display_clock_setting");
    assert_null(m->throttle_names[9]);

    /* gpu_sample: two batches, rows of both devices interleaved */
    assert_int_equal(m->n_gpu_samples, 20);
    assert_int_equal(m->gpu_samples_over_cap, 0);
    const gpufl__model_gpu_sample_t *x = &m->gpu_samples[6]; /* device 0 at 2.5 s */
    assert_int_equal(x->ts_ns, 2500 * MS);
    assert_int_equal(x->device, 0);
    assert_int_equal(x->gpu_util_pct, 98);
    assert_int_equal(x->mem_util_pct, 60);
    assert_int_equal(x->mem_used_bytes, 64LL << 30);
    assert_int_equal(x->mem_free_bytes, 85520809984LL - (64LL << 30) - 566231040LL);
    assert_int_equal(x->temp_gpu_c, 60);
    assert_int_equal(x->temp_mem_c, 66);
    assert_int_equal(x->power_mw, 698000);
    assert_int_equal(x->power_limit_mw, 700000);
    assert_int_equal(x->energy_mj, 81235393890LL);
    assert_int_equal(x->clock_sm_mhz, 1755);
    assert_int_equal(x->clock_gfx_mhz, 1755);
    assert_int_equal(x->clock_mem_mhz, 2619);
    assert_int_equal(x->fan_pct, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(x->pcie_tx_bytes_per_s, 25LL << 20);
    assert_int_equal(x->pcie_rx_bytes_per_s, 1LL << 30);
    assert_int_equal(x->throttle_reasons, 0x4);
    assert_int_equal(x->ecc_sbe_volatile, 0);
    assert_int_equal(x->nvlink_tx_bytes_per_s, 24LL << 30);
    assert_true(x->sm_active_pct == 28.5);
    assert_true(x->sm_occupancy_pct == 17.0);
    assert_true(x->tensor_active_pct == 10.0);
    assert_true(x->dram_bw_util_pct == 75.0);
    x = &m->gpu_samples[7]; /* the MIG instance at 2.5 s: most values unknown */
    assert_int_equal(x->device, 1);
    assert_int_equal(x->gpu_util_pct, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(x->temp_gpu_c, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(x->power_mw, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(x->energy_mj, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(x->throttle_reasons, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(x->nvlink_rx_bytes_per_s, GPUFL_MODEL_UNKNOWN);
    assert_true(x->sm_active_pct < 0);
    assert_int_equal(x->mem_used_bytes, 24LL << 30);
    assert_int_equal(x->ecc_sbe_volatile, 1);
    assert_int_equal(m->gpu_samples[19].ts_ns, 5500 * MS); /* second batch, last row */
    assert_int_equal(m->gpu_samples[19].ecc_sbe_volatile, 2);

    /* per device figures, as the report computes them */
    int64_t util = 0, energy_first = -1, energy_last = -1;
    double sm_active = 0;
    size_t n0 = 0, n_sm = 0, power_cap = 0, idle = 0;
    for (size_t i = 0; i < m->n_gpu_samples; i++) {
        x = &m->gpu_samples[i];
        if (x->device != 0) continue;
        n0++;
        util += x->gpu_util_pct;
        if (x->sm_active_pct >= 0) sm_active += x->sm_active_pct, n_sm++;
        power_cap += (x->throttle_reasons & 0x4) != 0;
        idle += (x->throttle_reasons & 0x1) != 0;
        if (energy_first < 0) energy_first = x->energy_mj;
        energy_last = x->energy_mj;
    }
    assert_int_equal(n0, 10);
    assert_int_equal(util, 897);     /* avg 89.7% */
    assert_int_equal(n_sm, 9);       /* one GPM sample null */
    assert_true(sm_active == 270.0); /* avg 30.0%: busy, not efficient */
    assert_int_equal(power_cap, 3);
    assert_int_equal(idle, 1);
    assert_int_equal(energy_last - energy_first, 2810000); /* 2810 J over 4.5 s: 624 W */

    /* process_info: kept as a row */
    assert_int_equal(m->n_processes, 1);
    assert_int_equal(m->processes[0].pid, 5150);
    assert_int_equal(m->processes[0].device, 0);
    assert_int_equal(m->processes[0].start_ticks, 123456);
    assert_int_equal(m->processes[0].uid, 1000);
    assert_string_equal(m->processes[0].comm, "python3");
    assert_string_equal(m->processes[0].user, "alice");
    assert_string_equal(m->processes[0].container_runtime, "containerd");
    assert_string_equal(m->processes[0].pod_uid, "12345678-1234-1234-1234-123456789abc");
    assert_string_equal(m->processes[0].slurm_job_id, "");

    /* gpu_processes: the last list and the peak */
    g = &m->gpus[0];
    assert_int_equal(g->procs_records, 3);
    assert_int_equal(g->procs_peak, 3);
    assert_int_equal(g->procs_count, 2);
    assert_int_equal(g->procs_ts_ns, 5500 * MS);
    assert_int_equal(g->n_procs, 2);
    assert_int_equal(g->procs[0].pid, 5150);
    assert_int_equal(g->procs[0].used_bytes, 60LL << 30);
    assert_int_equal(g->procs[1].pid, 5161);
    assert_int_equal(g->procs[1].used_bytes, 1536LL << 20);
    g = &m->gpus[1];
    assert_int_equal(g->procs_records, 1);
    assert_int_equal(g->procs_peak, 1);
    assert_int_equal(g->procs_ts_ns, 1000 * MS);
    assert_int_equal(g->procs[0].pid, 5163);
    assert_int_equal(g->procs[0].used_bytes, GPUFL_MODEL_UNKNOWN);

    /* source_cost, from device.log (nvml) and system.log (host) */
    assert_int_equal(m->n_source_costs, 2);
    const gpufl__model_source_cost_t *c = gpufl__model_source_cost(m, "nvml");
    assert_non_null(c);
    assert_int_equal(c->file, GPUFL_LOG_FILE_DEVICE);
    assert_int_equal(c->samples, 22);
    assert_int_equal(c->total_ns, 22 * 181700);
    assert_int_equal(c->mean_ns, 181700);
    c = gpufl__model_source_cost(m, "host");
    assert_non_null(c);
    assert_int_equal(c->file, GPUFL_LOG_FILE_SYSTEM);
    assert_int_equal(c->samples, 11);
    assert_int_equal(c->mean_ns, 41200);
    assert_null(gpufl__model_source_cost(m, "cupti"));

    /* the rest of the session loads as before */
    assert_int_equal(m->n_samples, 10);
    assert_int_equal(m->n_scopes, 4);
    gpufl__model_destroy(m);
}

/* Damaged GPU lines are reported with file:line and skipped; the rest loads. */
static void test_report_gpu_corrupt(void **state) {
    (void)state;
    gpufl__model_t *m = load("bad/gpu");
    expect_warnings(m, 6);
    assert_int_equal(m->read.corrupt_lines, 5);
    assert_true(
        has_warning(m, "device.log", 5, "gpu_sample: column \"device\" has 1 rows, the others 2"));
    assert_true(
        has_warning(m, "device.log", 6, "gpu_sample: row 0: gpu_util_pct is not an integer"));
    assert_true(has_warning(m, "device.log", 7, "gpu_sample: row 0: device -1 is out of range"));
    assert_true(has_warning(m, "device.log", 8, "gpu_info: no device number"));
    assert_true(has_warning(m, "device.log", 9, "gpu_processes: pid has 2 entries, used_bytes 1"));
    assert_true(has_warning(m, "device.log", 11, "device 0 described again as GPU-99999999"));
    /* lines 4 and 10 loaded; the device without gpu_info still has an entry */
    assert_int_equal(m->n_gpu_samples, 3);
    assert_int_equal(m->n_gpus, 2);
    assert_string_equal(m->gpus[0].name, "Test GPU"); /* the first gpu_info kept */
    assert_int_equal(m->gpus[0].mem_total_bytes, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(m->gpus[0].sm_count, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(m->gpus[0].gpm_supported, GPUFL_MODEL_UNKNOWN);
    assert_string_equal(m->gpus[0].compute_capability, "");
    assert_int_equal(m->gpus[0].procs_records, 0);
    assert_int_equal(m->gpus[1].device, 3);
    assert_false(m->gpus[1].has_info);
    assert_string_equal(m->gpus[1].name, "");
    assert_int_equal(m->gpu_samples[0].throttle_reasons, 512);
    assert_int_equal(m->gpu_samples[0].temp_gpu_c, GPUFL_MODEL_UNKNOWN); /* absent column */
    assert_true(m->gpu_samples[0].dram_bw_util_pct < 0);

    size_t len;
    char *text = render(m, &len);
    /* an unnamed bit by number, the idle bit apart */
    assert_non_null(strstr(text, "    throttle reasons   sw_power_cap 50.0% of samples, "
                                 "bit 9 50.0%\n"
                                 "    idle               50.0% of samples\n"));
    /* only the idle bit: no throttling */
    assert_non_null(strstr(text, "  GPU 3  (no gpu_info record)\n"
                                 "    samples            1 from 5.00 s to 5.00 s\n"
                                 "    GPU util           avg 0.0%, max 0.0%\n"));
    assert_non_null(strstr(text, "    throttle reasons   none\n"
                                 "    idle               100.0% of samples\n"));
    assert_non_null(strstr(text, "  device.log:5: gpu_sample: column \"device\" has 1 rows"));
    assert_null(strstr(text, "efficiency"));
    free(text);
    gpufl__model_destroy(m);
}

/* Without gpu_info records the GPU section says why there is no GPU data. */
static void test_report_gpu_absent(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "device.log",
               "{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n"
               "{\"type\":\"capabilities\",\"v\":1,\"backend_requested\":\"Auto\",\"backend\":"
               "\"None\",\"engine_requested\":\"Monitor\",\"engine\":\"Monitor\",\"features\":"
               "{\"host_metrics\":{\"on\":true},\"nvml\":{\"on\":false,\"why\":"
               "\"libnvidia-ml.so.1 not found\"}}}\n");
    write_file(dir, "system.log",
               "{\"type\":\"header\",\"v\":1,\"file\":\"system\",\"segment\":0}\n"
               "{\"type\":\"source_cost\",\"v\":1,\"source\":\"host\",\"samples\":4,"
               "\"total_ns\":100000,\"mean_ns\":25000}\n");
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    expect_warnings(m, 0);
    assert_int_equal(m->n_gpus, 0);
    assert_int_equal(m->n_gpu_samples, 0);
    size_t len;
    char *text = render(m, &len);
    assert_non_null(strstr(text, "\nGPU\n  GPU sections: no GPU activity recorded "
                                 "(libnvidia-ml.so.1 not found)\n"
                                 "\n  sampling cost: host 25.0 \xc2\xb5s\n"));
    assert_null(strstr(text, "GPU devices"));
    free(text);
    gpufl__model_destroy(m);
    remove_file(dir, "device.log");
    remove_file(dir, "system.log");
    assert_int_equal(rmdir(dir), 0);
}

#define US 1000LL

static void test_report_model_trace(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/trace");
    expect_warnings(m, 0);
    assert_int_equal(m->read.lines, 5);
    assert_int_equal(m->first_ts_ns, 100 * US);
    assert_int_equal(m->last_ts_ns, 5000 * MS);
    /* the rows' device has an entry, without gpu_info */
    assert_int_equal(m->n_gpus, 1);
    assert_int_equal(m->gpus[0].device, 0);
    assert_false(m->gpus[0].has_info);

    assert_int_equal(m->n_kernels, 8);
    assert_int_equal(m->kernels_over_cap, 0);
    const gpufl__model_kernel_t *k = &m->kernels[0];
    assert_int_equal(k->start_ns, 1000 * US);
    assert_int_equal(k->end_ns, 1300 * US);
    assert_int_equal(k->device, 0);
    assert_int_equal(k->stream, 7);
    assert_int_equal(k->correlation, 101);
    assert_int_equal(k->name_id, 1);
    assert_string_equal(k->name, "_Z4gemmPKfS0_Pfiii");
    assert_int_equal(k->grid_x, 128);
    assert_int_equal(k->grid_y, 64);
    assert_int_equal(k->grid_z, 1);
    assert_int_equal(k->block_x, 16);
    assert_int_equal(k->block_y, 16);
    assert_int_equal(k->block_z, 1);
    assert_int_equal(k->registers, 64);
    assert_int_equal(k->static_smem_bytes, 8192);
    assert_int_equal(k->dynamic_smem_bytes, 16384);
    k = &m->kernels[3];
    assert_string_equal(k->name, "_Z7softmaxPKfPfi");
    assert_int_equal(k->stream, 13);
    assert_int_equal(k->correlation, 104);
    assert_int_equal(k->end_ns - k->start_ns, 50 * US);
    assert_int_equal(k->block_x, 1024);
    assert_int_equal(k->registers, 32);
    assert_string_equal(m->kernels[7].name, "_Z4gemmPKfS0_Pfiii");
    assert_int_equal(m->kernels[7].correlation, 108);
    int64_t gpu_ns = 0;
    for (size_t i = 0; i < m->n_kernels; i++)
        gpu_ns += m->kernels[i].end_ns - m->kernels[i].start_ns;
    assert_int_equal(gpu_ns, 1110 * US);

    assert_int_equal(m->n_copies, 4);
    assert_int_equal(m->copies_over_cap, 0);
    const gpufl__model_copy_t *c = &m->copies[0];
    assert_int_equal(c->start_ns, 100 * US);
    assert_int_equal(c->end_ns, 200 * US);
    assert_int_equal(c->device, 0);
    assert_int_equal(c->bytes, 1 << 20);
    assert_int_equal(c->copy_kind, GPUFL_MODEL_COPY_HTOD);
    assert_int_equal(c->src_kind, GPUFL_MODEL_MEM_PAGEABLE);
    assert_int_equal(c->dst_kind, 3);
    assert_int_equal(m->copies[1].src_kind, GPUFL_MODEL_MEM_PINNED);
    c = &m->copies[2];
    assert_int_equal(c->copy_kind, GPUFL_MODEL_COPY_DTOH);
    assert_int_equal(c->dst_kind, GPUFL_MODEL_MEM_PINNED);
    assert_int_equal(c->bytes, 2 << 20);
    c = &m->copies[3];
    assert_int_equal(c->copy_kind, GPUFL_MODEL_COPY_DTOD);
    assert_int_equal(c->bytes, 4 << 20);
    assert_int_equal(c->end_ns - c->start_ns, 50 * US);
    gpufl__model_destroy(m);
}

static void test_report_golden_trace(void **state) {
    (void)state;
    check_golden("trace");
}

/* Sync rows with CPU stacks: the insights name the source line. */
static void test_report_golden_stacks(void **state) {
    (void)state;
    check_golden("stacks");
}

/* Samples of scope path `path` (all reasons), of reason `reason` when it is
 * not NULL (short name). */
static double pc_scope_samples(const gpufl__model_t *m, const char *path, const char *reason) {
    double n = 0;
    for (size_t i = 0; i < m->n_pc_scopes; i++) {
        const gpufl__model_pc_scope_t *s = &m->pc_scopes[i];
        if (s->slot >= m->n_scope_paths || strcmp(m->scope_paths[s->slot].path, path) != 0)
            continue;
        if (!reason || strcmp(m->pc_reasons[s->reason].short_name, reason) == 0) n += s->samples;
    }
    return n;
}

/* PC samples: the model, the attribution by launch rows (the PcSampling
 * engine writes launches, not kernel rows) and the report section. */
static void test_report_golden_pcsampled(void **state) {
    (void)state;
    check_golden("pcsampled");
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, fixture("sessions/pcsampled")), 0);
    expect_warnings(m, 0);
    assert_int_equal(m->n_pc_contexts, 1);
    assert_int_equal(m->pc_contexts[0].period, 16);
    assert_int_equal(m->pc_contexts[0].n_reasons, 18);
    assert_int_equal(m->n_pc_samples, 11);
    assert_int_equal(m->pc_samples_total, 4150);
    assert_int_equal(m->n_pc_windows, 5);
    assert_int_equal(m->n_pc_reasons, 5);
    assert_string_equal(m->pc_reasons[0].short_name, "barrier");
    assert_true(m->pc_reasons[3].issued); /* selected */
    assert_int_equal(m->n_sass, 1);
    assert_int_equal(m->sass[0].n, 6);
    /* launch rows, named through their kernel_config records */
    assert_int_equal(m->n_kernels, 0);
    assert_int_equal(m->n_launches, 7);
    assert_int_equal(m->n_configs, 2);
    const gpufl__model_launch_t *l = &m->launches[4];
    assert_int_equal(l->ts_ns, 480 * MS);
    assert_int_equal(l->tid, 100);
    assert_int_equal(l->context, 1);
    assert_int_equal(l->correlation, 5);
    assert_int_equal(l->config, 1);
    assert_int_equal(l->scope, 1);
    assert_int_equal(l->external_kind, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(l->external_id, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(l->stack, GPUFL_MODEL_UNKNOWN);
    assert_string_equal(gpufl__model_launch_config(m, l)->name, "_Z7stencilPfPKfi");
    assert_string_equal(gpufl__model_launch_name(m, l), "stencil(float*, float const*, int)");
    assert_string_equal(gpufl__model_launch_name(m, &m->launches[5]),
                        "gemm(float const*, float const*, float*)");
    /* Window 1 (0-250 ms, W 100 ms): stencil's launches at 9.98 and 69.98 ms
     * and gemm's at 129.98 and 189.98 ms all lie in train: exact (2000 +
     * 1300). Window 3 (500-750 ms): stencil launched at 480 ms (train) and
     * 599.98 ms (eval): split one to one (700). Window 5 (1000-1250 ms): no
     * stencil launch after 900 ms: the session's launches, 3 in train and 1
     * in eval (100). tiny() has no launch: unattributed (50). */
    assert_true(m->pc_attrib.exact == 3300);
    assert_true(m->pc_attrib.split == 700);
    assert_true(m->pc_attrib.fallback == 100);
    assert_true(m->pc_attrib.unattributed == 50);
    assert_true(m->pc_attrib.by_launch == 4100);
    assert_true(pc_scope_samples(m, "train", NULL) == 3725); /* 3300 + 350 + 75 */
    assert_true(pc_scope_samples(m, "eval", NULL) == 375);   /* 350 + 25 */
    /* by reason: window 3's 600 long_scoreboard split in half, window 5's
     * 100 barrier by 3 to 1 */
    assert_true(pc_scope_samples(m, "train", "long_scoreboard") == 1800);
    assert_true(pc_scope_samples(m, "eval", "long_scoreboard") == 300);
    assert_true(pc_scope_samples(m, "train", "barrier") == 75);
    assert_true(pc_scope_samples(m, "eval", "barrier") == 25);
    assert_true(pc_scope_samples(m, "eval", "wait") == 50);
    gpufl__model_destroy(m);
}

/* SASS metrics: the rows of two contexts summed, one function without a
 * sass record, and the report section (tests/unit/test_sass_metrics.c
 * covers the figures and the insights case by case). */
static void test_report_golden_sassmetrics(void **state) {
    (void)state;
    check_golden("sassmetrics");
    gpufl__model_t *m = load("sessions/sassmetrics");
    expect_warnings(m, 0);
    assert_int_equal(m->n_sass_metrics_contexts, 2);
    assert_string_equal(m->sass_metrics_contexts[0].chip, "GH100");
    assert_true(m->sass_metrics_contexts[1].lazy);
    assert_int_equal(json_array_size(m->sass_metrics_contexts[0].metrics), 4);
    assert_int_equal(m->n_sass_metrics, 24);
    assert_int_equal(m->sass_metrics_replaced, 0);
    assert_non_null(m->sass_metrics_stats);
    assert_int_equal(m->n_sass, 3);
    size_t len;
    char *text = render(m, &len);
    assert_non_null(strstr(text, "\nSASS metrics\n"));
    assert_non_null(strstr(text, "[HIGH] DIVERGENCE: divergent(float*, int): 50.0% thread"));
    assert_non_null(
        strstr(text, "[HIGH] MEMORY: strided(float*, float const*, int): 32.0 sectors"));
    free(text);
    gpufl__model_destroy(m);
}

/* Range profiler: one context profiled, one failed; a metric not
 * evaluated (null) and metrics without a column shown by name. */
static void test_report_golden_rangeprof(void **state) {
    (void)state;
    check_golden("rangeprof");
    gpufl__model_t *m = load("sessions/rangeprof");
    expect_warnings(m, 0);
    assert_int_equal(m->n_range_contexts, 2);
    assert_string_equal(m->range_contexts[0].chip, "GH100");
    assert_int_equal(json_object_size(m->range_contexts[0].left_out), 2);
    assert_int_equal(m->n_ranges, 2);
    assert_string_equal(m->ranges[1].path, "eval");
    assert_non_null(m->range_stats);
    size_t len;
    char *text = render(m, &len);
    assert_non_null(strstr(text, "\nHardware counters per scope\n"));
    assert_non_null(strstr(text, "ranges 2, settling 1, nested 1, concurrent 0, no_context 0, "
                                 "over_capacity 0, lost 0, errors 0"));
    assert_non_null(strstr(text, "  train *   41.2 ms      61.2%      87.4%  2.31   42.1%"));
    assert_true(m->ranges[0].settling && !m->ranges[1].settling);
    assert_non_null(strstr(text, "  eval      12.5 ms"));
    assert_non_null(strstr(text, "eval (scope 3): lts__t_sectors_lookup_hit.sum=5000, "
                                 "sm__inst_executed_pipe_tensor_op_hmma.sum=null"));
    free(text);
    gpufl__model_destroy(m);
}

/* The kernel rows the Trace engine wrote before (and a Deep engine on
 * Blackwell may write), in place of pcsampled's launch rows: samples are
 * given to kernels by GPU time overlap. */
static const char pc_kernel_rows[] =
    "{\"type\":\"kernel\",\"v\":1,\"start_ns\":[10000000,70000000,130000000,190000000,600000000],"
    "\"end_ns\":[60000000,120000000,180000000,240000000,650000000],\"device\":[0,0,0,0,0],"
    "\"context\":[1,1,1,1,1],\"stream\":[7,7,7,7,7],\"correlation\":[1,2,3,4,5],"
    "\"name\":[1,1,3,3,1],\"grid_x\":[1024,1024,1024,1024,1024],\"grid_y\":[1,1,1,1,1],"
    "\"grid_z\":[1,1,1,1,1],\"block_x\":[256,256,256,256,256],\"block_y\":[1,1,1,1,1],"
    "\"block_z\":[1,1,1,1,1],\"registers\":[40,40,40,40,40],\"static_smem_bytes\":[0,0,0,0,0],"
    "\"dynamic_smem_bytes\":[0,0,0,0,0],\"local_bytes_per_thread\":[0,0,0,0,0],"
    "\"graph_id\":[0,0,0,0,0],\"graph_node\":[0,0,0,0,0],\"demangled\":[2,2,4,4,2],"
    "\"scope\":[1,1,1,2,2],\"config\":[null,null,null,null,null],"
    "\"external_kind\":[null,null,null,null,null],\"external_id\":[null,null,null,null,null],"
    "\"launch_ns\":[9980000,69980000,129980000,189980000,599980000],"
    "\"tid\":[100,100,100,100,100],\"stack\":[null,null,null,null,null]}\n";

/* The pcsampled session copied to dir, each device.log line that starts
 * with one of the n prefixes replaced: the first such line by the line
 * given with its prefix, later ones dropped. Returns the lines replaced. */
static size_t pcsampled_replacing(const char *dir, const char *const *prefixes,
                                  const char *const *lines, size_t n) {
    size_t len, replaced = 0;
    char *dev = read_all(fixture("sessions/pcsampled/device.log"), &len);
    char *scope = read_all(fixture("sessions/pcsampled/scope.log"), &len);
    assert_non_null(dev);
    assert_non_null(scope);
    write_file(dir, "scope.log", scope);
    size_t extra = 0;
    for (size_t i = 0; i < n; i++) extra += strlen(lines[i]);
    char *out = malloc(strlen(dev) + extra + 1);
    int *put = calloc(n ? n : 1, sizeof *put);
    assert_non_null(out);
    assert_non_null(put);
    size_t k = 0;
    for (char *line = dev, *end; *line; line = end) {
        end = strchr(line, '\n');
        end = end ? end + 1 : line + strlen(line);
        size_t i = 0;
        while (i < n && strncmp(line, prefixes[i], strlen(prefixes[i])) != 0) i++;
        const char *text = line;
        size_t size = (size_t)(end - line);
        if (i < n) {
            replaced++;
            text = put[i]++ ? "" : lines[i];
            size = strlen(text);
        }
        memcpy(out + k, text, size);
        k += size;
    }
    out[k] = '\0';
    write_file(dir, "device.log", out);
    free(put);
    free(out);
    free(dev);
    free(scope);
    return replaced;
}

/* The pcsampled session in dir with its kernel_config and launch lines
 * (three) replaced by `rows`. */
static void pcsampled_with(const char *dir, const char *rows) {
    const char *const prefixes[] = {"{\"type\":\"kernel_config\"", "{\"type\":\"launch\""};
    const char *const lines[] = {rows, ""};
    assert_int_equal(pcsampled_replacing(dir, prefixes, lines, 2), 3);
}

/* The text report of the pcsampled session with those lines replaced (as
 * pcsampled_replacing), made in a directory of its own and removed after. */
static char *pcsampled_report(const char *const *prefixes, const char *const *lines, size_t n) {
    char dir[] = "/tmp/gpufl-test-pcreport-XXXXXX";
    assert_non_null(mkdtemp(dir));
    pcsampled_replacing(dir, prefixes, lines, n);
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    size_t len;
    char *text = render(m, &len);
    gpufl__model_destroy(m);
    remove_file(dir, "device.log");
    remove_file(dir, "scope.log");
    assert_int_equal(rmdir(dir), 0);
    return text;
}

/* The same samples attributed through kernel rows (GPU time overlap). */
static void test_report_pc_kernel_rows(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-pckernels-XXXXXX";
    assert_non_null(mkdtemp(dir));
    pcsampled_with(dir, pc_kernel_rows);
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    expect_warnings(m, 0);
    assert_int_equal(m->n_kernels, 5);
    assert_int_equal(m->n_launches, 0);
    /* stencil's first window lies in train alone, gemm's splits between
     * train and eval, the last stencil window has no kernel (fallback), and
     * tiny has no kernel rows. */
    assert_true(m->pc_attrib.exact == 2700);
    assert_true(m->pc_attrib.split == 1300);
    assert_true(m->pc_attrib.fallback == 100);
    assert_true(m->pc_attrib.unattributed == 50);
    assert_true(m->pc_attrib.by_launch == 0);
    double train = pc_scope_samples(m, "train", NULL), eval = pc_scope_samples(m, "eval", NULL);
    assert_true(train > 2716.6 && train < 2716.7); /* 2000 + 650 + 100 * 2/3 */
    assert_true(eval > 1383.3 && eval < 1383.4);   /* 700 + 650 + 100 / 3 */
    /* the report shows hotspots, no launch table */
    size_t len;
    char *text = render(m, &len);
    assert_non_null(strstr(text, "Kernel hotspots\n  top 2 kernel names"));
    assert_null(strstr(text, "Kernel launches"));
    assert_null(strstr(text, "does not time kernels"));
    free(text);
    gpufl__model_destroy(m);
    remove_file(dir, "device.log");
    remove_file(dir, "scope.log");
    assert_int_equal(rmdir(dir), 0);
}

/* CUPTI's hardware buffer full: when it first was, and whether samples came
 * after it (a restart) or the stall mix covers the time before it only; and
 * the samples of records CUPTI gave with no function or module. */
static void test_report_pc_buffer_full(void **state) {
    (void)state;
    const char *const prefixes[] = {"{\"type\":\"pc_window\"", "{\"type\":\"pc_sampling_stats\""};
    const char *const lines[] = {
        "{\"type\":\"pc_window\",\"v\":1,\"t0_ns\":[0,250000000,500000000],"
        "\"t1_ns\":[250000000,500000000,750000000],\"context\":[1,1,1],\"drains\":[6,5,5],"
        "\"samples\":[4300,0,0],\"recorded\":[4150,0,0],\"non_user\":[100,0,0],"
        "\"dropped\":[50,0,0],\"buffer_full\":[0,5,5],\"pcs_left\":[0,0,0],"
        "\"unplaced\":[9,0,0]}\n",
        "{\"type\":\"pc_sampling_stats\",\"v\":1,\"ts_ns\":1300000000,\"samples\":4309,"
        "\"recorded\":4150,\"non_user\":100,\"dropped\":50,\"buffer_full\":10,\"drains\":16,"
        "\"contexts\":1,\"rows\":11,\"functions\":3,\"errors\":0,\"restarts\":0,"
        "\"unplaced\":9}\n"};
    char *text = pcsampled_report(prefixes, lines, 2);
    assert_non_null(strstr(text, "first full at 0.2 s (the windows end at 0.8 s); 0 samples "
                                 "recorded after it (sampling restarted 0 times): the stall mix "
                                 "is of the time before it only"));
    assert_non_null(strstr(text, "9 samples in records CUPTI gave with neither a function nor a "
                                 "module"));
    assert_null(strstr(text, "inconsistent"));
    free(text);
}

/* CUPTI's records summing to more samples than it counted (an H100 run
 * recorded 8.5 times as many): the section says the counts are wrong. */
static void test_report_pc_inconsistent(void **state) {
    (void)state;
    const char *const prefixes[] = {"{\"type\":\"pc_sampling_stats\""};
    const char *const lines[] = {
        "{\"type\":\"pc_sampling_stats\",\"v\":1,\"ts_ns\":1300000000,\"samples\":4300,"
        "\"recorded\":36550,\"non_user\":100,\"dropped\":0,\"buffer_full\":0,\"drains\":16,"
        "\"contexts\":1,\"rows\":11,\"functions\":3,\"errors\":0,\"implausible_records\":2}\n"};
    char *text = pcsampled_report(prefixes, lines, 1);
    assert_non_null(strstr(text, "CUPTI's records hold more samples than it counted"));
    assert_non_null(strstr(text, "2 PC records CUPTI gave with more samples than the GPU takes"));
    free(text);
}

/* Launch rows: launches on another context are not candidates, a launch
 * without a record (or config) names no function, malformed lines are
 * reported and skipped, and tid and context may be null. */
static void test_report_pc_launch_rows(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-pclaunch-XXXXXX";
    assert_non_null(mkdtemp(dir));
    static const char cfg[] =
        "{\"type\":\"kernel_config\",\"v\":1,\"ts_ns\":9980000,\"id\":1,"
        "\"name\":\"_Z7stencilPfPKfi\",\"block_threads\":256,\"dynamic_smem_bytes\":0}\n"
        "{\"type\":\"kernel_config\",\"v\":1,\"ts_ns\":129980000,\"id\":2,"
        "\"name\":\"_Z4gemmPKfS0_Pf\",\"block_threads\":128,\"dynamic_smem_bytes\":0}\n";
    /* stencil: 10 ms in train on context 1, 20 ms in eval on context 2 (not
     * a candidate), 600 ms in eval with context null (a candidate);
     * gemm: only on context 2 (no candidate, and its fallback has none
     * either: unattributed); one launch names config 9, which no record has. */
    static const char launches[] =
        "{\"type\":\"launch\",\"v\":1,\"ts_ns\":[10000000,20000000,600000000,130000000,5],"
        "\"tid\":[100,100,null,100,100],\"context\":[1,2,null,2,1],"
        "\"correlation\":[1,2,3,4,5],\"config\":[1,1,1,2,9],\"scope\":[1,2,2,1,null],"
        "\"external_kind\":[null,null,null,null,null],\"external_id\":[null,null,null,null,null],"
        "\"stack\":[null,null,null,null,null]}\n"
        "{\"type\":\"launch\",\"v\":1,\"ts_ns\":[1],\"tid\":[\"x\"],\"context\":[1],"
        "\"correlation\":[1],\"config\":[1],\"scope\":[1],\"external_kind\":[null],"
        "\"external_id\":[null],\"stack\":[null]}\n"
        "{\"type\":\"launch\",\"v\":1,\"tid\":[1],\"context\":[1],\"correlation\":[1],"
        "\"config\":[1],\"scope\":[1],\"external_kind\":[null],\"external_id\":[null],"
        "\"stack\":[null]}\n"
        "{\"type\":\"launch\",\"v\":1,\"ts_ns\":[1],\"tid\":[1],\"context\":[1],"
        "\"correlation\":[null],\"config\":[1],\"scope\":[1],\"external_kind\":[null],"
        "\"external_id\":[null],\"stack\":[null]}\n";
    char rows[sizeof cfg + sizeof launches];
    snprintf(rows, sizeof rows, "%s%s", cfg, launches);
    pcsampled_with(dir, rows);
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    assert_int_equal(m->n_launches, 5);
    assert_int_equal(m->read.corrupt_lines, 3);
    assert_true(has_warning(m, "device.log", 9, "launch: row 0: tid is not an integer"));
    assert_true(has_warning(m, "device.log", 10, "ts_ns"));
    assert_true(has_warning(m, "device.log", 11, "correlation"));
    assert_true(has_warning(m, "", 0, "1 kernel or launch rows name a kernel_config id"));
    assert_int_equal(m->launches[2].tid, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(m->launches[2].context, GPUFL_MODEL_UNKNOWN);
    assert_null(gpufl__model_launch_config(m, &m->launches[4]));
    assert_string_equal(gpufl__model_launch_name(m, &m->launches[4]), "?");
    /* stencil window 1: the train launch alone (2000, exact); window 3: the
     * launch of unknown context at 600 ms (700, exact, eval); window 5: the
     * session's launches of context 1 or unknown, one in train and one in
     * eval (100, split by fallback); gemm: no launch on its context (1300)
     * and tiny (50): unattributed. */
    assert_true(m->pc_attrib.exact == 2700);
    assert_true(m->pc_attrib.split == 0);
    assert_true(m->pc_attrib.fallback == 100);
    assert_true(m->pc_attrib.unattributed == 1350);
    assert_true(m->pc_attrib.by_launch == 2800);
    assert_true(pc_scope_samples(m, "train", NULL) == 2050);
    assert_true(pc_scope_samples(m, "eval", NULL) == 750);
    gpufl__model_destroy(m);
    remove_file(dir, "device.log");
    remove_file(dir, "scope.log");
    assert_int_equal(rmdir(dir), 0);
}

/* Malformed PC sampling lines are reported with file:line and skipped. */
static void test_report_pc_bad_lines(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-pcbad-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[4200];
    snprintf(path, sizeof path, "%s/device.log", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n"
          "{\"type\":\"dict\",\"v\":1,\"id\":[1,2],\"str\":[\"k\",\"r\"]}\n"
          "{\"type\":\"pc_sample\",\"v\":1,\"t0_ns\":[0],\"t1_ns\":[5],\"context\":[1],"
          "\"function\":[1],\"pc\":[0],\"reason\":[2]}\n"
          "{\"type\":\"pc_sample\",\"v\":1,\"t0_ns\":[9],\"t1_ns\":[5],\"context\":[1],"
          "\"function\":[1],\"pc\":[0],\"reason\":[2],\"samples\":[3]}\n"
          "{\"type\":\"pc_sample\",\"v\":1,\"t0_ns\":[0],\"t1_ns\":[5],\"context\":[1],"
          "\"function\":[0],\"pc\":[0],\"reason\":[2],\"samples\":[3]}\n"
          "{\"type\":\"pc_sampling\",\"v\":1,\"ts_ns\":1}\n"
          "{\"type\":\"sass\",\"v\":1,\"cubin\":1,\"function\":1,\"pc\":[0,16],"
          "\"text\":[\"NOP\"]}\n"
          "{\"type\":\"pc_sample\",\"v\":1,\"t0_ns\":[0],\"t1_ns\":[5],\"context\":[1],"
          "\"function\":[1],\"pc\":[0],\"reason\":[2],\"samples\":[3]}\n",
          f);
    fclose(f);
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    assert_int_equal(m->n_pc_samples, 1); /* only the last line */
    assert_int_equal(m->read.corrupt_lines, 5);
    assert_int_equal(m->n_pc_contexts, 0);
    assert_int_equal(m->n_sass, 0);
    int found = 0;
    for (size_t i = 0; i < m->n_warnings; i++)
        if (strstr(m->warnings[i].message, "pc_sample: row 0: end_ns") ||
            strstr(m->warnings[i].message, "t1_ns"))
            found++;
    assert_true(found >= 1);
    assert_true(m->pc_attrib.unattributed == 3);
    gpufl__model_destroy(m);
    remove(path);
    assert_int_equal(rmdir(dir), 0);
}

/* Bad kernel/copy lines are rolled back whole and reported with file:line;
 * rows past a cap are counted. */
static void test_report_trace_corrupt(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
#define KCOLS(start, end, dev, name)                                                               \
    "\"start_ns\":" start ",\"end_ns\":" end ",\"device\":" dev                                    \
    ",\"context\":[1,1],\"stream\":[7,7],\"correlation\":[1,2],\"name\":" name                     \
    ",\"grid_x\":[1,1],\"grid_y\":[1,1],\"grid_z\":[1,1],\"block_x\":[32,32],\"block_y\":[1,1],"   \
    "\"block_z\":[1,1],\"registers\":[8,8],\"static_smem_bytes\":[0,0],"                           \
    "\"dynamic_smem_bytes\":[0,0],\"local_bytes_per_thread\":[0,0],\"graph_id\":[0,0]"
#define CCOLS(kind, bytes)                                                                         \
    "\"start_ns\":[10,20],\"end_ns\":[15,30],\"device\":[0,0],\"stream\":[7,7],"                   \
    "\"correlation\":[1,2],\"bytes\":" bytes ",\"copy_kind\":" kind                                \
    ",\"src_kind\":[1,3],\"dst_kind\":[3,2],\"async\":[0,0]"
    write_file(
        dir, "device.log",
        "{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n"
        "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"k\"]}\n"
        /* 3: good */
        "{\"type\":\"kernel\",\"v\":1," KCOLS(
            "[100,200]", "[150,260]", "[0,0]",
            "[1,1]") "}\n"
                     /* 4: row 1 ends before it starts */
                     "{\"type\":\"kernel\",\"v\":1," KCOLS(
                         "[100,200]", "[150,199]", "[0,0]",
                         "[1,1]") "}\n"
                                  /* 5: negative device */
                                  "{\"type\":\"kernel\",\"v\":1," KCOLS(
                                      "[100,200]", "[150,260]", "[0,-1]",
                                      "[1,1]") "}\n"
                                               /* 6: a name that is not an integer */
                                               "{\"type\":\"kernel\",\"v\":1," KCOLS(
                                                   "[100,200]", "[150,260]", "[0,0]",
                                                   "[1,\"k\"]") "}\n"
                                                                /* 7: good, name id 9 undefined */
                                                                "{\"type\":\"kernel\",\"v\":"
                                                                "1," KCOLS(
                                                                    "[300,400]", "[310,420]",
                                                                    "[2,2]",
                                                                    "[9,1]") "}\n"
                                                                             /* 8: good copies */
                                                                             "{\"type\":\"copy\","
                                                                             "\"v\":1," CCOLS(
                                                                                 "[1,2]",
                                                                                 "[64,128]") "}\n"
                                                                                             /* 9: no copy_kind column */
                                                                                             "{\"ty"
                                                                                             "pe\":"
                                                                                             "\"cop"
                                                                                             "y\","
                                                                                             "\"v\""
                                                                                             ":1,"
                                                                                             "\"sta"
                                                                                             "rt_"
                                                                                             "ns\":"
                                                                                             "[1],"
                                                                                             "\"end"
                                                                                             "_ns\""
                                                                                             ":[2],"
                                                                                             "\"dev"
                                                                                             "ice\""
                                                                                             ":[0],"
                                                                                             "\"str"
                                                                                             "eam\""
                                                                                             ":[0],"
                                                                                             "\"cor"
                                                                                             "relat"
                                                                                             "ion\""
                                                                                             ":[0],"
                                                                                             "\"byt"
                                                                                             "es\":"
                                                                                             "[1],"
                                                                                             "\"src"
                                                                                             "_kind"
                                                                                             "\":["
                                                                                             "1],"
                                                                                             "\"dst"
                                                                                             "_kind"
                                                                                             "\":["
                                                                                             "3],"
                                                                                             "\"asy"
                                                                                             "nc\":"
                                                                                             "[0]}"
                                                                                             "\n"
                                                                                             /* 10: bytes null */
                                                                                             "{\"ty"
                                                                                             "pe\":"
                                                                                             "\"cop"
                                                                                             "y\","
                                                                                             "\"v\""
                                                                                             ":1"
                                                                                             "," CCOLS(
                                                                                                 "["
                                                                                                 "1"
                                                                                                 ","
                                                                                                 "2"
                                                                                                 "]",
                                                                                                 "["
                                                                                                 "6"
                                                                                                 "4"
                                                                                                 ","
                                                                                                 "n"
                                                                                                 "u"
                                                                                                 "l"
                                                                                                 "l"
                                                                                                 "]") "}\n");
#undef KCOLS
#undef CCOLS
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    expect_warnings(m, 6);
    assert_true(
        has_warning(m, "device.log", 4, "kernel: row 1: end_ns 199 is before start_ns 200"));
    assert_true(has_warning(m, "device.log", 5, "kernel: row 1: device -1 is out of range"));
    assert_true(has_warning(m, "device.log", 6, "kernel: row 1: name is not an integer"));
    assert_true(has_warning(m, "device.log", 9, "copy: "));
    assert_true(has_warning(m, "device.log", 10, "copy: row 1: bytes is not an integer"));
    assert_true(has_warning(m, "", 0, "1 references to dict ids that no dict line defines"));
    assert_int_equal(m->n_kernels, 4);
    assert_int_equal(m->kernels[1].end_ns, 260);
    assert_string_equal(m->kernels[2].name, "?");
    assert_string_equal(m->kernels[3].name, "k");
    assert_int_equal(m->kernels[3].device, 2);
    assert_int_equal(m->n_copies, 2);
    assert_int_equal(m->copies[1].bytes, 128);
    assert_int_equal(m->n_gpus, 2); /* devices 0 and 2 */
    assert_int_equal(m->gpus[1].device, 2);
    gpufl__model_destroy(m);

    gpufl__model_limits_t lim = {.max_kernels = 3, .max_copies = 1};
    assert_int_equal(gpufl__model_load_limits(&m, dir, &lim), 0);
    assert_int_equal(m->n_kernels, 3);
    assert_int_equal(m->kernels_over_cap, 1);
    assert_int_equal(m->n_copies, 1);
    assert_int_equal(m->copies_over_cap, 1);
    assert_true(has_warning(m, "", 0, "1 kernel rows past the cap of 3, not kept"));
    assert_true(has_warning(m, "", 0, "1 copy rows past the cap of 1, not kept"));
    gpufl__model_destroy(m);
    remove_file(dir, "device.log");
    assert_int_equal(rmdir(dir), 0);
}

/* ---------------------------------------------------------------------- */
/* Launch configurations and GPU time per scope                             */
/* ---------------------------------------------------------------------- */

static const gpufl__model_scope_path_t *path_of(const gpufl__model_t *m, const char *path) {
    const gpufl__model_scope_path_t *p = gpufl__model_scope_path_find(m, path);
    if (!p) print_error("no scope path %s\n", path);
    assert_non_null(p);
    return p;
}

static void expect_work(const gpufl__model_gpu_work_t *w, uint64_t kernels, int64_t kernel_ns,
                        uint64_t copies, int64_t copy_ns, uint64_t memsets, int64_t memset_ns) {
    assert_int_equal(w->kernels, kernels);
    assert_int_equal((int64_t)w->kernel_ns, kernel_ns);
    assert_int_equal(w->copies, copies);
    assert_int_equal((int64_t)w->copy_ns, copy_ns);
    assert_int_equal(w->memsets, memsets);
    assert_int_equal((int64_t)w->memset_ns, memset_ns);
}

static void expect_top(const gpufl__model_scope_gpu_t *g, size_t i, const char *name,
                       uint64_t calls, int64_t total_ns) {
    assert_true(i < g->n_top);
    assert_string_equal(g->top[i].name, name);
    assert_int_equal(g->top[i].calls, calls);
    assert_int_equal((int64_t)g->top[i].total_ns, total_ns);
}

#define SGEMM "sgemm_128x64(float const*, float const*, float*, int)"

/* The new kernel columns, memsets and kernel_config records of a session
 * written to the current format. */
static void test_report_model_configs(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/scoped");
    expect_warnings(m, 0);
    assert_int_equal(m->read.unknown_records, 2); /* graph_launch, alloc: not modelled */
    assert_non_null(m->trace_stats);
    assert_int_equal(m->n_kernels, 14);
    const gpufl__model_kernel_t *k = &m->kernels[0];
    assert_string_equal(k->name, "_Z12sgemm_128x64PKfS0_Pfi");
    assert_string_equal(k->demangled, SGEMM);
    assert_int_equal(k->demangled_id, 21);
    assert_int_equal(k->scope, 2);
    assert_int_equal(k->config, 1);
    assert_int_equal(k->external_kind, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(k->graph_id, 0);
    k = &m->kernels[3]; /* extern "C": demangled is the name's own id */
    assert_string_equal(k->name, "attn_kernel");
    assert_string_equal(k->demangled, "attn_kernel");
    assert_int_equal(k->external_kind, 3);
    assert_int_equal(k->external_id, 42);
    assert_int_equal(m->kernels[4].graph_id, 1);
    assert_int_equal(m->kernels[4].graph_node, 7);
    assert_int_equal(m->kernels[5].config, GPUFL_MODEL_UNKNOWN); /* null */
    assert_int_equal(m->kernels[5].local_bytes_per_thread, 16);
    /* an external id past int64 (a framework's uint64) is unknown, not a bad line */
    assert_int_equal(m->kernels[10].external_id, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(m->kernels[10].external_kind, 3);
    assert_int_equal(m->kernels[13].scope, GPUFL_MODEL_UNKNOWN); /* null */
    assert_int_equal(m->n_copies, 3);
    assert_int_equal(m->copies[0].scope, 9);
    assert_int_equal(m->copies[2].scope, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(m->n_memsets, 2);
    assert_int_equal(m->memsets[1].start_ns, 201 * MS);
    assert_int_equal(m->memsets[1].end_ns - m->memsets[1].start_ns, 100 * US);
    assert_int_equal(m->memsets[1].bytes, 65536);
    assert_int_equal(m->memsets[1].memory_kind, 3);
    assert_int_equal(m->memsets[1].scope, 5);

    assert_int_equal(m->n_configs, 5);
    assert_int_equal(m->configs_missing, 0);
    assert_int_equal(m->configs_duplicate, 0);
    const gpufl__model_kernel_config_t *c = gpufl__model_config_find(m, 1);
    assert_non_null(c);
    assert_string_equal(c->name, "_Z12sgemm_128x64PKfS0_Pfi");
    assert_int_equal(c->block_threads, 256);
    assert_int_equal(c->registers, 128);
    assert_int_equal(c->blocks_per_sm, 2);
    assert_int_equal(c->active_warps, 16);
    assert_int_equal(c->max_warps, 64);
    assert_true(c->occupancy == 0.25);
    assert_int_equal(c->limit_warps, 8);
    assert_int_equal(c->limit_registers, 2);
    assert_int_equal(c->limit_smem, 4);
    assert_int_equal(c->limit_blocks, 32);
    assert_string_equal(c->limiter, "registers");
    assert_int_equal(c->breakdown_agrees, 1);
    assert_int_equal(c->ts_ns, 10900 * US);
    c = gpufl__model_config_find(m, 3);
    assert_string_equal(c->limiter, "warps");
    assert_int_equal(c->breakdown_agrees, 0);
    assert_true(c->occupancy == 0.5);
    assert_string_equal(gpufl__model_config_find(m, 4)->limiter, "shared_memory");
    assert_null(gpufl__model_config_find(m, 6));
    assert_null(gpufl__model_config_find(m, 0));
    gpufl__model_destroy(m);
}

/* Self and inclusive GPU time per scope path, the top kernels under each,
 * and the work outside any scope. */
static void test_report_gpu_per_scope(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/scoped");
    assert_int_equal(m->n_scope_paths, 6);
    assert_int_equal(m->gpu_scoped_rows, 13 + 2 + 2);

    const gpufl__model_scope_path_t *batch = path_of(m, "batch");
    assert_int_equal(batch->calls, 2);
    assert_int_equal((int64_t)batch->total_ns, 220 * MS);
    assert_int_equal(batch->tags, 2);
    assert_int_equal(batch->depth, 0);
    assert_int_equal(batch->parent, -1);
    expect_work(&batch->gpu.self, 0, 0, 0, 0, 2, 200 * US);
    expect_work(&batch->gpu.total, 12, 12300 * US, 0, 0, 2, 200 * US);
    assert_int_equal((int64_t)gpufl__model_gpu_ns(&batch->gpu.total), 12500 * US);
    assert_int_equal(batch->gpu.n_top, 0);

    const gpufl__model_scope_path_t *fwd = path_of(m, "batch/forward_pass");
    assert_string_equal(fwd->name, "forward_pass");
    assert_int_equal(fwd->depth, 1);
    assert_ptr_equal(&m->scope_paths[fwd->parent], batch);
    assert_int_equal((int64_t)fwd->total_ns, 85 * MS);
    expect_work(&fwd->gpu.self, 6, 5000 * US, 0, 0, 0, 0);
    expect_work(&fwd->gpu.total, 9, 6400 * US, 0, 0, 0, 0);
    assert_int_equal(fwd->gpu.kernel_names, 3);
    expect_top(&fwd->gpu, 0, SGEMM, 2, 4200 * US);
    expect_top(&fwd->gpu, 1, "softmax_fwd(float const*, float*, int)", 2, 600 * US);
    expect_top(&fwd->gpu, 2, "relu(float*, int)", 2, 200 * US);
    assert_int_equal(fwd->gpu.n_top, 3);

    const gpufl__model_scope_path_t *att = path_of(m, "batch/forward_pass/attention");
    assert_int_equal(att->depth, 2);
    assert_ptr_equal(&m->scope_paths[att->parent], fwd);
    expect_work(&att->gpu.self, 3, 1400 * US, 0, 0, 0, 0);
    expect_work(&att->gpu.total, 3, 1400 * US, 0, 0, 0, 0);
    expect_top(&att->gpu, 0, "attn_kernel", 2, 1000 * US);
    expect_top(&att->gpu, 1, SGEMM, 1, 400 * US);

    const gpufl__model_scope_path_t *bwd = path_of(m, "batch/backward_pass");
    expect_work(&bwd->gpu.total, 3, 5900 * US, 0, 0, 0, 0);
    expect_top(&bwd->gpu, 0, "sgemm_bwd(float const*, float*, int)", 2, 5800 * US);

    const gpufl__model_scope_path_t *load_p = path_of(m, "data_loading");
    expect_work(&load_p->gpu.self, 1, 50 * US, 2, 200 * US, 0, 0);
    assert_int_equal((int64_t)load_p->total_ns, 50 * MS);
    const gpufl__model_scope_path_t *ckpt = path_of(m, "checkpoint");
    expect_work(&ckpt->gpu.total, 0, 0, 0, 0, 0, 0);
    assert_int_equal(ckpt->gpu.n_top, 0);

    expect_work(&m->gpu_no_scope.self, 1, 1000 * US, 1, 200 * US, 0, 0);
    expect_top(&m->gpu_no_scope, 0, SGEMM, 1, 1000 * US);
    expect_work(&m->gpu_unknown_scope.total, 0, 0, 0, 0, 0, 0);

    /* every row is counted once: self over all paths plus outside them is everything */
    double self = gpufl__model_gpu_ns(&m->gpu_no_scope.self);
    double all = 0;
    for (size_t i = 0; i < m->n_scope_paths; i++)
        self += gpufl__model_gpu_ns(&m->scope_paths[i].gpu.self);
    for (size_t i = 0; i < m->n_kernels; i++)
        all += (double)(m->kernels[i].end_ns - m->kernels[i].start_ns);
    for (size_t i = 0; i < m->n_copies; i++)
        all += (double)(m->copies[i].end_ns - m->copies[i].start_ns);
    for (size_t i = 0; i < m->n_memsets; i++)
        all += (double)(m->memsets[i].end_ns - m->memsets[i].start_ns);
    assert_int_equal((int64_t)self, 13950 * US);
    assert_int_equal((int64_t)all, 13950 * US);
    gpufl__model_destroy(m);
}

static void test_report_golden_scoped(void **state) {
    (void)state;
    check_golden("scoped");
}

/* NVTX ranges (recorded by tests/integration/nvtx_shared.c): listed with
 * their source and domain, the start/end range's work an overlay. */
static void test_report_golden_nvtx(void **state) {
    (void)state;
    check_golden("nvtx");
}

/* The two sections' lines, independent of the golden file. */
static void test_report_scoped_sections(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/scoped");
    size_t len;
    char *text = render(m, &len);
    static const char *const lines[] = {
        "\nKernel details\n  6 kernel names, 5 launch configurations, 3 launches without one; "
        "by total GPU time\n",
        "\n  sgemm_128x64(float const*, float const*, float*, int)  5.60 ms in 4 calls\n"
        "         1      3   5.20 ms        64x32x1      256x1x1   128 16.0 KiB + 32.0 KiB      "
        "0 B     25.0%   16/64       8/2/4/32 registers\n"
        "         5      1    400 \xc2\xb5s       128x32x1      128x1x1   128 16.0 KiB + 16.0 KiB"
        "      0 B     25.0%   16/64      16/4/7/32 registers\n",
        "     12.5%    8/64      16/8/2/32 shared_memory\n",
        "     50.0%   32/64       2/2/3/32 warps *\n",
        "    100.0%   64/64     8/16/32/32 warps\n",
        /* no kernel_config: resources from the rows, no occupancy */
        "         -      2   5.80 ms        64x64x1      16x16x1    96      8.00 KiB + 0 B     16 B"
        "         -       -              - -\n",
        "  * config 3: the limits allow 2 blocks per SM, the occupancy calculator says 1 "
        "(breakdown_agrees false)\n",
        "\nGPU time per scope\n  12.8 ms of 13.9 ms GPU time (kernels, copies, memsets) ran in "
        "scopes\n",
        "  1 scope path without GPU work not shown\n",
        "  batch                                                 220 ms   12.5 ms    200 \xc2\xb5s"
        "  12 kernels, 2 memsets\n"
        "    forward_pass                                       85.0 ms   6.40 ms   5.00 ms  9 "
        "kernels\n"
        "      \xc2\xb7 sgemm_128x64(float const*, float const*, ...                       "
        "4.20 ms  2 calls\n",
        "      attention                                        18.0 ms   1.40 ms   1.40 ms  3 "
        "kernels\n        \xc2\xb7 attn_kernel ",
        "  data_loading                                         50.0 ms    250 \xc2\xb5s    250 "
        "\xc2\xb5s  1 kernel, 2 copies\n",
        "  (no scope)                                                 -   1.20 ms   1.20 ms  1 "
        "kernel, 1 copy\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        if (!strstr(text, lines[i])) print_error("missing from the report:\n%s\n", lines[i]);
        assert_non_null(strstr(text, lines[i]));
    }
    const char *gpu = strstr(text, "\nGPU time per scope\n");
    assert_non_null(strstr(text, "\n  checkpoint   "));
    assert_null(strstr(gpu, "checkpoint")); /* no GPU work: only in Scope timing */
    assert_null(strstr(gpu, "(unknown scope)"));
    assert_null(strstr(text, "Log problems"));
    free(text);
    gpufl__model_destroy(m);
}

/* A log from before scope attribution and kernel_config records: the new
 * columns read as unknown, demangled names fall back to the mangled ones. */
static void test_report_trace_old_format(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/trace");
    for (size_t i = 0; i < m->n_kernels; i++) {
        const gpufl__model_kernel_t *k = &m->kernels[i];
        assert_ptr_equal(k->demangled, k->name);
        assert_int_equal(k->demangled_id, 0);
        assert_int_equal(k->scope, GPUFL_MODEL_UNKNOWN);
        assert_int_equal(k->config, GPUFL_MODEL_UNKNOWN);
        assert_int_equal(k->graph_node, GPUFL_MODEL_UNKNOWN);
        assert_int_equal(k->external_id, GPUFL_MODEL_UNKNOWN);
        assert_int_equal(k->local_bytes_per_thread, 0);
    }
    assert_int_equal(m->copies[0].scope, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(m->n_configs, 0);
    assert_int_equal(m->gpu_scoped_rows, 0);
    expect_work(&m->gpu_no_scope.self, 8, 1110 * US, 4, 300 * US, 0, 0);
    size_t len;
    char *text = render(m, &len);
    assert_non_null(strstr(text, "  3 kernel names; no launch configuration (kernel_config) in "
                                 "the log; by total GPU time\n"));
    assert_non_null(strstr(text, "  _Z4gemmPKfS0_Pfiii  1.00 ms in 4 calls\n         -      4   "
                                 "1.00 ms       128x64x1      16x16x1    64 8.00 KiB + 16.0 KiB  "
                                 "    0 B         -       -              - -\n"));
    assert_null(strstr(text, "GPU time per scope")); /* no scopes, no attribution */
    free(text);
    gpufl__model_destroy(m);

    /* With scopes but without the scope column: said, not shown as "no scope". */
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "scope.log",
               "{\"type\":\"header\",\"v\":1,\"file\":\"scope\",\"segment\":0}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"step\"]}\n"
               "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[0],\"tid\":[1],\"id\":[1],"
               "\"parent\":[0],\"depth\":[1],\"name\":[1],\"tag\":[0],\"path\":[1],"
               "\"repeat\":[0],\"warmup\":[0]}\n");
    write_file(dir, "device.log",
               "{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[2],\"str\":[\"k\"]}\n"
               "{\"type\":\"memset\",\"v\":1,\"start_ns\":[5],\"end_ns\":[9],\"device\":[0],"
               "\"stream\":[7],\"correlation\":[1],\"bytes\":[4],\"memory_kind\":[3]}\n");
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    expect_warnings(m, 0);
    expect_work(&m->gpu_no_scope.total, 0, 0, 0, 0, 1, 4);
    text = render(m, &len);
    assert_non_null(strstr(text, "\nGPU time per scope\n  no kernel, copy or memset names a "
                                 "scope (none was open at a launch, or the log's\n"));
    free(text);
    gpufl__model_destroy(m);
    remove_file(dir, "scope.log");
    remove_file(dir, "device.log");
    assert_int_equal(rmdir(dir), 0);
}

/* References the log cannot resolve: a config id without a record, a
 * config id recorded twice, scope ids scope.log does not have. Counted and
 * reported; the work is still counted, under "(unknown scope)". */
static void test_report_trace_refs(void **state) {
    (void)state;
    gpufl__model_t *m = load("bad/trace_refs");
    expect_warnings(m, 3);
    assert_true(has_warning(m, "", 0, "1 kernel_config records repeat an id (the first kept)"));
    assert_true(has_warning(m, "", 0, "1 kernel rows name a kernel_config id that no record has"));
    assert_true(has_warning(
        m, "", 0, "2 kernel, copy or memset rows name a scope id that scope.log does not have"));
    assert_int_equal(m->n_configs, 3);
    assert_int_equal(m->configs_duplicate, 1);
    assert_int_equal(m->configs_missing, 1);
    assert_string_equal(gpufl__model_config_find(m, 1)->limiter, "warps"); /* the first */
    assert_null(gpufl__model_config_find(m, 9));
    /* without libcuda: the launch fields and why */
    const gpufl__model_kernel_config_t *c = gpufl__model_config_find(m, 2);
    assert_int_equal(c->block_threads, 128);
    assert_int_equal(c->blocks_per_sm, GPUFL_MODEL_UNKNOWN);
    assert_true(c->occupancy < 0);
    assert_int_equal(c->device, GPUFL_MODEL_UNKNOWN);
    assert_string_equal(c->occupancy_why, "/nonexistent/libcuda.so.1 not found: no NVIDIA driver");
    /* no breakdown rules for the GPU: no limits, breakdown_agrees false */
    c = gpufl__model_config_find(m, 3);
    assert_true(c->occupancy == 1.0);
    assert_int_equal(c->limit_warps, GPUFL_MODEL_UNKNOWN);
    assert_string_equal(c->limiter, "");
    assert_int_equal(c->breakdown_agrees, 0);
    assert_string_equal(c->occupancy_why, "");
    assert_non_null(m->trace_stats);
    assert_int_equal(m->gpu_scoped_rows, 5); /* three known, two unknown */
    expect_work(&m->gpu_unknown_scope.self, 1, 1 * MS, 1, 1 * MS, 0, 0);
    expect_top(&m->gpu_unknown_scope, 0, "k()", 1, 1 * MS);
    expect_work(&m->gpu_no_scope.self, 2, 2250 * US, 0, 0, 0, 0);
    expect_work(&path_of(m, "step")->gpu.total, 2, 1500 * US, 0, 0, 1, 500 * US);
    size_t len;
    char *text = render(m, &len);
    static const char *const lines[] = {
        "\n        9?      1   1.00 ms ",
        "\n  ? config 9: no kernel_config record in the log\n",
        /* no occupancy, no warps, no limits; the reason once */
        "\n         2      1    500 \xc2\xb5s          1x1x1      128x1x1    16           0 B + "
        "0 B      0 B         -       -              - -\n",
        "\n  occupancy unknown for 1 configuration: /nonexistent/libcuda.so.1 not found: no "
        "NVIDIA driver\n",
        /* occupancy without limits: not flagged as a disagreement */
        "    100.0%   64/64              - -\n",
        "\n  limits unknown for 1 configuration: no breakdown rules for the GPU\n",
        "\n  (unknown scope)         -   2.00 ms   2.00 ms  1 kernel, 1 copy\n    \xc2\xb7 k()  ",
        "\n  2.00 ms of 6.25 ms GPU time (kernels, copies, memsets) ran in scopes\n  1 record "
        "without a launch note (launched before the session, or the note was\n  overwritten) "
        "counts under (no scope)\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        if (!strstr(text, lines[i])) print_error("missing from the report:\n%s\n", lines[i]);
        assert_non_null(strstr(text, lines[i]));
    }
    assert_null(strstr(text, "breakdown_agrees false"));
    free(text);
    gpufl__model_destroy(m);
}

/* Bad values in the new columns and records: reported with file:line,
 * never a crash; caps on memsets and configs counted. */
static void test_report_configs_corrupt(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
#define K1(extra)                                                                                  \
    "{\"type\":\"kernel\",\"v\":1,\"start_ns\":[1],\"end_ns\":[2],\"device\":[0],\"stream\":[7],"  \
    "\"correlation\":[1],\"name\":[1],\"grid_x\":[1],\"grid_y\":[1],\"grid_z\":[1],"               \
    "\"block_x\":[32],\"block_y\":[1],\"block_z\":[1],\"registers\":[8],"                          \
    "\"static_smem_bytes\":[0],\"dynamic_smem_bytes\":[0]" extra "}\n"
#define MS1(scope)                                                                                 \
    "{\"type\":\"memset\",\"v\":1,\"start_ns\":[1,3],\"end_ns\":[2,4],\"device\":[0,0],"           \
    "\"bytes\":[8,8],\"memory_kind\":[3,3],\"scope\":" scope "}\n"
    static const char text[] = "{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n"
                               "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"k\"]}\n"
        /* 3: good, demangled id undefined: counted, the mangled name shown */
        K1(",\"demangled\":[5],\"config\":[2],\"scope\":[0]")
        /* 4: a config that is not an integer */
        K1(",\"config\":[\"x\"]")
        /* 5: a negative scope */
        K1(",\"scope\":[-1]")
        /* 6: no id */
        "{\"type\":\"kernel_config\",\"v\":1,\"limiter\":\"warps\"}\n"
        /* 7: a device that is no device number */
        "{\"type\":\"kernel_config\",\"v\":1,\"id\":3,\"device\":\"gpu0\"}\n"
        /* 8, 9: good, with unknown values, and a second config */
        "{\"type\":\"kernel_config\",\"v\":1,\"id\":2,\"occupancy\":\"high\",\"limit_warps\":-4,"
        "\"breakdown_agrees\":1}\n"
        "{\"type\":\"kernel_config\",\"v\":1,\"id\":4,\"device\":0,\"name\":1}\n"
        /* 10: memsets, the second row's scope null; 11: a scope that is an object */
        MS1("[1,null]") MS1("[{},1]");
#undef K1
#undef MS1
    write_file(dir, "device.log", text);
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    expect_warnings(m, 7);
    assert_true(has_warning(m, "device.log", 4, "kernel: row 0: config is not an integer"));
    assert_true(has_warning(m, "device.log", 5, "kernel: row 0: scope -1 is out of range"));
    assert_true(has_warning(m, "device.log", 6, "kernel_config: no positive integer id"));
    assert_true(has_warning(m, "device.log", 7, "kernel_config: device is not a device number"));
    assert_true(has_warning(m, "device.log", 11, "memset: row 0: scope is not an integer"));
    assert_true(has_warning(m, "", 0, "1 references to dict ids that no dict line defines"));
    assert_true(has_warning(m, "", 0, "1 kernel, copy or memset rows name a scope id"));
    assert_int_equal(m->n_kernels, 1);
    assert_string_equal(m->kernels[0].demangled, "?");
    assert_int_equal(m->kernels[0].scope, GPUFL_MODEL_UNKNOWN); /* 0: none */
    assert_int_equal(m->n_configs, 2);
    const gpufl__model_kernel_config_t *c = gpufl__model_config_find(m, 2);
    assert_true(c->occupancy < 0);
    assert_int_equal(c->limit_warps, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(c->breakdown_agrees, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(c->device, GPUFL_MODEL_UNKNOWN);
    assert_string_equal(c->limiter, "");
    assert_string_equal(c->name, "");
    assert_string_equal(gpufl__model_config_find(m, 4)->name, "k"); /* a dict id */
    assert_int_equal(m->n_memsets, 2);
    assert_int_equal(m->memsets[0].scope, 1);
    assert_int_equal(m->memsets[1].scope, GPUFL_MODEL_UNKNOWN);
    expect_work(&m->gpu_unknown_scope.self, 0, 0, 0, 0, 1, 1); /* no scope.log */
    size_t len;
    char *report = render(m, &len); /* unknown values print as "?", no limits as "-" */
    assert_non_null(strstr(report, "        -     ?/?              - -\n"));
    assert_non_null(strstr(report, "\n  limits unknown for 1 configuration: "));
    free(report);
    gpufl__model_destroy(m);

    gpufl__model_limits_t lim = {.max_memsets = 1, .max_configs = 1};
    assert_int_equal(gpufl__model_load_limits(&m, dir, &lim), 0);
    assert_int_equal(m->n_memsets, 1);
    assert_int_equal(m->memsets_over_cap, 1);
    assert_int_equal(m->n_configs, 1);
    assert_int_equal(m->configs_over_cap, 1);
    assert_true(has_warning(m, "", 0, "1 memset rows past the cap of 1, not kept"));
    assert_true(has_warning(m, "", 0, "1 kernel_config records past the cap of 1, not kept"));
    gpufl__model_destroy(m);
    remove_file(dir, "device.log");
    assert_int_equal(rmdir(dir), 0);
}

static void test_report_write_error(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/rotated");
    FILE *ro = fopen("/dev/null", "r"); /* writes fail on a read-only stream */
    assert_non_null(ro);
    assert_int_equal(gpufl__report_write(m, ro), GPUFL_EIO);
    fclose(ro);
    assert_int_equal(gpufl__report_write(NULL, stdout), GPUFL_EINVAL);
    gpufl__model_destroy(m);
}

/* Scans text as a batch line; returns what gpufl__reader_scan_batch did. */
static int scan(gpufl__reader_scanner_t *s, const char *text, gpufl__reader_batch_t *b) {
    return gpufl__reader_scan_batch(s, text, strlen(text), b);
}

static void expect_cell(const gpufl__reader_batch_t *b, const char *col, size_t r, int is_null,
                        int64_t value) {
    const gpufl__reader_column_t *c = gpufl__reader_batch_column(b, col);
    assert_non_null(c);
    assert_true(r < b->rows);
    assert_int_equal(c->is_null[r], is_null);
    if (!is_null) assert_int_equal(c->values[r], value);
}

/* The batch scanner reads plain integer batches and gives everything else
 * back to jansson (0). */
static void test_report_batch_scanner(void **state) {
    (void)state;
    gpufl__reader_scanner_t s;
    memset(&s, 0, sizeof s);
    gpufl__reader_batch_t b;
    assert_int_equal(scan(&s,
                          "{\"type\":\"kernel\",\"v\":1,\"a\":[0,-5,null,9223372036854775807,"
                          "-9223372036854775807],\"b\":[1,2,3,4,5]}",
                          &b),
                     1);
    assert_string_equal(b.type, "kernel");
    assert_int_equal(b.n_columns, 2);
    assert_int_equal(b.rows, 5);
    expect_cell(&b, "a", 0, 0, 0);
    expect_cell(&b, "a", 1, 0, -5);
    expect_cell(&b, "a", 2, 1, 0);
    expect_cell(&b, "a", 3, 0, INT64_MAX);
    expect_cell(&b, "a", 4, 0, -INT64_MAX);
    expect_cell(&b, "b", 4, 0, 5);
    assert_null(gpufl__reader_batch_column(&b, "c"));
    assert_null(gpufl__reader_batch_column(&b, "type"));

    /* Whitespace wherever JSON allows it; -0 and empty batches. */
    assert_int_equal(scan(&s,
                          " {\t\"type\" : \"copy\" ,\r\"v\": 1 , \"x\" : [ -0 ,\t7 , null ] ,"
                          "\"y\":[ 1,2,3 ] }  ",
                          &b),
                     1);
    assert_string_equal(b.type, "copy");
    assert_int_equal(b.rows, 3);
    expect_cell(&b, "x", 0, 0, 0);
    expect_cell(&b, "x", 1, 0, 7);
    expect_cell(&b, "x", 2, 1, 0);
    expect_cell(&b, "y", 2, 0, 3);
    assert_int_equal(scan(&s, "{\"type\":\"memset\",\"v\":1,\"x\":[],\"y\":[]}", &b), 1);
    assert_int_equal(b.rows, 0);
    assert_int_equal(b.n_columns, 2);
    assert_int_equal(scan(&s, "{\"type\":\"kernel\",\"v\":1}", &b), 1);
    assert_int_equal(b.n_columns, 0);
    assert_int_equal(b.version, 1);
    /* Any version: the model judges it (compat.c). */
    assert_int_equal(scan(&s, "{\"type\":\"copy\",\"v\":2,\"x\":[4]}", &b), 1);
    assert_int_equal(b.version, 2);
    expect_cell(&b, "x", 0, 0, 4);

    /* A longer batch than the first buffer, to move the arrays as they grow. */
    size_t rows = 20000, n = 0;
    char *big = malloc(rows * 24 + 128);
    assert_non_null(big);
    n += (size_t)sprintf(big + n, "{\"type\":\"kernel\",\"v\":1");
    for (int col = 0; col < 2; col++) {
        n += (size_t)sprintf(big + n, ",\"c%d\":[", col);
        for (size_t r = 0; r < rows; r++)
            n += (size_t)sprintf(big + n, r ? ",%zu" : "%zu", r * 3 + (size_t)col);
        big[n++] = ']';
    }
    big[n++] = '}';
    big[n] = '\0';
    assert_int_equal(scan(&s, big, &b), 1);
    assert_int_equal(b.rows, rows);
    expect_cell(&b, "c0", rows - 1, 0, (int64_t)(rows - 1) * 3);
    expect_cell(&b, "c1", 0, 0, 1);
    expect_cell(&b, "c1", rows - 1, 0, (int64_t)(rows - 1) * 3 + 1);
    free(big);

    /* Everything else goes to jansson. */
    static const char *const others[] = {
        "{\"type\":\"kernel\",\"v\":1,\"a\":[1,\"2\"]}",             /* a string cell */
        "{\"type\":\"kernel\",\"v\":1,\"a\":[1.5]}",                 /* a decimal */
        "{\"type\":\"kernel\",\"v\":1,\"a\":[1e3]}",                 /* an exponent */
        "{\"type\":\"kernel\",\"v\":1,\"a\":[9223372036854775808]}", /* past int64 */
        "{\"type\":\"kernel\",\"v\":1,\"a\":[-9223372036854775809]}",
        "{\"type\":\"kernel\",\"v\":1,\"a\":[123456789012345678901234]}",
        "{\"type\":\"kernel\",\"v\":1,\"a\":[01]}", /* not JSON */
        "{\"type\":\"kernel\",\"v\":1,\"a\":[1,]}",
        "{\"type\":\"kernel\",\"v\":1,\"a\":[-]}",
        "{\"type\":\"kernel\",\"v\":1,\"a\":[1,2],\"b\":[1]}", /* lengths differ */
        "{\"type\":\"kernel\",\"v\":1,\"a\":[1],\"a\":[2]}",   /* a key twice */
        "{\"type\":\"kernel\",\"v\":1,\"a\":[1],\"type\":[2]}",
        "{\"type\":\"kernel\",\"v\":1,\"d\":0}", /* not an array */
        "{\"type\":\"kernel\",\"v\":1,\"a\":[[1]]}",
        "{\"type\":\"kernel\",\"v\":0,\"a\":[1]}",       /* no version */
        "{\"v\":1,\"type\":\"kernel\",\"a\":[1]}",       /* other member order */
        "{\"type\":\"ker\\u006eel\",\"v\":1,\"a\":[1]}", /* escapes */
        "{\"type\":\"kernel\",\"v\":1,\"\\u0061\":[1]}",
        "{\"type\":\"kernel\",\"v\":1,\"a\":[1,2", /* truncated */
        "{\"type\":\"kernel\",\"v\":1,\"a\":[1]",
        "{\"type\":\"kernel\",\"v\":1,\"a\":[1]} x", /* trailing bytes */
        "{\"type\":\"kernel\",\"v\":1,\"a\":[nul]}",
        "",
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        if (scan(&s, others[i], &b) != 0) print_error("scanned: %s\n", others[i]);
        assert_int_equal(scan(&s, others[i], &b), 0);
    }
    gpufl__reader_scanner_fini(&s);
    gpufl__reader_scanner_fini(&s); /* twice is harmless */
}

/* A batch the scanner reads and the same batch read by jansson (an escaped
 * key sends it there) load the same rows; lines the scanner gives back are
 * reported as before. */
static void test_report_batch_fallback(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
#define KROWS(first_key)                                                                           \
    "{\"type\":\"kernel\",\"v\":1," first_key ":[100,200,300],\"end_ns\":[150,260,390],"           \
    "\"device\":[0,1,0],\"stream\":[7,7,8],\"correlation\":[1,2,3],\"name\":[1,1,1],"              \
    "\"grid_x\":[1,2,3],\"grid_y\":[1,1,1],\"grid_z\":[1,1,1],\"block_x\":[32,64,128],"            \
    "\"block_y\":[1,1,1],\"block_z\":[1,1,1],\"registers\":[8,16,32],"                             \
    "\"static_smem_bytes\":[0,0,0],\"dynamic_smem_bytes\":[0,256,0],"                              \
    "\"local_bytes_per_thread\":[0,null,4],\"graph_id\":[null,5,0],\"scope\":[null,0,3]}\n"
    static const char head[] = "{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n"
                               "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"k\"]}\n";
    gpufl__model_t *fast = NULL, *slow = NULL;
    write_file(dir, "device.log",
               "{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"k\"]}\n" KROWS("\"start_ns\""));
    assert_int_equal(gpufl__model_load(&fast, dir), 0);
    write_file(
        dir, "device.log",
        "{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n"
        "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"k\"]}\n" KROWS("\"start\\u005fns\""));
    assert_int_equal(gpufl__model_load(&slow, dir), 0);
    expect_warnings(fast, 1); /* scope 3 is not in scope.log */
    expect_warnings(slow, 1);
    assert_int_equal(fast->n_kernels, 3);
    assert_int_equal(slow->n_kernels, 3);
    for (size_t i = 0; i < 3; i++) {
        gpufl__model_kernel_t a = fast->kernels[i], b = slow->kernels[i];
        assert_int_equal(a.start_ns, b.start_ns);
        assert_int_equal(a.end_ns, b.end_ns);
        assert_int_equal(a.device, b.device);
        assert_int_equal(a.block_x, b.block_x);
        assert_int_equal(a.dynamic_smem_bytes, b.dynamic_smem_bytes);
        assert_int_equal(a.local_bytes_per_thread, b.local_bytes_per_thread);
        assert_int_equal(a.graph_id, b.graph_id);
        assert_int_equal(a.scope, b.scope);
        assert_int_equal(a.config, b.config);
        assert_string_equal(a.name, b.name);
    }
    assert_int_equal(fast->kernels[1].local_bytes_per_thread, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(fast->kernels[0].graph_id, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(fast->kernels[0].scope, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(fast->kernels[2].scope, 3);
    assert_int_equal(fast->first_ts_ns, 100);
    assert_int_equal(fast->last_ts_ns, 390);
    assert_int_equal(fast->read.records, slow->read.records);
    gpufl__model_destroy(fast);
    gpufl__model_destroy(slow);

    /* Lines the scanner leaves to jansson: each reported as before. */
    size_t len = strlen(head) + 4096;
    char *text = malloc(len);
    assert_non_null(text);
    snprintf(text, len,
             "%s"
             /* 3: a required cell past int64 */
             "{\"type\":\"kernel\",\"v\":1,\"start_ns\":[99999999999999999999]}\n"
             /* 4: a string in a required column */
             "{\"type\":\"copy\",\"v\":1,\"start_ns\":[\"x\"],\"end_ns\":[1],\"device\":[0],"
             "\"bytes\":[1],\"copy_kind\":[1],\"src_kind\":[1],\"dst_kind\":[1]}\n"
             /* 5: an id past int64, written as a string, in an optional column */
             "{\"type\":\"memset\",\"v\":1,\"start_ns\":[5],\"end_ns\":[6],\"device\":[0],"
             "\"bytes\":[1],\"memory_kind\":[1],\"scope\":[\"99999999999999999999\"]}\n"
             /* 6: columns of different lengths */
             "{\"type\":\"memset\",\"v\":1,\"start_ns\":[5,6],\"end_ns\":[6]}\n"
             /* 7: a required column missing, read by the scanner */
             "{\"type\":\"memset\",\"v\":1,\"start_ns\":[5],\"end_ns\":[6]}\n"
             /* 8: a null in a required column, read by the scanner */
             "{\"type\":\"memset\",\"v\":1,\"start_ns\":[5],\"end_ns\":[6],\"device\":[null],"
             "\"bytes\":[1],\"memory_kind\":[1]}\n"
             /* 9: cut short (not the last line) */
             "{\"type\":\"kernel\",\"v\":1,\"start_ns\":[1,2\n"
             /* the last line, incomplete */
             "{\"type\":\"kernel\",\"v\":1,\"start_ns\":[1",
             head);
    write_file(dir, "device.log", text);
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    expect_warnings(m, 6);
    assert_true(has_warning(m, "device.log", 3, "not JSON"));
    assert_true(has_warning(m, "device.log", 4, "copy: row 0: start_ns is not an integer"));
    assert_true(
        has_warning(m, "device.log", 6, "memset: column \"end_ns\" has 1 rows, the others 2"));
    assert_true(has_warning(m, "device.log", 7, "memset: column \"device\" missing"));
    assert_true(has_warning(m, "device.log", 8, "memset: row 0: device is not an integer"));
    assert_true(has_warning(m, "device.log", 9, "line cut short after 38 bytes"));
    assert_int_equal(m->n_memsets, 1);
    assert_int_equal(m->memsets[0].scope, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(m->n_kernels, 0);
    assert_int_equal(m->n_copies, 0);
    assert_int_equal(m->read.truncated_lines, 1);
    assert_int_equal(m->read.corrupt_lines, 6);
    gpufl__model_destroy(m);
    free(text);
    remove_file(dir, "device.log");
    assert_int_equal(rmdir(dir), 0);
#undef KROWS
}

/* ---------------------------------------------------------------------- */
/* Damaged lines: what went with them                                       */
/* ---------------------------------------------------------------------- */

static gpufl__reader_damage_t damage_of(gpufl__reader_scanner_t *s, const char *text,
                                        gpufl__reader_batch_t *b) {
    gpufl__reader_damage_t d;
    assert_int_equal(gpufl__reader_scan_damage(s, text, strlen(text), b, &d), 0);
    return d;
}

static void expect_damage(gpufl__reader_scanner_t *s, const char *text, const char *type,
                          int64_t rows, int exact, size_t columns) {
    gpufl__reader_batch_t b;
    gpufl__reader_damage_t d = damage_of(s, text, &b);
    if (type)
        assert_string_equal(d.type, type);
    else
        assert_null(d.type);
    if (d.rows != rows || d.rows_exact != exact)
        fail_msg("%s: rows %lld (exact %d), expected %lld (exact %d)", text, (long long)d.rows,
                 d.rows_exact, (long long)rows, exact);
    assert_int_equal(d.columns ? d.columns->n_columns : 0, columns);
}

/* What the surviving start of a damaged line tells: the type, the rows
 * (exact once a whole column survives, a lower bound from a cut first
 * column), a single record, or nothing. */
static void test_report_damage_scan(void **state) {
    (void)state;
    gpufl__reader_scanner_t s;
    memset(&s, 0, sizeof s);
    expect_damage(&s,
                  "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[1,2,3],\"tid\":[4,4,4],"
                  "\"id\":[7,8,9],\"parent\":[0,7",
                  "scope_begin", 3, 1, 3);
    expect_damage(&s, "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[1,2,3", "scope_begin", 3, 0, 0);
    expect_damage(&s, "{\"type\":\"scope_end\",\"v\":1,\"ts_ns\":[10,2", "scope_end", 2, 0, 0);
    expect_damage(&s, "{\"type\":\"scope_end\",\"v\":1,\"ts_ns\":[", "scope_end", -1, 0, 0);
    expect_damage(&s, "{\"type\":\"scope_end\",\"v\":1,\"ts_", "scope_end", -1, 0, 0);
    expect_damage(&s, "{\"type\":\"scope_end\",\"v\"", "scope_end", -1, 0, 0);
    expect_damage(&s, "{\"type\":\"scope_be", NULL, -1, 0, 0);
    expect_damage(&s, "this line is not JSON {", NULL, -1, 0, 0);
    expect_damage(&s, "", NULL, -1, 0, 0);
    /* a single record: the member after "v" is no array */
    expect_damage(&s, "{\"type\":\"event\",\"v\":1,\"ts_ns\":5,\"level\":\"wa", "event", 1, 1, 0);
    expect_damage(&s, "{\"type\":\"options\",\"v\":1,\"app_name\":{\"va", "options", 1, 1, 0);
    /* columns up to the first that is not integers: the rows are known */
    expect_damage(&s, "{\"type\":\"host_sample\",\"v\":1,\"ts_ns\":[1,2],\"cpu_pct\":[1.5,",
                  "host_sample", 2, 1, 1);
    expect_damage(&s, "{\"type\":\"dict\",\"v\":1,\"id\":[1,2],\"str\":[\"a", "dict", 2, 1, 1);
    /* damage inside the line, not at its end */
    expect_damage(&s,
                  "{\"type\":\"kernel\",\"v\":1,\"start_ns\":[1,2,3],\"end_ns\":[4,5,6],\"x\":[@]}",
                  "kernel", 3, 1, 2);
    expect_damage(&s, "{\"type\":\"kernel\",\"v\":1,\"a\":[1,2],\"b\":[1,2,3],\"c\":[", "kernel", 2,
                  1, 1);

    /* The surviving columns' values, as the batch scanner gives them. */
    gpufl__reader_batch_t b;
    gpufl__reader_damage_t d =
        damage_of(&s, "{\"type\":\"scope_begin\",\"v\":1,\"id\":[5,null,6],\"path\":[3,", &b);
    assert_non_null(d.columns);
    expect_cell(d.columns, "id", 0, 0, 5);
    expect_cell(d.columns, "id", 1, 1, 0);
    expect_cell(d.columns, "id", 2, 0, 6);
    assert_null(gpufl__reader_batch_column(d.columns, "path"));
    gpufl__reader_scanner_fini(&s);
}

/* The fixture: a scope_begin batch line cut short in the middle of
 * scope.log. Its 3 rows are lost, and only those: the 3 scope ends whose
 * begins it held are named from its surviving columns, and the tree is
 * built from all that remains (golden/damaged.*). */
static void test_report_damaged_line(void **state) {
    (void)state;
    gpufl__model_t *m = load("bad/damaged");
    expect_warnings(m, 2);
    assert_true(has_warning(m, "scope.log", 5, "a \"scope_begin\" batch of 3 rows lost"));
    /* a line cut short, said as such, not as jansson's "end of file" */
    assert_true(has_warning(m, "scope.log", 5, "line cut short after 168 bytes (']' expected)"));
    assert_false(has_warning(m, "scope.log", 5, "end of file"));
    assert_true(has_warning(m, "", 0, "3 scope_end rows match no scope_begin"));
    assert_int_equal(m->read.corrupt_lines, 1);
    assert_int_equal(m->damaged_lines, 1);
    assert_int_equal(m->damaged_scope_lines, 1);
    assert_int_equal(m->n_damaged, 1);
    assert_string_equal(m->damaged[0].file, "scope.log");
    assert_int_equal(m->damaged[0].line, 5);
    assert_string_equal(m->damaged[0].type, "scope_begin");
    assert_int_equal(m->damaged[0].rows, 3);
    assert_true(m->damaged[0].rows_exact);

    /* the rows around it all loaded */
    assert_int_equal(m->n_scopes, 7);
    assert_int_equal(m->n_open_scopes, 0);
    assert_int_equal(aggregate(m, "epoch/step").calls, 2);
    assert_int_equal(aggregate(m, "epoch/step/load").calls, 2);
    assert_int_equal(aggregate(m, "epoch").total, 29 * MS);

    /* the ends of its scopes, named from its columns */
    assert_int_equal(m->n_lost_scopes, 3);
    static const struct {
        int64_t id, end_ms;
        const char *path, *name;
    } lost[] = {{6, 13, "epoch/step/load", "load"},
                {7, 18, "epoch/step/checkpoint", "checkpoint"},
                {5, 19, "epoch/step", "step"}};
    for (size_t i = 0; i < 3; i++) {
        const gpufl__model_scope_t *x = &m->lost_scopes[i];
        assert_int_equal(x->id, lost[i].id);
        assert_int_equal(x->end_ns, lost[i].end_ms * MS);
        assert_true(x->lost);
        assert_string_equal(x->path, lost[i].path);
        assert_string_equal(x->name, lost[i].name);
        assert_null(gpufl__model_scope_find(m, lost[i].id));
    }
    /* a path only a lost scope had keeps its place in the tree */
    const gpufl__model_scope_path_t *p = gpufl__model_scope_path_find(m, "epoch/step/checkpoint");
    assert_non_null(p);
    assert_int_equal(p->calls, 0);
    assert_int_equal(p->lost, 1);
    assert_int_equal(p->depth, 2);
    assert_string_equal(m->scope_paths[p->parent].path, "epoch/step");
    assert_int_equal(gpufl__model_scope_path_find(m, "epoch/step")->lost, 1);

    size_t len;
    char *text = render(m, &len);
    assert_non_null(strstr(text, "  log problems       2 (listed at the end)\n"
                                 "                     1 damaged line in scope.log (line 5; 3 "
                                 "rows lost)\n"));
    assert_non_null(strstr(text, "\n  3 scope ends had no begin (lost with the damaged line in "
                                 "scope.log): epoch/step, epoch/step/load, "
                                 "epoch/step/checkpoint\n"));
    assert_null(strstr(text, "no scopes recorded"));
    free(text);
    gpufl__model_destroy(m);

    check_golden_in("bad", "damaged", GPUFL_REPORT_TEXT, "txt");
    check_golden_in("bad", "damaged", GPUFL_REPORT_MARKDOWN, "md");
    check_golden_in("bad", "damaged", GPUFL_REPORT_HTML, "html");
    check_golden_in("bad", "damaged", GPUFL_REPORT_JSON, "json");
}

/* A session of damaged lines: their rows summed per file, lower bounds and
 * unknowns said as such; scope ends named from a surviving child, or from
 * nothing. */
static void test_report_damaged_lines_summed(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "scope.log",
               "{\"type\":\"header\",\"v\":1,\"segment\":0}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[1,2,3],\"str\":[\"outer\",\"inner\","
               "\"outer/inner\"]}\n"
               /* the begins of 1 (outer) and 3: only their ids survive */
               "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[1000000,1000000],\"tid\":[9,9],"
               "\"id\":[1,3],\"parent\":[0,\n"
               "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[2000000],\"tid\":[9],\"id\":[2],"
               "\"parent\":[1],\"depth\":[2],\"name\":[2],\"tag\":[0],\"path\":[3]}\n"
               "{\"type\":\"scope_end\",\"v\":1,\"ts_ns\":[4000000,5000000,6000000,700\n"
               "{\"type\":\"scope_end\",\"v\":1,\"ts_ns\":[3000000,8000000,9000000],"
               "\"tid\":[9,9,9],\"id\":[2,1,3],\"implicit\":[0,0,0]}\n");
    write_file(dir, "device.log",
               "{\"type\":\"header\",\"v\":1,\"segment\":0}\n"
               "\x01\x02 torn\n");
    gpufl__model_t *m = NULL;
    char *text = load_and_render(dir, NULL, &m);
    assert_int_equal(m->damaged_lines, 3);
    assert_int_equal(m->damaged_scope_lines, 2);
    assert_int_equal(m->n_lost_scopes, 2);
    assert_string_equal(m->lost_scopes[0].path, "outer"); /* from its child outer/inner */
    assert_null(m->lost_scopes[1].path);                  /* nothing names 3 */
    assert_non_null(strstr(text, "                     1 damaged line in device.log (line 2; "
                                 "rows unknown)\n"
                                 "                     2 damaged lines in scope.log (lines 3, 5; "
                                 "at least 6 rows lost)\n"));
    assert_non_null(strstr(text, "\n  2 scope ends had no begin (lost with 2 damaged lines in "
                                 "scope.log): outer; 1 with no name left\n"));
    /* outer keeps its place above inner, its lost call in its calls cell */
    assert_non_null(strstr(text, "\n  outer   0 +1 lost     -         -"));
    assert_non_null(strstr(text, "\n    inner         1     -   1.00 ms"));
    free(text);
    gpufl__model_destroy(m);

    /* Only ends, no begin anywhere and no damaged line: said so, not "no
     * scopes recorded"; past the warnings cap, the rest are counted. */
    write_file(dir, "scope.log",
               "{\"type\":\"header\",\"v\":1,\"segment\":0}\n"
               "{\"type\":\"scope_end\",\"v\":1,\"ts_ns\":[3000000],\"tid\":[9],\"id\":[4],"
               "\"implicit\":[0]}\n");
    write_file(dir, "device.log",
               "{\"type\":\"header\",\"v\":1,\"segment\":0}\n"
               "{\"type\":\"event\",\"v\":1,\"ts_\n"
               "{\"type\":\"event\",\"v\":1,\"ts_\n"
               "{\"type\":\"kernel\",\"v\":1,\"start_ns\":[1,2],\n");
    gpufl__model_limits_t lim = {0};
    lim.max_warnings = 1;
    text = load_and_render(dir, &lim, &m);
    assert_int_equal(m->n_damaged, 1);
    assert_int_equal(m->damaged_lines, 3);
    assert_non_null(strstr(text, "\nScope timing\n  1 scope end had no begin (their scope_begin "
                                 "rows are not in the log); no name left for them\n"));
    assert_non_null(strstr(text, "                     1 damaged line in device.log (line 2; "
                                 "rows unknown)\n"
                                 "                     and 2 more damaged lines\n"));
    free(text);
    gpufl__model_destroy(m);
    remove_file(dir, "scope.log");
    remove_file(dir, "device.log");
    assert_int_equal(rmdir(dir), 0);
}

/* ---------------------------------------------------------------------- */
/* The other formats, insights, progress                                    */
/* ---------------------------------------------------------------------- */

static const char *const fixtures_all[] = {"basic",       "killed",    "rotated",  "gpu",
                                           "trace",       "scoped",    "stacks",   "pcsampled",
                                           "sassmetrics", "rangeprof", "timeline", "nvtx"};
#define N_FIXTURES (sizeof fixtures_all / sizeof fixtures_all[0])

static void test_report_golden_json(void **state) {
    (void)state;
    for (size_t i = 0; i < N_FIXTURES; i++)
        check_golden_fmt(fixtures_all[i], GPUFL_REPORT_JSON, "json");
}

static void test_report_golden_markdown(void **state) {
    (void)state;
    for (size_t i = 0; i < N_FIXTURES; i++)
        check_golden_fmt(fixtures_all[i], GPUFL_REPORT_MARKDOWN, "md");
}

static void test_report_golden_html(void **state) {
    (void)state;
    for (size_t i = 0; i < N_FIXTURES; i++)
        check_golden_fmt(fixtures_all[i], GPUFL_REPORT_HTML, "html");
}

static void test_report_format_parse(void **state) {
    (void)state;
    gpufl_report_format_t f = GPUFL_REPORT_HTML;
    assert_int_equal(gpufl_report_format_parse("text", &f), 0);
    assert_int_equal(f, GPUFL_REPORT_TEXT);
    assert_int_equal(gpufl_report_format_parse("md", &f), 0);
    assert_int_equal(f, GPUFL_REPORT_MARKDOWN);
    assert_int_equal(gpufl_report_format_parse("html", &f), 0);
    assert_int_equal(f, GPUFL_REPORT_HTML);
    assert_int_equal(gpufl_report_format_parse("xml", &f), GPUFL_EINVAL);
    assert_int_equal(gpufl_report_format_parse(NULL, &f), GPUFL_EINVAL);
}

/* Nothing in the HTML report is loaded from elsewhere: url() only names
 * something of the page itself (the open scopes' hatching). */
static void assert_offline(const char *html) {
    static const char *const banned[] = {"http://", "https://", "<script", "src=", "@import",
                                         "<link",   "<img",     "<iframe", "href="};
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++) {
        if (strstr(html, banned[i])) print_error("HTML report holds '%s'\n", banned[i]);
        assert_null(strstr(html, banned[i]));
    }
    for (const char *p = html; (p = strstr(p, "url(")) != NULL; p += 4) {
        if (p[4] != '#') print_error("HTML report holds '%.40s'\n", p);
        assert_int_equal(p[4], '#');
    }
}

static void test_report_html_offline(void **state) {
    (void)state;
    for (size_t i = 0; i < N_FIXTURES; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "sessions/%s", fixtures_all[i]);
        gpufl__model_t *m = load(rel);
        size_t len;
        char *html = render_fmt(m, GPUFL_REPORT_HTML, &len);
        assert_offline(html);
        assert_non_null(strstr(html, "<h2 id=\"timeline\">Timeline</h2>"));
        assert_non_null(strstr(html, "<h2>Insights</h2>"));
        assert_non_null(strstr(html, "</html>\n"));
        free(html);
        gpufl__model_destroy(m);
    }
}

/* The JSON report parses and has the documented keys, in order. */
static void test_report_json_keys(void **state) {
    (void)state;
    static const char *const top[] = {"format",
                                      "version",
                                      "session",
                                      "insights",
                                      "scopes",
                                      "system",
                                      "gpus",
                                      "sampling_cost",
                                      "kernels",
                                      "kernel_details",
                                      "kernel_launches",
                                      "transfers",
                                      "scope_gpu",
                                      "pc_sampling",
                                      "sass_metrics",
                                      "problems",
                                      "hardware_counters",
                                      "framework_ops"};
    for (size_t i = 0; i < N_FIXTURES; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "sessions/%s", fixtures_all[i]);
        gpufl__model_t *m = load(rel);
        size_t len;
        char *text = render_fmt(m, GPUFL_REPORT_JSON, &len);
        json_error_t err;
        json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
        if (!doc) print_error("%s: %s at line %d\n", fixtures_all[i], err.text, err.line);
        assert_non_null(doc);
        assert_null(strstr(text, "NaN"));
        assert_null(strstr(text, "Infinity"));
        assert_int_equal(json_object_size(doc), sizeof top / sizeof top[0]);
        const char *key;
        json_t *v;
        size_t k = 0;
        json_object_foreach(doc, key, v) assert_string_equal(key, top[k++]);
        assert_string_equal(json_string_value(json_object_get(doc, "format")), "gpufl-report");
        assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
        json_t *ses = json_object_get(doc, "session");
        assert_true(json_is_string(json_object_get(ses, "app")));
        assert_true(json_is_object(json_object_get(ses, "records")));
        json_t *ins = json_object_get(doc, "insights");
        assert_true(json_is_array(json_object_get(ins, "findings")));
        assert_true(json_is_array(json_object_get(ins, "skipped")));
        assert_true(json_is_array(json_object_get(json_object_get(doc, "scopes"), "paths")));
        json_t *kern = json_object_get(doc, "kernels");
        assert_int_equal(json_is_null(kern), m->n_kernels == 0);
        if (!json_is_null(kern)) {
            json_t *h = json_array_get(json_object_get(kern, "hotspots"), 0);
            static const char *const hk[] = {"name",   "calls",  "total_ns", "avg_ns",   "min_ns",
                                             "max_ns", "p50_ns", "p99_ns",   "share_pct"};
            k = 0;
            json_object_foreach(h, key, v) assert_string_equal(key, hk[k++]);
            assert_int_equal(k, 9);
        }
        json_decref(doc);
        free(text);
        gpufl__model_destroy(m);
    }
}

/* A kernel name that needs escaping in every format. */
#define NASTY      "void k<int&, \"q\">(a<b>&)"
#define NASTY_JSON "void k<int&, \\\"q\\\">(a<b>&)"
#define NASTY_HTML "void k&lt;int&amp;, &quot;q&quot;&gt;(a&lt;b&gt;&amp;)"

static void test_report_escaping(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "device.log",
               "{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0,"
               "\"app_name\":\"a<b>&\\\"c\"}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[1,2],\"str\":[\"_Z1kIRiE\",\"" NASTY_JSON
               "\"]}\n"
               "{\"type\":\"kernel\",\"v\":1,\"start_ns\":[1000,5000],\"end_ns\":[3000,9000],"
               "\"device\":[0,0],\"stream\":[7,7],\"correlation\":[1,2],\"name\":[1,1],"
               "\"demangled\":[2,2],\"grid_x\":[1,1],\"grid_y\":[1,1],\"grid_z\":[1,1],"
               "\"block_x\":[32,32],\"block_y\":[1,1],\"block_z\":[1,1],\"registers\":[8,8],"
               "\"static_smem_bytes\":[0,0],\"dynamic_smem_bytes\":[0,0]}\n");
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    assert_int_equal(m->n_kernels, 2);
    assert_string_equal(m->kernels[0].demangled, NASTY);
    size_t len;
    char *html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    assert_offline(html);
    assert_null(strstr(html, "k<int"));
    assert_null(strstr(html, "a<b>"));
    assert_non_null(strstr(html, NASTY_HTML));
    assert_non_null(strstr(html, "<title>gpufl report: a&lt;b&gt;&amp;&quot;c</title>"));
    free(html);
    char *md = render_fmt(m, GPUFL_REPORT_MARKDOWN, &len);
    assert_null(strstr(md, "k<int"));
    assert_non_null(strstr(md, "k&lt;int&amp;"));
    free(md);
    char *js = render_fmt(m, GPUFL_REPORT_JSON, &len);
    json_t *doc = json_loadb(js, len, 0, NULL);
    assert_non_null(doc);
    json_t *h = json_array_get(json_object_get(json_object_get(doc, "kernels"), "hotspots"), 0);
    assert_string_equal(json_string_value(json_object_get(h, "name")), NASTY);
    assert_int_equal(json_integer_value(json_object_get(h, "total_ns")), 6000);
    assert_int_equal(json_integer_value(json_object_get(h, "p50_ns")), 2000);
    json_decref(doc);
    free(js);
    char *text = render(m, &len);
    assert_non_null(strstr(text, NASTY));
    free(text);
    gpufl__model_destroy(m);
    remove_file(dir, "device.log");
    assert_int_equal(rmdir(dir), 0);
}

/* Insights in every format, with strings that need escaping: the rules are
 * written elsewhere; here the report is given a list by hand. */
static void test_report_insights_formats(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/trace");
    gpufl__report_t r;
    assert_int_equal(gpufl__report_build(m, &r), 0);
    gpufl__insights_free(&r.insights);
    gpufl__insight_t *in =
        gpufl__insight_add(&r.insights, "in_loop_sync", "SYNCHRONIZATION", GPUFL_SEVERITY_HIGH);
    assert_non_null(in);
    assert_int_equal(gpufl__insight_text(&in->title, "sync in a <loop> & more"), 0);
    assert_int_equal(gpufl__insight_text(&in->message, "found \"it\""), 0);
    assert_int_equal(gpufl__insight_text(&in->advice, "hoist it"), 0);
    assert_int_equal(gpufl__insight_text(&in->file, "train.cu"), 0);
    assert_int_equal(gpufl__insight_text(&in->function, "step<float>"), 0);
    assert_int_equal(gpufl__insight_text(&in->source, "if (a < b && c) cudaDeviceSynchronize();"),
                     0);
    assert_int_equal(gpufl__insight_text(&in->kernel, "gemm<8>"), 0);
    in->line = 42;
    gpufl__insight_evidence(in, "sync_ns", 1.5e6, "ns");
    gpufl__insight_evidence(in, "calls", 12, "count");
    gpufl__insight_evidence(in, "share", 37.5, "%");
    assert_int_equal(gpufl__insight_skip(&r.insights, "throttling", "no <gpu_sample> rows"), 0);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(gpufl__report_render_text(&r, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "Insights\n  1 finding (1 high, 0 medium, 0 low)\n"));
    assert_non_null(strstr(buf, "  [HIGH] SYNCHRONIZATION: sync in a <loop> & more\n"));
    assert_non_null(strstr(buf, "    at train.cu:42 in step<float>\n"));
    assert_non_null(strstr(buf, "    | if (a < b && c) cudaDeviceSynchronize();\n"));
    assert_non_null(strstr(buf, "    kernel: gemm<8>\n"));
    assert_non_null(strstr(buf, "    evidence: sync_ns 1.50 ms, calls 12, share 37.5%\n"));
    assert_non_null(strstr(buf, "    throttling: no <gpu_sample> rows\n"));
    assert_null(strstr(buf, "No findings"));
    free(buf);

    f = open_memstream(&buf, &len);
    assert_int_equal(gpufl__report_render_html(&r, f), 0);
    fclose(f);
    assert_offline(buf);
    assert_non_null(strstr(buf, "sync in a &lt;loop&gt; &amp; more"));
    assert_non_null(strstr(buf, "if (a &lt; b &amp;&amp; c)"));
    assert_non_null(strstr(buf, "found &quot;it&quot;"));
    assert_null(strstr(buf, "<loop>"));
    free(buf);

    f = open_memstream(&buf, &len);
    assert_int_equal(gpufl__report_render_markdown(&r, f), 0);
    fclose(f);
    assert_non_null(
        strstr(buf, "### \\[HIGH\\] SYNCHRONIZATION: sync in a &lt;loop&gt; &amp; more"));
    free(buf);

    f = open_memstream(&buf, &len);
    assert_int_equal(gpufl__report_render_json(&r, f), 0);
    fclose(f);
    json_t *doc = json_loadb(buf, len, 0, NULL);
    assert_non_null(doc);
    json_t *x = json_array_get(json_object_get(json_object_get(doc, "insights"), "findings"), 0);
    assert_string_equal(json_string_value(json_object_get(x, "severity")), "HIGH");
    assert_string_equal(json_string_value(json_object_get(x, "title")), "sync in a <loop> & more");
    json_t *loc = json_object_get(x, "location");
    assert_int_equal(json_integer_value(json_object_get(loc, "line")), 42);
    assert_string_equal(json_string_value(json_object_get(loc, "function")), "step<float>");
    json_t *ev = json_array_get(json_object_get(x, "evidence"), 0);
    assert_string_equal(json_string_value(json_object_get(ev, "unit")), "ns");
    assert_int_equal(json_integer_value(json_object_get(ev, "value")), 1500000);
    json_t *sk = json_array_get(json_object_get(json_object_get(doc, "insights"), "skipped"), 0);
    assert_string_equal(json_string_value(json_object_get(sk, "rule")), "throttling");
    json_decref(doc);
    free(buf);

    gpufl__insights_free(&r.insights);
    f = open_memstream(&buf, &len);
    assert_int_equal(gpufl__report_render_text(&r, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "\nInsights\n  No findings.\n"));
    free(buf);
    gpufl__report_free(&r);
    gpufl__model_destroy(m);
}

/* A lane of many kernels is merged into bins: the HTML stays small. */
static void test_report_html_bounded(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    enum { N = 20000 };
    char path[512];
    snprintf(path, sizeof path, "%s/device.log", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n"
          "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"k\"]}\n",
          f);
    const char *cols[] = {"start_ns",
                          "end_ns",
                          "device",
                          "stream",
                          "correlation",
                          "name",
                          "grid_x",
                          "grid_y",
                          "grid_z",
                          "block_x",
                          "block_y",
                          "block_z",
                          "registers",
                          "static_smem_bytes",
                          "dynamic_smem_bytes"};
    fputs("{\"type\":\"kernel\",\"v\":1", f);
    for (int c = 0; c < 15; c++) {
        fprintf(f, ",\"%s\":[", cols[c]);
        for (int i = 0; i < N; i++) {
            long v = c == 0 ? 1000L * i : c == 1 ? 1000L * i + 500 : c == 4 ? i : c >= 12 ? 0 : 1;
            if (c == 2 || c == 3) v = 0;
            fprintf(f, i ? ",%ld" : "%ld", v);
        }
        fputc(']', f);
    }
    fputs("}\n", f);
    assert_int_equal(fclose(f), 0);
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    assert_int_equal(m->n_kernels, N);
    size_t len;
    char *html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    assert_true(len < 400 * 1024);
    assert_non_null(strstr(html, "merged"));
    size_t rects = 0;
    for (const char *p = html; (p = strstr(p, "<rect")) != NULL; p++) rects++;
    assert_true(rects <= 1000);
    assert_true(rects >= 900); /* the lane is busy all along */
    free(html);
    gpufl__model_destroy(m);
    remove_file(dir, "device.log");
    assert_int_equal(rmdir(dir), 0);
}

/* ---------------------------------------------------------------------- */
/* Scope tags, open scopes and the HTML timeline                            */
/* ---------------------------------------------------------------------- */

/* The line of text that starts with prefix, as a heap string (NULL: none). */
static char *line_of(const char *text, const char *prefix) {
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, prefix, n) != 0) continue;
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *s = malloc(len + 1);
        assert_non_null(s);
        memcpy(s, p, len);
        s[len] = '\0';
        return s;
    }
    return NULL;
}

static int ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* A session with kernels on two streams, copies, memsets, scopes on three
 * threads with tags, and two scopes left open (the screenshot's session). */
static void test_report_golden_timeline(void **state) {
    (void)state;
    check_golden("timeline");
}

/* The tag cell: the values joined, cut at the width with how many are left. */
static void test_report_fmt_tags(void **state) {
    (void)state;
    char buf[256];
    const char *two[] = {"GET", "POST"};
    gpufl__report_fmt_tags(buf, sizeof buf, two, 2);
    assert_string_equal(buf, "GET, POST");
    gpufl__report_fmt_tags(buf, sizeof buf, two, 0);
    assert_string_equal(buf, "-");
    const char *many[] = {"shard=train-00000-of-01024", "shard=train-00001-of-01024",
                          "shard=val-00000-of-00128"};
    gpufl__report_fmt_tags(buf, sizeof buf, many, 3);
    assert_string_equal(buf, "shard=train-00000-of-01024, ... (+2 more)");
    const char *longest[] = {"a-tag-far-longer-than-the-forty-columns-of-the-cell", "b"};
    gpufl__report_fmt_tags(buf, sizeof buf, longest, 2);
    assert_string_equal(buf, "a-tag-far-longer-than-the-forty-colum... (+1 more)");
    gpufl__report_fmt_tags(buf, sizeof buf, longest, 1);
    assert_string_equal(buf, "a-tag-far-longer-than-the-forty-colum...");
    const char *odd[] = {"line\nbreak", "\xc2\xb5s=1"};
    gpufl__report_fmt_tags(buf, sizeof buf, odd, 2);
    assert_string_equal(buf, "line?break, \xc2\xb5s=1");
    char small[12];
    gpufl__report_fmt_tags(small, sizeof small, many, 3);
    assert_int_equal(strlen(small), sizeof small - 1); /* cut, terminated */
}

/* Tags are listed with their numbers in numeric order. */
static void test_report_cmp_natural(void **state) {
    (void)state;
    assert_true(gpufl__report_cmp_natural("step=2", "step=10") < 0);
    assert_true(gpufl__report_cmp_natural("step=10", "step=9") > 0);
    assert_true(gpufl__report_cmp_natural("a1b2", "a1b10") < 0);
    assert_true(gpufl__report_cmp_natural("GET", "POST") < 0);
    assert_true(gpufl__report_cmp_natural("step", "step=1") < 0);
    assert_int_equal(gpufl__report_cmp_natural("x=7", "x=7"), 0);
    assert_true(gpufl__report_cmp_natural("x=01", "x=1") != 0); /* distinct stay distinct */
    assert_true((gpufl__report_cmp_natural("x=01", "x=1") < 0) !=
                (gpufl__report_cmp_natural("x=1", "x=01") < 0));
    assert_true(
        gpufl__report_cmp_natural("x=99999999999999999999999", "x=100000000000000000000000") < 0);
}

/* Tag values (not a count) per scope path, and the tag of each open scope,
 * in every format. */
static void test_report_tags_formats(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/killed");
    size_t len;
    char *text = render(m, &len);
    char *row = line_of(text, "    handle ");
    assert_non_null(row);
    assert_true(ends_with(row, "  GET, POST"));
    free(row);
    assert_non_null(strstr(text, "    serve/handle  (tid 900, begun at 90.0 ms, tag GET)\n"));
    assert_non_null(strstr(text, "    serve  (tid 900, begun at 10.0 ms)\n"));
    free(text);

    char *js = render_fmt(m, GPUFL_REPORT_JSON, &len);
    json_t *doc = json_loadb(js, len, 0, NULL);
    assert_non_null(doc);
    json_t *sc = json_object_get(doc, "scopes");
    json_t *p = json_array_get(json_object_get(sc, "paths"), 1);
    assert_string_equal(json_string_value(json_object_get(p, "path")), "serve/handle");
    assert_int_equal(json_integer_value(json_object_get(p, "tags")), 2);
    json_t *tv = json_object_get(p, "tag_values");
    assert_int_equal(json_array_size(tv), 2);
    assert_string_equal(json_string_value(json_array_get(tv, 0)), "GET");
    assert_string_equal(json_string_value(json_array_get(tv, 1)), "POST");
    tv = json_object_get(json_array_get(json_object_get(sc, "paths"), 0), "tag_values");
    assert_true(json_is_array(tv));
    assert_int_equal(json_array_size(tv), 0);
    json_t *open = json_object_get(sc, "open_scopes");
    assert_true(json_is_null(json_object_get(json_array_get(open, 0), "tag")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(open, 1), "tag")), "GET");
    json_decref(doc);
    free(js);

    char *md = render_fmt(m, GPUFL_REPORT_MARKDOWN, &len);
    assert_non_null(strstr(md, "| \xc2\xb7 handle | 3 | 1 |"));
    assert_non_null(strstr(md, " | GET, POST |\n"));
    free(md);
    char *html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    assert_non_null(strstr(html, ">GET, POST</td></tr>"));
    free(html);
    gpufl__model_destroy(m);

    /* More tags than the cell holds: the first, then how many more. */
    m = load("sessions/timeline");
    text = render(m, &len);
    row = line_of(text, "  load_batch ");
    assert_non_null(row);
    assert_true(ends_with(row, "  shard=train-00000-of-01024, ... (+2 more)"));
    free(row);
    free(text);
    md = render_fmt(m, GPUFL_REPORT_MARKDOWN, &len);
    assert_non_null(strstr(md, " | shard=train-00000-of-01024, ... (+2 more) |\n"));
    free(md);
    html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    assert_non_null(strstr(html, ">shard=train-00000-of-01024, ... (+2 more)</td></tr>"));
    free(html);
    js = render_fmt(m, GPUFL_REPORT_JSON, &len);
    doc = json_loadb(js, len, 0, NULL);
    assert_non_null(doc);
    json_t *paths = json_object_get(json_object_get(doc, "scopes"), "paths");
    size_t found = 0;
    for (size_t i = 0; i < json_array_size(paths); i++) {
        p = json_array_get(paths, i);
        if (strcmp(json_string_value(json_object_get(p, "path")), "load_batch") != 0) continue;
        tv = json_object_get(p, "tag_values");
        assert_int_equal(json_array_size(tv), 3);
        assert_string_equal(json_string_value(json_array_get(tv, 2)), "shard=val-00000-of-00128");
        found++;
    }
    assert_int_equal(found, 1);
    json_decref(doc);
    free(js);
    gpufl__model_destroy(m);
}

/* Markdown and HTML list the open scopes as the text report does: path,
 * thread, begin and tag, the first GPUFL_REPORT_LIST_MAX, then how many more. */
static void test_report_open_scopes_doc(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/timeline");
    size_t len;
    char *md = render_fmt(m, GPUFL_REPORT_MARKDOWN, &len);
    assert_non_null(strstr(md, "Open scopes (begun, never ended: still running or killed): 2\n"));
    assert_non_null(strstr(md, "| scope | thread | begun at | tag |\n"));
    assert_non_null(strstr(md, "| checkpoint | 4250 | 255 ms | epoch=0 |\n"));
    assert_non_null(strstr(md, "| checkpoint/upload | 4250 | 276 ms | dest=s3 |\n"));
    free(md);
    char *html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    assert_non_null(strstr(html, "Open scopes (begun, never ended: still running or killed): 2"));
    assert_non_null(strstr(html, "<tr><td>checkpoint/upload</td><td class=\"r\">4250</td><td "
                                 "class=\"r\">276 ms</td><td>dest=s3</td></tr>"));
    free(html);
    gpufl__model_destroy(m);

    /* Twelve open scopes: ten listed, then "... and 2 more" in every format. */
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "scope.log",
               "{\"type\":\"header\",\"v\":1,\"file\":\"scope\",\"segment\":0}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"job\"]}\n"
               "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[1,2,3,4,5,6,7,8,9,10,11,12],"
               "\"tid\":[1,2,3,4,5,6,7,8,9,10,11,12],\"id\":[1,2,3,4,5,6,7,8,9,10,11,12],"
               "\"parent\":[0,0,0,0,0,0,0,0,0,0,0,0],\"depth\":[1,1,1,1,1,1,1,1,1,1,1,1],"
               "\"name\":[1,1,1,1,1,1,1,1,1,1,1,1],\"tag\":[0,0,0,0,0,0,0,0,0,0,0,0],"
               "\"path\":[1,1,1,1,1,1,1,1,1,1,1,1],\"repeat\":[0,0,0,0,0,0,0,0,0,0,0,0],"
               "\"warmup\":[0,0,0,0,0,0,0,0,0,0,0,0]}\n");
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    assert_int_equal(m->n_open_scopes, 12);
    char *text = render(m, &len);
    assert_non_null(strstr(text, "    job  (tid 10, begun at 10.0 ns)\n    ... and 2 more\n"));
    assert_null(strstr(text, "tid 11,"));
    free(text);
    md = render_fmt(m, GPUFL_REPORT_MARKDOWN, &len);
    assert_non_null(strstr(md, "| job | 10 | 10.0 ns | - |\n\n... and 2 more\n"));
    assert_null(strstr(md, "| job | 11 |"));
    free(md);
    html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    assert_non_null(strstr(html, "<p>... and 2 more</p>"));
    free(html);
    char *js = render_fmt(m, GPUFL_REPORT_JSON, &len);
    json_t *doc = json_loadb(js, len, 0, NULL);
    assert_non_null(doc);
    json_t *open = json_object_get(json_object_get(doc, "scopes"), "open_scopes");
    assert_int_equal(json_array_size(open), 10);
    json_decref(doc);
    free(js);
    gpufl__model_destroy(m);
    remove_file(dir, "scope.log");
    assert_int_equal(rmdir(dir), 0);
}

/* The fill colour of the bar whose tooltip starts with title, the nth (0:
 * the first) such bar; "" when none. */
static const char *bar_fill(const char *html, const char *title, int nth, char out[16]) {
    char key[256];
    snprintf(key, sizeof key, "<title>%s", title);
    const char *p = html;
    out[0] = '\0';
    for (int i = 0; i <= nth; i++) {
        p = strstr(p, key);
        if (!p) return out;
        p += strlen(key);
    }
    const char *f = strstr(p, "fill=\"");
    const char *g = strstr(p, "</g>");
    if (!f || (g && g < f)) return out;
    f += 6;
    size_t n = strcspn(f, "\"");
    if (n >= 16) return out;
    memcpy(out, f, n);
    out[n] = '\0';
    return out;
}

/* A number attribute (x="12.5") of the first rect after the tooltip title. */
static double bar_attr(const char *html, const char *title, const char *attr) {
    char key[256], name[32];
    snprintf(key, sizeof key, "<title>%s", title);
    const char *p = strstr(html, key);
    assert_non_null(p);
    p = strstr(p, "<rect ");
    assert_non_null(p);
    snprintf(name, sizeof name, " %s=\"", attr);
    p = strstr(p, name);
    assert_non_null(p);
    return strtod(p + strlen(name), NULL);
}

static size_t count_of(const char *text, const char *needle) {
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* The timeline's SVG in an HTML report, as a heap string. */
static char *timeline_svg(const char *html) {
    const char *tl = strstr(html, "<svg class=\"tl\"");
    assert_non_null(tl);
    const char *end = strstr(tl, "</svg>");
    assert_non_null(end);
    char *svg = strndup(tl, (size_t)(end - tl) + 6);
    assert_non_null(svg);
    return svg;
}

/* The timeline: as wide as the page, a time axis of round steps, bars
 * labelled where the name fits, a colour per name, open scopes marked and
 * drawn to the session end. */
static void test_report_html_timeline(void **state) {
    (void)state;
    gpufl__model_t *m = load("sessions/timeline");
    size_t len;
    char *html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    assert_offline(html);
    char *tl = timeline_svg(html);
    /* as wide as the page: the svg element scales its view box */
    const char *tag_end = strchr(tl, '>'), *width = strstr(tl, " width=\"100%\"");
    const char *view = strstr(tl, " viewBox=\"0 0 1200 ");
    assert_non_null(width);
    assert_non_null(view);
    assert_true(width < tag_end && view < tag_end);
    /* 3 ms to 320 ms: ticks every 50 ms, in ms, at session time */
    static const char *const ticks[] = {">50 ms</text>",  ">100 ms</text>", ">150 ms</text>",
                                        ">200 ms</text>", ">250 ms</text>", ">300 ms</text>"};
    for (size_t i = 0; i < 6; i++) assert_non_null(strstr(tl, ticks[i]));
    assert_null(strstr(tl, ">0 ms</text>")); /* before the first record */
    assert_null(strstr(tl, ">350 ms</text>"));
    assert_true(count_of(tl, "class=\"tick\"") >= 6);
    /* labels inside bars wide enough, none on narrow ones */
    assert_non_null(strstr(tl, "class=\"bl\""));
    assert_non_null(strstr(tl, ">forward</text>"));
    assert_non_null(strstr(tl, ">step [step=0]</text>"));
    assert_non_null(strstr(tl, ">sgemm_128x64</text>"));
    assert_null(strstr(tl, ">relu</text>")); /* 1.2 ms: a few pixels */
    assert_null(strstr(tl, ">relu(float*, int)</text>"));
    /* one colour per name: across rows and instances, and across kinds */
    char a[16], b[16];
    assert_string_equal(bar_fill(tl, "train/step/forward", 0, a),
                        bar_fill(tl, "train/step/forward", 1, b));
    assert_true(a[0] == '#');
    assert_string_not_equal(a, bar_fill(tl, "train/step/backward", 0, b));
    assert_string_not_equal(a, bar_fill(tl, "train/step [", 0, b));
    assert_string_equal(bar_fill(tl, "sgemm_128x64(", 0, a), bar_fill(tl, "sgemm_128x64(", 2, b));
    assert_true(a[0] == '#');
    assert_string_not_equal(a, bar_fill(tl, "sgemm_bwd(", 0, b));
    /* copies and memsets in greys, which no name's colour is */
    static const char *const named[] = {"adam_update(",
                                        "argmax_kernel(",
                                        "checkpoint [",
                                        "checkpoint/serialize",
                                        "load_batch [",
                                        "load_batch/decode",
                                        "ncclDevKernel_AllReduce",
                                        "relu(",
                                        "sgemm_128x64(",
                                        "sgemm_bwd(",
                                        "softmax_bwd(",
                                        "softmax_fwd(",
                                        "train [",
                                        "train/evaluate",
                                        "train/step/optimizer"};
    char copy_fill[16], mset_fill[16];
    bar_fill(tl, "copy host", 0, copy_fill);
    bar_fill(tl, "memset ", 0, mset_fill);
    for (int g = 0; g < 2; g++) {
        const char *f = g ? mset_fill : copy_fill;
        assert_true(strlen(f) == 7 && f[1] == f[3] && f[2] == f[4] && f[3] == f[5] && f[4] == f[6]);
    }
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        bar_fill(tl, named[i], 0, a);
        assert_true(strlen(a) == 7);
        assert_false(a[1] == a[3] && a[2] == a[4] && a[3] == a[5] && a[4] == a[6]); /* not grey */
    }
    /* open scopes: hatched, to the session end (320 ms: the right edge), legend */
    assert_non_null(strstr(tl, "<pattern id=\"open-hatch\""));
    assert_int_equal(count_of(tl, "fill=\"url(#open-hatch)\""), 3); /* two bars, the legend */
    assert_non_null(strstr(tl, "open: no end recorded"));
    double x = bar_attr(tl, "checkpoint/upload", "x"),
           w = bar_attr(tl, "checkpoint/upload", "width");
    assert_true(x + w > 1189.9 && x + w < 1190.1);
    assert_true(strstr(tl, "<title>checkpoint/upload [dest=s3]\nbegun at 276 ms, open: no end "
                           "recorded</title>") != NULL);
    /* a closed bar ends where its scope ended */
    double x0 = bar_attr(tl, "checkpoint/serialize", "x");
    double w0 = bar_attr(tl, "checkpoint/serialize", "width");
    assert_true(x0 + w0 < x - 0.5);
    free(tl);
    free(html);
    gpufl__model_destroy(m);

    /* Seconds: the basic session spans 0.1 s to 3.46 s */
    m = load("sessions/basic");
    html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    tl = timeline_svg(html);
    assert_non_null(strstr(tl, ">0.5 s</text>"));
    assert_non_null(strstr(tl, ">1 s</text>"));
    assert_non_null(strstr(tl, ">1.5 s</text>"));
    assert_null(strstr(tl, " ms</text>"));
    free(tl);
    free(html);
    gpufl__model_destroy(m);
}

/* Microseconds: ticks of a short session, never overlapping their labels;
 * a long kernel name shortened to what fits its bar. */
static void test_report_html_axis_short(void **state) {
    (void)state;
    char dir[] = "/tmp/gpufl-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "device.log",
               "{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[1,2],\"str\":[\"k\",\"void "
               "ns::gemm<128, (anonymous namespace)::Op>(float*, int)\"]}\n"
               "{\"type\":\"kernel\",\"v\":1,\"start_ns\":[1000,5000,9000,9600],"
               "\"end_ns\":[3800,9000,9500,10800],\"device\":[0,0,0,0],\"stream\":[7,7,7,7],"
               "\"correlation\":[1,2,3,4],\"name\":[2,1,1,2],\"grid_x\":[1,1,1,1],"
               "\"grid_y\":[1,1,1,1],\"grid_z\":[1,1,1,1],\"block_x\":[32,32,32,32],"
               "\"block_y\":[1,1,1,1],\"block_z\":[1,1,1,1],\"registers\":[8,8,8,8],"
               "\"static_smem_bytes\":[0,0,0,0],\"dynamic_smem_bytes\":[0,0,0,0]}\n");
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    size_t len;
    char *html = render_fmt(m, GPUFL_REPORT_HTML, &len);
    char *tl = timeline_svg(html);
    /* 1 to 10.8 µs: a tick per µs */
    assert_non_null(strstr(tl, ">1 \xc2\xb5s</text>"));
    assert_non_null(strstr(tl, ">5 \xc2\xb5s</text>"));
    assert_non_null(strstr(tl, ">10 \xc2\xb5s</text>"));
    assert_int_equal(count_of(tl, " \xc2\xb5s</text>"), 10);
    /* the same kernel name: one colour; both bars labelled */
    char a[16], b[16];
    assert_string_equal(bar_fill(tl, "k\n", 0, a), bar_fill(tl, "k\n", 1, b));
    assert_true(a[0] == '#');
    assert_int_equal(count_of(tl, ">k</text>"), 2);
    /* a long name: without return type and parameters where that fits (2.8
     * µs of 9.8), else without namespaces and template arguments too */
    assert_non_null(strstr(tl, "<title>void ns::gemm&lt;128, (anonymous namespace)::Op&gt;(float*, "
                               "int)\n1.00 \xc2\xb5s to 3.80 \xc2\xb5s (2.80 \xc2\xb5s)</title>"));
    assert_non_null(strstr(tl, ">ns::gemm&lt;128, (anonymous namespace)::Op&gt;</text>"));
    assert_non_null(strstr(tl, ">gemm</text>"));
    assert_null(strstr(tl, "(float*, int)</text>"));
    free(tl);
    free(html);
    gpufl__model_destroy(m);
    remove_file(dir, "device.log");
    assert_int_equal(rmdir(dir), 0);
}

typedef struct progress_seen {
    size_t calls;
    uint64_t last_read, last_total;
} progress_seen_t;

static void on_progress(void *user, uint64_t read_bytes, uint64_t total_bytes) {
    progress_seen_t *p = user;
    assert_true(read_bytes <= total_bytes);
    assert_true(read_bytes >= p->last_read);
    p->calls++;
    p->last_read = read_bytes;
    p->last_total = total_bytes;
}

/* Progress ends at the total: the sizes of all segment files. */
static void test_report_progress(void **state) {
    (void)state;
    progress_seen_t seen = {0, 0, 0};
    gpufl__model_limits_t limits;
    memset(&limits, 0, sizeof limits);
    limits.progress = on_progress;
    limits.progress_user = &seen;
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load_limits(&m, fixture("sessions/rotated"), &limits), 0);
    uint64_t total = 0;
    static const char *const files[] = {"device.log", "scope.log", "scope.log.1"};
    for (size_t i = 0; i < 3; i++) {
        char rel[128];
        struct stat st;
        snprintf(rel, sizeof rel, "sessions/rotated/%s", files[i]);
        assert_int_equal(stat(fixture(rel), &st), 0);
        total += (uint64_t)st.st_size;
    }
    assert_true(seen.calls >= 1);
    assert_true(seen.calls <= 3); /* a fast load: the final call, maybe one more */
    assert_int_equal(seen.last_total, total);
    assert_int_equal(seen.last_read, total);
    assert_int_equal(m->read.bytes, total);
    gpufl__model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_model_basic),
        cmocka_unit_test(test_report_golden_basic),
        cmocka_unit_test(test_report_golden_killed),
        cmocka_unit_test(test_report_golden_rotated),
        cmocka_unit_test(test_report_golden_gpu),
        cmocka_unit_test(test_report_truncated_last_line),
        cmocka_unit_test(test_report_rotated_segments),
        cmocka_unit_test(test_report_corrupt_lines),
        cmocka_unit_test(test_report_unknown_ignored),
        cmocka_unit_test(test_report_missing_dir),
        cmocka_unit_test(test_report_oversized_line),
        cmocka_unit_test(test_report_caps_counted),
        cmocka_unit_test(test_report_segment_checks),
        cmocka_unit_test(test_report_host_cpu_bounds),
        cmocka_unit_test(test_report_lost_name_without_path),
        cmocka_unit_test(test_report_model_gpu),
        cmocka_unit_test(test_report_gpu_corrupt),
        cmocka_unit_test(test_report_gpu_absent),
        cmocka_unit_test(test_report_model_trace),
        cmocka_unit_test(test_report_golden_trace),
        cmocka_unit_test(test_report_golden_stacks),
        cmocka_unit_test(test_report_golden_pcsampled),
        cmocka_unit_test(test_report_golden_sassmetrics),
        cmocka_unit_test(test_report_golden_rangeprof),
        cmocka_unit_test(test_report_pc_kernel_rows),
        cmocka_unit_test(test_report_pc_launch_rows),
        cmocka_unit_test(test_report_pc_buffer_full),
        cmocka_unit_test(test_report_pc_inconsistent),
        cmocka_unit_test(test_report_pc_bad_lines),
        cmocka_unit_test(test_report_trace_corrupt),
        cmocka_unit_test(test_report_model_configs),
        cmocka_unit_test(test_report_gpu_per_scope),
        cmocka_unit_test(test_report_golden_scoped),
        cmocka_unit_test(test_report_scoped_sections),
        cmocka_unit_test(test_report_trace_old_format),
        cmocka_unit_test(test_report_trace_refs),
        cmocka_unit_test(test_report_configs_corrupt),
        cmocka_unit_test(test_report_write_error),
        cmocka_unit_test(test_report_batch_scanner),
        cmocka_unit_test(test_report_batch_fallback),
        cmocka_unit_test(test_report_damage_scan),
        cmocka_unit_test(test_report_damaged_line),
        cmocka_unit_test(test_report_damaged_lines_summed),
        cmocka_unit_test(test_report_golden_nvtx),
        cmocka_unit_test(test_report_golden_json),
        cmocka_unit_test(test_report_golden_markdown),
        cmocka_unit_test(test_report_golden_html),
        cmocka_unit_test(test_report_format_parse),
        cmocka_unit_test(test_report_html_offline),
        cmocka_unit_test(test_report_json_keys),
        cmocka_unit_test(test_report_escaping),
        cmocka_unit_test(test_report_insights_formats),
        cmocka_unit_test(test_report_html_bounded),
        cmocka_unit_test(test_report_golden_timeline),
        cmocka_unit_test(test_report_fmt_tags),
        cmocka_unit_test(test_report_cmp_natural),
        cmocka_unit_test(test_report_tags_formats),
        cmocka_unit_test(test_report_open_scopes_doc),
        cmocka_unit_test(test_report_html_timeline),
        cmocka_unit_test(test_report_html_axis_short),
        cmocka_unit_test(test_report_progress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
