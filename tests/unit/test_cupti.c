// SPDX-License-Identifier: Apache-2.0
/*
 * test_cupti.c - lib/nvidia/cupti.c against the scriptable fake libcupti
 * (tests/fakes/fake_cupti.c): every field of every record kind, the kinds
 * enabled, the buffer pool, dropped counts, refusals, a missing library, an
 * old CUPTI without the timestamp callback, and drain racing completion.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cupti.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "util/error.h"
#include "nvidia/cupti.h"

#ifndef GPUFL_FAKE_CUPTI_PATH
#error "GPUFL_FAKE_CUPTI_PATH must name the fake CUPTI (cupti/libcupti.so)"
#endif
#ifndef GPUFL_FAKE_CUPTI_OLD_PATH
#error "GPUFL_FAKE_CUPTI_OLD_PATH must name libfake_cupti_old.so"
#endif

/* The fake's helpers, through a handle on the same library the module loads. */
typedef struct fake {
    void *handle;
    unsigned long (*enable_count)(int kind);
    unsigned long (*disable_count)(int kind);
    int (*timestamp_registered)(void);
    uint64_t (*last_timestamp)(void);
} fake_t;

static fake_t fake_new, fake_old;
static gpufl__cupti_t *open_handle;
static char script_path[256];

static void fake_load(fake_t *f, const char *path) {
    f->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (f->handle == NULL) fail_msg("dlopen %s: %s", path, dlerror());
    void *p;
#define RESOLVE(member, name)                                                                      \
    p = dlsym(f->handle, name);                                                                    \
    assert_non_null(p);                                                                            \
    memcpy(&f->member, &p, sizeof p)
    RESOLVE(enable_count, "fake_cupti_enable_count");
    RESOLVE(disable_count, "fake_cupti_disable_count");
    RESOLVE(timestamp_registered, "fake_cupti_timestamp_registered");
    RESOLVE(last_timestamp, "fake_cupti_last_timestamp");
#undef RESOLVE
}

static int setup_suite(void **state) {
    (void)state;
    fake_load(&fake_new, GPUFL_FAKE_CUPTI_PATH);
    fake_load(&fake_old, GPUFL_FAKE_CUPTI_OLD_PATH);
    unsetenv("GPUFL_CUPTI_LIBRARY");
    snprintf(script_path, sizeof script_path, "/tmp/gpufl_test_cupti_%d.json", (int)getpid());
    setenv("GPUFL_FAKE_CUPTI", script_path, 1);
    return 0;
}

static int teardown_suite(void **state) {
    (void)state;
    unlink(script_path);
    return 0;
}

static int teardown_test(void **state) {
    (void)state;
    gpufl__cupti_close(open_handle);
    open_handle = NULL;
    return 0;
}

