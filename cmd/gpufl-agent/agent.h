// SPDX-License-Identifier: Apache-2.0
/*
 * agent.h - what gpufl-agent's two files share: the counters of its passes and the HTTP
 * server (stats.c) that serves them on /metrics.
 */
#ifndef GPUFL_AGENT_H
#define GPUFL_AGENT_H

#include <gpufl/gpufl.h>

#include <stddef.h>

typedef struct agent_stats agent_stats_t;

/* Starts the counters and, unless where is "none", the HTTP server on where (ADDR:PORT).
 * Returns 0, or -1 with the reason in why (a bad address, the port taken). */
int agent_stats_start(agent_stats_t **out, const char *where, char *why, size_t size);
/* Adds one root's pass: its upload result and return code. Thread-safe. */
void agent_stats_add(agent_stats_t *s, const gpufl_upload_result_t *r, int rc);
void agent_stats_stop(agent_stats_t *s);

#endif
