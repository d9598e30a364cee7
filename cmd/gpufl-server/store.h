// SPDX-License-Identifier: Apache-2.0
/*
 * store.h - the one interface gpufl-server's storage engines implement (SQLite by default,
 * PostgreSQL for a fleet). Routes speak portable SQL through query(); only schema, bulk loads,
 * partitions and retention differ per engine, each in its own file (store_sqlite.c,
 * store_pg.c), chosen by the --db URL's scheme as an entry of one table (store.c).
 */
#ifndef GPUFL_SERVER_STORE_H
#define GPUFL_SERVER_STORE_H

#include <stddef.h>
#include <stdint.h>

/* ---- typed tables -------------------------------------------------------------------------
 * A table of rows that ingest fills from a record type's batch lines (columns read by name)
 * and the engines create from this description. store_tables.c holds the list. Every table
 * also has workspace_id, session_id and day ahead of these columns; the engines add them.
 * day, the PostgreSQL partition key, is the UTC date (days since 1970-01-01) of the row's own
 * time: the session's epoch_unix_us plus its time_column; for windows and lines, the date the
 * window arrived. A monitor session that runs for months thus spreads over its days' partitions
 * and retention drops its oldest rows, not the whole session. */
typedef enum {
    GPUFL__COL_INT = 1, /* 64-bit integer */
    GPUFL__COL_REAL,    /* double */
    GPUFL__COL_TEXT,    /* UTF-8 */
} gpufl__col_type_t;

typedef struct gpufl__column {
    const char *name; /* the table's column */
    gpufl__col_type_t type;
    const char *from; /* the log column it is read from (by name); NULL: same as name */
    int dict;         /* 1: the log holds a dict id, stored as the string it names */
} gpufl__column_t;

typedef struct gpufl__table {
    const char *name;        /* SQL table name, e.g. "activity" */
    const char *record_type; /* the log record type whose batch rows fill it, e.g. "kernel" */
    const char *kind;        /* value of the table's "kind" column when several types share it */
    const char *time_column; /* the column (ns since the session epoch) that decides the day */
    const gpufl__column_t *columns;
    size_t n_columns;
    const char *const *indexes; /* column lists to index, e.g. "session_id, start_ns"; NULL-ended */
} gpufl__table_t;

/* The list of typed tables and their record types (store_tables.c). */
extern const gpufl__table_t *const gpufl__store_tables[];
extern const size_t gpufl__store_n_tables;

/* One cell of a typed row. */
typedef struct gpufl__cell {
    enum { GPUFL__CELL_NULL = 0, GPUFL__CELL_INT, GPUFL__CELL_REAL, GPUFL__CELL_TEXT } kind;
    union {
        int64_t i;
        double r;
        struct {
            const char *s;
            size_t len;
        } t;
    } u;
} gpufl__cell_t;

/* Rows of one typed table: n_rows × table->n_columns cells, row-major. */
typedef struct gpufl__rowset {
    const gpufl__table_t *table;
    size_t n_rows;
    const gpufl__cell_t *cells;
} gpufl__rowset_t;

/* Rows a rowset of ingest holds at most: a batch line's rows (the library writes up to 4096)
 * reach the engine in pieces of this many, so a request holds at most two rowsets of typed
 * cells (the one being written and the next), whatever the window's size. */
#define GPUFL__ROWSET_MAX_ROWS 4096

/* A window's typed rows, handed to the engine one rowset at a time inside the window's
 * transaction, each built (from the next batch line) just before it is written. begin()
 * starts over from the first rowset (an engine that retries its transaction reads them
 * again); next() sets *out to the next rowset, valid until the following call, or to NULL
 * after the last. Both return 0 or a negative GPUFL_E*, which rolls the window back. */
typedef struct gpufl__rows_source {
    int (*begin)(void *arg);
    int (*next)(void *arg, const gpufl__rowset_t **out);
    void *arg;
} gpufl__rows_source_t;

/* ---- a window --------------------------------------------------------------------------- */

/* One line of a window, exactly as the library wrote it (without its '\n'). */
typedef struct gpufl__line {
    const char *text;
    size_t len;
    const char *type; /* the record's "type"; NULL for a damaged line kept on request */
    int64_t rows;     /* records the line holds: a batch's length, 1 for a single record */
} gpufl__line_t;

