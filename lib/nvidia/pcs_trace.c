// SPDX-License-Identifier: Apache-2.0
/*
 * pcs_trace.c - the PcSampling engine's activity modes (pcs_trace.h): which
 * CUPTI kinds go with PC sampling and when they go on, and alternate's
 * windows.
 */
#include "nvidia/pcs_trace.h"

#include "core/options.h"
#include "util/error.h"
#include "util/log.h"
#include "nvidia/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Whether the kinds wait for PC sampling to be enabled on a context. */
static int after_enable(const gpufl__pcs_trace_t *p) { return p->mode == GPUFL_PCS_TRACE_LATE; }

const char *gpufl__pcs_trace_mode_name(gpufl__pcs_trace_mode_t mode) {
    return (unsigned)mode <= GPUFL_PCS_TRACE_ALTERNATE ? gpufl__pcs_trace_modes[mode] : "none";
}

void gpufl__pcs_trace_init(gpufl__pcs_trace_t *p, const char *mode) {
    memset(p, 0, sizeof *p); /* late: docs/design/pcs-with-trace.md, the measured choice */
    /* The option's resolve took only these names (core/options.c). */
    for (int i = 0; mode != NULL && gpufl__pcs_trace_modes[i]; i++)
        if (strcasecmp(mode, gpufl__pcs_trace_modes[i]) == 0) p->mode = (gpufl__pcs_trace_mode_t)i;
    if (p->mode != GPUFL_PCS_TRACE_ALTERNATE) return;
    p->sample_ns = gpufl__engine_env_long("GPUFL_PC_SAMPLING_SAMPLE_MS", 10, 60000,
                                          GPUFL_PCS_TRACE_SAMPLE_MS_DEFAULT, "a number of ms") *
                   1000000LL;
    p->trace_ns = gpufl__engine_env_long("GPUFL_PC_SAMPLING_TRACE_MS", 10, 60000,
                                         GPUFL_PCS_TRACE_TRACE_MS_DEFAULT, "a number of ms") *
                  1000000LL;
}

unsigned int gpufl__pcs_trace_cupti_flags(const gpufl__pcs_trace_t *p) {
    switch (p->mode) {
    case GPUFL_PCS_TRACE_KERNELS: return GPUFL_CUPTI_KERNELS_ONLY;
    case GPUFL_PCS_TRACE_ALL:
    case GPUFL_PCS_TRACE_ALTERNATE: return 0;
    /* PC sampling may be enabled on a context before the kinds start; CUPTI
     * then refuses the kernel kind, which leaves kernels as launch rows. */
    case GPUFL_PCS_TRACE_LATE: return GPUFL_CUPTI_KERNEL_OPTIONAL;
    default: return GPUFL_CUPTI_NO_ACTIVITY;
    }
}

int gpufl__pcs_trace_launch_rows(const gpufl__pcs_trace_t *p) {
    return p->mode == GPUFL_PCS_TRACE_NONE || p->mode == GPUFL_PCS_TRACE_ALTERNATE ||
           p->mode == GPUFL_PCS_TRACE_EVENTS || p->mode == GPUFL_PCS_TRACE_LATE;
}

int gpufl__pcs_trace_timed(const gpufl__pcs_trace_t *p) {
    return p->mode == GPUFL_PCS_TRACE_EVENTS;
}

void gpufl__pcs_trace_fall_back(gpufl__pcs_trace_t *p, const char *why) {
    snprintf(p->why, sizeof p->why, "%s cannot run (%s): none", gpufl__pcs_trace_mode_name(p->mode),
             why);
    gpufl__warn("PC sampling with activity mode %s", p->why);
    p->mode = GPUFL_PCS_TRACE_NONE;
}

/* CUPTI refused a switch: counted, and the first one's reason kept. */
static void refused(gpufl__pcs_trace_t *p) {
    if (p->switch_errors++ == 0) snprintf(p->refusal, sizeof p->refusal, "%s", gpufl_last_error());
}

void gpufl__pcs_trace_started(gpufl__pcs_trace_t *p, gpufl__cupti_t *cupti) {
    if (p->mode != GPUFL_PCS_TRACE_ALTERNATE && !after_enable(p)) return;
    /* late: on again once PC sampling is enabled on a context
     * (gpufl__pcs_trace_around_enable), unless that happened already. */
    if (after_enable(p) && p->enables > 0) return;
    if (gpufl__cupti_pause(cupti, 1) != 0) refused(p);
}

