// SPDX-License-Identifier: Apache-2.0
/*
 * flight_recorder.c - what turns the flight recorder's ring into a session
 * directory (the lines that close each file of a snapshot), and the signal
 * that asks for one. The session (session.c) owns the ring's collector and
 * names the directory; this file writes into it and wakes it.
 *
 * A signal handler may do almost nothing, so it only posts a semaphore; a
 * thread of ours waits on it and takes the snapshot as gpufl_snapshot()
 * does, outside the handler, with locks and allocation allowed.
 */
#include "core/flight_recorder.h"

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

typedef struct tail_ctx {
    const gpufl__flight_snapshot_t *info;
    const gpufl__ring_sink_stats_t *stats;
} tail_ctx_t;

/* What each file of a snapshot ends with: in the device file an event that
 * says what the ring held and what it let go, then in every file the
 * session_end line a reader expects of a finished session. */
static void snapshot_tail(void *ctx, enum gpufl__file_id channel, gpufl__buf_t *out) {
    const tail_ctx_t *t = ctx;
    const gpufl__flight_snapshot_t *i = t->info;
    const gpufl__ring_sink_stats_t *st = t->stats;
    if (channel == GPUFL_FILE_DEVICE) {
        char message[512];
        snprintf(message, sizeof message,
                 "flight recorder snapshot %d of session %s (%s): the last %d s, at most %lld "
                 "bytes; %llu rows kept, %llu evicted by the memory cap, %llu older than the "
                 "window",
                 i->number, i->session_id, i->why, i->window_s, (long long)i->cap_bytes,
                 (unsigned long long)st->kept_rows, (unsigned long long)st->evicted_rows,
                 (unsigned long long)st->aged_rows);
        gpufl__line_t l;
        gpufl__wire_event(&l, i->ts_ns, "info", "flight_recorder_snapshot", message);
        gpufl__buf_put(out, l.buf.data, l.buf.len);
        gpufl__line_fini(&l);
    }
    gpufl__wire_session_end_t e = {i->ts_ns, i->records_written, i->records_dropped, out->len, 0};
    gpufl__wire_session_end(out, &e);
}

int gpufl__flight_snapshot_write(gpufl__ring_sink_t *ring, const gpufl__session_ident_t *ident,
                                 const char *dir, const gpufl__flight_snapshot_t *info) {
    gpufl__ring_sink_stats_t stats;
    gpufl__ring_sink_stats(&stats, ring);
    tail_ctx_t t = {info, &stats};
    return gpufl__ring_sink_dump_dir(ring, ident, dir, snapshot_tail, &t);
}

/* ---------------- the signal ---------------- */

static struct trigger {
    sem_t wake;
    pthread_t thread;
    int signo; /* 0: none installed */
    struct sigaction previous;
    atomic_int stopping;
} trig;

static void on_signal(int signo) {
    (void)signo;
    int saved = errno; /* sem_post is async-signal-safe; errno is the program's */
    sem_post(&trig.wake);
    errno = saved;
}

static void *trigger_main(void *arg) {
    (void)arg;
    for (;;) {
        while (sem_wait(&trig.wake) != 0 && errno == EINTR) {
        }
        if (atomic_load(&trig.stopping)) break;
        char dir[4096];
        if (gpufl__session_snapshot("signal", dir, sizeof dir) == 0)
            gpufl__debug("flight recorder: signal %d wrote %s", trig.signo, dir);
        else
            gpufl__warn("flight recorder: the snapshot signal %d asked for failed: %s", trig.signo,
                        gpufl_last_error());
    }
    return NULL;
}

int gpufl__flight_trigger_start(int signo) {
    if (signo <= 0 || trig.signo) return 0;
    if (signo == SIGKILL || signo == SIGSTOP || signo >= NSIG)
        return gpufl__set_error(GPUFL_EINVAL, "flight_recorder_signal %d cannot be caught", signo);
    if (sem_init(&trig.wake, 0, 0) != 0)
        return gpufl__set_error(GPUFL_ETHREAD, "flight recorder: sem_init: %s", strerror(errno));
    atomic_store(&trig.stopping, 0);
    int err = pthread_create(&trig.thread, NULL, trigger_main, NULL);
    if (err) {
        sem_destroy(&trig.wake);
        return gpufl__set_error(GPUFL_ETHREAD, "flight recorder: cannot start its thread: %s",
                                strerror(err));
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    trig.signo = signo;
    if (sigaction(signo, &sa, &trig.previous) != 0) {
        int rc = gpufl__set_error(GPUFL_EINVAL, "flight recorder: cannot catch signal %d: %s",
                                  signo, strerror(errno));
        trig.signo = 0;
        atomic_store(&trig.stopping, 1);
        sem_post(&trig.wake);
        pthread_join(trig.thread, NULL);
        sem_destroy(&trig.wake);
        return rc;
    }
    return 0;
}

void gpufl__flight_trigger_stop(void) {
    if (!trig.signo) return;
    sigaction(trig.signo, &trig.previous, NULL); /* the program's handler again */
    atomic_store(&trig.stopping, 1);
    sem_post(&trig.wake);
    pthread_join(trig.thread, NULL);
    sem_destroy(&trig.wake);
    trig.signo = 0;
}

void gpufl__flight_after_fork_child(void) {
    /* The child has no trigger thread: the program's handler again, and
     * the child may start its own session. */
    if (!trig.signo) return;
    sigaction(trig.signo, &trig.previous, NULL);
    trig.signo = 0;
}
