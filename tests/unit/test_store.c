// SPDX-License-Identifier: Apache-2.0
/*
 * test_store.c - gpufl-server's storage interface (cmd/gpufl-server/store.h), engine-neutral:
 * it opens the URL in GPUFL_TEST_DB (default: a SQLite file in a temporary directory), so the
 * same binary runs once per engine. Every test works in workspaces of its own, so a shared
 * database (PostgreSQL) needs no cleaning between runs.
 */
#include "store.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>
#include <zlib.h>

#define ROWS     5 /* kernel rows per test window */
#define N_LINES  3 /* lines per test window */
#define MAX_COLS 64

static char db_url[512];
static char tmp_dir[64]; /* the default database's directory, removed at the end */

static const char *test_url(void) {
    if (db_url[0]) return db_url;
    const char *env = getenv("GPUFL_TEST_DB");
    if (env && *env) {
        snprintf(db_url, sizeof db_url, "%s", env);
    } else {
        snprintf(tmp_dir, sizeof tmp_dir, "/tmp/gpufl-test-store-XXXXXX");
        assert_non_null(mkdtemp(tmp_dir));
        snprintf(db_url, sizeof db_url, "sqlite:%s/store.db", tmp_dir);
    }
    return db_url;
}

static gpufl__store_t *open_store(const gpufl__store_ops_t **ops) {
    gpufl__store_t *s = NULL;
    int rc = gpufl__store_open(&s, ops, test_url());
    if (rc) fail_msg("open %s: %s", test_url(), gpufl_last_error());
    return s;
}

/* A workspace whose name no other run or test uses. */
static int64_t new_workspace(gpufl__store_t *s, const gpufl__store_ops_t *ops, const char *what) {
    static int counter;
    char name[128];
    snprintf(name, sizeof name, "%s-%d-%ld-%d", what, (int)getpid(), (long)time(NULL),
             __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
    int64_t id = 0;
    assert_int_equal(ops->workspace_create(s, &id, name), 0);
    assert_true(id > 0);
    return id;
}

static const gpufl__table_t *table_of(const char *record_type) {
    for (size_t i = 0; i < gpufl__store_n_tables; i++)
        if (strcmp(gpufl__store_tables[i]->record_type, record_type) == 0)
            return gpufl__store_tables[i];
    fail_msg("no table for %s", record_type);
    return NULL;
}

static int column_of(const gpufl__table_t *t, const char *name) {
    for (size_t i = 0; i < t->n_columns; i++)
        if (strcmp(t->columns[i].name, name) == 0) return (int)i;
    fail_msg("no column %s in %s", name, t->name);
    return -1;
}

static uint64_t fnv(uint64_t h, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 1099511628211ULL;
    return h;
}

/* ---- a test window ---------------------------------------------------------------------------- */

typedef struct {
    char session[96], channel[16], window_id[96];
    char text[N_LINES][160];
    char kname[ROWS][32];
    gpufl__line_t lines[N_LINES];
    gpufl__cell_t kernel_cells[ROWS * MAX_COLS];
    gpufl__cell_t host_cells[MAX_COLS];
    gpufl__rowset_t rowsets[2];
    gpufl__rowset_list_t list;
    gpufl__window_t w;
} twin_t;

/* Window seq of a session's channel; variant changes its bytes (and so its hash). */
static void twin_make(twin_t *t, int64_t ws, const char *session, const char *channel, int64_t seq,
                      int variant) {
    memset(t, 0, sizeof *t);
    snprintf(t->session, sizeof t->session, "%s", session);
    snprintf(t->channel, sizeof t->channel, "%s", channel);
    snprintf(t->window_id, sizeof t->window_id, "%s/%s/%lld", session, channel, (long long)seq);
    static const char *const types[N_LINES] = {"header", "dict", "kernel"};
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < N_LINES; i++) {
        int n = snprintf(t->text[i], sizeof t->text[i],
                         "{\"type\":\"%s\",\"v\":1,\"seq\":%lld,\"line\":%d,\"variant\":%d}",
                         types[i], (long long)seq, i, variant);
        t->lines[i] = (gpufl__line_t){t->text[i], (size_t)n, types[i], i == 2 ? ROWS : 1};
        h = fnv(h, t->text[i], (size_t)n);
    }
    const gpufl__table_t *k = table_of("kernel");
    for (int r = 0; r < ROWS; r++) {
        gpufl__cell_t *row = t->kernel_cells + (size_t)r * k->n_columns;
        row[column_of(k, "start_ns")] =
            (gpufl__cell_t){.kind = GPUFL__CELL_INT, .u.i = seq * 1000 + r};
        row[column_of(k, "end_ns")] =
            (gpufl__cell_t){.kind = GPUFL__CELL_INT, .u.i = seq * 1000 + r + 10};
        int n = snprintf(t->kname[r], sizeof t->kname[r], "kernel_%d", r % 2);
        row[column_of(k, "name")] =
            (gpufl__cell_t){.kind = GPUFL__CELL_TEXT, .u.t = {t->kname[r], (size_t)n}};
    }
    const gpufl__table_t *hs = table_of("host_sample");
    t->host_cells[column_of(hs, "ts_ns")] = (gpufl__cell_t){.kind = GPUFL__CELL_INT, .u.i = seq};
    t->host_cells[column_of(hs, "cpu_pct")] =
        (gpufl__cell_t){.kind = GPUFL__CELL_REAL, .u.r = 12.5};
    t->rowsets[0] = (gpufl__rowset_t){k, ROWS, t->kernel_cells};
    t->rowsets[1] = (gpufl__rowset_t){hs, 1, t->host_cells};
    t->w = (gpufl__window_t){
        .workspace_id = ws,
        .session_id = t->session,
        .channel = t->channel,
        .sequence = seq,
        .window_id = t->window_id,
        .bytes = 100,
        .rows = 2 + ROWS,
        .wire_version = 1,
        .lines = t->lines,
        .n_lines = N_LINES,
        .facts = {.end_ns = -1},
    };
    t->list = (gpufl__rowset_list_t){.sets = t->rowsets, .n_sets = 2};
    gpufl__window_set_rowsets(&t->w, &t->list);
    for (int i = 0; i < 4; i++) memcpy(t->w.sha256 + 8 * i, &h, 8);
}

