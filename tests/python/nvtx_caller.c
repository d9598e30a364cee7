// SPDX-License-Identifier: Apache-2.0
/*
 * nvtx_caller.c - a library that makes NVTX calls, built against the CUDA
 * toolkit's NVTX v3 headers, for test_nvtx.py: it stands in for PyTorch's
 * NVTX, which NVTX_INJECTION64_PATH (set by gpufl.init) points at gpufl.
 */
#include <nvtx3/nvToolsExt.h>

__attribute__((visibility("default"))) int nvtx_caller_push(const char *name);
__attribute__((visibility("default"))) int nvtx_caller_pop(void);

int nvtx_caller_push(const char *name) { return nvtxRangePushA(name); }
int nvtx_caller_pop(void) { return nvtxRangePop(); }
