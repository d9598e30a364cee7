// SPDX-License-Identifier: Apache-2.0
/*
 * trace.c - `gpufl trace [options] -- PROGRAM ARGS...`: runs an unchanged program under gpufl
 * through CUDA's injection (CUDA_INJECTION64_PATH names libgpufl_inject.so, whose
 * InitializeInjection the driver calls from cuInit), with the session's options passed as
 * GPUFL_* variables, then says where the sessions of the run are (docs/trace.md).
 */
#include "cli.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INJECT_NAME "libgpufl_inject.so"
#ifndef GPUFL_INSTALL_LIBDIR /* the build sets it (CMAKE_INSTALL_LIBDIR) */
#define GPUFL_INSTALL_LIBDIR "lib"
#endif

typedef struct trace_args {
    const char *engine, *output, *app_name, *flight_recorder;
    int stacks, force;
    char **program; /* NULL-terminated, from argv */
} trace_args_t;

/* ---------------- flags ---------------- */

static int parse_args(int argc, char **argv, trace_args_t *t) {
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **value = NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-') break; /* the program: "--" may be left out */
        if (cli_is_help(a)) {
            cli_print_usage("trace", stdout);
            t->program = NULL;
            return CLI_OK;
        }
        if (strcmp(a, "--stacks") == 0) {
            t->stacks = 1;
            continue;
        }
        if (strcmp(a, "--force") == 0) {
            t->force = 1;
            continue;
        }
        if (strcmp(a, "--engine") == 0 || strcmp(a, "-e") == 0)
            value = &t->engine;
        else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0)
            value = &t->output;
        else if (strcmp(a, "--app-name") == 0)
            value = &t->app_name;
        else if (strcmp(a, "--flight-recorder") == 0)
            value = &t->flight_recorder;
        else
            return cli_usage_error("trace", "unknown option '%s'", a);
        if (i + 1 >= argc) return cli_usage_error("trace", "%s needs a value", a);
        *value = argv[++i];
    }
    if (i >= argc)
        return cli_usage_error("trace", "no program given: gpufl trace [options] -- "
                                        "PROGRAM [ARGS...]");
    t->program = argv + i;
    gpufl_engine_t engine;
    if (t->engine && gpufl_engine_parse(t->engine, &engine) != 0)
        return cli_usage_error("trace", "%s", gpufl_last_error());
    if (t->app_name && !*t->app_name) return cli_usage_error("trace", "--app-name is empty");
    if (t->output && !*t->output) return cli_usage_error("trace", "--output is empty");
    if (t->flight_recorder) {
        char *end;
        errno = 0;
        long n = strtol(t->flight_recorder, &end, 10);
        if (!*t->flight_recorder || *end || errno || n < 1 || n > 86400)
            return cli_usage_error("trace",
                                   "--flight-recorder takes seconds from 1 to 86400 (got '%s')",
                                   t->flight_recorder);
    }
    return CLI_OK;
}

/* ---------------- the injection library ---------------- */

static int readable(const char *path) { return access(path, R_OK) == 0; }

/* $GPUFL_INJECT_LIBRARY, else libgpufl_inject.so beside the gpufl binary, in its installed
 * lib directory, or in a build tree's lib/. */
static int find_injection(char out[CLI_PATH_MAX]) {
    const char *env = getenv("GPUFL_INJECT_LIBRARY");
    if (env && *env) {
        if (!realpath(env, out) || !readable(out)) {
            fprintf(stderr, "gpufl: GPUFL_INJECT_LIBRARY '%s' is not a readable file\n", env);
            return CLI_FAILED;
        }
        return CLI_OK;
    }
    static const char *const beside[] = {"", "../" GPUFL_INSTALL_LIBDIR "/", "../lib/",
                                         "../../lib/"};
    char exe[CLI_PATH_MAX], candidate[CLI_PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) slash[1] = '\0';
        for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++) {
            snprintf(candidate, sizeof candidate, "%s%s" INJECT_NAME, exe, beside[i]);
            if (readable(candidate) && realpath(candidate, out)) return CLI_OK;
        }
    }
    fprintf(stderr,
            "gpufl: cannot find " INJECT_NAME " beside %s (its lib directory); set "
            "GPUFL_INJECT_LIBRARY to its path\n",
            n > 0 ? exe : "the gpufl binary");
    return CLI_FAILED;
}

/* ---------------- the child's environment ---------------- */

static int set(const char *name, const char *value) {
    if (setenv(name, value, 1) == 0) return 0;
    fprintf(stderr, "gpufl: cannot set %s: %s\n", name, strerror(errno));
    return -1;
}

