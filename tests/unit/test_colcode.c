// SPDX-License-Identifier: Apache-2.0
/*
 * test_colcode.c - compact batch lines (util/colcode.c): what the writer encodes, both of the
 * reader's paths (the scanner and jansson) decode to the plain line's rows; malformed
 * encodings cost their own line, reported like any bad line, and no other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"

#include "analysis/model.h"
#include "analysis/reader.h"
#include "core/wire.h"

#include <gpufl/gpufl_analysis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUITE "colcode"

/* Rows with what a kernel batch meets: configs repeating (keyed), a config whose grid varies
 * (grid_x written plain), null configs, nulls in delta columns, starts out of order, constant
 * columns (scalars). */
static void fill(gpufl__batch_t *b, size_t rows) {
    for (size_t r = 0; r < rows; r++) {
        gpufl__cell_t *c = gpufl__batch_row(b);
        int64_t cfg = r % 5 == 4 ? -1 : (int64_t)(r % 3) + 1;
        int64_t v[GPUFL_KCOL_COUNT] = {
            [GPUFL_KCOL_START] = 5000000000 + (int64_t)r * 7000 - (r % 4 == 1 ? 9000 : 0),
            [GPUFL_KCOL_DEVICE] = 0,
            [GPUFL_KCOL_CONTEXT] = 1,
            [GPUFL_KCOL_STREAM] = 7 + 6 * (int64_t)(r % 2),
            [GPUFL_KCOL_CORRELATION] = 100 + 2 * (int64_t)r,
            [GPUFL_KCOL_NAME] = cfg < 0 ? 9 : cfg,
            [GPUFL_KCOL_GRID_X] = (int64_t)(r % 7) * 32 + 1,
            [GPUFL_KCOL_GRID_Y] = cfg < 0 ? 2 : cfg,
            [GPUFL_KCOL_GRID_Z] = 1,
            [GPUFL_KCOL_BLOCK_X] = 128 * (cfg < 0 ? 4 : cfg),
            [GPUFL_KCOL_BLOCK_Y] = 1,
            [GPUFL_KCOL_BLOCK_Z] = 1,
            [GPUFL_KCOL_REGISTERS] = cfg < 0 ? 40 : 32 + cfg,
            [GPUFL_KCOL_DEMANGLED] = cfg < 0 ? 19 : cfg + 10,
            [GPUFL_KCOL_SCOPE] = r % 6 == 0 ? -1 : 40 + (int64_t)r / 3,
            [GPUFL_KCOL_CONFIG] = cfg,
            [GPUFL_KCOL_EXTERNAL_KIND] = r % 2 ? 5 : -1,
            [GPUFL_KCOL_EXTERNAL_ID] = r % 2 ? 7000 + (int64_t)r : -1,
            [GPUFL_KCOL_LAUNCH] = r % 9 == 0 ? -1 : 5000000000 + (int64_t)r * 7000 - 4000,
            [GPUFL_KCOL_TID] = 4242,
            [GPUFL_KCOL_STACK] = (int64_t)(r % 4) + 1};
        v[GPUFL_KCOL_END] = v[GPUFL_KCOL_START] + 3000 + (int64_t)r;
        for (int k = 0; k < GPUFL_KCOL_COUNT; k++) c[k].i = v[k];
    }
}

static char *encode(const gpufl__batch_t *b) {
    gpufl__buf_t o;
    gpufl__buf_init(&o, (size_t)1 << 24);
    gpufl__wire_batch_line(&o, b, 0, b->rows);
    char *s = strndup(o.data, o.len);
    gpufl__buf_fini(&o);
    return s;
}

