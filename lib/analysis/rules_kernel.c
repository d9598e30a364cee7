// SPDX-License-Identifier: Apache-2.0
/*
 * rules_kernel.c - the insight rules about kernels and transfers: low
 * theoretical occupancy and what limits it, register pressure, local memory
 * (spills), launch-bound streams of tiny kernels, transfer-bound devices and
 * copies from pageable memory. They read the Trace engine's rows (kernel,
 * kernel_config, copy, memset); docs/insights.md states every threshold
 * below and why it was chosen.
 */
#include "analysis/insight_rules.h"
#include "analysis/insight_spans.h"

#include "util/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A kernel (or launch configuration) below this share of its device's
 * kernel time is negligible: no kernel rule speaks about it. */
#define SHARE_MIN 0.05
/* At or above this share a kernel dominates its device: severity rises. */
#define SHARE_MAJOR 0.25

/* low_occupancy: theoretical occupancy below OCC_LOW fires; at most
 * OCC_VERY_LOW on a SHARE_MAJOR kernel is MEDIUM. */
#define OCC_LOW      0.25
#define OCC_VERY_LOW 0.125
/* register_limited: below this occupancy, registers are worth cutting. */
#define OCC_TARGET 0.50
/* register_limited: a cut of at most this many registers per thread (on a
 * SHARE_MAJOR kernel) is MEDIUM: __launch_bounds__ usually gets it cheaply. */
#define REG_CUT_EASY 16

/* The register file from compute capability 7.0 on (CUDA C++ Programming
 * Guide, technical specifications; cuda_occupancy.h): 64 Ki 32-bit
 * registers per SM in 4 sub-partitions, given to warps in units of 256. */
#define REGS_PER_SM    65536
#define REG_UNIT       256
#define SUB_PARTITIONS 4
#define WARP_SIZE      32
#define MIN_REGS       16 /* a thread is given at least 16 (lib/nvidia/occupancy.c) */

/* launch_bound */
#define LAUNCH_MIN_KERNELS 100    /* fewer kernels on a device are not a stream */
#define LAUNCH_SHORT_NS    5000   /* a kernel shorter than 5 us is "short" */
#define LAUNCH_SHORT_SHARE 0.5    /* more than half the kernels short */
#define LAUNCH_BUSY_MAX    0.5    /* kernels cover less than half their span */
#define LAUNCH_BUSY_HIGH   0.2    /* below this: HIGH, when the idle time ... */
#define LAUNCH_IDLE_HIGH   0.1    /* ... is at least this share of the session */
#define LAUNCH_GAP_MAX_NS  100000 /* median gap below 100 us: launch cost, not host work */

/* memcpy_bound: exposed copy time (no kernel running) against busy time. */
#define COPY_EXPOSED_MIN_NS 1000000.0 /* 1 ms */
#define COPY_SHARE_MEDIUM   0.25
#define COPY_SHARE_HIGH     0.5

/* pageable_memcpy */
#define PAGEABLE_MIN_NS       1000000.0 /* 1 ms of pageable copies */
#define PAGEABLE_SHARE_MEDIUM 0.10      /* of the device's busy time */

#define MIB (1024.0 * 1024.0)

/* ---------------------------------------------------------------------- */
/* Helpers                                                                  */
/* ---------------------------------------------------------------------- */

static const char *fmt_bytes(double b, char *buf, size_t size) {
    if (b >= 1024.0 * MIB)
        snprintf(buf, size, "%.2f GiB", b / (1024.0 * MIB));
    else if (b >= MIB)
        snprintf(buf, size, "%.1f MiB", b / MIB);
    else if (b >= 1024.0)
        snprintf(buf, size, "%.1f KiB", b / 1024.0);
    else
        snprintf(buf, size, "%.0f B", b);
    return buf;
}

/* Why a capabilities feature ("cupti_trace") was off, or NULL. */
static const char *feature_off_why(const gpufl__model_t *m, const char *feature) {
    json_t *f = json_object_get(json_object_get(m->capabilities, "features"), feature);
    if (!json_is_false(json_object_get(f, "on"))) return NULL;
    return gpufl__model_json_str(f, "why");
}

/* Skips `rule` because the session has launch rows but no kernel rows:
 * the rule needs the kernels' GPU times. */
static int skip_untimed(gpufl__insights_t *out, const char *rule) {
    return gpufl__insight_skip(out, rule,
                               "needs kernel GPU times: this engine records kernel launches, not "
                               "timed kernels (docs/log-format.md, `launch`)");
}

/* Skips `rule` because the session has no kernel rows. */
static int skip_no_kernels(const gpufl__model_t *m, gpufl__insights_t *out, const char *rule) {
    if (m->n_launches) return skip_untimed(out, rule);
    if (m->n_copies || m->n_memsets)
        return gpufl__insight_skip(out, rule,
                                   "no kernel rows: the Trace engine recorded no kernel");
    const char *why = feature_off_why(m, "cupti_trace");
    return gpufl__insight_skip(out, rule, "no kernel rows: the Trace engine did not run%s%s%s",
                               why ? " (" : "", why ? why : "", why ? ")" : "");
}

/* The slot of a device in m->gpus, or SIZE_MAX. */
static size_t gpu_slot(const gpufl__model_t *m, int64_t device) {
    const gpufl__model_gpu_t *g = gpufl__model_gpu_find(m, device);
    return g ? (size_t)(g - m->gpus) : SIZE_MAX;
}

static double kernel_ns(const gpufl__model_kernel_t *k) {
    return (double)(k->end_ns - k->start_ns);
}

