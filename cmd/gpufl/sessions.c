/*
 * sessions.c - `gpufl sessions`: the session directories under a log root,
 * newest first (the listing is the analysis library's, lib/analysis/sessions.c).
 * Also the lookup the other subcommands use (the log root, the latest session).
 */
#include "cli.h"

#include "analysis/sessions.h"

#include <gpufl/gpufl.h>

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

int cli_is_session_dir(const char *dir) { return gpufl__session_dir_check(dir); }

int cli_sessions_list(const char *root, cli_session_t **out, size_t *count) {
    if (gpufl__sessions_list(root, out, count) == 0) return CLI_OK;
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

    cli_session_t *list;
    size_t n;
    int rc = cli_sessions_list(root, &list, &n);
    if (rc) return rc;
    if (n == 0) {
        printf("no sessions found under '%s'\n", root);
        free(list);
        return CLI_OK;
    }
    int width = (int)strlen("SESSION");
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(list[i].name) > width) width = (int)strlen(list[i].name);
    printf("%s%-*s  %-19s  %-16s  %-15s  %s%s\n", cli_bold(stdout), width, "SESSION", "START (UTC)",
           "APP", "DURATION", "SIZE", cli_reset(stdout));
    for (size_t i = 0; i < n; i++) {
        char start[32], duration[32], size[32];
        format_start(list[i].epoch_unix_us, start, sizeof start);
        format_duration(list[i].duration_ns, duration, sizeof duration);
        format_size(list[i].size_bytes, size, sizeof size);
        printf("%-*s  %-19s  %-16s  %-15s  %s\n", width, list[i].name, start,
               *list[i].app_name ? list[i].app_name : "-", duration, size);
    }
    free(list);
    return CLI_OK;
}

static int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int cli_resolve_session(const char *arg, char *dir, size_t size) {
    char root[CLI_PATH_MAX];
    cli_default_root(root, sizeof root);
    if (arg == NULL) {
        cli_session_t *list;
        size_t n;
        if (!is_directory(root)) {
            fprintf(stderr,
                    "gpufl: no session found: log root '%s' does not exist (set GPUFL_LOG_PATH "
                    "or name a session directory)\n",
                    root);
            return CLI_FAILED;
        }
        int rc = cli_sessions_list(root, &list, &n);
        if (rc) return rc;
        if (n == 0) {
            fprintf(stderr, "gpufl: no session found under '%s'\n", root);
            free(list);
            return CLI_FAILED;
        }
        snprintf(dir, size, "%s", list[0].path);
        free(list);
        return CLI_OK;
    }
    if (is_directory(arg)) {
        if (!cli_is_session_dir(arg)) {
            fprintf(stderr, "gpufl: '%s' is not a session directory (no device.log or scope.log)\n",
                    arg);
            return CLI_FAILED;
        }
        snprintf(dir, size, "%s", arg);
        return CLI_OK;
    }
    if (strchr(arg, '/') == NULL && (size_t)snprintf(dir, size, "%s/%s", root, arg) < size &&
        is_directory(dir) && cli_is_session_dir(dir))
        return CLI_OK;
    fprintf(stderr, "gpufl: no such session: '%s' (neither a directory nor a session under '%s')\n",
            arg, root);
    return CLI_FAILED;
}
