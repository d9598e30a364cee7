// SPDX-License-Identifier: Apache-2.0
/*
 * test_sass_metrics.c - the analysis of SASS metrics: loading sass_metrics,
 * sass_metric and sass_metrics_stats records (null columns, a context read
 * twice, malformed lines), the per function / line / instruction sums of
 * sass_profile.c, the warp_divergence and uncoalesced_global insights just
 * below and above every threshold of docs/insights.md, and the report
 * section where metrics were not counted. Sessions are written to scratch
 * directories (test_util.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpufl/gpufl.h>

#include "analysis/insights.h"
#include "analysis/model.h"
#include "analysis/report.h"
#include "analysis/sass_profile.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NUL INT64_MIN /* a count written as null */

#define ASSERT_NEAR(a, b) TU_ASSERT_NEAR(a, b, 1e-9)

/* ---------------------------------------------------------------------- */
/* Writing sessions                                                         */
/* ---------------------------------------------------------------------- */

/* Dict ids of the sessions below: functions a (1, demangled 2) and b (3,
 * demangled 4), modules 5 and 6. */
enum { FN_A = 1, FN_B = 3, CUBIN_A = 5, CUBIN_B = 6 };

typedef struct mrow {
    int64_t context, cubin, function, pc;
    int64_t inst, thread_inst, sectors, sectors_ideal; /* NUL: null */
    int64_t ts_ns;                                     /* 0: 1 s */
} mrow_t;

typedef struct sess {
    char dir[1024];
    FILE *f;
    gpufl__model_t *m;
} sess_t;

/* A session in a fresh scratch directory (the lines are synthetic, some
 * damaged on purpose: not for the schema test). */
static void sess_open(sess_t *s) {
    static unsigned serial;
    char name[32], path[1100];
    memset(s, 0, sizeof *s);
    snprintf(name, sizeof name, "s%u", serial++);
    snprintf(s->dir, sizeof s->dir, "%s", tu_scratch_dir("sass_metrics", name));
    snprintf(path, sizeof path, "%s/device.log", s->dir);
    s->f = fopen(path, "w");
    assert_non_null(s->f);
    fputs("{\"type\":\"header\",\"v\":1,\"format\":\"gpufl-log\",\"file\":\"device\",\"segment\":0,"
          "\"session_id\":\"20261124T000000.000Z-2-0002\",\"app_name\":\"t\",\"pid\":2,"
          "\"hostname\":\"h\",\"epoch_ns\":\"1000\",\"epoch_unix_us\":1,\"clock\":\"monotonic\","
          "\"gpufl_version\":\"0.1.0\"}\n"
          "{\"type\":\"dict\",\"v\":1,\"id\":[1,2,3,4,5,6],\"str\":[\"_Z1av\",\"a()\",\"_Z1bv\","
          "\"b()\",\"0xc0de\",\"0xbeef\"]}\n",
          s->f);
}

/* A sass record for a (module 5): pcs 0 and 16 on line 10, 32 on line 11,
 * 48 without line info. */
static void put_sass_a(sess_t *s) {
    fputs("{\"type\":\"sass\",\"v\":1,\"cubin\":5,\"function\":1,\"arch\":\"sm_90\","
          "\"files\":[\"/s/a.cu\"],\"pc\":[0,16,32,48],\"text\":[\"IMAD R0\",\"LDG.E R2\","
          "\"NOP\",\"EXIT\"],\"file\":[0,0,0,null],\"line\":[10,10,11,null]}\n",
          s->f);
}

static void put_cell(FILE *f, int64_t v) {
    if (v == NUL)
        fputs("null", f);
    else
        fprintf(f, "%lld", (long long)v);
}

