// SPDX-License-Identifier: Apache-2.0
/*
 * test_sink.c - the sinks rows reach (core/sink.h): the fan-out and a
 * failing sink, the ring's bound, eviction counts and dump (read back by
 * the analysis), the gauges read from another thread while rows are
 * written, and one session's rows reaching all three sinks.
 */
#include "test_util.h"

#include "core/session.h"
#include "core/sink.h"

#include <gpufl/gpufl_analysis.h>

#include <errno.h>
#include <pthread.h>
#include <time.h>

#define SUITE "sink"

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Counts the warnings, and those that name the failing sink. */
typedef struct warnings {
    int all, sink;
    char other[512];
} warnings_t;
static void count_warnings(gpufl_log_level_t level, const char *message, void *user) {
    warnings_t *w = user;
    if (level < GPUFL_LOG_WARN) return;
    w->all++;
    if (strstr(message, "sink failing failed"))
        w->sink++;
    else
        snprintf(w->other, sizeof w->other, "%s", message);
}

/* ---- a sink that fails every call, and counts them ---- */

static atomic_int failing_calls;
static int fail_record(void *self, enum gpufl__file_id ch, const gpufl__line_t *l,
                       const gpufl__intern_t *d) {
    (void)self, (void)ch, (void)l, (void)d;
    atomic_fetch_add(&failing_calls, 1);
    return GPUFL_EIO;
}
static int fail_batch(void *self, enum gpufl__file_id ch, const gpufl__batch_t *b,
                      const gpufl__intern_t *d) {
    (void)self, (void)ch, (void)b, (void)d;
    atomic_fetch_add(&failing_calls, 1);
    return GPUFL_EIO;
}
static const gpufl__sink_ops_t failing_ops = {"failing", fail_record, fail_batch, NULL, NULL};

/* Rows of scope_end: ts_ns = i, tid = 1, id = i, implicit = 0. */
static void fill_scope_ends(gpufl__batch_t *b, int64_t from, int n) {
    for (int i = 0; i < n; i++) {
        gpufl__cell_t *r = gpufl__batch_row(b);
        r[0].i = from + i;
        r[1].i = 1;
        r[2].i = from + i;
        r[3].i = 0;
    }
}

static void fanout_counts_a_failing_sink(void **state) {
    (void)state;
    gpufl__fanout_t fan;
    gpufl__ring_sink_t *ring;
    gpufl__batch_t b;
    gpufl__intern_t *dict = gpufl__intern_create(100, 1 << 20);
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl__ring_sink_create(&ring, 1 << 20, 0), 0);
    gpufl__fanout_init(&fan, dict);
    assert_int_equal(gpufl__fanout_attach(&fan, &failing_ops, NULL), 0);
    assert_int_equal(gpufl__fanout_attach(&fan, &gpufl__ring_sink_ops, ring), 0);
    assert_int_equal(gpufl__fanout_attach(&fan, &(gpufl__sink_ops_t){.name = "none"}, NULL),
                     GPUFL_EINVAL);
    assert_int_equal(gpufl__batch_init_table(&b, &gpufl__wire_scope_end), 0);
    for (int k = 0; k < 5; k++) {
        fill_scope_ends(&b, k * 10, 10);
        gpufl__fanout_batch(&fan, GPUFL_FILE_SCOPE, &b);
        assert_int_equal(b.rows, 0); /* handed over, emptied */
    }
    gpufl__line_t l;
    gpufl__wire_event(&l, 7, "warn", "x", "y");
    gpufl__fanout_record(&fan, GPUFL_FILE_SCOPE, &l);
    gpufl__line_fini(&l);
    gpufl__fanout_close(&fan);
    assert_int_equal(gpufl__fanout_attach(&fan, &failing_ops, NULL), GPUFL_EINVAL);
    gpufl_set_log_hook(NULL, NULL);

    assert_int_equal(gpufl__fanout_failures(&fan), 6);
    assert_int_equal(cap.warnings, 1); /* said once */
    assert_non_null(strstr(cap.last, "sink failing failed"));
    gpufl__ring_sink_stats_t st; /* the sink after it got everything */
    gpufl__ring_sink_stats(&st, ring);
    assert_int_equal(st.kept_rows, 50);
    assert_int_equal(st.kept_lines, 6);
    gpufl__fanout_fini(&fan);
    gpufl__ring_sink_destroy(ring);
    gpufl__batch_fini(&b);
    gpufl__intern_destroy(dict);
}

