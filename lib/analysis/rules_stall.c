// SPDX-License-Identifier: Apache-2.0
/*
 * rules_stall.c - the insight from PC samples: dominant_stall, a kernel
 * whose warps spend most of their sampled time stalled for one reason
 * (thresholds and reasons in docs/insights.md, "STALL: dominant_stall").
 *
 * The samples are counted per kernel function straight from the pc_sample
 * rows (which name the function), so the rule does not depend on the
 * by-time attribution to launches and scopes. The advice depends on the
 * reason; its meaning follows Nsight Compute's warp scheduler states.
 */
#include "analysis/insight_rules.h"
#include "analysis/pc_profile.h"

#include <gpufl/gpufl.h>

#include <string.h>

#define MIN_SAMPLES       1000 /* a kernel's samples before its shares mean anything */
#define MIN_SESSION_SHARE 0.01 /* of all samples: smaller kernels cannot matter much */
#define SHARE_MEDIUM      0.40 /* one reason holds this much of the kernel's samples */
#define SHARE_HIGH        0.60

typedef struct stall_advice {
    const char *reason; /* short name */
    const char *meaning;
    const char *advice;
} stall_advice_t;

static const stall_advice_t advices[] = {
    {"long_scoreboard",
     "waiting for the result of a global, local, surface or texture memory access (L1TEX)",
     "Make its global memory accesses coalesced (neighbouring threads read neighbouring "
     "addresses) and reuse data through shared memory or registers; keep local memory (spills, "
     "indexed arrays) out of the hot loop; hide the latency with more independent loads in "
     "flight per thread (unrolling, prefetching) or more resident warps."},
    {"math_pipe_throttle", "waiting for a busy math pipeline: the kernel is compute bound there",
     "Do less arithmetic or cheaper arithmetic: lower precision (FP16/BF16), tensor cores for "
     "matrix work (cuBLAS, CUTLASS, WMMA/MMA), fewer instructions per result (hoist invariants, "
     "fast-math intrinsics where accuracy allows), or balance work across pipelines."},
    {"wait", "waiting out a fixed-latency dependency between instructions",
     "Give each warp more independent work between dependent instructions (unrolling, "
     "interleaving independent computations) and raise occupancy so other warps can issue."},
    {"barrier", "waiting at a block-wide barrier (__syncthreads) for the other warps of its block",
     "Balance the work between the warps of a block so they reach the barrier together, remove "
     "barriers that are not needed, use smaller blocks, or warp-level primitives (__shfl_sync, "
     "cooperative groups tiles) instead of block-wide synchronization."},
    {"membar", "waiting at a memory barrier (__threadfence) or on memory ordering",
     "Use fewer memory fences and fences of the narrowest scope that is correct "
     "(__threadfence_block rather than __threadfence or system scope); batch the writes a "
     "fence orders."},
    {"mio_throttle",
     "waiting because the memory input/output queue is full: shared memory, special math or "
     "dynamic branches",
     "Reduce shared memory pressure: fix bank conflicts (padding, swizzling), use wider shared "
     "accesses with fewer instructions, and fewer special-function operations (transcendentals) "
     "per result."},
    {"short_scoreboard", "waiting for a shared memory or special-function-unit result",
     "Look for shared memory bank conflicts (padding, swizzled layouts) and heavy use of "
     "transcendental functions (__sinf and friends are cheaper than sinf); interleave other "
     "work between the access and the use of its result."},
    {"lg_throttle", "waiting because the local/global memory instruction queue is full",
     "Issue fewer, wider memory instructions: vectorised loads and stores (float4, int4), "
     "fewer accesses to local memory (spills), and data reuse through registers or shared "
     "memory."},
    {"tex_throttle", "waiting because the texture unit queue is full",
     "Issue fewer texture or surface fetches (reuse fetched values), or move part of the "
     "accesses to plain global loads."},
    {"imc_miss", "waiting for a constant cache miss",
     "Keep constant memory accesses uniform across a warp and its working set small; values "
     "that differ per thread belong in global memory through the read-only path."},
    {"no_instructions",
     "without an instruction to issue: instruction cache misses or a kernel too short to warm up",
     "For a large kernel: less unrolling or inlining to shrink the hot code; for tiny kernels: "
     "fuse them or give each more work, so start-up stops dominating."},
    {"branch_resolving", "waiting for a branch target to be computed",
     "Make branches uniform across a warp, or replace small branches with predication or "
     "arithmetic selects; fewer jumps in the hot loop."},
    {"dispatch_stall", "selected but held back by the dispatcher",
     "Usually rare: look for register bank conflicts or pipeline contention; a newer compiler "
     "or different instruction mix can help."},
    {"drain", "waiting at exit for its memory stores to drain",
     "Normal at the end of a kernel; if large, the kernel is short-lived or ends with many "
     "stores: give each thread more work before it exits."},
    {"sleeping", "sleeping (__nanosleep) or yielded",
     "Check spin-wait loops with __nanosleep and the back-off they use."},
    {"not_selected", "eligible but another warp was chosen",
     "Not a problem: there are more eligible warps than the scheduler can issue, so latency is "
     "hidden; the kernel is bound by issue bandwidth, and only fewer instructions make it "
     "faster."},
    {"misc", "stalled for a reason CUPTI does not name", "Look at Nsight Compute's source view."},
};

