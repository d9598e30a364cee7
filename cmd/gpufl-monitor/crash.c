// SPDX-License-Identifier: Apache-2.0
/*
 * crash.c - gpufl-monitor's last words: on a fatal signal (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGABRT) one line saying which, where and in which thread,
 * then the native backtrace, go to stderr and to crash.txt in the session
 * directory; then the signal kills the process as it would have (its exit
 * status, a core dump where enabled).
 *
 * The handler makes only async-signal-safe calls (write, open, close, raise,
 * clock_gettime) and backtrace_symbols_fd, which writes straight to the
 * descriptor. backtrace() itself is called once at install so that its first
 * call, which loads the unwinder, does not happen inside the handler. It
 * runs on an alternate stack (the main thread's; another thread that
 * overflows its own stack dies without the line). The session's own files
 * are not written: the collector may be in the middle of a line there.
 */
#include "monitor.h"

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FRAMES_MAX 64
#define PATH_BYTES 4096
#define ALT_STACK  (64 * 1024)
#define CRASH_FILE "crash.txt"
#define LINE_BYTES 512

/* Two buffers for the crash file's path: a reopen fills the one not in use,
 * then publishes it, so the handler never reads a path half written. */
static char paths[2][PATH_BYTES];
static _Atomic(const char *) crash_path;
static char version[64];

static const struct {
    int sig;
    const char *name;
} fatal[] = {{SIGSEGV, "SIGSEGV"},
             {SIGBUS, "SIGBUS"},
             {SIGFPE, "SIGFPE"},
             {SIGILL, "SIGILL"},
             {SIGABRT, "SIGABRT"}};

/* Appends text to a line being built (no stdio in the handler). */
static size_t put(char *line, size_t at, const char *text) {
    while (*text && at + 1 < LINE_BYTES) line[at++] = *text++;
    line[at] = '\0';
    return at;
}

static size_t put_uint(char *line, size_t at, unsigned long long v, int base) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[v % (unsigned)base];
        v /= (unsigned)base;
    } while (v && n < (int)sizeof digits);
    if (base == 16) at = put(line, at, "0x");
    while (n > 0 && at + 1 < LINE_BYTES) line[at++] = digits[--n];
    line[at] = '\0';
    return at;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

static void on_fatal(int sig, siginfo_t *info, void *context) {
    (void)context;
    const char *name = "signal";
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        if (fatal[i].sig == sig) name = fatal[i].name;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char line[LINE_BYTES];
    size_t at = put(line, 0, "gpufl-monitor: fatal signal ");
    at = put_uint(line, at, (unsigned)sig, 10);
    at = put(line, at, " (");
    at = put(line, at, name);
    if (info && info->si_code > 0) { /* the kernel's: a fault at that address */
        at = put(line, at, ") at address ");
        at = put_uint(line, at, (unsigned long long)(uintptr_t)info->si_addr, 16);
        at = put(line, at, ", code ");
        at = put_uint(line, at, (unsigned)info->si_code, 10);
    } else { /* kill(), raise(), abort() */
        at = put(line, at, ") sent by pid ");
        at = put_uint(line, at, info ? (unsigned)info->si_pid : 0u, 10);
    }
    at = put(line, at, ", thread ");
    at = put_uint(line, at, (unsigned long long)syscall(SYS_gettid), 10);
    at = put(line, at, ", pid ");
    at = put_uint(line, at, (unsigned)getpid(), 10);
    at = put(line, at, ", unix time ");
    at = put_uint(line, at, (unsigned long long)now.tv_sec, 10);
    at = put(line, at, ", gpufl ");
    at = put(line, at, version);
    at = put(line, at, "; backtrace:\n");
    void *frames[FRAMES_MAX];
    int depth = backtrace(frames, FRAMES_MAX);
    write_all(STDERR_FILENO, line, at);
    backtrace_symbols_fd(frames, depth, STDERR_FILENO);
    const char *path = atomic_load(&crash_path);
    int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    if (fd >= 0) {
        write_all(fd, line, at);
        backtrace_symbols_fd(frames, depth, fd);
        close(fd);
    }
    /* SA_RESETHAND made the action the default again: once this handler
     * returns, the pending signal (or the faulting instruction run again)
     * ends the process as the signal would have. */
    raise(sig);
}

void mon_crash_install(const char *gpufl_version) {
    snprintf(version, sizeof version, "%s", gpufl_version ? gpufl_version : "");
    void *warm[1];
    (void)backtrace(warm, 1); /* loads the unwinder now, not in the handler */
    static char alt[ALT_STACK];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) sigaction(fatal[i].sig, &sa, NULL);
}

void mon_crash_set_dir(const char *session_dir) {
    if (!session_dir || !*session_dir) return;
    const char *in_use = atomic_load(&crash_path);
    char *next = in_use == paths[0] ? paths[1] : paths[0];
    int n = snprintf(next, PATH_BYTES, "%s/%s", session_dir, CRASH_FILE);
    if (n < 0 || n >= PATH_BYTES) return; /* too long: the line goes to stderr only */
    atomic_store(&crash_path, next);
}
