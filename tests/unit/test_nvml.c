// SPDX-License-Identifier: Apache-2.0
/*
 * test_nvml.c - lib/nvidia/nvml.c against the scriptable fake libnvidia-ml
 * (tests/fakes/fake_nvml.c): identity, MIG, exact sample values, counter
 * rates, GPM, refusals not retried, lost GPUs, load and init failures, an
 * old driver through the symbol fallbacks, and the calls each sample makes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "nvidia/nvml.h"
#include "nvidia/nvml_api.h"
#include "test_util.h"

#ifndef GPUFL_FAKE_NVML_PATH
#error "GPUFL_FAKE_NVML_PATH must name libfake_nvml.so"
#endif
#ifndef GPUFL_FAKE_NVML_OLD_PATH
#error "GPUFL_FAKE_NVML_OLD_PATH must name libfake_nvml_old.so"
#endif

#define SECOND_NS INT64_C(1000000000)
#define MIB       INT64_C(1048576)

/* The fake's own helpers, reached through a handle of our own on the same
 * library the module loads (one copy, one set of counters). */
typedef struct fake {
    void *handle;
    unsigned long long (*calls)(const char *name);
    unsigned long long (*field_calls)(unsigned int field_id);
    unsigned long long (*total_calls)(void);
    long (*gpm_live)(void);
    int (*refcount)(void);
} fake_t;

static fake_t fake_new, fake_old;
/* The handle a test has open, closed by teardown when an assertion ended the
 * test early (else the fake stays initialised and the next test sees its
 * old script). */
static gpufl__nvml_t *open_handle;

static void fake_load(fake_t *f, const char *path) {
    f->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (f->handle == NULL) fail_msg("dlopen %s: %s", path, dlerror());
    void *p;
#define RESOLVE(member, name)                                                                      \
    p = dlsym(f->handle, name);                                                                    \
    assert_non_null(p);                                                                            \
    memcpy(&f->member, &p, sizeof p)
    RESOLVE(calls, "fake_nvml_calls");
    RESOLVE(field_calls, "fake_nvml_field_calls");
    RESOLVE(total_calls, "fake_nvml_total_calls");
    RESOLVE(gpm_live, "fake_nvml_gpm_live");
    RESOLVE(refcount, "fake_nvml_refcount");
#undef RESOLVE
}

static int setup_suite(void **state) {
    (void)state;
    fake_load(&fake_new, GPUFL_FAKE_NVML_PATH);
    fake_load(&fake_old, GPUFL_FAKE_NVML_OLD_PATH);
    unsetenv("GPUFL_NVML_LIBRARY");
    return 0;
}

static int teardown_test(void **state) {
    (void)state;
    gpufl__nvml_close(open_handle);
    open_handle = NULL;
    return 0;
}

static int teardown_suite(void **state) {
    (void)state;
    dlclose(fake_new.handle);
    dlclose(fake_old.handle);
    return 0;
}

/* Writes a script, with ' standing for " so scripts read as JSON, and
 * points $GPUFL_FAKE_NVML at it. */
static void script(const char *text) {
    static char path[1200];
    snprintf(path, sizeof path, "%s/script.json", tu_scratch_dir("nvml", "script"));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (const char *c = text; *c; c++) fputc(*c == '\'' ? '"' : *c, f);
    assert_int_equal(fclose(f), 0);
    setenv("GPUFL_FAKE_NVML", path, 1);
}

static gpufl__nvml_t *open_ok(const char *library) {
    gpufl__nvml_t *n = NULL;
    char why[256] = "untouched";
    int rc = gpufl__nvml_open(&n, library, why, sizeof why);
    if (rc != 0) fail_msg("gpufl__nvml_open: %d: %s", rc, why);
    assert_non_null(n);
    open_handle = n;
    return n;
}

/* Closes, and checks what every test must leave behind: NVML shut down, GPM
 * samples freed, the blocking PCIe throughput query never made. */
static void close_checked(gpufl__nvml_t *n, const fake_t *f) {
    open_handle = NULL;
    gpufl__nvml_close(n);
    assert_int_equal(f->refcount(), 0);
    assert_int_equal(f->gpm_live(), 0);
    assert_int_equal(f->calls("nvmlDeviceGetPcieThroughput"), 0);
}

static gpufl__gpu_sample_t sample_ok(gpufl__nvml_t *n, int device, int64_t now_ns) {
    gpufl__gpu_sample_t s;
    int rc = gpufl__nvml_sample(&s, n, device, now_ns);
    if (rc != 0) fail_msg("gpufl__nvml_sample: %d: %s", rc, gpufl_last_error());
    return s;
}

/* An H100 SXM as NVML shows it, with three samples of everything. Element 0
 * of mem_* and power_limit_mw is read by open. It has GPM, so its PCIe and
 * NVLink rates come from GPM; its byte counters are there but not asked. */
static const char *const h100 =
    "{'driver_version': '580.95.05', 'nvml_version': '13.580.95.05', 'cuda_driver_version': 13000,"
    " 'gpus': [{'name': 'NVIDIA H100 80GB HBM3', 'uuid': "
    "'GPU-710820da-37d0-25b3-c188-a01f9a4ecce8',"
    "  'pci_bus_id': '00000000:1B:00.0', 'cc': [9, 0], 'sm_count': 132, 'cores': 16896,"
    "  'memory_total': 85520809984, 'memory_reserved': 503316480, 'mig_mode': 0, 'gpm': true,"
    "  'nvlink_links': 18, 'nvlink_active': 18, 'ecc': true,"
    "  'samples': {"
    "   'mem_used': [0, 1073741824, 2147483648, 3221225472],"
    "   'mem_free': [85017493504, 83943751680, 82870009856, 81796268032],"
    "   'power_limit_mw': [700000, 700000, 650000, 650000],"
    "   'util_gpu': [10, 20, 30], 'util_mem': [1, 2, 3], 'temp_gpu': [40, 41, 42],"
    "   'power_mw': [100000, 200000, 300000], 'clock_sm': [1980, 1755, 1410],"
    "   'clock_gfx': [1980, 1755, 1410], 'clock_mem': [2619], 'fan': [30, 35, 40],"
    "   'throttle': [1, 4, 68], 'temp_mem': [45, 46, 47],"
    "   'energy_mj': [1000000, 1100000, 1250000],"
    "   'pcie_tx_bytes': [1000000, 3000000, 3500000], 'pcie_rx_bytes': [0, 500000, 1500000],"
    "   'ecc_sbe': [0, 1, 2], 'ecc_dbe': [0, 0, 1],"
    "   'nvlink_tx_kib': [100, 1124, 2148], 'nvlink_rx_kib': [0, 512, 512],"
    "   'procs': [[[1234, 1048576], [5678, null]], [[1234, 2097152]], []],"
    "   'graphics_procs': [[[1234, 1048576], [999, 2048]], [], []],"
    "   'proc_util': [[[1234, 80, 30], [1234, 61, 10], [999, 5, 1], [31337, 99, 99]], []],"
    "   'gpm': {'sm_util': [55.5, 60.0], 'sm_occupancy': [25.25], 'tensor': [12.5, 0.0],"
    "           'dram_bw': [33.0, 34.5], 'pcie_tx_mib': [3.0, 0.5], 'pcie_rx_mib': [1.0, 1.5],"
    "           'nvlink_tx_mib': [2.0, 1.0], 'nvlink_rx_mib': [1.0, 0.0]}}},"
    " {'name': 'Tesla T4', 'uuid': 'GPU-00000000-0000-0000-0000-000000000004',"
    "  'pci_bus_id': '00000000:AF:00.0', 'cc': [7, 5], 'sm_count': 40, 'attributes_whole_gpu': "
    "true,"
    "  'memory_total': 16106127360,"
    "  'ecc': false, 'samples': {'power_limit_mw': [70000]}}]}";

