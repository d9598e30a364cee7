// SPDX-License-Identifier: Apache-2.0
/*
 * rules_sass.c - the insights from SASS metrics (exact per-instruction
 * counts): warp_divergence, a function whose warps run with many threads
 * idle, and uncoalesced_global, a function whose global accesses move far
 * more sectors than they need (thresholds in docs/insights.md).
 *
 * Both judge functions over the counts of all contexts (sass_profile.c) and
 * name the source line that loses most, from the function's sass record.
 * The thresholds are compared in exact arithmetic on the integer counts, so
 * a function on a threshold's edge falls the same side every time.
 */
#include "analysis/insight_rules.h"
#include "analysis/sass_profile.h"

#include <gpufl/gpufl.h>

#include <string.h>

#define MIN_WARP_INST     10000 /* a function's warp instructions before its efficiency counts */
#define MIN_SECTORS       10000 /* a function's global sectors before its coalescing counts */
#define MIN_SESSION_SHARE 20    /* 1/20 = 5 % of the session's counted instructions / sectors */
#define DIVERGENCE_MEDIUM 128   /* thread efficiency below 128/160 = 0.80 */
#define DIVERGENCE_HIGH   96    /* below 96/160 = 0.60 (x 32 lanes: 25.6 and 19.2 threads) */
#define COALESCING_MEDIUM 2     /* sectors at least 2x the ideal: efficiency <= 50 % */
#define COALESCING_HIGH   4     /* at least 4x: <= 25 % */

static const char *const divergence_advice =
    "Make branch conditions uniform across the 32 threads of a warp: index the work by warp "
    "(threadIdx.x / 32) rather than by lane, e.g. never split work by lane parity; sort or "
    "bucket the data so that neighbouring threads take the same path; move the divergent work "
    "into separate kernels or separate warps, or turn short branches into predication-friendly "
    "code (arithmetic selects instead of if/else).";

static const char *const coalescing_advice =
    "Make consecutive threads access consecutive addresses (thread i reads element i, not "
    "element i * stride); use a structure of arrays instead of an array of structures; stage "
    "strided or transposed accesses through shared memory and read global memory in order; check "
    "the index arithmetic of the line named.";

/* " The <what> is at file:line (...)" or an instruction offset, into buf. */
static void where_text(const gpufl__sass_profile_t *p, size_t fn, gpufl__sass_rank_t by,
                       const gpufl__sass_line_t *line, char *buf, size_t size) {
    const gpufl__sass_function_t *f = &p->functions[fn];
    buf[0] = '\0';
    if (line && by == GPUFL_SASS_BY_IDLE_LANES) {
        snprintf(buf, size,
                 " The most divergent line is %s:%d: thread efficiency %.1f%%, %.0f idle lanes "
                 "(%.1f%% of the function's).",
                 line->file, line->line, 100 * gpufl__sass_thread_efficiency(&line->counts),
                 gpufl__sass_idle_lanes(&line->counts),
                 100 * gpufl__sass_idle_lanes(&line->counts) / gpufl__sass_idle_lanes(&f->counts));
        return;
    }
    if (line) {
        snprintf(buf, size,
                 " The least coalesced line is %s:%d: %.1f sectors per request against %.1f "
                 "ideal, %.0f excess sectors (%.1f%% of the function's).",
                 line->file, line->line, gpufl__sass_sectors_per_request(&line->counts),
                 gpufl__sass_ideal_per_request(&line->counts),
                 gpufl__sass_excess_sectors(&line->counts),
                 100 * gpufl__sass_excess_sectors(&line->counts) /
                     gpufl__sass_excess_sectors(&f->counts));
        return;
    }
    const gpufl__sass_insn_t *in = gpufl__sass_worst_insn(p, fn, by);
    if (in)
        snprintf(buf, size, " The instruction that loses most is at +0x%x%s%s (%s).", in->pc,
                 in->text ? ": " : "", in->text ? in->text : "",
                 f->has_sass ? "no line info: build with -lineinfo to see the source line"
                             : "no sass record for the function");
}

/* The place and kernel of an insight about function fn. */
static int put_place(gpufl__insight_t *in, const gpufl__sass_function_t *f,
                     const gpufl__sass_line_t *line) {
    if (gpufl__insight_text(&in->kernel, "%s", f->name)) return GPUFL_ENOMEM;
    if (!line) return 0;
    in->line = line->line;
    return gpufl__insight_text(&in->file, "%s", line->file) ||
                   gpufl__insight_text(&in->function, "%s", f->name)
               ? GPUFL_ENOMEM
               : 0;
}