/* Collects the types of the records a sink gets. */
typedef struct recorded {
    char types[64][32];
    int n;
} recorded_t;
static int record_type(void *self, enum gpufl__file_id ch, const gpufl__line_t *l,
                       const gpufl__intern_t *d) {
    recorded_t *r = self;
    (void)ch, (void)d;
    if (r->n < 64) snprintf(r->types[r->n++], sizeof r->types[0], "%s", l->type);
    return 0;
}
static int ignore_batch(void *self, enum gpufl__file_id ch, const gpufl__batch_t *b,
                        const gpufl__intern_t *d) {
    (void)self, (void)ch, (void)b, (void)d;
    return 0;
}
static const gpufl__sink_ops_t recording_ops = {"recording", record_type, ignore_batch, NULL, NULL};

static void fan_op(gpufl__fanout_t *f, int64_t index, const char *name) {
    gpufl__line_t l;
    gpufl__wire_op(&l, index, name);
    gpufl__fanout_record(f, GPUFL_FILE_SCOPE, &l);
    gpufl__line_fini(&l);
}

/* A sink attached late first gets the records that describe the session,
 * once each, in order; not the others; and the kept bytes are capped. */
static void fanout_replays_describing_records(void **state) {
    (void)state;
    gpufl__fanout_t fan;
    recorded_t early = {0}, late = {0}, last = {0};
    gpufl__intern_t *dict = gpufl__intern_create(100, 1 << 20);
    gpufl__fanout_init(&fan, dict);
    assert_int_equal(gpufl__fanout_attach(&fan, &recording_ops, &early), 0);
    fan_op(&fan, 1, "first");
    gpufl__line_t l;
    gpufl__wire_event(&l, 7, "warn", "x", "y"); /* not describing: not kept */
    gpufl__fanout_record(&fan, GPUFL_FILE_SCOPE, &l);
    gpufl__line_fini(&l);
    gpufl__wire_stack(&l, 3, (const uint32_t[]){1, 2}, 2);
    gpufl__fanout_record(&fan, GPUFL_FILE_SCOPE, &l);
    gpufl__line_fini(&l);
    assert_int_equal(gpufl__fanout_attach(&fan, &recording_ops, &late), 0);
    assert_int_equal(late.n, 2);
    assert_string_equal(late.types[0], "op");
    assert_string_equal(late.types[1], "stack");
    fan_op(&fan, 2, "second"); /* after the attach: from the fan-out, once */
    assert_int_equal(late.n, 3);
    assert_int_equal(early.n, 4);

    /* Past the cap: left out, and said at the next attach. */
    char name[1024];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    size_t rounds = GPUFL__KEPT_MAX_BYTES / sizeof name + 16;
    for (size_t i = 0; i < rounds; i++) fan_op(&fan, (int64_t)i + 3, name);
    assert_true(fan.kept_left_out > 0);
    assert_true(fan.kept_bytes <= GPUFL__KEPT_MAX_BYTES);
    tu_log_capture_t cap = {0};
    gpufl_set_log_hook(tu_capture_hook, &cap);
    assert_int_equal(gpufl__fanout_attach(&fan, &recording_ops, &last), 0);
    gpufl_set_log_hook(NULL, NULL);
    assert_int_equal(cap.warnings, 1);
    assert_non_null(strstr(cap.last, "describe the session"));
    gpufl__fanout_close(&fan);
    gpufl__fanout_fini(&fan);
    gpufl__intern_destroy(dict);
}

/* ---- the ring ---- */

typedef struct seen {
    int64_t first_ts, last_ts;
    size_t rows, lines;
} seen_t;

/* The first and last ts_ns of each kept scope_end line (rows are ts = i). */
static int visit(void *ctx, const char *type, size_t rows, const char *line, size_t len) {
    seen_t *s = ctx;
    json_error_t err;
    json_t *j = json_loadb(line, len, 0, &err);
    assert_non_null(j);
    assert_string_equal(type, "scope_end");
    json_t *ts = json_object_get(j, "ts_ns");
    assert_int_equal(json_array_size(ts), rows);
    if (s->lines == 0) s->first_ts = json_integer_value(json_array_get(ts, 0));
    s->last_ts = json_integer_value(json_array_get(ts, rows - 1));
    s->rows += rows;
    s->lines++;
    json_decref(j);
    return 0;
}

