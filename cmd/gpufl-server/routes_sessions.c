// SPDX-License-Identifier: Apache-2.0
/*
 * routes_sessions.c - the query API on sessions (docs/server-api.md): the list with filters
 * and a keyset cursor, a session's summary, its report and insights (report.c), kernels per
 * name, scope tree, a downsampled timeline (GPU activity, launches, scopes, counters) and metric
 * series. Every query names the key's workspace; another workspace's session answers 404 like
 * a missing one.
 */
#include "report.h"
#include "server.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_LIMIT_DEFAULT 50
#define LIST_LIMIT_MAX     500
#define KERNELS_DEFAULT    100
#define EVENTS_DEFAULT     10000
#define EVENTS_MAX         100000
#define KEEP_PER_BUCKET    10 /* a downsampled timeline keeps this many longest per bucket */
#define POINTS_DEFAULT     200
#define POINTS_MAX         2000
#define SQL_BYTES          4096
#define CURSOR_MAX         (2 * (GPUFL__ID_MAX + 48))

/* ---- parameters and answers ----------------------------------------------------------- */

static const char *arg(gpufl__request_t *req, const char *name) {
    return MHD_lookup_connection_value(req->connection, MHD_GET_ARGUMENT_KIND, name);
}

static void bad_param(gpufl__reply_t *rep, const char *name, const char *why) {
    gpufl__reply_error(rep, 400, why);
    json_object_set_new(rep->json, "parameter", json_string(name));
}

/* An integer parameter in lo..hi; def when absent. 0, or -1 with rep set to 400. */
static int int_arg(gpufl__request_t *req, gpufl__reply_t *rep, const char *name, int64_t lo,
                   int64_t hi, int64_t def, int64_t *out) {
    const char *v = arg(req, name);
    *out = def;
    if (!v) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        char why[128];
        snprintf(why, sizeof why, "%s: expected an integer %" PRId64 "..%" PRId64, name, lo, hi);
        bad_param(rep, name, why);
        return -1;
    }
    *out = x;
    return 0;
}

/* One of the words allowed; def when absent. 0, or -1 with rep set to 400. */
static int word_arg(gpufl__request_t *req, gpufl__reply_t *rep, const char *name,
                    const char *const *allowed, const char **out) {
    const char *v = arg(req, name);
    *out = allowed[0];
    if (!v) return 0;
    for (size_t i = 0; allowed[i]; i++)
        if (!strcmp(v, allowed[i])) {
            *out = allowed[i];
            return 0;
        }
    char why[160];
    snprintf(why, sizeof why, "%s: expected %s%s%s%s%s", name, allowed[0], allowed[1] ? ", " : "",
             allowed[1] ? allowed[1] : "", allowed[1] && allowed[2] ? ", " : "",
             allowed[1] && allowed[2] ? allowed[2] : "");
    bad_param(rep, name, why);
    return -1;
}

/* A store failure: a session this workspace does not have is 404 (also another's). */
static void store_error(gpufl__reply_t *rep, int rc) {
    if (rc == GPUFL_ENOTFOUND) {
        gpufl__reply_error(rep, 404, "no such session in this workspace");
    } else if (rc == GPUFL_ENOMEM) {
        gpufl__reply_error(rep, 500, "out of memory");
    } else {
        fprintf(stderr, "gpufl-server: query failed: %s (%d)\n", gpufl_last_error(), rc);
        gpufl__reply_error(rep, gpufl__store_status(rc), "the query failed");
    }
}

static int64_t num(const char *v) { return v ? strtoll(v, NULL, 10) : 0; }

/* A row's value as JSON: integers for the columns named in ints, strings otherwise. */
static json_t *value(const char *v, const char *name, const char *const *ints) {
    if (!v) return json_null();
    for (size_t i = 0; ints && ints[i]; i++)
        if (!strcmp(ints[i], name)) return json_integer(num(v));
    return json_string(v);
}

typedef struct {
    json_t *rows;
    const char *const *ints;
    int drop_nulls; /* leave out the columns a row has no value in (a smaller answer) */
} rows_t;

static int object_cb(void *arg_, int n, const char *const *v, const char *const *names) {
    rows_t *r = arg_;
    json_t *o = json_object();
    for (int i = 0; o && i < n; i++)
        if (v[i] || !r->drop_nulls)
            json_object_set_new(o, names[i], value(v[i], names[i], r->ints));
    return o && !json_array_append_new(r->rows, o) ? 0 : GPUFL_ENOMEM;
}

/* The key's workspace as query text. */
static void ws_of(gpufl__request_t *req, char ws[32]) {
    snprintf(ws, 32, "%" PRId64, req->who.workspace_id);
}

/* 0 when the session is this workspace's; else rep is set (404 or a store error). */
static int session_known(gpufl__request_t *req, gpufl__reply_t *rep, const char *ws) {
    gpufl__server_t *s = req->server;
    const char *p[] = {ws, req->params[0]};
    rows_t r = {json_array(), NULL, 0};
    int rc = r.rows ? s->ops->query(s->store,
                                    "SELECT 1 AS one FROM sessions WHERE workspace_id ="
                                    " CAST(? AS BIGINT) AND session_id = ?",
                                    p, 2, object_cb, &r)
                    : GPUFL_ENOMEM;
    if (!rc && !json_array_size(r.rows)) rc = GPUFL_ENOTFOUND;
    json_decref(r.rows);
    if (rc) store_error(rep, rc);
    return rc;
}

/* ---- GET /api/v1/sessions ------------------------------------------------------------------ */

