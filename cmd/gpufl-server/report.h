// SPDX-License-Identifier: Apache-2.0
/*
 * report.h - a session's report, insights and kernels per name, built on the server by the
 * same libgpufl-analysis the gpufl CLI runs, stored in session_reports and rebuilt when new
 * windows arrive after a build (report.c).
 */
#ifndef GPUFL_SERVER_REPORT_H
#define GPUFL_SERVER_REPORT_H

#include "server.h"

#include <gpufl/gpufl_analysis.h>

#define GPUFL__KERNEL_NAMES_MAX 10000 /* names kept per session in kernels_json */

typedef struct gpufl__reports gpufl__reports_t;

/* Starts the builder thread: every few seconds it builds the reports of sessions that were
 * completed, or have had no window for settings->quiet_s, and whose report is missing or
 * stale. 0, GPUFL_ENOMEM or GPUFL_EIO. */
int gpufl__reports_start(gpufl__reports_t **out, gpufl__server_t *srv);
/* Stops the thread (a build in progress finishes first) and frees. Accepts NULL. */
void gpufl__reports_stop(gpufl__reports_t *r);

/* The session's stored `column` of session_reports (report_text, report_json, report_html,
 * insights_text, insights_json, kernels_json, facts_json) into *out (malloc'd, *len bytes,
 * NUL-terminated). When the stored one is missing or older than the session's windows: with
 * build, it is built and stored first; without, *out is NULL. 0; GPUFL_ENOTFOUND when the
 * workspace has no such session; a store error; GPUFL_ENOMEM. */
int gpufl__report_get(gpufl__server_t *srv, int64_t workspace_id, const char *session_id,
                      const char *column, int build, char **out, size_t *len);

/* The session's capability record and gpu_info devices, {"capabilities": {...}|null,
 * "devices": [...]}: stored at the last build when fresh, else read from its device lines. */
int gpufl__report_facts(gpufl__server_t *srv, int64_t workspace_id, const char *session_id,
                        json_t **out);

/* Kernels per name of a session, from the activity table: a JSON object {"count",
 * "distinct_names", "total_ns", "truncated", "kernels": [{name, count, total_ns, mean_ns,
 * min_ns, p50_ns, p90_ns, p99_ns, max_ns, histogram}]} by total time, at most
 * GPUFL__KERNEL_NAMES_MAX names. Percentiles are nearest-rank order statistics, as the report's;
 * histogram: the log-scaled duration buckets that hold any (docs/server-api.md). 0 or an error. */
int gpufl__report_kernels(gpufl__server_t *srv, int64_t workspace_id, const char *session_id,
                          json_t **out);

/* Feeds every stored line of the session to a new libgpufl-analysis handle, as a build does,
 * and calls fn with it; the handle is closed when fn returns, so fn copies what it keeps.
 * Runs under the build lock: one whole session in memory per process at a time. 0;
 * GPUFL_ENOTFOUND when the workspace has no such session; a store error; GPUFL_ENOMEM; or
 * fn's non-zero return. */
typedef int (*gpufl__model_fn)(gpufl_analysis_t *a, void *arg);
int gpufl__report_with_model(gpufl__server_t *srv, int64_t workspace_id, const char *session_id,
                             gpufl__model_fn fn, void *arg);

#endif
