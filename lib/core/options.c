// SPDX-License-Identifier: Apache-2.0
/*
 * options.c - the option table and the layered resolution of settings.
 *
 * One table describes every option: its type, default, place in the public
 * struct and in the resolved settings, and its bounds. Defaults, the config
 * file, the environment (GPUFL_<NAME IN CAPITALS>) and the caller's struct
 * are all read through it, so adding an option is one table row.
 */
#include "core/options.h"

#include "core/config_file.h"
#include "core/flight_recorder.h"
#include "util/log.h"
#include "core/session.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum opt_type { T_STR, T_BOOL, T_INT, T_SIZE, T_ENGINE, T_BACKEND } opt_type_t;

enum {
    F_SECRET = 1,     /* never written to the log */
    F_DEPRECATED = 2, /* accepted, no effect, notice at init when set */
    F_NO_ENV = 4      /* no GPUFL_<NAME> variable */
};

typedef struct opt_desc {
    const char *name;
    opt_type_t type;
    size_t pub_off, pub_size; /* in gpufl_options_t */
    size_t set_off;           /* in gpufl__settings_t */
    const char *def_str;      /* T_STR default; NULL means "" */
    int64_t def_num;          /* default of every other type */
    int64_t min, max;         /* T_INT / T_SIZE bounds */
    int flags;
    const char *const *choices; /* T_STR: the values it takes (any case), NULL-ended; NULL any */
} opt_desc_t;