static const char *const session_ints[] = {"pid",         "start_unix_us",  "end_ns",
                                           "first_seen",  "last_window_at", "completed_at",
                                           "duration_ns", "insights",       NULL};
#define SESSION_COLUMNS                                                                            \
    "session_id, app_name, hostname, pid, job_id, engine, gpufl_version,"                          \
    " COALESCE(epoch_unix_us, 0) AS start_unix_us, end_ns, state, first_seen, last_window_at,"     \
    " completed_at"
/* The list's row: the session's columns (s), its duration (the session_end line's ts_ns: the
 * session clock starts at 0) and its stored report's insight count and top severity (r; NULL
 * before a report is built). */
#define LIST_COLUMNS                                                                               \
    "s.session_id, s.app_name, s.hostname, s.pid, s.job_id, s.engine, s.gpufl_version,"            \
    " COALESCE(s.epoch_unix_us, 0) AS start_unix_us, s.end_ns, s.state, s.first_seen,"             \
    " s.last_window_at, s.completed_at, s.end_ns AS duration_ns,"                                  \
    " CASE r.insights_top WHEN 3 THEN 'HIGH' WHEN 2 THEN 'MEDIUM' WHEN 1 THEN 'LOW' END"           \
    " AS top_severity, r.insights_count AS insights"
#define LIST_FROM                                                                                  \
    " FROM sessions s LEFT JOIN session_reports r ON r.workspace_id = s.workspace_id AND"          \
    " r.session_id = s.session_id"

/* The cursor: hex of "<sort>|<start_unix_us>|<session_id>" of the last session answered. */
static void cursor_make(char *out, size_t size, const char *sort, const char *start,
                        const char *sid) {
    char plain[CURSOR_MAX / 2];
    int n = snprintf(plain, sizeof plain, "%s|%s|%s", sort, start ? start : "0", sid);
    size_t o = 0;
    for (int i = 0; i < n && o + 3 <= size; i++)
        o += (size_t)snprintf(out + o, size - o, "%02x", (unsigned char)plain[i]);
    out[o] = '\0';
}

static int cursor_read(const char *text, const char *sort, char *start, size_t start_size,
                       char *sid, size_t sid_size) {
    size_t n = strlen(text);
    char plain[CURSOR_MAX / 2 + 1];
    if (n == 0 || n % 2 || n / 2 >= sizeof plain) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned x;
        if (sscanf(text + 2 * i, "%2x", &x) != 1) return -1;
        plain[i] = (char)x;
    }
    plain[n / 2] = '\0';
    char *a = strchr(plain, '|'), *b = a ? strchr(a + 1, '|') : NULL;
    if (!a || !b) return -1;
    *a = *b = '\0';
    char *end;
    strtoll(a + 1, &end, 10);
    if (strcmp(plain, sort) != 0 || end == a + 1 || *end || !gpufl__ingest_id_ok(b + 1)) return -1;
    snprintf(start, start_size, "%s", a + 1);
    snprintf(sid, sid_size, "%s", b + 1);
    return 0;
}