/* Summed kernel time per device slot (calloc'd; NULL when out of memory). */
static double *device_kernel_ns(const gpufl__model_t *m) {
    double *ns = calloc(m->n_gpus ? m->n_gpus : 1, sizeof *ns);
    if (!ns) return NULL;
    for (size_t i = 0; i < m->n_kernels; i++) {
        size_t s = gpu_slot(m, m->kernels[i].device);
        if (s != SIZE_MAX) ns[s] += kernel_ns(&m->kernels[i]);
    }
    return ns;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

#define median_i64 gpufl__insight_median_i64

/* ---------------------------------------------------------------------- */
/* low_occupancy, register_limited                                          */
/* ---------------------------------------------------------------------- */

/* What the kernel rows of one launch configuration add up to. */
typedef struct cfg_use {
    double ns;
    uint64_t calls;
    int32_t device;
    const char *kernel; /* demangled name of its first kernel row */
    int by_launch;      /* from launch rows (no GPU time): weighted by launch count */
} cfg_use_t;

/* "Its N launches took T, S% of the kernel time on device D." or, from
 * launch rows, the share of the device's launches. */
static const char *use_sentence(char *buf, size_t size, const cfg_use_t *u, double share) {
    char d[32];
    if (u->by_launch)
        snprintf(buf, size,
                 "Its %llu launches are %.1f%% of the kernel launches on device %d (this engine "
                 "does not time kernels: weighted by launch count).",
                 (unsigned long long)u->calls, 100 * share, u->device);
    else
        snprintf(buf, size, "Its %llu launches took %s, %.1f%% of the kernel time on device %d.",
                 (unsigned long long)u->calls, gpufl__insight_duration(u->ns, d, sizeof d),
                 100 * share, u->device);
    return buf;
}

/* The evidence of a configuration's weight: its GPU time and share, or its
 * share of the launches. */
static void use_evidence(gpufl__insight_t *in, const cfg_use_t *u, double share) {
    if (u->by_launch) {
        gpufl__insight_evidence(in, "launch_share_pct", 100 * share, "%");
        return;
    }
    gpufl__insight_evidence(in, "kernel_ns", u->ns, "ns");
    gpufl__insight_evidence(in, "kernel_share_pct", 100 * share, "%");
}

/* Blocks per SM the register file allows for `regs` registers per thread
 * and `warps` warps per block (compute capability 7.0 and newer). */
static int64_t reg_blocks(int64_t regs, int64_t warps) {
    if (regs < MIN_REGS) regs = MIN_REGS;
    int64_t per_warp = (regs * WARP_SIZE + REG_UNIT - 1) / REG_UNIT * REG_UNIT;
    int64_t rounded = (warps + SUB_PARTITIONS - 1) / SUB_PARTITIONS * SUB_PARTITIONS;
    if (per_warp * rounded > REGS_PER_SM) return 0;
    return (REGS_PER_SM / SUB_PARTITIONS / per_warp) * SUB_PARTITIONS / warps;
}

static int64_t min_known(int64_t a, int64_t b) {
    if (a < 0) return b;
    if (b < 0) return a;
    return a < b ? a : b;
}

static int64_t smem_per_block(const gpufl__model_kernel_config_t *c) {
    int64_t s = c->static_smem_bytes > 0 ? c->static_smem_bytes : 0;
    return s + (c->dynamic_smem_bytes > 0 ? c->dynamic_smem_bytes : 0);
}

static int occupancy_advice(gpufl__insight_t *in, const gpufl__model_kernel_config_t *c,
                            int64_t warps) {
    char b[32];
    const char *lim = c->limiter;
    if (strcmp(lim, "registers") == 0)
        return gpufl__insight_text(
            &in->advice,
            "Registers limit it: %lld registers per thread leave room for %lld blocks of %lld "
            "threads per SM. Cap the registers with __launch_bounds__(%lld, minBlocksPerSM) or "
            "-maxrregcount, and keep fewer values live (smaller per-thread tiles, less unrolling, "
            "recompute cheap values instead of holding them); register_limited gives the count "
            "that reaches the next occupancy level. Watch for spills (register_spill) after the "
            "cut.",
            (long long)c->registers, (long long)c->limit_registers, (long long)c->block_threads,
            (long long)c->block_threads);
    if (strcmp(lim, "shared_memory") == 0)
        return gpufl__insight_text(
            &in->advice,
            "Shared memory limits it: %s per block (static and dynamic) leaves room for %lld "
            "blocks per SM. Use smaller tiles or fewer pipeline stages, ask for the largest "
            "shared memory carveout (cudaFuncAttributePreferredSharedMemoryCarveout) so the SM "
            "gives shared memory rather than L1, and size dynamic shared memory to what a block "
            "really uses.",
            fmt_bytes((double)smem_per_block(c), b, sizeof b), (long long)c->limit_smem);
    if (strcmp(lim, "warps") == 0)
        return gpufl__insight_text(
            &in->advice,
            "Warp slots limit it: blocks of %lld threads (%lld warps) fit %lld times in the SM's "
            "%lld warp slots. Choose a block size whose warp count divides %lld (128, 256 or 512 "
            "threads usually do), so that no warp slots are left over.",
            (long long)c->block_threads, (long long)warps, (long long)c->limit_warps,
            (long long)c->max_warps, (long long)c->max_warps);
    if (strcmp(lim, "blocks") == 0) {
        int64_t threads = c->limit_blocks > 0 && c->max_warps > 0
                              ? c->max_warps / c->limit_blocks * WARP_SIZE
                              : 4 * WARP_SIZE;
        return gpufl__insight_text(
            &in->advice,
            "The SM's limit of %lld resident blocks binds before its warp slots fill: blocks of "
            "%lld threads are too small. Use bigger blocks (at least %lld threads, so that %lld "
            "blocks fill the %lld warp slots), giving each block more of the work.",
            (long long)c->limit_blocks, (long long)c->block_threads, (long long)threads,
            (long long)c->limit_blocks, (long long)c->max_warps);
    }
    return gpufl__insight_text(
        &in->advice, "The log does not say which resource limits it (gpufl has no occupancy "
                     "breakdown for this GPU). Compare registers per thread and shared memory "
                     "per block with the SM's limits (Nsight Compute's occupancy section).");
}

static int add_low_occupancy(gpufl__insights_t *out, const gpufl__model_kernel_config_t *c,
                             const cfg_use_t *u, double share) {
    char b[32], use[256];
    int64_t warps = (c->block_threads + WARP_SIZE - 1) / WARP_SIZE;
    gpufl_severity_t sev = c->occupancy <= OCC_VERY_LOW && share >= SHARE_MAJOR
                               ? GPUFL_SEVERITY_MEDIUM
                               : GPUFL_SEVERITY_LOW;
    gpufl__insight_t *in = gpufl__insight_add(out, "low_occupancy", "OCCUPANCY", sev);
    if (!in) return GPUFL_ENOMEM;
    in->weight = u->by_launch ? (double)u->calls : u->ns;
    const char *lim = *c->limiter ? c->limiter : "an unknown resource";
    if (gpufl__insight_text(&in->kernel, "%s", u->kernel) ||
        gpufl__insight_text(&in->title, "%s: %.1f%% theoretical occupancy (limited by %s)",
                            u->kernel, 100 * c->occupancy, lim) ||
        gpufl__insight_text(
            &in->message,
            "Launched with blocks of %lld threads, %lld registers per thread and %s of shared "
            "memory per block, it keeps %lld blocks (%lld of %lld warps) on an SM: %.1f%% "
            "theoretical occupancy, limited by %s. %s Theoretical occupancy is what the launch "
            "allows, not what ran: kernels built on instruction-level parallelism (GEMM, "
            "attention) can run well this low, so check achieved throughput before trading tile "
            "size for occupancy.",
            (long long)c->block_threads, (long long)c->registers,
            fmt_bytes((double)smem_per_block(c), b, sizeof b), (long long)c->blocks_per_sm,
            (long long)c->active_warps, (long long)c->max_warps, 100 * c->occupancy, lim,
            use_sentence(use, sizeof use, u, share)) ||
        occupancy_advice(in, c, warps))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "occupancy_pct", 100 * c->occupancy, "%");
    gpufl__insight_evidence(in, "active_warps", (double)c->active_warps, "count");
    gpufl__insight_evidence(in, "max_warps", (double)c->max_warps, "count");
    gpufl__insight_evidence(in, "blocks_per_sm", (double)c->blocks_per_sm, "count");
    gpufl__insight_evidence(in, "block_threads", (double)c->block_threads, "count");
    gpufl__insight_evidence(in, "registers_per_thread", (double)c->registers, "count");
    gpufl__insight_evidence(in, "smem_per_block_bytes", (double)smem_per_block(c), "bytes");
    use_evidence(in, u, share);
    gpufl__insight_evidence(in, "launches", (double)u->calls, "count");
    return 0;
}

