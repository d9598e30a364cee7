// SPDX-License-Identifier: Apache-2.0
/*
 * test_range_metrics.c - the analysis of the range profiler records:
 * loading range_profiler, range_metrics and range_profiler_stats (malformed
 * lines skipped and counted, unknown metric names kept) and the hardware
 * counters section of the report, with the figures per scope path derived
 * across metric groups. Sessions are written to scratch directories
 * (test_util.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpufl/gpufl.h>

#include "analysis/model.h"
#include "analysis/report.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gpufl__model_t *load_lines(const char *name, const char *const *lines, size_t n) {
    char path[1100];
    const char *dir = tu_scratch_dir("range_metrics", name);
    snprintf(path, sizeof path, "%s/device.log", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"type\":\"header\",\"v\":1,\"format\":\"gpufl-log\",\"file\":\"device\",\"segment\":0,"
          "\"session_id\":\"20261125T000000.000Z-3-0003\",\"app_name\":\"t\",\"pid\":3,"
          "\"hostname\":\"h\",\"epoch_ns\":\"1000\",\"epoch_unix_us\":1,\"clock\":\"monotonic\","
          "\"gpufl_version\":\"0.1.0\"}\n"
          "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"step\"]}\n",
          f);
    for (size_t i = 0; i < n; i++) fprintf(f, "%s\n", lines[i]);
    assert_int_equal(fclose(f), 0);
    gpufl__model_t *m = NULL;
    int rc = gpufl__model_load(&m, dir);
    if (rc) fail_msg("load %s: %d %s", dir, rc, gpufl_last_error());
    return m;
}

static int has_warning(const gpufl__model_t *m, const char *text) {
    for (size_t i = 0; i < m->n_warnings; i++)
        if (strstr(m->warnings[i].message, text)) return 1;
    return 0;
}

/* m's report in fmt, or one section of the text report. */
static char *render(const gpufl__model_t *m, gpufl_report_format_t fmt, const char *section) {
    gpufl__report_t r;
    assert_int_equal(gpufl__report_build(m, &r), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    int rc = section ? gpufl__report_render_text_section(&r, section, out)
                     : gpufl__report_render(&r, fmt, out);
    assert_int_equal(rc, 0);
    assert_int_equal(fclose(out), 0);
    gpufl__report_free(&r);
    return text;
}

#define RM "{\"type\":\"range_metrics\",\"v\":1,"
#define RP "{\"type\":\"range_profiler\",\"v\":1,\"ts_ns\":1,\"context\":1,"

static void test_range_malformed(void **state) {
    (void)state;
    static const struct {
        const char *line, *why;
    } bad[] = {
        {RM "\"start_ns\":1,\"context\":1,\"scope\":1,\"path\":1,\"metrics\":{}}",
         "no integer ts_ns"},
        {RM "\"ts_ns\":5,\"context\":1,\"scope\":1,\"path\":1,\"metrics\":{}}",
         "no integer start_ns"},
        {RM "\"ts_ns\":5,\"start_ns\":1,\"context\":-1,\"scope\":1,\"path\":1,\"metrics\":{}}",
         "no integer context"},
        {RM "\"ts_ns\":5,\"start_ns\":1,\"context\":1,\"scope\":\"x\",\"path\":1,\"metrics\":{}}",
         "no integer scope"},
        {RM "\"ts_ns\":5,\"start_ns\":1,\"context\":1,\"scope\":1,\"path\":0,\"metrics\":{}}",
         "path is 0"},
        {RM "\"ts_ns\":1,\"start_ns\":5,\"context\":1,\"scope\":1,\"path\":1,\"metrics\":{}}",
         "ts_ns before start_ns"},
        {RM "\"ts_ns\":5,\"start_ns\":1,\"context\":1,\"scope\":1,\"path\":1,\"metrics\":[1]}",
         "metrics is not an object"},
        {RM "\"ts_ns\":5,\"start_ns\":1,\"context\":1,\"scope\":1,\"path\":1,"
            "\"metrics\":{\"dram__bytes_read.sum\":\"lots\"}}",
         "metric dram__bytes_read.sum is not a number"},
        {"{\"type\":\"range_profiler\",\"v\":1,\"ts_ns\":1,\"context\":1,\"left_out\":[]}",
         "left_out is not an object"},
        {"{\"type\":\"range_profiler\",\"v\":1,\"ts_ns\":1,\"context\":1,\"metrics\":[3]}",
         "metrics[0] is not a string"},
        {RP "\"groups\":{}}", "range_profiler: groups is not an array"},
        {RP "\"groups\":[[\"a\"],\"b\"]}", "range_profiler: groups[1] is not an array"},
        {RP "\"groups\":[[\"a\",3]]}", "range_profiler: groups[0][1] is not a string"},
        {RP "\"sm_throughput_of\":\"a\"}", "range_profiler: sm_throughput_of is not an array"},
        {RP "\"sm_throughput_of\":[\"a\",null]}",
         "range_profiler: sm_throughput_of[1] is not a string"},
        {RM "\"ts_ns\":5,\"start_ns\":1,\"context\":1,\"scope\":1,\"path\":1,\"metrics\":{},"
            "\"group\":-1}",
         "range_metrics: group is not an integer >= 0"},
        {RM "\"ts_ns\":5,\"start_ns\":1,\"context\":1,\"scope\":1,\"path\":1,\"metrics\":{},"
            "\"group\":1.5}",
         "range_metrics: group is not an integer >= 0"},
    };
    enum { N_BAD = sizeof bad / sizeof bad[0] };
    const char *lines[N_BAD + 1];
    for (size_t i = 0; i < N_BAD; i++) lines[i] = bad[i].line;
    lines[N_BAD] = RM "\"ts_ns\":9,\"start_ns\":2,\"context\":1,\"scope\":7,\"path\":1,"
                      "\"metrics\":{\"gpu__time_duration.sum\":4000.0,\"my__metric.sum\":12.5,"
                      "\"sm__warps_active.avg.pct_of_peak_sustained_active\":null}}";
    gpufl__model_t *m = load_lines("malformed", lines, N_BAD + 1);
    assert_int_equal(m->read.corrupt_lines, N_BAD);
    for (size_t i = 0; i < N_BAD; i++)
        if (!has_warning(m, bad[i].why)) fail_msg("no warning \"%s\" (line %zu)", bad[i].why, i);
    assert_int_equal(m->n_range_contexts, 0);
    assert_int_equal(m->n_ranges, 1);
    assert_string_equal(m->ranges[0].path, "step");
    assert_int_equal(m->ranges[0].scope, 7);
    assert_int_equal(m->ranges[0].tid, GPUFL_MODEL_UNKNOWN);

    /* The good line's section: the unknown metric by name, the null as "-",
     * and no stats record said. */
    char *text = render(m, GPUFL_REPORT_TEXT, "hardware_counters");
    assert_non_null(strstr(text, "\nHardware counters per scope\n"));
    assert_non_null(strstr(text, "step (scope 7): my__metric.sum=12.5\n"));
    assert_non_null(strstr(text, "unknown: no range_profiler_stats record"));
    assert_non_null(strstr(text, "  step    4.00 µs          -          -    -"));
    free(text);
    gpufl__model_destroy(m);
}

/* No range_metrics records: the section is not shown, in text or JSON. */
static void test_range_not_shown(void **state) {
    (void)state;
    const char *lines[] = {
        "{\"type\":\"range_profiler\",\"v\":1,\"ts_ns\":1,\"context\":1,\"device\":0,"
        "\"error\":\"device 0 does not support range profiling (vGPU disabled)\"}"};
    gpufl__model_t *m = load_lines("not_shown", lines, 1);
    assert_int_equal(m->n_range_contexts, 1);
    assert_string_equal(m->range_contexts[0].error,
                        "device 0 does not support range profiling (vGPU disabled)");
    char *text = render(m, GPUFL_REPORT_JSON, NULL);
    assert_non_null(strstr(text, "\"hardware_counters\": null"));
    assert_null(strstr(text, "Hardware counters"));
    free(text);
    gpufl__model_destroy(m);
}

/* ---------------------------------------------------------------------- */
/* Metric groups: figures per scope path                                    */
/* ---------------------------------------------------------------------- */

#define T        "\"gpu__time_duration.sum\""
#define HIT      "\"lts__t_sectors_lookup_hit.sum\""
#define MISS     "\"lts__t_sectors_lookup_miss.sum\""
#define HIT_RATE "\"lts__t_sector_hit_rate.pct\""
#define SECTORS  "\"lts__t_sectors.sum\""
#define SM       "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\""
#define ALU      "\"sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed\""
#define LSU      "\"sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed\""
#define FMA      "\"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed\""

/* A range_metrics line of context 1 (group "" for none). */
#define RANGE(start, path, group, metrics)                                                         \
    RM "\"ts_ns\":1000000,\"start_ns\":" #start ",\"context\":1,\"scope\":" #start                 \
       ",\"path\":" #path group ",\"metrics\":{" metrics "}}"
#define G(n) ",\"group\":" #n

/* A range_profiler_stats line of one context, nothing lost, with counts
 * (each followed by a comma) that differ between tests. */
#define RP_STATS(counts)                                                                           \
    "{\"type\":\"range_profiler_stats\",\"v\":1,\"ts_ns\":2000000,\"contexts\":1," counts          \
    "\"decodes\":1,\"nested\":0,\"concurrent\":0,\"no_context\":0,\"unprofiled\":0,"               \
    "\"over_capacity\":0,\"dropped\":0,\"lost\":0,\"open_at_end\":0,\"errors\":0,\"decode_ms\":1." \
    "0}"

/* The report's hardware_counters member, parsed (*doc to free). */
static json_t *counters_json(const gpufl__model_t *m, json_t **doc) {
    char *text = render(m, GPUFL_REPORT_JSON, NULL);
    json_error_t err;
    *doc = json_loads(text, 0, &err);
    if (!*doc) fail_msg("report JSON: %s", err.text);
    free(text);
    json_t *hc = json_object_get(*doc, "hardware_counters");
    assert_true(json_is_object(hc));
    return hc;
}

/* The scopes[] entry of a path. */
static json_t *scope_of(json_t *hc, const char *path) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(hc, "scopes"), i, e) {
        if (strcmp(json_string_value(json_object_get(e, "scope_path")), path) == 0) return e;
    }
    fail_msg("no scope %s", path);
    return NULL;
}