static void ring_keeps_newest_within_cap(void **state) {
    (void)state;
    gpufl__ring_sink_t *ring;
    gpufl__batch_t b;
    gpufl__intern_t *dict = gpufl__intern_create(100, 1 << 20);
    const size_t cap = 16384;
    assert_int_equal(gpufl__ring_sink_create(&ring, 100, 0), GPUFL_EINVAL);
    assert_int_equal(gpufl__ring_sink_create(&ring, cap, 16), 0);
    assert_int_equal(gpufl__batch_init_table(&b, &gpufl__wire_scope_end), 0);
    const int total = 20000;
    for (int i = 0; i < total; i += 100) {
        fill_scope_ends(&b, i, 100);
        assert_int_equal(gpufl__ring_sink_ops.batch(ring, GPUFL_FILE_SCOPE, &b, dict), 0);
        b.rows = 0;
        gpufl__ring_sink_stats_t st;
        gpufl__ring_sink_stats(&st, ring);
        assert_true(st.kept_bytes <= cap);
    }
    gpufl__ring_sink_stats_t st;
    gpufl__ring_sink_stats(&st, ring);
    assert_true(st.evicted_rows > 0 && st.evicted_bytes > 0 && st.evicted_lines > 0);
    assert_int_equal(st.kept_rows + st.evicted_rows, total);
    assert_true(st.kept_bytes + 2048 > cap); /* full, not emptied by eviction */
    seen_t s = {0};
    gpufl__ring_sink_each(ring, GPUFL_FILE_SCOPE, visit, &s);
    assert_int_equal(s.rows, st.kept_rows);
    assert_int_equal(s.lines, st.kept_lines);
    assert_int_equal(s.last_ts, total - 1);                 /* the newest row is kept */
    assert_int_equal(s.first_ts, (int64_t)st.evicted_rows); /* the oldest ones went */
    seen_t none = {0};
    gpufl__ring_sink_each(ring, GPUFL_FILE_DEVICE, visit, &none);
    assert_int_equal(none.lines, 0);
    gpufl__ring_sink_destroy(ring);
    gpufl__batch_fini(&b);
    gpufl__intern_destroy(dict);
}

/* A 16 KiB ring of 16-row lines, a batch of scope_end rows, a dict. */
typedef struct small_ring {
    gpufl__ring_sink_t *ring;
    gpufl__batch_t b;
    gpufl__intern_t *dict;
} small_ring_t;