/* One sass_metric batch of the rows. */
static void put_rows(sess_t *s, const mrow_t *r, size_t n) {
    static const char *const cols[] = {"ts_ns",     "context",      "cubin", "function",
                                       "demangled", "pc",           "inst",  "thread_inst",
                                       "sectors",   "sectors_ideal"};
    fputs("{\"type\":\"sass_metric\",\"v\":1", s->f);
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
        fprintf(s->f, ",\"%s\":[", cols[c]);
        for (size_t i = 0; i < n; i++) {
            const int64_t v[] = {r[i].ts_ns ? r[i].ts_ns : 1000000000,
                                 r[i].context,
                                 r[i].cubin,
                                 r[i].function,
                                 r[i].function + 1,
                                 r[i].pc,
                                 r[i].inst,
                                 r[i].thread_inst,
                                 r[i].sectors,
                                 r[i].sectors_ideal};
            if (i) fputc(',', s->f);
            put_cell(s->f, v[c]);
        }
        fputc(']', s->f);
    }
    fputs("}\n", s->f);
}

static void sess_load(sess_t *s) {
    assert_int_equal(fclose(s->f), 0);
    s->f = NULL;
    int rc = gpufl__model_load(&s->m, s->dir);
    if (rc) fail_msg("load %s: %d %s", s->dir, rc, gpufl_last_error());
}

static void sess_done(sess_t *s) { gpufl__model_destroy(s->m); }