static double number(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) fail_msg("%s is not a number", key);
    return json_number_value(v);
}

/* Hits in group 0, misses in group 1, on different instances of one path:
 * the L2 hit rate from their rates per GPU time; a range of time 0 does
 * not count, one of a group the context does not have is a bad line. */
/* With the L2 sector count in a group, the hit rate is lookup hits over
 * sectors (Nsight Compute's lts__t_sector_hit_rate), not over hits and
 * misses: a miss can count more than once. */
static void test_range_groups_l2_hit_of_sectors(void **state) {
    (void)state;
    const char *lines[] = {
        RP "\"chip\":\"GH100\",\"metrics\":[" T "," HIT "],\"groups\":[[" T "," HIT "],[" T
           "," SECTORS "," MISS "]]}",
        RANGE(1, 1, G(0), T ":1000," HIT ":900"),
        RANGE(2, 1, G(1), T ":2000," SECTORS ":3000," MISS ":200"),
    };
    gpufl__model_t *m = load_lines("groups_sectors", lines, sizeof lines / sizeof lines[0]);
    json_t *doc, *hc = counters_json(m, &doc);
    /* hits 0.9 a ns, sectors 1.5 a ns */
    assert_float_equal(number(scope_of(hc, "step"), "l2_hit_pct"), 60, 1e-9);
    json_decref(doc);
    gpufl__model_destroy(m);
}