#define PUB(field) offsetof(gpufl_options_t, field), sizeof(((gpufl_options_t *)0)->field)
#define SET(field) offsetof(gpufl__settings_t, field)
#define STR(f, def, fl)                                                                            \
    { #f, T_STR, PUB(f), SET(f), def, 0, 0, 0, fl, NULL }
#define BOOL(f, def, fl)                                                                           \
    { #f, T_BOOL, PUB(f), SET(f), NULL, def, 0, 1, fl, NULL }
#define INT(f, def, lo, hi, fl)                                                                    \
    { #f, T_INT, PUB(f), SET(f), NULL, def, lo, hi, fl, NULL }
#define SIZE(f, def, lo, hi)                                                                       \
    { #f, T_SIZE, PUB(f), SET(f), NULL, def, lo, hi, 0, NULL }
#define CHOICE(f, def, list)                                                                       \
    { #f, T_STR, PUB(f), SET(f), def, 0, 0, 0, 0, list }

/* What PcSampling keeps of Trace's activity (docs/options.md,
 * docs/design/pcs-with-trace.md); the first is the default. */
const char *const gpufl__pcs_trace_modes[] = {"late",   "kernels",   "all", "none",
                                              "events", "alternate", NULL};

static const opt_desc_t options[GPUFL_OPTION_COUNT] = {
    STR(app_name, "gpufl", 0),
    STR(log_path, NULL, 0),
    STR(backend_url, NULL, 0),
    STR(api_key, NULL, F_SECRET),
    STR(api_path, NULL, 0),
    BOOL(remote_upload, 0, F_DEPRECATED),
    BOOL(enable_stack_trace, 0, 0),
    BOOL(enable_source_collection, 1, 0),
    BOOL(enable_external_correlation, 1, 0),
    BOOL(enable_synchronization, 1, 0),
    BOOL(enable_memory_tracking, 0, 0),
    BOOL(enable_cuda_graphs_tracking, 0, 0),
    INT(system_sample_rate_ms, 0, 0, 3600000, 0),
    INT(kernel_sample_rate_ms, 0, 0, INT_MAX, F_DEPRECATED),
    BOOL(continuous_system_sampling, 0, 0),
    {"backend", T_BACKEND, PUB(backend), SET(backend), NULL, GPUFL_BACKEND_AUTO, 0, 3, 0, NULL},
    {"profiling_engine", T_ENGINE, PUB(profiling_engine), SET(profiling_engine), NULL,
     GPUFL_ENGINE_MONITOR, 0, 5, 0, NULL},
    STR(config_file, NULL, 0),
    BOOL(flush_logs_always, 0, 0),
    BOOL(enable_debug_output, 0, 0),
    BOOL(enabled, 1, F_NO_ENV),
    SIZE(ring_capacity_records, 8192, 64, 1 << 20),
    SIZE(memory_cap_bytes, 32 << 20, 1 << 20, (int64_t)16 << 30),
    SIZE(log_rotate_bytes, 64 << 20, 64 << 10, (int64_t)1 << 40),
    INT(flush_interval_ms, 250, 1, 60000, 0),
    INT(pc_sampling_period, 18, 5, 31, 0),
    INT(log_rotate_interval_ms, 0, 0, 86400000, 0),
    INT(batch_hold_ms, 2000, 0, 60000, 0),
    INT(flight_recorder_s, 0, 0, 86400, 0),
    SIZE(flight_recorder_bytes, 64 << 20, 64 << 10, (int64_t)16 << 30),
    INT(flight_recorder_signal, SIGUSR2, 0, 64, 0),
    STR(flight_recorder_trigger, NULL, 0),
    CHOICE(pc_sampling_trace, "late", gpufl__pcs_trace_modes),
};

enum { OPT_CONFIG_FILE = 17 };

static const char *const engine_names[] = {"Monitor",     "Trace",         "PcSampling",
                                           "SassMetrics", "RangeProfiler", "Deep"};
static const char *const backend_names[] = {"Auto", "Nvidia", "Amd", "None"};

const char *gpufl_engine_name(gpufl_engine_t engine) {
    return (unsigned)engine < 6 ? engine_names[engine] : "Unknown";
}

const char *gpufl_backend_name(gpufl_backend_t backend) {
    return (unsigned)backend < 4 ? backend_names[backend] : "Unknown";
}

int gpufl_engine_parse(const char *name, gpufl_engine_t *out) {
    for (int i = 0; name && i < 6; i++) {
        if (strcasecmp(name, engine_names[i]) == 0) {
            *out = (gpufl_engine_t)i;
            return 0;
        }
    }
    return gpufl__set_error(GPUFL_EINVAL,
                            "unknown profiling engine '%s'; valid: Monitor, Trace, PcSampling, "
                            "SassMetrics, RangeProfiler, Deep",
                            name ? name : "(null)");
}

static int backend_parse(const char *name, gpufl_backend_t *out) {
    for (int i = 0; name && i < 4; i++) {
        if (strcasecmp(name, backend_names[i]) == 0) {
            *out = (gpufl_backend_t)i;
            return 0;
        }
    }
    return gpufl__set_error(GPUFL_EINVAL, "unknown backend '%s'; valid: Auto, Nvidia, Amd, None",
                            name ? name : "(null)");
}

const char *gpufl__option_source_name(gpufl__option_source_t source) {
    static const char *const names[] = {"default", "config", "env", "code"};
    return (unsigned)source < 4 ? names[source] : "unknown";
}

int gpufl__parse_bool(const char *text, int *out) {
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (int i = 0; text && i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0) return *out = 1, 0;
        if (strcasecmp(text, no[i]) == 0) return *out = 0, 0;
    }
    return gpufl__set_error(GPUFL_EINVAL, "'%s' is not a boolean (1/0, true/false, yes/no, on/off)",
                            text ? text : "(null)");
}

int gpufl__env_disabled(void) {
    int disabled = 0;
    const char *v = getenv("GPUFL_DISABLED");
    if (!v || !*v) return 0;
    if (strcasecmp(v, "1") && strcasecmp(v, "true") && strcasecmp(v, "yes") &&
        strcasecmp(v, "on") && strcasecmp(v, "0") && strcasecmp(v, "false") &&
        strcasecmp(v, "no") && strcasecmp(v, "off"))
        return 0; /* not a boolean: not disabled (gpufl__settings_resolve warns) */
    gpufl__parse_bool(v, &disabled);
    return disabled;
}

void gpufl_options_init_sized(gpufl_options_t *opts, size_t size) {
    gpufl_options_t full;
    memset(&full, 0, sizeof full);
    full.size = sizeof full;
    for (int i = 0; i < GPUFL_OPTION_COUNT; i++) {
        const opt_desc_t *d = &options[i];
        char *field = (char *)&full + d->pub_off;
        switch (d->type) {
        case T_STR: *(const char **)field = d->def_str; break;
        case T_SIZE: *(size_t *)field = (size_t)d->def_num; break;
        default: *(int *)field = (int)d->def_num; break; /* int and the int-sized enums */
        }
    }
    /* Only the caller's part: an older program's struct is shorter. */
    if (size > sizeof full) size = sizeof full;
    if (size < sizeof full.size) return;
    memcpy(opts, &full, size);
    opts->size = size;
}

/* ---- one value in transit: text, number, or both ---- */

typedef struct value {
    const char *str; /* T_STR */
    int64_t num;     /* every other type */
} value_t;

static int check_range(const opt_desc_t *d, int64_t n) {
    if (n < d->min || n > d->max)
        return gpufl__set_error(GPUFL_EINVAL, "%s must be between %lld and %lld (got %lld)",
                                d->name, (long long)d->min, (long long)d->max, (long long)n);
    return 0;
}

/* A string option with choices takes one of them, in any letter case. */
static int check_choice(const opt_desc_t *d, const char *text) {
    if (!d->choices || !text || !*text) return 0;
    char valid[128] = "";
    for (int i = 0; d->choices[i]; i++) {
        if (strcasecmp(text, d->choices[i]) == 0) return 0;
        size_t n = strlen(valid);
        snprintf(valid + n, sizeof valid - n, "%s%s", i ? ", " : "", d->choices[i]);
    }
    return gpufl__set_error(GPUFL_EINVAL, "%s: '%s' is not one of %s", d->name, text, valid);
}

/* Parses an environment (or other text) value of option d. */
static int value_from_text(const opt_desc_t *d, const char *text, value_t *v) {
    char *end;
    int b = 0;
    switch (d->type) {
    case T_STR: v->str = text; return check_choice(d, text);
    case T_BOOL:
        if (gpufl__parse_bool(text, &b)) return GPUFL_EINVAL;
        v->num = b;
        return 0;
    case T_ENGINE: {
        gpufl_engine_t e = GPUFL_ENGINE_MONITOR;
        if (gpufl_engine_parse(text, &e)) return GPUFL_EINVAL;
        v->num = e;
        return 0;
    }
    case T_BACKEND: {
        gpufl_backend_t k = GPUFL_BACKEND_AUTO;
        if (backend_parse(text, &k)) return GPUFL_EINVAL;
        v->num = k;
        return 0;
    }
    case T_INT:
    case T_SIZE:
        errno = 0;
        v->num = strtoll(text, &end, 10);
        if (errno || end == text || *end != '\0')
            return gpufl__set_error(GPUFL_EINVAL, "%s: '%s' is not an integer", d->name, text);
        return check_range(d, v->num);
    }
    return GPUFL_EINVAL;
}

/* Converts a config-file JSON value of option d. */
static int value_from_json(const opt_desc_t *d, json_t *j, value_t *v) {
    switch (d->type) {
    case T_STR:
        if (!json_is_string(j)) break;
        v->str = json_string_value(j);
        return check_choice(d, v->str);
    case T_BOOL:
        if (json_is_boolean(j)) return v->num = json_is_true(j), 0;
        if (json_is_integer(j) && (json_integer_value(j) == 0 || json_integer_value(j) == 1))
            return v->num = json_integer_value(j), 0;
        break;
    case T_INT:
    case T_SIZE:
        if (!json_is_integer(j)) break;
        v->num = json_integer_value(j);
        return check_range(d, v->num);
    case T_ENGINE:
    case T_BACKEND:
        if (!json_is_string(j)) break;
        return value_from_text(d, json_string_value(j), v);
    }
    static const char *const want[] = {
        "a string",   "true or false",           "an integer",
        "an integer", "an engine name (string)", "a backend name (string)"};
    return gpufl__set_error(GPUFL_EINVAL, "%s must be %s", d->name, want[d->type]);
}

/* Reads the caller's value of option d; 0 when the caller's struct is too
 * old to have the field (it then counts as left at its default). */
static int value_from_code(const opt_desc_t *d, const gpufl_options_t *o, value_t *v) {
    if (!o || d->pub_off + d->pub_size > o->size) return 0;
    const char *field = (const char *)o + d->pub_off;
    switch (d->type) {
    case T_STR: v->str = *(const char *const *)field; break;
    case T_SIZE: v->num = (int64_t) * (const size_t *)field; break;
    case T_BOOL: v->num = *(const int *)field != 0; break;
    default: v->num = *(const int *)field; break;
    }
    return 1;
}

static int is_default(const opt_desc_t *d, const value_t *v) {
    if (d->type == T_STR) /* NULL and "" mean "not set" */
        return !v->str || !*v->str || (d->def_str && strcmp(v->str, d->def_str) == 0);
    return v->num == d->def_num;
}

static int store(const opt_desc_t *d, const value_t *v, gpufl__settings_t *s) {
    char *field = (char *)s + d->set_off;
    switch (d->type) {
    case T_STR: {
        char *copy = strdup(v->str ? v->str : "");
        if (!copy) return gpufl__set_error(GPUFL_ENOMEM, "out of memory copying %s", d->name);
        free(*(char **)field);
        *(char **)field = copy;
        return 0;
    }
    case T_SIZE: *(int64_t *)field = v->num; return 0;
    default: *(int *)field = (int)v->num; return 0;
    }
}

/* Variables that name an option in other units: GPUFL_WINDOW_S (docs/upload.md: seal a log
 * window every N seconds) is log_rotate_interval_ms in seconds. When d has one and it is set,
 * its name goes to name and its value, in d's unit, to text. */
static int env_alias(const opt_desc_t *d, char *name, size_t name_size, char *text,
                     size_t text_size) {
    if (strcmp(d->name, "log_rotate_interval_ms") != 0) return 0;
    const char *v = getenv("GPUFL_WINDOW_S");
    if (!v || !*v) return 0;
    snprintf(name, name_size, "GPUFL_WINDOW_S");
    char *end;
    long long secs = strtoll(v, &end, 10);
    if (*end || secs < 0 || secs > 86400)
        snprintf(text, text_size, "%.20s", v); /* refused below, with the value named */
    else
        snprintf(text, text_size, "%lld", secs * 1000);
    return 1;
}

static void env_name(const opt_desc_t *d, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "GPUFL_%s", d->name);
    for (size_t i = 0; i < n && i < size; i++) buf[i] = (char)toupper((unsigned char)buf[i]);
}

/* Names that older releases used in config files, still understood. */
static const char *renamed_key(const char *key) {
    return strcmp(key, "sampling_auto_start") == 0 ? "continuous_system_sampling" : NULL;
}

static int find_option(const char *name) {
    for (int i = 0; i < GPUFL_OPTION_COUNT; i++)
        if (strcmp(options[i].name, name) == 0) return i;
    return -1;
}

static void warn_unknown_keys(json_t *root, const char *path) {
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        (void)val;
        if (find_option(key) >= 0) continue;
        if (renamed_key(key))
            gpufl__warn("config file '%s': '%s' was renamed to '%s'; please use the new name", path,
                        key, renamed_key(key));
        else
            gpufl__warn("config file '%s': unknown option '%s' ignored", path, key);
    }
}

static json_t *config_value(json_t *root, const char *name) {
    json_t *v = json_object_get(root, name);
    if (!v && strcmp(name, "continuous_system_sampling") == 0)
        v = json_object_get(root, "sampling_auto_start");
    return v;
}

/* The config file is named in code, else by GPUFL_CONFIG_FILE. */
static const char *config_path(const gpufl_options_t *opts, gpufl__option_source_t *src) {
    value_t v = {0};
    const char *env = getenv("GPUFL_CONFIG_FILE");
    if (value_from_code(&options[OPT_CONFIG_FILE], opts, &v) && v.str && *v.str) {
        *src = GPUFL_FROM_CODE;
        return v.str;
    }
    *src = GPUFL_FROM_ENV;
    return env && *env ? env : NULL;
}

static int resolve_one(int i, const gpufl_options_t *opts, json_t *config, const char *cfg_path,
                       gpufl__settings_t *s) {
    const opt_desc_t *d = &options[i];
    value_t v = {d->def_str, d->def_num};
    value_t code = v;
    gpufl__option_source_t src = GPUFL_FROM_DEFAULT;
    json_t *j = config ? config_value(config, d->name) : NULL;
    /* "" means "not set" in the config file as in code and the environment. */
    if (j && d->type == T_STR && json_is_string(j) && !*json_string_value(j)) j = NULL;

    if (j) {
        if (value_from_json(d, j, &v)) {
            char why[512]; /* the message is rewritten below: copy it out first */
            snprintf(why, sizeof why, "%s", gpufl_last_error());
            return gpufl__set_error(GPUFL_ECONFIG, "config file '%s': %s", cfg_path, why);
        }
        src = GPUFL_FROM_CONFIG;
    }
    int have_code = value_from_code(d, opts, &code);
    if (!(d->flags & F_NO_ENV) && (!have_code || is_default(d, &code))) {
        char name[64];
        const char *text;
        value_t env = v;
        env_name(d, name, sizeof name);
        text = getenv(name);
        char scaled[32];
        if ((!text || !*text) && env_alias(d, name, sizeof name, scaled, sizeof scaled))
            text = scaled;
        if (text && *text) {
            if (value_from_text(d, text, &env) == 0) {
                v = env;
                src = GPUFL_FROM_ENV;
            } else {
                gpufl__warn("ignoring %s: %s", name, gpufl_last_error());
            }
        }
    }
    if (have_code && !is_default(d, &code)) {
        if ((d->type == T_INT || d->type == T_SIZE || d->type == T_ENGINE ||
             d->type == T_BACKEND) &&
            check_range(d, code.num))
            return GPUFL_EINVAL;
        if (d->type == T_STR && check_choice(d, code.str)) return GPUFL_EINVAL;
        v = code;
        src = GPUFL_FROM_CODE;
    }
    s->source[i] = (unsigned char)src;
    return store(d, &v, s);
}

int gpufl__settings_resolve(gpufl__settings_t *out, const gpufl_options_t *opts) {
    json_t *config = NULL;
    gpufl__option_source_t cfg_src;
    const char *cfg_path;
    int rc = 0;

    memset(out, 0, sizeof *out);
    if (opts && opts->size < offsetof(gpufl_options_t, app_name) + sizeof(char *))
        return gpufl__set_error(GPUFL_EINVAL,
                                "options.size is %zu: fill the options with gpufl_options_init()",
                                opts->size);
    cfg_path = config_path(opts, &cfg_src);
    if (cfg_path) {
        rc = gpufl__config_file_load(cfg_path, &config);
        if (rc) return rc;
        warn_unknown_keys(config, cfg_path);
    }
    for (int i = 0; i < GPUFL_OPTION_COUNT && rc == 0; i++)
        rc = resolve_one(i, opts, config, cfg_path, out);
    json_decref(config);
    /* Text with a grammar is checked here, whatever set it: a condition
     * misread would never trigger, and nobody would know. */
    if (rc == 0) rc = gpufl__flight_conditions_parse(out->flight_recorder_trigger, NULL);
    if (rc) {
        gpufl__settings_fini(out);
        return rc;
    }
    if (cfg_path) out->source[OPT_CONFIG_FILE] = (unsigned char)cfg_src;
    out->disabled_by_env = gpufl__env_disabled();
    const char *dis = getenv("GPUFL_DISABLED");
    int ignored;
    if (dis && *dis && gpufl__parse_bool(dis, &ignored) != 0)
        gpufl__warn("ignoring GPUFL_DISABLED='%s': not a boolean (1/0, true/false, yes/no, "
                    "on/off); gpufl stays enabled",
                    dis);
    if (out->disabled_by_env) out->enabled = 0;
    if (out->remote_upload) {
        gpufl__warn("remote_upload is deprecated and has no effect: upload after shutdown "
                    "instead (uploadLogs() in C++, gpufl_upload_logs() in C, gpufl.upload_logs() "
                    "or gpufl.session() in Python); until then the logs stay in %s%s",
                    *out->log_path ? out->log_path : out->app_name, *out->log_path ? "" : ".log");
    }
    if (*out->flight_recorder_trigger && out->flight_recorder_s == 0)
        gpufl__warn("flight_recorder_trigger '%s' has no effect without flight_recorder_s",
                    out->flight_recorder_trigger);
    if (out->kernel_sample_rate_ms)
        gpufl__warn("kernel_sample_rate_ms is deprecated and has no effect; every kernel record "
                    "is captured");
    gpufl__clear_error(); /* warnings above are not a failure of this call */
    return 0;
}

void gpufl__settings_fini(gpufl__settings_t *s) {
    for (int i = 0; i < GPUFL_OPTION_COUNT; i++) {
        if (options[i].type != T_STR) continue;
        char **field = (char **)((char *)s + options[i].set_off);
        free(*field);
        *field = NULL;
    }
}

void gpufl__settings_get(const gpufl__settings_t *s, int i, const char **name,
                         gpufl__option_source_t *source, const char **str, int64_t *num) {
    const opt_desc_t *d = &options[i];
    const char *field = (const char *)s + d->set_off;
    *name = d->name;
    *source = (gpufl__option_source_t)s->source[i];
    *str = NULL;
    *num = 0;
    switch (d->type) {
    case T_STR:
        *str = *(char *const *)field;
        if ((d->flags & F_SECRET) && **str) *str = "<set>";
        break;
    case T_ENGINE: *str = gpufl_engine_name((gpufl_engine_t) * (const int *)field); break;
    case T_BACKEND: *str = gpufl_backend_name((gpufl_backend_t) * (const int *)field); break;
    case T_SIZE: *num = *(const int64_t *)field; break;
    default: *num = *(const int *)field; break;
    }
}
