// SPDX-License-Identifier: Apache-2.0
/*
 * store_pg.c - gpufl-server's PostgreSQL engine (libpq), for a fleet of servers sharing one
 * database: a bounded connection pool, versioned migrations, lines and typed rows in day
 * partitions loaded with COPY, exactly-once windows decided by the database's unique
 * constraints, and retention by dropping whole day partitions.
 */
#include "store.h"

#include <gpufl/gpufl.h>

#include <libpq-fe.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POOL_DEFAULT 8                /* connections per process; GPUFL_SERVER_PG_POOL changes it */
#define POOL_MAX     64               /* what GPUFL_SERVER_PG_POOL may ask for */
#define POOL_WAIT_MS 10000            /* a caller waits this long for a free connection; */
                                      /* GPUFL_SERVER_PG_POOL_WAIT_MS changes it */
#define DAYS_CACHED      64           /* days whose partitions this process knows exist */
#define COPY_FLUSH_BYTES (256 * 1024) /* the COPY buffer's cap: sent to the server when full */
#define WINDOW_MAX_DAYS  64           /* distinct days one window may touch */
#define DAY_MAX          2932896      /* 9999-12-31: a row day past it is a bad time, not a date */
#define SQL_MAX_PARAMS   1024

/* The schema's versions, applied in order under an advisory lock so that servers starting
 * together agree. Typed tables are not here: they follow store_tables.c (created and grown at
 * each open), as the SQLite engine does. */
static const char *const migrations[] = {
    /* 1: the bookkeeping tables. windows is NOT partitioned: a unique index on a partitioned
     * table must contain the partition key, and a window's identity must be unique whatever
     * day it arrives on. It holds one small row per window. lines is partitioned by day. */
    "CREATE TABLE workspaces ("
    " id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at BIGINT NOT NULL);"
    "CREATE TABLE api_keys ("
    " id BIGSERIAL PRIMARY KEY, workspace_id BIGINT NOT NULL REFERENCES workspaces(id),"
    " prefix TEXT NOT NULL UNIQUE, hash BYTEA NOT NULL, role INTEGER NOT NULL,"
    " created_at BIGINT NOT NULL, revoked_at BIGINT, last_used_at BIGINT);"
    "CREATE INDEX api_keys_by_workspace ON api_keys (workspace_id);"
    "CREATE TABLE users ("
    " id BIGSERIAL PRIMARY KEY, workspace_id BIGINT NOT NULL REFERENCES workspaces(id),"
    " name TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL, created_at BIGINT NOT NULL);"
    "CREATE TABLE sessions ("
    " workspace_id BIGINT NOT NULL, session_id TEXT NOT NULL,"
    " app_name TEXT, hostname TEXT, pid BIGINT, job_id TEXT, engine TEXT, gpufl_version TEXT,"
    " epoch_unix_us BIGINT, first_seen BIGINT NOT NULL, last_window_at BIGINT NOT NULL,"
    " end_ns BIGINT, state TEXT NOT NULL DEFAULT 'live', completed_at BIGINT,"
    " PRIMARY KEY (workspace_id, session_id));"
    "CREATE INDEX sessions_by_time ON sessions (workspace_id, epoch_unix_us);"
    "CREATE INDEX sessions_by_app ON sessions (workspace_id, app_name);"
    "CREATE INDEX sessions_by_host ON sessions (workspace_id, hostname);"
    "CREATE INDEX sessions_by_job ON sessions (workspace_id, job_id);"
    "CREATE TABLE windows ("
    " workspace_id BIGINT NOT NULL, session_id TEXT NOT NULL, channel TEXT NOT NULL,"
    " sequence BIGINT NOT NULL, window_id TEXT NOT NULL, sha256 BYTEA NOT NULL,"
    " rows BIGINT NOT NULL, bytes BIGINT NOT NULL, wire_version INTEGER NOT NULL,"
    " received_at BIGINT NOT NULL, day INTEGER NOT NULL,"
    " PRIMARY KEY (workspace_id, session_id, channel, sequence),"
    " UNIQUE (workspace_id, window_id));"
    "CREATE INDEX windows_by_day ON windows (day);"
    /* The lines' uniqueness is the window's: an index, not a key, serves reading them back. */
    "CREATE TABLE lines ("
    " workspace_id BIGINT NOT NULL, session_id TEXT NOT NULL, channel TEXT NOT NULL,"
    " sequence BIGINT NOT NULL, line_no INTEGER NOT NULL, type TEXT, rows BIGINT NOT NULL,"
    " body TEXT NOT NULL, day INTEGER NOT NULL) PARTITION BY RANGE (day);"
    "CREATE INDEX lines_by_session ON lines (workspace_id, session_id, channel, sequence,"
    " line_no);",
    /* 2: each session's report, insights and kernels per name as gpufl-server last built them
     * (report.c), and the windows they were built from (fewer than stored: stale). Small, one
     * row a session: not partitioned. */
    "CREATE TABLE session_reports ("
    " workspace_id BIGINT NOT NULL, session_id TEXT NOT NULL, built_at BIGINT NOT NULL,"
    " windows BIGINT NOT NULL, report_text TEXT NOT NULL, report_json TEXT NOT NULL,"
    " report_html TEXT NOT NULL, insights_text TEXT NOT NULL, insights_json TEXT NOT NULL,"
    " kernels_json TEXT NOT NULL, facts_json TEXT NOT NULL,"
    " PRIMARY KEY (workspace_id, session_id));",
    /* 3: the dashboard's login sessions (auth.c): the cookie only as its BLAKE2b hash (hex). */
    "CREATE TABLE login_sessions ("
    " id BIGSERIAL PRIMARY KEY, workspace_id BIGINT NOT NULL REFERENCES workspaces(id),"
    " user_id BIGINT NOT NULL REFERENCES users(id), token_hash TEXT NOT NULL UNIQUE,"
    " csrf TEXT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL);"
    "CREATE INDEX login_sessions_by_expiry ON login_sessions (expires_at);",
    /* 4: windows in slices (store_slice.c): a window's bytes stored so far (bytes), whether it
     * is sealed, the running SHA-256 of an open one, the crc32 of its bytes, the last slice
     * and how many came. The windows stored before were whole and sealed. */
    "ALTER TABLE windows ADD COLUMN final INTEGER NOT NULL DEFAULT 1,"
    " ADD COLUMN sha256_state BYTEA, ADD COLUMN crc32 BIGINT,"
    " ADD COLUMN last_offset BIGINT NOT NULL DEFAULT 0, ADD COLUMN last_sha256 BYTEA,"
    " ADD COLUMN last_prefix_crc32 BIGINT NOT NULL DEFAULT 0,"
    " ADD COLUMN slices BIGINT NOT NULL DEFAULT 1;",
    /* 5: the dashboard: a report's top insight severity (1 LOW .. 3 HIGH, NULL: no insight)
     * and insight count, so the sessions list filters on them in SQL; a key's label. */
    "ALTER TABLE session_reports ADD COLUMN insights_top INTEGER,"
    " ADD COLUMN insights_count INTEGER;"
    "ALTER TABLE api_keys ADD COLUMN label TEXT;",
    /* 6: gpu_sample rolled up per device into wall-clock slots (store_rollup.c), the fleet
     * heatmap's source. Small (a row per device and slot): not partitioned; retention deletes
     * by day. Filled for the rows stored before once the typed tables exist. */
    "CREATE TABLE gpu_rollup ("
    " workspace_id BIGINT NOT NULL, session_id TEXT NOT NULL, level_s INTEGER NOT NULL,"
    " slot BIGINT NOT NULL, device BIGINT NOT NULL, day INTEGER NOT NULL,"
    " samples BIGINT NOT NULL, util_sum DOUBLE PRECISION, util_n BIGINT NOT NULL,"
    " sm_sum DOUBLE PRECISION, sm_n BIGINT NOT NULL, last_ts_ns BIGINT NOT NULL,"
    " PRIMARY KEY (workspace_id, level_s, slot, session_id, device));"
    "CREATE INDEX gpu_rollup_by_day ON gpu_rollup (day);",
};
#define ROLLUP_MIGRATION 6
#define N_MIGRATIONS (sizeof migrations / sizeof migrations[0])
/* The advisory lock key of migrations: "gpfl" and 1 (0x6770666c00000001). */
#define MIGRATION_LOCK "7453569997340672001"

struct gpufl__store {
    char *url;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a connection came back */
    size_t cap;
    long wait_ms;
    PGconn **conns; /* cap slots: NULL (not opened), idle or busy */
    unsigned char *busy;
    int64_t days[DAYS_CACHED]; /* days whose partitions exist; -1 empty */
    size_t days_next;
};

