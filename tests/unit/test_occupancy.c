// SPDX-License-Identifier: Apache-2.0
/*
 * test_occupancy.c - lib/nvidia/occupancy.c on worked examples: every
 * expected number below is derived by hand from the occupancy rules (the
 * arithmetic is in the comments), for sm_90, sm_80, sm_86, sm_70, sm_75 and
 * sm_120, then the inputs that are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "util/error.h"
#include "nvidia/occupancy.h"

/* Device attributes as the driver reports them; all of these have 64 Ki
 * registers per SM and per block, and 32-thread warps. */
#define DEVICE(major, minor, threads, blocks, smem, optin, reserved, sms)                          \
    {                                                                                              \
        .cc_major = major, .cc_minor = minor, .warp_size = 32, .max_threads_per_sm = threads,      \
        .max_blocks_per_sm = blocks, .regs_per_sm = 65536, .regs_per_block = 65536,                \
        .smem_per_sm = smem, .smem_per_block_optin = optin, .reserved_smem_per_block = reserved,   \
        .sm_count = sms                                                                            \
    }
/* Shared memory per SM and opt-in per block: 228 and 227 KiB. */
static const gpufl__occ_device_t h100 = DEVICE(9, 0, 2048, 32, 233472, 232448, 1024, 132);
/* 164 and 163 KiB. */
static const gpufl__occ_device_t a100 = DEVICE(8, 0, 2048, 32, 167936, 166912, 1024, 108);
/* 100 and 99 KiB. */
static const gpufl__occ_device_t rtx3090 = DEVICE(8, 6, 1536, 16, 102400, 101376, 1024, 82);
static const gpufl__occ_device_t rtx5090 = DEVICE(12, 0, 1536, 24, 102400, 101376, 1024, 170);
/* 96 KiB, all of it for one block; no reserve before 8.0. */
static const gpufl__occ_device_t v100 = DEVICE(7, 0, 2048, 32, 98304, 98304, 0, 80);
/* 64 KiB. */
static const gpufl__occ_device_t t4 = DEVICE(7, 5, 1024, 16, 65536, 65536, 0, 40);

/* A kernel: block size, registers, static and dynamic shared memory;
 * max_threads_per_block 1024, default carveout. */
static gpufl__occ_kernel_t kernel(int threads, int regs, int static_smem, int dynamic_smem) {
    gpufl__occ_kernel_t k = {.block_threads = threads,
                             .registers_per_thread = regs,
                             .static_smem_bytes = static_smem,
                             .dynamic_smem_bytes = dynamic_smem,
                             .max_threads_per_block = 1024,
                             .local_bytes_per_thread = 0,
                             .carveout_pct = -1};
    return k;
}

static gpufl__occ_kernel_t with_carveout(gpufl__occ_kernel_t k, int pct) {
    k.carveout_pct = pct;
    return k;
}

typedef struct expect {
    int warps, registers, smem, blocks; /* the four limits */
    int blocks_per_sm;
    enum gpufl__occ_limiter limiter;
    int active_warps, max_warps;
} expect_t;

#define NONE GPUFL_OCC_NO_LIMIT

/* cmocka's float comparison is single precision. */
#define assert_close(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-12)

static gpufl__occ_result_t check(const gpufl__occ_device_t *d, gpufl__occ_kernel_t k, expect_t e) {
    gpufl__occ_result_t r;
    int rc = gpufl__occupancy_compute(&r, d, &k);
    if (rc != 0) fail_msg("gpufl__occupancy_compute: %d: %s", rc, gpufl_last_error());
    assert_int_equal(r.limit_warps, e.warps);
    assert_int_equal(r.limit_registers, e.registers);
    assert_int_equal(r.limit_smem, e.smem);
    assert_int_equal(r.limit_blocks, e.blocks);
    assert_int_equal(r.blocks_per_sm, e.blocks_per_sm);
    assert_string_equal(gpufl__occupancy_limiter_name(r.limiter),
                        gpufl__occupancy_limiter_name(e.limiter));
    assert_int_equal(r.active_warps, e.active_warps);
    assert_int_equal(r.max_warps, e.max_warps);
    assert_close(r.occupancy, (double)e.active_warps / e.max_warps);
    return r;
}

