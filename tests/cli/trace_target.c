// SPDX-License-Identifier: Apache-2.0
/*
 * trace_target.c - a CPU-only program that "uses CUDA" through the fake libcuda and libcupti,
 * for test_trace.py to run under `gpufl trace`. Its cuInit is the fake's, which calls the
 * injection as the driver does; its kernels are driver calls made through the fake CUPTI's
 * callbacks plus the activity records those calls would produce.
 *
 * usage: trace_target MODE [N] [EXIT]   (the fakes' paths: GPUFL_CUDA_LIBRARY and
 * GPUFL_CUPTI_LIBRARY, the same libgpufl loads; TRACE_TARGET_LIBGPUFL: libgpufl.so)
 *   kernels N EXIT     cuInit, N kernels, a line on stdout and one on stderr, exit EXIT
 *   echo               cuInit, then stdin copied to stdout
 *   signal N SIG       cuInit, N kernels, then killed by signal SIG
 *   wait               cuInit, "ready" on stdout, then waits for a signal
 *   fork N             cuInit, N kernels, then a child (fork and exec) running "kernels N 0"
 *   exec N             cuInit, N kernels, then exec of "kernels N 0" in the same process
 *   subscribe N        another CUPTI client subscribes before cuInit; then N kernels
 *   init-shared-first, init-shared-after, init-static-first, init-static-after  N
 *                      the program's own gpufl_init and gpufl_shutdown, before or after
 *                      cuInit, through libgpufl.so (the injection's copy) or the copy linked
 *                      into this program; a kernel in the scope own_scope before its
 *                      shutdown, one after it
 */
#include <gpufl/gpufl.h>

#include <cuda.h>
#include <cupti.h>

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct {
    CUresult (*init)(unsigned int);
    CUfunction (*function)(int, int, int, int, int);
    uint32_t (*call)(uint32_t, const void *, const char *);
    int (*add_record)(const char *);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
} fake;

static void *open_or_die(const char *env) {
    const char *path = getenv(env);
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
        fprintf(stderr, "trace_target: cannot load $%s (%s): %s\n", env, path ? path : "unset",
                dlerror());
        exit(90);
    }
    return h;
}

static void resolve(void *h, const char *name, void *slot) {
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "trace_target: no %s\n", name);
        exit(91);
    }
    memcpy(slot, &p, sizeof p);
}

static void load_fakes(void) {
    void *cuda = open_or_die("GPUFL_CUDA_LIBRARY");
    void *cupti = open_or_die("GPUFL_CUPTI_LIBRARY");
    resolve(cuda, "cuInit", &fake.init);
    resolve(cuda, "fake_cuda_function", &fake.function);
    resolve(cupti, "fake_cupti_call", &fake.call);
    resolve(cupti, "fake_cupti_add_record", &fake.add_record);
    resolve(cupti, "cuptiSubscribe", &fake.subscribe);
}

