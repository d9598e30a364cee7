// SPDX-License-Identifier: Apache-2.0
/*
 * log.c - routes the library's diagnostics to the user's hook.
 *
 * The default hook prints one line to stderr for warnings and errors, and
 * debug/info lines only when debug output is on. Nothing else in the library
 * writes to stderr.
 */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static gpufl_log_fn hook_fn;
static void *hook_user;
static atomic_int debug_on;

static void default_hook(gpufl_log_level_t level, const char *message, void *user) {
    static const char *const names[] = {"debug", "info", "warning", "error"};
    (void)user;
    fprintf(stderr, "gpufl: %s: %s\n", names[level], message);
}

void gpufl_set_log_hook(gpufl_log_fn fn, void *user) {
    pthread_mutex_lock(&hook_lock);
    hook_fn = fn;
    hook_user = user;
    pthread_mutex_unlock(&hook_lock);
}

void gpufl__log_before_fork(void) { pthread_mutex_lock(&hook_lock); }

void gpufl__log_after_fork(int in_child) {
    if (in_child)
        pthread_mutex_init(&hook_lock, NULL);
    else
        pthread_mutex_unlock(&hook_lock);
}

void gpufl__log_set_debug(int on) {
    atomic_store_explicit(&debug_on, on != 0, memory_order_relaxed);
}

int gpufl__log_debug_enabled(void) { return atomic_load_explicit(&debug_on, memory_order_relaxed); }

void gpufl__log(gpufl_log_level_t level, const char *fmt, ...) {
    char message[1024];
    va_list ap;

    if (level < GPUFL_LOG_WARN && !gpufl__log_debug_enabled()) return;
    if (level < GPUFL_LOG_DEBUG || level > GPUFL_LOG_ERROR) level = GPUFL_LOG_ERROR;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);

    pthread_mutex_lock(&hook_lock);
    gpufl_log_fn fn = hook_fn ? hook_fn : default_hook;
    void *user = hook_user;
    pthread_mutex_unlock(&hook_lock);
    fn(level, message, user);
}