static void write_script(const char *json) {
    FILE *f = fopen(script_path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
}

static gpufl__cupti_t *open_fake(const char *path) {
    char why[256] = "";
    gpufl__cupti_t *c = NULL;
    int rc = gpufl__cupti_open(&c, path, why, sizeof why);
    if (rc != 0) fail_msg("open: %d %s", rc, why);
    open_handle = c;
    return c;
}

static void start_ok(gpufl__cupti_t *c, const gpufl__cupti_config_t *cfg) {
    char why[256] = "";
    int rc = gpufl__cupti_start(c, cfg, why, sizeof why);
    if (rc != 0) fail_msg("start: %d %s", rc, why);
}

/* ---------------------------------------------------------------------- */
/* A sink that keeps what it gets                                          */
/* ---------------------------------------------------------------------- */

#define KEEP 4096
typedef struct got {
    gpufl__cupti_kernel_t kernel[KEEP];
    char kernel_name[KEEP][32];
    gpufl__cupti_copy_t copy[8];
    gpufl__cupti_memset_t memset[8];
    gpufl__cupti_sync_t sync[8];
    gpufl__cupti_alloc_t alloc[8];
    gpufl__cupti_external_t external[8];
    int kernels, copies, memsets, syncs, allocs, externals, drop_calls;
    uint64_t dropped;
} got_t;

static got_t got;

static void on_kernel(void *user, const gpufl__cupti_kernel_t *r) {
    got_t *g = user;
    if (g->kernels == KEEP) return;
    snprintf(g->kernel_name[g->kernels], sizeof g->kernel_name[0], "%s", r->name);
    g->kernel[g->kernels++] = *r;
}
static void on_copy(void *user, const gpufl__cupti_copy_t *r) {
    got_t *g = user;
    if (g->copies < 8) g->copy[g->copies++] = *r;
}
static void on_memset(void *user, const gpufl__cupti_memset_t *r) {
    got_t *g = user;
    if (g->memsets < 8) g->memset[g->memsets++] = *r;
}
static void on_sync(void *user, const gpufl__cupti_sync_t *r) {
    got_t *g = user;
    if (g->syncs < 8) g->sync[g->syncs++] = *r;
}
static void on_alloc(void *user, const gpufl__cupti_alloc_t *r) {
    got_t *g = user;
    if (g->allocs < 8) g->alloc[g->allocs++] = *r;
}
static void on_external(void *user, const gpufl__cupti_external_t *r) {
    got_t *g = user;
    if (g->externals < 8) g->external[g->externals++] = *r;
}
static void on_dropped(void *user, uint64_t records) {
    got_t *g = user;
    g->dropped += records;
    g->drop_calls++;
}

static const gpufl__cupti_sink_t sink = {on_kernel, on_copy,     on_memset, on_sync,
                                         on_alloc,  on_external, on_dropped};

static void flush_drain(gpufl__cupti_t *c) {
    assert_int_equal(gpufl__cupti_flush(c, 1), 0);
    gpufl__cupti_drain(c, &sink, &got);
}

/* ---------------------------------------------------------------------- */
/* Records                                                                  */
/* ---------------------------------------------------------------------- */

#define KERNEL_JSON                                                                                \
    "{\"kind\": 10, \"registersPerThread\": 255, \"start\": 9007199254740993,"                     \
    " \"end\": 9007199254741999, \"deviceId\": 7, \"contextId\": 4294967295, \"streamId\": 13,"    \
    " \"gridX\": 2147483647, \"gridY\": 65535, \"gridZ\": 3, \"blockX\": 1024, \"blockY\": 2,"     \
    " \"blockZ\": 1, \"staticSharedMemory\": 49152, \"dynamicSharedMemory\": 232448,"              \
    " \"localMemoryPerThread\": 104, \"localMemoryTotal\": 1000, \"localMemoryTotal_v2\":"         \
    " 5368709120, \"correlationId\": 4000000001, \"gridId\": -5, \"launchType\": 1,"               \
    " \"sharedMemoryExecuted\": 233472, \"graphNodeId\": 1099511627777, \"graphId\": 17,"          \
    " \"clusterX\": 2, \"clusterY\": 4, \"clusterZ\": 8, \"isDeviceLaunched\": 1,"                 \
    " \"name\": \"_Z6kernelPfi\"}"

static void check_kernel(const gpufl__cupti_kernel_t *k, const char *name, int new_library) {
    assert_int_equal(k->start_ns, INT64_C(9007199254740993));
    assert_int_equal(k->end_ns, INT64_C(9007199254741999));
    assert_int_equal(k->device_id, 7);
    assert_int_equal(k->context_id, UINT32_C(4294967295));
    assert_int_equal(k->stream_id, 13);
    assert_int_equal(k->correlation_id, UINT32_C(4000000001));
    assert_int_equal(k->grid_x, 2147483647);
    assert_int_equal(k->grid_y, 65535);
    assert_int_equal(k->grid_z, 3);
    assert_int_equal(k->block_x, 1024);
    assert_int_equal(k->block_y, 2);
    assert_int_equal(k->block_z, 1);
    assert_int_equal(k->cluster_x, 2);
    assert_int_equal(k->cluster_y, 4);
    assert_int_equal(k->cluster_z, 8);
    assert_int_equal(k->registers_per_thread, 255);
    assert_int_equal(k->static_shared_bytes, 49152);
    assert_int_equal(k->dynamic_shared_bytes, 232448);
    assert_int_equal(k->local_bytes_per_thread, 104);
    assert_int_equal(k->local_bytes_total, UINT64_C(5368709120));
    assert_int_equal(k->shared_bytes_executed, 233472);
    assert_int_equal(k->grid_id, -5);
    assert_int_equal(k->graph_id, 17);
    assert_int_equal(k->graph_node_id, UINT64_C(1099511627777));
    assert_int_equal(k->launch_type, 1);
    /* Appended in CUDA 13's Kernel10: read only from a CUDA 13 library. */
    assert_int_equal(k->device_launched, new_library ? 1 : 0);
    assert_string_equal(name, "_Z6kernelPfi");
}

static void test_kernel_fields(void **state) {
    (void)state;
    memset(&got, 0, sizeof got);
    write_script("{\"records\": [" KERNEL_JSON ", {\"kind\": 10, \"localMemoryTotal\": 77,"
                 " \"start\": 1, \"end\": 2}, {\"kind\": 9}, {\"kind\": 10, \"start\": 5}]}");
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    start_ok(c, NULL);
    flush_drain(c);
    assert_int_equal(got.kernels, 2);
    check_kernel(&got.kernel[0], got.kernel_name[0], 1);
    /* Without the 64-bit total, the 32-bit one; a NULL name reads "". */
    assert_int_equal(got.kernel[1].local_bytes_total, 77);
    assert_string_equal(got.kernel_name[1], "");
    gpufl__cupti_stats_t s;
    gpufl__cupti_stats(&s, c);
    assert_int_equal(s.records, 3);
    /* still in flight when a forced flush handed it back (no end): left out, counted */
    assert_int_equal(s.records_incomplete, 1);
    assert_int_equal(s.records_other, 0); /* CONTEXT (9) is never enabled: not delivered */
    assert_int_equal(s.parse_errors, 0);
}

static void test_copy_memset_fields(void **state) {
    (void)state;
    memset(&got, 0, sizeof got);
    write_script("{\"records\": ["
                 "{\"kind\": 1, \"copyKind\": 2, \"srcKind\": 3, \"dstKind\": 1, \"flags\": 1,"
                 " \"bytes\": 8589934593, \"start\": 1000000000001, \"end\": 1000000000777,"
                 " \"deviceId\": 1, \"contextId\": 2, \"streamId\": 3, \"correlationId\": 4,"
                 " \"graphNodeId\": 5, \"graphId\": 6, \"isDeviceLaunched\": 1, \"copyCount\": 9},"
                 "{\"kind\": 1, \"copyKind\": 1, \"srcKind\": 2, \"dstKind\": 3, \"flags\": 0,"
                 " \"bytes\": 4096, \"start\": 1, \"end\": 2},"
                 "{\"kind\": 2, \"value\": 4294967295, \"bytes\": 123456789012, \"start\": 11,"
                 " \"end\": 22, \"deviceId\": 33, \"contextId\": 44, \"streamId\": 55,"
                 " \"correlationId\": 66, \"flags\": 1, \"memoryKind\": 3, \"graphNodeId\": 77,"
                 " \"graphId\": 88}]}");
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    start_ok(c, NULL);
    flush_drain(c);
    assert_int_equal(got.copies, 2);
    const gpufl__cupti_copy_t *m = &got.copy[0];
    assert_int_equal(m->copy_kind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
    assert_int_equal(m->src_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    assert_int_equal(m->dst_kind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
    assert_int_equal(m->async, 1);
    assert_int_equal(m->bytes, UINT64_C(8589934593));
    assert_int_equal(m->start_ns, INT64_C(1000000000001));
    assert_int_equal(m->end_ns, INT64_C(1000000000777));
    assert_int_equal(m->device_id, 1);
    assert_int_equal(m->context_id, 2);
    assert_int_equal(m->stream_id, 3);
    assert_int_equal(m->correlation_id, 4);
    assert_int_equal(m->graph_node_id, 5);
    assert_int_equal(m->graph_id, 6);
    assert_int_equal(m->copy_count, 9);
    assert_int_equal(got.copy[1].copy_kind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    assert_int_equal(got.copy[1].src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    assert_int_equal(got.copy[1].async, 0);
    assert_int_equal(got.copy[1].bytes, 4096);

    assert_int_equal(got.memsets, 1);
    const gpufl__cupti_memset_t *s = &got.memset[0];
    assert_int_equal(s->value, UINT32_C(4294967295));
    assert_int_equal(s->bytes, UINT64_C(123456789012));
    assert_int_equal(s->start_ns, 11);
    assert_int_equal(s->end_ns, 22);
    assert_int_equal(s->device_id, 33);
    assert_int_equal(s->context_id, 44);
    assert_int_equal(s->stream_id, 55);
    assert_int_equal(s->correlation_id, 66);
    assert_int_equal(s->async, 1);
    assert_int_equal(s->memory_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    assert_int_equal(s->graph_node_id, 77);
    assert_int_equal(s->graph_id, 88);
}

#define OPTIONAL_JSON                                                                              \
    "{\"records\": ["                                                                              \
    "{\"kind\": 38, \"type\": 3, \"start\": 500, \"end\": 900, \"correlationId\": 12,"             \
    " \"contextId\": 1, \"streamId\": 14, \"cudaEventId\": 4294967295,"                            \
    " \"cudaEventSyncId\": 18446744073709551, \"returnValue\": 700},"                              \
    "{\"kind\": 38, \"type\": 1, \"streamId\": 4294967295, \"cudaEventId\": 21},"                  \
    "{\"kind\": 49, \"memoryOperationType\": 1, \"memoryKind\": 3, \"correlationId\": 31,"         \
    " \"address\": 140737488355328, \"bytes\": 1073741824, \"timestamp\": 123456789,"              \
    " \"PC\": 4198400, \"processId\": 4242, \"deviceId\": 2, \"contextId\": 3, \"streamId\": 4,"   \
    " \"isAsync\": 1, \"memoryPoolType\": 1, \"poolAddress\": 140737488355000},"                   \
    "{\"kind\": 39, \"externalKind\": 2, \"externalId\": 9007199254740993,"                        \
    " \"correlationId\": 77}]}"

static void test_sync_alloc_external_fields(void **state) {
    (void)state;
    memset(&got, 0, sizeof got);
    write_script(OPTIONAL_JSON);
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    gpufl__cupti_config_t cfg = {
        .size = sizeof cfg, .flags = GPUFL_CUPTI_SYNC | GPUFL_CUPTI_MEMORY | GPUFL_CUPTI_EXTERNAL};
    start_ok(c, &cfg);
    flush_drain(c);
    assert_int_equal(got.syncs, 2);
    const gpufl__cupti_sync_t *s = &got.sync[0];
    assert_int_equal(s->type, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
    assert_int_equal(s->start_ns, 500);
    assert_int_equal(s->end_ns, 900);
    assert_int_equal(s->correlation_id, 12);
    assert_int_equal(s->context_id, 1);
    assert_int_equal(s->stream_id, 14);
    assert_int_equal(s->cuda_event_id, CUPTI_SYNCHRONIZATION_INVALID_VALUE);
    assert_int_equal(s->cuda_event_sync_id, UINT64_C(18446744073709551));
    assert_int_equal(s->return_value, 700);
    assert_int_equal(got.sync[1].type, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE);
    assert_int_equal(got.sync[1].stream_id, CUPTI_SYNCHRONIZATION_INVALID_VALUE);
    assert_int_equal(got.sync[1].cuda_event_id, 21);

    assert_int_equal(got.allocs, 1);
    const gpufl__cupti_alloc_t *a = &got.alloc[0];
    assert_int_equal(a->operation, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION);
    assert_int_equal(a->memory_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    assert_int_equal(a->correlation_id, 31);
    assert_int_equal(a->address, UINT64_C(140737488355328));
    assert_int_equal(a->bytes, UINT64_C(1073741824));
    assert_int_equal(a->timestamp_ns, 123456789);
    assert_int_equal(a->pc, 4198400);
    assert_int_equal(a->process_id, 4242);
    assert_int_equal(a->device_id, 2);
    assert_int_equal(a->context_id, 3);
    assert_int_equal(a->stream_id, 4);
    assert_int_equal(a->async, 1);
    assert_int_equal(a->pool_type, 1);
    assert_int_equal(a->pool_address, UINT64_C(140737488355000));

    assert_int_equal(got.externals, 1);
    assert_int_equal(got.external[0].external_kind, 2);
    assert_int_equal(got.external[0].external_id, UINT64_C(9007199254740993));
    assert_int_equal(got.external[0].correlation_id, 77);
}

/* Without the flags, CUPTI is never asked for the optional kinds, so their
 * records never come. */
static void test_optional_kinds_off(void **state) {
    (void)state;
    memset(&got, 0, sizeof got);
    write_script(OPTIONAL_JSON);
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    start_ok(c, NULL);
    flush_drain(c);
    assert_int_equal(got.syncs + got.allocs + got.externals, 0);
    assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), 0);
    assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_MEMORY2), 0);
    assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), 0);
    assert_int_equal(gpufl__cupti_kind_state(c, GPUFL_CUPTI_KIND_SYNC, NULL), GPUFL_CUPTI_OFF);
}

static void test_kinds_enabled(void **state) {
    (void)state;
    write_script("{}");
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    gpufl__cupti_config_t cfg = {
        .size = sizeof cfg, .flags = GPUFL_CUPTI_SYNC | GPUFL_CUPTI_MEMORY | GPUFL_CUPTI_EXTERNAL};
    start_ok(c, &cfg);
    assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_KERNEL), 0);
    assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1);
    assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_MEMCPY), 1);
    assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_MEMSET), 1);
    assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), 1);
    assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_MEMORY2), 1);
    assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), 1);
    for (int k = 0; k < GPUFL_CUPTI_KIND_COUNT; k++)
        assert_int_equal(gpufl__cupti_kind_state(c, (gpufl__cupti_kind_t)k, NULL), GPUFL_CUPTI_ON);
    assert_true(fake_new.timestamp_registered());
    assert_true(gpufl__cupti_shared_clock(c));
    assert_int_equal(gpufl__cupti_api_version(c), CUPTI_API_VERSION);
    gpufl__cupti_stop(c, NULL, NULL);
    assert_int_equal(fake_new.disable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1);
    assert_int_equal(fake_new.disable_count(CUPTI_ACTIVITY_KIND_MEMORY2), 1);
    assert_int_equal(fake_new.disable_count(CUPTI_ACTIVITY_KIND_KERNEL), 0);
}