void gpufl__route_sessions_list(gpufl__request_t *req, gpufl__reply_t *rep) {
    static const char *const sorts[] = {"start_desc", "start_asc", NULL};
    static const char *const severities[] = {"LOW", "MEDIUM", "HIGH", NULL};
    static const char *const filters[][2] = {
        {"app", "s.app_name"}, {"host", "s.hostname"}, {"job", "s.job_id"}, {"engine", "s.engine"}};
    int64_t limit, from, to, min_dur, max_dur;
    const char *sort, *severity = NULL;
    if (int_arg(req, rep, "limit", 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT, &limit) ||
        int_arg(req, rep, "from", INT64_MIN, INT64_MAX, INT64_MIN, &from) ||
        int_arg(req, rep, "to", INT64_MIN, INT64_MAX, INT64_MAX, &to) ||
        int_arg(req, rep, "min_duration_ns", 0, INT64_MAX, -1, &min_dur) ||
        int_arg(req, rep, "max_duration_ns", 0, INT64_MAX, -1, &max_dur) ||
        word_arg(req, rep, "sort", sorts, &sort) ||
        (arg(req, "severity") && word_arg(req, rep, "severity", severities, &severity)))
        return;
    int desc = !strcmp(sort, "start_desc");
    char ws[32], from_t[32], to_t[32], limit_t[32], c_start[32], c_sid[GPUFL__ID_MAX + 1];
    char min_t[32], max_t[32], sev_t[8];
    ws_of(req, ws);
    snprintf(from_t, sizeof from_t, "%" PRId64, from);
    snprintf(to_t, sizeof to_t, "%" PRId64, to);
    snprintf(limit_t, sizeof limit_t, "%" PRId64, limit + 1); /* one more: is there a next? */
    const char *p[16];
    size_t n = 0;
    char sql[SQL_BYTES];
    int len = snprintf(sql, sizeof sql,
                       "SELECT " LIST_COLUMNS LIST_FROM " WHERE s.workspace_id ="
                       " CAST(? AS BIGINT) AND COALESCE(s.epoch_unix_us, 0) >= CAST(? AS BIGINT)"
                       " AND COALESCE(s.epoch_unix_us, 0) < CAST(? AS BIGINT)");
    p[n++] = ws, p[n++] = from_t, p[n++] = to_t;
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
        const char *v = arg(req, filters[i][0]);
        if (!v) continue;
        len += snprintf(sql + len, sizeof sql - (size_t)len, " AND %s = ?", filters[i][1]);
        p[n++] = v;
    }
    /* A duration or severity filter leaves out the sessions whose figure is not known yet. */
    if (min_dur >= 0) {
        snprintf(min_t, sizeof min_t, "%" PRId64, min_dur);
        len += snprintf(sql + len, sizeof sql - (size_t)len, " AND s.end_ns >= CAST(? AS BIGINT)");
        p[n++] = min_t;
    }
    if (max_dur >= 0) {
        snprintf(max_t, sizeof max_t, "%" PRId64, max_dur);
        len += snprintf(sql + len, sizeof sql - (size_t)len, " AND s.end_ns <= CAST(? AS BIGINT)");
        p[n++] = max_t;
    }
    if (severity) {
        gpufl_severity_t level = GPUFL_SEVERITY_LOW;
        gpufl_severity_parse(severity, &level);
        snprintf(sev_t, sizeof sev_t, "%d", (int)level);
        len += snprintf(sql + len, sizeof sql - (size_t)len,
                        " AND r.insights_top >= CAST(? AS INTEGER)");
        p[n++] = sev_t;
    }
    const char *cursor = arg(req, "cursor");
    if (cursor) {
        if (cursor_read(cursor, sort, c_start, sizeof c_start, c_sid, sizeof c_sid)) {
            bad_param(rep, "cursor", "cursor: not a cursor this route gave for this sort");
            return;
        }
        len +=
            snprintf(sql + len, sizeof sql - (size_t)len,
                     " AND (COALESCE(s.epoch_unix_us, 0) %s CAST(? AS BIGINT) OR"
                     " (COALESCE(s.epoch_unix_us, 0) = CAST(? AS BIGINT) AND s.session_id %s ?))",
                     desc ? "<" : ">", desc ? "<" : ">");
        p[n++] = c_start, p[n++] = c_start, p[n++] = c_sid;
    }
    snprintf(sql + len, sizeof sql - (size_t)len,
             " ORDER BY COALESCE(s.epoch_unix_us, 0) %s, s.session_id %s LIMIT CAST(? AS BIGINT)",
             desc ? "DESC" : "ASC", desc ? "DESC" : "ASC");
    p[n++] = limit_t;
    gpufl__server_t *s = req->server;
    rows_t r = {json_array(), session_ints, 0};
    int rc = r.rows ? s->ops->query(s->store, sql, p, n, object_cb, &r) : GPUFL_ENOMEM;
    if (rc) {
        json_decref(r.rows);
        store_error(rep, rc);
        return;
    }
    json_t *next = json_null();
    if (json_array_size(r.rows) > (size_t)limit) {
        json_array_remove(r.rows, (size_t)limit);
        json_t *last = json_array_get(r.rows, (size_t)limit - 1);
        char start[32], text[CURSOR_MAX + 1];
        snprintf(start, sizeof start, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(last, "start_unix_us")));
        cursor_make(text, sizeof text, sort, start,
                    json_string_value(json_object_get(last, "session_id")));
        json_decref(next);
        next = json_string(text);
    }
    rep->status = 200;
    rep->json = json_pack("{s:o,s:o}", "sessions", r.rows, "next_cursor", next);
}

/* ---- GET /api/v1/sessions/{id} --------------------------------------------------------------- */

void gpufl__route_sessions_get(gpufl__request_t *req, gpufl__reply_t *rep) {
    static const char *const ints[] = {"windows", "rows", "bytes", NULL};
    gpufl__server_t *s = req->server;
    char ws[32];
    ws_of(req, ws);
    const char *p[] = {ws, req->params[0]};
    rows_t r = {json_array(), session_ints, 0}, w = {json_array(), ints, 0};
    json_t *facts = NULL;
    int rc = r.rows && w.rows ? 0 : GPUFL_ENOMEM;
    if (!rc)
        rc = s->ops->query(s->store,
                           "SELECT " SESSION_COLUMNS " FROM sessions WHERE workspace_id ="
                           " CAST(? AS BIGINT) AND session_id = ?",
                           p, 2, object_cb, &r);
    if (!rc && !json_array_size(r.rows)) rc = GPUFL_ENOTFOUND;
    if (!rc)
        rc = s->ops->query(s->store,
                           "SELECT count(*) AS windows, COALESCE(sum(rows), 0) AS rows,"
                           " COALESCE(sum(bytes), 0) AS bytes FROM windows WHERE workspace_id ="
                           " CAST(? AS BIGINT) AND session_id = ?",
                           p, 2, object_cb, &w);
    if (!rc) rc = gpufl__report_facts(s, req->who.workspace_id, req->params[0], &facts);
    if (rc) {
        store_error(rep, rc);
    } else {
        json_t *doc = json_array_get(r.rows, 0);
        json_object_update(doc, json_array_get(w.rows, 0));
        json_object_update(doc, facts);
        rep->status = 200;
        rep->json = json_incref(doc);
    }
    json_decref(facts);
    json_decref(r.rows);
    json_decref(w.rows);
}

/* ---- report, insights ------------------------------------------------------------------------ */

/* A stored (or now built) text of session_reports, sent as it is. */
static void send_stored(gpufl__request_t *req, gpufl__reply_t *rep, const char *column,
                        const char *content_type) {
    char *text;
    size_t len;
    int rc = gpufl__report_get(req->server, req->who.workspace_id, req->params[0], column, 1, &text,
                               &len);
    if (rc) {
        store_error(rep, rc);
        return;
    }
    rep->status = 200;
    rep->raw = text;
    rep->raw_len = len;
    rep->content_type = content_type;
}