/* ---------------------------------------------------------------------- */
/* sm_90 (H100): 64 warps per SM, 16384 registers per sub-partition         */
/* ---------------------------------------------------------------------- */

static void test_h100_warps_limited(void **state) {
    (void)state;
    /* 256 threads = 8 warps.
     * warps: 64 / 8 = 8.
     * registers: 32 * 32 = 1024 a warp (a multiple of 256); 16384 / 1024 =
     *   16 warps a quarter, 64 an SM; 64 / 8 = 8.
     * shared: 0 + 0 + 1024 reserve = 1024 a block; the SM keeps its
     *   228 KiB (233472); 233472 / 1024 = 228.
     * blocks: 32. Smallest 8, warps and registers tie: warps.
     * 8 blocks * 8 warps = 64 of 64: occupancy 1.0. */
    gpufl__occ_result_t r =
        check(&h100, kernel(256, 32, 0, 0), (expect_t){8, 8, 228, 32, 8, GPUFL_OCC_WARPS, 64, 64});
    assert_int_equal(r.warps_per_block, 8);
    assert_int_equal(r.registers_per_block, 8192);
    assert_int_equal(r.smem_per_block_bytes, 1024);
    assert_int_equal(r.smem_config_bytes, 233472);
    assert_close(r.occupancy, 1.0);
}

static void test_h100_registers_limited(void **state) {
    (void)state;
    /* 256 threads, 64 registers: 64 * 32 = 2048 a warp; 16384 / 2048 = 8
     * warps a quarter, 32 an SM; 32 / 8 = 4 blocks. Warps 8, shared 228.
     * 4 * 8 = 32 of 64 warps: 0.5. */
    check(&h100, kernel(256, 64, 0, 0), (expect_t){8, 4, 228, 32, 4, GPUFL_OCC_REGISTERS, 32, 64});
    /* 128 threads = 4 warps, 255 registers: 255 * 32 = 8160, rounded up to
     * 256: 8192 a warp; 16384 / 8192 = 2 a quarter, 8 an SM; 8 / 4 = 2
     * blocks. Warps 64 / 4 = 16. 2 * 4 = 8 of 64 warps: 0.125. */
    gpufl__occ_result_t r = check(&h100, kernel(128, 255, 0, 0),
                                  (expect_t){16, 2, 228, 32, 2, GPUFL_OCC_REGISTERS, 8, 64});
    assert_int_equal(r.registers_per_block, 32768);
    assert_close(r.occupancy, 0.125);
}

/* Fewer than 16 registers count as 16, as Nsight Compute reports them
 * (measured on an H100: kernels of 8, 10 and 12 registers). */
static void test_h100_register_minimum(void **state) {
    (void)state;
    /* 1024 threads = 32 warps, 8 registers taken as 16: 16 * 32 = 512 a warp;
     * 16384 / 512 = 32 warps a quarter, 128 an SM; 128 / 32 = 4 blocks.
     * Warps 64 / 32 = 2 limit first: 2 blocks, 64 warps, 1.0. */
    check(&h100, kernel(1024, 8, 0, 0), (expect_t){2, 4, 228, 32, 2, GPUFL_OCC_WARPS, 64, 64});
    /* 16 and 8 registers give the same limits. */
    check(&h100, kernel(1024, 16, 0, 0), (expect_t){2, 4, 228, 32, 2, GPUFL_OCC_WARPS, 64, 64});
}