/* ---- errors -------------------------------------------------------------------------- */

/* Whether a failure means the database cannot be reached (503) rather than refused the
 * statement: a broken connection, a server shutting down or starting, too many clients. */
static int is_unavailable(PGconn *c, const char *sqlstate) {
    if (!c || PQstatus(c) != CONNECTION_OK) return 1;
    if (!sqlstate) return 0;
    return strncmp(sqlstate, "08", 2) == 0 || strcmp(sqlstate, "57P01") == 0 ||
           strcmp(sqlstate, "57P02") == 0 || strcmp(sqlstate, "57P03") == 0 ||
           strcmp(sqlstate, "53300") == 0;
}

static const char *sqlstate_of(const PGresult *r) {
    return r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
}

/* The SQLSTATE of the calling thread's last failure ("" when it had none): a caller that can
 * recover from one error (a partition dropped meanwhile) asks it rather than the message. */
static _Thread_local char last_sqlstate[8];

/* The engine's own message as gpufl_last_error(), and the code the server maps to an answer. */
static int pg_fail(PGconn *c, const PGresult *r, const char *what) {
    const char *state = sqlstate_of(r);
    snprintf(last_sqlstate, sizeof last_sqlstate, "%s", state ? state : "");
    const char *msg = r ? PQresultErrorMessage(r) : NULL;
    if (!msg || !*msg) msg = c ? PQerrorMessage(c) : "no connection";
    char clean[512];
    snprintf(clean, sizeof clean, "%s", msg);
    size_t n = strlen(clean);
    while (n && (clean[n - 1] == '\n' || clean[n - 1] == ' ')) clean[--n] = '\0';
    int code = GPUFL_EIO;
    if (is_unavailable(c, state))
        code = GPUFL_EUNAVAILABLE;
    else if (state && strcmp(state, "23505") == 0)
        code = GPUFL_EALREADY;
    return gpufl__store_fail(code, "postgresql: %s: %s%s%s%s", what, clean, state ? " [" : "",
                             state ? state : "", state ? "]" : "");
}

/* Runs one statement that returns no rows; 0 or pg_fail's code. */
static int exec_ok(PGconn *c, const char *sql, const char *what) {
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    int rc = (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) ? 0 : pg_fail(c, r, what);
    PQclear(r);
    return rc;
}

/* ---- the pool ------------------------------------------------------------------------ */

static void ignore_notice(void *arg, const char *message) { (void)arg, (void)message; }

static PGconn *connect_one(const char *url) {
    /* application_name and connect_timeout come first so that the URL's own win: libpq lets
     * later parameters override earlier ones, and the URL is expanded where it stands. */
    const char *keys[] = {"application_name", "connect_timeout", "dbname", NULL};
    const char *vals[] = {"gpufl-server", "10", url, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (c && PQstatus(c) == CONNECTION_OK) {
        /* Rows keep their text as written; timestamps are integers, so no time zone matters. */
        PQsetClientEncoding(c, "UTF8");
        /* libpq prints the server's notices ("already exists, skipping") on stderr by default;
         * the server logs through its own logger, and errors come back as results. */
        PQsetNoticeProcessor(c, ignore_notice, NULL);
    }
    return c;
}

/* A connection for the caller's exclusive use: an idle one, a new one while the pool has room,
 * or the next one given back within POOL_WAIT_S. A connection found broken is reset first. */
static int pool_get(gpufl__store_t *s, PGconn **out) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += s->wait_ms / 1000;
    until.tv_nsec += (s->wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    for (;;) {
        size_t empty = s->cap;
        for (size_t i = 0; i < s->cap; i++) {
            if (s->conns[i] && !s->busy[i]) {
                s->busy[i] = 1;
                PGconn *c = s->conns[i];
                pthread_mutex_unlock(&s->mu);
                if (PQstatus(c) != CONNECTION_OK) PQreset(c);
                if (PQstatus(c) != CONNECTION_OK) {
                    int rc = pg_fail(c, NULL, "reconnecting");
                    pthread_mutex_lock(&s->mu);
                    s->busy[i] = 0;
                    pthread_cond_signal(&s->cv);
                    pthread_mutex_unlock(&s->mu);
                    return rc;
                }
                *out = c;
                return 0;
            }
            /* a slot being connected is busy but still NULL: not free */
            if (!s->conns[i] && !s->busy[i] && empty == s->cap) empty = i;
        }
        if (empty < s->cap) {
            s->busy[empty] = 1; /* reserved while connecting, outside the lock */
            s->conns[empty] = NULL;
            pthread_mutex_unlock(&s->mu);
            PGconn *c = connect_one(s->url);
            if (!c || PQstatus(c) != CONNECTION_OK) {
                int rc = c ? pg_fail(c, NULL, "connecting")
                           : gpufl__store_fail(GPUFL_ENOMEM, "postgresql: no memory to connect");
                PQfinish(c);
                pthread_mutex_lock(&s->mu);
                s->busy[empty] = 0;
                pthread_cond_signal(&s->cv);
                pthread_mutex_unlock(&s->mu);
                return rc;
            }
            pthread_mutex_lock(&s->mu);
            s->conns[empty] = c;
            pthread_mutex_unlock(&s->mu);
            *out = c;
            return 0;
        }
        if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&s->mu);
            return gpufl__store_fail(GPUFL_EUNAVAILABLE,
                                     "postgresql: all %zu connections stayed busy for %ld ms",
                                     s->cap, s->wait_ms);
        }
    }
}

/* Gives a connection back. One left inside a transaction (an error path) is rolled back; one
 * that is broken is closed so that its slot connects afresh. */
static void pool_put(gpufl__store_t *s, PGconn *c) {
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE) {
        PGresult *r = PQexec(c, "ROLLBACK");
        PQclear(r);
    }
    int broken = PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->cap; i++) {
        if (s->conns[i] != c) continue;
        if (broken) s->conns[i] = NULL;
        s->busy[i] = 0;
        break;
    }
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (broken) PQfinish(c);
}

/* ---- schema -------------------------------------------------------------------------- */

/* The distinct typed tables (entries sharing a name share one definition). */
static int table_is_first(size_t i) { return gpufl__store_table_first(i) == i; }

/* Appends to a bounded buffer; 0, or GPUFL_ENOMEM when it would pass the cap. */
typedef struct {
    char *p;
    size_t len, cap, max;
} buf_t;