/* mkdir -p: 0, or -1 with errno. */
static int make_dirs(const char *path) {
    char tmp[CLI_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Where the run's sessions go: --output, else GPUFL_LOG_PATH passed through, else a fresh
 * ./gpufl-trace-<UTC time>[-N]. Made here, so that a bad directory is said before the program
 * runs; absolute, so that a program changing directory still writes there. */
static int output_dir(const trace_args_t *t, char dir[CLI_PATH_MAX]) {
    const char *given = t->output ? t->output : getenv("GPUFL_LOG_PATH");
    char path[CLI_PATH_MAX];
    if (given && *given) {
        snprintf(path, sizeof path, "%s", given);
        if (make_dirs(path) != 0) {
            fprintf(stderr, "gpufl: cannot create %s: %s\n", path, strerror(errno));
            return CLI_FAILED;
        }
    } else {
        char stamp[32];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
        for (int k = 0;; k++) {
            if (k == 0)
                snprintf(path, sizeof path, "gpufl-trace-%s", stamp);
            else
                snprintf(path, sizeof path, "gpufl-trace-%s-%d", stamp, k);
            if (mkdir(path, 0755) == 0) break;
            if (errno != EEXIST || k == 99) {
                fprintf(stderr, "gpufl: cannot create %s: %s\n", path, strerror(errno));
                return CLI_FAILED;
            }
        }
    }
    if (!realpath(path, dir)) {
        fprintf(stderr, "gpufl: %s: %s\n", path, strerror(errno));
        return CLI_FAILED;
    }
    return CLI_OK;
}

/* "<UTC time>-<pid>-<8 hex>": the id every session of this run records (header run_id). */
static void make_run_id(char *out, size_t size) {
    unsigned int r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (unsigned int)time(NULL) ^ (unsigned int)getpid() << 12;
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(out, size, "%s-%d-%08x", stamp, (int)getpid(), r);
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The GPUFL_* variables the injected sessions read: flags win over what the environment
 * already holds, which passes through. */
static int child_environment(const trace_args_t *t, const char *inject, const char *dir,
                             const char *run_id) {
    const char *preset = getenv("CUDA_INJECTION64_PATH");
    char real[CLI_PATH_MAX];
    if (preset && *preset && !(realpath(preset, real) && strcmp(real, inject) == 0)) {
        if (!t->force) {
            fprintf(stderr,
                    "gpufl: CUDA_INJECTION64_PATH is already set (%s): another tool injects "
                    "itself into CUDA, and a process has room for one; unset it, or pass "
                    "--force to replace it with gpufl's\n",
                    preset);
            return CLI_USAGE;
        }
        fprintf(stderr, "gpufl: --force: CUDA_INJECTION64_PATH %s replaced by gpufl's\n", preset);
    }
    const char *nvtx = getenv("NVTX_INJECTION64_PATH");
    if (nvtx && *nvtx && !(realpath(nvtx, real) && strcmp(real, inject) == 0))
        fprintf(stderr,
                "gpufl: NVTX_INJECTION64_PATH is set to %s: NVTX ranges go to that "
                "library, not to gpufl\n",
                nvtx);
    const char *app = t->app_name ? t->app_name : getenv("GPUFL_APP_NAME");
    const char *engine = t->engine ? t->engine : getenv("GPUFL_PROFILING_ENGINE");
    if (set("CUDA_INJECTION64_PATH", inject) ||
        (!(nvtx && *nvtx) && set("NVTX_INJECTION64_PATH", inject)) || set("GPUFL_LOG_PATH", dir) ||
        set("GPUFL_RUN_ID", run_id) ||
        set("GPUFL_APP_NAME", app && *app ? app : base_name(t->program[0])) ||
        set("GPUFL_PROFILING_ENGINE", engine && *engine ? engine : "Trace") ||
        (t->stacks && set("GPUFL_ENABLE_STACK_TRACE", "1")) ||
        (t->flight_recorder && set("GPUFL_FLIGHT_RECORDER_S", t->flight_recorder)) ||
        set("GPUFL_TRACE_PROCESS", "")) /* every copy of libgpufl marks who holds the session */
        return CLI_FAILED;
    return CLI_OK;
}

/* ---------------- running the program ---------------- */

static volatile sig_atomic_t child_pid;
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define FORWARDED (sizeof forwarded / sizeof forwarded[0])

/* A signal sent to gpufl (kill) goes on to the program. One the terminal
 * generated (si_code SI_KERNEL) already reached the program, which is in
 * gpufl's process group: sending it again would deliver it twice. */
static void forward(int sig, siginfo_t *info, void *context) {
    (void)context;
    if (child_pid > 0 && (info == NULL || info->si_code != SI_KERNEL)) kill(child_pid, sig);
}

/* Forwarding on, keeping the dispositions gpufl was started with in saved
 * (a signal ignored by whoever started gpufl stays ignored). */
static void forwarding_on(struct sigaction *saved) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO;
    sa.sa_sigaction = forward;
    for (size_t i = 0; i < FORWARDED; i++) {
        sigaction(forwarded[i], NULL, &saved[i]);
        if (saved[i].sa_handler != SIG_IGN) sigaction(forwarded[i], &sa, NULL);
    }
}

static void forwarding_off(const struct sigaction *saved, const sigset_t *mask) {
    for (size_t i = 0; i < FORWARDED; i++) sigaction(forwarded[i], &saved[i], NULL);
    sigprocmask(SIG_SETMASK, mask, NULL);
}

/* Runs the program with stdin, stdout and stderr untouched; returns its exit status as a
 * shell reports it (128+N for death by signal N), 126/127 when it could not run. */
static int run_program(char **program) {
    sigset_t all, mask;
    struct sigaction saved[FORWARDED];
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &mask); /* no forward before child_pid is known */
    forwarding_on(saved);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gpufl: fork: %s\n", strerror(errno));
        forwarding_off(saved, &mask);
        return 127;
    }
    if (pid == 0) {
        forwarding_off(saved, &mask); /* the program starts as gpufl was started */
        execvp(program[0], program);
        int e = errno;
        fprintf(stderr, "gpufl: cannot run %s: %s\n", program[0], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &mask, NULL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "gpufl: waitpid: %s\n", strerror(errno));
            status = 127 << 8;
            break;
        }
    child_pid = 0;
    forwarding_off(saved, &mask);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* ---------------- the sessions of the run ---------------- */

/* 1 when the session in dir records run_id in its header. */
static int of_run(const char *dir, const char *run_id) {
    static const char *const files[] = {"device.log", "scope.log"};
    char path[CLI_PATH_MAX + 16], line[4096], want[128];
    snprintf(want, sizeof want, "\"run_id\":\"%s\"", run_id);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        int found = fgets(line, sizeof line, f) && strstr(line, want);
        fclose(f);
        return found;
    }
    return 0;
}

