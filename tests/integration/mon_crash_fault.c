// SPDX-License-Identifier: Apache-2.0
/*
 * mon_crash_fault.c - gpufl-monitor's fatal-signal handler (cmd/gpufl-monitor/crash.c) on a
 * real fault: installs it, names DIR as the session directory, then reads through a null
 * pointer. test_monitor_crash.py expects the line with the faulting address on stderr and in
 * DIR/crash.txt, and death by SIGSEGV. Usage: mon_crash_fault DIR
 */
#include "monitor.h"

#include <stdio.h>

/* Not inlined into main: the backtrace names a frame of its own. */
__attribute__((noinline)) static int read_null(volatile int *p) { return *p; }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: mon_crash_fault DIR\n");
        return 2;
    }
    mon_crash_install("test");
    mon_crash_set_dir(argv[1]);
    volatile int *null = NULL;
    return read_null(null);
}