void gpufl__route_sessions_report(gpufl__request_t *req, gpufl__reply_t *rep) {
    static const char *const formats[] = {"text", "json", "html", NULL};
    const char *f;
    if (word_arg(req, rep, "format", formats, &f)) return;
    if (!strcmp(f, "text"))
        send_stored(req, rep, "report_text", "text/plain; charset=utf-8");
    else if (!strcmp(f, "json"))
        send_stored(req, rep, "report_json", "application/json");
    else
        send_stored(req, rep, "report_html", "text/html; charset=utf-8");
}

void gpufl__route_sessions_insights(gpufl__request_t *req, gpufl__reply_t *rep) {
    static const char *const formats[] = {"json", "text", NULL};
    const char *f;
    if (word_arg(req, rep, "format", formats, &f)) return;
    if (!strcmp(f, "json"))
        send_stored(req, rep, "insights_json", "application/json");
    else
        send_stored(req, rep, "insights_text", "text/plain; charset=utf-8");
}

/* ---- kernels per name ---------------------------------------------------------------------- */

void gpufl__route_sessions_kernels(gpufl__request_t *req, gpufl__reply_t *rep) {
    int64_t limit;
    if (int_arg(req, rep, "limit", 1, GPUFL__KERNEL_NAMES_MAX, KERNELS_DEFAULT, &limit)) return;
    char *text;
    size_t len;
    json_t *doc = NULL;
    int64_t ws = req->who.workspace_id;
    /* Stored at the last build when fresh; a session not built yet is computed now. */
    int rc = gpufl__report_get(req->server, ws, req->params[0], "kernels_json", 0, &text, &len);
    int built = !rc && text;
    if (built) {
        doc = json_loadb(text, len, 0, NULL);
        free(text);
        if (!doc) rc = gpufl__store_fail(GPUFL_EIO, "kernels: stored JSON is damaged");
    } else if (!rc) {
        rc = gpufl__report_kernels(req->server, ws, req->params[0], &doc);
    }
    if (rc) {
        store_error(rep, rc);
        return;
    }
    json_t *list = json_object_get(doc, "kernels");
    int cut = json_array_size(list) > (size_t)limit;
    while (json_array_size(list) > (size_t)limit)
        json_array_remove(list, json_array_size(list) - 1);
    if (cut) json_object_set_new(doc, "truncated", json_true());
    json_object_set_new(doc, "built", json_boolean(built));
    rep->status = 200;
    rep->json = doc;
}

/* ---- the scope tree -------------------------------------------------------------------------- */

/* The report's scope paths (host time) joined with its scope_gpu paths (GPU time) by path,
 * nested under their parents. */
static json_t *scope_tree(json_t *report) {
    json_t *paths = json_object_get(json_object_get(report, "scopes"), "paths");
    json_t *gpu = json_object_get(json_object_get(report, "scope_gpu"), "paths");
    json_t *by_path = json_object(), *roots = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(paths, i, p) {
        json_t *node = json_deep_copy(p);
        json_object_set_new(node, "children", json_array());
        const char *path = json_string_value(json_object_get(p, "path"));
        size_t j;
        json_t *g;
        json_array_foreach(gpu, j, g) {
            if (!path || strcmp(path, json_string_value(json_object_get(g, "path")) ?: ""))
                continue;
            const char *keys[] = {"gpu_ns", "self_ns", "kernels", "copies", "memsets"};
            for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
                json_object_set(node, k == 1 ? "gpu_self_ns" : keys[k],
                                json_object_get(g, keys[k]));
        }
        if (path) json_object_set(by_path, path, node);
        json_t *parent = json_object_get(p, "parent");
        json_t *up =
            json_is_string(parent) ? json_object_get(by_path, json_string_value(parent)) : NULL;
        json_array_append_new(up ? json_object_get(up, "children") : roots, node);
    }
    json_decref(by_path);
    return roots;
}

void gpufl__route_sessions_scopes(gpufl__request_t *req, gpufl__reply_t *rep) {
    char *text;
    size_t len;
    int rc = gpufl__report_get(req->server, req->who.workspace_id, req->params[0], "report_json", 1,
                               &text, &len);
    if (rc) {
        store_error(rep, rc);
        return;
    }
    json_t *report = json_loadb(text, len, 0, NULL);
    free(text);
    if (!report) {
        gpufl__reply_error(rep, 500, "the stored report is damaged");
        return;
    }
    json_t *scopes = json_object_get(report, "scopes"), *sg = json_object_get(report, "scope_gpu");
    rep->status = 200;
    rep->json =
        json_pack("{s:O?,s:O?,s:O?,s:o}", "paths_count", json_object_get(scopes, "paths_count"),
                  "attributed", json_object_get(sg, "attributed"), "unattributed_ns",
                  json_object_get(sg, "unattributed"), "tree", scope_tree(report));
    json_decref(report);
}

/* ---- ranges of time ----------------------------------------------------------------------- */

typedef struct {
    int64_t v[3];
    int seen;
} ints3_t;

static int ints3_cb(void *arg_, int n, const char *const *v, const char *const *names) {
    (void)names;
    ints3_t *t = arg_;
    for (int i = 0; i < n && i < 3; i++) t->v[i] = v[i] ? num(v[i]) : INT64_MIN;
    t->seen = 1;
    return 0;
}

