// SPDX-License-Identifier: Apache-2.0
/*
 * interp.h - the registered interpreter (gpufl_interp.h) as the stack
 * capture and the stack log use it: the provider and where the
 * interpreter's machine code lies.
 *
 * Threads: gpufl__interp_get from any thread, lock-free; the registration
 * never changes once made.
 */
#ifndef GPUFL_CORE_INTERP_H
#define GPUFL_CORE_INTERP_H

#include <gpufl/gpufl_interp.h>

#include <stddef.h>
#include <stdint.h>

/* A stack entry that is an interpreted frame's key, not an address: user
 * space addresses never have bit 63 set. */
#define GPUFL_INTERP_KEY_BIT (UINT64_C(1) << 63)

typedef struct gpufl__interp_reg {
    gpufl_interp_t api;
    uintptr_t code_lo, code_hi; /* the interpreter's executable segment */
} gpufl__interp_reg_t;

/* The executable segment [*lo, *hi) of the loaded object holding addr:
 * 1, or 0 when addr is in none. */
int gpufl__exec_segment(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

/* A stack table was created (+1) or destroyed (-1): gpufl_interp_capturing. */
void gpufl__interp_capturing(int delta);

/* In a forked child: no session captures stacks (the parent's tables are
 * not the child's, and are never destroyed there). */
void gpufl__interp_after_fork_child(void);

/* The registered interpreter, or NULL. */
const gpufl__interp_reg_t *gpufl__interp_get(void);

#endif
