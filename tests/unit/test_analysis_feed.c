// SPDX-License-Identifier: Apache-2.0
/*
 * test_analysis_feed.c - feeding a session's lines to the read API
 * (gpufl_analysis_create / _feed / _feed_end): every fixture session fed in
 * many interleavings of its files gives the report of its directory byte for
 * byte; a report mid-feed is valid and says the session is open; bad input
 * is an error or a counted damaged line, never a crash.
 */
#include "test_util.h"

#include <gpufl/gpufl_analysis.h>

#include <jansson.h>

#ifndef GPUFL_TEST_SOURCE_DIR
#error "GPUFL_TEST_SOURCE_DIR must name the tests/ directory"
#endif

static const char *const sessions[] = {"basic",     "gpu",      "killed",      "pcsampled",
                                       "rangeprof", "rotated",  "sassmetrics", "scoped",
                                       "stacks",    "timeline", "trace"};
static const char *const channels[3] = {"device", "scope", "system"};

/* A file's bytes, its segments one after another (what a feed receives). */
typedef struct file_bytes {
    char *data;
    size_t len;
} file_bytes_t;

static void session_path(char *buf, size_t size, const char *session) {
    snprintf(buf, size, "%s/fixtures/sessions/%s", GPUFL_TEST_SOURCE_DIR, session);
}

static void append_file(file_bytes_t *b, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        b->data = realloc(b->data, b->len + n + 1);
        assert_non_null(b->data);
        memcpy(b->data + b->len, chunk, n);
        b->len += n;
    }
    fclose(f);
}

static void load_files(const char *session, file_bytes_t files[3]) {
    char dir[4096], path[4200];
    session_path(dir, sizeof dir, session);
    for (int i = 0; i < 3; i++) {
        files[i] = (file_bytes_t){NULL, 0};
        for (int seg = 0; seg < 8; seg++) {
            if (seg == 0)
                snprintf(path, sizeof path, "%s/%s.log", dir, channels[i]);
            else
                snprintf(path, sizeof path, "%s/%s.log.%d", dir, channels[i], seg);
            append_file(&files[i], path);
        }
    }
}

static void free_files(file_bytes_t files[3]) {
    for (int i = 0; i < 3; i++) free(files[i].data);
}

static char *report_of(gpufl_analysis_t *a, const char *format) {
    gpufl_report_options_t o;
    gpufl_report_options_init(&o);
    o.format = format;
    const char *text = NULL;
    int rc = gpufl_analysis_report(a, &o, &text, NULL);
    if (rc) print_error("report: %d %s\n", rc, gpufl_last_error());
    assert_int_equal(rc, 0);
    return strdup(text);
}

static char *dir_report(const char *session, const char *format) {
    char dir[4096];
    gpufl_analysis_t *a = NULL;
    session_path(dir, sizeof dir, session);
    assert_int_equal(gpufl_analysis_open(&a, dir), 0);
    char *r = report_of(a, format);
    gpufl_analysis_close(a);
    return r;
}

static void feed_ok(gpufl_analysis_t *a, const char *channel, const char *p, size_t n) {
    int rc = gpufl_analysis_feed(a, channel, p, n);
    if (rc) print_error("feed %s: %d %s\n", channel ? channel : "NULL", rc, gpufl_last_error());
    assert_int_equal(rc, 0);
}

/* Ends the session and checks its reports against the directory's. */
static void end_and_compare(gpufl_analysis_t *a, const char *session, const char *how) {
    assert_int_equal(gpufl_analysis_feed_end(a, NULL), 0);
    static const char *const formats[] = {"json", "text"};
    for (int i = 0; i < 2; i++) {
        char *want = dir_report(session, formats[i]), *got = report_of(a, formats[i]);
        if (strcmp(want, got) != 0)
            print_error("%s fed %s: the %s report differs from the directory's\n", session, how,
                        formats[i]);
        assert_string_equal(got, want);
        free(want);
        free(got);
    }
    gpufl_analysis_close(a);
}

static gpufl_analysis_t *create(unsigned flags) {
    gpufl_analysis_options_t o;
    gpufl_analysis_options_init(&o);
    o.flags = flags;
    gpufl_analysis_t *a = NULL;
    assert_int_equal(gpufl_analysis_create(&a, &o), 0);
    assert_non_null(a);
    return a;
}

