// SPDX-License-Identifier: Apache-2.0
/*
 * test_cupti_values.c - the NVIDIA backend's tables from CUPTI's numbers to
 * gpufl's values (nvidia/cupti_values.h), checked against the constants of
 * the CUDA toolkit's own cupti_activity.h; numbers past them count as
 * misses; and logs of version 1 (which held CUPTI's numbers) load to the
 * same values the backend writes today.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"

#include "analysis/model.h"
#include "nvidia/cupti_values.h"

#include <cupti.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUITE "cupti_values"

static void copy_kinds(void **state) {
    (void)state;
    static const struct {
        uint32_t cupti;
        gpufl_copy_kind_t want;
    } cases[] = {
        {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, GPUFL_COPY_KIND_UNKNOWN},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, GPUFL_COPY_KIND_HOST_TO_DEVICE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, GPUFL_COPY_KIND_DEVICE_TO_HOST},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, GPUFL_COPY_KIND_HOST_TO_ARRAY},
        {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, GPUFL_COPY_KIND_ARRAY_TO_HOST},
        {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, GPUFL_COPY_KIND_ARRAY_TO_ARRAY},
        {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, GPUFL_COPY_KIND_ARRAY_TO_DEVICE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, GPUFL_COPY_KIND_DEVICE_TO_ARRAY},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, GPUFL_COPY_KIND_DEVICE_TO_DEVICE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, GPUFL_COPY_KIND_HOST_TO_HOST},
        {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, GPUFL_COPY_KIND_PEER},
    };
    gpufl__value_misses_t misses = {0};
    int seen[GPUFL_COPY_KIND_COUNT] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(gpufl__cupti_values_copy_kind(&misses, cases[i].cupti), cases[i].want);
        seen[cases[i].want]++;
    }
    assert_int_equal(misses.count, 0);
    for (int v = 0; v < GPUFL_COPY_KIND_COUNT; v++) assert_int_equal(seen[v], 1); /* onto */
}

static void memory_kinds(void **state) {
    (void)state;
    static const struct {
        uint32_t cupti;
        gpufl_memory_kind_t want;
    } cases[] = {
        {CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, GPUFL_MEMORY_KIND_UNKNOWN},
        {CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, GPUFL_MEMORY_KIND_PAGEABLE},
        {CUPTI_ACTIVITY_MEMORY_KIND_PINNED, GPUFL_MEMORY_KIND_PINNED},
        {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, GPUFL_MEMORY_KIND_DEVICE},
        {CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, GPUFL_MEMORY_KIND_ARRAY},
        {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, GPUFL_MEMORY_KIND_MANAGED},
        {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, GPUFL_MEMORY_KIND_DEVICE_STATIC},
        {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, GPUFL_MEMORY_KIND_MANAGED_STATIC},
    };
    gpufl__value_misses_t misses = {0};
    int seen[GPUFL_MEMORY_KIND_COUNT] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(gpufl__cupti_values_memory_kind(&misses, cases[i].cupti), cases[i].want);
        seen[cases[i].want]++;
    }
    assert_int_equal(misses.count, 0);
    for (int v = 0; v < GPUFL_MEMORY_KIND_COUNT; v++) assert_int_equal(seen[v], 1);
}

static void sync_types(void **state) {
    (void)state;
    static const struct {
        uint32_t cupti;
        gpufl_sync_type_t want;
    } cases[] = {
        {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN, GPUFL_SYNC_TYPE_UNKNOWN},
        {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, GPUFL_SYNC_TYPE_EVENT},
        {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, GPUFL_SYNC_TYPE_STREAM_WAIT_EVENT},
        {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, GPUFL_SYNC_TYPE_STREAM},
        {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, GPUFL_SYNC_TYPE_DEVICE},
    };
    gpufl__value_misses_t misses = {0};
    int seen[GPUFL_SYNC_TYPE_COUNT] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(gpufl__cupti_values_sync_type(&misses, cases[i].cupti), cases[i].want);
        seen[cases[i].want]++;
    }
    assert_int_equal(misses.count, 0);
    for (int v = 0; v < GPUFL_SYNC_TYPE_COUNT; v++) assert_int_equal(seen[v], 1);
}

