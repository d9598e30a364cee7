// SPDX-License-Identifier: Apache-2.0
/*
 * store_sqlite.c - gpufl-server's embedded engine: one SQLite file in WAL mode, a small pool of
 * connections (each used by one thread at a time, with its own cache of prepared statements),
 * versioned migrations, and each window stored in one BEGIN IMMEDIATE transaction.
 */
#include "store.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MAX          16    /* connections: HTTP threads beyond this wait for one */
#define STMT_CACHE        64    /* prepared statements kept per connection (query()'s SQL) */
#define BUSY_TIMEOUT_MS   10000 /* another process holding the write lock: wait this long */
#define SQL_MAX_BYTES     65536 /* generated DDL and INSERTs stay far below this */
#define QUERY_MAX_COLUMNS 2000  /* SQLite's own default limit */

typedef struct {
    char *sql;
    sqlite3_stmt *st;
} cached_t;

typedef struct conn {
    sqlite3 *db;
    cached_t cache[STMT_CACHE];
    size_t n_cache, next_evict;
    sqlite3_stmt **typed; /* INSERT of each entry of gpufl__store_tables, made on first use */
} conn_t;

struct gpufl__store {
    char *path;
    pthread_mutex_t mu; /* the pool */
    pthread_cond_t cv;
    conn_t *idle[POOL_MAX];
    size_t n_idle, n_open;
    /* SQLite lets one writer in at a time anyway; this process's writers queue on a mutex
     * instead of in SQLite's busy handler, which sleeps and retries. Other processes on the
     * same file still meet the busy timeout. */
    pthread_mutex_t write_mu;
};

/* ---- helpers ------------------------------------------------------------------------------ */

/* SQLite's result as a store error: the database busy past the timeout, full, read-only or
 * unreadable is unavailable for now (HTTP 503: try again); the rest is an error (500). */
static int fail_db(sqlite3 *db, int sqlite_rc, const char *what) {
    int primary = sqlite_rc & 0xff;
    int code = primary == SQLITE_NOMEM ? GPUFL_ENOMEM
               : primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_FULL ||
                       primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN ||
                       primary == SQLITE_READONLY
                   ? GPUFL_EUNAVAILABLE
                   : GPUFL_EIO;
    return gpufl__store_fail(code, "sqlite: %s: %s", what, db ? sqlite3_errmsg(db) : "?");
}

static int exec(conn_t *c, const char *sql) {
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : fail_db(c->db, rc, sql);
}

/* A growing SQL text with a cap (SQL_MAX_BYTES). */
typedef struct {
    char *s;
    size_t len, cap;
    int failed;
} sql_t;

static void sql_add(sql_t *b, const char *fmt, ...) GPUFL_STORE_PRINTF(2, 3);
static void sql_add(sql_t *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) break;
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t want = b->cap ? b->cap * 2 : 1024;
        while (want < b->len + (size_t)n + 1) want *= 2;
        if (want > SQL_MAX_BYTES) break;
        char *s = realloc(b->s, want);
        if (!s) break;
        b->s = s;
        b->cap = want;
    }
    b->failed = 1;
}

static int sql_done(sql_t *b) {
    if (!b->failed && b->s) return 0;
    free(b->s);
    b->s = NULL;
    return gpufl__store_fail(GPUFL_ENOMEM, "sqlite: generated SQL over %d bytes or no memory",
                             SQL_MAX_BYTES);
}

