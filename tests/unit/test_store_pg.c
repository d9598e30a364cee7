// SPDX-License-Identifier: Apache-2.0
/*
 * test_store_pg.c - what only the PostgreSQL engine does, on a real cluster (GPUFL_TEST_DB, set
 * by tests/integration/pg_harness.py): the same windows put by two servers' pools at once are
 * stored once, retention drops whole day partitions, a dropped partition another server still
 * believed in is made again, a database that is down gives GPUFL_EUNAVAILABLE, the pool is
 * bounded, and query() numbers its placeholders. The engine-neutral suite is test_store.c.
 */
#include "store.h"

#include <gpufl/gpufl.h>

#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define N_WINDOWS 24
#define N_LINES   3
#define N_KERNELS 5
#define N_THREADS 4
#define DAY_S     86400LL

static const gpufl__store_ops_t *ops = &gpufl__store_pg_ops;
static int64_t fake_now_s;
static int64_t fake_now(void) { return fake_now_s; }

static const char *url(void) { return getenv("GPUFL_TEST_DB"); }

static gpufl__store_t *open_store(void) {
    gpufl__store_t *s = NULL;
    int rc = ops->open(&s, url());
    if (rc) fail_msg("open %s: %s", url(), gpufl_last_error());
    return s;
}

/* ---- query helpers -------------------------------------------------------------------- */

typedef struct {
    char text[4096];
    int rows;
} answer_t;

static int collect(void *arg, int n, const char *const *values, const char *const *names) {
    answer_t *a = arg;
    (void)names;
    size_t len = strlen(a->text);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(a->text + len, sizeof a->text - len, "%s%s", i ? "|" : "",
                                values[i] ? values[i] : "NULL");
    if (len + 2 < sizeof a->text) strcat(a->text, "\n");
    a->rows++;
    return 0;
}

/* The rows of a query, "a|b" each, a newline between; fails the test on an error. The
 * parameters follow sql, NULL-ended. */
static const char *qv(gpufl__store_t *s, const char *sql, va_list ap) {
    static answer_t a;
    const char *params[8];
    size_t n = 0;
    for (const char *p; n < 8 && (p = va_arg(ap, const char *)) != NULL;) params[n++] = p;
    memset(&a, 0, sizeof a);
    int rc = ops->query(s, sql, params, n, collect, &a);
    if (rc) fail_msg("%s: %s", sql, gpufl_last_error());
    size_t len = strlen(a.text);
    if (len && a.text[len - 1] == '\n') a.text[len - 1] = '\0';
    return a.text;
}

static const char *q(gpufl__store_t *s, const char *sql, ...) {
    va_list ap;
    va_start(ap, sql);
    const char *text = qv(s, sql, ap);
    va_end(ap);
    return text;
}

static long long q_int(gpufl__store_t *s, const char *sql, ...) {
    va_list ap;
    va_start(ap, sql);
    long long v = strtoll(qv(s, sql, ap), NULL, 10);
    va_end(ap);
    return v;
}

/* ---- windows -------------------------------------------------------------------------- */

static const gpufl__table_t *kernel_table(void) {
    for (size_t i = 0; i < gpufl__store_n_tables; i++)
        if (strcmp(gpufl__store_tables[i]->record_type, "kernel") == 0)
            return gpufl__store_tables[i];
    fail_msg("no kernel table in store_tables.c");
    return NULL;
}

static int column_index(const gpufl__table_t *t, const char *name) {
    for (size_t i = 0; i < t->n_columns; i++)
        if (strcmp(t->columns[i].name, name) == 0) return (int)i;
    fail_msg("table %s has no column %s", t->name, name);
    return -1;
}

/* One window of a synthetic session: lines whose text needs COPY's escaping (a backslash, a
 * tab, a carriage return) and kernel rows spaced `spacing_ns` apart. */
typedef struct {
    char session[64], window_id[64], text[N_LINES][160];
    gpufl__line_t lines[N_LINES];
    gpufl__cell_t *cells;
    gpufl__rowset_t rowset;
    gpufl__rowset_list_t list;
    gpufl__window_t w;
} test_window_t;

