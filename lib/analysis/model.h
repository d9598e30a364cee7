// SPDX-License-Identifier: Apache-2.0
/*
 * model.h - the session model: everything a session's logs say, in plain C
 * arrays, built once by gpufl__model_load() and then only read.
 *
 * The report, the insights, the exporters and the CLI all read this model;
 * none of them parses logs. Each record kind is an array with a count, grown
 * up to a cap; what passes a cap is counted (`*_over_cap`), never silently
 * lost. Later record kinds (syncs) are added the same way: a row struct,
 * an array, a count, a cap; GPU rows name their device by its `device`
 * number, which gpufl__model_gpu_find() turns into its gpufl__model_gpu_t
 * (identity, processes).
 *
 * Derived once at load: the scope paths (instances of one path aggregated,
 * linked into a tree) and the GPU time per scope path (kernels, copies and
 * memsets attributed through their `scope` column).
 *
 * A loaded model is immutable: any number of threads may read it at once.
 */
#ifndef GPUFL_ANALYSIS_MODEL_H
#define GPUFL_ANALYSIS_MODEL_H

#include "analysis/reader.h"

#include <gpufl/gpufl_log.h>

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* An unknown value (null in the log, or the column is absent). Every value
 * with this meaning is otherwise >= 0. */
#define GPUFL_MODEL_UNKNOWN (-1)

/* The header of the session (from the first header line read). Strings are
 * never NULL: "" when absent. */
typedef struct gpufl__model_header {
    int present;
    const char *session_id;
    const char *app_name;
    const char *hostname;
    const char *clock;
    const char *gpufl_version;
    int64_t pid;           /* GPUFL_MODEL_UNKNOWN when absent */
    uint64_t epoch_ns;     /* CLOCK_MONOTONIC at init */
    int64_t epoch_unix_us; /* wall clock at the epoch; GPUFL_MODEL_UNKNOWN when absent */
} gpufl__model_header_t;

/* A scope's source (scope_begin's `source` column). */
#define GPUFL__MODEL_SOURCE_GPUFL          0
#define GPUFL__MODEL_SOURCE_NVTX_PUSH_POP  1
#define GPUFL__MODEL_SOURCE_NVTX_START_END 2

/* One scope instance: a scope_begin row joined with its scope_end row. */
typedef struct gpufl__model_scope {
    int64_t id;     /* scope instance id, unique in the session */
    int64_t parent; /* id of the enclosing scope, 0 at top level */
    int64_t tid;
    int64_t begin_ns;                 /* since the session epoch */
    int64_t end_ns;                   /* GPUFL_MODEL_UNKNOWN while open */
    int64_t name_id, tag_id, path_id; /* dict ids */
    const char *name;                 /* resolved after loading; "?" for an undefined id */
    const char *tag;                  /* "" for no tag */
    const char *path;
    int32_t depth;
    int32_t repeat; /* measured iterations (GFL_BENCH), 0 for a plain scope */
    int32_t warmup;
    uint8_t source;                             /* 0 gpufl, 1 NVTX push/pop, 2 NVTX start/end */
    int64_t domain_id, category_id, payload_id; /* dict ids, 0 for none */
    const char *domain, *category, *payload;    /* resolved; "" for none */
    uint8_t open;      /* no scope_end: still open when the log ends */
    uint8_t implicit;  /* closed because an enclosing scope closed first */
    uint8_t lost;      /* in lost_scopes: its scope_begin is missing (begin_ns unknown) */
    size_t path_index; /* its entry in scope_paths; for a lost scope only when path is known */
} gpufl__model_scope_t;

/* One host sample (host_sample row, or the snapshot of system_start/stop).
 * Unknown values are GPUFL_MODEL_UNKNOWN (doubles: < 0). */
typedef struct gpufl__model_host_sample {
    int64_t ts_ns;
    double cpu_pct;
    double proc_cpu_pct;
    double cg_cpu_pct;
    double cg_cpu_limit_cores;
    int64_t mem_used_bytes;
    int64_t mem_total_bytes;
    int64_t proc_rss_bytes;
    int64_t cg_mem_used_bytes;
    int64_t cg_mem_limit_bytes;
} gpufl__model_host_sample_t;

/* A system_start or system_stop record. */
typedef struct gpufl__model_window {
    int64_t ts_ns;
    int64_t tid;
    int64_t active;  /* windows open after the call; GPUFL_MODEL_UNKNOWN when absent */
    int64_t name_id; /* dict id when the name was written as one, else 0 */
    const char *name;
    int is_stop; /* 0: system_start, 1: system_stop */
    int has_snapshot;
    gpufl__model_host_sample_t snapshot;
} gpufl__model_window_t;

typedef enum gpufl__model_level {
    GPUFL_MODEL_LEVEL_UNKNOWN = -1,
    GPUFL_MODEL_LEVEL_DEBUG = 0,
    GPUFL_MODEL_LEVEL_INFO = 1,
    GPUFL_MODEL_LEVEL_WARN = 2,
    GPUFL_MODEL_LEVEL_ERROR = 3
} gpufl__model_level_t;

/* An `event` record: something the recorder met while recording. */
typedef struct gpufl__model_event {
    int64_t ts_ns;
    gpufl__model_level_t level;
    const char *level_name; /* as written */
    const char *code;
    const char *message;
    gpufl__log_file_t file;
} gpufl__model_event_t;

/* The last `drops` record (cumulative counters). */
typedef struct gpufl__model_drops {
    int present;
    int64_t ts_ns;
    int64_t records;
    int64_t threads_unbuffered;
    int64_t names_truncated;
    int64_t unbalanced_ends;
    int64_t depth_overflow;
    json_t *rec; /* the whole record, for counters added later; NULL when absent */
} gpufl__model_drops_t;

typedef struct gpufl__model_session_end {
    int present;    /* some file holds a session_end line */
    unsigned files; /* how many files do */
    int64_t ts_ns;
    int64_t duration_ns;
    json_t *rec; /* the record with the largest ts_ns, final counters included */
} gpufl__model_session_end_t;

