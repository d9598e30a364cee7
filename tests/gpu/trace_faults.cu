// SPDX-License-Identifier: Apache-2.0
// trace_faults.cu - Trace sessions on a real GPU in the situations where
// tracing is easy to get wrong: scope attribution across nested scopes,
// threads (one per GPU, several per GPU), graphs, allocations and external
// correlation ids; init after kernels already ran; fork(); exit without
// shutdown (gpufl started before or after the first CUDA call).
//
// Usage: trace_faults MODE LOG_DIR
//   MODE: attribution | late | fork | noshutdown | noshutdown-early
// It does the work and prints what it launched as "expect key=value"
// lines; tests/gpu/check_trace_faults.py reads those and the session logs.
// noshutdown modes end with exit(3): the exit code must stay 3.
#include <cuda_runtime.h>
#include <gpufl/gpufl.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

__global__ void tick(float *x, int iters) {
    float v = x[threadIdx.x];
    for (int i = 0; i < iters; ++i) v = v * 0.999f + 0.001f;
    x[threadIdx.x] = v;
}

// Heavy on registers and shared memory, so its occupancy has a limiter
// other than warps.
__global__ void __launch_bounds__(256) tile(float *x) {
    __shared__ float s[8192];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    float acc = 0;
    for (int i = 0; i < 32; ++i) acc += s[(threadIdx.x * 7 + i * 33) % 8192] * float(i);
    x[threadIdx.x] = acc;
}

static void expect(const char *key, long long value) {
    std::printf("expect %s=%lld\n", key, value);
}

static int start(const char *dir, bool extras) {
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "trace_faults";
    o.log_path = dir;
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.enable_cuda_graphs_tracking = extras;
    o.enable_memory_tracking = extras;
    int rc = gpufl_init(&o);
    if (rc != 0) std::printf("init failed: %s\n", gpufl_last_error());
    return rc;
}

// CUPTI's external-correlation push, as a framework calls it.
typedef int (*push_fn)(int kind, unsigned long long id);
typedef int (*pop_fn)(int kind, unsigned long long *id);

static int attribution(const char *dir) {
    int devices = 0;
    cudaGetDeviceCount(&devices);
    if (start(dir, true) != 0) return 1;
    float *x;
    cudaMalloc(&x, 1 << 20);
    {
        gpufl_scope_t outer = gpufl_scope_begin("outer", NULL);
        for (int i = 0; i < 5; ++i) tick<<<1, 128>>>(x, 100);
        gpufl_scope_t inner = gpufl_scope_begin("inner", NULL);
        for (int i = 0; i < 7; ++i) tick<<<1, 128>>>(x, 100);
        tile<<<4, 256>>>(x);
        cudaDeviceSynchronize();
        gpufl_scope_end(inner);
        gpufl_scope_end(outer);
    }
    expect("kernels:outer", 5);
    expect("kernels:outer/inner", 8);

    // Threads launching at once: two per GPU, each in its own scope and stream.
    const int per_thread = 2000;
    std::vector<std::thread> threads;
    for (int t = 0; t < 2 * devices; ++t) {
        threads.emplace_back([t, devices] {
            cudaSetDevice(t % devices);
            float *y;
            cudaMalloc(&y, 4096);
            cudaStream_t s;
            cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
            std::string name = "thread" + std::to_string(t);
            gpufl_scope_t scope = gpufl_scope_begin(name.c_str(), NULL);
            for (int i = 0; i < per_thread; ++i) tick<<<1, 32, 0, s>>>(y, 10);
            cudaStreamSynchronize(s);
            gpufl_scope_end(scope);
        });
    }
    for (auto &th : threads) th.join();
    for (int t = 0; t < 2 * devices; ++t)
        expect(("kernels:thread" + std::to_string(t)).c_str(), per_thread);
    expect("devices", devices);

    // A graph of three kernels, launched twice inside a scope.
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < 3; ++i) tick<<<1, 64, 0, s>>>(x, 50);
    cudaStreamEndCapture(s, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    {
        gpufl_scope_t g = gpufl_scope_begin("graph_step", NULL);
        cudaGraphLaunch(exec, s);
        cudaGraphLaunch(exec, s);
        cudaStreamSynchronize(s);
        gpufl_scope_end(g);
    }
    expect("graph_launches:graph_step", 2);
    expect("kernels:graph_step", 6);

    // A sync that waits for a long kernel: the host is blocked until it ends.
    {
        gpufl_scope_t w = gpufl_scope_begin("wait", NULL);
        tick<<<1, 32, 0, s>>>(x, 20000000);
        cudaStreamSynchronize(s);
        gpufl_scope_end(w);
    }
    expect("sync_covers:wait", 1);

    // Stream-ordered allocations inside a scope.
    {
        gpufl_scope_t a = gpufl_scope_begin("allocate", NULL);
        void *p;
        cudaMallocAsync(&p, 8 << 20, s);
        cudaFreeAsync(p, s);
        cudaStreamSynchronize(s);
        gpufl_scope_end(a);
    }
    expect("allocs:allocate", 2);

    // External correlation ids pushed the way a framework does.
    void *cupti = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
    push_fn push = cupti ? (push_fn)dlsym(cupti, "cuptiActivityPushExternalCorrelationId") : NULL;
    pop_fn pop = cupti ? (pop_fn)dlsym(cupti, "cuptiActivityPopExternalCorrelationId") : NULL;
    if (push && pop) {
        const int custom0 = 3; // CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0
        push(custom0, 777001);
        for (int i = 0; i < 4; ++i) tick<<<1, 32>>>(x, 10);
        unsigned long long last = 0;
        pop(custom0, &last);
        expect("external:777001", 4);
    }
    cudaDeviceSynchronize();
    gpufl_shutdown();
    return 0;
}