static void test_h100_shared_memory(void **state) {
    (void)state;
    /* 1024 threads = 32 warps, 32 registers, 48 KiB static: warps 64 / 32
     * = 2; registers 64 warps / 32 = 2; shared 49152 + 1024 = 50176 (392 *
     * 128, already aligned), 233472 / 50176 = 4 (4.65). Warps first: 2
     * blocks, 64 warps, 1.0. */
    check(&h100, kernel(1024, 32, 49152, 0), (expect_t){2, 2, 4, 32, 2, GPUFL_OCC_WARPS, 64, 64});
    /* The same at 256 threads: warps 8, registers 8, shared still 4: 4
     * blocks of 8 warps, 32 of 64: 0.5. */
    gpufl__occ_result_t r = check(&h100, kernel(256, 32, 49152, 0),
                                  (expect_t){8, 8, 4, 32, 4, GPUFL_OCC_SHARED_MEMORY, 32, 64});
    assert_int_equal(r.smem_per_block_bytes, 50176);
    /* Dynamic memory counts the same: 48 KiB dynamic instead of static. */
    check(&h100, kernel(256, 32, 0, 49152),
          (expect_t){8, 8, 4, 32, 4, GPUFL_OCC_SHARED_MEMORY, 32, 64});
    /* 100 bytes static: 100 + 1024 = 1124, rounded up to 128: 1152;
     * 233472 / 1152 = 202 (202.67). */
    r = check(&h100, kernel(256, 32, 100, 0),
              (expect_t){8, 8, 202, 32, 8, GPUFL_OCC_WARPS, 64, 64});
    assert_int_equal(r.smem_per_block_bytes, 1152);
}

static void test_h100_carveout(void **state) {
    (void)state;
    /* Carveout 50%: 50 * 233472 / 100 = 116736 (114 KiB), rounded up to
     * the next size Hopper has: 132 KiB = 135168. 135168 / 50176 = 2
     * (2.69): 2 blocks of 8 warps, 16 of 64: 0.25. */
    gpufl__occ_result_t r = check(&h100, with_carveout(kernel(256, 32, 49152, 0), 50),
                                  (expect_t){8, 8, 2, 32, 2, GPUFL_OCC_SHARED_MEMORY, 16, 64});
    assert_int_equal(r.smem_config_bytes, 135168);
    /* Carveout 0 (all L1): 0 bytes preferred is less than one block
     * (50176), so the SM takes the smallest size holding a block: 64 KiB =
     * 65536; 65536 / 50176 = 1. 8 of 64 warps: 0.125. */
    r = check(&h100, with_carveout(kernel(256, 32, 49152, 0), 0),
              (expect_t){8, 8, 1, 32, 1, GPUFL_OCC_SHARED_MEMORY, 8, 64});
    assert_int_equal(r.smem_config_bytes, 65536);
    /* Carveout 0 with only the 1024-byte reserve: the smallest size that
     * holds it is 8 KiB; 8192 / 1024 = 8 blocks of 1 warp (32 threads, 16
     * registers: warps 64, registers 128), 8 of 64: 0.125. */
    r = check(&h100, with_carveout(kernel(32, 16, 0, 0), 0),
              (expect_t){64, 128, 8, 32, 8, GPUFL_OCC_SHARED_MEMORY, 8, 64});
    assert_int_equal(r.smem_config_bytes, 8192);
    /* Carveout 100: 233472, the maximum, as the default. */
    check(&h100, with_carveout(kernel(256, 32, 49152, 0), 100),
          (expect_t){8, 8, 4, 32, 4, GPUFL_OCC_SHARED_MEMORY, 32, 64});
}

static void test_h100_blocks_limited(void **state) {
    (void)state;
    /* 32 threads = 1 warp, 16 registers: warps 64 / 1 = 64; registers 16 *
     * 32 = 512 a warp, 16384 / 512 = 32 a quarter, 128 an SM, 128 blocks;
     * shared 1024 a block, 228; blocks 32: the block slots bind. 32 warps
     * of 64: 0.5. */
    gpufl__occ_result_t r = check(&h100, kernel(32, 16, 0, 0),
                                  (expect_t){64, 128, 228, 32, 32, GPUFL_OCC_BLOCKS, 32, 64});
    assert_close(r.occupancy, 0.5);
    /* A block of 33 threads takes 2 warps: warps 64 / 2 = 32, a tie with
     * the block slots that goes to warps; 64 warps: 1.0. */
    check(&h100, kernel(33, 16, 0, 0), (expect_t){32, 64, 228, 32, 32, GPUFL_OCC_WARPS, 64, 64});
}