void gpufl__pcs_trace_around_enable(gpufl__pcs_trace_t *p, gpufl__cupti_t *cupti,
                                    gpufl__launch_t *launch, int before, int enabled) {
    if (!after_enable(p)) return;
    /* Before: the kinds off, then rows, as alternate switches (a launch
     * between leaves a note and no record, never a row and a record). After:
     * rows until the kernel kind is known on (where CUPTI takes it, a launch
     * between may get a row and a record with no note; where it refuses it,
     * as on the H100 and H200, none is lost). */
    if (gpufl__cupti_pause(cupti, before) != 0) refused(p);
    if (before) gpufl__launch_pause_rows(launch, 0);
    if (!before && enabled) p->enables++;
    if (!before && gpufl__cupti_kind_live(cupti, GPUFL_CUPTI_KIND_KERNEL))
        gpufl__launch_pause_rows(launch, 1); /* notes: CUPTI's kernel records become the rows */
}

static void say(gpufl__collector_t *c, const char *code, const char *msg) {
    gpufl__collector_event(c, GPUFL_FILE_DEVICE, "info", code, msg);
}

void gpufl__pcs_trace_poll(gpufl__pcs_trace_t *p, gpufl__cupti_t *cupti, gpufl__launch_t *launch,
                           gpufl__collector_t *c, int64_t now_ns) {
    if (!p->said) {
        char msg[300];
        if (p->mode == GPUFL_PCS_TRACE_ALTERNATE)
            snprintf(msg, sizeof msg,
                     "PC sampling with activity mode alternate: %lld ms without activity kinds, "
                     "then %lld ms with Trace's",
                     (long long)(p->sample_ns / 1000000), (long long)(p->trace_ns / 1000000));
        else
            snprintf(msg, sizeof msg, "PC sampling with activity mode %s",
                     p->why[0] ? p->why : gpufl__pcs_trace_mode_name(p->mode));
        say(c, "pc_sampling_trace", msg);
        p->said = 1;
    }
    if (p->mode != GPUFL_PCS_TRACE_ALTERNATE) return;
    if (p->next_switch_ns == 0) p->next_switch_ns = now_ns + p->sample_ns;
    if (now_ns < p->next_switch_ns) return;
    p->tracing = !p->tracing;
    /* Notes before the kinds go on, rows again after they are off: a launch
     * between the two leaves a note CUPTI's record may not join (counted as a
     * lookup miss), never a row and a record for one launch. */
    if (p->tracing) {
        gpufl__launch_pause_rows(launch, 1);
        p->windows++;
    }
    if (gpufl__cupti_pause(cupti, !p->tracing) != 0) refused(p);
    if (!p->tracing) gpufl__launch_pause_rows(launch, 0);
    p->next_switch_ns = now_ns + (p->tracing ? p->trace_ns : p->sample_ns);
}

int64_t gpufl__pcs_trace_due_in(const gpufl__pcs_trace_t *p, int64_t now_ns) {
    if (p->mode != GPUFL_PCS_TRACE_ALTERNATE || p->next_switch_ns == 0) return INT64_MAX;
    int64_t due = p->next_switch_ns - now_ns;
    return due > 0 ? due : 0;
}

void gpufl__pcs_trace_finish(gpufl__pcs_trace_t *p, gpufl__collector_t *c) {
    char msg[500];
    if (!after_enable(p) && p->mode != GPUFL_PCS_TRACE_ALTERNATE) return;
    int n = after_enable(p)
                ? snprintf(msg, sizeof msg,
                           "PC sampling with activity mode late: Trace's kinds turned on after "
                           "PC sampling was enabled %llu times",
                           (unsigned long long)p->enables)
                : snprintf(msg, sizeof msg,
                           "PC sampling with activity mode alternate: %llu trace windows",
                           (unsigned long long)p->windows);
    snprintf(msg + n, sizeof msg - (size_t)n, ", %llu switches refused by CUPTI%s%s",
             (unsigned long long)p->switch_errors, p->refusal[0] ? ", the first: " : "",
             p->refusal);
    say(c, "pc_sampling_trace_windows", msg);
}

int gpufl__pcs_trace_force_flush(gpufl__pcs_trace_t *p, gpufl__cupti_t *cupti, int64_t now_ns,
                                 int64_t every_ns) {
    if (!after_enable(p) || (now_ns < p->next_forced_ns && !gpufl__cupti_pool_low(cupti))) return 0;
    p->next_forced_ns = now_ns + every_ns;
    return 1;
}
