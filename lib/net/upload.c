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
#include "net/spool.h"
#include "net/window.h"
#include "util/error.h"
#include "util/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

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

/* Sends one request (a slice of w, or session-complete when w is NULL) until it is answered
 * for good or the budget is spent; *a is the last answer. Returns 1 when acknowledged. */
static int with_retries(run_t *u, gpufl__net_answer_t *a, const gpufl__net_session_t *s,
                        const gpufl__net_window_t *w, const gpufl__net_slice_t *slice,
                        const char *body, size_t len) {
    for (int attempt = 0;; attempt++) {
        int rc = w ? gpufl__net_client_send_window(u->client, a, s->id,
                                                   gpufl__net_channel_names[w->channel],
                                                   w->sequence, w->id, slice, body, len)
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

/* Where a slice of at most cap bytes from `from` ends: after its last complete line within
 * the cap (the window's end when it fits), or -1 when one line alone is longer than cap. */
static int64_t slice_end(const char *body, int64_t base, int64_t from, int64_t end, int64_t cap) {
    if (end - from <= cap) return end;
    for (int64_t i = from + cap; i > from; i--)
        if (body[i - 1 - base] == '\n') return i;
    return -1;
}

/* A window's progress while it is shipped: what the server holds of it (acked bytes and their
 * crc32), the bytes in memory from base, and the largest slice the server takes. */
typedef struct shipping {
    int64_t acked;
    uint32_t crc;
    int64_t base;
    char *body;
    size_t len;
    int64_t cap;
    int realigned; /* 416s followed: a bounded number, so two senders cannot loop */
} shipping_t;

/* A 416: the server holds `stored` bytes (final or not) where the sender thought it held
 * sh->acked. Moves sh to the server's end when this file has it (its crc32 read from the file
 * proves the bytes before the next slice), or to the start to prove a whole final window by a
 * duplicate. Returns 1 to go on sending, 0 to leave the window for a later pass, -1 when the
 * server's window cannot be this one (other bytes: a conflict). */
static int realign(shipping_t *sh, const gpufl__net_window_t *w, const gpufl__net_answer_t *a) {
    if (++sh->realigned > 3 || a->stored_bytes < 0) return 0;
    int64_t stored = a->stored_bytes;
    if (a->final == 1 || stored > w->bytes) {
        /* Sealed there, or longer there than here. Only the whole window, once sealed here,
         * tells a duplicate from other bytes; when that was just sent, they are other bytes. */
        if (!w->sealed) return 0;
        if (sh->acked == 0 && sh->cap == INT64_MAX) return -1;
        stored = 0;
    }
    uint32_t crc = 0;
    if (stored > 0 && gpufl__net_window_crc(&crc, w, stored) != 0) return 0;
    sh->acked = stored;
    sh->crc = crc;
    return 1;
}

/* Ships what the server lacks of w: its bytes past the acknowledged ones, as one slice or, past
 * the server's body cap (413), as several at line ends; final on the slice that ends a sealed
 * window. The cursor advances after every acknowledged slice. Returns 0 to go on, 1 to stop
 * (the key is refused), or a negative GPUFL_E* (the cursor cannot be used). */
static int ship_slices(run_t *u, gpufl__net_cursor_t *cur, const gpufl__net_session_t *s,
                       const gpufl__net_window_t *w, shipping_t *sh) {
    const char *channel = gpufl__net_channel_names[w->channel];
    gpufl__net_upload_result_t *r = u->r;
    gpufl__net_answer_t a;
    int realigned = 1;
    for (;;) {
        if (!w->sealed && sh->acked == w->bytes) return 0; /* all sent; more lines later */
        if (sh->acked < sh->base || sh->acked > sh->base + (int64_t)sh->len) {
            /* Realigned outside what is in memory: read again from there. */
            free(sh->body);
            sh->body = NULL;
            sh->base = sh->acked;
            if (gpufl__net_window_read(&sh->body, &sh->len, w, sh->base) != 0) {
                r->windows_failed++;
                note_error(r, w->id, gpufl_last_error());
                return 0;
            }
        }
        int64_t end = slice_end(sh->body, sh->base, sh->acked, w->bytes, sh->cap);
        if (end < 0) {
            r->windows_failed++;
            note_error(r, w->id,
                       "a line is larger than the server's body cap (413; see --max-body-mib)");
            return 0;
        }
        gpufl__net_slice_t slice = {sh->acked, w->sealed && end == w->bytes, sh->crc};
        const char *part = sh->body + (sh->acked - sh->base);
        size_t part_len = (size_t)(end - sh->acked);
        if (with_retries(u, &a, s, w, &slice, part, part_len)) {
            int rc;
            sh->crc = (uint32_t)crc32(sh->crc, (const Bytef *)part, (uInt)part_len);
            sh->acked = end;
            if (slice.final)
                rc = gpufl__net_cursor_ack(cur, s->id, channel, w->sequence);
            else
                rc = gpufl__net_cursor_set_partial(cur, s->id, channel, w->sequence, sh->acked,
                                                   sh->crc);
            if (rc == 0) rc = gpufl__net_cursor_save(cur);
            if (rc != 0) return rc;
            r->rows += a.rows > 0 ? a.rows : 0;
            r->bytes += (int64_t)part_len;
            if (a.damaged > 0) {
                r->lines_damaged += a.damaged;
                gpufl__warn("upload: %s: %lld damaged line(s) stored as written (line %s of the "
                            "slice at byte %lld); `gpufl report` lists them under log problems",
                            w->id, (long long)a.damaged, a.damaged_list, (long long)slice.offset);
            }
            if (!slice.final || slice.offset > 0) r->slices_sent++;
            if (slice.final) {
                if (a.duplicate)
                    r->windows_duplicate++;
                else
                    r->windows_sent++;
            }
            if (slice.final || end == w->bytes) return 0; /* open windows wait for more lines */
            continue;
        }
        if (a.verdict == GPUFL__NET_TOO_LARGE && end - sh->acked > 1) {
            sh->cap = (end - sh->acked) / 2; /* and stays so for the rest of the window */
            continue;
        }
        if (a.verdict == GPUFL__NET_REALIGN && (realigned = realign(sh, w, &a)) == 1) continue;
        break;
    }
    if (a.verdict == GPUFL__NET_REALIGN && realigned == -1) {
        a.verdict = GPUFL__NET_CONFLICT;
        snprintf(a.message, sizeof a.message,
                 "the server holds this window sealed with other bytes (416: %lld bytes)",
                 (long long)a.stored_bytes);
    }
    if (a.verdict == GPUFL__NET_REALIGN) {
        /* The server holds more than this file shows yet: another sender saw more of it. */
        r->windows_open++;
        return 0;
    }
    if (a.verdict == GPUFL__NET_AUTH) {
        r->auth_refused = 1;
        r->windows_failed++;
        char why[600];
        snprintf(why, sizeof why, "the server refused the key %s (HTTP %ld): %s",
                 gpufl__net_client_key_name(u->client), a.status, a.message);
        note_error(r, "upload", why);
        return 1;
    }
    if (a.verdict == GPUFL__NET_CONFLICT) {
        /* Other bytes under this window: never replaced, kept aside and reported. */
        r->windows_quarantined++;
        gpufl__warn("upload: %s conflicts with what the server holds (409: %s): quarantined in "
                    "the cursor, not sent again",
                    w->id, a.message);
        note_error(r, w->id, a.message);
        int rc = gpufl__net_cursor_quarantine(cur, s->id, channel, w->sequence);
        return rc == 0 ? gpufl__net_cursor_save(cur) : rc;
    }
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
    return 0;
}

/* One window, under the cursor's lock. A sealed window is shipped whole (or what the server
 * lacks of it); an open one (a running session, or one that died) up to its last complete line,
 * so a live session's lines reach the server before its window seals. Returns as ship_slices. */
static int ship_window(run_t *u, const gpufl__net_session_t *s, const gpufl__net_window_t *w) {
    const char *channel = gpufl__net_channel_names[w->channel];
    gpufl__net_upload_result_t *r = u->r;
    gpufl__net_cursor_t *cur = NULL;
    int rc = gpufl__net_cursor_open(&cur, u->root);
    if (rc != 0) return rc;
    shipping_t sh = {0};
    if (gpufl__net_cursor_acked(cur, s->id, channel, w->sequence)) {
        r->windows_before++;
    } else if (gpufl__net_cursor_quarantined(cur, s->id, channel, w->sequence)) {
        r->windows_quarantined++;
    } else {
        gpufl__net_cursor_partial(cur, s->id, channel, w->sequence, &sh.acked, &sh.crc);
        if (sh.acked > w->bytes) {
            /* The file is shorter than what was acknowledged: truncated or replaced. Its bytes
             * are no longer the ones the server holds; reported, never sent over them. */
            r->windows_failed++;
            note_error(r, w->id, "the file is shorter than what the server acknowledged of it");
        } else if (!w->sealed && (sh.acked == w->bytes || !u->o->tails)) {
            r->windows_open++; /* nothing new, or open windows are not shipped by this sender */
        } else {
            sh.base = sh.acked;
            sh.cap = INT64_MAX;
            rc = gpufl__net_window_read(&sh.body, &sh.len, w, sh.base);
            if (rc != 0) {
                r->windows_failed++;
                note_error(r, w->id, gpufl_last_error());
                rc = 0;
            } else {
                rc = ship_slices(u, cur, s, w, &sh);
                if (rc == 0 && !w->sealed) r->windows_open++;
            }
            free(sh.body);
        }
    }
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

/* A window the server has: acknowledged in the cursor when the session has it here too, whole
 * when the server holds it sealed, else as far as the server's bytes go (when this file holds
 * them: their crc32 comes from here). */
static void server_has(void *user, int64_t sequence, int64_t bytes, int final) {
    learned_t *l = user;
    const char *channel = gpufl__net_channel_names[l->channel];
    for (size_t i = 0; i < l->s->n; i++) {
        const gpufl__net_window_t *w = &l->s->windows[i];
        if (w->channel != l->channel || w->sequence != sequence) continue;
        uint32_t crc = 0;
        if (final && gpufl__net_cursor_ack(l->cur, l->s->id, channel, sequence) == 0)
            l->acked++;
        else if (!final && bytes > 0 && bytes <= w->bytes &&
                 gpufl__net_window_crc(&crc, w, bytes) == 0 &&
                 gpufl__net_cursor_set_partial(l->cur, l->s->id, channel, sequence, bytes, crc) ==
                     0)
            l->acked++;
    }
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
        if (with_retries(u, &a, s, NULL, NULL, NULL, 0)) {
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

/* Of the session directories, those named by a session the cursor marks complete: how many
 * windows it acknowledged of each (every window of it), so their files are not read again (an
 * agent's pass over a root of many finished sessions costs one cursor read); -1 for the others,
 * which are read. Returns a malloc'ed array of n counts, or NULL (then every one is read). */
static int64_t *already_complete(const char *root, const char *const *dirs, size_t n) {
    gpufl__net_cursor_t *cur = NULL;
    int64_t *done = malloc((n ? n : 1) * sizeof *done);
    for (size_t d = 0; done && d < n; d++) done[d] = -1;
    if (!done || gpufl__net_cursor_open(&cur, root) != 0) return done;
    for (size_t d = 0; d < n; d++) {
        const char *base = strrchr(dirs[d], '/');
        base = base && base[1] ? base + 1 : dirs[d];
        if (gpufl__net_cursor_completed(cur, base))
            done[d] = gpufl__net_cursor_acked_count(cur, base);
    }
    gpufl__net_cursor_close(cur);
    return done;
}

/* Where each channel's scan of a session directory starts: its last acknowledged window (so
 * the session's end is still seen) when the cursor knows the directory's session. */
static void scan_from(run_t *u, const char *dir, int64_t from[GPUFL__NET_CHANNELS]) {
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    gpufl__net_cursor_t *cur = NULL;
    for (int c = 0; c < GPUFL__NET_CHANNELS; c++) from[c] = 0;
    if (gpufl__net_cursor_open(&cur, u->root) != 0) return;
    gpufl__net_cursor_scan_from(cur, base, from);
    gpufl__net_cursor_close(cur);
}

/* One session directory: its windows past the delivered ones, a scan at a time (a scan lists
 * at most GPUFL__NET_WINDOWS_MAX a channel), then session-complete. Returns as ship_window. */
static int ship_session(run_t *u, const char *dir) {
    gpufl__net_upload_result_t *r = u->r;
    for (int scan = 0;; scan++) {
        int64_t from[GPUFL__NET_CHANNELS];
        scan_from(u, dir, from);
        gpufl__net_session_t s;
        int rc = gpufl__net_session_scan(&s, dir, from);
        if (rc != 0) {
            note_error(r, dir, gpufl_last_error());
            r->windows_failed++;
            return 0;
        }
        rc = learn_from_server(u, &s);
        int64_t acked = r->windows_sent + r->windows_duplicate, before = r->windows_before;
        for (size_t i = 0; i < s.n && rc == 0; i++) rc = ship_window(u, &s, &s.windows[i]);
        /* The windows below the first scan were delivered before this upload (the last one
         * looked at again is counted by ship_window); a later scan's were counted already. */
        if (scan == 0)
            r->windows_before += s.skipped;
        else
            r->windows_before = before;
        if (rc == 0 && !s.more) rc = complete_session(u, &s);
        int again = rc == 0 && s.more && r->windows_sent + r->windows_duplicate > acked;
        gpufl__net_session_fini(&s);
        if (!again) return rc;
    }
}

int gpufl__net_upload(gpufl__net_upload_result_t *r, const gpufl__net_upload_options_t *o,
                      const char *root, const char *const *dirs, size_t n) {
    run_t u = {o, NULL, r, root, 0, (unsigned)time(NULL) ^ (unsigned)getpid()};
    int rc =
        gpufl__net_client_create(&u.client, o->base_url, o->api_path, o->api_key, o->timeout_ms);
    if (rc != 0) return rc;
    u.deadline_ms = now_ms() + (o->budget_ms > 0 ? o->budget_ms : 5 * 60 * 1000);
    int64_t *complete = already_complete(root, dirs, n);
    for (size_t d = 0; d < n && rc >= 0 && !r->auth_refused; d++) {
        if (complete && complete[d] >= 0) {
            r->sessions++;
            r->sessions_completed++;
            r->windows_before += complete[d];
            continue;
        }
        r->sessions++;
        rc = ship_session(&u, dirs[d]);
        if (rc == 1) rc = 0; /* the key refused: r says so, the loop ends */
    }
    gpufl__net_client_destroy(u.client);
    free(complete);
    if (rc >= 0 && o->spool_max_bytes > 0) {
        int trc = gpufl__net_spool_trim(r, root, dirs, n, o->spool_max_bytes);
        if (trc < 0) note_error(r, "spool", gpufl_last_error());
    }
    if (rc < 0) return rc;
    return r->windows_failed || r->auth_refused || r->windows_quarantined ? 1 : 0;
}