static void test_h100_does_not_fit(void **state) {
    (void)state;
    /* The most a block can take: 227 KiB opt-in dynamic (232448) + 1024
     * reserve = 233472 = 228 KiB, within the limit 232448 + 1024. One
     * block; 4 warps of 64: 0.0625. */
    check(&h100, kernel(128, 32, 0, 232448),
          (expect_t){16, 16, 1, 32, 1, GPUFL_OCC_SHARED_MEMORY, 4, 64});
    /* One byte more: 233473, rounded up to 128: 233600 > 233472. No block
     * fits: shared memory 0, occupancy 0. */
    gpufl__occ_result_t r = check(&h100, kernel(128, 32, 0, 232449),
                                  (expect_t){16, 16, 0, 32, 0, GPUFL_OCC_SHARED_MEMORY, 0, 64});
    assert_int_equal(r.smem_per_block_bytes, 233600);
    assert_int_equal(r.smem_config_bytes, 0);
    assert_close(r.occupancy, 0.0);
    /* 1024 threads with 65 registers: 65 * 32 = 2080, rounded up: 2304 a
     * warp, * 32 warps = 73728 > 65536 registers a block: 0. */
    check(&h100, kernel(1024, 65, 0, 0), (expect_t){2, 0, 228, 32, 0, GPUFL_OCC_REGISTERS, 0, 64});
    /* 64 registers fit exactly: 2048 * 32 = 65536; 8 warps a quarter, 32
     * an SM, 32 / 32 = 1 block. */
    check(&h100, kernel(1024, 64, 0, 0), (expect_t){2, 1, 228, 32, 1, GPUFL_OCC_REGISTERS, 32, 64});
}

static void test_no_registers(void **state) {
    (void)state;
    /* A kernel that uses no registers has no register limit. */
    gpufl__occ_result_t r = check(&h100, kernel(256, 0, 0, 0),
                                  (expect_t){8, NONE, 228, 32, 8, GPUFL_OCC_WARPS, 64, 64});
    assert_int_equal(r.registers_per_block, 0);
}

static void test_sub_partition_rule(void **state) {
    (void)state;
    /* A device with 32768 registers a block. 7 warps (224 threads) of 144
     * registers: 144 * 32 = 4608 a warp (18 * 256); 7 * 4608 = 32256 fits
     * 32768, but the hardware checks 7 rounded up to 8 warps: 36864 >
     * 32768, so no block fits (counting warps per quarter alone, 16384 /
     * 4608 = 3, 12 an SM, would say 1). */
    gpufl__occ_device_t d = h100;
    d.regs_per_block = 32768;
    check(&d, kernel(224, 144, 0, 0), (expect_t){9, 0, 228, 32, 0, GPUFL_OCC_REGISTERS, 0, 64});
    /* 4 warps: 4 * 4608 = 18432 fits; 12 warps an SM / 4 = 3 blocks. */
    check(&d, kernel(128, 144, 0, 0), (expect_t){16, 3, 228, 32, 3, GPUFL_OCC_REGISTERS, 12, 64});
}

/* ---------------------------------------------------------------------- */
/* Other architectures                                                      */
/* ---------------------------------------------------------------------- */