/* ---------------------------------------------------------------------- */
/* Identity                                                                 */
/* ---------------------------------------------------------------------- */

static void test_identity(void **state) {
    (void)state;
    script(h100);
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    assert_int_equal(gpufl__nvml_device_count(n), 2);
    assert_string_equal(gpufl__nvml_version(n), "13.580.95.05");
    assert_string_equal(gpufl__nvml_missing(n), "");

    const gpufl__gpu_info_t *g = gpufl__nvml_device_info(n, 0);
    assert_non_null(g);
    assert_int_equal(g->index, 0);
    assert_int_equal(g->mig_index, -1);
    assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(g->uuid, "GPU-710820da-37d0-25b3-c188-a01f9a4ecce8");
    assert_string_equal(g->pci_bus_id, "00000000:1B:00.0");
    assert_int_equal(g->cc_major, 9);
    assert_int_equal(g->cc_minor, 0);
    assert_int_equal(g->sm_count, 132);
    assert_int_equal(g->mem_total_bytes, INT64_C(85520809984));
    assert_string_equal(g->driver_version, "580.95.05");
    assert_int_equal(g->cuda_driver_version, 13000);
    assert_int_equal(g->mig_mode, 0);
    assert_int_equal(g->gpm_supported, 1);
    assert_int_equal(g->nvlink_links, 18);
    assert_int_equal(g->power_limit_mw, 700000);

    /* An older board: no MIG, no GPM, no NVLink, ECC off. */
    g = gpufl__nvml_device_info(n, 1);
    assert_int_equal(g->index, 1);
    assert_string_equal(g->name, "Tesla T4");
    assert_string_equal(g->pci_bus_id, "00000000:AF:00.0");
    assert_int_equal(g->cc_major, 7);
    assert_int_equal(g->cc_minor, 5);
    assert_int_equal(g->sm_count, 40);
    assert_int_equal(g->mig_mode, GPUFL_GPU_UNKNOWN);
    assert_int_equal(g->gpm_supported, 0);
    assert_int_equal(g->nvlink_links, 0);
    assert_int_equal(g->power_limit_mw, 70000);

    assert_null(gpufl__nvml_device_info(n, 2));
    assert_null(gpufl__nvml_device_info(n, -1));
    /* The SM count: the attributes' multiprocessor count where the driver
     * gives it (the T4 here), else cores / cores per SM (the H100). */
    assert_int_equal(fake_new.calls("nvmlDeviceGetAttributes_v2"), 2);
    assert_int_equal(fake_new.calls("nvmlDeviceGetNumGpuCores"), 1);
    /* Only the GPM GPU holds GPM samples. */
    assert_int_equal(fake_new.gpm_live(), 2);
    close_checked(n, &fake_new);
}

