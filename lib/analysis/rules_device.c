// SPDX-License-Identifier: Apache-2.0
/*
 * rules_device.c - the insight rules about whole devices: idle gaps between
 * GPU work (Trace rows), clocks held down by heat or power (NVML's throttle
 * reasons), and SMs idle while NVML's utilisation reads high (GPM).
 * docs/insights.md states every threshold below and why it was chosen.
 */
#include "analysis/insight_rules.h"
#include "analysis/insight_spans.h"

#include "util/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* gpu_idle: idle time inside the span of a device's GPU work. */
#define IDLE_MIN_NS       1000000.0 /* less than 1 ms idle in all is not worth a finding */
#define IDLE_SHARE_MEDIUM 0.20
#define IDLE_SHARE_HIGH   0.50
#define IDLE_GAPS_LISTED  3

/* throttling: share of busy samples carrying a reason. */
#define THROTTLE_MIN_BUSY  5 /* fewer busy samples on a device: not judged */
#define THROTTLE_SHARE     0.10
#define POWER_SHARE_MEDIUM 0.50

/* low_sm_activity */
#define GPM_UTIL_HIGH    80   /* gpu_util_pct at or above this reads "busy" */
#define GPM_MIN_SAMPLES  5    /* fewer such samples on a device: not judged */
#define SM_ACTIVE_MEDIUM 50.0 /* mean sm_active_pct below this fires */
#define SM_ACTIVE_HIGH   25.0

/* Why a capabilities feature ("cupti_trace", "nvml") was off, or NULL. */
static const char *feature_off_why(const gpufl__model_t *m, const char *feature) {
    json_t *f = json_object_get(json_object_get(m->capabilities, "features"), feature);
    if (!json_is_false(json_object_get(f, "on"))) return NULL;
    return gpufl__model_json_str(f, "why");
}

static size_t gpu_slot(const gpufl__model_t *m, int64_t device) {
    const gpufl__model_gpu_t *g = gpufl__model_gpu_find(m, device);
    return g ? (size_t)(g - m->gpus) : SIZE_MAX;
}

/* ---------------------------------------------------------------------- */
/* gpu_idle                                                                 */
/* ---------------------------------------------------------------------- */

typedef struct gap {
    int64_t start_ns, len_ns;
} gap_t;

/* The innermost scope open at ts (on any thread), or NULL. */
static const gpufl__model_scope_t *scope_at(const gpufl__model_t *m, int64_t ts) {
    const gpufl__model_scope_t *best = NULL;
    for (size_t i = 0; i < m->n_scopes; i++) {
        const gpufl__model_scope_t *s = &m->scopes[i];
        if (s->begin_ns > ts || (!s->open && s->end_ns < ts)) continue;
        if (!best || s->depth > best->depth ||
            (s->depth == best->depth && s->begin_ns > best->begin_ns))
            best = s;
    }
    return best;
}

/* Keeps the IDLE_GAPS_LISTED longest gaps, longest first (ties: earlier). */
static void keep_gap(gap_t *top, size_t *n, gap_t g) {
    size_t i = *n;
    if (i == IDLE_GAPS_LISTED) {
        if (g.len_ns <= top[i - 1].len_ns) return;
        i--;
    } else {
        (*n)++;
    }
    while (i > 0 && top[i - 1].len_ns < g.len_ns) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = g;
}