/* register_limited for one configuration; nothing when cutting registers
 * would not raise occupancy or the limits do not follow the 7.0+ rules. */
static int judge_registers(gpufl__insights_t *out, const gpufl__model_kernel_config_t *c,
                           const cfg_use_t *u, double share) {
    if (strcmp(c->limiter, "registers") != 0 || c->occupancy >= OCC_TARGET) return 0;
    if (c->registers <= 0 || c->block_threads <= 0 || c->max_warps <= 0 || c->limit_registers < 0 ||
        c->limit_warps < 0 || c->limit_smem < 0 || c->limit_blocks < 0)
        return 0;
    int64_t warps = (c->block_threads + WARP_SIZE - 1) / WARP_SIZE;
    if (reg_blocks(c->registers, warps) != c->limit_registers) return 0;
    int64_t next = c->limit_registers + 1;
    int64_t other = min_known(min_known(c->limit_warps, c->limit_smem), c->limit_blocks);
    if (other < next) return 0; /* another resource binds at the next level */
    int64_t regs = c->registers;
    while (regs > MIN_REGS && reg_blocks(regs, warps) < next) regs--;
    if (reg_blocks(regs, warps) < next) return 0;
    int64_t cut = c->registers - regs;
    double occ_next = (double)(next * warps) / (double)c->max_warps;
    if (occ_next > 1) occ_next = 1;

    char use[256];
    gpufl_severity_t sev =
        cut <= REG_CUT_EASY && share >= SHARE_MAJOR ? GPUFL_SEVERITY_MEDIUM : GPUFL_SEVERITY_LOW;
    gpufl__insight_t *in = gpufl__insight_add(out, "register_limited", "OCCUPANCY", sev);
    if (!in) return GPUFL_ENOMEM;
    in->weight = u->by_launch ? (double)u->calls : u->ns;
    if (gpufl__insight_text(&in->kernel, "%s", u->kernel) ||
        gpufl__insight_text(&in->title,
                            "%s: %lld registers per thread hold it to %.1f%% occupancy; %lld "
                            "would give %.1f%%",
                            u->kernel, (long long)c->registers, 100 * c->occupancy, (long long)regs,
                            100 * occ_next) ||
        gpufl__insight_text(
            &in->message,
            "Registers are the limiter: a warp of %lld registers per thread takes %lld registers "
            "(rounded up to units of %d) of the SM's %d, so %lld blocks of %lld threads fit "
            "(%.1f%% occupancy). At %lld registers per thread %lld blocks would fit, %.1f%% "
            "occupancy, and no other resource binds before that. %s",
            (long long)c->registers,
            (long long)((c->registers * WARP_SIZE + REG_UNIT - 1) / REG_UNIT * REG_UNIT), REG_UNIT,
            REGS_PER_SM, (long long)c->limit_registers, (long long)c->block_threads,
            100 * c->occupancy, (long long)regs, (long long)next, 100 * occ_next,
            use_sentence(use, sizeof use, u, share)) ||
        gpufl__insight_text(
            &in->advice,
            "Ask for %lld blocks per SM with __launch_bounds__(%lld, %lld) (or -maxrregcount=%lld "
            "for the whole file) and check with -Xptxas -v that it did not spill; if it spills, "
            "shorten live ranges first (smaller per-thread tiles, less unrolling). More "
            "occupancy pays when the kernel stalls on memory latency; a kernel already at its "
            "compute or bandwidth limit gains little.",
            (long long)next, (long long)c->block_threads, (long long)next, (long long)regs))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "registers_per_thread", (double)c->registers, "count");
    gpufl__insight_evidence(in, "registers_for_next_level", (double)regs, "count");
    gpufl__insight_evidence(in, "register_cut", (double)cut, "count");
    gpufl__insight_evidence(in, "occupancy_pct", 100 * c->occupancy, "%");
    gpufl__insight_evidence(in, "next_occupancy_pct", 100 * occ_next, "%");
    gpufl__insight_evidence(in, "blocks_per_sm", (double)c->limit_registers, "count");
    gpufl__insight_evidence(in, "next_blocks_per_sm", (double)next, "count");
    gpufl__insight_evidence(in, "block_threads", (double)c->block_threads, "count");
    use_evidence(in, u, share);
    return 0;
}

