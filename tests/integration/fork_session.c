// SPDX-License-Identifier: Apache-2.0
/*
 * fork_session.c - fork() in the middle of a session: the child's scopes are no-ops, it may start
 * and end a session of its own in another directory, and neither it nor a child that exits through
 * exit() and the atexit handler may touch the parent's session, which ends complete.
 * Usage: fork_session LOG_ROOT
 */
#include "logcheck.h"

#include <gpufl/gpufl.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fork_session[%d]: FAIL line %d: %s\n", (int)getpid(), __LINE__,       \
                    #cond);                                                                        \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int opened_in_child(void) {
    int ran = 0;
    GFL_SCOPE("child_noop_macro") { ran = 1; }
    return ran;
}

/* The first child: nothing of the parent's session is live; it runs one of its own. */
static int child_with_own_session(const char *root, const char *parent_dir,
                                  gpufl_scope_t inherited) {
    char logs[4096], dir[4096];
    gpufl_options_t o;
    lc_summary_t s;

    CHECK(gpufl_is_active() == 0);
    CHECK(gpufl_scope_begin("child_noop", NULL) == 0);
    CHECK(opened_in_child() == 1);
    gpufl_scope_end(inherited); /* the parent's handle: must be ignored */

    snprintf(logs, sizeof logs, "%s/child", root);
    gpufl_options_init(&o);
    o.app_name = "fork_child";
    o.log_path = logs;
    CHECK(gpufl_init(&o) == 0);
    CHECK(gpufl_is_active() == 1);
    CHECK(gpufl_system_start("child_window") == 0);
    GFL_SCOPE("child_outer") {
        gpufl_scope_t in = gpufl_scope_begin("child_inner", "t");
        CHECK(in != 0);
        gpufl_scope_end(in);
    }
    CHECK(gpufl_system_stop("child_window") == 0);
    CHECK(gpufl_session_dir(dir, sizeof dir) > 0);
    CHECK(strcmp(dir, parent_dir) != 0 && strncmp(dir, logs, strlen(logs)) == 0);
    gpufl_shutdown();
    CHECK(gpufl_is_active() == 0);

    CHECK(lc_summarize(dir, 0, &s) == 0);
    for (int f = 0; f < LC_NFILES; f++) CHECK(s.session_ends[f] == 1 && s.end_is_last[f]);
    CHECK(s.header_pid == (long long)getpid());
    CHECK(s.begins == 2 && s.ends == 2 && s.unmatched == 0);
    CHECK(lc_scope_count(&s, "child_outer") == 1 && lc_scope_count(&s, "child_inner") == 1);
    CHECK(lc_scope_count(&s, "child_noop") == 0 && lc_scope_count(&s, "parent_outer") == 0);
    json_t *start = lc_system_record(&s, "system_start", "child_window");
    CHECK(start != NULL);
    /* tid is the OS thread id of the caller: the child's main thread, not the parent's. */
    if (start) {
        long long tid = json_integer_value(json_object_get(start, "tid"));
        if (tid != (long long)getpid())
            fprintf(stderr, "fork_session: child's system_start tid %lld, its thread id is %d\n",
                    tid, (int)getpid());
        CHECK(tid == (long long)getpid());
    }
    lc_summary_free(&s);
    return failures ? 1 : 0;
}

/* 0 when the child exited 0; otherwise says how it ended. A child that hangs (a lock inherited
 * across fork, held by a thread that does not exist in the child) is killed after 30 s. */
static int wait_child(pid_t pid, const char *which) {
    int status = 0, rc;
    for (int waited_ms = 0;; waited_ms += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (r < 0) return -1;
        if (waited_ms >= 30000) {
            fprintf(stderr, "fork_session: the %s hangs; killing it\n", which);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(10000);
    }
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (rc != 0)
        fprintf(stderr, "fork_session: the %s ended with %s %d\n", which,
                WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? rc : rc - 128);
    return rc;
}

/* Lets the collector finish its pass before fork. The library needs no such thing with glibc's
 * malloc, which is fork-safe; the allocator of GCC 12's ASan is not, and a child forked while the
 * collector thread allocates would deadlock in its first malloc. */
static void quiesce(void) { CHECK(gpufl_flush() == 0); }

int main(int argc, char **argv) {
    char logs[4096], dir[4096];
    gpufl_options_t o;
    gpufl_scope_t outer;
    lc_summary_t s;
    pid_t pid;

    if (argc != 2) {
        fprintf(stderr, "usage: %s LOG_ROOT\n", argv[0]);
        return 2;
    }
    if (lc_rm_rf(argv[1]) != 0 || lc_mkdir_p(argv[1]) != 0) return 2;
    snprintf(logs, sizeof logs, "%s/parent", argv[1]);
    gpufl_options_init(&o);
    o.app_name = "fork_parent";
    o.log_path = logs;
    if (gpufl_init(&o) != 0) {
        fprintf(stderr, "fork_session: init: %s\n", gpufl_last_error());
        return 1;
    }
    CHECK(gpufl_session_dir(dir, sizeof dir) > 0);
    CHECK(gpufl_system_start("parent_window") == 0);
    outer = gpufl_scope_begin("parent_outer", NULL);
    CHECK(outer != 0);

    quiesce();
    pid = fork();
    if (pid == 0) _exit(child_with_own_session(argv[1], dir, outer));
    CHECK(pid > 0);
    CHECK(wait_child(pid, "child with its own session (_exit)") == 0);

    /* A second child that leaves through exit(): the atexit handler runs there too. */
    quiesce();
    pid = fork();
    if (pid == 0) {
        gpufl_scope_end(gpufl_scope_begin("exit_child_noop", NULL));
        gpufl_scope_end(outer);
        exit(gpufl_is_active() == 0 ? 0 : 1);
    }
    CHECK(pid > 0);
    CHECK(wait_child(pid, "child that leaves through exit() and atexit") == 0);

    CHECK(gpufl_is_active() == 1);
    GFL_SCOPE("parent_after") {}
    gpufl_scope_end(outer);
    CHECK(gpufl_system_stop("parent_window") == 0);
    gpufl_shutdown();

    CHECK(lc_summarize(dir, 0, &s) == 0);
    for (int f = 0; f < LC_NFILES; f++) CHECK(s.session_ends[f] == 1 && s.end_is_last[f]);
    CHECK(s.header_pid == (long long)getpid());
    CHECK(s.begins == 2 && s.ends == 2 && s.unmatched == 0 && s.implicit_ends == 0);
    CHECK(s.max_depth == 2); /* parent_after opened inside parent_outer */
    CHECK(lc_scope_count(&s, "parent_outer") == 1 && lc_scope_count(&s, "parent_after") == 1);
    CHECK(lc_scope_count(&s, "child_noop") == 0 && lc_scope_count(&s, "child_outer") == 0 &&
          lc_scope_count(&s, "exit_child_noop") == 0);
    json_t *start = lc_system_record(&s, "system_start", "parent_window");
    CHECK(start && json_integer_value(json_object_get(start, "tid")) == (long long)getpid());
    lc_summary_free(&s);

    {
        char child_logs[4096], child_dir[4096];
        snprintf(child_logs, sizeof child_logs, "%s/child", argv[1]);
        CHECK(lc_only_session(child_logs, child_dir, sizeof child_dir) == 0);
        CHECK(lc_only_session(logs, child_dir, sizeof child_dir) == 0); /* parent: one session */
    }
    if (failures) {
        fprintf(stderr, "fork_session: %d failure(s)\n", failures);
        return 1;
    }
    printf("fork_session: parent and child sessions are separate and complete\n");
    return 0;
}
