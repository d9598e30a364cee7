// SPDX-License-Identifier: Apache-2.0
/*
 * ingest.c - the ingest routes: POST /api/v1/events/stream (headers checked and the 429 bound
 * taken before the body is read, then the window parsed by ingest_parse.c and committed whole
 * by the store), POST /api/v1/events/session-complete and GET /api/v1/info/version.
 */
#include "server.h"

#include <gpufl/gpufl.h>

#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the routes --------------------------------------------------------------------------- */

static const char *request_header(void *arg, const char *name) {
    return gpufl__request_header(arg, name);
}

void gpufl__ingest_stream_precheck(gpufl__request_t *req, gpufl__reply_t *rep) {
    gpufl__ingest_headers_t *h = malloc(sizeof *h);
    if (!h) {
        gpufl__reply_error(rep, 500, "out of memory");
        return;
    }
    json_t *error;
    int status = gpufl__ingest_headers_parse(h, request_header, req, &error);
    if (status) {
        free(h);
        rep->status = (unsigned)status;
        rep->json = error;
        return;
    }
    /* The bound on windows parsed and stored at once: past it the store is behind, and the
     * sender retries later rather than piling bodies up in memory here. */
    gpufl__server_t *s = req->server;
    if (atomic_fetch_add(&s->windows_busy, 1) >= s->settings->max_windows) {
        atomic_fetch_sub(&s->windows_busy, 1);
        free(h);
        gpufl__reply_error(rep, 429, "the store is behind: retry after the Retry-After seconds");
        rep->header_name = "Retry-After";
        rep->header_value = "1";
        return;
    }
    req->state = h;
}

void gpufl__ingest_stream_done(gpufl__request_t *req) {
    if (!req->state) return;
    free(req->state);
    req->state = NULL;
    atomic_fetch_sub(&req->server->windows_busy, 1);
}

/* ---- a window in slices: the dict lines its earlier slices stored --------------------------- */

#define DICT_BYTES_MAX ((size_t)256 << 20) /* stored dict lines one slice may load */

typedef struct dict_lines {
    gpufl__line_t *lines;
    size_t n, cap, bytes;
} dict_lines_t;

static int dict_row(void *arg, int n, const char *const *values, const char *const *names) {
    (void)names;
    dict_lines_t *d = arg;
    if (n < 1 || !values[0]) return 0;
    size_t len = strlen(values[0]);
    if (d->bytes + len > DICT_BYTES_MAX) return GPUFL_ENOMEM;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        gpufl__line_t *lines = realloc(d->lines, cap * sizeof *lines);
        if (!lines) return GPUFL_ENOMEM;
        d->lines = lines;
        d->cap = cap;
    }
    char *text = malloc(len + 1);
    if (!text) return GPUFL_ENOMEM;
    memcpy(text, values[0], len + 1);
    d->lines[d->n++] = (gpufl__line_t){text, len, "dict", 0};
    d->bytes += len;
    return 0;
}

static void dict_lines_free(dict_lines_t *d) {
    for (size_t i = 0; i < d->n; i++) free((char *)d->lines[i].text);
    free(d->lines);
    memset(d, 0, sizeof *d);
}

/* A slice at an offset may use the ids its window's earlier slices defined: their dict lines,
 * as stored. Read before the window's transaction; the store's prefix check then proves those
 * slices are the sender's. */
static int stored_dicts(gpufl__server_t *s, int64_t workspace_id, const gpufl__ingest_headers_t *h,
                        dict_lines_t *out) {
    if (h->offset == 0) return 0;
    char ws[32], seq[32];
    snprintf(ws, sizeof ws, "%" PRId64, workspace_id);
    snprintf(seq, sizeof seq, "%" PRId64, h->sequence);
    const char *params[] = {ws, h->session_id, h->channel, seq};
    return s->ops->query(s->store,
                         "SELECT body FROM lines WHERE workspace_id = CAST(? AS BIGINT)"
                         " AND session_id = ? AND channel = ? AND sequence = CAST(? AS BIGINT)"
                         " AND type = 'dict' ORDER BY line_no",
                         params, 4, dict_row, out);
}

static void reply_held(gpufl__reply_t *rep, const gpufl__window_held_t *held) {
    json_object_set_new(rep->json, "stored_bytes", json_integer((json_int_t)held->bytes));
    json_object_set_new(rep->json, "final", json_boolean(held->final));
}

