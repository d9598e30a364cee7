// SPDX-License-Identifier: Apache-2.0
/*
 * fake_cuda.c - a stand-in for libcuda, built as libfake_cuda.so (what
 * lib/nvidia/cuda.c loads) and, with -DFAKE_CUDA_NO_OCCUPANCY, as
 * libfake_cuda_no_occupancy.so (a library without
 * cuOccupancyMaxActiveBlocksPerMultiprocessor). Types from the toolkit's
 * cuda.h, so every export has the real signature.
 *
 * For the tests, all scripted through exported helpers:
 * - fake_cuda_function(regs, static_smem, local, max_threads, driver_blocks)
 *   makes a CUfunction; the occupancy query answers driver_blocks for it,
 *   whatever the launch, so a test can make the driver disagree with the
 *   computation. fake_cuda_function_carveout sets its carveout attribute
 *   (-1 by default).
 * - Devices: 128 ordinals with the attributes of an H100 SXM;
 *   fake_cuda_set_device_attribute(attr, value) changes one for all;
 *   fake_cuda_set_device(ordinal) picks what cuCtxGetDevice answers.
 * - Contexts: cuCtxPushCurrent_v2 / cuCtxPopCurrent_v2 keep a per-thread
 *   stack of 8 (cuCtxGetCurrent answers its top); cuCtxSynchronize returns at once (counted).
 * - fake_cuda_set_error(function, result): that function fails with result
 *   until set back to 0. fake_cuda_calls(function) counts calls, failed
 *   ones included. fake_cuda_reset() restores every default.
 * - cuInit calls the injection as the driver does: its first call, when
 *   CUDA_INJECTION64_PATH is set, dlopens that library and calls its
 *   InitializeInjection (once per process; a forked child that calls cuInit
 *   again does not repeat it, as the driver's state is inherited).
 * - Events: cuEventRecord stamps an event with a GPU clock that advances
 *   by fake_cuda_event_step(ns) (5000 by default) at each record, so that a
 *   pair recorded around a launch spans one step; cuEventElapsedTime gives
 *   the difference in float ms. fake_cuda_event_pending(1) makes
 *   cuEventQuery answer CUDA_ERROR_NOT_READY (cuEventSynchronize still
 *   returns at once); fake_cuda_set_capturing(1) makes cuStreamIsCapturing
 *   say every stream is being captured; fake_cuda_event_last_stream() is
 *   the stream of the latest record. Events come from a ring of
 *   EVENTS_MAX (a test makes a few pools), so none is allocated.
 * Counters and errors are atomic: the functions may be called from many
 * threads. Scripting is for the test's main thread, between calls.
 */
#include <cuda.h>

#include <dlfcn.h>
#include <stdio.h>

#include <stdatomic.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT        __attribute__((visibility("default")))
#define FUNCTIONS_MAX 64
#define DEVICES       128
#define MAGIC         0x66756e63u

/* clang-format off: one function a line */
#define FAKE_FUNCTIONS(X)                                                                          \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                 \
    X(cuFuncGetAttribute)                                                                          \
    X(cuDeviceGetAttribute)                                                                        \
    X(cuCtxGetDevice)                                                                              \
    X(cuDriverGetVersion)                                                                          \
    X(cuGetErrorName)                                                                              \
    X(cuKernelGetFunction)                                                                         \
    X(cuCtxPushCurrent_v2)                                                                         \
    X(cuCtxPopCurrent_v2)                                                                          \
    X(cuCtxSynchronize)                                                                            \
    X(cuCtxGetCurrent)                                                                             \
    X(cuInit)                                                                                      \
    X(cuEventCreate)                                                                               \
    X(cuEventRecord)                                                                               \
    X(cuEventQuery)                                                                                \
    X(cuEventSynchronize)                                                                          \
    X(cuEventElapsedTime_v2)                                                                       \
    X(cuEventDestroy_v2)                                                                           \
    X(cuStreamIsCapturing)
// clang-format on

#define AS_ENUM(name) FN_##name,
#define AS_NAME(name) #name,
enum { FAKE_FUNCTIONS(AS_ENUM) FN_COUNT };
static const char *const function_names[FN_COUNT] = {FAKE_FUNCTIONS(AS_NAME)};