static int buf_add(buf_t *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        if (cap > b->max) cap = b->max;
        if (b->len + n + 1 > cap)
            return gpufl__store_fail(GPUFL_ENOMEM, "postgresql: statement over %zu bytes", b->max);
        char *p = realloc(b->p, cap);
        if (!p) return gpufl__store_fail(GPUFL_ENOMEM, "postgresql: out of memory");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

static int buf_str(buf_t *b, const char *s) { return buf_add(b, s, strlen(s)); }

static int buf_fmt(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int buf_fmt(buf_t *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return gpufl__store_fail(GPUFL_EINVAL, "postgresql: a name is too long");
    return buf_add(b, tmp, (size_t)n);
}

static const char *sql_type(gpufl__col_type_t t) {
    switch (t) {
    case GPUFL__COL_INT: return "BIGINT";
    case GPUFL__COL_REAL: return "DOUBLE PRECISION";
    default: return "TEXT";
    }
}

/* Whether the schema holds relation rel (a table or an index) and, when col is given, that
 * column of it: r lists (relation, column) pairs of the schema. */
static int catalog_has(PGresult *r, const char *rel, const char *col) {
    for (int i = 0; i < PQntuples(r); i++)
        if (strcmp(PQgetvalue(r, i, 0), rel) == 0 &&
            (!col || (!PQgetisnull(r, i, 1) && strcmp(PQgetvalue(r, i, 1), col) == 0)))
            return 1;
    return 0;
}

/* Index names follow their columns, as the SQLite engine names them: "activity_by" plus the
 * columns without spaces, commas made '_'. */
static void index_name(char *out, size_t cap, const char *table, const char *columns) {
    size_t n = (size_t)snprintf(out, cap, "%s_by", table);
    for (const char *p = columns; *p && n + 1 < cap; p++)
        if (*p != ' ') out[n++] = *p == ',' ? '_' : *p;
    out[n < cap ? n : cap - 1] = '\0';
}

/* Creates each typed table (partitioned by day), adds the columns store_tables.c gained since,
 * and its indexes; on the parent, so every partition has them, and no index on day (the
 * partitions are the days). Only what the catalog lacks: ALTER TABLE and CREATE INDEX lock the
 * table against ingest even when they end up doing nothing. */
static int typed_tables_sync(PGconn *c) {
    PGresult *cat = PQexec(c, "SELECT c.relname, a.attname FROM pg_class c"
                              " JOIN pg_namespace n ON n.oid = c.relnamespace"
                              " LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0"
                              " AND NOT a.attisdropped WHERE n.nspname = current_schema()");
    if (PQresultStatus(cat) != PGRES_TUPLES_OK) {
        int rc = pg_fail(c, cat, "reading the catalog");
        PQclear(cat);
        return rc;
    }
    buf_t b = {0, 0, 0, 1 << 20};
    int rc = 0;
    for (size_t i = 0; i < gpufl__store_n_tables && rc == 0; i++) {
        if (!table_is_first(i)) continue;
        const gpufl__table_t *t = gpufl__store_tables[i];
        int exists = catalog_has(cat, t->name, NULL);
        if (!exists)
            rc = buf_fmt(&b,
                         "CREATE TABLE \"%s\" (workspace_id BIGINT NOT NULL,"
                         " session_id TEXT NOT NULL, day INTEGER NOT NULL%s",
                         t->name, t->kind ? ", kind TEXT NOT NULL" : "");
        for (size_t k = 0; k < t->n_columns && rc == 0; k++) {
            const gpufl__column_t *col = &t->columns[k];
            if (!exists)
                rc = buf_fmt(&b, ", \"%s\" %s", col->name, sql_type(col->type));
            else if (!catalog_has(cat, t->name, col->name))
                rc = buf_fmt(&b, "ALTER TABLE \"%s\" ADD COLUMN \"%s\" %s;", t->name, col->name,
                             sql_type(col->type));
        }
        if (!exists && rc == 0) rc = buf_str(&b, ") PARTITION BY RANGE (day);");
        for (size_t k = 0; t->indexes && t->indexes[k] && rc == 0; k++) {
            char name[128];
            index_name(name, sizeof name, t->name, t->indexes[k]);
            if (!catalog_has(cat, name, NULL))
                rc = buf_fmt(&b, "CREATE INDEX \"%s\" ON \"%s\" (%s);", name, t->name,
                             t->indexes[k]);
        }
    }
    PQclear(cat);
    if (rc == 0 && b.p) rc = exec_ok(c, b.p, "creating the typed tables");
    free(b.p);
    return rc;
}

static int migrate(PGconn *c) {
    /* One server at a time: the others wait here and then find the versions applied. */
    int rc = exec_ok(c,
                     "SELECT pg_advisory_lock(" MIGRATION_LOCK ");"
                     "CREATE TABLE IF NOT EXISTS schema_migrations ("
                     " version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)",
                     "preparing migrations");
    if (rc) return rc;
    PGresult *r = PQexec(c, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = pg_fail(c, r, "reading schema_migrations");
        PQclear(r);
        goto unlock;
    }
    long have = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    if (have > (long)N_MIGRATIONS) {
        rc = gpufl__store_fail(GPUFL_ENOTSUP,
                               "postgresql: the database's schema is version %ld, newer than "
                               "this gpufl-server's %zu: upgrade the server",
                               have, N_MIGRATIONS);
        goto unlock;
    }
    for (size_t v = (size_t)have + 1; v <= N_MIGRATIONS && rc == 0; v++) {
        char done[160];
        snprintf(done, sizeof done,
                 "INSERT INTO schema_migrations VALUES (%zu, %" PRId64 ");COMMIT", v,
                 gpufl__store_now());
        rc = exec_ok(c, "BEGIN", "migration");
        if (rc == 0) rc = exec_ok(c, migrations[v - 1], "migration");
        if (rc == 0) rc = exec_ok(c, done, "migration");
        if (rc) exec_ok(c, "ROLLBACK", "migration");
    }
    if (rc == 0) rc = typed_tables_sync(c);
    if (rc == 0 && have < ROLLUP_MIGRATION) {
        rc = exec_ok(c, "BEGIN", "migration");
        if (rc == 0) rc = exec_ok(c, gpufl__rollup_backfill_sql, "filling gpu_rollup");
        rc = exec_ok(c, rc == 0 ? "COMMIT" : "ROLLBACK", "migration") || rc;
    }
unlock:;
    PGresult *u = PQexec(c, "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")");
    PQclear(u);
    return rc;
}

/* ---- open / close -------------------------------------------------------------------- */

static void pg_close(gpufl__store_t *s) {
    if (!s) return;
    for (size_t i = 0; i < s->cap; i++) PQfinish(s->conns[i]);
    free(s->conns);
    free(s->busy);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->url);
    free(s);
}

/* A positive number from the environment, def when unset, -1 when not in [1, max]. */
static long env_number(const char *name, long def, long max) {
    const char *e = getenv(name);
    if (!e || !*e) return def;
    char *end;
    long n = strtol(e, &end, 10);
    return *end || n < 1 || n > max ? -1 : n;
}

static int pg_open(gpufl__store_t **out, const char *url) {
    if (!out || !url) return gpufl__store_fail(GPUFL_EINVAL, "postgresql: no URL");
    *out = NULL;
    long cap = env_number("GPUFL_SERVER_PG_POOL", POOL_DEFAULT, POOL_MAX);
    long wait_ms = env_number("GPUFL_SERVER_PG_POOL_WAIT_MS", POOL_WAIT_MS, 3600L * 1000);
    if (cap < 0)
        return gpufl__store_fail(GPUFL_EINVAL, "GPUFL_SERVER_PG_POOL='%s': expected 1 to %d",
                                 getenv("GPUFL_SERVER_PG_POOL"), POOL_MAX);
    if (wait_ms < 0)
        return gpufl__store_fail(GPUFL_EINVAL,
                                 "GPUFL_SERVER_PG_POOL_WAIT_MS='%s': expected 1 to 3600000",
                                 getenv("GPUFL_SERVER_PG_POOL_WAIT_MS"));
    gpufl__store_t *s = calloc(1, sizeof *s);
    if (!s) return gpufl__store_fail(GPUFL_ENOMEM, "postgresql: out of memory");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->cap = (size_t)cap;
    s->wait_ms = wait_ms;
    s->url = strdup(url);
    s->conns = calloc(s->cap, sizeof *s->conns);
    s->busy = calloc(s->cap, 1);
    for (size_t i = 0; i < DAYS_CACHED; i++) s->days[i] = -1;
    if (!s->url || !s->conns || !s->busy) {
        pg_close(s);
        return gpufl__store_fail(GPUFL_ENOMEM, "postgresql: out of memory");
    }
    PGconn *c;
    int rc = pool_get(s, &c);
    if (rc == 0) {
        rc = migrate(c);
        pool_put(s, c);
    }
    if (rc) {
        pg_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* ---- partitions ---------------------------------------------------------------------- */

static int day_cached(gpufl__store_t *s, int64_t day) {
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < DAYS_CACHED && !found; i++) found = s->days[i] == day;
    pthread_mutex_unlock(&s->mu);
    return found;
}

static void day_remember(gpufl__store_t *s, int64_t day) {
    pthread_mutex_lock(&s->mu);
    s->days[s->days_next] = day;
    s->days_next = (s->days_next + 1) % DAYS_CACHED;
    pthread_mutex_unlock(&s->mu);
}

/* Forgets the days before cutoff (INT64_MAX: all): their partitions were dropped, here or by
 * another server. */
static void days_forget(gpufl__store_t *s, int64_t cutoff) {
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < DAYS_CACHED; i++)
        if (s->days[i] < cutoff) s->days[i] = -1;
    pthread_mutex_unlock(&s->mu);
}

/* The partitioned tables: lines, then each distinct typed table; NULL past the end. */
static const char *partitioned_name(size_t i) {
    if (i == 0) return "lines";
    for (size_t k = 0; k < gpufl__store_n_tables; k++)
        if (table_is_first(k) && --i == 0) return gpufl__store_tables[k]->name;
    return NULL;
}

/* Creates the day's partition of every partitioned table, unless this process already knows
 * they exist. Another server may create them at the same moment: IF NOT EXISTS does not cover
 * that race (both pass the check, one fails on the catalog's unique index), so a duplicate
 * error means "made by the other" and the statement is tried again. */
static int partitions_ensure(gpufl__store_t *s, PGconn *c, int64_t day) {
    if (day_cached(s, day)) return 0;
    buf_t b = {0, 0, 0, 1 << 20};
    int rc = 0;
    const char *name;
    for (size_t i = 0; (name = partitioned_name(i)) != NULL && rc == 0; i++)
        rc = buf_fmt(&b,
                     "CREATE TABLE IF NOT EXISTS \"%s_d%" PRId64 "\" PARTITION OF \"%s\""
                     " FOR VALUES FROM (%" PRId64 ") TO (%" PRId64 ");",
                     name, day, name, day, day + 1);
    for (int attempt = 0; rc == 0; attempt++) {
        PGresult *r = PQexec(c, b.p);
        if (PQresultStatus(r) == PGRES_COMMAND_OK) {
            PQclear(r);
            day_remember(s, day);
            break;
        }
        const char *state = sqlstate_of(r);
        int raced = state && (strcmp(state, "42P07") == 0 || strcmp(state, "23505") == 0);
        if (!raced || attempt == 3) rc = pg_fail(c, r, "creating a day's partitions");
        PQclear(r);
    }
    free(b.p);
    return rc;
}

/* ---- COPY ---------------------------------------------------------------------------- */

/* Rows go to the server in chunks of at most COPY_FLUSH_BYTES: a window of any size is sent
 * through this fixed buffer. */
typedef struct {
    PGconn *c;
    size_t len;
    int failed;
    char buf[COPY_FLUSH_BYTES];
} copy_t;

static int copy_flush(copy_t *k) {
    if (k->len && PQputCopyData(k->c, k->buf, (int)k->len) != 1) {
        k->failed = 1;
        return pg_fail(k->c, NULL, "sending COPY data");
    }
    k->len = 0;
    return 0;
}

static int copy_put(copy_t *k, const char *s, size_t n) {
    while (n) {
        if (k->len == sizeof k->buf) {
            int rc = copy_flush(k);
            if (rc) return rc;
        }
        size_t m = sizeof k->buf - k->len;
        if (m > n) m = n;
        memcpy(k->buf + k->len, s, m);
        k->len += m;
        s += m;
        n -= m;
    }
    return 0;
}

/* A text value in COPY's text format: backslash, tab, newline and carriage return escaped. A
 * NUL byte cannot be in a PostgreSQL text value at all. */
static int copy_text(copy_t *k, const char *s, size_t n) {
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        char esc = 0;
        switch (s[i]) {
        case '\\': esc = '\\'; break;
        case '\t': esc = 't'; break;
        case '\n': esc = 'n'; break;
        case '\r': esc = 'r'; break;
        case '\0':
            return gpufl__store_fail(GPUFL_EINVAL, "postgresql: a text value holds a NUL byte");
        default: continue;
        }
        char pair[2] = {'\\', esc};
        int rc = copy_put(k, s + run, i - run);
        if (rc == 0) rc = copy_put(k, pair, 2);
        if (rc) return rc;
        run = i + 1;
    }
    return copy_put(k, s + run, n - run);
}