static void small_ring_init(small_ring_t *t) {
    t->dict = gpufl__intern_create(100, 1 << 20);
    assert_int_equal(gpufl__ring_sink_create(&t->ring, 16384, 16), 0);
    assert_int_equal(gpufl__batch_init_table(&t->b, &gpufl__wire_scope_end), 0);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Rows [from, to) into the ring, 100 a batch; the longest a batch took (ns). */
static int64_t small_ring_fill(small_ring_t *t, int from, int to) {
    int64_t worst = 0;
    for (int i = from; i < to; i += 100) {
        fill_scope_ends(&t->b, i, 100);
        int64_t t0 = now_ns();
        assert_int_equal(gpufl__ring_sink_ops.batch(t->ring, GPUFL_FILE_SCOPE, &t->b, t->dict), 0);
        int64_t took = now_ns() - t0;
        if (took > worst) worst = took;
        t->b.rows = 0;
    }
    return worst;
}

static void small_ring_fini(small_ring_t *t) {
    gpufl__ring_sink_destroy(t->ring);
    gpufl__batch_fini(&t->b);
    gpufl__intern_destroy(t->dict);
}

/* The records that describe the session stay in the ring however many
 * rows pass through it. */
static void ring_pins_describing_records(void **state) {
    (void)state;
    small_ring_t t;
    small_ring_init(&t);
    gpufl__line_t l;
    gpufl__wire_op(&l, 1, "memcpy");
    assert_int_equal(gpufl__ring_sink_ops.record(t.ring, GPUFL_FILE_SCOPE, &l, t.dict), 0);
    gpufl__line_fini(&l);
    small_ring_fill(&t, 0, 20000);
    gpufl__ring_sink_stats_t st;
    gpufl__ring_sink_stats(&st, t.ring);
    assert_true(st.evicted_rows > 0);
    assert_int_equal(st.pinned_lines, 1);
    assert_true(st.kept_bytes + st.pinned_bytes <= 16384);
    gpufl__buf_t out;
    gpufl__buf_init(&out, 1 << 20);
    gpufl__session_ident_t ident = {.session_id = "s", .app_name = "a", .hostname = "h"};
    assert_int_equal(gpufl__ring_sink_dump(t.ring, &ident, GPUFL_FILE_SCOPE, &out), 0);
    gpufl__buf_putc(&out, '\0');
    const char *op = strstr(out.data, "\"type\":\"op\"");
    assert_non_null(op);
    assert_true(op < strstr(out.data, "\"type\":\"scope_end\"")); /* before the rows */
    gpufl__buf_fini(&out);
    small_ring_fini(&t);
}

/* visit, past the pinned records (rows 0). */
static int visit_rows(void *ctx, const char *type, size_t rows, const char *line, size_t len) {
    return rows ? visit(ctx, type, rows, line, len) : 0;
}

/* The flight recorder's window: a clock the test moves. */
static int64_t fake_now;
static int64_t fake_clock(void) { return fake_now; }

/* Lines older than the window leave, oldest first, counted as aged (not
 * as evicted by the cap); newer ones and pinned records stay. */
static void ring_window_ages_out_old_lines(void **state) {
    (void)state;
    small_ring_t t;
    small_ring_init(&t);
    fake_now = 1000000000;
    gpufl__ring_sink_set_window(t.ring, 2000000000, fake_clock); /* 2 s */
    gpufl__line_t l;
    gpufl__wire_op(&l, 1, "memcpy");
    assert_int_equal(gpufl__ring_sink_ops.record(t.ring, GPUFL_FILE_SCOPE, &l, t.dict), 0);
    gpufl__line_fini(&l);
    for (int sec = 0; sec < 5; sec++) { /* 100 rows each second, rows ts = sec*100.. */
        small_ring_fill(&t, sec * 100, sec * 100 + 100);
        fake_now += 1000000000;
    }
    fake_now -= 1000000000; /* now: the last batch's second */
    gpufl__ring_sink_stats_t st;
    gpufl__ring_sink_stats(&st, t.ring);
    assert_int_equal(st.evicted_rows, 0);
    assert_int_equal(st.aged_rows, 200); /* seconds 0 and 1 are more than 2 s old */
    assert_int_equal(st.kept_rows, 300);
    assert_int_equal(st.pinned_lines, 1);
    seen_t s = {0};
    gpufl__ring_sink_each(t.ring, GPUFL_FILE_SCOPE, visit_rows, &s);
    assert_int_equal(s.first_ts, 200);
    assert_int_equal(s.last_ts, 499);
    fake_now += 10000000000LL; /* a read long after: only the pinned record is left */
    gpufl__ring_sink_stats(&st, t.ring);
    assert_int_equal(st.kept_rows, 0);
    assert_int_equal(st.aged_rows, 500);
    assert_int_equal(st.pinned_lines, 1);
    gpufl__ring_sink_set_window(t.ring, 0, NULL);
    small_ring_fini(&t);
}

/* A visitor as slow as a dump to a slow destination. */
typedef struct slow_visit {
    gpufl__ring_sink_t *ring;
    atomic_int started;
    int lines;
} slow_visit_t;
static int slow_visitor(void *ctx, const char *type, size_t rows, const char *line, size_t len) {
    slow_visit_t *v = ctx;
    (void)type, (void)rows, (void)line, (void)len;
    atomic_store(&v->started, 1);
    sleep_ms(20);
    v->lines++;
    return 0;
}
static void *slow_reader(void *arg) {
    slow_visit_t *v = arg;
    gpufl__ring_sink_each(v->ring, GPUFL_FILE_SCOPE, slow_visitor, v);
    return NULL;
}

/* While a slow reader walks the ring, rows still go in (and evict lines
 * the reader holds) without waiting for it. */
static void ring_reader_never_blocks_rows(void **state) {
    (void)state;
    small_ring_t t;
    small_ring_init(&t);
    small_ring_fill(&t, 0, 400); /* 28 lines: a reader sleeping 20 ms on each */
    gpufl__ring_sink_stats_t before;
    gpufl__ring_sink_stats(&before, t.ring);
    assert_int_equal(before.kept_lines, 28);
    slow_visit_t v = {.ring = t.ring};
    pthread_t reader;
    assert_int_equal(pthread_create(&reader, NULL, slow_reader, &v), 0);
    while (!atomic_load(&v.started)) sleep_ms(1);
    int64_t worst = small_ring_fill(&t, 400, 20000); /* the whole ring replaced meanwhile */
    assert_int_equal(pthread_join(reader, NULL), 0);
    assert_int_equal(v.lines, 28);        /* the reader saw its snapshot whole */
    assert_true(worst < 200 * 1000000LL); /* never the reader's 560 ms */
    gpufl__ring_sink_stats_t st;
    gpufl__ring_sink_stats(&st, t.ring);
    assert_true(st.evicted_rows >= 400);
    small_ring_fini(&t);
}

/* A session with the ring and the gauges attached: scopes, host samples. */
static const char *run_session(const char *name, gpufl__ring_sink_t *ring,
                               gpufl__gauge_sink_t *gauges, gpufl__session_ident_t *ident,
                               int scopes) {
    static char dir[4096];
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, name));
    o.continuous_system_sampling = 1;
    o.system_sample_rate_ms = 10;
    assert_int_equal(gpufl__session_attach_sink(&gpufl__ring_sink_ops, ring, ident),
                     GPUFL_ENOTINIT);
    assert_int_equal(gpufl_init(&o), 0);
    if (ring) assert_int_equal(gpufl__session_attach_sink(&gpufl__ring_sink_ops, ring, ident), 0);
    if (gauges)
        assert_int_equal(gpufl__session_attach_sink(&gpufl__gauge_sink_ops, gauges, NULL), 0);
    for (int i = 0; i < scopes; i++) {
        char n[32];
        snprintf(n, sizeof n, "step_%d", i % 7);
        uint64_t outer = gpufl_scope_begin(n, NULL);
        gpufl_scope_end(gpufl_scope_begin("inner", NULL));
        gpufl_scope_end(outer);
        if (i % 50 == 0) sleep_ms(5);
    }
    sleep_ms(60); /* a few host samples */
    snprintf(dir, sizeof dir, "%s", tu_session_dir());
    return dir;
}