/* Each test's store, a workspace of its own and room for two windows. */
typedef struct {
    gpufl__store_t *s;
    const gpufl__store_ops_t *ops;
    int64_t ws;
    twin_t t[2];
} fx_t;

static int fx_setup(void **state) {
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->s = open_store(&f->ops);
    f->ws = new_workspace(f->s, f->ops, "t");
    *state = f;
    return 0;
}

static int fx_teardown(void **state) {
    fx_t *f = *state;
    f->ops->close(f->s);
    free(f);
    return 0;
}

static gpufl__window_outcome_t put(fx_t *f, const gpufl__window_t *w) {
    gpufl__window_outcome_t out = 0;
    int rc = f->ops->window_put(f->s, &out, w);
    if (rc) fail_msg("window_put: %s", gpufl_last_error());
    return out;
}

/* ---- reading back ------------------------------------------------------------------------------ */

typedef struct {
    int rows;
    char first[256]; /* the first row's first value; "NULL" for SQL NULL */
    uint64_t hash;   /* over every row's first value, in order */
} result_t;

static int collect(void *arg, int n, const char *const *values, const char *const *names) {
    (void)names;
    result_t *r = arg;
    if (r->rows++ == 0)
        snprintf(r->first, sizeof r->first, "%s", n > 0 && values[0] ? values[0] : "NULL");
    if (n > 0 && values[0]) r->hash = fnv(r->hash, values[0], strlen(values[0]));
    r->hash = fnv(r->hash, "\n", 1);
    return 0;
}

/* Runs sql with a workspace id and (when given) a session id as its parameters. */
static result_t ask_in(fx_t *f, const char *sql, int64_t ws, const char *session) {
    char wsid[32];
    snprintf(wsid, sizeof wsid, "%lld", (long long)ws);
    const char *params[2] = {wsid, session};
    result_t r = {.hash = 1469598103934665603ULL};
    int rc = f->ops->query(f->s, sql, params, session ? 2 : 1, collect, &r);
    if (rc) fail_msg("query %s: %s", sql, gpufl_last_error());
    return r;
}

/* The same in the test's own workspace. */
static result_t ask(fx_t *f, const char *sql, const char *session) {
    return ask_in(f, sql, f->ws, session);
}

/* Rows of table in the test's workspace (and session, when given). */
static long long count(fx_t *f, const char *table, const char *session) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s WHERE workspace_id = ?%s", table,
             session ? " AND session_id = ?" : "");
    result_t r = ask(f, sql, session);
    assert_int_equal(r.rows, 1);
    return atoll(r.first);
}

/* ---- tests --------------------------------------------------------------------------------------- */

static void test_tables_described_consistently(void **state) {
    (void)state;
    for (size_t i = 0; i < gpufl__store_n_tables; i++) {
        const gpufl__table_t *t = gpufl__store_tables[i];
        assert_true(gpufl__store_table_time_index(t) >= 0);
        assert_true(t->n_columns <= MAX_COLS);
        size_t first = gpufl__store_table_first(i);
        /* entries sharing a table share its columns and tell their rows apart by kind */
        if (first != i) {
            assert_ptr_equal(gpufl__store_tables[first]->columns, t->columns);
            assert_non_null(t->kind);
        }
        for (size_t c = 0; c < t->n_columns; c++)
            if (t->columns[c].dict) assert_int_equal(t->columns[c].type, GPUFL__COL_TEXT);
    }
}

static void test_open_unknown_scheme(void **state) {
    (void)state;
    gpufl__store_t *s = (gpufl__store_t *)1;
    const gpufl__store_ops_t *ops = (const gpufl__store_ops_t *)1;
    assert_int_equal(gpufl__store_open(&s, &ops, "mysql://x/y"), GPUFL_EINVAL);
    assert_null(s);
    assert_null(ops);
    assert_non_null(strstr(gpufl_last_error(), "unknown database URL"));
    assert_int_equal(gpufl__store_open(&s, &ops, "sqlite:"), GPUFL_EINVAL);
#ifndef GPUFL_HAVE_LIBPQ
    assert_int_equal(gpufl__store_open(&s, &ops, "postgresql://localhost/gpufl"), GPUFL_ENOTSUP);
    assert_non_null(strstr(gpufl_last_error(), "without PostgreSQL"));
    assert_int_equal(gpufl__store_open(&s, &ops, "postgres://localhost/gpufl"), GPUFL_ENOTSUP);
#endif
}

static void test_migrations_idempotent(void **state) {
    (void)state;
    const gpufl__store_ops_t *ops;
    for (int round = 0; round < 2; round++) {
        gpufl__store_t *s = open_store(&ops);
        result_t r = {.hash = 1469598103934665603ULL};
        assert_int_equal(ops->query(s, "SELECT COUNT(*) FROM schema_migrations WHERE version = 1",
                                    NULL, 0, collect, &r),
                         0);
        assert_string_equal(r.first, "1");
        ops->close(s);
    }
}

