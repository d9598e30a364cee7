// SPDX-License-Identifier: Apache-2.0
// plain_kernels.cu - a CUDA program that knows nothing of gpufl, for `gpufl trace` on the GPU
// machine (docs/trace.md): N launches of each of two kernels, a copy each way and a
// synchronization, then its own count on stdout. With "fork", a child process (fork, then exec
// of this program) does the same work first, so the run has two sessions.
// Usage: plain_kernels [N] [fork]; exit 0 when CUDA answered.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

__global__ void plain_scale(float *x, float a) { x[blockIdx.x * blockDim.x + threadIdx.x] *= a; }
__global__ void plain_add(float *x, float b) { x[blockIdx.x * blockDim.x + threadIdx.x] += b; }

static int check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return 0;
    std::fprintf(stderr, "plain_kernels: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 100;
    if (argc > 2 && std::strcmp(argv[2], "fork") == 0) {
        pid_t pid = fork(); /* before this process touches CUDA */
        if (pid == 0) {
            execl("/proc/self/exe", argv[0], argv[1], (char *)nullptr);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    }
    const int threads = 256, blocks = 1024;
    float *d = nullptr;
    static float h[threads * blocks];
    if (check(cudaMalloc(&d, sizeof h), "cudaMalloc") ||
        check(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice), "copy in"))
        return 1;
    for (int i = 0; i < n; i++) {
        plain_scale<<<blocks, threads>>>(d, 1.0001f);
        plain_add<<<blocks, threads>>>(d, 0.5f);
    }
    if (check(cudaDeviceSynchronize(), "sync") ||
        check(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), "copy out"))
        return 1;
    cudaFree(d);
    std::printf("plain_kernels: pid %d launched %d kernels (plain_scale %d, plain_add %d)\n",
                (int)getpid(), 2 * n, n, n);
    return 0;
}