static void print_sessions(const char *dir, const char *run_id, int flight_recorder) {
    gpufl_session_list_t *list = NULL;
    if (gpufl_session_list_create(&list, dir) != 0) {
        fprintf(stderr, "gpufl trace: cannot list %s: %s\n", dir, gpufl_last_error());
        return;
    }
    size_t count = 0, n = gpufl_session_list_count(list);
    const char *last = NULL;
    for (size_t i = 0; i < n; i++)
        if (of_run(gpufl_session_list_get(list, i)->path, run_id)) count++;
    if (count == 0) {
        fprintf(stderr, "gpufl trace: no session in %s: %s\n", dir,
                flight_recorder ? "the flight recorder took no snapshot"
                                : "no process of the program initialized CUDA under gpufl");
    } else {
        fprintf(stderr, "gpufl trace: %zu session%s of run %s (one per process that used CUDA):\n",
                count, count == 1 ? "" : "s", run_id);
        for (size_t i = n; i-- > 0;) { /* oldest first: the order the processes started in */
            const gpufl_session_info_t *s = gpufl_session_list_get(list, i);
            if (!of_run(s->path, run_id)) continue;
            fprintf(stderr, "  %s  (%s)\n", s->path, *s->app_name ? s->app_name : "?");
            last = s->path;
        }
        fprintf(stderr, "report: gpufl report %s\n", count == 1 ? last : dir);
        if (count > 1)
            fprintf(stderr, "        (the latest; gpufl report %s SESSION for another)\n", dir);
    }
    gpufl_session_list_destroy(list);
}

int cli_trace(int argc, char **argv) {
    trace_args_t t;
    memset(&t, 0, sizeof t);
    int rc = parse_args(argc, argv, &t);
    if (rc != CLI_OK || !t.program) return rc; /* a usage error, or --help */
    char inject[CLI_PATH_MAX], dir[CLI_PATH_MAX], run_id[64];
    if ((rc = find_injection(inject)) != CLI_OK) return rc;
    if ((rc = output_dir(&t, dir)) != CLI_OK) return rc;
    make_run_id(run_id, sizeof run_id);
    if ((rc = child_environment(&t, inject, dir, run_id)) != CLI_OK) return rc;
    int status = run_program(t.program);
    const char *fr = getenv("GPUFL_FLIGHT_RECORDER_S");
    print_sessions(dir, run_id, fr && *fr && strcmp(fr, "0") != 0);
    return status;
}
