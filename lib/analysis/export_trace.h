// SPDX-License-Identifier: Apache-2.0
/*
 * export_trace.h - a session model written as a timeline for trace viewers:
 * the Chrome trace event JSON (chrome://tracing, Perfetto UI, Speedscope)
 * or Perfetto's native protobuf trace (ui.perfetto.dev, trace_processor).
 *
 * Both formats show the same timeline, built once by export_timeline.c: one
 * process per session, a track per CPU thread (scopes nested, synchronization
 * calls, kernel launches), a track per GPU device and stream (kernels; copies
 * and memsets on a track of their own per device), arrows from each launch to
 * its kernel, and counter tracks for the GPU and host samples. docs/export.md
 * describes what is drawn where and the limits. A third format, a CTF trace
 * directory for babeltrace2, writes the model's rows as they are
 * (export_ctf.c, docs/design/ctf-export.md).
 *
 * Reads the model only; any number of exports may run on one model at once.
 */
#ifndef GPUFL_ANALYSIS_EXPORT_TRACE_H
#define GPUFL_ANALYSIS_EXPORT_TRACE_H

#include "analysis/model.h"

#include <gpufl/gpufl_analysis.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The formats, options and result: gpufl_analysis.h (gpufl_export_format_parse(),
 * gpufl_export_extension(), gpufl_export_result_fini() are export_trace.c's). */

/*
 * Writes the timeline of m in opt->format. Returns 0, GPUFL_EINVAL (bad
 * options), GPUFL_EIO (a file could not be created or written: the message
 * names it; files already complete stay), GPUFL_ENOMEM. *res (may be NULL)
 * says what was written; free it with gpufl_export_result_fini().
 */
int gpufl__export_write(gpufl_export_result_t *res, const gpufl__model_t *m,
                        const gpufl_export_options_t *opt);

/* The CTF writer (export_ctf.c): the model, not the timeline, into the
 * directory opt->path. overwrite: opt->overwrite where the caller's options
 * have it. Same contract as gpufl__export_write(); it adds to *res. */
int gpufl__export_ctf(gpufl_export_result_t *res, const gpufl__model_t *m,
                      const gpufl_export_options_t *opt, int overwrite);

#endif
