// SPDX-License-Identifier: Apache-2.0
/*
 * host_metrics.h - reads host and process metrics from /proc and cgroups.
 *
 * The host sampler (collector thread) and system_start/system_stop call this.
 * All paths are read below a root directory ("/" normally), so tests can point
 * it at a fake /proc and /sys tree made of real files.
 *
 * Files and descriptors. Init resolves the process's cgroup directories once
 * and opens the files read at every sample (see gpufl__host_file_t); a sample
 * then reads each with one pread(fd, buf, n, 0) and opens nothing. Kept
 * files are read through their descriptor, so:
 *   - a file rewritten in place (open with O_TRUNC, fopen "w") shows its new
 *     content at the next sample: same inode;
 *   - a file replaced by rename(), or unlinked, is NOT seen: the descriptor
 *     keeps reading the old inode. Only a failing pread() (a removed cgroup
 *     says ENODEV, an exited process ESRCH) makes the reader drop the
 *     descriptor and open the path again. Real /proc and cgroupfs files are
 *     never replaced, so this only matters to fake trees.
 * The limit files (memory.max, cpu.max; v1 memory.limit_in_bytes,
 * cpu.cfs_quota_us, cpu.cfs_period_us) are not kept: they are opened by path
 * at init and every GPUFL_HOST_LIMITS_EVERY-th sample, so a rename shows there.
 *
 * CPU figures. cpu_pct, proc_cpu_pct and cg_cpu_pct are differences of
 * counters over the real time between two reads: each counter read is
 * stamped with the reader's clock (CLOCK_MONOTONIC) right after it, never
 * with the caller's nominal sampling time. The counters are coarse: the
 * /proc ones count clock ticks (USER_HZ, 100 a second), and cgroup usage,
 * though in microseconds, lags by up to one scheduler tick per running CPU.
 * Over 10 ms a process that runs all the time reads 0 or 1 or 2 ticks: 0 %,
 * 100 % or 200 %. So a figure is given only over at least
 * GPUFL_HOST_CPU_MIN_TICKS ticks (info.cpu_min_interval_ns); a sample taken
 * sooner has none (-1) and keeps the previous read as the baseline, so the
 * next figure covers the whole time since. A figure is then within one tick
 * in GPUFL_HOST_CPU_MIN_TICKS (11 %) of one CPU, and is clamped to what the
 * CPUs allow: cpu_pct to 100 (all CPUs), proc_cpu_pct and cg_cpu_pct to 100
 * per CPU the process may run on (info.cpus_allowed). The cgroup's CPU quota
 * is no bound: it is enforced per period (100 ms by default) and may burst,
 * so usage over an interval can pass it.
 *
 * Fork. The process files (/proc/self/stat, /proc/self/statm) are kept too,
 * but opening "/proc/self/..." resolves to /proc/<pid>/... once, at open:
 * after fork() the inherited descriptor still describes the parent. So they
 * are tagged with the pid that opened them (self_pid) and every sample
 * compares getpid(): in a child the first sample closes the inherited
 * descriptors, opens its own and takes a new CPU baseline (proc_cpu_pct -1).
 * Host-wide and cgroup descriptors are inherited and stay right (a child
 * starts in its parent's cgroup); pread() does not use the shared file
 * offset, so parent and child may read them at the same time. All are
 * O_CLOEXEC. A process later moved to another cgroup keeps being reported
 * for the cgroup it was in at init.
 */
#ifndef GPUFL_HOST_METRICS_H
#define GPUFL_HOST_METRICS_H

#include <stdint.h>
#include <sys/types.h>

/* An unknown value (no cgroup limit, file missing or unparsable). */
#define GPUFL_HOST_UNKNOWN (-1)

/* Every this many samples (the 50th, 100th, ...) the cgroup limits are read
 * again, so a runtime resize (docker update, Kubernetes in-place resize)
 * shows in the samples, and kept cgroup files that were missing are looked
 * for again (a controller enabled later). */
#define GPUFL_HOST_LIMITS_EVERY 50

/* A resolved cgroup directory: root (< 256) + "/sys/fs/cgroup/cpu,cpuacct"
 * + the cgroup path (< 512). */
#define GPUFL_HOST_DIR_BYTES 800

/* The shortest real interval, in clock ticks (USER_HZ), a CPU figure is taken
 * over: 9, not 10, so that a 100 ms sampling period whose sample comes a few
 * milliseconds early still gets a figure at every sample. */
#define GPUFL_HOST_CPU_MIN_TICKS 9

