// SPDX-License-Identifier: Apache-2.0
/*
 * flight_crash.c - a program that crashes with the flight recorder on, and
 * the check of what it left. As "crash MODE LOG_PATH" it records 200 scopes
 * and dies: a null write (segv), abort() (abort), or a null write under a
 * SIGSEGV handler of its own installed before gpufl_init (chained: that
 * handler exits 42). As "check LOG_ROOT" it runs each mode in a child and
 * checks the wait status (the signal, or the program's own exit), then the
 * snapshot the handler wrote: one session directory whose files parse, with
 * the last scopes, an event that names the signal, and a report.
 */
#include "logcheck.h"

#include <gpufl/gpufl.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SCOPES 200

static int failures;

static void fail(const char *mode, const char *what) {
    fprintf(stderr, "flight_crash: %s: FAIL: %s\n", mode, what);
    failures++;
}

/* ---------------- the program that crashes ---------------- */

static void own_handler(int sig) {
    (void)sig;
    static const char msg[] = "own SIGSEGV handler ran\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) _exit(43);
    _exit(42);
}

/* The fault itself, a real one: UBSan would otherwise stop the program at
 * the store, before the kernel raises SIGSEGV. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((no_sanitize("undefined")))
#endif
static void
null_write(void) {
    volatile int *volatile nowhere = NULL;
    *nowhere = 1;
}

static int crash(const char *mode, const char *log_path) {
    if (strcmp(mode, "chained") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = own_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
    }
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "flight_crash";
    o.log_path = log_path;
    o.backend = GPUFL_BACKEND_NONE;
    o.flight_recorder_s = 60;
    if (gpufl_init(&o) != 0) {
        fprintf(stderr, "flight_crash: init: %s\n", gpufl_last_error());
        return 2;
    }
    for (int i = 0; i < SCOPES; i++) {
        char name[32];
        snprintf(name, sizeof name, "crash_step_%d", i);
        gpufl_scope_end(gpufl_scope_begin(name, NULL));
    }
    gpufl_flush(); /* the rows reach the ring; a crash cannot wait for the collector */
    if (strcmp(mode, "abort") == 0) abort();
    null_write();
    return 3; /* not reached */
}

/* ---------------- the check ---------------- */

/* The snapshot's event in device.log: its reason into why; complete: 1, 0, -1 (none). */
static int snapshot_event(const char *session, char *why, size_t size) {
    char path[4200];
    size_t len;
    snprintf(path, sizeof path, "%s/device.log", session);
    char *text = lc_read(path, &len);
    int complete = -1;
    for (char *line = text, *nl; line && *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl) break;
        json_t *j = json_loadb(line, (size_t)(nl - line), 0, NULL);
        const char *code = json_string_value(json_object_get(j, "code"));
        if (code && strcmp(code, "flight_recorder_snapshot") == 0) {
            snprintf(why, size, "%s", json_string_value(json_object_get(j, "reason")));
            complete = json_is_true(json_object_get(j, "complete"));
        }
        json_decref(j);
    }
    free(text);
    return complete;
}

static void check_mode(const char *self, const char *root, const char *mode, int want_signal,
                       int want_exit) {
    char log_path[4096], session[4096], report[4200], why[128] = "";
    snprintf(log_path, sizeof log_path, "%s/%s", root, mode);
    lc_rm_rf(log_path);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit none = {0, 0}; /* no core file in the build tree */
        setrlimit(RLIMIT_CORE, &none);
        execl(self, self, "crash", mode, log_path, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return fail(mode, "cannot run the child");
    if (want_signal && !(WIFSIGNALED(status) && WTERMSIG(status) == want_signal)) {
        fprintf(stderr, "flight_crash: %s: wait status 0x%x\n", mode, status);
        return fail(mode, "the child did not die of its signal");
    }
    if (!want_signal && !(WIFEXITED(status) && WEXITSTATUS(status) == want_exit)) {
        fprintf(stderr, "flight_crash: %s: wait status 0x%x\n", mode, status);
        return fail(mode, "the program's own handler did not decide how it ended");
    }
    if (lc_only_session(log_path, session, sizeof session) != 0)
        return fail(mode, "not exactly one snapshot directory");
    lc_summary_t s;
    if (lc_summarize(session, 0, &s) != 0) return fail(mode, "the snapshot does not parse");
    char last[32];
    snprintf(last, sizeof last, "crash_step_%d", SCOPES - 1);
    if (lc_scope_count(&s, last) != 1 || lc_scope_count(&s, "crash_step_0") != 1)
        fail(mode, "the snapshot lacks the last scopes");
    if (s.begins != SCOPES || s.ends != SCOPES) fail(mode, "not every scope is in the snapshot");
    for (int f = 0; f < LC_NFILES; f++)
        if (!s.end_is_last[f]) fail(mode, "a file of the snapshot does not end with session_end");
    lc_summary_free(&s);
    char want_why[64];
    snprintf(want_why, sizeof want_why, "fatal:%s", want_signal == SIGABRT ? "SIGABRT" : "SIGSEGV");
    if (snapshot_event(session, why, sizeof why) != 1 || strcmp(why, want_why) != 0) {
        fprintf(stderr, "flight_crash: %s: reason '%s', want '%s'\n", mode, why, want_why);
        fail(mode, "no complete snapshot event naming the signal");
    }
    snprintf(report, sizeof report, "%s/%s-report.txt", root, mode);
    if (gpufl_report_session(session, report) != 0) {
        fprintf(stderr, "flight_crash: report: %s\n", gpufl_last_error());
        fail(mode, "the report does not read the snapshot");
    }
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "crash") == 0) return crash(argv[2], argv[3]);
    if (argc != 3 || strcmp(argv[1], "check") != 0) {
        fprintf(stderr, "usage: flight_crash check LOG_ROOT | crash segv|abort|chained LOG_PATH\n");
        return 2;
    }
    check_mode(argv[0], argv[2], "segv", SIGSEGV, 0);
    check_mode(argv[0], argv[2], "abort", SIGABRT, 0);
    check_mode(argv[0], argv[2], "chained", 0, 42);
    if (failures) return 1;
    printf("flight_crash: ok\n");
    return 0;
}