/* The timestamp callback CUPTI is given reads CLOCK_MONOTONIC ns. */
static void test_timestamp_clock(void **state) {
    (void)state;
    write_script("{\"records\": [{\"kind\": 10}]}");
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    start_ok(c, NULL);
    int64_t before = gpufl__mono_ns();
    flush_drain(c);
    int64_t after = gpufl__mono_ns();
    uint64_t t = fake_new.last_timestamp();
    assert_true((int64_t)t >= before && (int64_t)t <= after);
}

/* Two buffers serve any number of records when drained between flushes;
 * without a drain, the pool runs dry, the refusals are counted and CUPTI's
 * drops reported. */
static void test_pool_reuse_and_exhaustion(void **state) {
    (void)state;
    memset(&got, 0, sizeof got);
    char json[4096];
    size_t n = (size_t)snprintf(json, sizeof json,
                                "{\"records_per_buffer\": 1, \"records_per_flush\": 2,"
                                " \"records\": [");
    for (int i = 0; i < 10; i++)
        n += (size_t)snprintf(json + n, sizeof json - n,
                              "%s{\"kind\": 10, \"correlationId\": %d, \"start\": 1, \"end\": 2}",
                              i ? "," : "", i + 1);
    snprintf(json + n, sizeof json - n, "]}");
    write_script(json);
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    gpufl__cupti_config_t cfg = {.size = sizeof cfg, .buffer_bytes = 4096, .buffer_count = 2};
    start_ok(c, &cfg);
    for (int i = 0; i < 3; i++) flush_drain(c);
    assert_int_equal(got.kernels, 6);
    for (int i = 0; i < 6; i++) assert_int_equal(got.kernel[i].correlation_id, i + 1);
    gpufl__cupti_stats_t s;
    gpufl__cupti_stats(&s, c);
    assert_int_equal(s.buffers_given, 6);
    assert_int_equal(s.buffers_drained, 6);
    assert_int_equal(s.buffers_refused, 0);
    assert_int_equal(got.dropped, 0);

    /* No drain between two flushes: records 7, 8 fill both buffers; 9, 10 find none. */
    assert_int_equal(gpufl__cupti_flush(c, 1), 0);
    assert_int_equal(gpufl__cupti_flush(c, 1), 0);
    gpufl__cupti_drain(c, &sink, &got);
    gpufl__cupti_stats(&s, c);
    assert_int_equal(s.buffers_refused, 2);
    assert_int_equal(got.kernels, 8);
    assert_int_equal(got.kernel[7].correlation_id, 8);
    assert_int_equal(got.dropped, 2);
    assert_int_equal(s.records_dropped, 2);
}