/* The range a series covers: [from, to) from the parameters, else its first and last time. */
static int range_args(gpufl__request_t *req, gpufl__reply_t *rep, const ints3_t *bounds,
                      int64_t *from, int64_t *to) {
    int64_t lo = bounds->v[0] == INT64_MIN ? 0 : bounds->v[0];
    int64_t hi = bounds->v[1] == INT64_MIN ? 0 : bounds->v[1] + 1;
    if (int_arg(req, rep, "from", 0, INT64_MAX / 4, lo, from) ||
        int_arg(req, rep, "to", 0, INT64_MAX / 4, hi, to))
        return -1;
    if (*to < *from) {
        bad_param(rep, "to", "to: must not be before from");
        return -1;
    }
    return 0;
}

/* ---- metric series ------------------------------------------------------------------------- */

static const gpufl__table_t *table_named(const char *name) {
    for (size_t i = 0; i < gpufl__store_n_tables; i++)
        if (!strcmp(gpufl__store_tables[i]->name, name)) return gpufl__store_tables[i];
    return NULL;
}

typedef struct {
    json_t *series; /* gpu: an array of {device, buckets}; host: one object */
    int per_device;
} series_t;

/* A row: [device,] bucket, n, then min, mean, max of each column. */
static int bucket_cb(void *arg_, int n, const char *const *v, const char *const *names) {
    series_t *s = arg_;
    int c = 0;
    json_t *owner = s->series;
    if (s->per_device) {
        int64_t dev = num(v[c++]);
        json_t *last = json_array_get(s->series, json_array_size(s->series) - 1);
        if (!last || json_integer_value(json_object_get(last, "device")) != dev) {
            last = json_pack("{s:I,s:[]}", "device", (json_int_t)dev, "buckets");
            if (!last || json_array_append_new(s->series, last)) return GPUFL_ENOMEM;
        }
        owner = last;
    }
    json_t *b =
        json_pack("{s:I,s:I}", "bucket", (json_int_t)num(v[c]), "count", (json_int_t)num(v[c + 1]));
    if (!b) return GPUFL_ENOMEM;
    c += 2;
    for (; c + 2 < n; c += 3) {
        if (!v[c]) continue;             /* the column is empty in this bucket */
        const char *name = names[c] + 4; /* "min_<column>" */
        json_object_set_new(b, name,
                            json_pack("{s:f,s:f,s:f}", "min", strtod(v[c], NULL), "mean",
                                      strtod(v[c + 1], NULL), "max", strtod(v[c + 2], NULL)));
    }
    return json_array_append_new(json_object_get(owner, "buckets"), b) ? GPUFL_ENOMEM : 0;
}

/* Whether a NULL-ended list of names holds name. */
static int listed(const char *const *names, const char *name) {
    while (*names && strcmp(*names, name)) names++;
    return *names != NULL;
}

/* One table's series in buckets of width from from: the SQL is made from store_tables.c's
 * columns, every column but the time and the device (only: those named, NULL: all). */
static int series(gpufl__server_t *s, const char *table, const char *const *only,
                  const char *const *p, size_t n_p, const char *device_cond, series_t *out) {
    const gpufl__table_t *t = table_named(table);
    if (!t) return gpufl__store_fail(GPUFL_EIO, "metrics: no table %s", table);
    char sql[SQL_BYTES * 2];
    int len = snprintf(sql, sizeof sql,
                       "SELECT %s(ts_ns - CAST(? AS BIGINT)) / CAST(? AS BIGINT)"
                       " AS bucket, count(*) AS n",
                       out->per_device ? "device, " : "");
    for (size_t i = 0; i < t->n_columns; i++) {
        const char *c = t->columns[i].name;
        if (!strcmp(c, "ts_ns") || !strcmp(c, "device") || (only && !listed(only, c))) continue;
        len +=
            snprintf(sql + len, sizeof sql - (size_t)len,
                     ", min(%s) AS min_%s, avg(%s) AS avg_%s, max(%s) AS max_%s", c, c, c, c, c, c);
    }
    snprintf(sql + len, sizeof sql - (size_t)len,
             " FROM %s WHERE workspace_id = CAST(? AS BIGINT) AND session_id = ? AND ts_ns >="
             " CAST(? AS BIGINT) AND ts_ns < CAST(? AS BIGINT)%s GROUP BY %sbucket ORDER BY"
             " %sbucket",
             table, device_cond, out->per_device ? "device, " : "",
             out->per_device ? "device, " : "");
    return s->ops->query(s->store, sql, p, n_p, bucket_cb, out);
}

