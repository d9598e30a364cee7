// SPDX-License-Identifier: Apache-2.0
/*
 * kill_check.c - SIGKILLs kill_writer at 20 points between 5 and 200 ms into its scope storm and
 * checks what each death left: complete JSON lines (the last possibly cut short), no session_end,
 * scopes on disk without any shutdown, and a report that still reads the session.
 */
#include "logcheck.h"

#include <gpufl/gpufl.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void fail(int run, const char *what) {
    fprintf(stderr, "kill_check: run %d: FAIL: %s\n", run, what);
    failures++;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) continue;
}

/* The prefix checker is what judges a cut line: make sure it judges right. */
static int self_test(void) {
    static const char *const good[] = {"{\"type\":\"sco",
                                       "{\"a\":[1,2",
                                       "{\"a\":tr",
                                       "{\"a\":-",
                                       "{\"a\":1.5e",
                                       "{\"a\":\"x\\u00",
                                       "{\"a\":{\"b\":null}",
                                       "{\"a\":1}",
                                       "{",
                                       "{\"a\":[]",
                                       "{\"a\":0.",
                                       "{\"a\""};
    static const char *const bad[] = {"{\"a\":x",    "{\"a\":1}}", "{\"a\":01",
                                      "{\"a\":[1,]", "{\"a\" 1",   "{\"a\":\"\\q",
                                      "{\"a\":nul,", "{,",         "{\"a\":1.x"};
    int ok = 1;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!lc_json_prefix_ok(good[i], strlen(good[i])))
            fprintf(stderr, "kill_check: self test: '%s' is a JSON prefix\n", good[i]), ok = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (lc_json_prefix_ok(bad[i], strlen(bad[i])))
            fprintf(stderr, "kill_check: self test: '%s' is not a JSON prefix\n", bad[i]), ok = 0;
    return ok;
}