static int add_divergence(const gpufl__sass_profile_t *p, size_t fn, gpufl__insights_t *out) {
    const gpufl__sass_function_t *f = &p->functions[fn];
    const gpufl__sass_counts_t *c = &f->counts;
    gpufl_severity_t sev = c->thread_inst * 5 < c->thread_base * DIVERGENCE_HIGH
                               ? GPUFL_SEVERITY_HIGH
                               : GPUFL_SEVERITY_MEDIUM;
    gpufl__insight_t *in = gpufl__insight_add(out, "warp_divergence", "DIVERGENCE", sev);
    if (!in) return GPUFL_ENOMEM;
    double eff = gpufl__sass_thread_efficiency(c), idle = gpufl__sass_idle_lanes(c);
    double share = 100 * c->inst / p->total.inst;
    in->weight = idle;
    const gpufl__sass_line_t *line = gpufl__sass_worst_line(p, fn, GPUFL_SASS_BY_IDLE_LANES);
    char where[700];
    where_text(p, fn, GPUFL_SASS_BY_IDLE_LANES, line, where, sizeof where);
    if (put_place(in, f, line) ||
        gpufl__insight_text(&in->title, "%s: %.1f%% thread efficiency (warp divergence)", f->name,
                            100 * eff) ||
        gpufl__insight_text(&in->message,
                            "Its %.0f warp instructions ran with %.1f of 32 threads active on "
                            "average (thread efficiency %.1f%%): %.1f%% of its lanes idled while "
                            "the other threads of their warp ran another path. The function "
                            "executes %.1f%% of the session's counted warp instructions.%s",
                            c->inst, 32 * eff, 100 * eff, 100 * (1 - eff), share, where) ||
        gpufl__insight_text(&in->advice, "%s", divergence_advice))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "warp_inst", c->inst, "count");
    gpufl__insight_evidence(in, "thread_inst", c->thread_inst, "count");
    gpufl__insight_evidence(in, "thread_efficiency_pct", 100 * eff, "%");
    gpufl__insight_evidence(in, "idle_lanes", idle, "count");
    gpufl__insight_evidence(in, "session_share_pct", share, "%");
    if (line) {
        gpufl__insight_evidence(in, "line_thread_efficiency_pct",
                                100 * gpufl__sass_thread_efficiency(&line->counts), "%");
        gpufl__insight_evidence(in, "line_idle_lanes", gpufl__sass_idle_lanes(&line->counts),
                                "count");
    }
    return 0;
}

static int add_coalescing(const gpufl__sass_profile_t *p, size_t fn, gpufl__insights_t *out) {
    const gpufl__sass_function_t *f = &p->functions[fn];
    const gpufl__sass_counts_t *c = &f->counts;
    gpufl_severity_t sev =
        c->ideal * COALESCING_HIGH <= c->ideal_base ? GPUFL_SEVERITY_HIGH : GPUFL_SEVERITY_MEDIUM;
    gpufl__insight_t *in = gpufl__insight_add(out, "uncoalesced_global", "MEMORY", sev);
    if (!in) return GPUFL_ENOMEM;
    double eff = gpufl__sass_coalescing(c), excess = gpufl__sass_excess_sectors(c);
    double spr = gpufl__sass_sectors_per_request(c), ideal = gpufl__sass_ideal_per_request(c);
    double share = 100 * c->sectors / p->total.sectors;
    in->weight = excess;
    const gpufl__sass_line_t *line = gpufl__sass_worst_line(p, fn, GPUFL_SASS_BY_EXCESS_SECTORS);
    char where[700], per_request[160] = "", title[160], times[48] = "";
    where_text(p, fn, GPUFL_SASS_BY_EXCESS_SECTORS, line, where, sizeof where);
    if (spr >= 0) {
        snprintf(per_request, sizeof per_request,
                 " Its %.0f global requests took %.1f sectors each where %.1f would do.",
                 c->requests, spr, ideal);
        snprintf(title, sizeof title, "%.1f sectors per global request, %.1f ideal", spr, ideal);
    } else {
        snprintf(title, sizeof title, "%.0f global sectors, %.0f ideal", c->ideal_base, c->ideal);
    }
    if (c->ideal > 0) snprintf(times, sizeof times, " (%.1fx the ideal)", c->ideal_base / c->ideal);
    if (put_place(in, f, line) ||
        gpufl__insight_text(&in->title, "%s: %s (%.1f%% coalescing efficiency)", f->name, title,
                            100 * eff) ||
        gpufl__insight_text(&in->message,
                            "Its global loads and stores moved %.0f sectors of 32 bytes where "
                            "%.0f would do if they were perfectly coalesced: %.1f%% coalescing "
                            "efficiency, %.0f excess sectors%s.%s The function accounts for "
                            "%.1f%% of the session's counted global sectors.%s",
                            c->ideal_base, c->ideal, 100 * eff, excess, times, per_request, share,
                            where) ||
        gpufl__insight_text(&in->advice, "%s", coalescing_advice))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "sectors", c->sectors, "count");
    gpufl__insight_evidence(in, "sectors_ideal", c->ideal, "count");
    gpufl__insight_evidence(in, "excess_sectors", excess, "count");
    gpufl__insight_evidence(in, "coalescing_efficiency_pct", 100 * eff, "%");
    gpufl__insight_evidence(in, "requests", c->requests, "count");
    if (spr >= 0) {
        gpufl__insight_evidence(in, "sectors_per_request", spr, "sectors");
        gpufl__insight_evidence(in, "ideal_sectors_per_request", ideal, "sectors");
    }
    gpufl__insight_evidence(in, "session_share_pct", share, "%");
    if (line)
        gpufl__insight_evidence(in, "line_excess_sectors",
                                gpufl__sass_excess_sectors(&line->counts), "count");
    if (line && gpufl__sass_sectors_per_request(&line->counts) >= 0)
        gpufl__insight_evidence(in, "line_sectors_per_request",
                                gpufl__sass_sectors_per_request(&line->counts), "sectors");
    return 0;
}

