// SPDX-License-Identifier: Apache-2.0
/*
 * occupancy.c - blocks per SM by warp slots, registers, shared memory and
 * block slots, after the rules of the CUDA occupancy calculator
 * (cuda_occupancy.h of the toolkit, which states them; this is our own code).
 *
 * The rules, for compute capability 7.0 and newer:
 * - Warps: an SM holds max_threads_per_sm / warp_size warps; a block takes
 *   its thread count rounded up to whole warps.
 * - Registers: a warp gets registers_per_thread * warp_size registers,
 *   rounded up to 256. The register file is split evenly among the SM's 4
 *   sub-partitions and a warp lives in one of them, so the SM holds 4 times
 *   the warps that fit in one quarter. A block fits at all only if its warps,
 *   counted both as they are and rounded up to a multiple of 4 (the hardware
 *   checks as if it used every sub-partition), fit the per-block register
 *   limit.
 * - Shared memory: a block takes its static and dynamic shared memory plus
 *   the driver's reserve per block, rounded up to 256 bytes (7.x) or 128
 *   (8.0 on). It fits at all only within the opt-in per-block limit (plus
 *   the reserve, from 8.0). The SM's shared memory is one of a few sizes the
 *   architecture allows: the carveout asked for (a percentage of the
 *   maximum; by default the maximum), rounded up to the next allowed size,
 *   unless that is smaller than one block, when the driver takes the allowed
 *   size that holds one block.
 * - Blocks: the device's MAX_BLOCKS_PER_MULTIPROCESSOR.
 * Barriers do not bind with the one barrier a kernel has (Hopper on allows
 * at least one block per block slot), so they are left out.
 */
#include "nvidia/occupancy.h"

#include "util/error.h"

#include <stdint.h>
#include <string.h>

#define REGISTER_UNIT       256 /* registers are given to a warp in multiples of this */
#define SUB_PARTITIONS      4   /* register file quarters per SM, 7.0 and newer */
#define MAX_REGS_PER_THREAD 255
#define KIB                 1024
#define CARVEOUT_DEFAULT    (-1)
#define CARVEOUT_MAX_SHARED 100

/* What differs between architectures beyond the device attributes. */
typedef struct arch {
    int smem_unit_bytes;        /* shared memory allocation granularity */
    int config_count;           /* entries of config_kib */
    const int *config_kib;      /* SM shared memory sizes, ascending */
    int reserve_in_block_limit; /* the reserve adds to the per-block limit (8.0 on) */
} arch_t;

/* The shared memory sizes (KiB) an SM can be set to. */
static const int volta_kib[] = {0, 8, 16, 32, 64, 96};                       /* 7.0, 7.2 */
static const int turing_kib[] = {32, 64};                                    /* 7.5 */
static const int ga100_kib[] = {0, 8, 16, 32, 64, 100, 132, 164};            /* 8.0, 8.7 */
static const int ga10x_kib[] = {0, 8, 16, 32, 64, 100};                      /* 8.6, 8.9, 12.x */
static const int hopper_kib[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228}; /* 9.x, 10.x, 11.x */

#define CONFIGS(table) (int)(sizeof table / sizeof table[0]), table

/* Fills *a for a compute capability; 0, or -1 when its rules are unknown. */
static int arch_of(int major, int minor, arch_t *a) {
    switch (major) {
    case 7:
        *a = minor == 5 ? (arch_t){256, CONFIGS(turing_kib), 0}
                        : (arch_t){256, CONFIGS(volta_kib), 0};
        return 0;
    case 8:
        *a = minor == 0 || minor == 7 ? (arch_t){128, CONFIGS(ga100_kib), 1}
                                      : (arch_t){128, CONFIGS(ga10x_kib), 1};
        return 0;
    case 9: *a = (arch_t){128, CONFIGS(hopper_kib), 1}; return 0;
    case 10:
    case 11:
        if (minor != 0 && minor != 1 && minor != 3) return -1;
        *a = (arch_t){128, CONFIGS(hopper_kib), 1};
        return 0;
    case 12:
        if (minor != 0 && minor != 1) return -1;
        *a = (arch_t){128, CONFIGS(ga10x_kib), 1};
        return 0;
    default: return -1;
    }
}

static int64_t round_up(int64_t value, int64_t unit) { return (value + unit - 1) / unit * unit; }