struct CUfunc_st {
    unsigned int magic;
    int regs, static_smem, local, max_threads, driver_blocks, carveout;
};

static struct CUfunc_st functions[FUNCTIONS_MAX];
/* A library kernel (CUkernel): no attributes of its own, a function per
 * context (here, one). */
#define KERNEL_MAGIC 0x6b65726eu
struct CUkern_st {
    unsigned int magic;
    CUfunction function;
};
static struct CUkern_st kernels[FUNCTIONS_MAX];
static int kernel_count;
static int function_count;
static int device_attributes[CU_DEVICE_ATTRIBUTE_MAX];
static int current_device;
static atomic_ulong calls[FN_COUNT];
static atomic_int errors[FN_COUNT];

EXPORT CUfunction fake_cuda_function(int regs, int static_smem, int local, int max_threads,
                                     int driver_blocks);
EXPORT void fake_cuda_function_carveout(CUfunction function, int pct);
EXPORT CUkernel fake_cuda_kernel(CUfunction function);
EXPORT void fake_cuda_set_device_attribute(int attr, int value);
EXPORT void fake_cuda_set_device(int ordinal);
EXPORT void fake_cuda_set_error(const char *function, int cuda_result);
EXPORT unsigned long fake_cuda_calls(const char *function);
EXPORT void fake_cuda_reset(void);
EXPORT void fake_cuda_event_step(long long ns);
EXPORT void fake_cuda_event_pending(int on);
EXPORT void fake_cuda_set_capturing(int on);
EXPORT CUstream fake_cuda_event_last_stream(void);

