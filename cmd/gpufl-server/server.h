// SPDX-License-Identifier: Apache-2.0
/*
 * server.h - what gpufl-server's front half shares: the settings main.c parses, the keys and
 * roles of auth.c, the request and route types of http.c, and ingest's body decoder and
 * window parser (ingest_parse.c, ingest_rows.c). The storage side is store.h.
 */
#ifndef GPUFL_SERVER_SERVER_H
#define GPUFL_SERVER_SERVER_H

#include "store.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define GPUFL__WIRE_VERSION 1 /* the one wire version this server speaks (docs/protocol.md) */

/* ---- settings (main.c) ----------------------------------------------------------------- */

typedef struct gpufl__server_settings {
    char listen_host[256];
    int listen_port;
    const char *db_url;
    int retention_days;        /* 0: keep everything */
    int64_t max_body_bytes;    /* decompressed, per request */
    const char *tls_cert_path; /* PEM; both or neither */
    const char *tls_key_path;
    int threads;             /* HTTP worker threads */
    int max_windows;         /* windows parsed and stored at once; more: 429 */
    int store_delay_ms;      /* test hook: sleep before each window_put (0 in production) */
    int quiet_s;             /* a live session this long without a window gets its report built */
    const char *cors_origin; /* the one origin CORS answers; NULL: CORS off */
    const char *web_root;    /* the dashboard's built files, served at / (routes_static.c) */
} gpufl__server_settings_t;

/* ---- keys and roles (auth.c) ----------------------------------------------------------- */

#define GPUFL__KEY_PREFIX_LEN 10
#define GPUFL__KEY_SECRET_LEN 43 /* 32 bytes, base64url without padding */
#define GPUFL__KEY_LEN        (5 + GPUFL__KEY_PREFIX_LEN + 1 + GPUFL__KEY_SECRET_LEN)
#define GPUFL__KEY_CACHE_S    5  /* a revoked key stops working within this many seconds */
#define GPUFL__TOUCH_EVERY_S  30 /* last_used reaches the database at most this often */

/* What a request's key proved. */
typedef struct gpufl__principal {
    int64_t key_id;
    int64_t workspace_id;
    gpufl__role_t role;
    char prefix[GPUFL__KEY_PREFIX_LEN + 1]; /* public: the only part of a key ever logged */
    /* A dashboard login instead of a key (login_id != 0): role read in its user's workspace. */
    int64_t login_id, user_id;
    char user[256], workspace[256];
    int csrf_ok; /* the request's X-CSRF-Token is the login's */
} gpufl__principal_t;

typedef struct gpufl__auth gpufl__auth_t;

int gpufl__auth_create(gpufl__auth_t **out, gpufl__store_t *store, const gpufl__store_ops_t *ops);
/* Flushes the pending last_used times, then frees. Accepts NULL. */
void gpufl__auth_destroy(gpufl__auth_t *auth);
/* Checks an Authorization header value ("Bearer gpfl_..."). 0 and *out filled, or
 * GPUFL_EINVAL (no key, malformed, unknown, wrong secret or revoked: all one answer, 401),
 * or a store error. *prefix_out gets the key's prefix whenever one could be read (for the log). */
int gpufl__auth_check(gpufl__auth_t *auth, gpufl__principal_t *out, const char *header,
                      char prefix_out[GPUFL__KEY_PREFIX_LEN + 1]);
/* Writes the last_used times noted in memory now (the keys list shows them current). */
int gpufl__auth_flush(gpufl__auth_t *auth);
/* Drops a key's cached lookup, so that a revoke takes effect at the next request. */
void gpufl__auth_forget(gpufl__auth_t *auth, const char *prefix);
/* 1 when a key of role `have` may do what `need` allows (admin may do everything). */
int gpufl__auth_allows(gpufl__role_t have, gpufl__role_t need);
/* A new key: "gpfl_<prefix>_<secret>" into key (GPUFL__KEY_LEN + 1 bytes), its prefix and
 * hash. */
void gpufl__auth_key_generate(char key[GPUFL__KEY_LEN + 1], char prefix[GPUFL__KEY_PREFIX_LEN + 1],
                              uint8_t hash[32]);