static int copy_int(copy_t *k, int64_t v) {
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
    return copy_put(k, tmp, (size_t)n);
}

static int copy_cell(copy_t *k, const gpufl__cell_t *cell) {
    char tmp[32];
    switch (cell->kind) {
    case GPUFL__CELL_INT: return copy_int(k, cell->u.i);
    case GPUFL__CELL_REAL:
        if (isnan(cell->u.r)) return copy_put(k, "NaN", 3);
        if (isinf(cell->u.r))
            return cell->u.r > 0 ? copy_put(k, "Infinity", 8) : copy_put(k, "-Infinity", 9);
        return copy_put(k, tmp, (size_t)snprintf(tmp, sizeof tmp, "%.17g", cell->u.r));
    case GPUFL__CELL_TEXT: return copy_text(k, cell->u.t.s, cell->u.t.len);
    default: return copy_put(k, "\\N", 2);
    }
}

/* Ends the COPY: with an error message when a row could not be written (the server then
 * discards the whole COPY), and reads the server's verdict. */
static int copy_end(copy_t *k, int rc, const char *what) {
    if (rc == 0 && !k->failed) rc = copy_flush(k);
    if (PQputCopyEnd(k->c, rc ? "gpufl-server abandoned the COPY" : NULL) != 1 && rc == 0)
        rc = pg_fail(k->c, NULL, what);
    PGresult *r;
    while ((r = PQgetResult(k->c)) != NULL) {
        if (rc == 0 && PQresultStatus(r) != PGRES_COMMAND_OK) rc = pg_fail(k->c, r, what);
        PQclear(r);
    }
    return rc;
}

static int copy_begin(copy_t *k, PGconn *c, const char *sql, const char *what) {
    k->c = c;
    k->len = 0;
    k->failed = 0;
    PGresult *r = PQexec(c, sql);
    int rc = PQresultStatus(r) == PGRES_COPY_IN ? 0 : pg_fail(c, r, what);
    PQclear(r);
    return rc;
}

/* The columns every day-partitioned row starts with. */
static int copy_row_head(copy_t *k, const gpufl__window_t *w, int64_t day) {
    int rc = copy_int(k, w->workspace_id);
    if (rc == 0) rc = copy_put(k, "\t", 1);
    if (rc == 0) rc = copy_text(k, w->session_id, strlen(w->session_id));
    if (rc == 0) rc = copy_put(k, "\t", 1);
    if (rc == 0) rc = copy_int(k, day);
    return rc;
}

static int copy_lines(copy_t *k, PGconn *c, const gpufl__window_t *w, int64_t first_no,
                      int64_t day) {
    int rc = copy_begin(k, c,
                        "COPY lines (workspace_id, session_id, day, channel, sequence, line_no,"
                        " type, rows, body) FROM STDIN",
                        "storing the window's lines");
    if (rc) return rc;
    for (size_t i = 0; i < w->n_lines && rc == 0; i++) {
        const gpufl__line_t *l = &w->lines[i];
        rc = copy_row_head(k, w, day);
        if (rc == 0) rc = copy_put(k, "\t", 1);
        if (rc == 0) rc = copy_text(k, w->channel, strlen(w->channel));
        if (rc == 0) rc = copy_put(k, "\t", 1);
        if (rc == 0) rc = copy_int(k, w->sequence);
        if (rc == 0) rc = copy_put(k, "\t", 1);
        if (rc == 0) rc = copy_int(k, first_no + (int64_t)i);
        if (rc == 0) rc = copy_put(k, "\t", 1);
        if (rc == 0) rc = l->type ? copy_text(k, l->type, strlen(l->type)) : copy_put(k, "\\N", 2);
        if (rc == 0) rc = copy_put(k, "\t", 1);
        if (rc == 0) rc = copy_int(k, l->rows);
        if (rc == 0) rc = copy_put(k, "\t", 1);
        if (rc == 0) rc = copy_text(k, l->text ? l->text : "", l->len);
        if (rc == 0) rc = copy_put(k, "\n", 1);
    }
    return copy_end(k, rc, "storing the window's lines");
}

/* The days a window's typed rows may fall on: arrival (rows without a time, or of a session
 * whose epoch is unknown) and first..last, whose partitions were made before the transaction. */
typedef struct {
    int64_t arrival, first, last;
} day_range_t;

static int copy_table_begin(copy_t *k, PGconn *c, const gpufl__table_t *t) {
    buf_t sql = {0, 0, 0, 64 * 1024};
    int rc = buf_fmt(&sql, "COPY \"%s\" (workspace_id, session_id, day%s", t->name,
                     t->kind ? ", kind" : "");
    for (size_t j = 0; j < t->n_columns && rc == 0; j++)
        rc = buf_fmt(&sql, ", \"%s\"", t->columns[j].name);
    if (rc == 0) rc = buf_str(&sql, ") FROM STDIN");
    if (rc == 0) rc = copy_begin(k, c, sql.p, "storing typed rows");
    free(sql.p);
    return rc;
}

static int copy_rowset(copy_t *k, const gpufl__window_t *w, const gpufl__rowset_t *rs,
                       int64_t epoch_unix_us, const day_range_t *days) {
    const gpufl__table_t *t = rs->table;
    int ti = gpufl__store_table_time_index(t), rc = 0;
    for (size_t i = 0; i < rs->n_rows && rc == 0; i++) {
        const gpufl__cell_t *row = rs->cells + i * t->n_columns;
        int64_t day = gpufl__store_row_day(epoch_unix_us, ti >= 0 ? &row[ti] : NULL, days->arrival);
        if (day != days->arrival && (day < days->first || day > days->last))
            return gpufl__store_fail(
                GPUFL_EINVAL, "%s row %zu: its time is outside the window's time span", t->name, i);
        rc = copy_row_head(k, w, day);
        if (rc == 0 && t->kind) {
            rc = copy_put(k, "\t", 1);
            if (rc == 0) rc = copy_text(k, t->kind, strlen(t->kind));
        }
        for (size_t j = 0; j < t->n_columns && rc == 0; j++) {
            rc = copy_put(k, "\t", 1);
            if (rc == 0) rc = copy_cell(k, &row[j]);
        }
        if (rc == 0) rc = copy_put(k, "\n", 1);
    }
    return rc;
}