/* A number past CUPTI's enums today (a later CUPTI's) is unknown, counted,
 * and the first is kept for the event that says so. */
static void unknown_numbers_are_counted(void **state) {
    (void)state;
    gpufl__value_misses_t misses = {0};
    assert_int_equal(gpufl__cupti_values_copy_kind(&misses, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP + 1),
                     GPUFL_COPY_KIND_UNKNOWN);
    assert_int_equal(misses.count, 1);
    assert_string_equal(misses.first, "copy kind");
    assert_int_equal(misses.first_value, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP + 1);
    assert_int_equal(gpufl__cupti_values_memory_kind(&misses, 0x7fffffff),
                     GPUFL_MEMORY_KIND_UNKNOWN);
    assert_int_equal(gpufl__cupti_values_sync_type(&misses, 5), GPUFL_SYNC_TYPE_UNKNOWN);
    assert_int_equal(misses.count, 3);
    assert_string_equal(misses.first, "copy kind"); /* the first stays */
    /* CUPTI's own "unknown" is a value it gives, not a miss. */
    assert_int_equal(gpufl__cupti_values_sync_type(&misses, 0), GPUFL_SYNC_TYPE_UNKNOWN);
    assert_int_equal(misses.count, 3);
}

/* The analysis translates v 1 logs with a table of its own (it may not
 * include CUPTI's header): it must agree with the backend's, number by
 * number, or an old log and a new one of the same run would differ. */
static void v1_logs_load_as_the_backend_writes(void **state) {
    (void)state;
    const char *dir = tu_scratch_dir(SUITE, "v1");
    char path[1100];
    snprintf(path, sizeof path, "%s/device.log", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n", f);
    /* copies: every memcpy kind; memory kinds 0..7 as src, then again */
    enum { N = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP + 1 };
    fputs("{\"type\":\"copy\",\"v\":1", f);
    static const char *const zero_cols[] = {"start_ns",    "end_ns", "device", "stream",
                                            "correlation", "bytes",  "async"};
    for (size_t c = 0; c < sizeof zero_cols / sizeof zero_cols[0]; c++) {
        fprintf(f, ",\"%s\":[", zero_cols[c]);
        for (int i = 0; i < N; i++) fprintf(f, i ? ",0" : "0");
        fputc(']', f);
    }
    static const char *const kind_cols[] = {"copy_kind", "src_kind", "dst_kind"};
    for (size_t c = 0; c < 3; c++) {
        fprintf(f, ",\"%s\":[", kind_cols[c]);
        for (int i = 0; i < N; i++) fprintf(f, i ? ",%d" : "%d", c ? i % 8 : i);
        fputc(']', f);
    }
    fputs("}\n{\"type\":\"sync\",\"v\":1,\"start_ns\":[0,0,0,0,0],\"end_ns\":[0,0,0,0,0],"
          "\"sync_type\":[0,1,2,3,4],\"context\":[1,1,1,1,1],\"correlation\":[0,0,0,0,0]}\n",
          f);
    assert_int_equal(fclose(f), 0);

    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    gpufl__value_misses_t misses = {0};
    assert_int_equal(m->n_copies, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(m->copies[i].copy_kind,
                         gpufl__cupti_values_copy_kind(&misses, (uint32_t)i));
        assert_int_equal(m->copies[i].src_kind,
                         gpufl__cupti_values_memory_kind(&misses, (uint32_t)(i % 8)));
    }
    assert_int_equal(m->n_syncs, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(m->syncs[i].sync_type,
                         gpufl__cupti_values_sync_type(&misses, (uint32_t)i));
    assert_int_equal(misses.count, 0);
    gpufl__model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(copy_kinds),
        cmocka_unit_test(memory_kinds),
        cmocka_unit_test(sync_types),
        cmocka_unit_test(unknown_numbers_are_counted),
        cmocka_unit_test(v1_logs_load_as_the_backend_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