static void test_window_stored_then_duplicate(void **state) {
    fx_t *f = *state;
    twin_t *t = &f->t[0];
    twin_make(t, f->ws, "S1", "device", 0, 0);
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_DUPLICATE);
    assert_int_equal(count(f, "windows", "S1"), 1);
    assert_int_equal(count(f, "lines", "S1"), N_LINES);
    assert_int_equal(count(f, "activity", "S1"), ROWS);
    assert_int_equal(count(f, "host_sample", "S1"), 1);
    assert_int_equal(count(f, "sessions", "S1"), 1);
    /* the typed rows hold what was sent, by column name; a column the type lacks is NULL */
    result_t r = ask(f,
                     "SELECT kind FROM activity WHERE workspace_id = ? AND session_id = ?"
                     " AND name = 'kernel_1'",
                     "S1");
    assert_int_equal(r.rows, ROWS / 2);
    assert_string_equal(r.first, "kernel");
    r = ask(f,
            "SELECT bytes FROM activity WHERE workspace_id = ? AND session_id = ?"
            " ORDER BY start_ns",
            "S1");
    assert_string_equal(r.first, "NULL");
    r = ask(f,
            "SELECT SUM(end_ns - start_ns) FROM activity WHERE workspace_id = ? AND session_id = ?",
            "S1");
    assert_string_equal(r.first, "50");
    r = ask(f, "SELECT cpu_pct FROM host_sample WHERE workspace_id = ? AND session_id = ?", "S1");
    assert_true(atof(r.first) == 12.5);
    r = ask(f, "SELECT body FROM lines WHERE workspace_id = ? AND session_id = ? ORDER BY line_no",
            "S1");
    assert_string_equal(r.first, t->text[0]);
    r = ask(f, "SELECT rows FROM windows WHERE workspace_id = ? AND session_id = ?", "S1");
    assert_string_equal(r.first, "7");
}

static void test_window_conflicts(void **state) {
    fx_t *f = *state;
    twin_t *a = &f->t[0], *b = &f->t[1];
    twin_make(a, f->ws, "S", "device", 0, 0);
    assert_int_equal(put(f, &a->w), GPUFL__WINDOW_STORED);
    /* the same identity with other bytes */
    twin_make(b, f->ws, "S", "device", 0, 1);
    assert_int_equal(put(f, &b->w), GPUFL__WINDOW_CONFLICT);
    /* the same window id under another identity */
    twin_make(b, f->ws, "S", "device", 1, 0);
    snprintf(b->window_id, sizeof b->window_id, "%s", a->window_id);
    assert_int_equal(put(f, &b->w), GPUFL__WINDOW_CONFLICT);
    assert_int_equal(count(f, "windows", "S"), 1);
    assert_int_equal(count(f, "lines", "S"), N_LINES);
    assert_int_equal(count(f, "activity", "S"), ROWS);
    result_t r = ask(f,
                     "SELECT body FROM lines WHERE workspace_id = ? AND session_id = ?"
                     " ORDER BY line_no",
                     "S");
    assert_string_equal(r.first, a->text[0]); /* the first bytes stay */
    /* window ids are a workspace's own: another workspace may use the same one */
    int64_t other = new_workspace(f->s, f->ops, "conflict-other");
    twin_make(b, other, "S", "device", 0, 1);
    assert_int_equal(put(f, &b->w), GPUFL__WINDOW_STORED);
    assert_int_equal(count(f, "lines", "S"), N_LINES);
}

#define THREADS 8
#define WINDOWS 50

typedef struct {
    gpufl__store_t *s;
    const gpufl__store_ops_t *ops;
    twin_t *wins;
    int start;
    int stored, duplicate, other;
} putter_t;

static void *putter(void *arg) {
    putter_t *p = arg;
    for (int k = 0; k < WINDOWS; k++) {
        /* each thread starts elsewhere and half go backwards: every window meets contention */
        int i = (p->start % 2) ? (p->start + k) % WINDOWS : (p->start + WINDOWS - k) % WINDOWS;
        gpufl__window_outcome_t out = 0;
        int rc = p->ops->window_put(p->s, &out, &p->wins[i].w);
        if (rc == 0 && out == GPUFL__WINDOW_STORED)
            p->stored++;
        else if (rc == 0 && out == GPUFL__WINDOW_DUPLICATE)
            p->duplicate++;
        else
            p->other++;
    }
    return NULL;
}

static void test_concurrent_puts_store_once(void **state) {
    fx_t *f = *state;
    /* a second handle on the same database, as a second server process would hold: only the
     * database's own locking keeps the two apart */
    const gpufl__store_ops_t *ops2;
    gpufl__store_t *s2 = open_store(&ops2);
    twin_t *wins = calloc(WINDOWS, sizeof *wins);
    assert_non_null(wins);
    for (int i = 0; i < WINDOWS; i++)
        twin_make(&wins[i], f->ws, "C", i % 2 ? "scope" : "device", i / 2, 0);
    putter_t p[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        p[i] = (putter_t){.s = i % 2 ? s2 : f->s, .ops = f->ops, .wins = wins, .start = i * 7};
        assert_int_equal(pthread_create(&th[i], NULL, putter, &p[i]), 0);
    }
    int stored = 0, duplicate = 0, other = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        stored += p[i].stored;
        duplicate += p[i].duplicate;
        other += p[i].other;
    }
    assert_int_equal(other, 0);
    assert_int_equal(stored, WINDOWS);
    assert_int_equal(duplicate, (THREADS - 1) * WINDOWS);
    assert_int_equal(count(f, "windows", "C"), WINDOWS);
    assert_int_equal(count(f, "lines", "C"), WINDOWS * N_LINES);
    assert_int_equal(count(f, "activity", "C"), WINDOWS * ROWS);
    assert_int_equal(count(f, "host_sample", "C"), WINDOWS);
    /* the stored lines, in order, are exactly the sent ones */
    uint64_t sent = 1469598103934665603ULL;
    const char *channels[2] = {"device", "scope"};
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < WINDOWS; i++)
            if (strcmp(wins[i].channel, channels[c]) == 0)
                for (int l = 0; l < N_LINES; l++) {
                    sent = fnv(sent, wins[i].text[l], wins[i].lines[l].len);
                    sent = fnv(sent, "\n", 1);
                }
    result_t r = ask(f,
                     "SELECT body FROM lines WHERE workspace_id = ? AND session_id = ?"
                     " ORDER BY channel, sequence, line_no",
                     "C");
    assert_int_equal(r.rows, WINDOWS * N_LINES);
    assert_true(r.hash == sent);
    free(wins);
    ops2->close(s2);
}