/* Processes listed per device (a gpu_processes record may count more). */
#define GPUFL_MODEL_GPU_PROCS_MAX 64
/* Throttle (clock event) reason bits that gpu_legend can name: 0 .. 63. */
#define GPUFL_MODEL_THROTTLE_BITS 64

/* One process on a device, from a gpu_processes record. */
typedef struct gpufl__model_gpu_proc {
    int64_t pid;
    int64_t used_bytes; /* GPUFL_MODEL_UNKNOWN when NVML did not say */
} gpufl__model_gpu_proc_t;

/*
 * One device: a whole GPU or a MIG instance, from its gpu_info record, plus
 * what gpu_processes said about it. Every device some GPU row names has one
 * (has_info = 0 when no gpu_info record described it). Unknown integers are
 * GPUFL_MODEL_UNKNOWN; strings are never NULL ("" when absent).
 */
typedef struct gpufl__model_gpu {
    int64_t device;     /* our device number: the key GPU rows refer to */
    int has_info;       /* a gpu_info record described it */
    int64_t nvml_index; /* NVML index of the GPU (the parent, for a MIG instance) */
    int64_t mig_index;  /* position under the parent; UNKNOWN for a whole GPU */
    const char *name;
    const char *uuid; /* "GPU-..." or "MIG-..." */
    const char *pci_bus_id;
    const char *compute_capability; /* "9.0"; "" when unknown */
    const char *driver_version;     /* "580.95.05" */
    const char *nvml_version;
    int64_t sm_count;
    int64_t mem_total_bytes;
    int64_t cuda_driver_version; /* 13000 for CUDA 13.0 */
    int64_t mig_mode;            /* 0 off, 1 on, UNKNOWN where MIG is unsupported */
    int64_t gpm_supported;       /* 0 or 1; UNKNOWN when absent */
    int64_t nvlink_links;        /* active links; UNKNOWN when absent */
    int64_t power_limit_mw;

    /* gpu_processes: the last list written (by ts_ns) and the peak count. */
    uint64_t procs_records; /* gpu_processes records read for this device */
    int64_t procs_ts_ns;    /* of the last one; UNKNOWN when none */
    int64_t procs_count;    /* its count; UNKNOWN when none */
    int64_t procs_peak;     /* largest count of any; UNKNOWN when none */
    size_t n_procs;         /* processes listed in procs (count may be larger) */
    gpufl__model_gpu_proc_t procs[GPUFL_MODEL_GPU_PROCS_MAX];
} gpufl__model_gpu_t;

/* process_info records kept; past it they are counted (processes_over_cap). */
#define GPUFL_MODEL_MAX_PROCESSES ((size_t)1 << 16)

/* A GPU process as its process_info record describes it (who it belongs
 * to). Strings are never NULL ("" when null); unknown integers are
 * GPUFL_MODEL_UNKNOWN. */
typedef struct gpufl__model_process {
    int64_t ts_ns;  /* when a device's process list first named it */
    int64_t device; /* that device */
    int64_t pid;
    int64_t start_ticks; /* with pid, names the process across pid reuse */
    int64_t uid;
    const char *comm, *user;
    const char *cgroup_path, *container_id, *container_runtime, *pod_uid, *pod_qos;
    const char *slurm_job_id, *slurm_job_source;
} gpufl__model_process_t;

/* xid records kept; past it they are counted (xids_over_cap). */
#define GPUFL_MODEL_MAX_XIDS ((size_t)1 << 16)

/* One critical XID error (an xid record). */
typedef struct gpufl__model_xid {
    int64_t ts_ns;
    int64_t device;
    int64_t code;
    int64_t gpu_instance_id, compute_instance_id; /* GPUFL_MODEL_UNKNOWN: not given */
} gpufl__model_xid_t;

/*
 * One gpu_sample row. Unknown values are GPUFL_MODEL_UNKNOWN (doubles: < 0);
 * every known value is >= 0. Rates are over the interval since the previous
 * sample of the same device.
 */
typedef struct gpufl__model_gpu_sample {
    int64_t ts_ns;
    int64_t mem_used_bytes, mem_free_bytes, mem_total_bytes;
    int64_t power_mw, power_limit_mw;
    int64_t energy_mj; /* counter since the driver loaded */
    int64_t pcie_tx_bytes_per_s, pcie_rx_bytes_per_s;
    int64_t nvlink_tx_bytes_per_s, nvlink_rx_bytes_per_s;
    int64_t ecc_sbe_volatile, ecc_dbe_volatile;
    int64_t throttle_reasons; /* bits, named by m->throttle_names */
    double sm_active_pct, sm_occupancy_pct, tensor_active_pct, dram_bw_util_pct; /* GPM */
    int32_t device; /* gpufl__model_gpu_t.device */
    int32_t gpu_util_pct, mem_util_pct;
    int32_t temp_gpu_c, temp_mem_c;
    int32_t clock_sm_mhz, clock_gfx_mhz, clock_mem_mhz;
    int32_t fan_pct;
} gpufl__model_gpu_sample_t;

/* One kernel execution (a kernel row, Trace engine). Times are on the
 * session clock; end_ns >= start_ns. Columns a log does not have (older
 * writers) read as GPUFL_MODEL_UNKNOWN. */
typedef struct gpufl__model_kernel {
    int64_t start_ns, end_ns;
    int64_t stream;
    int64_t correlation;
    int64_t name_id;       /* dict id of the mangled name */
    int64_t demangled_id;  /* dict id of the demangled name; 0 when the log has none */
    const char *name;      /* resolved after loading; "?" for an undefined id */
    const char *demangled; /* the demangled name, else name: the one to show */
    int64_t static_smem_bytes, dynamic_smem_bytes; /* per block */
    int64_t local_bytes_per_thread;                /* spills and local arrays */
    int64_t graph_id, graph_node;                  /* 0 outside graphs */
    int64_t scope;  /* scope instance id open at launch; UNKNOWN when none or unknown */
    int64_t config; /* id of a kernel_config record; UNKNOWN when none */
    int64_t external_kind, external_id; /* framework correlation; UNKNOWN when none */
    int64_t launch_ns; /* when the launching call was made (host, session clock); UNKNOWN */
    int64_t tid;       /* OS thread id of the launching thread; UNKNOWN */
    int64_t stack;     /* CPU stack at the launch (a stack id); UNKNOWN when not captured */
    int32_t device;    /* gpufl__model_gpu_t.device */
    int32_t grid_x, grid_y, grid_z;
    int32_t block_x, block_y, block_z;
    int32_t registers; /* per thread */
} gpufl__model_kernel_t;

