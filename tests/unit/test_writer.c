// SPDX-License-Identifier: Apache-2.0
/*
 * test_writer.c - session files: header first, dict before use, exact batch
 * bytes, rotation into segments, and recovery after a failed write (the
 * writer's fd is swapped for /dev/full, a real ENOSPC). Its records are
 * synthetic, so it writes outside the tree the schema test validates.
 */
#include "test_util.h"

#include "core/writer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>

#define SUITE "writer"

static const gpufl__col_def_t cols[] = {{"ts_ns", GPUFL_COL_INT},
                                        {"name", GPUFL_COL_DICT},
                                        {"pct", GPUFL_COL_PCT},
                                        {"opt", GPUFL_COL_OPT}};

static gpufl__session_ident_t ident = {.session_id = "S1",
                                       .app_name = "w",
                                       .hostname = "h",
                                       .pid = 9,
                                       .epoch_ns = 12345678901234,
                                       .epoch_unix_us = 1};

static char *slurp(const char *dir, const char *file) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void header_dict_and_batch_bytes(void **state) {
    (void)state;
    const char *dir = tu_scratch_dir(SUITE, "bytes");
    gpufl__writer_t f;
    gpufl__batch_t b;
    gpufl__intern_t *dict = gpufl__intern_create(100, 1 << 20);
    assert_int_equal(gpufl__writer_open(&f, dir, "scope", &ident, 1 << 30, 0), 0);
    assert_int_equal(gpufl__batch_init(&b, "t", cols, 4), 0);
    uint32_t x = gpufl__intern(dict, "x", 1), y = gpufl__intern(dict, "y\"", 2);
    gpufl__cell_t *r = gpufl__batch_row(&b);
    r[0].i = 1, r[1].i = x, r[2].d = 12.34, r[3].i = -1;
    r = gpufl__batch_row(&b);
    r[0].i = 2, r[1].i = y, r[2].d = -1, r[3].i = 5;
    gpufl__batch_encode(&b, &f, dict);
    r = gpufl__batch_row(&b); /* x again: no new dict line */
    r[0].i = 3, r[1].i = x, r[2].d = 0, r[3].i = 0;
    gpufl__batch_encode(&b, &f, dict);
    gpufl__batch_encode(&b, &f, dict); /* empty: writes nothing */
    assert_int_equal(gpufl__writer_flush(&f), 0);
    gpufl__writer_close(&f);
    char *got = slurp(dir, "scope.log");
    char *second = strchr(got, '\n') + 1;
    assert_string_equal(
        second, "{\"type\":\"dict\",\"v\":1,\"id\":[2,3],\"str\":[\"x\",\"y\\\"\"]}\n"
                "{\"type\":\"t\",\"v\":1,\"ts_ns\":[1,2],\"name\":[2,3],\"pct\":[12.3,null],"
                "\"opt\":[null,5]}\n"
                "{\"type\":\"t\",\"v\":1,\"ts_ns\":[3],\"name\":[2],\"pct\":[0.0],\"opt\":[0]}\n");
    assert_non_null(strstr(got, "\"epoch_ns\":\"12345678901234\""));
    assert_memory_equal(got, "{\"type\":\"header\",\"v\":1,", 23);
    free(got);
    gpufl__batch_fini(&b);
    gpufl__intern_destroy(dict);
}

static void existing_file_is_never_overwritten(void **state) {
    (void)state;
    const char *dir = tu_scratch_dir(SUITE, "exclusive");
    gpufl__writer_t f, g;
    assert_int_equal(gpufl__writer_open(&f, dir, "device", &ident, 1 << 30, 0), 0);
    assert_int_equal(gpufl__writer_open(&g, dir, "device", &ident, 1 << 30, 0), GPUFL_EIO);
    assert_non_null(strstr(gpufl_last_error(), "device.log"));
    gpufl__writer_close(&g);
    gpufl__writer_close(&f);
}