static void test_range_groups_l2_hit(void **state) {
    (void)state;
    const char *lines[] = {
        RP "\"chip\":\"GH100\",\"metrics\":[" T "," HIT "],\"groups\":[[" T "," HIT "],[" T "," MISS
           "]]}",
        "{\"type\":\"dict\",\"v\":1,\"id\":[2],\"str\":[\"eval\"]}",
        RANGE(1, 1, G(0), T ":1000," HIT ":600"),
        RANGE(2, 1, G(1), T ":3000," MISS ":600"),
        RANGE(3, 1, "", T ":1000," HIT ":400"), /* no group: 0 */
        RANGE(4, 2, G(0), T ":500," HIT ":10"),
        RANGE(5, 1, G(1), T ":0," MISS ":999"),
        RANGE(6, 1, G(2), T ":1000"),
        RP_STATS("\"ranges_pushed\":6,\"ranges\":6,\"settling\":0,"),
    };
    gpufl__model_t *m = load_lines("groups_l2", lines, sizeof lines / sizeof lines[0]);
    assert_int_equal(m->read.corrupt_lines, 1);
    assert_true(has_warning(m, "range_metrics: group 2 is past context 1's last group (1)"));
    assert_int_equal(m->n_range_contexts, 1);
    assert_int_equal(m->range_contexts[0].n_groups, 2);
    assert_int_equal(m->n_ranges, 5);
    assert_int_equal(m->ranges[1].group, 1);
    assert_int_equal(m->ranges[2].group, 0);

    /* hits 1000 over 2000 ns, misses 600 over 3000 ns: 0.5 / (0.5 + 0.2) */
    json_t *doc, *hc = counters_json(m, &doc);
    json_t *step = scope_of(hc, "step"), *eval = scope_of(hc, "eval");
    assert_float_equal(number(step, "l2_hit_pct"), 100 * 0.5 / 0.7, 1e-9);
    assert_int_equal(number(step, "ranges"), 4);
    assert_int_equal(number(step, "groups_seen"), 2);
    assert_int_equal(number(step, "groups"), 2);
    assert_true(json_is_null(json_object_get(step, "sm_throughput_pct")));
    assert_true(json_is_null(json_object_get(eval, "l2_hit_pct"))); /* no misses seen */
    assert_int_equal(number(eval, "groups_seen"), 1);
    assert_ptr_equal(json_array_get(json_object_get(hc, "scopes"), 0), step); /* by GPU time */
    assert_int_equal(json_array_size(json_object_get(hc, "ranges")), 3);
    assert_int_equal(number(hc, "ranges_other_groups"), 2);
    assert_int_equal(number(hc, "more_scopes"), 0);
    assert_int_equal(json_array_size(json_object_get(hc, "groups")), 2);
    json_decref(doc);

    /* The range table holds group 0 only and says so. */
    char *text = render(m, GPUFL_REPORT_TEXT, "hardware_counters");
    assert_non_null(strstr(text, "One row per profiled scope of metric group 0, by start time (3 "
                                 "of 3); values over the range's elapsed time, gaps between its "
                                 "kernels included. Ranges of the other groups (2) are not "
                                 "listed: they count in the figures per scope path.\n"));
    assert_non_null(strstr(text, "  metric groups      2, one per collection: group 0, and the "
                                 "others in turn as the switch budget allows; the metrics "
                                 "above are group 0; 1: gpu__time_duration.sum, "
                                 "lts__t_sectors_lookup_miss.sum\n"));
    assert_non_null(strstr(text, "so they assume its instances do similar work."));
    /* A log that marks settling ranges, none here: no caveat. */
    assert_null(strstr(text, "This log does not mark settling ranges"));
    assert_non_null(
        strstr(text, "  scope  ranges  settling  groups  SM throughput  SM limiter  L2 hit\n"
                     "  step        4       0/0     2/2              -  -            71.4%\n"
                     "  eval        1       0/0     1/2              -  -                -\n"));
    free(text);
    text = render(m, GPUFL_REPORT_MARKDOWN, NULL);
    assert_non_null(strstr(text, "### Per scope path\n"));
    assert_non_null(strstr(text, "| step | 4 | 0/0 | 2/2 | - | - | 71.4% |\n"));
    free(text);
    text = render(m, GPUFL_REPORT_HTML, NULL);
    assert_non_null(strstr(text, "<h3>Per scope path</h3>"));
    assert_non_null(strstr(text, "<td>step</td><td class=\"r\">4</td><td class=\"r\">0/0</td>"
                                 "<td class=\"r\">2/2</td>"));
    free(text);
    gpufl__model_destroy(m);
}