static void test_a100(void **state) {
    (void)state;
    /* 256 threads, 32 registers: as on the H100, 8 blocks, warps. */
    check(&a100, kernel(256, 32, 0, 0), (expect_t){8, 8, 164, 32, 8, GPUFL_OCC_WARPS, 64, 64});
    /* (1024-byte blocks: 167936 / 1024 = 164.) 48 KiB static: 50176 a
     * block; the SM keeps 164 KiB = 167936; 167936 / 50176 = 3 (3.35). 3
     * blocks of 8 warps, 24 of 64: 0.375. */
    check(&a100, kernel(256, 32, 49152, 0),
          (expect_t){8, 8, 3, 32, 3, GPUFL_OCC_SHARED_MEMORY, 24, 64});
    /* 100 KiB dynamic: 102400 + 1024 = 103424 (808 * 128); 167936 /
     * 103424 = 1. 4 warps of 64: 0.0625. */
    check(&a100, kernel(128, 32, 0, 102400),
          (expect_t){16, 16, 1, 32, 1, GPUFL_OCC_SHARED_MEMORY, 4, 64});
    /* 163 KiB opt-in dynamic + 1024 = 167936: fits the limit 166912 + 1024
     * exactly. 128 bytes of static more: 168064 > 167936, nothing fits. */
    check(&a100, kernel(128, 32, 0, 166912),
          (expect_t){16, 16, 1, 32, 1, GPUFL_OCC_SHARED_MEMORY, 4, 64});
    check(&a100, kernel(128, 32, 128, 166912),
          (expect_t){16, 16, 0, 32, 0, GPUFL_OCC_SHARED_MEMORY, 0, 64});
    /* Carveout 25%: 25 * 167936 / 100 = 41984, rounded up to 64 KiB =
     * 65536. 16 KiB static: 16384 + 1024 = 17408 (136 * 128); 65536 /
     * 17408 = 3 (3.76). 24 of 64 warps: 0.375. */
    gpufl__occ_result_t r = check(&a100, with_carveout(kernel(256, 32, 16384, 0), 25),
                                  (expect_t){8, 8, 3, 32, 3, GPUFL_OCC_SHARED_MEMORY, 24, 64});
    assert_int_equal(r.smem_config_bytes, 65536);
    /* Carveout 70%: 117555 bytes, rounded up to 132 KiB = 135168 (sm_80
     * has it, sm_86 does not); 135168 / 17408 = 7 (7.76). 7 * 8 = 56 of
     * 64: 0.875. */
    r = check(&a100, with_carveout(kernel(256, 32, 16384, 0), 70),
              (expect_t){8, 8, 7, 32, 7, GPUFL_OCC_SHARED_MEMORY, 56, 64});
    assert_int_equal(r.smem_config_bytes, 135168);
}

static void test_sm86(void **state) {
    (void)state;
    /* 1536 threads an SM: 48 warps. 256 threads, 32 registers: warps 48 /
     * 8 = 6; registers 64 / 8 = 8; shared 102400 / 1024 = 100; blocks 16.
     * 6 * 8 = 48 of 48: 1.0. */
    check(&rtx3090, kernel(256, 32, 0, 0), (expect_t){6, 8, 100, 16, 6, GPUFL_OCC_WARPS, 48, 48});
    /* 64 threads = 2 warps, 16 registers: warps 24; registers 512 a warp,
     * 128 an SM, 64; shared 100; blocks 16 bind: 32 of 48 warps. */
    check(&rtx3090, kernel(64, 16, 0, 0),
          (expect_t){24, 64, 100, 16, 16, GPUFL_OCC_BLOCKS, 32, 48});
    /* Carveout 70% on sm_86: 71680, rounded up to its next size, 100 KiB
     * (no 132 KiB here); 16 KiB static, 17408 a block: 102400 / 17408 = 5
     * (5.88). Warps bind first: 6 > 5, so 5 blocks, shared memory. */
    gpufl__occ_result_t r = check(&rtx3090, with_carveout(kernel(256, 32, 16384, 0), 70),
                                  (expect_t){6, 8, 5, 16, 5, GPUFL_OCC_SHARED_MEMORY, 40, 48});
    assert_int_equal(r.smem_config_bytes, 102400);
}