static int add_idle(const gpufl__model_t *m, gpufl__insights_t *out, int64_t device,
                    const gpufl__spans_t *sp, double busy_ns) {
    static const char *const gap_start[IDLE_GAPS_LISTED] = {"gap1_start_ns", "gap2_start_ns",
                                                            "gap3_start_ns"};
    static const char *const gap_len[IDLE_GAPS_LISTED] = {"gap1_ns", "gap2_ns", "gap3_ns"};
    double span_ns = (double)(sp->v[sp->n - 1].end_ns - sp->v[0].start_ns);
    double idle_ns = span_ns - busy_ns, share = idle_ns / span_ns;
    if (idle_ns < IDLE_MIN_NS || share < IDLE_SHARE_MEDIUM) return 0;
    gap_t top[IDLE_GAPS_LISTED];
    size_t n_top = 0;
    for (size_t i = 0; i + 1 < sp->n; i++)
        keep_gap(top, &n_top, (gap_t){sp->v[i].end_ns, sp->v[i + 1].start_ns - sp->v[i].end_ns});

    char list[1024] = "", d1[32], d2[32], d3[32];
    size_t len = 0;
    for (size_t i = 0; i < n_top && len < sizeof list; i++) {
        const gpufl__model_scope_t *s = scope_at(m, top[i].start_ns + top[i].len_ns / 2);
        int w = snprintf(list + len, sizeof list - len, "%s%s at %s%s%s%s", i ? "; " : "",
                         gpufl__insight_duration((double)top[i].len_ns, d1, sizeof d1),
                         gpufl__insight_duration((double)top[i].start_ns, d2, sizeof d2),
                         s ? " (in scope " : "", s ? s->path : "", s ? ")" : "");
        if (w > 0) len += (size_t)w;
    }
    gpufl_severity_t sev = share >= IDLE_SHARE_HIGH ? GPUFL_SEVERITY_HIGH : GPUFL_SEVERITY_MEDIUM;
    gpufl__insight_t *in = gpufl__insight_add(out, "gpu_idle", "UTILIZATION", sev);
    if (!in) return GPUFL_ENOMEM;
    in->weight = idle_ns;
    if (gpufl__insight_text(&in->title, "Device %lld idle %.1f%% of the time it had work (%s)",
                            (long long)device, 100 * share,
                            gpufl__insight_duration(idle_ns, d1, sizeof d1)) ||
        gpufl__insight_text(
            &in->message,
            "Between its first and last GPU work (%s, from %s) device %lld ran no kernel, copy "
            "or memset for %s in %zu gaps, %.1f%% of the span. Longest: %s (times since the "
            "session start).",
            gpufl__insight_duration(span_ns, d1, sizeof d1),
            gpufl__insight_duration((double)sp->v[0].start_ns, d2, sizeof d2), (long long)device,
            gpufl__insight_duration(idle_ns, d3, sizeof d3), sp->n - 1, 100 * share, list) ||
        gpufl__insight_text(
            &in->advice,
            "Find what the host did during the longest gaps (the scopes named above, or a CPU "
            "profile of those moments): data loading, preprocessing, synchronization or I/O on "
            "the critical path. Prepare the next batch while the GPU works (background data "
            "loader workers, pinned prefetch on a side stream), remove synchronizations that "
            "drain the queue, and keep enough work queued ahead of the GPU."))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "idle_pct", 100 * share, "%");
    gpufl__insight_evidence(in, "idle_ns", idle_ns, "ns");
    gpufl__insight_evidence(in, "span_ns", span_ns, "ns");
    gpufl__insight_evidence(in, "gaps", (double)(sp->n - 1), "count");
    for (size_t i = 0; i < n_top; i++) {
        gpufl__insight_evidence(in, gap_start[i], (double)top[i].start_ns, "ns");
        gpufl__insight_evidence(in, gap_len[i], (double)top[i].len_ns, "ns");
    }
    return 0;
}

