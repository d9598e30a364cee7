// SPDX-License-Identifier: Apache-2.0
/*
 * report.h - the report of a session in four formats: text (for people, the
 * one gpufl_report_session() writes), JSON (for programs), Markdown and one
 * self-contained HTML file (timeline and metric plots included).
 *
 * Sections: summary, insights, scope timing, system metrics, GPU devices
 * (from NVML samples) and, from Trace engine records, kernel hotspots,
 * kernel details (launch configurations, occupancy), memory transfers, GPU
 * time per scope (under the engines that time no kernels: the
 * launches per kernel instead), PC sampling and SASS metrics (engines
 * PcSampling, SassMetrics and Deep), hardware counters per scope (engine
 * RangeProfiler), then the log problems met while
 * reading.
 *
 * Every number is computed once, by gpufl__report_build() (report_data.c),
 * into the section structs below; each format only renders them: report.c
 * (text), report_json.c, report_doc.c (the sections of Markdown and HTML,
 * through an emitter each provides: report_md.c, report_html.c). Output is
 * deterministic (same logs, same bytes), which the golden tests rely on.
 */
#ifndef GPUFL_ANALYSIS_REPORT_H
#define GPUFL_ANALYSIS_REPORT_H

#include "analysis/insights.h"
#include "analysis/model.h"
#include "analysis/pc_profile.h"
#include "analysis/sass_profile.h"

#include <gpufl/gpufl_analysis.h>

#include <stdint.h>
#include <stdio.h>

/* gpufl_report_format_t and gpufl_report_format_parse(): gpufl_analysis.h. */

/* Writes the report of m to out in format fmt. Returns 0, or GPUFL_EIO when
 * writing failed, GPUFL_ENOMEM, GPUFL_EINVAL. Safe to call from several
 * threads on one model. */
int gpufl__report_write_format(const gpufl__model_t *m, gpufl_report_format_t fmt, FILE *out);

/* The text report: gpufl__report_write_format(m, GPUFL_REPORT_TEXT, out). */
int gpufl__report_write(const gpufl__model_t *m, FILE *out);

/* Loads the session in session_dir and writes its text report to out. Returns
 * 0 or what gpufl__model_load / gpufl__report_write returned. */
int gpufl__report_session_dir(const char *session_dir, FILE *out);

/* ---------------------------------------------------------------------- */
/* Internal: the computed sections, shared by the renderers.               */
/* ---------------------------------------------------------------------- */

#define GPUFL_REPORT_LIST_MAX     10 /* events, open scopes, window names, processes listed */
#define GPUFL_REPORT_DAMAGE_LINES 6  /* lines on damaged lines in the summary */
#define GPUFL_REPORT_PROBLEMS_MAX 20 /* log problems listed */
#define GPUFL_REPORT_HOTSPOTS_MAX 10 /* kernel names in the hotspots and details (top_n 0) */
#define GPUFL_REPORT_CONFIGS_MAX  8  /* launch configurations listed per name */

/* Statistics of one value (unknown values, < 0, are skipped). */
typedef struct gpufl__report_stat {
    double sum, min, max;
    size_t n;
} gpufl__report_stat_t;

/* A counter's first and last known value, by time. */
typedef struct gpufl__report_counter {
    int64_t first, first_ts, last, last_ts;
    size_t n;
} gpufl__report_counter_t;

/* The capabilities record's word on the backend or the engine. */
typedef struct gpufl__report_cap {
    const char *requested, *running, *reason; /* NULL when the record does not say */
} gpufl__report_cap_t;

typedef struct gpufl__report_feature {
    const char *name;
    const char *reason; /* NULL when none */
    int on;
} gpufl__report_feature_t;

typedef struct gpufl__report_drop {
    const char *name;
    int64_t count;
} gpufl__report_drop_t;

