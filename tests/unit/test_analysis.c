// SPDX-License-Identifier: Apache-2.0
/*
 * test_analysis.c - the public read API (gpufl_analysis.h) on the fixture
 * sessions: finding a session, tables and columns, string ids, the report
 * against the golden files, every error path, and one handle used from
 * several threads at once.
 */
#include "test_util.h"

#include <gpufl/gpufl_analysis.h>

#include <math.h>
#include <pthread.h>

#ifndef GPUFL_TEST_SOURCE_DIR
#error "GPUFL_TEST_SOURCE_DIR must name the tests/ directory"
#endif

static const char *fixture(const char *rel) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/fixtures/%s", GPUFL_TEST_SOURCE_DIR, rel);
    return path;
}

static gpufl_analysis_t *open_fixture(const char *name) {
    char rel[256];
    gpufl_analysis_t *a = NULL;
    snprintf(rel, sizeof rel, "sessions/%s", name);
    int rc = gpufl_analysis_open(&a, fixture(rel));
    if (rc) print_error("open %s: %d %s\n", name, rc, gpufl_last_error());
    assert_int_equal(rc, 0);
    return a;
}

static gpufl_column_t column(gpufl_analysis_t *a, gpufl_table_t t, const char *name) {
    gpufl_column_t c = {.size = sizeof c};
    assert_int_equal(gpufl_analysis_column_find(a, t, name, &c), 0);
    assert_string_equal(c.name, name);
    return c;
}

static void test_analysis_kernels(void **state) {
    (void)state;
    gpufl_analysis_t *a = open_fixture("trace");
    size_t rows = 0, cols = 0;
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_KERNELS, &rows, &cols), 0);
    assert_int_equal(rows, 8);
    assert_true(cols >= 30);
    gpufl_column_t dur = column(a, GPUFL_TABLE_KERNELS, "duration_ns");
    gpufl_column_t name = column(a, GPUFL_TABLE_KERNELS, "name");
    assert_int_equal(dur.type, GPUFL_COLUMN_INT64);
    assert_int_equal(name.type, GPUFL_COLUMN_STRING);
    const int64_t *d = dur.data, *n = name.data;
    int64_t total = 0;
    for (size_t i = 0; i < rows; i++) total += d[i];
    assert_int_equal(total, 1110000);
    /* equal strings, equal ids: rows 0, 2, 5, 7 are gemm */
    assert_int_equal(n[0], n[2]);
    assert_int_equal(n[0], n[7]);
    assert_int_not_equal(n[0], n[1]);
    assert_string_equal(gpufl_analysis_string(a, n[0]), "_Z4gemmPKfS0_Pfiii");
    assert_true(gpufl_analysis_string_count(a) > n[0]);
    assert_null(gpufl_analysis_string(a, 0));
    assert_null(gpufl_analysis_string(a, 1000000));
    /* no config: occupancy unknown */
    gpufl_column_t occ = column(a, GPUFL_TABLE_KERNELS, "occupancy");
    assert_int_equal(occ.type, GPUFL_COLUMN_DOUBLE);
    assert_true(isnan(((const double *)occ.data)[0]));
    /* a column by index, and the same data again */
    gpufl_column_t first = {.size = sizeof first};
    assert_int_equal(gpufl_analysis_column(a, GPUFL_TABLE_KERNELS, 0, &first), 0);
    assert_string_equal(first.name, "start_ns");
    assert_int_equal(((const int64_t *)first.data)[7], 3000000);
    gpufl_analysis_close(a);
}

static void test_analysis_scopes_and_session(void **state) {
    (void)state;
    gpufl_analysis_t *a = open_fixture("killed");
    size_t rows = 0;
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_SCOPES, &rows, NULL), 0);
    assert_int_equal(rows, 5);
    const int64_t *open = column(a, GPUFL_TABLE_SCOPES, "open").data;
    const int64_t *end = column(a, GPUFL_TABLE_SCOPES, "end_ns").data;
    assert_int_equal(open[4], 1); /* its scope_end is the cut last line */
    assert_int_equal(end[4], -1);
    assert_int_equal(open[1], 0);
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_SESSION, &rows, NULL), 0);
    assert_int_equal(rows, 1);
    assert_int_equal(*(const int64_t *)column(a, GPUFL_TABLE_SESSION, "truncated_lines").data, 1);
    assert_int_equal(*(const int64_t *)column(a, GPUFL_TABLE_SESSION, "ended").data, 0);
    int64_t app = *(const int64_t *)column(a, GPUFL_TABLE_SESSION, "app_name").data;
    assert_string_equal(gpufl_analysis_string(a, app), "server");
    gpufl_analysis_close(a);
}