/* SM throughput from the metrics it is the maximum of, spread over three
 * groups; unknown when one of them was never seen; measured when
 * sm__throughput itself was. */
static void test_range_groups_sm_throughput(void **state) {
    (void)state;
    const char *lines[] = {
        RP "\"chip\":\"GH100\",\"metrics\":[" T "," ALU "],\"groups\":[[" T "," ALU "],[" T "," LSU
           "],[" T "," FMA "]],\"sm_throughput_of\":[" ALU "," LSU "," FMA "]}",
        "{\"type\":\"dict\",\"v\":1,\"id\":[2,3],\"str\":[\"eval\",\"fwd\"]}",
        /* step: ALU (50·1000 + 10·3000) / 4000 = 20, LSU 30 (the null and the
         * time-0 range left out), FMA 25 */
        RANGE(1, 1, G(0), T ":1000," ALU ":50"),
        RANGE(2, 1, G(0), T ":3000," ALU ":10"),
        RANGE(3, 1, G(1), T ":1000," LSU ":40"),
        RANGE(4, 1, G(1), T ":1000," LSU ":20"),
        RANGE(5, 1, G(1), T ":2000," LSU ":null"),
        RANGE(6, 1, G(1), T ":0," LSU ":100"),
        RANGE(7, 1, G(2), T ":2000," FMA ":25"),
        /* eval: FMA never seen */
        RANGE(8, 2, G(0), T ":1000," ALU ":90"),
        RANGE(9, 2, G(1), T ":1000," LSU ":10"),
        /* fwd: sm__throughput measured, (70·1000 + 40·3000) / 4000 */
        RANGE(10, 3, G(0), T ":1000," ALU ":10," SM ":70"),
        RANGE(11, 3, G(0), T ":3000," ALU ":10," SM ":40"),
        RANGE(12, 3, G(1), T ":1000," LSU ":99"),
        RANGE(13, 3, G(2), T ":1000," FMA ":99"),
    };
    gpufl__model_t *m = load_lines("groups_sm", lines, sizeof lines / sizeof lines[0]);
    assert_int_equal(m->read.corrupt_lines, 0);
    json_t *doc, *hc = counters_json(m, &doc);
    assert_int_equal(json_array_size(json_object_get(hc, "sm_throughput_of")), 3);
    json_t *step = scope_of(hc, "step"), *eval = scope_of(hc, "eval"), *fwd = scope_of(hc, "fwd");
    assert_float_equal(number(step, "sm_throughput_pct"), 30, 1e-9);
    assert_string_equal(json_string_value(json_object_get(step, "sm_throughput_limiter")),
                        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed");
    assert_int_equal(number(step, "groups_seen"), 3);
    assert_true(json_is_null(json_object_get(eval, "sm_throughput_pct")));
    assert_true(json_is_null(json_object_get(eval, "sm_throughput_limiter")));
    assert_float_equal(number(fwd, "sm_throughput_pct"), 47.5, 1e-9);
    assert_true(json_is_null(json_object_get(fwd, "sm_throughput_limiter")));
    json_decref(doc);

    char *text = render(m, GPUFL_REPORT_TEXT, "hardware_counters");
    assert_non_null(strstr(text, "  SM throughput of   the largest of "
                                 "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed, "));
    assert_non_null(
        strstr(text, "  step        7       0/0     3/3          30.0%  inst_executed_pipe_lsu"));
    assert_non_null(strstr(text, "  fwd         4       0/0     3/3          47.5%  -"));
    assert_non_null(strstr(text, "  eval        2       0/0     2/3              -  -"));
    free(text);
    gpufl__model_destroy(m);
}

/* A log from before metric groups: one group, every range in the table,
 * the figures per path from the one group. */
static void test_range_groups_old_log(void **state) {
    (void)state;
    const char *lines[] = {
        RP "\"chip\":\"GH100\",\"metrics\":[" T "," HIT "," MISS "," HIT_RATE "]}",
        "{\"type\":\"dict\",\"v\":1,\"id\":[2],\"str\":[\"eval\"]}",
        RANGE(1, 1, "", T ":1000," HIT ":300," MISS ":100"),
        RANGE(2, 1, "", T ":1000," HIT ":100," MISS ":300"),
        RANGE(3, 2, "", T ":1000," HIT ":1," MISS ":0," HIT_RATE ":80"),
        RANGE(4, 2, "", T ":1000," HIT ":1," MISS ":0," HIT_RATE ":40"),
        RP_STATS("\"ranges_pushed\":4,\"ranges\":4,"), /* no settling: an older gpufl */
    };
    gpufl__model_t *m = load_lines("groups_old", lines, sizeof lines / sizeof lines[0]);
    assert_int_equal(m->read.corrupt_lines, 0);
    assert_int_equal(m->range_contexts[0].n_groups, 1);
    assert_null(m->range_contexts[0].groups);
    json_t *doc, *hc = counters_json(m, &doc);
    json_t *groups = json_object_get(hc, "groups");
    assert_int_equal(json_array_size(groups), 1);
    assert_true(json_equal(json_array_get(groups, 0), json_object_get(hc, "metrics")));
    assert_int_equal(json_array_size(json_object_get(hc, "sm_throughput_of")), 0);
    assert_int_equal(json_array_size(json_object_get(hc, "ranges")), 4);
    assert_int_equal(number(hc, "ranges_other_groups"), 0);
    assert_float_equal(number(scope_of(hc, "step"), "l2_hit_pct"), 50, 1e-9);
    assert_float_equal(number(scope_of(hc, "eval"), "l2_hit_pct"), 60, 1e-9); /* measured */
    json_decref(doc);
    char *text = render(m, GPUFL_REPORT_TEXT, "hardware_counters");
    assert_non_null(strstr(text, "One row per profiled scope, by start time (4 of 4); values over "
                                 "the range's elapsed time, gaps between its kernels included. "
                                 "This log does not mark"));
    assert_null(strstr(text, " * settling")); /* a log from before settling marks none */
    assert_null(strstr(text, "metric groups"));
    assert_null(strstr(text, "SM throughput of"));
    assert_non_null(
        strstr(text, "  step        2       0/0     1/1              -  -            50.0%\n"));
    /* Its stats record has no settling count: the caveat that replaces the marks. */
    assert_non_null(strstr(text, "This log does not mark settling ranges (an older gpufl)"));
    free(text);
    gpufl__model_destroy(m);
}

/* More scope paths than the table lists: the most GPU time first. */
static void test_range_groups_paths_capped(void **state) {
    (void)state;
    enum { N_PATHS = GPUFL_REPORT_RANGE_ROWS_MAX + 10 };
    static char dict[4096], ranges[N_PATHS][300];
    const char *lines[N_PATHS + 1];
    size_t k = 0;
    k += (size_t)snprintf(dict + k, sizeof dict - k, "{\"type\":\"dict\",\"v\":1,\"id\":[");
    for (int i = 0; i < N_PATHS; i++)
        k += (size_t)snprintf(dict + k, sizeof dict - k, "%s%d", i ? "," : "", i + 2);
    k += (size_t)snprintf(dict + k, sizeof dict - k, "],\"str\":[");
    for (int i = 0; i < N_PATHS; i++)
        k += (size_t)snprintf(dict + k, sizeof dict - k, "%s\"p%d\"", i ? "," : "", i + 2);
    snprintf(dict + k, sizeof dict - k, "]}");
    lines[0] = dict;
    for (int i = 0; i < N_PATHS; i++) {
        snprintf(ranges[i], sizeof ranges[i],
                 RM "\"ts_ns\":1000000,\"start_ns\":%d,\"context\":1,\"scope\":%d,\"path\":%d,"
                    "\"metrics\":{" T ":%d}}",
                 i + 1, i + 1, i + 2, (i + 1) * 1000);
        lines[i + 1] = ranges[i];
    }
    gpufl__model_t *m = load_lines("groups_capped", lines, N_PATHS + 1);
    assert_int_equal(m->n_ranges, N_PATHS);
    json_t *doc, *hc = counters_json(m, &doc);
    json_t *scopes = json_object_get(hc, "scopes");
    assert_int_equal(json_array_size(scopes), GPUFL_REPORT_RANGE_ROWS_MAX);
    assert_int_equal(number(hc, "more_scopes"), 10);
    assert_string_equal(json_string_value(json_object_get(json_array_get(scopes, 0), "scope_path")),
                        "p61");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(scopes, 49), "scope_path")), "p12");
    json_decref(doc);
    char *text = render(m, GPUFL_REPORT_TEXT, "hardware_counters");
    assert_non_null(strstr(text, "One row per scope path, by GPU time (50 of 60)"));
    free(text);
    gpufl__model_destroy(m);
}

