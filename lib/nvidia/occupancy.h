// SPDX-License-Identifier: Apache-2.0
/*
 * occupancy.h - theoretical occupancy of a kernel launch: how many blocks an
 * SM can hold by each resource (warp slots, registers, shared memory, block
 * slots), which one binds, and the occupancy that follows.
 *
 * A pure computation on numbers the caller read from the driver
 * (cuDeviceGetAttribute, cuFuncGetAttribute) and the launch; it makes no
 * driver call and keeps no state, so it is safe from any thread. It follows
 * the rules of the CUDA occupancy calculator for compute capabilities 7.x to
 * 12.x (see occupancy.c); the driver's own answer
 * (cuOccupancyMaxActiveBlocksPerMultiprocessor) stays the reference, and
 * lib/nvidia/cuda.c reports whether the two agree.
 *
 * Not modelled, as no driver query gives them: the L1/shared split asked for
 * with cuFuncSetCacheConfig (only the carveout attribute is read), block
 * barriers beyond the one every kernel has, and virtual resources.
 */
#ifndef GPUFL_NVIDIA_OCCUPANCY_H
#define GPUFL_NVIDIA_OCCUPANCY_H

#include <limits.h>

/* A per-resource limit where the kernel uses none of the resource (no
 * registers; no shared memory on a device that reserves none per block). */
#define GPUFL_OCC_NO_LIMIT INT_MAX

/* The device, from cuDeviceGetAttribute: read once per device. */
typedef struct gpufl__occ_device {
    int cc_major, cc_minor;      /* COMPUTE_CAPABILITY_MAJOR / _MINOR */
    int warp_size;               /* WARP_SIZE */
    int max_threads_per_sm;      /* MAX_THREADS_PER_MULTIPROCESSOR */
    int max_blocks_per_sm;       /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    int regs_per_sm;             /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    int regs_per_block;          /* MAX_REGISTERS_PER_BLOCK */
    int smem_per_sm;             /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, bytes */
    int smem_per_block_optin;    /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, bytes */
    int reserved_smem_per_block; /* RESERVED_SHARED_MEMORY_PER_BLOCK, bytes (0 before 8.0) */
    int sm_count;                /* MULTIPROCESSOR_COUNT (not used by the computation) */
} gpufl__occ_device_t;

/* The kernel, from cuFuncGetAttribute, and the launch. */
typedef struct gpufl__occ_kernel {
    int block_threads;          /* threads per block of the launch (x * y * z) */
    int registers_per_thread;   /* NUM_REGS */
    int static_smem_bytes;      /* SHARED_SIZE_BYTES */
    int dynamic_smem_bytes;     /* the launch's dynamic shared memory */
    int max_threads_per_block;  /* MAX_THREADS_PER_BLOCK: the kernel's own limit */
    int local_bytes_per_thread; /* LOCAL_SIZE_BYTES (reported, no effect on occupancy) */
    int carveout_pct;           /* PREFERRED_SHARED_MEMORY_CARVEOUT: 0..100, -1 default */
} gpufl__occ_kernel_t;

/* What bounds the blocks per SM. Names are written to logs: stable. */
enum gpufl__occ_limiter {
    GPUFL_OCC_WARPS,         /* warp slots of the SM */
    GPUFL_OCC_REGISTERS,     /* the register file */
    GPUFL_OCC_SHARED_MEMORY, /* shared memory */
    GPUFL_OCC_BLOCKS         /* block slots of the SM */
};

typedef struct gpufl__occ_result {
    /* Blocks per SM each resource allows (0: a block does not fit at all;
     * GPUFL_OCC_NO_LIMIT: the kernel uses none of it). */
    int limit_warps, limit_registers, limit_smem, limit_blocks;
    int blocks_per_sm;              /* the smallest of the four */
    int warps_per_block;            /* block_threads rounded up to whole warps */
    int active_warps;               /* blocks_per_sm * warps_per_block */
    int max_warps;                  /* max_threads_per_sm / warp_size */
    double occupancy;               /* active_warps / max_warps, 0..1 */
    enum gpufl__occ_limiter limiter; /* the smallest limit; ties go to the first of warps,
                                       registers, shared memory, blocks */
    int registers_per_block;        /* registers allocated to one block */
    int smem_per_block_bytes;       /* shared memory allocated to one block, reserve included */
    int smem_config_bytes; /* the SM's shared memory size the launch gets (carveout applied);
                              0 when a block does not fit */
} gpufl__occ_result_t;

/*
 * Computes the limits for one launch. Returns 0, GPUFL_EINVAL with a message
 * (gpufl__set_error) for input that cannot describe a launch: NULL pointers,
 * block_threads < 1 or above the kernel's max_threads_per_block, registers
 * outside 0..255, negative sizes, a carveout outside -1..100, device fields
 * that are not positive; GPUFL_ENOTSUP for a compute capability whose rules
 * are not known here (before 7.0, or a newer one). *out is zeroed on error.
 * A block that is too large for a resource (shared memory beyond the opt-in
 * limit, registers beyond the per-block file) is not an error: that limit is
 * 0, and so are blocks_per_sm and the occupancy.
 */
int gpufl__occupancy_compute(gpufl__occ_result_t *out, const gpufl__occ_device_t *device,
                             const gpufl__occ_kernel_t *kernel);

/* "warps", "registers", "shared_memory", "blocks"; "unknown" otherwise. */
const char *gpufl__occupancy_limiter_name(enum gpufl__occ_limiter limiter);

#endif