static void test_dropped_reported(void **state) {
    (void)state;
    memset(&got, 0, sizeof got);
    write_script("{\"dropped\": 7, \"records\": [{\"kind\": 10}]}");
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    start_ok(c, NULL);
    flush_drain(c);
    assert_int_equal(got.dropped, 7);
    assert_int_equal(got.drop_calls, 1);
    flush_drain(c); /* the count is reset once read */
    assert_int_equal(got.dropped, 7);
    gpufl__cupti_stats_t s;
    gpufl__cupti_stats(&s, c);
    assert_int_equal(s.records_dropped, 7);
}

static void test_optional_kind_refused(void **state) {
    (void)state;
    char json[256];
    snprintf(json, sizeof json, "{\"enable_errors\": {\"38\": %d, \"49\": %d}}",
             CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
    write_script(json);
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    gpufl__cupti_config_t cfg = {.size = sizeof cfg,
                                 .flags = GPUFL_CUPTI_SYNC | GPUFL_CUPTI_MEMORY};
    start_ok(c, &cfg);
    const char *reason;
    assert_int_equal(gpufl__cupti_kind_state(c, GPUFL_CUPTI_KIND_SYNC, &reason),
                     GPUFL_CUPTI_REFUSED);
    assert_non_null(strstr(reason, "synchronization: another CUPTI client"));
    assert_non_null(strstr(reason, "(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)"));
    assert_int_equal(gpufl__cupti_kind_state(c, GPUFL_CUPTI_KIND_ALLOC, &reason),
                     GPUFL_CUPTI_REFUSED);
    assert_non_null(strstr(reason, "memory: insufficient privileges"));
    assert_int_equal(gpufl__cupti_kind_state(c, GPUFL_CUPTI_KIND_KERNEL, &reason), GPUFL_CUPTI_ON);
    assert_string_equal(reason, "");
    gpufl__cupti_stop(c, NULL, NULL);
    /* A refused kind is not disabled. */
    assert_int_equal(fake_new.disable_count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), 0);
}

