// SPDX-License-Identifier: Apache-2.0
/*
 * test_scope_threads.c - scopes from many threads at once: every row comes
 * back with its thread, path and parent; full rings drop and count; rings of
 * exited threads are reused; more threads than rings are counted; a ring
 * kept from an earlier session is not written into; an observer sees the
 * scopes of the fast and the slow paths; scopes record on the monotonic
 * clock where the TSC is not used. Also runs under TSan (label "threaded").
 */
#include "test_util.h"

#include "core/clock.h"
#include "core/scope.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SUITE      "scope_threads"
#define THREADS    8
#define ITERATIONS 2000

static void *nested_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERATIONS; i++) {
        gpufl_scope_t outer = gpufl_scope_begin("outer", NULL);
        gpufl_scope_t mid = gpufl_scope_begin("mid", "m");
        gpufl_scope_t inner = gpufl_scope_begin("inner", NULL);
        gpufl_scope_end(inner);
        gpufl_scope_end(mid);
        gpufl_scope_end(outer);
    }
    return NULL;
}

static const char *path_of(const tu_lines_t *L, int64_t id) { return tu_dict(L, id); }

static void many_threads_nested(void **state) {
    (void)state;
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "nested"));
    o.ring_capacity_records = 1 << 16; /* room for a whole thread: nothing may drop */
    o.memory_cap_bytes = (size_t)64 << 20;
    assert_int_equal(gpufl_init(&o), 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, nested_worker, NULL), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    gpufl_stats_t s = {.size = sizeof s};
    gpufl_flush();
    gpufl_get_stats(&s);
    gpufl_shutdown();
    assert_int_equal(s.records_dropped, 0);
    assert_int_equal(s.records_written, (uint64_t)THREADS * ITERATIONS * 6);

    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    size_t n, m;
    int64_t *ids = tu_column(&L, "scope_begin", "id", &n);
    int64_t *tid = tu_column(&L, "scope_begin", "tid", &m);
    int64_t *parent = tu_column(&L, "scope_begin", "parent", &m);
    int64_t *depth = tu_column(&L, "scope_begin", "depth", &m);
    int64_t *path = tu_column(&L, "scope_begin", "path", &m);
    int64_t *ts = tu_column(&L, "scope_begin", "ts_ns", &m);
    int64_t *end_ids = tu_column(&L, "scope_end", "id", &m);
    assert_int_equal(n, (size_t)THREADS * ITERATIONS * 3);
    assert_int_equal(m, n);
    const char *want[] = {"outer", "outer/mid", "outer/mid/inner"};
    int64_t tids[THREADS] = {0};
    int ntids = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(ids[i] > 0 && ids[i] < ((int64_t)1 << 53));
        assert_true(depth[i] >= 1 && depth[i] <= 3);
        assert_string_equal(path_of(&L, path[i]), want[depth[i] - 1]);
        int seen = 0;
        for (int k = 0; k < ntids; k++) seen |= tids[k] == tid[i];
        if (!seen) {
            assert_true(ntids < THREADS);
            tids[ntids++] = tid[i];
        }
        /* rows of one thread come in its order: a parent is the row before */
        if (depth[i] > 1) {
            size_t p = i;
            while (p > 0 && !(tid[p - 1] == tid[i] && depth[p - 1] == depth[i] - 1)) p--;
            assert_true(p > 0);
            assert_int_equal(parent[i], ids[p - 1]);
            assert_true(ts[i] >= ts[p - 1]);
        } else {
            assert_int_equal(parent[i], 0);
        }
    }
    assert_int_equal(ntids, THREADS);
    free(ids), free(tid), free(parent), free(depth), free(path), free(ts), free(end_ids);
    tu_free(&L);
}

