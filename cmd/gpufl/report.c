// SPDX-License-Identifier: Apache-2.0
/*
 * report.c - `gpufl report`: the report of one session in text (the one the
 * library's gpufl_report_session() writes), JSON, Markdown or HTML. Resolves
 * what the user named (a directory, a session id under the log root, or
 * nothing: the latest session), says which path failed when one does, and
 * shows the progress of a long load on a terminal's stderr.
 */
#include "cli.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_report(int argc, char **argv) {
    const char *output = NULL, *format = "text";
    cli_target_t target = {0};
    int rc;
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
        } else if (strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) {
            if (i + 1 >= argc) return cli_usage_error("report", "%s needs a format", a);
            format = argv[++i];
        } else if (strncmp(a, "--format=", 9) == 0) {
            format = a + 9;
        } else if ((rc = cli_target_arg("report", argc, argv, &i, &target)) != CLI_OK) {
            return rc;
        }
    }
    if (output && *output == '\0') return cli_usage_error("report", "--output needs a file name");
    gpufl_report_format_t fmt;
    if (gpufl_report_format_parse(format, &fmt) != 0)
        return cli_usage_error("report", "unknown format '%s' (text, json, markdown, html)",
                               format);

    char dir[CLI_PATH_MAX];
    rc = cli_resolve_session(&target, dir, sizeof dir);
    if (rc) return rc;
    FILE *out = stdout;
    if (output) {
        out = fopen(output, "w");
        if (!out) {
            fprintf(stderr, "gpufl: cannot write report '%s': %s\n", output, strerror(errno));
            return CLI_FAILED;
        }
    }
    gpufl_analysis_t *a = NULL;
    int lrc = cli_load_session(dir, &a);
    if (lrc != CLI_OK) {
        if (out != stdout) fclose(out);
        return lrc;
    }
    gpufl_report_options_t opts;
    gpufl_report_options_init(&opts);
    opts.format = format;
    lrc = gpufl_analysis_report_write(a, &opts, out);
    gpufl_analysis_close(a);
    if (out != stdout && fclose(out) != 0 && lrc == 0) {
        fprintf(stderr, "gpufl: cannot write report '%s': %s\n", output, strerror(errno));
        return CLI_FAILED;
    }
    if (lrc != 0) {
        fprintf(stderr, "gpufl: cannot report '%s': %s\n", dir, gpufl_last_error());
        return CLI_FAILED;
    }
    return CLI_OK;
}