/* Kernels refused: start fails with the reason, nothing stays enabled, and
 * a later start can succeed. */
static void test_kernel_refused(void **state) {
    (void)state;
    static const struct {
        int error;
        const char *text;
    } cases[] = {
        {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "concurrent kernels: insufficient privileges"},
        {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
         "concurrent kernels: another CUPTI client"},
        {CUPTI_ERROR_NOT_INITIALIZED, "CUPTI could not initialise"},
        {CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_FAKE (CUPTI error 999)"},
    };
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[128], why[256] = "";
        snprintf(json, sizeof json, "{\"enable_errors\": {\"10\": %d}}", cases[i].error);
        write_script(json);
        assert_int_equal(gpufl__cupti_start(c, NULL, why, sizeof why), GPUFL_ENOTSUP);
        if (strstr(why, cases[i].text) == NULL) fail_msg("reason: %s", why);
        assert_int_equal(fake_new.enable_count(CUPTI_ACTIVITY_KIND_MEMCPY), 0);
    }
    write_script("{}");
    start_ok(c, NULL);
}

static void test_register_refused(void **state) {
    (void)state;
    char json[128], why[256] = "";
    snprintf(json, sizeof json, "{\"register_error\": %d}", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
    write_script(json);
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    assert_int_equal(gpufl__cupti_start(c, NULL, why, sizeof why), GPUFL_ENOTSUP);
    assert_non_null(strstr(why, "cuptiActivityRegisterCallbacks: insufficient privileges"));
    write_script("{}");
    start_ok(c, NULL);
}

static void test_one_started_per_process(void **state) {
    (void)state;
    write_script("{}");
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH), *other = NULL;
    char why[256] = "";
    start_ok(c, NULL);
    assert_int_equal(gpufl__cupti_open(&other, GPUFL_FAKE_CUPTI_PATH, why, sizeof why), 0);
    assert_int_equal(gpufl__cupti_start(other, NULL, why, sizeof why), GPUFL_EALREADY);
    gpufl__cupti_close(other);
    assert_int_equal(gpufl__cupti_start(c, NULL, why, sizeof why), GPUFL_EALREADY);
}

