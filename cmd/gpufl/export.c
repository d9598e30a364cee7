// SPDX-License-Identifier: Apache-2.0
/*
 * export.c - `gpufl export`: one session as a trace for Perfetto UI,
 * chrome://tracing or babeltrace2 (gpufl_analysis_export() does the work).
 * Picks the default file name, shows progress on a terminal only, and says
 * which files it wrote.
 */
#include "cli.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The session id: from the header, else the directory's name. */
static const char *session_name(gpufl_analysis_t *a, const char *dir) {
    gpufl_column_t c;
    c.size = sizeof c;
    if (gpufl_analysis_column_find(a, GPUFL_TABLE_SESSION, "session_id", &c) == 0 && c.rows) {
        const char *id = gpufl_analysis_string(a, ((const int64_t *)c.data)[0]);
        if (id && *id) return id;
    }
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    const char *base = dir + n;
    while (base > dir && base[-1] != '/') base--;
    return base;
}

static int parse_count(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end != '\0' || errno) return -1;
    *out = v;
    return 0;
}

int cli_export(int argc, char **argv) {
    const char *output = NULL, *format = NULL, *max = NULL;
    cli_target_t target = {0};
    int rc, force = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **opt = NULL;
        if (cli_is_help(a)) {
            cli_print_usage("export", stdout);
            return CLI_OK;
        }
        if (strcmp(a, "--force") == 0) {
            force = 1;
            continue;
        }
        if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0)
            opt = &output;
        else if (strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0)
            opt = &format;
        else if (strcmp(a, "--max-events") == 0)
            opt = &max;
        if (opt) {
            if (i + 1 >= argc) return cli_usage_error("export", "%s needs a value", a);
            *opt = argv[++i];
        } else if (strncmp(a, "--output=", 9) == 0) {
            output = a + 9;
        } else if (strncmp(a, "--format=", 9) == 0) {
            format = a + 9;
        } else if (strncmp(a, "--max-events=", 13) == 0) {
            max = a + 13;
        } else if ((rc = cli_target_arg("export", argc, argv, &i, &target)) != CLI_OK) {
            return rc;
        }
    }
    gpufl_export_options_t opt;
    memset(&opt, 0, sizeof opt);
    opt.size = sizeof opt;
    opt.overwrite = force;
    if (!format) return cli_usage_error("export", "--format perfetto, chrome or ctf is needed");
    if (gpufl_export_format_parse(format, &opt.format) != 0)
        return cli_usage_error("export", "unknown format '%s' (perfetto, chrome or ctf)", format);
    if (output && *output == '\0') return cli_usage_error("export", "--output needs a file name");
    if (opt.format == GPUFL_EXPORT_CTF && output && strcmp(output, "-") == 0)
        return cli_usage_error("export", "a CTF trace is a directory: --output DIR, not -");
    if (max) {
        if (parse_count(max, &opt.max_events_per_file))
            return cli_usage_error("export", "--max-events needs a count, not '%s'", max);
        if (opt.max_events_per_file == 0) opt.max_events_per_file = UINT64_MAX;
        if (opt.format != GPUFL_EXPORT_CHROME)
            return cli_usage_error("export", "--max-events applies to --format chrome only");
    }

    char dir[CLI_PATH_MAX];
    rc = cli_resolve_session(&target, dir, sizeof dir);
    if (rc) return rc;

    gpufl_analysis_t *a = NULL;
    if (cli_load_session(dir, &a) != CLI_OK) return CLI_FAILED;

    char path[CLI_PATH_MAX];
    if (!output) {
        snprintf(path, sizeof path, "%s%s", session_name(a, dir),
                 gpufl_export_extension(opt.format));
        output = path;
    }
    int to_stdout = strcmp(output, "-") == 0;
    opt.path = output;
    opt.out = stdout;
    cli_progress_t progress;
    cli_progress_start(&progress, "exporting");
    opt.progress = cli_progress_fraction;
    opt.progress_user = &progress;
    gpufl_export_result_t res;
    rc = gpufl_analysis_export(&res, a, &opt);
    cli_progress_clear(&progress);
    if (rc != 0) {
        fprintf(stderr, "gpufl: cannot export '%s': %s\n", dir, gpufl_last_error());
        for (size_t i = 0; i < res.n_files; i++)
            fprintf(stderr, "gpufl: written before the failure: %s\n", res.files[i]);
        gpufl_export_result_fini(&res);
        gpufl_analysis_close(a);
        return CLI_FAILED;
    }

    /* What was written goes to stdout, unless the trace itself did. */
    FILE *say = to_stdout ? stderr : stdout;
    if (!to_stdout) {
        for (size_t i = 0; i < res.n_files; i++) fprintf(say, "%s\n", res.files[i]);
    }
    if (res.n_files > 1)
        fprintf(stderr,
                "gpufl: more than %" PRIu64 " events: split by time into %zu files; "
                "%" PRIu64 " launch arrows crossed a file boundary and were left out\n",
                opt.max_events_per_file ? opt.max_events_per_file
                                        : (uint64_t)GPUFL_EXPORT_CHROME_MAX_EVENTS,
                res.n_files, res.flows_cut);
    if (res.split_suppressed)
        fprintf(stderr,
                "gpufl: note: more than %u events in one stream; chrome://tracing may not "
                "open it (write to a file to split it)\n",
                GPUFL_EXPORT_CHROME_MAX_EVENTS);
    if (opt.format == GPUFL_EXPORT_CTF && res.events == 0)
        fprintf(stderr, "gpufl: note: the session has no scopes, GPU work, syncs or samples: "
                        "the trace holds no events\n");
    if (res.clipped)
        fprintf(stderr, "gpufl: note: %" PRIu64 " slices were shortened to nest on their track\n",
                res.clipped);
    gpufl_export_result_fini(&res);
    gpufl_analysis_close(a);
    return CLI_OK;
}