static void window_make(test_window_t *tw, int64_t ws, const char *session, int seq,
                        int64_t epoch_us, int64_t spacing_ns) {
    memset(tw, 0, sizeof *tw);
    snprintf(tw->session, sizeof tw->session, "%s", session);
    snprintf(tw->window_id, sizeof tw->window_id, "%s-w%d", session, seq);
    for (int i = 0; i < N_LINES; i++) {
        snprintf(tw->text[i], sizeof tw->text[i],
                 "{\"type\":\"kernel_batch\",\"seq\":%d,\"line\":%d,\"path\":\"C:\\\\x\","
                 "\"raw\":\"a\tb\rc\"}",
                 seq, i);
        tw->lines[i] = (gpufl__line_t){tw->text[i], strlen(tw->text[i]), "kernel_batch",
                                       i == 0 ? N_KERNELS : 0};
    }
    const gpufl__table_t *t = kernel_table();
    tw->cells = calloc(N_KERNELS * t->n_columns, sizeof *tw->cells);
    assert_non_null(tw->cells);
    int start = column_index(t, "start_ns"), end = column_index(t, "end_ns"),
        name = column_index(t, "name");
    for (int r = 0; r < N_KERNELS; r++) {
        gpufl__cell_t *row = tw->cells + (size_t)r * t->n_columns;
        int64_t at = ((int64_t)seq * N_KERNELS + r) * spacing_ns;
        row[start] = (gpufl__cell_t){.kind = GPUFL__CELL_INT, .u.i = at};
        row[end] = (gpufl__cell_t){.kind = GPUFL__CELL_INT, .u.i = at + 1000};
        row[name] = (gpufl__cell_t){.kind = GPUFL__CELL_TEXT, .u.t = {"gemm\tk\\1", 8}};
    }
    tw->rowset = (gpufl__rowset_t){t, N_KERNELS, tw->cells};
    tw->w = (gpufl__window_t){.workspace_id = ws,
                              .session_id = tw->session,
                              .channel = "device",
                              .sequence = seq,
                              .window_id = tw->window_id,
                              .bytes = 100,
                              .rows = N_KERNELS,
                              .wire_version = 1,
                              .lines = tw->lines,
                              .n_lines = N_LINES};
    tw->list = (gpufl__rowset_list_t){.sets = &tw->rowset, .n_sets = 1};
    gpufl__window_set_rowsets(&tw->w, &tw->list);
    for (int i = 0; i < 32; i++) tw->w.sha256[i] = (uint8_t)(seq * 7 + i);
    tw->w.facts.end_ns = -1;
    if (seq == 0) {
        tw->w.facts.app_name = "app";
        tw->w.facts.hostname = "host-a";
        tw->w.facts.epoch_unix_us = epoch_us;
        tw->w.facts.pid = 42;
    }
}

static void window_free(test_window_t *tw) { free(tw->cells); }

static int64_t workspace(gpufl__store_t *s, const char *name) {
    int64_t id = 0;
    int rc = ops->workspace_find(s, &id, name);
    if (rc == GPUFL_ENOTFOUND) rc = ops->workspace_create(s, &id, name);
    if (rc) fail_msg("workspace %s: %s", name, gpufl_last_error());
    return id;
}

/* ---- exactly once across two servers -------------------------------------------------- */

typedef struct {
    gpufl__store_t *store;
    test_window_t *windows;
    int first;
    int stored[N_WINDOWS], duplicate[N_WINDOWS], failed;
} putter_t;

static void *putter(void *arg) {
    putter_t *p = arg;
    for (int k = 0; k < N_WINDOWS; k++) {
        int i = (p->first + k) % N_WINDOWS;
        gpufl__window_outcome_t out = 0;
        if (ops->window_put(p->store, &out, &p->windows[i].w)) {
            fprintf(stderr, "window %d: %s\n", i, gpufl_last_error());
            p->failed++;
        } else if (out == GPUFL__WINDOW_STORED) {
            p->stored[i]++;
        } else if (out == GPUFL__WINDOW_DUPLICATE) {
            p->duplicate[i]++;
        }
    }
    return NULL;
}

/* Four threads on two pools (two servers on one database) each put every window of a session,
 * starting at different windows: each window is stored once and seen as a duplicate three
 * times, and the rows and their checksum are those of one copy. */