static void test_bad_config(void **state) {
    (void)state;
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    char why[256];
    gpufl__cupti_config_t cfg = {.size = sizeof cfg, .buffer_bytes = 100};
    assert_int_equal(gpufl__cupti_start(c, &cfg, why, sizeof why), GPUFL_EINVAL);
    cfg =
        (gpufl__cupti_config_t){.size = sizeof cfg, .buffer_bytes = 1 << 20, .buffer_count = 2048};
    assert_int_equal(gpufl__cupti_start(c, &cfg, why, sizeof why), GPUFL_EINVAL);
    cfg = (gpufl__cupti_config_t){.size = 0};
    assert_int_equal(gpufl__cupti_start(c, &cfg, why, sizeof why), GPUFL_EINVAL);
}

static void test_missing_library(void **state) {
    (void)state;
    gpufl__cupti_t *c = (gpufl__cupti_t *)&got;
    char why[256] = "";
    assert_int_equal(gpufl__cupti_open(&c, "/nonexistent/libcupti.so.13", why, sizeof why),
                     GPUFL_ENOTSUP);
    assert_null(c);
    assert_string_equal(why, "/nonexistent/libcupti.so.13 not found: no CUPTI on the library path"
                             " (set GPUFL_CUPTI_LIBRARY or CUDA_HOME)");
    /* The environment variable is the override when no path is given. */
    setenv("GPUFL_CUPTI_LIBRARY", "/nonexistent/x/libcupti.so", 1);
    assert_int_equal(gpufl__cupti_open(&c, NULL, why, sizeof why), GPUFL_ENOTSUP);
    unsetenv("GPUFL_CUPTI_LIBRARY");
    assert_non_null(strstr(why, "/nonexistent/x/libcupti.so not found"));
    /* A library without the activity API. */
    assert_int_equal(gpufl__cupti_open(&c, "libc.so.6", why, sizeof why), GPUFL_ENOTSUP);
    assert_string_equal(why, "libc.so.6 lacks cuptiActivityEnable");
}

