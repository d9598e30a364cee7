// SPDX-License-Identifier: Apache-2.0
/*
 * sessions.h - the session directories under a log root: which directory is
 * a session, and the list of them with what their headers say, newest first.
 * The CLI's `gpufl sessions` and session lookup and the public
 * gpufl_analysis_find() share it.
 */
#ifndef GPUFL_ANALYSIS_SESSIONS_H
#define GPUFL_ANALYSIS_SESSIONS_H

#include <stddef.h>
#include <stdint.h>

#define GPUFL_SESSION_PATH_MAX 4096
#define GPUFL_SESSIONS_MAX     100000 /* directories listed under one root */

typedef struct gpufl__session_entry {
    char name[256]; /* directory name: the session id */
    char path[GPUFL_SESSION_PATH_MAX];
    char app_name[128];    /* from the header; "" when unknown */
    char session_id[128];  /* from the header; "" when unknown */
    int64_t epoch_unix_us; /* session start from the header; -1 unknown */
    int64_t duration_ns;   /* from session_end; -1 when running or died */
    uint64_t size_bytes;   /* all files of the session */
} gpufl__session_entry_t;

/* 1 when dir holds a session (a device.log or scope.log), else 0. */
int gpufl__session_dir_check(const char *dir);

/* Fills s->name (the last part of path), s->path and what the session's
 * files say (header, duration, size). */
void gpufl__session_describe(const char *path, gpufl__session_entry_t *s);

/* 1 when x sorts before y in a list newest first (by start, then name). */
int gpufl__session_newer(const gpufl__session_entry_t *x, const gpufl__session_entry_t *y);

/* Lists the sessions under root, newest first (by start, then name), into a
 * malloc'd array the caller frees. Only each session's first header and its
 * last segment's tail are read. Returns 0, or GPUFL_ENOTFOUND / GPUFL_EIO
 * when root cannot be read, GPUFL_ENOMEM; gpufl_last_error() says why. */
int gpufl__sessions_list(gpufl__session_entry_t **out, size_t *count, const char *root);

#endif