static void test_concurrent_puts_store_once(void **state) {
    (void)state;
    gpufl__store_t *a = open_store(), *b = open_store();
    int64_t ws = workspace(a, "conc");
    static test_window_t windows[N_WINDOWS];
    int64_t epoch_us = gpufl__store_now() * 1000000;
    for (int i = 0; i < N_WINDOWS; i++) window_make(&windows[i], ws, "s-conc", i, epoch_us, 1000);
    putter_t p[N_THREADS];
    pthread_t th[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        memset(&p[t], 0, sizeof p[t]);
        p[t] = (putter_t){
            .store = t % 2 ? b : a, .windows = windows, .first = t * N_WINDOWS / N_THREADS};
        assert_int_equal(pthread_create(&th[t], NULL, putter, &p[t]), 0);
    }
    for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
    long long want_len = 0;
    for (int i = 0; i < N_WINDOWS; i++) {
        int stored = 0, dup = 0;
        for (int t = 0; t < N_THREADS; t++) {
            assert_int_equal(p[t].failed, 0);
            stored += p[t].stored[i];
            dup += p[t].duplicate[i];
        }
        assert_int_equal(stored, 1);
        assert_int_equal(dup, N_THREADS - 1);
        for (int l = 0; l < N_LINES; l++) want_len += (l + 1) * (long long)windows[i].lines[l].len;
    }
    char wsid[24];
    snprintf(wsid, sizeof wsid, "%" PRId64, ws);
    assert_int_equal(q_int(a, "SELECT count(*) FROM windows WHERE workspace_id = ?", wsid, NULL),
                     N_WINDOWS);
    assert_int_equal(q_int(b, "SELECT count(*) FROM lines WHERE workspace_id = ?", wsid, NULL),
                     N_WINDOWS * N_LINES);
    /* A checksum of the bodies as stored: each byte came back, escapes undone. */
    assert_int_equal(q_int(a,
                           "SELECT sum((line_no + 1) * octet_length(body)) FROM lines"
                           " WHERE workspace_id = ? AND session_id = 's-conc'",
                           wsid, NULL),
                     want_len);
    assert_string_equal(q(a,
                          "SELECT body FROM lines WHERE workspace_id = ? AND sequence = 3"
                          " AND line_no = 1",
                          wsid, NULL),
                        windows[3].text[1]);
    assert_int_equal(q_int(b, "SELECT count(*) FROM activity WHERE workspace_id = ?", wsid, NULL),
                     N_WINDOWS * N_KERNELS);
    assert_int_equal(q_int(b,
                           "SELECT sum(start_ns) FROM activity WHERE workspace_id = ?"
                           " AND kind = 'kernel' AND name = E'gemm\\tk\\\\1'",
                           wsid, NULL),
                     1000LL * (N_WINDOWS * N_KERNELS) * (N_WINDOWS * N_KERNELS - 1) / 2);
    char want[160];
    snprintf(want, sizeof want, "app|host-a|42|%" PRId64 "|live", epoch_us);
    assert_string_equal(q(a,
                          "SELECT app_name, hostname, pid, epoch_unix_us, state FROM sessions"
                          " WHERE workspace_id = ?",
                          wsid, NULL),
                        want);
    for (int i = 0; i < N_WINDOWS; i++) window_free(&windows[i]);
    ops->close(a);
    ops->close(b);
}

/* The same identity with other bytes, or the same window id under another identity: a
 * conflict, and nothing of it stored. */