/* The compact line decodes, through jansson and through the scanner, to the plain line. */
static void colcode_round_trip(void **state) {
    (void)state;
    gpufl__batch_t plain, compact;
    assert_int_equal(
        gpufl__batch_init(&plain, "kernel", gpufl__wire_kernel.cols, gpufl__wire_kernel.ncols), 0);
    assert_int_equal(gpufl__batch_init_table(&compact, &gpufl__wire_kernel), 0);
    fill(&plain, 300);
    fill(&compact, 300);
    char *p = encode(&plain), *c = encode(&compact);
    assert_true(strlen(c) * 2 < strlen(p)); /* a fraction of the bytes */
    json_error_t err;
    json_t *pj = json_loads(p, 0, &err), *cj = json_loads(c, 0, &err);
    assert_non_null(pj);
    assert_non_null(cj);
    assert_int_equal(json_integer_value(json_object_get(cj, "v")), 2);
    assert_true(json_is_integer(json_object_get(cj, "tid")));               /* a scalar */
    assert_int_equal(json_array_size(json_object_get(cj, "registers")), 4); /* per config */
    assert_int_equal(json_array_size(json_object_get(cj, "grid_x")), 300);  /* not by config */
    char why[160] = "";
    assert_int_equal(gpufl__colcode_decode_json(cj, why, sizeof why), 0);
    json_object_del(pj, "v"), json_object_del(cj, "v");
    assert_true(json_equal(pj, cj));

    gpufl__reader_scanner_t s = {0};
    gpufl__reader_batch_t view;
    assert_int_equal(gpufl__reader_scan_batch(&s, c, strlen(c) - 1, &view), 1);
    assert_int_equal(view.rows, 300);
    for (size_t i = 0; i < view.n_columns; i++) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)view.columns[i].name_len, view.columns[i].name);
        json_t *col = json_object_get(pj, name);
        for (size_t r = 0; r < view.rows; r++) {
            json_t *cell = json_array_get(col, r);
            if (json_is_null(cell))
                assert_true(view.columns[i].is_null[r]);
            else
                assert_int_equal(view.columns[i].values[r], json_integer_value(cell));
        }
    }
    gpufl__reader_scanner_fini(&s);
    json_decref(pj);
    json_decref(cj);
    free(p);
    free(c);
    gpufl__batch_fini(&plain);
    gpufl__batch_fini(&compact);
}

/* A configuration run at two grids, each grid lasting its own time: end_ns is keyed on the
 * configuration and the grid, so after each grid's first row it holds zeros (keyed on the
 * configuration alone it would swing by the difference of the two durations), and both
 * decoders give the ends back. */
static void colcode_duration_by_grid(void **state) {
    (void)state;
    gpufl__batch_t b;
    assert_int_equal(gpufl__batch_init_table(&b, &gpufl__wire_kernel), 0);
    for (size_t r = 0; r < 8; r++) {
        gpufl__cell_t *c = gpufl__batch_row(&b);
        int64_t start = 1000000 * (int64_t)(r + 1);
        for (int k = 0; k < GPUFL_KCOL_COUNT; k++) /* the optional columns null */
            c[k].i = k == GPUFL_KCOL_START         ? start
                     : k == GPUFL_KCOL_END         ? start + (r % 2 ? 500000 : 10000)
                     : k == GPUFL_KCOL_GRID_X      ? (r % 2 ? 1024 : 64)
                     : k == GPUFL_KCOL_CONFIG      ? 1
                     : k == GPUFL_KCOL_CORRELATION ? (int64_t)r
                     : k >= GPUFL_KCOL_SCOPE       ? -1
                                                   : 0;
    }
    char *line = encode(&b);
    assert_non_null(strstr(line, "\"end_ns\":[10000,500000,0,0,0,0,0,0]"));
    json_error_t err;
    json_t *j = json_loads(line, 0, &err);
    char why[160] = "";
    assert_int_equal(gpufl__colcode_decode_json(j, why, sizeof why), 0);
    gpufl__reader_scanner_t s = {0};
    gpufl__reader_batch_t view;
    assert_int_equal(gpufl__reader_scan_batch(&s, line, strlen(line) - 1, &view), 1);
    const gpufl__reader_column_t *end = &view.columns[GPUFL_KCOL_END];
    for (size_t r = 0; r < 8; r++) {
        int64_t want = 1000000 * (int64_t)(r + 1) + (r % 2 ? 500000 : 10000);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "end_ns"), r)), want);
        assert_int_equal(end->values[r], want);
    }
    gpufl__reader_scanner_fini(&s);
    json_decref(j);
    free(line);
    gpufl__batch_fini(&b);
}

