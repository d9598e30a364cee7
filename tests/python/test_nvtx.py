# SPDX-License-Identifier: Apache-2.0
"""NVTX ranges from Python (docs/nvtx.md): gpufl.init points NVTX_INJECTION64_PATH at the
extension, which holds its own gpufl and exports NVTX's entry point; a library's first NVTX
call after it (nvtx_caller, standing in for torch.cuda.nvtx) then records its ranges as scopes,
and a fake kernel launched inside one is attributed to it. In a process of its own: NVTX reads
the variable once per process."""
import os

import pytest

import gpufl
from fakegpu import needed, run_over_fakes
from gpufl.analyzer import GpuFlightSession

CALLER = os.environ.get("GPUFL_TEST_NVTX_CALLER")  # read at import, as fakegpu's paths


@needed
@pytest.mark.skipif(not CALLER, reason="built without the CUDA toolkit: no NVTX headers")
def test_nvtx_ranges_from_python(tmp_path):
    log = tmp_path / "nvtx.log"
    run_over_fakes("""
import ctypes, os
import gpufl
from fakegpu import FakeGpu
caller = ctypes.CDLL(%r)
gpu = FakeGpu()
# The C library's environment (os.environ is a copy taken at start-up).
getenv = ctypes.CDLL(None).getenv
getenv.restype = ctypes.c_char_p
getenv.argtypes = [ctypes.c_char_p]
assert getenv(b"NVTX_INJECTION64_PATH") is None
assert gpufl.init(app_name="nvtx_py", log_path=%r, profiling_engine=gpufl.ProfilingEngine.Trace,
                  backend=gpufl.BackendKind.Nvidia)
path = getenv(b"NVTX_INJECTION64_PATH").decode()
assert os.path.samefile(path, gpufl._gpufl.__file__), path
assert caller.nvtx_caller_push(b"py_range") == 0
gpu.launch("inside")
assert caller.nvtx_caller_pop() == 0
gpu.launch("outside")
gpufl.shutdown()
""" % (CALLER, str(log)))
    session = GpuFlightSession(str(log))
    e = session.scope_events
    assert e.name.tolist() == ["py_range"] and e.source.tolist() == ["nvtx"]
    k = session.kernels
    assert k[k.name == "inside"].scope_path.tolist() == ["py_range"]
    assert k[k.name == "outside"].scope_path.isna().all()
