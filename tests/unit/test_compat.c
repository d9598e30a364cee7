// SPDX-License-Identifier: Apache-2.0
/*
 * test_compat.c - logs of format version 1 (CUPTI's numbers in copy, memset
 * and sync rows) load as today's values; version 2 logs of the same session
 * load the same rows and give the same report; versions this reader does not
 * know are skipped and counted, on both of the reader's paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"

#include "analysis/compat.h"
#include "analysis/model.h"
#include "analysis/report.h"

#include <gpufl/gpufl_log.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUITE "compat"

static gpufl__model_t *load(const char *dir) {
    gpufl__model_t *m = NULL;
    int rc = gpufl__model_load(&m, dir);
    if (rc) print_error("load %s: %d %s\n", dir, rc, gpufl_last_error());
    assert_int_equal(rc, 0);
    return m;
}

static void write_device_log(const char *dir, const char *lines) {
    char path[4096];
    snprintf(path, sizeof path, "%s/device.log", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}\n", f);
    fputs(lines, f);
    assert_int_equal(fclose(f), 0);
}

/* The committed version 1 sessions: their rows as today's values. */
static void compat_fixtures_load_new_values(void **state) {
    (void)state;
    gpufl__model_t *m = load(tu_fixture("sessions/trace"));
    assert_int_equal(m->n_copies, 4);
    /* copy_kind 1, src_kind 1 (pageable), dst_kind 3 (device) */
    assert_int_equal(m->copies[0].copy_kind, GPUFL_COPY_KIND_HOST_TO_DEVICE);
    assert_int_equal(m->copies[0].src_kind, GPUFL_MEMORY_KIND_PAGEABLE);
    assert_int_equal(m->copies[0].dst_kind, GPUFL_MEMORY_KIND_DEVICE);
    assert_int_equal(m->copies[1].src_kind, GPUFL_MEMORY_KIND_PINNED);
    assert_int_equal(m->copies[2].copy_kind, GPUFL_COPY_KIND_DEVICE_TO_HOST);
    /* CUPTI's 8 (DtoD) is gpufl's 3 */
    assert_int_equal(m->copies[3].copy_kind, GPUFL_COPY_KIND_DEVICE_TO_DEVICE);
    gpufl__model_destroy(m);

    m = load(tu_fixture("sessions/scoped"));
    assert_int_equal(m->n_syncs, 1);
    assert_int_equal(m->syncs[0].sync_type, GPUFL_SYNC_TYPE_STREAM); /* CUPTI's 3 */
    assert_string_equal(gpufl__model_sync_name(m->syncs[0].sync_type), "cudaStreamSynchronize");
    assert_int_equal(m->n_memsets, 2);
    assert_int_equal(m->memsets[1].memory_kind, GPUFL_MEMORY_KIND_DEVICE);
    gpufl__model_destroy(m);
}

/* Every number version 1 could hold, through the batch scanner (plain
 * keys) and through jansson (an escaped key sends the line there). */
