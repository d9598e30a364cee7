// SPDX-License-Identifier: Apache-2.0
/*
 * unload_and_small_stack.c - two ways a host program could crash in gpufl:
 * unloading the library (dlclose) while a thread that recorded scopes lives
 * on, and shutting a session down on a thread with a small stack.
 * Usage: itest_unload_and_small_stack LIBGPUFL_SO LOG_DIR; exit 0 when both
 * survive.
 */
#include <gpufl/gpufl.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*init_fn)(const gpufl_options_t *);
typedef void (*void_fn)(void);
typedef gpufl_scope_t (*begin_fn)(const char *, const char *);
typedef void (*end_fn)(gpufl_scope_t);

static begin_fn scope_begin;
static end_fn scope_end;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int recorded, may_exit;

/* Records a scope, then waits: it exits (running its thread-exit
 * destructors) only after the library was unloaded. */
static void *worker(void *arg) {
    (void)arg;
    scope_end(scope_begin("worker", NULL));
    pthread_mutex_lock(&lock);
    recorded = 1;
    pthread_cond_broadcast(&cond);
    while (!may_exit) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void *shutdown_on_small_stack(void *arg) {
    ((void_fn)arg)();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: itest_unload_and_small_stack LIBGPUFL_SO LOG_DIR\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    void (*options_init)(gpufl_options_t *, size_t) =
        (void (*)(gpufl_options_t *, size_t))dlsym(h, "gpufl_options_init_sized");
    init_fn init = (init_fn)dlsym(h, "gpufl_init");
    void_fn shutdown = (void_fn)dlsym(h, "gpufl_shutdown");
    scope_begin = (begin_fn)dlsym(h, "gpufl_scope_begin");
    scope_end = (end_fn)dlsym(h, "gpufl_scope_end");
    gpufl_options_t o;
    options_init(&o, sizeof o);
    o.log_path = argv[2];
    if (init(&o) != 0) return 1;

    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_mutex_lock(&lock);
    while (!recorded) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);

    /* shutdown on a 32 KiB stack: nothing large may live on the caller's stack */
    pthread_attr_t attr;
    pthread_t small;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 32 * 1024);
    if (pthread_create(&small, &attr, shutdown_on_small_stack, (void *)shutdown) != 0) return 1;
    pthread_join(small, NULL);

    dlclose(h); /* the worker's thread-exit destructor still points into gpufl */
    pthread_mutex_lock(&lock);
    may_exit = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    printf("unload and small-stack shutdown survived\n");
    return 0;
}