void gpufl__route_sessions_metrics(gpufl__request_t *req, gpufl__reply_t *rep) {
    gpufl__server_t *s = req->server;
    char ws[32], from_t[32], to_t[32], width_t[32], dev_t[32];
    ws_of(req, ws);
    int64_t points, device, from, to;
    if (int_arg(req, rep, "points", 1, POINTS_MAX, POINTS_DEFAULT, &points) ||
        int_arg(req, rep, "device", 0, INT32_MAX, -1, &device))
        return;
    if (session_known(req, rep, ws)) return;
    const char *p0[] = {ws, req->params[0], ws, req->params[0]};
    ints3_t b = {{INT64_MIN, INT64_MIN, 0}, 0};
    int rc = s->ops->query(s->store,
                           "SELECT min(lo), max(hi) FROM (SELECT min(ts_ns) AS lo, max(ts_ns) AS"
                           " hi FROM gpu_sample WHERE workspace_id = CAST(? AS BIGINT) AND"
                           " session_id = ? UNION ALL SELECT min(ts_ns), max(ts_ns) FROM"
                           " host_sample WHERE workspace_id = CAST(? AS BIGINT) AND session_id ="
                           " ?) t",
                           p0, 4, ints3_cb, &b);
    if (rc) {
        store_error(rep, rc);
        return;
    }
    if (range_args(req, rep, &b, &from, &to)) return;
    int64_t width = (to - from + points - 1) / points;
    if (width < 1) width = 1;
    snprintf(from_t, sizeof from_t, "%" PRId64, from);
    snprintf(to_t, sizeof to_t, "%" PRId64, to);
    snprintf(width_t, sizeof width_t, "%" PRId64, width);
    snprintf(dev_t, sizeof dev_t, "%" PRId64, device);
    const char *p[] = {from_t, width_t, ws, req->params[0], from_t, to_t, dev_t};
    series_t gpu = {json_array(), 1}, host = {json_pack("{s:[]}", "buckets"), 0};
    rc = gpu.series && host.series ? 0 : GPUFL_ENOMEM;
    if (!rc)
        rc = series(s, "gpu_sample", NULL, p, device >= 0 ? 7 : 6,
                    device >= 0 ? " AND device = CAST(? AS BIGINT)" : "", &gpu);
    if (!rc) rc = series(s, "host_sample", NULL, p, 6, "", &host);
    if (rc) {
        json_decref(gpu.series);
        json_decref(host.series);
        store_error(rep, rc);
        return;
    }
    rep->status = 200;
    rep->json = json_pack("{s:I,s:I,s:I,s:I,s:o,s:o}", "from_ns", (json_int_t)from, "to_ns",
                          (json_int_t)to, "points", (json_int_t)points, "bucket_ns",
                          (json_int_t)width, "gpu", gpu.series, "host", host.series);
}

/* ---- the timeline ------------------------------------------------------------------------ */

/* What a timeline answer holds (kinds=): GPU activity, the launching calls of its kernels, the
 * host threads' scopes, counter tracks. Without kinds= the answer is the first version's. */
enum { KIND_GPU = 1, KIND_LAUNCHES = 2, KIND_DETAILS = 4, KIND_SCOPES = 8, KIND_COUNTERS = 16 };

static const char *const kind_words[] = {"gpu", "launches", "details", "scopes", "counters", NULL};

/* One comma-separated list of words from allowed: a bit per word in *out. 0, or -1 with rep
 * set to 400. */
static int words_arg(gpufl__request_t *req, gpufl__reply_t *rep, const char *name,
                     const char *const *allowed, int def, int *out) {
    const char *v = arg(req, name);
    *out = def;
    if (!v) return 0;
    *out = 0;
    for (const char *w = v; *w;) {
        size_t n = strcspn(w, ",");
        size_t i = 0;
        while (allowed[i] && (strlen(allowed[i]) != n || strncmp(allowed[i], w, n))) i++;
        if (!allowed[i]) {
            char why[200];
            snprintf(why, sizeof why, "%s: \"%.*s\" is none of the kinds known", name,
                     (int)(n > 40 ? 40 : n), w);
            bad_param(rep, name, why);
            return -1;
        }
        *out |= 1 << i;
        w += n + (w[n] == ',');
    }
    if (!*out) bad_param(rep, name, "kinds: name at least one kind");
    return *out ? 0 : -1;
}

/* A kind of rows in a time range, answered whole up to max_events or downsampled past it. */
typedef struct {
    const char *columns; /* the columns answered, as SQL */
    const char *rows;    /* SELECT of columns, dur (ranks a bucket's rows) and tb (the time
                          * bucketed, from on) */
    const char *const *ints;
    int drop_nulls;
} windowed_t;

/* Fills doc with total, returned, downsampled, [bucket_ns, buckets] and key (the rows): up to
 * max_events the rows by start; past it, per bucket of time its KEEP_PER_BUCKET longest rows
 * and how many it holds, so the buckets' counts add up to total. */