static void test_failing_rowset_leaves_nothing(void **state) {
    fx_t *f = *state;
    twin_t *t = &f->t[0];
    twin_make(t, f->ws, "R", "device", 0, 0);
    /* the second rowset fails after the window, its lines and the first rowset went in */
    t->rowsets[1].table = NULL;
    gpufl__window_outcome_t out = 0;
    assert_int_equal(f->ops->window_put(f->s, &out, &t->w), GPUFL_EINVAL);
    assert_int_equal(count(f, "windows", NULL), 0);
    assert_int_equal(count(f, "lines", NULL), 0);
    assert_int_equal(count(f, "activity", NULL), 0);
    assert_int_equal(count(f, "sessions", NULL), 0);
    /* a table that is not one of store_tables.c fails the same way */
    gpufl__table_t fake = *table_of("host_sample");
    t->rowsets[1].table = &fake;
    assert_int_equal(f->ops->window_put(f->s, &out, &t->w), GPUFL_EINVAL);
    assert_int_equal(count(f, "lines", NULL), 0);
    /* the identity was not used up: the good window is stored */
    t->rowsets[1].table = table_of("host_sample");
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    assert_int_equal(count(f, "activity", NULL), ROWS);
}

/* A rows source that builds each rowset in one buffer, overwriting the one before, as
 * ingest's does: kernel rows in n_sets rowsets of rows each, start_ns numbering all of them.
 * It counts its calls and fails with fail_rc at rowset fail_at (from 1; 0: never). */
#define STREAM_ROWS 1000
typedef struct {
    gpufl__cell_t cells[STREAM_ROWS * MAX_COLS];
    gpufl__rowset_t set;
    int n_sets, at, calls, fail_at, fail_rc;
} stream_t;

static int stream_begin(void *arg) {
    stream_t *st = arg;
    st->at = 0;
    st->calls++;
    return 0;
}

static int stream_next(void *arg, const gpufl__rowset_t **out) {
    stream_t *st = arg;
    st->calls++;
    *out = NULL;
    if (st->at == st->n_sets) return 0;
    if (++st->at == st->fail_at) return st->fail_rc;
    const gpufl__table_t *k = table_of("kernel");
    memset(st->cells, 0, sizeof st->cells);
    for (int r = 0; r < STREAM_ROWS; r++) {
        gpufl__cell_t *row = st->cells + (size_t)r * k->n_columns;
        int64_t i = (int64_t)(st->at - 1) * STREAM_ROWS + r;
        row[column_of(k, "start_ns")] = (gpufl__cell_t){.kind = GPUFL__CELL_INT, .u.i = i};
        row[column_of(k, "name")] = (gpufl__cell_t){
            .kind = GPUFL__CELL_TEXT, .u.t = {st->at % 2 ? "odd" : "even", st->at % 2 ? 3 : 4}};
    }
    st->set = (gpufl__rowset_t){k, STREAM_ROWS, st->cells};
    *out = &st->set;
    return 0;
}

static void stream_window(twin_t *t, stream_t *st, int n_sets) {
    memset(st, 0, sizeof *st);
    st->n_sets = n_sets;
    t->w.rows_source = (gpufl__rows_source_t){stream_begin, stream_next, st};
    t->w.time_min_ns = 0;
    t->w.time_max_ns = (int64_t)n_sets * STREAM_ROWS - 1;
}

/* The engine writes each rowset as it comes (the source reuses its buffer), all in the
 * window's one transaction. */
static void test_rows_streamed(void **state) {
    fx_t *f = *state;
    twin_t *t = &f->t[0];
    static stream_t st;
    twin_make(t, f->ws, "ST", "device", 0, 0);
    stream_window(t, &st, 7);
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    assert_int_equal(count(f, "activity", "ST"), 7 * STREAM_ROWS);
    /* every row as its rowset held it: start_ns 0..6999 (their sum), names by rowset */
    result_t r = ask(
        f, "SELECT SUM(start_ns) FROM activity WHERE workspace_id = ? AND session_id = ?", "ST");
    assert_int_equal(atoll(r.first), 7LL * STREAM_ROWS * (7 * STREAM_ROWS - 1) / 2);
    r = ask(f,
            "SELECT COUNT(*) FROM activity WHERE workspace_id = ? AND session_id = ?"
            " AND name = 'odd'",
            "ST");
    assert_int_equal(atoll(r.first), 4 * STREAM_ROWS);
}

/* The identity decides before any row is read: a duplicate or a conflict never calls the
 * rows source. */
static void test_duplicate_reads_no_rows(void **state) {
    fx_t *f = *state;
    twin_t *t = &f->t[0];
    static stream_t st;
    twin_make(t, f->ws, "DR", "device", 0, 0);
    stream_window(t, &st, 3);
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    assert_true(st.calls >= 4);
    st.calls = 0;
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_DUPLICATE);
    assert_int_equal(st.calls, 0);
    t->w.sha256[0] ^= 1;
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_CONFLICT);
    assert_int_equal(st.calls, 0);
    assert_int_equal(count(f, "activity", "DR"), 3 * STREAM_ROWS);
}

/* A source that fails halfway (after rowsets were written) leaves nothing of the window, and
 * its identity stays free for the good copy. */
