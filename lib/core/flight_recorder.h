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
    const char *why;        /* "gpufl_snapshot", "signal", "xid:79", "fatal:SIGSEGV" ... */
    int window_s;
    int64_t cap_bytes;
    int64_t ts_ns; /* session time of the snapshot: how long the session has recorded */
    uint64_t records_written, records_dropped;
    int fatal;              /* taken in a fatal signal's handler: the event is an error */
    const char *incomplete; /* NULL, or why lines of the ring are missing */
} gpufl__flight_snapshot_t;

/* Appends what each file of a snapshot ends with to out: in the device
 * file the event flight_recorder_snapshot (what asked, and what the ring
 * kept, let go and cost: st), then in every file a session_end; written:
 * the file's bytes before out's. Async-signal-safe when out never needs to
 * grow (max == cap). */
void gpufl__flight_snapshot_tail(gpufl__buf_t *out, enum gpufl__file_id channel,
                                 const gpufl__flight_snapshot_t *info,
                                 const gpufl__ring_sink_stats_t *st, uint64_t written);

/* Writes what ring holds into dir (which exists and is empty) as the three
 * files of a session with identity ident, each closed by the tail above.
 * 0, or GPUFL_EIO / GPUFL_ENOMEM. */
int gpufl__flight_snapshot_write(gpufl__ring_sink_t *ring, const gpufl__session_ident_t *ident,
                                 const char *dir, const gpufl__flight_snapshot_t *info);

/* Starts the thread that takes the snapshots the triggers ask for, and
 * catches signo (0: none) to ask for one each time it arrives; window_s is
 * the recorder's, the hold-off of the fault trigger. 0, GPUFL_EINVAL for a
 * signal that cannot be caught (the thread then runs without it),
 * GPUFL_ETHREAD. Under the session's lock. */
int gpufl__flight_trigger_start(int signo, int window_s);
/* Puts the program's handler back and stops the thread; call it without
 * the session's lock (the thread may be waiting for it). */
void gpufl__flight_trigger_stop(void);
/* In a forked child: the parent's handler state is forgotten. */
void gpufl__flight_after_fork_child(void);

/* Asks for a snapshot with reason why (copied; at most 63 bytes kept) from
 * the trigger thread: any thread but a signal handler, never waits for the
 * snapshot. Nothing when no flight recorder runs. Requests that come while
 * GPUFL__FLIGHT_PENDING_MAX wait are joined to those (counted). */
#define GPUFL__FLIGHT_PENDING_MAX 4
void gpufl__flight_request(const char *why);
/* A fault of a device (an XID, a GPU lost): a snapshot with reason why
 * unless one for a fault was asked for within the recorder's window (the
 * burst it belongs to is in that one). 1 when asked, 0 when held off or no
 * recorder runs. Any thread. */
int gpufl__flight_fault(const char *why);

/* Fatal signals (flight_crash.c): SIGSEGV, SIGABRT, SIGBUS, SIGFPE and
 * SIGILL write a snapshot of ring from the handler into a new session
 * directory under log_path, then the program's own disposition runs. All
 * the handler needs is allocated here. 0, GPUFL_ENOMEM, GPUFL_EINVAL for a
 * log_path too long. Under the session's lock. */
int gpufl__flight_crash_arm(gpufl__ring_sink_t *ring, const gpufl__session_ident_t *ident,
                            const char *log_path, int window_s, int64_t cap_bytes);
/* Puts the program's handlers back (before the ring is destroyed). */
void gpufl__flight_crash_disarm(void);

/* Insight conditions (flight_recorder_trigger; flight_insight.c). */
#define GPUFL__FLIGHT_CONDITIONS_MAX 8
typedef enum gpufl__flight_condition_kind {
    GPUFL__CONDITION_GPU_IDLE, /* a GPU's utilization at or below 100 - idle_pct for for_ns */
    GPUFL__CONDITION_SYNC      /* a synchronization longer than for_ns */
} gpufl__flight_condition_kind_t;
typedef struct gpufl__flight_condition {
    gpufl__flight_condition_kind_t kind;
    int idle_pct;
    int64_t for_ns;
    char name[48]; /* as written back: gpu_idle>90%for30s, sync>50ms */
} gpufl__flight_condition_t;
typedef struct gpufl__flight_conditions {
    int n;
    gpufl__flight_condition_t v[GPUFL__FLIGHT_CONDITIONS_MAX];
} gpufl__flight_conditions_t;
/* Parses the option's text (NULL or "": none) into out (optional).
 * GPUFL_EINVAL naming the option, the condition and what was expected. */
int gpufl__flight_conditions_parse(const char *text, gpufl__flight_conditions_t *out);

/* A sink that evaluates the conditions on the rows as they reach the
 * fan-out (gpu_sample, sync) and asks for a snapshot "insight:<name>" when
 * one holds: a GPU idle condition once per idle stretch of a device, any
 * condition at most once per window_s. Collector thread only. */
typedef struct gpufl__flight_watch gpufl__flight_watch_t;
extern const gpufl__sink_ops_t gpufl__flight_watch_ops;
int gpufl__flight_watch_create(gpufl__flight_watch_t **out, const gpufl__flight_conditions_t *c,
                               int window_s);
void gpufl__flight_watch_destroy(gpufl__flight_watch_t *w);

#endif