/* REVIEW: a path whose ranges saw the L2 sector count but never the lookup
 * hits (here it ran only in group 1) has no L2 hit rate: the report must
 * say unknown, not 100 % (fmin(100, NAN) is 100). */
static void test_range_l2_hit_without_hits(void **state) {
    (void)state;
    const char *lines[] = {
        RP "\"chip\":\"GH100\",\"metrics\":[" T "," HIT "],\"groups\":[[" T "," HIT "],[" T
           "," SECTORS "," MISS "]]}",
        RANGE(1, 1, G(1), T ":2000," SECTORS ":3000," MISS ":200"),
    };
    gpufl__model_t *m = load_lines("l2_no_hits", lines, sizeof lines / sizeof lines[0]);
    json_t *doc, *hc = counters_json(m, &doc);
    json_t *l2 = json_object_get(scope_of(hc, "step"), "l2_hit_pct");
    int unknown = json_is_null(l2);
    double v = json_number_value(l2);
    json_decref(doc);
    gpufl__model_destroy(m);
    if (!unknown) fail_msg("l2_hit_pct is %g with no lookup hit seen", v); /* fails: 100 */
}

/* Ranges marked settling (the first after the profiler was configured):
 * marked in the range table and the JSON, left out of a path's figures
 * where their group has others, kept where it has none; a settling that
 * is not a boolean makes the line bad. */