static void cuda_init(void) {
    if (fake.init(0) != CUDA_SUCCESS) {
        fprintf(stderr, "trace_target: cuInit failed\n");
        exit(92);
    }
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* One kernel launch: the driver call (the subscriber's callbacks) and the
 * record CUPTI would deliver for it, named "<prefix>_<i>". */
static void launch(const char *prefix, int i) {
    static CUfunction f;
    if (!f) f = fake.function(32, 0, 0, 1024, 8);
    char name[64], json[512];
    snprintf(name, sizeof name, "%s_%d", prefix, i);
    cuLaunchKernel_params p = {.f = f,
                               .gridDimX = 132,
                               .gridDimY = 1,
                               .gridDimZ = 1,
                               .blockDimX = 256,
                               .blockDimY = 1,
                               .blockDimZ = 1};
    uint32_t corr = fake.call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, name);
    int64_t t = now_ns();
    snprintf(json, sizeof json,
             "{\"kind\": 10, \"start\": %lld, \"end\": %lld, \"name\": \"%s\", "
             "\"correlationId\": %u, \"streamId\": 7, \"gridX\": 132, \"gridY\": 1, "
             "\"gridZ\": 1, \"blockX\": 256, \"blockY\": 1, \"blockZ\": 1, "
             "\"registersPerThread\": 32}",
             (long long)t, (long long)t + 2000, name, corr);
    if (fake.add_record(json) != 0) {
        fprintf(stderr, "trace_target: the fake CUPTI took no record\n");
        exit(93);
    }
}

static void kernels(const char *prefix, int n) {
    for (int i = 0; i < n; i++) launch(prefix, i);
}

static void run_self(char *self, const char *n) {
    char *args[] = {self, "kernels", (char *)n, "0", NULL};
    execv("/proc/self/exe", args);
    perror("trace_target: exec");
    _exit(94);
}

static void CUPTIAPI other_client(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                  const void *data) {
    (void)user, (void)domain, (void)cbid, (void)data;
}

/* The program's own init and shutdown around a kernel, through the copy of
 * the library named (shared: libgpufl.so, the injection's; static: this
 * program's own). */
static int own_init(const char *mode, int n) {
    int (*init)(const gpufl_options_t *) = gpufl_init;
    void (*shutdown)(void) = gpufl_shutdown;
    gpufl_scope_t (*begin)(const char *, const char *) = gpufl_scope_begin;
    void (*end)(gpufl_scope_t) = gpufl_scope_end;
    if (strstr(mode, "shared")) {
        void *lib = open_or_die("TRACE_TARGET_LIBGPUFL");
        resolve(lib, "gpufl_init", &init);
        resolve(lib, "gpufl_shutdown", &shutdown);
        resolve(lib, "gpufl_scope_begin", &begin);
        resolve(lib, "gpufl_scope_end", &end);
    }
    int first = strstr(mode, "first") != NULL;
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "own_init"; /* set in code: noted, not applied, when it joins */
    if (!first) cuda_init();
    int rc = init(&o);
    if (first) cuda_init();
    gpufl_scope_t scope = begin("own_scope", NULL);
    kernels("before_shutdown", n);
    end(scope);
    shutdown();
    kernels("after_shutdown", n);
    printf("init %d\n", rc);
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 1;
    load_fakes();
    if (strcmp(mode, "kernels") == 0) {
        cuda_init();
        kernels("kernel", n);
        printf("kernels %d\n", n);
        fprintf(stderr, "trace_target: to stderr\n");
        return argc > 3 ? atoi(argv[3]) : 0;
    }
    if (strcmp(mode, "echo") == 0) {
        cuda_init();
        int c;
        while ((c = getchar()) != EOF) putchar(c);
        return 0;
    }
    if (strcmp(mode, "signal") == 0) {
        cuda_init();
        kernels("kernel", n);
        fflush(NULL);
        kill(getpid(), argc > 3 ? atoi(argv[3]) : SIGKILL);
        pause();
        return 95;
    }
    if (strcmp(mode, "wait") == 0) {
        cuda_init();
        printf("ready\n");
        fflush(stdout);
        for (;;) pause();
    }
    if (strcmp(mode, "fork") == 0) {
        cuda_init();
        kernels("parent", n);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) run_self(argv[0], argv[2]);
        int status = 0;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 96;
    }
    if (strcmp(mode, "exec") == 0) {
        cuda_init();
        kernels("before_exec", n);
        fflush(NULL);
        usleep(600 * 1000); /* a flush: exec runs no exit handler, what is not on disk is lost */
        run_self(argv[0], argv[2]);
    }
    if (strcmp(mode, "subscribe") == 0) {
        CUpti_SubscriberHandle h;
        if (fake.subscribe(&h, other_client, NULL) != CUPTI_SUCCESS) return 97;
        cuda_init();
        kernels("kernel", n);
        printf("subscribed\n");
        return 0;
    }
    if (strncmp(mode, "init-", 5) == 0) return own_init(mode, n);
    fprintf(stderr, "trace_target: unknown mode '%s'\n", mode);
    return 98;
}
