// SPDX-License-Identifier: Apache-2.0
/*
 * cursor.h - what a log root has delivered: the cursor file .gpufl-upload.json beside the
 * sessions, listing per session and channel the windows the server acknowledged (a 2xx), how
 * much of a window still open (or split) it acknowledged so far, the sessions whose completion
 * it acknowledged, and the windows it refused for good (409). Every
 * sender of a log root (the library after shutdown, `gpufl upload`, gpufl-agent) reads and
 * writes the same file under an exclusive lock (.gpufl-upload.lock), so two of them never send
 * the same window; the server's idempotency catches it if a cursor is lost.
 */
#ifndef GPUFL_NET_CURSOR_H
#define GPUFL_NET_CURSOR_H

#include "net/window.h"

#include <stdint.h>

typedef struct gpufl__net_cursor gpufl__net_cursor_t;

#define GPUFL__NET_CURSOR_FILE "/.gpufl-upload.json"
#define GPUFL__NET_LOCK_FILE   "/.gpufl-upload.lock"

/*
 * Takes the log root's lock (waits for another sender to let go) and reads its cursor. A
 * missing cursor is an empty one; a damaged one is set aside as .gpufl-upload.json.damaged,
 * warned about once and started afresh (the server tells duplicates from new windows, so
 * nothing is stored twice). Returns 0, GPUFL_EIO (the lock file cannot be created), GPUFL_ENOMEM.
 */
int gpufl__net_cursor_open(gpufl__net_cursor_t **out, const char *root);
/* Whether the cursor was damaged and started afresh when opened. */
int gpufl__net_cursor_was_rebuilt(const gpufl__net_cursor_t *c);

int gpufl__net_cursor_acked(const gpufl__net_cursor_t *c, const char *session, const char *channel,
                            int64_t sequence);
int gpufl__net_cursor_ack(gpufl__net_cursor_t *c, const char *session, const char *channel,
                          int64_t sequence);
/* How much of a window the server acknowledged in slices (docs/protocol.md): *bytes and the
 * crc32 of those bytes (the next slice's proof); 0 and 0 when none. Acknowledging the whole
 * window (gpufl__net_cursor_ack) forgets it. */
void gpufl__net_cursor_partial(const gpufl__net_cursor_t *c, const char *session,
                               const char *channel, int64_t sequence, int64_t *bytes,
                               uint32_t *crc);
int gpufl__net_cursor_set_partial(gpufl__net_cursor_t *c, const char *session, const char *channel,
                                  int64_t sequence, int64_t bytes, uint32_t crc);
/* The channel's windows below this one are all acknowledged (or dropped). */
int64_t gpufl__net_cursor_acked_to(const gpufl__net_cursor_t *c, const char *session,
                                   const char *channel);
/* Where each channel's scan of session's directory starts (window.h): its last acknowledged
 * window, so the session's end is still seen, or 0. */
void gpufl__net_cursor_scan_from(const gpufl__net_cursor_t *c, const char *session,
                                 int64_t from[GPUFL__NET_CHANNELS]);
/* How many windows of session are acknowledged, in all channels. */
int64_t gpufl__net_cursor_acked_count(const gpufl__net_cursor_t *c, const char *session);
int gpufl__net_cursor_completed(const gpufl__net_cursor_t *c, const char *session);
/* Whether the cursor holds anything of session (acknowledged, quarantined or complete). */
int gpufl__net_cursor_knows(const gpufl__net_cursor_t *c, const char *session);
int gpufl__net_cursor_complete(gpufl__net_cursor_t *c, const char *session);
int gpufl__net_cursor_quarantined(const gpufl__net_cursor_t *c, const char *session,
                                  const char *channel, int64_t sequence);
int gpufl__net_cursor_quarantine(gpufl__net_cursor_t *c, const char *session, const char *channel,
                                 int64_t sequence);

/* Writes the cursor: a temporary file, fsync, rename over the old one, fsync of the
 * directory. Returns 0 or GPUFL_EIO (the old cursor is then intact). */
int gpufl__net_cursor_save(gpufl__net_cursor_t *c);
/* Lets go of the lock and frees the cursor (without saving). Accepts NULL. */
void gpufl__net_cursor_close(gpufl__net_cursor_t *c);

#endif
