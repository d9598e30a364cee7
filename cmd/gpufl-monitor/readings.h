// SPDX-License-Identifier: Apache-2.0
/*
 * readings.h - what gpufl-monitor serves, as one snapshot: the host's and
 * every device's latest row (columns named as the session log names them:
 * host_sample, gpu_sample), each device's identity and processes, and the counters the
 * daemon accumulates from one sample to the next (energy, throttle time,
 * PCIe and NVLink bytes, XID errors). The HTTP side renders a snapshot
 * (exposition.c: Prometheus, OpenMetrics; api.c: JSON); the sampling side
 * fills it (monitor.c). Neither blocks the other: a scrape renders a copy.
 */
#ifndef GPUFL_MONITOR_READINGS_H
#define GPUFL_MONITOR_READINGS_H

#include <stddef.h>
#include <stdint.h>

#define MON_MAX_DEVICES    64
#define MON_MAX_COLS       48
#define MON_MAX_REASONS    64 /* throttle reason bits */
#define MON_MAX_XIDS       32 /* distinct XID codes counted per device */
#define MON_MAX_SOURCES    4  /* sample-time histograms (mon_self_t) */
#define MON_SAMPLE_BUCKETS 12 /* their finite buckets */
/* Processes kept per device: the readings' own bound (GPUFL_READINGS_MAX_PROCESSES);
 * NVML may list more, and the rest are not served. */
#define MON_MAX_PROCESSES 16

/* One column of a row: its name in the log (gpu_util_pct, power_mw, ...),
 * in the log's units; present == 0 when the device or host gave none. */
typedef struct mon_value {
    const char *column; /* static: the wire table's column name */
    double value;
    int present;
    int64_t taken_ns; /* the row it was read in (CLOCK_MONOTONIC); older than the device's
                         ts_ns when carried forward (see MON_CARRY_NS) */
} mon_value_t;

/* A device column the latest row left out (GPM ratios and process-side
 * readings come once a second, rows as often as --interval-ms) keeps its
 * last value this long, so that a series does not blink in and out. */
#define MON_CARRY_NS 3000000000LL

/* What the daemon adds up between samples (monotonic from its start). */
typedef struct mon_counters {
    double energy_joules;                     /* from energy_mj's deltas */
    double throttle_seconds[MON_MAX_REASONS]; /* time each reason bit was set */
    double pcie_tx_bytes, pcie_rx_bytes;      /* rate x interval */
    double nvlink_tx_bytes, nvlink_rx_bytes;
    int nxids;
    struct {
        unsigned code;
        uint64_t count;
    } xids[MON_MAX_XIDS];
    uint64_t xid_overflow; /* events whose code found no slot */
    unsigned last_xid;     /* code of the latest event, 0: none yet (DCGM's XID gauge) */
} mon_counters_t;

/* One process on a device: its memory and who it belongs to ("" unknown). */
typedef struct mon_process {
    int pid;
    int64_t used_bytes; /* -1: NVML did not say (no sample is served) */
    char comm[64];
    char user[64];
    char container[65]; /* container id */
    char pod_uid[37];
    char slurm_job[24];
    int sm_util_pct;  /* its share of the SMs' time over the last interval; -1 unknown */
    int mem_util_pct; /* its share of memory read/write time; -1 unknown */
} mon_process_t;

typedef struct mon_device {
    int index; /* gpufl's device index (the log's "device") */
    char uuid[96];
    char pci_bus_id[32];
    char model[96];   /* the device's name */
    int mig_instance; /* -1: a whole GPU; else its MIG (GPU instance) index */
    char mig_profile[32];
    int lost;      /* stopped answering (GPU_IS_LOST): no fresh row */
    int64_t ts_ns; /* when its row was sampled (CLOCK_MONOTONIC) */
    int ncols;
    mon_value_t cols[MON_MAX_COLS]; /* gpu_sample's columns, ts_ns and device excluded */
    const char *throttle_reason_names[MON_MAX_REASONS]; /* gpu_legend; NULL: unnamed bit */
    mon_counters_t counters;
    int nprocesses;
    mon_process_t processes[MON_MAX_PROCESSES]; /* its latest process list */
} mon_device_t;

/* The daemon's own cost, for gpufl_monitor_* series. */
typedef struct mon_self {
    uint64_t scrapes_total;
    uint64_t samples_total;
    uint64_t write_errors_total;                  /* log writes that failed (disk full, ...) */
    uint64_t otlp_exports_ok, otlp_exports_error; /* OTLP pushes answered 2xx, or not */
    uint64_t otlp_dropped; /* snapshots replaced before the push thread took them */
    /* sample time per source, as a histogram (seconds) */
    int nsources;
    struct {
        const char *source;                         /* static: "gpu", "host" */
        uint64_t bucket_counts[MON_SAMPLE_BUCKETS]; /* cumulative, bounds in mon_sample_buckets */
        uint64_t count;
        double sum_seconds;
    } sample[MON_MAX_SOURCES];
} mon_self_t;

/* Upper bounds (seconds) of the sample-time histogram's buckets. */
extern const double mon_sample_buckets[MON_SAMPLE_BUCKETS];

/* Counts one sample of source (a static string) that took seconds: its
 * histogram's count, sum and every bucket whose bound it does not pass.
 * A source past MON_MAX_SOURCES is not counted. */
void mon_self_observe(mon_self_t *self, const char *source, double seconds);

typedef struct mon_snapshot {
    char hostname[256];
    int64_t ts_unix_ms; /* when the snapshot was taken (wall clock) */
    int gpu_available;  /* the GPU backend runs */
    char gpu_why[256];  /* why not, when it does not ("" otherwise) */
    int host_ncols;
    mon_value_t host[MON_MAX_COLS]; /* host_sample's columns, ts_ns excluded */
    int ndevices;
    mon_device_t devices[MON_MAX_DEVICES];
    mon_self_t self;
} mon_snapshot_t;

/* Adds the time from prev to cur (same device, cur newer) to cur->counters,
 * starting from prev->counters: energy, throttle seconds per set bit,
 * PCIe/NVLink bytes. A device seen first (prev NULL) starts at zero. */
void mon_counters_advance(mon_device_t *cur, const mon_device_t *prev);
/* Counts one XID event of code on d. */
void mon_counters_xid(mon_device_t *d, unsigned code);

/* A growing output buffer; every render appends to it. Capped: past cap
 * the render fails with -1 and the buffer holds what fitted. */
typedef struct mon_buf {
    char *data;
    size_t len, cap, max;
} mon_buf_t;

/* Prometheus text format 0.0.4 (openmetrics == 0) or OpenMetrics 1.0
 * (openmetrics == 1, ending in "# EOF"): every gpufl_* family with HELP and
 * TYPE, and with dcgm_compat the dcgm-exporter twins of the default
 * counters file. Returns 0, or -1 when the buffer's cap was reached. */
int mon_render_metrics(mon_buf_t *out, const mon_snapshot_t *s, int openmetrics, int dcgm_compat);
/* The Content-Type of what mon_render_metrics writes. */
const char *mon_metrics_content_type(int openmetrics);

#endif