static void rotation(void **state) {
    (void)state;
    const char *dir = tu_scratch_dir(SUITE, "rotation");
    gpufl__writer_t f;
    assert_int_equal(gpufl__writer_open(&f, dir, "system", &ident, 1000, 0), 0);
    for (int i = 0; i < 30; i++) {
        gpufl__buf_t *b = gpufl__writer_record(&f, "event");
        gpufl__buf_kv_str(b, "message",
                          "0123456789012345678901234567890123456789012345678901234567890123456789");
        gpufl__writer_end_record(&f);
        gpufl__writer_flush(&f);
    }
    gpufl__writer_close(&f);
    assert_true(tu_exists(dir, "system.log.1"));
    assert_true(tu_exists(dir, "system.log.2"));
    for (int seg = 0; seg < 3; seg++) {
        char name[32];
        snprintf(name, sizeof name, seg ? "system.log.%d" : "system.log", seg);
        tu_lines_t L = tu_read(dir, name);
        assert_string_equal(tu_type(L.v[0]), "header");
        assert_int_equal(json_integer_value(json_object_get(L.v[0], "segment")), seg);
        if (seg < 2) {
            assert_string_equal(tu_type(L.v[L.n - 1]), "segment_end");
            assert_true(tu_file_size(dir, name) < 1000 + 300);
        }
        tu_free(&L);
    }
}

/* With an interval, a segment holding data is sealed once it is that old,
 * also when nothing more is written; a file that holds only its header is
 * never sealed, so an idle file stays one segment. */
static void rotation_on_time(void **state) {
    (void)state;
    const char *dir = tu_scratch_dir(SUITE, "rotation_on_time");
    gpufl__writer_t f, idle;
    assert_int_equal(gpufl__writer_open(&f, dir, "system", &ident, 1 << 30, 0), 0);
    assert_int_equal(gpufl__writer_open(&idle, dir, "scope", &ident, 1 << 30, 0), 0);
    gpufl__writer_rotate_every(&f, 50 * 1000000);
    gpufl__writer_rotate_every(&idle, 50 * 1000000);
    gpufl__buf_kv_str(gpufl__writer_record(&f, "event"), "message", "first window");
    gpufl__writer_end_record(&f);
    assert_int_equal(gpufl__writer_flush(&f), 0);
    assert_false(tu_exists(dir, "system.log.1")); /* not yet 50 ms old */
    usleep(80 * 1000);
    assert_int_equal(gpufl__writer_flush(&f), 0); /* nothing pending: sealed on time alone */
    assert_int_equal(gpufl__writer_flush(&idle), 0);
    assert_true(tu_exists(dir, "system.log.1"));
    assert_false(tu_exists(dir, "scope.log.1"));
    gpufl__buf_kv_str(gpufl__writer_record(&f, "event"), "message", "second window");
    gpufl__writer_end_record(&f);
    assert_int_equal(gpufl__writer_flush(&f), 0);
    gpufl__writer_close(&f);
    gpufl__writer_close(&idle);
    tu_lines_t L = tu_read(dir, "system.log");
    assert_string_equal(tu_type(L.v[L.n - 1]), "segment_end");
    assert_string_equal(tu_type(L.v[L.n - 2]), "event");
    tu_free(&L);
    L = tu_read(dir, "system.log.1");
    assert_string_equal(tu_type(L.v[0]), "header");
    assert_int_equal(json_integer_value(json_object_get(L.v[0], "segment")), 1);
    assert_string_equal(json_string_value(json_object_get(L.v[L.n - 1], "message")),
                        "second window");
    tu_free(&L);
}