/* From launch rows (no kernel rows): launches per configuration, and the
 * device's launches in dev (per device slot; configs without a device
 * count under slot 0 when there is a single device). */
static void use_of_launches(const gpufl__model_t *m, cfg_use_t *use, double *dev) {
    for (size_t i = 0; i < m->n_launches; i++) {
        const gpufl__model_kernel_config_t *c = gpufl__model_launch_config(m, &m->launches[i]);
        if (!c) continue;
        cfg_use_t *u = &use[c - m->configs];
        if (!u->calls) {
            u->device = c->device >= 0
                            ? c->device
                            : (m->n_gpus == 1 ? (int32_t)m->gpus[0].device : GPUFL_MODEL_UNKNOWN);
            u->kernel = c->demangled;
            u->by_launch = 1;
        }
        u->calls++;
        size_t s = gpu_slot(m, u->device);
        if (s != SIZE_MAX) dev[s] += 1;
    }
}

static int rules_occupancy(const gpufl__model_t *m, gpufl__insights_t *out, const double *dev_ns) {
    int rc;
    if (m->n_kernels == 0 && (m->n_launches == 0 || m->n_configs == 0)) {
        if ((rc = skip_no_kernels(m, out, "low_occupancy"))) return rc;
        return skip_no_kernels(m, out, "register_limited");
    }
    if (m->n_configs == 0) {
        const char *why = "no kernel_config records: the log predates them";
        if ((rc = gpufl__insight_skip(out, "low_occupancy", "%s", why))) return rc;
        return gpufl__insight_skip(out, "register_limited", "%s", why);
    }
    cfg_use_t *use = calloc(m->n_configs, sizeof *use);
    double *dev_launches = calloc(m->n_gpus ? m->n_gpus : 1, sizeof *dev_launches);
    if (!use || !dev_launches) {
        free(use);
        free(dev_launches);
        return GPUFL_ENOMEM;
    }
    if (m->n_kernels == 0) {
        use_of_launches(m, use, dev_launches);
        dev_ns = dev_launches;
    }
    for (size_t i = 0; i < m->n_kernels; i++) {
        const gpufl__model_kernel_t *k = &m->kernels[i];
        const gpufl__model_kernel_config_t *c = gpufl__model_config_find(m, k->config);
        if (!c) continue;
        cfg_use_t *u = &use[c - m->configs];
        if (!u->calls) {
            u->device = k->device;
            u->kernel = k->demangled ? k->demangled : k->name;
        }
        u->calls++;
        u->ns += kernel_ns(k);
    }
    size_t joined = 0, known = 0;
    const char *why = NULL;
    rc = 0;
    for (size_t i = 0; i < m->n_configs && !rc; i++) {
        const gpufl__model_kernel_config_t *c = &m->configs[i];
        const cfg_use_t *u = &use[i];
        if (!u->calls) continue;
        joined++;
        if (c->occupancy < 0 || c->max_warps <= 0 || c->block_threads <= 0) {
            if (!why && *c->occupancy_why) why = c->occupancy_why;
            continue;
        }
        known++;
        size_t s = gpu_slot(m, u->device);
        double weight = u->by_launch ? (double)u->calls : u->ns;
        double share = s != SIZE_MAX && dev_ns[s] > 0 ? weight / dev_ns[s] : 0;
        if (share < SHARE_MIN) continue;
        if (c->occupancy < OCC_LOW) rc = add_low_occupancy(out, c, u, share);
        if (!rc) rc = judge_registers(out, c, u, share);
    }
    free(use);
    free(dev_launches);
    if (rc || known) return rc;
    char reason[512];
    if (!joined)
        snprintf(reason, sizeof reason, "no %s row names a kernel_config record",
                 m->n_kernels ? "kernel" : "launch");
    else
        snprintf(reason, sizeof reason, "no launch configuration has a theoretical occupancy%s%s",
                 why ? ": " : "", why ? why : "");
    if ((rc = gpufl__insight_skip(out, "low_occupancy", "%s", reason))) return rc;
    return gpufl__insight_skip(out, "register_limited", "%s", reason);
}

/* ---------------------------------------------------------------------- */
/* register_spill                                                           */
/* ---------------------------------------------------------------------- */

/* A kernel row under a sort key: rows sorted by device, key, log order.
 * The keys are copied so that sorting needs no global context. */
typedef struct kref {
    int64_t device, key;
    size_t index;
} kref_t;

