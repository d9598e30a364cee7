// SPDX-License-Identifier: Apache-2.0
/*
 * upload.c - `gpufl upload`: sends finished sessions to gpufl-server through the library's
 * gpufl_upload_logs_result() (the same upload loop and cursor the library and gpufl-agent
 * use), so a session the application already uploaded is reported as delivered, not resent.
 * Exit codes are the issue's: 0 done, 1 partial, 2 failed (a usage error is 2 as well).
 */
#include "cli.h"
#include "flags.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UPLOAD_PARTIAL 1
#define UPLOAD_FAILED  2
#define KEY_MAX        512

static void say_mib(char *buf, size_t size, int64_t bytes) {
    if (bytes < 1024 * 1024)
        snprintf(buf, size, "%.1f KiB", (double)bytes / 1024);
    else
        snprintf(buf, size, "%.1f MiB", (double)bytes / (1024 * 1024));
}

int cli_upload(int argc, char **argv) {
    const char *server = NULL, *key_file = NULL, *target = NULL;
    int all = 0, tails = 0;
    long long budget_s = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            cli_print_usage("upload", stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--server") || !strcmp(a, "--api-key-file") ||
                   !strcmp(a, "--budget-s")) {
            if (i + 1 >= argc) return cli_usage_error("upload", "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--server"))
                server = v;
            else if (!strcmp(a, "--api-key-file"))
                key_file = v;
            else {
                char *end;
                budget_s = strtoll(v, &end, 10);
                if (*end || budget_s <= 0)
                    return cli_usage_error("upload",
                                           "--budget-s takes a positive number of "
                                           "seconds, not '%s'",
                                           v);
            }
        } else if (!strcmp(a, "--all")) {
            all = 1;
        } else if (!strcmp(a, "--tails")) {
            tails = 1;
        } else if (a[0] == '-') {
            return cli_usage_error("upload", "unknown option '%s'", a);
        } else if (target) {
            return cli_usage_error("upload", "one SESSION or DIR at most");
        } else {
            target = a;
        }
    }
    char key[KEY_MAX] = "", root[CLI_PATH_MAX];
    if (key_file && cmd_read_key("gpufl", key_file, key, sizeof key) != 0) return UPLOAD_FAILED;
    gpufl_upload_options_t o;
    gpufl_upload_options_init(&o);
    o.backend_url = server;
    o.api_key = key[0] ? key : NULL;
    o.budget_ms = budget_s * 1000;
    o.all = all;
    o.tails = tails;
    if (!target) {
        o.log_path = cli_default_root(root, sizeof root);
    } else if (cli_is_session_dir(target)) {
        if (all) return cli_usage_error("upload", "--all takes a log root, not a session");
        o.session = target;
    } else if (strchr(target, '/') || !strcmp(target, ".")) {
        o.log_path = target; /* a log root */
    } else {
        o.log_path = cli_default_root(root, sizeof root);
        o.session = target; /* a session id under the default root */
    }
    gpufl_upload_result_t r = {.size = sizeof r};
    int rc = gpufl_upload_logs_result(&r, &o);
    char size[32];
    say_mib(size, sizeof size, r.bytes);
    if (rc < 0) {
        fprintf(stderr, "gpufl: %s\n", gpufl_last_error());
        return UPLOAD_FAILED;
    }
    FILE *out = stdout;
    fprintf(out,
            "%lld session%s: %lld window%s sent (%lld the server had already), %lld "
            "records, %s",
            (long long)r.sessions, r.sessions == 1 ? "" : "s", (long long)r.windows,
            r.windows == 1 ? "" : "s", (long long)r.windows_duplicate, (long long)r.events_uploaded,
            size);
    if (r.windows_before) fprintf(out, "; %lld delivered before", (long long)r.windows_before);
    if (r.slices) fprintf(out, "; %lld slice%s", (long long)r.slices, r.slices == 1 ? "" : "s");
    if (r.windows_open && tails)
        fprintf(out, "; %lld open, sent up to their last complete line", (long long)r.windows_open);
    else if (r.windows_open)
        fprintf(out,
                "; %lld not sealed yet (the session runs, or died: --tails sends their complete "
                "lines)",
                (long long)r.windows_open);
    if (r.retries) fprintf(out, "; %lld retries", (long long)r.retries);
    if (r.lines_damaged)
        fprintf(out, "; %lld damaged line%s stored as written", (long long)r.lines_damaged,
                r.lines_damaged == 1 ? "" : "s");
    fprintf(out, "; %lld of %lld complete on the server\n", (long long)r.sessions_completed,
            (long long)r.sessions);
    if (r.windows == 0 && r.windows_before > 0 && rc == 0)
        fprintf(out, "already on the server: nothing to send\n");
    if (rc > 0) {
        fprintf(stderr, "gpufl: %lld window%s not delivered%s: %s\n",
                (long long)(r.errors + r.windows_quarantined), r.errors == 1 ? "" : "s",
                r.windows_quarantined ? " (quarantined ones included)" : "", r.error);
        return r.windows > 0 || r.windows_before > 0 ? UPLOAD_PARTIAL : UPLOAD_FAILED;
    }
    return CLI_OK;
}
