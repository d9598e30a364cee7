// SPDX-License-Identifier: Apache-2.0
/*
 * flight_recorder.c - what turns the flight recorder's ring into a session
 * directory (the lines that close each file of a snapshot), and the signal
 * that asks for one. The session (session.c) owns the ring's collector and
 * names the directory; this file writes into it and wakes it.
 *
 * Triggers (the signal, a device's fault, an insight condition) only ask:
 * a thread of ours takes each snapshot as gpufl_snapshot() does, with locks
 * and allocation allowed. The signal's handler posts a semaphore; the others
 * queue a reason. A fatal signal is the exception (flight_crash.c): the
 * process is about to die, so its handler writes the snapshot itself.
 */
#include "core/flight_recorder.h"

#include "core/clock.h"
#include "core/session.h"

#include "util/error.h"
#include "util/log.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* ---------------- the snapshot's files ---------------- */

/* A message built without stdio (a fatal signal's handler builds one). */
typedef struct text {
    char s[512];
    size_t len;
} text_t;

static void text_put(text_t *t, const char *s) {
    while (*s && t->len + 1 < sizeof t->s) t->s[t->len++] = *s++;
    t->s[t->len] = '\0';
}

static void text_int(text_t *t, int64_t v) {
    char digits[24];
    *gpufl__fmt_i64(digits, v) = '\0';
    text_put(t, digits);
}

void gpufl__flight_snapshot_tail(gpufl__buf_t *out, enum gpufl__file_id channel,
                                 const gpufl__flight_snapshot_t *i,
                                 const gpufl__ring_sink_stats_t *st, uint64_t written) {
    if (channel == GPUFL_FILE_DEVICE) {
        text_t m = {{0}, 0};
        text_put(&m, "flight recorder snapshot ");
        text_int(&m, i->number);
        text_put(&m, " of session ");
        text_put(&m, i->session_id);
        text_put(&m, " (");
        text_put(&m, i->why);
        text_put(&m, "): the last ");
        text_int(&m, i->window_s);
        text_put(&m, " s, at most ");
        text_int(&m, i->cap_bytes);
        text_put(&m, " bytes; ");
        text_int(&m, (int64_t)st->kept_rows);
        text_put(&m, " rows kept, ");
        text_int(&m, (int64_t)st->evicted_rows);
        text_put(&m, " evicted by the memory cap, ");
        text_int(&m, (int64_t)st->aged_rows);
        text_put(&m, " older than the window");
        if (i->incomplete) {
            text_put(&m, "; incomplete: ");
            text_put(&m, i->incomplete);
        }
        gpufl__buf_record(out, "event");
        gpufl__buf_kv_i64(out, "ts_ns", i->ts_ns);
        gpufl__buf_kv_str(out, "level", i->fatal ? "error" : "info");
        gpufl__buf_kv_str(out, "code", "flight_recorder_snapshot");
        gpufl__buf_kv_str(out, "message", m.s);
        /* The figures as members, for tools: bytes per second of recording is
         * in_bytes / ts_ns, or kept_bytes / span_ns over the last window. */
        gpufl__buf_kv_str(out, "reason", i->why);
        gpufl__buf_kv_i64(out, "snapshot", i->number);
        gpufl__buf_kv_str(out, "recording_session_id", i->session_id);
        gpufl__buf_kv_i64(out, "window_s", i->window_s);
        gpufl__buf_kv_i64(out, "cap_bytes", i->cap_bytes);
        gpufl__buf_kv_i64(out, "kept_rows", (int64_t)st->kept_rows);
        gpufl__buf_kv_i64(out, "kept_bytes", (int64_t)st->kept_bytes);
        gpufl__buf_kv_i64(out, "pinned_bytes", (int64_t)st->pinned_bytes);
        gpufl__buf_kv_i64(out, "span_ns", st->span_ns);
        gpufl__buf_kv_i64(out, "in_bytes", (int64_t)st->in_bytes);
        gpufl__buf_kv_i64(out, "evicted_rows", (int64_t)st->evicted_rows);
        gpufl__buf_kv_i64(out, "aged_rows", (int64_t)st->aged_rows);
        gpufl__buf_key(out, "complete");
        gpufl__buf_puts(out, i->incomplete ? "false" : "true");
        gpufl__buf_puts(out, "}\n");
    }
    gpufl__wire_session_end_t e = {i->ts_ns, i->records_written, i->records_dropped,
                                   written + out->len, 0};
    gpufl__wire_session_end(out, &e);
}

typedef struct tail_ctx {
    const gpufl__flight_snapshot_t *info;
    const gpufl__ring_sink_stats_t *stats;
} tail_ctx_t;

static void snapshot_tail(void *ctx, enum gpufl__file_id channel, gpufl__buf_t *out) {
    const tail_ctx_t *t = ctx;
    gpufl__flight_snapshot_tail(out, channel, t->info, t->stats, 0);
}

int gpufl__flight_snapshot_write(gpufl__ring_sink_t *ring, const gpufl__session_ident_t *ident,
                                 const char *dir, const gpufl__flight_snapshot_t *info) {
    gpufl__ring_sink_stats_t stats;
    gpufl__ring_sink_stats(&stats, ring);
    tail_ctx_t t = {info, &stats};
    return gpufl__ring_sink_dump_dir(ring, ident, dir, snapshot_tail, &t);
}

/* ---------------- the trigger thread ---------------- */