static void test_source_failure_leaves_nothing(void **state) {
    fx_t *f = *state;
    twin_t *t = &f->t[0];
    static stream_t st;
    twin_make(t, f->ws, "SF", "device", 0, 0);
    stream_window(t, &st, 5);
    st.fail_at = 4;
    st.fail_rc = GPUFL_ENOMEM;
    gpufl__window_outcome_t out = 0;
    assert_int_equal(f->ops->window_put(f->s, &out, &t->w), GPUFL_ENOMEM);
    assert_int_equal(count(f, "windows", "SF"), 0);
    assert_int_equal(count(f, "lines", "SF"), 0);
    assert_int_equal(count(f, "activity", "SF"), 0);
    assert_int_equal(count(f, "sessions", "SF"), 0);
    st.fail_at = 0;
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    assert_int_equal(count(f, "activity", "SF"), 5 * STREAM_ROWS);
}

static void test_bad_windows_refused(void **state) {
    fx_t *f = *state;
    twin_t *t = &f->t[0];
    twin_make(t, f->ws, "B", "device", 0, 0);
    gpufl__window_outcome_t out = 0;
    t->w.window_id = "";
    assert_int_equal(f->ops->window_put(f->s, &out, &t->w), GPUFL_EINVAL);
    t->w.window_id = t->window_id;
    t->w.workspace_id = 0;
    assert_int_equal(f->ops->window_put(f->s, &out, &t->w), GPUFL_EINVAL);
    t->w.workspace_id = f->ws;
    t->w.session_id = NULL;
    assert_int_equal(f->ops->window_put(f->s, &out, &t->w), GPUFL_EINVAL);
    assert_int_equal(count(f, "windows", NULL), 0);
}

/* ---- windows in slices ------------------------------------------------------------------- */

/* A window's bytes: a header, a dict and kernel-ish lines, each ending in '\n'. */
static const char slice_text[] = "{\"type\":\"header\",\"v\":1,\"file\":\"device\"}\n"
                                 "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"k\"]}\n"
                                 "{\"type\":\"kernel\",\"v\":1,\"name\":[1]}\n"
                                 "{\"type\":\"note\",\"v\":1,\"n\":4}\n"
                                 "{\"type\":\"note\",\"v\":1,\"n\":5}\n";

#define SLICE_LINES_MAX 8

/* One request's worth of a window: bytes [off, off + len) of text, lines split at '\n'. */
typedef struct {
    gpufl__line_t lines[SLICE_LINES_MAX];
    gpufl__window_held_t held;
    gpufl__window_t w;
} slice_t;

static uint32_t crc_of(const char *text, size_t n) {
    return (uint32_t)crc32(0, (const Bytef *)text, (uInt)n);
}

static void slice_make(slice_t *sl, int64_t ws, const char *session, const char *text, size_t off,
                       size_t len, int more) {
    memset(sl, 0, sizeof *sl);
    size_t n = 0;
    for (size_t at = off; at < off + len; n++) {
        const char *nl = memchr(text + at, '\n', off + len - at);
        assert_non_null(nl);
        assert_true(n < SLICE_LINES_MAX);
        sl->lines[n] = (gpufl__line_t){text + at, (size_t)(nl - text - at), "note", 1};
        at = (size_t)(nl - text) + 1;
    }
    sl->w = (gpufl__window_t){
        .workspace_id = ws,
        .session_id = session,
        .channel = "device",
        .window_id = session, /* one window a session here */
        .bytes = (int64_t)len,
        .rows = (int64_t)n,
        .wire_version = 1,
        .lines = sl->lines,
        .n_lines = n,
        .facts = {.end_ns = -1},
        .offset = (int64_t)off,
        .more = more,
        .prefix_crc32 = crc_of(text, off),
        .data = (const uint8_t *)text + off,
        .held = &sl->held,
    };
    crypto_hash_sha256(sl->w.sha256, (const unsigned char *)text + off, len);
}

typedef struct {
    char text[1024];
    size_t len;
    int64_t next_no; /* line_no must count 0, 1, 2, ... across the slices */
    int gaps;
} joined_t;

static int join_line(void *arg, int n, const char *const *v, const char *const *names) {
    (void)names;
    joined_t *j = arg;
    assert_int_equal(n, 2);
    if (strtoll(v[1], NULL, 10) != j->next_no++) j->gaps++;
    int w = snprintf(j->text + j->len, sizeof j->text - j->len, "%s\n", v[0]);
    assert_true(w > 0 && (size_t)w < sizeof j->text - j->len);
    j->len += (size_t)w;
    return 0;
}

/* The stored lines of a session's window, in line_no order, each ending in '\n'. */
static joined_t stored_text(fx_t *f, const char *session) {
    char wsid[32];
    snprintf(wsid, sizeof wsid, "%lld", (long long)f->ws);
    const char *params[2] = {wsid, session};
    joined_t j = {.len = 0};
    int rc = f->ops->query(f->s,
                           "SELECT body, line_no FROM lines WHERE workspace_id = ?"
                           " AND session_id = ? ORDER BY line_no",
                           params, 2, join_line, &j);
    if (rc) fail_msg("reading lines: %s", gpufl_last_error());
    return j;
}

static void assert_held(const slice_t *sl, int64_t bytes, int final) {
    assert_int_equal(sl->held.bytes, bytes);
    assert_int_equal(sl->held.final, final);
}

/* Three slices store what the window sent whole stores; each retried is a duplicate; the
 * whole window sent after them is a duplicate too; its row says bytes, final and its hash. */
