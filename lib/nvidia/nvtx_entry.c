// SPDX-License-Identifier: Apache-2.0
/*
 * nvtx_entry.c - the entry point NVTX looks up in the library that
 * NVTX_INJECTION64_PATH names. A file of its own: a module that embeds
 * libgpufl statically (the Python extension) defines its own and never pulls
 * this one out of the archive. Built without the CUDA toolkit's headers,
 * gpufl has no NVTX callbacks, and says so to NVTX.
 */
#include <gpufl/gpufl.h>

GPUFL_API int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t));

int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t)) {
    return gpufl_nvtx_inject(get_export_table) == 0;
}

#if !GPUFL_HAVE_CUPTI
int gpufl_nvtx_inject(const void *(*get_export_table)(uint32_t)) {
    (void)get_export_table;
    return -1; /* NVTX then leaves every call a no-op */
}
#endif
