// SPDX-License-Identifier: Apache-2.0
/*
 * test_jsonw.c - the JSON encoders: exact bytes for integers, fixed-point
 * numbers and null, escaping, UTF-8 repair, and the buffer cap.
 */
#include "test_util.h"

#include "util/jsonw.h"

#include <math.h>

static const char *text(gpufl__buf_t *b) {
    gpufl__buf_putc(b, '\0');
    b->len--;
    return b->data;
}

static void integers(void **state) {
    (void)state;
    gpufl__buf_t b;
    gpufl__buf_init(&b, 1 << 20);
    int64_t values[] = {0, 7, -7, 10, 99, 100, 12345, INT64_MAX, INT64_MIN, 9007199254740992};
    const char *want = "0,7,-7,10,99,100,12345,9223372036854775807,-9223372036854775808,"
                       "9007199254740992";
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        if (i) gpufl__buf_putc(&b, ',');
        gpufl__buf_put_i64(&b, values[i]);
    }
    assert_string_equal(text(&b), want);
    gpufl__buf_fini(&b);
}

static void fixed_point_and_null(void **state) {
    (void)state;
    gpufl__buf_t b;
    gpufl__buf_init(&b, 1 << 20);
    gpufl__buf_put_fixed(&b, 0.0, 1);
    gpufl__buf_putc(&b, ' ');
    gpufl__buf_put_fixed(&b, 99.96, 1);
    gpufl__buf_putc(&b, ' ');
    gpufl__buf_put_fixed(&b, 1.5, 2);
    gpufl__buf_putc(&b, ' ');
    gpufl__buf_put_fixed(&b, 0.125, 3);
    gpufl__buf_putc(&b, ' ');
    gpufl__buf_put_fixed(&b, -1, 1);
    gpufl__buf_putc(&b, ' ');
    gpufl__buf_put_fixed(&b, NAN, 1);
    gpufl__buf_putc(&b, ' ');
    gpufl__buf_put_fixed(&b, INFINITY, 2);
    assert_string_equal(text(&b), "0.0 100.0 1.50 0.125 null null null");
    gpufl__buf_fini(&b);
}

static void strings_escape_and_repair(void **state) {
    (void)state;
    gpufl__buf_t b;
    gpufl__buf_init(&b, 1 << 20);
    const char in[] =
        "a\"b\\c\n\t\r\x01 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xff \xc3 \xed\xa0\x80";
    gpufl__buf_put_str(&b, in, sizeof in - 1);
    assert_string_equal(text(&b), "\"a\\\"b\\\\c\\n\\t\\r\\u0001 \xc3\xa9 \xe2\x82\xac "
                                  "\xf0\x9f\x98\x80 \xef\xbf\xbd \xef\xbf\xbd "
                                  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    /* and jansson agrees it is valid JSON */
    json_error_t err;
    json_t *j = json_loadb(b.data, b.len, JSON_DECODE_ANY, &err);
    assert_non_null(j);
    json_decref(j);
    gpufl__buf_fini(&b);
}

static void records_and_keys(void **state) {
    (void)state;
    gpufl__buf_t b;
    gpufl__buf_init(&b, 1 << 20);
    gpufl__buf_record(&b, "event");
    gpufl__buf_kv_i64(&b, "ts_ns", 5);
    gpufl__buf_kv_str(&b, "code", "x");
    gpufl__buf_key(&b, "o");
    gpufl__buf_putc(&b, '{');
    gpufl__buf_kv_i64(&b, "k", 1);
    gpufl__buf_puts(&b, "}}");
    assert_string_equal(text(&b),
                        "{\"type\":\"event\",\"v\":1,\"ts_ns\":5,\"code\":\"x\",\"o\":{\"k\":1}}");
    gpufl__buf_fini(&b);
}

static void cap_is_enforced(void **state) {
    (void)state;
    gpufl__buf_t b;
    gpufl__buf_init(&b, 16);
    gpufl__buf_puts(&b, "0123456789");
    assert_false(b.overflow);
    gpufl__buf_puts(&b, "0123456789");
    assert_true(b.overflow);
    assert_int_equal(b.len, 10);
    assert_true(b.cap <= 16);
    gpufl__buf_fini(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(integers),
        cmocka_unit_test(fixed_point_and_null),
        cmocka_unit_test(strings_escape_and_repair),
        cmocka_unit_test(records_and_keys),
        cmocka_unit_test(cap_is_enforced),
    };
    return cmocka_run_group_tests_name("jsonw", tests, NULL, NULL);
}
