"""Python frames in the CPU stacks of kernel launches and synchronizations
(enable_stack_trace): a Trace session over the fake libcupti and libcuda of
tests/fakes, whose driver calls are made from this file through ctypes, so
that the callbacks run on the calling Python thread exactly as CUDA's do.
The sync-attribution insights must name this file's lines.
"""
import os
import threading

import pytest

import gpufl
from gpufl import _gpufl
from gpufl.analyzer import GpuFlightSession

from fakegpu import FakeGpu, device_records, needed, start

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
    Trainer(FakeGpu()).epoch(6)
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
    Trainer(FakeGpu()).epoch(1)
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


def test_calls_made_holding_the_gil(monkeypatch, log_dir):
    """An extension that keeps the GIL across its CUDA call: the walk takes
    it recursively, nothing deadlocks."""
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
    gpu = FakeGpu()
    worker = threading.Thread(target=lambda: [train_step(gpu) for _ in range(3)])
    worker.start()
    worker.join()
    gpufl.shutdown()
    syncs = GpuFlightSession(str(log_dir), log_prefix="stacks").syncs
    assert list(syncs["site_line"]) == [line_of("sync-site")] * 3
    assert list(syncs["site_function"]) == ["train_step"] * 3


def test_without_stack_trace_no_walk(monkeypatch, log_dir):
    start(monkeypatch, log_dir, enable_stack_trace=False)
    train_step(FakeGpu())
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
        train_step(FakeGpu())
    finally:
        gpufl._frames.start()
    gpufl.shutdown()
    assert [f for f in device_records(log_dir, "frame") if f.get("language")] == []
    stats = device_records(log_dir, "trace_stats")[0]
    assert stats["stacks_interp"] == 0 and stats["stacks_interp_empty"] == 5