/*
 * A kernel_config record: one launch configuration (function, block size,
 * dynamic shared memory) with its theoretical occupancy. The limits are the
 * blocks per SM each resource allows; limiter names the smallest. Unknown
 * integers are GPUFL_MODEL_UNKNOWN, strings "" when absent: without libcuda
 * the writer gives only the launch fields and occupancy_why; where it has no
 * breakdown rules for the GPU, the limits and limiter are absent.
 */
typedef struct gpufl__model_kernel_config {
    int64_t id; /* > 0; kernel rows refer to it in `config` */
    int64_t ts_ns;
    int64_t name_id;  /* when the name was written as a dict id, else 0 */
    const char *name; /* the mangled name */
    /* its demangled form (from pc_sample or kernel rows of the same name,
     * else demangled by gpufl__demangle), else name: the one to show */
    const char *demangled;
    int64_t block_threads, dynamic_smem_bytes, static_smem_bytes;
    int64_t registers, local_bytes_per_thread, max_threads_per_block;
    int64_t blocks_per_sm;           /* from the driver's occupancy calculator */
    int64_t active_warps, max_warps; /* per SM */
    double occupancy;                /* active_warps / max_warps, 0..1; < 0 unknown */
    int64_t limit_warps, limit_registers, limit_smem, limit_blocks;
    const char *limiter;       /* "warps", "registers", "shared_memory", "blocks" */
    const char *occupancy_why; /* why the driver's figures are missing ("" when not) */
    int breakdown_agrees;      /* 1: min of the limits is blocks_per_sm, 0: not, UNKNOWN */
    int32_t device;            /* UNKNOWN when absent */
} gpufl__model_kernel_config_t;

/* The copy kinds (copy_kind) and memory kinds (src_kind, dst_kind) the
 * analysis tells apart: gpufl's values (gpufl_log.h), whatever the log's
 * version (compat.c translates older ones). */
#define GPUFL_MODEL_COPY_HTOD    GPUFL_COPY_KIND_HOST_TO_DEVICE
#define GPUFL_MODEL_COPY_DTOH    GPUFL_COPY_KIND_DEVICE_TO_HOST
#define GPUFL_MODEL_COPY_DTOD    GPUFL_COPY_KIND_DEVICE_TO_DEVICE
#define GPUFL_MODEL_COPY_PTOP    GPUFL_COPY_KIND_PEER
#define GPUFL_MODEL_MEM_PAGEABLE GPUFL_MEMORY_KIND_PAGEABLE
#define GPUFL_MODEL_MEM_PINNED   GPUFL_MEMORY_KIND_PINNED

/* One memory copy (a copy row, Trace engine); end_ns >= start_ns. */
typedef struct gpufl__model_copy {
    int64_t start_ns, end_ns;
    int64_t bytes;
    int32_t device;    /* gpufl__model_gpu_t.device */
    int32_t copy_kind; /* gpufl_copy_kind_t */
    int32_t src_kind;  /* gpufl_memory_kind_t */
    int32_t dst_kind;
    int64_t scope; /* scope instance id open at launch; UNKNOWN when none or unknown */
} gpufl__model_copy_t;

/* One memset (a memset row, Trace engine); end_ns >= start_ns. */
typedef struct gpufl__model_memset {
    int64_t start_ns, end_ns;
    int64_t bytes;
    int64_t scope;       /* as in gpufl__model_copy_t */
    int32_t device;      /* gpufl__model_gpu_t.device */
    int32_t memory_kind; /* gpufl_memory_kind_t */
} gpufl__model_memset_t;

/* The synchronization types (sync_type): gpufl's values (gpufl_log.h). */
#define GPUFL_MODEL_SYNC_EVENT      GPUFL_SYNC_TYPE_EVENT             /* cudaEventSynchronize */
#define GPUFL_MODEL_SYNC_WAIT_EVENT GPUFL_SYNC_TYPE_STREAM_WAIT_EVENT /* cudaStreamWaitEvent */
#define GPUFL_MODEL_SYNC_STREAM     GPUFL_SYNC_TYPE_STREAM            /* cudaStreamSynchronize */
#define GPUFL_MODEL_SYNC_CONTEXT    GPUFL_SYNC_TYPE_DEVICE            /* cudaDeviceSynchronize */

/* One synchronization call (a sync row, Trace engine): the host thread was
 * blocked from start_ns to end_ns. */
typedef struct gpufl__model_sync {
    int64_t start_ns, end_ns;
    int64_t tid;         /* OS thread id; UNKNOWN in logs that lack it */
    int64_t correlation; /* CUPTI's: orders the call among launches */
    int64_t stream;      /* UNKNOWN for types without one */
    int64_t event;       /* the event's handle; UNKNOWN for types without one */
    int64_t scope;       /* as in gpufl__model_copy_t */
    int64_t stack;       /* CPU stack at the call (a stack id); UNKNOWN when not captured */
    int32_t sync_type;   /* gpufl_sync_type_t */
} gpufl__model_sync_t;

/*
 * One kernel launch call (a launch row: engines that time no kernels), as
 * gpufl's own driver callback saw it: a host time, no GPU time. The kernel
 * is named through its kernel_config record (config_index). Kept compact:
 * a session may launch millions of kernels.
 */
typedef struct gpufl__model_launch {
    int64_t ts_ns;         /* when the launching call was made (host, session clock) */
    int64_t correlation;   /* CUPTI's: orders the call among syncs */
    int64_t scope;         /* as in gpufl__model_copy_t */
    int64_t external_id;   /* framework correlation; UNKNOWN when none */
    int64_t stack;         /* CPU stack at the launch; UNKNOWN when not captured */
    int32_t tid;           /* OS thread id of the launching thread */
    int32_t context;       /* CUPTI's context id; UNKNOWN when null */
    int32_t config;        /* kernel_config id; UNKNOWN when null */
    int32_t config_index;  /* its index in m->configs; UNKNOWN when no record has it */
    int32_t external_kind; /* UNKNOWN when none */
} gpufl__model_launch_t;

