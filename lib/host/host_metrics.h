/*
 * host_metrics.h - reads host and process metrics from /proc and cgroups.
 *
 * The host sampler (collector thread) and system_start/system_stop call this.
 * All paths are read below a root directory ("/" normally), so tests can point
 * it at a fake /proc and /sys tree made of real files.
 */
#ifndef GPUFL_HOST_METRICS_H
#define GPUFL_HOST_METRICS_H

#include <stdint.h>

/* An unknown value (no cgroup limit, file missing). */
#define GPUFL_HOST_UNKNOWN (-1)

/* Static facts, read once per session. */
typedef struct gpufl_host_info {
    char hostname[256];
    char kernel_release[128];
    int cpu_count;                /* online CPUs */
    int64_t mem_total_bytes;
    int cgroup_version;           /* 0 (none found), 1 or 2 */
    char cgroup_path[512];        /* the process's cgroup, "" when none */
    int64_t cg_mem_limit_bytes;   /* GPUFL_HOST_UNKNOWN when unlimited */
    double cg_cpu_limit_cores;    /* < 0 when unlimited */
} gpufl_host_info_t;

/* One sample. Percentages are over the interval since the previous sample
 * taken with the same gpufl_host_reader_t; the first sample has -1 for them. */
typedef struct gpufl_host_sample {
    int64_t ts_ns;                /* set by the caller; not touched here */
    double cpu_pct;               /* host busy time over all CPUs, 0..100, or -1 */
    double proc_cpu_pct;          /* this process, percent of one CPU, or -1 */
    int64_t mem_used_bytes;       /* MemTotal - MemAvailable */
    int64_t mem_total_bytes;
    int64_t proc_rss_bytes;
    int64_t cg_mem_used_bytes;    /* GPUFL_HOST_UNKNOWN outside a cgroup */
    int64_t cg_mem_limit_bytes;   /* GPUFL_HOST_UNKNOWN when unlimited */
    double cg_cpu_pct;            /* percent of one CPU, or -1 */
    double cg_cpu_limit_cores;    /* < 0 when unlimited */
} gpufl_host_sample_t;

/* Reader state: the previous counters, to turn them into rates. Plain
 * caller-owned struct: init/fini, no heap. Not thread-safe: one user at a
 * time (the caller holds a lock when it shares one). */
typedef struct gpufl_host_reader {
    char root[256];               /* "" means "/" */
    int have_prev;
    uint64_t prev_host_busy, prev_host_total;   /* /proc/stat jiffies */
    uint64_t prev_proc_ticks;                   /* utime+stime of the process */
    uint64_t prev_cg_usage_usec;
    int64_t prev_mono_ns;                       /* when the previous sample was read */
    long clk_tck;
    long page_size;
    gpufl_host_info_t info;
} gpufl_host_reader_t;

/* root: NULL or "" for the real system, else a directory holding proc/ and
 * sys/fs/cgroup/. Reads the static info. Returns 0 or a negative GPUFL_E*
 * code (GPUFL_EIO when /proc/meminfo or /proc/stat cannot be read). */
int gpufl__host_reader_init(gpufl_host_reader_t *r, const char *root);
void gpufl__host_reader_fini(gpufl_host_reader_t *r);

/* Reads one sample into *out (all fields but ts_ns). now_mono_ns is the
 * caller's CLOCK_MONOTONIC time, used for the process CPU rate. Returns 0 or
 * GPUFL_EIO; fields that could not be read are left unknown. */
int gpufl__host_sample(gpufl_host_reader_t *r, int64_t now_mono_ns, gpufl_host_sample_t *out);

#endif