static int copy_table_end(copy_t *k, const gpufl__table_t *t, int rc) {
    char what[96];
    snprintf(what, sizeof what, "storing %s rows", t->name);
    return copy_end(k, rc, what);
}

/* The typed rows as the source builds them, one rowset at a time: consecutive rowsets of one
 * table (kernel, copy, memset and sync all fill activity) share one COPY, which ends when a
 * rowset of another table comes, so only the current rowset is ever held here. */
static int copy_rows(copy_t *k, PGconn *c, const gpufl__window_t *w, int64_t epoch_unix_us,
                     const day_range_t *days) {
    const gpufl__rows_source_t *src = &w->rows_source;
    if (!src->next) return 0;
    int rc = src->begin ? src->begin(src->arg) : 0;
    const gpufl__table_t *open = NULL; /* the table whose COPY is open */
    const gpufl__rowset_t *rs = NULL;
    while (rc == 0 && (rc = src->next(src->arg, &rs)) == 0 && rs) {
        if (!gpufl__store_table_known(rs->table)) {
            rc =
                gpufl__store_fail(GPUFL_EINVAL, "store: a rowset names no table of store_tables.c");
        } else if (rs->n_rows && !rs->cells) {
            rc = gpufl__store_fail(GPUFL_EINVAL, "store: a %s rowset has rows but no cells",
                                   rs->table->record_type);
        } else if (rs->n_rows) {
            if (open && strcmp(open->name, rs->table->name) != 0) {
                rc = copy_table_end(k, open, 0);
                open = NULL;
            }
            if (rc == 0 && !open && (rc = copy_table_begin(k, c, rs->table)) == 0) open = rs->table;
            if (rc == 0) rc = copy_rowset(k, w, rs, epoch_unix_us, days);
        }
    }
    if (open) {
        int end = copy_table_end(k, open, rc);
        if (rc == 0) rc = end;
    }
    return rc;
}

/* ---- a window ------------------------------------------------------------------------ */

/* Runs a statement with text parameters; *out holds its result (rows or none) on 0. */
static int exec_params(PGconn *c, PGresult **out, const char *sql, int n, const char *const *vals,
                       const char *what) {
    PGresult *r = PQexecParams(c, sql, n, NULL, vals, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        int rc = pg_fail(c, r, what);
        PQclear(r);
        *out = NULL;
        return rc;
    }
    *out = r;
    return 0;
}

/* bytea as a text parameter: \\x and two hex digits a byte (out holds 2n + 3). */
static void hex_of(char *out, const uint8_t *h, size_t n) {
    static const char digits[] = "0123456789abcdef";
    out[0] = '\\';
    out[1] = 'x';
    for (size_t i = 0; i < n; i++) {
        out[2 + 2 * i] = digits[h[i] >> 4];
        out[3 + 2 * i] = digits[h[i] & 15];
    }
    out[2 + 2 * n] = '\0';
}

static void hex32(char out[67], const uint8_t h[32]) { hex_of(out, h, 32); }

static int unhex(uint8_t *out, size_t n, const char *s) {
    if (strlen(s) != 2 * n) return -1;
    for (size_t i = 0; i < 2 * n; i++) {
        char ch = s[i];
        int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (v < 0) return -1;
        out[i / 2] = (uint8_t)(i % 2 ? (out[i / 2] | v) : v << 4);
    }
    return 0;
}

static int nonempty(const char *s) { return s && *s; }

/* An unknown fact: NULL for the database. */
static const char *fact(const char *s) { return nonempty(s) ? s : NULL; }

/* The session's epoch: this window's facts, else what an earlier window stored; 0 unknown. */
static int session_epoch(PGconn *c, const gpufl__window_t *w, int64_t *out) {
    *out = w->facts.epoch_unix_us > 0 ? w->facts.epoch_unix_us : 0;
    if (*out) return 0;
    char ws[24];
    snprintf(ws, sizeof ws, "%" PRId64, w->workspace_id);
    const char *vals[] = {ws, w->session_id};
    PGresult *r;
    int rc = exec_params(c, &r,
                         "SELECT epoch_unix_us FROM sessions WHERE workspace_id = $1 AND"
                         " session_id = $2 AND epoch_unix_us IS NOT NULL",
                         2, vals, "reading the session's epoch");
    if (rc) return rc;
    if (PQntuples(r) == 1) *out = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return 0;
}

/* The days the window's rows fall on, from its time span, checked: a row dated before 1970
 * or after 9999 has a broken time, and a window spread over more than WINDOW_MAX_DAYS days
 * would make a partition per bad timestamp. days[] gets the arrival day, then first..last. */
static int window_days(const gpufl__window_t *w, int64_t epoch, day_range_t *range, int64_t *days,
                       size_t *n_days) {
    days[0] = range->first = range->last = range->arrival;
    *n_days = 1;
    if (epoch <= 0 || w->time_min_ns > w->time_max_ns) return 0;
    const gpufl__cell_t lo = {.kind = GPUFL__CELL_INT, .u.i = w->time_min_ns};
    const gpufl__cell_t hi = {.kind = GPUFL__CELL_INT, .u.i = w->time_max_ns};
    range->first = gpufl__store_row_day(epoch, &lo, range->arrival);
    range->last = gpufl__store_row_day(epoch, &hi, range->arrival);
    if (range->first < 0 || range->last > DAY_MAX)
        return gpufl__store_fail(GPUFL_EINVAL, "the window's rows have times outside 1970-9999");
    if (range->last - range->first >= WINDOW_MAX_DAYS)
        return gpufl__store_fail(GPUFL_EINVAL, "the window's rows span more than %d days",
                                 WINDOW_MAX_DAYS);
    for (int64_t d = range->first; d <= range->last; d++)
        if (d != range->arrival) days[(*n_days)++] = d;
    return 0;
}

/* Returned by put_txn when a partition it counted on is gone (dropped by retention, maybe on
 * another server): the caller forgets its cached days and tries once more. */
#define RETRY_PARTITIONS 1

/* The window's row as text parameters $5.. of window_insert and window_update: what a slice
 * changes. */
typedef struct {
    char sha[67], rows[24], bytes[24], final[4], state[2 * GPUFL__SHA256_STATE_BYTES + 3], crc[24],
        last_offset[24], last_sha[67], last_crc[24], slices[24];
    const char *v[10];
} row_text_t;

static void row_text(row_text_t *t, const gpufl__window_row_t *r) {
    hex32(t->sha, r->sha256);
    snprintf(t->rows, sizeof t->rows, "%" PRId64, r->rows);
    snprintf(t->bytes, sizeof t->bytes, "%" PRId64, r->bytes);
    snprintf(t->final, sizeof t->final, "%d", r->final);
    hex_of(t->state, r->state, GPUFL__SHA256_STATE_BYTES);
    snprintf(t->crc, sizeof t->crc, "%" PRIu32, r->crc32);
    snprintf(t->last_offset, sizeof t->last_offset, "%" PRId64, r->last_offset);
    hex32(t->last_sha, r->last_sha256);
    snprintf(t->last_crc, sizeof t->last_crc, "%" PRIu32, r->last_prefix_crc32);
    snprintf(t->slices, sizeof t->slices, "%" PRId64, r->slices);
    const char *v[10] = {t->sha,
                         t->rows,
                         t->bytes,
                         t->final,
                         r->has_state ? t->state : NULL,
                         r->has_crc32 ? t->crc : NULL,
                         t->last_offset,
                         t->last_sha,
                         t->last_crc,
                         t->slices};
    memcpy(t->v, v, sizeof v);
}

#define WINDOW_ROW_COLUMNS                                                                         \
    "encode(sha256, 'hex'), bytes, final, rows, slices, encode(sha256_state, 'hex'), crc32,"       \
    " last_offset, encode(last_sha256, 'hex'), last_prefix_crc32"

/* Row i of a result of WINDOW_ROW_COLUMNS. */
static void window_row_of(PGresult *r, int i, gpufl__window_row_t *out) {
    *out = (gpufl__window_row_t){0};
    unhex(out->sha256, 32, PQgetvalue(r, i, 0));
    out->bytes = strtoll(PQgetvalue(r, i, 1), NULL, 10);
    out->final = strcmp(PQgetvalue(r, i, 2), "0") != 0;
    out->rows = strtoll(PQgetvalue(r, i, 3), NULL, 10);
    out->slices = strtoll(PQgetvalue(r, i, 4), NULL, 10);
    out->has_state = !PQgetisnull(r, i, 5) &&
                     unhex(out->state, GPUFL__SHA256_STATE_BYTES, PQgetvalue(r, i, 5)) == 0;
    out->has_crc32 = !PQgetisnull(r, i, 6);
    out->crc32 = (uint32_t)strtoull(PQgetvalue(r, i, 6), NULL, 10);
    out->last_offset = strtoll(PQgetvalue(r, i, 7), NULL, 10);
    if (PQgetisnull(r, i, 8) || unhex(out->last_sha256, 32, PQgetvalue(r, i, 8)) != 0)
        memcpy(out->last_sha256, out->sha256, 32); /* the window came whole */
    out->last_prefix_crc32 = (uint32_t)strtoull(PQgetvalue(r, i, 9), NULL, 10);
}

