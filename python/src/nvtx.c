// SPDX-License-Identifier: Apache-2.0
/*
 * nvtx.c - the extension's NVTX entry point. The extension holds its own copy
 * of libgpufl and exports nothing of it; gpufl.init() points
 * NVTX_INJECTION64_PATH at this module, so NVTX looks the entry point up here.
 */
#include <gpufl/gpufl.h>

__attribute__((visibility("default"))) int
InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t));

int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t)) {
    return gpufl_nvtx_inject(get_export_table) == 0;
}
