// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_config.c - fuzz target for the JSON config file: every input becomes
 * the config file of a gpufl__settings_resolve() call, which must fail
 * cleanly or produce settings that keep their documented invariants.
 */
#include "fuzz_target.h"

#include "core/options.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

extern char **environ;

static char config_path[4096];

static void quiet_log(gpufl_log_level_t level, const char *message, void *user) {
    (void)level;
    (void)message;
    (void)user;
}

static void remove_config(void) {
    if (config_path[0]) unlink(config_path);
}

/* GPUFL_* variables of the fuzzing shell would override what the file says
 * and make runs differ between machines. */
static void clear_gpufl_env(void) {
    for (;;) {
        char *name = NULL;
        for (char **e = environ; e && *e; e++) {
            const char *eq = strchr(*e, '=');
            if (strncmp(*e, "GPUFL_", 6) == 0 && eq) {
                name = strndup(*e, (size_t)(eq - *e));
                FUZZ_CHECK(name != NULL);
                break;
            }
        }
        if (!name) return;
        unsetenv(name);
        free(name);
    }
}

/* One file per process, rewritten for every input. */
static void setup_once(void) {
    if (config_path[0]) return;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(config_path, sizeof config_path, "%s/gpufl-fuzz-config-XXXXXX", tmp);
    int fd = mkstemp(config_path);
    FUZZ_CHECK(fd >= 0);
    close(fd);
    atexit(remove_config);
    clear_gpufl_env();
    gpufl_set_log_hook(quiet_log, NULL);
}

static void write_config(const uint8_t *data, size_t size) {
    FILE *f = fopen(config_path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    FUZZ_CHECK(fclose(f) == 0);
}

static int is_bool(int v) { return v == 0 || v == 1; }

static void check_settings(const gpufl__settings_t *s) {
    const char *strings[] = {s->app_name, s->log_path, s->backend_url,
                             s->api_key,  s->api_path, s->config_file};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) FUZZ_CHECK(strings[i] != NULL);
    /* The caller named the file in code, which outranks the file itself. */
    FUZZ_CHECK(strcmp(s->config_file, config_path) == 0);
    FUZZ_CHECK(is_bool(s->remote_upload) && is_bool(s->enable_stack_trace));
    FUZZ_CHECK(is_bool(s->enable_source_collection) && is_bool(s->enable_external_correlation));
    FUZZ_CHECK(is_bool(s->enable_synchronization) && is_bool(s->enable_memory_tracking));
    FUZZ_CHECK(is_bool(s->enable_cuda_graphs_tracking) && is_bool(s->continuous_system_sampling));
    FUZZ_CHECK(is_bool(s->flush_logs_always) && is_bool(s->enable_debug_output));
    FUZZ_CHECK(is_bool(s->enabled) && s->disabled_by_env == 0);
    FUZZ_CHECK(s->system_sample_rate_ms >= 0 && s->kernel_sample_rate_ms >= 0);
    FUZZ_CHECK(s->flush_interval_ms > 0);
    FUZZ_CHECK(s->ring_capacity_records > 0 && s->memory_cap_bytes > 0 && s->log_rotate_bytes > 0);
    FUZZ_CHECK((unsigned)s->backend <= GPUFL_BACKEND_NONE);
    FUZZ_CHECK((unsigned)s->profiling_engine <= GPUFL_ENGINE_DEEP);
    /* A string with choices holds one of them, in any case, never other text. */
    int mode_known = 0;
    for (int i = 0; s->pc_sampling_trace && gpufl__pcs_trace_modes[i]; i++)
        mode_known |= strcasecmp(s->pc_sampling_trace, gpufl__pcs_trace_modes[i]) == 0;
    FUZZ_CHECK(mode_known);
    for (int i = 0; i < GPUFL_OPTION_COUNT; i++) {
        const char *name, *str;
        gpufl__option_source_t src;
        int64_t num;
        gpufl__settings_get(s, i, &name, &src, &str, &num);
        FUZZ_CHECK(name != NULL && *name != '\0');
        FUZZ_CHECK(src == GPUFL_FROM_DEFAULT || src == GPUFL_FROM_CONFIG || src == GPUFL_FROM_CODE);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup_once();
    write_config(data, size);

    gpufl_options_t opts;
    gpufl__settings_t s;
    gpufl_options_init(&opts);
    opts.config_file = config_path;
    int rc = gpufl__settings_resolve(&s, &opts);
    FUZZ_CHECK(rc == 0 || rc == GPUFL_ECONFIG || rc == GPUFL_EINVAL);
    if (rc == 0) {
        check_settings(&s);
        gpufl__settings_fini(&s);
    } else {
        /* A failure says why, and leaves nothing to free. */
        FUZZ_CHECK(*gpufl_last_error() != '\0');
        FUZZ_CHECK(!s.app_name && !s.log_path && !s.backend_url && !s.api_key && !s.api_path &&
                   !s.config_file);
    }
    return 0;
}
