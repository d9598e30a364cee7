// SPDX-License-Identifier: Apache-2.0
/*
 * test_intern.c - the string dictionary: dense ids, deduplication across
 * table growth, embedded bytes, and the caps.
 */
#include "test_util.h"

#include "util/intern.h"

static void dense_ids_and_dedup(void **state) {
    (void)state;
    gpufl__intern_t *t = gpufl__intern_create(1 << 20, 1 << 26);
    char s[32];
    uint32_t first = gpufl__intern(t, "a", 1);
    for (int i = 0; i < 10000; i++) { /* forces several table growths */
        int n = snprintf(s, sizeof s, "name_%d", i);
        assert_int_equal(gpufl__intern(t, s, (size_t)n), first + 1 + (uint32_t)i);
    }
    for (int i = 0; i < 10000; i += 97) {
        int n = snprintf(s, sizeof s, "name_%d", i);
        assert_int_equal(gpufl__intern(t, s, (size_t)n), first + 1 + (uint32_t)i);
    }
    assert_int_equal(gpufl__intern(t, "a", 1), first);
    /* length counts, not NUL: "ab" and "a" differ, "a\0b" is its own */
    assert_int_not_equal(gpufl__intern(t, "ab", 2), first);
    uint32_t nul = gpufl__intern(t, "a\0b", 3);
    size_t len;
    assert_memory_equal(gpufl__intern_str(t, nul, &len), "a\0b", 3);
    assert_int_equal(len, 3);
    assert_null(gpufl__intern_str(t, 0, NULL));
    assert_null(gpufl__intern_str(t, 999999, NULL));
    assert_int_equal(gpufl__intern_overflows(t), 0);
    gpufl__intern_destroy(t);
}

static void caps_return_the_full_marker(void **state) {
    (void)state;
    gpufl__intern_t *t = gpufl__intern_create(3, 1 << 20);
    uint32_t a = gpufl__intern(t, "a", 1);
    uint32_t b = gpufl__intern(t, "b", 1);
    uint32_t c = gpufl__intern(t, "c", 1); /* the 4th string: over the cap of 3 */
    assert_int_not_equal(a, b);
    assert_string_equal(gpufl__intern_str(t, c, NULL), "<dictionary full>");
    assert_int_equal(gpufl__intern_overflows(t), 1);
    assert_int_equal(gpufl__intern(t, "a", 1), a); /* known strings still resolve */
    gpufl__intern_destroy(t);
    gpufl__intern_destroy(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dense_ids_and_dedup),
        cmocka_unit_test(caps_return_the_full_marker),
    };
    return cmocka_run_group_tests_name("intern", tests, NULL, NULL);
}
