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

struct gpufl__sink_ops;
/* Attaches a sink (core/sink.h) to the running session: it gets every row
 * and record from now on, and its close at shutdown; its owner frees it
 * after. *ident (optional) gets the session's identity, for a dump's header.
 * 0, GPUFL_ENOTINIT without a running session, or the fan-out's errors. */
struct gpufl__session_ident;
int gpufl__session_attach_sink(const struct gpufl__sink_ops *ops, void *self,
                               struct gpufl__session_ident *ident);

/* Upload belongs to a later release. Every message about it (backend_url and
 * remote_upload at init, uploadLogs) says so in these words. */
#define GPUFL__UPLOAD_NOT_BUILT "upload is not built yet in this release"

/* Whether a warning has already told the user upload is not built (init's
 * backend_url or remote_upload line): uploadLogs() then returns its error
 * without a second line on stderr. Each init starts again at 0. */
void gpufl__upload_said(int said);

#endif
