// SPDX-License-Identifier: Apache-2.0
/*
 * backends.c - the tables of vendor backends and host sources built into
 * this gpufl, the one place that names them, and the none backend: why no
 * vendor backend runs when None, or one that is not built, is asked for.
 */
#include "core/backend.h"

#include <stddef.h>

const gpufl__backend_ops_t *const gpufl__backends[] = {&gpufl__backend_nvidia, NULL};

const gpufl__source_ops_t *const gpufl__host_sources[] = {&gpufl__source_host, NULL};

const char *gpufl__backend_absent_why(gpufl_backend_t kind) {
    if (kind == GPUFL_BACKEND_NONE) return "backend None was asked for";
    for (int i = 0; gpufl__backends[i]; i++)
        if (gpufl__backends[i]->kind == kind) return NULL;
    if (kind == GPUFL_BACKEND_AMD) return "the AMD backend is not built yet in this release";
    return NULL; /* Auto */
}
