// SPDX-License-Identifier: Apache-2.0
// cuda_check.cuh - CHECK(call) for the GPU check programs: a CUDA runtime
// call that fails prints the call and CUDA's message, prefixed with the
// program's name (kProgram, defined before this header), and exits 1.
#pragma once
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s: %s: %s\n", kProgram, #call, cudaGetErrorString(e_));         \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)