/* The shortest interval of the last sample's CPU figures (the session's end,
 * gpufl__host_sample_final): a short session then still gets one figure,
 * within one tick of its interval (over 60 ms, 17 % of one CPU). */
#define GPUFL_HOST_CPU_FINAL_MIN_TICKS 2

/* The reader's clock: CLOCK_MONOTONIC nanoseconds (tests set their own). */
typedef int64_t (*gpufl_host_clock_fn)(void);

/* Static facts, read once at init. */
typedef struct gpufl__host_info {
    char hostname[256];
    char kernel_release[128];
    int cpu_count;              /* "cpuN" lines of /proc/stat; GPUFL_HOST_UNKNOWN (-1) when none */
    int64_t mem_total_bytes;    /* MemTotal; GPUFL_HOST_UNKNOWN (-1) when missing or unparsable */
    int cgroup_version;         /* 0 (none found), 1 or 2 */
    char cgroup_path[512];      /* the process's cgroup (v1: the memory one), "" when none */
    int64_t cg_mem_limit_bytes; /* at init; GPUFL_HOST_UNKNOWN when unlimited */
    double cg_cpu_limit_cores;  /* at init; < 0 when unlimited */
    int cpus_allowed;           /* CPUs the process and its cgroup may run on: cpu_count,
                                   narrowed by the cgroup's cpuset; UNKNOWN when neither is known */
    long clock_ticks_per_s;     /* USER_HZ, the unit of the /proc CPU counters */
    int64_t cpu_min_interval_ns; /* GPUFL_HOST_CPU_MIN_TICKS ticks */
} gpufl__host_info_t;

/* One sample. Percentages are over the real interval since the baseline
 * read of the same gpufl__host_reader_t (see "CPU figures" above); the first
 * sample, and samples taken sooner than info.cpu_min_interval_ns after the
 * baseline, have -1 for them. */
typedef struct gpufl__host_sample {
    int64_t ts_ns;          /* set by the caller; not touched here */
    double cpu_pct;         /* host busy time over all CPUs, 0..100, or -1 */
    double proc_cpu_pct;    /* this process, percent of one CPU, 0..100 * cpus_allowed, or -1 */
    int64_t mem_used_bytes; /* MemTotal - MemAvailable */
    int64_t mem_total_bytes;
    int64_t proc_rss_bytes;
    int64_t cg_mem_used_bytes;  /* GPUFL_HOST_UNKNOWN outside a cgroup */
    int64_t cg_mem_limit_bytes; /* current (see GPUFL_HOST_LIMITS_EVERY); UNKNOWN when unlimited */
    double cg_cpu_pct;          /* percent of one CPU, 0..100 * cpus_allowed, or -1 */
    double cg_cpu_limit_cores;  /* current; < 0 when unlimited */
} gpufl__host_sample_t;

/* Bits of gpufl__host_reader_t.have_prev: which previous counter holds a
 * value (the baseline of the next figure). A counter that could not be read
 * clears its bit, so the next rate is never taken over a stale value. */
#define GPUFL_HOST_PREV_HOST_CPU 1u /* prev_host_busy, prev_host_total */
#define GPUFL_HOST_PREV_PROC_CPU 2u /* prev_proc_ticks */
#define GPUFL_HOST_PREV_CG_CPU   4u /* prev_cg_usage_usec */

/* The files kept open, indexes of gpufl__host_reader_t.fds. */
typedef enum gpufl__host_file {
    GPUFL_HOST_FILE_STAT,       /* proc/stat */
    GPUFL_HOST_FILE_MEMINFO,    /* proc/meminfo */
    GPUFL_HOST_FILE_CG_MEM,     /* v2 memory.current, v1 memory.usage_in_bytes */
    GPUFL_HOST_FILE_CG_CPU,     /* v2 cpu.stat, v1 cpuacct.usage */
    GPUFL_HOST_FILE_SELF_STAT,  /* proc/self/stat, opened by process self_pid */
    GPUFL_HOST_FILE_SELF_STATM, /* proc/self/statm, likewise */
    GPUFL_HOST_FILE_COUNT
} gpufl__host_file_t;

/* Reader state: the open files, the cgroup directories and the previous
 * counters that turn into rates. Caller-owned struct, no heap: the reader
 * owns its descriptors (fds[]) from init to fini, and fini closes them. Do
 * not copy an initialized reader (both copies would close the same fds).
 * Not thread-safe: one user at a time (the caller holds a lock when it
 * shares one). */