static void test_conflicts_store_nothing(void **state) {
    (void)state;
    gpufl__store_t *s = open_store();
    int64_t ws = workspace(s, "conflict");
    test_window_t tw, other;
    window_make(&tw, ws, "s-conf", 0, gpufl__store_now() * 1000000, 1000);
    gpufl__window_outcome_t out = 0;
    assert_int_equal(ops->window_put(s, &out, &tw.w), 0);
    assert_int_equal(out, GPUFL__WINDOW_STORED);
    tw.w.sha256[0] ^= 1;
    assert_int_equal(ops->window_put(s, &out, &tw.w), 0);
    assert_int_equal(out, GPUFL__WINDOW_CONFLICT);
    window_make(&other, ws, "s-conf", 1, 0, 1000);
    other.w.window_id = tw.w.window_id;
    assert_int_equal(ops->window_put(s, &out, &other.w), 0);
    assert_int_equal(out, GPUFL__WINDOW_CONFLICT);
    char wsid[24];
    snprintf(wsid, sizeof wsid, "%" PRId64, ws);
    assert_int_equal(q_int(s, "SELECT count(*) FROM lines WHERE workspace_id = ?", wsid, NULL),
                     N_LINES);
    assert_int_equal(q_int(s, "SELECT count(*) FROM activity WHERE workspace_id = ?", wsid, NULL),
                     N_KERNELS);
    window_free(&tw);
    window_free(&other);
    ops->close(s);
}

/* ---- retention ------------------------------------------------------------------------ */

static long long partitions_before(gpufl__store_t *s, const char *parent, int64_t day) {
    char d[24];
    snprintf(d, sizeof d, "%" PRId64, day);
    return q_int(s,
                 "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                 " JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = ?"
                 " AND substring(c.relname from '_d([0-9]+)$')::int < ?::int",
                 parent, d, NULL);
}

static long long partitions_of(gpufl__store_t *s, const char *parent) {
    return partitions_before(s, parent, 1 << 30);
}

/* Rows dated over several days go to those days' partitions; retain() drops the partitions
 * older than the cutoff, keeps the rest whole, then forgets windows and sessions emptied. */
static void test_retain_drops_partitions(void **state) {
    (void)state;
    gpufl__store_now_unix_s = fake_now;
    const int64_t today = 30000; /* far from any real date and from the other tests' days */
    fake_now_s = today * DAY_S + 3600;
    gpufl__store_t *s = open_store();
    int64_t ws = workspace(s, "retain");
    char wsid[24];
    snprintf(wsid, sizeof wsid, "%" PRId64, ws);
    /* Kernels one day apart from an epoch ten days ago: window 0 covers days -10 to -6,
     * window 1 days -5 to -1. */
    test_window_t w0, w1;
    int64_t epoch_us = (today - 10) * DAY_S * 1000000;
    window_make(&w0, ws, "s-ret", 0, epoch_us, DAY_S * 1000000000LL);
    window_make(&w1, ws, "s-ret", 1, epoch_us, DAY_S * 1000000000LL);
    gpufl__window_outcome_t out;
    assert_int_equal(ops->window_put(s, &out, &w0.w), 0);
    assert_int_equal(ops->window_put(s, &out, &w1.w), 0);
    assert_int_equal(
        q_int(s, "SELECT count(DISTINCT day) FROM activity WHERE workspace_id = ?", wsid, NULL),
        10);
    assert_true(partitions_before(s, "activity", today - 7) >= 3);

    assert_int_equal(ops->retain(s, 7), 0); /* cutoff: today - 7 */
    assert_int_equal(partitions_before(s, "activity", today - 7), 0);
    assert_int_equal(partitions_before(s, "lines", today - 7), 0);
    char cut[24];
    snprintf(cut, sizeof cut, "%" PRId64, today - 7);
    assert_int_equal(q_int(s, "SELECT count(*) FROM activity WHERE workspace_id = ? AND day < ?",
                           wsid, cut, NULL),
                     0);
    assert_int_equal(q_int(s, "SELECT count(*) FROM activity WHERE workspace_id = ?", wsid, NULL),
                     7); /* days -7 .. -1 */
    assert_int_equal(q_int(s, "SELECT count(*) FROM lines WHERE workspace_id = ?", wsid, NULL),
                     2 * N_LINES); /* the lines arrived today */
    assert_int_equal(q_int(s, "SELECT count(*) FROM sessions WHERE workspace_id = ?", wsid, NULL),
                     1);

    /* Two weeks on, everything is older than the cutoff: no partition, window or session
     * is left of the session. */
    fake_now_s += 14 * DAY_S;
    assert_int_equal(ops->retain(s, 7), 0);
    assert_int_equal(partitions_before(s, "activity", today + 7), 0);
    assert_int_equal(partitions_before(s, "lines", today + 7), 0);
    assert_int_equal(q_int(s, "SELECT count(*) FROM lines WHERE workspace_id = ?", wsid, NULL), 0);
    assert_int_equal(q_int(s, "SELECT count(*) FROM windows WHERE workspace_id = ?", wsid, NULL),
                     0);
    assert_int_equal(q_int(s, "SELECT count(*) FROM sessions WHERE workspace_id = ?", wsid, NULL),
                     0);
    assert_true(partitions_of(s, "activity") >= 0);
    window_free(&w0);
    window_free(&w1);
    ops->close(s);
    gpufl__store_now_unix_s = NULL;
}