typedef struct gpufl__report_summary {
    const char *app, *session_id, *hostname, *gpufl_version; /* "?" when unknown */
    int64_t cpu_count, mem_total_bytes, cgroup_version;      /* host_info; -1 unknown */
    const char *kernel_release;                              /* NULL unknown */
    int has_host_info;
    int64_t pid;           /* -1 unknown */
    int64_t start_unix_us; /* -1 unknown */
    int64_t duration_ns;   /* -1 unknown */
    int ended;             /* a session_end record gave the duration */
    int has_caps;          /* a capabilities record was read */
    gpufl__report_cap_t backend, engine;
    gpufl__report_feature_t *features; /* sorted by name */
    size_t n_features;
    size_t window_starts, window_stops;
    gpufl__report_drop_t drops[5]; /* the counters above 0 */
    size_t n_drops;
    size_t warn_events, other_events;
    size_t *warn_order; /* indexes of the warn/error events in m->events, by time */
    unsigned log_files;
    size_t problems; /* log problems, listed or not */
    /* Damaged lines and the rows lost with them, in words for every
     * renderer: one line per file segment ("1 damaged line in scope.log
     * (line 12; 3 rows lost)"), the last one for the rest when more. */
    char damage[GPUFL_REPORT_DAMAGE_LINES][320];
    size_t n_damage;
    /* Their totals: damaged lines, rows lost (a lower bound when
     * damage_rows_at_least), and lines whose rows are unknown. */
    uint64_t damage_lines, damage_rows, damage_rows_unknown;
    int damage_rows_at_least;
} gpufl__report_summary_t;

/* One row of the scope timing tree. */
typedef struct gpufl__report_scope_row {
    const gpufl__model_scope_path_t *path;
    double avg_ns;      /* -1 when no call ended */
    double per_iter_ns; /* -1 when not a GFL_BENCH scope */
    const char *const *tags; /* the distinct non-empty tags of the path, numbers by value */
    size_t n_tags;
} gpufl__report_scope_row_t;

typedef struct gpufl__report_scopes {
    gpufl__report_scope_row_t *rows; /* parents first, siblings by total time */
    size_t n_rows;
    size_t closed, implicit, bench;
    const char **tags; /* every row's tags, one run per path (rows[i].tags point here) */
    /* The first open scopes (no scope_end) in log order; m->n_open_scopes in all. */
    const gpufl__model_scope_t *open[GPUFL_REPORT_LIST_MAX];
    size_t n_open;
    /* Scope ends with no begin, in words for every renderer ("3 scope ends
     * had no begin (lost with the damaged line in scope.log): a, a/b; 1 with
     * no name left"); "" when every end had its begin. */
    char lost[1024];
    /* The same, for the JSON report: all of them, those with no name left,
     * those whose name survives with no path (their parent's begin was lost
     * too), and the first paths (in the order they began) with counts. */
    size_t lost_total, lost_unnamed, lost_pathless, n_lost_paths;
    const char *lost_paths[GPUFL_REPORT_LIST_MAX];
    size_t lost_counts[GPUFL_REPORT_LIST_MAX];
} gpufl__report_scopes_t;

/* Orders tags with the numbers inside them by value (step=2 before step=10);
 * tags equal that way but not byte for byte ("01", "1") by their bytes. */
int gpufl__report_cmp_natural(const char *a, const char *b);

/* The tags shown in a scope row, by every format but JSON: the tags joined
 * by ", " up to GPUFL_REPORT_TAGS_WIDTH characters (a longer first tag is
 * cut with "..."), then ", ... (+N more)" for those left out; "-" when
 * there are none. Control characters read as '?'. */
#define GPUFL_REPORT_TAGS_WIDTH 40
#define GPUFL_REPORT_TAGS_JSON  GPUFL_REPORT_LIST_MAX /* tag values listed per path in JSON */
#define GPUFL_REPORT_TAG_CELL   (GPUFL_REPORT_TAGS_WIDTH * 4 + 32) /* bytes: the cell, cut or not */
void gpufl__report_fmt_tags(char *buf, size_t size, const char *const *tags, size_t n);
/* A scope path's calls cell: "3", or "2 +1 lost" when scope ends of the
 * path had no begin (lost with a damaged line: no time for them). */
void gpufl__report_fmt_calls(char *buf, size_t size, const gpufl__model_scope_path_t *p);