/* What the database holds of w's identity, its row locked for this transaction (a slice
 * racing on it waits for this one to end): *found, and *taken when none but w's window id is
 * stored under another identity. */
static int window_locked(PGconn *c, const gpufl__window_t *w, const char *const ids[5],
                         gpufl__window_row_t *row, int *found, int *taken) {
    PGresult *r;
    int rc = exec_params(c, &r,
                         "SELECT " WINDOW_ROW_COLUMNS " FROM windows WHERE workspace_id = $1"
                         " AND session_id = $2 AND channel = $3 AND sequence = $4 FOR UPDATE",
                         4, ids, "reading the stored window");
    if (rc) return rc;
    *found = PQntuples(r) == 1;
    if (*found) window_row_of(r, 0, row);
    PQclear(r);
    *taken = 0;
    if (*found) return 0;
    const char *idv[] = {ids[0], w->window_id};
    rc = exec_params(c, &r, "SELECT 1 FROM windows WHERE workspace_id = $1 AND window_id = $2", 2,
                     idv, "reading the stored window id");
    if (rc) return rc;
    *taken = PQntuples(r) > 0;
    PQclear(r);
    return 0;
}

/* The window's lines, its typed rows and its session row, after its row went in. */
static int put_body(PGconn *c, copy_t *k, const gpufl__window_t *w, const char *const ids[5],
                    int64_t epoch, const day_range_t *days, const char *at, int appended) {
    PGresult *r;
    int64_t first_no = 0;
    int rc = 0;
    if (appended) { /* its lines continue the window's: the row lock keeps others out */
        rc = exec_params(c, &r,
                         "SELECT COALESCE(MAX(line_no) + 1, 0) FROM lines WHERE workspace_id = $1"
                         " AND session_id = $2 AND channel = $3 AND sequence = $4",
                         4, ids, "counting the window's lines");
        if (rc) return rc;
        first_no = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
    }
    rc = copy_lines(k, c, w, first_no, days->arrival);
    if (rc == 0) rc = copy_rows(k, c, w, epoch, days);
    if (rc) return rc;
    char pid[24], epo[24], end[24];
    snprintf(pid, sizeof pid, "%" PRId64, w->facts.pid);
    snprintf(epo, sizeof epo, "%" PRId64, w->facts.epoch_unix_us);
    snprintf(end, sizeof end, "%" PRId64, w->facts.end_ns);
    const gpufl__session_facts_t *f = &w->facts;
    const char *sv[] = {ids[0],
                        w->session_id,
                        fact(f->app_name),
                        fact(f->hostname),
                        f->pid > 0 ? pid : NULL,
                        fact(f->job_id),
                        fact(f->engine),
                        fact(f->gpufl_version),
                        f->epoch_unix_us > 0 ? epo : NULL,
                        at,
                        f->end_ns >= 0 ? end : NULL};
    /* The first known value of a fact stays; an unknown one (NULL) never replaces it. */
    rc = exec_params(c, &r,
                     "INSERT INTO sessions (workspace_id, session_id, app_name, hostname, pid,"
                     " job_id, engine, gpufl_version, epoch_unix_us, first_seen, last_window_at,"
                     " end_ns, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10,"
                     " $11::bigint, CASE WHEN $11::bigint IS NULL THEN 'live' ELSE 'ended' END)"
                     " ON CONFLICT (workspace_id, session_id) DO UPDATE SET"
                     " app_name = COALESCE(sessions.app_name, EXCLUDED.app_name),"
                     " hostname = COALESCE(sessions.hostname, EXCLUDED.hostname),"
                     " pid = COALESCE(sessions.pid, EXCLUDED.pid),"
                     " job_id = COALESCE(sessions.job_id, EXCLUDED.job_id),"
                     " engine = COALESCE(sessions.engine, EXCLUDED.engine),"
                     " gpufl_version = COALESCE(sessions.gpufl_version, EXCLUDED.gpufl_version),"
                     " epoch_unix_us = COALESCE(sessions.epoch_unix_us, EXCLUDED.epoch_unix_us),"
                     " last_window_at = GREATEST(sessions.last_window_at, EXCLUDED.last_window_at),"
                     " end_ns = GREATEST(sessions.end_ns, EXCLUDED.end_ns),"
                     " state = CASE WHEN sessions.state = 'live' AND EXCLUDED.end_ns IS NOT NULL"
                     " THEN 'ended' ELSE sessions.state END",
                     11, sv, "storing the session");
    if (rc) return rc;
    PQclear(r);
    return 0;
}

/* The identity decides first. A new window's row goes in with ON CONFLICT DO NOTHING: when
 * another transaction (in this process or another server) is inserting the same identity or
 * window id, PostgreSQL makes this insert wait for it and then reports the conflict, so
 * exactly one of them stores the window and the other reads the committed row (FOR UPDATE)
 * and decides by store_slice.c's rules. A slice at an offset reads the row FOR UPDATE first:
 * two servers appending the same slice queue on the row lock, and the second finds it stored
 * (duplicate) or the window grown past its offset (range). This is the database's own row
 * locking and unique index doing the work; an advisory lock on a hash of the identity would
 * also serialise the racers, but could collide between unrelated windows and would still need
 * the unique index to be correct. */
static int put_txn(PGconn *c, copy_t *k, gpufl__window_outcome_t *out, const gpufl__window_t *w,
                   int64_t epoch, const day_range_t *days, int64_t now) {
    char ws[24], seq[24], ver[16], day[24], at[24];
    snprintf(ws, sizeof ws, "%" PRId64, w->workspace_id);
    snprintf(seq, sizeof seq, "%" PRId64, w->sequence);
    snprintf(ver, sizeof ver, "%d", w->wire_version);
    snprintf(day, sizeof day, "%" PRId64, days->arrival);
    snprintf(at, sizeof at, "%" PRId64, now);
    const char *ids[5] = {ws, w->session_id, w->channel, seq, w->window_id};
    gpufl__window_row_t stored, after = {0};
    row_text_t t;
    PGresult *r;
    int rc = exec_ok(c, "BEGIN", "starting the window's transaction");
    if (rc) return rc;
    if (w->offset == 0) {
        if ((rc = gpufl__slice_advance(&after, NULL, w)) != 0) return rc;
        row_text(&t, &after);
        const char *wv[] = {ws,     w->session_id, w->channel, seq,    w->window_id, t.v[0],
                            t.v[1], t.v[2],        t.v[3],     t.v[4], t.v[5],       t.v[6],
                            t.v[7], t.v[8],        t.v[9],     ver,    day,          at};
        rc = exec_params(c, &r,
                         "INSERT INTO windows (workspace_id, session_id, channel, sequence,"
                         " window_id, sha256, rows, bytes, final, sha256_state, crc32, last_offset,"
                         " last_sha256, last_prefix_crc32, slices, wire_version, day, received_at)"
                         " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
                         " $15, $16, $17, $18) ON CONFLICT DO NOTHING RETURNING 1",
                         18, wv, "storing the window's identity");
        if (rc) return rc;
        int inserted = PQntuples(r) == 1;
        PQclear(r);
        if (inserted) {
            rc = put_body(c, k, w, ids, epoch, days, at, 0);
            goto commit;
        }
    }
    int found, taken;
    if ((rc = window_locked(c, w, ids, &stored, &found, &taken)) != 0) return rc;
    if (!found && !taken && w->offset == 0)
        return gpufl__store_fail(GPUFL_EIO,
                                 "postgresql: window %s vanished while being compared (retention "
                                 "ran); send it again",
                                 w->window_id);
    /* As in SQLite: the identity decides (the same bytes are a duplicate whatever window id
     * they came with); a window id taken by another identity only conflicts. */
    gpufl__window_outcome_t seen =
        taken ? GPUFL__WINDOW_CONFLICT : gpufl__slice_decide(found ? &stored : NULL, w);
    if (seen) {
        *out = seen;
        if (w->held && found) *w->held = (gpufl__window_held_t){stored.bytes, stored.final};
        if (w->held && !found) *w->held = (gpufl__window_held_t){0, 0};
        return exec_ok(c, "ROLLBACK", "ending the window's transaction");
    }
    if ((rc = gpufl__slice_advance(&after, &stored, w)) != 0) return rc;
    row_text(&t, &after);
    const char *uv[] = {ws,     w->session_id, w->channel, seq,    t.v[0], t.v[1], t.v[2],
                        t.v[3], t.v[4],        t.v[5],     t.v[6], t.v[7], t.v[8], t.v[9]};
    rc = exec_params(c, &r,
                     "UPDATE windows SET sha256 = $5, rows = $6, bytes = $7, final = $8,"
                     " sha256_state = $9, crc32 = $10, last_offset = $11, last_sha256 = $12,"
                     " last_prefix_crc32 = $13, slices = $14 WHERE workspace_id = $1"
                     " AND session_id = $2 AND channel = $3 AND sequence = $4",
                     14, uv, "storing the window's slice");
    if (rc) return rc;
    PQclear(r);
    rc = put_body(c, k, w, ids, epoch, days, at, 1);
commit:
    if (rc) return rc;
    char *rollup = NULL;
    rc = gpufl__rollup_sql(&rollup, w, epoch);
    if (rc == 0 && rollup) rc = exec_ok(c, rollup, "rolling up the window's samples");
    free(rollup);
    if (rc) return rc;
    rc = exec_ok(c, "COMMIT", "committing the window");
    if (rc == 0) {
        *out = GPUFL__WINDOW_STORED;
        if (w->held) *w->held = (gpufl__window_held_t){after.bytes, after.final};
    }
    return rc;
}