static void ring_dump_reads_back(void **state) {
    (void)state;
    gpufl__ring_sink_t *ring;
    gpufl__session_ident_t ident;
    assert_int_equal(gpufl__ring_sink_create(&ring, 256 << 10, 64), 0);
    run_session("ring", ring, NULL, &ident, 2000);
    gpufl_shutdown();
    gpufl__ring_sink_stats_t st;
    gpufl__ring_sink_stats(&st, ring);
    assert_true(st.evicted_rows > 0); /* 4000 scopes do not fit in 256 KiB */
    const char *dump = tu_scratch_dir(SUITE, "ring_dump");
    assert_int_equal(gpufl__ring_sink_dump_dir(ring, &ident, dump, NULL, NULL), 0);

    gpufl_analysis_t *a;
    size_t rows = 0;
    gpufl_column_t name = {.size = sizeof name};
    assert_int_equal(gpufl_analysis_open(&a, dump), 0);
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_SCOPES, &rows, NULL), 0);
    assert_true(rows > 100);
    assert_true(rows < 4000);
    assert_int_equal(gpufl_analysis_column_find(a, GPUFL_TABLE_SCOPES, "name", &name), 0);
    const int64_t *ids = name.data;
    size_t inner = 0;
    for (size_t r = 0; r < rows; r++) { /* every name the kept rows use is defined */
        const char *s = gpufl_analysis_string(a, ids[r]);
        assert_non_null(s);
        assert_true(strcmp(s, "inner") == 0 || strncmp(s, "step_", 5) == 0);
        inner += strcmp(s, "inner") == 0;
    }
    assert_true(inner > 0 && inner < rows);
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_HOST_METRICS, &rows, NULL), 0);
    assert_true(rows > 0);
    gpufl_analysis_close(a);
    tu_lines_t L = tu_read(dump, "system.log");
    assert_string_equal(tu_type(L.v[0]), "header");
    assert_int_equal(tu_count(&L, "header"), 1);
    tu_free(&L);
    gpufl__ring_sink_destroy(ring);
}

/* ---- the gauges ---- */

typedef struct gauge_run {
    gpufl__gauge_sink_t *g;
    atomic_int done;
    atomic_llong reads;
    int64_t torn;
} gauge_run_t;

/* Reads while the writer writes: every row read is one row, whole. */
static void *gauge_reader(void *arg) {
    gauge_run_t *run = arg;
    int64_t last = -1;
    while (!atomic_load(&run->done)) {
        gpufl__cell_t cells[GPUFL_BATCH_MAX_COLS];
        uint64_t updates;
        int rc = gpufl__gauge_sink_read(run->g, &gpufl__wire_host_sample, 0, cells, &updates);
        if (rc == GPUFL_ENOTFOUND) continue;
        if (rc != 0) continue;
        run->reads++;
        int64_t v = cells[0].i;
        if (cells[1].d != (double)v || cells[3].i != v * 3 || cells[9].d != (double)v / 2 ||
            v < last)
            run->torn++;
        last = v;
    }
    return NULL;
}