static void check_every_v1_value(const char *copy_kind_key) {
    char *dir = strdup(tu_scratch_dir(SUITE, copy_kind_key[0] == 'c' ? "scanned" : "jansson"));
    char lines[4096];
    /* 12 copies: copy kinds 0..11, memory kinds 0..8 then 0..2 as src,
     * reversed as dst; 9 memsets: 0..8; 6 syncs: 0..5. The last of each
     * is past what v 1 ever held. */
    snprintf(lines, sizeof lines,
             "{\"type\":\"copy\",\"v\":1,\"start_ns\":[1,1,1,1,1,1,1,1,1,1,1,1],"
             "\"end_ns\":[2,2,2,2,2,2,2,2,2,2,2,2],\"device\":[0,0,0,0,0,0,0,0,0,0,0,0],"
             "\"stream\":[7,7,7,7,7,7,7,7,7,7,7,7],\"correlation\":[1,2,3,4,5,6,7,8,9,10,11,12],"
             "\"bytes\":[8,8,8,8,8,8,8,8,8,8,8,8],\"%s\":[0,1,2,3,4,5,6,7,8,9,10,11],"
             "\"src_kind\":[0,1,2,3,4,5,6,7,8,0,1,2],\"dst_kind\":[8,7,6,5,4,3,2,1,0,0,0,0],"
             "\"async\":[0,0,0,0,0,0,0,0,0,0,0,0]}\n"
             "{\"type\":\"memset\",\"v\":1,\"start_ns\":[1,1,1,1,1,1,1,1,1],"
             "\"end_ns\":[2,2,2,2,2,2,2,2,2],\"device\":[0,0,0,0,0,0,0,0,0],"
             "\"stream\":[7,7,7,7,7,7,7,7,7],\"correlation\":[1,2,3,4,5,6,7,8,9],"
             "\"bytes\":[8,8,8,8,8,8,8,8,8],\"memory_kind\":[0,1,2,3,4,5,6,7,8]}\n"
             "{\"type\":\"sync\",\"v\":1,\"start_ns\":[1,1,1,1,1,1],\"end_ns\":[2,2,2,2,2,2],"
             "\"sync_type\":[0,1,2,3,4,5],\"context\":[1,1,1,1,1,1],"
             "\"stream\":[7,7,7,7,7,7],\"event\":[null,null,null,null,null,null],"
             "\"correlation\":[1,2,3,4,5,6]}\n",
             copy_kind_key);
    write_device_log(dir, lines);
    gpufl__model_t *m = load(dir);
    /* What each of CUPTI's numbers meant, by name. */
    static const int32_t copy[] = {GPUFL_COPY_KIND_UNKNOWN,
                                   GPUFL_COPY_KIND_HOST_TO_DEVICE,
                                   GPUFL_COPY_KIND_DEVICE_TO_HOST,
                                   GPUFL_COPY_KIND_HOST_TO_ARRAY,
                                   GPUFL_COPY_KIND_ARRAY_TO_HOST,
                                   GPUFL_COPY_KIND_ARRAY_TO_ARRAY,
                                   GPUFL_COPY_KIND_ARRAY_TO_DEVICE,
                                   GPUFL_COPY_KIND_DEVICE_TO_ARRAY,
                                   GPUFL_COPY_KIND_DEVICE_TO_DEVICE,
                                   GPUFL_COPY_KIND_HOST_TO_HOST,
                                   GPUFL_COPY_KIND_PEER,
                                   GPUFL_COPY_KIND_UNKNOWN};
    static const int32_t memory[] = {
        GPUFL_MEMORY_KIND_UNKNOWN,       GPUFL_MEMORY_KIND_PAGEABLE,
        GPUFL_MEMORY_KIND_PINNED,        GPUFL_MEMORY_KIND_DEVICE,
        GPUFL_MEMORY_KIND_ARRAY,         GPUFL_MEMORY_KIND_MANAGED,
        GPUFL_MEMORY_KIND_DEVICE_STATIC, GPUFL_MEMORY_KIND_MANAGED_STATIC,
        GPUFL_MEMORY_KIND_UNKNOWN};
    static const int32_t sync[] = {
        GPUFL_SYNC_TYPE_UNKNOWN, GPUFL_SYNC_TYPE_EVENT,  GPUFL_SYNC_TYPE_STREAM_WAIT_EVENT,
        GPUFL_SYNC_TYPE_STREAM,  GPUFL_SYNC_TYPE_DEVICE, GPUFL_SYNC_TYPE_UNKNOWN};
    static const int src[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2};
    static const int dst[] = {8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0};
    assert_int_equal(m->n_copies, 12);
    for (size_t i = 0; i < 12; i++) {
        assert_int_equal(m->copies[i].copy_kind, copy[i]);
        assert_int_equal(m->copies[i].src_kind, memory[src[i]]);
        assert_int_equal(m->copies[i].dst_kind, memory[dst[i]]);
    }
    assert_int_equal(m->n_memsets, 9);
    for (size_t i = 0; i < 9; i++) assert_int_equal(m->memsets[i].memory_kind, memory[i]);
    assert_int_equal(m->n_syncs, 6);
    for (size_t i = 0; i < 6; i++) assert_int_equal(m->syncs[i].sync_type, sync[i]);
    assert_int_equal(m->unknown_versions, 0);
    gpufl__model_destroy(m);
    free(dir);
}

