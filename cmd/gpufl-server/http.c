// SPDX-License-Identifier: Apache-2.0
/*
 * http.c - gpufl-server's HTTP front on libmicrohttpd (a pool of internal polling threads; TLS
 * when a certificate is given): the route table, keys checked before a body is read, bodies
 * inflated under their caps as they arrive, JSON errors, one structured access-log line per
 * request, and draining of the requests in flight on SIGTERM.
 */
#include "server.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REQUEST_MEMORY_BYTES (64 * 1024) /* request line and headers of one connection */
#define CONNECTIONS_MAX      1024
#define SMALL_BODY_BYTES     (64 * 1024) /* bodies of routes other than the stream */
#define TLS_FILE_MAX_BYTES   (1 << 20)

struct gpufl__http {
    struct MHD_Daemon *daemon;
    gpufl__server_t *server;
    atomic_int in_flight;
    char *tls_cert, *tls_key; /* PEM contents */
};

/* One request, from its first callback to its completion. */
typedef struct conn {
    gpufl__request_t req;
    const gpufl__route_t *route;
    gpufl__body_t body;
    gpufl__reply_t early; /* an answer decided before or while the body arrived */
    int body_open, prechecked;
    struct timespec start;
    gpufl__http_t *http;
} conn_t;

static void route_healthz(gpufl__request_t *req, gpufl__reply_t *rep) {
    (void)req;
    rep->status = 200;
    rep->json = json_pack("{s:s}", "status", "ok");
}

static int ignore_row(void *arg, int n, const char *const *values, const char *const *names) {
    (void)arg, (void)n, (void)values, (void)names;
    return 0;
}

static void route_readyz(gpufl__request_t *req, gpufl__reply_t *rep) {
    gpufl__server_t *s = req->server;
    if (s->ops->query(s->store, "SELECT 1", NULL, 0, ignore_row, NULL) != 0) {
        gpufl__reply_error(rep, 503, "the database does not answer");
        return;
    }
    rep->status = 200;
    rep->json = json_pack("{s:s}", "status", "ready");
}

/* The routes. Others add their rows here (routes_*.c); a route never takes a workspace from
 * the request, only from its key. */