static void test_analysis_empty_tables(void **state) {
    (void)state;
    gpufl_analysis_t *a = open_fixture("basic");
    for (int t = 0; t < GPUFL_TABLE_COUNT; t++) {
        size_t rows = 99, cols = 0;
        assert_non_null(gpufl_table_name((gpufl_table_t)t));
        assert_int_equal(gpufl_analysis_table(a, (gpufl_table_t)t, &rows, &cols), 0);
        assert_true(cols > 0);
        gpufl_column_t c = {.size = sizeof c};
        assert_int_equal(gpufl_analysis_column(a, (gpufl_table_t)t, 0, &c), 0);
        assert_int_equal(c.rows, rows);
        if (rows == 0) assert_null(c.data);
    }
    size_t rows;
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_KERNELS, &rows, NULL), 0);
    assert_int_equal(rows, 0);
    assert_null(gpufl_table_name(GPUFL_TABLE_COUNT));
    gpufl_analysis_close(a);
}

/* perf: the fixed columns, then one double column per metric name. */
static void test_analysis_perf(void **state) {
    (void)state;
    gpufl_analysis_t *a = open_fixture("rangeprof");
    size_t rows = 0, cols = 0;
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_PERF, &rows, &cols), 0);
    assert_int_equal(rows, 2);
    assert_int_equal(cols, 7 + 11);
    assert_string_equal(gpufl_table_name(GPUFL_TABLE_PERF), "perf");
    gpufl_column_t c = column(a, GPUFL_TABLE_PERF, "gpu__time_duration.sum");
    assert_int_equal(c.type, GPUFL_COLUMN_DOUBLE);
    assert_true(((const double *)c.data)[0] == 41250000.0);
    c = column(a, GPUFL_TABLE_PERF, "l1tex__t_sector_hit_rate.pct");
    assert_true(isnan(((const double *)c.data)[1])); /* null: not evaluated */
    c = column(a, GPUFL_TABLE_PERF, "path");
    assert_int_equal(c.type, GPUFL_COLUMN_STRING);
    assert_string_equal(gpufl_analysis_string(a, ((const int64_t *)c.data)[1]), "eval");
    c = column(a, GPUFL_TABLE_PERF, "group");
    assert_int_equal(c.type, GPUFL_COLUMN_INT64);
    assert_int_equal(((const int64_t *)c.data)[1], 0); /* a log without groups */
    c = column(a, GPUFL_TABLE_PERF, "settling");
    assert_int_equal(c.type, GPUFL_COLUMN_INT64);
    assert_int_equal(((const int64_t *)c.data)[0], 1);
    gpufl_analysis_close(a);
}

static void test_analysis_errors(void **state) {
    (void)state;
    gpufl_analysis_t *a = NULL;
    assert_int_equal(gpufl_analysis_open(&a, fixture("nowhere")), GPUFL_ENOTFOUND);
    assert_null(a);
    assert_int_equal(gpufl_analysis_open(&a, fixture("golden")), GPUFL_ENOTFOUND);
    assert_non_null(strstr(gpufl_last_error(), "not a session directory"));
    assert_int_equal(gpufl_analysis_open(NULL, fixture("sessions/basic")), GPUFL_EINVAL);
    gpufl_analysis_close(NULL);

    a = open_fixture("basic");
    gpufl_column_t c = {.size = sizeof c};
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_COUNT, NULL, NULL), GPUFL_EINVAL);
    assert_int_equal(gpufl_analysis_column(a, GPUFL_TABLE_SCOPES, 1000, &c), GPUFL_EINVAL);
    assert_int_equal(gpufl_analysis_column_find(a, GPUFL_TABLE_SCOPES, "nope", &c),
                     GPUFL_ENOTFOUND);
    assert_non_null(strstr(gpufl_last_error(), "no column 'nope'"));
    /* an older, shorter struct is written no further than its size */
    struct {
        size_t size;
        const char *name;
    } old = {sizeof old, NULL};
    assert_int_equal(
        gpufl_analysis_column(a, GPUFL_TABLE_SCOPES, 2, (gpufl_column_t *)(void *)&old), 0);
    assert_string_equal(old.name, "name");
    c.size = 0;
    assert_int_equal(gpufl_analysis_column(a, GPUFL_TABLE_SCOPES, 0, &c), GPUFL_EINVAL);
    gpufl_analysis_close(a);
}

