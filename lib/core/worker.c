// SPDX-License-Identifier: Apache-2.0
/*
 * worker.c - one thread, one call at a time, a caller that waits with a
 * deadline. A call cannot be cancelled (it may be inside a driver), so a
 * worker stopped mid-call is detached and frees itself when the call returns.
 */
#include "core/worker.h"

#include "util/error.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct gpufl__worker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* posts, returns and stop */
    gpufl__worker_fn *fn;
    void *arg;
    void (*free_arg)(void *);
    int busy;      /* posted and not yet returned */
    int quit;      /* stop asked while idle: end the thread */
    int abandoned; /* stop asked mid-call: the thread frees everything */
};

static void destroy(gpufl__worker_t *w) {
    if (w->free_arg) w->free_arg(w->arg);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static void *run(void *self) {
    gpufl__worker_t *w = self;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->busy && !w->quit) pthread_cond_wait(&w->cond, &w->lock);
        if (w->quit) break;
        pthread_mutex_unlock(&w->lock);
        w->fn(w->arg);
        pthread_mutex_lock(&w->lock);
        w->busy = 0;
        if (w->abandoned) {
            pthread_mutex_unlock(&w->lock);
            destroy(w);
            return NULL;
        }
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int gpufl__worker_start(gpufl__worker_t **out, gpufl__worker_fn *fn, void *arg,
                        void (*free_arg)(void *)) {
    *out = NULL;
    gpufl__worker_t *w = calloc(1, sizeof *w);
    if (w == NULL) return gpufl__set_error(GPUFL_ENOMEM, "worker: out of memory");
    w->fn = fn;
    w->arg = arg;
    w->free_arg = free_arg;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* deadlines are monotonic */
    pthread_cond_init(&w->cond, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&w->lock, NULL);
    int rc = pthread_create(&w->thread, NULL, run, w);
    if (rc != 0) {
        w->free_arg = NULL; /* arg stays the caller's on failure */
        destroy(w);
        return gpufl__set_error(GPUFL_ETHREAD, "worker: no thread (error %d)", rc);
    }
    *out = w;
    return 0;
}

int gpufl__worker_idle(gpufl__worker_t *w) {
    pthread_mutex_lock(&w->lock);
    int idle = !w->busy;
    pthread_mutex_unlock(&w->lock);
    return idle;
}

void gpufl__worker_post(gpufl__worker_t *w) {
    pthread_mutex_lock(&w->lock);
    w->busy = 1;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

int gpufl__worker_wait(gpufl__worker_t *w, int64_t deadline_ns) {
    struct timespec until = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    pthread_mutex_lock(&w->lock);
    int rc = 0;
    while (w->busy && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&w->cond, &w->lock, &until);
    int done = !w->busy;
    pthread_mutex_unlock(&w->lock);
    return done;
}

int gpufl__worker_stop(gpufl__worker_t *w) {
    if (w == NULL) return 0;
    pthread_mutex_lock(&w->lock);
    if (w->busy) {
        /* Detached under the lock: once it is released the thread may free w. */
        w->abandoned = 1;
        pthread_detach(w->thread);
        pthread_mutex_unlock(&w->lock);
        return 1;
    }
    w->quit = 1;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    destroy(w);
    return 0;
}