static void compat_every_v1_value(void **state) {
    (void)state;
    check_every_v1_value("copy_kind");
    check_every_v1_value("\\u0063opy_kind"); /* "copy_kind", escaped: read by jansson */
}

/* Version 2 rows are today's values: loaded as they are; the legend line
 * beside them is read without complaint. */
static void compat_v2_rows_as_written(void **state) {
    (void)state;
    char *dir = strdup(tu_scratch_dir(SUITE, "v2"));
    write_device_log(dir, "{\"type\":\"legend\",\"v\":1,\"copy_kind\":{\"0\":\"unknown\"},"
                          "\"memory_kind\":{\"0\":\"unknown\"},\"sync_type\":{\"0\":\"unknown\"}}\n"
                          "{\"type\":\"copy\",\"v\":2,\"start_ns\":[1,1],\"end_ns\":[2,2],"
                          "\"device\":[0,0],\"stream\":[7,7],\"correlation\":[1,2],"
                          "\"bytes\":[8,8],\"copy_kind\":[4,10],\"src_kind\":[4,5],"
                          "\"dst_kind\":[7,3],\"async\":[0,0]}\n"
                          "{\"type\":\"sync\",\"v\":2,\"start_ns\":[1],\"end_ns\":[2],"
                          "\"sync_type\":[1],\"context\":[1],\"stream\":[null],"
                          "\"event\":[null],\"correlation\":[1]}\n");
    gpufl__model_t *m = load(dir);
    assert_int_equal(m->read.corrupt_lines, 0);
    assert_int_equal(m->n_warnings, 0);
    assert_int_equal(m->n_copies, 2);
    assert_int_equal(m->copies[0].copy_kind, GPUFL_COPY_KIND_PEER);
    assert_int_equal(m->copies[0].src_kind, GPUFL_MEMORY_KIND_MANAGED);
    assert_int_equal(m->copies[0].dst_kind, GPUFL_MEMORY_KIND_MANAGED_STATIC);
    assert_int_equal(m->copies[1].copy_kind, GPUFL_COPY_KIND_DEVICE_TO_ARRAY);
    assert_int_equal(m->copies[1].src_kind, GPUFL_MEMORY_KIND_ARRAY);
    assert_int_equal(m->n_syncs, 1);
    assert_int_equal(m->syncs[0].sync_type, GPUFL_SYNC_TYPE_DEVICE);
    assert_string_equal(gpufl__model_sync_name(m->syncs[0].sync_type), "cudaDeviceSynchronize");
    gpufl__model_destroy(m);
    free(dir);
}

/* A version this reader does not know is skipped and counted, scanned or
 * not: copy 4, and kernel 3 (copy is at 3, kernel at 2: compact lines). */
static void compat_unknown_versions_skipped(void **state) {
    (void)state;
    char *dir = strdup(tu_scratch_dir(SUITE, "unknown"));
    write_device_log(dir, "{\"type\":\"copy\",\"v\":4,\"start_ns\":[1],\"end_ns\":[2],"
                          "\"device\":[0],\"stream\":[7],\"correlation\":[1],\"bytes\":[8],"
                          "\"copy_kind\":[1],\"src_kind\":[1],\"dst_kind\":[3],\"async\":[0]}\n"
                          "{\"type\":\"copy\",\"v\":4,\"start_ns\":[1],\"end_ns\":[2],"
                          "\"device\":[0],\"stream\":[7],\"correlation\":[1],\"bytes\":[8],"
                          "\"\\u0063opy_kind\":[1],\"src_kind\":[1],\"dst_kind\":[3],"
                          "\"async\":[0]}\n"
                          "{\"type\":\"memset\",\"v\":0,\"start_ns\":[1],\"end_ns\":[2],"
                          "\"device\":[0],\"stream\":[7],\"correlation\":[1],\"bytes\":[8],"
                          "\"memory_kind\":[3]}\n"
                          "{\"type\":\"kernel\",\"v\":3,\"start_ns\":[1],\"end_ns\":[2]}\n");
    gpufl__model_t *m = load(dir);
    assert_int_equal(m->n_copies, 0);
    assert_int_equal(m->n_memsets, 0);
    assert_int_equal(m->n_kernels, 0);
    assert_int_equal(m->unknown_versions, 4);
    gpufl__model_destroy(m);
    free(dir);

    assert_true(gpufl__compat_known("copy", 1));
    assert_true(gpufl__compat_known("copy", GPUFL_LOG_VALUES_VERSION));
    assert_true(gpufl__compat_known("alloc", 2));
    assert_true(gpufl__compat_known("kernel", 2));
    assert_false(gpufl__compat_known("kernel", 3));
    assert_true(gpufl__compat_known("sync", 3));
    assert_false(gpufl__compat_known("sync", 4));
    assert_false(gpufl__compat_known("header", 0));
    assert_true(gpufl__compat_known("frobnicate", 1));
}

