// SPDX-License-Identifier: Apache-2.0
/*
 * upload.h - shipping finished windows of sessions to gpufl-server: the one upload loop the
 * library (gpufl_upload_logs), `gpufl upload` and gpufl-agent share. Each window not yet
 * acknowledged in the log root's cursor is sent, under the cursor's lock, with retries
 * (full-jitter exponential backoff from 1 s to 60 s, at least Retry-After) until the total
 * budget is spent; the cursor advances only on a 2xx. A session whose every channel ended and
 * every window is acknowledged is then marked complete on the server.
 */
#ifndef GPUFL_NET_UPLOAD_H
#define GPUFL_NET_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpufl__net_upload_result {
    int64_t sessions;            /* sessions looked at */
    int64_t sessions_completed;  /* session-complete acknowledged (now or before) */
    int64_t windows_sent;        /* acknowledged now: stored by the server */
    int64_t windows_duplicate;   /* acknowledged now: the server had them already */
    int64_t windows_before;      /* acknowledged in an earlier upload: not sent */
    int64_t windows_open;        /* not sealed (a running session, or one that died); with tails,
                                    shipped up to the last complete line */
    int64_t slices_sent;         /* parts of windows acknowledged now: open windows' tails, and
                                    windows split after a 413 */
    int64_t windows_quarantined; /* refused for good (409), now or before: kept aside, reported */
    int64_t windows_failed;      /* not delivered this time (given up, refused, too large) */
    int64_t rows, bytes;         /* of the windows acknowledged now (bytes before gzip) */
    int64_t lines_damaged;       /* of those, lines damaged on disk: stored as written, warned */
    int64_t retries;
    int64_t spool_bytes;     /* undelivered after the upload (with a spool bound only) */
    int64_t windows_dropped; /* dropped to keep the spool's bound, and their bytes */
    int64_t bytes_dropped;
    int auth_refused; /* the key was refused (401/403): nothing more was sent */
    char error[512];  /* the first error, "" when none */
} gpufl__net_upload_result_t;

typedef struct gpufl__net_upload_options {
    const char *base_url, *api_path, *api_key;
    int64_t budget_ms;       /* for the whole upload, retries and waits included; <= 0: 5 min */
    int64_t timeout_ms;      /* per request; <= 0: 60 s */
    int tails;               /* also ship open windows up to their last complete line */
    int64_t spool_max_bytes; /* > 0: the bound on undelivered bytes (spool.h) */
    /* Called after each window with the running result (a terminal's progress line). */
    void (*progress)(void *user, const gpufl__net_upload_result_t *r, const char *window_id);
    void *user;
} gpufl__net_upload_options_t;

/*
 * Ships the windows of the session directories dirs[0 .. n-1], all under the log root root
 * (whose cursor they share); a session the cursor marks complete is counted, not read. Adds
 * to *r. Returns 0 when everything sealed is delivered, 1 when
 * some windows are not (r says which and why), or a negative GPUFL_E* when nothing could be
 * tried (no libcurl, a bad URL or key, the cursor's lock).
 */
int gpufl__net_upload(gpufl__net_upload_result_t *r, const gpufl__net_upload_options_t *o,
                      const char *root, const char *const *dirs, size_t n);

#endif