/* An H100 SXM as the driver describes it. */
static const int h100[CU_DEVICE_ATTRIBUTE_MAX] = {
    [CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] = 9,
    [CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR] = 0,
    [CU_DEVICE_ATTRIBUTE_WARP_SIZE] = 32,
    [CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024,
    [CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR] = 2048,
    [CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR] = 32,
    [CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR] = 65536,
    [CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK] = 65536,
    [CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR] = 233472,
    [CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK] = 49152,
    [CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] = 232448,
    [CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK] = 1024,
    [CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = 132,
};

#define EVENTS_MAX  32768
#define EVENT_MAGIC 0x65766e74u
struct CUevent_st {
    unsigned int magic;
    long long gpu_ns; /* when recorded; -1 not yet */
};
static struct CUevent_st events[EVENTS_MAX];
static atomic_uint next_event;
static atomic_llong gpu_clock_ns = 1000000000LL, event_step_ns = 5000;
static atomic_int events_pending, capturing;
static _Atomic(CUstream) last_stream;

void fake_cuda_reset(void) {
    memset(functions, 0, sizeof functions);
    function_count = 0;
    memset(kernels, 0, sizeof kernels);
    kernel_count = 0;
    memcpy(device_attributes, h100, sizeof device_attributes);
    current_device = 0;
    for (int i = 0; i < FN_COUNT; i++) {
        atomic_store(&calls[i], 0);
        atomic_store(&errors[i], 0);
    }
    atomic_store(&event_step_ns, 5000);
    atomic_store(&events_pending, 0);
    atomic_store(&capturing, 0);
}

__attribute__((constructor)) static void fake_cuda_init(void) { fake_cuda_reset(); }

static int function_index(const char *name) {
    for (int i = 0; i < FN_COUNT; i++)
        if (name && strcmp(name, function_names[i]) == 0) return i;
    return -1;
}

CUfunction fake_cuda_function(int regs, int static_smem, int local, int max_threads,
                              int driver_blocks) {
    if (function_count == FUNCTIONS_MAX) return NULL;
    struct CUfunc_st *f = &functions[function_count++];
    *f = (struct CUfunc_st){MAGIC, regs, static_smem, local, max_threads, driver_blocks, -1};
    return f;
}

void fake_cuda_function_carveout(CUfunction function, int pct) { function->carveout = pct; }

/* A CUkernel whose function (in the current context) is function, as the
 * runtime hands it to cuLaunchKernel. */
CUkernel fake_cuda_kernel(CUfunction function) {
    if (kernel_count == FUNCTIONS_MAX) return NULL;
    kernels[kernel_count] = (struct CUkern_st){KERNEL_MAGIC, function};
    return &kernels[kernel_count++];
}

void fake_cuda_set_device_attribute(int attr, int value) {
    if (attr >= 0 && attr < CU_DEVICE_ATTRIBUTE_MAX) device_attributes[attr] = value;
}

void fake_cuda_set_device(int ordinal) { current_device = ordinal; }

void fake_cuda_set_error(const char *function, int cuda_result) {
    int i = function_index(function);
    if (i >= 0) atomic_store(&errors[i], cuda_result);
}

unsigned long fake_cuda_calls(const char *function) {
    int i = function_index(function);
    return i >= 0 ? atomic_load(&calls[i]) : 0;
}

/* Counts the call; its scripted failure, else CUDA_SUCCESS. */
static CUresult enter(int fn) {
    atomic_fetch_add(&calls[fn], 1);
    return (CUresult)atomic_load(&errors[fn]);
}

static struct CUfunc_st *lookup(CUfunction f) {
    return f && f >= functions && f < functions + FUNCTIONS_MAX && f->magic == MAGIC ? f : NULL;
}

/* ---------------------------------------------------------------------- */
/* The driver API                                                           */
/* ---------------------------------------------------------------------- */

#ifndef FAKE_CUDA_NO_OCCUPANCY
EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                            int blockSize, size_t dynamicSMemSize) {
    CUresult r = enter(FN_cuOccupancyMaxActiveBlocksPerMultiprocessor);
    if (r != CUDA_SUCCESS) return r;
    struct CUfunc_st *f = lookup(func);
    if (f == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (numBlocks == NULL || blockSize < 1) return CUDA_ERROR_INVALID_VALUE;
    (void)dynamicSMemSize;
    *numBlocks = f->driver_blocks;
    return CUDA_SUCCESS;
}
#endif

EXPORT CUresult cuKernelGetFunction(CUfunction *out, CUkernel kernel) {
    CUresult r = enter(FN_cuKernelGetFunction);
    if (r != CUDA_SUCCESS) return r;
    if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < kernel_count; i++) {
        if (kernel == &kernels[i] && kernels[i].magic == KERNEL_MAGIC) {
            *out = kernels[i].function;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
    CUresult r = enter(FN_cuFuncGetAttribute);
    if (r != CUDA_SUCCESS) return r;
    struct CUfunc_st *f = lookup(hfunc);
    if (f == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (pi == NULL) return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = f->regs; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = f->static_smem; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = f->local; break;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = f->max_threads; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = f->carveout; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    CUresult r = enter(FN_cuDeviceGetAttribute);
    if (r != CUDA_SUCCESS) return r;
    if (dev < 0 || dev >= DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    if (pi == NULL || (int)attrib < 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = device_attributes[attrib];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
    CUresult r = enter(FN_cuCtxGetDevice);
    if (r != CUDA_SUCCESS) return r;
    if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
    *device = current_device;
    return CUDA_SUCCESS;
}

/* The calling thread's context stack, in a pthread key rather than thread-local storage: a
 * dlopen()ed library's TLS confuses LeakSanitizer's scan of the threads at exit. */
typedef struct context_tls {
    CUcontext stack[8];
    int depth;
} context_tls_t;
static pthread_key_t context_key;
static pthread_once_t context_once = PTHREAD_ONCE_INIT;
static void context_key_make(void) { pthread_key_create(&context_key, free); }
static context_tls_t *context_tls(void) {
    pthread_once(&context_once, context_key_make);
    context_tls_t *t = pthread_getspecific(context_key);
    if (!t && (t = calloc(1, sizeof *t)) != NULL) pthread_setspecific(context_key, t);
    return t;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    CUresult r = enter(FN_cuCtxPushCurrent_v2);
    if (r != CUDA_SUCCESS) return r;
    context_tls_t *t = context_tls();
    if (!t || t->depth == 8) return CUDA_ERROR_INVALID_VALUE;
    t->stack[t->depth++] = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx) {
    CUresult r = enter(FN_cuCtxPopCurrent_v2);
    if (r != CUDA_SUCCESS) return r;
    context_tls_t *t = context_tls();
    if (!t || t->depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext top = t->stack[--t->depth];
    if (ctx != NULL) *ctx = top;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) { return enter(FN_cuCtxSynchronize); }

/* The thread's current context: the top of what it pushed, NULL when none. */
EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx) {
    CUresult r = enter(FN_cuCtxGetCurrent);
    if (r != CUDA_SUCCESS) return r;
    if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    context_tls_t *t = context_tls();
    *ctx = t && t->depth ? t->stack[t->depth - 1] : NULL;
    return CUDA_SUCCESS;
}

/* The driver's injection: the library CUDA_INJECTION64_PATH names, loaded
 * and initialised inside the first cuInit. A library that cannot be loaded
 * is said on stderr and cuInit goes on, as the real driver does. */
static void inject(void) {
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (path == NULL || *path == '\0') return;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*entry)(void) = NULL;
    if (lib) *(void **)&entry = dlsym(lib, "InitializeInjection");
    if (entry == NULL) {
        fprintf(stderr, "fake_cuda: injection %s: %s\n", path, dlerror());
        return;
    }
    entry();
}

EXPORT CUresult cuInit(unsigned int flags) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    CUresult r = enter(FN_cuInit);
    if (r != CUDA_SUCCESS) return r;
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&once, inject);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
    CUresult r = enter(FN_cuDriverGetVersion);
    if (r != CUDA_SUCCESS) return r;
    if (driverVersion == NULL) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = 13000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {
    atomic_fetch_add(&calls[FN_cuGetErrorName], 1);
    switch (error) {
    case CUDA_SUCCESS: *pStr = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *pStr = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *pStr = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case CUDA_ERROR_INVALID_DEVICE: *pStr = "CUDA_ERROR_INVALID_DEVICE"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *pStr = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case CUDA_ERROR_INVALID_HANDLE: *pStr = "CUDA_ERROR_INVALID_HANDLE"; break;
    default: *pStr = NULL; return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* ---- events ---- */

void fake_cuda_event_step(long long ns) { atomic_store(&event_step_ns, ns); }
void fake_cuda_event_pending(int on) { atomic_store(&events_pending, on); }
void fake_cuda_set_capturing(int on) { atomic_store(&capturing, on); }
CUstream fake_cuda_event_last_stream(void) { return atomic_load(&last_stream); }

static struct CUevent_st *event_of(CUevent e) {
    return e && e >= events && e < events + EVENTS_MAX && e->magic == EVENT_MAGIC ? e : NULL;
}

EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    CUresult r = enter(FN_cuEventCreate);
    if (r != CUDA_SUCCESS) return r;
    if (phEvent == NULL || Flags != CU_EVENT_DEFAULT) return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = &events[atomic_fetch_add(&next_event, 1) % EVENTS_MAX];
    e->magic = EVENT_MAGIC;
    e->gpu_ns = -1;
    *phEvent = e;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
    CUresult r = enter(FN_cuEventRecord);
    if (r != CUDA_SUCCESS) return r;
    struct CUevent_st *e = event_of(hEvent);
    if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
    e->gpu_ns = atomic_fetch_add(&gpu_clock_ns, atomic_load(&event_step_ns));
    atomic_store(&last_stream, hStream);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventQuery(CUevent hEvent) {
    CUresult r = enter(FN_cuEventQuery);
    if (r != CUDA_SUCCESS) return r;
    if (event_of(hEvent) == NULL) return CUDA_ERROR_INVALID_HANDLE;
    return atomic_load(&events_pending) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
    CUresult r = enter(FN_cuEventSynchronize);
    if (r != CUDA_SUCCESS) return r;
    return event_of(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    CUresult r = enter(FN_cuEventElapsedTime_v2);
    if (r != CUDA_SUCCESS) return r;
    struct CUevent_st *a = event_of(hStart), *b = event_of(hEnd);
    if (a == NULL || b == NULL || pMilliseconds == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (a->gpu_ns < 0 || b->gpu_ns < 0) return CUDA_ERROR_INVALID_HANDLE;
    *pMilliseconds = (float)((double)(b->gpu_ns - a->gpu_ns) / 1e6);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
    CUresult r = enter(FN_cuEventDestroy_v2);
    if (r != CUDA_SUCCESS) return r;
    struct CUevent_st *e = event_of(hEvent);
    if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
    e->magic = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
    CUresult r = enter(FN_cuStreamIsCapturing);
    (void)hStream;
    if (r != CUDA_SUCCESS) return r;
    *captureStatus =
        atomic_load(&capturing) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