/* "cudaStreamSynchronize", ... for a sync_type; "synchronization" when unknown. */
const char *gpufl__model_sync_name(int32_t sync_type);

/* One code address of captured CPU stacks (a frame record), as the
 * recording process described it. Strings are "" when unknown. */
typedef struct gpufl__model_frame {
    int64_t id;
    uint64_t pc;
    const char *module; /* path of the object holding pc */
    uint64_t offset;    /* pc's address in that file */
    const char *function;
    const char *file;
    int64_t line;         /* 0 unknown */
    const char *source;   /* the source line's text, when collected */
    const char *language; /* an interpreted frame's language ("python"); "" a native frame */
    /* 1: application code; 0: CUDA, gpufl, C/C++ runtime or loader, or an
     * interpreted frame of a standard library or installed package */
    int user;
} gpufl__model_frame_t;

/* Frames a stack record may hold (writers keep 64); a longer one is a
 * damaged line. */
#define GPUFL_MODEL_STACK_DEPTH_MAX 1024

/* One distinct CPU stack (a stack record): its frames, innermost first, as
 * indices into m->frames (SIZE_MAX for an id no frame record defined). */
typedef struct gpufl__model_stack {
    int64_t id;
    size_t first; /* into m->stack_frames */
    size_t depth;
} gpufl__model_stack_t;

/* ---------------------------------------------------------------------- */
/* PC sampling (engines PcSampling and Deep) and SASS                       */
/* ---------------------------------------------------------------------- */

/* Decode latency assumed for contexts whose pc_sampling record gives none. */
#define GPUFL_MODEL_PC_WORKER_SLEEP_MS 100

/* A pc_sampling record: sampling on one context started (or failed to). */
typedef struct gpufl__model_pc_context {
    int64_t ts_ns;
    int64_t context;                              /* CUPTI's context id */
    int64_t device;                               /* UNKNOWN when absent */
    int64_t period;                               /* 2^period cycles between samples; UNKNOWN */
    int64_t worker_sleep_ms;                      /* CUPTI's decode period; UNKNOWN */
    int64_t scratch_bytes, hardware_buffer_bytes; /* UNKNOWN when absent */
    double enable_ms;                             /* < 0 unknown */
    const char *mode;                             /* "continuous"; "" when absent */
    const char *error;                            /* "" when sampling started */
    size_t n_reasons;                             /* stall reasons CUPTI offers here */
    int late;                                     /* the context ran before sampling began */
} gpufl__model_pc_context_t;

/* One pc_sample row, kept small (a session has millions): dict ids stay
 * ids (the writer's ids are below 2^32); reason is an index into
 * m->pc_reasons once loading is done. */
typedef struct gpufl__model_pc_sample {
    int64_t t0_ns, t1_ns; /* the window */
    uint32_t context;
    uint32_t cubin;     /* dict id of the module's CRC ("0x5e1f...") */
    uint32_t function;  /* dict id of the mangled name */
    uint32_t demangled; /* dict id of the demangled name */
    uint32_t pc;        /* offset in the function, bytes */
    uint32_t reason;    /* index into m->pc_reasons */
    uint32_t samples;
} gpufl__model_pc_sample_t;

/* One pc_window row: the accounting of one context's window. */
typedef struct gpufl__model_pc_window {
    int64_t t0_ns, t1_ns, context;
    int64_t drains, samples, recorded, non_user, dropped, buffer_full,
        pc_sampling_left; /* UNKNOWN */
    int64_t lost;     /* UNKNOWN in logs before the column */
    int64_t unplaced; /* CUPTI's records with no function or module; UNKNOWN before the column */
} gpufl__model_pc_window_t;

/* A stall reason met in pc_sample rows. */
typedef struct gpufl__model_pc_reason {
    int64_t id;             /* its dict id */
    const char *name;       /* CUPTI's name: smsp__pcsamp_warps_issue_stalled_long_scoreboard */
    const char *short_name; /* the known prefix stripped: long_scoreboard */
    int issued;             /* "selected": the warp issued; not a stall */
} gpufl__model_pc_reason_t;

/* One instruction of a sass record. */
typedef struct gpufl__model_sass_insn {
    uint32_t pc;      /* offset in the function, bytes */
    int32_t line;     /* 0 without line info */
    const char *file; /* "" without line info */
    const char *text;
} gpufl__model_sass_insn_t;

/* A sass record: the disassembly of one (module, function), instructions
 * sorted by pc. */
typedef struct gpufl__model_sass {
    int64_t cubin, function; /* dict ids */
    const char *arch;        /* "sm_90" */
    const char *error;       /* "" unless it could not be disassembled */
    size_t first, n;         /* into m->sass_insns */
} gpufl__model_sass_t;

/* Where a scope-attributed share of PC samples went: scope path slot
 * (index in scope_paths; GPUFL_MODEL_PC_SLOT_* beyond them) and reason. */
#define GPUFL_MODEL_PC_SLOT_NO_SCOPE(m)      ((m)->n_scope_paths)
#define GPUFL_MODEL_PC_SLOT_UNKNOWN_SCOPE(m) ((m)->n_scope_paths + 1)
#define GPUFL_MODEL_PC_SLOT_UNATTRIBUTED(m)  ((m)->n_scope_paths + 2)
typedef struct gpufl__model_pc_scope {
    size_t slot;
    uint32_t reason;
    double samples; /* shares of split rows are fractions */
} gpufl__model_pc_scope_t;

/* How precisely samples were given to scopes (pc_attrib.c), in samples. */
typedef struct gpufl__model_pc_attrib {
    double exact;        /* the overlapping kernels (launches) lay in one scope path */
    double split;        /* split over overlapping kernels (launches) of several scope paths */
    double fallback;     /* none overlapped: split by the function's session GPU time
                            (launch count) */
    double unattributed; /* the function has no kernel rows (nor launch rows) */
    /* Of exact, split and fallback: the samples given through launch rows
     * (no kernel rows: the engines that time none), one weight per launch. */
    double by_launch;
} gpufl__model_pc_attrib_t;