enum {
    GPUFL_RH_CPU,
    GPUFL_RH_PROC_CPU,
    GPUFL_RH_MEM_USED,
    GPUFL_RH_MEM_TOTAL,
    GPUFL_RH_RSS,
    GPUFL_RH_CG_MEM,
    GPUFL_RH_CG_LIMIT,
    GPUFL_RH_CG_CPU,
    GPUFL_RH_CG_CORES,
    GPUFL_RH_COUNT
};

typedef struct gpufl__report_system {
    size_t n; /* host samples */
    int64_t first_ts_ns, last_ts_ns;
    gpufl__report_stat_t st[GPUFL_RH_COUNT];
    /* The CPU figures' bounds, from host_info: the CPUs the process may use
     * (cpus_allowed, else cpu_count; -1 unknown) and the shortest interval a
     * figure covers (-1: a log older than that field). */
    int64_t cpus, cpu_min_interval_ns;
    int64_t clock_ticks_per_s; /* host_info; -1 unknown */
    int period_below_min;      /* samples came closer than cpu_min_interval_ns */
    /* Why samples lack a CPU figure ("a figure needs 90 ms"; "" when the
     * log does not say), and, when a CPU statistic has no figure at all,
     * one sentence naming them and why ("" when every one has figures). */
    char cpu_why[48];
    char cpu_none[192];
    size_t proc_cpu_over, cg_cpu_over; /* figures above 100 % per CPU: impossible (logs
                                          written before figures were clamped) */
    const char **window_names; /* distinct, sorted */
    size_t n_window_names;
} gpufl__report_system_t;

enum {
    GPUFL_RG_UTIL,
    GPUFL_RG_MEM_UTIL,
    GPUFL_RG_MEM_USED,
    GPUFL_RG_MEM_TOTAL,
    GPUFL_RG_TEMP_GPU,
    GPUFL_RG_TEMP_MEM,
    GPUFL_RG_POWER,
    GPUFL_RG_POWER_LIMIT,
    GPUFL_RG_CLOCK_SM,
    GPUFL_RG_CLOCK_MEM,
    GPUFL_RG_FAN,
    GPUFL_RG_PCIE_TX,
    GPUFL_RG_PCIE_RX,
    GPUFL_RG_NVLINK_TX,
    GPUFL_RG_NVLINK_RX,
    GPUFL_RG_SM_ACTIVE,
    GPUFL_RG_SM_OCCUPANCY,
    GPUFL_RG_TENSOR,
    GPUFL_RG_DRAM_BW,
    GPUFL_RG_COUNT
};

typedef struct gpufl__report_bit_share {
    int bit;
    size_t n;
} gpufl__report_bit_share_t;

/* What one device's samples say. */
typedef struct gpufl__report_gpu {
    const gpufl__model_gpu_t *gpu;
    size_t n; /* samples */
    int64_t first_ts_ns, last_ts_ns;
    gpufl__report_stat_t st[GPUFL_RG_COUNT];
    gpufl__report_counter_t energy, sbe, dbe;
    double mem_total_bytes; /* from the samples, else gpu_info; -1 unknown */
    double power_limit_mw;  /* likewise; -1 unknown */
    size_t throttle_n;      /* samples with known throttle reasons */
    size_t bit_n[GPUFL_MODEL_THROTTLE_BITS];
    gpufl__report_bit_share_t
        shares[GPUFL_MODEL_THROTTLE_BITS]; /* bits set, idle aside, most first */
    size_t n_shares;
} gpufl__report_gpu_t;

typedef struct gpufl__report_cost {
    const char *source;
    double mean_ns;
    int is_nvml;
} gpufl__report_cost_t;

/* The launches of one kernel name. */
typedef struct gpufl__report_kgroup {
    const char *name;
    uint32_t rank; /* the name's place in strcmp order */
    size_t calls;
    double total_ns;
    int64_t min_ns, max_ns, p50_ns, p99_ns;
} gpufl__report_kgroup_t;

/* The launches of one kernel name with one kernel_config id. */
typedef struct gpufl__report_kconf {
    const gpufl__model_kernel_t *first;      /* its first launch in log order */
    const gpufl__model_kernel_config_t *rec; /* NULL when none or missing */
    const char *name;
    uint32_t rank;
    int64_t config; /* GPUFL_MODEL_UNKNOWN: the launches name none */
    size_t calls, name_calls;
    double total_ns, name_total_ns; /* of the group, of all groups of the name */
    int same_grid, same_block, same_dsmem;
} gpufl__report_kconf_t;

