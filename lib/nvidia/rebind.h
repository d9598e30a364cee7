// SPDX-License-Identifier: Apache-2.0
/*
 * rebind.h - points one function that a loaded vendor library imports at a
 * replacement of ours, by rewriting the library's own import slot (its GOT
 * entry). Nothing else in the process changes: other libraries keep calling
 * the original.
 *
 * Used for one CUPTI defect (docs/design/pc-sampling.md, "A function without
 * a name"): cuptiPCSamplingGetData passes a NULL function name to strdup,
 * which kills the process. PC sampling gives libcupti a strdup that accepts
 * NULL (pc_sampling.c).
 *
 * Works on ELF libraries loaded by the dynamic linker, on any architecture
 * whose relocations name their symbol (x86-64, aarch64). A slot in a page
 * that the dynamic linker made read-only after relocation (RELRO) is made
 * writable for the write and read-only again; every other page keeps its
 * protection.
 */
#ifndef GPUFL_NVIDIA_REBIND_H
#define GPUFL_NVIDIA_REBIND_H

#include <stddef.h>

/*
 * In the loaded library that holds the code at `inside` (any function of
 * it), points every import slot of `symbol` at `replacement`. Returns the
 * number of slots rewritten (0: the library does not import the symbol),
 * or a negative GPUFL_E* code with a one-line reason in why (not a library
 * the dynamic linker loaded; an unreadable dynamic section; mprotect
 * refused).
 */
int gpufl__rebind_import(const void *inside, const char *symbol, void *replacement, char *why,
                         size_t why_size);

#endif