static int cmp_kref(const void *a, const void *b) {
    const kref_t *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int add_spill(gpufl__insights_t *out, const gpufl__model_kernel_t *k, int64_t local,
                     int32_t regs, uint64_t calls, double ns, double share) {
    char d[32], b[32];
    gpufl_severity_t sev = share >= SHARE_MAJOR ? GPUFL_SEVERITY_MEDIUM : GPUFL_SEVERITY_LOW;
    gpufl__insight_t *in = gpufl__insight_add(out, "register_spill", "MEMORY", sev);
    if (!in) return GPUFL_ENOMEM;
    in->weight = ns;
    fmt_bytes((double)local, b, sizeof b);
    if (gpufl__insight_text(&in->kernel, "%s", k->demangled) ||
        gpufl__insight_text(&in->title,
                            "%s: %s of local memory per thread (spills or local arrays)",
                            k->demangled, b) ||
        gpufl__insight_text(
            &in->message,
            "It uses %s of local memory per thread with %d registers per thread; its %llu "
            "launches took %s, %.1f%% of the kernel time on device %d. Local memory lives in "
            "device memory behind L1: each access costs far more than a register. CUPTI's local "
            "memory size counts register spills and per-thread arrays or stack frames alike (an "
            "array indexed at run time, a large struct, a call not inlined); the SASS metrics "
            "engine will tell them apart.%s",
            b, regs, (unsigned long long)calls, gpufl__insight_duration(ns, d, sizeof d),
            100 * share, k->device,
            regs >= 255 ? " At 255 registers per thread, the ceiling, spills are likely." : "") ||
        gpufl__insight_text(
            &in->advice,
            "Compile with -Xptxas -v (or nvcc --resource-usage) to see its spill stores and "
            "loads. For spills: allow more registers (a looser __launch_bounds__ or "
            "-maxrregcount), keep fewer values live, unroll less. For local arrays: index them "
            "with compile-time constants (fully unrolled loops) so they stay in registers, or "
            "move them to shared memory."))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "local_bytes_per_thread", (double)local, "bytes");
    gpufl__insight_evidence(in, "registers_per_thread", (double)regs, "count");
    gpufl__insight_evidence(in, "kernel_ns", ns, "ns");
    gpufl__insight_evidence(in, "kernel_share_pct", 100 * share, "%");
    gpufl__insight_evidence(in, "launches", (double)calls, "count");
    return 0;
}

static int rule_spill(const gpufl__model_t *m, gpufl__insights_t *out, const double *dev_ns) {
    if (m->n_kernels == 0) return skip_no_kernels(m, out, "register_spill");
    size_t n = 0, known = 0;
    for (size_t i = 0; i < m->n_kernels; i++) {
        if (m->kernels[i].local_bytes_per_thread >= 0) known++;
        if (m->kernels[i].local_bytes_per_thread > 0) n++;
    }
    if (!known)
        return gpufl__insight_skip(out, "register_spill",
                                   "kernel rows carry no local_bytes_per_thread: the log "
                                   "predates the column");
    if (!n) return 0;
    kref_t *idx = malloc(n * sizeof *idx);
    if (!idx) return GPUFL_ENOMEM;
    n = 0;
    for (size_t i = 0; i < m->n_kernels; i++)
        if (m->kernels[i].local_bytes_per_thread > 0)
            idx[n++] = (kref_t){m->kernels[i].device, m->kernels[i].name_id, i};
    gpufl__insight_sort(idx, n, sizeof *idx, cmp_kref);
    int rc = 0;
    for (size_t a = 0, b; a < n && !rc; a = b) {
        const gpufl__model_kernel_t *k = &m->kernels[idx[a].index];
        double ns = 0;
        int64_t local = 0;
        int32_t regs = 0;
        for (b = a; b < n; b++) {
            const gpufl__model_kernel_t *x = &m->kernels[idx[b].index];
            if (x->device != k->device || x->name_id != k->name_id) break;
            ns += kernel_ns(x);
            if (x->local_bytes_per_thread > local) local = x->local_bytes_per_thread;
            if (x->registers > regs) regs = x->registers;
        }
        size_t s = gpu_slot(m, k->device);
        double share = s != SIZE_MAX && dev_ns[s] > 0 ? ns / dev_ns[s] : 0;
        if (share >= SHARE_MIN) rc = add_spill(out, k, local, regs, (uint64_t)(b - a), ns, share);
    }
    free(idx);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* launch_bound                                                             */
/* ---------------------------------------------------------------------- */

/* What the launch calls of a device's kernels say (launch_ns known). */
typedef struct launch_view {
    size_t n;           /* kernels with a launch time */
    double rate_per_s;  /* launch calls per second */
    double interval_ns; /* median host time between consecutive launch calls */
    double to_start_ns; /* median time from the launch call to the kernel's start */
} launch_view_t;

static void launch_figures(const gpufl__model_t *m, const kref_t *idx, size_t n, int64_t *scratch,
                           launch_view_t *lv) {
    memset(lv, 0, sizeof *lv);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (m->kernels[idx[i].index].launch_ns >= 0)
            scratch[k++] = m->kernels[idx[i].index].launch_ns;
    lv->n = k;
    if (k < 2) return;
    gpufl__insight_sort(scratch, k, sizeof *scratch, cmp_i64);
    if (scratch[k - 1] > scratch[0])
        lv->rate_per_s = (double)(k - 1) * 1e9 / (double)(scratch[k - 1] - scratch[0]);
    for (size_t i = 0; i + 1 < k; i++) scratch[i] = scratch[i + 1] - scratch[i];
    lv->interval_ns = median_i64(scratch, k - 1);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        const gpufl__model_kernel_t *x = &m->kernels[idx[i].index];
        if (x->launch_ns >= 0 && x->start_ns >= x->launch_ns)
            scratch[j++] = x->start_ns - x->launch_ns;
    }
    lv->to_start_ns = median_i64(scratch, j);
}