/* CUPTI before 12.x: no timestamp callback, records on CUPTI's own clock,
 * the CUDA 13 tail fields not read. */
static void test_old_library(void **state) {
    (void)state;
    memset(&got, 0, sizeof got);
    write_script("{\"records\": [" KERNEL_JSON "]}");
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_OLD_PATH);
    start_ok(c, NULL);
    assert_false(gpufl__cupti_shared_clock(c));
    assert_int_equal(gpufl__cupti_api_version(c), 120000);
    flush_drain(c);
    assert_int_equal(got.kernels, 1);
    check_kernel(&got.kernel[0], got.kernel_name[0], 0);
    assert_int_equal(fake_old.enable_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1);
}

/* CUPTI completes buffers on its thread (a flusher here, through the fake's
 * own delivery thread) while the collector drains: every record arrives once
 * and in order, or is counted as dropped. Run under TSan too. */
#define RACE_RECORDS 3000
static atomic_int flusher_done;

static void *flusher(void *arg) {
    gpufl__cupti_t *c = arg;
    for (int i = 0; i < RACE_RECORDS / 25 + 10; i++) gpufl__cupti_flush(c, 1);
    atomic_store(&flusher_done, 1);
    return NULL;
}

static void test_drain_races_completion(void **state) {
    (void)state;
    memset(&got, 0, sizeof got);
    size_t size = RACE_RECORDS * 64 + 128, n;
    char *json = malloc(size);
    assert_non_null(json);
    n = (size_t)snprintf(json, size,
                         "{\"records_per_buffer\": 5, \"records_per_flush\": 25, \"records\": [");
    for (int i = 0; i < RACE_RECORDS; i++)
        n += (size_t)snprintf(json + n, size - n,
                              "%s{\"kind\":10,\"correlationId\":%d,\"start\":1,\"end\":2}",
                              i ? "," : "", i + 1);
    snprintf(json + n, size - n, "]}");
    write_script(json);
    free(json);
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    gpufl__cupti_config_t cfg = {.size = sizeof cfg, .buffer_bytes = 4096, .buffer_count = 4};
    start_ok(c, &cfg);
    atomic_store(&flusher_done, 0);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, flusher, c), 0);
    while (!atomic_load(&flusher_done)) gpufl__cupti_drain(c, &sink, &got);
    pthread_join(thread, NULL);
    gpufl__cupti_stop(c, &sink, &got);
    assert_int_equal((uint64_t)got.kernels + got.dropped, RACE_RECORDS);
    for (int i = 1; i < got.kernels; i++)
        assert_true(got.kernel[i].correlation_id > got.kernel[i - 1].correlation_id);
    gpufl__cupti_stats_t s;
    gpufl__cupti_stats(&s, c);
    assert_int_equal(s.buffers_completed, s.buffers_drained);
    assert_int_equal(s.buffers_given, s.buffers_completed);
}