static void gauges_read_while_written(void **state) {
    (void)state;
    gauge_run_t run = {0};
    gpufl__batch_t host, gpu, scope;
    assert_int_equal(gpufl__gauge_sink_create(&run.g), 0);
    assert_int_equal(gpufl__batch_init_table(&host, &gpufl__wire_host_sample), 0);
    assert_int_equal(gpufl__batch_init_table(&gpu, &gpufl__wire_gpu_sample), 0);
    assert_int_equal(gpufl__batch_init_table(&scope, &gpufl__wire_scope_end), 0);
    gpufl__cell_t cells[GPUFL_BATCH_MAX_COLS];
    assert_int_equal(gpufl__gauge_sink_read(run.g, &gpufl__wire_host_sample, 0, cells, NULL),
                     GPUFL_ENOTFOUND);
    assert_int_equal(gpufl__gauge_sink_read(run.g, &gpufl__wire_scope_end, 0, cells, NULL),
                     GPUFL_ENOTFOUND);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, gauge_reader, &run), 0);
    /* On a busy machine the reader may start late: write until it has read
     * a while (10 s at most). */
    int64_t n = 0;
    for (int64_t v = 0; v < 100000 || (atomic_load(&run.reads) < 20000 && v < 50000000); v++) {
        n = v + 1;
        for (int k = 0; k < 2; k++) { /* two rows a batch: the newest counts */
            gpufl__cell_t *r = gpufl__batch_row(&host);
            int64_t x = k ? v : v - 1;
            r[0].i = x;
            for (int c = 1; c < host.ncols; c++) {
                if (host.cols[c].kind == GPUFL_COL_PCT || host.cols[c].kind == GPUFL_COL_FIX2)
                    r[c].d = c == 9 ? (double)x / 2 : (double)x;
                else
                    r[c].i = x * 3;
            }
        }
        assert_int_equal(gpufl__gauge_sink_ops.batch(run.g, GPUFL_FILE_SYSTEM, &host, NULL), 0);
        host.rows = 0;
    }
    atomic_store(&run.done, 1);
    pthread_join(t, NULL);
    assert_true(run.reads > 0);
    assert_int_equal(run.torn, 0);
    uint64_t updates;
    assert_int_equal(gpufl__gauge_sink_read(run.g, &gpufl__wire_host_sample, 0, cells, &updates),
                     0);
    assert_int_equal(cells[0].i, n - 1);
    assert_int_equal(updates, n);

    /* GPU samples: one gauge per device; the newest row of each. */
    int64_t devices[] = {0, 1, 0, 3, 99};
    for (int k = 0; k < 5; k++) {
        gpufl__cell_t *r = gpufl__batch_row(&gpu);
        memset(r, 0, (size_t)gpu.ncols * sizeof *r);
        r[0].i = 100 + k;
        r[1].i = devices[k];
    }
    fill_scope_ends(&scope, 0, 3);
    assert_int_equal(gpufl__gauge_sink_ops.batch(run.g, GPUFL_FILE_DEVICE, &gpu, NULL), 0);
    assert_int_equal(gpufl__gauge_sink_ops.batch(run.g, GPUFL_FILE_SCOPE, &scope, NULL), 0);
    int64_t want[] = {102, 101, -1, 103};
    for (int d = 0; d < 4; d++) {
        int rc = gpufl__gauge_sink_read(run.g, &gpufl__wire_gpu_sample, d, cells, &updates);
        if (want[d] < 0) {
            assert_int_equal(rc, GPUFL_ENOTFOUND);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(cells[0].i, want[d]);
        assert_int_equal(cells[1].i, d);
        assert_int_equal(updates, 1);
    }
    assert_int_equal(gpufl__gauge_sink_ignored(run.g), 1); /* device 99 */
    gpufl__batch_fini(&host);
    gpufl__batch_fini(&gpu);
    gpufl__batch_fini(&scope);
    gpufl__gauge_sink_destroy(run.g);
}

/* ---- sessions ---- */

