// SPDX-License-Identifier: Apache-2.0
/*
 * clock.c - turns hot-path ticks into CLOCK_MONOTONIC nanoseconds.
 *
 * The TSC is used only when the kernel's own clocksource is "tsc": then the
 * kernel has checked that it is invariant and synchronised across CPUs. The
 * collector takes an anchor (tick, ns) pair at every pass and converts a tick
 * by interpolating between the anchors around it, so the conversion follows
 * any drift between the TSC and the monotonic clock and stays monotonic.
 */
#include "core/clock.h"

#include <stdio.h>
#include <string.h>

#define ANCHORS 8

int gpufl__clock_tsc;

typedef struct anchor {
    uint64_t ticks;
    int64_t ns;
} anchor_t;

static anchor_t anchors[ANCHORS]; /* ring, newest at (next - 1) */
static unsigned anchor_next, anchor_count;
static double ns_per_tick = 1.0;

void gpufl__clock_setup(void) {
#if defined(__x86_64__) || defined(__i386__)
    char source[64] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f) {
        if (!fgets(source, sizeof source, f)) source[0] = '\0';
        fclose(f);
    }
    gpufl__clock_tsc = strncmp(source, "tsc", 3) == 0;
#else
    gpufl__clock_tsc = 0;
#endif
}

/* Reads ticks and ns as close together as possible: the ns value is paired
 * with the midpoint of the two tick reads around it, from the tightest of a
 * few tries. */
static anchor_t take_anchor(void) {
    anchor_t best = {0, 0};
    uint64_t best_width = UINT64_MAX;
    if (!gpufl__clock_tsc) {
        int64_t ns = gpufl__mono_ns();
        return (anchor_t){(uint64_t)ns, ns};
    }
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = gpufl__ticks();
        int64_t ns = gpufl__mono_ns();
        uint64_t t1 = gpufl__ticks();
        if (t1 - t0 < best_width) {
            best_width = t1 - t0;
            best.ticks = t0 + (t1 - t0) / 2;
            best.ns = ns;
        }
    }
    return best;
}

static void push_anchor(anchor_t a) {
    if (anchor_count > 0) {
        anchor_t prev = anchors[(anchor_next + ANCHORS - 1) % ANCHORS];
        if (a.ticks <= prev.ticks || a.ns <= prev.ns) return;
        /* The newest slope is used beyond the newest anchor. A slope from
         * anchors too close together is noisy; keep the older one then. */
        if (a.ns - prev.ns > 1000000)
            ns_per_tick = (double)(a.ns - prev.ns) / (double)(a.ticks - prev.ticks);
    }
    anchors[anchor_next] = a;
    anchor_next = (anchor_next + 1) % ANCHORS;
    if (anchor_count < ANCHORS) anchor_count++;
}

void gpufl__clock_reset(void) {
    anchor_next = anchor_count = 0;
    ns_per_tick = 1.0;
    if (gpufl__clock_tsc) {
        /* A first slope over ~2 ms so the earliest records are close; later
         * anchors refine it. */
        anchor_t a = take_anchor();
        int64_t until = a.ns + 2000000;
        while (gpufl__mono_ns() < until) {
        }
        anchor_t b = take_anchor();
        if (b.ticks > a.ticks) ns_per_tick = (double)(b.ns - a.ns) / (double)(b.ticks - a.ticks);
        anchors[0] = a;
        anchors[1] = b;
        anchor_next = anchor_count = 2;
        return;
    }
    push_anchor(take_anchor());
}

void gpufl__clock_anchor(void) { push_anchor(take_anchor()); }

int64_t gpufl__clock_ticks_to_ns(uint64_t ticks) {
    if (!gpufl__clock_tsc) return (int64_t)ticks;
    if (anchor_count == 0) return gpufl__mono_ns();
    /* Walk from the newest anchor back to the first one at or below ticks. */
    unsigned newest = (anchor_next + ANCHORS - 1) % ANCHORS;
    anchor_t hi = anchors[newest];
    if (ticks >= hi.ticks) return hi.ns + (int64_t)((double)(ticks - hi.ticks) * ns_per_tick);
    for (unsigned k = 1; k < anchor_count; k++) {
        anchor_t lo = anchors[(newest + ANCHORS - k) % ANCHORS];
        if (ticks >= lo.ticks) {
            double f = (double)(ticks - lo.ticks) / (double)(hi.ticks - lo.ticks);
            return lo.ns + (int64_t)(f * (double)(hi.ns - lo.ns));
        }
        hi = lo;
    }
    /* Older than every anchor kept: extrapolate back from the oldest. */
    return hi.ns - (int64_t)((double)(hi.ticks - ticks) * ns_per_tick);
}