static void test_slices_append(void **state) {
    fx_t *f = *state;
    static slice_t sl[4];
    const char *t = slice_text;
    /* slices end after the header line, and after the kernel line (which uses the dict) */
    size_t n = strlen(t), a = (size_t)(strchr(t, '}') - t) + 2,
           b = (size_t)(strchr(strstr(t, "kernel"), '\n') - t) + 1;
    assert_int_equal(t[a - 1], '\n');
    assert_int_equal(t[b - 1], '\n');
    slice_make(&sl[0], f->ws, "SL", t, 0, a, 1);
    slice_make(&sl[1], f->ws, "SL", t, a, b - a, 1);
    slice_make(&sl[2], f->ws, "SL", t, b, n - b, 0);
    assert_int_equal(put(f, &sl[0].w), GPUFL__WINDOW_STORED);
    assert_held(&sl[0], (int64_t)a, 0);
    assert_int_equal(put(f, &sl[0].w), GPUFL__WINDOW_DUPLICATE);
    assert_int_equal(put(f, &sl[1].w), GPUFL__WINDOW_STORED);
    assert_held(&sl[1], (int64_t)b, 0);
    assert_int_equal(put(f, &sl[1].w), GPUFL__WINDOW_DUPLICATE);
    assert_int_equal(put(f, &sl[2].w), GPUFL__WINDOW_STORED);
    assert_held(&sl[2], (int64_t)n, 1);
    for (int i = 2; i >= 0; i--) { /* the last retried is a duplicate; earlier ones overlap */
        gpufl__window_outcome_t o = put(f, &sl[i].w);
        assert_int_equal(o, i == 2 ? GPUFL__WINDOW_DUPLICATE : GPUFL__WINDOW_RANGE);
        assert_held(&sl[i], (int64_t)n, 1);
    }
    slice_make(&sl[3], f->ws, "SL", t, 0, n, 0); /* the whole window again */
    assert_int_equal(put(f, &sl[3].w), GPUFL__WINDOW_DUPLICATE);
    joined_t j = stored_text(f, "SL");
    assert_string_equal(j.text, t);
    assert_int_equal(j.gaps, 0);
    assert_int_equal(count(f, "windows", "SL"), 1);
    result_t r = ask(f,
                     "SELECT bytes || ' ' || final || ' ' || rows || ' ' || slices FROM windows"
                     " WHERE workspace_id = ? AND session_id = ?",
                     "SL");
    char want[64];
    snprintf(want, sizeof want, "%zu 1 5 3", n);
    assert_string_equal(r.first, want);
    /* the sealed window's hash is the whole window's: another copy of it, sent whole to a
     * fresh session, is stored with the same sha256 */
    slice_make(&sl[3], f->ws, "SW", t, 0, n, 0);
    assert_int_equal(put(f, &sl[3].w), GPUFL__WINDOW_STORED);
    result_t h1 =
        ask(f, "SELECT sha256 FROM windows WHERE workspace_id = ? AND session_id = ?", "SL");
    result_t h2 =
        ask(f, "SELECT sha256 FROM windows WHERE workspace_id = ? AND session_id = ?", "SW");
    assert_true(h1.hash == h2.hash);
}

/* What does not continue the stored bytes: a gap, an overlap, a sealed window asked to grow
 * (RANGE, nothing written), other bytes before the offset (CONFLICT), a slice of a window
 * never stored (RANGE); an empty last slice seals the window. */
static void test_slices_refused(void **state) {
    fx_t *f = *state;
    static slice_t sl, bad;
    const char *t = slice_text;
    size_t n = strlen(t), a = (size_t)(strchr(t, '}') - t) + 2;
    slice_make(&bad, f->ws, "SR", t, a, n - a, 1);
    assert_int_equal(put(f, &bad.w), GPUFL__WINDOW_RANGE); /* nothing stored yet */
    assert_held(&bad, 0, 0);
    assert_int_equal(count(f, "windows", "SR"), 0);
    slice_make(&sl, f->ws, "SR", t, 0, a, 1);
    assert_int_equal(put(f, &sl.w), GPUFL__WINDOW_STORED);
    size_t b = (size_t)(strchr(t + a, '\n') - t) + 1; /* the dict line's end */
    slice_make(&bad, f->ws, "SR", t, b, n - b, 1);    /* a gap */
    assert_int_equal(put(f, &bad.w), GPUFL__WINDOW_RANGE);
    assert_held(&bad, (int64_t)a, 0);
    slice_make(&bad, f->ws, "SR", t, 0, b, 1); /* an overlap from 0 */
    assert_int_equal(put(f, &bad.w), GPUFL__WINDOW_RANGE);
    slice_make(&bad, f->ws, "SR", t, 0, n, 0); /* the whole window: bigger than stored */
    assert_int_equal(put(f, &bad.w), GPUFL__WINDOW_RANGE);
    slice_make(&bad, f->ws, "SR", t, a, b - a, 1);
    bad.w.prefix_crc32 ^= 1; /* the sender's first bytes are not the stored ones */
    assert_int_equal(put(f, &bad.w), GPUFL__WINDOW_CONFLICT);
    assert_int_equal(count(f, "lines", "SR"), 1);
    slice_make(&sl, f->ws, "SR", t, a, n - a, 1);
    assert_int_equal(put(f, &sl.w), GPUFL__WINDOW_STORED);
    assert_held(&sl, (int64_t)n, 0);
    slice_make(&sl, f->ws, "SR", t, n, 0, 0); /* empty: seals */
    assert_int_equal(put(f, &sl.w), GPUFL__WINDOW_STORED);
    assert_held(&sl, (int64_t)n, 1);
    assert_int_equal(put(f, &sl.w), GPUFL__WINDOW_DUPLICATE);
    slice_make(&bad, f->ws, "SR", t, n - 16, 16, 0); /* overlapping the end: grows nothing */
    assert_int_equal(put(f, &bad.w), GPUFL__WINDOW_RANGE);
    static const char more[] = "{\"type\":\"note\",\"v\":1,\"n\":6}\n";
    char grown[sizeof slice_text + sizeof more];
    snprintf(grown, sizeof grown, "%s%s", t, more);
    slice_make(&bad, f->ws, "SR", grown, n, strlen(more), 0); /* sealed: it never grows */
    assert_int_equal(put(f, &bad.w), GPUFL__WINDOW_RANGE);
    assert_held(&bad, (int64_t)n, 1);
    joined_t j = stored_text(f, "SR");
    assert_string_equal(j.text, t);
    assert_int_equal(count(f, "lines", "SR"), 5);
    /* the whole window with other bytes of the same length: a conflict, as before slices */
    char other[sizeof slice_text];
    memcpy(other, t, sizeof other);
    other[n - 3] = '7';
    slice_make(&bad, f->ws, "SR", other, 0, n, 0);
    assert_int_equal(put(f, &bad.w), GPUFL__WINDOW_CONFLICT);
}

