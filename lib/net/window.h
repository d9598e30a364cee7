// SPDX-License-Identifier: Apache-2.0
/*
 * window.h - a session directory as the windows the upload protocol sends: one window per
 * segment of each channel's file (device.log, device.log.1, ...; docs/protocol.md). A window
 * is sealed once its last line is a segment_end or a session_end: from then on its bytes never
 * change, so any sender (the library after shutdown, the agent) sends the same bytes under the
 * same id, and the server stores them once.
 */
#ifndef GPUFL_NET_WINDOW_H
#define GPUFL_NET_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#define GPUFL__NET_CHANNELS       3    /* device, scope, system */
#define GPUFL__NET_WINDOW_ID_MAX  192  /* "<session>-<channel>-<sequence>" */
#define GPUFL__NET_SESSION_ID_MAX 128  /* the protocol's limit */
#define GPUFL__NET_WINDOWS_MAX    4096 /* segments listed per channel and scan; more wait */

typedef struct gpufl__net_window {
    int channel;      /* index into gpufl__net_channel_names */
    int64_t sequence; /* the segment number: 0 for device.log, n for device.log.n */
    char path[4096];
    char id[GPUFL__NET_WINDOW_ID_MAX];
    int sealed;      /* its last line is segment_end or session_end */
    int session_end; /* its last line is session_end: the channel is complete */
    int64_t bytes;   /* up to the end of its last complete line */
} gpufl__net_window_t;

typedef struct gpufl__net_session {
    char id[GPUFL__NET_SESSION_ID_MAX + 1];
    char dir[4096];
    size_t n;
    gpufl__net_window_t *windows; /* by channel, then sequence */
    int ended;                    /* every channel present ends in session_end */
    int64_t skipped;              /* windows below the scan's first sequences: not listed */
    int more;                     /* a channel had more than GPUFL__NET_WINDOWS_MAX to list */
} gpufl__net_session_t;

extern const char *const gpufl__net_channel_names[GPUFL__NET_CHANNELS];

/*
 * Lists the windows of the session directory dir (its name is the session id), each channel's
 * from sequence from_seq[channel] on (NULL: from 0; the sender's cursor knows the ones below are
 * delivered, so a monitor's session of months of windows costs a look at the new ones only),
 * at most GPUFL__NET_WINDOWS_MAX a channel (out->more: the rest in a later scan). Returns 0,
 * GPUFL_ENOTFOUND when dir holds no session file, GPUFL_EINVAL for a name the protocol does
 * not allow as a session id, GPUFL_EIO when a file cannot be read. Free with
 * gpufl__net_session_fini.
 */
int gpufl__net_session_scan(gpufl__net_session_t *out, const char *dir, const int64_t *from_seq);
void gpufl__net_session_fini(gpufl__net_session_t *s);

/* Reads a window's bytes from offset `from` up to the end of its last complete line (as
 * listed) into *out (malloc'ed; the caller frees) and their length into *len. Returns 0 or
 * GPUFL_EIO (also when the file shrank: truncated under the sender) / GPUFL_ENOMEM. */
int gpufl__net_window_read(char **out, size_t *len, const gpufl__net_window_t *w, int64_t from);

/* zlib's crc32 of the window's first `bytes` bytes (a slice's proof of what precedes it), read
 * a block at a time. Returns 0 or GPUFL_EIO when the file is shorter. */
int gpufl__net_window_crc(uint32_t *crc, const gpufl__net_window_t *w, int64_t bytes);

#endif