static int rule_idle(const gpufl__model_t *m, gpufl__insights_t *out) {
    if (m->n_kernels == 0 && m->n_launches) /* kernels ran, but the log has no GPU time of them */
        return gpufl__insight_skip(out, "gpu_idle",
                                   "needs kernel GPU times: this engine records kernel launches, "
                                   "not timed kernels (docs/log-format.md, `launch`)");
    if (m->n_kernels == 0 && m->n_copies == 0 && m->n_memsets == 0) {
        const char *why = feature_off_why(m, "cupti_trace");
        return gpufl__insight_skip(out, "gpu_idle",
                                   "no kernel, copy or memset rows: the Trace engine did not "
                                   "run%s%s%s",
                                   why ? " (" : "", why ? why : "", why ? ")" : "");
    }
    gpufl__spans_t *sp = calloc(m->n_gpus ? m->n_gpus : 1, sizeof *sp);
    if (!sp) return GPUFL_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < m->n_kernels && !rc; i++) {
        size_t s = gpu_slot(m, m->kernels[i].device);
        if (s != SIZE_MAX && gpufl__spans_add(&sp[s], m->kernels[i].start_ns, m->kernels[i].end_ns))
            rc = GPUFL_ENOMEM;
    }
    for (size_t i = 0; i < m->n_copies && !rc; i++) {
        size_t s = gpu_slot(m, m->copies[i].device);
        if (s != SIZE_MAX && gpufl__spans_add(&sp[s], m->copies[i].start_ns, m->copies[i].end_ns))
            rc = GPUFL_ENOMEM;
    }
    for (size_t i = 0; i < m->n_memsets && !rc; i++) {
        size_t s = gpu_slot(m, m->memsets[i].device);
        if (s != SIZE_MAX && gpufl__spans_add(&sp[s], m->memsets[i].start_ns, m->memsets[i].end_ns))
            rc = GPUFL_ENOMEM;
    }
    for (size_t s = 0; s < m->n_gpus && !rc; s++) {
        if (sp[s].n == 0) continue; /* no Trace rows on this device: not judged */
        double busy = gpufl__spans_merge(&sp[s]);
        if (sp[s].n > 1) rc = add_idle(m, out, m->gpus[s].device, &sp[s], busy);
    }
    for (size_t s = 0; s < m->n_gpus; s++) free(sp[s].v);
    free(sp);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* throttling                                                               */
/* ---------------------------------------------------------------------- */

/* The throttle_reasons bits the legend gives one of the names. */
static uint64_t legend_mask(const gpufl__model_t *m, const char *const *names, size_t n) {
    uint64_t mask = 0;
    for (int b = 0; b < GPUFL_MODEL_THROTTLE_BITS; b++)
        for (size_t i = 0; i < n && m->throttle_names[b]; i++)
            if (strcmp(m->throttle_names[b], names[i]) == 0) mask |= 1ull << b;
    return mask;
}

typedef struct throttle_acc {
    size_t busy;                /* samples with gpu_util_pct > 0 and known reasons */
    size_t thermal, thermal_hw; /* with a thermal bit / a hardware one */
    size_t power, power_brake;  /* with a power bit / the power brake */
    size_t sw_thermal, hw_thermal, hw_slowdown, sw_power_cap;
    double clock_thermal, clock_power, clock_free; /* summed SM clocks (MHz) */
    size_t n_clock_thermal, n_clock_power, n_clock_free;
    int32_t max_temp_c;
    double power_mw, limit_mw;
    size_t n_power;
} throttle_acc_t;

typedef struct throttle_masks {
    uint64_t thermal, thermal_hw, power, brake;
    uint64_t sw_thermal, hw_thermal, hw_slowdown, sw_power_cap;
} throttle_masks_t;

static void throttle_count(throttle_acc_t *a, const throttle_masks_t *k,
                           const gpufl__model_gpu_sample_t *s) {
    uint64_t bits = (uint64_t)s->throttle_reasons;
    a->busy++;
    a->thermal += (bits & k->thermal) != 0;
    a->thermal_hw += (bits & k->thermal_hw) != 0;
    a->power += (bits & k->power) != 0;
    a->power_brake += (bits & k->brake) != 0;
    a->sw_thermal += (bits & k->sw_thermal) != 0;
    a->hw_thermal += (bits & k->hw_thermal) != 0;
    a->hw_slowdown += (bits & k->hw_slowdown) != 0;
    a->sw_power_cap += (bits & k->sw_power_cap) != 0;
    if (s->clock_sm_mhz >= 0) {
        if (bits & k->thermal) a->clock_thermal += s->clock_sm_mhz, a->n_clock_thermal++;
        if (bits & k->power) a->clock_power += s->clock_sm_mhz, a->n_clock_power++;
        if (!(bits & (k->thermal | k->power))) a->clock_free += s->clock_sm_mhz, a->n_clock_free++;
    }
    if (s->temp_gpu_c > a->max_temp_c) a->max_temp_c = s->temp_gpu_c;
    if (s->power_mw >= 0 && s->power_limit_mw > 0) {
        a->power_mw += (double)s->power_mw;
        a->limit_mw += (double)s->power_limit_mw;
        a->n_power++;
    }
}

