// SPDX-License-Identifier: Apache-2.0
/*
 * proc_attrib.h - who a process belongs to: its cgroup, container, Kubernetes
 * pod, Slurm job, user and command name, read from /proc/<pid> below a proc
 * root ("/proc", or a fixture tree in tests), and a cache keyed by pid and
 * start time so that a sampler asking every second rereads nothing.
 *
 * gpufl-monitor labels the processes of NVML's process lists with these. The
 * forms of cgroup path that are recognised are listed in proc_attrib.c and in
 * docs/process-attribution.md. Every field may be unknown (an empty string,
 * uid -1, start_ticks 0): a process in no container, a file the monitor may
 * not read, a path of a form not recognised.
 *
 * Threads: gpufl__proc_attrib_read() and gpufl__proc_attrib_parse_cgroup()
 * are reentrant. A cache is not thread-safe: one thread (the sampler) owns it.
 */
#ifndef GPUFL_HOST_PROC_ATTRIB_H
#define GPUFL_HOST_PROC_ATTRIB_H

#include <stddef.h>
#include <stdint.h>

/* Sizes of the fields, NUL included. comm is 16 bytes in the kernel (64 for
 * some kernel threads); a container id is 64 hex digits; a pod uid is a UUID
 * (36) or, for a static pod, a 32-digit hash; a Slurm job id is a number. */
#define GPUFL_ATTRIB_COMM_BYTES         64
#define GPUFL_ATTRIB_USER_BYTES         64
#define GPUFL_ATTRIB_CGROUP_PATH_BYTES  512
#define GPUFL_ATTRIB_CONTAINER_ID_BYTES 65
#define GPUFL_ATTRIB_POD_UID_BYTES      37
#define GPUFL_ATTRIB_SLURM_JOB_BYTES    24

/* Caps on what is read of a process's files. environ can be as large as the
 * kernel's argument limit (megabytes): it is scanned in chunks as it streams
 * by and at most GPUFL_ATTRIB_ENVIRON_MAX_BYTES are read; a SLURM_JOB_ID past
 * that is not seen (GPUFL_ATTRIB_ENVIRON_TRUNCATED). Of /proc/<pid>/cgroup
 * (about 1 KiB with a dozen v1 hierarchies) the first
 * GPUFL_ATTRIB_CGROUP_MAX_BYTES are parsed; a line cut there is dropped. */
#define GPUFL_ATTRIB_ENVIRON_MAX_BYTES (1u << 20)
#define GPUFL_ATTRIB_CGROUP_MAX_BYTES  16384u

/* The largest cache; a cache asked for more is refused (GPUFL_EINVAL). */
#define GPUFL_ATTRIB_CACHE_MAX_ENTRIES 65536u

/* The container runtime a cgroup path names. */
typedef enum {
    GPUFL__RUNTIME_NONE = 0,   /* no container recognised */
    GPUFL__RUNTIME_DOCKER,     /* docker-<id>.scope, /docker/<id> */
    GPUFL__RUNTIME_CONTAINERD, /* cri-containerd-<id>.scope, ...:cri-containerd:<id> */
    GPUFL__RUNTIME_CRIO,       /* crio-<id>.scope, crio-<id> */
    GPUFL__RUNTIME_PODMAN,     /* libpod-<id>.scope, libpod-<id> */
    GPUFL__RUNTIME_CRI         /* a Kubernetes container under the cgroupfs driver
                                  (/kubepods/.../pod<uid>/<id>): the path does not
                                  say which CRI runtime made it */
} gpufl__runtime_t;

/* A Kubernetes pod's QoS class, from the level of the pod's cgroup. */
typedef enum {
    GPUFL__POD_QOS_NONE = 0,
    GPUFL__POD_QOS_GUARANTEED,
    GPUFL__POD_QOS_BURSTABLE,
    GPUFL__POD_QOS_BESTEFFORT
} gpufl__pod_qos_t;

/* Where the Slurm job id came from. */
typedef enum {
    GPUFL__SLURM_FROM_NONE = 0,
    GPUFL__SLURM_FROM_ENVIRON, /* SLURM_JOB_ID in /proc/<pid>/environ */
    GPUFL__SLURM_FROM_CGROUP   /* job_<id> below Slurm's cgroup */
} gpufl__slurm_from_t;

/* What /proc/<pid>/cgroup says. */
typedef struct {
    int version; /* 1 (v1 controllers, hybrid included), 2 (unified only), 0 unknown */
    /* The path of the v1 memory hierarchy, else of the unified (0::) line,
     * else of the first line, as the kernel wrote it (relative to the
     * reader's cgroup namespace); "" when it does not fit. */
    char path[GPUFL_ATTRIB_CGROUP_PATH_BYTES];
    gpufl__runtime_t runtime;
    char container_id[GPUFL_ATTRIB_CONTAINER_ID_BYTES]; /* 64 hex digits, or "" */
    char pod_uid[GPUFL_ATTRIB_POD_UID_BYTES];           /* dashes, not underscores */
    gpufl__pod_qos_t pod_qos;
    char slurm_job_id[GPUFL_ATTRIB_SLURM_JOB_BYTES]; /* digits, or "" */
} gpufl__proc_cgroup_t;

