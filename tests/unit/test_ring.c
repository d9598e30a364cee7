// SPDX-License-Identifier: Apache-2.0
/*
 * test_ring.c - the per-thread ring: reserve/commit across the wrap, drops
 * counted when full, lock-free claiming, reset, and one producer against one
 * consumer thread (run under TSan too).
 */
#include "test_util.h"

#include "core/ring.h"

#include <pthread.h>

static gpufl__ring_pool_t *pool_of(uint64_t capacity, uint64_t cap_bytes) {
    gpufl__ring_pool_t *p = NULL;
    assert_int_equal(gpufl__ring_pool_get(&p, capacity, cap_bytes), 0);
    gpufl__ring_pool_reset(p);
    return p;
}

static void sizes_round_and_cap(void **state) {
    (void)state;
    gpufl__ring_pool_t *p = pool_of(100, 1 << 20); /* 100 -> 128 records of 64 B */
    assert_int_equal(p->capacity, 128);
    assert_int_equal(p->count, (1 << 20) / (128 * 64 + sizeof(gpufl__ring_t)));
    gpufl__ring_pool_t *same = pool_of(128, 1 << 20);
    assert_ptr_equal(same, p); /* same settings: the same pool */
    gpufl__ring_pool_t *q = NULL;
    assert_int_equal(gpufl__ring_pool_get(&q, 1 << 20, 1 << 20), GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "smaller than one ring"));
}

static void reserve_commit_wrap_and_drop(void **state) {
    (void)state;
    gpufl__ring_pool_t *p = pool_of(64, 1 << 20);
    gpufl__ring_t *r = gpufl__ring_claim(p, 42, 7);
    assert_non_null(r);
    assert_int_equal(r->tid, 42);
    for (int lap = 0; lap < 3; lap++) {
        for (int i = 0; i < 64; i++) {
            uint64_t at = gpufl__ring_reserve(r, 1);
            assert_int_not_equal(at, UINT64_MAX);
            gpufl__ring_at(r, at)->scope_id = (uint64_t)(lap * 64 + i);
            gpufl__ring_commit(r, at + 1);
        }
        assert_int_equal(gpufl__ring_reserve(r, 1), UINT64_MAX); /* full */
        assert_int_equal(gpufl__ring_reserve(r, 3), UINT64_MAX);
        /* consume everything */
        uint64_t head = atomic_load(&r->head), tail = atomic_load(&r->tail);
        assert_int_equal(head - tail, 64);
        for (uint64_t k = tail; k < head; k++)
            assert_int_equal(gpufl__ring_at(r, k)->scope_id, lap * 64 + (k - tail));
        atomic_store(&r->tail, head);
    }
    assert_int_equal(atomic_load(&r->dropped), 3 * 4);
    /* a reservation of several records never splits */
    uint64_t at = gpufl__ring_reserve(r, 5);
    assert_int_not_equal(at, UINT64_MAX);
    gpufl__ring_commit(r, at + 5);
    assert_int_equal(atomic_load(&r->head) - atomic_load(&r->tail), 5);
}

static void claim_until_exhausted_then_reset(void **state) {
    (void)state;
    gpufl__ring_pool_t *p = pool_of(4096, 1 << 20);
    uint32_t n = 0;
    while (gpufl__ring_claim(p, 1, 1)) n++;
    assert_int_equal(n, p->count);
    gpufl__ring_pool_reset(p);
    assert_non_null(gpufl__ring_claim(p, 1, 2));
}

#define MESSAGES 200000

static void *producer(void *arg) {
    gpufl__ring_t *r = arg;
    for (uint64_t i = 0; i < MESSAGES;) {
        uint64_t at = gpufl__ring_reserve(r, 1);
        if (at == UINT64_MAX) continue; /* full: try again (a test, not the hot path) */
        gpufl__ring_at(r, at)->scope_id = i++;
        gpufl__ring_commit(r, at + 1);
    }
    return NULL;
}

static void one_producer_one_consumer(void **state) {
    (void)state;
    gpufl__ring_pool_t *p = pool_of(256, 1 << 20);
    gpufl__ring_t *r = gpufl__ring_claim(p, 1, 3);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, producer, r), 0);
    uint64_t expect = 0;
    while (expect < MESSAGES) {
        uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
        for (; tail < head; tail++) assert_int_equal(gpufl__ring_at(r, tail)->scope_id, expect++);
        atomic_store_explicit(&r->tail, tail, memory_order_release);
    }
    pthread_join(t, NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes_round_and_cap),
        cmocka_unit_test(reserve_commit_wrap_and_drop),
        cmocka_unit_test(claim_until_exhausted_then_reset),
        cmocka_unit_test(one_producer_one_consumer),
    };
    return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