static const gpufl__route_t routes[] = {
    {"GET", "/healthz", GPUFL__ROLE_NONE, 0, NULL, route_healthz, NULL},
    {"GET", "/readyz", GPUFL__ROLE_NONE, 0, NULL, route_readyz, NULL},
    {"GET", "/api/v1/info/version", GPUFL__ROLE_ANY, 0, NULL, gpufl__ingest_version, NULL},
    {"POST", "/api/v1/events/stream", GPUFL__ROLE_INGEST, 1, gpufl__ingest_stream_precheck,
     gpufl__ingest_stream, gpufl__ingest_stream_done},
    {"POST", "/api/v1/events/session-complete", GPUFL__ROLE_INGEST, 1, NULL,
     gpufl__ingest_session_complete, NULL},
    {"GET", "/api/v1/events/windows", GPUFL__ROLE_INGEST, 0, NULL, gpufl__ingest_windows, NULL},
    /* Sessions, their reports and series (routes_sessions.c, docs/server-api.md). */
    {"GET", "/api/v1/sessions", GPUFL__ROLE_READ, 0, NULL, gpufl__route_sessions_list, NULL},
    {"GET", "/api/v1/sessions/{id}", GPUFL__ROLE_READ, 0, NULL, gpufl__route_sessions_get, NULL},
    {"GET", "/api/v1/sessions/{id}/insights", GPUFL__ROLE_READ, 0, NULL,
     gpufl__route_sessions_insights, NULL},
    {"GET", "/api/v1/sessions/{id}/kernels", GPUFL__ROLE_READ, 0, NULL,
     gpufl__route_sessions_kernels, NULL},
    {"GET", "/api/v1/sessions/{id}/scopes", GPUFL__ROLE_READ, 0, NULL, gpufl__route_sessions_scopes,
     NULL},
    {"GET", "/api/v1/sessions/{id}/timeline", GPUFL__ROLE_READ, 0, NULL,
     gpufl__route_sessions_timeline, NULL},
    {"GET", "/api/v1/sessions/{id}/metrics", GPUFL__ROLE_READ, 0, NULL,
     gpufl__route_sessions_metrics, NULL},
    {"GET", "/api/v1/sessions/{id}/report", GPUFL__ROLE_READ, 0, NULL, gpufl__route_sessions_report,
     NULL},
    /* The SASS and source lines of a session's functions (routes_sass.c). */
    {"GET", "/api/v1/sessions/{id}/functions", GPUFL__ROLE_READ, 0, NULL,
     gpufl__route_sass_functions, NULL},
    {"GET", "/api/v1/sessions/{id}/functions/sass", GPUFL__ROLE_READ, 0, NULL,
     gpufl__route_sass_function, NULL},
    /* A session as a trace for Perfetto UI or chrome://tracing (routes_export.c). */
    {"GET", "/api/v1/sessions/{id}/export", GPUFL__ROLE_READ, 0, NULL, gpufl__route_sessions_export,
     NULL},
    /* Operations, logins, live and the fleet views (auth.c, metrics.c, routes_live.c,
     * routes_fleet.c). */
    {"GET", "/metrics", GPUFL__ROLE_NONE, 0, NULL, gpufl__metrics_route, NULL},
    {"POST", "/api/v1/auth/login", GPUFL__ROLE_NONE, 1, NULL, gpufl__auth_route_login, NULL},
    {"POST", "/api/v1/auth/logout", GPUFL__ROLE_ANY, 0, NULL, gpufl__auth_route_logout, NULL},
    {"GET", "/api/v1/auth/me", GPUFL__ROLE_ANY, 0, NULL, gpufl__auth_route_me, NULL},
    {"GET", "/api/v1/live", GPUFL__ROLE_READ, 0, NULL, gpufl__live_route, NULL},
    {"GET", "/api/v1/fleet/hosts", GPUFL__ROLE_READ, 0, NULL, gpufl__fleet_hosts, NULL},
    {"GET", "/api/v1/fleet/gpus", GPUFL__ROLE_READ, 0, NULL, gpufl__fleet_gpus, NULL},
    {"GET", "/api/v1/fleet/jobs", GPUFL__ROLE_READ, 0, NULL, gpufl__fleet_jobs, NULL},
    /* The workspace's keys (routes_keys.c): a login or an admin key; the handlers check. */
    {"GET", "/api/v1/keys", GPUFL__ROLE_ANY, 0, NULL, gpufl__route_keys_list, NULL},
    {"POST", "/api/v1/keys", GPUFL__ROLE_ANY, 1, NULL, gpufl__route_keys_create, NULL},
    {"POST", "/api/v1/keys/{prefix}/revoke", GPUFL__ROLE_ANY, 0, NULL, gpufl__route_keys_revoke,
     NULL},
    {"GET", "/api/v1/fleet/heatmap", GPUFL__ROLE_READ, 0, NULL, gpufl__fleet_heatmap, NULL},
    {"GET", "/api/v1/fleet/health", GPUFL__ROLE_READ, 0, NULL, gpufl__fleet_health, NULL},
    {"GET", "/api/v1/fleet/usage", GPUFL__ROLE_READ, 0, NULL, gpufl__fleet_usage, NULL},
};

void gpufl__reply_error(gpufl__reply_t *rep, unsigned status, const char *message) {
    json_decref(rep->json);
    rep->status = status;
    rep->json = json_pack("{s:s}", "error", message);
}

const char *gpufl__request_header(gpufl__request_t *req, const char *name) {
    return MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, name);
}

/* The database down, busy, full or unreachable: 503 (the client tries again later); any other
 * store failure is the server's own error. */
unsigned gpufl__store_status(int rc) { return rc == GPUFL_EUNAVAILABLE ? 503 : 500; }

/* Matches path against a pattern segment by segment, capturing the {…} segments (pointers
 * into copy, which the request keeps). */
