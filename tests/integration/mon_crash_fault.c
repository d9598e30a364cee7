// SPDX-License-Identifier: Apache-2.0
/*
 * mon_crash_fault.c - gpufl-monitor's fatal-signal handler (cmd/gpufl-monitor/crash.c) on a
 * real fault: installs it, names DIR as the session directory, prints the address of a
 * read-only page, then writes to it (a fault no sanitizer takes for its own: the store is to
 * mapped memory). test_monitor_crash.py expects the line with that address and code 2
 * (SEGV_ACCERR) on stderr and in DIR/crash.txt, and death by SIGSEGV. Usage: mon_crash_fault DIR
 */
#include "monitor.h"

#include <stdio.h>
#include <sys/mman.h>

/* Not inlined into main: the backtrace names a frame of its own. */
__attribute__((noinline)) static void write_to(volatile char *p) { *p = 1; }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: mon_crash_fault DIR\n");
        return 2;
    }
    mon_crash_install("test");
    mon_crash_set_dir(argv[1]);
    char *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return 1;
    printf("%p\n", (void *)page);
    fflush(stdout);
    write_to(page);
    return 0;
}
