# SPDX-License-Identifier: Apache-2.0
"""One short-lived GPU process for run_monitor_churn.sh: it appears in NVML's process list of the
GPU it is given (CUDA_VISIBLE_DEVICES), does a little, and exits (or is killed by the caller).

Usage: python3 churn_worker.py MODE SECONDS [LOG_PATH]
  driver  a CUDA context and 64 MiB through the driver API (ctypes on libcuda), no PyTorch:
          the quickest way onto and off a GPU
  torch   PyTorch: CUDA init, bf16 matrix products for SECONDS
  trace   the same under gpufl's Trace engine (CUPTI), a scope per step, logs under LOG_PATH
  hold    PyTorch: 1 GiB held, no kernels, for SECONDS
"""
import ctypes
import sys
import time


def driver(seconds):
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx, dev, ptr = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_uint64()
    for call, args in (("cuInit", (0,)), ("cuDeviceGet", (ctypes.byref(dev), 0)),
                       ("cuDevicePrimaryCtxRetain", (ctypes.byref(ctx), dev)),
                       ("cuCtxSetCurrent", (ctx,)),
                       ("cuMemAlloc_v2", (ctypes.byref(ptr), ctypes.c_size_t(64 << 20))),
                       ("cuMemsetD8_v2", (ptr, ctypes.c_ubyte(1), ctypes.c_size_t(64 << 20))),
                       ("cuCtxSynchronize", ())):
        rc = getattr(cuda, call)(*args)
        if rc != 0:
            sys.exit("churn_worker: %s failed: %d" % (call, rc))
    time.sleep(seconds)


def torch_load(seconds, traced, log_path):
    import torch
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    end = time.time() + seconds

    def steps():
        while time.time() < end:
            a @ a
            torch.cuda.synchronize()

    if not traced:
        return steps()
    import gpufl
    with gpufl.session("churn", log_path=log_path, profiling_engine=gpufl.ProfilingEngine.Trace):
        while time.time() < end:
            with gpufl.Scope("step"):
                a @ a
                torch.cuda.synchronize()


def hold(seconds):
    import torch
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    time.sleep(seconds)
    del x


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    log_path = sys.argv[3] if len(sys.argv) > 3 else "churn-trace"
    if mode == "driver":
        driver(seconds)
    elif mode in ("torch", "trace"):
        torch_load(seconds, mode == "trace", log_path)
    elif mode == "hold":
        hold(seconds)
    else:
        sys.exit("churn_worker: unknown mode %r (driver, torch, trace, hold)" % mode)


if __name__ == "__main__":
    main()
