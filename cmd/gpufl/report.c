/*
 * report.c - `gpufl report`: the text report of one session, the same the
 * library's gpufl_report_session() writes. Resolves what the user named (a
 * directory, a session id under the log root, or nothing: the latest
 * session) and says which path failed when one does.
 */
#include "cli.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Sets dir to the session named by arg (NULL: the latest one). */
static int resolve_session(const char *arg, char *dir, size_t size) {
    char root[CLI_PATH_MAX];
    cli_default_root(root, sizeof root);
    if (arg == NULL) {
        cli_session_t *list;
        size_t n;
        if (!is_dir(root)) {
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
    if (is_dir(arg)) {
        if (!cli_is_session_dir(arg)) {
            fprintf(stderr, "gpufl: '%s' is not a session directory (no device.log or scope.log)\n",
                    arg);
            return CLI_FAILED;
        }
        snprintf(dir, size, "%s", arg);
        return CLI_OK;
    }
    if (strchr(arg, '/') == NULL && (size_t)snprintf(dir, size, "%s/%s", root, arg) < size &&
        is_dir(dir) && cli_is_session_dir(dir))
        return CLI_OK;
    fprintf(stderr, "gpufl: no such session: '%s' (neither a directory nor a session under '%s')\n",
            arg, root);
    return CLI_FAILED;
}

int cli_report(int argc, char **argv) {
    const char *arg = NULL, *output = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            cli_print_usage("report", stdout);
            return CLI_OK;
        }
        if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0) {
            if (i + 1 >= argc) return cli_usage_error("report", "%s needs a file name", a);
            output = argv[++i];
        } else if (strncmp(a, "--output=", 9) == 0) {
            output = a + 9;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error("report", "unknown option '%s'", a);
        } else if (arg) {
            return cli_usage_error("report", "more than one session given");
        } else {
            arg = a;
        }
    }
    if (output && *output == '\0') return cli_usage_error("report", "--output needs a file name");

    char dir[CLI_PATH_MAX];
    int rc = resolve_session(arg, dir, sizeof dir);
    if (rc) return rc;
    if (gpufl_report_session(dir, output) != 0) {
        fprintf(stderr, "gpufl: cannot report '%s': %s\n", dir, gpufl_last_error());
        return CLI_FAILED;
    }
    return CLI_OK;
}