/* ---------------------------------------------------------------------- */
/* Range profiler (engine RangeProfiler)                                    */
/* ---------------------------------------------------------------------- */

/* A range_profiler record: the profiler on one context started (or failed to). */
typedef struct gpufl__model_range_context {
    int64_t ts_ns;
    int64_t context;    /* CUPTI's context id */
    int64_t device;     /* UNKNOWN when absent */
    int64_t max_ranges; /* UNKNOWN when absent */
    double enable_ms;   /* < 0 unknown */
    const char *chip;   /* "GH100"; "" when absent */
    const char *error;  /* "" when the profiler started */
    json_t *metrics;    /* the names collected (an array), NULL when absent */
    json_t *left_out;   /* name -> why (an object), NULL when absent */
    /* The metric groups rotated between collections (an array of arrays of
     * names; group 0 is metrics), NULL when absent: one group, metrics. */
    json_t *groups;
    size_t n_groups;          /* groups' size; 1 without it */
    json_t *sm_throughput_of; /* names whose maximum is SM throughput, NULL when absent */
} gpufl__model_range_context_t;

/* range_metrics records kept; past it they are counted (ranges_over_cap). */
#define GPUFL_MODEL_MAX_RANGES ((size_t)1 << 20)

/* One range_metrics record: the counters of one profiled scope. */
typedef struct gpufl__model_range {
    int64_t ts_ns, start_ns; /* pop and push on the host */
    int64_t context, scope;
    int64_t tid;      /* UNKNOWN when absent */
    int64_t path_id;  /* dict id of the scope path */
    const char *path; /* its string, "?" when undefined */
    int64_t group;    /* index into its context's groups; 0 when absent */
    int settling;     /* among the first ranges after the profiler was configured (started,
                         or switched group): its counters carry the profiler's effect */
    json_t *metrics;  /* CUPTI's name -> number, or null when not evaluated: its group's */
} gpufl__model_range_t;

/* ---------------------------------------------------------------------- */
/* SASS metrics (engines SassMetrics and Deep)                              */
/* ---------------------------------------------------------------------- */

/* A sass_metrics record: counting on one context started (or failed to). */
typedef struct gpufl__model_sass_metrics_context {
    int64_t ts_ns;
    int64_t context;   /* CUPTI's context id */
    int64_t device;    /* UNKNOWN when absent */
    double enable_ms;  /* < 0 unknown */
    const char *chip;  /* "GH100"; "" when absent */
    const char *error; /* "" when counting started */
    json_t *metrics;   /* CUPTI's names of the metrics counted (an array), NULL when absent */
    int lazy, late;
} gpufl__model_sass_metrics_context_t;

/* One sass_metric row: the counts of one instruction on one context since
 * counting started there. A count is GPUFL_MODEL_UNKNOWN where its metric
 * was not counted (null). Dict ids stay ids, as in pc_sample rows. */
typedef struct gpufl__model_sass_metric {
    int64_t ts_ns; /* when the counts were read */
    int64_t inst, thread_inst, sectors, sectors_ideal;
    uint32_t context;
    uint32_t cubin;     /* dict id of the module's CRC; 0 when unknown */
    uint32_t function;  /* dict id of the mangled name */
    uint32_t demangled; /* dict id of the demangled name */
    uint32_t pc;        /* offset in the function, bytes */
    uint32_t seq;       /* internal: its place in the log, for a stable order */
} gpufl__model_sass_metric_t;

/* GPU work of one kind of attribution: counts and summed durations (ns, in
 * double so that sums over a damaged log cannot overflow). */
typedef struct gpufl__model_gpu_work {
    uint64_t kernels, copies, memsets;
    double kernel_ns, copy_ns, memset_ns;
} gpufl__model_gpu_work_t;

/* Kernels listed per scope path. */
#define GPUFL_MODEL_TOP_KERNELS 5

/* One kernel name's share of a scope's work. */
typedef struct gpufl__model_top_kernel {
    const char *name; /* demangled when the log has it */
    uint64_t calls;
    double total_ns;
} gpufl__model_top_kernel_t;

/*
 * The GPU work attributed to a scope path (or to no scope): self is the work
 * launched while the path's own instances were the innermost open scope;
 * total adds the work of every path below it. top lists the kernel names of
 * self by GPU time (ties by name), kernel_names counts them all.
 */
typedef struct gpufl__model_scope_gpu {
    gpufl__model_gpu_work_t self, total;
    gpufl__model_top_kernel_t top[GPUFL_MODEL_TOP_KERNELS];
    size_t n_top;
    size_t kernel_names;
} gpufl__model_scope_gpu_t;

/*
 * One scope path ("batch/forward_pass"): all its instances together. Host
 * times are wall times of the closed instances. parent is the enclosing
 * path (the path of an instance's parent scope, else the longest existing
 * '/' prefix), never forming a cycle.
 */
typedef struct gpufl__model_scope_path {
    const char *path;
    const char *name;      /* the last scope's name (from the path when unresolved) */
    long parent;           /* index in scope_paths, -1 at top level */
    size_t depth;          /* 0 at top level */
    size_t calls;          /* closed instances */
    size_t open, implicit; /* instances still open / closed implicitly */
    size_t lost;           /* scope ends without a begin that what survives names this path */
    size_t tags;           /* distinct non-empty tags */
    double total_ns;       /* host (wall) time of the closed instances */
    double min_ns, max_ns; /* of one closed instance; 0 when none */
    double bench_total_ns; /* over closed instances with repeat > 0 */
    double bench_iters;    /* their measured iterations */
    uint8_t source;        /* of its first instance: 0 gpufl, 1 NVTX push/pop, 2 NVTX start/end */
    const char *domain;    /* NVTX domain of its first instance, "" for none or the default */
    gpufl__model_scope_gpu_t gpu;
} gpufl__model_scope_path_t;