/* One file after another, in each of the six orders. */
static void feed_file_orders(const char *session, const file_bytes_t files[3]) {
    static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int o = 0; o < 6; o++) {
        gpufl_analysis_t *a = create(0);
        for (int k = 0; k < 3; k++) {
            int i = orders[o][k];
            if (files[i].len) feed_ok(a, channels[i], files[i].data, files[i].len);
        }
        end_and_compare(a, session, "file after file");
    }
}

/* Line by line, one line of each file in turn. */
static void feed_round_robin(const char *session, const file_bytes_t files[3]) {
    gpufl_analysis_t *a = create(0);
    size_t at[3] = {0, 0, 0};
    for (int more = 1; more;) {
        more = 0;
        for (int i = 0; i < 3; i++) {
            if (at[i] >= files[i].len) continue;
            const char *p = files[i].data + at[i];
            const char *nl = memchr(p, '\n', files[i].len - at[i]);
            size_t n = nl ? (size_t)(nl - p) + 1 : files[i].len - at[i];
            feed_ok(a, channels[i], p, n);
            at[i] += n;
            more = 1;
        }
    }
    end_and_compare(a, session, "round-robin");
}

/* Random chunks (cutting lines anywhere) from a random file each time. */
static void feed_random_chunks(const char *session, const file_bytes_t files[3], unsigned seed) {
    gpufl_analysis_t *a = create(0);
    size_t at[3] = {0, 0, 0};
    srand(seed);
    for (;;) {
        int left[3], n_left = 0;
        for (int i = 0; i < 3; i++)
            if (at[i] < files[i].len) left[n_left++] = i;
        if (!n_left) break;
        int i = left[rand() % n_left];
        size_t n = 1 + (size_t)rand() % 97;
        if (n > files[i].len - at[i]) n = files[i].len - at[i];
        feed_ok(a, channels[i], files[i].data + at[i], n);
        at[i] += n;
    }
    end_and_compare(a, session, "in random chunks");
}

/* Whole files on the NULL channel (the headers tell), and in order. A file
 * that ends in an unfinished line (killed) would join the next file's
 * header there, as gpufl_analysis_feed says: those go on their channels. */
static void feed_auto_and_in_order(const char *session, const file_bytes_t files[3]) {
    gpufl_analysis_t *a = create(0);
    for (int i = 0; i < 3; i++) {
        int whole = !files[i].len || files[i].data[files[i].len - 1] == '\n';
        if (files[i].len) feed_ok(a, whole ? NULL : channels[i], files[i].data, files[i].len);
    }
    end_and_compare(a, session, "on the NULL channel");
    a = create(GPUFL_ANALYSIS_IN_ORDER);
    for (int i = 0; i < 3; i++)
        for (size_t at = 0; at < files[i].len; at += 1000) {
            size_t n = files[i].len - at < 1000 ? files[i].len - at : 1000;
            feed_ok(a, channels[i], files[i].data + at, n);
        }
    end_and_compare(a, session, "in order");
}

static void test_analysis_feed_matches_directory(void **state) {
    (void)state;
    for (size_t s = 0; s < sizeof sessions / sizeof sessions[0]; s++) {
        file_bytes_t files[3];
        load_files(sessions[s], files);
        feed_file_orders(sessions[s], files);
        feed_round_robin(sessions[s], files);
        for (unsigned seed = 1; seed <= 4; seed++) feed_random_chunks(sessions[s], files, seed);
        feed_auto_and_in_order(sessions[s], files);
        free_files(files);
    }
}

/* The value of a top-level member path "a.b" of a JSON report. */
static json_t *json_at(json_t *root, const char *a, const char *b) {
    json_t *v = json_object_get(root, a);
    return b ? json_object_get(v, b) : v;
}

static int64_t session_value(gpufl_analysis_t *a, const char *column) {
    gpufl_column_t c = {.size = sizeof c};
    size_t rows = 0;
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_SESSION, &rows, NULL), 0);
    assert_int_equal(rows, 1);
    assert_int_equal(gpufl_analysis_column_find(a, GPUFL_TABLE_SESSION, column, &c), 0);
    return ((const int64_t *)c.data)[0];
}

/* What fn writes to a temporary stream, NUL-terminated (malloc'd). */
typedef int (*write_fn)(gpufl_analysis_t *a, FILE *out);