/* What the session's header line and records said, for the sessions table. */
typedef struct gpufl__session_facts {
    const char *app_name, *hostname, *job_id, *engine, *gpufl_version; /* NULL: not in window */
    int64_t pid;                                                       /* 0: not in window */
    int64_t epoch_unix_us;                                             /* 0: not in window */
    int64_t end_ns; /* duration from a session_end line; -1: none in this window */
} gpufl__session_facts_t;

/* What the store holds of a window after window_put (any outcome): its bytes and whether it
 * is sealed. */
typedef struct gpufl__window_held {
    int64_t bytes; /* S: the window's bytes stored, [0, S) */
    int final;     /* 1: sealed, it never grows */
} gpufl__window_held_t;

/* One window of one channel of one session, parsed and checked by ingest. A request may carry
 * the whole window (offset 0, more 0: every field as before slices) or one slice of it: the
 * bytes [offset, offset + bytes) of the window (docs/protocol.md, "A window in slices"). */
typedef struct gpufl__window {
    int64_t workspace_id;
    const char *session_id;
    const char *channel; /* "device", "scope", "system" */
    int64_t sequence;    /* the segment number within the channel */
    const char *window_id;
    uint8_t sha256[32]; /* of the decompressed bytes (of this request's body) */
    int64_t bytes;      /* decompressed (this request's body) */
    int64_t rows;       /* sum of lines[].rows */
    int wire_version;
    const gpufl__line_t *lines;
    size_t n_lines;
    gpufl__rows_source_t rows_source; /* begin and next NULL: no typed rows */
    /* The least and greatest time cell (ns since the session epoch) of the typed rows, so an
     * engine knows their days before the rows come (PostgreSQL makes their partitions
     * first); time_min_ns > time_max_ns when no row has a time. */
    int64_t time_min_ns, time_max_ns;
    gpufl__session_facts_t facts;
    /* ---- slices (all 0 for a whole window) ---- */
    int64_t offset;        /* where the body begins within the window's bytes */
    int more;              /* 1: the body does not end the window (X-GpuFlight-Window-Final: 0) */
    uint32_t prefix_crc32; /* zlib's crc32 of the window's bytes [0, offset), as the sender has
                            * them (offset > 0) */
    /* The body itself (bytes long), which the engine hashes on to keep the window's running
     * SHA-256 and crc32. NULL only for a whole window (offset 0, more 0): then sha256 alone is
     * kept and the window cannot be appended to (it is sealed anyway). */
    const uint8_t *data;
    gpufl__window_held_t *held; /* NULL, or filled by window_put when it returns 0 */
} gpufl__window_t;

typedef enum {
    GPUFL__WINDOW_STORED = 1, /* new: its identity, lines and rows were committed together */
    GPUFL__WINDOW_DUPLICATE,  /* the same identity and hash were already stored: nothing done */
    GPUFL__WINDOW_CONFLICT,   /* the same identity (or window id) with another hash, or a
                               * slice whose prefix crc32 differs from the stored bytes' */
    GPUFL__WINDOW_RANGE,      /* a slice that does not continue the stored bytes (a gap, an
                               * overlap, a sealed window asked to grow): nothing done (416) */
} gpufl__window_outcome_t;

/* ---- slices (store_slice.c): the rules every engine applies in the window's transaction ---- */

/* The SHA-256 running state of an open window, as the engines store it (libsodium's
 * crypto_hash_sha256_state, whose size store_slice.c checks against this). */
#define GPUFL__SHA256_STATE_BYTES 104

/* What an engine read of a stored window (its row of windows), or what it is to write. */
typedef struct gpufl__window_row {
    int64_t bytes; /* S */
    int final;
    int64_t rows, slices;
    uint8_t sha256[32]; /* of [0, S) */
    int has_state;      /* state holds the running SHA-256 (open windows only) */
    uint8_t state[GPUFL__SHA256_STATE_BYTES];
    int has_crc32;       /* 0: unknown (a window stored whole without its bytes) */
    uint32_t crc32;      /* of [0, S) */
    int64_t last_offset; /* the last slice: its offset, body hash, prefix crc32 */
    uint8_t last_sha256[32];
    uint32_t last_prefix_crc32;
} gpufl__window_row_t;

/* What a request does to a window: stored is NULL when the identity is new. Returns the
 * outcome, or 0 to store the request (a new window, or a slice appended). */