static double pct(size_t n, size_t of) { return of ? 100.0 * (double)n / (double)of : 0; }

static double mean(double sum, size_t n) { return n ? sum / (double)n : -1; }

/* " The SM clock averaged 1410 MHz in them, 1980 MHz in busy samples
 * without a slowdown." when both are known. */
static void clock_note(char *buf, size_t size, double in_mhz, double free_mhz) {
    buf[0] = '\0';
    if (in_mhz >= 0 && free_mhz >= 0)
        snprintf(buf, size,
                 " The SM clock averaged %.0f MHz in those samples, %.0f MHz in busy samples "
                 "with neither reason.",
                 in_mhz, free_mhz);
}

static int add_thermal(gpufl__insights_t *out, int64_t device, const throttle_acc_t *a) {
    char clocks[200], temp[64] = "";
    double share = (double)a->thermal / (double)a->busy;
    double hw = (double)a->thermal_hw / (double)a->busy;
    double in_mhz = mean(a->clock_thermal, a->n_clock_thermal);
    double free_mhz = mean(a->clock_free, a->n_clock_free);
    clock_note(clocks, sizeof clocks, in_mhz, free_mhz);
    if (a->max_temp_c >= 0)
        snprintf(temp, sizeof temp, " The GPU reached %d C.", (int)a->max_temp_c);
    gpufl__insight_t *in =
        gpufl__insight_add(out, "throttling", "THERMAL",
                           hw >= THROTTLE_SHARE ? GPUFL_SEVERITY_HIGH : GPUFL_SEVERITY_MEDIUM);
    if (!in) return GPUFL_ENOMEM;
    in->weight = share;
    if (gpufl__insight_text(&in->title,
                            "Thermal slowdown: device %lld's clocks held down in %.1f%% of busy "
                            "samples",
                            (long long)device, 100 * share) ||
        gpufl__insight_text(
            &in->message,
            "In %zu of device %lld's %zu busy samples (gpu_util_pct > 0) NVML reported a "
            "thermal clock slowdown: sw_thermal_slowdown %.1f%%, hw_thermal_slowdown %.1f%%, "
            "hw_slowdown %.1f%% of busy samples (hw_slowdown is also raised by an external "
            "power brake).%s%s",
            a->thermal, (long long)device, a->busy, pct(a->sw_thermal, a->busy),
            pct(a->hw_thermal, a->busy), pct(a->hw_slowdown, a->busy), clocks, temp) ||
        gpufl__insight_text(
            &in->advice,
            "Check the cooling: airflow and fan curve, inlet temperature, dust, neighbouring "
            "cards in a dense chassis (nvidia-smi -q -d PERFORMANCE,TEMPERATURE shows the active "
            "reasons live). A hardware slowdown cuts clocks by half or more: treat it as a "
            "hardware or datacenter problem, not a code one."))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "busy_samples", (double)a->busy, "count");
    gpufl__insight_evidence(in, "thermal_pct", 100 * share, "%");
    gpufl__insight_evidence(in, "sw_thermal_slowdown_pct", pct(a->sw_thermal, a->busy), "%");
    gpufl__insight_evidence(in, "hw_thermal_slowdown_pct", pct(a->hw_thermal, a->busy), "%");
    gpufl__insight_evidence(in, "hw_slowdown_pct", pct(a->hw_slowdown, a->busy), "%");
    if (in_mhz >= 0) gpufl__insight_evidence(in, "sm_clock_slowed_mhz", in_mhz, "MHz");
    if (free_mhz >= 0) gpufl__insight_evidence(in, "sm_clock_unslowed_mhz", free_mhz, "MHz");
    if (a->max_temp_c >= 0) gpufl__insight_evidence(in, "max_temp_c", a->max_temp_c, "C");
    return 0;
}