static int path_matches(const char *pattern, const char *path, gpufl__request_t *req, char *copy) {
    size_t n = 0, lens[GPUFL__PATH_PARAMS_MAX];
    strcpy(copy, path);
    const char *q = pattern;
    char *p = copy;
    for (;;) {
        if (*q != '/' || *p != '/') return 0;
        q++, p++;
        size_t qn = strcspn(q, "/"), pn = strcspn(p, "/");
        if (qn > 2 && q[0] == '{' && q[qn - 1] == '}') {
            if (pn == 0 || n == GPUFL__PATH_PARAMS_MAX) return 0;
            lens[n] = pn;
            req->params[n++] = p;
        } else if (qn != pn || strncmp(q, p, qn) != 0) {
            return 0;
        }
        q += qn, p += pn;
        if (!*q && !*p) break;
    }
    for (size_t i = 0; i < n; i++) ((char *)req->params[i])[lens[i]] = '\0';
    req->n_params = n;
    return 1;
}

static int method_is(const char *want, const char *method) {
    return !strcmp(want, method) || (!strcmp(want, "GET") && !strcmp(method, "HEAD"));
}

/* The dashboard's files: what a GET outside /api/ that no route above names falls to. */
static const gpufl__route_t static_route = {
    "GET", "/*", GPUFL__ROLE_NONE, 0, NULL, gpufl__static_route, NULL};

/* The route for a request: 0, or 404 (no such path) / 405 (path known, method not). */
static unsigned find_route(conn_t *c, const char *method, const char *path, char *copy,
                           const char **allow) {
    int path_known = 0;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        gpufl__request_t probe = {0};
        if (!path_matches(routes[i].pattern, path, &probe, copy)) continue;
        path_known = 1;
        *allow = routes[i].method;
        if (!method_is(routes[i].method, method)) continue;
        c->route = &routes[i];
        memcpy(c->req.params, probe.params, sizeof probe.params);
        c->req.n_params = probe.n_params;
        return 0;
    }
    if (!path_known && method_is("GET", method) && strncmp(path, "/api/", 5) != 0 &&
        strcmp(path, "/api") != 0) {
        c->route = &static_route;
        return 0;
    }
    return path_known ? 405 : 404;
}

/* With --cors-origin, a request from that origin may read the answer (credentials included);
 * from any other origin, or without the flag, no CORS header is ever sent. */
static void add_cors(struct MHD_Response *r, conn_t *c) {
    const char *want = c->req.server->settings->cors_origin;
    const char *origin = gpufl__request_header(&c->req, "Origin");
    if (!want || !origin || strcmp(want, origin) != 0) return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", want);
    MHD_add_response_header(r, "Access-Control-Allow-Credentials", "true");
    MHD_add_response_header(r, "Vary", "Origin");
    if (!strcmp(c->req.method, "OPTIONS")) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST");
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                "Authorization, Content-Type, X-CSRF-Token");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    }
}

static enum MHD_Result send_reply(struct MHD_Connection *mc, conn_t *c, gpufl__reply_t *rep,
                                  const char *allow) {
    if (rep->streamed) { /* the handler queued its own response */
        c->req.body = NULL;
        c->early.status = rep->status;
        return MHD_YES;
    }
    if (!rep->json && !rep->raw) gpufl__reply_error(rep, 500, "the handler gave no answer");
    int raw = !rep->json;
    char *text = raw ? rep->raw : json_dumps(rep->json, JSON_COMPACT);
    if (!raw) free(rep->raw);
    json_decref(rep->json);
    rep->json = NULL;
    rep->raw = NULL;
    size_t len = raw && rep->raw_len ? rep->raw_len : text ? strlen(text) : 0;
    if (text && !raw) {
        char *with_nl = realloc(text, len + 2);
        if (with_nl) {
            text = with_nl;
            text[len++] = '\n';
            text[len] = '\0';
        }
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, text ? text : (char *)"", text ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            raw && rep->content_type ? rep->content_type : "application/json");
    MHD_add_response_header(r, "Cache-Control",
                            rep->cache_control ? rep->cache_control : "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (rep->status == 405 && allow) MHD_add_response_header(r, "Allow", allow);
    if (rep->header_name) MHD_add_response_header(r, rep->header_name, rep->header_value);
    if (rep->cookie) MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, rep->cookie);
    free(rep->cookie);
    rep->cookie = NULL;
    add_cors(r, c);
    c->req.body = NULL;
    enum MHD_Result rc = MHD_queue_response(mc, rep->status, r);
    MHD_destroy_response(r);
    c->early.status = rep->status; /* for the access log */
    return rc;
}