/* The smallest SM shared memory size of the architecture that holds bytes;
 * -1 when none does. */
static int64_t config_holding(const arch_t *a, int64_t bytes) {
    for (int i = 0; i < a->config_count; i++)
        if ((int64_t)a->config_kib[i] * KIB >= bytes) return (int64_t)a->config_kib[i] * KIB;
    return -1;
}

static int clamp_int(int64_t value) { return value > INT_MAX ? INT_MAX : (int)value; }

static int check_device(const gpufl__occ_device_t *d) {
    const struct {
        int value;
        const char *name;
    } positive[] = {
        {d->warp_size, "warp_size"},
        {d->max_threads_per_sm, "max_threads_per_sm"},
        {d->max_blocks_per_sm, "max_blocks_per_sm"},
        {d->regs_per_sm, "regs_per_sm"},
        {d->regs_per_block, "regs_per_block"},
        {d->smem_per_sm, "smem_per_sm"},
        {d->smem_per_block_optin, "smem_per_block_optin"},
    };
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
        if (positive[i].value <= 0)
            return gpufl__set_error(GPUFL_EINVAL, "occupancy: device %s is %d, must be positive",
                                    positive[i].name, positive[i].value);
    if (d->reserved_smem_per_block < 0)
        return gpufl__set_error(GPUFL_EINVAL, "occupancy: device reserved_smem_per_block is %d",
                                d->reserved_smem_per_block);
    return 0;
}

static int check_kernel(const gpufl__occ_kernel_t *k) {
    if (k->block_threads < 1)
        return gpufl__set_error(GPUFL_EINVAL, "occupancy: a block of %d threads", k->block_threads);
    if (k->max_threads_per_block < 1)
        return gpufl__set_error(GPUFL_EINVAL, "occupancy: kernel max_threads_per_block is %d",
                                k->max_threads_per_block);
    if (k->block_threads > k->max_threads_per_block)
        return gpufl__set_error(
            GPUFL_EINVAL, "occupancy: a block of %d threads is above the kernel's limit of %d",
            k->block_threads, k->max_threads_per_block);
    if (k->registers_per_thread < 0 || k->registers_per_thread > MAX_REGS_PER_THREAD)
        return gpufl__set_error(GPUFL_EINVAL, "occupancy: %d registers per thread (0..%d)",
                                k->registers_per_thread, MAX_REGS_PER_THREAD);
    if (k->static_smem_bytes < 0 || k->dynamic_smem_bytes < 0 || k->local_bytes_per_thread < 0)
        return gpufl__set_error(
            GPUFL_EINVAL, "occupancy: negative size (static %d, dynamic %d, local %d bytes)",
            k->static_smem_bytes, k->dynamic_smem_bytes, k->local_bytes_per_thread);
    if (k->carveout_pct < CARVEOUT_DEFAULT || k->carveout_pct > CARVEOUT_MAX_SHARED)
        return gpufl__set_error(GPUFL_EINVAL, "occupancy: carveout %d%% (-1 or 0..100)",
                                k->carveout_pct);
    return 0;
}

#define MIN_REGS_ALLOCATED 16

static int registers_limit(const gpufl__occ_device_t *d, const gpufl__occ_kernel_t *k,
                           int warps_per_block, gpufl__occ_result_t *r) {
    if (k->registers_per_thread == 0) return GPUFL_OCC_NO_LIMIT;
    /* A thread is given at least MIN_REGS_ALLOCATED registers: Nsight Compute
     * reports 16 for kernels compiled to 8, 10 or 12 (H100, CUDA 13). It never
     * limits occupancy (16 registers for every resident thread fit the
     * register file), but it is the register limit Nsight Compute shows. */
    int regs =
        k->registers_per_thread < MIN_REGS_ALLOCATED ? MIN_REGS_ALLOCATED : k->registers_per_thread;
    int64_t per_warp = round_up((int64_t)regs * d->warp_size, REGISTER_UNIT);
    int64_t per_block = per_warp * warps_per_block;
    int64_t as_checked = per_warp * round_up(warps_per_block, SUB_PARTITIONS);
    r->registers_per_block = clamp_int(per_block);
    if (per_block > d->regs_per_block || as_checked > d->regs_per_block) return 0;
    int64_t warps_per_quarter = (d->regs_per_sm / SUB_PARTITIONS) / per_warp;
    return (int)(warps_per_quarter * SUB_PARTITIONS / warps_per_block);
}

