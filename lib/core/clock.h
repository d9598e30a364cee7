// SPDX-License-Identifier: Apache-2.0
/*
 * clock.h - the session clock: int64 nanoseconds of CLOCK_MONOTONIC.
 *
 * The hot path reads raw ticks (the invariant TSC on x86-64 when the kernel
 * itself trusts it, about 9 ns against about 22 ns for clock_gettime in our
 * VMs); the collector turns ticks into nanoseconds with anchors it takes on
 * every pass, interpolating between the two around each tick value.
 */
#ifndef GPUFL_CORE_CLOCK_H
#define GPUFL_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

extern int gpufl__clock_tsc; /* 1 when ticks are TSC, 0 when they are monotonic ns */

static inline int64_t gpufl__mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline uint64_t gpufl__ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(gpufl__clock_tsc, 1)) return __rdtsc();
#endif
    return (uint64_t)gpufl__mono_ns();
}

/* Decides once per process whether ticks are TSC (reads the kernel's clocksource). */
void gpufl__clock_setup(void);
/* Forgets every anchor and takes a fresh one (session start). */
void gpufl__clock_reset(void);
/* Takes an anchor pair (ticks, ns) now. Collector thread only. */
void gpufl__clock_anchor(void);
/* Converts ticks to CLOCK_MONOTONIC ns. Collector thread only. */
int64_t gpufl__clock_ticks_to_ns(uint64_t ticks);

#endif
