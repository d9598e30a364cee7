// SPDX-License-Identifier: Apache-2.0
/*
 * trace_marker.h - who holds this process's session under `gpufl trace`: a
 * mark in the environment that every copy of libgpufl in the process reads.
 *
 * A process may hold several copies of the library (libgpufl.so, which the
 * injection library depends on, and the Python extension's own), whose
 * symbols cannot see each other; the environment is what they all share.
 * GPUFL_TRACE_PROCESS is "<image> <state>", image naming this program image
 * (pid and the kernel's AT_RANDOM bytes, which change at exec while the pid
 * stays), state one of starting|injected|program|ending. Without the
 * variable (not under `gpufl trace` or an injection) nothing is marked. Header
 * only: the injection library (lib/inject) reaches no hidden symbol of
 * libgpufl.so.
 */
#ifndef GPUFL_CORE_TRACE_MARKER_H
#define GPUFL_CORE_TRACE_MARKER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#define GPUFL_TRACE_MARKER_VAR "GPUFL_TRACE_PROCESS"

typedef enum gpufl__trace_state {
    GPUFL_TRACE_UNMARKED = 0, /* no variable: not under gpufl trace */
    GPUFL_TRACE_OTHER,        /* set, but for another image (a parent, before exec) or empty */
    GPUFL_TRACE_STARTING,     /* the injection is starting the session */
    GPUFL_TRACE_INJECTED,     /* the injection's session runs */
    GPUFL_TRACE_PROGRAM,      /* the program's own init started the session */
    GPUFL_TRACE_ENDING        /* the injection's exit path is ending its session */
} gpufl__trace_state_t;

static const char *const gpufl__trace_state_names[] = {"",         "",        "starting",
                                                       "injected", "program", "ending"};

/* "<pid>.<16 hex>": this process as this program image. */
static inline void gpufl__trace_image(char *out, size_t size) {
    const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
    uint64_t bits = 0;
    if (r) memcpy(&bits, r, sizeof bits);
    snprintf(out, size, "%d.%016llx", (int)getpid(), (unsigned long long)bits);
}

static inline gpufl__trace_state_t gpufl__trace_state(void) {
    const char *v = getenv(GPUFL_TRACE_MARKER_VAR);
    char image[48];
    if (!v) return GPUFL_TRACE_UNMARKED;
    gpufl__trace_image(image, sizeof image);
    size_t n = strlen(image);
    if (strncmp(v, image, n) != 0 || v[n] != ' ') return GPUFL_TRACE_OTHER;
    for (int s = GPUFL_TRACE_STARTING; s <= GPUFL_TRACE_ENDING; s++)
        if (strcmp(v + n + 1, gpufl__trace_state_names[s]) == 0) return (gpufl__trace_state_t)s;
    return GPUFL_TRACE_OTHER;
}

/* Marks this image with state (GPUFL_TRACE_OTHER: clears the mark, keeping the
 * variable, so that a later init in this process still marks). */
static inline void gpufl__trace_mark(gpufl__trace_state_t state) {
    char value[64], image[48];
    gpufl__trace_image(image, sizeof image);
    if (state >= GPUFL_TRACE_STARTING)
        snprintf(value, sizeof value, "%s %s", image, gpufl__trace_state_names[state]);
    else
        value[0] = '\0';
    setenv(GPUFL_TRACE_MARKER_VAR, value, 1);
}

#endif
