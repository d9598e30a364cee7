// SPDX-License-Identifier: Apache-2.0
/*
 * exit_without_shutdown.c - a program that starts a session, opens and closes scopes (also from a
 * second thread) and returns from main without gpufl_shutdown(): the atexit handler must end the
 * session. Runs itself as the child (`--child LOG_PATH`), then checks the child's logs.
 */
#include "logcheck.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { OUTER = 100, INNER = 2, THREAD_SCOPES = 50 };

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < THREAD_SCOPES; i++)
        gpufl_scope_end(gpufl_scope_begin("thread_scope", NULL));
    return NULL;
}

static int child(const char *log_path) {
    gpufl_options_t o;
    pthread_t t;
    gpufl_options_init(&o);
    o.app_name = "exit_without_shutdown";
    o.log_path = log_path;
    if (gpufl_init(&o) != 0) {
        fprintf(stderr, "exit_without_shutdown: init: %s\n", gpufl_last_error());
        return 3;
    }
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 3;
    gpufl_system_start("whole_run");
    for (int i = 0; i < OUTER; i++) {
        GFL_SCOPE("outer") {
            for (int j = 0; j < INNER; j++) GFL_SCOPE("inner") {
                }
        }
    }
    gpufl_system_stop("whole_run");
    pthread_join(t, NULL);
    return 0; /* no gpufl_shutdown(): exit() runs the library's atexit handler */
}

int main(int argc, char **argv) {
    char session[4096];
    lc_summary_t s;
    int status, failures = 0;
    pid_t pid;

    if (argc == 3 && strcmp(argv[1], "--child") == 0) return child(argv[2]);
    if (argc != 2) {
        fprintf(stderr, "usage: %s LOG_PATH\n", argv[0]);
        return 2;
    }
    if (lc_rm_rf(argv[1]) != 0) return 2;
    pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "--child", argv[1], (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "exit_without_shutdown: the child did not exit 0\n");
        return 1;
    }
    if (lc_only_session(argv[1], session, sizeof session) != 0) {
        fprintf(stderr, "exit_without_shutdown: no single session under %s\n", argv[1]);
        return 1;
    }
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "exit_without_shutdown: FAIL line %d: %s\n", __LINE__, #cond);         \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
    CHECK(lc_summarize(session, 0, &s) == 0);
    for (int f = 0; f < LC_NFILES; f++) CHECK(s.session_ends[f] == 1 && s.end_is_last[f]);
    CHECK(s.header_pid == (long long)pid);
    CHECK(lc_scope_count(&s, "outer") == OUTER);
    CHECK(lc_scope_count(&s, "inner") == OUTER * INNER);
    CHECK(lc_scope_count(&s, "thread_scope") == THREAD_SCOPES);
    CHECK(s.begins == OUTER * (1 + INNER) + THREAD_SCOPES && s.ends == s.begins);
    CHECK(s.unmatched == 0 && s.implicit_ends == 0 && s.max_depth == 2);
    CHECK(lc_system_record(&s, "system_stop", "whole_run") != NULL);
    lc_summary_free(&s);
    if (failures) {
        fprintf(stderr, "exit_without_shutdown: %d failure(s); logs in %s\n", failures, session);
        return 1;
    }
    printf("exit_without_shutdown: the atexit handler ended the session with every scope\n");
    return 0;
}