gpufl__window_outcome_t gpufl__slice_decide(const gpufl__window_row_t *stored,
                                            const gpufl__window_t *w);
/* The row after storing w on stored (NULL: new). 0, or GPUFL_EINVAL for a slice without its
 * bytes or a stored running state the engine could not read back. */
int gpufl__slice_advance(gpufl__window_row_t *out, const gpufl__window_row_t *stored,
                         const gpufl__window_t *w);

/* ---- workspaces, keys, users ------------------------------------------------------------ */

typedef enum { GPUFL__ROLE_INGEST = 1, GPUFL__ROLE_READ = 2, GPUFL__ROLE_ADMIN = 3 } gpufl__role_t;

typedef struct gpufl__key_row {
    int64_t id;
    int64_t workspace_id;
    gpufl__role_t role;
    uint8_t hash[32]; /* of the whole key; compared in constant time by the caller */
    int revoked;
} gpufl__key_row_t;

/* ---- the engine table ------------------------------------------------------------------ */

typedef struct gpufl__store gpufl__store_t; /* an engine's connection (pool); opaque */

/* Called once per result row of query(): values as text (NULL for SQL NULL), n columns. */
typedef int (*gpufl__row_cb)(void *arg, int n, const char *const *values, const char *const *names);

typedef struct gpufl__store_ops {
    const char *scheme; /* "sqlite", "postgresql" */
    /* Opens (creating a SQLite file) and applies the migrations not yet applied. */
    int (*open)(gpufl__store_t **out, const char *url);
    void (*close)(gpufl__store_t *store);

    /* One transaction: the window's identity, lines and typed rows, and the session row, or
     * nothing. Safe to call from several threads and several processes at once: two callers
     * with the same window get one STORED and one DUPLICATE. A slice (offset > 0 or more)
     * follows gpufl__slice_decide: appended lines continue the window's line_no, rows
     * accumulate, and two callers with the same slice get one STORED and one DUPLICATE (or
     * RANGE), never two STORED. */
    int (*window_put)(gpufl__store_t *store, gpufl__window_outcome_t *out,
                      const gpufl__window_t *w);

    int (*workspace_create)(gpufl__store_t *store, int64_t *out_id, const char *name);
    int (*workspace_find)(gpufl__store_t *store, int64_t *out_id, const char *name);
    int (*key_create)(gpufl__store_t *store, int64_t *out_id, int64_t workspace_id,
                      gpufl__role_t role, const char *prefix, const uint8_t hash[32]);
    /* By the key's public prefix; GPUFL_ENOTFOUND when none. */
    int (*key_find)(gpufl__store_t *store, gpufl__key_row_t *out, const char *prefix);
    /* Only a key of that workspace; GPUFL_ENOTFOUND otherwise (so no workspace learns of
     * another's keys). */
    int (*key_revoke)(gpufl__store_t *store, int64_t workspace_id, const char *prefix);
    /* last_used for many keys in one write (the server batches them, never one per request). */
    int (*keys_touch)(gpufl__store_t *store, const int64_t *ids, const int64_t *unix_s, size_t n);
    int (*user_create)(gpufl__store_t *store, int64_t *out_id, int64_t workspace_id,
                       const char *name, const char *password_hash);

    /* Portable SQL with ? placeholders (the PostgreSQL engine numbers them), text parameters
     * (NULL for SQL NULL). Every route's query names workspace_id among its conditions. */
    int (*query)(gpufl__store_t *store, const char *sql, const char *const *params, size_t n_params,
                 gpufl__row_cb cb, void *arg);

    /* Drops what is older than days (PostgreSQL: whole day partitions, never row DELETE). */
    int (*retain)(gpufl__store_t *store, int days);
} gpufl__store_ops_t;

/* A rows source over rowsets already in memory (the engines' tests): list->sets, n_sets,
 * filled by the caller. Sets w's rows_source and time span from them. */
typedef struct gpufl__rowset_list {
    const gpufl__rowset_t *sets;
    size_t n_sets, at;
} gpufl__rowset_list_t;
void gpufl__window_set_rowsets(gpufl__window_t *w, gpufl__rowset_list_t *list);

/* Widens [*min_ns, *max_ns] by the time cells of rs (its table's time column, INT cells). */
void gpufl__rowset_time_span(const gpufl__rowset_t *rs, int64_t *min_ns, int64_t *max_ns);