typedef struct gpufl__host_reader {
    char root[256];                           /* "" means "/" */
    unsigned have_prev;                       /* GPUFL_HOST_PREV_* bits */
    uint64_t prev_host_busy, prev_host_total; /* /proc/stat jiffies */
    uint64_t prev_proc_ticks;                 /* utime+stime of the process */
    uint64_t prev_cg_usage_usec;
    /* when each baseline was read, by clock */
    int64_t prev_host_ns, prev_proc_ns, prev_cg_ns;
    gpufl_host_clock_fn clock; /* gpufl__mono_ns after init */
    long clk_tck;
    long page_size;
    gpufl__host_info_t info;

    /* cgroup directories, full paths resolved at init ("" when none). In
     * v2 all three are the cgroup's directory. In v1 the controllers may be
     * in different hierarchies with different paths (memory:/a/b next to
     * cpuacct:/ and cpu:/). When the cgroup's own directory is missing (a
     * container without a cgroup namespace sees the host's path) the
     * hierarchy's root, which is then the container's cgroup, stands in. */
    char cg_mem_dir[GPUFL_HOST_DIR_BYTES];       /* memory usage and limit */
    char cg_cpu_usage_dir[GPUFL_HOST_DIR_BYTES]; /* v1 cpuacct (usage) */
    char cg_cpu_limit_dir[GPUFL_HOST_DIR_BYTES]; /* v1 cpu (cfs quota and period) */
    char cg_cpuset_dir[GPUFL_HOST_DIR_BYTES];    /* v1 cpuset (the CPUs it may use) */
    int64_t cg_mem_limit_bytes; /* current limits, re-read every GPUFL_HOST_LIMITS_EVERY */
    double cg_cpu_limit_cores;
    int cpus_allowed; /* likewise: the bound of proc_cpu_pct and cg_cpu_pct */
    uint64_t samples; /* samples taken so far */
    int64_t figure_min_ns; /* the current sample's shortest figure interval */

    int fds[GPUFL_HOST_FILE_COUNT]; /* -1 when not open: then opened by path when needed */
    unsigned absent;                /* bits (1u << gpufl__host_file_t): cgroup files found
                                     missing, looked for again with the limits */
    pid_t self_pid;                 /* the process that opened the SELF files */
    int ready;                      /* set by a successful init, cleared by fini */
} gpufl__host_reader_t;

/* root: NULL or "" for the real system, else a directory holding proc/ and
 * sys/fs/cgroup/. Reads the static info, resolves the cgroup directories and
 * opens the kept files. Returns 0 or a negative GPUFL_E* code: GPUFL_EINVAL
 * for a root too long, GPUFL_EIO when /proc/meminfo or /proc/stat cannot be
 * opened or read. A failed init leaves no descriptor open. */
int gpufl__host_reader_init(gpufl__host_reader_t *r, const char *root);

/* Closes the kept descriptors and clears the reader. Safe with NULL, after a
 * failed init and called twice (nothing is closed twice); not on a reader
 * init was never called on (unless it is zero-filled). */
void gpufl__host_reader_fini(gpufl__host_reader_t *r);

/* Sets the clock that stamps the counter reads (after init; NULL: back to
 * CLOCK_MONOTONIC). For tests, which script the time of each read. */
void gpufl__host_reader_set_clock(gpufl__host_reader_t *r, gpufl_host_clock_fn clock);

/* Forgets the CPU baselines: the next sample's counter reads become new
 * baselines and give no figure. For the start of an active stretch, so no
 * figure covers the idle time before it. */
void gpufl__host_reader_rebase(gpufl__host_reader_t *r);

/* Reads one sample into *out (all fields but ts_ns). The CPU figures are over
 * the real time between reads, by the reader's clock (see "CPU figures").
 * Returns 0; GPUFL_EIO when /proc/stat or /proc/meminfo could not be read,
 * and then every other field is still filled as far as it could be read
 * (the unreadable ones are -1 / GPUFL_HOST_UNKNOWN); GPUFL_EINVAL for a NULL
 * argument or a reader that is not initialized. */
int gpufl__host_sample(gpufl__host_sample_t *out, gpufl__host_reader_t *r);

/* The session's last sample: like gpufl__host_sample, but a CPU figure
 * needs only GPUFL_HOST_CPU_FINAL_MIN_TICKS ticks since its baseline, so the
 * time since the last figure is not lost; its precision is one tick over
 * that interval. */
int gpufl__host_sample_final(gpufl__host_sample_t *out, gpufl__host_reader_t *r);

#endif