static int pg_window_put(gpufl__store_t *s, gpufl__window_outcome_t *out,
                         const gpufl__window_t *w) {
    if (!s || !out || !w || !nonempty(w->session_id) || !nonempty(w->channel) ||
        !nonempty(w->window_id))
        return gpufl__store_fail(GPUFL_EINVAL,
                                 "store: a window needs a session id, a channel and a window id");
    if (w->workspace_id <= 0)
        return gpufl__store_fail(GPUFL_EINVAL, "store: a window needs a workspace");
    if (w->n_lines && !w->lines)
        return gpufl__store_fail(GPUFL_EINVAL, "store: the window's lines are missing");
    for (size_t i = 0; i < w->n_lines; i++)
        if (!w->lines[i].text && w->lines[i].len)
            return gpufl__store_fail(GPUFL_EINVAL, "store: line %zu of the window has no text", i);
    int64_t now = gpufl__store_now();
    day_range_t range = {.arrival = gpufl__store_day_of_unix_us(now * 1000000)};
    copy_t *k = malloc(sizeof *k);
    if (!k) return gpufl__store_fail(GPUFL_ENOMEM, "postgresql: out of memory");
    PGconn *c = NULL;
    int64_t epoch = 0, days[WINDOW_MAX_DAYS + 1];
    size_t n_days = 0;
    int rc = pool_get(s, &c);
    if (rc == 0) rc = session_epoch(c, w, &epoch);
    if (rc == 0) rc = window_days(w, epoch, &range, days, &n_days);
    for (int attempt = 0; rc == 0; attempt++) {
        for (size_t i = 0; i < n_days && rc == 0; i++) rc = partitions_ensure(s, c, days[i]);
        if (rc) break;
        rc = put_txn(c, k, out, w, epoch, &range, now);
        if (rc == 0 || attempt == 1 || PQstatus(c) != CONNECTION_OK) break;
        /* 23514: no partition of the table for a row (dropped since we cached its day). */
        if (strcmp(last_sqlstate, "23514") != 0) break;
        exec_ok(c, "ROLLBACK", "retrying the window");
        days_forget(s, INT64_MAX);
        rc = 0;
    }
    if (c) pool_put(s, c);
    free(k);
    return rc;
}

/* ---- workspaces, keys, users --------------------------------------------------------- */

/* One statement on a pooled connection; *out holds the result on 0. */
static int run1(gpufl__store_t *s, PGresult **out, const char *sql, int n, const char *const *vals,
                const char *what) {
    PGconn *c;
    int rc = pool_get(s, &c);
    if (rc) return rc;
    rc = exec_params(c, out, sql, n, vals, what);
    pool_put(s, c);
    return rc;
}

/* The id a RETURNING id statement gave. */
static int returned_id(PGresult *r, int64_t *out) {
    if (out) *out = PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    return 0;
}

/* An INSERT ... RETURNING id: a workspace that does not exist (foreign key) is
 * GPUFL_ENOTFOUND, a unique name or prefix already used GPUFL_EALREADY with the message taken. */
static int insert_id(gpufl__store_t *s, int64_t *out_id, const char *sql, int n,
                     const char *const *vals, const char *what, const char *taken) {
    PGresult *r;
    int rc = run1(s, &r, sql, n, vals, what);
    if (rc == GPUFL_EIO && strcmp(last_sqlstate, "23503") == 0)
        return gpufl__store_fail(GPUFL_ENOTFOUND, "%s: no such workspace", what);
    if (rc == GPUFL_EALREADY) return gpufl__store_fail(rc, "%s", taken);
    return rc ? rc : returned_id(r, out_id);
}

static int pg_workspace_create(gpufl__store_t *s, int64_t *out_id, const char *name) {
    if (!s || !name || !*name) return gpufl__store_fail(GPUFL_EINVAL, "workspace: an empty name");
    char at[24];
    snprintf(at, sizeof at, "%" PRId64, gpufl__store_now());
    const char *v[] = {name, at};
    char taken[160];
    snprintf(taken, sizeof taken, "workspace '%s' exists already", name);
    return insert_id(s, out_id,
                     "INSERT INTO workspaces (name, created_at) VALUES ($1, $2)"
                     " RETURNING id",
                     2, v, "creating a workspace", taken);
}

static int pg_workspace_find(gpufl__store_t *s, int64_t *out_id, const char *name) {
    if (!s || !out_id || !name) return gpufl__store_fail(GPUFL_EINVAL, "workspace: no name");
    const char *v[] = {name};
    PGresult *r;
    int rc = run1(s, &r, "SELECT id FROM workspaces WHERE name = $1", 1, v, "finding a workspace");
    if (rc) return rc;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return gpufl__store_fail(GPUFL_ENOTFOUND, "no workspace named '%s'", name);
    }
    return returned_id(r, out_id);
}

static int pg_key_create(gpufl__store_t *s, int64_t *out_id, int64_t workspace_id,
                         gpufl__role_t role, const char *prefix, const uint8_t hash[32]) {
    if (!s || !prefix || !*prefix || !hash || role < GPUFL__ROLE_INGEST || role > GPUFL__ROLE_ADMIN)
        return gpufl__store_fail(GPUFL_EINVAL, "key: a prefix, a hash and a role are needed");
    char ws[24], ro[8], at[24], h[67];
    snprintf(ws, sizeof ws, "%" PRId64, workspace_id);
    snprintf(ro, sizeof ro, "%d", (int)role);
    snprintf(at, sizeof at, "%" PRId64, gpufl__store_now());
    hex32(h, hash);
    const char *v[] = {ws, ro, prefix, h, at};
    char taken[160];
    snprintf(taken, sizeof taken, "key prefix '%s' is taken", prefix);
    return insert_id(s, out_id,
                     "INSERT INTO api_keys (workspace_id, role, prefix, hash, created_at)"
                     " VALUES ($1, $2, $3, $4, $5) RETURNING id",
                     5, v, "creating a key", taken);
}

static int pg_key_find(gpufl__store_t *s, gpufl__key_row_t *out, const char *prefix) {
    if (!s || !out || !prefix) return gpufl__store_fail(GPUFL_EINVAL, "key: no prefix");
    const char *v[] = {prefix};
    PGresult *r;
    int rc = run1(s, &r,
                  "SELECT id, workspace_id, role, encode(hash, 'hex'), revoked_at IS NOT NULL"
                  " FROM api_keys WHERE prefix = $1",
                  1, v, "finding a key");
    if (rc) return rc;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return gpufl__store_fail(GPUFL_ENOTFOUND, "no such key");
    }
    memset(out, 0, sizeof *out);
    out->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    out->workspace_id = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    out->role = (gpufl__role_t)atoi(PQgetvalue(r, 0, 2));
    out->revoked = strcmp(PQgetvalue(r, 0, 4), "t") == 0;
    rc = unhex(out->hash, sizeof out->hash, PQgetvalue(r, 0, 3));
    PQclear(r);
    return rc ? gpufl__store_fail(GPUFL_EIO, "postgresql: a stored key hash is damaged") : 0;
}