static int state_changing(const char *method) {
    return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
}

/* The key and the role, before anything else of the request is looked at. Without an
 * Authorization header, a login cookie may stand for a key; a state-changing request on a
 * cookie must also carry the login's X-CSRF-Token (a key needs none: browsers never send one
 * on their own). */
static void authorize(conn_t *c, gpufl__reply_t *rep) {
    int need = c->route->role;
    if (need == GPUFL__ROLE_NONE) return;
    gpufl__server_t *s = c->req.server;
    char prefix[GPUFL__KEY_PREFIX_LEN + 1] = "";
    const char *bearer = gpufl__request_header(&c->req, "Authorization");
    const char *cookie =
        MHD_lookup_connection_value(c->req.connection, MHD_COOKIE_KIND, GPUFL__SESSION_COOKIE);
    int rc;
    if (!bearer && cookie) {
        rc = gpufl__auth_cookie_check(s->auth, &c->req.who, cookie,
                                      gpufl__request_header(&c->req, "X-CSRF-Token"));
        if (rc == 0 && state_changing(c->req.method) && !c->req.who.csrf_ok) {
            gpufl__reply_error(rep, 403, "a request on a login cookie needs its X-CSRF-Token");
            return;
        }
    } else {
        rc = gpufl__auth_check(s->auth, &c->req.who, bearer, prefix);
        memcpy(c->req.who.prefix, prefix, sizeof prefix);
    }
    if (rc == GPUFL_EINVAL) {
        gpufl__reply_error(rep, 401, "a valid API key is needed: Authorization: Bearer gpfl_...");
        rep->header_name = "WWW-Authenticate";
        rep->header_value = "Bearer";
    } else if (rc != 0) {
        gpufl__reply_error(rep, gpufl__store_status(rc), "keys cannot be checked now");
    } else if (need != GPUFL__ROLE_ANY && !gpufl__auth_allows(c->req.who.role, need)) {
        gpufl__reply_error(rep, 403, "this key's role may not use this route");
        json_object_set_new(rep->json, "role", json_string(gpufl__auth_role_name(c->req.who.role)));
    }
}

