// SPDX-License-Identifier: Apache-2.0
/*
 * nvml.h - NVIDIA device telemetry through NVML, loaded at run time.
 *
 * libnvidia-ml is opened with dlopen (never linked) through our own minimal
 * declarations (nvml_api.h); a missing library, driver or symbol is a normal
 * state that this module reports, never a crash. One gpufl__nvml_t lists the
 * devices (whole GPUs and, with MIG on, each MIG instance as a device of its
 * own) and reads their samples. Not thread-safe: the collector thread owns it.
 */
#ifndef GPUFL_NVIDIA_NVML_H
#define GPUFL_NVIDIA_NVML_H

#include <stddef.h>
#include <stdint.h>

#define GPUFL_GPU_MAX       64   /* devices, MIG instances included */
#define GPUFL_GPU_PROCS_MAX 16   /* processes listed per device and sample */
#define GPUFL_GPU_UNKNOWN   (-1) /* any integer field NVML could not give */

typedef struct gpufl__nvml gpufl__nvml_t;

/* Static identity, read once per session. */
typedef struct gpufl__gpu_info {
    int index;     /* NVML index of the GPU (the parent, for a MIG instance) */
    int mig_index; /* -1 for a whole GPU, else the instance's position under its parent */
    char name[96];
    char uuid[96];          /* "GPU-..." or "MIG-..." */
    char pci_bus_id[32];    /* "00000000:1B:00.0" */
    int cc_major, cc_minor; /* compute capability */
    int sm_count;           /* multiprocessors (of the instance, for MIG) */
    int64_t mem_total_bytes;
    char driver_version[32]; /* "580.95.05" */
    int cuda_driver_version; /* 13000 for CUDA 13.0 */
    int mig_mode;            /* 0 off, 1 on, GPUFL_GPU_UNKNOWN where MIG is unsupported */
    int gpm_supported;       /* 1 when GPM metrics (Hopper and newer) can be read */
    int nvlink_links;        /* active NVLink links, 0 without NVLink */
    int64_t power_limit_mw;  /* enforced power limit */
} gpufl__gpu_info_t;

/* One reading. Rates (PCIe, NVLink, GPM) are over the interval since the
 * previous sample of the same device; the first sample has them unknown. */
typedef struct gpufl__gpu_sample {
    int gpu_util_pct, mem_util_pct; /* NVML utilization rates */
    int64_t mem_used_bytes, mem_free_bytes, mem_total_bytes;
    int temp_gpu_c, temp_mem_c;
    int64_t power_mw, power_limit_mw;
    int64_t energy_mj; /* energy counter since the driver loaded */
    int clock_sm_mhz, clock_gfx_mhz, clock_mem_mhz;
    int fan_pct;
    int64_t pcie_tx_bytes_per_s, pcie_rx_bytes_per_s;
    uint64_t
        throttle_reasons; /* NVML clock event reason bits (gpufl__nvml_throttle_name); UINT64_MAX unknown */
    int64_t ecc_sbe_volatile,
        ecc_dbe_volatile; /* corrected / uncorrected since boot; unknown when ECC is off */
    int64_t nvlink_tx_bytes_per_s, nvlink_rx_bytes_per_s;
    double sm_active_pct, sm_occupancy_pct, tensor_active_pct,
        dram_bw_util_pct; /* GPM; < 0 unknown */
    int nprocs;           /* processes on the device (listed up to GPUFL_GPU_PROCS_MAX) */
    struct {
        int pid;
        int64_t used_bytes; /* GPUFL_GPU_UNKNOWN where NVML does not say */
        int sm_util_pct;    /* its share of the SMs' time since the last list; unknown: -1 */
        int mem_util_pct;   /* its share of memory read/write time, the same way */
    } procs[GPUFL_GPU_PROCS_MAX];
} gpufl__gpu_sample_t;

/*
 * Loads NVML (library_path, else $GPUFL_NVML_LIBRARY, else libnvidia-ml.so.1),
 * initialises it and lists the devices. Returns 0, or GPUFL_ENOTSUP with a
 * one-line reason in why ("libnvidia-ml.so.1 not found: no NVIDIA driver",
 * "nvmlInit_v2 failed: Driver Not Loaded", ...) and *out NULL.
 */
int gpufl__nvml_open(gpufl__nvml_t **out, const char *library_path, char *why, size_t why_size);
/* Shuts NVML down and unloads it. Accepts NULL. */
void gpufl__nvml_close(gpufl__nvml_t *n);

int gpufl__nvml_device_count(const gpufl__nvml_t *n);
const gpufl__gpu_info_t *gpufl__nvml_device_info(const gpufl__nvml_t *n, int device);

/*
 * Reads one sample of device (0 .. count-1). now_ns is CLOCK_MONOTONIC, for
 * the rates. Never blocks on NVML's slow paths (the ~20 ms PCIe throughput
 * query is not used). Returns 0, or GPUFL_EIO when the device stopped
 * answering (e.g. fell off the bus); fields that failed are unknown.
 */
int gpufl__nvml_sample(gpufl__gpu_sample_t *out, gpufl__nvml_t *n, int device, int64_t now_ns);

/* One critical XID error NVML reported. */
typedef struct gpufl__xid_event {
    int device;              /* the whole GPU it came from */
    unsigned long long code; /* the XID (79: fallen off the bus, 48: double-bit ECC, ...) */
    int gpu_instance_id;     /* MIG GPU instance; GPUFL_GPU_UNKNOWN when NVML gives none */
    int compute_instance_id; /* MIG compute instance; GPUFL_GPU_UNKNOWN when none */
} gpufl__xid_event_t;

/*
 * Takes up to max pending XID events (nvmlEventSetWait with timeout 0:
 * never waits) into out and returns how many; events past max stay pending
 * for the next call. 0 without event support (an old driver, or no GPU
 * that reports XIDs: said once in a debug line at open).
 */
int gpufl__nvml_xid_events(gpufl__xid_event_t *out, int max, gpufl__nvml_t *n);

/* Name of a throttle (clock event) reason bit, e.g. "sw_power_cap",
 * "hw_thermal_slowdown"; NULL for a bit with no name. */
const char *gpufl__nvml_throttle_name(int bit);

/* Reads the costly parts of a sample (process lists, and GPM with the rates
 * it gives) at most every every_ns; in the samples between, they are
 * unknown. 0 (the default) reads them in every sample. */
void gpufl__nvml_set_slow_interval(gpufl__nvml_t *n, int64_t every_ns);

/* The parts of a sample, timed separately: memory, utilization, ... gpm. */
#define GPUFL_NVML_PARTS 11
/* Mean time of one part per device sample so far (ns), and its name; -1 for
 * a part number out of range. */
int64_t gpufl__nvml_part_cost(const gpufl__nvml_t *n, int part, const char **name);

/* Version of the NVML library loaded, e.g. "13.580.95.05"; "" when unknown. */
const char *gpufl__nvml_version(const gpufl__nvml_t *n);

/* The optional NVML symbols the loaded library lacks (an older driver), e.g.
 * "nvmlGpmSampleGet, nvmlDeviceGetMemoryInfo_v2", for the capability record:
 * the readings they give stay unknown. "" when none is missing. */
const char *gpufl__nvml_missing(const gpufl__nvml_t *n);

#endif
