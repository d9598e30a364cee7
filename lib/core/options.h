// SPDX-License-Identifier: Apache-2.0
/*
 * options.h - resolves gpufl_options_t into the settings a session runs with.
 *
 * Layers, lowest priority first: built-in defaults, the JSON config file,
 * GPUFL_* environment variables (for fields the caller left at their
 * default), fields the caller set. GPUFL_DISABLED overrides all of them.
 * The resolved settings remember which layer each field came from; the
 * session writes that into its `options` record.
 */
#ifndef GPUFL_CORE_OPTIONS_H
#define GPUFL_CORE_OPTIONS_H

#include <gpufl/gpufl.h>

typedef enum gpufl__option_source {
    GPUFL_FROM_DEFAULT = 0,
    GPUFL_FROM_CONFIG = 1,
    GPUFL_FROM_ENV = 2,
    GPUFL_FROM_CODE = 3
} gpufl__option_source_t;

enum { GPUFL_OPTION_COUNT = 33 };

typedef struct gpufl__settings {
    /* Every string is owned (heap) and never NULL. */
    char *app_name, *log_path, *backend_url, *api_key, *api_path, *config_file;
    int remote_upload;
    int enable_stack_trace, enable_source_collection, enable_external_correlation;
    int enable_synchronization, enable_memory_tracking, enable_cuda_graphs_tracking;
    int system_sample_rate_ms, kernel_sample_rate_ms, continuous_system_sampling;
    gpufl_backend_t backend;
    gpufl_engine_t profiling_engine;
    int flush_logs_always, enable_debug_output, enabled;
    int64_t ring_capacity_records, memory_cap_bytes, log_rotate_bytes;
    int flush_interval_ms;
    int pc_sampling_period;
    int log_rotate_interval_ms;
    int batch_hold_ms;
    int flight_recorder_s;
    int64_t flight_recorder_bytes;
    int flight_recorder_signal;
    char *flight_recorder_trigger; /* owned, never NULL; checked by the resolve */
    char *pc_sampling_trace;       /* owned, one of the resolve's choices (any case) */

    int disabled_by_env;                      /* GPUFL_DISABLED was truthy */
    unsigned char source[GPUFL_OPTION_COUNT]; /* gpufl__option_source_t per option */
} gpufl__settings_t;

/*
 * Resolves opts (NULL for defaults) into *out, reading the config file and
 * the environment. Warnings (unknown config keys, bad env values, deprecated
 * fields) go through the log hook. Returns 0, GPUFL_EINVAL (a bad value set
 * in code), GPUFL_ECONFIG (config file unreadable or malformed) or
 * GPUFL_ENOMEM; on error *out holds nothing to free.
 */
int gpufl__settings_resolve(gpufl__settings_t *out, const gpufl_options_t *opts);
void gpufl__settings_fini(gpufl__settings_t *s);

/* The values of the option pc_sampling_trace, NULL-ended, in the order of
 * nvidia/pcs_trace.h's modes; the first is the default. */
extern const char *const gpufl__pcs_trace_modes[];

/* 1 when GPUFL_DISABLED holds a truthy value (1/true/yes/on, any case). */
int gpufl__env_disabled(void);

/* Parses a boolean word (1/0, true/false, yes/no, on/off, any case). Returns
 * 0 and sets *out, or GPUFL_EINVAL. */
int gpufl__parse_bool(const char *text, int *out);

/* Walks the options in a fixed order, for the `options` log record. For
 * option i (0..GPUFL_OPTION_COUNT-1) gives its name, its source, and either a
 * string (*str != NULL) or an integer (*num). Secrets come back as "<set>". */
void gpufl__settings_get(const gpufl__settings_t *s, int i, const char **name,
                         gpufl__option_source_t *source, const char **str, int64_t *num);

const char *gpufl__option_source_name(gpufl__option_source_t source);

#endif