void gpufl__ingest_stream(gpufl__request_t *req, gpufl__reply_t *rep) {
    const gpufl__ingest_headers_t *h = req->state;
    gpufl__server_t *s = req->server;
    gpufl__parsed_t *p = NULL;
    json_t *error = NULL;
    dict_lines_t dicts = {0};
    int status = stored_dicts(s, req->who.workspace_id, h, &dicts);
    if (status == 0)
        status = gpufl__ingest_parse(&p, &error, h, req->who.workspace_id, req->body, req->body_len,
                                     dicts.lines, dicts.n);
    else if (status != GPUFL_ENOMEM)
        status = gpufl__store_status(status) == 503 ? GPUFL_EUNAVAILABLE : GPUFL_EIO;
    dict_lines_free(&dicts);
    if (status) {
        if (status == GPUFL_EUNAVAILABLE) {
            gpufl__reply_error(rep, 503, "the window could not be stored");
        } else if (status < 0) {
            gpufl__reply_error(rep, 500,
                               status == GPUFL_ENOMEM ? "out of memory"
                                                      : "the window's stored lines are damaged");
        } else {
            rep->status = (unsigned)status;
            rep->json = error;
        }
        gpufl__ingest_stream_done(req);
        return;
    }
    if (s->settings->store_delay_ms > 0) usleep((useconds_t)s->settings->store_delay_ms * 1000);
    gpufl__window_outcome_t outcome = 0;
    gpufl__window_held_t held = {0, 0};
    gpufl__window_t window = *gpufl__parsed_window(p);
    window.held = &held;
    const gpufl__window_t *w = &window;
    int rc = s->ops->window_put(s->store, &outcome, w);
    gpufl__metrics_window(outcome, rc, w->rows, w->bytes);
    if (rc == 0 && outcome == GPUFL__WINDOW_STORED) gpufl__live_window(s, w);
    if (rc != 0) {
        /* The engine's message may name tables and paths: it goes to the log, not the sender. */
        fprintf(stderr, "gpufl-server: window %s of session %s not stored: %s (%d)\n", h->window_id,
                h->session_id, gpufl_last_error(), rc);
        gpufl__reply_error(rep, gpufl__store_status(rc), "the window could not be stored");
    } else if (outcome == GPUFL__WINDOW_CONFLICT) {
        gpufl__reply_error(rep, 409, "this window (or window id) was stored with other bytes");
        json_object_set_new(rep->json, "window_id", json_string(h->window_id));
    } else if (outcome == GPUFL__WINDOW_RANGE) {
        /* The sender realigns: it sends from stored_bytes with the crc32 of its own bytes
         * before them, or stops when the window is final. */
        gpufl__reply_error(rep, 416,
                           held.final ? "the window is sealed: its bytes are all stored"
                           : held.bytes == 0
                               ? "nothing of this window is stored: send it from offset 0"
                               : "the slice does not begin where the stored bytes end");
        reply_held(rep, &held);
    } else {
        rep->status = 200;
        rep->json = json_pack("{s:I,s:s}", "rows", (json_int_t)w->rows, "window",
                              outcome == GPUFL__WINDOW_STORED ? "stored" : "duplicate");
        reply_held(rep, &held);
        if (json_array_size(gpufl__parsed_damaged(p)))
            json_object_set(rep->json, "damaged", gpufl__parsed_damaged(p));
    }
    gpufl__parsed_destroy(p);
    /* The slot is free before the answer leaves, so the sender's next window finds it free. */
    gpufl__ingest_stream_done(req);
}

typedef struct found {
    int n;
} found_t;

static int count_row(void *arg, int n, const char *const *values, const char *const *names) {
    (void)n;
    (void)values;
    (void)names;
    ((found_t *)arg)->n++;
    return 0;
}

void gpufl__ingest_session_complete(gpufl__request_t *req, gpufl__reply_t *rep) {
    json_error_t err;
    json_t *doc = json_loadb(req->body ? req->body : "", req->body_len, 0, &err);
    json_t *sid = json_object_get(doc, "session_id");
    if (!json_is_string(sid) || !gpufl__ingest_id_ok(json_string_value(sid))) {
        gpufl__reply_error(rep, 400,
                           doc ? "expected {\"session_id\": \"...\"}" : "the body is not JSON");
        json_decref(doc);
        return;
    }
    gpufl__server_t *s = req->server;
    char ws[32], now[32];
    snprintf(ws, sizeof ws, "%" PRId64, req->who.workspace_id);
    snprintf(now, sizeof now, "%" PRId64, (int64_t)time(NULL));
    const char *id = json_string_value(sid);
    const char *find[] = {ws, id};
    found_t found = {0};
    int rc =
        s->ops->query(s->store, "SELECT 1 FROM sessions WHERE workspace_id = ? AND session_id = ?",
                      find, 2, count_row, &found);
    if (rc == 0 && !found.n) {
        gpufl__reply_error(rep, 404, "no such session in this workspace");
    } else if (rc == 0) {
        /* Only the first completion sets the time: a retry changes nothing. */
        const char *mark[] = {now, ws, id};
        rc = s->ops->query(s->store,
                           "UPDATE sessions SET state = 'complete', completed_at = ? WHERE "
                           "workspace_id = ? AND session_id = ? AND completed_at IS NULL",
                           mark, 3, NULL, NULL);
    }
    if (rc != 0) {
        gpufl__reply_error(rep, gpufl__store_status(rc), "the session could not be marked");
    } else if (found.n) {
        gpufl__live_session_state(s->live, req->who.workspace_id, id, "complete");
        rep->status = 200;
        rep->json = json_pack("{s:s,s:s}", "session_id", id, "state", "complete");
    }
    json_decref(doc);
}