typedef struct {
    gpufl__store_t *s;
    const gpufl__store_ops_t *ops;
    const gpufl__window_t *w;
    gpufl__window_outcome_t out;
    int rc;
} slice_putter_t;

static void *slice_putter(void *arg) {
    slice_putter_t *p = arg;
    p->rc = p->ops->window_put(p->s, &p->out, p->w);
    return NULL;
}

/* The same slice arriving at two servers at once (two handles on the database): one stores
 * it, the other finds it stored; its lines are there once. */
static void test_slices_race(void **state) {
    fx_t *f = *state;
    const gpufl__store_ops_t *ops2;
    gpufl__store_t *s2 = open_store(&ops2);
    const char *t = slice_text;
    size_t n = strlen(t), a = (size_t)(strchr(t, '}') - t) + 2;
    for (int round = 0; round < 20; round++) {
        char sid[32];
        snprintf(sid, sizeof sid, "RACE%d", round);
        static slice_t first, sl[2];
        slice_make(&first, f->ws, sid, t, 0, a, 1);
        assert_int_equal(put(f, &first.w), GPUFL__WINDOW_STORED);
        slice_make(&sl[0], f->ws, sid, t, a, n - a, round % 2);
        sl[1] = sl[0];
        sl[1].w.lines = sl[1].lines;
        sl[1].w.held = &sl[1].held;
        slice_putter_t p[2] = {{f->s, f->ops, &sl[0].w, 0, 0}, {s2, ops2, &sl[1].w, 0, 0}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&th[i], NULL, slice_putter, &p[i]), 0);
        for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
        assert_int_equal(p[0].rc, 0);
        assert_int_equal(p[1].rc, 0);
        int stored = (p[0].out == GPUFL__WINDOW_STORED) + (p[1].out == GPUFL__WINDOW_STORED);
        assert_int_equal(stored, 1);
        assert_true(p[0].out == GPUFL__WINDOW_DUPLICATE || p[1].out == GPUFL__WINDOW_DUPLICATE);
        assert_int_equal(count(f, "lines", sid), 5);
        joined_t j = stored_text(f, sid);
        assert_string_equal(j.text, t);
    }
    ops2->close(s2);
}

static void test_keys_scoped_to_workspace(void **state) {
    fx_t *f = *state;
    int64_t a = new_workspace(f->s, f->ops, "keys-a"), b = new_workspace(f->s, f->ops, "keys-b");
    char prefix[64];
    snprintf(prefix, sizeof prefix, "p%d%ld", (int)getpid(), (long)a);
    uint8_t hash[32];
    for (int i = 0; i < 32; i++) hash[i] = (uint8_t)(i * 7 + 1);
    int64_t id = 0;
    assert_int_equal(f->ops->key_create(f->s, &id, a, GPUFL__ROLE_READ, prefix, hash), 0);
    assert_true(id > 0);
    gpufl__key_row_t k;
    assert_int_equal(f->ops->key_find(f->s, &k, prefix), 0);
    assert_int_equal(k.id, id);
    assert_int_equal(k.workspace_id, a);
    assert_int_equal(k.role, GPUFL__ROLE_READ);
    assert_memory_equal(k.hash, hash, 32);
    assert_int_equal(k.revoked, 0);
    /* another workspace cannot revoke it, nor learn that it exists */
    assert_int_equal(f->ops->key_revoke(f->s, b, prefix), GPUFL_ENOTFOUND);
    assert_int_equal(f->ops->key_find(f->s, &k, prefix), 0);
    assert_int_equal(k.revoked, 0);
    assert_int_equal(f->ops->key_revoke(f->s, a, "no-such-prefix"), GPUFL_ENOTFOUND);
    assert_int_equal(f->ops->key_find(f->s, &k, "no-such-prefix"), GPUFL_ENOTFOUND);
    /* a prefix is unique; a key needs an existing workspace and a role */
    int64_t id2;
    assert_int_equal(f->ops->key_create(f->s, &id2, b, GPUFL__ROLE_ADMIN, prefix, hash),
                     GPUFL_EALREADY);
    assert_int_equal(
        f->ops->key_create(f->s, &id2, (int64_t)1 << 40, GPUFL__ROLE_ADMIN, "px-none", hash),
        GPUFL_ENOTFOUND);
    assert_int_equal(f->ops->key_create(f->s, &id2, a, (gpufl__role_t)9, "px-role", hash),
                     GPUFL_EINVAL);
    /* last_used only moves forward, many keys in one call */
    int64_t ids[2] = {id, id}, times[2] = {2000, 1000};
    assert_int_equal(f->ops->keys_touch(f->s, ids, times, 2), 0);
    result_t r = ask_in(f, "SELECT last_used_at FROM api_keys WHERE workspace_id = ?", a, NULL);
    assert_string_equal(r.first, "2000");
    /* its own workspace revokes it */
    assert_int_equal(f->ops->key_revoke(f->s, a, prefix), 0);
    assert_int_equal(f->ops->key_find(f->s, &k, prefix), 0);
    assert_int_equal(k.revoked, 1);
}