/* Both decoders give back every cell of b's rows from line (an optional column's negative
 * cell as null). */
static void assert_decodes_to(const gpufl__batch_t *b, const char *line) {
    json_error_t err;
    json_t *j = json_loads(line, 0, &err);
    assert_non_null(j);
    char why[160] = "";
    assert_int_equal(gpufl__colcode_decode_json(j, why, sizeof why), 0);
    gpufl__reader_scanner_t s = {0};
    gpufl__reader_batch_t view;
    assert_int_equal(gpufl__reader_scan_batch(&s, line, strlen(line) - 1, &view), 1);
    assert_int_equal(view.rows, b->rows);
    for (int k = 0; k < b->ncols; k++) {
        const gpufl__reader_column_t *col = &view.columns[k];
        json_t *a = json_object_get(j, b->cols[k].name);
        assert_int_equal(json_array_size(a), b->rows);
        for (size_t r = 0; r < b->rows; r++) {
            int64_t want = b->cells[r * (size_t)b->ncols + (size_t)k].i;
            if (b->cols[k].kind == GPUFL_COL_OPT && want < 0) {
                assert_true(json_is_null(json_array_get(a, r)));
                assert_true(col->is_null[r]);
            } else {
                assert_int_equal(json_integer_value(json_array_get(a, r)), want);
                assert_false(col->is_null[r]);
                assert_int_equal(col->values[r], want);
            }
        }
    }
    gpufl__reader_scanner_fini(&s);
    json_decref(j);
}

/* Rows of three configurations, every optional column null but what set() fills. */
static void fill_configs(gpufl__batch_t *b, size_t rows,
                         void (*set)(int64_t *v, size_t r, int64_t cfg)) {
    for (size_t r = 0; r < rows; r++) {
        gpufl__cell_t *c = gpufl__batch_row(b);
        int64_t v[GPUFL_KCOL_COUNT], cfg = (int64_t)(r % 3) + 1;
        for (int k = 0; k < GPUFL_KCOL_COUNT; k++) v[k] = k >= GPUFL_KCOL_SCOPE ? -1 : 0;
        v[GPUFL_KCOL_START] = 1000 * (int64_t)(r + 1);
        v[GPUFL_KCOL_END] = v[GPUFL_KCOL_START] + 100;
        v[GPUFL_KCOL_CORRELATION] = (int64_t)r;
        v[GPUFL_KCOL_CONFIG] = cfg;
        v[GPUFL_KCOL_BLOCK_X] = 64 * cfg;
        v[GPUFL_KCOL_STREAM] = 7;
        v[GPUFL_KCOL_TID] = 4242 + (int64_t)r % 2; /* differs in every configuration */
        set(v, r, cfg);
        for (int k = 0; k < GPUFL_KCOL_COUNT; k++) c[k].i = v[k];
    }
}

static void two_block_shapes(int64_t *v, size_t r, int64_t cfg) {
    if (cfg == 2) v[GPUFL_KCOL_BLOCK_X] = r % 2 ? 256 : 512; /* config 2 at two block shapes */
    if (cfg == 3) v[GPUFL_KCOL_STREAM] = 13 + (int64_t)(r / 3) % 2; /* and 3 on two streams */
}

/* A configuration whose rows disagree is written row by row alone (-n, then its n values),
 * the others once; the whole column plain where that is no shorter. */