/* Splits a key into its prefix: 0, or GPUFL_EINVAL when it is not of the key's form. */
int gpufl__auth_key_parse(const char *key, size_t len, char prefix[GPUFL__KEY_PREFIX_LEN + 1]);
/* "ingest" | "read" | "admin" -> role; 0 when unknown. */
gpufl__role_t gpufl__auth_role_parse(const char *name);
const char *gpufl__auth_role_name(gpufl__role_t role);
/* Argon2id (crypto_pwhash_str) of a password into out (crypto_pwhash_STRBYTES). */
int gpufl__auth_password_hash(char *out, size_t size, const char *password);
int gpufl__auth_init(void); /* sodium_init(); 0 or GPUFL_EINVAL */

/* ---- users' logins (auth.c; docs/server-api.md "Logging in") ------------------------------- */

#define GPUFL__TOKEN_LEN          43          /* 32 random bytes, base64url without padding */
#define GPUFL__LOGIN_SESSION_S    (12 * 3600) /* a login lasts this long */
#define GPUFL__LOGIN_WINDOW_S     60          /* failed logins counted over this window ... */
#define GPUFL__LOGIN_FAILURES_MAX 5           /* ... and refused (429) past this many */
#define GPUFL__SESSION_COOKIE     "gpufl_session"

typedef struct gpufl__login {
    char cookie[GPUFL__TOKEN_LEN + 1]; /* shown once, in Set-Cookie; stored as a hash */
    char csrf[GPUFL__TOKEN_LEN + 1];   /* X-CSRF-Token of the login's state-changing requests */
} gpufl__login_t;

/* Checks a password (Argon2id) and opens a login session. 0; GPUFL_EINVAL for an unknown
 * workspace or user or a wrong password (one answer, one Argon2id verification each); or a
 * store error. A failure counts against the name's rate limit. */
int gpufl__auth_login(gpufl__auth_t *auth, gpufl__login_t *out, const char *workspace,
                      const char *user, const char *password);
/* 1 when the name may try to log in now; else 0 and *retry_after_s. */
int gpufl__auth_login_allowed(const char *workspace, const char *user, int *retry_after_s);
/* The login session of a cookie value: 0 and *out (role read; csrf_ok when csrf_header is the
 * session's token); GPUFL_EINVAL for none, expired or logged out; or a store error. */
int gpufl__auth_cookie_check(gpufl__auth_t *auth, gpufl__principal_t *out, const char *cookie,
                             const char *csrf_header);
int gpufl__auth_logout(gpufl__auth_t *auth, const gpufl__principal_t *who);

/* ---- a request body, inflated under its cap (ingest_parse.c) -------------------------------- */

/* A body's Content-Encoding (docs/protocol.md). */
typedef enum {
    GPUFL__ENC_IDENTITY = 0,
    GPUFL__ENC_GZIP,
    GPUFL__ENC_ZSTD,
} gpufl__encoding_t;

/* The encoding a Content-Encoding value names (absent or empty: identity); -1 for one not
 * accepted. GPUFL__ENCODINGS is the list a 415 and GET /info/version give. */
int gpufl__encoding_parse(const char *value);
const char *gpufl__encoding_name(gpufl__encoding_t e);
#define GPUFL__ENCODINGS "gzip, identity or zstd"

typedef struct gpufl__body {
    char *data; /* decompressed bytes */
    size_t len, cap;
    size_t max_bytes;        /* decompressed cap */
    size_t in_bytes, max_in; /* compressed bytes seen, and their cap */
    gpufl__encoding_t encoding;
    int inflating; /* z holds a gzip member begun, or the zstd context a frame */
    int ended;     /* a gzip member or zstd frame ended and no other began */
    void *z;       /* z_stream, or ZSTD_DCtx */
} gpufl__body_t;

void gpufl__body_init(gpufl__body_t *b, gpufl__encoding_t encoding, size_t max_bytes);
/* 0; GPUFL_ENOMEM past a cap (413); GPUFL_EFORMAT for bytes not of the encoding (400). */
int gpufl__body_feed(gpufl__body_t *b, const void *data, size_t n);
/* After the last feed: GPUFL_EFORMAT when a gzip or zstd stream is cut short, or empty. */
int gpufl__body_finish(gpufl__body_t *b);
void gpufl__body_fini(gpufl__body_t *b);

/* ---- ingest: headers and a window (ingest_parse.c, ingest_rows.c) -------------------------- */

#define GPUFL__ID_MAX 128 /* session and window ids */
/* A line of a window at most: the library's batch lines (4096 rows) stay far below it, and a
 * line is parsed whole (jansson holds up to ~20 times a line of tiny numbers while it is read). */