/* The launch rows of one kernel_config id (engines that time no kernels,
 * which record launch calls instead of timed kernels). */
typedef struct gpufl__report_lgroup {
    const gpufl__model_kernel_config_t *rec; /* NULL when none or missing */
    const char *name;                       /* demangled; "?" without a record */
    int64_t config;                         /* GPUFL_MODEL_UNKNOWN: the launches name none */
    size_t launches;
    size_t scopes; /* distinct scope paths launched in ((no scope) not counted) */
} gpufl__report_lgroup_t;

/* What the report says where kernel GPU times are needed and the session
 * has launch rows but no kernel rows. */
#define GPUFL_REPORT_UNTIMED "this engine does not time kernels: see docs/log-format.md, `launch`"

enum {
    GPUFL_REPORT_DIR_HTOD,
    GPUFL_REPORT_DIR_DTOH,
    GPUFL_REPORT_DIR_DTOD,
    GPUFL_REPORT_DIR_PEER,
    GPUFL_REPORT_DIR_OTHER,
    GPUFL_REPORT_DIR_COUNT
};

typedef struct gpufl__report_dir {
    size_t count, pageable, pinned;
    double bytes, time_ns;
} gpufl__report_dir_t;

#define GPUFL_REPORT_PC_ROWS_MAX    10 /* kernels, scopes and source lines listed */
#define GPUFL_REPORT_PC_TOP_REASONS 3  /* reasons shown per kernel or scope */
#define GPUFL_REPORT_PC_HOT_PC_SAMPLING 3  /* instructions shown per source line */

/* A reason's samples (reason: index in m->pc_reasons). */
typedef struct gpufl__report_pc_share {
    size_t reason;
    double samples;
} gpufl__report_pc_share_t;

/* One kernel function or scope path of the PC sampling section. */
typedef struct gpufl__report_pc_row {
    const char *label; /* the demangled kernel name, or the scope path */
    double samples;
    gpufl__report_pc_share_t top[GPUFL_REPORT_PC_TOP_REASONS]; /* most first */
    size_t n_top;
} gpufl__report_pc_row_t;

/* One of the most-stalled source lines (or instructions without one). */
typedef struct gpufl__report_pc_line {
    const gpufl__pc_line_t *line;
    const char *function;
    long reason;                                         /* its most frequent stall; -1 none */
    const gpufl__pc_insn_t *hot[GPUFL_REPORT_PC_HOT_PC_SAMPLING]; /* its hottest instructions */
    size_t n_hot;
} gpufl__report_pc_line_t;

/* The PC sampling section: configuration, accounting, attribution precision
 * and the stall reasons per kernel, scope and source line. */
typedef struct gpufl__report_pc {
    int shown;                      /* pc_sampling records or pc_sample rows exist */
    size_t contexts, failed, late;  /* pc_sampling records; failed: with an error */
    int64_t period_min, period_max; /* exponents; -1 unknown */
    int64_t worker_sleep_ms;        /* largest of the contexts; -1 unknown */
    const char *error;              /* the first context's error, NULL when none */
    /* pc_sampling_stats (from_stats), else the pc_window rows summed; -1 unknown */
    int64_t samples, recorded, dropped, non_user, buffer_full, drains;
    int64_t lost;     /* samples gpufl could not keep (no memory); -1 unknown */
    int64_t unplaced; /* samples of CUPTI's records with no function or module; -1 unknown */
    int from_stats;
    int64_t restarts; /* sampling restarted after a full buffer (pc_sampling_stats); -1 unknown */
    int64_t
        implausible; /* PC records left out: impossible counts (pc_sampling_stats); -1 unknown */
    /* From the pc_window rows: session time of the first window whose drains
     * found CUPTI's hardware buffer full (-1 none), the end of the last
     * window, and the samples recorded in the windows after that first one
     * (restarted sampling; 0 when sampling stopped there). */
    int64_t full_at_ns, windows_end_ns, recorded_after_full;
    gpufl__pc_profile_t profile;
    gpufl__report_pc_row_t *kernels; /* by samples */
    size_t n_kernels;
    gpufl__report_pc_row_t *scopes; /* by samples */
    size_t n_scopes, scopes_total;
    gpufl__report_pc_line_t *lines; /* by samples */
    size_t n_lines;
} gpufl__report_pc_t;

