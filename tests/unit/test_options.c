// SPDX-License-Identifier: Apache-2.0
/*
 * test_options.c - option resolution: defaults, config file, GPUFL_* environment
 * and code layers with their recorded sources, GPUFL_DISABLED, bad input of each
 * layer, old struct sizes, deprecated fields, and the bool/engine parsers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw, mkdtemp, setenv */
#endif
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpufl/gpufl.h>

#include "core/options.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* Fixture: a clean environment, a temporary directory, a captured log     */
/* ---------------------------------------------------------------------- */

/* Every variable the resolver may read; cleared before and after each test. */
static const char *const env_vars[] = {
    "GPUFL_DISABLED",
    "GPUFL_CONFIG_FILE",
    "GPUFL_ENABLED",
    "GPUFL_APP_NAME",
    "GPUFL_LOG_PATH",
    "GPUFL_BACKEND_URL",
    "GPUFL_API_KEY",
    "GPUFL_API_PATH",
    "GPUFL_REMOTE_UPLOAD",
    "GPUFL_ENABLE_STACK_TRACE",
    "GPUFL_ENABLE_SOURCE_COLLECTION",
    "GPUFL_ENABLE_EXTERNAL_CORRELATION",
    "GPUFL_ENABLE_SYNCHRONIZATION",
    "GPUFL_ENABLE_MEMORY_TRACKING",
    "GPUFL_ENABLE_CUDA_GRAPHS_TRACKING",
    "GPUFL_SYSTEM_SAMPLE_RATE_MS",
    "GPUFL_KERNEL_SAMPLE_RATE_MS",
    "GPUFL_CONTINUOUS_SYSTEM_SAMPLING",
    "GPUFL_BACKEND",
    "GPUFL_PROFILING_ENGINE",
    "GPUFL_FLUSH_LOGS_ALWAYS",
    "GPUFL_ENABLE_DEBUG_OUTPUT",
    "GPUFL_RING_CAPACITY_RECORDS",
    "GPUFL_MEMORY_CAP_BYTES",
    "GPUFL_LOG_ROTATE_BYTES",
    "GPUFL_FLUSH_INTERVAL_MS",
    "GPUFL_PC_SAMPLING_TRACE",
};

static void clear_env(void) {
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) unsetenv(env_vars[i]);
}

/* Messages that reached the log hook during the current test. */
static struct {
    int warnings;
    int others;
    int multiline;
    char text[16384];
} captured;

static void capture_hook(gpufl_log_level_t level, const char *message, void *user) {
    size_t used = strlen(captured.text);
    (void)user;
    if (level == GPUFL_LOG_WARN)
        captured.warnings++;
    else
        captured.others++;
    if (strchr(message, '\n')) captured.multiline++;
    snprintf(captured.text + used, sizeof captured.text - used, "%s\n", message);
}

static int logged(const char *needle) { return strstr(captured.text, needle) != NULL; }

static char tmpdir[64];

static int setup(void **state) {
    (void)state;
    clear_env();
    memset(&captured, 0, sizeof captured);
    gpufl_set_log_hook(capture_hook, NULL);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gpufl_options_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    chmod(path, 0700);
    return remove(path);
}