// Kernels before init are not traced; those after are, in their scope.
static int late(const char *dir) {
    float *x;
    cudaMalloc(&x, 4096);
    for (int i = 0; i < 10; ++i) tick<<<1, 32>>>(x, 10);
    cudaDeviceSynchronize();
    if (start(dir, false) != 0) return 1;
    gpufl_scope_t s = gpufl_scope_begin("after_init", NULL);
    for (int i = 0; i < 10; ++i) tick<<<1, 32>>>(x, 10);
    cudaDeviceSynchronize();
    gpufl_scope_end(s);
    gpufl_shutdown();
    expect("kernels:after_init", 10);
    expect("kernels", 10);
    return 0;
}

// A child forked while tracing runs exits normally; the parent goes on.
static int forked(const char *dir) {
    if (start(dir, false) != 0) return 1;
    float *x;
    cudaMalloc(&x, 4096);
    gpufl_scope_t before = gpufl_scope_begin("before_fork", NULL);
    for (int i = 0; i < 10; ++i) tick<<<1, 32>>>(x, 10);
    cudaDeviceSynchronize();
    gpufl_scope_end(before);
    pid_t child = fork();
    if (child == 0) {
        gpufl_scope_t c = gpufl_scope_begin("in_child", NULL); // must be harmless
        gpufl_scope_end(c);
        std::exit(0); // runs atexit handlers in the child
    }
    int status = 0;
    waitpid(child, &status, 0);
    std::printf("child exit: %s %d\n", WIFEXITED(status) ? "code" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    gpufl_scope_t after = gpufl_scope_begin("after_fork", NULL);
    for (int i = 0; i < 10; ++i) tick<<<1, 32>>>(x, 10);
    cudaDeviceSynchronize();
    gpufl_scope_end(after);
    gpufl_shutdown();
    expect("child_exit", 0);
    expect("kernels:before_fork", 10);
    expect("kernels:after_fork", 10);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

// exit() without gpufl_shutdown: the records reach the log, the code stays.
static int no_shutdown(const char *dir, bool gpufl_first) {
    if (gpufl_first && start(dir, false) != 0) return 1;
    float *x;
    cudaMalloc(&x, 4096);
    if (!gpufl_first && start(dir, false) != 0) return 1;
    gpufl_scope_t s = gpufl_scope_begin("work", NULL);
    for (int i = 0; i < 20; ++i) tick<<<1, 32>>>(x, 10);
    cudaDeviceSynchronize();
    gpufl_scope_end(s);
    expect("kernels:work", 20);
    expect("exit_code", 3);
    std::fflush(stdout);
    std::exit(3);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr,
                     "usage: trace_faults attribution|late|fork|noshutdown|noshutdown-early DIR\n");
        return 2;
    }
    std::string mode = argv[1];
    if (mode == "attribution") return attribution(argv[2]);
    if (mode == "late") return late(argv[2]);
    if (mode == "fork") return forked(argv[2]);
    if (mode == "noshutdown") return no_shutdown(argv[2], false);
    if (mode == "noshutdown-early") return no_shutdown(argv[2], true);
    std::fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