static int add_launch_bound(const gpufl__model_t *m, gpufl__insights_t *out, int32_t device,
                            size_t n, size_t n_short, double median_ns, double span_ns,
                            double busy_ns, double gap_ns, const launch_view_t *lv) {
    char d1[32], d2[32], d3[32], d4[32], d5[32];
    double busy = busy_ns / span_ns, idle_ns = span_ns - busy_ns;
    double session_ns = gpufl__insight_session_ns(m);
    gpufl_severity_t sev =
        busy < LAUNCH_BUSY_HIGH && session_ns > 0 && idle_ns >= LAUNCH_IDLE_HIGH * session_ns
            ? GPUFL_SEVERITY_HIGH
            : GPUFL_SEVERITY_MEDIUM;
    gpufl__insight_t *in = gpufl__insight_add(out, "launch_bound", "LAUNCH", sev);
    if (!in) return GPUFL_ENOMEM;
    in->weight = idle_ns;
    char host[400] = "";
    if (lv->n >= 2)
        snprintf(host, sizeof host,
                 " The host made %.0f launch calls per second, a median %s apart, and a kernel "
                 "started a median %s after its launch call: the GPU was waiting for the CPU.",
                 lv->rate_per_s, gpufl__insight_duration(lv->interval_ns, d4, sizeof d4),
                 gpufl__insight_duration(lv->to_start_ns, d5, sizeof d5));
    if (gpufl__insight_text(&in->title,
                            "Launch-bound: %zu short kernels keep device %d busy only %.1f%% of "
                            "the time",
                            n, device, 100 * busy) ||
        gpufl__insight_text(
            &in->message,
            "Device %d ran %zu kernels over %s; %.0f%% of them were shorter than 5us (median "
            "%s), and kernels ran only %.1f%% of that span: the median gap between them was %s, "
            "%s idle in all. Each kernel costs the CPU a launch call of a few microseconds, "
            "longer than the kernel itself.%s",
            device, n, gpufl__insight_duration(span_ns, d1, sizeof d1),
            100.0 * (double)n_short / (double)n, gpufl__insight_duration(median_ns, d2, sizeof d2),
            100 * busy, gpufl__insight_duration(gap_ns, d3, sizeof d3),
            gpufl__insight_duration(idle_ns, d4, sizeof d4), host) ||
        gpufl__insight_text(
            &in->advice,
            "Launch fewer, bigger kernels: capture the repeated sequence in a CUDA graph (stream "
            "capture; torch.cuda.CUDAGraph or torch.compile(mode=\"reduce-overhead\") in "
            "PyTorch) so it launches in one call, fuse chains of small kernels (elementwise "
            "ops, torch.compile, a hand-fused kernel), and give each kernel more work with "
            "larger batches."))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "kernels", (double)n, "count");
    gpufl__insight_evidence(in, "short_kernels_pct", 100.0 * (double)n_short / (double)n, "%");
    gpufl__insight_evidence(in, "median_kernel_ns", median_ns, "ns");
    gpufl__insight_evidence(in, "busy_pct", 100 * busy, "%");
    gpufl__insight_evidence(in, "span_ns", span_ns, "ns");
    gpufl__insight_evidence(in, "idle_ns", idle_ns, "ns");
    gpufl__insight_evidence(in, "median_gap_ns", gap_ns, "ns");
    if (lv->n >= 2) {
        gpufl__insight_evidence(in, "launch_rate_per_s", lv->rate_per_s, "1/s");
        gpufl__insight_evidence(in, "median_launch_interval_ns", lv->interval_ns, "ns");
        gpufl__insight_evidence(in, "median_launch_to_start_ns", lv->to_start_ns, "ns");
    }
    return 0;
}

/* Judges the kernels of one device, idx[0..n) sorted by start. */
static int judge_launches(const gpufl__model_t *m, gpufl__insights_t *out, const kref_t *idx,
                          size_t n, int64_t *scratch, gpufl__spans_t *sp) {
    if (n < LAUNCH_MIN_KERNELS) return 0;
    size_t n_short = 0;
    sp->n = 0;
    for (size_t i = 0; i < n; i++) {
        const gpufl__model_kernel_t *k = &m->kernels[idx[i].index];
        scratch[i] = k->end_ns - k->start_ns;
        if (scratch[i] < LAUNCH_SHORT_NS) n_short++;
        if (gpufl__spans_add(sp, k->start_ns, k->end_ns)) return GPUFL_ENOMEM;
    }
    if ((double)n_short <= LAUNCH_SHORT_SHARE * (double)n) return 0;
    double median_ns = median_i64(scratch, n);
    double busy_ns = gpufl__spans_merge(sp);
    double span_ns = (double)(sp->v[sp->n - 1].end_ns - sp->v[0].start_ns);
    if (span_ns <= 0 || busy_ns >= LAUNCH_BUSY_MAX * span_ns) return 0;
    for (size_t i = 0; i + 1 < sp->n; i++) scratch[i] = sp->v[i + 1].start_ns - sp->v[i].end_ns;
    double gap_ns = median_i64(scratch, sp->n - 1);
    if (gap_ns >= LAUNCH_GAP_MAX_NS) return 0; /* host work between kernels: gpu_idle's matter */
    launch_view_t lv;
    launch_figures(m, idx, n, scratch, &lv);
    return add_launch_bound(m, out, m->kernels[idx[0].index].device, n, n_short, median_ns, span_ns,
                            busy_ns, gap_ns, &lv);
}