static void test_workspaces_and_users(void **state) {
    fx_t *f = *state;
    char name[96];
    snprintf(name, sizeof name, "f->ws-users-%d-%ld", (int)getpid(), (long)time(NULL));
    int64_t id = 0, found = 0, again = 0;
    assert_int_equal(f->ops->workspace_create(f->s, &id, name), 0);
    assert_int_equal(f->ops->workspace_create(f->s, &again, name), GPUFL_EALREADY);
    assert_int_equal(f->ops->workspace_find(f->s, &found, name), 0);
    assert_int_equal(found, id);
    assert_int_equal(f->ops->workspace_find(f->s, &found, "no such workspace, surely"),
                     GPUFL_ENOTFOUND);
    assert_int_equal(f->ops->workspace_create(f->s, &again, ""), GPUFL_EINVAL);
    int64_t user = 0;
    assert_int_equal(f->ops->user_create(f->s, &user, id, name, "$argon2id$v=19$x"), 0);
    assert_true(user > 0);
    assert_int_equal(f->ops->user_create(f->s, &user, id, name, "$argon2id$v=19$y"),
                     GPUFL_EALREADY);
}

static void test_session_facts_merged(void **state) {
    fx_t *f = *state;
    twin_t *t = &f->t[0];
    twin_make(t, f->ws, "F", "device", 0, 0);
    t->w.facts.app_name = "train";
    t->w.facts.engine = "Trace";
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    twin_make(t, f->ws, "F", "scope", 0, 0);
    t->w.facts.app_name = "other"; /* known already: kept */
    t->w.facts.hostname = "node7";
    t->w.facts.pid = 4711;
    t->w.facts.job_id = ""; /* empty is unknown */
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    twin_make(t, f->ws, "F", "device", 1, 0);
    t->w.facts.job_id = "J42";
    t->w.facts.end_ns = 5000;
    t->w.facts.epoch_unix_us = 1795000000000000LL;
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    twin_make(t, f->ws, "F", "scope", 1, 0);
    t->w.facts.end_ns = 4000; /* another file's end: the later one stays */
    t->w.facts.epoch_unix_us = 1;
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    result_t r = ask(f,
                     "SELECT app_name || '|' || hostname || '|' || pid || '|' || job_id || '|' ||"
                     " engine || '|' || end_ns || '|' || state || '|' || epoch_unix_us"
                     " FROM sessions WHERE workspace_id = ? AND session_id = ?",
                     "F");
    assert_int_equal(r.rows, 1);
    assert_string_equal(r.first, "train|node7|4711|J42|Trace|5000|ended|1795000000000000");
}

static int64_t fake_now;
static int64_t fake_clock(void) { return fake_now; }

static void test_retain_drops_old_days(void **state) {
    fx_t *f = *state;
    int64_t now = (int64_t)time(NULL), old = now - 10 * 86400;
    twin_t *t = &f->t[0];
    /* OLD: arrived 10 days ago, and its rows are that old */
    fake_now = old;
    gpufl__store_now_unix_s = fake_clock;
    twin_make(t, f->ws, "OLD", "device", 0, 0);
    t->w.facts.epoch_unix_us = old * 1000000;
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    gpufl__store_now_unix_s = NULL;
    /* MIXED: arrives now, its rows' times are 10 days old: they go, its lines stay */
    twin_make(t, f->ws, "MIXED", "device", 0, 0);
    t->w.facts.epoch_unix_us = old * 1000000;
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);
    twin_make(t, f->ws, "NEW", "device", 0, 0);
    t->w.facts.epoch_unix_us = now * 1000000;
    assert_int_equal(put(f, &t->w), GPUFL__WINDOW_STORED);

    assert_int_equal(f->ops->retain(f->s, -1), GPUFL_EINVAL);
    assert_int_equal(f->ops->retain(f->s, 5), 0);
    assert_int_equal(count(f, "windows", "OLD"), 0);
    assert_int_equal(count(f, "lines", "OLD"), 0);
    assert_int_equal(count(f, "activity", "OLD"), 0);
    assert_int_equal(count(f, "host_sample", "OLD"), 0);
    assert_int_equal(count(f, "sessions", "OLD"), 0);
    assert_int_equal(count(f, "windows", "MIXED"), 1);
    assert_int_equal(count(f, "lines", "MIXED"), N_LINES);
    assert_int_equal(count(f, "activity", "MIXED"), 0);
    assert_int_equal(count(f, "sessions", "MIXED"), 1);
    assert_int_equal(count(f, "windows", "NEW"), 1);
    assert_int_equal(count(f, "activity", "NEW"), ROWS);
    assert_int_equal(count(f, "host_sample", "NEW"), 1);
    /* 11 days keeps everything that is left */
    assert_int_equal(f->ops->retain(f->s, 11), 0);
    assert_int_equal(count(f, "lines", NULL), 2 * N_LINES);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_described_consistently),
        cmocka_unit_test(test_open_unknown_scheme),
        cmocka_unit_test(test_migrations_idempotent),
        cmocka_unit_test_setup_teardown(test_window_stored_then_duplicate, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_window_conflicts, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_puts_store_once, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_failing_rowset_leaves_nothing, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_rows_streamed, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_reads_no_rows, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_source_failure_leaves_nothing, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_bad_windows_refused, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_slices_append, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_slices_refused, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_slices_race, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_keys_scoped_to_workspace, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_workspaces_and_users, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_session_facts_merged, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_retain_drops_old_days, fx_setup, fx_teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (tmp_dir[0]) {
        static const char *const files[] = {"store.db", "store.db-wal", "store.db-shm"};
        char path[128];
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            snprintf(path, sizeof path, "%s/%s", tmp_dir, files[i]);
            unlink(path);
        }
        rmdir(tmp_dir);
    }
    return failed;
}