#define GPUFL_REPORT_SASS_METRICS_ROWS_MAX 10 /* functions and source lines listed */
#define GPUFL_REPORT_SASS_METRICS_INSNS    3  /* instructions shown per source line */

/* One source line of the SASS metrics section with its instructions that
 * lose most by the section's measure. */
typedef struct gpufl__report_sass_metrics_line {
    const gpufl__sass_line_t *line;
    const char *function;
    const gpufl__sass_insn_t *insns[GPUFL_REPORT_SASS_METRICS_INSNS];
    size_t n_insns;
} gpufl__report_sass_metrics_line_t;

/* The SASS metrics section: how counting ran, what was lost, and the
 * counts per function, the most divergent and the least coalesced lines. */
typedef struct gpufl__report_sass_metrics {
    int shown;                     /* the session has sass_metric rows */
    size_t contexts, failed, late; /* sass_metrics records; failed: with an error */
    size_t lazy;                   /* contexts counted with lazy patching */
    const char *error;             /* the first context's error, NULL when none */
    const char *chip;              /* the first counted context's chip, NULL when none */
    const json_t *metrics;         /* the first counted context's metric names, NULL */
    const json_t *stats;           /* the sass_metrics_stats record, NULL when absent */
    gpufl__sass_profile_t profile;
    size_t n_kernels; /* functions listed: the first of profile.functions */
    gpufl__report_sass_metrics_line_t
        divergent[GPUFL_REPORT_SASS_METRICS_ROWS_MAX]; /* by idle lanes */
    size_t n_divergent, divergent_total;
    gpufl__report_sass_metrics_line_t
        uncoalesced[GPUFL_REPORT_SASS_METRICS_ROWS_MAX]; /* by excess sectors */
    size_t n_uncoalesced, uncoalesced_total;
} gpufl__report_sass_metrics_t;

/* Ranges, and scope paths, listed in the hardware counters section. */
#define GPUFL_REPORT_RANGE_ROWS_MAX 50

/* The figures of one scope path over its ranges of every metric group,
 * time-weighted (docs/log-format.md, "Range profiler"); NAN when the
 * metrics they need were not seen. */
typedef struct gpufl__report_range_path {
    const char *path;
    size_t ranges, groups_seen;
    size_t settling_left_out; /* settling ranges the figures leave out (their group has others) */
    size_t settling_used;     /* settling ranges the figures take (their group has no other) */
    double gpu_ns;            /* summed gpu__time_duration.sum: the order of the table */
    double sm_throughput_pct;
    const char *sm_limiter; /* the sm_throughput_of name at the maximum; NULL when none taken */
    double l2_hit_pct;
} gpufl__report_range_path_t;

/* The hardware counters section (engine RangeProfiler): one row per
 * range_metrics record (of group 0 when there are more groups), by start
 * time, the first GPUFL_REPORT_RANGE_ROWS_MAX; then one per scope path. */
typedef struct gpufl__report_range {
    int shown;                        /* the session has range_metrics records */
    size_t contexts, failed;          /* range_profiler records; failed: with an error */
    const char *error;                /* the first context's error, NULL when none */
    const char *chip;                 /* the first started context's chip, NULL when none */
    const json_t *metrics;            /* the first started context's metric names, NULL */
    const json_t *left_out;           /* the first started context's left_out, NULL */
    const json_t *groups;             /* the first started context's groups, NULL: one, metrics */
    const json_t *sm_throughput_of;   /* the first started context's, NULL when absent */
    size_t n_groups;                  /* the most of a context, or of its ranges' group + 1 */
    const json_t *stats;              /* the range_profiler_stats record, NULL when absent */
    const gpufl__model_range_t **rows; /* by start time */
    size_t n_rows, total;
    size_t other_groups;              /* ranges not in rows: of groups past 0 */
    size_t settling;                  /* ranges marked settling, of every group */
    gpufl__report_range_path_t *paths; /* by GPU time, the most first */
    size_t n_paths, paths_total;
} gpufl__report_range_t;

