// SPDX-License-Identifier: Apache-2.0
/*
 * test_mon_exposition.c - gpufl-monitor's /metrics renderer and counters on
 * synthetic snapshots: names, units and labels of every family, absent
 * readings left out, both formats, --dcgm-compat's twins, the counters added
 * up between samples, label escaping, per-process series and the output
 * buffer's cap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "exposition.h"
#include "mon_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *render(const mon_snapshot_t *s, int om, int dcgm) {
    mon_buf_t b = {0};
    assert_int_equal(mon_render_metrics(&b, s, om, dcgm), 0);
    assert_non_null(b.data);
    return b.data;
}

/* Whether text holds line as a whole line. */
static int has_line(const char *text, const char *line) {
    size_t n = strlen(line);
    for (const char *p = strstr(text, line); p; p = strstr(p + 1, line))
        if ((p == text || p[-1] == '\n') && p[n] == '\n') return 1;
    return 0;
}

static int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

#define LABELS0                                                                                    \
    "gpu=\"0\",uuid=\"GPU-00000000-1111-2222-3333-444444444444\",pci_bus_id=\"00000000:18:00.0\"," \
    "device=\"nvidia0\",model=\"NVIDIA H100 80GB HBM3\",hostname=\"node-a\""

static void test_eight_gpus_prometheus(void **state) {
    (void)state;
    mon_snapshot_t *s = mf_snapshot_8();
    char *out = render(s, 0, 0);
    /* Units converted to base units. */
    assert_true(has_line(out, "gpufl_gpu_utilization_ratio{" LABELS0 "} 0.87"));
    assert_true(has_line(out, "gpufl_gpu_power_watts{" LABELS0 "} 612.345"));
    assert_true(has_line(out, "gpufl_gpu_sm_clock_hertz{" LABELS0 "} 1980000000"));
    assert_true(has_line(out, "gpufl_gpu_memory_used_bytes{" LABELS0 "} 42949672960"));
    assert_true(has_line(out, "gpufl_gpu_dram_active_ratio{" LABELS0 "} 0.605"));
    assert_true(has_line(out, "gpufl_gpu_energy_joules_total{" LABELS0 "} 1000.5"));
    assert_true(
        has_line(out, "gpufl_gpu_throttle_seconds_total{" LABELS0 ",reason=\"sw_power_cap\"} 3.5"));
    /* Named reasons start at zero; an unnamed bit appears once it was set. */
    assert_true(
        has_line(out, "gpufl_gpu_throttle_seconds_total{" LABELS0 ",reason=\"gpu_idle\"} 0"));
    assert_true(has_line(out, "gpufl_gpu_throttle_seconds_total{" LABELS0 ",reason=\"bit40\"} 1"));
    assert_int_equal(count_of(out, "reason=\"bit3\""), 0);
    assert_true(has_line(out, "gpufl_gpu_pcie_transmit_bytes_total{" LABELS0 "} 1000000000000"));
    assert_true(has_line(out, "gpufl_gpu_ecc_corrected_errors_total{" LABELS0 "} 3"));
    assert_true(strstr(out, "gpufl_gpu_xid_errors_total{gpu=\"1\",") != NULL);
    assert_true(strstr(out, ",xid=\"79\"} 2\n") != NULL);
    /* HELP and TYPE once per family, 0.0.4 naming the counter's samples. */
    assert_int_equal(count_of(out, "# TYPE gpufl_gpu_utilization_ratio gauge\n"), 1);
    assert_int_equal(count_of(out, "# TYPE gpufl_gpu_energy_joules_total counter\n"), 1);
    assert_int_equal(count_of(out, "# HELP gpufl_gpu_energy_joules_total "), 1);
    assert_int_equal(count_of(out, "# UNIT"), 0);
    assert_null(strstr(out, "# EOF"));
    /* 8 devices, the lost one without gauges but with its counters. */
    assert_int_equal(count_of(out, "\ngpufl_gpu_utilization_ratio{"), 7);
    assert_int_equal(count_of(out, "\ngpufl_gpu_energy_joules_total{"), 8);
    assert_null(strstr(out, "gpufl_gpu_utilization_ratio{gpu=\"3\","));
    assert_true(strstr(out, "gpufl_gpu_lost{gpu=\"3\",") != NULL);
    assert_true(strstr(out, "model=\"NVIDIA H100 80GB HBM3\",hostname=\"node-a\"} 1\n") != NULL);
    /* MIG instances: their own gpu index, the parent's nvidiaN, profile and instance. */
    assert_true(strstr(out, "gpufl_gpu_utilization_ratio{gpu=\"6\",uuid=\"MIG-aaaaaaaa-bbbb-"
                            "cccc-dddd-000000000006\",pci_bus_id=\"00000000:1D:00.0\",device="
                            "\"nvidia5\",model=\"NVIDIA H100 80GB HBM3\",mig_profile=\"3g.40gb\","
                            "mig_instance=\"1\",hostname=\"node-a\"} 0.87\n") != NULL);
    assert_int_equal(count_of(out, "mig_profile=\"3g.40gb\",mig_instance=\"2\""),
                     count_of(out, "mig_profile=\"3g.40gb\",mig_instance=\"1\""));
    assert_int_equal(count_of(out, "mig_profile"), 2 * count_of(out, "mig_instance=\"1\""));
    /* Host and self. */
    assert_true(has_line(out, "gpufl_host_cpu_utilization_ratio{hostname=\"node-a\"} 0.125"));
    assert_true(has_line(out, "gpufl_monitor_resident_memory_bytes{hostname=\"node-a\"} 9437184"));
    assert_true(has_line(out, "gpufl_monitor_scrapes_total{hostname=\"node-a\"} 7"));
    assert_true(has_line(out, "gpufl_monitor_sample_seconds_bucket{hostname=\"node-a\","
                              "source=\"gpu\",le=\"1\"} 100"));
    assert_true(has_line(out, "gpufl_monitor_sample_seconds_bucket{hostname=\"node-a\","
                              "source=\"host\",le=\"+Inf\"} 100"));
    assert_true(has_line(out, "gpufl_monitor_sample_seconds_sum{hostname=\"node-a\","
                              "source=\"host\"} 0.0123"));
    assert_true(has_line(out, "gpufl_monitor_gpu_backend_up{hostname=\"node-a\"} 1"));
    assert_null(strstr(out, "gpufl_monitor_gpu_backend_info"));
    assert_null(strstr(out, "DCGM_"));
    free(out);
    free(s);
}

