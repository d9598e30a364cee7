// SPDX-License-Identifier: Apache-2.0
/*
 * report_program.c - an application that links libgpufl alone and asks for
 * the end-of-run report (gpufl_report_write), which libgpufl computes by
 * loading libgpufl-analysis at call time. `--expect present`: the report is
 * written and names the scope. `--expect absent` (an install without the
 * analysis library): GPUFL_ENOTSUP, a message naming the library, no file.
 */
#include <gpufl/gpufl.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int failures;

static void check(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    if (!ok) failures++;
}

static int file_has(const char *path, const char *text) {
    char buf[65536];
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
}

int main(int argc, char **argv) {
    if (argc != 5 || strcmp(argv[1], "--expect") != 0 || strcmp(argv[3], "--dir") != 0 ||
        (strcmp(argv[2], "present") != 0 && strcmp(argv[2], "absent") != 0)) {
        fprintf(stderr, "usage: %s --expect present|absent --dir WORKDIR\n", argv[0]);
        return 2;
    }
    int present = strcmp(argv[2], "present") == 0;
    char logs[4096], report[4200];
    snprintf(logs, sizeof logs, "%s/logs", argv[4]);
    snprintf(report, sizeof report, "%s/report.txt", argv[4]);

    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "report_program";
    o.log_path = logs;
    check(gpufl_init(&o) == 0, "gpufl_init");
    gpufl_scope_t s = gpufl_scope_begin("report_scope", NULL);
    gpufl_scope_end(s);
    gpufl_shutdown();

    int rc = gpufl_report_write(report);
    struct stat st;
    if (present) {
        check(rc == 0, "gpufl_report_write returns 0 with libgpufl-analysis installed");
        check(file_has(report, "report_scope"), "the report names the scope");
    } else {
        printf("gpufl_report_write: %d, %s\n", rc, gpufl_last_error());
        check(rc == GPUFL_ENOTSUP, "gpufl_report_write returns GPUFL_ENOTSUP without it");
        check(strstr(gpufl_last_error(), "libgpufl-analysis") != NULL,
              "the message names libgpufl-analysis");
        check(stat(report, &st) != 0, "no report file is left behind");
    }
    return failures ? 1 : 0;
}