static int teardown(void **state) {
    (void)state;
    clear_env();
    gpufl_set_log_hook(NULL, NULL);
    return nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes content to <tmpdir>/name and returns the full path (static buffer). */
static const char *write_config(const char *name, const char *content) {
    static char path[256];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(content, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* ---------------------------------------------------------------------- */
/* Reading resolved options back through gpufl__settings_get              */
/* ---------------------------------------------------------------------- */

static int find_option(const gpufl__settings_t *s, const char *name, gpufl__option_source_t *src,
                       const char **str, int64_t *num) {
    for (int i = 0; i < GPUFL_OPTION_COUNT; i++) {
        const char *n;
        gpufl__settings_get(s, i, &n, src, str, num);
        if (strcmp(n, name) == 0) return i;
    }
    fail_msg("option '%s' not found by gpufl__settings_get", name);
    return -1;
}

/* A string-valued option (strings, engine and backend names). */
#define expect_str(s, name, value, source) expect_str_at(__LINE__, s, name, value, source)
static void expect_str_at(int line, const gpufl__settings_t *s, const char *name, const char *value,
                          gpufl__option_source_t source) {
    gpufl__option_source_t src;
    const char *str;
    int64_t num;
    find_option(s, name, &src, &str, &num);
    if (!str) fail_msg("line %d: option '%s' has no string value", line, name);
    if (strcmp(str, value) != 0)
        fail_msg("line %d: option '%s' is '%s', expected '%s'", line, name, str, value);
    if (src != source)
        fail_msg("line %d: option '%s' comes from %s, expected %s", line, name,
                 gpufl__option_source_name(src), gpufl__option_source_name(source));
}

/* An integer-valued option (bools, ints, sizes). */
#define expect_num(s, name, value, source) expect_num_at(__LINE__, s, name, value, source)
static void expect_num_at(int line, const gpufl__settings_t *s, const char *name, int64_t value,
                          gpufl__option_source_t source) {
    gpufl__option_source_t src;
    const char *str;
    int64_t num;
    find_option(s, name, &src, &str, &num);
    if (str) fail_msg("line %d: option '%s' has a string value '%s'", line, name, str);
    if (num != value)
        fail_msg("line %d: option '%s' is %lld, expected %lld", line, name, (long long)num,
                 (long long)value);
    if (src != source)
        fail_msg("line %d: option '%s' comes from %s, expected %s", line, name,
                 gpufl__option_source_name(src), gpufl__option_source_name(source));
}

#define expect_error_mentions(needle) expect_error_mentions_at(__LINE__, needle)
static void expect_error_mentions_at(int line, const char *needle) {
    const char *msg = gpufl_last_error();
    if (!strstr(msg, needle))
        fail_msg("line %d: last error '%s' does not mention '%s'", line, msg, needle);
}

/* Resolves opts and expects success. */
static void resolve_ok(const gpufl_options_t *opts, gpufl__settings_t *s) {
    int rc = gpufl__settings_resolve(s, opts);
    if (rc != 0) fail_msg("resolve failed with %d: %s", rc, gpufl_last_error());
}

/* Resolves opts, expects code, and checks that nothing is left to free. */
static void resolve_fails(const gpufl_options_t *opts, int code) {
    gpufl__settings_t s;
    memset(&s, 0xAB, sizeof s);
    int rc = gpufl__settings_resolve(&s, opts);
    if (rc == 0) gpufl__settings_fini(&s);
    assert_int_equal(rc, code);
    assert_null(s.app_name);
    assert_null(s.log_path);
    assert_null(s.api_key);
}

/* ---------------------------------------------------------------------- */
/* Defaults                                                                 */
/* ---------------------------------------------------------------------- */

static void expect_all_defaults(const gpufl__settings_t *s) {
    expect_str(s, "app_name", "gpufl", GPUFL_FROM_DEFAULT);
    expect_str(s, "log_path", "", GPUFL_FROM_DEFAULT);
    expect_str(s, "backend_url", "", GPUFL_FROM_DEFAULT);
    expect_str(s, "api_key", "", GPUFL_FROM_DEFAULT);
    expect_str(s, "api_path", "", GPUFL_FROM_DEFAULT);
    expect_num(s, "remote_upload", 0, GPUFL_FROM_DEFAULT);
    expect_num(s, "enable_stack_trace", 0, GPUFL_FROM_DEFAULT);
    expect_num(s, "enable_source_collection", 1, GPUFL_FROM_DEFAULT);
    expect_num(s, "enable_external_correlation", 1, GPUFL_FROM_DEFAULT);
    expect_num(s, "enable_synchronization", 1, GPUFL_FROM_DEFAULT);
    expect_num(s, "enable_memory_tracking", 0, GPUFL_FROM_DEFAULT);
    expect_num(s, "enable_cuda_graphs_tracking", 0, GPUFL_FROM_DEFAULT);
    expect_num(s, "system_sample_rate_ms", 0, GPUFL_FROM_DEFAULT);
    expect_num(s, "kernel_sample_rate_ms", 0, GPUFL_FROM_DEFAULT);
    expect_num(s, "continuous_system_sampling", 0, GPUFL_FROM_DEFAULT);
    expect_str(s, "backend", "Auto", GPUFL_FROM_DEFAULT);
    expect_str(s, "profiling_engine", "Monitor", GPUFL_FROM_DEFAULT);
    expect_str(s, "config_file", "", GPUFL_FROM_DEFAULT);
    expect_num(s, "flush_logs_always", 0, GPUFL_FROM_DEFAULT);
    expect_num(s, "enable_debug_output", 0, GPUFL_FROM_DEFAULT);
    expect_num(s, "enabled", 1, GPUFL_FROM_DEFAULT);
    expect_num(s, "ring_capacity_records", 8192, GPUFL_FROM_DEFAULT);
    expect_num(s, "log_rotate_bytes", INT64_C(64) << 20, GPUFL_FROM_DEFAULT);
    expect_num(s, "flush_interval_ms", 250, GPUFL_FROM_DEFAULT);
    expect_str(s, "pc_sampling_trace", "late", GPUFL_FROM_DEFAULT);

    assert_string_equal(s->app_name, "gpufl");
    assert_string_equal(s->log_path, "");
    assert_int_equal(s->backend, GPUFL_BACKEND_AUTO);
    assert_int_equal(s->profiling_engine, GPUFL_ENGINE_MONITOR);
    assert_int_equal(s->enabled, 1);
    assert_int_equal(s->disabled_by_env, 0);
}

static void test_defaults_match_spec(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    resolve_ok(&o, &s);
    expect_all_defaults(&s);
    assert_int_equal(captured.warnings, 0);
    gpufl__settings_fini(&s);
}

static void test_null_options_mean_defaults(void **state) {
    gpufl__settings_t s;
    (void)state;
    resolve_ok(NULL, &s);
    expect_all_defaults(&s);
    assert_int_equal(captured.warnings, 0);
    gpufl__settings_fini(&s);
}

static void test_options_init_fills_public_defaults(void **state) {
    gpufl_options_t o;
    (void)state;
    memset(&o, 0x5A, sizeof o);
    gpufl_options_init(&o);
    assert_int_equal(o.size, sizeof o);
    assert_string_equal(o.app_name, "gpufl");
    assert_true(o.log_path == NULL || *o.log_path == '\0');
    assert_true(o.backend_url == NULL || *o.backend_url == '\0');
    assert_true(o.api_key == NULL || *o.api_key == '\0');
    assert_true(o.api_path == NULL || *o.api_path == '\0');
    assert_true(o.config_file == NULL || *o.config_file == '\0');
    assert_int_equal(o.remote_upload, 0);
    assert_int_equal(o.enable_stack_trace, 0);
    assert_int_equal(o.enable_source_collection, 1);
    assert_int_equal(o.enable_external_correlation, 1);
    assert_int_equal(o.enable_synchronization, 1);
    assert_int_equal(o.enable_memory_tracking, 0);
    assert_int_equal(o.enable_cuda_graphs_tracking, 0);
    assert_int_equal(o.system_sample_rate_ms, 0);
    assert_int_equal(o.kernel_sample_rate_ms, 0);
    assert_int_equal(o.continuous_system_sampling, 0);
    assert_int_equal(o.backend, GPUFL_BACKEND_AUTO);
    assert_int_equal(o.profiling_engine, GPUFL_ENGINE_MONITOR);
    assert_int_equal(o.flush_logs_always, 0);
    assert_int_equal(o.enable_debug_output, 0);
    assert_int_equal(o.enabled, 1);
    assert_int_equal(o.ring_capacity_records, 8192);
    assert_int_equal(o.log_rotate_bytes, (size_t)64 << 20);
    assert_int_equal(o.flush_interval_ms, 250);
}

/* The cap on all capture rings: 32 MiB (63 threads of 8192 records). */
static void test_memory_cap_default_is_32_mib(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    assert_int_equal(o.memory_cap_bytes, (size_t)32 << 20);
    resolve_ok(&o, &s);
    expect_num(&s, "memory_cap_bytes", INT64_C(32) << 20, GPUFL_FROM_DEFAULT);
    gpufl__settings_fini(&s);
}

/* ---------------------------------------------------------------------- */
/* Layers: code, environment, config file                                   */
/* ---------------------------------------------------------------------- */

static void test_code_values_win_over_defaults(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    o.app_name = "trainer";
    o.log_path = "/var/log/fl";
    o.system_sample_rate_ms = 50;
    o.profiling_engine = GPUFL_ENGINE_PC_SAMPLING;
    o.backend = GPUFL_BACKEND_NONE;
    o.enable_source_collection = 0;
    o.enable_memory_tracking = 1;
    o.flush_interval_ms = 10;
    o.ring_capacity_records = 1024;
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "trainer", GPUFL_FROM_CODE);
    expect_str(&s, "log_path", "/var/log/fl", GPUFL_FROM_CODE);
    expect_num(&s, "system_sample_rate_ms", 50, GPUFL_FROM_CODE);
    expect_str(&s, "profiling_engine", "PcSampling", GPUFL_FROM_CODE);
    expect_str(&s, "backend", "None", GPUFL_FROM_CODE);
    expect_num(&s, "enable_source_collection", 0, GPUFL_FROM_CODE);
    expect_num(&s, "enable_memory_tracking", 1, GPUFL_FROM_CODE);
    expect_num(&s, "flush_interval_ms", 10, GPUFL_FROM_CODE);
    expect_num(&s, "ring_capacity_records", 1024, GPUFL_FROM_CODE);
    expect_num(&s, "enable_stack_trace", 0, GPUFL_FROM_DEFAULT);
    assert_int_equal(s.profiling_engine, GPUFL_ENGINE_PC_SAMPLING);
    assert_int_equal(s.backend, GPUFL_BACKEND_NONE);
    gpufl__settings_fini(&s);
}

static void test_env_applies_to_fields_left_at_default(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_APP_NAME", "from-env", 1);
    setenv("GPUFL_SYSTEM_SAMPLE_RATE_MS", "75", 1);
    setenv("GPUFL_PROFILING_ENGINE", "Trace", 1);
    setenv("GPUFL_BACKEND_URL", "https://fl.example", 1);
    setenv("GPUFL_API_KEY", "gpfl_secret", 1);
    setenv("GPUFL_API_PATH", "/proxy/api", 1);
    setenv("GPUFL_BACKEND", "nvidia", 1);
    setenv("GPUFL_ENABLE_MEMORY_TRACKING", "YES", 1);
    setenv("GPUFL_ENABLE_SOURCE_COLLECTION", "off", 1);
    setenv("GPUFL_FLUSH_INTERVAL_MS", "1000", 1);
    gpufl_options_init(&o);
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "from-env", GPUFL_FROM_ENV);
    expect_num(&s, "system_sample_rate_ms", 75, GPUFL_FROM_ENV);
    expect_str(&s, "profiling_engine", "Trace", GPUFL_FROM_ENV);
    expect_str(&s, "backend_url", "https://fl.example", GPUFL_FROM_ENV);
    expect_str(&s, "api_key", "<set>", GPUFL_FROM_ENV);
    expect_str(&s, "api_path", "/proxy/api", GPUFL_FROM_ENV);
    expect_str(&s, "backend", "Nvidia", GPUFL_FROM_ENV);
    expect_num(&s, "enable_memory_tracking", 1, GPUFL_FROM_ENV);
    expect_num(&s, "enable_source_collection", 0, GPUFL_FROM_ENV);
    expect_num(&s, "flush_interval_ms", 1000, GPUFL_FROM_ENV);
    expect_str(&s, "log_path", "", GPUFL_FROM_DEFAULT);
    assert_string_equal(s.api_key, "gpfl_secret");
    assert_int_equal(captured.warnings, 0);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_APP_NAME");
    unsetenv("GPUFL_SYSTEM_SAMPLE_RATE_MS");
    unsetenv("GPUFL_PROFILING_ENGINE");
    unsetenv("GPUFL_BACKEND_URL");
    unsetenv("GPUFL_API_KEY");
    unsetenv("GPUFL_API_PATH");
    unsetenv("GPUFL_BACKEND");
    unsetenv("GPUFL_ENABLE_MEMORY_TRACKING");
    unsetenv("GPUFL_ENABLE_SOURCE_COLLECTION");
    unsetenv("GPUFL_FLUSH_INTERVAL_MS");
}

static void test_code_wins_over_env(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_APP_NAME", "from-env", 1);
    setenv("GPUFL_SYSTEM_SAMPLE_RATE_MS", "75", 1);
    setenv("GPUFL_PROFILING_ENGINE", "Deep", 1);
    setenv("GPUFL_ENABLE_STACK_TRACE", "0", 1);
    gpufl_options_init(&o);
    o.app_name = "from-code";
    o.system_sample_rate_ms = 20;
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.enable_stack_trace = 1;
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "from-code", GPUFL_FROM_CODE);
    expect_num(&s, "system_sample_rate_ms", 20, GPUFL_FROM_CODE);
    expect_str(&s, "profiling_engine", "Trace", GPUFL_FROM_CODE);
    expect_num(&s, "enable_stack_trace", 1, GPUFL_FROM_CODE);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_APP_NAME");
    unsetenv("GPUFL_SYSTEM_SAMPLE_RATE_MS");
    unsetenv("GPUFL_PROFILING_ENGINE");
    unsetenv("GPUFL_ENABLE_STACK_TRACE");
}