/* Server A knows today's partitions exist; server B's retention drops them; A's next window
 * still lands: the engine sees the missing partition, makes it again and retries. */
static void test_partition_dropped_elsewhere_is_remade(void **state) {
    (void)state;
    gpufl__store_now_unix_s = fake_now;
    const int64_t today = 31000;
    fake_now_s = today * DAY_S + 60;
    gpufl__store_t *a = open_store(), *b = open_store();
    int64_t ws = workspace(a, "remade");
    test_window_t w0, w1;
    window_make(&w0, ws, "s-remade", 0, 0, 1000); /* no epoch: rows on the arrival day */
    window_make(&w1, ws, "s-remade", 1, 0, 1000);
    gpufl__window_outcome_t out;
    assert_int_equal(ops->window_put(a, &out, &w0.w), 0);
    fake_now_s += DAY_S;
    assert_int_equal(ops->retain(b, 0), 0); /* drops day `today`, which A has cached */
    fake_now_s -= DAY_S;
    int rc = ops->window_put(a, &out, &w1.w);
    if (rc) fail_msg("put after the drop: %s", gpufl_last_error());
    assert_int_equal(out, GPUFL__WINDOW_STORED);
    char wsid[24];
    snprintf(wsid, sizeof wsid, "%" PRId64, ws);
    assert_int_equal(q_int(a, "SELECT count(*) FROM activity WHERE workspace_id = ?", wsid, NULL),
                     N_KERNELS);
    window_free(&w0);
    window_free(&w1);
    ops->close(a);
    ops->close(b);
    gpufl__store_now_unix_s = NULL;
}

/* The partitions made before the transaction are those of the window's time span; a row whose
 * time lies outside it (a source that misstated the span) rolls the window back with a clear
 * error rather than failing on a partition nobody made. */
static void test_row_outside_time_span(void **state) {
    (void)state;
    gpufl__store_now_unix_s = fake_now;
    const int64_t today = 32000;
    fake_now_s = today * DAY_S + 60;
    gpufl__store_t *s = open_store();
    int64_t ws = workspace(s, "span");
    test_window_t tw;
    /* rows one day apart from an epoch ten days ago: days -10 .. -6 */
    window_make(&tw, ws, "s-span", 0, (today - 10) * DAY_S * 1000000, DAY_S * 1000000000LL);
    assert_int_equal(tw.w.time_min_ns, 0);
    assert_int_equal(tw.w.time_max_ns, (N_KERNELS - 1) * DAY_S * 1000000000LL);
    tw.w.time_max_ns = DAY_S * 1000000000LL; /* misstated: days -10 .. -9 */
    gpufl__window_outcome_t out = 0;
    assert_int_equal(ops->window_put(s, &out, &tw.w), GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "outside the window's time span"));
    char wsid[24];
    snprintf(wsid, sizeof wsid, "%" PRId64, ws);
    assert_int_equal(q_int(s, "SELECT count(*) FROM windows WHERE workspace_id = ?", wsid, NULL),
                     0);
    assert_int_equal(q_int(s, "SELECT count(*) FROM activity WHERE workspace_id = ?", wsid, NULL),
                     0);
    /* stated right, the same window is stored on its five days */
    tw.w.time_max_ns = (N_KERNELS - 1) * DAY_S * 1000000000LL;
    assert_int_equal(ops->window_put(s, &out, &tw.w), 0);
    assert_int_equal(out, GPUFL__WINDOW_STORED);
    assert_int_equal(
        q_int(s, "SELECT count(DISTINCT day) FROM activity WHERE workspace_id = ?", wsid, NULL),
        N_KERNELS);
    window_free(&tw);
    ops->close(s);
    gpufl__store_now_unix_s = NULL;
}