#define GPUFL__LINE_MAX_BYTES (8u << 20)
#define GPUFL__PROBLEMS_MAX   100 /* line problems listed in one answer */

/* Looks up a request header by name (case-insensitive); NULL when absent. */
typedef const char *(*gpufl__header_fn)(void *arg, const char *name);

typedef struct gpufl__ingest_headers {
    char session_id[GPUFL__ID_MAX + 1];
    char channel[8];
    int64_t sequence;
    char window_id[GPUFL__ID_MAX + 1];
    int wire_version;
    gpufl__encoding_t encoding;
    int keep_damaged;
    /* A window in slices (docs/protocol.md): the body's offset within the window's bytes,
     * whether it ends the window, and the crc32 of [0, offset) (present when offset > 0). */
    int64_t offset;
    int final;
    uint32_t prefix_crc32;
} gpufl__ingest_headers_t;

#define GPUFL__OFFSET_MAX ((int64_t)1 << 53) /* X-GpuFlight-Window-Offset at most */

/* Reads and checks the stream headers. 0, or an HTTP status (400 or 415) with *error set to a
 * JSON object for the answer (the caller owns it). */
int gpufl__ingest_headers_parse(gpufl__ingest_headers_t *out, gpufl__header_fn get, void *arg,
                                json_t **error);

/* One window as parsed from its bytes; owns everything the window points into. */
typedef struct gpufl__parsed gpufl__parsed_t;

/* 1 when s may be a session or window id: 1..128 of letters, digits and . - _ : */
int gpufl__ingest_id_ok(const char *s);
/* The wire versions accepted, as a JSON array. */
json_t *gpufl__ingest_supported(void);
/* The Content-Encodings accepted, as a JSON array of names ("gzip", "identity", "zstd"). */
json_t *gpufl__ingest_encodings(void);

/* Parses data (the decompressed window; not copied, must outlive the result) into a window for
 * workspace_id under the headers h. 0 and *out; or an HTTP status (400, 413) and *error (the
 * line problems); or GPUFL_ENOMEM. With h->keep_damaged, damaged lines are kept (type NULL) and
 * listed in gpufl__parsed_damaged(). A slice at h->offset > 0 does not begin with the header
 * line, and its lines may use the ids of dicts, the dict lines the window's earlier slices
 * stored (n_dicts of them, in order; NULL for none). */
int gpufl__ingest_parse(gpufl__parsed_t **out, json_t **error, const gpufl__ingest_headers_t *h,
                        int64_t workspace_id, const char *data, size_t len,
                        const gpufl__line_t *dicts, size_t n_dicts);
const gpufl__window_t *gpufl__parsed_window(const gpufl__parsed_t *p);
/* The line numbers of damaged lines kept (a JSON array, borrowed). */
json_t *gpufl__parsed_damaged(const gpufl__parsed_t *p);
void gpufl__parsed_destroy(gpufl__parsed_t *p);

/* Typed rows of one window (ingest_rows.c), in two passes over its lines: check() reads every
 * cell of a line and keeps none; the rows source then builds them again, one rowset of at most
 * GPUFL__ROWSET_MAX_ROWS rows at a time, while the store writes them. */
typedef struct gpufl__rows gpufl__rows_t;

int gpufl__rows_create(gpufl__rows_t **out);
void gpufl__rows_destroy(gpufl__rows_t *rows);
/* A dict line (line_no counts from 1): its ids resolve dict columns of later lines. 0, or
 * GPUFL_EFORMAT with why; GPUFL_ENOMEM past the ids one window may define. */
int gpufl__rows_dict(gpufl__rows_t *rows, size_t line_no, json_t *line, char *why, size_t size);
/* A record line of type `type`: when a typed table is filled from that type, every cell of its
 * rows is read (columns by name) and checked, and the rows' times widen the window's span.
 * *n_rows gets the records the line holds. 0; GPUFL_EFORMAT with why; GPUFL_ENOMEM. */
int gpufl__rows_check(gpufl__rows_t *rows, size_t line_no, const char *type, json_t *line,
                      int64_t *n_rows, char *why, size_t size);
/* The least and greatest time of the rows checked (min > max: none). */
void gpufl__rows_time_span(const gpufl__rows_t *rows, int64_t *min_ns, int64_t *max_ns);
/* The source of the typed rows of lines (checked before, and kept alive by the caller): the
 * lines of type NULL (damaged, kept) are skipped. */