static int add_power(gpufl__insights_t *out, int64_t device, const throttle_acc_t *a) {
    char clocks[200], draw[96] = "";
    double share = (double)a->power / (double)a->busy;
    double brake = (double)a->power_brake / (double)a->busy;
    double in_mhz = mean(a->clock_power, a->n_clock_power);
    double free_mhz = mean(a->clock_free, a->n_clock_free);
    clock_note(clocks, sizeof clocks, in_mhz, free_mhz);
    if (a->n_power)
        snprintf(draw, sizeof draw, " It drew %.0f W on average against a %.0f W limit.",
                 a->power_mw / (double)a->n_power / 1000, a->limit_mw / (double)a->n_power / 1000);
    gpufl_severity_t sev = brake >= THROTTLE_SHARE       ? GPUFL_SEVERITY_HIGH
                           : share >= POWER_SHARE_MEDIUM ? GPUFL_SEVERITY_MEDIUM
                                                         : GPUFL_SEVERITY_LOW;
    gpufl__insight_t *in = gpufl__insight_add(out, "throttling", "POWER", sev);
    if (!in) return GPUFL_ENOMEM;
    in->weight = share;
    if (gpufl__insight_text(&in->title,
                            "Power capping: device %lld's clocks held down in %.1f%% of busy "
                            "samples",
                            (long long)device, 100 * share) ||
        gpufl__insight_text(&in->message,
                            "In %zu of device %lld's %zu busy samples (gpu_util_pct > 0) NVML "
                            "reported the clocks lowered for power: sw_power_cap %.1f%%, "
                            "hw_power_brake_slowdown %.1f%% of busy samples.%s%s",
                            a->power, (long long)device, a->busy, pct(a->sw_power_cap, a->busy),
                            pct(a->power_brake, a->busy), clocks, draw) ||
        gpufl__insight_text(
            &in->advice,
            "sw_power_cap: the GPU runs at its power limit and lowers its clocks to stay under "
            "it. Check that the limit is the board's default (nvidia-smi -q -d POWER; an "
            "administrator may have lowered it); with dense math it is expected, and work that "
            "moves less data per result (fusion, lower precision) does more per joule. "
            "hw_power_brake_slowdown: the system's power supply or chassis asserted the power "
            "brake, a platform problem for the system's administrator."))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "busy_samples", (double)a->busy, "count");
    gpufl__insight_evidence(in, "power_pct", 100 * share, "%");
    gpufl__insight_evidence(in, "sw_power_cap_pct", pct(a->sw_power_cap, a->busy), "%");
    gpufl__insight_evidence(in, "hw_power_brake_pct", pct(a->power_brake, a->busy), "%");
    if (in_mhz >= 0) gpufl__insight_evidence(in, "sm_clock_capped_mhz", in_mhz, "MHz");
    if (free_mhz >= 0) gpufl__insight_evidence(in, "sm_clock_uncapped_mhz", free_mhz, "MHz");
    if (a->n_power) {
        gpufl__insight_evidence(in, "mean_power_w", a->power_mw / (double)a->n_power / 1000, "W");
        gpufl__insight_evidence(in, "power_limit_w", a->limit_mw / (double)a->n_power / 1000, "W");
    }
    return 0;
}

static int skip_no_samples(const gpufl__model_t *m, gpufl__insights_t *out, const char *rule) {
    const char *why = feature_off_why(m, "nvml");
    return gpufl__insight_skip(out, rule, "no gpu_sample rows: NVML sampling did not run%s%s%s",
                               why ? " (" : "", why ? why : "", why ? ")" : "");
}

