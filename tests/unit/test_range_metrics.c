/*
 * test_range_metrics.c - the analysis of the range profiler records:
 * loading range_profiler, range_metrics and range_profiler_stats (malformed
 * lines skipped and counted, unknown metric names kept) and the hardware
 * counters section of the report. Sessions are written to scratch
 * directories (test_util.h).
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

static gpufl_model_t *load_lines(const char *name, const char *const *lines, size_t n) {
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
    gpufl_model_t *m = NULL;
    int rc = gpufl__model_load(dir, &m);
    if (rc) fail_msg("load %s: %d %s", dir, rc, gpufl_last_error());
    return m;
}

static int has_warning(const gpufl_model_t *m, const char *text) {
    for (size_t i = 0; i < m->n_warnings; i++)
        if (strstr(m->warnings[i].message, text)) return 1;
    return 0;
}

/* m's report in fmt, or one section of the text report. */
static char *render(const gpufl_model_t *m, gpufl_report_format_t fmt, const char *section) {
    gpufl_report_t r;
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
    };
    enum { N_BAD = sizeof bad / sizeof bad[0] };
    const char *lines[N_BAD + 1];
    for (size_t i = 0; i < N_BAD; i++) lines[i] = bad[i].line;
    lines[N_BAD] = RM "\"ts_ns\":9,\"start_ns\":2,\"context\":1,\"scope\":7,\"path\":1,"
                      "\"metrics\":{\"gpu__time_duration.sum\":4000.0,\"my__metric.sum\":12.5,"
                      "\"sm__warps_active.avg.pct_of_peak_sustained_active\":null}}";
    gpufl_model_t *m = load_lines("malformed", lines, N_BAD + 1);
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
    gpufl_model_t *m = load_lines("not_shown", lines, 1);
    assert_int_equal(m->n_range_contexts, 1);
    assert_string_equal(m->range_contexts[0].error,
                        "device 0 does not support range profiling (vGPU disabled)");
    char *text = render(m, GPUFL_REPORT_JSON, NULL);
    assert_non_null(strstr(text, "\"hardware_counters\": null"));
    assert_null(strstr(text, "Hardware counters"));
    free(text);
    gpufl__model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_malformed),
        cmocka_unit_test(test_range_not_shown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
