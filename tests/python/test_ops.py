# SPDX-License-Identifier: Apache-2.0
"""Framework operation tagging (gpufl_ops.h, the calls gpufl.torch makes
around every aten operation) in a Trace session over the fakes: kernels
launched inside a call carry its id through CUPTI's external correlation,
and the analysis names their operation. gpufl.torch itself is tested with
PyTorch on the GPU machine (tests/gpu/run_torch_checks.sh); here only when
PyTorch is installed.
"""
import json
import os
import textwrap
import threading

import pytest

import gpufl
from gpufl import _gpufl
from gpufl._frames import capture_point
from gpufl.analyzer import GpuFlightSession

from fakegpu import FakeGpu, device_records, needed, run_over_fakes, start

pytestmark = needed

CALL_BITS = 40


def test_kernels_carry_their_operation(monkeypatch, log_dir):
    mm = _gpufl._op_register("aten::mm")
    add = _gpufl._op_register("aten::add")
    assert _gpufl._op_register("aten::mm") == mm != add  # one index per name
    start(monkeypatch, log_dir, enable_stack_trace=False)
    gpu = FakeGpu()
    gpu.launch("outside")
    calls = []
    for op, kernels in ((mm, 2), (add, 1), (mm, 1)):
        call = _gpufl._op_push(op)
        calls.append(call)
        for _ in range(kernels):
            gpu.launch("k%d" % op)
        _gpufl._op_pop()
    gpu.launch("after")
    gpufl.shutdown()

    assert len(set(calls)) == 3 and all(c >> CALL_BITS in (mm, add) for c in calls)
    kernels = GpuFlightSession(str(log_dir), log_prefix="stacks").kernels
    assert list(kernels["op"]) == [None, "aten::mm", "aten::mm", "aten::add", "aten::mm", None]
    tagged = kernels[kernels["op"].notna()]
    assert set(tagged["external_kind"]) == {5}  # CUPTI's CUSTOM2
    assert list(tagged["external_id"]) == [calls[0], calls[0], calls[1], calls[2]]
    names = {r["index"]: r["name"] for r in device_records(log_dir, "op")}
    assert names[mm] == "aten::mm" and names[add] == "aten::add"
    stats = device_records(log_dir, "trace_stats")[0]
    assert stats["ops"] >= 2 and stats["op_pops_mismatched"] == 0

    # The report's section: GPU time per operation, with its calls and kernels.
    session = GpuFlightSession(str(log_dir), log_prefix="stacks")
    text = session.report(section="framework_ops")
    assert "GPU time per framework operation" in text
    assert "Without an operation: 2 kernels" in text
    rows = {line.split()[0]: line.split()[1:3] for line in text.splitlines()
            if line.strip().startswith("aten::")}
    assert rows == {"aten::mm": ["2", "3"], "aten::add": ["1", "1"]}
    section = json.loads(session.report(format="json"))["framework_ops"]
    assert [(o["name"], o["calls"], o["kernels"]) for o in section["operations"]] == \
        [("aten::mm", 2, 3), ("aten::add", 1, 1)]
    assert section["untagged_kernels"] == 2
    assert section["operations"][0]["gpu_ns"] == 3 * 5000  # each fake kernel runs 5 us


def test_capture_points_stay_balanced(monkeypatch, log_dir):
    """A push that raised, a pop with nothing open, nested pushes: afterwards
    no capture point is left open (a later capture walks again)."""
    op = _gpufl._op_register("aten::exp")
    start(monkeypatch, log_dir)
    with pytest.raises(TypeError):
        _gpufl._op_push(None)
    _gpufl._op_pop()
    _gpufl._op_pop()
    _gpufl._op_push(op)
    _gpufl._op_push(op)
    _gpufl._op_pop()
    _gpufl._op_pop()
    before = _gpufl._frames_stats()[2]
    with capture_point():
        pass
    gpufl.shutdown()
    assert _gpufl._frames_stats()[2] == before + 1  # the outermost point walked: none was open


def test_nested_calls_tag_the_innermost(monkeypatch, log_dir):
    outer, inner = _gpufl._op_register("aten::linear"), _gpufl._op_register("aten::addmm")
    start(monkeypatch, log_dir, enable_stack_trace=False)
    gpu = FakeGpu()
    a = _gpufl._op_push(outer)
    gpu.launch()
    b = _gpufl._op_push(inner)
    gpu.launch()
    _gpufl._op_pop()
    gpu.launch()
    _gpufl._op_pop()
    gpufl.shutdown()
    kernels = GpuFlightSession(str(log_dir), log_prefix="stacks").kernels
    assert list(kernels["op"]) == ["aten::linear", "aten::addmm", "aten::linear"]


def test_threads_have_their_own_calls(monkeypatch, log_dir):
    op = _gpufl._op_register("aten::relu")
    start(monkeypatch, log_dir, enable_stack_trace=False)
    gpu = FakeGpu()
    call = _gpufl._op_push(op)
    worker = threading.Thread(target=gpu.launch, args=("worker",))
    worker.start()
    worker.join()
    gpu.launch("main")
    _gpufl._op_pop()
    gpufl.shutdown()
    kernels = GpuFlightSession(str(log_dir), log_prefix="stacks").kernels.set_index("name")
    assert kernels.loc["main", "op"] == "aten::relu"
    assert kernels.loc["worker", "op"] is None


def test_without_a_session_nothing_is_pushed():
    op = _gpufl._op_register("aten::sum")
    assert _gpufl._op_push(op) == 0
    _gpufl._op_pop()