static char *written(gpufl_analysis_t *a, write_fn fn) {
    FILE *f = tmpfile();
    assert_non_null(f);
    int rc = fn(a, f);
    if (rc) print_error("write: %d %s\n", rc, gpufl_last_error());
    assert_int_equal(rc, 0);
    long n = ftell(f);
    assert_true(n > 0);
    char *text = calloc((size_t)n + 1, 1);
    assert_non_null(text);
    rewind(f);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return text;
}

static int write_chrome(gpufl_analysis_t *a, FILE *out) {
    gpufl_export_options_t o = {.size = sizeof o, .format = GPUFL_EXPORT_CHROME, .out = out};
    return gpufl_analysis_export(NULL, a, &o);
}

static int write_insights(gpufl_analysis_t *a, FILE *out) {
    gpufl_insights_options_t o;
    gpufl_insights_options_init(&o);
    o.format = "json";
    return gpufl_analysis_insights_write(a, &o, out);
}

/* A fed handle exports and writes insights as its first use (gpufl-server's export route asks
 * nothing else of it first), equal to the directory's. */
static void test_analysis_feed_export_and_insights_first(void **state) {
    (void)state;
    static const write_fn fns[] = {write_chrome, write_insights};
    char dir[4096];
    session_path(dir, sizeof dir, "scoped");
    file_bytes_t files[3];
    load_files("scoped", files);
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        gpufl_analysis_t *fed = create(GPUFL_ANALYSIS_IN_ORDER), *opened = NULL;
        for (int c = 0; c < 3; c++)
            if (files[c].len) feed_ok(fed, channels[c], files[c].data, files[c].len);
        assert_int_equal(gpufl_analysis_feed_end(fed, NULL), 0);
        assert_int_equal(gpufl_analysis_open(&opened, dir), 0);
        char *got = written(fed, fns[i]), *want = written(opened, fns[i]);
        assert_string_equal(got, want);
        free(got);
        free(want);
        gpufl_analysis_close(fed);
        gpufl_analysis_close(opened);
    }
    free_files(files);
}

static void test_analysis_feed_report_mid_session(void **state) {
    (void)state;
    file_bytes_t files[3];
    load_files("basic", files);
    gpufl_analysis_t *a = create(0);
    /* An empty handle already reports: nothing read, the session open. */
    char *empty = report_of(a, "json");
    json_t *root = json_loads(empty, 0, NULL);
    assert_non_null(root);
    json_decref(root);
    free(empty);
    size_t half[3];
    for (int i = 0; i < 3; i++) {
        half[i] = files[i].len / 2 + 7; /* cuts a line */
        feed_ok(a, channels[i], files[i].data, half[i]);
    }
    char *mid = report_of(a, "json");
    root = json_loads(mid, 0, NULL);
    assert_non_null(root); /* valid JSON */
    json_t *ended = json_at(root, "session", "ended");
    assert_non_null(ended);
    assert_true(json_is_false(ended)); /* still open */
    json_decref(root);
    free(mid);
    assert_int_equal(session_value(a, "ended"), 0);
    assert_int_equal(session_value(a, "truncated_lines"), 0); /* a cut line is not damage yet */
    int64_t lines_mid = session_value(a, "lines");
    assert_true(lines_mid > 0);
    for (int i = 0; i < 3; i++)
        feed_ok(a, channels[i], files[i].data + half[i], files[i].len - half[i]);
    assert_true(session_value(a, "lines") > lines_mid); /* rebuilt after more lines */
    assert_int_equal(session_value(a, "ended"), 1);
    end_and_compare(a, "basic", "after a report mid-feed");
    free_files(files);
}

