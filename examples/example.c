// SPDX-License-Identifier: Apache-2.0
/*
 * example.c - gpufl from C: a session, scopes (with GFL_SCOPE and by hand),
 * a system-sampling window and the report.
 */
#include <gpufl/gpufl.h>

#include <stdio.h>

static int work(int n) {
    volatile int x = 0;
    for (int i = 0; i < n; i++) x += i;
    return x;
}

int main(void) {
    gpufl_options_t opts;
    gpufl_options_init(&opts);
    opts.app_name = "gpufl_example_c";
    opts.system_sample_rate_ms = 10;
    if (gpufl_init(&opts) != 0) fprintf(stderr, "gpufl off: %s\n", gpufl_last_error());

    gpufl_system_start("setup");
    GFL_SCOPE("outer") {
        GFL_SCOPE("inner") { work(1000000); }
    }
    gpufl_scope_t s = gpufl_scope_begin("by_hand", "tag");
    work(1000000);
    gpufl_scope_end(s);
    gpufl_system_stop("setup");

    gpufl_shutdown();
    return gpufl_report_write(NULL) == 0 ? 0 : 1;
}