static void test_v100(void **state) {
    (void)state;
    /* Volta: 256-byte units and no reserve. 10000 bytes static: rounded up
     * to 256: 10240 (40 * 256). Carveout 25%: 25 * 98304 / 100 = 24576,
     * rounded up to 32 KiB = 32768; 32768 / 10240 = 3 (3.2). 128 threads:
     * warps 16, registers 16. 3 * 4 = 12 of 64 warps: 0.1875. */
    gpufl__occ_result_t r = check(&v100, with_carveout(kernel(128, 32, 10000, 0), 25),
                                  (expect_t){16, 16, 3, 32, 3, GPUFL_OCC_SHARED_MEMORY, 12, 64});
    assert_int_equal(r.smem_per_block_bytes, 10240);
    assert_int_equal(r.smem_config_bytes, 32768);
    /* No shared memory at all, and none reserved: no shared memory limit. */
    r = check(&v100, kernel(256, 32, 0, 0), (expect_t){8, 8, NONE, 32, 8, GPUFL_OCC_WARPS, 64, 64});
    assert_int_equal(r.smem_config_bytes, 98304);
    /* The whole 96 KiB in one block: within the opt-in limit (no reserve
     * added before 8.0); one byte more does not fit. */
    check(&v100, kernel(128, 32, 0, 98304),
          (expect_t){16, 16, 1, 32, 1, GPUFL_OCC_SHARED_MEMORY, 4, 64});
    check(&v100, kernel(128, 32, 1, 98304),
          (expect_t){16, 16, 0, 32, 0, GPUFL_OCC_SHARED_MEMORY, 0, 64});
}

static void test_turing(void **state) {
    (void)state;
    /* 1024 threads an SM: 32 warps. A 1024-thread block: warps 32 / 32 =
     * 1; registers 1024 a warp, 64 an SM, 2; 1 block, 32 of 32 warps. */
    check(&t4, kernel(1024, 32, 0, 0), (expect_t){1, 2, NONE, 16, 1, GPUFL_OCC_WARPS, 32, 32});
    /* Carveout 0 on Turing: its smallest size is 32 KiB. 1000 bytes static
     * -> 1024 a block; 32768 / 1024 = 32. 128 threads: warps 8. */
    gpufl__occ_result_t r = check(&t4, with_carveout(kernel(128, 32, 1000, 0), 0),
                                  (expect_t){8, 16, 32, 16, 8, GPUFL_OCC_WARPS, 32, 32});
    assert_int_equal(r.smem_config_bytes, 32768);
}

static void test_blackwell(void **state) {
    (void)state;
    /* sm_120: 48 warps an SM, 24 blocks, 100 KiB. 48 KiB static: 50176 a
     * block, 102400 / 50176 = 2 (2.04); warps 48 / 8 = 6. 16 of 48 warps. */
    check(&rtx5090, kernel(256, 32, 49152, 0),
          (expect_t){6, 8, 2, 24, 2, GPUFL_OCC_SHARED_MEMORY, 16, 48});
    /* sm_100 has Hopper's shared memory sizes: with the H100's numbers the
     * 50% carveout lands on 132 KiB again, 2 blocks. */
    gpufl__occ_device_t b200 = h100;
    b200.cc_major = 10;
    check(&b200, with_carveout(kernel(256, 32, 49152, 0), 50),
          (expect_t){8, 8, 2, 32, 2, GPUFL_OCC_SHARED_MEMORY, 16, 64});
}

/* ---------------------------------------------------------------------- */
/* Refused input                                                            */
/* ---------------------------------------------------------------------- */

static void refused(const gpufl__occ_device_t *d, gpufl__occ_kernel_t k, int code,
                    const char *message_part) {
    gpufl__occ_result_t r;
    memset(&r, 0x5a, sizeof r);
    assert_int_equal(gpufl__occupancy_compute(&r, d, &k), code);
    if (strstr(gpufl_last_error(), message_part) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", gpufl_last_error(), message_part);
    gpufl__occ_result_t zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&r, &zero, sizeof r);
}