static void test_analysis_feed_bad_input(void **state) {
    (void)state;
    file_bytes_t files[3];
    load_files("basic", files);
    gpufl_analysis_options_t o;
    gpufl_analysis_options_init(&o);
    o.max_line_bytes = 4096;
    gpufl_analysis_t *a = NULL;
    assert_int_equal(gpufl_analysis_create(&a, &o), 0);
    feed_ok(a, "scope", files[1].data, files[1].len);
    /* garbage, an over-long line (fed in pieces, never held), an unknown type */
    static const char garbage[] = "\x01\xff{not json\n";
    feed_ok(a, "scope", garbage, sizeof garbage - 1);
    char piece[1000];
    memset(piece, 'x', sizeof piece);
    for (int i = 0; i < 10; i++) feed_ok(a, "scope", piece, sizeof piece);
    feed_ok(a, "scope", "\n", 1);
    static const char unknown[] = "{\"type\":\"no_such_record\",\"v\":1,\"ts_ns\":5}\n";
    feed_ok(a, "scope", unknown, sizeof unknown - 1);
    assert_int_equal(session_value(a, "corrupt_lines"), 1);
    gpufl_column_t c = {.size = sizeof c};
    assert_int_equal(gpufl_analysis_column_find(a, GPUFL_TABLE_SESSION, "warnings", &c), 0);
    assert_true(((const int64_t *)c.data)[0] >= 2); /* the garbage and the long line */
    /* errors */
    assert_int_equal(gpufl_analysis_feed(a, "nosuch", "x", 1), GPUFL_EINVAL);
    assert_int_equal(gpufl_analysis_feed(a, "scope.logx", "x", 1), GPUFL_EINVAL);
    assert_int_equal(gpufl_analysis_feed(a, "scope", NULL, 1), GPUFL_EINVAL);
    assert_int_equal(gpufl_analysis_feed(NULL, "scope", "x", 1), GPUFL_EINVAL);
    assert_int_equal(gpufl_analysis_feed_end(a, "scope"), 0);
    assert_int_equal(gpufl_analysis_feed(a, "scope.log", "{}\n", 3), GPUFL_EINVAL);
    assert_int_equal(gpufl_analysis_feed_end(a, "scope"), GPUFL_EINVAL);
    assert_int_equal(gpufl_analysis_feed_end(a, NULL), 0);
    assert_int_equal(gpufl_analysis_feed(a, "device", "{}\n", 3), GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "ended"));
    assert_int_equal(gpufl_analysis_feed_end(a, NULL), GPUFL_EINVAL);
    gpufl_analysis_close(a);

    /* The NULL channel needs a header first. */
    a = create(0);
    assert_int_equal(gpufl_analysis_feed(a, NULL, "{\"type\":\"event\"}\n", 17), GPUFL_EFORMAT);
    gpufl_analysis_close(a);

    /* In order: no file before one already fed, no report before the end. */
    a = create(GPUFL_ANALYSIS_IN_ORDER);
    feed_ok(a, "scope", files[1].data, files[1].len);
    assert_int_equal(gpufl_analysis_feed(a, "device", files[0].data, files[0].len), GPUFL_EINVAL);
    size_t rows;
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_SESSION, &rows, NULL), GPUFL_EINVAL);
    gpufl_analysis_close(a);

    /* The cap on kept lines; unknown flags; a handle from a directory. */
    gpufl_analysis_options_init(&o);
    o.max_kept_bytes = 100;
    assert_int_equal(gpufl_analysis_create(&a, &o), 0);
    assert_int_equal(gpufl_analysis_feed(a, "scope", files[1].data, files[1].len), GPUFL_ENOMEM);
    gpufl_analysis_close(a);
    o.max_kept_bytes = 0;
    o.flags = 0x80;
    assert_int_equal(gpufl_analysis_create(&a, &o), GPUFL_EINVAL);
    assert_null(a);
    char dir[4096];
    session_path(dir, sizeof dir, "basic");
    assert_int_equal(gpufl_analysis_open(&a, dir), 0);
    assert_int_equal(gpufl_analysis_feed(a, "scope", "{}\n", 3), GPUFL_EINVAL);
    assert_int_equal(gpufl_analysis_feed_end(a, NULL), GPUFL_EINVAL);
    gpufl_analysis_close(a);
    free_files(files);
}

/* A killed writer's unfinished last line, fed and ended, counts as the
 * directory counts it. */
static void test_analysis_feed_unfinished_line(void **state) {
    (void)state;
    file_bytes_t files[3];
    load_files("basic", files);
    gpufl_analysis_t *a = create(0);
    feed_ok(a, "scope", files[1].data, files[1].len);
    feed_ok(a, "scope", "{\"type\":\"scope_b", 16);
    assert_int_equal(session_value(a, "truncated_lines"), 0);
    assert_int_equal(gpufl_analysis_feed_end(a, "scope"), 0);
    assert_int_equal(session_value(a, "truncated_lines"), 1);
    gpufl_analysis_close(a);
    free_files(files);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analysis_feed_matches_directory),
        cmocka_unit_test(test_analysis_feed_report_mid_session),
        cmocka_unit_test(test_analysis_feed_export_and_insights_first),
        cmocka_unit_test(test_analysis_feed_bad_input),
        cmocka_unit_test(test_analysis_feed_unfinished_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
