// SPDX-License-Identifier: Apache-2.0
/*
 * c_program.c - the C API of an installed gpufl, from strict C11 (-std=c11 -pedantic -Werror):
 * options, init/shutdown, GFL_SCOPE with an early return, scopes by hand, errors, version, the
 * report and the session read back through gpufl_analysis.h. Run with `--mode enabled`, and
 * with `--mode disabled` under GPUFL_DISABLED=1.
 */
#define _POSIX_C_SOURCE 200809L

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "c_program: FAIL: %s\n", what);
        failures++;
    }
}

static int body_runs;

/* Leaves a GFL_SCOPE (two, nested) through return: both must still close. */
static int find_negative(const int *values, int n) {
    GFL_SCOPE("find") {
        body_runs++;
        for (int i = 0; i < n; i++) {
            GFL_SCOPE("look") {
                body_runs++;
                if (values[i] < 0) return i;
            }
        }
    }
    return -1;
}

static void workload(void) {
    static const int values[] = {3, 1, -4, 1};
    GFL_SCOPE("c_outer") {
        body_runs++;
        GFL_SCOPE("c_inner") { body_runs++; }
    }
    check(find_negative(values, 4) == 2, "find_negative returned from inside GFL_SCOPE");
    gpufl_scope_t a = gpufl_scope_begin("by_hand", "c_tag");
    gpufl_scope_t b = gpufl_scope_begin("by_hand_inner", NULL);
    gpufl_scope_end(b);
    gpufl_scope_end(a);
    gpufl_scope_t r = gpufl_scope_begin_repeat("repeat_scope", NULL, 4, 2);
    gpufl_scope_end(r);
    check(body_runs == 6, "every GFL_SCOPE body ran exactly once");
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];
    if (!f) return NULL;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            char *bigger;
            cap = (len + n + 1) * 2;
            bigger = realloc(buf, cap);
            if (!bigger) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = bigger;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!buf)
        buf = calloc(1, 1);
    else
        buf[len] = '\0';
    return buf;
}

/* Reads the integer column `key` of a batch line into ids; returns the count. */
static size_t int_column(const char *line, const char *key, long long *ids, size_t max) {
    char pat[64];
    const char *s;
    size_t n = 0;
    snprintf(pat, sizeof pat, "\"%s\":[", key);
    s = strstr(line, pat);
    if (!s) return 0;
    s += strlen(pat);
    while (*s && *s != ']' && n < max) {
        char *end;
        ids[n++] = strtoll(s, &end, 10);
        if (end == s) break;
        s = end;
        if (*s == ',') s++;
    }
    return n;
}

#define MAX_IDS 256

/* Every scope_begin id in scope.log has exactly one scope_end. */
static void check_scope_log(const char *session_dir) {
    char path[4096];
    long long begins[MAX_IDS], ends[MAX_IDS];
    size_t nb = 0, ne = 0;
    char *text, *line, *save = NULL;
    int session_end = 0;
    snprintf(path, sizeof path, "%s/scope.log", session_dir);
    text = read_all(path);
    check(text != NULL, "the session has scope.log");
    if (!text) return;
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strstr(line, "\"type\":\"scope_begin\""))
            nb += int_column(line, "id", begins + nb, MAX_IDS - nb);
        else if (strstr(line, "\"type\":\"scope_end\""))
            ne += int_column(line, "id", ends + ne, MAX_IDS - ne);
        else if (strstr(line, "\"type\":\"session_end\""))
            session_end = 1;
    }
    free(text);
    check(session_end, "scope.log has session_end");
    check(nb == 9, "scope.log has 9 scope_begin rows");
    check(ne == nb, "scope.log has as many scope_end rows as scope_begin rows");
    for (size_t i = 0; i < nb; i++) {
        int matches = 0;
        for (size_t j = 0; j < ne; j++) matches += ends[j] == begins[i];
        check(matches == 1, "each scope_begin id has exactly one scope_end");
    }
}