static void failed_write_is_counted_and_healed(void **state) {
    (void)state;
    const char *dir = tu_scratch_dir(SUITE, "enospc");
    gpufl__writer_t f;
    tu_log_capture_t cap = {0};
    assert_int_equal(gpufl__writer_open(&f, dir, "scope", &ident, 1 << 30, 0), 0);
    int saved = dup(f.fd), full = open("/dev/full", O_WRONLY);
    assert_true(saved >= 0 && full >= 0);
    dup2(full, f.fd); /* the disk is now full */
    gpufl_set_log_hook(tu_capture_hook, &cap);
    gpufl__writer_record(&f, "event");
    gpufl__writer_end_record(&f);
    assert_int_equal(gpufl__writer_flush(&f), GPUFL_EIO);
    gpufl_set_log_hook(NULL, NULL);
    assert_int_equal(f.write_errors, 1);
    assert_non_null(strstr(cap.last, "No space left"));
    dup2(saved, f.fd); /* space again: the kept line goes out */
    assert_int_equal(gpufl__writer_flush(&f), 0);
    /* a line cut short earlier is closed before the next one */
    f.broken_line = 1;
    gpufl__writer_record(&f, "event");
    gpufl__writer_end_record(&f);
    assert_int_equal(gpufl__writer_flush(&f), 0);
    gpufl__writer_close(&f);
    close(saved);
    close(full);
    char *got = slurp(dir, "scope.log");
    char *lines = strchr(got, '\n') + 1;
    assert_string_equal(lines, "{\"type\":\"event\",\"v\":1}\n\n{\"type\":\"event\",\"v\":1}\n");
    free(got);
}

/* A write cut by the disk (here RLIMIT_FSIZE, a real short write): what
 * reached the file is never sent again, the rest of the cut line is lost and
 * counted, and the next line starts clean. */
static void cut_write_resumes_at_the_next_line(void **state) {
    (void)state;
    const char *dir = tu_scratch_dir(SUITE, "cut");
    gpufl__writer_t f;
    struct rlimit old, lim;
    assert_int_equal(gpufl__writer_open(&f, dir, "scope", &ident, 1 << 30, 0), 0);
    signal(SIGXFSZ, SIG_IGN);
    for (int i = 0; i < 3; i++) {
        gpufl__buf_t *b = gpufl__writer_record(&f, "event");
        gpufl__buf_kv_i64(b, "n", i);
        gpufl__buf_kv_str(b, "message", "0123456789012345678901234567890123456789");
        gpufl__writer_end_record(&f);
    }
    size_t line = strchr(f.out.data, '\n') - f.out.data + 1;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = f.bytes + line + line / 2; /* the file may end in the middle of line 2 */
    setrlimit(RLIMIT_FSIZE, &lim);
    gpufl_set_log_hook(tu_capture_hook, &(tu_log_capture_t){0});
    assert_int_equal(gpufl__writer_flush(&f), GPUFL_EIO);
    gpufl_set_log_hook(NULL, NULL);
    setrlimit(RLIMIT_FSIZE, &old);
    assert_int_equal(f.batches_lost, 1);
    assert_int_equal(gpufl__writer_flush(&f), 0);
    gpufl__writer_close(&f);
    char *got = slurp(dir, "scope.log");
    int n0 = 0, n2 = 0, n1 = 0;
    for (char *p = got; (p = strstr(p, "\"n\":")); p++) {
        n0 += p[4] == '0';
        n1 += p[4] == '1';
        n2 += p[4] == '2';
    }
    assert_int_equal(n0, 1); /* not written twice */
    assert_int_equal(n1, 1); /* its head only, closed by a newline */
    assert_int_equal(n2, 1);
    /* the cut head ends its own line; line 3 starts whole on the next */
    char *third = strstr(got, "\"n\":1");
    char *nl = strchr(third, '\n');
    assert_non_null(nl);
    assert_true(nl[-1] != '}');
    const char *next = "{\"type\":\"event\",\"v\":1,\"n\":2";
    assert_memory_equal(nl + 1, next, strlen(next));
    free(got);
}

/* Records that overflow the pending buffer vanish whole, dict lines with
 * them, and their ids are defined again by the next line that uses them. */