void gpufl__rows_source(gpufl__rows_t *rows, const gpufl__line_t *lines, size_t n_lines,
                        gpufl__rows_source_t *out);
/* A copy of s (len bytes, then a NUL) that lives as long as rows. NULL when out of memory. */
const char *gpufl__rows_keep(gpufl__rows_t *rows, const char *s, size_t len);
/* Drop unresolvable dict ids to NULL instead of failing (damaged lines kept). */
void gpufl__rows_lenient(gpufl__rows_t *rows, int lenient);

/* ---- HTTP (http.c) ----------------------------------------------------------------------- */

typedef struct gpufl__server {
    const gpufl__server_settings_t *settings;
    gpufl__store_t *store;
    const gpufl__store_ops_t *ops;
    gpufl__auth_t *auth;
    atomic_int windows_busy;        /* windows being parsed or stored now (the 429 bound) */
    struct gpufl__reports *reports; /* the report builder (report.c) */
    struct gpufl__live *live;       /* the SSE broadcaster (routes_live.c) */
} gpufl__server_t;

#define GPUFL__PATH_PARAMS_MAX 4

typedef struct gpufl__request {
    gpufl__server_t *server;
    void *connection; /* struct MHD_Connection */
    const char *method, *path;
    gpufl__principal_t who;                     /* valid when the route needs a role */
    const char *params[GPUFL__PATH_PARAMS_MAX]; /* the path's {…} segments, in order */
    size_t n_params;
    const char *body; /* decompressed; NULL for routes that take none */
    size_t body_len;
    void *state; /* the route's own, from precheck to done */
} gpufl__request_t;

/* A handler's answer: status, a JSON body (stolen) and optionally one more header. */
typedef struct gpufl__reply {
    unsigned status;
    json_t *json;
    const char *header_name, *header_value;
    /* Instead of json: a body sent as it is (malloc'd, freed by http.c) with its type. A report
     * goes out byte for byte as `gpufl report` writes it. */
    char *raw;
    size_t raw_len;
    const char *content_type;
    char *cookie;              /* a Set-Cookie value (freed) */
    int streamed;              /* the handler queued its own response (SSE) */
    const char *cache_control; /* NULL: no-store (every API answer) */
} gpufl__reply_t;

typedef void (*gpufl__handler_fn)(gpufl__request_t *req, gpufl__reply_t *rep);

/* A role of 0: no key needed. GPUFL__ROLE_ANY: any valid key. */
#define GPUFL__ROLE_NONE 0
#define GPUFL__ROLE_ANY  (-1)

typedef struct gpufl__route {
    const char *method;
    const char *pattern; /* "/api/v1/sessions/{id}": a {…} segment matches any one segment */
    int role;
    int takes_body;
    /* Checked when the request's headers are in, before its body: an answer here (status set)
     * is sent at once and the body is not read (ingest's header and 429 checks). */
    void (*precheck)(gpufl__request_t *req, gpufl__reply_t *rep);
    gpufl__handler_fn handler;
    /* Called when a request that passed precheck ends, however it ended (a handler may call it
     * sooner: it must do its work once). */
    void (*done)(gpufl__request_t *req);
} gpufl__route_t;

/* Sets rep to {"error": message} with status. */
void gpufl__reply_error(gpufl__reply_t *rep, unsigned status, const char *message);
/* A request header (case-insensitive); NULL when absent. */
const char *gpufl__request_header(gpufl__request_t *req, const char *name);
/* The status a store error answers: 503 (database unavailable) or 500. */
unsigned gpufl__store_status(int rc);

typedef struct gpufl__http gpufl__http_t;

int gpufl__http_start(gpufl__http_t **out, int *port, gpufl__server_t *server, char *why,
                      size_t size);
/* Stops accepting, waits for the requests in flight (at most drain_s seconds), stops. */
void gpufl__http_stop(gpufl__http_t *http, int drain_s);

