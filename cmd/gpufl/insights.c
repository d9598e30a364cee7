// SPDX-License-Identifier: Apache-2.0
/*
 * insights.c - `gpufl insights`: the findings drawn from one session, as
 * text or JSON, from the same rules the report uses (gpufl_analysis.h).
 */
#include "cli.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of option `name` at argv[*i] ("--name V" or "--name=V"); NULL
 * when argv[*i] is another argument; *bad set when the value is missing. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *bad) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        *bad = 1;
        return NULL;
    }
    return argv[++*i];
}

int cli_insights(int argc, char **argv) {
    const char *format = "text", *output = NULL;
    cli_target_t target = {0};
    int rc;
    gpufl_severity_t min = GPUFL_SEVERITY_LOW;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int bad = 0;
        if (cli_is_help(a)) {
            cli_print_usage("insights", stdout);
            return CLI_OK;
        }
        if ((v = option_value(argc, argv, &i, "--format", &bad)) != NULL) {
            format = v;
        } else if ((v = option_value(argc, argv, &i, "--min-severity", &bad)) != NULL) {
            if (gpufl_severity_parse(v, &min))
                return cli_usage_error("insights",
                                       "--min-severity takes LOW, MEDIUM or HIGH, not '%s'", v);
        } else if ((v = option_value(argc, argv, &i, "--output", &bad)) != NULL ||
                   (v = option_value(argc, argv, &i, "-o", &bad)) != NULL) {
            output = v;
        } else if (bad) {
            return cli_usage_error("insights", "%s needs a value", a);
        } else if ((rc = cli_target_arg("insights", argc, argv, &i, &target)) != CLI_OK) {
            return rc;
        }
    }
    int json = strcmp(format, "json") == 0;
    if (!json && strcmp(format, "text") != 0)
        return cli_usage_error("insights", "--format takes text or json, not '%s'", format);
    if (output && *output == '\0') return cli_usage_error("insights", "--output needs a file name");

    char dir[CLI_PATH_MAX];
    rc = cli_resolve_session(&target, dir, sizeof dir);
    if (rc) return rc;
    gpufl_analysis_t *a = NULL;
    if (cli_load_session(dir, &a) != CLI_OK) return CLI_FAILED;
    gpufl_insights_options_t opts;
    gpufl_insights_options_init(&opts);
    opts.format = json ? "json" : "text";
    opts.min_severity = min;
    FILE *out = stdout;
    if (output && (out = fopen(output, "w")) == NULL) {
        fprintf(stderr, "gpufl: cannot write '%s': %m\n", output);
        rc = -1;
    } else {
        rc = gpufl_analysis_insights_write(a, &opts, out);
        if (out != stdout && fclose(out) != 0 && !rc) rc = -1;
        if (rc) fprintf(stderr, "gpufl: cannot write the insights: %s\n", gpufl_last_error());
    }
    gpufl_analysis_close(a);
    return rc ? CLI_FAILED : CLI_OK;
}
