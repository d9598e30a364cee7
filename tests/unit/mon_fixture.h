// SPDX-License-Identifier: Apache-2.0
/*
 * mon_fixture.h - synthetic gpufl-monitor snapshots for the renderer's unit
 * tests and the metrics doc check: 8 devices (two of them MIG instances of
 * GPU 5, device 3 lost) with every gpu_sample column and a few processes,
 * or a host-only one.
 */
#ifndef GPUFL_TEST_MON_FIXTURE_H
#define GPUFL_TEST_MON_FIXTURE_H

#include "readings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* gpu_sample's columns (lib/core/wire.c), ts_ns and device excluded, with a
 * plausible value each in the log's units. */
static const struct {
    const char *column;
    double value;
} mf_gpu_cols[] = {
    {"gpu_util_pct", 87},
    {"mem_util_pct", 41},
    {"mem_used_bytes", 42949672960.0},
    {"mem_free_bytes", 42949672960.0},
    {"mem_total_bytes", 85899345920.0},
    {"temp_gpu_c", 61},
    {"temp_mem_c", 70},
    {"power_mw", 612345},
    {"power_limit_mw", 700000},
    {"energy_mj", 123456789},
    {"clock_sm_mhz", 1980},
    {"clock_gfx_mhz", 1980},
    {"clock_mem_mhz", 2619},
    {"fan_pct", 30},
    {"pcie_tx_bytes_per_s", 1e9},
    {"pcie_rx_bytes_per_s", 2e9},
    {"throttle_reasons", 4},
    {"ecc_sbe_volatile", 3},
    {"ecc_dbe_volatile", 0},
    {"nvlink_tx_bytes_per_s", 5e10},
    {"nvlink_rx_bytes_per_s", 4e10},
    {"sm_active_pct", 80},
    {"sm_occupancy_pct", 50},
    {"tensor_active_pct", 25},
    {"dram_bw_util_pct", 60.5},
};
#define MF_NGPU_COLS ((int)(sizeof mf_gpu_cols / sizeof mf_gpu_cols[0]))

static const struct {
    const char *column;
    double value;
} mf_host_cols[] = {
    {"cpu_pct", 12.5},           {"proc_cpu_pct", 0.4},       {"mem_used_bytes", 8e9},
    {"mem_total_bytes", 64e9},   {"proc_rss_bytes", 9437184}, {"cg_mem_used_bytes", 1e8},
    {"cg_mem_limit_bytes", 2e9}, {"cg_cpu_pct", 0.5},         {"cg_cpu_limit_cores", 2},
};
#define MF_NHOST_COLS ((int)(sizeof mf_host_cols / sizeof mf_host_cols[0]))

static const char *mf_reason_names[] = {"gpu_idle", "applications_clocks_setting", "sw_power_cap",
                                        "hw_slowdown"};

static inline void mf_set(mon_value_t *cols, int n, const char *column, double v, int present) {
    for (int i = 0; i < n; i++)
        if (strcmp(cols[i].column, column) == 0) {
            cols[i].value = v;
            cols[i].present = present;
        }
}

static inline void mf_device(mon_device_t *d, int index) {
    memset(d, 0, sizeof *d);
    d->index = index;
    snprintf(d->uuid, sizeof d->uuid, "GPU-0000000%d-1111-2222-3333-444444444444", index);
    snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "00000000:%02X:00.0", 0x18 + index);
    snprintf(d->model, sizeof d->model, "NVIDIA H100 80GB HBM3");
    d->mig_instance = -1;
    d->ts_ns = 1000000000LL;
    d->ncols = MF_NGPU_COLS;
    for (int c = 0; c < MF_NGPU_COLS; c++)
        d->cols[c] = (mon_value_t){mf_gpu_cols[c].column, mf_gpu_cols[c].value, 1, 0};
    for (int b = 0; b < 4; b++) d->throttle_reason_names[b] = mf_reason_names[b];
}

