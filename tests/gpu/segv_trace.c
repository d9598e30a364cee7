/*
 * segv_trace.c - a diagnosis aid for the GPU machine, which has no debugger:
 * preloaded (LD_PRELOAD=.devbin/libsegv_trace.so), it prints the native
 * backtrace of the thread that faults (SIGSEGV, SIGBUS, SIGABRT, SIGFPE,
 * SIGILL) to stderr, with each frame's library and offset, then lets the
 * signal kill the process as it would have. Used to find which library a
 * crash under a profiling engine comes from (docs/design/sass-metrics.md).
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
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
}
