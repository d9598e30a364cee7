# SPDX-License-Identifier: Apache-2.0
"""Python frames in the CPU stacks of kernel launches and synchronizations
(enable_stack_trace): a Trace session over the fake libcupti and libcuda of
tests/fakes, whose driver calls are made from this file through ctypes, so
that the callbacks run on the calling Python thread exactly as CUDA's do.
The sync-attribution insights must name this file's lines.

Calls through ctypes.PyDLL keep the GIL (an extension that does), calls
through ctypes.CDLL release it (as PyTorch does): those get Python frames
only inside a capture point, and the walk must never wait for the GIL.
"""
import os
import textwrap
import threading
import time

import pytest

import gpufl
from gpufl import _gpufl
from gpufl.analyzer import GpuFlightSession

from gpufl._frames import capture_point

from fakegpu import FakeGpu, device_records, needed, run_over_fakes, start

pytestmark = needed

THIS_FILE = os.path.abspath(__file__)


def line_of(marker):
    """The line of this file that holds the comment `# <marker>`."""
    with open(THIS_FILE, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return number
    raise AssertionError(marker)


def train_step(gpu):
    for _ in range(4):
        gpu.kernel_ran(gpu.call(gpu.launch_cbid, gpu.launch_params, b"gemm"))  # launch-site
    gpu.call(gpu.sync_cbid, None, None)  # sync-site


class Trainer:
    def __init__(self, gpu):
        self.gpu = gpu

    def epoch(self, steps):
        for _ in range(steps):
            train_step(self.gpu)  # epoch-site


def test_in_loop_sync_names_the_python_line(monkeypatch, log_dir):
    start(monkeypatch, log_dir)
    Trainer(FakeGpu(holding_gil=True)).epoch(6)
    gpufl.shutdown()

    session = GpuFlightSession(str(log_dir), log_prefix="stacks")
    syncs = session.syncs
    assert len(syncs) == 6
    assert set(syncs["site_file"]) == {THIS_FILE}
    assert set(syncs["site_line"]) == {line_of("sync-site")}
    assert set(syncs["site_function"]) == {"train_step"}
    insights = session.insights
    in_loop = insights[insights["title"].str.startswith("In-loop sync")]
    assert len(in_loop) == 1, insights[["title", "file", "line"]]
    assert in_loop.iloc[0]["file"] == THIS_FILE
    assert in_loop.iloc[0]["line"] == line_of("sync-site")
    assert "test_stacks.py:%d" % line_of("sync-site") in session.report()


def test_frames_are_python_and_whole(monkeypatch, log_dir):
    start(monkeypatch, log_dir)
    Trainer(FakeGpu(holding_gil=True)).epoch(1)
    gpufl.shutdown()

    frames = {f["id"]: f for f in device_records(log_dir, "frame")}
    stacks = device_records(log_dir, "stack")
    python = [f for f in frames.values() if f.get("language") == "python"]
    assert python, "no Python frame was written"
    for f in python:
        assert f["module"] is None and isinstance(f["library"], bool)
        assert int(f["pc"], 16) >> 63 == 1  # a frame key, never an address
    mine = {(f["function"], f["line"]) for f in python if f["file"] == THIS_FILE}
    assert ("train_step", line_of("launch-site")) in mine
    assert ("train_step", line_of("sync-site")) in mine
    assert ("Trainer.epoch", line_of("epoch-site")) in mine  # qualified names
    with open(THIS_FILE, encoding="utf-8") as source:
        text = source.read().splitlines()
    for f in python:
        if f["file"] == THIS_FILE:
            assert f["library"] is False
            assert f["source"] == text[f["line"] - 1].rstrip()
    # pytest's own frames are an installed package's: library code.
    assert any(f["library"] and "pytest" in f["file"] for f in python)
    # Innermost first: native frames of the call, then this file's frames,
    # the caller after the callee.
    for s in stacks:
        kinds = ["python" if frames[i].get("language") else "native" for i in s["frames"]]
        assert "native" not in kinds[kinds.index("python"):], kinds
        lines = [(frames[i]["function"], frames[i]["line"]) for i in s["frames"]
                 if frames[i].get("file") == THIS_FILE]
        assert lines[0][0] == "train_step" and lines[1] == ("Trainer.epoch",
                                                           line_of("epoch-site"))
    stats = device_records(log_dir, "trace_stats")[0]
    assert stats["stacks_interp"] == stats["stacks"] == 5  # 4 launches and a sync
    assert stats["stacks_interp_empty"] == 0
    assert 0 < stats["stacks_interp_max_ns"] <= stats["stacks_interp_ns"]


def synchronize(gpu):
    """What gpufl.torch does around torch.cuda.synchronize()."""
    with capture_point():  # capture-site
        gpu.call(gpu.sync_cbid, None, None)


def test_gil_released_frames_from_the_capture_point(monkeypatch, log_dir):
    start(monkeypatch, log_dir)
    gpu = FakeGpu()  # releases the GIL
    for _ in range(3):
        synchronize(gpu)
    gpu.call(gpu.sync_cbid, None, None)  # no capture point: no Python frames
    gpufl.shutdown()
    syncs = GpuFlightSession(str(log_dir), log_prefix="stacks").syncs
    assert list(syncs["site_line"][:3]) == [line_of("capture-site")] * 3
    assert syncs["site_file"][3] != THIS_FILE
    stats = device_records(log_dir, "trace_stats")[0]
    assert stats["stacks_interp"] == 3 and stats["stacks_interp_empty"] == 1


def test_the_walk_never_waits_for_the_gil(monkeypatch, log_dir):
    """Syncs with the GIL released while another thread holds it: the walk
    gives no frames rather than wait (a thread holding the GIL may be
    waiting for a lock the syncing thread holds)."""
    start(monkeypatch, log_dir)
    gpu = FakeGpu()
    done = threading.Event()

    def syncs():
        for _ in range(50):
            gpu.call(gpu.sync_cbid, None, None)
        done.set()

    worker = threading.Thread(target=syncs)
    worker.start()
    deadline = time.monotonic() + 30
    while not done.is_set() and time.monotonic() < deadline:
        pass  # this thread holds the GIL most of the time
    worker.join()
    gpufl.shutdown()
    stats = device_records(log_dir, "trace_stats")[0]
    assert stats["stacks"] == 50 and stats["stacks_interp_empty"] == 50
    assert stats["stacks_interp_max_ns"] < 1_000_000  # never a GIL wait (5 ms a turn)


def test_calls_made_holding_the_gil(monkeypatch, log_dir):
    """An extension that keeps the GIL across its CUDA call: walked there."""
    start(monkeypatch, log_dir)
    gpu = FakeGpu(holding_gil=True)
    for _ in range(3):
        train_step(gpu)
    gpufl.shutdown()
    syncs = GpuFlightSession(str(log_dir), log_prefix="stacks").syncs
    assert list(syncs["site_line"]) == [line_of("sync-site")] * 3


def test_calls_from_another_python_thread(monkeypatch, log_dir):
    """A second Python thread makes the calls while the main thread waits in
    join(): the walk describes the worker's own frames."""
    start(monkeypatch, log_dir)
    gpu = FakeGpu(holding_gil=True)
    worker = threading.Thread(target=lambda: [train_step(gpu) for _ in range(3)])
    worker.start()
    worker.join()
    gpufl.shutdown()
    syncs = GpuFlightSession(str(log_dir), log_prefix="stacks").syncs
    assert list(syncs["site_line"]) == [line_of("sync-site")] * 3
    assert list(syncs["site_function"]) == ["train_step"] * 3


def test_exit_with_daemon_threads_syncing(tmp_path):
    """No shutdown() and daemon threads still making CUDA calls at exit: the
    process ends (a walk that waited for the GIL would be ended inside the
    callback at finalization, and gpufl's exit handler would wait for it)."""
    script = textwrap.dedent("""
        import threading, gpufl
        from fakegpu import FakeGpu
        gpufl.init(app_name="daemons", log_path=%r, enable_stack_trace=True,
                   profiling_engine=gpufl.ProfilingEngine.Trace,
                   backend=gpufl.BackendKind.Nvidia)
        gpu = FakeGpu()
        def loop():
            while True:
                with gpufl._frames.capture_point():
                    gpu.call(gpu.sync_cbid, None, None)
        for _ in range(4):
            threading.Thread(target=loop, daemon=True).start()
        import time; time.sleep(0.3)
    """) % str(tmp_path / "logs")
    run_over_fakes(script)


def test_without_stack_trace_no_walk(monkeypatch, log_dir):
    start(monkeypatch, log_dir, enable_stack_trace=False)
    train_step(FakeGpu(holding_gil=True))
    gpufl.shutdown()
    assert device_records(log_dir, "frame") == []
    stats = device_records(log_dir, "trace_stats")[0]
    assert stats["stacks_interp"] == 0 and stats["stacks"] == 0


def test_after_frames_stop_native_stacks_only(monkeypatch, log_dir):
    """After the provider is stopped (as at interpreter exit), stacks are
    native again and the walk is counted as empty, not lost."""
    start(monkeypatch, log_dir)
    _gpufl._frames_stop()
    try:
        train_step(FakeGpu(holding_gil=True))
    finally:
        gpufl._frames.start()
    gpufl.shutdown()
    assert [f for f in device_records(log_dir, "frame") if f.get("language")] == []
    stats = device_records(log_dir, "trace_stats")[0]
    assert stats["stacks_interp"] == 0 and stats["stacks_interp_empty"] == 5


def test_after_a_subinterpreter_released_calls_are_not_walked(tmp_path):
    """Once a subinterpreter was made, CPython's PyGILState_Check answers
    "held" for every thread; the walk must still tell that this thread
    released the GIL (walking then crashed)."""
    script = textwrap.dedent("""
        import gpufl, _xxsubinterpreters as subs
        from fakegpu import FakeGpu
        gpufl.init(app_name="subs", log_path=%r, enable_stack_trace=True,
                   profiling_engine=gpufl.ProfilingEngine.Trace,
                   backend=gpufl.BackendKind.Nvidia)
        subs.destroy(subs.create())
        gpu = FakeGpu()  # releases the GIL
        gpu.call(gpu.sync_cbid, None, None)
        gpufl.shutdown()
    """) % str(tmp_path / "logs")
    run_over_fakes(script)


def test_a_forked_child_walks_nothing(monkeypatch, log_dir):
    """A forked child has no session: its capture points walk nothing (the
    parent's stack capture is not the child's)."""
    start(monkeypatch, log_dir)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            before = _gpufl._frames_stats()[2]
            with capture_point():
                pass
            code = 0 if _gpufl._frames_stats()[2] == before else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    gpufl.shutdown()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