static int rule_throttling(const gpufl__model_t *m, gpufl__insights_t *out) {
    static const char *const thermal[] = {"sw_thermal_slowdown", "hw_thermal_slowdown",
                                          "hw_slowdown"};
    static const char *const power[] = {"sw_power_cap", "hw_power_brake_slowdown"};
    if (m->n_gpu_samples == 0) return skip_no_samples(m, out, "throttling");
    if (!m->has_legend)
        return gpufl__insight_skip(out, "throttling",
                                   "no gpu_legend record names the throttle_reasons bits");
    throttle_masks_t k = {
        .thermal = legend_mask(m, thermal, 3),
        .thermal_hw = legend_mask(m, thermal + 1, 2),
        .power = legend_mask(m, power, 2),
        .brake = legend_mask(m, power + 1, 1),
        .sw_thermal = legend_mask(m, thermal, 1),
        .hw_thermal = legend_mask(m, thermal + 1, 1),
        .hw_slowdown = legend_mask(m, thermal + 2, 1),
        .sw_power_cap = legend_mask(m, power, 1),
    };
    throttle_acc_t *acc = calloc(m->n_gpus ? m->n_gpus : 1, sizeof *acc);
    if (!acc) return GPUFL_ENOMEM;
    size_t known = 0;
    for (size_t s = 0; s < m->n_gpus; s++) acc[s].max_temp_c = -1;
    for (size_t i = 0; i < m->n_gpu_samples; i++) {
        const gpufl__model_gpu_sample_t *s = &m->gpu_samples[i];
        if (s->throttle_reasons < 0) continue;
        known++;
        size_t slot = gpu_slot(m, s->device);
        if (slot != SIZE_MAX && s->gpu_util_pct > 0) throttle_count(&acc[slot], &k, s);
    }
    int rc = 0, judged = 0;
    for (size_t s = 0; s < m->n_gpus && !rc; s++) {
        const throttle_acc_t *a = &acc[s];
        if (a->busy < THROTTLE_MIN_BUSY) continue;
        judged = 1;
        if ((double)a->thermal >= THROTTLE_SHARE * (double)a->busy)
            rc = add_thermal(out, m->gpus[s].device, a);
        if (!rc && (double)a->power >= THROTTLE_SHARE * (double)a->busy)
            rc = add_power(out, m->gpus[s].device, a);
    }
    free(acc);
    if (rc || judged) return rc;
    if (!known)
        return gpufl__insight_skip(out, "throttling", "gpu_sample rows carry no throttle_reasons");
    return gpufl__insight_skip(out, "throttling",
                               "fewer than %d busy samples (gpu_util_pct > 0) with throttle "
                               "reasons on every device: too few to judge",
                               THROTTLE_MIN_BUSY);
}

/* ---------------------------------------------------------------------- */
/* low_sm_activity                                                          */
/* ---------------------------------------------------------------------- */

typedef struct gpm_acc {
    size_t n;
    double util, active, occupancy;
    size_t n_occupancy;
} gpm_acc_t;

/* Share of a device's kernel time spent in kernels that launch fewer blocks
 * than it has SMs; < 0 when unknown. */
static double small_grid_share(const gpufl__model_t *m, const gpufl__model_gpu_t *g) {
    if (g->sm_count <= 0) return -1;
    double all = 0, small = 0;
    for (size_t i = 0; i < m->n_kernels; i++) {
        const gpufl__model_kernel_t *k = &m->kernels[i];
        if (k->device != g->device) continue;
        double ns = (double)(k->end_ns - k->start_ns);
        all += ns;
        if ((int64_t)k->grid_x * k->grid_y * k->grid_z < g->sm_count) small += ns;
    }
    return all > 0 ? small / all : -1;
}