/* A database made by an older server lacks a column and an index store_tables.c has now:
 * opening adds both, on the parent, so the existing day partitions get them too. */
static void test_open_grows_typed_tables(void **state) {
    (void)state;
    gpufl__store_t *s = open_store();
    q(s, "ALTER TABLE activity DROP COLUMN IF EXISTS event", NULL);
    q(s, "DROP INDEX IF EXISTS activity_byworkspace_id_session_id_name", NULL);
    assert_int_equal(q_int(s,
                           "SELECT count(*) FROM information_schema.columns"
                           " WHERE table_name = 'activity' AND column_name = 'event'",
                           NULL),
                     0);
    ops->close(s);
    s = open_store();
    assert_int_equal(q_int(s,
                           "SELECT count(*) FROM information_schema.columns"
                           " WHERE table_name LIKE 'activity%' AND column_name = 'event'"
                           " AND data_type = 'bigint'",
                           NULL),
                     1 + q_int(s,
                               "SELECT count(*) FROM pg_inherits i JOIN pg_class p"
                               " ON p.oid = i.inhparent WHERE p.relname = 'activity'",
                               NULL));
    assert_int_equal(q_int(s,
                           "SELECT count(*) FROM pg_indexes"
                           " WHERE indexname = 'activity_byworkspace_id_session_id_name'",
                           NULL),
                     1);
    ops->close(s);
}

/* ---- errors, the pool and query() ----------------------------------------------------- */

static void test_unreachable_database_is_unavailable(void **state) {
    (void)state;
    gpufl__store_t *s = NULL;
    /* Port 1 on loopback: nothing listens there. */
    int rc = ops->open(&s, "postgresql://gpufl@127.0.0.1:1/gpufl_test?connect_timeout=2");
    assert_int_equal(rc, GPUFL_EUNAVAILABLE);
    assert_null(s);
    assert_non_null(strstr(gpufl_last_error(), "postgresql"));
}

/* The server ends every connection of the pool (as a restart would): the next call fails as
 * unavailable, its connection is dropped, and the call after it connects afresh. */
static void test_broken_connection_is_replaced(void **state) {
    (void)state;
    setenv("GPUFL_SERVER_PG_POOL", "1", 1);
    gpufl__store_t *s = open_store();
    gpufl__store_t *killer = open_store();
    unsetenv("GPUFL_SERVER_PG_POOL");
    long long pid = q_int(s, "SELECT pg_backend_pid()", NULL);
    char p[24];
    snprintf(p, sizeof p, "%lld", pid);
    assert_string_equal(q(killer, "SELECT pg_terminate_backend(?::int)", p, NULL), "t");
    answer_t a;
    memset(&a, 0, sizeof a);
    assert_int_equal(ops->query(s, "SELECT 1", NULL, 0, collect, &a), GPUFL_EUNAVAILABLE);
    assert_true(q_int(s, "SELECT pg_backend_pid()", NULL) != pid);
    ops->close(s);
    ops->close(killer);
}

static void *hold_connection(void *arg) {
    answer_t a;
    memset(&a, 0, sizeof a);
    ops->query(arg, "SELECT pg_sleep(1)", NULL, 0, collect, &a);
    return NULL;
}

/* With the pool's one connection held by a slow query, another caller waits the stated time
 * and is then told the store is unavailable: the pool never grows past its cap. */
static void test_pool_is_bounded(void **state) {
    (void)state;
    setenv("GPUFL_SERVER_PG_POOL", "1", 1);
    setenv("GPUFL_SERVER_PG_POOL_WAIT_MS", "200", 1);
    gpufl__store_t *s = open_store();
    unsetenv("GPUFL_SERVER_PG_POOL");
    unsetenv("GPUFL_SERVER_PG_POOL_WAIT_MS");
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, hold_connection, s), 0);
    struct timespec pause = {0, 300 * 1000000L};
    nanosleep(&pause, NULL);
    answer_t a;
    memset(&a, 0, sizeof a);
    assert_int_equal(ops->query(s, "SELECT 1", NULL, 0, collect, &a), GPUFL_EUNAVAILABLE);
    assert_non_null(strstr(gpufl_last_error(), "busy"));
    pthread_join(th, NULL);
    assert_string_equal(q(s, "SELECT 1", NULL), "1"); /* given back: usable again */
    setenv("GPUFL_SERVER_PG_POOL", "0", 1);
    gpufl__store_t *bad = NULL;
    assert_int_equal(ops->open(&bad, url()), GPUFL_EINVAL);
    unsetenv("GPUFL_SERVER_PG_POOL");
    ops->close(s);
}

