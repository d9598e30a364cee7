# SPDX-License-Identifier: Apache-2.0
"""gpufl.init under `gpufl trace` (docs/trace.md, "One session, not two"): the extension holds
a copy of libgpufl of its own, beside the libgpufl.so the injection loads; either order of
gpufl.init and cuInit gives one session. Python over the fake libcuda and libcupti, whose cuInit
calls the injection as the driver does; the gpufl binary ctest names in GPUFL_CLI finds
libgpufl_inject.so in its build tree."""
import json
import os
import subprocess
import sys

import pytest

from fakegpu import CBID_HEADER, FAKE_CUDA, FAKE_CUPTI, needed

CLI = os.environ.get("GPUFL_CLI")  # read at import: the autouse fixture clears GPUFL_*

SCRIPT = """
import sys
import gpufl
from fakegpu import FakeGpu
gpu = FakeGpu()
first = sys.argv[1] == "first"
if not first:
    assert gpu.cuda.cuInit(0) == 0
ok = gpufl.init("py_own", profiling_engine=gpufl.ProfilingEngine.Trace)
if first:
    assert gpu.cuda.cuInit(0) == 0
gpu.launch("py_kernel")
gpufl.shutdown()
gpu.launch("after_shutdown")
print("init", ok)
"""


def traced(tmp_path, order):
    if not CLI:
        pytest.skip("GPUFL_CLI (the gpufl binary) is not set: run through ctest")
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    env.update(GPUFL_CUPTI_LIBRARY=FAKE_CUPTI, GPUFL_CUDA_LIBRARY=FAKE_CUDA,
               GPUFL_TEST_FAKE_CUPTI=FAKE_CUPTI, GPUFL_TEST_FAKE_CUDA=FAKE_CUDA,
               GPUFL_TEST_CUPTI_CBIDS=CBID_HEADER, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([CLI, "trace", "-o", str(out), "--", sys.executable, "-c", SCRIPT,
                           order], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "init True\n"
    sessions = [n for n in os.listdir(out) if not n.startswith(".")]
    assert len(sessions) == 1, (sessions, done.stderr)
    with open(out / sessions[0] / "device.log", encoding="utf-8") as f:
        header = json.loads(f.readline())
    report = subprocess.run([CLI, "report", "--format", "json", str(out / sessions[0])],
                            capture_output=True, text=True, timeout=60)
    kernels = {k["name"] for k in json.loads(report.stdout)["kernels"]["hotspots"]}
    return done, header, kernels


@needed
def test_init_after_cuinit_joins_the_injected_session(tmp_path):
    done, header, kernels = traced(tmp_path, "after")
    assert header["app_name"].startswith("python")  # the program's file name
    assert header["run_id"]
    # The extension's copy records nothing and says so once; its shutdown ends nothing.
    assert done.stderr.count("another copy of libgpufl") == 1
    assert kernels == {"py_kernel", "after_shutdown"}


@needed
def test_init_before_cuinit_keeps_its_own_session(tmp_path):
    done, header, kernels = traced(tmp_path, "first")
    assert header["app_name"] == "py_own"  # the program's session; the injection stood down
    assert header["run_id"]
    assert "another copy" not in done.stderr
    assert kernels == {"py_kernel"}
