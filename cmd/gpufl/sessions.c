// SPDX-License-Identifier: Apache-2.0
/*
 * sessions.c - `gpufl sessions`: the session directories under a log root,
 * newest first (the listing is the analysis library's, gpufl_session_list_create()).
 * Also how the other subcommands find the session the user named (a session
 * directory, a log root and a session id, or nothing), with the same rules
 * as gpufl_analysis_find() and so the Python analyzer, and errors that say
 * what was looked for where.
 */
#include "cli.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

const char *cli_default_root(char *buf, size_t size) {
    const char *path = getenv("GPUFL_LOG_PATH");
    const char *app = getenv("GPUFL_APP_NAME");
    if (path && *path)
        snprintf(buf, size, "%s", path);
    else
        snprintf(buf, size, "%s.log", app && *app ? app : "gpufl");
    return buf;
}

int cli_is_session_dir(const char *dir) { return gpufl_analysis_is_session(dir); }

int cli_sessions_list(const char *root, gpufl_session_list_t **out) {
    if (gpufl_session_list_create(out, root) == 0) return CLI_OK;
    fprintf(stderr, "gpufl: %s\n", gpufl_last_error());
    return CLI_FAILED;
}

static void format_start(int64_t unix_us, char *buf, size_t size) {
    if (unix_us < 0) {
        snprintf(buf, size, "-");
        return;
    }
    time_t secs = (time_t)(unix_us / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
}

static void format_duration(int64_t ns, char *buf, size_t size) {
    if (ns < 0)
        snprintf(buf, size, "running or died");
    else if (ns < 60 * (int64_t)1000000000)
        snprintf(buf, size, "%.3f s", (double)ns / 1e9);
    else
        snprintf(buf, size, "%dh%02dm%02ds", (int)(ns / 3600000000000),
                 (int)(ns / 60000000000 % 60), (int)(ns / 1000000000 % 60));
}

static void format_size(uint64_t bytes, char *buf, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, u++;
    if (u == 0)
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
}

int cli_sessions(int argc, char **argv) {
    const char *root = NULL;
    char def[CLI_PATH_MAX];
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            cli_print_usage("sessions", stdout);
            return CLI_OK;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage_error("sessions", "unknown option '%s'", argv[i]);
        if (root) return cli_usage_error("sessions", "more than one ROOT given");
        root = argv[i];
    }
    if (!root) root = cli_default_root(def, sizeof def);

    gpufl_session_list_t *list;
    int rc = cli_sessions_list(root, &list);
    if (rc) return rc;
    size_t n = gpufl_session_list_count(list);
    if (n == 0) {
        if (cli_is_session_dir(root))
            printf("'%s' is a session directory, not a log root: gpufl report %s\n", root, root);
        else
            printf("no sessions found under '%s'\n", root);
        gpufl_session_list_destroy(list);
        return CLI_OK;
    }
    int width = (int)strlen("SESSION");
    for (size_t i = 0; i < n; i++) {
        const gpufl_session_info_t *s = gpufl_session_list_get(list, i);
        if ((int)strlen(s->name) > width) width = (int)strlen(s->name);
    }
    printf("%s%-*s  %-19s  %-16s  %-15s  %s%s\n", cli_bold(stdout), width, "SESSION", "START (UTC)",
           "APP", "DURATION", "SIZE", cli_reset(stdout));
    for (size_t i = 0; i < n; i++) {
        const gpufl_session_info_t *s = gpufl_session_list_get(list, i);
        char start[32], duration[32], size[32];
        format_start(s->start_unix_us, start, sizeof start);
        format_duration(s->duration_ns, duration, sizeof duration);
        format_size(s->size_bytes, size, sizeof size);
        printf("%-*s  %-19s  %-16s  %-15s  %s\n", width, s->name, start,
               *s->app_name ? s->app_name : "-", duration, size);
    }
    gpufl_session_list_destroy(list);
    return CLI_OK;
}