/* A source_cost record: what one sampling source cost the process. */
typedef struct gpufl__model_source_cost {
    const char *source; /* "host", "nvml", ... */
    gpufl__log_file_t file;
    int64_t samples; /* UNKNOWN when absent */
    int64_t total_ns;
    int64_t mean_ns; /* per sample (nvml: per device and sample) */
} gpufl__model_source_cost_t;

/* A damaged line (not JSON: a write cut short or overwritten) and what the
 * reader could tell of what went with it (reader.h, gpufl__reader_damage_t). */
typedef struct gpufl__model_damage {
    const char *file; /* "scope.log.1" */
    uint64_t line;    /* 1-based */
    const char *type; /* the record type; NULL when unknown */
    int64_t rows;     /* rows lost; -1 unknown */
    int rows_exact;   /* 0: at least rows */
} gpufl__model_damage_t;

/* A problem found while reading: a corrupt line, a dict conflict, ... */
typedef struct gpufl__model_warning {
    const char *file; /* "scope.log.1"; "" when about the session as a whole */
    uint64_t line;    /* 1-based; 0 when about a whole file */
    const char *message;
} gpufl__model_warning_t;

/* Caps on the model's arrays. Zero fields take the defaults. */
typedef struct gpufl__model_limits {
    size_t max_scopes;       /* default 16 Mi */
    size_t max_samples;      /* host samples, default 16 Mi */
    size_t max_windows;      /* system_start/stop records, default 1 Mi */
    size_t max_events;       /* default 1 Mi */
    size_t max_warnings;     /* default 1000 */
    size_t max_dict;         /* dict entries, default 16 Mi */
    size_t max_string_bytes; /* all strings together, default 1 GiB */
    size_t max_line_bytes;   /* default 64 MiB */
    size_t max_gpus;         /* devices, default 1024 */
    size_t max_gpu_samples;  /* gpu_sample rows, default 16 Mi */
    size_t max_kernels;      /* kernel rows, default 16 Mi */
    size_t max_copies;       /* copy rows, default 16 Mi */
    size_t max_memsets;      /* memset rows, default 16 Mi */
    size_t max_configs;      /* kernel_config records, default 1 Mi */
    size_t max_syncs;        /* sync rows, default 16 Mi */
    size_t max_launches;     /* launch rows, default 16 Mi */
    size_t max_frames;       /* frame records, default 1 Mi */
    size_t max_stacks;       /* stack records, default 1 Mi */
    size_t max_pc_samples;   /* pc_sample rows, default 64 Mi */
    size_t max_pc_windows;   /* pc_window rows, default 1 Mi */
    size_t max_sass_insns;   /* instructions of all sass records, default 16 Mi */
    size_t max_sass_metrics; /* sass_metric rows, default 16 Mi */
    /* Progress of the read (the report's CLI shows it): bytes read and the
     * size of all segment files, at most every 0.1 s and once at the end;
     * NULL: none. Not a cap: zero means none, as for the others. */
    gpufl_reader_progress_fn progress;
    void *progress_user;
} gpufl__model_limits_t;

