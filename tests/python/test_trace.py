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
from gpufl.analyzer import GpuFlightSession

CLI = os.environ.get("GPUFL_CLI")  # read at import: the autouse fixture clears GPUFL_*

SCRIPT = """
import os
import sys
import gpufl
from fakegpu import FakeGpu
gpu = FakeGpu()
mode = sys.argv[1]
if mode != "first":
    assert gpu.cuda.cuInit(0) == 0
if mode == "unreachable":  # the injection library can no longer be named: nor can its copy
    os.environ["CUDA_INJECTION64_PATH"] = "/nonexistent/libgpufl_inject.so"
ok = gpufl.init("py_own", profiling_engine=gpufl.ProfilingEngine.Trace)
if mode == "first":
    assert gpu.cuda.cuInit(0) == 0
with gpufl.Scope("py_step", tag="py_tag"):
    gpu.launch("py_kernel")
print("window", gpufl.system_start("py_window"), gpufl.system_stop("py_window"))
d = gpufl._gpufl.session_dir()
print("dir", os.path.basename(d) if d else None)
gpufl.shutdown()
with gpufl.Scope("after_shutdown_scope"):
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
    assert done.stdout.endswith("init True\n"), (done.stdout, done.stderr)
    sessions = [n for n in os.listdir(out) if not n.startswith(".")]
    assert len(sessions) == 1, (sessions, done.stderr)
    with open(out / sessions[0] / "device.log", encoding="utf-8") as f:
        header = json.loads(f.readline())
    session = GpuFlightSession(str(out / sessions[0]))
    return done, header, session


def kernel_scopes(session):
    """Kernel name -> the scope path it was attributed to (None outside scopes)."""
    k = session.kernels
    return {n: (p if isinstance(p, str) else None) for n, p in zip(k.name, k.scope_path)}


@needed
def test_init_after_cuinit_joins_the_injected_session_and_forwards_its_scopes(tmp_path):
    done, header, session = traced(tmp_path, "after")
    assert header["app_name"].startswith("python")  # the program's file name
    assert header["run_id"]
    # The extension's copy finds libgpufl.so's and forwards to it: nothing is lost, and
    # nothing needs saying. Its shutdown ends nothing (the kernel after it is recorded) and
    # stops the forwarding (the scope after it is not).
    assert "another copy" not in done.stderr, done.stderr
    e = session.scope_events
    assert list(e.name) == ["py_step"] and list(e.tag) == ["py_tag"]
    assert kernel_scopes(session) == {"py_kernel": "py_step", "after_shutdown": None}
    # session_dir() names the injected session; the system window reached its system.log.
    assert done.stdout == ("window True True\ndir %s\ninit True\n"
                           % os.path.basename(session.directory)), done.stdout
    with open(os.path.join(session.directory, "system.log"), encoding="utf-8") as f:
        assert "py_window" in f.read()


@needed
def test_unreachable_recording_copy_says_what_is_not_kept(tmp_path):
    done, header, session = traced(tmp_path, "unreachable")
    # Today's behaviour, said once: the scopes are lost, the kernels still recorded.
    assert done.stderr.count("another copy of libgpufl") == 1, done.stderr
    assert "cannot reach" in done.stderr and "is not loaded" in done.stderr, done.stderr
    assert done.stdout == "window False False\ndir None\ninit True\n", done.stdout
    assert len(session.scope_events) == 0
    assert kernel_scopes(session) == {"py_kernel": None, "after_shutdown": None}


@needed
def test_init_before_cuinit_keeps_its_own_session(tmp_path):
    done, header, session = traced(tmp_path, "first")
    assert header["app_name"] == "py_own"  # the program's session; the injection stood down
    assert header["run_id"]
    assert "another copy" not in done.stderr
    assert kernel_scopes(session) == {"py_kernel": "py_step"}
    assert list(session.scope_events.name) == ["py_step"]
