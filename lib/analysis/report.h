/*
 * report.h - the text report of a session: summary, scope timing, system
 * metrics, GPU devices (from NVML samples) and, from Trace engine records,
 * kernel hotspots, kernel details (launch configurations, occupancy),
 * memory transfers and GPU time per scope.
 *
 * The report only formats what the session model holds; every number in it
 * is computed from the logs. The output is deterministic (same logs, same
 * bytes), which the golden tests rely on.
 */
#ifndef GPUFL_ANALYSIS_REPORT_H
#define GPUFL_ANALYSIS_REPORT_H

#include "analysis/model.h"

#include <stdio.h>

/* Writes the report of m to out. Returns 0, or GPUFL_EIO when writing
 * failed, GPUFL_ENOMEM. Safe to call from several threads on one model. */
int gpufl__report_write(const gpufl_model_t *m, FILE *out);

/* Loads the session in session_dir and writes its report to out. Returns 0
 * or what gpufl__model_load / gpufl__report_write returned. */
int gpufl__report_session_dir(const char *session_dir, FILE *out);

#endif