static void test_bad_input(void **state) {
    (void)state;
    refused(&h100, kernel(0, 32, 0, 0), GPUFL_EINVAL, "block of 0 threads");
    refused(&h100, kernel(-5, 32, 0, 0), GPUFL_EINVAL, "block of -5 threads");
    refused(&h100, kernel(1025, 32, 0, 0), GPUFL_EINVAL, "above the kernel's limit of 1024");
    gpufl__occ_kernel_t k = kernel(512, 32, 0, 0);
    k.max_threads_per_block = 384; /* launch bounds, or registers, limit the kernel */
    refused(&h100, k, GPUFL_EINVAL, "above the kernel's limit of 384");
    refused(&h100, kernel(128, 256, 0, 0), GPUFL_EINVAL, "256 registers per thread");
    refused(&h100, kernel(128, -1, 0, 0), GPUFL_EINVAL, "-1 registers per thread");
    refused(&h100, kernel(128, 32, -1, 0), GPUFL_EINVAL, "negative size");
    refused(&h100, with_carveout(kernel(128, 32, 0, 0), 101), GPUFL_EINVAL, "carveout 101%");
    refused(&h100, with_carveout(kernel(128, 32, 0, 0), -2), GPUFL_EINVAL, "carveout -2%");

    gpufl__occ_device_t d = h100;
    d.warp_size = 0;
    refused(&d, kernel(128, 32, 0, 0), GPUFL_EINVAL, "warp_size is 0");
    d = h100;
    d.reserved_smem_per_block = -1;
    refused(&d, kernel(128, 32, 0, 0), GPUFL_EINVAL, "reserved_smem_per_block");
    d = h100;
    d.smem_per_sm = 300 * 1024; /* more than Hopper's largest size, 228 KiB */
    refused(&d, kernel(128, 32, 0, 0), GPUFL_EINVAL, "more than compute capability 9.0 allows");

    gpufl__occ_result_t r;
    k = kernel(128, 32, 0, 0);
    assert_int_equal(gpufl__occupancy_compute(NULL, &h100, &k), GPUFL_EINVAL);
    assert_int_equal(gpufl__occupancy_compute(&r, NULL, &k), GPUFL_EINVAL);
    assert_int_equal(gpufl__occupancy_compute(&r, &h100, NULL), GPUFL_EINVAL);
}

static void test_unknown_architecture(void **state) {
    (void)state;
    gpufl__occ_device_t d = h100;
    const int unknown[][2] = {{6, 1}, {5, 2}, {10, 2}, {12, 2}, {13, 0}};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        d.cc_major = unknown[i][0];
        d.cc_minor = unknown[i][1];
        refused(&d, kernel(128, 32, 0, 0), GPUFL_ENOTSUP, "is not known to the rules");
    }
    const int known[][2] = {{7, 0},  {7, 2},  {8, 7},  {8, 9}, {9, 0},
                            {10, 0}, {10, 3}, {11, 0}, {12, 1}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        gpufl__occ_result_t r;
        gpufl__occ_kernel_t k = kernel(128, 32, 0, 0);
        d.cc_major = known[i][0];
        d.cc_minor = known[i][1];
        d.smem_per_sm = 65536; /* a size every known architecture has */
        assert_int_equal(gpufl__occupancy_compute(&r, &d, &k), 0);
    }
}

static void test_limiter_names(void **state) {
    (void)state;
    assert_string_equal(gpufl__occupancy_limiter_name(GPUFL_OCC_WARPS), "warps");
    assert_string_equal(gpufl__occupancy_limiter_name(GPUFL_OCC_REGISTERS), "registers");
    assert_string_equal(gpufl__occupancy_limiter_name(GPUFL_OCC_SHARED_MEMORY), "shared_memory");
    assert_string_equal(gpufl__occupancy_limiter_name(GPUFL_OCC_BLOCKS), "blocks");
    assert_string_equal(gpufl__occupancy_limiter_name((enum gpufl__occ_limiter)7), "unknown");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h100_warps_limited),
        cmocka_unit_test(test_h100_registers_limited),
        cmocka_unit_test(test_h100_register_minimum),
        cmocka_unit_test(test_h100_shared_memory),
        cmocka_unit_test(test_h100_carveout),
        cmocka_unit_test(test_h100_blocks_limited),
        cmocka_unit_test(test_h100_does_not_fit),
        cmocka_unit_test(test_no_registers),
        cmocka_unit_test(test_sub_partition_rule),
        cmocka_unit_test(test_a100),
        cmocka_unit_test(test_sm86),
        cmocka_unit_test(test_v100),
        cmocka_unit_test(test_turing),
        cmocka_unit_test(test_blackwell),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_unknown_architecture),
        cmocka_unit_test(test_limiter_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
