// SPDX-License-Identifier: Apache-2.0
/*
 * compat.c - logs of earlier versions read as today's: which record versions
 * this reader knows, and the one place where an old line's values become
 * today's (docs/log-format.md, Versions). The model calls it once per loaded
 * line of an affected type; everything after the model sees new values only.
 * Compact lines (kernel v 2, copy, memset and sync v 3) are decoded before
 * that, by the reader's scanner or gpufl__compat_line, into plain columns.
 */
#include "analysis/compat.h"

#include "util/colcode.h"
#include "util/error.h"

#include <gpufl/gpufl_analysis.h>

#include <gpufl/gpufl_log.h>

#include <stdio.h>
#include <string.h>

/* Record types whose version is past 1, with the newest this reader knows;
 * it reads every version from 1 up to that one. Others: version 1 only. */
static const struct {
    const char *type;
    int64_t newest;
} versions[] = {{"kernel", 2}, /* v 2: compact lines (util/colcode.c) */
                {"copy", 3},   /* v 2: gpufl's values; v 3: compact lines */
                {"memset", 3},
                {"sync", 3},
                {"alloc", GPUFL_LOG_VALUES_VERSION}};

int gpufl__compat_known(const char *type, int64_t v) {
    int64_t newest = 1;
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
        if (strcmp(type, versions[i].type) == 0) newest = versions[i].newest;
    return v >= 1 && v <= newest;
}

/* What version 1 held: CUPTI's numbers as they were then (CUDA 13's
 * cupti_activity.h), frozen here so that the analysis needs no vendor
 * header. Index: the v 1 number; value: today's. */
static const uint8_t v1_copy_kinds[] = {[0] = GPUFL_COPY_KIND_UNKNOWN,
                                        [1] = GPUFL_COPY_KIND_HOST_TO_DEVICE,
                                        [2] = GPUFL_COPY_KIND_DEVICE_TO_HOST,
                                        [3] = GPUFL_COPY_KIND_HOST_TO_ARRAY,
                                        [4] = GPUFL_COPY_KIND_ARRAY_TO_HOST,
                                        [5] = GPUFL_COPY_KIND_ARRAY_TO_ARRAY,
                                        [6] = GPUFL_COPY_KIND_ARRAY_TO_DEVICE,
                                        [7] = GPUFL_COPY_KIND_DEVICE_TO_ARRAY,
                                        [8] = GPUFL_COPY_KIND_DEVICE_TO_DEVICE,
                                        [9] = GPUFL_COPY_KIND_HOST_TO_HOST,
                                        [10] = GPUFL_COPY_KIND_PEER};
static const uint8_t v1_memory_kinds[] = {
    [0] = GPUFL_MEMORY_KIND_UNKNOWN,       [1] = GPUFL_MEMORY_KIND_PAGEABLE,
    [2] = GPUFL_MEMORY_KIND_PINNED,        [3] = GPUFL_MEMORY_KIND_DEVICE,
    [4] = GPUFL_MEMORY_KIND_ARRAY,         [5] = GPUFL_MEMORY_KIND_MANAGED,
    [6] = GPUFL_MEMORY_KIND_DEVICE_STATIC, [7] = GPUFL_MEMORY_KIND_MANAGED_STATIC};
static const uint8_t v1_sync_types[] = {[0] = GPUFL_SYNC_TYPE_UNKNOWN,
                                        [1] = GPUFL_SYNC_TYPE_EVENT,
                                        [2] = GPUFL_SYNC_TYPE_STREAM_WAIT_EVENT,
                                        [3] = GPUFL_SYNC_TYPE_STREAM,
                                        [4] = GPUFL_SYNC_TYPE_DEVICE /* context synchronize */};

#define V1(table, x) ((x) >= 0 && (size_t)(x) < sizeof table ? (int32_t)table[(x)] : 0)

/* The version of the line the rows came from. */
static int64_t line_version(json_t *rec, const gpufl__reader_batch_t *view) {
    return rec ? json_integer_value(json_object_get(rec, "v")) : view->version;
}

void gpufl__compat_copies(gpufl__model_t *m, size_t first, json_t *rec,
                          const gpufl__reader_batch_t *view) {
    if (first >= m->n_copies || line_version(rec, view) != 1) return;
    for (size_t i = first; i < m->n_copies; i++) {
        gpufl__model_copy_t *c = &m->copies[i];
        c->copy_kind = V1(v1_copy_kinds, c->copy_kind);
        c->src_kind = V1(v1_memory_kinds, c->src_kind);
        c->dst_kind = V1(v1_memory_kinds, c->dst_kind);
    }
}

void gpufl__compat_memsets(gpufl__model_t *m, size_t first, json_t *rec,
                           const gpufl__reader_batch_t *view) {
    if (first >= m->n_memsets || line_version(rec, view) != 1) return;
    for (size_t i = first; i < m->n_memsets; i++)
        m->memsets[i].memory_kind = V1(v1_memory_kinds, m->memsets[i].memory_kind);
}

void gpufl__compat_syncs(gpufl__model_t *m, size_t first, json_t *rec,
                         const gpufl__reader_batch_t *view) {
    if (first >= m->n_syncs || line_version(rec, view) != 1) return;
    for (size_t i = first; i < m->n_syncs; i++)
        m->syncs[i].sync_type = V1(v1_sync_types, m->syncs[i].sync_type);
}

int gpufl__compat_line(json_t *rec, char *why, size_t why_size) {
    return gpufl__colcode_decode_json(rec, why, why_size);
}

int gpufl_log_line_decode(struct json_t *line, char *why, size_t why_size) {
    char reason[200] = "";
    if (!line) return gpufl__set_error(GPUFL_EINVAL, "no line to decode");
    int rc = gpufl__colcode_decode_json(line, reason, sizeof reason);
    if (rc == -1) {
        if (why && why_size) snprintf(why, why_size, "%s", reason);
        return gpufl__set_error(GPUFL_EFORMAT, "%s", reason);
    }
    return rc;
}
