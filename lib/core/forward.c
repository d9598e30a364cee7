// SPDX-License-Identifier: Apache-2.0
/*
 * forward.c - the table of the recording copy's public functions that a joining copy of
 * libgpufl forwards to under `gpufl trace` (core/forward.h), and how it is found.
 *
 * The injection library the driver loaded depends on the copy that runs the session, so a
 * dlsym on its handle (dlopen with RTLD_NOLOAD: it is already loaded) finds that copy's
 * exported functions and never this copy's (hidden in the Python extension, or in the
 * executable, which a handle's lookup does not search).
 */
#include "core/forward.h"

#include "core/scope.h"
#include "util/error.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static gpufl__forward_t table;
static const gpufl__forward_t *live; /* &table while forwarding; atomic builtins */

/* Resolves name into *slot from handle; 0, or -1 with the reason in *why. */
static int resolve(void *handle, const char *name, void *slot, const char **why) {
    void *p = dlsym(handle, name);
    if (!p) {
        *why = name;
        return -1;
    }
    memcpy(slot, &p, sizeof p); /* object to function pointer, as POSIX allows for dlsym */
    return 0;
}

int gpufl__forward_open(void) {
    const char *path = getenv("CUDA_INJECTION64_PATH");
    const char *missing = NULL;
    int (*version_number)(void) = NULL;
    if (!path || !*path)
        return gpufl__set_error(GPUFL_ENOTFOUND, "CUDA_INJECTION64_PATH is not set");
    /* RTLD_NOLOAD: never loads anything; a reference kept for good (the library is
     * never unloaded while the driver holds it). */
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return gpufl__set_error(GPUFL_ENOTFOUND, "the injection library '%s' is not loaded", path);
    gpufl__forward_t t;
    if (resolve(h, "gpufl_version_number", &version_number, &missing) ||
        resolve(h, "gpufl_last_error", &t.last_error, &missing) ||
        resolve(h, "gpufl_is_active", &t.is_active, &missing) ||
        resolve(h, "gpufl_session_dir", &t.session_dir, &missing) ||
        resolve(h, "gpufl_scope_begin_n", &t.scope_begin_n, &missing) ||
        resolve(h, "gpufl_scope_end", &t.scope_end, &missing) ||
        resolve(h, "gpufl_system_start", &t.system_start, &missing) ||
        resolve(h, "gpufl_system_stop", &t.system_stop, &missing) ||
        resolve(h, "gpufl_flush", &t.flush, &missing) ||
        resolve(h, "gpufl_snapshot", &t.snapshot, &missing) ||
        resolve(h, "gpufl_get_stats", &t.get_stats, &missing))
        return gpufl__set_error(GPUFL_ENOTFOUND, "'%s' has no %s", path, missing);
    if (t.scope_begin_n == gpufl_scope_begin_n)
        return gpufl__set_error(GPUFL_ENOTFOUND, "'%s' resolves to this copy itself", path);
    int theirs = version_number();
    if (theirs / 10000 != GPUFL_VERSION_MAJOR)
        return gpufl__set_error(GPUFL_ENOTFOUND, "the copy in '%s' is version %d, this one %d",
                                path, theirs, GPUFL_VERSION_NUMBER);
    if (!t.is_active())
        return gpufl__set_error(GPUFL_ENOTFOUND, "the copy in '%s' runs no session", path);
    table = t;
    __atomic_store_n(&live, &table, __ATOMIC_RELEASE);
    gpufl__scope_forwarding(1);
    return 0;
}

void gpufl__forward_close(void) {
    /* Only when forwarding: the flag is the session's own otherwise. */
    if (__atomic_exchange_n(&live, NULL, __ATOMIC_ACQ_REL)) gpufl__scope_forwarding(0);
}

const gpufl__forward_t *gpufl__forward(void) { return __atomic_load_n(&live, __ATOMIC_ACQUIRE); }

int gpufl__forward_rc(const gpufl__forward_t *f, int rc) {
    if (rc < 0) gpufl__set_error(rc, "%s", f->last_error());
    return rc;
}