static void test_analysis_find(void **state) {
    (void)state;
    char dir[4096], tiny[8];
    assert_int_equal(gpufl_analysis_find(fixture("sessions"), NULL, NULL, dir, sizeof dir), 0);
    /* the newest session of the fixtures */
    assert_int_equal(gpufl_analysis_find(fixture("sessions"), "trainer", NULL, dir, sizeof dir), 0);
    assert_string_equal(dir, fixture("sessions/basic"));
    assert_int_equal(gpufl_analysis_find(fixture("sessions"), NULL, "killed", dir, sizeof dir), 0);
    assert_string_equal(dir, fixture("sessions/killed"));
    assert_int_equal(gpufl_analysis_find(fixture("sessions"), NULL,
                                         "20261122T050000.500Z-31337-a0b1", dir, sizeof dir),
                     0);
    assert_string_equal(dir, fixture("sessions/rotated"));
    assert_int_equal(gpufl_analysis_find(fixture("sessions"), "nope", NULL, dir, sizeof dir),
                     GPUFL_ENOTFOUND);
    assert_non_null(strstr(gpufl_last_error(), "apps found: "));
    assert_int_equal(gpufl_analysis_find(fixture("sessions"), "trainer", "x", dir, sizeof dir),
                     GPUFL_ENOTFOUND);
    assert_non_null(strstr(gpufl_last_error(), "no session 'x' of app 'trainer'"));
    assert_int_equal(gpufl_analysis_find(fixture("nowhere"), NULL, NULL, dir, sizeof dir),
                     GPUFL_ENOTFOUND);
    assert_int_equal(gpufl_analysis_find(fixture("golden"), NULL, NULL, dir, sizeof dir),
                     GPUFL_ENOTFOUND);
    assert_non_null(strstr(gpufl_last_error(), "no session under"));
    assert_int_equal(gpufl_analysis_find(fixture("sessions/basic"), NULL, NULL, tiny, sizeof tiny),
                     GPUFL_EINVAL);
    assert_int_equal(gpufl_analysis_find(NULL, NULL, NULL, dir, sizeof dir), GPUFL_EINVAL);
}

static void test_analysis_report(void **state) {
    (void)state;
    gpufl_analysis_t *a = open_fixture("scoped");
    const char *text = NULL, *again = NULL;
    size_t len = 0;
    assert_int_equal(gpufl_analysis_report(a, NULL, &text, &len), 0);
    char *golden = tu_read_file(fixture("golden/scoped.txt"), NULL);
    assert_string_equal(text, golden);
    assert_int_equal(len, strlen(golden));
    free(golden);
    assert_int_equal(gpufl_analysis_report(a, NULL, &again, NULL), 0);
    assert_ptr_equal(text, again); /* rendered once */

    gpufl_report_options_t o;
    gpufl_report_options_init(&o);
    o.format = "json";
    assert_int_equal(gpufl_analysis_report(a, &o, &text, NULL), 0);
    golden = tu_read_file(fixture("golden/scoped.json"), NULL);
    assert_string_equal(text, golden);
    free(golden);

    gpufl_report_options_init(&o);
    o.section = "kernels";
    o.top_n = 2;
    assert_int_equal(gpufl_analysis_report(a, &o, &text, NULL), 0);
    assert_non_null(strstr(text, "\nKernel hotspots\n  top 2 kernel names"));
    assert_null(strstr(text, "Scope timing"));

    o.section = "nope";
    assert_int_equal(gpufl_analysis_report(a, &o, &text, NULL), GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "summary, insights, scopes"));
    o.section = "kernels";
    o.format = "html";
    assert_int_equal(gpufl_analysis_report(a, &o, &text, NULL), GPUFL_EINVAL);
    o.section = NULL;
    o.format = "pdf";
    assert_int_equal(gpufl_analysis_report(a, &o, &text, NULL), GPUFL_EINVAL);

    /* insights: the report's, most severe first */
    size_t rows = 0;
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_INSIGHTS, &rows, NULL), 0);
    assert_int_equal(rows, 4);
    const int64_t *level = column(a, GPUFL_TABLE_INSIGHTS, "severity_level").data;
    assert_int_equal(level[0], 3);
    assert_true(level[3] <= level[0]);
    gpufl_analysis_close(a);
}

/* One handle, several threads building tables and reports at once. */
static void *worker(void *arg) {
    gpufl_analysis_t *a = arg;
    for (int t = GPUFL_TABLE_COUNT - 1; t >= 0; t--) {
        size_t rows;
        if (gpufl_analysis_table(a, (gpufl_table_t)t, &rows, NULL)) return arg;
    }
    const char *text;
    if (gpufl_analysis_report(a, NULL, &text, NULL) || !gpufl_analysis_string(a, 1)) return arg;
    return NULL;
}

static void test_analysis_threads(void **state) {
    (void)state;
    gpufl_analysis_t *a = open_fixture("scoped");
    pthread_t th[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, worker, a), 0);
    for (int i = 0; i < 4; i++) {
        void *failed;
        pthread_join(th[i], &failed);
        assert_null(failed);
    }
    gpufl_analysis_close(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analysis_kernels),
        cmocka_unit_test(test_analysis_scopes_and_session),
        cmocka_unit_test(test_analysis_empty_tables),
        cmocka_unit_test(test_analysis_perf),
        cmocka_unit_test(test_analysis_errors),
        cmocka_unit_test(test_analysis_find),
        cmocka_unit_test(test_analysis_report),
        cmocka_unit_test(test_analysis_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