/* Starts the writer, waits for "ready", kills it after delay_ms. 0 when it died by SIGKILL. */
static int kill_one(int run, const char *writer, const char *log_path, int delay_ms) {
    char err_path[4200];
    int fds[2], status;
    char buf[16] = {0};
    struct pollfd pfd;
    pid_t pid;

    snprintf(err_path, sizeof err_path, "%s.stderr", log_path); /* its drop warnings */
    if (pipe(fds) != 0) return fail(run, "pipe"), -1;
    pid = fork();
    if (pid < 0) return fail(run, "fork"), -1;
    if (pid == 0) {
        FILE *err = freopen(err_path, "w", stderr);
        (void)err;
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl(writer, writer, log_path, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    pfd.fd = fds[0];
    pfd.events = POLLIN;
    if (poll(&pfd, 1, 30000) != 1 || read(fds[0], buf, sizeof buf - 1) <= 0 ||
        strncmp(buf, "ready", 5) != 0) {
        fail(run, "the writer did not get ready within 30 s");
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        close(fds[0]);
        return -1;
    }
    sleep_ms(delay_ms);
    kill(pid, SIGKILL);
    close(fds[0]);
    if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        return fail(run, "the writer did not die by SIGKILL (it exited or crashed first)"), -1;
    return 0;
}

static void check_session(int run, const char *log_path, int delay_ms) {
    char session[4096], report[4200];
    lc_summary_t s;
    size_t len = 0;
    char *text;

    if (lc_only_session(log_path, session, sizeof session) != 0) {
        fail(run, "no single session directory under the log path");
        return;
    }
    if (lc_summarize(session, 1, &s) != 0) fail(run, "a log line is not valid JSON (see above)");
    for (int f = 0; f < LC_NFILES; f++)
        if (s.session_ends[f]) fail(run, "a killed session has session_end");
    if (s.begins == 0) fail(run, "no scope_begin rows reached scope.log");
    if (lc_scope_count(&s, "warm") != 8) fail(run, "the 8 flushed 'warm' scopes are not all there");
    /* The writer nests two deep; a dropped scope_end must not leave later scopes nested in a
     * scope that the thread has long closed (docs/log-format.md: depth, parent, path). */
    if (s.max_depth > 2) {
        fprintf(stderr,
                "kill_check: run %d: a scope_begin has depth %lld; the writer never nests "
                "deeper than 2\n",
                run, s.max_depth);
        fail(run, "scope_begin depth/parent/path do not match the program's nesting");
    }
    /* 100 ms is 20 flush intervals: the collector must have written some of the storm. */
    if (delay_ms >= 100 && lc_scope_count(&s, "loop_a") + lc_scope_count(&s, "loop_b") == 0)
        fail(run, "no scope of the writer threads reached disk before the kill");
    printf("run %2d: killed after %3d ms: %zu/%zu/%zu lines, %zu begins, %zu ends%s\n", run,
           delay_ms, s.lines[LC_DEVICE], s.lines[LC_SCOPE], s.lines[LC_SYSTEM], s.begins, s.ends,
           s.truncated[0] || s.truncated[1] || s.truncated[2] ? ", a cut last line" : "");
    lc_summary_free(&s);

    snprintf(report, sizeof report, "%s/report.txt", log_path);
    if (gpufl_report_session(session, report) != 0) {
        fprintf(stderr, "kill_check: report: %s\n", gpufl_last_error());
        fail(run, "gpufl_report_session fails on a killed session");
        return;
    }
    text = lc_read(report, &len);
    if (!text || len == 0 || !strstr(text, "kill_writer"))
        fail(run, "the report of a killed session is empty or lacks the app name");
    free(text);
}

/* A kill rarely lands inside a write(), so make the cut by hand: copy a killed session with the
 * last line of each file cut in half, and check that it still reads and reports. */
static void check_cut_copy(const char *out_dir, const char *log_path) {
    char session[4096], copy_dir[4096], path[4200], report[4200];
    lc_summary_t s;
    if (lc_only_session(log_path, session, sizeof session) != 0) return;
    snprintf(copy_dir, sizeof copy_dir, "%s/cut/%s", out_dir, strrchr(session, '/') + 1);
    if (lc_mkdir_p(copy_dir) != 0) {
        fail(-1, "cannot create the cut copy");
        return;
    }
    for (int f = 0; f < LC_NFILES; f++) {
        size_t len = 0, start;
        char *text;
        FILE *out;
        snprintf(path, sizeof path, "%s/%s", session, lc_file_names[f]);
        if (!(text = lc_read(path, &len)) || len < 2) {
            free(text);
            fail(-1, "cannot read a killed log to cut");
            return;
        }
        while (len > 0 && text[len - 1] != '\n') len--; /* drop an already cut tail */
        for (start = len - 1; start > 0 && text[start - 1] != '\n'; start--) continue;
        len = start + (len - start) / 2; /* half of the last whole line */
        snprintf(path, sizeof path, "%s/%s", copy_dir, lc_file_names[f]);
        out = fopen(path, "wb");
        if (!out || fwrite(text, 1, len, out) != len) fail(-1, "cannot write the cut copy");
        if (out) fclose(out);
        free(text);
    }
    if (lc_summarize(copy_dir, 1, &s) != 0) fail(-1, "the cut copy does not read (see above)");
    if (!s.truncated[LC_DEVICE] || !s.truncated[LC_SCOPE] || !s.truncated[LC_SYSTEM])
        fail(-1, "the cut copy was not seen as cut");
    lc_summary_free(&s);
    snprintf(report, sizeof report, "%s/cut/report.txt", out_dir);
    if (gpufl_report_session(copy_dir, report) != 0) {
        fprintf(stderr, "kill_check: report: %s\n", gpufl_last_error());
        fail(-1, "gpufl_report_session fails on a session whose last lines are cut");
    }
    printf("cut copy: every file's last line cut in half, still reads and reports\n");
}

int main(int argc, char **argv) {
    int runs = argc > 3 ? atoi(argv[3]) : 20;
    if (argc < 3 || runs < 2) {
        fprintf(stderr, "usage: %s KILL_WRITER OUT_DIR [RUNS>=2]\n", argv[0]);
        return 2;
    }
    if (!self_test()) return 1;
    if (lc_rm_rf(argv[2]) != 0 || lc_mkdir_p(argv[2]) != 0) {
        fprintf(stderr, "kill_check: cannot prepare %s\n", argv[2]);
        return 1;
    }
    for (int run = 0; run < runs; run++) {
        char log_path[4096];
        int delay_ms = 5 + run * 195 / (runs - 1);
        snprintf(log_path, sizeof log_path, "%s/run%02d", argv[2], run);
        if (kill_one(run, argv[1], log_path, delay_ms) == 0) check_session(run, log_path, delay_ms);
        if (run == runs - 1) check_cut_copy(argv[2], log_path);
    }
    if (failures) {
        fprintf(stderr, "kill_check: %d failure(s); logs kept in %s\n", failures, argv[2]);
        return 1;
    }
    printf("kill_check: %d killed sessions all readable\n", runs);
    return 0;
}