static int add_low_sm(const gpufl__model_t *m, gpufl__insights_t *out, const gpufl__model_gpu_t *g,
                      const gpm_acc_t *a) {
    double util = a->util / (double)a->n, active = a->active / (double)a->n;
    double occ = a->n_occupancy ? a->occupancy / (double)a->n_occupancy : -1;
    double small = small_grid_share(m, g);
    char occ_note[96] = "", grid_note[200] = "";
    if (occ >= 0)
        snprintf(occ_note, sizeof occ_note, " (warps resident: sm_occupancy_pct %.1f%%)", occ);
    if (small >= 0)
        snprintf(grid_note, sizeof grid_note,
                 " %.1f%% of its kernel time went to kernels launching fewer blocks than its "
                 "%lld SMs.",
                 100 * small, (long long)g->sm_count);
    gpufl_severity_t sev = active < SM_ACTIVE_HIGH ? GPUFL_SEVERITY_HIGH : GPUFL_SEVERITY_MEDIUM;
    gpufl__insight_t *in = gpufl__insight_add(out, "low_sm_activity", "UTILIZATION", sev);
    if (!in) return GPUFL_ENOMEM;
    in->weight = (100 - active) * (double)a->n;
    if (gpufl__insight_text(&in->title,
                            "Device %lld reads %.0f%% utilised but its SMs were active %.1f%% "
                            "of the time",
                            (long long)g->device, util, active) ||
        gpufl__insight_text(
            &in->message,
            "In %zu samples where NVML's gpu_util_pct read %d%% or more (%.0f%% on average), "
            "GPM measured the SMs of device %lld active only %.1f%% of the time%s. gpu_util_pct "
            "counts the time any kernel ran, however few SMs it kept busy: the GPU looked full "
            "while most of it was idle.%s",
            a->n, GPM_UTIL_HIGH, util, (long long)g->device, active, occ_note, grid_note) ||
        gpufl__insight_text(
            &in->advice,
            "Give the GPU more parallel work: launch grids of at least a few blocks per SM (split "
            "the work finer, or use split-K / stream-K variants for small problems), run "
            "independent work concurrently on several streams, and batch requests together. On "
            "a shared GPU, MPS or MIG lets other jobs use the idle SMs."))
        return GPUFL_ENOMEM;
    gpufl__insight_evidence(in, "samples", (double)a->n, "count");
    gpufl__insight_evidence(in, "mean_gpu_util_pct", util, "%");
    gpufl__insight_evidence(in, "mean_sm_active_pct", active, "%");
    if (occ >= 0) gpufl__insight_evidence(in, "mean_sm_occupancy_pct", occ, "%");
    if (small >= 0) gpufl__insight_evidence(in, "small_grid_kernel_pct", 100 * small, "%");
    return 0;
}

static int rule_low_sm(const gpufl__model_t *m, gpufl__insights_t *out) {
    if (m->n_gpu_samples == 0) return skip_no_samples(m, out, "low_sm_activity");
    size_t with_gpm = 0;
    for (size_t i = 0; i < m->n_gpu_samples; i++)
        if (m->gpu_samples[i].sm_active_pct >= 0) with_gpm++;
    if (!with_gpm) {
        int unsupported = 0;
        for (size_t s = 0; s < m->n_gpus; s++) unsupported |= m->gpus[s].gpm_supported == 0;
        return gpufl__insight_skip(out, "low_sm_activity",
                                   "no GPM samples: GPM needs Hopper or newer and NVML GPM "
                                   "support%s",
                                   unsupported ? " (gpu_info: gpm_supported is false)" : "");
    }
    gpm_acc_t *acc = calloc(m->n_gpus ? m->n_gpus : 1, sizeof *acc);
    if (!acc) return GPUFL_ENOMEM;
    for (size_t i = 0; i < m->n_gpu_samples; i++) {
        const gpufl__model_gpu_sample_t *s = &m->gpu_samples[i];
        if (s->sm_active_pct < 0 || s->gpu_util_pct < GPM_UTIL_HIGH) continue;
        size_t slot = gpu_slot(m, s->device);
        if (slot == SIZE_MAX) continue;
        gpm_acc_t *a = &acc[slot];
        a->n++;
        a->util += s->gpu_util_pct;
        a->active += s->sm_active_pct;
        if (s->sm_occupancy_pct >= 0) a->occupancy += s->sm_occupancy_pct, a->n_occupancy++;
    }
    int rc = 0, judged = 0;
    for (size_t s = 0; s < m->n_gpus && !rc; s++) {
        const gpm_acc_t *a = &acc[s];
        if (a->n < GPM_MIN_SAMPLES) continue;
        judged = 1;
        if (a->active / (double)a->n < SM_ACTIVE_MEDIUM) rc = add_low_sm(m, out, &m->gpus[s], a);
    }
    free(acc);
    if (rc || judged) return rc;
    return gpufl__insight_skip(out, "low_sm_activity",
                               "fewer than %d samples with GPM values read gpu_util_pct >= %d "
                               "on every device: nothing to compare",
                               GPM_MIN_SAMPLES, GPM_UTIL_HIGH);
}

int gpufl__rules_device(gpufl__insights_t *out, const gpufl__model_t *m) {
    int rc = rule_idle(m, out);
    if (!rc) rc = rule_throttling(m, out);
    if (!rc) rc = rule_low_sm(m, out);
    return rc;
}