/* The first callback of a request: route, key, route's own checks, body set up. */
static void begin(conn_t *c, struct MHD_Connection *mc, const char *method, const char *url,
                  const char **allow) {
    gpufl__reply_t *rep = &c->early;
    size_t n = strlen(url);
    char *copy = malloc(2 * (n + 1)); /* the path, then the copy the params point into */
    if (!copy) {
        gpufl__reply_error(rep, 500, "out of memory");
        return;
    }
    memcpy(copy, url, n + 1);
    c->req.path = copy; /* freed with the request */
    if (!strcmp(method, "OPTIONS") && c->req.server->settings->cors_origin) {
        rep->status = 204; /* a CORS preflight: answered in add_cors's headers */
        rep->raw = strdup("");
        rep->content_type = "text/plain";
        if (!rep->raw) gpufl__reply_error(rep, 500, "out of memory");
        return;
    }
    unsigned status = find_route(c, method, url, copy + n + 1, allow);
    if (status) {
        gpufl__reply_error(rep, status, status == 404 ? "no such route" : "method not allowed");
        return;
    }
    authorize(c, rep);
    if (rep->status) return;
    if (c->route->precheck) {
        c->route->precheck(&c->req, rep);
        c->prechecked = 1;
        if (rep->status) return;
    }
    if (!c->route->takes_body) return;
    const char *enc = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Content-Encoding");
    int encoding = gpufl__encoding_parse(enc);
    if (encoding < 0) {
        gpufl__reply_error(rep, 415, "Content-Encoding: " GPUFL__ENCODINGS);
        return;
    }
    int64_t cap = c->route->precheck ? c->req.server->settings->max_body_bytes : SMALL_BODY_BYTES;
    gpufl__body_init(&c->body, (gpufl__encoding_t)encoding, (size_t)cap);
    c->body_open = 1;
    const char *length = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Content-Length");
    if (length && strtoll(length, NULL, 10) > cap) {
        gpufl__reply_error(rep, 413, "the body is past the server's cap");
        json_object_set_new(rep->json, "max_bytes", json_integer(cap));
    }
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *mc, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls) {
    gpufl__http_t *h = cls;
    conn_t *c = *con_cls;
    const char *allow = NULL;
    (void)version;
    if (!c) {
        if (!(c = calloc(1, sizeof *c))) return MHD_NO;
        *con_cls = c;
        c->http = h;
        clock_gettime(CLOCK_MONOTONIC, &c->start);
        atomic_fetch_add(&h->in_flight, 1);
        c->req.server = h->server;
        c->req.connection = mc;
        c->req.method = method;
        begin(c, mc, method, url, &allow);
        /* An answer decided from the headers goes out now; libmicrohttpd then skips the body
         * and closes the connection. */
        if (c->early.status) return send_reply(mc, c, &c->early, allow);
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (c->body_open && !c->early.status) {
            int rc = gpufl__body_feed(&c->body, upload_data, *upload_data_size);
            if (rc == GPUFL_ENOMEM) {
                gpufl__reply_error(&c->early, 413, "the body is past the server's cap");
                json_object_set_new(c->early.json, "max_bytes",
                                    json_integer((json_int_t)c->body.max_bytes));
            } else if (rc != 0) {
                char text[64];
                snprintf(text, sizeof text, "the body is not valid %s",
                         gpufl__encoding_name(c->body.encoding));
                gpufl__reply_error(&c->early, 400, text);
            }
        }
        *upload_data_size = 0; /* consumed (or, after an error, dropped) */
        return MHD_YES;
    }
    if (c->early.status) return send_reply(mc, c, &c->early, NULL);
    gpufl__reply_t rep = {0};
    if (c->body_open) {
        int rc = gpufl__body_finish(&c->body);
        if (rc == GPUFL_ENOMEM) {
            gpufl__reply_error(&rep, 413, "the body is past the server's cap");
        } else if (rc != 0) {
            char text[64];
            snprintf(text, sizeof text, "the body is not valid %s (cut short?)",
                     gpufl__encoding_name(c->body.encoding));
            gpufl__reply_error(&rep, 400, text);
        }
        if (rep.status) return send_reply(mc, c, &rep, NULL);
        c->req.body = c->body.data ? c->body.data : "";
        c->req.body_len = c->body.len;
    }
    c->route->handler(&c->req, &rep);
    return send_reply(mc, c, &rep, NULL);
}

static void access_log(conn_t *c, enum MHD_RequestTerminationCode toe) {
    struct timespec end, wall;
    clock_gettime(CLOCK_MONOTONIC, &end);
    clock_gettime(CLOCK_REALTIME, &wall);
    double ms = (double)(end.tv_sec - c->start.tv_sec) * 1e3 +
                (double)(end.tv_nsec - c->start.tv_nsec) / 1e6;
    struct tm tm;
    char ts[40];
    gmtime_r(&wall.tv_sec, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    size_t n = strlen(ts);
    snprintf(ts + n, sizeof ts - n, ".%03ldZ", wall.tv_nsec / 1000000);
    /* Only the key's public prefix is ever written. */
    json_t *line = json_pack(
        "{s:s,s:s,s:s,s:s,s:i,s:f,s:s*,s:I}", "ts", ts, "event", "request", "method",
        c->req.method ? c->req.method : "", "path", c->req.path ? c->req.path : "", "status",
        (int)c->early.status, "duration_ms", ms, "key",
        c->req.who.prefix[0] ? c->req.who.prefix : NULL, "bytes_in", (json_int_t)c->body.in_bytes);
    if (line && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        json_object_set_new(line, "aborted", json_true());
    char *text = line ? json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(4)) : NULL;
    if (text) {
        size_t len = strlen(text);
        text[len] = '\n'; /* one write per line, so threads never interleave within one */
        fwrite(text, 1, len + 1, stderr);
    }
    free(text);
    json_decref(line);
}

static void completed(void *cls, struct MHD_Connection *mc, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
    gpufl__http_t *h = cls;
    conn_t *c = *con_cls;
    (void)mc;
    if (!c) return;
    access_log(c, toe);
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    gpufl__metrics_request(
        c->route ? c->route->method : NULL, c->route ? c->route->pattern : NULL, c->early.status,
        (double)(end.tv_sec - c->start.tv_sec) + (double)(end.tv_nsec - c->start.tv_nsec) / 1e9);
    if (c->prechecked && c->route->done) c->route->done(&c->req);
    if (c->body_open) gpufl__body_fini(&c->body);
    json_decref(c->early.json);
    free((char *)c->req.path);
    free(c);
    *con_cls = NULL;
    atomic_fetch_sub(&h->in_flight, 1);
}

static int listen_socket(const gpufl__server_settings_t *s, int *port, char *why, size_t size) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *ai = NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", s->listen_port);
    int gai = getaddrinfo(s->listen_host, service, &hints, &ai);
    if (gai != 0) {
        snprintf(why, size, "'%s' is not an IP address: %s", s->listen_host, gai_strerror(gai));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 256) != 0) {
        snprintf(why, size, "cannot listen on %s:%d: %s", s->listen_host, s->listen_port,
                 strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, serv, sizeof serv,
                NI_NUMERICHOST | NI_NUMERICSERV);
    *port = atoi(serv);
    return fd;
}