/* Returns the limit, or a negative GPUFL_E* when the device's shared memory
 * fits none of its architecture's sizes. */
static int smem_limit(const gpufl__occ_device_t *d, const gpufl__occ_kernel_t *k, const arch_t *a,
                      gpufl__occ_result_t *r) {
    int64_t used =
        (int64_t)k->static_smem_bytes + k->dynamic_smem_bytes + d->reserved_smem_per_block;
    int64_t per_block = round_up(used, a->smem_unit_bytes);
    int64_t block_max = (int64_t)d->smem_per_block_optin +
                        (a->reserve_in_block_limit ? d->reserved_smem_per_block : 0);
    r->smem_per_block_bytes = clamp_int(per_block);
    if (per_block > block_max) return 0;

    int64_t preferred = k->carveout_pct == CARVEOUT_DEFAULT
                            ? d->smem_per_sm
                            : (int64_t)k->carveout_pct * d->smem_per_sm / 100;
    int64_t config = config_holding(a, preferred);
    if (config < 0)
        return gpufl__set_error(GPUFL_EINVAL,
                                "occupancy: %lld bytes of shared memory per SM is more than "
                                "compute capability %d.%d allows",
                                (long long)preferred, d->cc_major, d->cc_minor);
    if (config < per_block) config = config_holding(a, per_block);
    if (config < 0) return 0; /* no size of this architecture holds one block */
    r->smem_config_bytes = clamp_int(config);
    return per_block > 0 ? (int)(config / per_block) : GPUFL_OCC_NO_LIMIT;
}

int gpufl__occupancy_compute(gpufl__occ_result_t *out, const gpufl__occ_device_t *device,
                             const gpufl__occ_kernel_t *kernel) {
    arch_t arch;
    int rc;

    if (out == NULL) return gpufl__set_error(GPUFL_EINVAL, "occupancy: out is NULL");
    memset(out, 0, sizeof *out);
    if (device == NULL || kernel == NULL)
        return gpufl__set_error(GPUFL_EINVAL, "occupancy: no device or kernel");
    if ((rc = check_device(device)) != 0 || (rc = check_kernel(kernel)) != 0) return rc;
    if (arch_of(device->cc_major, device->cc_minor, &arch) != 0)
        return gpufl__set_error(GPUFL_ENOTSUP,
                                "occupancy: compute capability %d.%d is not known to the rules",
                                device->cc_major, device->cc_minor);

    gpufl__occ_result_t r;
    memset(&r, 0, sizeof r);
    r.warps_per_block =
        (int)(((int64_t)kernel->block_threads + device->warp_size - 1) / device->warp_size);
    r.max_warps = device->max_threads_per_sm / device->warp_size;
    r.limit_warps = r.max_warps / r.warps_per_block;
    r.limit_registers = registers_limit(device, kernel, r.warps_per_block, &r);
    r.limit_smem = smem_limit(device, kernel, &arch, &r);
    if (r.limit_smem < 0) return r.limit_smem;
    r.limit_blocks = device->max_blocks_per_sm;

    /* In the order that breaks ties. */
    const int limits[] = {r.limit_warps, r.limit_registers, r.limit_smem, r.limit_blocks};
    r.limiter = GPUFL_OCC_WARPS;
    for (int i = 1; i < 4; i++)
        if (limits[i] < limits[r.limiter]) r.limiter = (enum gpufl__occ_limiter)i;
    r.blocks_per_sm = limits[r.limiter];
    r.active_warps = clamp_int((int64_t)r.blocks_per_sm * r.warps_per_block);
    r.occupancy = r.max_warps > 0 ? (double)r.active_warps / r.max_warps : 0.0;
    *out = r;
    return 0;
}

const char *gpufl__occupancy_limiter_name(enum gpufl__occ_limiter limiter) {
    switch (limiter) {
    case GPUFL_OCC_WARPS: return "warps";
    case GPUFL_OCC_REGISTERS: return "registers";
    case GPUFL_OCC_SHARED_MEMORY: return "shared_memory";
    case GPUFL_OCC_BLOCKS: return "blocks";
    default: return "unknown";
    }
}