static int rule_launch(const gpufl__model_t *m, gpufl__insights_t *out) {
    if (m->n_kernels == 0) return skip_no_kernels(m, out, "launch_bound");
    size_t n = m->n_kernels;
    kref_t *idx = malloc(n * sizeof *idx);
    int64_t *scratch = malloc(n * sizeof *scratch);
    gpufl__spans_t sp = {0};
    int rc = 0;
    if (!idx || !scratch) {
        rc = GPUFL_ENOMEM;
        goto free_arrays;
    }
    for (size_t i = 0; i < n; i++)
        idx[i] = (kref_t){m->kernels[i].device, m->kernels[i].start_ns, i};
    gpufl__insight_sort(idx, n, sizeof *idx, cmp_kref);
    for (size_t a = 0, b; a < n && !rc; a = b) {
        for (b = a; b < n && idx[b].device == idx[a].device; b++) {
        }
        rc = judge_launches(m, out, idx + a, b - a, scratch, &sp);
    }
free_arrays:
    free(sp.v);
    free(scratch);
    free(idx);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* memcpy_bound, pageable_memcpy                                            */
/* ---------------------------------------------------------------------- */

/* GPU work of one device as span lists, and its copies by direction. */
typedef struct dev_work {
    gpufl__spans_t kernels, copies, all;
    double bytes[3], ns[3]; /* by direction: 0 HtoD, 1 DtoH, 2 other */
    uint64_t n_copies;
    uint64_t pageable_n;
    double pageable_bytes, pageable_ns;
} dev_work_t;

static int copy_dir(int32_t kind) {
    return kind == GPUFL_MODEL_COPY_HTOD ? 0 : kind == GPUFL_MODEL_COPY_DTOH ? 1 : 2;
}

/* Is copy c between pageable host memory and the device? pinned: the
 * same with pinned host memory. */
static int is_pageable(const gpufl__model_copy_t *c) {
    return (c->copy_kind == GPUFL_MODEL_COPY_HTOD && c->src_kind == GPUFL_MODEL_MEM_PAGEABLE) ||
           (c->copy_kind == GPUFL_MODEL_COPY_DTOH && c->dst_kind == GPUFL_MODEL_MEM_PAGEABLE);
}

static int is_pinned(const gpufl__model_copy_t *c) {
    return (c->copy_kind == GPUFL_MODEL_COPY_HTOD && c->src_kind == GPUFL_MODEL_MEM_PINNED) ||
           (c->copy_kind == GPUFL_MODEL_COPY_DTOH && c->dst_kind == GPUFL_MODEL_MEM_PINNED);
}

static int collect_work(const gpufl__model_t *m, dev_work_t *w) {
    for (size_t i = 0; i < m->n_kernels; i++) {
        const gpufl__model_kernel_t *k = &m->kernels[i];
        size_t s = gpu_slot(m, k->device);
        if (s == SIZE_MAX) continue;
        if (gpufl__spans_add(&w[s].kernels, k->start_ns, k->end_ns) ||
            gpufl__spans_add(&w[s].all, k->start_ns, k->end_ns))
            return GPUFL_ENOMEM;
    }
    for (size_t i = 0; i < m->n_copies; i++) {
        const gpufl__model_copy_t *c = &m->copies[i];
        size_t s = gpu_slot(m, c->device);
        if (s == SIZE_MAX) continue;
        dev_work_t *d = &w[s];
        double ns = (double)(c->end_ns - c->start_ns), bytes = c->bytes > 0 ? (double)c->bytes : 0;
        d->n_copies++;
        d->bytes[copy_dir(c->copy_kind)] += bytes;
        d->ns[copy_dir(c->copy_kind)] += ns;
        if (is_pageable(c)) {
            d->pageable_n++;
            d->pageable_bytes += bytes;
            d->pageable_ns += ns;
        }
        if (gpufl__spans_add(&d->copies, c->start_ns, c->end_ns) ||
            gpufl__spans_add(&d->all, c->start_ns, c->end_ns))
            return GPUFL_ENOMEM;
    }
    for (size_t i = 0; i < m->n_memsets; i++) {
        const gpufl__model_memset_t *s = &m->memsets[i];
        size_t slot = gpu_slot(m, s->device);
        if (slot != SIZE_MAX && gpufl__spans_add(&w[slot].all, s->start_ns, s->end_ns))
            return GPUFL_ENOMEM;
    }
    return 0;
}

static int add_memcpy_bound(gpufl__insights_t *out, int64_t device, const dev_work_t *d,
                            double copy_ns, double kernel_ns_busy, double exposed, double share) {
    char t1[32], t2[32], t3[32], b0[32], b1[32], b2[32];
    gpufl_severity_t sev = share >= COPY_SHARE_HIGH ? GPUFL_SEVERITY_HIGH : GPUFL_SEVERITY_MEDIUM;
    gpufl__insight_t *in = gpufl__insight_add(out, "memcpy_bound", "MEMORY", sev);
    if (!in) return GPUFL_ENOMEM;
    in->weight = exposed;
    if (gpufl__insight_text(&in->title,
                            "Transfers: device %lld spent %.1f%% of its busy time only copying",
                            (long long)device, 100 * share) ||
        gpufl__insight_text(
            &in->message,
            "%llu copies kept device %lld's copy engines busy %s, %s of it with no kernel "
            "running: %.1f%% of the time the device did any work it was only moving data "
            "(kernels ran %s). Host to device %s, device to host %s, other %s.",
            (unsigned long long)d->n_copies, (long long)device,
            gpufl__insight_duration(copy_ns, t1, sizeof t1),
            gpufl__insight_duration(exposed, t2, sizeof t2), 100 * share,
            gpufl__insight_duration(kernel_ns_busy, t3, sizeof t3),
            fmt_bytes(d->bytes[0], b0, sizeof b0), fmt_bytes(d->bytes[1], b1, sizeof b1),
            fmt_bytes(d->bytes[2], b2, sizeof b2)) ||
        gpufl__insight_text(
            &in->advice,
            "Keep data on the device between steps (copy once, reuse), overlap the transfers "
            "that remain with compute (cudaMemcpyAsync from pinned memory on a stream other than "
            "the compute stream, double-buffered), and batch many small copies into fewer large "
            "ones."))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "copy_ns", copy_ns, "ns");
    gpufl__insight_evidence(in, "exposed_copy_ns", exposed, "ns");
    gpufl__insight_evidence(in, "kernel_ns", kernel_ns_busy, "ns");
    gpufl__insight_evidence(in, "exposed_copy_pct", 100 * share, "%");
    gpufl__insight_evidence(in, "copies", (double)d->n_copies, "count");
    gpufl__insight_evidence(in, "htod_bytes", d->bytes[0], "bytes");
    gpufl__insight_evidence(in, "dtoh_bytes", d->bytes[1], "bytes");
    gpufl__insight_evidence(in, "other_copy_bytes", d->bytes[2], "bytes");
    return 0;
}

/* busy: the device's busy time, or with kernels untimed (launch rows) the
 * session's length (of_session), as the share's denominator. */