static void failing_sink_leaves_files_complete(void **state) {
    (void)state;
    gpufl_options_t o = tu_options(tu_log_dir(SUITE, "failing"));
    warnings_t w = {0};
    atomic_store(&failing_calls, 0);
    assert_int_equal(gpufl_init(&o), 0);
    gpufl_set_log_hook(count_warnings, &w);
    assert_int_equal(gpufl__session_attach_sink(&failing_ops, NULL, NULL), 0);
    for (int k = 0; k < 5; k++) { /* in rounds: the thread's ring holds 8192 records */
        for (int i = 0; i < 1000; i++) gpufl_scope_end(gpufl_scope_begin("s", NULL));
        assert_int_equal(gpufl_flush(), 0);
    }
    assert_int_equal(gpufl_system_start("w"), 0);
    assert_int_equal(gpufl_system_stop("w"), 0);
    const char *dir = tu_session_dir();
    gpufl_shutdown();
    gpufl_set_log_hook(NULL, NULL);
    assert_true(atomic_load(&failing_calls) >= 4);
    if (w.all != w.sink) fail_msg("another warning: %s", w.other);
    assert_int_equal(w.sink, 1); /* said once, however often it failed */
    tu_lines_t L = tu_read(dir, "scope.log");
    size_t n = 0;
    int64_t *ids = tu_column(&L, "scope_end", "id", &n);
    assert_int_equal(n, 5000);
    free(ids);
    assert_non_null(tu_last(&L, "session_end"));
    tu_free(&L);
    L = tu_read(dir, "system.log");
    assert_int_equal(tu_count(&L, "system_start"), 1);
    assert_int_equal(tu_count(&L, "system_stop"), 1);
    tu_free(&L);
}

static void session_rows_reach_every_sink(void **state) {
    (void)state;
    gpufl__ring_sink_t *ring;
    gpufl__gauge_sink_t *gauges;
    gpufl__session_ident_t ident;
    assert_int_equal(gpufl__ring_sink_create(&ring, 64 << 20, 0), 0);
    assert_int_equal(gpufl__gauge_sink_create(&gauges), 0);
    const char *dir = run_session("all", ring, gauges, &ident, 300);
    assert_int_equal(gpufl_flush(), 0);
    gpufl__cell_t live[GPUFL_BATCH_MAX_COLS];
    assert_int_equal(gpufl__gauge_sink_read(gauges, &gpufl__wire_host_sample, 0, live, NULL), 0);
    gpufl_shutdown();
    assert_string_equal(ident.session_id, strrchr(dir, '/') + 1);

    /* The files: what the NDJSON sink wrote. */
    tu_lines_t S = tu_read(dir, "scope.log"), Y = tu_read(dir, "system.log");
    size_t begins = 0, samples = 0;
    int64_t *b = tu_column(&S, "scope_begin", "ts_ns", &begins);
    int64_t *ts = tu_column(&Y, "host_sample", "ts_ns", &samples);
    assert_int_equal(begins, 600);
    assert_true(samples > 0);

    /* The ring: the same rows (nothing evicted at 64 MiB). */
    gpufl__ring_sink_stats_t st;
    gpufl__ring_sink_stats(&st, ring);
    assert_int_equal(st.evicted_rows, 0);
    const char *dump = tu_scratch_dir(SUITE, "all_dump");
    assert_int_equal(gpufl__ring_sink_dump_dir(ring, &ident, dump, NULL, NULL), 0);
    tu_lines_t D = tu_read(dump, "scope.log");
    size_t dumped = 0;
    int64_t *db = tu_column(&D, "scope_begin", "ts_ns", &dumped);
    assert_int_equal(dumped, begins);
    assert_memory_equal(db, b, begins * sizeof *b);
    tu_lines_t DY = tu_read(dump, "system.log"); /* host_info: before the attach, replayed */
    assert_int_equal(tu_count(&DY, "host_info"), 1);
    size_t dsamples = 0;
    free(tu_column(&DY, "host_sample", "ts_ns", &dsamples));
    assert_int_equal(dsamples, samples);

    /* The gauges: the newest host sample of the files. */
    gpufl__cell_t cells[GPUFL_BATCH_MAX_COLS];
    uint64_t updates = 0;
    assert_int_equal(gpufl__gauge_sink_read(gauges, &gpufl__wire_host_sample, 0, cells, &updates),
                     0);
    assert_int_equal(cells[0].i, ts[samples - 1]);
    assert_true(cells[0].i >= live[0].i);
    assert_true(updates >= 1 && updates <= samples);
    free(b);
    free(ts);
    free(db);
    tu_free(&S);
    tu_free(&Y);
    tu_free(&D);
    tu_free(&DY);
    gpufl__ring_sink_destroy(ring);
    gpufl__gauge_sink_destroy(gauges);
}

#ifdef GPUFL_FAKE_NVML_PATH
/* A flight recorder attached mid-session (a device from the fake NVML)
 * dumps a session the analysis opens with its device and options known. */
