// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_sass.c - fuzz target for what the SASS module reads from outside:
 * nvdisasm's text (gpufl__sass_parse) and a cubin's ELF header and symbol
 * table (gpufl__sass_cubin_arch, gpufl__sass_symbol_index). Each must fail
 * cleanly or give a module that keeps its documented invariants.
 */
#include "fuzz_target.h"

#include "nvidia/sass.h"

#include <string.h>

static void check_module(const gpufl__sass_module_t *m) {
    for (size_t f = 0; f < m->function_count; f++) {
        const gpufl__sass_function_t *fn = &m->functions[f];
        FUZZ_CHECK(fn->name != NULL);
        FUZZ_CHECK(f == 0 || strcmp(m->functions[f - 1].name, fn->name) < 0);
        FUZZ_CHECK(gpufl__sass_find_function(m, fn->name) == fn);
        for (size_t i = 0; i < fn->instruction_count; i++) {
            const gpufl__sass_instruction_t *in = &fn->instructions[i];
            FUZZ_CHECK(in->text != NULL);
            FUZZ_CHECK(strlen(in->text) < GPUFL_SASS_TEXT_MAX_BYTES);
            FUZZ_CHECK(in->file < (int32_t)m->file_count);
            FUZZ_CHECK(i == 0 || fn->instructions[i - 1].offset_bytes < in->offset_bytes);
        }
    }
    for (size_t k = 0; k < m->file_count; k++) FUZZ_CHECK(m->files[k] != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpufl__sass_module_t *m = NULL;
    char why[256];
    if (gpufl__sass_parse(&m, (const char *)data, size, why, sizeof why) == 0) {
        FUZZ_CHECK(m != NULL);
        check_module(m);
        gpufl__sass_module_free(m);
    } else {
        FUZZ_CHECK(m == NULL);
        FUZZ_CHECK(why[0] != '\0');
    }
    /* The same bytes as a cubin. */
    char arch[16];
    if (gpufl__sass_cubin_arch(data, size, arch, sizeof arch) == 0)
        FUZZ_CHECK(strncmp(arch, "sm_", 3) == 0);
    uint32_t index;
    (void)gpufl__sass_symbol_index(data, size, "_Z6kernelPfi", &index);
    return 0;
}