#define SETTLING ",\"settling\":true"
static void test_range_settling(void **state) {
    (void)state;
    const char *lines[] = {
        RP "\"chip\":\"GH100\",\"metrics\":[" T "," HIT "," SECTORS "],\"groups\":[[" T "," HIT
           "," SECTORS "],[" T "," MISS "]]}",
        "{\"type\":\"dict\",\"v\":1,\"id\":[2,3],\"str\":[\"eval\",\"fwd\"]}",
        /* fwd: a settled group-0 range (no sectors: the hit rate from misses) and a
         * settling group-1 one, 0.5 hits and 0.25 misses a ns */
        RANGE(7, 3, G(0), T ":1000," HIT ":500"),
        RANGE(8, 3, G(1) SETTLING, T ":1000," MISS ":250"),
        /* step, group 0: the settling range would read 90 %, the others 50 % */
        RANGE(1, 1, G(0) SETTLING, T ":1000," HIT ":900," SECTORS ":1000"),
        RANGE(2, 1, G(0), T ":1000," HIT ":500," SECTORS ":1000"),
        RANGE(3, 1, G(0), T ":3000," HIT ":1500," SECTORS ":3000"),
        /* eval: every range of group 0 settling, so they count */
        RANGE(4, 2, G(0) SETTLING, T ":1000," HIT ":200," SECTORS ":1000"),
        RANGE(5, 2, G(1) SETTLING, T ":1000," MISS ":5"),
        RANGE(6, 1, G(0) ",\"settling\":1", T ":1000," HIT ":1," SECTORS ":1"),
    };
    gpufl__model_t *m = load_lines("settling", lines, sizeof lines / sizeof lines[0]);
    assert_int_equal(m->read.corrupt_lines, 1);
    assert_true(has_warning(m, "range_metrics: settling is not a boolean"));
    assert_int_equal(m->n_ranges, 7);
    assert_false(m->ranges[0].settling);
    assert_true(m->ranges[1].settling);
    assert_true(m->ranges[2].settling);
    assert_false(m->ranges[3].settling);

    json_t *doc, *hc = counters_json(m, &doc);
    json_t *step = scope_of(hc, "step"), *eval = scope_of(hc, "eval");
    assert_float_equal(number(step, "l2_hit_pct"), 50, 1e-9);
    assert_int_equal(number(step, "settling_left_out"), 1);
    assert_int_equal(number(step, "ranges"), 3);
    assert_float_equal(number(eval, "l2_hit_pct"), 20, 1e-9);
    assert_int_equal(number(eval, "settling_left_out"), 0);
    assert_int_equal(number(eval, "settling_used"), 2);
    assert_int_equal(number(step, "settling_used"), 0);
    /* Set aside per group: fwd's settling range of group 1 is its group's
     * only one and counts, though group 0 has a settled range. */
    json_t *fwd = scope_of(hc, "fwd");
    assert_int_equal(number(fwd, "settling_left_out"), 0);
    assert_int_equal(number(fwd, "settling_used"), 1);
    assert_float_equal(number(fwd, "l2_hit_pct"), 100 * 0.5 / (0.5 + 0.25), 1e-9);
    json_t *ranges = json_object_get(hc, "ranges");
    assert_int_equal(json_array_size(ranges), 5); /* group 0's, by start time */
    assert_true(json_is_true(json_object_get(json_array_get(ranges, 0), "settling")));
    assert_true(json_is_false(json_object_get(json_array_get(ranges, 1), "settling")));
    json_decref(doc);

    char *text = render(m, GPUFL_REPORT_TEXT, "hardware_counters");
    assert_non_null(strstr(text, " * settling (4 of all ranges): one of the first ranges on its "
                                 "context after the profiler was configured"));
    assert_non_null(strstr(text, "  step *  "));
    assert_non_null(strstr(text, "  eval *  "));
    assert_non_null(strstr(text, "less the settling ones of a group that has settled ones"));
    assert_non_null(strstr(text, "  step         3       1/0     1/2"));
    assert_non_null(strstr(text, "  eval *       2       0/2     2/2"));
    assert_null(strstr(text, "This log does not mark settling ranges"));
    free(text);
    gpufl__model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_settling),
        cmocka_unit_test(test_range_malformed),
        cmocka_unit_test(test_range_not_shown),
        cmocka_unit_test(test_range_groups_l2_hit),
        cmocka_unit_test(test_range_groups_l2_hit_of_sectors),
        cmocka_unit_test(test_range_groups_sm_throughput),
        cmocka_unit_test(test_range_groups_old_log),
        cmocka_unit_test(test_range_groups_paths_capped),
        cmocka_unit_test(test_range_l2_hit_without_hits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