static void ring_attached_late_dumps_a_known_session(void **state) {
    (void)state;
    char script[1024];
    snprintf(script, sizeof script, "%s", tu_scratch_dir(SUITE, "nvml"));
    strcat(script, "/script.json");
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs("{\"driver_version\": \"580.95.05\", \"nvml_version\": \"13.580.95.05\","
          " \"cuda_driver_version\": 13000, \"gpus\": [{\"name\": \"NVIDIA H100 80GB HBM3\","
          " \"uuid\": \"GPU-1\", \"pci_bus_id\": \"00000000:1B:00.0\", \"cc\": [9, 0],"
          " \"cores\": 16896, \"memory_total\": 85520809984, \"mig_mode\": 0,"
          " \"samples\": {\"util_gpu\": [100], \"throttle\": [4]}}]}",
          f);
    fclose(f);
    setenv("GPUFL_FAKE_NVML", script, 1);
    setenv("GPUFL_NVML_LIBRARY", GPUFL_FAKE_NVML_PATH, 1);
    gpufl__ring_sink_t *ring;
    gpufl__session_ident_t ident;
    assert_int_equal(gpufl__ring_sink_create(&ring, 128 << 10, 64), 0);
    const char *dir = run_session("late", NULL, NULL, &ident, 200);
    assert_int_equal(gpufl_flush(), 0);
    assert_int_equal(gpufl__session_attach_sink(&gpufl__ring_sink_ops, ring, &ident), 0);
    for (int i = 0; i < 10000; i++) {
        gpufl_scope_end(gpufl_scope_begin("after", NULL));
        if (i % 500 == 0) sleep_ms(2); /* the per-thread ring is not a test subject here */
    }
    sleep_ms(60);
    gpufl_shutdown();
    unsetenv("GPUFL_FAKE_NVML");
    unsetenv("GPUFL_NVML_LIBRARY");
    gpufl__ring_sink_stats_t st;
    gpufl__ring_sink_stats(&st, ring);
    assert_true(st.evicted_rows > 0); /* the ring turned over after the attach */
    const char *dump = tu_scratch_dir(SUITE, "late_dump");
    assert_int_equal(gpufl__ring_sink_dump_dir(ring, &ident, dump, NULL, NULL), 0);

    /* The records written before the attach, once each. */
    tu_lines_t D = tu_read(dump, "device.log"), F = tu_read(dir, "device.log");
    const char *once[] = {"options", "capabilities", "legend", "gpu_info", "gpu_legend"};
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++) {
        assert_int_equal(tu_count(&F, once[i]), 1);
        assert_int_equal(tu_count(&D, once[i]), 1);
    }
    tu_lines_t Y = tu_read(dump, "system.log");
    assert_int_equal(tu_count(&Y, "host_info"), 1);

    gpufl_analysis_t *a;
    size_t rows = 0;
    gpufl_column_t col = {.size = sizeof col};
    assert_int_equal(gpufl_analysis_open(&a, dump), 0);
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_SESSION, &rows, NULL), 0);
    assert_int_equal(gpufl_analysis_column_find(a, GPUFL_TABLE_SESSION, "backend", &col), 0);
    assert_string_equal(gpufl_analysis_string(a, ((const int64_t *)col.data)[0]), "Nvidia");
    assert_int_equal(gpufl_analysis_table(a, GPUFL_TABLE_DEVICE_METRICS, &rows, NULL), 0);
    assert_true(rows > 0);
    assert_int_equal(gpufl_analysis_column_find(a, GPUFL_TABLE_DEVICE_METRICS, "gpu_name", &col),
                     0);
    assert_string_equal(gpufl_analysis_string(a, ((const int64_t *)col.data)[rows - 1]),
                        "NVIDIA H100 80GB HBM3");
    gpufl_analysis_close(a);
    tu_free(&D);
    tu_free(&F);
    tu_free(&Y);
    gpufl__ring_sink_destroy(ring);
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fanout_counts_a_failing_sink),
        cmocka_unit_test(fanout_replays_describing_records),
        cmocka_unit_test(ring_keeps_newest_within_cap),
        cmocka_unit_test(ring_pins_describing_records),
        cmocka_unit_test(ring_window_ages_out_old_lines),
        cmocka_unit_test(ring_reader_never_blocks_rows),
        cmocka_unit_test(ring_dump_reads_back),
        cmocka_unit_test(gauges_read_while_written),
        cmocka_unit_test(failing_sink_leaves_files_complete),
        cmocka_unit_test(session_rows_reach_every_sink),
#ifdef GPUFL_FAKE_NVML_PATH
        cmocka_unit_test(ring_attached_late_dumps_a_known_session),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