typedef struct gpufl__model {
    gpufl__model_header_t header;
    json_t *options;      /* the `options` record, NULL when absent */
    json_t *capabilities; /* the `capabilities` record, NULL when absent */
    json_t *host_info;    /* the `host_info` record, NULL when absent */
    json_t *trace_stats;  /* the Trace engine's `trace_stats` record, NULL when absent */

    gpufl__model_scope_t *scopes; /* in scope_begin order */
    size_t n_scopes;
    size_t n_open_scopes;
    uint64_t scopes_over_cap;      /* scope_begin rows past the cap, not kept */
    uint64_t scope_ends_over_cap;  /* scope_end rows past the cap (max_scopes), not kept */
    uint64_t scope_ends_unmatched; /* scope_end rows with no scope_begin */
    uint64_t scope_ends_duplicate; /* a second scope_end for one id */
    /* The scope_end rows with no scope_begin (most often lost with a damaged
     * line), as scopes with lost = 1, in scope_end order: end_ns, tid and id
     * from the end row; begin_ns unknown; path and name as far as what
     * survives tells (the damaged line's own columns, a child's path), NULL
     * when nothing does. Those with a path count in their scope path's lost. */
    gpufl__model_scope_t *lost_scopes;
    size_t n_lost_scopes, lost_scopes_alloc;

    /* Damaged lines (kept up to max_warnings) and counts over all of them. */
    gpufl__model_damage_t *damaged;
    size_t n_damaged, damaged_alloc;
    uint64_t damaged_lines;       /* all damaged lines, kept or not */
    uint64_t damaged_scope_lines; /* of them, in scope.log and its segments */

    gpufl__model_host_sample_t *samples; /* host_sample rows, in log order */
    size_t n_samples;
    uint64_t samples_over_cap;

    gpufl__model_window_t *windows; /* system_start/stop records, in log order */
    size_t n_windows;
    uint64_t windows_over_cap;

    gpufl__model_event_t *events; /* in log order */
    size_t n_events;
    uint64_t events_over_cap;

    gpufl__model_gpu_t *gpus; /* sorted by device number */
    size_t n_gpus;
    uint64_t gpus_over_cap; /* records naming devices past the cap, not kept */

    gpufl__model_process_t *processes; /* process_info records, in log order */
    size_t n_processes;
    uint64_t processes_over_cap;

    gpufl__model_xid_t *xids; /* xid records, in log order */
    size_t n_xids;
    uint64_t xids_over_cap;

    gpufl__model_gpu_sample_t *gpu_samples; /* gpu_sample rows of all devices, in log order */
    size_t n_gpu_samples;
    uint64_t gpu_samples_over_cap;

    gpufl__model_kernel_t *kernels; /* kernel rows of all devices, in log order */
    size_t n_kernels;
    uint64_t kernels_over_cap;

    gpufl__model_copy_t *copies; /* copy rows of all devices, in log order */
    size_t n_copies;
    uint64_t copies_over_cap;

    gpufl__model_memset_t *memsets; /* memset rows of all devices, in log order */
    size_t n_memsets;
    uint64_t memsets_over_cap;

    gpufl__model_kernel_config_t *configs; /* kernel_config records, in log order */
    size_t n_configs;
    uint64_t configs_over_cap;
    uint64_t configs_duplicate; /* a second record for an id (the first is kept) */
    uint64_t configs_missing;   /* kernel and launch rows naming a config id no record has */

    gpufl__model_launch_t *launches; /* launch rows (PcSampling, Deep), in log order */
    size_t n_launches;
    uint64_t launches_over_cap;

    gpufl__model_sync_t *syncs; /* sync rows, in log order */
    size_t n_syncs;
    uint64_t syncs_over_cap;

    const char **op_names; /* framework operation names (op records) by index - 1; NULL unknown */
    size_t n_op_names;

    gpufl__model_frame_t *frames; /* frame records, in log order */
    size_t n_frames;
    uint64_t frames_over_cap;
    gpufl__model_stack_t *stacks; /* stack records, in log order */
    size_t n_stacks;
    uint64_t stacks_over_cap;
    size_t *stack_frames; /* the frames of all stacks, back to back */
    size_t n_stack_frames;
    uint64_t stacks_missing; /* kernel and sync rows naming a stack id no record has */

    /* PC sampling: one entry per pc_sampling record (by context), the rows,
     * the stall reasons the rows name (sorted by short name), the last
     * pc_sampling_stats record, sass records sorted by (cubin, function),
     * and the samples given to scope paths by time (pc_attrib.c), sorted by
     * (slot, reason). */
    gpufl__model_pc_context_t *pc_contexts;
    size_t n_pc_contexts;
    gpufl__model_pc_sample_t *pc_samples;
    size_t n_pc_samples;
    uint64_t pc_samples_over_cap;
    uint64_t pc_samples_total; /* samples of all rows kept */
    gpufl__model_pc_window_t *pc_windows;
    size_t n_pc_windows;
    uint64_t pc_windows_over_cap;
    gpufl__model_pc_reason_t *pc_reasons;
    size_t n_pc_reasons;
    json_t *pc_stats; /* pc_sampling_stats, NULL when absent */
    gpufl__model_sass_t *sass;
    size_t n_sass;
    gpufl__model_sass_insn_t *sass_insns;
    size_t n_sass_insns;
    uint64_t sass_insns_over_cap;
    gpufl__model_pc_scope_t *pc_scopes;
    size_t n_pc_scopes;
    gpufl__model_pc_attrib_t pc_attrib;

    /* SASS metrics: one entry per sass_metrics record (by context), the
     * rows, and the last sass_metrics_stats record. After loading the rows
     * are sorted by (cubin, function, pc, context) with one row per
     * (context, cubin, function, pc): a row read again on its context
     * replaces the earlier one (counts are cumulative on a context). */
    gpufl__model_sass_metrics_context_t *sass_metrics_contexts;
    size_t n_sass_metrics_contexts;
    gpufl__model_sass_metric_t *sass_metrics;
    size_t n_sass_metrics;
    uint64_t sass_metrics_over_cap;
    uint64_t sass_metrics_replaced; /* rows a later read of their context replaced */
    json_t *sass_metrics_stats;     /* sass_metrics_stats, NULL when absent */

    /* Range profiler: one entry per range_profiler record (by context), the
     * range_metrics records in the order read, the last range_profiler_stats. */
    gpufl__model_range_context_t *range_contexts;
    size_t n_range_contexts;
    gpufl__model_range_t *ranges;
    size_t n_ranges;
    uint64_t ranges_over_cap;
    json_t *range_stats; /* range_profiler_stats, NULL when absent */

    /* Scope paths, sorted by path; GPU work per path and outside them. */
    gpufl__model_scope_path_t *scope_paths;
    size_t n_scope_paths;
    gpufl__model_scope_gpu_t gpu_no_scope;      /* launched with no scope open (or not said) */
    gpufl__model_scope_gpu_t gpu_unknown_scope; /* naming a scope id scope.log lacks */
    uint64_t gpu_scoped_rows; /* kernel, copy and memset rows that name a scope id */

    /* gpu_legend: name of each throttle_reasons bit, NULL when unnamed. */
    const char *throttle_names[GPUFL_MODEL_THROTTLE_BITS];
    int has_legend;

    /* source_cost: one per source (its last record), in the order first seen */
    gpufl__model_source_cost_t *source_costs;
    size_t n_source_costs;

    gpufl__model_drops_t drops;
    gpufl__model_session_end_t session_end;

    int64_t first_ts_ns; /* smallest / largest ts_ns seen in any record; */
    int64_t last_ts_ns;  /* GPUFL_MODEL_UNKNOWN when none */

    gpufl__model_warning_t *warnings;
    size_t n_warnings;
    uint64_t warnings_over_cap;

    uint64_t unknown_versions; /* known types with a "v" this reader does not know */
    uint64_t undefined_ids;    /* references to dict ids never defined */

    gpufl__reader_stats_t read; /* lines, bytes, truncated and corrupt lines, segments */
    gpufl__dict_t dict;         /* the session's interned strings */

    /* Internal. */
    gpufl__model_limits_t limits;
    gpufl__strpool_t strings;    /* strings other than dict entries */
    gpufl__idmap_t scope_index;  /* scope id -> index in scopes */
    gpufl__idmap_t gpu_index;    /* device + 1 -> index in gpus */
    gpufl__idmap_t config_index; /* kernel_config id -> index in configs */
    size_t scopes_alloc, samples_alloc, windows_alloc, events_alloc, warnings_alloc;
    size_t gpus_alloc, gpu_samples_alloc, source_costs_alloc, kernels_alloc, copies_alloc;
    size_t memsets_alloc, configs_alloc, syncs_alloc, frames_alloc, stacks_alloc;
    size_t stack_frames_alloc;
    size_t pc_contexts_alloc, pc_samples_alloc, pc_windows_alloc, pc_reasons_alloc, sass_alloc;
    size_t sass_insns_alloc, pc_scopes_alloc, launches_alloc, sass_metrics_contexts_alloc;
    size_t sass_metrics_alloc, range_contexts_alloc, ranges_alloc, processes_alloc;
    size_t xids_alloc;
    gpufl__idmap_t frame_index; /* frame id -> index in frames */
    gpufl__idmap_t stack_index; /* stack id -> index in stacks */
    void *load_state;          /* only during loading */
} gpufl__model_t;

