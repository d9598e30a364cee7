// SPDX-License-Identifier: Apache-2.0
/*
 * compat.h - the record versions this reader knows, and older logs brought
 * to today's values as their rows are loaded, so that nothing after the
 * model (report, insights, exports, tables) meets an old value.
 */
#ifndef GPUFL_ANALYSIS_COMPAT_H
#define GPUFL_ANALYSIS_COMPAT_H

#include "analysis/model.h"
#include "analysis/reader.h"

#include <stddef.h>
#include <stdint.h>

/* 1 when this reader knows version v of record type `type`, else 0 (the
 * line is then skipped and counted). */
int gpufl__compat_known(const char *type, int64_t v);

/* Brings rows [first, n) of m's copies, memsets or syncs, just loaded from
 * one line (rec, or the scanned view when rec is NULL), to today's values
 * when the line is of an older version: v 1 held CUPTI's numbers for the
 * kinds and types (docs/log-format.md, Versions). A number v 1 never held
 * becomes 0 (unknown). */
void gpufl__compat_copies(gpufl__model_t *m, size_t first, json_t *rec,
                          const gpufl__reader_batch_t *view);
void gpufl__compat_memsets(gpufl__model_t *m, size_t first, json_t *rec,
                           const gpufl__reader_batch_t *view);
void gpufl__compat_syncs(gpufl__model_t *m, size_t first, json_t *rec,
                         const gpufl__reader_batch_t *view);

/* A compact line parsed by jansson (kernel v 2; copy, memset, sync v 3) rewritten in place
 * as the plain line it stands for, before its columns are read; other lines are left alone.
 * Returns 0, -1 with why when its encoding is malformed, GPUFL_ENOMEM. */
int gpufl__compat_line(json_t *rec, char *why, size_t why_size);

#endif