/* A field set in code to its default value cannot be told from one left
 * alone, so the environment still applies to it. */
static void test_code_at_default_value_lets_env_apply(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_APP_NAME", "from-env", 1);
    setenv("GPUFL_SYSTEM_SAMPLE_RATE_MS", "75", 1);
    setenv("GPUFL_ENABLE_SOURCE_COLLECTION", "false", 1);
    gpufl_options_init(&o);
    o.app_name = "gpufl";
    o.system_sample_rate_ms = 0;
    o.enable_source_collection = 1;
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "from-env", GPUFL_FROM_ENV);
    expect_num(&s, "system_sample_rate_ms", 75, GPUFL_FROM_ENV);
    expect_num(&s, "enable_source_collection", 0, GPUFL_FROM_ENV);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_APP_NAME");
    unsetenv("GPUFL_SYSTEM_SAMPLE_RATE_MS");
    unsetenv("GPUFL_ENABLE_SOURCE_COLLECTION");
}

static void test_empty_and_null_strings_mean_default(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    o.app_name = "";
    o.log_path = NULL;
    o.backend_url = "";
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "gpufl", GPUFL_FROM_DEFAULT);
    expect_str(&s, "log_path", "", GPUFL_FROM_DEFAULT);
    expect_str(&s, "backend_url", "", GPUFL_FROM_DEFAULT);
    gpufl__settings_fini(&s);

    setenv("GPUFL_APP_NAME", "env-app", 1);
    setenv("GPUFL_LOG_PATH", "/tmp/env-logs", 1);
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "env-app", GPUFL_FROM_ENV);
    expect_str(&s, "log_path", "/tmp/env-logs", GPUFL_FROM_ENV);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_APP_NAME");
    unsetenv("GPUFL_LOG_PATH");
}

static void test_empty_env_value_is_ignored(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_APP_NAME", "", 1);
    setenv("GPUFL_SYSTEM_SAMPLE_RATE_MS", "", 1);
    setenv("GPUFL_PROFILING_ENGINE", "", 1);
    gpufl_options_init(&o);
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "gpufl", GPUFL_FROM_DEFAULT);
    expect_num(&s, "system_sample_rate_ms", 0, GPUFL_FROM_DEFAULT);
    expect_str(&s, "profiling_engine", "Monitor", GPUFL_FROM_DEFAULT);
    assert_int_equal(captured.warnings, 0);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_APP_NAME");
    unsetenv("GPUFL_SYSTEM_SAMPLE_RATE_MS");
    unsetenv("GPUFL_PROFILING_ENGINE");
}

static void test_config_file_layer(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    const char *path = write_config("c.json", "{\n"
                                              "  \"app_name\": \"cfg-app\",\n"
                                              "  \"log_path\": \"/data/fl\",\n"
                                              "  \"system_sample_rate_ms\": 100,\n"
                                              "  \"profiling_engine\": \"SassMetrics\",\n"
                                              "  \"backend\": \"Amd\",\n"
                                              "  \"enable_stack_trace\": true,\n"
                                              "  \"enable_synchronization\": false,\n"
                                              "  \"log_rotate_bytes\": 1048576\n"
                                              "}\n");
    gpufl_options_init(&o);
    o.config_file = path;
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "cfg-app", GPUFL_FROM_CONFIG);
    expect_str(&s, "log_path", "/data/fl", GPUFL_FROM_CONFIG);
    expect_num(&s, "system_sample_rate_ms", 100, GPUFL_FROM_CONFIG);
    expect_str(&s, "profiling_engine", "SassMetrics", GPUFL_FROM_CONFIG);
    expect_str(&s, "backend", "Amd", GPUFL_FROM_CONFIG);
    expect_num(&s, "enable_stack_trace", 1, GPUFL_FROM_CONFIG);
    expect_num(&s, "enable_synchronization", 0, GPUFL_FROM_CONFIG);
    expect_num(&s, "log_rotate_bytes", 1048576, GPUFL_FROM_CONFIG);
    expect_str(&s, "config_file", path, GPUFL_FROM_CODE);
    expect_num(&s, "enable_source_collection", 1, GPUFL_FROM_DEFAULT);
    assert_int_equal(captured.warnings, 0);
    gpufl__settings_fini(&s);
}