static void full_ring_drops_and_counts(void **state) {
    (void)state;
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "overflow"));
    o.ring_capacity_records = 64;
    o.memory_cap_bytes = 1 << 20;
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl_init(&o), 0);
    int recorded = 0;
    for (int i = 0; i < 100000; i++) {
        gpufl_scope_t s = gpufl_scope_begin("flood", NULL);
        recorded += s != 0;
        gpufl_scope_end(s);
    }
    gpufl_stats_t s = {.size = sizeof s};
    gpufl_flush();
    gpufl_get_stats(&s);
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);
    assert_true(s.records_dropped > 0);
    assert_true(recorded < 100000);
    assert_true(cap.warnings >= 1);

    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    size_t begins, ends;
    int64_t *b = tu_column(&L, "scope_begin", "id", &begins);
    int64_t *e = tu_column(&L, "scope_end", "id", &ends);
    assert_int_equal(begins, (size_t)recorded); /* every handle given out has its row */
    assert_true(ends <= begins);
    json_t *drops = tu_last(&L, "drops");
    assert_int_equal(json_integer_value(json_object_get(drops, "records")), s.records_dropped);
    json_t *ev = tu_first(&L, "event");
    assert_string_equal(json_string_value(json_object_get(ev, "code")), "records_dropped");
    /* every begin or end pushed was either written or dropped */
    assert_int_equal(s.records_written + s.records_dropped, 100000 + (uint64_t)recorded);
    free(b), free(e);
    tu_free(&L);
}

static void *one_scope(void *arg) {
    (void)arg;
    for (int i = 0; i < 10; i++) gpufl_scope_end(gpufl_scope_begin("short_lived", NULL));
    return NULL;
}

static void exited_threads_give_their_rings_back(void **state) {
    (void)state;
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "recycle"));
    o.ring_capacity_records = 4096;
    o.memory_cap_bytes = 1 << 20; /* a pool of three rings only */
    assert_int_equal(gpufl_init(&o), 0);
    for (int i = 0; i < 100; i++) {
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, one_scope, NULL), 0);
        pthread_join(t, NULL);
        gpufl_flush(); /* the collector takes the exited thread's ring back */
    }
    gpufl_stats_t s = {.size = sizeof s};
    gpufl_flush();
    gpufl_get_stats(&s);
    gpufl_shutdown();
    assert_int_equal(s.threads_unbuffered, 0);
    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    size_t n;
    int64_t *ends = tu_column(&L, "scope_end", "id", &n);
    assert_int_equal(n, 1000);
    free(ends);
    tu_free(&L);
}

static pthread_barrier_t all_alive;

static void *hold_scope(void *arg) {
    (void)arg;
    gpufl_scope_t s = gpufl_scope_begin("crowd", NULL);
    pthread_barrier_wait(&all_alive);
    gpufl_scope_end(s);
    return NULL;
}

static void more_threads_than_rings_are_counted(void **state) {
    (void)state;
    enum { CROWD = 24 };
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "crowd"));
    o.ring_capacity_records = 4096;
    o.memory_cap_bytes = 1 << 20; /* three rings for 24 threads */
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl_init(&o), 0);
    pthread_t t[CROWD];
    pthread_barrier_init(&all_alive, NULL, CROWD);
    for (int i = 0; i < CROWD; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hold_scope, NULL), 0);
    for (int i = 0; i < CROWD; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&all_alive);
    gpufl_stats_t s = {.size = sizeof s};
    gpufl_flush();
    gpufl_get_stats(&s);
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);
    assert_int_equal(s.threads_unbuffered, CROWD - 3);
    assert_non_null(strstr(cap.last, "more threads"));
    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    size_t n;
    int64_t *b = tu_column(&L, "scope_begin", "id", &n);
    assert_int_equal(n + s.threads_unbuffered, CROWD);
    json_t *drops = tu_last(&L, "drops");
    assert_int_equal(json_integer_value(json_object_get(drops, "threads_unbuffered")),
                     s.threads_unbuffered);
    free(b);
    tu_free(&L);
}

/* Options for a session of a few scopes: rings of 4096 records, 1 MiB in all. */
static gpufl_options_t small_rings(const char *log_path) {
    gpufl_options_t o = tu_options(log_path);
    o.ring_capacity_records = 4096;
    o.memory_cap_bytes = 1 << 20;
    return o;
}

static pthread_barrier_t helper_in, main_done;

