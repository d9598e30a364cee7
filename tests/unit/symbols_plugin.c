// SPDX-License-Identifier: Apache-2.0
/*
 * symbols_plugin.c - a small shared object the symbols test dlopens after
 * creating its resolver: a module that was not mapped at create.
 */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT uintptr_t symbols_plugin_call_site(int *line);

/* Returns where it was called from; the caller passes its own line. */
static __attribute__((noinline)) uintptr_t plugin_return_address(int line, int *line_out) {
    *line_out = line;
    return (uintptr_t)__builtin_return_address(0);
}

/* The return address of a call made on a known line of this file. */
EXPORT __attribute__((noinline)) uintptr_t symbols_plugin_call_site(int *line) {
    uintptr_t pc = plugin_return_address(__LINE__, line);
    __asm__ volatile("" ::: "memory"); /* keeps the call from becoming a jump */
    return pc;
}