static void test_sm_count(void **state) {
    (void)state;
    /* Core counts that do not divide, or an architecture we do not know,
     * give no SM count rather than a wrong one. */
    script("{'gpus': [{'uuid': 'GPU-a', 'cc': [8, 0], 'cores': 6912},"
           " {'uuid': 'GPU-b', 'cc': [8, 6], 'cores': 10752},"
           " {'uuid': 'GPU-c', 'cc': [9, 0], 'cores': 16900},"
           " {'uuid': 'GPU-d', 'cc': [42, 0], 'cores': 16896},"
           " {'uuid': 'GPU-e', 'cc': [9, 0]}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    assert_int_equal(gpufl__nvml_device_info(n, 0)->sm_count, 108); /* A100 */
    assert_int_equal(gpufl__nvml_device_info(n, 1)->sm_count, 84);  /* RTX 3090 */
    assert_int_equal(gpufl__nvml_device_info(n, 2)->sm_count, GPUFL_GPU_UNKNOWN);
    assert_int_equal(gpufl__nvml_device_info(n, 3)->sm_count, GPUFL_GPU_UNKNOWN);
    assert_int_equal(gpufl__nvml_device_info(n, 4)->sm_count, GPUFL_GPU_UNKNOWN);
    close_checked(n, &fake_new);
}

static void test_partial_identity(void **state) {
    (void)state;
    /* NVML refuses nearly everything: the device is still listed, unknowns are -1. */
    script("{'gpus': [{'uuid': 'GPU-x', 'not_supported': ['nvmlDeviceGetAttributes_v2',"
           " 'nvmlDeviceGetAttributes', 'nvmlDeviceGetCudaComputeCapability',"
           " 'nvmlDeviceGetPciInfo_v3', 'nvmlDeviceGetEnforcedPowerLimit']}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    const gpufl__gpu_info_t *g = gpufl__nvml_device_info(n, 0);
    assert_string_equal(g->name, "");
    assert_string_equal(g->uuid, "GPU-x");
    assert_string_equal(g->pci_bus_id, "");
    assert_int_equal(g->cc_major, GPUFL_GPU_UNKNOWN);
    assert_int_equal(g->sm_count, GPUFL_GPU_UNKNOWN);
    assert_int_equal(g->mem_total_bytes, GPUFL_GPU_UNKNOWN);
    assert_int_equal(g->power_limit_mw, GPUFL_GPU_UNKNOWN);
    assert_int_equal(g->mig_mode, GPUFL_GPU_UNKNOWN);

    gpufl__gpu_sample_t s = sample_ok(n, 0, SECOND_NS);
    assert_int_equal(s.gpu_util_pct, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.mem_used_bytes, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.temp_mem_c, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_true(s.throttle_reasons == UINT64_MAX);
    assert_int_equal(s.nprocs, GPUFL_GPU_UNKNOWN);
    assert_true(s.sm_active_pct < 0);
    close_checked(n, &fake_new);
}

/* ---------------------------------------------------------------------- */
/* Samples                                                                  */
/* ---------------------------------------------------------------------- */

static void test_sample_values(void **state) {
    (void)state;
    script(h100);
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);

    gpufl__gpu_sample_t s = sample_ok(n, 0, SECOND_NS);
    assert_int_equal(s.gpu_util_pct, 10);
    assert_int_equal(s.mem_util_pct, 1);
    assert_int_equal(s.mem_used_bytes, INT64_C(1073741824)); /* v2: reserved memory apart */
    assert_int_equal(s.mem_free_bytes, INT64_C(83943751680));
    assert_int_equal(s.mem_total_bytes, INT64_C(85520809984));
    assert_int_equal(s.temp_gpu_c, 40);
    assert_int_equal(s.temp_mem_c, 45);
    assert_int_equal(s.power_mw, 100000);
    assert_int_equal(s.power_limit_mw, 700000);
    assert_int_equal(s.energy_mj, 1000000);
    assert_int_equal(s.clock_sm_mhz, 1980);
    assert_int_equal(s.clock_gfx_mhz, 1980);
    assert_int_equal(s.clock_mem_mhz, 2619);
    assert_int_equal(s.fan_pct, 30);
    assert_true(s.throttle_reasons == 1);
    assert_int_equal(s.ecc_sbe_volatile, 0);
    assert_int_equal(s.ecc_dbe_volatile, 0);
    /* First sample: no interval yet. */
    assert_int_equal(s.pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.pcie_rx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.nvlink_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.nvlink_rx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_true(s.sm_active_pct < 0 && s.sm_occupancy_pct < 0);
    assert_true(s.tensor_active_pct < 0 && s.dram_bw_util_pct < 0);
    /* Compute and graphics lists merged, 1234 once. */
    assert_int_equal(s.nprocs, 3);
    assert_int_equal(s.procs[0].pid, 1234);
    assert_int_equal(s.procs[0].used_bytes, 1048576);
    assert_int_equal(s.procs[1].pid, 5678);
    assert_int_equal(s.procs[1].used_bytes, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.procs[2].pid, 999);
    assert_int_equal(s.procs[2].used_bytes, 2048);
    /* Utilization: the mean of each process's samples (70.5 rounds up), 0
     * for a listed process without one; an unlisted pid's are not kept. */
    assert_int_equal(s.procs[0].sm_util_pct, 71);
    assert_int_equal(s.procs[0].mem_util_pct, 20);
    assert_int_equal(s.procs[1].sm_util_pct, 0);
    assert_int_equal(s.procs[1].mem_util_pct, 0);
    assert_int_equal(s.procs[2].sm_util_pct, 5);
    assert_int_equal(s.procs[2].mem_util_pct, 1);

    /* Half a second later. */
    s = sample_ok(n, 0, SECOND_NS + SECOND_NS / 2);
    assert_int_equal(s.gpu_util_pct, 20);
    assert_int_equal(s.mem_used_bytes, INT64_C(2147483648));
    assert_int_equal(s.power_mw, 200000);
    assert_int_equal(s.power_limit_mw, 650000); /* the limit changed at run time */
    assert_int_equal(s.energy_mj, 1100000);
    assert_int_equal(s.clock_sm_mhz, 1755);
    assert_int_equal(s.clock_mem_mhz, 2619);
    assert_true(s.throttle_reasons == NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP);
    assert_int_equal(s.ecc_sbe_volatile, 1);
    assert_int_equal(s.pcie_tx_bytes_per_s, 3 * MIB); /* GPM's MiB/s */
    assert_int_equal(s.pcie_rx_bytes_per_s, MIB);
    assert_int_equal(s.nvlink_tx_bytes_per_s, 2 * MIB);
    assert_int_equal(s.nvlink_rx_bytes_per_s, MIB);
    assert_true(s.sm_active_pct == 55.5);
    assert_true(s.sm_occupancy_pct == 25.25);
    assert_true(s.tensor_active_pct == 12.5);
    assert_true(s.dram_bw_util_pct == 33.0);
    assert_int_equal(s.nprocs, 1);
    assert_int_equal(s.procs[0].pid, 1234);
    assert_int_equal(s.procs[0].used_bytes, 2097152);
    /* No sample since the last call (NOT_FOUND): it ran nothing. */
    assert_int_equal(s.procs[0].sm_util_pct, 0);
    assert_int_equal(s.procs[0].mem_util_pct, 0);

    /* One second later. */
    s = sample_ok(n, 0, 2 * SECOND_NS + SECOND_NS / 2);
    assert_int_equal(s.temp_mem_c, 47);
    assert_int_equal(s.fan_pct, 40);
    assert_true(s.throttle_reasons == (NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP |
                                       NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN));
    assert_int_equal(s.ecc_sbe_volatile, 2);
    assert_int_equal(s.ecc_dbe_volatile, 1);
    assert_int_equal(s.pcie_tx_bytes_per_s, MIB / 2);
    assert_int_equal(s.pcie_rx_bytes_per_s, MIB + MIB / 2);
    assert_int_equal(s.nvlink_tx_bytes_per_s, MIB);
    assert_int_equal(s.nvlink_rx_bytes_per_s, 0);
    assert_true(s.sm_active_pct == 60.0);
    assert_true(s.sm_occupancy_pct == 25.25); /* the script's last value repeats */
    assert_true(s.tensor_active_pct == 0.0);
    assert_true(s.dram_bw_util_pct == 34.5);
    assert_int_equal(s.nprocs, 0);

    /* With GPM the byte counters are not read at all; the energy counter,
     * cheap here, at every sample. */
    assert_int_equal(fake_new.field_calls(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX), 0);
    assert_int_equal(fake_new.field_calls(NVML_FI_DEV_PCIE_COUNT_TX_BYTES), 0);
    assert_int_equal(fake_new.field_calls(NVML_FI_DEV_MEMORY_TEMP), 3);
    assert_int_equal(fake_new.calls("nvmlDeviceGetTotalEnergyConsumption"), 3);
    assert_int_equal(fake_new.calls("nvmlGpmSampleGet"), 3);
    assert_int_equal(fake_new.calls("nvmlGpmMetricsGet"), 2);
    close_checked(n, &fake_new);
}

static void test_devices_sample_apart(void **state) {
    (void)state;
    script(h100);
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    /* The T4 answers only memory and its power limit; its unknowns do not
     * disturb the H100's rates. */
    gpufl__gpu_sample_t t4 = sample_ok(n, 1, SECOND_NS);
    assert_int_equal(t4.mem_total_bytes, INT64_C(16106127360));
    assert_int_equal(t4.mem_used_bytes, 0);
    assert_int_equal(t4.gpu_util_pct, GPUFL_GPU_UNKNOWN);
    sample_ok(n, 0, SECOND_NS);
    t4 = sample_ok(n, 1, 2 * SECOND_NS);
    assert_int_equal(t4.pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_true(t4.sm_active_pct < 0);
    gpufl__gpu_sample_t s = sample_ok(n, 0, 2 * SECOND_NS);
    assert_int_equal(s.pcie_tx_bytes_per_s, 3 * MIB);
    /* ECC is off on the T4: its ECC counters are never asked for. Only the
     * H100's two batches asked. */
    assert_int_equal(fake_new.field_calls(NVML_FI_DEV_ECC_SBE_VOL_TOTAL), 2);

    gpufl__gpu_sample_t bad;
    assert_int_equal(gpufl__nvml_sample(&bad, n, 2, SECOND_NS), GPUFL_EINVAL);
    assert_int_equal(gpufl__nvml_sample(&bad, n, -1, SECOND_NS), GPUFL_EINVAL);
    assert_int_equal(gpufl__nvml_sample(NULL, n, 0, SECOND_NS), GPUFL_EINVAL);
    close_checked(n, &fake_new);
}

static void test_counter_rates(void **state) {
    (void)state;
    /* A failed read, a counter that went backwards and a clock that did not
     * advance each leave that interval unknown; the next one is measured. */
    script("{'gpus': [{'uuid': 'GPU-r', 'memory_total': 1000, 'samples': {"
           " 'pcie_tx_bytes': [1000, 2000, null, 5000, 7000, 4000, 6000, 8000, 9000],"
           " 'pcie_rx_bytes': [0]}}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    int64_t t = SECOND_NS;
    assert_int_equal(sample_ok(n, 0, t).pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_int_equal(sample_ok(n, 0, t += SECOND_NS).pcie_tx_bytes_per_s, 1000);
    assert_int_equal(sample_ok(n, 0, t += SECOND_NS).pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_int_equal(sample_ok(n, 0, t += SECOND_NS).pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_int_equal(sample_ok(n, 0, t += SECOND_NS / 4).pcie_tx_bytes_per_s, 8000);
    assert_int_equal(sample_ok(n, 0, t += SECOND_NS).pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_int_equal(sample_ok(n, 0, t += 2 * SECOND_NS).pcie_tx_bytes_per_s, 1000);
    assert_int_equal(sample_ok(n, 0, t).pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_int_equal(sample_ok(n, 0, t += SECOND_NS).pcie_tx_bytes_per_s, 1000);
    assert_int_equal(sample_ok(n, 0, t).pcie_rx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    close_checked(n, &fake_new);
}

static void test_counter_wrap32(void **state) {
    (void)state;
    /* Drivers give the PCIe byte counters as unsigned int: they wrap at 4 GiB. */
    script("{'gpus': [{'uuid': 'GPU-w', 'memory_total': 1000, 'field_types': {'pcie_tx_bytes': 1},"
           " 'samples': {'pcie_tx_bytes': [4294967000, 704, 4000], 'pcie_rx_bytes': [5, 3]}}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    sample_ok(n, 0, SECOND_NS);
    gpufl__gpu_sample_t s = sample_ok(n, 0, 2 * SECOND_NS);
    assert_int_equal(s.pcie_tx_bytes_per_s, 1000);
    assert_int_equal(s.pcie_rx_bytes_per_s, GPUFL_GPU_UNKNOWN); /* 64-bit and smaller: a reset */
    s = sample_ok(n, 0, 3 * SECOND_NS);
    assert_int_equal(s.pcie_tx_bytes_per_s, 3296);
    assert_int_equal(s.pcie_rx_bytes_per_s, 0);
    close_checked(n, &fake_new);
}

static void test_nvlink_counters(void **state) {
    (void)state;
    /* Without GPM (an A100), NVLink rates come from the KiB counters, asked
     * for as the sum over all links: the fake refuses any other scope. */
    script(
        "{'gpus': [{'uuid': 'GPU-a100', 'memory_total': 1000, 'nvlink_links': 12, 'nvlink_active': "
        "12,"
        " 'samples': {'nvlink_tx_kib': [100, 1124, 2148], 'nvlink_rx_kib': [0, 512, 512]}},"
        " {'uuid': 'GPU-pcie-only', 'memory_total': 1000, 'samples': {'nvlink_tx_kib': [1, 2]}}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    assert_int_equal(gpufl__nvml_device_info(n, 0)->nvlink_links, 12);
    assert_int_equal(gpufl__nvml_device_info(n, 1)->nvlink_links, 0);
    gpufl__gpu_sample_t s = sample_ok(n, 0, SECOND_NS);
    assert_int_equal(s.nvlink_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    s = sample_ok(n, 0, SECOND_NS + SECOND_NS / 2);
    assert_int_equal(s.nvlink_tx_bytes_per_s, 2097152); /* 1024 KiB in 0.5 s */
    assert_int_equal(s.nvlink_rx_bytes_per_s, 1048576); /* 512 KiB in 0.5 s */
    s = sample_ok(n, 0, 2 * SECOND_NS + SECOND_NS / 2);
    assert_int_equal(s.nvlink_tx_bytes_per_s, 1048576);
    assert_int_equal(s.nvlink_rx_bytes_per_s, 0);
    /* A GPU without active links is never asked for NVLink counters. */
    sample_ok(n, 1, SECOND_NS);
    sample_ok(n, 1, 2 * SECOND_NS);
    assert_int_equal(fake_new.field_calls(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX), 3);
    close_checked(n, &fake_new);
}

static void test_energy(void **state) {
    (void)state;
    /* A slow energy read (as on an H100 with driver 580, ~3 ms) is made at
     * the first sample and then at most every 30 s; a fast one every sample. */
    script("{'gpus': [{'uuid': 'GPU-slow', 'memory_total': 1000, 'energy_delay_us': 2000,"
           "  'samples': {'energy_mj': [100, 200, 300]}},"
           " {'uuid': 'GPU-fast', 'memory_total': 1000, 'samples': {'energy_mj': [7, 8, 9]}}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    assert_int_equal(sample_ok(n, 0, SECOND_NS).energy_mj, 100);
    assert_int_equal(sample_ok(n, 0, 2 * SECOND_NS).energy_mj, GPUFL_GPU_UNKNOWN);
    assert_int_equal(sample_ok(n, 0, 30 * SECOND_NS).energy_mj, GPUFL_GPU_UNKNOWN);
    assert_int_equal(sample_ok(n, 0, 31 * SECOND_NS).energy_mj, 200);
    assert_int_equal(sample_ok(n, 0, 32 * SECOND_NS).energy_mj, GPUFL_GPU_UNKNOWN);
    assert_int_equal(fake_new.calls("nvmlDeviceGetTotalEnergyConsumption"), 2);
    assert_int_equal(sample_ok(n, 1, SECOND_NS).energy_mj, 7);
    assert_int_equal(sample_ok(n, 1, SECOND_NS).energy_mj, 8);
    assert_int_equal(sample_ok(n, 1, 2 * SECOND_NS).energy_mj, 9);
    close_checked(n, &fake_new);
}

static void test_field_value_types(void **state) {
    (void)state;
    /* Drivers pick a field's value type; every integer type and double read right. */
    script("{'gpus': [{'uuid': 'GPU-t', 'memory_total': 1000, 'ecc': true,"
           " 'field_types': {'temp_mem': 5, 'pcie_tx_bytes': 4, 'pcie_rx_bytes': 2,"
           "                 'ecc_sbe': 0, 'ecc_dbe': 6},"
           " 'samples': {'temp_mem': [51], 'pcie_tx_bytes': [10, 20],"
           "  'pcie_rx_bytes': [30, 70], 'ecc_sbe': [7], 'ecc_dbe': [9]}}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    sample_ok(n, 0, SECOND_NS);
    gpufl__gpu_sample_t s = sample_ok(n, 0, 2 * SECOND_NS);
    assert_int_equal(s.temp_mem_c, 51);
    assert_int_equal(s.pcie_tx_bytes_per_s, 10);
    assert_int_equal(s.pcie_rx_bytes_per_s, 40);
    assert_int_equal(s.ecc_sbe_volatile, 7);
    assert_int_equal(s.ecc_dbe_volatile, 9);
    close_checked(n, &fake_new);
}

/* ---------------------------------------------------------------------- */
/* Refusals, failures, lost GPUs                                            */
/* ---------------------------------------------------------------------- */

static void test_refusals_not_retried(void **state) {
    (void)state;
    /* No fan, no memory temperature; compute processes not permitted; one
     * power read times out (a passing failure: asked again). */
    script("{'gpus': [{'uuid': 'GPU-n', 'memory_total': 1000, 'samples': {"
           " 'util_gpu': [5], 'util_mem': [6], 'power_mw': [1000, 2000, 3000],"
           " 'pcie_tx_bytes': [0], 'pcie_rx_bytes': [0],"
           " 'procs': [[[1, 10]]], 'graphics_procs': [[[2, 20]]]},"
           " 'errors': {'nvmlDeviceGetPowerUsage': [0, 10],"
           "            'nvmlDeviceGetComputeRunningProcesses_v3': [4]}}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    gpufl__gpu_sample_t s[3];
    for (int i = 0; i < 3; i++) s[i] = sample_ok(n, 0, (i + 1) * SECOND_NS);
    assert_int_equal(s[0].power_mw, 1000);
    assert_int_equal(s[1].power_mw, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s[2].power_mw, 3000);
    assert_int_equal(fake_new.calls("nvmlDeviceGetPowerUsage"), 3);
    assert_int_equal(s[2].fan_pct, GPUFL_GPU_UNKNOWN);
    assert_int_equal(fake_new.calls("nvmlDeviceGetFanSpeed"), 1);
    assert_int_equal(s[2].temp_mem_c, GPUFL_GPU_UNKNOWN);
    assert_int_equal(fake_new.field_calls(NVML_FI_DEV_MEMORY_TEMP), 1);
    assert_int_equal(fake_new.field_calls(NVML_FI_DEV_PCIE_COUNT_TX_BYTES), 3);
    assert_int_equal(fake_new.calls("nvmlDeviceGetTemperature"), 1);
    assert_int_equal(fake_new.calls("nvmlDeviceGetClockInfo"), 3); /* one per clock, once */
    /* Processes: the refused list is dropped, the other still read. */
    assert_int_equal(fake_new.calls("nvmlDeviceGetComputeRunningProcesses_v3"), 1);
    assert_int_equal(fake_new.calls("nvmlDeviceGetGraphicsRunningProcesses_v3"), 3);
    assert_int_equal(s[2].nprocs, 1);
    assert_int_equal(s[2].procs[0].pid, 2);
    /* No GPM on this GPU: never sampled. */
    assert_int_equal(fake_new.calls("nvmlGpmSampleGet"), 0);
    close_checked(n, &fake_new);
}

static void test_calls_per_sample(void **state) {
    (void)state;
    /* The H100 of the script answers everything: 17 calls a sample once GPM
     * has a previous snapshot and while processes are listed (see nvml.c's
     * header), one less without processes (no utilization call). */
    script(h100);
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    unsigned long long before = fake_new.total_calls();
    sample_ok(n, 0, SECOND_NS);
    unsigned long long first = fake_new.total_calls() - before;
    assert_int_equal(first, 16); /* no GPM metrics yet */
    for (int i = 2; i <= 3; i++) {
        before = fake_new.total_calls();
        sample_ok(n, 0, i * SECOND_NS);
        assert_int_equal(fake_new.total_calls() - before, i == 2 ? 17 : 16); /* none listed at 3 */
    }
    close_checked(n, &fake_new);

    /* As a real H100 SXM with driver 580: no fan, a slow energy counter. 14
     * calls a sample, 15 when the energy counter is due. */
    script("{'gpus': [{'uuid': 'GPU-sxm', 'memory_total': 1000, 'gpm': true, 'ecc': true,"
           " 'energy_delay_us': 2000,"
           " 'samples': {'util_gpu': [1], 'util_mem': [1], 'temp_gpu': [30], 'power_mw': [1],"
           "  'power_limit_mw': [1], 'clock_sm': [1], 'clock_gfx': [1], 'clock_mem': [1],"
           "  'throttle': [0], 'temp_mem': [30], 'energy_mj': [1], 'pcie_tx_bytes': [1],"
           "  'pcie_rx_bytes': [1], 'ecc_sbe': [0], 'ecc_dbe': [0], 'procs': [[]],"
           "  'graphics_procs': [[]], 'gpm': {'sm_util': [1.0], 'pcie_tx_mib': [1.0],"
           "  'pcie_rx_mib': [1.0]}}}]}");
    n = open_ok(GPUFL_FAKE_NVML_PATH);
    sample_ok(n, 0, SECOND_NS);
    sample_ok(n, 0, 2 * SECOND_NS);
    before = fake_new.total_calls();
    sample_ok(n, 0, 3 * SECOND_NS);
    assert_int_equal(fake_new.total_calls() - before, 14);
    before = fake_new.total_calls();
    sample_ok(n, 0, 32 * SECOND_NS); /* the slow energy read is due again */
    assert_int_equal(fake_new.total_calls() - before, 15);
    close_checked(n, &fake_new);
}

static void test_gpu_lost(void **state) {
    (void)state;
    script("{'gpus': [{'uuid': 'GPU-lost', 'memory_total': 1000, 'gpm': true, 'lost_at_sample': 2,"
           " 'samples': {'mem_used': [1, 2, 3], 'util_gpu': [7], 'util_mem': [8],"
           "  'pcie_tx_bytes': [1, 2], 'pcie_rx_bytes': [1, 2], 'gpm': {'sm_util': [9.0]}}},"
           " {'uuid': 'GPU-fine', 'memory_total': 1000, 'samples': {'util_gpu': [3], 'util_mem': "
           "[4]}}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    gpufl__gpu_sample_t s = sample_ok(n, 0, SECOND_NS);
    assert_int_equal(s.mem_used_bytes, 2);
    assert_int_equal(s.gpu_util_pct, 7);

    assert_int_equal(gpufl__nvml_sample(&s, n, 0, 2 * SECOND_NS), GPUFL_EIO);
    assert_non_null(strstr(gpufl_last_error(), "GPU-lost"));
    assert_non_null(strstr(gpufl_last_error(), "lost"));
    assert_int_equal(s.mem_used_bytes, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.gpu_util_pct, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_true(s.sm_active_pct < 0);
    /* The first failing call ended the sample: nothing after memory was asked. */
    assert_int_equal(fake_new.calls("nvmlDeviceGetUtilizationRates"), 1);

    /* A lost GPU is not asked again at all. */
    unsigned long long before = fake_new.total_calls();
    assert_int_equal(gpufl__nvml_sample(&s, n, 0, 3 * SECOND_NS), GPUFL_EIO);
    assert_int_equal(fake_new.total_calls(), before);

    /* The other GPU is unaffected. */
    s = sample_ok(n, 1, 3 * SECOND_NS);
    assert_int_equal(s.gpu_util_pct, 3);
    close_checked(n, &fake_new);
}

static void test_gpu_lost_mid_sample(void **state) {
    (void)state;
    /* GPU_IS_LOST from any call, not only memory, ends the sample with EIO
     * and keeps what was read before it. */
    script("{'gpus': [{'uuid': 'GPU-m', 'memory_total': 1000, 'errors': "
           "{'nvmlDeviceGetPowerUsage': [0, 15]},"
           " 'samples': {'util_gpu': [7], 'util_mem': [8], 'power_mw': [5], 'clock_sm': [100],"
           "  'clock_gfx': [100], 'clock_mem': [100]}}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    sample_ok(n, 0, SECOND_NS);
    gpufl__gpu_sample_t s;
    assert_int_equal(gpufl__nvml_sample(&s, n, 0, 2 * SECOND_NS), GPUFL_EIO);
    assert_int_equal(s.gpu_util_pct, 7);
    assert_int_equal(s.power_mw, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.clock_sm_mhz, GPUFL_GPU_UNKNOWN);
    assert_int_equal(fake_new.calls("nvmlDeviceGetClockInfo"), 3);
    close_checked(n, &fake_new);
}

/* ---------------------------------------------------------------------- */
/* MIG                                                                      */
/* ---------------------------------------------------------------------- */

static void test_mig(void **state) {
    (void)state;
    script("{'gpus': [{'name': 'NVIDIA H100 80GB HBM3', 'uuid': 'GPU-parent',"
           "  'pci_bus_id': '00000000:1B:00.0', 'cc': [9, 0], 'sm_count': 132,"
           "  'memory_total': 85899345920, 'mig_mode': 1, 'max_mig': 7, 'gpm': true,"
           "  'samples': {'util_gpu': [5], 'util_mem': [1], 'temp_gpu': [50]},"
           "  'mig': [{'slot': 0, 'gi': 3, 'name': 'NVIDIA H100 80GB HBM3 MIG 3g.40gb',"
           "           'uuid': 'MIG-11111111-2222-3333-4444-555555555555', 'sm_count': 60,"
           "           'memory_total': 42949672960,"
           "           'samples': {'mem_used': [0, 1073741824], 'util_gpu': [99], 'util_mem': [99],"
           "                       'procs': [[[4242, 1073741824]]], 'graphics_procs': [[]],"
           "                       'gpm': {'sm_util': [70.0], 'sm_occupancy': [40.0]}}},"
           "          {'slot': 2, 'gi': 5, 'name': 'NVIDIA H100 80GB HBM3 MIG 1g.10gb',"
           "           'uuid': 'MIG-66666666-7777-8888-9999-000000000000', 'sm_count': 16,"
           "           'memory_total': 10737418240, 'samples': {'mem_used': [0, 5]}}]}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    assert_int_equal(gpufl__nvml_device_count(n), 3);

    const gpufl__gpu_info_t *p = gpufl__nvml_device_info(n, 0);
    assert_string_equal(p->uuid, "GPU-parent");
    assert_int_equal(p->mig_mode, 1);
    assert_int_equal(p->mig_index, -1);

    const gpufl__gpu_info_t *m = gpufl__nvml_device_info(n, 1);
    assert_int_equal(m->index, 0); /* the parent's NVML index */
    assert_int_equal(m->mig_index, 0);
    assert_string_equal(m->name, "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
    assert_string_equal(m->uuid, "MIG-11111111-2222-3333-4444-555555555555");
    assert_string_equal(m->pci_bus_id, "00000000:1B:00.0");
    assert_int_equal(m->cc_major, 9);
    assert_int_equal(m->sm_count, 60);
    assert_int_equal(m->mem_total_bytes, INT64_C(42949672960));
    assert_int_equal(m->mig_mode, 1);
    assert_int_equal(m->gpm_supported, 1);
    assert_int_equal(m->nvlink_links, 0);

    m = gpufl__nvml_device_info(n, 2);
    assert_int_equal(m->mig_index, 2); /* slot 1 is empty */
    assert_string_equal(m->uuid, "MIG-66666666-7777-8888-9999-000000000000");
    assert_int_equal(m->sm_count, 16);

    gpufl__gpu_sample_t s = sample_ok(n, 1, SECOND_NS);
    assert_int_equal(s.mem_used_bytes, INT64_C(1073741824));
    assert_int_equal(s.mem_total_bytes, INT64_C(42949672960));
    assert_int_equal(s.nprocs, 1);
    assert_int_equal(s.procs[0].pid, 4242);
    /* Device-wide readings belong to the parent entry. */
    assert_int_equal(s.gpu_util_pct, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.temp_gpu_c, GPUFL_GPU_UNKNOWN);
    assert_int_equal(fake_new.calls("nvmlDeviceGetUtilizationRates"), 0);
    assert_int_equal(fake_new.calls("nvmlDeviceGetFieldValues"), 0);
    s = sample_ok(n, 1, 2 * SECOND_NS);
    assert_true(s.sm_active_pct == 70.0);
    assert_true(s.sm_occupancy_pct == 40.0);
    assert_true(s.tensor_active_pct < 0);
    /* GPM of a MIG instance goes through the parent and the instance id. */
    assert_int_equal(fake_new.calls("nvmlGpmMigSampleGet"), 2);
    assert_int_equal(fake_new.calls("nvmlGpmSampleGet"), 0);

    s = sample_ok(n, 0, 2 * SECOND_NS);
    assert_int_equal(s.gpu_util_pct, 5);
    assert_int_equal(s.temp_gpu_c, 50);
    close_checked(n, &fake_new);
}

/* ---------------------------------------------------------------------- */
/* Processes and GPM fallbacks                                              */
/* ---------------------------------------------------------------------- */

static void test_process_stride_535(void **state) {
    (void)state;
    /* Drivers 535.43 to 535.86 wrote 32-byte entries from the _v3 calls. */
    script("{'process_v3_stride': 32, 'gpus': [{'uuid': 'GPU-p', 'memory_total': 1000,"
           " 'samples': {'procs': [[[11, 100], [22, 200], [33, null]], [[44, 400]]],"
           "             'graphics_procs': [[[55, 500]]]}}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    gpufl__gpu_sample_t s = sample_ok(n, 0, SECOND_NS);
    assert_int_equal(s.nprocs, 4);
    assert_int_equal(s.procs[0].pid, 11);
    assert_int_equal(s.procs[0].used_bytes, 100);
    assert_int_equal(s.procs[1].pid, 22);
    assert_int_equal(s.procs[1].used_bytes, 200);
    assert_int_equal(s.procs[2].pid, 33);
    assert_int_equal(s.procs[2].used_bytes, GPUFL_GPU_UNKNOWN);
    assert_int_equal(s.procs[3].pid, 55);
    assert_int_equal(s.procs[3].used_bytes, 500);
    s = sample_ok(n, 0, 2 * SECOND_NS);
    assert_int_equal(s.nprocs, 2);
    assert_int_equal(s.procs[0].pid, 44);
    assert_int_equal(s.procs[0].used_bytes, 400);
    assert_int_equal(s.procs[1].pid, 55);
    close_checked(n, &fake_new);
}

static void test_many_processes(void **state) {
    (void)state;
    /* More processes than the list holds: all counted, the first listed; more
     * than one call asks for: counted, not listed. */
    char text[16384];
    int used =
        snprintf(text, sizeof text,
                 "{'gpus': [{'uuid': 'GPU-many', 'memory_total': 1000, 'samples': {'procs': [[");
    for (int i = 0; i < 20; i++)
        used += snprintf(text + used, sizeof text - (size_t)used, "%s[%d, %d]", i ? ", " : "",
                         100 + i, i);
    used += snprintf(text + used, sizeof text - (size_t)used, "], [");
    for (int i = 0; i < 300; i++)
        used +=
            snprintf(text + used, sizeof text - (size_t)used, "%s[%d, 1]", i ? ", " : "", 1000 + i);
    snprintf(text + used, sizeof text - (size_t)used, "]]}}]}");
    script(text);
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    gpufl__gpu_sample_t s = sample_ok(n, 0, SECOND_NS);
    assert_int_equal(s.nprocs, 20);
    for (int i = 0; i < GPUFL_GPU_PROCS_MAX; i++) {
        assert_int_equal(s.procs[i].pid, 100 + i);
        assert_int_equal(s.procs[i].used_bytes, i);
    }
    s = sample_ok(n, 0, 2 * SECOND_NS);
    assert_int_equal(s.nprocs, 300);
    close_checked(n, &fake_new);
}

static void test_gpm_rates_fallback(void **state) {
    (void)state;
    /* No PCIe or NVLink byte counters (older driver): GPM's MiB/s stand in. */
    script("{'gpus': [{'uuid': 'GPU-g', 'memory_total': 1000, 'gpm': true, 'nvlink_links': 18,"
           " 'samples': {'gpm': {'sm_util': [1.0], 'pcie_tx_mib': [2.0], 'pcie_rx_mib': [0.5],"
           "                     'nvlink_tx_mib': [100.0], 'nvlink_rx_mib': [3.0]}}}]}");
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_PATH);
    gpufl__gpu_sample_t s = sample_ok(n, 0, SECOND_NS);
    assert_int_equal(s.pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    s = sample_ok(n, 0, 2 * SECOND_NS);
    assert_int_equal(s.pcie_tx_bytes_per_s, 2 * MIB);
    assert_int_equal(s.pcie_rx_bytes_per_s, MIB / 2);
    assert_int_equal(s.nvlink_tx_bytes_per_s, 100 * MIB);
    assert_int_equal(s.nvlink_rx_bytes_per_s, 3 * MIB);
    close_checked(n, &fake_new);

    /* GPM without the PCIe metrics: the byte counters stand in (first asked
     * at the third sample, so their rate shows at the fourth). */
    script("{'gpus': [{'uuid': 'GPU-h', 'memory_total': 1000, 'gpm': true,"
           " 'samples': {'pcie_tx_bytes': [1000, 2000], 'pcie_rx_bytes': [0],"
           "             'gpm': {'sm_util': [1.0]}}}]}");
    n = open_ok(GPUFL_FAKE_NVML_PATH);
    assert_int_equal(sample_ok(n, 0, SECOND_NS).pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_int_equal(sample_ok(n, 0, 2 * SECOND_NS).pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    assert_int_equal(fake_new.field_calls(NVML_FI_DEV_PCIE_COUNT_TX_BYTES), 0);
    assert_int_equal(sample_ok(n, 0, 3 * SECOND_NS).pcie_tx_bytes_per_s, GPUFL_GPU_UNKNOWN);
    s = sample_ok(n, 0, 4 * SECOND_NS);
    assert_int_equal(s.pcie_tx_bytes_per_s, 1000);
    assert_true(s.sm_active_pct == 1.0);
    assert_int_equal(fake_new.calls("nvmlGpmMetricsGet"), 3);
    close_checked(n, &fake_new);
}

/* ---------------------------------------------------------------------- */
/* Loading and init                                                         */
/* ---------------------------------------------------------------------- */

static void open_fails(const char *library, const char *why_expected, int exact) {
    gpufl__nvml_t *n = (gpufl__nvml_t *)&n; /* must come back NULL */
    char why[256] = "";
    assert_int_equal(gpufl__nvml_open(&n, library, why, sizeof why), GPUFL_ENOTSUP);
    assert_null(n);
    if (exact)
        assert_string_equal(why, why_expected);
    else if (strstr(why, why_expected) == NULL)
        fail_msg("reason \"%s\" lacks \"%s\"", why, why_expected);
    assert_string_equal(gpufl_last_error(), why);
}

static void test_init_failure(void **state) {
    (void)state;
    script("{'init_error': 9}");
    open_fails(GPUFL_FAKE_NVML_PATH, "nvmlInit_v2 failed: Driver Not Loaded", 1);
    assert_int_equal(fake_new.refcount(), 0);
    assert_int_equal(fake_new.calls("nvmlShutdown"), 0); /* init failed: nothing to shut down */

    script("{'init_error': 18}");
    open_fails(GPUFL_FAKE_NVML_OLD_PATH,
               "nvmlInit failed: RM has detected an NVML/RM version mismatch", 1);

    script("{'gpus': []}");
    open_fails(GPUFL_FAKE_NVML_PATH, "NVML lists no GPU", 1);
    assert_int_equal(fake_new.refcount(), 0); /* initialised, so shut down */

    script("{'gpus': [{'uuid': 'GPU-a', 'handle_error': 4}]}");
    open_fails(GPUFL_FAKE_NVML_PATH, "NVML lists 1 GPU but none answers", 1);
    assert_int_equal(fake_new.refcount(), 0);
}

static void test_missing_library(void **state) {
    (void)state;
    open_fails("/nonexistent/gpufl/libnvidia-ml.so.1",
               "/nonexistent/gpufl/libnvidia-ml.so.1 not found: no NVIDIA driver", 1);

    /* $GPUFL_NVML_LIBRARY is the override when no path is given. */
    setenv("GPUFL_NVML_LIBRARY", "/nonexistent/env/libnvidia-ml.so.1", 1);
    open_fails(NULL, "/nonexistent/env/libnvidia-ml.so.1 not found", 0);
    unsetenv("GPUFL_NVML_LIBRARY");

    /* A file that is there but no library. */
    char path[1200];
    snprintf(path, sizeof path, "%s/not-a-library.so", tu_scratch_dir("nvml", "garbage"));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("not ELF\n", f);
    fclose(f);
    open_fails(path, "cannot load ", 0);

    /* A library without NVML in it. */
    open_fails("libm.so.6", "libm.so.6 lacks nvmlInit_v2 (or nvmlInit)", 1);
}

static void test_old_driver(void **state) {
    (void)state;
    /* No _v2/_v3 symbols, no clock-event name, no GPM: the fallbacks carry. */
    script(h100);
    gpufl__nvml_t *n = open_ok(GPUFL_FAKE_NVML_OLD_PATH);
    const gpufl__gpu_info_t *g = gpufl__nvml_device_info(n, 0);
    assert_string_equal(g->pci_bus_id, "00000000:1B:00.0"); /* from v1's numbers */
    assert_int_equal(g->sm_count, 132);
    assert_int_equal(g->cuda_driver_version, 13000);
    assert_int_equal(g->mem_total_bytes, INT64_C(85520809984));
    assert_int_equal(g->gpm_supported, 0);
    /* What the old library lacks is said, for the capability record. */
    const char *missing = gpufl__nvml_missing(n);
    assert_non_null(strstr(missing, "nvmlGpmSampleGet"));
    assert_non_null(strstr(missing, "nvmlDeviceGetMemoryInfo_v2"));
    assert_null(strstr(missing, "nvmlDeviceGetMemoryInfo,"));

    gpufl__gpu_sample_t s = sample_ok(n, 0, SECOND_NS);
    /* v1 memory counts the reserved memory as used. */
    assert_int_equal(s.mem_used_bytes, INT64_C(1073741824) + INT64_C(503316480));
    assert_true(s.throttle_reasons == 1);
    assert_int_equal(s.nprocs, 3); /* 16-byte v1 entries */
    assert_int_equal(s.procs[1].pid, 5678);
    assert_int_equal(s.procs[2].pid, 999);
    assert_int_equal(s.procs[2].used_bytes, 2048);
    s = sample_ok(n, 0, 2 * SECOND_NS);
    assert_int_equal(s.pcie_tx_bytes_per_s, 2000000);
    assert_true(s.sm_active_pct < 0);

    assert_int_equal(fake_old.calls("nvmlInit"), 1);
    assert_int_equal(fake_old.calls("nvmlDeviceGetCount"), 1);
    assert_true(fake_old.calls("nvmlDeviceGetHandleByIndex") >= 1);
    assert_int_equal(fake_old.calls("nvmlDeviceGetPciInfo"), 2);
    assert_int_equal(fake_old.calls("nvmlDeviceGetAttributes"), 2);
    assert_int_equal(fake_old.calls("nvmlDeviceGetMemoryInfo"), 4); /* 2 at open, 2 samples */
    assert_int_equal(fake_old.calls("nvmlDeviceGetCurrentClocksThrottleReasons"), 2);
    assert_int_equal(fake_old.calls("nvmlDeviceGetComputeRunningProcesses"), 2);
    assert_int_equal(fake_old.calls("nvmlSystemGetCudaDriverVersion"), 1);
    close_checked(n, &fake_old);
}

static void test_throttle_names(void **state) {
    (void)state;
    static const char *const expected[] = {"gpu_idle",
                                           "applications_clocks_setting",
                                           "sw_power_cap",
                                           "hw_slowdown",
                                           "sync_boost",
                                           "sw_thermal_slowdown",
                                           "hw_thermal_slowdown",
                                           "hw_power_brake_slowdown",
                                           "display_clock_setting"};
    for (int bit = 0; bit < 9; bit++)
        assert_string_equal(gpufl__nvml_throttle_name(bit), expected[bit]);
    assert_null(gpufl__nvml_throttle_name(9));
    assert_null(gpufl__nvml_throttle_name(63));
    assert_null(gpufl__nvml_throttle_name(-1));
    gpufl__nvml_close(NULL);
    assert_int_equal(gpufl__nvml_device_count(NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_identity, teardown_test),
        cmocka_unit_test_teardown(test_sm_count, teardown_test),
        cmocka_unit_test_teardown(test_partial_identity, teardown_test),
        cmocka_unit_test_teardown(test_sample_values, teardown_test),
        cmocka_unit_test_teardown(test_devices_sample_apart, teardown_test),
        cmocka_unit_test_teardown(test_counter_rates, teardown_test),
        cmocka_unit_test_teardown(test_counter_wrap32, teardown_test),
        cmocka_unit_test_teardown(test_nvlink_counters, teardown_test),
        cmocka_unit_test_teardown(test_energy, teardown_test),
        cmocka_unit_test_teardown(test_field_value_types, teardown_test),
        cmocka_unit_test_teardown(test_refusals_not_retried, teardown_test),
        cmocka_unit_test_teardown(test_calls_per_sample, teardown_test),
        cmocka_unit_test_teardown(test_gpu_lost, teardown_test),
        cmocka_unit_test_teardown(test_gpu_lost_mid_sample, teardown_test),
        cmocka_unit_test_teardown(test_mig, teardown_test),
        cmocka_unit_test_teardown(test_process_stride_535, teardown_test),
        cmocka_unit_test_teardown(test_many_processes, teardown_test),
        cmocka_unit_test_teardown(test_gpm_rates_fallback, teardown_test),
        cmocka_unit_test_teardown(test_init_failure, teardown_test),
        cmocka_unit_test_teardown(test_missing_library, teardown_test),
        cmocka_unit_test_teardown(test_old_driver, teardown_test),
        cmocka_unit_test_teardown(test_throttle_names, teardown_test),
    };
    return cmocka_run_group_tests(tests, setup_suite, teardown_suite);
}