/* A prepared statement for sql from the connection's cache, reset and unbound. */
static int prepare(conn_t *c, const char *sql, sqlite3_stmt **out) {
    for (size_t i = 0; i < c->n_cache; i++) {
        if (strcmp(c->cache[i].sql, sql) == 0) {
            sqlite3_reset(c->cache[i].st);
            sqlite3_clear_bindings(c->cache[i].st);
            *out = c->cache[i].st;
            return 0;
        }
    }
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) return fail_db(c->db, rc, sql);
    char *copy = strdup(sql);
    if (!copy) {
        sqlite3_finalize(st);
        return gpufl__store_fail(GPUFL_ENOMEM, "sqlite: no memory for a statement");
    }
    size_t slot = c->n_cache;
    if (slot == STMT_CACHE) { /* full: replace in turn; routes use far fewer */
        slot = c->next_evict++ % STMT_CACHE;
        sqlite3_finalize(c->cache[slot].st);
        free(c->cache[slot].sql);
    } else {
        c->n_cache++;
    }
    c->cache[slot] = (cached_t){copy, st};
    *out = st;
    return 0;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s) {
    if (s && *s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static void bind_int_or_null(sqlite3_stmt *st, int i, int64_t v, int64_t unknown) {
    if (v == unknown)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

/* Steps a statement that returns no row (or ignores it). */
static int step_done(conn_t *c, sqlite3_stmt *st, const char *what) {
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) continue;
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : fail_db(c->db, rc, what);
}

/* ---- connections -------------------------------------------------------------------------- */

static void conn_close(conn_t *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n_cache; i++) {
        sqlite3_finalize(c->cache[i].st);
        free(c->cache[i].sql);
    }
    if (c->typed)
        for (size_t i = 0; i < gpufl__store_n_tables; i++) sqlite3_finalize(c->typed[i]);
    free(c->typed);
    sqlite3_close(c->db);
    free(c);
}

static int conn_open(const char *path, conn_t **out) {
    conn_t *c = calloc(1, sizeof *c);
    if (!c) return gpufl__store_fail(GPUFL_ENOMEM, "sqlite: no memory for a connection");
    c->typed = calloc(gpufl__store_n_tables, sizeof *c->typed);
    if (!c->typed) {
        free(c);
        return gpufl__store_fail(GPUFL_ENOMEM, "sqlite: no memory for a connection");
    }
    /* NOMUTEX: a connection is used by one thread at a time (the pool hands it out). */
    int rc = sqlite3_open_v2(
        path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        int err = gpufl__store_fail(GPUFL_EIO, "sqlite: cannot open '%s': %s", path,
                                    c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        conn_close(c);
        return err;
    }
    sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
    /* WAL: readers never block the writer. synchronous=FULL: a 200 for a window means its
     * rows survive a power cut, which exactly-once delivery relies on. */
    rc = exec(c, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON");
    if (rc) {
        conn_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

static int acquire(gpufl__store_t *s, conn_t **out) {
    pthread_mutex_lock(&s->mu);
    while (s->n_idle == 0 && s->n_open >= POOL_MAX) pthread_cond_wait(&s->cv, &s->mu);
    if (s->n_idle) {
        *out = s->idle[--s->n_idle];
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    s->n_open++;
    pthread_mutex_unlock(&s->mu);
    int rc = conn_open(s->path, out);
    if (rc) {
        pthread_mutex_lock(&s->mu);
        s->n_open--;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
    return rc;
}

static void release(gpufl__store_t *s, conn_t *c) {
    pthread_mutex_lock(&s->mu);
    s->idle[s->n_idle++] = c;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* A write transaction on a pooled connection: the process's write lock, then SQLite's. */
static int write_begin(gpufl__store_t *s, conn_t **out) {
    int rc = acquire(s, out);
    if (rc) return rc;
    pthread_mutex_lock(&s->write_mu);
    rc = exec(*out, "BEGIN IMMEDIATE");
    if (rc) {
        pthread_mutex_unlock(&s->write_mu);
        release(s, *out);
    }
    return rc;
}

/* Commits when rc is 0, else rolls back; returns rc or the commit's failure. */
static int write_end(gpufl__store_t *s, conn_t *c, int rc) {
    if (rc == 0) rc = exec(c, "COMMIT");
    if (rc) sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL); /* keeps rc's message */
    pthread_mutex_unlock(&s->write_mu);
    release(s, c);
    return rc;
}

/* ---- schema --------------------------------------------------------------------------------- */

/* Migration n is migrations[n - 1]; a database records the ones applied in schema_migrations.
 * Never edit one that shipped: append another. The typed tables are not here: they are made
 * and grown from store_tables.c (sync_typed_tables). */
static const char *const migrations[] = {
    /* 1: workspaces, keys, users, sessions, windows and their lines. */
    "CREATE TABLE workspaces (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " created_at INTEGER NOT NULL);"
    "CREATE TABLE api_keys (id INTEGER PRIMARY KEY,"
    " workspace_id INTEGER NOT NULL REFERENCES workspaces(id), prefix TEXT NOT NULL UNIQUE,"
    " hash BLOB NOT NULL, role INTEGER NOT NULL, created_at INTEGER NOT NULL,"
    " revoked_at INTEGER, last_used_at INTEGER);"
    "CREATE INDEX api_keys_by_workspace ON api_keys (workspace_id);"
    "CREATE TABLE users (id INTEGER PRIMARY KEY,"
    " workspace_id INTEGER NOT NULL REFERENCES workspaces(id), name TEXT NOT NULL UNIQUE,"
    " password_hash TEXT NOT NULL, created_at INTEGER NOT NULL);"
    "CREATE TABLE sessions (workspace_id INTEGER NOT NULL, session_id TEXT NOT NULL,"
    " app_name TEXT, hostname TEXT, pid INTEGER, job_id TEXT, engine TEXT, gpufl_version TEXT,"
    " epoch_unix_us INTEGER, first_seen INTEGER NOT NULL, last_window_at INTEGER NOT NULL,"
    " end_ns INTEGER, state TEXT NOT NULL DEFAULT 'live', completed_at INTEGER,"
    " PRIMARY KEY (workspace_id, session_id));"
    "CREATE INDEX sessions_by_time ON sessions (workspace_id, epoch_unix_us);"
    "CREATE INDEX sessions_by_app ON sessions (workspace_id, app_name);"
    "CREATE INDEX sessions_by_host ON sessions (workspace_id, hostname);"
    "CREATE INDEX sessions_by_job ON sessions (workspace_id, job_id);"
    "CREATE TABLE windows (workspace_id INTEGER NOT NULL, session_id TEXT NOT NULL,"
    " channel TEXT NOT NULL, sequence INTEGER NOT NULL, window_id TEXT NOT NULL,"
    " sha256 BLOB NOT NULL, rows INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " wire_version INTEGER NOT NULL, received_at INTEGER NOT NULL, day INTEGER NOT NULL,"
    " PRIMARY KEY (workspace_id, session_id, channel, sequence),"
    " UNIQUE (workspace_id, window_id));"
    "CREATE INDEX windows_by_day ON windows (day);"
    "CREATE TABLE lines (workspace_id INTEGER NOT NULL, session_id TEXT NOT NULL,"
    " channel TEXT NOT NULL, sequence INTEGER NOT NULL, line_no INTEGER NOT NULL, type TEXT,"
    " rows INTEGER NOT NULL, body TEXT NOT NULL, day INTEGER NOT NULL,"
    " PRIMARY KEY (workspace_id, session_id, channel, sequence, line_no)) WITHOUT ROWID;"
    "CREATE INDEX lines_by_day ON lines (day);",
    /* 2: each session's report, insights and kernels per name as gpufl-server last built them
     * (report.c), and the windows they were built from (fewer than stored: stale). */
    "CREATE TABLE session_reports (workspace_id INTEGER NOT NULL, session_id TEXT NOT NULL,"
    " built_at INTEGER NOT NULL, windows INTEGER NOT NULL, report_text TEXT NOT NULL,"
    " report_json TEXT NOT NULL, report_html TEXT NOT NULL, insights_text TEXT NOT NULL,"
    " insights_json TEXT NOT NULL, kernels_json TEXT NOT NULL, facts_json TEXT NOT NULL,"
    " PRIMARY KEY (workspace_id, session_id));",
    /* 3: the dashboard's login sessions (auth.c): the cookie only as its BLAKE2b hash (hex). */
    "CREATE TABLE login_sessions (id INTEGER PRIMARY KEY,"
    " workspace_id INTEGER NOT NULL REFERENCES workspaces(id),"
    " user_id INTEGER NOT NULL REFERENCES users(id), token_hash TEXT NOT NULL UNIQUE,"
    " csrf TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);"
    "CREATE INDEX login_sessions_by_expiry ON login_sessions (expires_at);",
    /* 4: windows in slices (store_slice.c): a window's bytes stored so far (bytes), whether it
     * is sealed, the running SHA-256 of an open one, the crc32 of its bytes, the last slice
     * and how many came. The windows stored before were whole and sealed. */
    "ALTER TABLE windows ADD COLUMN final INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE windows ADD COLUMN sha256_state BLOB;"
    "ALTER TABLE windows ADD COLUMN crc32 INTEGER;"
    "ALTER TABLE windows ADD COLUMN last_offset INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE windows ADD COLUMN last_sha256 BLOB;"
    "ALTER TABLE windows ADD COLUMN last_prefix_crc32 INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE windows ADD COLUMN slices INTEGER NOT NULL DEFAULT 1;",
    /* 5: the dashboard: a report's top insight severity (1 LOW .. 3 HIGH, NULL: no insight)
     * and insight count, so the sessions list filters on them in SQL; a key's label. */
    "ALTER TABLE session_reports ADD COLUMN insights_top INTEGER;"
    "ALTER TABLE session_reports ADD COLUMN insights_count INTEGER;"
    "ALTER TABLE api_keys ADD COLUMN label TEXT;",
    /* 6: gpu_sample rolled up per device into wall-clock slots (store_rollup.c), the fleet
     * heatmap's source; filled for the rows stored before once the typed tables exist. */
    "CREATE TABLE gpu_rollup (workspace_id INTEGER NOT NULL, session_id TEXT NOT NULL,"
    " level_s INTEGER NOT NULL, slot INTEGER NOT NULL, device INTEGER NOT NULL,"
    " day INTEGER NOT NULL, samples INTEGER NOT NULL, util_sum REAL, util_n INTEGER NOT NULL,"
    " sm_sum REAL, sm_n INTEGER NOT NULL, last_ts_ns INTEGER NOT NULL,"
    " PRIMARY KEY (workspace_id, level_s, slot, session_id, device)) WITHOUT ROWID;"
    "CREATE INDEX gpu_rollup_by_day ON gpu_rollup (day);",
};
#define ROLLUP_MIGRATION 6
#define N_MIGRATIONS (sizeof migrations / sizeof migrations[0])

static const char *col_sql_type(gpufl__col_type_t t) {
    return t == GPUFL__COL_INT ? "INTEGER" : t == GPUFL__COL_REAL ? "REAL" : "TEXT";
}

/* Reads the table's existing columns into have[] (1 where the column exists). */
static int typed_columns_present(conn_t *c, const gpufl__table_t *t, int *have, int *exists) {
    sql_t q = {0};
    sql_add(&q, "PRAGMA table_info(\"%s\")", t->name);
    int rc = sql_done(&q);
    if (rc) return rc;
    sqlite3_stmt *st;
    int src = sqlite3_prepare_v2(c->db, q.s, -1, &st, NULL);
    free(q.s);
    if (src != SQLITE_OK) return fail_db(c->db, src, "PRAGMA table_info");
    *exists = 0;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        *exists = 1;
        for (size_t i = 0; name && i < t->n_columns; i++)
            if (strcmp(t->columns[i].name, name) == 0) have[i] = 1;
    }
    sqlite3_finalize(st);
    return src == SQLITE_DONE ? 0 : fail_db(c->db, src, "PRAGMA table_info");
}

/* Creates a typed table, adds the columns it lacks, and its indexes (and one on day, which
 * retain() deletes by). */
static int sync_typed_table(conn_t *c, const gpufl__table_t *t) {
    int have[256] = {0};
    if (t->n_columns > sizeof have / sizeof have[0])
        return gpufl__store_fail(GPUFL_EINVAL, "store: table %s has too many columns", t->name);
    int exists = 0;
    int rc = typed_columns_present(c, t, have, &exists);
    sql_t q = {0};
    if (rc) return rc;
    if (!exists) {
        sql_add(&q,
                "CREATE TABLE \"%s\" (workspace_id INTEGER NOT NULL,"
                " session_id TEXT NOT NULL, day INTEGER NOT NULL",
                t->name);
        if (t->kind) sql_add(&q, ", kind TEXT NOT NULL");
        for (size_t i = 0; i < t->n_columns; i++)
            sql_add(&q, ", \"%s\" %s", t->columns[i].name, col_sql_type(t->columns[i].type));
        sql_add(&q, ");");
    } else {
        for (size_t i = 0; i < t->n_columns; i++)
            if (!have[i])
                sql_add(&q, "ALTER TABLE \"%s\" ADD COLUMN \"%s\" %s;", t->name, t->columns[i].name,
                        col_sql_type(t->columns[i].type));
    }
    sql_add(&q, "CREATE INDEX IF NOT EXISTS \"%s_by_day\" ON \"%s\" (day);", t->name, t->name);
    for (const char *const *ix = t->indexes; ix && *ix; ix++) {
        /* named after its columns, so reordering the list renames nothing */
        sql_add(&q, "CREATE INDEX IF NOT EXISTS \"%s_by", t->name);
        for (const char *p = *ix; *p; p++)
            if (*p != ' ') sql_add(&q, "%c", *p == ',' ? '_' : *p);
        sql_add(&q, "\" ON \"%s\" (%s);", t->name, *ix);
    }
    rc = sql_done(&q);
    if (rc) return rc;
    rc = exec(c, q.s);
    free(q.s);
    return rc;
}

/* Applies the migrations not yet applied and brings the typed tables up to store_tables.c,
 * in one transaction: two processes opening one new file at once migrate it once. */
static int migrate(conn_t *c) {
    int rc = exec(c, "BEGIN IMMEDIATE");
    if (rc) return rc;
    rc = exec(c, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                 " applied_at INTEGER NOT NULL)");
    sqlite3_stmt *st = NULL;
    int64_t have = 0;
    if (!rc) {
        int src = sqlite3_prepare_v2(
            c->db, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", -1, &st, NULL);
        if (src == SQLITE_OK && (src = sqlite3_step(st)) == SQLITE_ROW)
            have = sqlite3_column_int64(st, 0);
        else
            rc = fail_db(c->db, src, "reading schema_migrations");
        sqlite3_finalize(st);
    }
    if (!rc && have > (int64_t)N_MIGRATIONS)
        rc = gpufl__store_fail(GPUFL_ENOTSUP,
                               "sqlite: the database is at schema version %lld, newer than this "
                               "gpufl-server knows (%zu): use a newer gpufl-server",
                               (long long)have, N_MIGRATIONS);
    for (int64_t v = have + 1; !rc && v <= (int64_t)N_MIGRATIONS; v++) {
        rc = exec(c, migrations[v - 1]);
        char ins[160];
        snprintf(ins, sizeof ins, "INSERT INTO schema_migrations VALUES (%lld, %lld)", (long long)v,
                 (long long)gpufl__store_now());
        if (!rc) rc = exec(c, ins);
    }
    for (size_t i = 0; !rc && i < gpufl__store_n_tables; i++)
        if (gpufl__store_table_first(i) == i) rc = sync_typed_table(c, gpufl__store_tables[i]);
    if (!rc && have < ROLLUP_MIGRATION) rc = exec(c, gpufl__rollup_backfill_sql);
    if (!rc) return exec(c, "COMMIT");
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- open, close ---------------------------------------------------------------------------- */

static void sqlite_close(gpufl__store_t *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_idle; i++) conn_close(s->idle[i]);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->write_mu);
    pthread_cond_destroy(&s->cv);
    free(s->path);
    free(s);
}

static int sqlite_open(gpufl__store_t **out, const char *path) {
    *out = NULL;
    if (!path || !*path || strcmp(path, ":memory:") == 0)
        return gpufl__store_fail(GPUFL_EINVAL,
                                 "--db sqlite:PATH: a file path is needed (each connection of "
                                 "the pool opens it; ':memory:' would give each its own)");
    if (!sqlite3_threadsafe())
        return gpufl__store_fail(GPUFL_ENOTSUP, "sqlite: this libsqlite3 was built without "
                                                "thread support");
    gpufl__store_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return gpufl__store_fail(GPUFL_ENOMEM, "sqlite: no memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->write_mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    conn_t *c;
    int rc = conn_open(path, &c);
    if (rc) {
        sqlite_close(s);
        return rc;
    }
    rc = migrate(c);
    if (rc) {
        conn_close(c);
        sqlite_close(s);
        return rc;
    }
    s->n_open = 1;
    s->idle[s->n_idle++] = c;
    *out = s;
    return 0;
}

/* ---- windows ---------------------------------------------------------------------------------- */

/* Parameters 1-4 of a statement on windows or lines: workspace, session, channel, sequence. */
static void bind_identity(sqlite3_stmt *st, const gpufl__window_t *w) {
    sqlite3_bind_int64(st, 1, w->workspace_id);
    sqlite3_bind_text(st, 2, w->session_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, w->channel, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, w->sequence);
}

static void blob32(uint8_t out[32], sqlite3_stmt *st, int col, const uint8_t *fallback) {
    const void *b = sqlite3_column_blob(st, col);
    if (b && sqlite3_column_bytes(st, col) == 32)
        memcpy(out, b, 32);
    else
        memcpy(out, fallback, 32);
}

/* The stored row of the window's identity into *row (*found 1), or *found 0. */
static int window_read(conn_t *c, const gpufl__window_t *w, gpufl__window_row_t *row, int *found) {
    sqlite3_stmt *st;
    *found = 0;
    int rc = prepare(c,
                     "SELECT sha256, bytes, final, rows, slices, sha256_state, crc32, last_offset,"
                     " last_sha256, last_prefix_crc32 FROM windows WHERE workspace_id = ?"
                     " AND session_id = ? AND channel = ? AND sequence = ?",
                     &st);
    if (rc) return rc;
    bind_identity(st, w);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        *found = 1;
        *row = (gpufl__window_row_t){0};
        uint8_t none[32] = {0};
        blob32(row->sha256, st, 0, none);
        row->bytes = sqlite3_column_int64(st, 1);
        row->final = sqlite3_column_int(st, 2) != 0;
        row->rows = sqlite3_column_int64(st, 3);
        row->slices = sqlite3_column_int64(st, 4);
        const void *state = sqlite3_column_blob(st, 5);
        row->has_state = state && sqlite3_column_bytes(st, 5) == GPUFL__SHA256_STATE_BYTES;
        if (row->has_state) memcpy(row->state, state, GPUFL__SHA256_STATE_BYTES);
        row->has_crc32 = sqlite3_column_type(st, 6) != SQLITE_NULL;
        row->crc32 = (uint32_t)sqlite3_column_int64(st, 6);
        row->last_offset = sqlite3_column_int64(st, 7);
        blob32(row->last_sha256, st, 8, row->sha256); /* NULL: the window came whole */
        row->last_prefix_crc32 = (uint32_t)sqlite3_column_int64(st, 9);
    }
    sqlite3_reset(st);
    return src == SQLITE_ROW || src == SQLITE_DONE ? 0 : fail_db(c->db, src, "window lookup");
}

/* Whether the window id is stored under another identity (the caller found none under w's). */
static int window_id_taken(conn_t *c, const gpufl__window_t *w, int *taken) {
    sqlite3_stmt *st;
    int rc = prepare(c, "SELECT 1 FROM windows WHERE workspace_id = ? AND window_id = ?", &st);
    if (rc) return rc;
    sqlite3_bind_int64(st, 1, w->workspace_id);
    sqlite3_bind_text(st, 2, w->window_id, -1, SQLITE_STATIC);
    int src = sqlite3_step(st);
    sqlite3_reset(st);
    *taken = src == SQLITE_ROW;
    return src == SQLITE_ROW || src == SQLITE_DONE ? 0 : fail_db(c->db, src, "window id lookup");
}

/* Parameters from 5 on of the INSERT and the UPDATE of windows: what a slice changes. */
static void bind_slice_state(sqlite3_stmt *st, const gpufl__window_row_t *r) {
    sqlite3_bind_blob(st, 5, r->sha256, 32, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, r->rows);
    sqlite3_bind_int64(st, 7, r->bytes);
    sqlite3_bind_int(st, 8, r->final);
    if (r->has_state)
        sqlite3_bind_blob(st, 9, r->state, GPUFL__SHA256_STATE_BYTES, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 9);
    if (r->has_crc32)
        sqlite3_bind_int64(st, 10, r->crc32);
    else
        sqlite3_bind_null(st, 10);
    sqlite3_bind_int64(st, 11, r->last_offset);
    sqlite3_bind_blob(st, 12, r->last_sha256, 32, SQLITE_STATIC);
    sqlite3_bind_int64(st, 13, r->last_prefix_crc32);
    sqlite3_bind_int64(st, 14, r->slices);
}

static int insert_window_row(conn_t *c, const gpufl__window_t *w, const gpufl__window_row_t *r,
                             int64_t now, int64_t day) {
    sqlite3_stmt *st;
    int rc = prepare(c,
                     "INSERT INTO windows (workspace_id, session_id, channel, sequence, sha256,"
                     " rows, bytes, final, sha256_state, crc32, last_offset, last_sha256,"
                     " last_prefix_crc32, slices, window_id, wire_version, received_at, day)"
                     " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     &st);
    if (rc) return rc;
    bind_identity(st, w);
    bind_slice_state(st, r);
    sqlite3_bind_text(st, 15, w->window_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 16, w->wire_version);
    sqlite3_bind_int64(st, 17, now);
    sqlite3_bind_int64(st, 18, day);
    return step_done(c, st, "insert into windows");
}

static int update_window_row(conn_t *c, const gpufl__window_t *w, const gpufl__window_row_t *r) {
    sqlite3_stmt *st;
    int rc = prepare(c,
                     "UPDATE windows SET sha256 = ?5, rows = ?6, bytes = ?7, final = ?8,"
                     " sha256_state = ?9, crc32 = ?10, last_offset = ?11, last_sha256 = ?12,"
                     " last_prefix_crc32 = ?13, slices = ?14 WHERE workspace_id = ?1"
                     " AND session_id = ?2 AND channel = ?3 AND sequence = ?4",
                     &st);
    if (rc) return rc;
    bind_identity(st, w);
    bind_slice_state(st, r);
    return step_done(c, st, "update of windows");
}

/* The line_no the window's next line takes: its lines so far. */
static int next_line_no(conn_t *c, const gpufl__window_t *w, int64_t *out) {
    sqlite3_stmt *st;
    int rc = prepare(c,
                     "SELECT COALESCE(MAX(line_no) + 1, 0) FROM lines WHERE workspace_id = ?"
                     " AND session_id = ? AND channel = ? AND sequence = ?",
                     &st);
    if (rc) return rc;
    bind_identity(st, w);
    int src = sqlite3_step(st);
    *out = src == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return src == SQLITE_ROW ? 0 : fail_db(c->db, src, "counting the window's lines");
}

/* The session row: created by its first window; a later window fills what is still unknown
 * and never replaces a known fact with an unknown one. Gives the session's epoch (0: unknown). */
static int upsert_session(conn_t *c, const gpufl__window_t *w, int64_t now, int64_t *epoch_us) {
    sqlite3_stmt *st;
    int rc = prepare(
        c,
        "INSERT INTO sessions (workspace_id, session_id, app_name, hostname, pid, job_id, engine,"
        " gpufl_version, epoch_unix_us, first_seen, last_window_at, end_ns, state)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11,"
        " CASE WHEN ?11 IS NULL THEN 'live' ELSE 'ended' END)"
        " ON CONFLICT (workspace_id, session_id) DO UPDATE SET"
        " app_name = COALESCE(sessions.app_name, excluded.app_name),"
        " hostname = COALESCE(sessions.hostname, excluded.hostname),"
        " pid = COALESCE(sessions.pid, excluded.pid),"
        " job_id = COALESCE(sessions.job_id, excluded.job_id),"
        " engine = COALESCE(sessions.engine, excluded.engine),"
        " gpufl_version = COALESCE(sessions.gpufl_version, excluded.gpufl_version),"
        " epoch_unix_us = COALESCE(sessions.epoch_unix_us, excluded.epoch_unix_us),"
        " last_window_at = MAX(sessions.last_window_at, excluded.last_window_at),"
        " end_ns = CASE WHEN excluded.end_ns IS NULL THEN sessions.end_ns"
        "   WHEN sessions.end_ns IS NULL THEN excluded.end_ns"
        "   ELSE MAX(sessions.end_ns, excluded.end_ns) END,"
        " state = CASE WHEN sessions.state = 'live' AND excluded.end_ns IS NOT NULL"
        "   THEN 'ended' ELSE sessions.state END"
        " RETURNING epoch_unix_us",
        &st);
    if (rc) return rc;
    const gpufl__session_facts_t *f = &w->facts;
    sqlite3_bind_int64(st, 1, w->workspace_id);
    sqlite3_bind_text(st, 2, w->session_id, -1, SQLITE_STATIC);
    bind_text_or_null(st, 3, f->app_name);
    bind_text_or_null(st, 4, f->hostname);
    bind_int_or_null(st, 5, f->pid, 0);
    bind_text_or_null(st, 6, f->job_id);
    bind_text_or_null(st, 7, f->engine);
    bind_text_or_null(st, 8, f->gpufl_version);
    bind_int_or_null(st, 9, f->epoch_unix_us, 0);
    sqlite3_bind_int64(st, 10, now);
    if (f->end_ns < 0)
        sqlite3_bind_null(st, 11);
    else
        sqlite3_bind_int64(st, 11, f->end_ns);
    int src = sqlite3_step(st);
    *epoch_us = src == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (src == SQLITE_ROW) return step_done(c, st, "upsert of the session");
    sqlite3_reset(st);
    return fail_db(c->db, src, "upsert of the session");
}

static int insert_lines(conn_t *c, const gpufl__window_t *w, int64_t first_no, int64_t day) {
    sqlite3_stmt *st;
    int rc = prepare(c,
                     "INSERT INTO lines (workspace_id, session_id, channel, sequence, line_no,"
                     " type, rows, body, day) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     &st);
    if (rc) return rc;
    bind_identity(st, w);
    sqlite3_bind_int64(st, 9, day);
    for (size_t i = 0; i < w->n_lines && !rc; i++) {
        const gpufl__line_t *l = &w->lines[i];
        if (!l->text && l->len)
            return gpufl__store_fail(GPUFL_EINVAL, "store: line %zu of the window has no text", i);
        sqlite3_bind_int64(st, 5, first_no + (int64_t)i);
        bind_text_or_null(st, 6, l->type);
        sqlite3_bind_int64(st, 7, l->rows);
        sqlite3_bind_text(st, 8, l->text ? l->text : "", (int)l->len, SQLITE_STATIC);
        rc = step_done(c, st, "insert into lines");
    }
    return rc;
}

/* The INSERT of table entry i, made once per connection. */
static int typed_insert(conn_t *c, size_t i, sqlite3_stmt **out) {
    if (c->typed[i]) {
        *out = c->typed[i];
        return 0;
    }
    const gpufl__table_t *t = gpufl__store_tables[i];
    sql_t q = {0};
    sql_add(&q, "INSERT INTO \"%s\" (workspace_id, session_id, day%s", t->name,
            t->kind ? ", kind" : "");
    for (size_t k = 0; k < t->n_columns; k++) sql_add(&q, ", \"%s\"", t->columns[k].name);
    sql_add(&q, ") VALUES (?, ?, ?%s", t->kind ? ", ?" : "");
    for (size_t k = 0; k < t->n_columns; k++) sql_add(&q, ", ?");
    sql_add(&q, ")");
    int rc = sql_done(&q);
    if (rc) return rc;
    int src = sqlite3_prepare_v3(c->db, q.s, -1, SQLITE_PREPARE_PERSISTENT, &c->typed[i], NULL);
    rc = src == SQLITE_OK ? 0 : fail_db(c->db, src, q.s);
    free(q.s);
    *out = c->typed[i];
    return rc;
}

static void bind_cell(sqlite3_stmt *st, int i, const gpufl__cell_t *cell) {
    switch (cell->kind) {
    case GPUFL__CELL_INT: sqlite3_bind_int64(st, i, cell->u.i); break;
    case GPUFL__CELL_REAL: sqlite3_bind_double(st, i, cell->u.r); break;
    case GPUFL__CELL_TEXT:
        sqlite3_bind_text(st, i, cell->u.t.s ? cell->u.t.s : "", (int)cell->u.t.len, SQLITE_STATIC);
        break;
    default: sqlite3_bind_null(st, i); break;
    }
}

static int insert_rowset(conn_t *c, const gpufl__window_t *w, const gpufl__rowset_t *rs,
                         int64_t epoch_us, int64_t arrival_day) {
    size_t ti = gpufl__store_n_tables;
    for (size_t i = 0; i < gpufl__store_n_tables; i++)
        if (rs->table && gpufl__store_tables[i] == rs->table) ti = i;
    if (ti == gpufl__store_n_tables)
        return gpufl__store_fail(GPUFL_EINVAL, "store: a rowset names no table of store_tables.c");
    if (rs->n_rows && !rs->cells)
        return gpufl__store_fail(GPUFL_EINVAL, "store: a %s rowset has rows but no cells",
                                 rs->table->record_type);
    const gpufl__table_t *t = rs->table;
    sqlite3_stmt *st;
    int rc = typed_insert(c, ti, &st);
    if (rc) return rc;
    int time_i = gpufl__store_table_time_index(t);
    int first = t->kind ? 5 : 4; /* parameter of the first column */
    sqlite3_bind_int64(st, 1, w->workspace_id);
    sqlite3_bind_text(st, 2, w->session_id, -1, SQLITE_STATIC);
    if (t->kind) sqlite3_bind_text(st, 4, t->kind, -1, SQLITE_STATIC);
    for (size_t r = 0; r < rs->n_rows && !rc; r++) {
        const gpufl__cell_t *row = rs->cells + r * t->n_columns;
        sqlite3_bind_int64(
            st, 3, gpufl__store_row_day(epoch_us, time_i >= 0 ? &row[time_i] : NULL, arrival_day));
        for (size_t k = 0; k < t->n_columns; k++) bind_cell(st, first + (int)k, &row[k]);
        rc = step_done(c, st, t->name);
    }
    return rc;
}

/* The typed rows, one rowset at a time as the source builds them: the request never holds
 * more than one rowset's cells, and the transaction still takes all of them or none. */
static int insert_rows(conn_t *c, const gpufl__window_t *w, int64_t epoch_us, int64_t day) {
    const gpufl__rows_source_t *src = &w->rows_source;
    if (!src->next) return 0;
    int rc = src->begin ? src->begin(src->arg) : 0;
    const gpufl__rowset_t *rs = NULL;
    while (!rc && !(rc = src->next(src->arg, &rs)) && rs)
        rc = insert_rowset(c, w, rs, epoch_us, day);
    return rc;
}

/* Stores w on the window's row (stored NULL: a new window): its row, the session, its lines
 * after those stored, its typed rows. */
static int window_insert(conn_t *c, const gpufl__window_t *w, const gpufl__window_row_t *stored,
                         gpufl__window_row_t *after) {
    int64_t now = gpufl__store_now(), day = now / 86400, epoch_us = 0, first_no = 0;
    int rc = gpufl__slice_advance(after, stored, w);
    if (rc) return rc;
    if (stored) {
        rc = update_window_row(c, w, after);
        if (!rc) rc = next_line_no(c, w, &first_no);
    } else {
        rc = insert_window_row(c, w, after, now, day);
    }
    if (!rc) rc = upsert_session(c, w, now, &epoch_us);
    if (!rc) rc = insert_lines(c, w, first_no, day);
    if (!rc) rc = insert_rows(c, w, epoch_us, day);
    char *rollup = NULL;
    if (!rc) rc = gpufl__rollup_sql(&rollup, w, epoch_us);
    if (!rc && rollup) rc = exec(c, rollup);
    free(rollup);
    return rc;
}

static int check_window(const gpufl__window_t *w) {
    if (!w || !w->session_id || !*w->session_id || !w->channel || !*w->channel || !w->window_id ||
        !*w->window_id)
        return gpufl__store_fail(GPUFL_EINVAL,
                                 "store: a window needs a session id, a channel and a window id");
    if (w->workspace_id <= 0)
        return gpufl__store_fail(GPUFL_EINVAL, "store: a window needs a workspace");
    if (w->n_lines && !w->lines)
        return gpufl__store_fail(GPUFL_EINVAL, "store: the window's lines are missing");
    return 0;
}

static int sqlite_window_put(gpufl__store_t *s, gpufl__window_outcome_t *out,
                             const gpufl__window_t *w) {
    if (!s || !out) return gpufl__store_fail(GPUFL_EINVAL, "store: window_put without a store");
    int rc = check_window(w);
    if (rc) return rc;
    conn_t *c;
    rc = write_begin(s, &c);
    if (rc) return rc;
    gpufl__window_row_t stored, after = {0};
    gpufl__window_outcome_t seen = 0;
    int found = 0, taken = 0;
    rc = window_read(c, w, &stored, &found);
    if (!rc && !found) rc = window_id_taken(c, w, &taken);
    if (!rc) {
        seen = taken ? GPUFL__WINDOW_CONFLICT : gpufl__slice_decide(found ? &stored : NULL, w);
        if (found) after = stored;
    }
    if (!rc && !seen) rc = window_insert(c, w, found ? &stored : NULL, &after);
    rc = write_end(s, c, rc);
    if (!rc) {
        *out = seen ? seen : GPUFL__WINDOW_STORED;
        if (w->held) *w->held = (gpufl__window_held_t){after.bytes, after.final};
    }
    return rc;
}

/* ---- workspaces, keys, users ------------------------------------------------------------------ */

/* Runs one INSERT in its own write transaction; maps the constraint it breaks. */
typedef void (*binder_t)(sqlite3_stmt *st, const void *arg);

static int insert_one(gpufl__store_t *s, const char *sql, binder_t bind, const void *arg,
                      const char *what, int64_t *out_id) {
    conn_t *c;
    int rc = write_begin(s, &c);
    if (rc) return rc;
    sqlite3_stmt *st;
    rc = prepare(c, sql, &st);
    if (!rc) {
        bind(st, arg);
        int src = sqlite3_step(st);
        int ext = sqlite3_extended_errcode(c->db);
        sqlite3_reset(st);
        if (src == SQLITE_DONE) {
            if (out_id) *out_id = sqlite3_last_insert_rowid(c->db);
        } else if (ext == SQLITE_CONSTRAINT_FOREIGNKEY) {
            rc = gpufl__store_fail(GPUFL_ENOTFOUND, "%s: no such workspace", what);
        } else if (ext == SQLITE_CONSTRAINT_UNIQUE || ext == SQLITE_CONSTRAINT_PRIMARYKEY) {
            rc = gpufl__store_fail(GPUFL_EALREADY, "%s: the name is taken", what);
        } else {
            rc = fail_db(c->db, src, what);
        }
    }
    return write_end(s, c, rc);
}

typedef struct {
    int64_t workspace_id, now;
    const char *name, *text;
    int role;
    const uint8_t *hash;
} insert_args_t;

static void bind_workspace(sqlite3_stmt *st, const void *arg) {
    const insert_args_t *a = arg;
    sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, a->now);
}

static int sqlite_workspace_create(gpufl__store_t *s, int64_t *out_id, const char *name) {
    if (!s || !out_id || !name || !*name)
        return gpufl__store_fail(GPUFL_EINVAL, "store: a workspace needs a name");
    insert_args_t a = {.name = name, .now = gpufl__store_now()};
    return insert_one(s, "INSERT INTO workspaces (name, created_at) VALUES (?, ?)", bind_workspace,
                      &a, "workspace create", out_id);
}

/* One row's first column as an integer: 0, or GPUFL_ENOTFOUND when there is no row. */
static int select_int(gpufl__store_t *s, const char *sql, const char *text, int64_t *out,
                      const char *what) {
    conn_t *c;
    int rc = acquire(s, &c);
    if (rc) return rc;
    sqlite3_stmt *st;
    rc = prepare(c, sql, &st);
    if (!rc) {
        sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        int src = sqlite3_step(st);
        if (src == SQLITE_ROW)
            *out = sqlite3_column_int64(st, 0);
        else if (src == SQLITE_DONE)
            rc = gpufl__store_fail(GPUFL_ENOTFOUND, "%s '%s' not found", what, text);
        else
            rc = fail_db(c->db, src, what);
        sqlite3_reset(st);
    }
    release(s, c);
    return rc;
}

static int sqlite_workspace_find(gpufl__store_t *s, int64_t *out_id, const char *name) {
    if (!s || !out_id || !name) return gpufl__store_fail(GPUFL_EINVAL, "store: no workspace name");
    return select_int(s, "SELECT id FROM workspaces WHERE name = ?", name, out_id, "workspace");
}

static void bind_key(sqlite3_stmt *st, const void *arg) {
    const insert_args_t *a = arg;
    sqlite3_bind_int64(st, 1, a->workspace_id);
    sqlite3_bind_text(st, 2, a->name, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, a->hash, 32, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, a->role);
    sqlite3_bind_int64(st, 5, a->now);
}

static int sqlite_key_create(gpufl__store_t *s, int64_t *out_id, int64_t workspace_id,
                             gpufl__role_t role, const char *prefix, const uint8_t hash[32]) {
    if (!s || !out_id || !prefix || !*prefix || !hash)
        return gpufl__store_fail(GPUFL_EINVAL, "store: a key needs a prefix and a hash");
    if (role < GPUFL__ROLE_INGEST || role > GPUFL__ROLE_ADMIN)
        return gpufl__store_fail(GPUFL_EINVAL, "store: unknown key role %d", (int)role);
    insert_args_t a = {.workspace_id = workspace_id,
                       .name = prefix,
                       .hash = hash,
                       .role = (int)role,
                       .now = gpufl__store_now()};
    return insert_one(s,
                      "INSERT INTO api_keys (workspace_id, prefix, hash, role, created_at)"
                      " VALUES (?, ?, ?, ?, ?)",
                      bind_key, &a, "key create", out_id);
}

static int sqlite_key_find(gpufl__store_t *s, gpufl__key_row_t *out, const char *prefix) {
    if (!s || !out || !prefix) return gpufl__store_fail(GPUFL_EINVAL, "store: no key prefix");
    conn_t *c;
    int rc = acquire(s, &c);
    if (rc) return rc;
    sqlite3_stmt *st;
    rc = prepare(c,
                 "SELECT id, workspace_id, role, hash, revoked_at IS NOT NULL"
                 " FROM api_keys WHERE prefix = ?",
                 &st);
    if (!rc) {
        sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
        int src = sqlite3_step(st);
        if (src == SQLITE_ROW && sqlite3_column_bytes(st, 3) == 32) {
            memset(out, 0, sizeof *out);
            out->id = sqlite3_column_int64(st, 0);
            out->workspace_id = sqlite3_column_int64(st, 1);
            out->role = (gpufl__role_t)sqlite3_column_int(st, 2);
            memcpy(out->hash, sqlite3_column_blob(st, 3), 32);
            out->revoked = sqlite3_column_int(st, 4);
        } else if (src == SQLITE_DONE) {
            rc = gpufl__store_fail(GPUFL_ENOTFOUND, "no key with that prefix");
        } else {
            rc = src == SQLITE_ROW ? gpufl__store_fail(GPUFL_EIO, "store: a key's hash is damaged")
                                   : fail_db(c->db, src, "key lookup");
        }
        sqlite3_reset(st);
    }
    release(s, c);
    return rc;
}

static int sqlite_key_revoke(gpufl__store_t *s, int64_t workspace_id, const char *prefix) {
    if (!s || !prefix) return gpufl__store_fail(GPUFL_EINVAL, "store: no key prefix");
    conn_t *c;
    int rc = write_begin(s, &c);
    if (rc) return rc;
    sqlite3_stmt *st;
    rc = prepare(c,
                 "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?)"
                 " WHERE workspace_id = ? AND prefix = ?",
                 &st);
    if (!rc) {
        sqlite3_bind_int64(st, 1, gpufl__store_now());
        sqlite3_bind_int64(st, 2, workspace_id);
        sqlite3_bind_text(st, 3, prefix, -1, SQLITE_STATIC);
        rc = step_done(c, st, "key revoke");
        if (!rc && sqlite3_changes(c->db) == 0)
            rc = gpufl__store_fail(GPUFL_ENOTFOUND, "no key with that prefix in this workspace");
    }
    return write_end(s, c, rc);
}

static int sqlite_keys_touch(gpufl__store_t *s, const int64_t *ids, const int64_t *unix_s,
                             size_t n) {
    if (!s || (n && (!ids || !unix_s)))
        return gpufl__store_fail(GPUFL_EINVAL, "store: keys_touch without ids or times");
    if (n == 0) return 0;
    conn_t *c;
    int rc = write_begin(s, &c);
    if (rc) return rc;
    sqlite3_stmt *st;
    rc = prepare(c,
                 "UPDATE api_keys SET last_used_at = MAX(COALESCE(last_used_at, 0), ?)"
                 " WHERE id = ?",
                 &st);
    for (size_t i = 0; i < n && !rc; i++) {
        sqlite3_bind_int64(st, 1, unix_s[i]);
        sqlite3_bind_int64(st, 2, ids[i]);
        rc = step_done(c, st, "key touch");
    }
    return write_end(s, c, rc);
}

static void bind_user(sqlite3_stmt *st, const void *arg) {
    const insert_args_t *a = arg;
    sqlite3_bind_int64(st, 1, a->workspace_id);
    sqlite3_bind_text(st, 2, a->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, a->text, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, a->now);
}

static int sqlite_user_create(gpufl__store_t *s, int64_t *out_id, int64_t workspace_id,
                              const char *name, const char *password_hash) {
    if (!s || !out_id || !name || !*name || !password_hash || !*password_hash)
        return gpufl__store_fail(GPUFL_EINVAL, "store: a user needs a name and a password hash");
    insert_args_t a = {.workspace_id = workspace_id,
                       .name = name,
                       .text = password_hash,
                       .now = gpufl__store_now()};
    return insert_one(s,
                      "INSERT INTO users (workspace_id, name, password_hash, created_at)"
                      " VALUES (?, ?, ?, ?)",
                      bind_user, &a, "user create", out_id);
}

/* ---- query, retain ---------------------------------------------------------------------------- */

static int run_query(conn_t *c, sqlite3_stmt *st, gpufl__row_cb cb, void *arg) {
    int n = sqlite3_column_count(st);
    if (n > QUERY_MAX_COLUMNS)
        return gpufl__store_fail(GPUFL_EINVAL, "store: a query of %d columns", n);
    const char **vals = calloc((size_t)(n ? n : 1) * 2, sizeof *vals);
    if (!vals) return gpufl__store_fail(GPUFL_ENOMEM, "store: no memory for a query's row");
    const char **names = vals + n;
    for (int i = 0; i < n; i++) names[i] = sqlite3_column_name(st, i);
    int rc = 0, src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < n; i++) vals[i] = (const char *)sqlite3_column_text(st, i);
        rc = cb ? cb(arg, n, vals, names) : 0;
        if (rc) break;
    }
    free(vals);
    if (!rc && src != SQLITE_DONE) rc = fail_db(c->db, src, sqlite3_sql(st));
    sqlite3_reset(st);
    return rc;
}

static int sqlite_query(gpufl__store_t *s, const char *sql, const char *const *params,
                        size_t n_params, gpufl__row_cb cb, void *arg) {
    if (!s || !sql || (n_params && !params))
        return gpufl__store_fail(GPUFL_EINVAL, "store: query without SQL or parameters");
    conn_t *c;
    int rc = acquire(s, &c);
    if (rc) return rc;
    sqlite3_stmt *st;
    rc = prepare(c, sql, &st);
    if (!rc && (size_t)sqlite3_bind_parameter_count(st) != n_params)
        rc = gpufl__store_fail(GPUFL_EINVAL, "store: the query takes %d parameters, %zu given: %s",
                               sqlite3_bind_parameter_count(st), n_params, sql);
    if (rc) {
        release(s, c);
        return rc;
    }
    for (size_t i = 0; i < n_params; i++) {
        if (params[i])
            sqlite3_bind_text(st, (int)i + 1, params[i], -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, (int)i + 1);
    }
    int writes = !sqlite3_stmt_readonly(st);
    if (writes) pthread_mutex_lock(&s->write_mu);
    rc = run_query(c, st, cb, arg);
    if (writes) pthread_mutex_unlock(&s->write_mu);
    sqlite3_clear_bindings(st);
    release(s, c);
    return rc;
}

/* Row DELETE by day (one file has no partitions to drop), then the windows and sessions left
 * empty, in one transaction. */
static int sqlite_retain(gpufl__store_t *s, int days) {
    if (!s || days < 0)
        return gpufl__store_fail(GPUFL_EINVAL, "store: retain needs days >= 0 (got %d)", days);
    int64_t cutoff = gpufl__store_now() / 86400 - days;
    conn_t *c;
    int rc = write_begin(s, &c);
    if (rc) return rc;
    char sql[256];
    for (size_t i = 0; !rc && i < gpufl__store_n_tables; i++) {
        if (gpufl__store_table_first(i) != i) continue;
        snprintf(sql, sizeof sql, "DELETE FROM \"%s\" WHERE day < %lld",
                 gpufl__store_tables[i]->name, (long long)cutoff);
        rc = exec(c, sql);
    }
    snprintf(sql, sizeof sql,
             "DELETE FROM lines WHERE day < %lld; DELETE FROM windows WHERE day < %lld;"
             "DELETE FROM gpu_rollup WHERE day < %lld;",
             (long long)cutoff, (long long)cutoff, (long long)cutoff);
    if (!rc) rc = exec(c, sql);
    if (!rc)
        rc = exec(c, "DELETE FROM sessions WHERE NOT EXISTS (SELECT 1 FROM windows w"
                     " WHERE w.workspace_id = sessions.workspace_id"
                     " AND w.session_id = sessions.session_id)");
    return write_end(s, c, rc);
}

const gpufl__store_ops_t gpufl__store_sqlite_ops = {
    .scheme = "sqlite",
    .open = sqlite_open,
    .close = sqlite_close,
    .window_put = sqlite_window_put,
    .workspace_create = sqlite_workspace_create,
    .workspace_find = sqlite_workspace_find,
    .key_create = sqlite_key_create,
    .key_find = sqlite_key_find,
    .key_revoke = sqlite_key_revoke,
    .keys_touch = sqlite_keys_touch,
    .user_create = sqlite_user_create,
    .query = sqlite_query,
    .retain = sqlite_retain,
};