static const stall_advice_t *advice_of(const char *reason) {
    for (size_t i = 0; i < sizeof advices / sizeof advices[0]; i++)
        if (strcmp(advices[i].reason, reason) == 0) return &advices[i];
    return NULL;
}

static int add_stall(const gpufl__model_t *m, const gpufl__pc_profile_t *p, size_t fn, size_t r,
                     gpufl__insights_t *out) {
    const gpufl__pc_function_t *f = &p->functions[fn];
    const gpufl__model_pc_reason_t *reason = &m->pc_reasons[r];
    double share = f->by_reason[r] / f->samples;
    gpufl_severity_t sev = share >= SHARE_HIGH ? GPUFL_SEVERITY_HIGH : GPUFL_SEVERITY_MEDIUM;
    gpufl__insight_t *in = gpufl__insight_add(out, "dominant_stall", "STALL", sev);
    if (!in) return GPUFL_ENOMEM;
    in->weight = f->by_reason[r];
    const stall_advice_t *a = advice_of(reason->short_name);
    const gpufl__pc_line_t *line = gpufl__pc_hottest_line(p, fn, (uint32_t)r);
    double issued = 0;
    for (size_t i = 0; i < m->n_pc_reasons; i++)
        if (m->pc_reasons[i].issued) issued += f->by_reason[i];
    char where[600] = "";
    if (line && line->file)
        snprintf(where, sizeof where,
                 " The line with the most %s samples is %s:%d (%.0f of them, %.1f%% of the line's "
                 "samples).",
                 reason->short_name, line->file, line->line, line->by_reason[r],
                 100 * line->by_reason[r] / line->samples);
    else if (line)
        snprintf(where, sizeof where, " The instruction with the most %s samples is at +0x%x (%s).",
                 reason->short_name, line->pc,
                 gpufl__model_sass_find(m, 0, f->function)
                     ? "no line info: build with -lineinfo to see the source line"
                     : "no sass record for the function");
    if (gpufl__insight_text(&in->kernel, "%s", f->name) ||
        gpufl__insight_text(&in->title, "%s: %.0f%% of its samples stalled on %s", f->name,
                            100 * share, reason->short_name) ||
        gpufl__insight_text(&in->message,
                            "%.0f of its %.0f PC samples (%.1f%%) found a warp %s (%s). %.1f%% of "
                            "its samples issued an instruction (selected). The kernel holds "
                            "%.1f%% of the session's samples.%s",
                            f->by_reason[r], f->samples, 100 * share,
                            a ? a->meaning : "stalled on this reason", reason->name,
                            100 * issued / f->samples, 100 * f->samples / p->samples, where) ||
        gpufl__insight_text(&in->advice, "%s",
                            a ? a->advice
                              : "See Nsight Compute's description of this warp stall reason."))
        return GPUFL_ENOMEM;
    if (line && line->file) {
        if (gpufl__insight_text(&in->file, "%s", line->file) ||
            gpufl__insight_text(&in->function, "%s", f->name))
            return GPUFL_ENOMEM;
        in->line = line->line;
    }
    gpufl__insight_evidence(in, "samples", f->samples, "count");
    gpufl__insight_evidence(in, "reason_samples", f->by_reason[r], "count");
    gpufl__insight_evidence(in, "reason_pct", 100 * share, "%");
    gpufl__insight_evidence(in, "issued_pct", 100 * issued / f->samples, "%");
    gpufl__insight_evidence(in, "session_share_pct", 100 * f->samples / p->samples, "%");
    if (line) gpufl__insight_evidence(in, "line_reason_samples", line->by_reason[r], "count");
    return 0;
}

int gpufl__rules_stall(gpufl__insights_t *out, const gpufl__model_t *m) {
    if (!m->n_pc_samples) {
        const char *err = NULL;
        for (size_t i = 0; i < m->n_pc_contexts && !err; i++)
            if (*m->pc_contexts[i].error) err = m->pc_contexts[i].error;
        if (err)
            return gpufl__insight_skip(out, "dominant_stall",
                                       "no pc_sample rows: PC sampling could not start (%s)", err);
        return gpufl__insight_skip(out, "dominant_stall",
                                   "no pc_sample rows: PC sampling did not run (engines "
                                   "PcSampling and Deep sample PCs)");
    }
    if (gpufl__model_sass_counted(m))
        return gpufl__insight_skip(out, "dominant_stall",
                                   "the PC samples are of SASS-instrumented kernels (engine Deep): "
                                   "their stall mix is the instrumentation's, not the program's; "
                                   "take stall reasons from a PcSampling run");
    gpufl__pc_profile_t p;
    int rc = gpufl__pc_profile_build(m, &p);
    for (size_t i = 0; !rc && i < p.n_functions; i++) {
        const gpufl__pc_function_t *f = &p.functions[i];
        if (f->samples < MIN_SAMPLES || f->samples < MIN_SESSION_SHARE * p.samples) continue;
        long r = gpufl__pc_top_reason(m, f->by_reason, 1);
        if (r < 0 || f->by_reason[r] < SHARE_MEDIUM * f->samples) continue;
        rc = add_stall(m, &p, i, (size_t)r, out);
    }
    gpufl__pc_profile_free(&p);
    return rc;
}