static void test_env_wins_over_config(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    const char *path = write_config("c.json", "{\"app_name\": \"cfg-app\", "
                                              "\"system_sample_rate_ms\": 100, "
                                              "\"profiling_engine\": \"Trace\", "
                                              "\"enable_debug_output\": true}");
    setenv("GPUFL_APP_NAME", "env-app", 1);
    setenv("GPUFL_PROFILING_ENGINE", "rangeprofiler", 1);
    setenv("GPUFL_ENABLE_DEBUG_OUTPUT", "0", 1);
    gpufl_options_init(&o);
    o.config_file = path;
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "env-app", GPUFL_FROM_ENV);
    expect_str(&s, "profiling_engine", "RangeProfiler", GPUFL_FROM_ENV);
    expect_num(&s, "enable_debug_output", 0, GPUFL_FROM_ENV);
    expect_num(&s, "system_sample_rate_ms", 100, GPUFL_FROM_CONFIG);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_APP_NAME");
    unsetenv("GPUFL_PROFILING_ENGINE");
    unsetenv("GPUFL_ENABLE_DEBUG_OUTPUT");
}

static void test_code_wins_over_config_and_env(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    const char *path = write_config("c.json", "{\"app_name\": \"cfg-app\", "
                                              "\"system_sample_rate_ms\": 100, "
                                              "\"flush_logs_always\": false}");
    setenv("GPUFL_APP_NAME", "env-app", 1);
    setenv("GPUFL_SYSTEM_SAMPLE_RATE_MS", "75", 1);
    gpufl_options_init(&o);
    o.config_file = path;
    o.app_name = "code-app";
    o.system_sample_rate_ms = 5;
    o.flush_logs_always = 1;
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "code-app", GPUFL_FROM_CODE);
    expect_num(&s, "system_sample_rate_ms", 5, GPUFL_FROM_CODE);
    expect_num(&s, "flush_logs_always", 1, GPUFL_FROM_CODE);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_APP_NAME");
    unsetenv("GPUFL_SYSTEM_SAMPLE_RATE_MS");
}

/* A config value survives a code field left at (or set to) its default. */
static void test_config_survives_code_at_default(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    const char *path = write_config("c.json", "{\"app_name\": \"cfg-app\", "
                                              "\"enable_external_correlation\": 0}");
    gpufl_options_init(&o);
    o.config_file = path;
    o.app_name = "gpufl";
    o.enable_external_correlation = 1;
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "cfg-app", GPUFL_FROM_CONFIG);
    expect_num(&s, "enable_external_correlation", 0, GPUFL_FROM_CONFIG);
    gpufl__settings_fini(&s);
}

static void test_config_file_named_by_env(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    const char *path = write_config("env.json", "{\"app_name\": \"via-env-file\"}");
    setenv("GPUFL_CONFIG_FILE", path, 1);
    gpufl_options_init(&o);
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "via-env-file", GPUFL_FROM_CONFIG);
    expect_str(&s, "config_file", path, GPUFL_FROM_ENV);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_CONFIG_FILE");
}

static void test_config_file_in_code_beats_env(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    char env_path[256];
    (void)state;
    snprintf(env_path, sizeof env_path, "%s",
             write_config("env.json", "{\"app_name\": \"env-file\"}"));
    const char *code_path = write_config("code.json", "{\"app_name\": \"code-file\"}");
    setenv("GPUFL_CONFIG_FILE", env_path, 1);
    gpufl_options_init(&o);
    o.config_file = code_path;
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "code-file", GPUFL_FROM_CONFIG);
    expect_str(&s, "config_file", code_path, GPUFL_FROM_CODE);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_CONFIG_FILE");
}