static void overflow_rolls_back_dict_and_records(void **state) {
    (void)state;
    const char *dir = tu_scratch_dir(SUITE, "overflow_dict");
    gpufl__writer_t f;
    gpufl__batch_t b;
    gpufl__intern_t *dict = gpufl__intern_create(100, 1 << 20);
    static const gpufl__col_def_t named[] = {{"ts_ns", GPUFL_COL_INT}, {"name", GPUFL_COL_DICT}};
    gpufl__session_ident_t real = ident;
    snprintf(real.session_id, sizeof real.session_id, "20261122T000000.000Z-1-abcd");
    assert_int_equal(gpufl__writer_open(&f, dir, "scope", &real, 1 << 30, 0), 0);
    assert_int_equal(gpufl__batch_init(&b, "scope_end", named, 2), 0);
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    uint32_t id = gpufl__intern(dict, big, strlen(big));
    f.out.max = f.out.len + 300; /* too small for the dict line */
    gpufl__cell_t *r = gpufl__batch_row(&b);
    r[0].i = 1, r[1].i = id;
    gpufl__batch_encode(&b, &f, dict);
    assert_int_equal(f.out.len, 0);
    assert_int_equal(f.batches_lost, 1);
    gpufl__buf_t *rec = gpufl__writer_record(&f, "event");
    gpufl__buf_kv_str(rec, "message", big);
    gpufl__writer_end_record(&f); /* too big as well: gone whole */
    assert_int_equal(f.out.len, 0);
    assert_int_equal(f.batches_lost, 2);
    f.out.max = (size_t)64 << 20;
    r = gpufl__batch_row(&b);
    r[0].i = 2, r[1].i = id;
    gpufl__batch_encode(&b, &f, dict); /* the id is defined now, since the first try was undone */
    assert_non_null(strstr(f.out.data, "\"type\":\"dict\""));
    gpufl__writer_close(&f);
    gpufl__batch_fini(&b);
    gpufl__intern_destroy(dict);
}

static void oversized_batch_is_dropped_whole(void **state) {
    (void)state;
    const char *dir = tu_scratch_dir(SUITE, "oversized");
    gpufl__writer_t f;
    gpufl__batch_t b;
    gpufl__intern_t *dict = gpufl__intern_create(100, 1 << 20);
    assert_int_equal(gpufl__writer_open(&f, dir, "scope", &ident, 1 << 30, 0), 0);
    f.out.max = f.out.len + 64; /* squeeze the pending buffer */
    assert_int_equal(gpufl__batch_init(&b, "t", cols, 4), 0);
    for (int i = 0; i < 100; i++) {
        gpufl__cell_t *r = gpufl__batch_row(&b);
        r[0].i = i, r[1].i = 0, r[2].d = 1, r[3].i = 1;
    }
    size_t before = f.out.len;
    gpufl__batch_encode(&b, &f, dict);
    assert_int_equal(f.out.len, before); /* no half line left behind */
    assert_int_equal(f.batches_lost, 1);
    assert_int_equal(b.rows, 0);
    gpufl__writer_close(&f);
    gpufl__batch_fini(&b);
    gpufl__intern_destroy(dict);
    assert_int_equal(gpufl__batch_init(&b, "t", cols, 0), GPUFL_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(header_dict_and_batch_bytes),
        cmocka_unit_test(existing_file_is_never_overwritten),
        cmocka_unit_test(rotation),
        cmocka_unit_test(rotation_on_time),
        cmocka_unit_test(failed_write_is_counted_and_healed),
        cmocka_unit_test(oversized_batch_is_dropped_whole),
        cmocka_unit_test(cut_write_resumes_at_the_next_line),
        cmocka_unit_test(overflow_rolls_back_dict_and_records),
    };
    return cmocka_run_group_tests_name("writer", tests, NULL, NULL);
}