static void *scope_around_main(void *arg) {
    int32_t *tid = arg;
    gpufl_scope_t s = gpufl_scope_begin("helper", NULL);
    *tid = (int32_t)syscall(SYS_gettid);
    pthread_barrier_wait(&helper_in);
    pthread_barrier_wait(&main_done);
    gpufl_scope_end(s);
    return NULL;
}

/* A thread keeps the ring of its last session in thread-local storage; in
 * the next session that ring may be another thread's (here the helper's,
 * the first claimed), and must not be written into: this thread claims a
 * ring of its own. Had it written into the helper's, its scope would read
 * as nested in the helper's and a ring would have two writers. */
static void a_ring_of_an_earlier_session_is_not_reused(void **state) {
    (void)state;
    gpufl_options_t o = small_rings(tu_log_dir(SUITE, "earlier_ring"));
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_scope_end(gpufl_scope_begin("first", NULL)); /* this thread takes the first ring */
    gpufl_shutdown();

    assert_int_equal(gpufl_init(&o), 0); /* the same pool again: its first ring is free */
    pthread_barrier_init(&helper_in, NULL, 2);
    pthread_barrier_init(&main_done, NULL, 2);
    pthread_t t;
    int32_t helper_tid = 0;
    assert_int_equal(pthread_create(&t, NULL, scope_around_main, &helper_tid), 0);
    pthread_barrier_wait(&helper_in); /* the helper holds the first ring, a scope open */
    gpufl_scope_end(gpufl_scope_begin("main", NULL));
    pthread_barrier_wait(&main_done);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&helper_in);
    pthread_barrier_destroy(&main_done);
    gpufl_stats_t st = {.size = sizeof st};
    gpufl_flush();
    gpufl_get_stats(&st);
    gpufl_shutdown();
    assert_int_equal(st.unbalanced_ends, 0);

    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    size_t n, m;
    int64_t *path = tu_column(&L, "scope_begin", "path", &n);
    int64_t *tid = tu_column(&L, "scope_begin", "tid", &m);
    int64_t *depth = tu_column(&L, "scope_begin", "depth", &m);
    assert_int_equal(n, 2);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        const char *p = path_of(&L, path[i]);
        assert_true(strcmp(p, "main") == 0 || strcmp(p, "helper") == 0);
        assert_int_equal(depth[i], 1);
        if (strcmp(p, "main") == 0) {
            assert_int_equal(tid[i], (int32_t)syscall(SYS_gettid));
            found++;
        } else {
            assert_int_equal(tid[i], helper_tid);
        }
    }
    assert_int_equal(found, 1);
    free(path), free(tid), free(depth);
    tu_free(&L);
}

/* What an observer was told, in order. */
typedef struct seen {
    int begins, ends;
    uint64_t begin_id[8], end_id[8];
    uint32_t begin_depth[8], end_depth[8];
    size_t name_len[8];
} seen_t;

static void seen_begin(void *user, uint64_t id, const char *name, size_t name_len, uint32_t depth) {
    seen_t *s = user;
    (void)name;
    if (s->begins == 8) return;
    s->begin_id[s->begins] = id, s->begin_depth[s->begins] = depth;
    s->name_len[s->begins++] = name_len;
}

static void seen_end(void *user, uint64_t id, uint32_t depth) {
    seen_t *s = user;
    if (s->ends == 8) return;
    s->end_id[s->ends] = id, s->end_depth[s->ends++] = depth;
}

/* The thread's first scope (it registers the thread), a name too long for
 * the record and a scope closed with its parent take the slow paths; the
 * rest the fast ones. The observer hears of each with its id and depth. */