static void test_config_bools_accept_true_false_0_1(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    const char *path = write_config("b.json", "{\"enable_stack_trace\": 1, "
                                              "\"enable_source_collection\": 0, "
                                              "\"enable_memory_tracking\": true, "
                                              "\"enable_synchronization\": false}");
    gpufl_options_init(&o);
    o.config_file = path;
    resolve_ok(&o, &s);
    expect_num(&s, "enable_stack_trace", 1, GPUFL_FROM_CONFIG);
    expect_num(&s, "enable_source_collection", 0, GPUFL_FROM_CONFIG);
    expect_num(&s, "enable_memory_tracking", 1, GPUFL_FROM_CONFIG);
    expect_num(&s, "enable_synchronization", 0, GPUFL_FROM_CONFIG);
    gpufl__settings_fini(&s);

    /* The message names the option, not only the file. */
    o.config_file = write_config("b2.json", "{\"enable_stack_trace\": 2}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions("enable_stack_trace");
    o.config_file = write_config("b3.json", "{\"enable_stack_trace\": \"yes\"}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions("enable_stack_trace");
}

static void test_config_engine_names_any_case(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    o.config_file = write_config("e1.json", "{\"profiling_engine\": \"pcsampling\", "
                                            "\"backend\": \"NVIDIA\"}");
    resolve_ok(&o, &s);
    expect_str(&s, "profiling_engine", "PcSampling", GPUFL_FROM_CONFIG);
    expect_str(&s, "backend", "Nvidia", GPUFL_FROM_CONFIG);
    assert_int_equal(s.profiling_engine, GPUFL_ENGINE_PC_SAMPLING);
    gpufl__settings_fini(&s);

    o.config_file = write_config("e2.json", "{\"profiling_engine\": \"DEEP\"}");
    resolve_ok(&o, &s);
    expect_str(&s, "profiling_engine", "Deep", GPUFL_FROM_CONFIG);
    assert_int_equal(s.profiling_engine, GPUFL_ENGINE_DEEP);
    gpufl__settings_fini(&s);
}

/* pc_sampling_trace takes one of its modes, in any case, from every layer;
 * other text fails init from code and from the config file, and an
 * environment value that is not a mode is warned about and ignored. */
static void test_pc_sampling_trace_modes(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    o.pc_sampling_trace = "Kernels";
    resolve_ok(&o, &s);
    expect_str(&s, "pc_sampling_trace", "Kernels", GPUFL_FROM_CODE);
    gpufl__settings_fini(&s);

    o.pc_sampling_trace = "sometimes";
    resolve_fails(&o, GPUFL_EINVAL);
    expect_error_mentions("pc_sampling_trace: 'sometimes' is not one of late, kernels, all, none, "
                          "events, alternate");

    gpufl_options_init(&o);
    o.config_file = write_config("p1.json", "{\"pc_sampling_trace\": \"none\"}");
    resolve_ok(&o, &s);
    expect_str(&s, "pc_sampling_trace", "none", GPUFL_FROM_CONFIG);
    gpufl__settings_fini(&s);
    o.config_file = write_config("p2.json", "{\"pc_sampling_trace\": \"kernel\"}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions("pc_sampling_trace: 'kernel' is not one of");
    o.config_file = write_config("p3.json", "{\"pc_sampling_trace\": 1}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions("pc_sampling_trace must be a string");

    gpufl_options_init(&o);
    setenv("GPUFL_PC_SAMPLING_TRACE", "all", 1);
    resolve_ok(&o, &s);
    expect_str(&s, "pc_sampling_trace", "all", GPUFL_FROM_ENV);
    gpufl__settings_fini(&s);
    setenv("GPUFL_PC_SAMPLING_TRACE", "copies", 1);
    resolve_ok(&o, &s);
    expect_str(&s, "pc_sampling_trace", "late", GPUFL_FROM_DEFAULT);
    assert_true(logged("ignoring GPUFL_PC_SAMPLING_TRACE: pc_sampling_trace: 'copies' is not one "
                       "of late, kernels, all, none, events, alternate"));
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_PC_SAMPLING_TRACE");
}

/* ---------------------------------------------------------------------- */
/* Config file errors                                                       */
/* ---------------------------------------------------------------------- */

static void test_config_missing_file(void **state) {
    gpufl_options_t o;
    char path[256];
    (void)state;
    snprintf(path, sizeof path, "%s/does-not-exist.json", tmpdir);
    gpufl_options_init(&o);
    o.config_file = path;
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(path);

    setenv("GPUFL_CONFIG_FILE", path, 1);
    resolve_fails(NULL, GPUFL_ECONFIG);
    expect_error_mentions(path);
    unsetenv("GPUFL_CONFIG_FILE");
}

static void test_config_unreadable_file(void **state) {
    gpufl_options_t o;
    char dir[256];
    (void)state;
    /* A directory cannot be read as a config file. */
    snprintf(dir, sizeof dir, "%s/a-directory.json", tmpdir);
    assert_int_equal(mkdir(dir, 0700), 0);
    gpufl_options_init(&o);
    o.config_file = dir;
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(dir);

    /* Nor can a file without read permission (root reads it anyway). */
    if (geteuid() != 0) {
        const char *path = write_config("noread.json", "{}");
        assert_int_equal(chmod(path, 0), 0);
        o.config_file = path;
        resolve_fails(&o, GPUFL_ECONFIG);
        expect_error_mentions(path);
    }
}

static void test_config_too_large(void **state) {
    gpufl_options_t o;
    char path[256];
    FILE *f;
    (void)state;
    snprintf(path, sizeof path, "%s/big.json", tmpdir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputc('{', f);
    for (int i = 0; i < (1 << 20); i++) fputc(' ', f);
    fputc('}', f);
    assert_int_equal(fclose(f), 0);
    gpufl_options_init(&o);
    o.config_file = path;
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(path);
}

static void test_config_malformed_json_has_line_and_column(void **state) {
    gpufl_options_t o;
    (void)state;
    gpufl_options_init(&o);
    o.config_file = write_config("bad.json", "{\n"
                                             "  \"app_name\": \"x\",\n"
                                             "  \"system_sample_rate_ms\": ]\n"
                                             "}\n");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(o.config_file);
    expect_error_mentions("line 3 column 28");

    o.config_file = write_config("trailing.json", "{\"app_name\": \"x\",}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions("line 1 column");

    o.config_file = write_config("empty.json", "");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(o.config_file);
}

static void test_config_root_must_be_object(void **state) {
    gpufl_options_t o;
    (void)state;
    gpufl_options_init(&o);
    o.config_file = write_config("array.json", "[{\"app_name\": \"x\"}]");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(o.config_file);
    o.config_file = write_config("number.json", "42");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(o.config_file);
}

/* A wrong-typed value names the file and the option. The message is built
 * from the inner error text; this also checks that text is not garbled. */
static void test_config_wrong_type_for_int(void **state) {
    gpufl_options_t o;
    char path[256];
    char expected[512];
    (void)state;
    snprintf(path, sizeof path, "%s",
             write_config("t.json", "{\"system_sample_rate_ms\": \"50\"}"));
    gpufl_options_init(&o);
    o.config_file = path;
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(path);
    expect_error_mentions("system_sample_rate_ms");
    /* The inner message ("... must be an integer") survives being wrapped in
     * the file's name (it once overwrote itself while being formatted). */
    snprintf(expected, sizeof expected,
             "config file '%s': system_sample_rate_ms must be an integer", path);
    assert_string_equal(gpufl_last_error(), expected);
}

static void test_config_unknown_engine_name(void **state) {
    gpufl_options_t o;
    (void)state;
    gpufl_options_init(&o);
    /* The message names the option, not only the file. */
    o.config_file = write_config("t.json", "{\"profiling_engine\": \"Turbo\"}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(o.config_file);
    expect_error_mentions("profiling engine");
    expect_error_mentions("Turbo");

    o.config_file = write_config("t2.json", "{\"profiling_engine\": 2}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions("profiling_engine");

    o.config_file = write_config("t3.json", "{\"backend\": \"Intel\"}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions("backend");
    expect_error_mentions("Intel");
}

static void test_config_out_of_range_values(void **state) {
    gpufl_options_t o;
    (void)state;
    gpufl_options_init(&o);
    /* The message names the option, not only the file. */
    o.config_file = write_config("neg.json", "{\"system_sample_rate_ms\": -5}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(o.config_file);
    expect_error_mentions("system_sample_rate_ms");

    o.config_file = write_config("zero.json", "{\"flush_interval_ms\": 0}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions("flush_interval_ms");

    o.config_file = write_config("real.json", "{\"system_sample_rate_ms\": 5.5}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions("system_sample_rate_ms");

    o.config_file = write_config("null.json", "{\"app_name\": null}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions("app_name");
}

static void test_config_duplicate_keys(void **state) {
    gpufl_options_t o;
    (void)state;
    gpufl_options_init(&o);
    o.config_file = write_config("dup.json", "{\"app_name\": \"a\",\n \"app_name\": \"b\"}");
    resolve_fails(&o, GPUFL_ECONFIG);
    expect_error_mentions(o.config_file);
    expect_error_mentions("duplicate");
}

static void test_config_unknown_keys_warn(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    o.config_file = write_config("u.json", "{\"app_name\": \"known\", "
                                           "\"colour\": \"blue\", "
                                           "\"enable_profiling\": true}");
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "known", GPUFL_FROM_CONFIG);
    assert_int_equal(captured.warnings, 2);
    assert_true(logged("'colour'"));
    assert_true(logged("'enable_profiling'"));
    gpufl__settings_fini(&s);
}

static void test_config_old_key_sampling_auto_start(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    o.config_file = write_config("old.json", "{\"sampling_auto_start\": true}");
    resolve_ok(&o, &s);
    expect_num(&s, "continuous_system_sampling", 1, GPUFL_FROM_CONFIG);
    assert_int_equal(s.continuous_system_sampling, 1);
    assert_int_equal(captured.warnings, 1);
    assert_true(logged("sampling_auto_start"));
    assert_true(logged("continuous_system_sampling"));
    gpufl__settings_fini(&s);
}

/* ---------------------------------------------------------------------- */
/* Bad environment values: a warning, and the lower layer's value stays    */
/* ---------------------------------------------------------------------- */

static void test_env_unknown_engine_warns_and_keeps_config(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_PROFILING_ENGINE", "Turbo", 1);
    gpufl_options_init(&o);
    o.config_file = write_config("c.json", "{\"profiling_engine\": \"Trace\"}");
    resolve_ok(&o, &s);
    expect_str(&s, "profiling_engine", "Trace", GPUFL_FROM_CONFIG);
    assert_int_equal(captured.warnings, 1);
    assert_true(logged("GPUFL_PROFILING_ENGINE"));
    assert_true(logged("Turbo"));
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_PROFILING_ENGINE");
}

static void test_env_negative_rate_warns(void **state) {
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_SYSTEM_SAMPLE_RATE_MS", "-5", 1);
    resolve_ok(NULL, &s);
    expect_num(&s, "system_sample_rate_ms", 0, GPUFL_FROM_DEFAULT);
    assert_int_equal(captured.warnings, 1);
    assert_true(logged("GPUFL_SYSTEM_SAMPLE_RATE_MS"));
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_SYSTEM_SAMPLE_RATE_MS");
}

static void test_env_not_an_integer_warns(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_SYSTEM_SAMPLE_RATE_MS", "abc", 1);
    setenv("GPUFL_FLUSH_INTERVAL_MS", "100ms", 1);
    gpufl_options_init(&o);
    o.config_file = write_config("c.json", "{\"system_sample_rate_ms\": 40}");
    resolve_ok(&o, &s);
    expect_num(&s, "system_sample_rate_ms", 40, GPUFL_FROM_CONFIG);
    expect_num(&s, "flush_interval_ms", 250, GPUFL_FROM_DEFAULT);
    assert_int_equal(captured.warnings, 2);
    assert_true(logged("GPUFL_SYSTEM_SAMPLE_RATE_MS"));
    assert_true(logged("'abc'"));
    assert_true(logged("GPUFL_FLUSH_INTERVAL_MS"));
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_SYSTEM_SAMPLE_RATE_MS");
    unsetenv("GPUFL_FLUSH_INTERVAL_MS");
}

static void test_env_bad_bool_warns(void **state) {
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_ENABLE_STACK_TRACE", "maybe", 1);
    setenv("GPUFL_ENABLE_SYNCHRONIZATION", "2", 1);
    resolve_ok(NULL, &s);
    expect_num(&s, "enable_stack_trace", 0, GPUFL_FROM_DEFAULT);
    expect_num(&s, "enable_synchronization", 1, GPUFL_FROM_DEFAULT);
    assert_int_equal(captured.warnings, 2);
    assert_true(logged("GPUFL_ENABLE_STACK_TRACE"));
    assert_true(logged("'maybe'"));
    assert_true(logged("GPUFL_ENABLE_SYNCHRONIZATION"));
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_ENABLE_STACK_TRACE");
    unsetenv("GPUFL_ENABLE_SYNCHRONIZATION");
}

/* A bad variable for a field set in code is not even read. */
static void test_env_bad_value_ignored_silently_when_code_set(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_PROFILING_ENGINE", "Turbo", 1);
    gpufl_options_init(&o);
    o.profiling_engine = GPUFL_ENGINE_DEEP;
    resolve_ok(&o, &s);
    expect_str(&s, "profiling_engine", "Deep", GPUFL_FROM_CODE);
    assert_int_equal(captured.warnings, 0);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_PROFILING_ENGINE");
}

/* ---------------------------------------------------------------------- */
/* Bad values set in code                                                   */
/* ---------------------------------------------------------------------- */

static void test_code_negative_sample_rate(void **state) {
    gpufl_options_t o;
    (void)state;
    gpufl_options_init(&o);
    o.system_sample_rate_ms = -1;
    resolve_fails(&o, GPUFL_EINVAL);
    expect_error_mentions("system_sample_rate_ms");
    o.system_sample_rate_ms = 0;
    o.kernel_sample_rate_ms = -10;
    resolve_fails(&o, GPUFL_EINVAL);
    expect_error_mentions("kernel_sample_rate_ms");
}

static void test_code_engine_out_of_range(void **state) {
    gpufl_options_t o;
    (void)state;
    gpufl_options_init(&o);
    o.profiling_engine = (gpufl_engine_t)6;
    resolve_fails(&o, GPUFL_EINVAL);
    expect_error_mentions("profiling_engine");
    o.profiling_engine = (gpufl_engine_t)-1;
    resolve_fails(&o, GPUFL_EINVAL);
    expect_error_mentions("profiling_engine");
}

static void test_code_backend_out_of_range(void **state) {
    gpufl_options_t o;
    (void)state;
    gpufl_options_init(&o);
    o.backend = (gpufl_backend_t)4;
    resolve_fails(&o, GPUFL_EINVAL);
    expect_error_mentions("backend");
    o.backend = (gpufl_backend_t)-2;
    resolve_fails(&o, GPUFL_EINVAL);
    expect_error_mentions("backend");
}

static void test_code_flush_interval_zero(void **state) {
    gpufl_options_t o;
    (void)state;
    /* The env value is fine, but the code value is set and wrong. */
    setenv("GPUFL_FLUSH_INTERVAL_MS", "100", 1);
    gpufl_options_init(&o);
    o.flush_interval_ms = 0;
    resolve_fails(&o, GPUFL_EINVAL);
    expect_error_mentions("flush_interval_ms");
    unsetenv("GPUFL_FLUSH_INTERVAL_MS");
}

/* ---------------------------------------------------------------------- */
/* enabled and GPUFL_DISABLED                                               */
/* ---------------------------------------------------------------------- */

static void test_disabled_env_truthy_overrides_everything(void **state) {
    static const char *const truthy[] = {"1", "true", "TRUE", "yes", "Yes", "on", "ON"};
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    o.enabled = 1;
    o.config_file = write_config("en.json", "{\"enabled\": true}");
    for (size_t i = 0; i < sizeof truthy / sizeof truthy[0]; i++) {
        setenv("GPUFL_DISABLED", truthy[i], 1);
        assert_int_equal(gpufl__env_disabled(), 1);
        resolve_ok(&o, &s);
        if (s.enabled != 0 || s.disabled_by_env != 1)
            fail_msg("GPUFL_DISABLED=%s left enabled=%d disabled_by_env=%d", truthy[i], s.enabled,
                     s.disabled_by_env);
        gpufl__settings_fini(&s);
    }
    unsetenv("GPUFL_DISABLED");
}

static void test_disabled_env_falsy_or_unset(void **state) {
    static const char *const falsy[] = {"0", "false", "no", "OFF", "", "maybe", "2"};
    gpufl__settings_t s;
    (void)state;
    assert_int_equal(gpufl__env_disabled(), 0);
    for (size_t i = 0; i < sizeof falsy / sizeof falsy[0]; i++) {
        setenv("GPUFL_DISABLED", falsy[i], 1);
        assert_int_equal(gpufl__env_disabled(), 0);
        resolve_ok(NULL, &s);
        if (s.enabled != 1 || s.disabled_by_env != 0)
            fail_msg("GPUFL_DISABLED=%s gave enabled=%d disabled_by_env=%d", falsy[i], s.enabled,
                     s.disabled_by_env);
        gpufl__settings_fini(&s);
    }
    unsetenv("GPUFL_DISABLED");
}

static void test_enabled_has_no_env_variable(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_ENABLED", "0", 1);
    gpufl_options_init(&o);
    resolve_ok(&o, &s);
    expect_num(&s, "enabled", 1, GPUFL_FROM_DEFAULT);
    assert_int_equal(s.disabled_by_env, 0);
    gpufl__settings_fini(&s);

    o.enabled = 0;
    resolve_ok(&o, &s);
    expect_num(&s, "enabled", 0, GPUFL_FROM_CODE);
    assert_int_equal(s.disabled_by_env, 0);
    gpufl__settings_fini(&s);

    o.enabled = 1;
    o.config_file = write_config("off.json", "{\"enabled\": false}");
    resolve_ok(&o, &s);
    expect_num(&s, "enabled", 0, GPUFL_FROM_CONFIG);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_ENABLED");
}

/* ---------------------------------------------------------------------- */
/* Deprecated fields                                                        */
/* ---------------------------------------------------------------------- */

/* GPUFL_WINDOW_S seals a window every N seconds: log_rotate_interval_ms in seconds, from the
 * environment; the option's own variable and code win over it; a bad value is refused. */
static void test_window_s_is_the_rotation_interval_in_seconds(void **state) {
    gpufl__settings_t s;
    gpufl_options_t o;
    (void)state;
    setenv("GPUFL_WINDOW_S", "10", 1);
    resolve_ok(NULL, &s);
    expect_num(&s, "log_rotate_interval_ms", 10000, GPUFL_FROM_ENV);
    gpufl__settings_fini(&s);
    setenv("GPUFL_LOG_ROTATE_INTERVAL_MS", "2500", 1);
    resolve_ok(NULL, &s);
    expect_num(&s, "log_rotate_interval_ms", 2500, GPUFL_FROM_ENV);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_LOG_ROTATE_INTERVAL_MS");
    gpufl_options_init(&o);
    o.log_rotate_interval_ms = 3000;
    resolve_ok(&o, &s);
    expect_num(&s, "log_rotate_interval_ms", 3000, GPUFL_FROM_CODE);
    gpufl__settings_fini(&s);
    memset(&captured, 0, sizeof captured);
    setenv("GPUFL_WINDOW_S", "ten", 1);
    resolve_ok(NULL, &s);
    expect_num(&s, "log_rotate_interval_ms", 0, GPUFL_FROM_DEFAULT);
    assert_true(logged("ignoring GPUFL_WINDOW_S"));
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_WINDOW_S");
}

static void test_deprecated_fields_set_in_code_warn(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    o.remote_upload = 1;
    resolve_ok(&o, &s);
    expect_num(&s, "remote_upload", 1, GPUFL_FROM_CODE);
    assert_int_equal(captured.warnings, 1);
    assert_true(logged("remote_upload"));
    /* It says what to call instead, and where the logs are until then. */
    assert_true(logged("uploadLogs()"));
    assert_true(logged("the logs stay in gpufl.log"));
    assert_int_equal(captured.multiline, 0);
    gpufl__settings_fini(&s);

    memset(&captured, 0, sizeof captured);
    o.remote_upload = 0;
    o.kernel_sample_rate_ms = 10;
    resolve_ok(&o, &s);
    expect_num(&s, "kernel_sample_rate_ms", 10, GPUFL_FROM_CODE);
    assert_int_equal(captured.warnings, 1);
    assert_true(logged("kernel_sample_rate_ms"));
    assert_int_equal(captured.multiline, 0);
    gpufl__settings_fini(&s);
}

static void test_deprecated_fields_from_env_and_config_warn(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_KERNEL_SAMPLE_RATE_MS", "5", 1);
    gpufl_options_init(&o);
    o.config_file = write_config("dep.json", "{\"remote_upload\": true}");
    resolve_ok(&o, &s);
    expect_num(&s, "kernel_sample_rate_ms", 5, GPUFL_FROM_ENV);
    expect_num(&s, "remote_upload", 1, GPUFL_FROM_CONFIG);
    assert_int_equal(captured.warnings, 2);
    assert_true(logged("kernel_sample_rate_ms"));
    assert_true(logged("remote_upload"));
    assert_int_equal(captured.multiline, 0);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_KERNEL_SAMPLE_RATE_MS");

    memset(&captured, 0, sizeof captured);
    setenv("GPUFL_REMOTE_UPLOAD", "on", 1);
    resolve_ok(NULL, &s);
    expect_num(&s, "remote_upload", 1, GPUFL_FROM_ENV);
    assert_int_equal(captured.warnings, 1);
    assert_true(logged("remote_upload"));
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_REMOTE_UPLOAD");
}

/* ---------------------------------------------------------------------- */
/* opts->size                                                               */
/* ---------------------------------------------------------------------- */

static void test_size_zero_is_rejected(void **state) {
    gpufl_options_t o;
    (void)state;
    gpufl_options_init(&o);
    o.size = 0;
    resolve_fails(&o, GPUFL_EINVAL);
    expect_error_mentions("gpufl_options_init");
}

/* An older caller's struct ends before ring_capacity_records: the fields past
 * its size are not read (garbage there is harmless) and count as defaults. */
static void test_older_struct_size(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    setenv("GPUFL_RING_CAPACITY_RECORDS", "128", 1);
    setenv("GPUFL_APP_NAME", "env-app", 1);
    gpufl_options_init(&o);
    o.size = offsetof(gpufl_options_t, ring_capacity_records);
    o.app_name = "old-caller";
    o.enable_stack_trace = 1;
    o.ring_capacity_records = 1; /* out of range if it were read */
    o.memory_cap_bytes = 1;      /* idem */
    o.log_rotate_bytes = 12345;  /* idem */
    o.flush_interval_ms = 0;     /* idem */
    resolve_ok(&o, &s);
    expect_str(&s, "app_name", "old-caller", GPUFL_FROM_CODE);
    expect_num(&s, "enable_stack_trace", 1, GPUFL_FROM_CODE);
    expect_num(&s, "ring_capacity_records", 128, GPUFL_FROM_ENV);
    expect_num(&s, "log_rotate_bytes", INT64_C(64) << 20, GPUFL_FROM_DEFAULT);
    expect_num(&s, "flush_interval_ms", 250, GPUFL_FROM_DEFAULT);
    gpufl__settings_fini(&s);
    unsetenv("GPUFL_RING_CAPACITY_RECORDS");
    unsetenv("GPUFL_APP_NAME");
}

/* ---------------------------------------------------------------------- */
/* gpufl__settings_get                                                      */
/* ---------------------------------------------------------------------- */

static void test_settings_get_names_and_redaction(void **state) {
    gpufl_options_t o;
    gpufl__settings_t s;
    (void)state;
    gpufl_options_init(&o);
    o.api_key = "gpfl_topsecret";
    o.backend = GPUFL_BACKEND_AMD;
    resolve_ok(&o, &s);
    /* Every option has a distinct name and a known source. */
    for (int i = 0; i < GPUFL_OPTION_COUNT; i++) {
        const char *name_i, *str;
        gpufl__option_source_t src;
        int64_t num;
        gpufl__settings_get(&s, i, &name_i, &src, &str, &num);
        assert_non_null(name_i);
        assert_true(src >= GPUFL_FROM_DEFAULT && src <= GPUFL_FROM_CODE);
        for (int j = 0; j < i; j++) {
            const char *name_j, *str_j;
            gpufl__option_source_t src_j;
            int64_t num_j;
            gpufl__settings_get(&s, j, &name_j, &src_j, &str_j, &num_j);
            assert_string_not_equal(name_i, name_j);
        }
        if (str) assert_null(strstr(str, "topsecret"));
    }
    expect_str(&s, "api_key", "<set>", GPUFL_FROM_CODE);
    expect_str(&s, "backend", "Amd", GPUFL_FROM_CODE);
    assert_string_equal(s.api_key, "gpfl_topsecret");
    assert_string_equal(gpufl__option_source_name(GPUFL_FROM_DEFAULT), "default");
    assert_string_equal(gpufl__option_source_name(GPUFL_FROM_CONFIG), "config");
    assert_string_equal(gpufl__option_source_name(GPUFL_FROM_ENV), "env");
    assert_string_equal(gpufl__option_source_name(GPUFL_FROM_CODE), "code");
    gpufl__settings_fini(&s);
    assert_null(s.api_key);
    assert_null(s.app_name);
}

/* ---------------------------------------------------------------------- */
/* Parsers                                                                  */
/* ---------------------------------------------------------------------- */

static void test_parse_bool_edge_cases(void **state) {
    static const char *const yes[] = {"1", "true", "TRUE", "True", "yes", "YeS", "on", "ON"};
    static const char *const no[] = {"0", "false", "FALSE", "no", "No", "off", "oFF"};
    static const char *const bad[] = {"",   " 1", "1 ", "true ",  "2",     "-1",
                                      "01", "y",  "n",  "enable", "maybe", "truex"};
    int v;
    (void)state;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        v = -1;
        assert_int_equal(gpufl__parse_bool(yes[i], &v), 0);
        assert_int_equal(v, 1);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        v = -1;
        assert_int_equal(gpufl__parse_bool(no[i], &v), 0);
        assert_int_equal(v, 0);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        if (gpufl__parse_bool(bad[i], &v) != GPUFL_EINVAL)
            fail_msg("'%s' parsed as a boolean", bad[i]);
        assert_int_equal(v, 7);
    }
    v = 7;
    assert_int_equal(gpufl__parse_bool(NULL, &v), GPUFL_EINVAL);
    assert_int_equal(v, 7);
    assert_int_equal(gpufl__parse_bool("maybe", &v), GPUFL_EINVAL);
    expect_error_mentions("maybe");
}

static void test_engine_parse_edge_cases(void **state) {
    static const char *const names[] = {"Monitor",     "Trace",         "PcSampling",
                                        "SassMetrics", "RangeProfiler", "Deep"};
    static const char *const bad[] = {"",  "Monitor ",    " Trace",      "0",     "2",
                                      "5", "Pc Sampling", "pc_sampling", "Turbo", "Deepest"};
    gpufl_engine_t e;
    (void)state;
    for (int i = 0; i < 6; i++) {
        e = (gpufl_engine_t)99;
        assert_int_equal(gpufl_engine_parse(names[i], &e), 0);
        assert_int_equal(e, i);
        assert_string_equal(gpufl_engine_name((gpufl_engine_t)i), names[i]);
    }
    assert_int_equal(gpufl_engine_parse("pcsampling", &e), 0);
    assert_int_equal(e, GPUFL_ENGINE_PC_SAMPLING);
    assert_int_equal(gpufl_engine_parse("DEEP", &e), 0);
    assert_int_equal(e, GPUFL_ENGINE_DEEP);
    assert_int_equal(gpufl_engine_parse("sassMETRICS", &e), 0);
    assert_int_equal(e, GPUFL_ENGINE_SASS_METRICS);

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e = GPUFL_ENGINE_TRACE;
        if (gpufl_engine_parse(bad[i], &e) != GPUFL_EINVAL)
            fail_msg("'%s' parsed as an engine", bad[i]);
        assert_int_equal(e, GPUFL_ENGINE_TRACE);
    }
    e = GPUFL_ENGINE_TRACE;
    assert_int_equal(gpufl_engine_parse(NULL, &e), GPUFL_EINVAL);
    assert_int_equal(e, GPUFL_ENGINE_TRACE);
    assert_int_equal(gpufl_engine_parse("Turbo", &e), GPUFL_EINVAL);
    expect_error_mentions("Turbo");
    expect_error_mentions("PcSampling"); /* lists the valid names */

    assert_string_equal(gpufl_engine_name((gpufl_engine_t)6), "Unknown");
    assert_string_equal(gpufl_engine_name((gpufl_engine_t)-1), "Unknown");
    assert_string_equal(gpufl_backend_name(GPUFL_BACKEND_AUTO), "Auto");
    assert_string_equal(gpufl_backend_name(GPUFL_BACKEND_NVIDIA), "Nvidia");
    assert_string_equal(gpufl_backend_name(GPUFL_BACKEND_AMD), "Amd");
    assert_string_equal(gpufl_backend_name(GPUFL_BACKEND_NONE), "None");
    assert_string_equal(gpufl_backend_name((gpufl_backend_t)4), "Unknown");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_defaults_match_spec),
        T(test_null_options_mean_defaults),
        T(test_options_init_fills_public_defaults),
        T(test_memory_cap_default_is_32_mib),
        T(test_code_values_win_over_defaults),
        T(test_env_applies_to_fields_left_at_default),
        T(test_code_wins_over_env),
        T(test_code_at_default_value_lets_env_apply),
        T(test_empty_and_null_strings_mean_default),
        T(test_empty_env_value_is_ignored),
        T(test_config_file_layer),
        T(test_env_wins_over_config),
        T(test_code_wins_over_config_and_env),
        T(test_config_survives_code_at_default),
        T(test_config_file_named_by_env),
        T(test_config_file_in_code_beats_env),
        T(test_config_bools_accept_true_false_0_1),
        T(test_config_engine_names_any_case),
        T(test_pc_sampling_trace_modes),
        T(test_config_missing_file),
        T(test_config_unreadable_file),
        T(test_config_too_large),
        T(test_config_malformed_json_has_line_and_column),
        T(test_config_root_must_be_object),
        T(test_config_wrong_type_for_int),
        T(test_config_unknown_engine_name),
        T(test_config_out_of_range_values),
        T(test_config_duplicate_keys),
        T(test_config_unknown_keys_warn),
        T(test_config_old_key_sampling_auto_start),
        T(test_env_unknown_engine_warns_and_keeps_config),
        T(test_env_negative_rate_warns),
        T(test_env_not_an_integer_warns),
        T(test_env_bad_bool_warns),
        T(test_env_bad_value_ignored_silently_when_code_set),
        T(test_code_negative_sample_rate),
        T(test_code_engine_out_of_range),
        T(test_code_backend_out_of_range),
        T(test_code_flush_interval_zero),
        T(test_disabled_env_truthy_overrides_everything),
        T(test_disabled_env_falsy_or_unset),
        T(test_enabled_has_no_env_variable),
        T(test_window_s_is_the_rotation_interval_in_seconds),
        T(test_deprecated_fields_set_in_code_warn),
        T(test_deprecated_fields_from_env_and_config_warn),
        T(test_size_zero_is_rejected),
        T(test_older_struct_size),
        T(test_settings_get_names_and_redaction),
        T(test_parse_bool_edge_cases),
        T(test_engine_parse_edge_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