static char *read_pem(const char *path, char *why, size_t size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, size, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(TLS_FILE_MAX_BYTES + 1);
    size_t n = text ? fread(text, 1, TLS_FILE_MAX_BYTES + 1, f) : 0;
    fclose(f);
    if (!text || n == 0 || n > TLS_FILE_MAX_BYTES || !strstr(text, "-----BEGIN")) {
        snprintf(why, size, "%s is not a PEM file (of at most 1 MiB)", path);
        free(text);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

int gpufl__http_start(gpufl__http_t **out, int *port, gpufl__server_t *server, char *why,
                      size_t size) {
    const gpufl__server_settings_t *s = server->settings;
    *out = NULL;
    gpufl__http_t *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    h->server = server;
    /* Suspend and resume: a live stream with nothing to send holds no thread. */
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME;
    if (s->tls_cert_path) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            snprintf(why, size, "this libmicrohttpd was built without TLS");
            free(h);
            return -1;
        }
        if (!(h->tls_cert = read_pem(s->tls_cert_path, why, size)) ||
            !(h->tls_key = read_pem(s->tls_key_path, why, size))) {
            free(h->tls_cert);
            free(h);
            return -1;
        }
        flags |= MHD_USE_TLS;
    }
    int fd = listen_socket(s, port, why, size);
    if (fd < 0) {
        free(h->tls_cert);
        free(h->tls_key);
        free(h);
        return -1;
    }
    struct MHD_OptionItem tls[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    if (!s->tls_cert_path) tls[0].option = MHD_OPTION_END;
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, handle, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)s->threads, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)REQUEST_MEMORY_BYTES,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTIONS_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)30, MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
    if (!h->daemon) {
        close(fd);
        free(h->tls_cert);
        free(h->tls_key);
        free(h);
        snprintf(why, size, "the HTTP server did not start on %s:%d%s", s->listen_host, *port,
                 s->tls_cert_path ? " (is the key the certificate's?)" : "");
        return -1;
    }
    *out = h;
    return 0;
}

void gpufl__http_stop(gpufl__http_t *h, int drain_s) {
    if (!h) return;
    /* Live streams never end by themselves: they are ended first, so draining can finish. */
    gpufl__live_close(h->server->live);
    /* No new connections; the requests under way finish (up to drain_s), then all stops. */
    MHD_socket fd = MHD_quiesce_daemon(h->daemon);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < drain_s * 100 && atomic_load(&h->in_flight) > 0; i++)
        nanosleep(&tick, NULL);
    if (atomic_load(&h->in_flight) > 0)
        fprintf(stderr, "gpufl-server: %d requests still running after %d s; stopping anyway\n",
                atomic_load(&h->in_flight), drain_s);
    MHD_stop_daemon(h->daemon);
    free(h->tls_cert);
    free(h->tls_key);
    free(h);
}
