// SPDX-License-Identifier: Apache-2.0
/*
 * kill_writer.c - the victim of the kill test (kill_check.c): a session that flushes every 5 ms
 * without fsync, and two threads opening and closing scopes as fast as they can until SIGKILL.
 * Prints "ready" once its first scopes are on disk. Usage: kill_writer LOG_PATH
 */
#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *spin(void *arg) {
    const char *name = arg;
    for (;;) {
        gpufl_scope_t outer = gpufl_scope_begin(name, "kill");
        gpufl_scope_t inner = gpufl_scope_begin("inner", NULL);
        gpufl_scope_end(inner);
        gpufl_scope_end(outer);
    }
    return NULL;
}

int main(int argc, char **argv) {
    static char names[2][8] = {"loop_a", "loop_b"};
    gpufl_options_t o;
    pthread_t threads[2];

    if (argc != 2) {
        fprintf(stderr, "usage: %s LOG_PATH\n", argv[0]);
        return 2;
    }
    gpufl_options_init(&o);
    o.app_name = "kill_writer";
    o.log_path = argv[1];
    o.flush_logs_always = 0;
    o.flush_interval_ms = 5;
    o.system_sample_rate_ms = 5; /* system.log is written to while the kill comes, too */
    o.continuous_system_sampling = 1;
    o.ring_capacity_records = 256; /* keeps the logs small: most records are dropped */
    if (gpufl_init(&o) != 0) {
        fprintf(stderr, "kill_writer: init: %s\n", gpufl_last_error());
        return 1;
    }
    for (int i = 0; i < 8; i++) gpufl_scope_end(gpufl_scope_begin("warm", NULL));
    if (gpufl_flush() != 0) {
        fprintf(stderr, "kill_writer: flush: %s\n", gpufl_last_error());
        return 1;
    }
    for (int i = 0; i < 2; i++) {
        if (pthread_create(&threads[i], NULL, spin, names[i]) != 0) {
            fprintf(stderr, "kill_writer: cannot start a thread\n");
            return 1;
        }
    }
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
}
