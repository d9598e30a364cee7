// SPDX-License-Identifier: Apache-2.0
/*
 * session.h - what other modules may ask of the session state.
 */
#ifndef GPUFL_CORE_SESSION_H
#define GPUFL_CORE_SESSION_H

#include <stddef.h>

/* 1 when gpufl is switched off: GPUFL_DISABLED, or the last init was disabled. */
int gpufl__session_disabled(void);

/* The directory of the last session that ran in this process, flushed, for
 * gpufl_report_write(): 0, GPUFL_EDISABLED when gpufl is off, or
 * GPUFL_ENOTINIT (with a warning) when no session ran. */
int gpufl__session_report_dir(char *dir, size_t size);

/* gpufl_snapshot(), with why (what asked: "gpufl_snapshot", "signal") in
 * the snapshot's event. */
int gpufl__session_snapshot(const char *why, char *dir, size_t dir_size);

struct gpufl__sink_ops;
/* Attaches a sink (core/sink.h) to the running session: it gets every row
 * and record from now on, and its close at shutdown; its owner frees it
 * after. *ident (optional) gets the session's identity, for a dump's header.
 * 0, GPUFL_ENOTINIT without a running session, or the fan-out's errors. */
struct gpufl__session_ident;
int gpufl__session_attach_sink(const struct gpufl__sink_ops *ops, void *self,
                               struct gpufl__session_ident *ident);

/* The server URL, API key and API path the last session's init resolved (code, environment,
 * config file), for gpufl_upload_logs(); "" each when no session ran or none was set. */
void gpufl__session_upload_defaults(char *url, size_t url_size, char *key, size_t key_size,
                                    char *path, size_t path_size);

#endif