static int has_warning(const gpufl__model_t *m, const char *text) {
    for (size_t i = 0; i < m->n_warnings; i++)
        if (strstr(m->warnings[i].message, text)) return 1;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Loading                                                                  */
/* ---------------------------------------------------------------------- */

static void test_sass_metrics_load(void **state) {
    (void)state;
    sess_t s;
    sess_open(&s);
    fputs("{\"type\":\"sass_metrics\",\"v\":1,\"ts_ns\":5,\"device\":0,\"context\":1,"
          "\"late\":true,\"enable_ms\":1.5,\"chip\":\"GH100\",\"metrics\":[\"m1\",\"m2\"],"
          "\"lazy\":true}\n"
          "{\"type\":\"sass_metrics\",\"v\":1,\"ts_ns\":6,\"device\":0,\"context\":2,"
          "\"late\":false,\"enable_ms\":0,\"error\":\"refused\"}\n"
          "{\"type\":\"sass_metrics\",\"v\":1,\"ts_ns\":7,\"device\":0,\"context\":1,"
          "\"late\":false,\"enable_ms\":0,\"chip\":\"X\",\"metrics\":[],\"lazy\":false}\n",
          s.f);
    /* Context 1 read twice: the second read holds everything the first
     * did; context 3 once. Nulls where a metric was not counted. */
    const mrow_t rows[] = {
        {1, CUBIN_A, FN_A, 16, 10, 320, 40, 10, 100},
        {1, CUBIN_A, FN_A, 16, 30, 960, 120, 30, 200},
        {3, CUBIN_A, FN_A, 16, 5, NUL, NUL, NUL, 150},
        {1, CUBIN_A, FN_A, 0, 7, 224, 0, 0, 200},
    };
    put_rows(&s, rows, 4);
    fputs("{\"type\":\"sass_metrics_stats\",\"v\":1,\"ts_ns\":9,\"contexts\":1,\"reads\":2,"
          "\"records\":4,\"rows\":4,\"functions\":1,\"dropped\":3,\"lost\":0,\"errors\":1,"
          "\"read_ms\":2.5}\n",
          s.f);
    sess_load(&s);
    gpufl__model_t *m = s.m;
    assert_int_equal(m->n_sass_metrics_contexts, 2); /* context 1 again: the first kept */
    assert_true(has_warning(m, "sass_metrics: context 1 started again"));
    const gpufl__model_sass_metrics_context_t *c = gpufl__model_sass_metrics_context(m, 1);
    assert_non_null(c);
    assert_string_equal(c->chip, "GH100");
    assert_true(c->lazy && c->late);
    assert_true(c->enable_ms == 1.5);
    assert_int_equal(json_array_size(c->metrics), 2);
    assert_string_equal(gpufl__model_sass_metrics_context(m, 2)->error, "refused");
    assert_null(gpufl__model_sass_metrics_context(m, 9));
    /* sorted by (cubin, function, pc, context); context 1's pc 16 once */
    assert_int_equal(m->n_sass_metrics, 3);
    assert_int_equal(m->sass_metrics_replaced, 1);
    assert_true(has_warning(m, "1 sass_metric rows were read again later"));
    assert_int_equal(m->sass_metrics[0].pc, 0);
    assert_int_equal(m->sass_metrics[1].context, 1);
    assert_int_equal(m->sass_metrics[1].inst, 30);
    assert_int_equal(m->sass_metrics[1].ts_ns, 200);
    assert_int_equal(m->sass_metrics[1].demangled, FN_A + 1);
    assert_int_equal(m->sass_metrics[2].context, 3);
    assert_int_equal(m->sass_metrics[2].thread_inst, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(m->sass_metrics[2].sectors_ideal, GPUFL_MODEL_UNKNOWN);
    assert_non_null(m->sass_metrics_stats);
    assert_int_equal(m->last_ts_ns, 200);
    sess_done(&s);
}

/* Malformed lines are reported with their line and skipped whole; the
 * well-formed ones around them load. */
static void test_sass_metrics_malformed(void **state) {
    (void)state;
    static const struct {
        const char *line, *why;
    } bad[] = {
        {"{\"type\":\"sass_metric\",\"v\":1,\"ts_ns\":[1],\"context\":[1],\"cubin\":[5],"
         "\"function\":[1],\"inst\":[1]}",
         "column \"pc\" missing"},
        {"{\"type\":\"sass_metric\",\"v\":1,\"ts_ns\":[1,2],\"context\":[1,1],\"cubin\":[5,5],"
         "\"function\":[1,1],\"pc\":[0,16],\"inst\":[1,\"many\"]}",
         "row 1: inst is not an integer"},
        {"{\"type\":\"sass_metric\",\"v\":1,\"ts_ns\":[1],\"context\":[1],\"cubin\":[5],"
         "\"function\":[1],\"pc\":[0],\"inst\":[1],\"sectors\":[-4]}",
         "row 0: sectors -4 is out of range"},
        {"{\"type\":\"sass_metric\",\"v\":1,\"ts_ns\":[1],\"context\":[1],\"cubin\":[5],"
         "\"function\":[0],\"pc\":[0],\"inst\":[1]}",
         "row 0: function is 0"},
        {"{\"type\":\"sass_metric\",\"v\":1,\"ts_ns\":[1,2],\"context\":[1],\"cubin\":[5],"
         "\"function\":[1],\"pc\":[0],\"inst\":[1]}",
         "rows"},
        {"{\"type\":\"sass_metric\",\"v\":1,\"ts_ns\":[1],\"context\":[1],\"cubin\":[5],"
         "\"function\":[1],\"pc\":[4294967296],\"inst\":[1]}",
         "pc 4294967296 is out of range"},
        {"{\"type\":\"sass_metrics\",\"v\":1,\"ts_ns\":1,\"device\":0,\"late\":false}",
         "sass_metrics: no context id"},
        {"{\"type\":\"sass_metrics\",\"v\":1,\"ts_ns\":1,\"context\":4,\"metrics\":\"all\"}",
         "metrics is not an array"},
        {"{\"type\":\"sass_metrics\",\"v\":1,\"ts_ns\":1,\"context\":4,\"metrics\":[7]}",
         "metrics[0] is not a string"},
    };
    enum { N_BAD = sizeof bad / sizeof bad[0] };
    sess_t s;
    sess_open(&s);
    for (size_t i = 0; i < N_BAD; i++) fprintf(s.f, "%s\n", bad[i].line);
    /* A count past int64 reads as unknown, as a null does. */
    fputs("{\"type\":\"sass_metric\",\"v\":1,\"ts_ns\":[1],\"context\":[1],\"cubin\":[5],"
          "\"function\":[1],\"pc\":[0],\"inst\":[3],\"thread_inst\":[\"99999999999999999999\"]}\n",
          s.f);
    sess_load(&s);
    gpufl__model_t *m = s.m;
    assert_int_equal(m->read.corrupt_lines, N_BAD);
    for (size_t i = 0; i < N_BAD; i++)
        if (!has_warning(m, bad[i].why)) fail_msg("no warning \"%s\" (line %zu)", bad[i].why, i);
    assert_int_equal(m->n_sass_metrics_contexts, 0);
    assert_int_equal(m->n_sass_metrics, 1);
    assert_int_equal(m->sass_metrics[0].inst, 3);
    assert_int_equal(m->sass_metrics[0].thread_inst, GPUFL_MODEL_UNKNOWN);
    assert_int_equal(m->sass_metrics[0].sectors, GPUFL_MODEL_UNKNOWN); /* absent column */
    sess_done(&s);
}

/* ---------------------------------------------------------------------- */
/* The profile                                                              */
/* ---------------------------------------------------------------------- */

static void test_sass_metrics_profile(void **state) {
    (void)state;
    sess_t s;
    sess_open(&s);
    put_sass_a(&s);
    const mrow_t rows[] = {
        {1, CUBIN_A, FN_A, 0, 100, 3200, 0, 0, 0},        /* line 10 */
        {2, CUBIN_A, FN_A, 0, 50, 1600, 0, 0, 0},         /* line 10, another context */
        {1, CUBIN_A, FN_A, 16, 100, 1600, 400, 100, 0},   /* line 10: half the lanes */
        {1, CUBIN_A, FN_A, 32, 0, 0, 0, 0, 0},            /* line 11: never executed */
        {1, CUBIN_A, FN_A, 48, 20, 640, NUL, NUL, 0},     /* no line info */
        {1, CUBIN_A, FN_A, 64, 10, NUL, 0, 0, 0},         /* not in the sass record */
        {2, CUBIN_B, FN_B, 0, 1000, 32000, 4000, 4000, 0} /* no sass record */
    };
    put_rows(&s, rows, sizeof rows / sizeof rows[0]);
    sess_load(&s);
    gpufl__sass_profile_t p;
    assert_int_equal(gpufl__sass_profile_build(s.m, &p), 0);
    assert_int_equal(p.rows, 7);
    assert_int_equal(p.contexts, 2);
    assert_int_equal(p.n_functions, 2);
    assert_int_equal(p.n_insns, 6);
    assert_true(p.counted[0] && p.counted[1] && p.counted[2] && p.counted[3]);
    assert_true(p.has_sass_lines);
    ASSERT_NEAR(p.total.inst, 1280);

    /* b first: more warp instructions; no sass record, one line */
    const gpufl__sass_function_t *b = &p.functions[0], *a = &p.functions[1];
    assert_string_equal(b->name, "b()");
    assert_string_equal(b->mangled, "_Z1bv");
    assert_false(b->has_sass);
    assert_int_equal(b->n_lines, 1);
    const gpufl__sass_line_t *bl = &p.lines[b->first_line];
    assert_null(bl->file);
    assert_int_equal(bl->fn, 0);
    assert_null(p.insns[bl->first_insn].text);
    ASSERT_NEAR(gpufl__sass_thread_efficiency(&b->counts), 1);
    ASSERT_NEAR(gpufl__sass_coalescing(&b->counts), 1);
    ASSERT_NEAR(gpufl__sass_sectors_per_request(&b->counts), 4);
    ASSERT_NEAR(gpufl__sass_excess_sectors(&b->counts), 0);

    /* a: summed over contexts; null counts leave their rows out of the
     * figures that need them */
    assert_true(a->has_sass && a->has_lines);
    const gpufl__sass_counts_t *c = &a->counts;
    ASSERT_NEAR(c->inst, 280);
    ASSERT_NEAR(c->thread_base, 270); /* pc 64 has no thread_inst */
    ASSERT_NEAR(c->thread_inst, 7040);
    ASSERT_NEAR(gpufl__sass_thread_efficiency(c), 7040.0 / (32 * 270));
    ASSERT_NEAR(gpufl__sass_idle_lanes(c), 32 * 270 - 7040);
    ASSERT_NEAR(c->requests, 100);
    ASSERT_NEAR(c->sectors, 400); /* pc 48 has no sectors */
    ASSERT_NEAR(gpufl__sass_sectors_per_request(c), 4);
    ASSERT_NEAR(gpufl__sass_ideal_per_request(c), 1);
    ASSERT_NEAR(gpufl__sass_coalescing(c), 0.25);
    ASSERT_NEAR(gpufl__sass_excess_sectors(c), 300);

    /* lines: a.cu:10 (pcs 0, 16), a.cu:11 (pc 32, zero inst), then the
     * instructions without line info (48 from the record, 64 not in it) */
    assert_int_equal(a->n_lines, 3);
    const gpufl__sass_line_t *l = &p.lines[a->first_line];
    assert_string_equal(l[0].file, "/s/a.cu");
    assert_int_equal(l[0].line, 10);
    assert_int_equal(l[0].fn, 1);
    assert_int_equal(l[0].n_insns, 2);
    ASSERT_NEAR(l[0].counts.inst, 250);
    assert_string_equal(p.insns[l[0].first_insn].text, "IMAD R0");
    assert_int_equal(l[1].line, 11);
    ASSERT_NEAR(l[1].counts.inst, 0);
    assert_true(gpufl__sass_thread_efficiency(&l[1].counts) < 0); /* nothing to divide */
    assert_true(gpufl__sass_sectors_per_request(&l[1].counts) < 0);
    assert_null(l[2].file);
    assert_int_equal(l[2].n_insns, 2);
    assert_string_equal(p.insns[l[2].first_insn].text, "EXIT");
    assert_null(p.insns[l[2].first_insn + 1].text);
    assert_true(gpufl__sass_coalescing(&l[2].counts) < 0);

    /* the worst line by each measure has line info; the worst instruction
     * may lack it */
    assert_ptr_equal(gpufl__sass_worst_line(&p, 1, GPUFL_SASS_BY_IDLE_LANES), &l[0]);
    assert_ptr_equal(gpufl__sass_worst_line(&p, 1, GPUFL_SASS_BY_EXCESS_SECTORS), &l[0]);
    assert_null(gpufl__sass_worst_line(&p, 0, GPUFL_SASS_BY_IDLE_LANES));
    assert_int_equal(gpufl__sass_worst_insn(&p, 1, GPUFL_SASS_BY_IDLE_LANES)->pc, 16);
    assert_null(gpufl__sass_worst_insn(&p, 0, GPUFL_SASS_BY_EXCESS_SECTORS));
    gpufl__sass_profile_free(&p);
    sess_done(&s);
}

/* ---------------------------------------------------------------------- */
/* Insights                                                                 */
/* ---------------------------------------------------------------------- */

typedef struct judged {
    sess_t s;
    gpufl__insights_t in;
} judged_t;

static void judge(judged_t *j, const mrow_t *rows, size_t n, int with_sass) {
    sess_open(&j->s);
    if (with_sass) put_sass_a(&j->s);
    put_rows(&j->s, rows, n);
    sess_load(&j->s);
    assert_int_equal(gpufl__insights_compute(&j->in, j->s.m), 0);
}

static void unjudge(judged_t *j) {
    gpufl__insights_free(&j->in);
    sess_done(&j->s);
}

static const gpufl__insight_t *find(const judged_t *j, const char *rule, size_t *count) {
    const gpufl__insight_t *found = NULL;
    *count = 0;
    for (size_t i = 0; i < j->in.n; i++)
        if (strcmp(j->in.items[i].rule, rule) == 0) found = &j->in.items[i], ++*count;
    return found;
}

static const char *skip_why(const judged_t *j, const char *rule) {
    for (size_t i = 0; i < j->in.n_skipped; i++)
        if (strcmp(j->in.skipped[i].rule, rule) == 0) return j->in.skipped[i].why;
    return NULL;
}

static double evidence(const gpufl__insight_t *x, const char *name) {
    for (size_t i = 0; i < x->n_evidence; i++)
        if (strcmp(x->evidence[i].name, name) == 0) return x->evidence[i].value;
    fail_msg("%s: no evidence %s", x->rule, name);
    return 0;
}

static void expect_text(const char *text, const char *part) {
    if (!text || !strstr(text, part)) fail_msg("\"%s\" not in \"%s\"", part, text ? text : "");
}

/* a's one instruction (pc 16: a.cu:10 with the sass record) with inst and
 * thread_inst; b with `filler` warp instructions, no divergence. */
static void test_sass_metrics_warp_divergence(void **state) {
    (void)state;
    static const struct {
        int64_t inst, thread_inst, filler;
        gpufl_severity_t sev; /* 0: none */
    } cases[] = {
        {10000, 256000, 0, 0},                        /* efficiency 0.80: not below */
        {10000, 255999, 0, GPUFL_SEVERITY_MEDIUM},    /* just below 0.80 */
        {10000, 192000, 0, GPUFL_SEVERITY_MEDIUM},    /* 0.60: not below */
        {10000, 191999, 0, GPUFL_SEVERITY_HIGH},      /* just below 0.60 */
        {9999, 9999 * 16, 0, 0},                      /* under 10,000 warp instructions */
        {10000, 160000, 190000, GPUFL_SEVERITY_HIGH}, /* 5 % of the session's */
        {10000, 160000, 190001, 0},                   /* just under 5 % */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const mrow_t rows[] = {
            {1, CUBIN_A, FN_A, 16, cases[i].inst, cases[i].thread_inst, 0, 0, 0},
            {1, CUBIN_B, FN_B, 0, cases[i].filler, 32 * cases[i].filler, 0, 0, 0}};
        judged_t j;
        judge(&j, rows, cases[i].filler ? 2 : 1, 1);
        size_t n;
        const gpufl__insight_t *x = find(&j, "warp_divergence", &n);
        if (n != (cases[i].sev ? 1u : 0u)) fail_msg("case %zu: %zu insights", i, n);
        assert_null(skip_why(&j, "warp_divergence"));
        if (x) {
            assert_int_equal(x->severity, cases[i].sev);
            assert_string_equal(x->category, "DIVERGENCE");
            assert_string_equal(x->kernel, "a()");
            assert_string_equal(x->file, "/s/a.cu");
            assert_int_equal(x->line, 10);
            expect_text(x->message, "The most divergent line is /s/a.cu:10");
            expect_text(x->advice, "uniform");
            double eff = (double)cases[i].thread_inst / (32.0 * (double)cases[i].inst);
            ASSERT_NEAR(evidence(x, "thread_efficiency_pct"), 100 * eff);
            ASSERT_NEAR(evidence(x, "warp_inst"), (double)cases[i].inst);
            ASSERT_NEAR(evidence(x, "idle_lanes"),
                        32.0 * (double)cases[i].inst - (double)cases[i].thread_inst);
            ASSERT_NEAR(evidence(x, "line_thread_efficiency_pct"), 100 * eff);
        }
        unjudge(&j);
    }
    /* Without line info the message names the instruction. */
    const mrow_t rows[] = {{1, CUBIN_A, FN_A, 16, 20000, 20000, 0, 0, 0}};
    judged_t j;
    judge(&j, rows, 1, 0);
    size_t n;
    const gpufl__insight_t *x = find(&j, "warp_divergence", &n);
    assert_int_equal(n, 1);
    assert_null(x->file);
    expect_text(x->message, "at +0x10 (no sass record for the function)");
    assert_int_equal(x->severity, GPUFL_SEVERITY_HIGH);
    unjudge(&j);
}

/* a's global instruction (pc 16) with sectors and their ideal; b with
 * `filler` coalesced sectors. */
static void test_sass_metrics_uncoalesced_global(void **state) {
    (void)state;
    static const struct {
        int64_t sectors, ideal, filler;
        gpufl_severity_t sev;
    } cases[] = {
        {10000, 5001, 0, 0},                        /* just above 50 % */
        {10000, 5000, 0, GPUFL_SEVERITY_MEDIUM},    /* 50 % */
        {10000, 2501, 0, GPUFL_SEVERITY_MEDIUM},    /* just above 25 % */
        {10000, 2500, 0, GPUFL_SEVERITY_HIGH},      /* 25 % */
        {9999, 1000, 0, 0},                         /* under 10,000 sectors */
        {10000, 1000, 190000, GPUFL_SEVERITY_HIGH}, /* 5 % of the session's */
        {10000, 1000, 190001, 0},                   /* just under 5 % */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const mrow_t rows[] = {
            {1, CUBIN_A, FN_A, 16, 1000, 32000, cases[i].sectors, cases[i].ideal, 0},
            {1, CUBIN_B, FN_B, 0, 1000, 32000, cases[i].filler, cases[i].filler, 0}};
        judged_t j;
        judge(&j, rows, cases[i].filler ? 2 : 1, 1);
        size_t n;
        const gpufl__insight_t *x = find(&j, "uncoalesced_global", &n);
        if (n != (cases[i].sev ? 1u : 0u)) fail_msg("case %zu: %zu insights", i, n);
        assert_null(skip_why(&j, "uncoalesced_global"));
        if (x) {
            assert_int_equal(x->severity, cases[i].sev);
            assert_string_equal(x->category, "MEMORY");
            assert_string_equal(x->kernel, "a()");
            assert_int_equal(x->line, 10);
            expect_text(x->message, "The least coalesced line is /s/a.cu:10");
            expect_text(x->advice, "structure of arrays");
            double spr = (double)cases[i].sectors / 1000, ideal = (double)cases[i].ideal / 1000;
            ASSERT_NEAR(evidence(x, "sectors_per_request"), spr);
            ASSERT_NEAR(evidence(x, "ideal_sectors_per_request"), ideal);
            ASSERT_NEAR(evidence(x, "coalescing_efficiency_pct"),
                        100.0 * (double)cases[i].ideal / (double)cases[i].sectors);
            ASSERT_NEAR(evidence(x, "excess_sectors"), (double)(cases[i].sectors - cases[i].ideal));
        }
        unjudge(&j);
    }
}

/* Rules that cannot judge say why: no rows (counting failed or did not
 * run), a metric never counted. */
static void test_sass_metrics_skips(void **state) {
    (void)state;
    judged_t j;
    judge(&j, NULL, 0, 0); /* an empty batch: no rows */
    expect_text(skip_why(&j, "warp_divergence"), "no sass_metric rows: SASS metrics did not run");
    expect_text(skip_why(&j, "uncoalesced_global"), "engines SassMetrics and Deep");
    unjudge(&j);

    sess_open(&j.s);
    fputs("{\"type\":\"sass_metrics\",\"v\":1,\"ts_ns\":1,\"device\":0,\"context\":1,"
          "\"late\":false,\"enable_ms\":0,\"error\":\"CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\"}\n",
          j.s.f);
    sess_load(&j.s);
    assert_int_equal(gpufl__insights_compute(&j.in, j.s.m), 0);
    expect_text(skip_why(&j, "uncoalesced_global"),
                "could not start (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)");
    unjudge(&j);

    const mrow_t thread_null[] = {{1, CUBIN_A, FN_A, 16, 20000, NUL, 20000, 20000, 0}};
    judge(&j, thread_null, 1, 1);
    expect_text(skip_why(&j, "warp_divergence"), "smsp__sass_thread_inst_executed");
    assert_null(skip_why(&j, "uncoalesced_global"));
    unjudge(&j);

    const mrow_t inst_null[] = {{1, CUBIN_A, FN_A, 16, NUL, 640000, 20000, 20000, 0}};
    judge(&j, inst_null, 1, 1);
    expect_text(skip_why(&j, "warp_divergence"), "inst is null in every sass_metric row");
    unjudge(&j);

    const mrow_t ideal_null[] = {{1, CUBIN_A, FN_A, 16, 20000, 640000, 20000, NUL, 0}};
    judge(&j, ideal_null, 1, 1);
    expect_text(skip_why(&j, "uncoalesced_global"), "sectors_ideal is null");
    assert_null(skip_why(&j, "warp_divergence"));
    unjudge(&j);
}

/* ---------------------------------------------------------------------- */
/* The report section without some metrics                                  */
/* ---------------------------------------------------------------------- */

static char *report_text(const gpufl__model_t *m, gpufl_report_format_t fmt) {
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gpufl__report_write_format(m, fmt, f), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void test_sass_metrics_report_unknown(void **state) {
    (void)state;
    sess_t s;
    sess_open(&s);
    const mrow_t rows[] = {{1, CUBIN_A, FN_A, 16, 20000, NUL, NUL, NUL, 0}};
    put_rows(&s, rows, 1);
    sess_load(&s);
    char *text = report_text(s.m, GPUFL_REPORT_TEXT);
    expect_text(text, "\nSASS metrics\n");
    expect_text(text, "not said (no sass_metrics record names them)");
    expect_text(text, "unknown: no sass_metrics_stats record");
    expect_text(text, "1 row of 1 context, 1 instruction of 1 function");
    expect_text(text, "20000 warp instructions, thread efficiency not counted; global sectors not "
                      "counted\n");
    expect_text(text,
                "  a()         20000           -         -            -          -           -\n");
    expect_text(text, "Not known: thread_inst was not counted");
    expect_text(text, "Not known: sectors or sectors_ideal were not counted");
    free(text);
    char *json = report_text(s.m, GPUFL_REPORT_JSON);
    json_error_t err;
    json_t *doc = json_loads(json, 0, &err);
    assert_non_null(doc);
    json_t *k = json_array_get(json_object_get(json_object_get(doc, "sass_metrics"), "kernels"), 0);
    assert_int_equal(json_integer_value(json_object_get(k, "warp_inst")), 20000);
    assert_true(json_is_null(json_object_get(k, "thread_inst")));
    assert_true(json_is_null(json_object_get(k, "thread_efficiency_pct")));
    assert_true(json_is_null(json_object_get(k, "sectors")));
    assert_true(json_is_null(json_object_get(k, "coalescing_efficiency_pct")));
    json_decref(doc);
    free(json);
    sess_done(&s);
}

/* Deep: PC samples of the same session are of the instrumented kernels,
 * so dominant_stall is not judged and the PC sampling section says why. */
static void test_sass_metrics_deep_samples_not_judged(void **state) {
    (void)state;
    judged_t j;
    sess_open(&j.s);
    fputs("{\"type\":\"dict\",\"v\":1,\"id\":[7],"
          "\"str\":[\"smsp__pcsamp_warps_issue_stalled_wait\"]}\n"
          "{\"type\":\"sass_metrics\",\"v\":1,\"ts_ns\":1,\"device\":0,\"context\":1,"
          "\"late\":false,\"enable_ms\":0,\"chip\":\"GH100\",\"metrics\":[],\"lazy\":true}\n"
          "{\"type\":\"pc_sample\",\"v\":1,\"t0_ns\":[0],\"t1_ns\":[1000],\"context\":[1],"
          "\"cubin\":[5],\"function\":[1],\"demangled\":[2],\"pc\":[16],\"reason\":[7],"
          "\"samples\":[50000]}\n",
          j.s.f);
    const mrow_t rows[] = {{1, CUBIN_A, FN_A, 16, 20000, 640000, 20000, 20000, 0}};
    put_rows(&j.s, rows, 1);
    sess_load(&j.s);
    assert_true(j.s.m->n_pc_samples > 0);
    assert_int_equal(gpufl__insights_compute(&j.in, j.s.m), 0);
    size_t n;
    assert_null(find(&j, "dominant_stall", &n));
    expect_text(skip_why(&j, "dominant_stall"), "SASS-instrumented kernels (engine Deep)");
    char *text = report_text(j.s.m, GPUFL_REPORT_TEXT);
    expect_text(text, "the samples are of the instrumented kernels");
    free(text);
    unjudge(&j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sass_metrics_load),
        cmocka_unit_test(test_sass_metrics_malformed),
        cmocka_unit_test(test_sass_metrics_profile),
        cmocka_unit_test(test_sass_metrics_warp_divergence),
        cmocka_unit_test(test_sass_metrics_uncoalesced_global),
        cmocka_unit_test(test_sass_metrics_skips),
        cmocka_unit_test(test_sass_metrics_report_unknown),
        cmocka_unit_test(test_sass_metrics_deep_samples_not_judged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
