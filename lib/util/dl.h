// SPDX-License-Identifier: Apache-2.0
/*
 * dl.h - loads an optional library at run time (the vendor libraries:
 * libnvidia-ml, libcuda, libcupti; and libdw for stack symbols) and resolves
 * its symbols with versioned fallbacks.
 *
 * gpufl never links against these libraries: a missing library or symbol is
 * a normal state, reported as a one-line reason for the capability record.
 * Libraries are opened RTLD_NOW | RTLD_LOCAL (their symbols never leak into
 * the application's namespace) | RTLD_NODELETE (never unmapped, see dl.c).
 * Not thread-safe per gpufl__dl_t.
 */
#ifndef GPUFL_UTIL_DL_H
#define GPUFL_UTIL_DL_H

#include <stddef.h>

#define GPUFL_DL_NAME_BYTES    256 /* longest library name or path kept */
#define GPUFL_DL_MISSING_BYTES 512 /* the list of optional symbols not found */
#define GPUFL_DL_VARIANTS      4   /* names tried per symbol */

/* An opened library. Zero it (or let open fill it) before use. */
typedef struct gpufl__dl {
    void *handle;                         /* from dlopen; NULL when closed */
    char name[GPUFL_DL_NAME_BYTES];       /* the name or path that opened */
    char missing[GPUFL_DL_MISSING_BYTES]; /* optional symbols absent: "a, b (or c)"; "" none */
    int missing_count;
} gpufl__dl_t;

/*
 * One symbol to resolve: names in order of preference, newest version first
 * ({"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}); unused
 * entries NULL. slot is the address of the caller's function pointer; it
 * receives the first name found, or NULL. found is set to the index of that
 * name in names, or -1.
 */
typedef struct gpufl__dl_sym {
    const char *names[GPUFL_DL_VARIANTS];
    void *slot;
    int required;
    int found;
} gpufl__dl_sym_t;

/*
 * Opens override_path when it is non-NULL and non-empty, else the first of
 * names (a NULL-terminated list of sonames) that loads. Returns 0, or
 * GPUFL_ENOTSUP with a one-line reason in why: "<name> not found: <hint>"
 * when no file was there ("libnvidia-ml.so.1 not found: no NVIDIA driver"),
 * "cannot load <name>: <dlerror>" when one was there but would not load.
 * hint may be NULL. On failure dl is left closed.
 */
int gpufl__dl_open(gpufl__dl_t *dl, const char *override_path, const char *const *names,
                   const char *hint, char *why, size_t why_size);

/*
 * Resolves count symbols. Returns 0 when every required symbol has one of
 * its names, else GPUFL_ENOTSUP with why = "<library> lacks nvmlInit_v2 (or
 * nvmlInit)" naming the first required one missing. Optional symbols that
 * are missing are listed in dl->missing either way.
 */
int gpufl__dl_resolve(gpufl__dl_t *dl, gpufl__dl_sym_t *syms, size_t count, char *why,
                      size_t why_size);

/* Drops our reference (dlclose; the library stays mapped) and clears dl.
 * Accepts NULL and a closed dl. */
void gpufl__dl_close(gpufl__dl_t *dl);

#endif