static int pg_key_revoke(gpufl__store_t *s, int64_t workspace_id, const char *prefix) {
    if (!s || !prefix) return gpufl__store_fail(GPUFL_EINVAL, "key: no prefix");
    char ws[24], at[24];
    snprintf(ws, sizeof ws, "%" PRId64, workspace_id);
    snprintf(at, sizeof at, "%" PRId64, gpufl__store_now());
    const char *v[] = {ws, prefix, at};
    PGresult *r;
    int rc = run1(s, &r,
                  "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)"
                  " WHERE workspace_id = $1 AND prefix = $2",
                  3, v, "revoking a key");
    if (rc) return rc;
    int found = strcmp(PQcmdTuples(r), "0") != 0;
    PQclear(r);
    return found ? 0 : gpufl__store_fail(GPUFL_ENOTFOUND, "no key '%s' in this workspace", prefix);
}

/* One UPDATE for all the keys used since the last batch, from two arrays unnested together. */
static int pg_keys_touch(gpufl__store_t *s, const int64_t *ids, const int64_t *unix_s, size_t n) {
    if (!s || (n && (!ids || !unix_s))) return gpufl__store_fail(GPUFL_EINVAL, "keys: no ids");
    if (n == 0) return 0;
    if (n > 100000) return gpufl__store_fail(GPUFL_EINVAL, "keys: %zu keys in one batch", n);
    buf_t a = {0, 0, 0, n * 22 + 8}, b = {0, 0, 0, n * 22 + 8};
    int rc = buf_str(&a, "{");
    if (rc == 0) rc = buf_str(&b, "{");
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = buf_fmt(&a, "%s%" PRId64, i ? "," : "", ids[i]);
        if (rc == 0) rc = buf_fmt(&b, "%s%" PRId64, i ? "," : "", unix_s[i]);
    }
    if (rc == 0) rc = buf_str(&a, "}");
    if (rc == 0) rc = buf_str(&b, "}");
    if (rc == 0) {
        const char *v[] = {a.p, b.p};
        PGresult *r;
        rc = run1(s, &r,
                  "UPDATE api_keys k SET last_used_at = GREATEST(COALESCE(k.last_used_at, 0), t.at)"
                  " FROM (SELECT unnest($1::bigint[]) AS id, unnest($2::bigint[]) AS at) t"
                  " WHERE k.id = t.id",
                  2, v, "noting keys' last use");
        if (rc == 0) PQclear(r);
    }
    free(a.p);
    free(b.p);
    return rc;
}

static int pg_user_create(gpufl__store_t *s, int64_t *out_id, int64_t workspace_id,
                          const char *name, const char *password_hash) {
    if (!s || !name || !*name || !password_hash || !*password_hash)
        return gpufl__store_fail(GPUFL_EINVAL, "user: a name and a password hash are needed");
    char ws[24], at[24];
    snprintf(ws, sizeof ws, "%" PRId64, workspace_id);
    snprintf(at, sizeof at, "%" PRId64, gpufl__store_now());
    const char *v[] = {ws, name, password_hash, at};
    char taken[160];
    snprintf(taken, sizeof taken, "user '%s' exists already", name);
    return insert_id(s, out_id,
                     "INSERT INTO users (workspace_id, name, password_hash, created_at)"
                     " VALUES ($1, $2, $3, $4) RETURNING id",
                     4, v, "creating a user", taken);
}

/* ---- query --------------------------------------------------------------------------- */

/* Portable SQL to PostgreSQL's: each ? outside quotes and comments becomes $1, $2, ... */
static int number_placeholders(buf_t *out, const char *sql, size_t *n_marks) {
    char quote = 0;
    int rc = 0;
    *n_marks = 0;
    for (const char *p = sql; *p && rc == 0; p++) {
        if (quote) {
            if (*p == quote || (quote == '\n' && *p == '\n')) quote = 0;
            rc = buf_add(out, p, 1);
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
            rc = buf_add(out, p, 1);
        } else if (p[0] == '-' && p[1] == '-') {
            quote = '\n'; /* a comment runs to the end of its line */
            rc = buf_add(out, p, 1);
        } else if (*p == '?') {
            rc = buf_fmt(out, "$%zu", ++*n_marks);
        } else {
            rc = buf_add(out, p, 1);
        }
    }
    return rc;
}

static int pg_query(gpufl__store_t *s, const char *sql, const char *const *params, size_t n_params,
                    gpufl__row_cb cb, void *arg) {
    if (!s || !sql || (n_params && !params) || n_params > SQL_MAX_PARAMS)
        return gpufl__store_fail(GPUFL_EINVAL, "query: missing SQL or parameters");
    buf_t b = {0, 0, 0, strlen(sql) * 2 + 64};
    size_t marks;
    int rc = number_placeholders(&b, sql, &marks);
    if (rc == 0 && marks != n_params)
        rc = gpufl__store_fail(GPUFL_EINVAL, "query: %zu placeholders but %zu parameters", marks,
                               n_params);
    PGresult *r = NULL;
    if (rc == 0) rc = run1(s, &r, b.p, (int)n_params, params, "query");
    free(b.p);
    if (rc) return rc;
    int rows = PQntuples(r), cols = PQnfields(r);
    const char **vals = cols ? calloc((size_t)cols * 2, sizeof *vals) : NULL;
    if (cols && !vals) rc = gpufl__store_fail(GPUFL_ENOMEM, "query: out of memory");
    for (int j = 0; j < cols && rc == 0; j++) vals[cols + j] = PQfname(r, j);
    for (int i = 0; i < rows && cb && rc == 0; i++) {
        for (int j = 0; j < cols; j++) vals[j] = PQgetisnull(r, i, j) ? NULL : PQgetvalue(r, i, j);
        rc = cb(arg, cols, vals, vals + cols);
    }
    free(vals);
    PQclear(r);
    return rc;
}

/* ---- retention ----------------------------------------------------------------------- */

/* Drops every day partition older than the cutoff (whole tables: no row is deleted from them),
 * then the bookkeeping of windows that arrived on those days and of sessions left with no
 * window. */
static int pg_retain(gpufl__store_t *s, int days) {
    if (!s || days < 0) return gpufl__store_fail(GPUFL_EINVAL, "retain: days must be >= 0");
    int64_t cutoff = gpufl__store_day_of_unix_us(gpufl__store_now() * 1000000) - days;
    PGconn *c;
    int rc = pool_get(s, &c);
    if (rc) return rc;
    PGresult *r;
    rc = exec_params(c, &r,
                     "SELECT p.relname, c.relname FROM pg_inherits i"
                     " JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent"
                     " JOIN pg_namespace n ON n.oid = p.relnamespace"
                     " WHERE n.nspname = current_schema() ORDER BY c.relname",
                     0, NULL, "listing partitions");
    days_forget(s, cutoff);
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        const char *parent = PQgetvalue(r, i, 0), *part = PQgetvalue(r, i, 1);
        size_t n = strlen(parent);
        int ours = 0;
        for (size_t t = 0; partitioned_name(t) && !ours; t++)
            ours = strcmp(partitioned_name(t), parent) == 0;
        if (!ours || strncmp(part, parent, n) != 0 || strncmp(part + n, "_d", 2) != 0) continue;
        char *end;
        long long day = strtoll(part + n + 2, &end, 10);
        if (*end || day >= cutoff) continue;
        char sql[200];
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS \"%s\"", part);
        rc = exec_ok(c, sql, "dropping a partition");
    }
    PQclear(r);
    if (rc == 0) {
        char cut[24];
        snprintf(cut, sizeof cut, "%" PRId64, cutoff);
        const char *v[] = {cut};
        rc = exec_params(c, &r,
                         "WITH gone AS (DELETE FROM windows WHERE day < $1)"
                         " DELETE FROM sessions s WHERE NOT EXISTS (SELECT 1 FROM windows w"
                         " WHERE w.workspace_id = s.workspace_id AND w.session_id = s.session_id"
                         " AND w.day >= $1)",
                         1, v, "forgetting dropped windows");
        if (rc == 0) PQclear(r);
    }
    if (rc == 0) {
        char cut[24];
        snprintf(cut, sizeof cut, "%" PRId64, cutoff);
        const char *v[] = {cut};
        rc = exec_params(c, &r, "DELETE FROM gpu_rollup WHERE day < $1", 1, v,
                         "deleting old rollups");
        if (rc == 0) PQclear(r);
    }
    pool_put(s, c);
    return rc;
}

const gpufl__store_ops_t gpufl__store_pg_ops = {
    "postgresql",      pg_open,       pg_close,    pg_window_put, pg_workspace_create,
    pg_workspace_find, pg_key_create, pg_key_find, pg_key_revoke, pg_keys_touch,
    pg_user_create,    pg_query,      pg_retain,
};