static int windowed(gpufl__server_t *s, const windowed_t *w, const char *const *p, size_t n_p,
                    int64_t from, int64_t to, int64_t max_events, json_t *doc, const char *key) {
    char sql[SQL_BYTES], from_t[32], width_t[32], keep_t[32];
    const char *pd[16];
    if (n_p + 3 > sizeof pd / sizeof pd[0]) return gpufl__store_fail(GPUFL_EINVAL, "timeline");
    ints3_t total = {{0}, 0};
    snprintf(sql, sizeof sql, "SELECT count(*) FROM (%s) r", w->rows);
    int rc = s->ops->query(s->store, sql, p, n_p, ints3_cb, &total);
    if (rc) return rc;
    rows_t r = {json_array(), w->ints, w->drop_nulls};
    if (!r.rows) return GPUFL_ENOMEM;
    int down = total.v[0] > max_events;
    int64_t keep = max_events < KEEP_PER_BUCKET ? 1 : KEEP_PER_BUCKET;
    int64_t buckets = max_events / keep, width = 0;
    if (!down) {
        snprintf(sql, sizeof sql, "SELECT %s FROM (%s) r ORDER BY start_ns", w->columns, w->rows);
        rc = s->ops->query(s->store, sql, p, n_p, object_cb, &r);
    } else {
        width = (to - from + buckets - 1) / buckets;
        snprintf(width_t, sizeof width_t, "%" PRId64, width);
        snprintf(keep_t, sizeof keep_t, "%" PRId64, keep);
        snprintf(from_t, sizeof from_t, "%" PRId64, from);
        pd[0] = from_t, pd[1] = width_t;
        memcpy(pd + 2, p, n_p * sizeof *p);
        pd[n_p + 2] = keep_t;
        snprintf(sql, sizeof sql,
                 "SELECT %s, bucket, bucket_count FROM (SELECT t.*, ROW_NUMBER() OVER"
                 " (PARTITION BY bucket ORDER BY dur DESC, start_ns) AS rn, COUNT(*) OVER"
                 " (PARTITION BY bucket) AS bucket_count FROM (SELECT r.*, (tb - CAST(? AS"
                 " BIGINT)) / CAST(? AS BIGINT) AS bucket FROM (%s) r) t) u WHERE rn <="
                 " CAST(? AS BIGINT) ORDER BY bucket, start_ns",
                 w->columns, w->rows);
        rc = s->ops->query(s->store, sql, pd, n_p + 3, object_cb, &r);
    }
    if (rc) {
        json_decref(r.rows);
        return rc;
    }
    json_object_set_new(doc, "total", json_integer(total.v[0]));
    json_object_set_new(doc, "returned", json_integer((json_int_t)json_array_size(r.rows)));
    json_object_set_new(doc, "downsampled", json_boolean(down));
    if (down) {
        /* The buckets that hold rows: their counts add up to total. */
        json_t *list = json_array();
        size_t i;
        json_t *e;
        int64_t last = -1;
        json_array_foreach(r.rows, i, e) {
            int64_t k = json_integer_value(json_object_get(e, "bucket"));
            if (k != last) {
                json_array_append_new(list,
                                      json_pack("{s:I,s:I,s:O,s:i}", "bucket", (json_int_t)k,
                                                "from_ns", (json_int_t)(from + k * width), "count",
                                                json_object_get(e, "bucket_count"), "kept", 0));
                last = k;
            }
            json_t *cur = json_array_get(list, json_array_size(list) - 1);
            json_object_set_new(cur, "kept",
                                json_integer(json_integer_value(json_object_get(cur, "kept")) + 1));
            json_object_del(e, "bucket_count");
        }
        json_object_set_new(doc, "bucket_ns", json_integer(width));
        json_object_set_new(doc, "buckets", list);
    }
    json_object_set_new(doc, key, r.rows);
    return 0;
}

static const char *const event_ints[] = {
    "start_ns", "end_ns",    "device", "stream", "bucket", "bucket_count", "correlation",
    "tid",      "launch_ns", "grid_x", "grid_y", "grid_z", "block_x",      "block_y",
    "block_z",  "registers", "bytes",  "depth",  NULL};

#define ACTIVITY_RANGE                                                                             \
    " FROM activity WHERE workspace_id = CAST(? AS BIGINT) AND session_id = ? AND start_ns >="     \
    " CAST(? AS BIGINT) AND start_ns < CAST(? AS BIGINT)"
#define ACTIVITY_COLUMNS "kind, name, start_ns, end_ns, device, stream"
#define LAUNCH_COLUMNS   ", correlation, tid, launch_ns"
#define DETAIL_COLUMNS   ", grid_x, grid_y, grid_z, block_x, block_y, block_z, registers, bytes"

/* Scopes that overlap [from, to): a begin row joined with its end row by id (an open scope
 * has none), bucketed by when it is first seen in the range. */
#define SCOPE_ROWS                                                                                 \
    "SELECT b.tid AS tid, b.name AS name, b.depth AS depth, b.ts_ns AS start_ns, e.ts_ns AS"       \
    " end_ns, COALESCE(e.ts_ns, CAST(? AS BIGINT)) - b.ts_ns AS dur, CASE WHEN b.ts_ns <"          \
    " CAST(? AS BIGINT) THEN CAST(? AS BIGINT) ELSE b.ts_ns END AS tb FROM scope_event b LEFT"     \
    " JOIN scope_event e ON e.workspace_id = b.workspace_id AND e.session_id = b.session_id AND"   \
    " e.id = b.id AND e.kind = 'scope_end' WHERE b.workspace_id = CAST(? AS BIGINT) AND"           \
    " b.session_id = ? AND b.kind = 'scope_begin' AND b.ts_ns < CAST(? AS BIGINT) AND"             \
    " (e.ts_ns IS NULL OR e.ts_ns >= CAST(? AS BIGINT))"

/* The default columns of counter tracks: what a timeline shows under the streams. */
#define COUNTER_COLUMNS "gpu_util_pct,sm_active_pct,mem_used_bytes,power_mw"

/* counters=: gpu_sample columns by name (checked against the table), into names (cap n). */
static int counter_columns(gpufl__request_t *req, gpufl__reply_t *rep, char *buf, size_t size,
                           const char **names, size_t n) {
    const char *v = arg(req, "counters");
    snprintf(buf, size, "%s", v && *v ? v : COUNTER_COLUMNS);
    const gpufl__table_t *t = table_named("gpu_sample");
    size_t k = 0;
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        size_t c = 0;
        while (c < t->n_columns && strcmp(t->columns[c].name, w)) c++;
        if (c == t->n_columns || !strcmp(w, "ts_ns") || !strcmp(w, "device") || k + 1 >= n) {
            char why[160];
            snprintf(why, sizeof why, "counters: \"%.40s\" is no gpu_sample column (or too many)",
                     w);
            bad_param(rep, "counters", why);
            return -1;
        }
        names[k++] = w;
    }
    names[k] = NULL;
    return 0;
}

