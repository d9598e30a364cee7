// SPDX-License-Identifier: Apache-2.0
/*
 * gpufl_ops.h - for framework bindings: tag every kernel with the framework
 * operation that launched it (gpufl.torch: the aten op), through CUPTI's
 * external correlation.
 *
 * A binding registers each operation name once, then brackets every call of
 * the operation with gpufl_op_push / gpufl_op_pop on the calling thread. A
 * push gives the call an id of its own and pushes it on CUPTI's external
 * correlation stack of that thread (kind CUSTOM2); kernels launched until
 * the pop carry it in their `external_kind` (5) and `external_id` columns,
 * and the analysis names their operation. The id is the name's index in its
 * top 24 bits and the call's number in the low 40 (docs/log-format.md, `op`).
 *
 * Pushes do something only while a session traces kernels with
 * enable_external_correlation (the Trace engine and the engines built on
 * it); otherwise they return 0 and cost an atomic load.
 *
 * Use
 *     static int mm;  // once: mm = gpufl_op_register("aten::mm");
 *     uint64_t call = gpufl_op_push(mm);
 *     ... launch the kernels of aten::mm ...
 *     gpufl_op_pop(call);
 */
#ifndef GPUFL_OPS_H
#define GPUFL_OPS_H

#include <gpufl/gpufl.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Operation names kept per process; later names are refused (GPUFL_ENOMEM). */
#define GPUFL_OPS_MAX 65536

/**
 * The index (1 ..) of an operation name: the same index for the same name,
 * for the life of the process. Names are written into each session's log at
 * its next flush after they were registered. Negative GPUFL_E*
 * on NULL or empty names (GPUFL_EINVAL) or a full table.
 */
GPUFL_API int gpufl_op_register(const char *name);

/**
 * Starts a call of operation `index` on the calling thread: its id, or 0
 * when nothing was pushed (no tracing session, or an unknown index). Pass the
 * result to gpufl_op_pop on the same thread, 0 included.
 */
GPUFL_API uint64_t gpufl_op_push(int index);

/** Ends the call `id` gpufl_op_push gave (0: nothing to do). */
GPUFL_API void gpufl_op_pop(uint64_t id);

#ifdef __cplusplus
}
#endif

#endif