/* stop drains what CUPTI still held, through the sink it is given. */
static void test_stop_drains(void **state) {
    (void)state;
    memset(&got, 0, sizeof got);
    write_script(
        "{\"records\": [{\"kind\": 10, \"start\": 1, \"end\": 2}, {\"kind\": 1, \"start\": 1,"
        " \"end\": 2}, {\"kind\": 2, \"start\": 1, \"end\": 2}]}");
    gpufl__cupti_t *c = open_fake(GPUFL_FAKE_CUPTI_PATH);
    start_ok(c, NULL);
    gpufl__cupti_stop(c, &sink, &got);
    assert_int_equal(got.kernels, 1);
    assert_int_equal(got.copies, 1);
    assert_int_equal(got.memsets, 1);
    assert_int_equal(gpufl__cupti_flush(c, 1), 0); /* not started: nothing to do */
    gpufl__cupti_stop(c, &sink, &got);             /* twice is fine */
}

#define T(f) cmocka_unit_test_teardown(f, teardown_test)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_kernel_fields),
        T(test_copy_memset_fields),
        T(test_sync_alloc_external_fields),
        T(test_optional_kinds_off),
        T(test_kinds_enabled),
        T(test_timestamp_clock),
        T(test_pool_reuse_and_exhaustion),
        T(test_dropped_reported),
        T(test_optional_kind_refused),
        T(test_kernel_refused),
        T(test_register_refused),
        T(test_one_started_per_process),
        T(test_bad_config),
        T(test_missing_library),
        T(test_old_library),
        T(test_drain_races_completion),
        T(test_stop_drains),
    };
    return cmocka_run_group_tests_name("cupti", tests, setup_suite, teardown_suite);
}
