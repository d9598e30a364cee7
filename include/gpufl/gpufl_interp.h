// SPDX-License-Identifier: Apache-2.0
/*
 * gpufl_interp.h - for language bindings: an interpreter's own frames in the
 * CPU stacks gpufl captures at kernel launches and synchronizations
 * (enable_stack_trace). The gpufl Python package registers one, so that a
 * torch.cuda.synchronize() is attributed to "train.py:90 in train_step"
 * rather than to the interpreter's C loop.
 *
 * How a stack is made when an interpreter is registered: the native frames
 * are walked as always; when one of them lies in the interpreter's machine
 * code (the executable segment holding `native_code`), the native frames from
 * there outward are replaced by the interpreter's frames, which `walk` gives,
 * innermost first, as 63-bit keys of its own choosing (the same key for the
 * same function and line). A thread whose native stack never enters the
 * interpreter (a CUDA library's worker thread) is not walked.
 *
 * Keys are described later, on gpufl's collector thread, by `describe`; each
 * distinct key once per session. The strings it gives must stay valid for
 * the life of the process (the library copies nothing it does not write at
 * once, and may describe a key long after it was walked).
 *
 * Use (the Python binding's shape)
 *     static size_t walk(uint64_t *keys, size_t max, void *user) { ... }
 *     static int describe(uint64_t key, gpufl_interp_frame_t *out, void *user) { ... }
 *     gpufl_interp_t interp = {sizeof interp, "python", (const void *)PyEval_GetFrame,
 *                              walk, describe, NULL};
 *     gpufl_interp_register(&interp);
 */
#ifndef GPUFL_INTERP_H
#define GPUFL_INTERP_H

#include <gpufl/gpufl.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One interpreted frame, as `describe` gives it. */
typedef struct gpufl_interp_frame {
    const char *function; /**< qualified function name ("Trainer.step"); NULL unknown */
    const char *file;     /**< source file path; NULL unknown */
    int line;             /**< 1-based; 0 unknown */
    /** 1: code of the interpreter's standard library or of an installed
     *  package, not the application's own (never a stack's site). */
    int library;
} gpufl_interp_frame_t;

/** An interpreter's frame provider. */
typedef struct gpufl_interp {
    size_t size;          /**< sizeof(gpufl_interp_t) */
    const char *language; /**< "python": written on its frame records; static storage */
    /** Any address in the interpreter's machine code (one of its C functions). */
    const void *native_code;
    /**
     * The calling thread's interpreted frames, innermost first: at most max
     * keys written, their count returned (0: none known on this thread, or
     * the provider is switched off). Bit 63 of a key is ignored. Runs on the
     * application's thread, inside a CUDA call that gpufl records, with no
     * gpufl lock held; the thread may hold locks of its own, so walk must
     * never wait for a lock another thread may hold while making CUDA calls
     * (an interpreter's global lock included), and must not call CUDA.
     */
    size_t (*walk)(uint64_t *keys, size_t max, void *user);
    /** Describes a key walk gave: 1, or 0 when it is unknown. Collector thread. */
    int (*describe)(uint64_t key, gpufl_interp_frame_t *out, void *user);
    void *user;
} gpufl_interp_t;

/**
 * 1 while a session captures CPU stacks (enable_stack_trace), else 0: a
 * provider that records frames ahead of time (gpufl_interp_t) need not do
 * that work otherwise. Lock-free.
 */
GPUFL_API int gpufl_interp_capturing(void);

/**
 * Registers the process's interpreter (a copy of *interp is kept). One may
 * be registered for the life of the process: registering the same walk and
 * describe again returns 0, another one GPUFL_EALREADY. GPUFL_EINVAL: a NULL
 * field, or native_code in no loaded object. Sessions started before or
 * after the call both use it.
 */
GPUFL_API int gpufl_interp_register(const gpufl_interp_t *interp);

#ifdef __cplusplus
}
#endif

#endif