#define GPUFL_REPORT_OPS_ROWS_MAX 25 /* operations listed in the framework operations section */

/* One framework operation (gpufl_ops.h, gpufl.torch) and its kernels. */
typedef struct gpufl__report_op_row {
    const char *name;
    size_t calls;   /* distinct call ids whose kernels ran */
    size_t kernels; /* kernel rows */
    double gpu_ns;  /* their summed durations */
} gpufl__report_op_row_t;

/* The framework operations section: GPU time per operation, by GPU time. */
typedef struct gpufl__report_ops {
    int shown; /* some kernel row names an operation */
    gpufl__report_op_row_t *rows;
    size_t n_rows, total; /* shown; operations in all */
    size_t untagged;      /* kernels without an operation */
    double untagged_ns;   /* their time; shares are of the report's kernel_ns */
} gpufl__report_ops_t;

typedef struct gpufl__report {
    const gpufl__model_t *m;
    gpufl__report_summary_t summary;
    gpufl__insights_t insights;
    gpufl__report_scopes_t scopes;
    gpufl__report_system_t system;

    gpufl__report_gpu_t *gpus; /* one per m->gpus */
    int idle_bit;              /* the gpu_idle throttle bit, -1 none */
    const char *no_gpu_reason; /* without devices: the backend's reason, or NULL */
    gpufl__report_cost_t costs[16];
    size_t n_costs;

    gpufl__report_kgroup_t *kgroups; /* by total GPU time, then name */
    size_t n_kgroups;
    double kernel_ns;

    gpufl__report_kconf_t *kconfs; /* names by GPU time; in a name, configs by time */
    size_t n_kconfs;
    size_t kernel_names, configs, unconfigured;

    /* Launch rows: per kernel_config id, by launches then name. untimed: the
     * session has launch rows and no kernel rows. */
    int untimed;
    gpufl__report_lgroup_t *lgroups;
    size_t n_lgroups, launch_names, launches_without_config;

    gpufl__report_dir_t dirs[GPUFL_REPORT_DIR_COUNT];
    double copy_bytes;

    /* GPU time per scope: shown when work names scopes or scope paths exist. */
    int scope_gpu_shown;
    gpufl__report_scope_row_t *scope_gpu_rows; /* paths with GPU work, tree order by GPU time */
    size_t n_scope_gpu_rows, scope_gpu_hidden;
    size_t scope_gpu_start_end; /* NVTX start/end range paths: their work overlays the others' */
    double gpu_in_scopes_ns, gpu_all_ns;
    int64_t unattributed; /* trace_stats: records without a launch note; -1 unknown */

    gpufl__report_pc_t pc;
    gpufl__report_sass_metrics_t sass_metrics;
    gpufl__report_range_t range;
    gpufl__report_ops_t ops;

    /* Set by the caller after gpufl__report_build, read by the renderers:
     * kernel names (launch configurations) listed in the hotspots and the
     * kernel details; 0 means GPUFL_REPORT_HOTSPOTS_MAX. */
    size_t top_n;
} gpufl__report_t;

/* How many of n kernel names (or launch groups) the hotspots and the kernel
 * details list: r->top_n (GPUFL_REPORT_HOTSPOTS_MAX when 0), at most n. */
size_t gpufl__report_top(const gpufl__report_t *r, size_t n);

/* Computes every section of m's report into r. Returns 0 or GPUFL_ENOMEM
 * (r then holds what was made; free it either way). */
int gpufl__report_build(const gpufl__model_t *m, gpufl__report_t *r);
void gpufl__report_free(gpufl__report_t *r);

/* The PC sampling section (report_pc.c): computed by gpufl__report_build,
 * rendered as text, as the JSON report's "pc_sampling" member (null when
 * not shown) and through an emitter. */
int gpufl__report_build_pc(const gpufl__model_t *m, gpufl__report_pc_t *pc);
void gpufl__report_free_pc(gpufl__report_pc_t *pc);
void gpufl__report_text_pc(const gpufl__report_t *r, FILE *out);
json_t *gpufl__report_json_pc(const gpufl__report_t *r);
struct gpufl__report_emitter;
void gpufl__report_doc_pc(const struct gpufl__report_emitter *e, const gpufl__report_t *r);