/* Opens the engine the URL's scheme names ("sqlite:PATH", "postgresql://..."). */
int gpufl__store_open(gpufl__store_t **out, const gpufl__store_ops_t **out_ops, const char *url);

/* ---- added with the SQLite engine (shared by the engines and their tests) -----------------
 * Rules the engines follow beyond the comments above:
 * - A table with a kind gets a "kind" TEXT column after day, set to table->kind; entries of
 *   gpufl__store_tables that share a name (activity: kernel, copy, memset, sync) share one
 *   columns array, and a row of one type leaves the others' columns NULL.
 * - Typed tables only grow: a column added to store_tables.c is added to an existing database
 *   when it is opened (ALTER TABLE ... ADD COLUMN); the other tables change by migrations.
 * - A row's day comes from the session's epoch_unix_us (this window's facts, else the stored
 *   session's); while neither is known, and for a row whose time cell is NULL, the arrival day.
 * - query(): a callback's non-zero return stops the rows; query() then returns that value.
 *   Statements other than SELECT run too (UPDATE sessions ... for session-complete); while
 *   one runs, its callback must not write through the same store (SQLite holds the
 *   process's write lock for it).
 * - window_put() checks the window's identity before it reads a row: a DUPLICATE or CONFLICT
 *   never calls the rows source. A rowset of an unknown table or a source's error rolls the
 *   whole window back; so does, on PostgreSQL, a row whose time falls outside the window's
 *   time_min_ns..time_max_ns (its day has no partition made for it).
 * - Errors: GPUFL_EINVAL (bad argument, unknown table in a rowset), GPUFL_EALREADY (a
 *   workspace or user name taken), GPUFL_ENOTFOUND, GPUFL_EIO (the database failed or stayed
 *   busy), GPUFL_ENOMEM; gpufl_last_error() says what and where. */

extern const gpufl__store_ops_t gpufl__store_sqlite_ops;
#ifdef GPUFL_HAVE_LIBPQ
extern const gpufl__store_ops_t gpufl__store_pg_ops;
#endif

/* Sets the calling thread's gpufl_last_error() message and returns code (store.c). The
 * server uses the public headers only, so the message goes through gpufl.h. */
#if defined(__GNUC__)
#define GPUFL_STORE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GPUFL_STORE_PRINTF(f, a)
#endif
int gpufl__store_fail(int code, const char *fmt, ...) GPUFL_STORE_PRINTF(2, 3);

/* The wall clock the engines read (unix seconds): received_at, the arrival day of windows and
 * lines, and retain()'s today. Tests point it elsewhere; NULL or unset: time(). */
extern int64_t (*gpufl__store_now_unix_s)(void);
int64_t gpufl__store_now(void);

/* ---- gpu_sample rollups (store_rollup.c) ---- */
#define GPUFL__ROLLUP_LEVELS 3
/* The slot widths in seconds, finest first: each a whole multiple of the one before. */
extern const int64_t gpufl__rollup_levels_s[GPUFL__ROLLUP_LEVELS];
/* The statements that recompute gpu_rollup for the wall-clock slots a device window's rows
 * span (session epoch epoch_us); *out NULL when there is nothing to do. The engine runs them
 * in the window's transaction, after its typed rows. 0, or GPUFL_ENOMEM / GPUFL_EINVAL. */
int gpufl__rollup_sql(char **out, const gpufl__window_t *w, int64_t epoch_us);
/* Every rollup rebuilt from the stored gpu_sample rows (once, when gpu_rollup is created). */
extern const char *const gpufl__rollup_backfill_sql;

/* Days since 1970-01-01 UTC of a unix time in µs (floor), and of a typed row's time:
 * epoch_unix_us + time_ns / 1000, or fallback_day when either is unknown (epoch 0). */
int64_t gpufl__store_day_of_unix_us(int64_t unix_us);
int64_t gpufl__store_row_day(int64_t epoch_unix_us, const gpufl__cell_t *time_cell,
                             int64_t fallback_day);

/* 1 when t is an entry of gpufl__store_tables; the index of the first entry named like
 * entry i (the one whose columns and indexes the engines create). */
int gpufl__store_table_known(const gpufl__table_t *t);
size_t gpufl__store_table_first(size_t i);
/* The index of a table's time column among its columns, or -1. */
int gpufl__store_table_time_index(const gpufl__table_t *t);

#endif