static void observer_sees_fast_and_slow_paths(void **state) {
    (void)state;
    gpufl_options_t o = small_rings(tu_log_dir(SUITE, "observer"));
    assert_int_equal(gpufl_init(&o), 0);
    seen_t seen = {0};
    gpufl__scope_observer_t obs = {seen_begin, seen_end, &seen};
    assert_int_equal(gpufl__scope_observe(&obs), 0);
    char long_name[100];
    memset(long_name, 'x', sizeof long_name);
    gpufl_scope_t a = gpufl_scope_begin("outer", NULL);
    gpufl_scope_t b = gpufl_scope_begin_n(long_name, sizeof long_name, NULL, 0, 0, 0);
    gpufl_scope_t c = gpufl_scope_begin("inner", "t");
    gpufl_scope_end(c); /* innermost: fast */
    gpufl_scope_end(a); /* closes b with it: slow */
    gpufl_scope_t d = gpufl_scope_begin("again", NULL);
    gpufl_scope_end(d);
    assert_int_equal(gpufl__scope_observe(NULL), 0);
    gpufl_shutdown();

    assert_true(a && b && c && d);
    assert_int_equal(seen.begins, 4);
    const uint64_t begin_id[] = {a, b, c, d};
    const uint32_t begin_depth[] = {0, 1, 2, 0};
    const size_t name_len[] = {5, sizeof long_name, 5, 5};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(seen.begin_id[i], begin_id[i]);
        assert_int_equal(seen.begin_depth[i], begin_depth[i]);
        assert_int_equal(seen.name_len[i], name_len[i]);
    }
    assert_int_equal(seen.ends, 4);
    const uint64_t end_id[] = {c, b, a, d};
    const uint32_t end_depth[] = {2, 1, 0, 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(seen.end_id[i], end_id[i]);
        assert_int_equal(seen.end_depth[i], end_depth[i]);
    }
}

/* Where ticks are not the TSC (other CPUs, a clocksource the kernel does
 * not trust), the hot path reads CLOCK_MONOTONIC in its slow paths: the
 * rows still carry the times the scopes opened and closed. Not under TSan:
 * the clock choice is set once before any thread reads it, here it is
 * changed while the collector runs. */
static void scopes_record_on_the_monotonic_clock(void **state) {
    (void)state;
#if defined(__SANITIZE_THREAD__)
    skip();
#endif
    gpufl_options_t o = small_rings(tu_log_dir(SUITE, "monotonic"));
    assert_int_equal(gpufl_init(&o), 0);
    int was_tsc = gpufl__clock_tsc;
    gpufl__clock_tsc = 0;
    int64_t t0 = gpufl__mono_ns();
    gpufl_scope_t outer = gpufl_scope_begin("outer", NULL);
    gpufl_scope_t inner = gpufl_scope_begin("inner", NULL);
    gpufl_scope_end(inner);
    gpufl_scope_end(outer);
    int64_t t1 = gpufl__mono_ns();
    gpufl_flush();
    gpufl_shutdown();
    gpufl__clock_tsc = was_tsc;
    assert_true(outer && inner);

    tu_lines_t L = tu_read(tu_session_dir(), "scope.log");
    size_t nb, ne, n;
    int64_t *bid = tu_column(&L, "scope_begin", "id", &nb);
    int64_t *bts = tu_column(&L, "scope_begin", "ts_ns", &n);
    int64_t *eid = tu_column(&L, "scope_end", "id", &ne);
    int64_t *ets = tu_column(&L, "scope_end", "ts_ns", &n);
    assert_int_equal(nb, 2);
    assert_int_equal(ne, 2);
    assert_int_equal(bid[0], (int64_t)outer);
    assert_int_equal(bid[1], (int64_t)inner);
    assert_int_equal(eid[0], (int64_t)inner);
    assert_int_equal(eid[1], (int64_t)outer);
    /* opened in order, closed in order, within the time the calls took
     * (ts_ns counts from the session start) */
    assert_true(0 <= bts[0] && bts[0] <= bts[1] && bts[1] <= ets[0] && ets[0] <= ets[1]);
    assert_true(ets[1] - bts[0] <= t1 - t0);
    free(bid), free(bts), free(eid), free(ets);
    tu_free(&L);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(many_threads_nested),
        cmocka_unit_test(full_ring_drops_and_counts),
        cmocka_unit_test(exited_threads_give_their_rings_back),
        cmocka_unit_test(more_threads_than_rings_are_counted),
        cmocka_unit_test(a_ring_of_an_earlier_session_is_not_reused),
        cmocka_unit_test(observer_sees_fast_and_slow_paths),
        cmocka_unit_test(scopes_record_on_the_monotonic_clock),
    };
    return cmocka_run_group_tests_name("scope_threads", tests, NULL, NULL);
}