static inline void mf_host(mon_snapshot_t *s) {
    snprintf(s->hostname, sizeof s->hostname, "node-a");
    s->host_ncols = MF_NHOST_COLS;
    for (int c = 0; c < MF_NHOST_COLS; c++)
        s->host[c] = (mon_value_t){mf_host_cols[c].column, mf_host_cols[c].value, 1, 0};
    s->self.scrapes_total = 7;
    s->self.samples_total = 100;
    s->self.nsources = 2;
    const char *src[2] = {"gpu", "host"};
    for (int i = 0; i < 2; i++) {
        s->self.sample[i].source = src[i];
        for (int j = 0; j < 12; j++) s->self.sample[i].bucket_counts[j] = j < 3 ? 0 : 100;
        s->self.sample[i].count = 100;
        s->self.sample[i].sum_seconds = 0.0123;
    }
}

/* 8 devices: 0-5 whole GPUs, 6 and 7 MIG instances 1 and 2 (3g.40gb) on
 * GPU 5's bus; device 3 lost. Counters as after some seconds of sampling. */
static inline mon_snapshot_t *mf_snapshot_8(void) {
    mon_snapshot_t *s = calloc(1, sizeof *s);
    if (!s) abort();
    mf_host(s);
    s->gpu_available = 1;
    s->ndevices = 8;
    for (int i = 0; i < 8; i++) {
        mon_device_t *d = &s->devices[i];
        mf_device(d, i);
        d->counters.energy_joules = 1000.5 + i;
        d->counters.throttle_seconds[2] = 3.5;
        d->counters.throttle_seconds[40] = 1.0; /* a bit gpu_legend does not name */
        d->counters.pcie_tx_bytes = 1e12;
        d->counters.pcie_rx_bytes = 2e12;
        d->counters.nvlink_tx_bytes = 3e12;
        d->counters.nvlink_rx_bytes = 4e12;
    }
    for (int i = 6; i < 8; i++) {
        mon_device_t *d = &s->devices[i];
        snprintf(d->uuid, sizeof d->uuid, "MIG-aaaaaaaa-bbbb-cccc-dddd-00000000000%d", i);
        snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%s", s->devices[5].pci_bus_id);
        d->mig_instance = i - 5;
        snprintf(d->mig_profile, sizeof d->mig_profile, "3g.40gb");
    }
    s->devices[3].lost = 1;
    /* Processes: on GPU 0 a containerised pod's and a Slurm job's; on GPU 1
     * one whose memory NVML did not give; on the lost GPU 3 a stale one. */
    s->devices[0].nprocesses = 2;
    s->devices[0].processes[0] =
        (mon_process_t){4242,
                        2147483648LL,
                        "python3",
                        "alice",
                        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                        "12345678-1234-1234-1234-123456789abc",
                        "",
                        37,
                        12};
    /* Utilization: the first process's known, the others' not (a MIG device's). */
    s->devices[0].processes[1] =
        (mon_process_t){4343, 1048576, "train", "bob", "", "", "987", -1, -1};
    s->devices[1].nprocesses = 1;
    s->devices[1].processes[0] = (mon_process_t){4444, -1, "idle", "carol", "", "", "", -1, -1};
    s->devices[3].nprocesses = 1;
    s->devices[3].processes[0] = (mon_process_t){4545, 4096, "stale", "dave", "", "", "", 50, 50};
    s->devices[1].counters.nxids = 1;
    s->devices[1].counters.xids[0].code = 79;
    s->devices[1].counters.xids[0].count = 2;
    s->devices[1].counters.last_xid = 79;
    return s;
}

/* No GPU backend: the host and the daemon's own series, and why. */
static inline mon_snapshot_t *mf_snapshot_host_only(void) {
    mon_snapshot_t *s = calloc(1, sizeof *s);
    if (!s) abort();
    mf_host(s);
    s->self.nsources = 1;
    snprintf(s->gpu_why, sizeof s->gpu_why, "libnvidia-ml.so.1: cannot open shared object file");
    return s;
}

#endif
