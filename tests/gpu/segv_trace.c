// SPDX-License-Identifier: Apache-2.0
/*
 * segv_trace.c - a diagnosis aid for the GPU machine, which has no debugger:
 * preloaded (LD_PRELOAD=.devbin/libsegv_trace.so), it prints the native
 * backtrace of the thread that faults (SIGSEGV, SIGBUS, SIGABRT, SIGFPE,
 * SIGILL) to stderr, with each frame's library and offset, then lets the
 * signal kill the process as it would have. Used to find which library a
 * crash under a profiling engine comes from (docs/design/sass-metrics.md).
 * For hangs: on SIGQUIT (`timeout -s QUIT`, or kill -QUIT) it prints the
 * backtrace of every thread of the process (each is sent SIGUSR2 and
 * prints its own, one at a time), then quits as SIGQUIT would.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <execinfo.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void on_fault(int sig, siginfo_t *info, void *uctx) {
    (void)uctx;
    char line[160];
    int n = snprintf(line, sizeof line, "segv_trace: signal %d at address %p in thread %ld\n", sig,
                     info ? info->si_addr : NULL, (long)syscall(SYS_gettid));
    if (n > 0) (void)!write(2, line, (size_t)n);
    void *frames[64];
    int depth = backtrace(frames, 64);
    backtrace_symbols_fd(frames, depth, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

static atomic_flag printing = ATOMIC_FLAG_INIT;
static atomic_int printed;

/* One thread's backtrace, the threads taking turns. */
static void on_dump(int sig) {
    (void)sig;
    while (atomic_flag_test_and_set(&printing)) sched_yield();
    char line[96];
    int n = snprintf(line, sizeof line, "segv_trace: thread %ld\n", (long)syscall(SYS_gettid));
    if (n > 0) (void)!write(2, line, (size_t)n);
    void *frames[64];
    backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
    atomic_flag_clear(&printing);
    atomic_fetch_add(&printed, 1);
}

/* Every thread of the process: its id from /proc/self/task (raw
 * getdents64, which a signal handler may call), SIGUSR2 to each other
 * thread, then this one; waits up to 2 s for the others, then quits. */
static void on_quit(int sig) {
    int self = (int)syscall(SYS_gettid), sent = 0;
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
    char buf[4096];
    long got;
    while (fd >= 0 && (got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < got;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            off += d->d_reclen;
            int tid = atoi(d->d_name);
            if (tid <= 0 || tid == self) continue;
            if (syscall(SYS_tgkill, getpid(), tid, SIGUSR2) == 0) sent++;
        }
    }
    if (fd >= 0) close(fd);
    on_dump(sig);
    for (int i = 0; i < 200 && atomic_load(&printed) < sent + 1; i++) {
        struct timespec t = {0, 10000000};
        nanosleep(&t, NULL);
    }
    signal(SIGQUIT, SIG_DFL);
    raise(SIGQUIT);
}

__attribute__((constructor)) static void install(void) {
    static char stack[1 << 16];
    stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
    signal(SIGUSR2, on_dump);
    signal(SIGQUIT, on_quit);
}