/* The routes ingest.c serves (added to http.c's table). */
void gpufl__ingest_stream_precheck(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__ingest_stream(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__ingest_stream_done(gpufl__request_t *req);
/* GET /api/v1/events/windows: the windows of a session's channel the workspace holds. */
void gpufl__ingest_windows(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__ingest_session_complete(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__ingest_version(gpufl__request_t *req, gpufl__reply_t *rep);

/* The query routes routes_sessions.c serves (added to http.c's table). */
void gpufl__route_sessions_list(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__route_sessions_get(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__route_sessions_insights(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__route_sessions_kernels(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__route_sessions_scopes(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__route_sessions_timeline(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__route_sessions_metrics(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__route_sessions_report(gpufl__request_t *req, gpufl__reply_t *rep);
/* routes_sessions.c's parameter and error answers, shared with the other query routes: an
 * integer parameter in lo..hi (def when absent; -1 with rep set to 400 naming it), a 400
 * naming a parameter, and a store error's answer (GPUFL_ENOTFOUND: 404 no such session). */
int gpufl__query_int_arg(gpufl__request_t *req, gpufl__reply_t *rep, const char *name, int64_t lo,
                         int64_t hi, int64_t def, int64_t *out);
void gpufl__query_bad_param(gpufl__reply_t *rep, const char *name, const char *why);
void gpufl__query_store_error(gpufl__reply_t *rep, int rc);
/* The SASS and source lines of a session's functions (routes_sass.c). */
void gpufl__route_sass_functions(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__route_sass_function(gpufl__request_t *req, gpufl__reply_t *rep);
/* A session as a Perfetto or Chrome trace (routes_export.c). */
void gpufl__route_sessions_export(gpufl__request_t *req, gpufl__reply_t *rep);
/* The routes of auth.c, routes_fleet.c, routes_live.c and metrics.c. */
void gpufl__auth_route_login(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__auth_route_logout(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__auth_route_me(gpufl__request_t *req, gpufl__reply_t *rep);
/* The workspace's API keys, for a login or an admin key (routes_keys.c). */
void gpufl__route_keys_list(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__route_keys_create(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__route_keys_revoke(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__fleet_hosts(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__fleet_gpus(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__fleet_jobs(gpufl__request_t *req, gpufl__reply_t *rep);
/* The fleet page's views over a wall-clock range (routes_fleet_views.c). */
void gpufl__fleet_heatmap(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__fleet_health(gpufl__request_t *req, gpufl__reply_t *rep);
void gpufl__fleet_usage(gpufl__request_t *req, gpufl__reply_t *rep);
/* GET of any path outside /api/ that no route names: the dashboard's files (routes_static.c). */
void gpufl__static_route(gpufl__request_t *req, gpufl__reply_t *rep);

/* ---- the server's own metrics (metrics.c) ------------------------------------------------ */

/* One request answered: its route's method and pattern (NULL: no route), status, seconds. */
void gpufl__metrics_request(const char *method, const char *pattern, unsigned status,
                            double seconds);
/* One window's outcome (0 with rc != 0: a store error), its rows and decompressed bytes. */
void gpufl__metrics_window(gpufl__window_outcome_t outcome, int rc, int64_t rows, int64_t bytes);
/* GET /metrics: Prometheus text 0.0.4 (a raw body: the route sets rep->raw). */
void gpufl__metrics_route(gpufl__request_t *req, gpufl__reply_t *rep);

/* ---- live: Server-Sent Events (routes_live.c) --------------------------------------------- */

typedef struct gpufl__live gpufl__live_t;

#define GPUFL__LIVE_CLIENTS_MAX 16  /* SSE clients at once per server; more: 503 */
#define GPUFL__LIVE_QUEUE_MAX   256 /* events waiting per client; past it the oldest go */
#define GPUFL__LIVE_HEARTBEAT_S 15

int gpufl__live_create(gpufl__live_t **out);
/* Ends every stream (they get their end of stream), so the HTTP server can stop. */
void gpufl__live_close(gpufl__live_t *live);
void gpufl__live_destroy(gpufl__live_t *live);
/* Clients connected now (0 for NULL). */
int gpufl__live_clients(gpufl__live_t *live);
/* After a window was stored: its window event, its gpu_sample rows (latest per device), and
 * "new" / "ended" session states. Never blocks on a client. */
void gpufl__live_window(gpufl__server_t *server, const gpufl__window_t *w);
void gpufl__live_session_state(gpufl__live_t *live, int64_t workspace_id, const char *session_id,
                               const char *state);
/* GET /api/v1/live: answers with a streaming response itself (rep->streamed). */
void gpufl__live_route(gpufl__request_t *req, gpufl__reply_t *rep);

#endif