/* flags of gpufl__proc_attrib_t: why something may be missing. */
#define GPUFL_ATTRIB_ENVIRON_UNREADABLE 0x1u /* environ denied (another user's process) */
#define GPUFL_ATTRIB_ENVIRON_TRUNCATED  0x2u /* environ longer than its cap, no job id seen */
#define GPUFL_ATTRIB_CGROUP_TRUNCATED   0x4u /* cgroup file longer than its cap */
#define GPUFL_ATTRIB_STAT_UNPARSABLE    0x8u /* stat read but not understood: no comm, no start */

/* Who one process belongs to. */
typedef struct {
    int pid;
    /* Field 22 of /proc/<pid>/stat: clock ticks after boot at which the
     * process started; with pid, it names one process across pid reuse.
     * 0 when unknown. */
    uint64_t start_ticks;
    char comm[GPUFL_ATTRIB_COMM_BYTES]; /* the kernel's command name, raw bytes */
    int64_t uid;                        /* real uid from /proc/<pid>/status, -1 unknown */
    char user[GPUFL_ATTRIB_USER_BYTES]; /* uid's name in this process's user database */
    gpufl__proc_cgroup_t cgroup;
    /* SLURM_JOB_ID from environ when readable and set, else the cgroup's. */
    char slurm_job_id[GPUFL_ATTRIB_SLURM_JOB_BYTES];
    gpufl__slurm_from_t slurm_from;
    unsigned flags; /* GPUFL_ATTRIB_* */
} gpufl__proc_attrib_t;

/* Parses the text of a /proc/<pid>/cgroup file (length bytes, not
 * necessarily NUL-terminated, any bytes). Lines of the form
 * "<hierarchy id>:<controllers>:<absolute path>" are used, others skipped;
 * out->path is chosen as its comment says, and the container, pod and Slurm
 * job are recognised in that path first, then filled from the other lines
 * when it says nothing of them. Returns 0, GPUFL_EINVAL for NULL out or NULL
 * text with a length, or GPUFL_EFORMAT when no line has the form (out is
 * then all unknown). */
int gpufl__proc_attrib_parse_cgroup(gpufl__proc_cgroup_t *out, const char *text, size_t length);

/* Reads who pid belongs to below proc_root ("/proc"). All files are opened
 * through one descriptor of the /proc/<pid> directory, so a pid reused while
 * they are read yields errors, never the new process's files; stat is read
 * again at the end to see that the process outlived the reading. Returns 0
 * (fields that cannot be read are unknown), GPUFL_EINVAL (NULL out or root,
 * pid <= 0), GPUFL_ENOTFOUND when the process does not exist or has gone
 * (a normal event for a sampler: no message is logged), or GPUFL_EIO when its
 * directory cannot be opened for another reason (the message says which). */
int gpufl__proc_attrib_read(gpufl__proc_attrib_t *out, const char *proc_root, int pid);

/* Names for labels: "docker", "containerd", "cri-o", "podman", "cri", "";
 * "guaranteed", "burstable", "besteffort", ""; "environ", "cgroup", "". */
const char *gpufl__proc_attrib_runtime_name(gpufl__runtime_t runtime);
const char *gpufl__proc_attrib_qos_name(gpufl__pod_qos_t qos);
const char *gpufl__proc_attrib_slurm_from_name(gpufl__slurm_from_t from);

/* ---- cache ------------------------------------------------------------ */

typedef struct gpufl__proc_attrib_cache gpufl__proc_attrib_cache_t;

/* What a cache did since it was created. */
typedef struct {
    uint64_t hits;      /* answered from the cache: only stat was read */
    uint64_t misses;    /* read in full (new pid, or a pid with a new start time) */
    uint64_t evictions; /* entries dropped for room, least recently asked first */
    uint64_t gone;      /* asked for a pid that did not exist */
} gpufl__proc_attrib_cache_stats_t;

/* Creates a cache of at most capacity entries (1..GPUFL_ATTRIB_CACHE_MAX_ENTRIES)
 * reading below proc_root (copied). Returns 0, GPUFL_EINVAL, GPUFL_ENOMEM. */
int gpufl__proc_attrib_cache_create(gpufl__proc_attrib_cache_t **out, const char *proc_root,
                                    size_t capacity);
/* Frees a cache; NULL is fine. */
void gpufl__proc_attrib_cache_destroy(gpufl__proc_attrib_cache_t *cache);

/* Fills *out for pid: reads /proc/<pid>/stat for its start time, and answers
 * from the cache when it holds that pid with that start time; else reads the
 * process in full and keeps it, replacing an entry of the same pid (a reused
 * pid) or, when full, the entry asked for least recently. An entry whose
 * start time is unknown is not kept. Returns what gpufl__proc_attrib_read()
 * returns; on GPUFL_ENOTFOUND the pid's entry is dropped. */
int gpufl__proc_attrib_cache_get(gpufl__proc_attrib_t *out, gpufl__proc_attrib_cache_t *cache,
                                 int pid);

/* The cache's counters. */
void gpufl__proc_attrib_cache_stats(gpufl__proc_attrib_cache_stats_t *out,
                                    const gpufl__proc_attrib_cache_t *cache);

#endif