/* The rule may judge only functions with enough work of their own and
 * enough of the session's: n of at least `min` and 1/MIN_SESSION_SHARE of
 * total. */
static int large_enough(double n, double total, double min) {
    return n >= min && n * MIN_SESSION_SHARE >= total;
}

/* Skips both rules when the session has no rows; returns 1 then (or
 * GPUFL_ENOMEM). */
static int skip_without_rows(const gpufl__model_t *m, gpufl__insights_t *out) {
    if (m->n_sass_metrics) return 0;
    const char *err = NULL;
    for (size_t i = 0; i < m->n_sass_metrics_contexts && !err; i++)
        if (*m->sass_metrics_contexts[i].error) err = m->sass_metrics_contexts[i].error;
    static const char *const rules[] = {"warp_divergence", "uncoalesced_global"};
    for (size_t i = 0; i < 2; i++) {
        int rc =
            err ? gpufl__insight_skip(out, rules[i],
                                      "no sass_metric rows: SASS metrics could not start (%s)", err)
                : gpufl__insight_skip(out, rules[i],
                                      "no sass_metric rows: SASS metrics did not run "
                                      "(engines SassMetrics and Deep count instructions)");
        if (rc) return rc;
    }
    return 1;
}

int gpufl__rules_sass(gpufl__insights_t *out, const gpufl__model_t *m) {
    int rc = skip_without_rows(m, out);
    if (rc) return rc < 0 ? rc : 0;
    gpufl__sass_profile_t p;
    rc = gpufl__sass_profile_build(m, &p);
    if (!rc && (!p.counted[0] || !p.counted[1]))
        rc = gpufl__insight_skip(
            out, "warp_divergence", "%s is null in every sass_metric row: %s was not counted",
            p.counted[0] ? "thread_inst" : "inst",
            p.counted[0] ? "smsp__sass_thread_inst_executed" : "smsp__sass_inst_executed");
    if (!rc && (!p.counted[2] || !p.counted[3]))
        rc = gpufl__insight_skip(
            out, "uncoalesced_global", "%s is null in every sass_metric row: %s was not counted",
            p.counted[2] ? "sectors_ideal" : "sectors",
            p.counted[2] ? "smsp__sass_sectors_mem_global_ideal" : "smsp__sass_sectors_mem_global");
    for (size_t i = 0; !rc && i < p.n_functions; i++) {
        const gpufl__sass_counts_t *c = &p.functions[i].counts;
        if (large_enough(c->inst, p.total.inst, MIN_WARP_INST) && c->thread_base > 0 &&
            c->thread_inst * 5 < c->thread_base * DIVERGENCE_MEDIUM)
            rc = add_divergence(&p, i, out);
        if (!rc && large_enough(c->sectors, p.total.sectors, MIN_SECTORS) && c->ideal_base > 0 &&
            c->ideal * COALESCING_MEDIUM <= c->ideal_base)
            rc = add_coalescing(&p, i, out);
    }
    gpufl__sass_profile_free(&p);
    return rc;
}