void gpufl__route_sessions_timeline(gpufl__request_t *req, gpufl__reply_t *rep) {
    gpufl__server_t *s = req->server;
    char ws[32], from_t[32], to_t[32], width_t[32], counters_buf[512];
    const char *counters[32];
    ws_of(req, ws);
    int64_t max_events, points, from, to;
    int kinds;
    if (int_arg(req, rep, "max_events", 1, EVENTS_MAX, EVENTS_DEFAULT, &max_events) ||
        int_arg(req, rep, "points", 1, POINTS_MAX, POINTS_DEFAULT, &points) ||
        words_arg(req, rep, "kinds", kind_words, KIND_GPU, &kinds) ||
        counter_columns(req, rep, counters_buf, sizeof counters_buf, counters,
                        sizeof counters / sizeof counters[0]))
        return;
    int first_version = !arg(req, "kinds");
    if (session_known(req, rep, ws)) return;
    /* The default range: the first version's is its activity's starts; with kinds= it is the
     * whole session's (activity, scopes and samples alike), whatever kinds are asked, so one
     * answer without from and to tells a viewer the extent of every track. */
    const char *p0[] = {ws, req->params[0], ws, req->params[0], ws, req->params[0]};
    ints3_t b = {{INT64_MIN, INT64_MIN, 0}, 0};
    int rc = s->ops->query(
        s->store,
        first_version ? "SELECT min(start_ns), max(start_ns) FROM activity WHERE workspace_id"
                        " = CAST(? AS BIGINT) AND session_id = ?"
                      : "SELECT min(lo), max(hi) FROM (SELECT min(start_ns) AS lo,"
                        " max(COALESCE(end_ns, start_ns)) AS hi FROM activity WHERE workspace_id"
                        " = CAST(? AS BIGINT) AND session_id = ? UNION ALL SELECT min(ts_ns),"
                        " max(ts_ns) FROM scope_event WHERE workspace_id = CAST(? AS BIGINT) AND"
                        " session_id = ? UNION ALL SELECT min(ts_ns), max(ts_ns) FROM gpu_sample"
                        " WHERE workspace_id = CAST(? AS BIGINT) AND session_id = ?) t",
        p0, first_version ? 2 : 6, ints3_cb, &b);
    if (rc) {
        store_error(rep, rc);
        return;
    }
    if (range_args(req, rep, &b, &from, &to)) return;
    snprintf(from_t, sizeof from_t, "%" PRId64, from);
    snprintf(to_t, sizeof to_t, "%" PRId64, to);
    json_t *doc = json_pack("{s:I,s:I}", "from_ns", (json_int_t)from, "to_ns", (json_int_t)to);
    rc = doc ? 0 : GPUFL_ENOMEM;
    if (!rc && (kinds & (KIND_GPU | KIND_LAUNCHES | KIND_DETAILS))) {
        char columns[256], rows[SQL_BYTES];
        snprintf(columns, sizeof columns, ACTIVITY_COLUMNS "%s%s",
                 kinds & KIND_LAUNCHES ? LAUNCH_COLUMNS : "",
                 kinds & KIND_DETAILS ? DETAIL_COLUMNS : "");
        snprintf(rows, sizeof rows,
                 "SELECT kind, COALESCE(name, mangled) AS name, start_ns, end_ns, device, stream"
                 "%s%s, COALESCE(end_ns - start_ns, 0) AS dur, start_ns AS tb" ACTIVITY_RANGE,
                 kinds & KIND_LAUNCHES ? LAUNCH_COLUMNS : "",
                 kinds & KIND_DETAILS ? DETAIL_COLUMNS : "");
        windowed_t w = {columns, rows, event_ints, !first_version};
        const char *p[] = {ws, req->params[0], from_t, to_t};
        rc = windowed(s, &w, p, 4, from, to, max_events, doc, "events");
    }
    if (!rc && (kinds & KIND_SCOPES)) {
        windowed_t w = {"tid, name, depth, start_ns, end_ns", SCOPE_ROWS, event_ints, 0};
        const char *p[] = {to_t, from_t, from_t, ws, req->params[0], to_t, from_t};
        json_t *scopes = json_object();
        rc = scopes ? windowed(s, &w, p, 7, from, to, max_events, scopes, "spans") : GPUFL_ENOMEM;
        if (scopes) json_object_set_new(doc, "scopes", scopes);
    }
    if (!rc && (kinds & KIND_COUNTERS)) {
        /* The metrics route's buckets, over the timeline's range, for the columns asked. */
        int64_t width = (to - from + points - 1) / points;
        if (width < 1) width = 1;
        snprintf(width_t, sizeof width_t, "%" PRId64, width);
        const char *p[] = {from_t, width_t, ws, req->params[0], from_t, to_t};
        series_t gpu = {json_array(), 1};
        rc = gpu.series ? series(s, "gpu_sample", counters, p, 6, "", &gpu) : GPUFL_ENOMEM;
        json_object_set_new(doc, "counters",
                            json_pack("{s:I,s:I,s:o}", "points", (json_int_t)points, "bucket_ns",
                                      (json_int_t)width, "gpu", gpu.series));
    }
    if (rc) {
        json_decref(doc);
        store_error(rep, rc);
        return;
    }
    rep->status = 200;
    rep->json = doc;
}

/* ---- for the other routes_*.c files ---------------------------------------------------------- */

int gpufl__query_int_arg(gpufl__request_t *req, gpufl__reply_t *rep, const char *name, int64_t lo,
                         int64_t hi, int64_t def, int64_t *out) {
    return int_arg(req, rep, name, lo, hi, def, out);
}

void gpufl__query_bad_param(gpufl__reply_t *rep, const char *name, const char *why) {
    bad_param(rep, name, why);
}

void gpufl__query_store_error(gpufl__reply_t *rep, int rc) { store_error(rep, rc); }