static void colcode_keyed_exceptions(void **state) {
    (void)state;
    gpufl__batch_t b;
    assert_int_equal(gpufl__batch_init_table(&b, &gpufl__wire_kernel), 0);
    fill_configs(&b, 12, two_block_shapes);
    char *line = encode(&b);
    /* rows of config 2: 1, 4, 7, 10 */
    assert_non_null(strstr(line, "\"block_x\":[64,-4,256,512,256,512,192]"));
    assert_non_null(strstr(line, "\"stream\":[7,7,-4,13,14,13,14]"));
    assert_non_null(strstr(line, "\"tid\":[4242,4243,4242,4243,4242,4243,4242,4243,"));
    assert_decodes_to(&b, line);
    free(line);
    gpufl__batch_fini(&b);
}

/* PyTorch-like external ids (seq << 40 | counter), the seq following the configuration, the
 * counter crossing 2^40 (so the seq's bit moves too) and nulls between: after each
 * configuration's first row the column holds the counter's steps. */
static void ids_across_2_40(int64_t *v, size_t r, int64_t cfg) {
    const int64_t low = (int64_t)1 << 40;
    v[GPUFL_KCOL_EXTERNAL_ID] = r == 5 ? -1 : (cfg + 8) * low + low - 6 + (int64_t)r;
}

static void colcode_external_id_high_bits(void **state) {
    (void)state;
    gpufl__batch_t b;
    assert_int_equal(gpufl__batch_init_table(&b, &gpufl__wire_kernel), 0);
    fill_configs(&b, 9, ids_across_2_40);
    char *line = encode(&b);
    /* rows 0-2: each configuration's first (its seq in full); rows 3-4 the counter's steps;
     * row 5 null; row 6 carries into the seq (still a step from the row before), and rows 7
     * and 8 are the first of their configuration past the carry: that costs 2^40 each */
    assert_non_null(strstr(line, "\"external_id\":[10995116277754,"));
    assert_non_null(strstr(line, ",1,1,null,2,1099511627777,1099511627777]"));
    assert_decodes_to(&b, line);
    free(line);
    gpufl__batch_fini(&b);
}

static gpufl__model_t *load(const char *dir) {
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    return m;
}

/* Each malformed line is skipped and reported with its line number; the good line between
 * them loads. */
