// SPDX-License-Identifier: Apache-2.0
/*
 * flight_recorder.h - the flight recorder's snapshots and their signal
 * (flight_recorder_s > 0: every channel in a ring, no file until a trigger).
 */
#ifndef GPUFL_CORE_FLIGHT_RECORDER_H
#define GPUFL_CORE_FLIGHT_RECORDER_H

#include "core/sink.h"

/* What a snapshot's closing lines say. */
typedef struct gpufl__flight_snapshot {
    int number;             /* 1 for the session's first */
    const char *session_id; /* the recording session's own id */
    const char *why;        /* "gpufl_snapshot", "signal" ... */
    int window_s;
    int64_t cap_bytes;
    int64_t ts_ns; /* session time of the snapshot */
    uint64_t records_written, records_dropped;
} gpufl__flight_snapshot_t;

/* Writes what ring holds into dir (which exists and is empty) as the three
 * files of a session with identity ident, each closed by a session_end
 * line, the device file's preceded by an event that says what the ring
 * kept, evicted and aged out. 0, or GPUFL_EIO / GPUFL_ENOMEM. */
int gpufl__flight_snapshot_write(gpufl__ring_sink_t *ring, const gpufl__session_ident_t *ident,
                                 const char *dir, const gpufl__flight_snapshot_t *info);

/* Catches signo (0: nothing to do) and starts the thread that takes a
 * snapshot (gpufl_snapshot) each time it arrives. 0, GPUFL_EINVAL for a
 * signal that cannot be caught, GPUFL_ETHREAD. Under the session's lock. */
int gpufl__flight_trigger_start(int signo);
/* Puts the program's handler back and stops the thread; call it without
 * the session's lock (the thread may be waiting for it). */
void gpufl__flight_trigger_stop(void);
/* In a forked child: the parent's handler state is forgotten. */
void gpufl__flight_after_fork_child(void);

#endif
