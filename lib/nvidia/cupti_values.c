// SPDX-License-Identifier: Apache-2.0
/*
 * cupti_values.c - the tables from CUPTI's numbers to gpufl's values
 * (gpufl_log.h). The log carries gpufl's values so that another vendor's
 * backend writes the same ones and readers need no vendor's header.
 */
#include "nvidia/cupti_values.h"

#include <cupti.h>

#include <stddef.h>

static const uint8_t copy_kinds[] = {
    [CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN] = GPUFL_COPY_KIND_UNKNOWN,
    [CUPTI_ACTIVITY_MEMCPY_KIND_HTOD] = GPUFL_COPY_KIND_HOST_TO_DEVICE,
    [CUPTI_ACTIVITY_MEMCPY_KIND_DTOH] = GPUFL_COPY_KIND_DEVICE_TO_HOST,
    [CUPTI_ACTIVITY_MEMCPY_KIND_HTOA] = GPUFL_COPY_KIND_HOST_TO_ARRAY,
    [CUPTI_ACTIVITY_MEMCPY_KIND_ATOH] = GPUFL_COPY_KIND_ARRAY_TO_HOST,
    [CUPTI_ACTIVITY_MEMCPY_KIND_ATOA] = GPUFL_COPY_KIND_ARRAY_TO_ARRAY,
    [CUPTI_ACTIVITY_MEMCPY_KIND_ATOD] = GPUFL_COPY_KIND_ARRAY_TO_DEVICE,
    [CUPTI_ACTIVITY_MEMCPY_KIND_DTOA] = GPUFL_COPY_KIND_DEVICE_TO_ARRAY,
    [CUPTI_ACTIVITY_MEMCPY_KIND_DTOD] = GPUFL_COPY_KIND_DEVICE_TO_DEVICE,
    [CUPTI_ACTIVITY_MEMCPY_KIND_HTOH] = GPUFL_COPY_KIND_HOST_TO_HOST,
    [CUPTI_ACTIVITY_MEMCPY_KIND_PTOP] = GPUFL_COPY_KIND_PEER,
};

static const uint8_t memory_kinds[] = {
    [CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN] = GPUFL_MEMORY_KIND_UNKNOWN,
    [CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE] = GPUFL_MEMORY_KIND_PAGEABLE,
    [CUPTI_ACTIVITY_MEMORY_KIND_PINNED] = GPUFL_MEMORY_KIND_PINNED,
    [CUPTI_ACTIVITY_MEMORY_KIND_DEVICE] = GPUFL_MEMORY_KIND_DEVICE,
    [CUPTI_ACTIVITY_MEMORY_KIND_ARRAY] = GPUFL_MEMORY_KIND_ARRAY,
    [CUPTI_ACTIVITY_MEMORY_KIND_MANAGED] = GPUFL_MEMORY_KIND_MANAGED,
    [CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC] = GPUFL_MEMORY_KIND_DEVICE_STATIC,
    [CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC] = GPUFL_MEMORY_KIND_MANAGED_STATIC,
};

static const uint8_t sync_types[] = {
    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN] = GPUFL_SYNC_TYPE_UNKNOWN,
    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE] = GPUFL_SYNC_TYPE_EVENT,
    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT] = GPUFL_SYNC_TYPE_STREAM_WAIT_EVENT,
    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE] = GPUFL_SYNC_TYPE_STREAM,
    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE] = GPUFL_SYNC_TYPE_DEVICE,
};

/* table[value]; CUPTI's own unknown is 0 in each enum and maps to 0 without
 * a miss. A number past the table (a later CUPTI's), or a hole in it, is a
 * miss. */
static int map(const uint8_t *table, size_t n, uint32_t value, const char *what,
               gpufl__value_misses_t *misses) {
    if (value < n && (value == 0 || table[value] != 0)) return table[value];
    if (misses->count++ == 0) {
        misses->first = what;
        misses->first_value = value;
    }
    return 0;
}

gpufl_copy_kind_t gpufl__cupti_values_copy_kind(gpufl__value_misses_t *misses, uint32_t kind) {
    return (gpufl_copy_kind_t)map(copy_kinds, sizeof copy_kinds, kind, "copy kind", misses);
}

gpufl_memory_kind_t gpufl__cupti_values_memory_kind(gpufl__value_misses_t *misses, uint32_t kind) {
    return (gpufl_memory_kind_t)map(memory_kinds, sizeof memory_kinds, kind, "memory kind", misses);
}

gpufl_sync_type_t gpufl__cupti_values_sync_type(gpufl__value_misses_t *misses, uint32_t type) {
    return (gpufl_sync_type_t)map(sync_types, sizeof sync_types, type, "synchronization type",
                                  misses);
}
