// SPDX-License-Identifier: Apache-2.0
/*
 * test_worker.c - the per-call budget of core/worker.c: a caller never waits
 * past its deadline for a call that hangs, the other workers answer meanwhile,
 * and a worker stopped mid-call frees itself when the call returns.
 */
#include "core/clock.h"
#include "core/worker.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

typedef struct {
    int64_t sleep_ns; /* how long each call takes */
    int calls;        /* written by the worker, read while it is idle */
    int *freed;       /* set (atomically) when the worker frees the job */
} job_t;

static void call(void *arg) {
    job_t *j = arg;
    struct timespec t = {(time_t)(j->sleep_ns / 1000000000), (long)(j->sleep_ns % 1000000000)};
    nanosleep(&t, NULL);
    j->calls++;
}

static void free_job(void *arg) {
    job_t *j = arg;
    __atomic_store_n(j->freed, 1, __ATOMIC_RELEASE);
    free(j);
}

static job_t *job(int64_t sleep_ns, int *freed) {
    job_t *j = calloc(1, sizeof *j);
    assert_non_null(j);
    *j = (job_t){.sleep_ns = sleep_ns, .freed = freed};
    return j;
}

static void test_fast_call_answers(void **state) {
    (void)state;
    int freed = 0;
    job_t *j = job(0, &freed);
    gpufl__worker_t *w;
    assert_int_equal(gpufl__worker_start(&w, call, j, free_job), 0);
    for (int i = 1; i <= 3; i++) {
        assert_true(gpufl__worker_idle(w));
        gpufl__worker_post(w);
        assert_int_equal(gpufl__worker_wait(w, gpufl__mono_ns() + 5000000000LL), 1);
        assert_int_equal(j->calls, i); /* the result is the caller's once idle */
    }
    assert_int_equal(gpufl__worker_stop(w), 0);
    assert_int_equal(freed, 1);
}

static void test_hanging_call_misses_budget_others_answer(void **state) {
    (void)state;
    int freed_slow = 0, freed_fast = 0;
    job_t *fast = job(0, &freed_fast);
    gpufl__worker_t *slow_w, *fast_w;
    assert_int_equal(gpufl__worker_start(&slow_w, call, job(2000000000LL, &freed_slow), free_job),
                     0);
    assert_int_equal(gpufl__worker_start(&fast_w, call, fast, free_job), 0);
    gpufl__worker_post(slow_w);
    gpufl__worker_post(fast_w);
    int64_t t0 = gpufl__mono_ns(), budget = 100000000LL;
    assert_int_equal(gpufl__worker_wait(slow_w, t0 + budget), 0);
    int64_t waited = gpufl__mono_ns() - t0;
    assert_true(waited >= budget - 1000000 && waited < 1500000000LL); /* the budget, not 2 s */
    assert_int_equal(gpufl__worker_wait(fast_w, t0 + budget), 1);
    assert_int_equal(fast->calls, 1);
    assert_false(gpufl__worker_idle(slow_w));
    /* Stopped mid-call: left to finish, then frees its job. */
    assert_int_equal(gpufl__worker_stop(slow_w), 1);
    assert_int_equal(__atomic_load_n(&freed_slow, __ATOMIC_ACQUIRE), 0);
    int64_t until = gpufl__mono_ns() + 10000000000LL;
    while (!__atomic_load_n(&freed_slow, __ATOMIC_ACQUIRE) && gpufl__mono_ns() < until) {
        struct timespec t = {0, 10000000};
        nanosleep(&t, NULL);
    }
    assert_int_equal(__atomic_load_n(&freed_slow, __ATOMIC_ACQUIRE), 1);
    assert_int_equal(gpufl__worker_stop(fast_w), 0);
    assert_int_equal(freed_fast, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_call_answers),
        cmocka_unit_test(test_hanging_call_misses_budget_others_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
