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
 * describes what is drawn where and the limits.
 *
 * Reads the model only; any number of exports may run on one model at once.
 */
#ifndef GPUFL_ANALYSIS_EXPORT_TRACE_H
#define GPUFL_ANALYSIS_EXPORT_TRACE_H

#include "analysis/model.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum gpufl_export_format {
    GPUFL_EXPORT_CHROME = 0,  /* Chrome trace event JSON */
    GPUFL_EXPORT_PERFETTO = 1 /* Perfetto protobuf trace */
} gpufl_export_format_t;

/* "chrome" or "perfetto" to *out. Returns 0, or GPUFL_EINVAL for any other name. */
int gpufl__export_format_parse(const char *name, gpufl_export_format_t *out);
/* The file name ending of a format: ".trace.json", ".perfetto-trace". */
const char *gpufl__export_extension(gpufl_export_format_t format);

/* Chrome JSON: trace events per file (metadata events aside) unless told otherwise. */
#define GPUFL_EXPORT_CHROME_MAX_EVENTS 1000000u
/* Chrome JSON: files one export may split into. */
#define GPUFL_EXPORT_FILES_MAX 10000u

/* Called now and then while writing: fraction done, 0..1. */
typedef void (*gpufl_export_progress_fn)(void *user, double fraction);

typedef struct gpufl_export_options {
    size_t size; /* sizeof(gpufl_export_options_t): fields are only appended */
    gpufl_export_format_t format;
    /* The file to write; NULL or "-": the stream `out` (never split). */
    const char *path;
    FILE *out;
    /* Chrome JSON: at most this many trace events per file (0: the default,
     * GPUFL_EXPORT_CHROME_MAX_EVENTS; UINT64_MAX: one file). A session with
     * more is split by time into <stem>.<n><ending>, each file complete with
     * the process and track metadata. */
    uint64_t max_events_per_file;
    gpufl_export_progress_fn progress; /* NULL: none */
    void *progress_user;
} gpufl_export_options_t;

typedef struct gpufl_export_result {
    size_t n_files;
    char **files;         /* the paths written, in time order; NULL for a stream */
    uint64_t events;      /* Chrome: trace events written, metadata included; Perfetto: packets */
    uint64_t bytes;       /* written, all files together */
    uint64_t slices;      /* scopes, syncs, launches, kernels, copies, memsets */
    uint64_t counters;    /* counter values */
    uint64_t instants;    /* launch rows drawn as instants (sessions without kernel rows) */
    uint64_t flows;       /* launch -> kernel arrows written */
    uint64_t flows_cut;   /* Chrome: arrows left out, their ends in different files */
    uint64_t clipped;     /* slices shortened to nest inside the one enclosing them */
    uint64_t no_launch;   /* kernels whose launch time is not in the log: no arrow */
    size_t tracks;        /* thread, GPU and counter tracks */
    int split_suppressed; /* Chrome to a stream: more events than one file should hold */
} gpufl_export_result_t;

/*
 * Writes the timeline of m in opt->format. Returns 0, GPUFL_EINVAL (bad
 * options), GPUFL_EIO (a file could not be created or written: the message
 * names it; files already complete stay), GPUFL_ENOMEM. *res (may be NULL)
 * says what was written; free it with gpufl__export_result_fini().
 */
int gpufl__export_write(const gpufl_model_t *m, const gpufl_export_options_t *opt,
                        gpufl_export_result_t *res);
/* Frees what a result holds; accepts one never filled (zeroed). */
void gpufl__export_result_fini(gpufl_export_result_t *res);

#endif