/* ---- what the server has of a session ------------------------------------------------------ */

#define WINDOWS_PAGE_MAX 10000 /* the query's LIMIT is one more: whether a next page exists */

typedef struct windows_list {
    json_t *list;
    int64_t last_seq;
} windows_list_t;

static int window_row(void *arg, int n, const char *const *values, const char *const *names) {
    (void)names;
    windows_list_t *w = arg;
    if (n < 5 || !values[0] || !values[1] || !values[2] || !values[3] || !values[4]) return 0;
    w->last_seq = strtoll(values[1], NULL, 10);
    json_array_append_new(w->list,
                          json_pack("{s:s,s:I,s:s,s:I,s:b}", "channel", values[0], "sequence",
                                    (json_int_t)w->last_seq, "window_id", values[2], "bytes",
                                    (json_int_t)strtoll(values[3], NULL, 10), "final",
                                    strcmp(values[4], "0") != 0));
    return 0;
}

/* GET /api/v1/events/windows?session_id=S&channel=C[&after=N]: the windows of one channel of a
 * session the key's workspace holds, by sequence, WINDOWS_PAGE_MAX at most a page (next_after
 * when there are more). A sender that lost its cursor learns from it what is delivered. */
void gpufl__ingest_windows(gpufl__request_t *req, gpufl__reply_t *rep) {
    const char *sid =
        MHD_lookup_connection_value(req->connection, MHD_GET_ARGUMENT_KIND, "session_id");
    const char *channel =
        MHD_lookup_connection_value(req->connection, MHD_GET_ARGUMENT_KIND, "channel");
    int64_t after;
    if (!sid || !gpufl__ingest_id_ok(sid)) {
        gpufl__query_bad_param(rep, "session_id", "expected a session id");
        return;
    }
    if (!channel ||
        (strcmp(channel, "device") && strcmp(channel, "scope") && strcmp(channel, "system"))) {
        gpufl__query_bad_param(rep, "channel", "expected device, scope or system");
        return;
    }
    if (gpufl__query_int_arg(req, rep, "after", -1, INT32_MAX, -1, &after) != 0) return;
    gpufl__server_t *s = req->server;
    char ws[32], after_text[32];
    snprintf(ws, sizeof ws, "%" PRId64, req->who.workspace_id);
    snprintf(after_text, sizeof after_text, "%" PRId64, after);
    const char *params[] = {ws, sid, channel, after_text};
    windows_list_t w = {json_array(), -1};
    int rc = s->ops->query(
        s->store,
        "SELECT channel, sequence, window_id, bytes, final FROM windows WHERE workspace_id = ? "
        "AND session_id = ? AND channel = ? AND sequence > ? "
        "ORDER BY sequence LIMIT 10001", /* WINDOWS_PAGE_MAX + 1 */
        params, 4, window_row, &w);
    if (rc != 0 || !w.list) {
        json_decref(w.list);
        gpufl__reply_error(rep, gpufl__store_status(rc), "the windows could not be read");
        return;
    }
    json_t *next = json_null();
    if (json_array_size(w.list) > WINDOWS_PAGE_MAX) {
        json_array_remove(w.list, WINDOWS_PAGE_MAX);
        next = json_integer(json_integer_value(
            json_object_get(json_array_get(w.list, WINDOWS_PAGE_MAX - 1), "sequence")));
    }
    rep->status = 200;
    rep->json = json_pack("{s:s,s:s,s:o,s:o}", "session_id", sid, "channel", channel, "windows",
                          w.list, "next_after", next);
}

void gpufl__ingest_version(gpufl__request_t *req, gpufl__reply_t *rep) {
    (void)req;
    rep->status = 200;
    rep->json = json_pack("{s:o,s:o,s:s}", "supported", gpufl__ingest_supported(), "encodings",
                          gpufl__ingest_encodings(), "server", gpufl_version());
}
