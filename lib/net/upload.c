// SPDX-License-Identifier: Apache-2.0
/*
 * upload.c - the upload loop (upload.h): windows in order (channel, then sequence), each
 * looked up in the cursor, sent with retries and acknowledged under the cursor's lock, so that
 * two senders of one log root never send the same window and a sender killed at any point
 * loses nothing (an unacknowledged window is sent again; the server answers "duplicate").
 */
#include "net/upload.h"

#include "net/client.h"
#include "net/cursor.h"
#include "net/window.h"
#include "util/error.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS   60000

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms) {
    struct timespec t = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

/* Keeps the first error: "what: why" (cut to fit, marked with "..."). */
static void note_error(gpufl__net_upload_result_t *r, const char *what, const char *why) {
    if (r->error[0]) return;
    if (snprintf(r->error, sizeof r->error, "%s: %s", what, why) >= (int)sizeof r->error)
        memcpy(r->error + sizeof r->error - 4, "...", 4);
}

/* Full jitter: a uniform wait in [0, min(max, first * 2^attempt)], at least Retry-After. */
static int64_t backoff_ms(int attempt, int64_t retry_after_s, unsigned *seed) {
    int64_t cap = BACKOFF_FIRST_MS;
    for (int i = 0; i < attempt && cap < BACKOFF_MAX_MS; i++) cap *= 2;
    if (cap > BACKOFF_MAX_MS) cap = BACKOFF_MAX_MS;
    int64_t wait = (int64_t)((double)rand_r(seed) / RAND_MAX * (double)cap);
    if (retry_after_s >= 0 && wait < retry_after_s * 1000) wait = retry_after_s * 1000;
    return wait;
}

typedef struct run {
    const gpufl__net_upload_options_t *o;
    gpufl__net_client_t *client;
    gpufl__net_upload_result_t *r;
    const char *root;
    int64_t deadline_ms;
    unsigned seed;
} run_t;

/* Sends one request until it is answered for good or the budget is spent; *a is the last
 * answer. Returns 1 when acknowledged. */
static int with_retries(run_t *u, gpufl__net_answer_t *a, const gpufl__net_session_t *s,
                        const gpufl__net_window_t *w, const char *body, size_t len) {
    for (int attempt = 0;; attempt++) {
        int rc = w ? gpufl__net_client_send_window(u->client, a, s->id,
                                                   gpufl__net_channel_names[w->channel],
                                                   w->sequence, w->id, body, len)
                   : gpufl__net_client_complete(u->client, a, s->id);
        if (rc != 0) {
            snprintf(a->message, sizeof a->message, "%s", gpufl_last_error());
            a->verdict = GPUFL__NET_REFUSED;
            return 0;
        }
        if (a->verdict != GPUFL__NET_RETRY) return a->verdict == GPUFL__NET_ACKED;
        int64_t wait = backoff_ms(attempt, a->retry_after_s, &u->seed);
        if (now_ms() + wait > u->deadline_ms) {
            snprintf(a->message + strlen(a->message), sizeof a->message - strlen(a->message),
                     " (gave up: the upload's time budget is spent)");
            return 0;
        }
        u->r->retries++;
        sleep_ms(wait);
    }
}

/* One window, under the cursor's lock. Returns 0 to go on, 1 to stop (the key is refused),
 * or a negative GPUFL_E* (the cursor cannot be used). */
static int ship_window(run_t *u, const gpufl__net_session_t *s, const gpufl__net_window_t *w) {
    const char *channel = gpufl__net_channel_names[w->channel];
    gpufl__net_upload_result_t *r = u->r;
    gpufl__net_cursor_t *cur = NULL;
    int rc = gpufl__net_cursor_open(&cur, u->root);
    if (rc != 0) return rc;
    if (gpufl__net_cursor_acked(cur, s->id, channel, w->sequence)) {
        r->windows_before++;
        goto done;
    }
    if (gpufl__net_cursor_quarantined(cur, s->id, channel, w->sequence)) {
        r->windows_quarantined++;
        goto done;
    }
    if (!w->sealed) {
        r->windows_open++;
        goto done;
    }
    char *body = NULL;
    size_t len = 0;
    if ((rc = gpufl__net_window_read(&body, &len, w)) != 0) {
        r->windows_failed++;
        note_error(r, w->id, gpufl_last_error());
        rc = 0;
        goto done;
    }
    gpufl__net_answer_t a;
    if (with_retries(u, &a, s, w, body, len)) {
        rc = gpufl__net_cursor_ack(cur, s->id, channel, w->sequence);
        if (rc == 0) rc = gpufl__net_cursor_save(cur);
        if (rc == 0) {
            if (a.duplicate)
                r->windows_duplicate++;
            else
                r->windows_sent++;
            r->rows += a.rows > 0 ? a.rows : 0;
            r->bytes += (int64_t)len;
        }
    } else if (a.verdict == GPUFL__NET_AUTH) {
        r->auth_refused = 1;
        r->windows_failed++;
        char why[600];
        snprintf(why, sizeof why, "the server refused the key %s (HTTP %ld): %s",
                 gpufl__net_client_key_name(u->client), a.status, a.message);
        note_error(r, "upload", why);
        rc = 1;
    } else if (a.verdict == GPUFL__NET_CONFLICT) {
        /* Other bytes under this window: never replaced, kept aside and reported. */
        r->windows_quarantined++;
        gpufl__warn("upload: %s conflicts with what the server holds (409: %s): quarantined in "
                    "the cursor, not sent again",
                    w->id, a.message);
        note_error(r, w->id, a.message);
        rc = gpufl__net_cursor_quarantine(cur, s->id, channel, w->sequence);
        if (rc == 0) rc = gpufl__net_cursor_save(cur);
    } else {
        r->windows_failed++;
        char what[64];
        if (a.verdict == GPUFL__NET_TOO_LARGE)
            snprintf(what, sizeof what, "too large for the server (413; see --max-body-mib)");
        else if (a.status)
            snprintf(what, sizeof what, "refused (HTTP %ld)", a.status);
        else
            snprintf(what, sizeof what, "not delivered");
        char why[700];
        snprintf(why, sizeof why, "%s: %s", what, a.message);
        note_error(r, w->id, why);
    }
    free(body);
done:
    gpufl__net_cursor_close(cur);
    if (u->o->progress) u->o->progress(u->o->user, r, w->id);
    return rc;
}

typedef struct learned {
    gpufl__net_cursor_t *cur;
    const gpufl__net_session_t *s;
    int channel;
    int64_t acked;
} learned_t;

/* A window the server has: acknowledged in the cursor when the session has it here too. */
static void server_has(void *user, int64_t sequence) {
    learned_t *l = user;
    for (size_t i = 0; i < l->s->n; i++)
        if (l->s->windows[i].channel == l->channel && l->s->windows[i].sequence == sequence &&
            gpufl__net_cursor_ack(l->cur, l->s->id, gpufl__net_channel_names[l->channel],
                                  sequence) == 0)
            l->acked++;
}

/* A session the cursor knows nothing of (new here, or the cursor was lost or damaged): what
 * the server already has of it is acknowledged first, one question per channel and page, so a
 * lost cursor does not send every window again. A server that cannot say is not asked again:
 * its duplicate answers keep the windows stored once anyway. */
static int learn_from_server(run_t *u, const gpufl__net_session_t *s) {
    gpufl__net_cursor_t *cur = NULL;
    int rc = gpufl__net_cursor_open(&cur, u->root);
    if (rc != 0) return rc;
    learned_t l = {cur, s, 0, 0};
    int known = gpufl__net_cursor_knows(cur, s->id);
    for (int c = 0; c < GPUFL__NET_CHANNELS && !known; c++) {
        int present = 0;
        for (size_t i = 0; i < s->n && !present; i++) present = s->windows[i].channel == c;
        l.channel = c;
        for (int64_t after = -1, page = 0; present && page < 1000; page++) {
            gpufl__net_answer_t a;
            if (gpufl__net_client_windows(u->client, &a, s->id, gpufl__net_channel_names[c], after,
                                          server_has, &l, &after) != 0 ||
                a.verdict != GPUFL__NET_ACKED || after < 0)
                break;
        }
    }
    if (l.acked) rc = gpufl__net_cursor_save(cur);
    gpufl__net_cursor_close(cur);
    return rc;
}

/* session-complete once every channel ended and every window is acknowledged. */
static int complete_session(run_t *u, const gpufl__net_session_t *s) {
    gpufl__net_cursor_t *cur = NULL;
    int rc = gpufl__net_cursor_open(&cur, u->root);
    if (rc != 0) return rc;
    int all = s->ended;
    for (size_t i = 0; all && i < s->n; i++)
        all = gpufl__net_cursor_acked(cur, s->id, gpufl__net_channel_names[s->windows[i].channel],
                                      s->windows[i].sequence);
    if (all && gpufl__net_cursor_completed(cur, s->id)) {
        u->r->sessions_completed++;
    } else if (all) {
        gpufl__net_answer_t a;
        if (with_retries(u, &a, s, NULL, NULL, 0)) {
            u->r->sessions_completed++;
            rc = gpufl__net_cursor_complete(cur, s->id);
            if (rc == 0) rc = gpufl__net_cursor_save(cur);
        } else {
            note_error(u->r, s->id, a.message);
            if (a.verdict == GPUFL__NET_AUTH) u->r->auth_refused = 1;
        }
    }
    gpufl__net_cursor_close(cur);
    return rc;
}

int gpufl__net_upload(gpufl__net_upload_result_t *r, const gpufl__net_upload_options_t *o,
                      const char *root, const char *const *dirs, size_t n) {
    run_t u = {o, NULL, r, root, 0, (unsigned)time(NULL) ^ (unsigned)getpid()};
    int rc =
        gpufl__net_client_create(&u.client, o->base_url, o->api_path, o->api_key, o->timeout_ms);
    if (rc != 0) return rc;
    u.deadline_ms = now_ms() + (o->budget_ms > 0 ? o->budget_ms : 5 * 60 * 1000);
    for (size_t d = 0; d < n && rc >= 0 && !r->auth_refused; d++) {
        gpufl__net_session_t s;
        int src = gpufl__net_session_scan(&s, dirs[d]);
        if (src != 0) {
            note_error(r, dirs[d], gpufl_last_error());
            r->windows_failed++;
            continue;
        }
        r->sessions++;
        rc = learn_from_server(&u, &s);
        for (size_t i = 0; i < s.n && rc == 0; i++) rc = ship_window(&u, &s, &s.windows[i]);
        if (rc == 0) rc = complete_session(&u, &s);
        gpufl__net_session_fini(&s);
        if (rc == 1) rc = 0; /* the key refused: r says so, the loop ends */
    }
    gpufl__net_client_destroy(u.client);
    if (rc < 0) return rc;
    return r->windows_failed || r->auth_refused || r->windows_quarantined ? 1 : 0;
}
