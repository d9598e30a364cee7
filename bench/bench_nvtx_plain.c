// SPDX-License-Identifier: Apache-2.0
/*
 * bench_nvtx_plain.c - NVTX push+pop pairs with no injection possible: a
 * module of its own, with NVTX's own copy of its state and every way to find
 * a tool switched off, so bench_nvtx measures NVTX's no-op path in the same
 * process as gpufl's capture.
 */
#define NVTX_SUPPORT_DYNAMIC_INJECTION_LIBRARY 0
#define NVTX_SUPPORT_STATIC_INJECTION_LIBRARY  0
#include <nvtx3/nvToolsExt.h>

__attribute__((visibility("default"))) void bench_nvtx_plain_pairs(int n);

void bench_nvtx_plain_pairs(int n) {
    for (int i = 0; i < n; i++) {
        nvtxRangePushA("bench_range");
        __asm__ volatile("" ::: "memory");
        nvtxRangePop();
    }
}
