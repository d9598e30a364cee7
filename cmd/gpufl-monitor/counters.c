// SPDX-License-Identifier: Apache-2.0
/*
 * counters.c - what gpufl-monitor adds up from one sample to the next:
 * energy in joules, seconds per throttle reason, PCIe and NVLink bytes and
 * XID events per code. NVML gives rates, bitmasks and "the last XID"; these
 * turn them into the monotonic counters Prometheus's rate() expects.
 */
#include "exposition.h"

#include <math.h>
#include <string.h>

/* Seconds: 100 us to 1 s, where a sample of 8 GPUs and the host lands. */
const double mon_sample_buckets[MON_SAMPLE_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0};

const mon_value_t *mon_value_find(const mon_value_t *cols, int n, const char *column) {
    for (int i = 0; i < n && i < MON_MAX_COLS; i++)
        if (cols[i].column && strcmp(cols[i].column, column) == 0)
            return cols[i].present && isfinite(cols[i].value) ? &cols[i] : NULL;
    return NULL;
}

static const mon_value_t *col(const mon_device_t *d, const char *name) {
    return mon_value_find(d->cols, d->ncols, name);
}

/* The integral of a rate over dt (trapezoid; one end alone held flat),
 * 0 when neither end has it. Negative rates are no data. A value carried
 * forward from an older row counts from when it was read: between two
 * readings of a once-a-second rate the integral spans their real distance,
 * and a carried value adds nothing until the next reading. */
static double integrate(const mon_device_t *cur, const mon_device_t *prev, const char *name,
                        double dt) {
    const mon_value_t *a = col(prev, name), *b = col(cur, name);
    if (a && a->value < 0) a = NULL;
    if (b && b->value < 0) b = NULL;
    if (a && b && a->taken_ns && b->taken_ns)
        return b->taken_ns > a->taken_ns
                   ? (a->value + b->value) / 2 * (double)(b->taken_ns - a->taken_ns) / 1e9
                   : 0;
    if (a && b) return (a->value + b->value) / 2 * dt;
    if (a || b) return (a ? a->value : b->value) * dt;
    return 0;
}

static double energy_delta(const mon_device_t *cur, const mon_device_t *prev, double dt) {
    const mon_value_t *a = col(prev, "energy_mj"), *b = col(cur, "energy_mj");
    /* A drop is the driver's counter restarting: that interval is unknown. */
    if (a && b) return b->value >= a->value ? (b->value - a->value) / 1000.0 : 0;
    /* Boards without the energy counter: power (mW) over time. */
    return integrate(cur, prev, "power_mw", dt) / 1000.0;
}

/* A reason set at both ends counts the whole interval; set at one end only,
 * half of it (when in between it changed is unknown). */
static void add_throttle(mon_counters_t *c, const mon_device_t *cur, const mon_device_t *prev,
                         double dt) {
    const mon_value_t *a = col(prev, "throttle_reasons"), *b = col(cur, "throttle_reasons");
    uint64_t ma = a && a->value >= 0 && a->value < 18446744073709551616.0 ? (uint64_t)a->value : 0;
    uint64_t mb = b && b->value >= 0 && b->value < 18446744073709551616.0 ? (uint64_t)b->value : 0;
    if (!a || !b) return; /* no state known at one end: nothing to attribute */
    for (int bit = 0; bit < MON_MAX_REASONS; bit++) {
        int set = (int)((ma >> bit) & 1) + (int)((mb >> bit) & 1);
        c->throttle_seconds[bit] += dt * set / 2;
    }
}

void mon_counters_advance(mon_device_t *cur, const mon_device_t *prev) {
    if (!prev) {
        memset(&cur->counters, 0, sizeof cur->counters);
        return;
    }
    mon_counters_t c = prev->counters;
    double dt = (double)(cur->ts_ns - prev->ts_ns) / 1e9;
    /* A prev without a row yet (ts_ns 0) is no baseline: integrating from
     * it would count the time since boot. */
    if (dt > 0 && prev->ts_ns > 0) {
        c.energy_joules += energy_delta(cur, prev, dt);
        add_throttle(&c, cur, prev, dt);
        c.pcie_tx_bytes += integrate(cur, prev, "pcie_tx_bytes_per_s", dt);
        c.pcie_rx_bytes += integrate(cur, prev, "pcie_rx_bytes_per_s", dt);
        c.nvlink_tx_bytes += integrate(cur, prev, "nvlink_tx_bytes_per_s", dt);
        c.nvlink_rx_bytes += integrate(cur, prev, "nvlink_rx_bytes_per_s", dt);
    }
    cur->counters = c;
}

void mon_counters_xid(mon_device_t *d, unsigned code) {
    mon_counters_t *c = &d->counters;
    c->last_xid = code;
    for (int i = 0; i < c->nxids; i++)
        if (c->xids[i].code == code) {
            c->xids[i].count++;
            return;
        }
    if (c->nxids < MON_MAX_XIDS) {
        c->xids[c->nxids].code = code;
        c->xids[c->nxids].count = 1;
        c->nxids++;
        return;
    }
    c->xid_overflow++;
}

void mon_self_observe(mon_self_t *self, const char *source, double seconds) {
    int i = 0;
    while (i < self->nsources && strcmp(self->sample[i].source, source) != 0) i++;
    if (i == self->nsources) {
        if (i >= MON_MAX_SOURCES) return;
        self->sample[i].source = source;
        self->nsources++;
    }
    for (int j = 0; j < MON_SAMPLE_BUCKETS; j++)
        if (seconds <= mon_sample_buckets[j]) self->sample[i].bucket_counts[j]++;
    self->sample[i].count++;
    self->sample[i].sum_seconds += seconds;
}