static void test_absent_values_left_out(void **state) {
    (void)state;
    mon_snapshot_t *s = mf_snapshot_8();
    for (int i = 0; i < s->ndevices; i++) {
        mf_set(s->devices[i].cols, s->devices[i].ncols, "temp_mem_c", 0, 0);
        mf_set(s->devices[i].cols, s->devices[i].ncols, "fan_pct", 0, i != 2);
    }
    mf_set(s->host, s->host_ncols, "cg_mem_limit_bytes", 0, 0);
    char *out = render(s, 0, 1);
    /* No sample, and no HELP/TYPE for a family nobody has. */
    assert_null(strstr(out, "gpufl_gpu_memory_temperature_celsius"));
    assert_null(strstr(out, "DCGM_FI_DEV_MEMORY_TEMP"));
    assert_null(strstr(out, "gpufl_host_cgroup_memory_limit_bytes"));
    assert_int_equal(count_of(out, "\ngpufl_gpu_fan_speed_ratio{"), 6); /* 8 - lost - device 2 */
    assert_null(strstr(out, "gpufl_gpu_fan_speed_ratio{gpu=\"2\""));
    free(out);
    free(s);
}

static void test_openmetrics(void **state) {
    (void)state;
    mon_snapshot_t *s = mf_snapshot_8();
    char *out = render(s, 1, 1);
    assert_true(has_line(out, "# TYPE gpufl_gpu_energy_joules counter"));
    assert_true(has_line(out, "# UNIT gpufl_gpu_energy_joules joules"));
    assert_true(has_line(out, "# HELP gpufl_gpu_energy_joules Energy used since the monitor "
                              "started (from the energy counter, else power over time)."));
    assert_true(has_line(out, "gpufl_gpu_energy_joules_total{" LABELS0 "} 1000.5"));
    assert_true(has_line(out, "# UNIT gpufl_gpu_utilization_ratio ratio"));
    assert_true(has_line(out, "# TYPE gpufl_monitor_scrapes counter"));
    assert_true(has_line(out, "gpufl_monitor_sample_seconds_bucket{hostname=\"node-a\","
                              "source=\"gpu\",le=\"1.0\"} 100"));
    /* DCGM's counter keeps its name: typed unknown, not suffixed. */
    assert_true(has_line(out, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown"));
    assert_null(strstr(out, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_total"));
    size_t n = strlen(out);
    assert_true(n > 6 && strcmp(out + n - 6, "# EOF\n") == 0);
    assert_int_equal(count_of(out, "# EOF"), 1);
    assert_string_equal(mon_metrics_content_type(1),
                        "application/openmetrics-text; version=1.0.0; charset=utf-8");
    assert_string_equal(mon_metrics_content_type(0), "text/plain; version=0.0.4; charset=utf-8");
    free(out);
    free(s);
}

static void test_host_only(void **state) {
    (void)state;
    mon_snapshot_t *s = mf_snapshot_host_only();
    char *out = render(s, 0, 1);
    assert_null(strstr(out, "gpufl_gpu_"));
    assert_null(strstr(out, "DCGM_"));
    assert_true(has_line(out, "gpufl_monitor_gpu_backend_up{hostname=\"node-a\"} 0"));
    assert_true(has_line(out, "# TYPE gpufl_monitor_gpu_backend_info gauge"));
    assert_true(has_line(out, "gpufl_monitor_gpu_backend_info{hostname=\"node-a\",reason=\""
                              "libnvidia-ml.so.1: cannot open shared object file\"} 1"));
    assert_true(has_line(out, "gpufl_host_memory_total_bytes{hostname=\"node-a\"} 64000000000"));
    free(out);
    out = render(s, 1, 0);
    assert_true(has_line(out, "# TYPE gpufl_monitor_gpu_backend info"));
    assert_true(strstr(out, "\ngpufl_monitor_gpu_backend_info{") != NULL);
    free(out);
    free(s);
}

#define DLABELS1                                                                                   \
    "gpu=\"1\",UUID=\"GPU-00000001-1111-2222-3333-444444444444\",pci_bus_id=\"00000000:19:00.0\"," \
    "device=\"nvidia1\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\""

static void test_dcgm_compat(void **state) {
    (void)state;
    mon_snapshot_t *s = mf_snapshot_8();
    char *out = render(s, 0, 1);
    assert_true(has_line(out, "DCGM_FI_DEV_FB_USED{" DLABELS1 "} 40960"));
    assert_true(has_line(out, "DCGM_FI_DEV_FB_FREE{" DLABELS1 "} 40960"));
    assert_true(has_line(out, "DCGM_FI_DEV_GPU_UTIL{" DLABELS1 "} 87"));
    assert_true(has_line(out, "DCGM_FI_DEV_POWER_USAGE{" DLABELS1 "} 612.345"));
    assert_true(has_line(out, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" DLABELS1 "} 123456789"));
    assert_true(has_line(out, "DCGM_FI_DEV_SM_CLOCK{" DLABELS1 "} 1980"));
    assert_true(has_line(out, "DCGM_FI_PROF_SM_ACTIVE{" DLABELS1 "} 0.8"));
    assert_true(has_line(out, "DCGM_FI_PROF_PCIE_RX_BYTES{" DLABELS1 "} 2000000000"));
    assert_true(has_line(out, "DCGM_FI_DEV_XID_ERRORS{" DLABELS1 "} 79"));
    assert_true(has_line(out, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"));
    /* MIG: the parent's index, DCGM's MIG labels. */
    assert_true(strstr(out, "DCGM_FI_DEV_GPU_UTIL{gpu=\"5\",UUID=\"MIG-aaaaaaaa-bbbb-cccc-dddd-"
                            "000000000007\",pci_bus_id=\"00000000:1D:00.0\",device=\"nvidia5\","
                            "modelName=\"NVIDIA H100 80GB HBM3\",GPU_I_PROFILE=\"3g.40gb\","
                            "GPU_I_ID=\"2\",Hostname=\"node-a\"} 87\n") != NULL);
    /* The lost device has no DCGM readings. */
    assert_null(strstr(out, "UUID=\"GPU-00000003"));
    free(out);
    free(s);
}

static void test_estimated_flops(void **state) {
    (void)state;
    mon_snapshot_t *s = mf_snapshot_8();
    snprintf(s->devices[2].model, sizeof s->devices[2].model, "NVIDIA H100 PCIe");
    snprintf(s->devices[4].model, sizeof s->devices[4].model, "NVIDIA Hyper9000");
    char *out = render(s, 0, 0);
    /* 989e12 x 0.80 x 0.50 x 0.25 */
    assert_true(strstr(out, "gpufl_gpu_estimated_flops{gpu=\"0\",") != NULL);
    assert_true(
        strstr(out, "model=\"NVIDIA H100 80GB HBM3\",hostname=\"node-a\"} 98900000000000\n") !=
        NULL);
    assert_true(strstr(out, "model=\"NVIDIA H100 PCIe\",hostname=\"node-a\"} 75600000000000\n") !=
                NULL);
    assert_true(strstr(out, "gpufl_gpu_peak_flops{gpu=\"0\",") != NULL);
    assert_true(has_line(out, "# HELP gpufl_gpu_estimated_flops ESTIMATE of FLOP/s: peak x SM "
                              "active x SM occupancy x tensor active."));
    /* Unknown model, MIG instances, the lost device: no estimate. */
    assert_null(strstr(out, "gpufl_gpu_estimated_flops{gpu=\"4\""));
    assert_null(strstr(out, "gpufl_gpu_estimated_flops{gpu=\"6\""));
    assert_null(strstr(out, "gpufl_gpu_estimated_flops{gpu=\"3\""));
    assert_int_equal(count_of(out, "\ngpufl_gpu_estimated_flops{"), 4);
    /* An input missing: none either. */
    mf_set(s->devices[0].cols, s->devices[0].ncols, "tensor_active_pct", 0, 0);
    free(out);
    out = render(s, 0, 0);
    assert_null(strstr(out, "gpufl_gpu_estimated_flops{gpu=\"0\""));
    free(out);
    free(s);
}

static void test_label_escaping(void **state) {
    (void)state;
    mon_snapshot_t *s = mf_snapshot_host_only();
    snprintf(s->hostname, sizeof s->hostname, "a\"b\\c\nd");
    s->gpu_available = 1;
    s->ndevices = 1;
    mf_device(&s->devices[0], 0);
    snprintf(s->devices[0].model, sizeof s->devices[0].model, "Weird \"GPU\" \\ 1");
    s->devices[0].uuid[0] = '\0'; /* empty: no label */
    char *out = render(s, 0, 0);
    assert_true(has_line(out, "gpufl_host_cpu_utilization_ratio{hostname=\"a\\\"b\\\\c\\nd\"} "
                              "0.125"));
    assert_true(has_line(out, "gpufl_gpu_temperature_celsius{gpu=\"0\",pci_bus_id=\"00000000:18:"
                              "00.0\",device=\"nvidia0\",model=\"Weird \\\"GPU\\\" \\\\ 1\","
                              "hostname=\"a\\\"b\\\\c\\nd\"} 61"));
    assert_null(strstr(out, "uuid="));
    free(out);
    free(s);
}

#define PROC_GPU0 "gpu=\"0\",uuid=\"GPU-00000000-1111-2222-3333-444444444444\""

/* One sample per process with its memory, labelled with who it is; empty
 * labels, processes without memory and a lost device's list left out. */
static void test_process_series(void **state) {
    (void)state;
    mon_snapshot_t *s = mf_snapshot_8();
    char *out = render(s, 0, 0);
    assert_true(has_line(out, "# TYPE gpufl_process_memory_used_bytes gauge"));
    assert_true(has_line(
        out,
        "gpufl_process_memory_used_bytes{" PROC_GPU0
        ",pid=\"4242\",comm=\"python3\",user=\"alice\",container=\"0123456789abcdef0123456789abcdef"
        "0123456789abcdef0123456789abcdef\",pod_uid=\"12345678-1234-1234-1234-123456789abc\"} "
        "2147483648"));
    assert_true(has_line(out,
                         "gpufl_process_memory_used_bytes{" PROC_GPU0
                         ",pid=\"4343\",comm=\"train\",user=\"bob\",slurm_job=\"987\"} 1048576"));
    assert_int_equal(count_of(out, "gpufl_process_memory_used_bytes{"), 2);
    assert_null(strstr(out, "pid=\"4444\"")); /* no memory given */
    assert_null(strstr(out, "pid=\"4545\"")); /* its device is lost */
    /* Utilization as ratios, only where NVML's samples gave it. */
    assert_true(has_line(out, "# TYPE gpufl_process_sm_utilization_ratio gauge"));
    assert_true(has_line(
        out,
        "gpufl_process_sm_utilization_ratio{" PROC_GPU0
        ",pid=\"4242\",comm=\"python3\",user=\"alice\",container=\"0123456789abcdef0123456789abcdef"
        "0123456789abcdef0123456789abcdef\",pod_uid=\"12345678-1234-1234-1234-123456789abc\"} "
        "0.37"));
    assert_int_equal(count_of(out, "gpufl_process_sm_utilization_ratio{"), 1);
    assert_int_equal(count_of(out, "gpufl_process_memory_utilization_ratio{"), 1);
    assert_non_null(strstr(out, "pod_uid=\"12345678-1234-1234-1234-123456789abc\"} 0.12\n"));
    free(out);
    /* OpenMetrics: the family with its unit. */
    out = render(s, 1, 0);
    assert_true(has_line(out, "# UNIT gpufl_process_memory_used_bytes bytes"));
    free(out);
    /* Escaped: a command name may hold any byte but NUL. */
    snprintf(s->devices[0].processes[1].comm, sizeof s->devices[0].processes[1].comm, "a\"b\\c\nd");
    out = render(s, 0, 0);
    assert_true(has_line(out, "gpufl_process_memory_used_bytes{" PROC_GPU0
                              ",pid=\"4343\",comm=\"a\\\"b\\\\c\\nd\",user=\"bob\","
                              "slurm_job=\"987\"} 1048576"));
    free(out);
    /* No process anywhere: no family, not even its HELP. */
    for (int i = 0; i < s->ndevices; i++) s->devices[i].nprocesses = 0;
    out = render(s, 0, 0);
    assert_null(strstr(out, "gpufl_process_memory_used_bytes"));
    free(out);
    free(s);
}

static void test_buffer_cap(void **state) {
    (void)state;
    mon_buf_t b = {.max = 16};
    assert_int_equal(mon_buf_append(&b, "0123456789", 10), 0);
    assert_int_equal(mon_buf_append(&b, "abcdefghij", 10), -1);
    assert_int_equal(b.len, 15); /* what fitted, and its terminator */
    assert_string_equal(b.data, "0123456789abcde");
    assert_int_equal(mon_buf_append(&b, "x", 1), -1);
    assert_int_equal(b.len, 15);
    assert_true(b.cap <= 16);
    mon_buf_free(&b);

    /* A render past the cap fails and holds a prefix of the full text. */
    mon_snapshot_t *s = mf_snapshot_8();
    char *full = render(s, 1, 1);
    mon_buf_t small = {.max = 4096};
    assert_int_equal(mon_render_metrics(&small, s, 1, 1), -1);
    assert_int_equal(small.len, 4095);
    assert_memory_equal(small.data, full, small.len);
    mon_buf_free(&small);
    /* Printf longer than its stack buffer. */
    mon_buf_t big = {0};
    char line[2000];
    memset(line, 'z', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    assert_int_equal(mon_buf_printf(&big, "<%s>", line), 0);
    assert_int_equal(big.len, 2001);
    mon_buf_free(&big);
    free(full);
    free(s);
}

static mon_device_t *row(int64_t ts_ns, double energy_mj, double power_mw, double mask,
                         double pcie_tx) {
    static mon_device_t d[4];
    static int next;
    mon_device_t *x = &d[next++ % 4];
    mf_device(x, 0);
    x->ts_ns = ts_ns;
    mf_set(x->cols, x->ncols, "energy_mj", energy_mj, energy_mj >= 0);
    mf_set(x->cols, x->ncols, "power_mw", power_mw, power_mw >= 0);
    mf_set(x->cols, x->ncols, "throttle_reasons", mask, mask >= 0);
    mf_set(x->cols, x->ncols, "pcie_tx_bytes_per_s", pcie_tx, pcie_tx >= 0);
    mf_set(x->cols, x->ncols, "pcie_rx_bytes_per_s", 0, 0);
    return x;
}

static void test_counters_advance(void **state) {
    (void)state;
    const int64_t s1 = 1000000000LL;
    mon_device_t *a = row(10 * s1, 5000, 100000, 0x5, 1000);
    a->counters.energy_joules = 99; /* seen first: starts at zero */
    mon_counters_advance(a, NULL);
    assert_true(a->counters.energy_joules == 0 && a->counters.pcie_tx_bytes == 0);

    /* 2 s later: energy from the counter's delta, bits 0 and 2 both ends,
     * bit 1 at the end only (half), bytes by trapezoid. */
    mon_device_t *b = row(12 * s1, 7500, 100000, 0x7, 3000);
    mon_counters_advance(b, a);
    assert_true(fabs(b->counters.energy_joules - 2.5) < 1e-9);
    assert_true(fabs(b->counters.throttle_seconds[0] - 2.0) < 1e-9);
    assert_true(fabs(b->counters.throttle_seconds[1] - 1.0) < 1e-9);
    assert_true(fabs(b->counters.throttle_seconds[2] - 2.0) < 1e-9);
    assert_true(b->counters.throttle_seconds[3] == 0);
    assert_true(fabs(b->counters.pcie_tx_bytes - 4000) < 1e-9);
    assert_true(b->counters.pcie_rx_bytes == 0);

    /* The energy counter restarts (driver reload): that interval adds nothing. */
    mon_device_t *c = row(13 * s1, 100, 100000, 0x0, 3000);
    mon_counters_advance(c, b);
    assert_true(fabs(c->counters.energy_joules - 2.5) < 1e-9);
    assert_true(fabs(c->counters.throttle_seconds[0] - 2.5) < 1e-9); /* set at one end */
    assert_true(fabs(c->counters.pcie_tx_bytes - 7000) < 1e-9);

    /* No energy counter: power (mW) over time, trapezoid: (100 + 300) / 2 W x 1 s. */
    mon_device_t *d = row(14 * s1, -1, 300000, -1, -1);
    mon_counters_advance(d, c);
    assert_true(fabs(d->counters.energy_joules - (2.5 + 200)) < 1e-9);
    /* Mask unknown at one end: no throttle time; rate at one end held flat. */
    assert_true(fabs(d->counters.throttle_seconds[0] - 2.5) < 1e-9);
    assert_true(fabs(d->counters.pcie_tx_bytes - 10000) < 1e-9);

    /* Same time (or clock backwards): nothing added, counters carried. */
    mon_device_t *e = row(14 * s1, 9e9, 300000, 0xff, 1e9);
    mon_counters_advance(e, d);
    assert_memory_equal(&e->counters, &d->counters, sizeof e->counters);

    /* A once-a-second rate (GPM) between 200 ms rows: carried forward with
     * the time it was read, it adds nothing until the next reading, which
     * adds the trapezoid over the real second between the two readings. */
    mon_device_t *g[6];
    double before = 0;
    for (int i = 0; i < 6; i++) {
        int64_t t = 20 * s1 + i * (s1 / 5);
        g[i] = row(t, -1, -1, -1, i == 0 ? 1000 : i == 5 ? 3000 : 1000);
        for (int k = 0; k < g[i]->ncols; k++)
            if (strcmp(g[i]->cols[k].column, "pcie_tx_bytes_per_s") == 0)
                g[i]->cols[k].taken_ns = i == 5 ? t : 20 * s1; /* carried: read at 20 s */
        if (i == 0) {
            mon_counters_advance(g[0], NULL);
            before = g[0]->counters.pcie_tx_bytes;
            continue;
        }
        mon_counters_advance(g[i], g[i - 1]);
        if (i < 5) assert_true(g[i]->counters.pcie_tx_bytes == before);
    }
    assert_true(fabs(g[5]->counters.pcie_tx_bytes - before - 2000) <
                1e-9); /* (1000+3000)/2 x 1 s */
}

static void test_counters_xid(void **state) {
    (void)state;
    mon_device_t *d = calloc(1, sizeof *d);
    assert_non_null(d);
    mon_counters_xid(d, 79);
    mon_counters_xid(d, 13);
    mon_counters_xid(d, 79);
    assert_int_equal(d->counters.nxids, 2);
    assert_int_equal(d->counters.xids[0].code, 79);
    assert_int_equal(d->counters.xids[0].count, 2);
    assert_int_equal(d->counters.xids[1].count, 1);
    assert_int_equal(d->counters.last_xid, 79);
    for (unsigned code = 100; code < 100 + MON_MAX_XIDS; code++) mon_counters_xid(d, code);
    assert_int_equal(d->counters.nxids, MON_MAX_XIDS);
    assert_int_equal(d->counters.xid_overflow, 2); /* the table was full for the last two */
    assert_int_equal(d->counters.last_xid, 100 + MON_MAX_XIDS - 1);
    mon_counters_xid(d, 13); /* a code with a slot still counts there */
    assert_int_equal(d->counters.xids[1].count, 2);
    assert_int_equal(d->counters.xid_overflow, 2);

    /* Rendered per code, the overflow as xid="other"; XIDs survive advance. */
    mon_snapshot_t *s = mf_snapshot_host_only();
    s->gpu_available = 1;
    s->ndevices = 1;
    mf_device(&s->devices[0], 0);
    s->devices[0].counters = d->counters;
    mon_device_t *next = calloc(1, sizeof *next);
    assert_non_null(next);
    mf_device(next, 0);
    next->ts_ns = s->devices[0].ts_ns + 1000000000LL;
    mon_counters_advance(next, &s->devices[0]);
    s->devices[0] = *next;
    char *out = render(s, 0, 1);
    assert_true(strstr(out, ",xid=\"13\"} 2\n") != NULL);
    assert_true(strstr(out, ",xid=\"79\"} 2\n") != NULL);
    assert_true(strstr(out, ",xid=\"other\"} 2\n") != NULL);
    assert_true(strstr(out, "Hostname=\"node-a\"} 13\n") != NULL); /* DCGM: the last XID */
    free(out);
    free(next);
    free(s);
    free(d);
}

static void test_doc_rows(void **state) {
    (void)state;
    mon_buf_t b = {0};
    assert_int_equal(mon_metrics_doc(&b), 0);
    assert_non_null(strstr(b.data,
                           "| `gpufl_gpu_energy_joules_total` | counter | joules | device "
                           "labels | `energy_mj` | `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` |"));
    assert_non_null(strstr(b.data, "| `DCGM_FI_DEV_ENC_UTIL` |"));
    mon_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eight_gpus_prometheus),
        cmocka_unit_test(test_absent_values_left_out),
        cmocka_unit_test(test_openmetrics),
        cmocka_unit_test(test_host_only),
        cmocka_unit_test(test_dcgm_compat),
        cmocka_unit_test(test_estimated_flops),
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_process_series),
        cmocka_unit_test(test_buffer_cap),
        cmocka_unit_test(test_counters_advance),
        cmocka_unit_test(test_counters_xid),
        cmocka_unit_test(test_doc_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