int cli_target_arg(const char *cmd, int argc, char **argv, int *i, cli_target_t *t) {
    const char *a = argv[*i], *id;
    if (strcmp(a, "--session") == 0) {
        if (*i + 1 >= argc) return cli_usage_error(cmd, "--session needs a session id");
        id = argv[++*i];
    } else if (strncmp(a, "--session=", 10) == 0) {
        id = a + 10;
    } else if (a[0] == '-' && a[1] != '\0') {
        return cli_usage_error(cmd, "unknown option '%s'", a);
    } else if (t->n_args == 2) {
        return cli_usage_error(cmd, "unexpected argument '%s'", a);
    } else if (t->n_args == 1 && t->session) {
        return cli_usage_error(cmd, "more than one session given ('%s' and --session)", a);
    } else {
        t->args[t->n_args++] = a;
        return CLI_OK;
    }
    if (*id == '\0') return cli_usage_error(cmd, "--session needs a session id");
    if (t->session || t->n_args == 2) return cli_usage_error(cmd, "more than one session given");
    t->session = id;
    return CLI_OK;
}

static int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Says why no session was found under root, for id (NULL: the latest).
 * root_named: the user named root (else it is the default one); id_alone:
 * id was the only argument, which is not a directory; why: the lookup's
 * error. */
static int not_found(const char *root, const char *id, int root_named, int id_alone,
                     const char *why) {
    struct stat st;
    if (!is_directory(root)) {
        if (root_named && stat(root, &st) == 0)
            fprintf(stderr, "gpufl: '%s' is not a directory\n", root);
        else if (root_named)
            fprintf(stderr, "gpufl: no such session or log root: '%s'\n", root);
        else if (id_alone)
            fprintf(stderr,
                    "gpufl: no such session: '%s' (not a directory, and the log root '%s' "
                    "does not exist)\n",
                    id, root);
        else
            fprintf(stderr,
                    "gpufl: no session found: log root '%s' does not exist (set "
                    "GPUFL_LOG_PATH, or name a session directory or log root)\n",
                    root);
        return CLI_FAILED;
    }
    gpufl_session_list_t *list;
    if (cli_is_session_dir(root)) {
        fprintf(stderr, "gpufl: %s\n", why); /* the session's id is another */
        return CLI_FAILED;
    }
    if (gpufl_session_list_create(&list, root) != 0) {
        fprintf(stderr, "gpufl: %s\n", gpufl_last_error());
        return CLI_FAILED;
    }
    size_t n = gpufl_session_list_count(list);
    gpufl_session_list_destroy(list);
    if (n > 0 && !id)
        fprintf(stderr, "gpufl: %s\n", why); /* not a miss: out of memory, path too long */
    else if (n == 0 && root_named)
        fprintf(stderr,
                "gpufl: '%s' is neither a session directory (no device.log or scope.log) "
                "nor a log root holding sessions\n",
                root);
    else if (n == 0 && !id_alone)
        fprintf(stderr, "gpufl: no session found under '%s'\n", root);
    else if (id_alone)
        fprintf(stderr,
                "gpufl: no such session: '%s' (neither a directory nor a session under "
                "'%s'; see gpufl sessions %s)\n",
                id, root, root);
    else
        fprintf(stderr, "gpufl: no such session: '%s' under '%s' (see gpufl sessions %s)\n", id,
                root, root);
    return CLI_FAILED;
}

int cli_resolve_session(const cli_target_t *t, char *dir, size_t size) {
    char def[CLI_PATH_MAX];
    const char *root = t->n_args ? t->args[0] : cli_default_root(def, sizeof def);
    const char *id = t->n_args == 2 ? t->args[1] : t->session;
    int root_named = t->n_args > 0, id_alone = 0;
    /* One argument that is no directory and no path: a session id under the
     * default root. */
    if (t->n_args == 1 && !t->session && !is_directory(root) && !strchr(root, '/')) {
        id = root;
        root = cli_default_root(def, sizeof def);
        root_named = 0;
        id_alone = 1;
    }
    if (is_directory(root) && gpufl_analysis_find(root, NULL, id, dir, size) == 0) return CLI_OK;
    char why[512];
    snprintf(why, sizeof why, "%s", gpufl_last_error());
    return not_found(root, id, root_named, id_alone, why);
}
