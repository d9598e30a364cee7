// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_target.h - what the fuzz targets and the replay driver share: the
 * libFuzzer entry point and a check that fails loudly in every build type.
 */
#ifndef GPUFL_TESTS_FUZZ_TARGET_H
#define GPUFL_TESTS_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs one input; libFuzzer calls it, and so does replay_main.c. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* assert() is compiled out under NDEBUG (RelWithDebInfo); a property the
 * fuzzer checks must abort in every build so that both libFuzzer and the CI
 * replay see it. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