/* The SASS metrics section (report_sass_metrics.c), as the PC sampling section:
 * the JSON report's "sass_metrics" member (null when not shown). */
int gpufl__report_build_sass_metrics(const gpufl__model_t *m, gpufl__report_sass_metrics_t *s);
void gpufl__report_free_sass_metrics(gpufl__report_sass_metrics_t *s);
void gpufl__report_text_sass_metrics(const gpufl__report_t *r, FILE *out);
json_t *gpufl__report_json_sass_metrics(const gpufl__report_t *r);
void gpufl__report_doc_sass_metrics(const struct gpufl__report_emitter *e,
                                    const gpufl__report_t *r);

/* The framework operations section (report_ops.c), as the PC sampling
 * section: the JSON report's "framework_ops" member (null when not shown). */
int gpufl__report_build_ops(const gpufl__model_t *m, gpufl__report_ops_t *s);
void gpufl__report_free_ops(gpufl__report_ops_t *s);
void gpufl__report_text_ops(const gpufl__report_t *r, FILE *out);
json_t *gpufl__report_json_ops(const gpufl__report_t *r);
void gpufl__report_doc_ops(const struct gpufl__report_emitter *e, const gpufl__report_t *r);

/* The hardware counters section (report_range.c), as the PC sampling
 * section: the JSON report's "hardware_counters" member (null when not shown). */
int gpufl__report_build_range(const gpufl__model_t *m, gpufl__report_range_t *s);
void gpufl__report_free_range(gpufl__report_range_t *s);
void gpufl__report_text_range(const gpufl__report_t *r, FILE *out);
json_t *gpufl__report_json_range(const gpufl__report_t *r);
void gpufl__report_doc_range(const struct gpufl__report_emitter *e, const gpufl__report_t *r);

/* The text tables of the profile sections: rows of cells, up to
 * GPUFL_REPORT_TABLE_COLS columns, each line indented by two spaces. aligns
 * holds 'l' or 'r' per column; a cell wider than 50 columns is cut but in
 * the last column (report.c). */
#define GPUFL_REPORT_CELL       160 /* bytes of one cell */
#define GPUFL_REPORT_TABLE_COLS 10
typedef char gpufl__report_cells_t[GPUFL_REPORT_TABLE_COLS][GPUFL_REPORT_CELL];
void gpufl__report_text_table(FILE *out, size_t nrow, size_t ncol, gpufl__report_cells_t *rows,
                              const char *aligns);

/* Renders a built report in format fmt: 0, GPUFL_ENOMEM or GPUFL_EINVAL
 * (write errors are checked by the caller on the stream). */
int gpufl__report_render(const gpufl__report_t *r, gpufl_report_format_t fmt, FILE *out);

/* The text of one section of the text report, as the whole report shows
 * it (a blank line, then its heading): "summary", "insights", "scopes",
 * "system", "gpu", "kernels" (hotspots and launches), "kernel_details",
 * "copies", "scope_gpu", "pc_sampling", "sass_metrics", "hardware_counters",
 * "problems". A
 * section with nothing to show writes nothing, or the line saying so that
 * the whole report has. Returns 0, GPUFL_ENOMEM, or GPUFL_EINVAL for an
 * unknown name (the message lists the names). */
int gpufl__report_render_text_section(const gpufl__report_t *r, const char *section, FILE *out);

/* The renderers; each returns 0 or GPUFL_ENOMEM (write errors are checked
 * by the caller on the stream). */
int gpufl__report_render_text(const gpufl__report_t *r, FILE *out);
int gpufl__report_render_json(const gpufl__report_t *r, FILE *out);
int gpufl__report_render_markdown(const gpufl__report_t *r, FILE *out);
int gpufl__report_render_html(const gpufl__report_t *r, FILE *out);

/* What Markdown and HTML provide to report_doc.c, which renders the sections
 * once for both: headings, "label: value" field lists, tables, paragraphs.
 * Every string passed is raw log text or report text: the emitter escapes. */