def test_a_session_ending_inside_a_call(monkeypatch, log_dir):
    """The call's id is still popped off CUPTI's stack after the session
    ended, so that it does not tag the kernels of the next session."""
    op = _gpufl._op_register("aten::mul")
    start(monkeypatch, log_dir, enable_stack_trace=False)
    call = _gpufl._op_push(op)
    assert call
    gpufl.shutdown()
    _gpufl._op_pop()
    start(monkeypatch, log_dir / "next", enable_stack_trace=False)
    FakeGpu().launch("outside")
    gpufl.shutdown()
    kernels = GpuFlightSession(str(log_dir / "next"), log_prefix="stacks").kernels
    assert list(kernels["op"]) == [None]


def test_a_forked_child_pushes_nothing(monkeypatch, log_dir):
    """A forked child (a DataLoader worker) inherits the tagging, not the
    parent's session: its pushes do nothing and nothing crashes."""
    op = _gpufl._op_register("aten::neg")
    start(monkeypatch, log_dir, enable_stack_trace=False)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            call = _gpufl._op_push(op)
            _gpufl._op_pop()
            code = 0 if call == 0 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    gpufl.shutdown()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_bad_names_and_indices():
    with pytest.raises(gpufl.InvalidArgumentError):
        _gpufl._op_register("")
    with pytest.raises(TypeError):
        _gpufl._op_register(3)
    for index in (0, 10**6):  # each push is followed by a pop, as gpufl.torch does
        call = _gpufl._op_push(index)
        _gpufl._op_pop()
        assert call == 0
    with pytest.raises(TypeError):
        _gpufl._op_push("mm")  # raises, and still opens a call
    _gpufl._op_pop()  # which this closes, with its capture point
    _gpufl._op_pop()  # a pop with nothing open does nothing


def test_gpufl_torch_needs_pytorch():
    torch = pytest.importorskip("torch")
    import gpufl.torch as gt
    assert not gt.enabled()
    with gt.tag_ops():
        assert gt.enabled()
        torch.ones(2) + 1
    assert not gt.enabled()


def test_operations_that_make_no_cuda_call_stop_being_walked(monkeypatch, log_dir):
    """An operation is a capture point (its kernels get the caller's Python
    line), but walking the Python stack costs microseconds: one whose first
    calls made no CUDA call that wanted the frames (a view) is not walked
    again; one that did is walked at every call."""
    view, mm = _gpufl._op_register("aten::view"), _gpufl._op_register("aten::mm")
    start(monkeypatch, log_dir)  # with CPU stacks
    gpu = FakeGpu()  # releases the GIL, as PyTorch does
    before = _gpufl._frames_stats()[2]
    for _ in range(5):
        call = _gpufl._op_push(view)
        _gpufl._op_pop()
    views = _gpufl._frames_stats()[2] - before
    for _ in range(5):
        call = _gpufl._op_push(mm)
        gpu.launch()  # mm-site
        _gpufl._op_pop()
    mms = _gpufl._frames_stats()[2] - before - views
    gpufl.shutdown()
    assert views == 2 and mms == 5
    frames = {f["id"]: f for f in device_records(log_dir, "frame")}
    stacks = device_records(log_dir, "stack")
    assert len(stacks) == 1  # the five launches share one stack, with Python frames
    assert any(frames[i].get("function") == "test_operations_that_make_no_cuda_call_stop_being_walked"
               for i in stacks[0]["frames"])


# A stand-in for PyTorch with what gpufl.torch touches: enough to see what
# gpufl.init() does when it finds torch loaded (the real one is tested on
# the GPU machine).
STUB_TORCH = {
    "torch/__init__.py": "from . import cuda, utils\n",
    "torch/cuda.py": textwrap.dedent("""
        def synchronize(device=None):
            pass
        class Stream:
            def synchronize(self): pass
            def wait_event(self, event): pass
            def wait_stream(self, stream): pass
        class Event:
            def synchronize(self): pass
            def wait(self, stream=None): pass
    """),
    "torch/utils/__init__.py": "",
    "torch/utils/_python_dispatch.py": textwrap.dedent("""
        class TorchDispatchMode:
            active = []
            def __enter__(self):
                TorchDispatchMode.active.append(self)
                return self
            def __exit__(self, *exc):
                TorchDispatchMode.active.remove(self)
    """),
}


@pytest.mark.parametrize("stacks", [True, False])
def test_init_beside_torch(tmp_path, stacks):
    """gpufl.init() with torch loaded wraps its syncs in capture points, and
    with CPU stacks on enables operation tagging on the calling thread (so
    that launches, made with the GIL released, carry their Python line);
    without stacks, tagging stays off until gpufl.torch.enable()."""
    for name, text in STUB_TORCH.items():
        path = tmp_path / "stub" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path / "stub")!r})
        import torch
        import gpufl
        assert gpufl.init(app_name="beside", log_path={str(tmp_path / "log")!r},
                          profiling_engine=gpufl.ProfilingEngine.Trace,
                          backend=gpufl.BackendKind.Nvidia, enable_stack_trace={stacks})
        import gpufl.torch as gt
        assert getattr(torch.cuda.synchronize, "__gpufl_capture__", False)
        assert gt.enabled() is {stacks}, gt.enabled()
        gt.disable()
        assert not gt.enabled()
        gpufl.shutdown()
    """)
    run_over_fakes(script)