static char *render(const gpufl__model_t *m, gpufl_report_format_t fmt, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    assert_int_equal(gpufl__report_write_format(m, fmt, f), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* A session written in version 2 (fixtures/v2: the v 1 fixture of the same
 * name with today's values) or as compact lines (fixtures/v3: the v 2 one
 * rewritten by tests/tools/gpufl_compact.py) loads the same rows and gives
 * the same report, in every format, and the same insights as its v 1
 * original. (Without the legend line a writer adds: the report counts
 * lines; compat_v2_rows_as_written reads one.) */
static void check_same_session(const char *dir, const char *name) {
    char v1[256], vn[256];
    snprintf(v1, sizeof v1, "sessions/%s", name);
    snprintf(vn, sizeof vn, "%s/%s", dir, name);
    gpufl__model_t *a = load(tu_fixture(v1)), *b = load(tu_fixture(vn));
    assert_int_equal(b->unknown_versions, 0);
    assert_int_equal(b->n_warnings, a->n_warnings);
    assert_int_equal(a->n_kernels, b->n_kernels);
    assert_int_equal(a->n_copies, b->n_copies);
    assert_int_equal(a->n_memsets, b->n_memsets);
    assert_int_equal(a->n_syncs, b->n_syncs);
    for (size_t i = 0; i < a->n_kernels; i++) { /* their names point into each model's pool */
        gpufl__model_kernel_t ka = a->kernels[i], kb = b->kernels[i];
        assert_string_equal(ka.name ? ka.name : "", kb.name ? kb.name : "");
        ka.name = kb.name = ka.demangled = kb.demangled = NULL;
        assert_memory_equal(&ka, &kb, sizeof ka);
    }
    if (a->n_copies) assert_memory_equal(a->copies, b->copies, a->n_copies * sizeof *a->copies);
    if (a->n_memsets)
        assert_memory_equal(a->memsets, b->memsets, a->n_memsets * sizeof *a->memsets);
    if (a->n_syncs) assert_memory_equal(a->syncs, b->syncs, a->n_syncs * sizeof *a->syncs);
    static const gpufl_report_format_t fmts[] = {GPUFL_REPORT_TEXT, GPUFL_REPORT_JSON,
                                                 GPUFL_REPORT_MARKDOWN, GPUFL_REPORT_HTML};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        size_t la, lb;
        char *ta = render(a, fmts[i], &la), *tb = render(b, fmts[i], &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(ta, tb, la);
        free(ta);
        free(tb);
    }
    gpufl__model_destroy(a);
    gpufl__model_destroy(b);
}

static void compat_v2_session_reads_the_same(void **state) {
    (void)state;
    check_same_session("v2", "trace");
    check_same_session("v2", "scoped");
}

static void compat_compact_session_reads_the_same(void **state) {
    (void)state;
    check_same_session("v3", "trace");
    check_same_session("v3", "scoped");
    check_same_session("v3", "stacks");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compat_fixtures_load_new_values),
        cmocka_unit_test(compat_every_v1_value),
        cmocka_unit_test(compat_v2_rows_as_written),
        cmocka_unit_test(compat_unknown_versions_skipped),
        cmocka_unit_test(compat_v2_session_reads_the_same),
        cmocka_unit_test(compat_compact_session_reads_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