static int add_pageable(gpufl__insights_t *out, int64_t device, const dev_work_t *d, double busy,
                        int of_session, double pinned_bps) {
    char t1[32], b1[32], extra[160] = "";
    double share = busy > 0 ? d->pageable_ns / busy : 0;
    double bps = d->pageable_ns > 0 ? d->pageable_bytes * 1e9 / d->pageable_ns : 0;
    gpufl_severity_t sev =
        share >= PAGEABLE_SHARE_MEDIUM ? GPUFL_SEVERITY_MEDIUM : GPUFL_SEVERITY_LOW;
    gpufl__insight_t *in = gpufl__insight_add(out, "pageable_memcpy", "MEMORY", sev);
    if (!in) return GPUFL_ENOMEM;
    in->weight = d->pageable_ns;
    if (pinned_bps > 0)
        snprintf(extra, sizeof extra,
                 "; copies from pinned memory in this session reached %.1f GB/s", pinned_bps / 1e9);
    if (gpufl__insight_text(&in->title,
                            "Pageable memory: %llu host-device copies on device %lld took %s at "
                            "%.1f GB/s",
                            (unsigned long long)d->pageable_n, (long long)device,
                            gpufl__insight_duration(d->pageable_ns, t1, sizeof t1), bps / 1e9) ||
        gpufl__insight_text(
            &in->message,
            "%llu copies between pageable host memory and device %lld moved %s in %s, %.1f GB/s "
            "(%.1f%% of %s)%s. The driver stages a pageable copy through a "
            "pinned buffer of its own: it runs at a fraction of the link's speed, blocks the "
            "calling thread, and cannot overlap kernels even through cudaMemcpyAsync.",
            (unsigned long long)d->pageable_n, (long long)device,
            fmt_bytes(d->pageable_bytes, b1, sizeof b1),
            gpufl__insight_duration(d->pageable_ns, t1, sizeof t1), bps / 1e9, 100 * share,
            of_session ? "the session: its kernels were not timed" : "the device's busy time",
            extra) ||
        gpufl__insight_text(
            &in->advice,
            "Allocate the host buffers pinned (cudaMallocHost or cudaHostAlloc; cudaHostRegister "
            "for memory you already have; pin_memory=True in a PyTorch DataLoader), then copy "
            "with cudaMemcpyAsync on a non-default stream so transfers overlap kernels, and send "
            "fewer, larger transfers."))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "pageable_copies", (double)d->pageable_n, "count");
    gpufl__insight_evidence(in, "pageable_bytes", d->pageable_bytes, "bytes");
    gpufl__insight_evidence(in, "pageable_ns", d->pageable_ns, "ns");
    gpufl__insight_evidence(in, "pageable_bytes_per_s", bps, "B/s");
    gpufl__insight_evidence(in, of_session ? "session_share_pct" : "busy_share_pct", 100 * share,
                            "%");
    if (pinned_bps > 0) gpufl__insight_evidence(in, "pinned_bytes_per_s", pinned_bps, "B/s");
    return 0;
}

static int rules_copies(const gpufl__model_t *m, gpufl__insights_t *out) {
    int rc;
    /* Kernels as launch rows (PcSampling, Deep): copies cannot be set
     * against the kernels' time, but pageable copies are still a finding,
     * their share taken of the session. */
    int untimed = m->n_kernels == 0 && m->n_launches;
    if (untimed && (rc = skip_untimed(out, "memcpy_bound"))) return rc;
    if (untimed && m->n_copies == 0) return skip_untimed(out, "pageable_memcpy");
    if (m->n_kernels == 0 && m->n_copies == 0 && m->n_memsets == 0) {
        const char *why = feature_off_why(m, "cupti_trace");
        const char *rules[] = {"memcpy_bound", "pageable_memcpy"};
        for (size_t i = 0; i < 2; i++)
            if ((rc = gpufl__insight_skip(out, rules[i],
                                          "no kernel or copy rows: the Trace engine did not "
                                          "run%s%s%s",
                                          why ? " (" : "", why ? why : "", why ? ")" : "")))
                return rc;
        return 0;
    }
    if (m->n_copies == 0) return 0; /* judged: nothing was copied */
    dev_work_t *w = calloc(m->n_gpus ? m->n_gpus : 1, sizeof *w);
    if (!w) return GPUFL_ENOMEM;
    double pinned_bytes = 0, pinned_ns = 0;
    for (size_t i = 0; i < m->n_copies; i++)
        if (is_pinned(&m->copies[i])) {
            pinned_bytes += m->copies[i].bytes > 0 ? (double)m->copies[i].bytes : 0;
            pinned_ns += (double)(m->copies[i].end_ns - m->copies[i].start_ns);
        }
    double pinned_bps = pinned_ns > 0 ? pinned_bytes * 1e9 / pinned_ns : 0;
    rc = collect_work(m, w);
    for (size_t s = 0; s < m->n_gpus && !rc; s++) {
        dev_work_t *d = &w[s];
        if (!d->n_copies) continue;
        double copy_ns = gpufl__spans_merge(&d->copies);
        double k_ns = gpufl__spans_merge(&d->kernels);
        double busy = gpufl__spans_merge(&d->all);
        double exposed = copy_ns - gpufl__spans_overlap(&d->copies, &d->kernels);
        double both = copy_ns + k_ns - (copy_ns - exposed);
        double share = both > 0 ? exposed / both : 0;
        if (!untimed && exposed >= COPY_EXPOSED_MIN_NS && share >= COPY_SHARE_MEDIUM)
            rc = add_memcpy_bound(out, m->gpus[s].device, d, copy_ns, k_ns, exposed, share);
        if (untimed) busy = gpufl__insight_session_ns(m);
        if (!rc && d->pageable_n && d->pageable_ns >= PAGEABLE_MIN_NS)
            rc = add_pageable(out, m->gpus[s].device, d, busy, untimed, pinned_bps);
    }
    for (size_t s = 0; s < m->n_gpus; s++) {
        free(w[s].kernels.v);
        free(w[s].copies.v);
        free(w[s].all.v);
    }
    free(w);
    return rc;
}

int gpufl__rules_kernel(gpufl__insights_t *out, const gpufl__model_t *m) {
    double *dev_ns = device_kernel_ns(m);
    if (!dev_ns) return GPUFL_ENOMEM;
    int rc = rule_launch(m, out);
    if (!rc) rc = rules_occupancy(m, out, dev_ns);
    if (!rc) rc = rule_spill(m, out, dev_ns);
    if (!rc) rc = rules_copies(m, out);
    free(dev_ns);
    return rc;
}
