// SPDX-License-Identifier: Apache-2.0
/*
 * cupti_values.h - CUPTI's numbers for copy kinds, memory kinds and
 * synchronization types turned into gpufl's own (gpufl_log.h), the one place
 * the NVIDIA backend does it. A number the table does not know is written as
 * unknown (0) and counted, never dropped.
 */
#ifndef GPUFL_NVIDIA_CUPTI_VALUES_H
#define GPUFL_NVIDIA_CUPTI_VALUES_H

#include <gpufl/gpufl_log.h>

#include <stdint.h>

/* CUPTI's numbers that had no gpufl value, for trace_stats and an event. */
typedef struct gpufl__value_misses {
    uint64_t count;    /* numbers written as unknown */
    const char *first; /* what the first was ("copy kind", ...), NULL before one */
    uint32_t first_value;
} gpufl__value_misses_t;

/* CUpti_ActivityMemcpyKind to gpufl_copy_kind_t. */
gpufl_copy_kind_t gpufl__cupti_values_copy_kind(gpufl__value_misses_t *misses, uint32_t kind);
/* CUpti_ActivityMemoryKind to gpufl_memory_kind_t. */
gpufl_memory_kind_t gpufl__cupti_values_memory_kind(gpufl__value_misses_t *misses, uint32_t kind);
/* CUpti_ActivitySynchronizationType to gpufl_sync_type_t. */
gpufl_sync_type_t gpufl__cupti_values_sync_type(gpufl__value_misses_t *misses, uint32_t type);

#endif
