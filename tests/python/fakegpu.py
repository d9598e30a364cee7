# SPDX-License-Identifier: Apache-2.0
"""A GPU for the Python tests: the fake libcupti and libcuda of tests/fakes,
driven through ctypes. A driver call made through FakeGpu.call runs the
subscriber's callbacks on the calling thread, as CUDA's do, so a Trace
session sees the call with the caller's Python stack.

CMake passes the fakes' paths (GPUFL_TEST_FAKE_CUPTI, GPUFL_TEST_FAKE_CUDA)
and CUPTI's callback id header (GPUFL_TEST_CUPTI_CBIDS); without the CUDA
toolkit there are no fakes, and `needed` skips the tests that use them.
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import time

import pytest

import gpufl

from conftest import only_session

# Read at import: the autouse fixture clears GPUFL_* for each test.
FAKE_CUPTI = os.environ.get("GPUFL_TEST_FAKE_CUPTI")
FAKE_CUDA = os.environ.get("GPUFL_TEST_FAKE_CUDA")
CBID_HEADER = os.environ.get("GPUFL_TEST_CUPTI_CBIDS")

needed = pytest.mark.skipif(not (FAKE_CUPTI and FAKE_CUDA and CBID_HEADER),
                            reason="built without the CUDA toolkit: no fake CUPTI")


def cbid(name):
    with open(CBID_HEADER, encoding="utf-8") as f:
        found = re.search(r"CUPTI_DRIVER_TRACE_CBID_%s\s*=\s*(\d+)" % name, f.read())
    assert found, name
    return int(found.group(1))


class LaunchParams(ctypes.Structure):  # cuLaunchKernel_params
    _fields_ = [("f", ctypes.c_void_p), ("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint),
                ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("kernelParams", ctypes.c_void_p), ("extra", ctypes.c_void_p)]


class FakeGpu:
    """Driver calls through the fakes. holding_gil: the calls keep the GIL
    (ctypes.PyDLL), as an extension that does not release it would."""

    def __init__(self, holding_gil=False):
        loader = ctypes.PyDLL if holding_gil else ctypes.CDLL
        self.cupti = loader(FAKE_CUPTI)
        self.cuda = ctypes.CDLL(FAKE_CUDA)
        self.cupti.fake_cupti_call.restype = ctypes.c_uint32
        self.cupti.fake_cupti_call.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_char_p]
        self.cupti.fake_cupti_add_record.argtypes = [ctypes.c_char_p]
        self.cuda.fake_cuda_function.restype = ctypes.c_void_p
        self.function = self.cuda.fake_cuda_function(32, 0, 0, 1024, 8)
        self.launch_cbid = cbid("cuLaunchKernel")
        self.sync_cbid = cbid("cuCtxSynchronize")
        self.params = LaunchParams(self.function, 132, 1, 1, 256, 1, 1, 0, None, None, None)
        self.launch_params = ctypes.addressof(self.params)
        # The driver call itself: callbacks run on the calling thread.
        self.call = self.cupti.fake_cupti_call

    def launch(self, name="gemm"):
        """A kernel launch and the kernel's record; its correlation id."""
        corr = self.call(self.launch_cbid, self.launch_params, name.encode())
        self.kernel_ran(corr, name)
        return corr

    def kernel_ran(self, corr, name="gemm"):
        """The activity record of the kernel launched as correlation corr."""
        t = time.monotonic_ns()  # CUPTI's clock as the fake gives it
        record = {"kind": 10, "start": t, "end": t + 5_000, "name": name,
                  "correlationId": corr, "streamId": 7, "gridX": 132, "gridY": 1, "gridZ": 1,
                  "blockX": 256, "blockY": 1, "blockZ": 1, "registersPerThread": 32}
        assert self.cupti.fake_cupti_add_record(json.dumps(record).encode()) == 0


def start(monkeypatch, log_dir, **extra):
    """A Trace session over the fakes, with CPU stacks, logging under log_dir/stacks.log."""
    monkeypatch.setenv("GPUFL_CUPTI_LIBRARY", FAKE_CUPTI)
    monkeypatch.setenv("GPUFL_CUDA_LIBRARY", FAKE_CUDA)
    options = dict(app_name="stacks", log_path=str(log_dir / "stacks.log"),
                   profiling_engine=gpufl.ProfilingEngine.Trace,
                   backend=gpufl.BackendKind.Nvidia, enable_stack_trace=True)
    options.update(extra)
    assert gpufl.init(**options)


def device_records(log_dir, type_):
    """The records of one type in the device.log of the session start() made."""
    with open(os.path.join(only_session(log_dir / "stacks.log"), "device.log"),
              encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r["type"] == type_]


def run_over_fakes(script):
    """Runs a Python script in a process of its own, with the fakes as CUDA;
    it must exit 0 within two minutes."""
    env = dict(os.environ, GPUFL_CUPTI_LIBRARY=FAKE_CUPTI, GPUFL_CUDA_LIBRARY=FAKE_CUDA,
               GPUFL_TEST_FAKE_CUPTI=FAKE_CUPTI, GPUFL_TEST_FAKE_CUDA=FAKE_CUDA,
               GPUFL_TEST_CUPTI_CBIDS=CBID_HEADER, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