static void *short_query(void *arg) {
    answer_t a;
    memset(&a, 0, sizeof a);
    ops->query(arg, "SELECT pg_sleep(0.05)", NULL, 0, collect, &a);
    return NULL;
}

/* Eight threads on an empty pool of two at once: never more than two connections reach the
 * server, and none is left open after close (a slot taken twice would leak one). */
static void test_pool_cap_holds_under_a_rush(void **state) {
    (void)state;
    char tagged[512];
    snprintf(tagged, sizeof tagged, "%s?application_name=pool-rush", url());
    setenv("GPUFL_SERVER_PG_POOL", "2", 1);
    gpufl__store_t *s = NULL;
    assert_int_equal(ops->open(&s, tagged), 0);
    unsetenv("GPUFL_SERVER_PG_POOL");
    gpufl__store_t *watch = open_store();
    for (int round = 0; round < 5; round++) {
        pthread_t th[8];
        for (int i = 0; i < 8; i++)
            assert_int_equal(pthread_create(&th[i], NULL, short_query, s), 0);
        for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
        assert_true(q_int(watch,
                          "SELECT count(*) FROM pg_stat_activity"
                          " WHERE application_name = 'pool-rush'",
                          NULL) <= 2);
    }
    ops->close(s);
    for (int tries = 0; tries < 100; tries++) { /* backends end a moment after the close */
        if (q_int(watch,
                  "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pool-rush'",
                  NULL) == 0)
            break;
        struct timespec pause = {0, 20 * 1000000L};
        nanosleep(&pause, NULL);
    }
    assert_int_equal(q_int(watch,
                           "SELECT count(*) FROM pg_stat_activity"
                           " WHERE application_name = 'pool-rush'",
                           NULL),
                     0);
    ops->close(watch);
}

static void test_query_numbers_placeholders(void **state) {
    (void)state;
    gpufl__store_t *s = open_store();
    /* A ? inside quotes or a comment is text, not a parameter. */
    assert_string_equal(
        q(s, "SELECT '?' AS a, ? AS b, \"?\" FROM (SELECT 1 AS \"?\") t -- ?\n", "x", NULL),
        "?|x|1");
    assert_string_equal(q(s, "SELECT ?::int + ?::int, ?::text IS NULL", "2", "3", "z", NULL),
                        "5|f");
    const char *one[] = {"1"};
    answer_t a;
    memset(&a, 0, sizeof a);
    assert_int_equal(ops->query(s, "SELECT ?, ?", one, 1, collect, &a), GPUFL_EINVAL);
    /* The engine's own message comes back. */
    assert_int_equal(ops->query(s, "SELECT * FROM no_such_table", NULL, 0, collect, &a), GPUFL_EIO);
    assert_non_null(strstr(gpufl_last_error(), "no_such_table"));
    ops->close(s);
}

int main(void) {
    if (!url()) {
        printf("SKIP: GPUFL_TEST_DB is not set (run through tests/integration/pg_harness.py)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_puts_store_once),
        cmocka_unit_test(test_conflicts_store_nothing),
        cmocka_unit_test(test_retain_drops_partitions),
        cmocka_unit_test(test_partition_dropped_elsewhere_is_remade),
        cmocka_unit_test(test_row_outside_time_span),
        cmocka_unit_test(test_open_grows_typed_tables),
        cmocka_unit_test(test_unreachable_database_is_unavailable),
        cmocka_unit_test(test_broken_connection_is_replaced),
        cmocka_unit_test(test_pool_is_bounded),
        cmocka_unit_test(test_pool_cap_holds_under_a_rush),
        cmocka_unit_test(test_query_numbers_placeholders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