/*
 * Reads the session in session_dir into a new model (*out; NULL on failure).
 * Damaged lines do not fail the load: they become warnings. Returns 0,
 * GPUFL_ENOTFOUND when the directory does not exist or holds no log file,
 * GPUFL_EIO, GPUFL_ENOMEM. Sets gpufl_last_error() on failure.
 */
int gpufl__model_load(gpufl__model_t **out, const char *session_dir);
/* As gpufl__model_load, with caps (NULL: defaults). */
int gpufl__model_load_limits(gpufl__model_t **out, const char *session_dir,
                             const gpufl__model_limits_t *limits);
/*
 * Building a model from lines fed in pieces (the feed path both of the
 * above take): gpufl__model_create makes an empty model in its loading
 * state (*out); gpufl__model_reader_init sets up a reader whose records go
 * into it (follow_segments: see gpufl__reader_t); after the lines,
 * gpufl__model_finish joins and summarizes once, and the model is then only
 * read. Return 0, GPUFL_ENOMEM (GPUFL_EINVAL: finished twice).
 */
int gpufl__model_create(gpufl__model_t **out, const gpufl__model_limits_t *limits);
void gpufl__model_reader_init(gpufl__model_t *m, gpufl__reader_t *r, int follow_segments);
int gpufl__model_finish(gpufl__model_t *m);
/* Frees a model (finished or not); accepts NULL. */
void gpufl__model_destroy(gpufl__model_t *m);

/* The string of a dict id: "" for 0, NULL when undefined. */
const char *gpufl__model_str(const gpufl__model_t *m, int64_t id);
/* The scope with instance id `id`, or NULL. */
const gpufl__model_scope_t *gpufl__model_scope_find(const gpufl__model_t *m, int64_t id);
/* The scope path `path` ("batch/forward_pass"), or NULL. */
const gpufl__model_scope_path_t *gpufl__model_scope_path_find(const gpufl__model_t *m,
                                                              const char *path);
/* The kernel_config record with id `id`, or NULL. */
const gpufl__model_kernel_config_t *gpufl__model_config_find(const gpufl__model_t *m, int64_t id);
/* The kernel_config record a launch names, or NULL. */
const gpufl__model_kernel_config_t *gpufl__model_launch_config(const gpufl__model_t *m,
                                                               const gpufl__model_launch_t *l);
/* The demangled name of a launch's kernel, "?" when its config is unknown. */
const char *gpufl__model_launch_name(const gpufl__model_t *m, const gpufl__model_launch_t *l);

/* The stack with id `id`, or NULL. */
const gpufl__model_stack_t *gpufl__model_stack_find(const gpufl__model_t *m, int64_t id);
/* Frame i (0 = innermost) of a stack, or NULL past its depth or for an
 * undefined frame id. */
const gpufl__model_frame_t *gpufl__model_stack_frame(const gpufl__model_t *m,
                                                     const gpufl__model_stack_t *s, size_t i);
/* The external correlation kind of framework operation ids (gpufl_ops.h:
 * CUPTI's CUSTOM2). */
#define GPUFL_MODEL_EXTERNAL_OPS 5

/* The framework operation (gpufl_ops.h) of a kernel or launch row's
 * external correlation, or NULL when it has none or its op record is gone. */
const char *gpufl__model_op_name(const gpufl__model_t *m, int64_t external_kind,
                                 int64_t external_id);

/*
 * Where a stack comes from in the application: its innermost user frame
 * that has a source line, else its innermost user frame. NULL when no frame
 * is user code (a call made inside the CUDA runtime or driver: shown as
 * <driver-internal>) or the stack is unknown.
 */
const gpufl__model_frame_t *gpufl__model_stack_site(const gpufl__model_t *m, int64_t stack_id);

/* All GPU time of a piece of work: kernels, copies and memsets. */
double gpufl__model_gpu_ns(const gpufl__model_gpu_work_t *w);
/* The device with number `device`, or NULL. */
const gpufl__model_gpu_t *gpufl__model_gpu_find(const gpufl__model_t *m, int64_t device);
/* The source_cost record of `source` ("host", "nvml"), or NULL. */
const gpufl__model_source_cost_t *gpufl__model_source_cost(const gpufl__model_t *m,
                                                           const char *source);
/* The pc_sampling record of a context, or NULL. */
const gpufl__model_pc_context_t *gpufl__model_pc_context(const gpufl__model_t *m, int64_t context);
/* The sass record of (cubin, function), else the first of function (a row
 * whose module has no record of its own), or NULL. */
const gpufl__model_sass_t *gpufl__model_sass_find(const gpufl__model_t *m, int64_t cubin,
                                                  int64_t function);
/* The sass_metrics record of a context, or NULL. */
/* 1 when SASS metrics were counted on some context (engines SassMetrics and
 * Deep): kernels then ran patched, and PC samples of the same session
 * describe the instrumented code, not the program's own
 * (docs/design/sass-metrics.md, "Deep"). */
int gpufl__model_sass_counted(const gpufl__model_t *m);
const gpufl__model_sass_metrics_context_t *
gpufl__model_sass_metrics_context(const gpufl__model_t *m, int64_t context);
/* The instruction at pc in s, or NULL. */
const gpufl__model_sass_insn_t *gpufl__model_sass_insn(const gpufl__model_t *m,
                                                       const gpufl__model_sass_t *s, uint32_t pc);
/* The short name of a CUPTI stall reason: the known prefix
 * (smsp__pcsamp_warps_issue_stalled_, smsp__pcsamp_) stripped; a name
 * without one is returned whole. Points into name. */
const char *gpufl__model_pc_reason_short(const char *name);

/* A string member of a record object (e.g. of m->capabilities), or NULL. */
const char *gpufl__model_json_str(const json_t *obj, const char *key);

#endif