/* The session read back through the read API: found by app, its scopes as columns. */
static void check_read_api(const char *logs) {
    char dir[4096];
    gpufl_analysis_t *a = NULL;
    gpufl_column_t name;
    size_t rows = 0;
    const char *first = NULL;
    check(gpufl_analysis_find(logs, "c_program", NULL, dir, sizeof dir) == 0,
          "gpufl_analysis_find finds the session by app");
    check(gpufl_analysis_open(&a, dir) == 0, "gpufl_analysis_open loads it");
    if (!a) return;
    check(gpufl_analysis_table(a, GPUFL_TABLE_SCOPES, &rows, NULL) == 0 && rows == 9,
          "the scopes table has the 9 scopes");
    name.size = sizeof name;
    if (gpufl_analysis_column_find(a, GPUFL_TABLE_SCOPES, "name", &name) == 0 && name.rows > 0)
        first = gpufl_analysis_string(a, ((const int64_t *)name.data)[0]);
    check(first && strcmp(first, "c_outer") == 0, "the first scope's name is c_outer");
    gpufl_analysis_close(a);
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int file_has(const char *path, const char *needle) {
    char *text = read_all(path);
    int found = text && strstr(text, needle) != NULL;
    free(text);
    return found;
}

static void check_errors_and_version(void) {
    static const int codes[] = {GPUFL_OK,      GPUFL_EINVAL,    GPUFL_ENOMEM,   GPUFL_EIO,
                                GPUFL_ECONFIG, GPUFL_EALREADY,  GPUFL_ENOTINIT, GPUFL_EDISABLED,
                                GPUFL_ENOTSUP, GPUFL_ENOTFOUND, GPUFL_EFORMAT,  GPUFL_ETHREAD};
    enum { NCODES = sizeof codes / sizeof codes[0] };
    char want[32];
    for (int i = 0; i < NCODES; i++) {
        const char *a = gpufl_strerror(codes[i]);
        check(a != NULL && *a != '\0', "gpufl_strerror names every code");
        for (int j = 0; a && j < i; j++) {
            const char *b = gpufl_strerror(codes[j]);
            check(b == NULL || strcmp(a, b) != 0, "gpufl_strerror strings are distinct");
        }
    }
    check(gpufl_strerror(-999) != NULL, "gpufl_strerror of an unknown code is not NULL");
    check(strcmp(gpufl_strerror(GPUFL_EUNAVAILABLE), gpufl_strerror(-999)) != 0,
          "gpufl_strerror names GPUFL_EUNAVAILABLE (gpufl-server's 503)");
    check(gpufl_strerror(12345) != NULL, "gpufl_strerror of a positive code is not NULL");
    snprintf(want, sizeof want, "%d.%d.%d", GPUFL_VERSION_MAJOR, GPUFL_VERSION_MINOR,
             GPUFL_VERSION_PATCH);
    check(gpufl_version() != NULL && strcmp(gpufl_version(), want) == 0,
          "gpufl_version() matches GPUFL_VERSION_*");
    check(gpufl_version_number() == GPUFL_VERSION_NUMBER, "gpufl_version_number() matches");
}

static void fill_options(gpufl_options_t *o, const char *logs) {
    gpufl_options_init(o);
    check(o->size == sizeof *o, "gpufl_options_init sets size");
    check(o->enabled == 1 && o->profiling_engine == GPUFL_ENGINE_MONITOR &&
              o->backend == GPUFL_BACKEND_AUTO,
          "gpufl_options_init sets the documented defaults");
    o->app_name = "c_program";
    o->log_path = logs;
    o->backend = GPUFL_BACKEND_NONE;
}

static int run_enabled(const char *dir) {
    char logs[4096], report[4096], session[4096];
    gpufl_options_t o;
    gpufl_stats_t stats;
    gpufl_upload_options_t up;
    int rc;

    snprintf(logs, sizeof logs, "%s/logs", dir);
    snprintf(report, sizeof report, "%s/report.txt", dir);
    fill_options(&o, logs);
    check(gpufl_is_active() == 0, "not active before init");
    check(gpufl_session_dir(session, sizeof session) == GPUFL_ENOTINIT,
          "gpufl_session_dir before any session is GPUFL_ENOTINIT");
    rc = gpufl_init(&o);
    check(rc == GPUFL_OK, "gpufl_init returns 0");
    if (rc) {
        fprintf(stderr, "c_program: init: %s\n", gpufl_last_error());
        return 1;
    }
    check(gpufl_is_active() == 1, "active after init");
    check(gpufl_init(&o) == GPUFL_EALREADY, "a second init returns GPUFL_EALREADY");
    check(gpufl_is_active() == 1, "the first session goes on after the refused init");
    check(gpufl_system_start("c_window") == 0, "gpufl_system_start returns 0");
    workload();
    check(gpufl_system_stop("c_window") == 0, "gpufl_system_stop returns 0");
    check(gpufl_system_stop("c_window") == GPUFL_ENOTFOUND,
          "stopping a window that is not open is GPUFL_ENOTFOUND");
    check(gpufl_flush() == 0, "gpufl_flush returns 0");

    gpufl_upload_options_init(&up);
    up.log_path = logs;
    check(gpufl_upload_logs(&up) == GPUFL_EINVAL,
          "gpufl_upload_logs while the session runs is GPUFL_EINVAL (upload after shutdown)");

    rc = gpufl_session_dir(session, sizeof session);
    check(rc > 0 && strncmp(session, logs, strlen(logs)) == 0,
          "gpufl_session_dir is a directory under log_path");
    gpufl_shutdown();
    gpufl_shutdown(); /* safe to repeat */
    check(gpufl_is_active() == 0, "not active after shutdown");

    memset(&stats, 0, sizeof stats);
    stats.size = sizeof stats;
    check(gpufl_get_stats(&stats) == 0, "gpufl_get_stats after shutdown returns 0");
    check(stats.unbalanced_ends == 0,
          "no unbalanced scope ends (the early return closed its scopes)");
    check(stats.records_dropped == 0, "no records dropped");
    check(stats.records_written >= 18, "scope records were written");

    if (rc > 0) {
        char path[4200];
        static const char *const files[] = {"device.log", "scope.log", "system.log"};
        struct stat st;
        for (int i = 0; i < 3; i++) {
            snprintf(path, sizeof path, "%s/%s", session, files[i]);
            check(stat(path, &st) == 0 && st.st_size > 0, "the session has its three log files");
        }
        check_scope_log(session);
    }

    check(gpufl_report_write(report) == 0, "gpufl_report_write to a file returns 0");
    check(file_has(report, "c_outer") && file_has(report, "look") &&
              file_has(report, "repeat_scope"),
          "the report names the scopes");
    check_read_api(logs);
    return 0;
}

static int run_disabled(const char *dir) {
    char logs[4096], report[4096];
    gpufl_options_t o;
    gpufl_upload_options_t up;

    snprintf(logs, sizeof logs, "%s/logs", dir);
    snprintf(report, sizeof report, "%s/report.txt", dir);
    fill_options(&o, logs);
    check(gpufl_init(&o) == GPUFL_EDISABLED, "gpufl_init returns GPUFL_EDISABLED");
    check(gpufl_is_active() == 0, "not active when disabled");
    check(gpufl_scope_begin("off", NULL) == 0, "gpufl_scope_begin returns 0 when disabled");
    gpufl_scope_end(0);
    workload();
    gpufl_system_start("c_window");
    gpufl_system_stop("c_window");
    gpufl_upload_options_init(&up);
    up.log_path = logs;
    check(gpufl_upload_logs(&up) == GPUFL_EDISABLED,
          "gpufl_upload_logs returns GPUFL_EDISABLED (nothing sent) when disabled");
    gpufl_shutdown();
    check(gpufl_report_write(report) != 0, "gpufl_report_write fails: no session ran");
    check(!is_dir(logs), "no log directory is created when disabled");
    {
        struct stat st;
        check(stat(report, &st) != 0, "no report file is written when disabled");
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = NULL, *dir = NULL, *env = getenv("GPUFL_DISABLED");
    int env_off = env && *env && strcmp(env, "0") != 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mode") == 0)
            mode = argv[i + 1];
        else if (strcmp(argv[i], "--dir") == 0)
            dir = argv[i + 1];
    }
    if (!mode || !dir || (strcmp(mode, "enabled") != 0 && strcmp(mode, "disabled") != 0)) {
        fprintf(stderr, "usage: %s --mode enabled|disabled --dir WORKDIR\n", argv[0]);
        return 2;
    }
    if (env_off != (strcmp(mode, "disabled") == 0)) {
        fprintf(stderr, "c_program: --mode %s needs GPUFL_DISABLED %s\n", mode,
                env_off ? "unset" : "=1");
        return 2;
    }
    if (!is_dir(dir) && mkdir(dir, 0755) != 0) {
        perror(dir);
        return 2;
    }
    check_errors_and_version();
    if (strcmp(mode, "enabled") == 0)
        run_enabled(dir);
    else
        run_disabled(dir);
    if (failures) {
        fprintf(stderr, "c_program (%s): %d check(s) failed\n", mode, failures);
        return 1;
    }
    printf("c_program (%s): all checks passed\n", mode);
    return 0;
}