typedef struct gpufl__report_emitter {
    FILE *out;
    void (*heading)(FILE *out, int level, const char *text);
    void (*para)(FILE *out, const char *text);
    void (*fields_begin)(FILE *out);
    void (*field)(FILE *out, const char *label, const char *value);
    void (*fields_end)(FILE *out);
    /* aligns: one 'l' or 'r' per column */
    void (*table_begin)(FILE *out, size_t cols, const char *const *heads, const char *aligns);
    void (*row)(FILE *out, size_t cols, const char *const *cells);
    void (*table_end)(FILE *out);
} gpufl__report_emitter_t;

/* The sections through an emitter (report_doc.c): the summary and insights,
 * then everything after them (HTML puts its timeline and plots between). */
int gpufl__report_doc_head(const gpufl__report_emitter_t *e, const gpufl__report_t *r);
int gpufl__report_doc_body(const gpufl__report_emitter_t *e, const gpufl__report_t *r);

/* Human units with three significant digits, shared by text, Markdown and
 * HTML (report_data.c). */
void gpufl__report_fmt_ns(char *buf, size_t size, double ns);
/* Appends printf text to line (of size) at *n, never past the end. */
void gpufl__report_cat(char *line, size_t size, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void gpufl__report_fmt_bytes(char *buf, size_t size, double bytes);
void gpufl__report_fmt_pct(char *buf, size_t size, double pct);
void gpufl__report_fmt_si(char *buf, size_t size, double v, const char *unit);
void gpufl__report_sig3(char *buf, size_t size, double v);
/* An evidence value in its unit ("ns", "bytes", "%", "count", ...). */
void gpufl__report_fmt_evidence(char *buf, size_t size, double v, const char *unit);
/* "direction" name of a GPUFL_REPORT_DIR_*: "host→device", ... */
const char *gpufl__report_dir_name(int dir);
/* The GPUFL_REPORT_DIR_* of a copy's CUPTI memcpy kind. */
int gpufl__report_copy_dir(int32_t copy_kind);
/* The record has gpufl's breakdown into per-resource limits. */
int gpufl__report_has_limits(const gpufl__model_kernel_config_t *r);
/* "?" for an unknown (negative) count, else the number. */
void gpufl__report_fmt_count(char *buf, size_t size, int64_t v);
/* A counter of a *_stats record: its value, -1 when absent or not a count. */
int64_t gpufl__report_stat_count(const json_t *stats, const char *key);
/* The counters keys[0..n) of a *_stats record as a JSON object (each null
 * when absent); null without the record. */
json_t *gpufl__report_json_stats(const json_t *stats, const char *const *keys, size_t n);

/* The cells of one launch configuration's row, shared by every format:
 * config id, calls, GPU time, grid, block, registers, shared memory, local
 * memory, occupancy, active/max warps, the four limits and the limiter
 * (disagrees: what follows a limiter the driver's figure disagrees with).
 * "-" where unknown. */
#define GPUFL_REPORT_KCONF_CELLS      12
#define GPUFL_REPORT_KCONF_CELL_BYTES 112
void gpufl__report_kconf_cells(const gpufl__report_kconf_t *c, const char *disagrees,
                               char cells[GPUFL_REPORT_KCONF_CELLS][GPUFL_REPORT_KCONF_CELL_BYTES]);

/* The cells of one launch group's row (launch rows), shared by every
 * format: config id, launches, scopes, block threads, registers, shared
 * memory (static + dynamic), occupancy, limiter. "-" where unknown. */
#define GPUFL_REPORT_LGROUP_CELLS 8
void gpufl__report_lgroup_cells(
    const gpufl__report_lgroup_t *g,
    char cells[GPUFL_REPORT_LGROUP_CELLS][GPUFL_REPORT_KCONF_CELL_BYTES]);

/* A scope path's name as the reports list it: an NVTX range's says so, with
 * its domain ("step [nvtx:training]", "epoch [nvtx start/end]"); a gpufl
 * scope's is its name. buf (size bytes) holds it when it is not p->name. */
const char *gpufl__report_scope_label(const gpufl__model_scope_path_t *p, char *buf, size_t size);

#endif