static void colcode_malformed_lines(void **state) {
    (void)state;
    /* lines 1 and 2: a header and a dict; 3 to 7: malformed; 8: good; 9 to 11: malformed */
    static const char *const lines[] = {
        "{\"type\":\"header\",\"v\":1,\"file\":\"device\",\"segment\":0}",
        "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"k\"]}",
        /* a delta column of the wrong length */
        "{\"type\":\"kernel\",\"v\":2,\"start_ns\":[10,5],\"end_ns\":[3,3],\"device\":0,"
        "\"stream\":7,\"correlation\":[1,1,1],\"name\":1}",
        /* a duration without the start it counts from */
        "{\"type\":\"kernel\",\"v\":2,\"end_ns\":[3,3],\"device\":[0,0],\"stream\":7,"
        "\"correlation\":[1,1],\"name\":1}",
        /* a keyed column with fewer values than configs */
        "{\"type\":\"kernel\",\"v\":2,\"start_ns\":[10,5],\"end_ns\":[3,3],\"device\":0,"
        "\"stream\":7,\"correlation\":[1,1],\"config\":[1,2],\"name\":[4]}",
        /* past 64 bits */
        "{\"type\":\"kernel\",\"v\":2,\"start_ns\":[9223372036854775807,5],\"end_ns\":[0,0],"
        "\"device\":0,\"stream\":7,\"correlation\":[1,1],\"name\":1}",
        /* no column array at all */
        "{\"type\":\"copy\",\"v\":3,\"start_ns\":1,\"end_ns\":2,\"device\":0}",
        "{\"type\":\"kernel\",\"v\":2,\"start_ns\":[10,5],\"end_ns\":[3,4],\"device\":0,"
        "\"stream\":7,\"correlation\":[1,1],\"config\":[1,2],\"name\":[1,1],\"grid_x\":[1,2],"
        "\"grid_y\":1,\"grid_z\":1,\"block_x\":1,\"block_y\":1,\"block_z\":1,\"registers\":8,"
        "\"static_smem_bytes\":0,\"dynamic_smem_bytes\":0,\"context\":1}",
        /* 9 to 11: malformed exceptions. A marker for other than its configuration's rows */
        "{\"type\":\"kernel\",\"v\":2,\"start_ns\":[1,1,1,1,1,1],\"end_ns\":[0,0,0,0,0,0],"
        "\"device\":0,\"config\":[1,1,1,2,2,2],\"registers\":[-2,8,9,16]}",
        /* fewer values after a marker than its configuration's rows */
        "{\"type\":\"kernel\",\"v\":2,\"start_ns\":[1,1,1,1,1,1],\"end_ns\":[0,0,0,0,0,0],"
        "\"device\":0,\"config\":[1,1,1,2,2,2],\"registers\":[16,-3,8,9]}",
        /* more values than rows */
        "{\"type\":\"kernel\",\"v\":2,\"start_ns\":[1,1],\"end_ns\":[0,0],\"device\":0,"
        "\"config\":[1,2],\"registers\":[-1,8,9]}",
    };
    char *dir = strdup(tu_scratch_dir(SUITE, "malformed")), path[4096];
    snprintf(path, sizeof path, "%s/device.log", dir);
    FILE *log = fopen(path, "wb");
    for (size_t i = 0; log && i < sizeof lines / sizeof lines[0]; i++)
        fprintf(log, "%s\n", lines[i]);
    assert_true(log && fclose(log) == 0);
    gpufl__model_t *m = load(dir);
    assert_int_equal(m->n_kernels, 2);
    assert_int_equal(m->kernels[0].start_ns, 10);
    assert_int_equal(m->kernels[0].end_ns, 13);
    assert_int_equal(m->kernels[1].start_ns, 18); /* 5 after the row before ended */
    assert_int_equal(m->kernels[1].end_ns, 22);
    assert_int_equal(m->kernels[1].correlation, 2);
    assert_int_equal(m->kernels[1].grid_x, 2);
    size_t reported = 0;
    for (size_t i = 0; i < m->n_warnings; i++) {
        const gpufl__model_warning_t *w = &m->warnings[i];
        if ((w->line >= 3 && w->line <= 7) || (w->line >= 9 && w->line <= 11))
            reported |= (size_t)1 << w->line;
    }
    assert_int_equal(reported, 0xef8); /* lines 3 to 7 and 9 to 11 */
    gpufl__model_destroy(m);
    free(dir);
}

/* A compact line holds at most 4096 rows: more is malformed, so that its scalars never expand
 * past what a writer makes. */
static void colcode_row_cap(void **state) {
    (void)state;
    for (int rows = 4096; rows <= 4097; rows++) {
        json_t *line = json_pack("{s:s, s:i, s:o, s:o, s:i}", "type", "kernel", "v", 2, "start_ns",
                                 json_array(), "end_ns", json_array(), "device", 0);
        for (int r = 0; r < rows; r++) { /* each 1 ns after the last ended, lasting 0 */
            json_array_append_new(json_object_get(line, "start_ns"), json_integer(1));
            json_array_append_new(json_object_get(line, "end_ns"), json_integer(0));
        }
        char why[160] = "";
        /* through the public entry gpufl-server calls */
        assert_int_equal(gpufl_log_line_decode(line, why, sizeof why),
                         rows > 4096 ? GPUFL_EFORMAT : 0);
        if (rows == 4096) {
            assert_int_equal(json_array_size(json_object_get(line, "device")), 4096);
            assert_int_equal(
                json_integer_value(json_array_get(json_object_get(line, "start_ns"), 4095)), 4096);
        } else {
            assert_non_null(strstr(why, "at most 4096"));
        }
        json_decref(line);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(colcode_round_trip),       cmocka_unit_test(colcode_duration_by_grid),
        cmocka_unit_test(colcode_keyed_exceptions), cmocka_unit_test(colcode_external_id_high_bits),
        cmocka_unit_test(colcode_malformed_lines),  cmocka_unit_test(colcode_row_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
