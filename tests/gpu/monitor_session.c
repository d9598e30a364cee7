// SPDX-License-Identifier: Apache-2.0
/*
 * monitor_session.c - a gpufl session that only watches: Monitor engine,
 * continuous sampling, for a given time. The GPU check runs it beside
 * nvidia-smi and a load, then compares what each recorded.
 */
#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: monitor_session LOG_PATH SECONDS RATE_MS [REPORT]\n"
                        "Records a Monitor session for SECONDS, sampling every RATE_MS, "
                        "prints its directory and writes its report to REPORT.\n");
        return argc == 2 ? 0 : 2;
    }
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "monitor_session";
    o.log_path = argv[1];
    o.continuous_system_sampling = 1;
    o.system_sample_rate_ms = atoi(argv[3]);
    o.enable_debug_output = 1;
    if (gpufl_init(&o) != 0) {
        fprintf(stderr, "monitor_session: init failed: %s\n", gpufl_last_error());
        return 1;
    }
    struct timespec t = {atoi(argv[2]), 0};
    nanosleep(&t, NULL);
    char dir[4096];
    gpufl_session_dir(dir, sizeof dir);
    gpufl_shutdown();
    printf("%s\n", dir);
    return argc == 5 ? (gpufl_report_write(argv[4]) == 0 ? 0 : 1) : 0;
}