static struct trigger {
    sem_t wake;
    pthread_t thread;
    atomic_int running; /* the thread is up: requests are taken */
    int signo;          /* 0: none installed */
    struct sigaction previous;
    atomic_int stopping;
    atomic_int signals; /* signals not yet served */
    pthread_mutex_t mu; /* the pending reasons */
    char pending[GPUFL__FLIGHT_PENDING_MAX][64];
    int npending;
    uint64_t joined; /* requests that came while the queue was full */
    int64_t window_ns, last_fault_ns;
} trig = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void on_signal(int signo) {
    (void)signo;
    int saved = errno; /* sem_post is async-signal-safe; errno is the program's */
    atomic_fetch_add(&trig.signals, 1);
    sem_post(&trig.wake);
    errno = saved;
}

static void snapshot_for(const char *why) {
    char dir[4096];
    if (gpufl__session_snapshot(why, dir, sizeof dir) == 0)
        gpufl__debug("flight recorder: %s wrote %s", why, dir);
    else
        gpufl__warn("flight recorder: the snapshot %s asked for failed: %s", why,
                    gpufl_last_error());
}

/* The oldest pending reason into why; 0 when none waits. */
static int next_request(char *why, size_t size) {
    pthread_mutex_lock(&trig.mu);
    int n = trig.npending;
    if (n) {
        snprintf(why, size, "%s", trig.pending[0]);
        memmove(trig.pending[0], trig.pending[1], (size_t)(n - 1) * sizeof trig.pending[0]);
        trig.npending--;
    }
    pthread_mutex_unlock(&trig.mu);
    return n > 0;
}

static void *trigger_main(void *arg) {
    (void)arg;
    for (;;) {
        while (sem_wait(&trig.wake) != 0 && errno == EINTR) {
        }
        if (atomic_load(&trig.stopping)) break;
        char why[64];
        if (atomic_load(&trig.signals) > 0) {
            atomic_fetch_sub(&trig.signals, 1);
            snapshot_for("signal");
        } else if (next_request(why, sizeof why)) {
            snapshot_for(why);
        }
    }
    return NULL;
}

void gpufl__flight_request(const char *why) {
    if (!atomic_load(&trig.running)) return;
    pthread_mutex_lock(&trig.mu); /* stop clears running under it: no post after the destroy */
    int queued = atomic_load(&trig.running) && trig.npending < GPUFL__FLIGHT_PENDING_MAX;
    if (queued) {
        snprintf(trig.pending[trig.npending++], sizeof trig.pending[0], "%s", why);
        sem_post(&trig.wake);
    } else if (atomic_load(&trig.running)) {
        trig.joined++;
    }
    pthread_mutex_unlock(&trig.mu);
    if (!queued)
        gpufl__debug("flight recorder: %s joins the snapshots waiting (or the recorder stops)",
                     why);
}

int gpufl__flight_fault(const char *why) {
    if (!atomic_load(&trig.running)) return 0;
    int64_t now = gpufl__mono_ns();
    pthread_mutex_lock(&trig.mu);
    int held = trig.last_fault_ns && now - trig.last_fault_ns < trig.window_ns;
    if (!held) trig.last_fault_ns = now;
    pthread_mutex_unlock(&trig.mu);
    if (held) {
        gpufl__debug("flight recorder: %s within %lld s of the last fault's snapshot: held off",
                     why, (long long)(trig.window_ns / 1000000000));
        return 0;
    }
    gpufl__flight_request(why);
    return 1;
}

/* Catches signo for the snapshot the thread takes; 0 or GPUFL_EINVAL. */
static int catch_signal(int signo) {
    if (signo == SIGKILL || signo == SIGSTOP || signo >= NSIG)
        return gpufl__set_error(GPUFL_EINVAL, "flight_recorder_signal %d cannot be caught", signo);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, &trig.previous) != 0)
        return gpufl__set_error(GPUFL_EINVAL, "flight recorder: cannot catch signal %d: %s", signo,
                                strerror(errno));
    trig.signo = signo;
    return 0;
}

int gpufl__flight_trigger_start(int signo, int window_s) {
    if (atomic_load(&trig.running)) return 0;
    if (sem_init(&trig.wake, 0, 0) != 0)
        return gpufl__set_error(GPUFL_ETHREAD, "flight recorder: sem_init: %s", strerror(errno));
    atomic_store(&trig.stopping, 0);
    atomic_store(&trig.signals, 0);
    trig.npending = 0;
    trig.joined = 0;
    trig.window_ns = (int64_t)window_s * 1000000000;
    trig.last_fault_ns = 0;
    int err = pthread_create(&trig.thread, NULL, trigger_main, NULL);
    if (err) {
        sem_destroy(&trig.wake);
        return gpufl__set_error(GPUFL_ETHREAD, "flight recorder: cannot start its thread: %s",
                                strerror(err));
    }
    atomic_store(&trig.running, 1);
    return signo > 0 ? catch_signal(signo) : 0;
}

void gpufl__flight_trigger_stop(void) {
    if (!atomic_load(&trig.running)) return;
    if (trig.signo) sigaction(trig.signo, &trig.previous, NULL); /* the program's handler again */
    trig.signo = 0;
    pthread_mutex_lock(&trig.mu);
    atomic_store(&trig.running, 0);
    pthread_mutex_unlock(&trig.mu);
    atomic_store(&trig.stopping, 1);
    sem_post(&trig.wake);
    pthread_join(trig.thread, NULL);
    sem_destroy(&trig.wake);
    if (trig.joined)
        gpufl__debug("flight recorder: %llu requests joined others already waiting",
                     (unsigned long long)trig.joined);
}

void gpufl__flight_after_fork_child(void) {
    /* The child has no trigger thread: the program's handler again, and
     * the child may start its own session. */
    if (trig.signo) sigaction(trig.signo, &trig.previous, NULL);
    trig.signo = 0;
    atomic_store(&trig.running, 0);
    pthread_mutex_init(&trig.mu, NULL);
}
