# SPDX-License-Identifier: Apache-2.0
"""gpufl.Scope as a context manager and as a benchmark loop (repeat /
warmup), checked against the scope records it leaves in scope.log."""
import threading

import pytest

import gpufl
from conftest import SessionLogs, only_session


@pytest.fixture
def session(log_dir):
    """Starts a session; calling the result ends it and returns its logs."""
    assert gpufl.init(app_name="scopes", log_path=str(log_dir))

    def finish():
        gpufl.shutdown()
        return SessionLogs(only_session(log_dir))

    return finish


def test_scope_records_begin_and_end_with_name_and_tag(session):
    with gpufl.Scope("forward_pass", "batch_42") as scope:
        assert scope.name == "forward_pass"
    with gpufl.Scope("untagged"):
        pass
    tagged, untagged = session().scopes()
    assert (tagged["name"], tagged["tag"], tagged["path"]) == ("forward_pass", "batch_42",
                                                               "forward_pass")
    assert (tagged["depth"], tagged["parent"], tagged["repeat"], tagged["warmup"]) == (1, 0, 0, 0)
    assert tagged["end"] is not None and tagged["end"]["implicit"] == 0
    assert tagged["end"]["ts_ns"] >= tagged["ts_ns"]
    assert (untagged["name"], untagged["tag"]) == ("untagged", None)
    assert untagged["ts_ns"] >= tagged["end"]["ts_ns"]


def test_nested_scopes_have_paths_and_parents(session):
    with gpufl.Scope("batch"):
        with gpufl.Scope("forward_pass"):
            pass
        with gpufl.Scope("backward_pass"):
            pass
    batch, forward, backward = session().scopes()
    assert [forward["path"], backward["path"]] == ["batch/forward_pass", "batch/backward_pass"]
    assert forward["parent"] == batch["id"] and forward["depth"] == 2
    assert batch["end"]["ts_ns"] >= backward["end"]["ts_ns"]


def test_an_exception_closes_the_scope_and_propagates(session):
    with pytest.raises(KeyError):
        with gpufl.Scope("failing"):
            raise KeyError("boom")
    (scope,) = session().scopes()
    assert scope["end"] is not None


def test_repeat_and_warmup_iterations(session):
    seen = []
    for i in gpufl.Scope("matmul", "math", repeat=10, warmup=3):
        seen.append(i)
    assert seen == [-3, -2, -1] + list(range(10))
    (scope,) = session().scopes()
    assert (scope["name"], scope["tag"], scope["repeat"], scope["warmup"]) == ("matmul", "math",
                                                                               10, 3)
    assert scope["end"] is not None


def test_warmup_runs_outside_the_scope_and_measured_runs_inside(session):
    for i in gpufl.Scope("bench", repeat=3, warmup=2):
        with gpufl.Scope("body", str(i)):
            pass
    scopes = session().scopes()
    bench = next(s for s in scopes if s["name"] == "bench")
    bodies = {s["tag"]: s for s in scopes if s["name"] == "body"}
    assert sorted(bodies) == ["-1", "-2", "0", "1", "2"]
    for tag in ("-2", "-1"):  # before the scope opened: top level
        assert bodies[tag]["parent"] == 0 and bodies[tag]["end"]["ts_ns"] <= bench["ts_ns"]
    for tag in ("0", "1", "2"):
        assert bodies[tag]["parent"] == bench["id"] and bodies[tag]["path"] == "bench/body"
        assert bodies[tag]["end"]["ts_ns"] <= bench["end"]["ts_ns"]


def test_repeat_without_warmup(session):
    assert list(gpufl.Scope("plain_bench", repeat=2)) == [0, 1]
    (scope,) = session().scopes()
    assert (scope["repeat"], scope["warmup"]) == (2, 0)


def test_repeat_zero_runs_the_warmup_and_no_measured_iteration(session):
    # As GFL_BENCH with setRepeat(0) in C++: the warmup, then an empty scope.
    scope = gpufl.Scope("empty_bench", repeat=0, warmup=2)
    assert scope.repeat == 0 and list(scope) == [-2, -1]
    (rec,) = session().scopes()
    assert (rec["name"], rec["repeat"], rec["warmup"]) == ("empty_bench", 0, 2)
    assert rec["end"] is not None


def test_break_and_exceptions_close_the_benchmark_scope(session):
    for i in gpufl.Scope("broken", repeat=5, warmup=1):
        if i == 1:
            break
    with pytest.raises(RuntimeError):
        for i in gpufl.Scope("raising", repeat=5):
            raise RuntimeError
    for i in gpufl.Scope("left_in_warmup", repeat=5, warmup=2):
        break
    scopes = {s["name"]: s for s in session().scopes()}
    assert scopes["broken"]["end"] is not None and scopes["raising"]["end"] is not None
    assert "left_in_warmup" not in scopes  # the scope never opened


def test_a_scope_object_can_be_entered_again(session):
    scope = gpufl.Scope("reused")
    for _ in range(3):
        with scope:
            pass
    scopes = session().scopes()
    assert [s["name"] for s in scopes] == ["reused"] * 3
    assert all(s["end"] is not None for s in scopes)


def test_non_ascii_names(session):
    with gpufl.Scope("前向パス", "ünïcode"):
        pass
    (scope,) = session().scopes()
    assert (scope["name"], scope["tag"]) == ("前向パス", "ünïcode")


def test_scopes_from_threads(session):
    def work(n):
        for i in range(20):
            with gpufl.Scope("worker", str(n)):
                pass

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    scopes = session().scopes()
    assert len(scopes) == 80 and all(s["end"] is not None for s in scopes)
    assert len({s["tid"] for s in scopes}) == 4
    for s in scopes:
        assert s["depth"] == 1


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((42,), {}, TypeError, "name must be a str, not int"),
    (("n", 7), {}, TypeError, "tag must be a str or None, not int"),
    (("n",), {"repeat": "3"}, TypeError, "repeat must be an int, not str"),
    (("n",), {"repeat": True}, TypeError, "repeat must be an int, not bool"),
    (("n",), {"repeat": -3}, ValueError, r"Scope\(\) repeat must be >= 0, not -3"),
    (("n",), {"repeat": 2, "warmup": -1}, ValueError, r"Scope\(\) warmup must be >= 0, not -1"),
    (("n",), {"warmup": -1}, ValueError, r"Scope\(\) warmup must be >= 0, not -1"),
    (("n",), {"repeat": -2**70}, ValueError, r"Scope\(\) repeat must be >= 0, not -1180"),
    (("n",), {"repeat": 2**31}, ValueError, "repeat must be at most 2147483647, not 2147483648"),
    (("n",), {"repeat": 2, "warmup": 2**70}, ValueError, "warmup must be at most 2147483647"),
    (("n",), {"warmup": 2}, ValueError, "warmup=2 needs repeat=N"),
    (("n", None, 3), {}, TypeError, "positional"),
])
def test_bad_arguments(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        gpufl.Scope(*args, **kwargs)


def test_iterating_needs_repeat():
    with pytest.raises(TypeError, match=r"Scope\('x'\) is iterable only with repeat=N"):
        iter(gpufl.Scope("x"))


def test_scopes_without_a_session_record_nothing_and_still_run(log_dir):
    with gpufl.Scope("before_init"):
        pass
    assert list(gpufl.Scope("bench_before_init", repeat=2, warmup=1)) == [-1, 0, 1]
    assert gpufl.init(log_path=str(log_dir))
    with gpufl.Scope("during"):
        pass
    gpufl.shutdown()
    ran = False
    with gpufl.Scope("after_shutdown"):
        ran = True
    assert ran
    assert [s["name"] for s in SessionLogs(only_session(log_dir)).scopes()] == ["during"]


def test_scope_left_open_at_shutdown_is_written_without_end(log_dir):
    assert gpufl.init(log_path=str(log_dir))
    scope = gpufl.Scope("still_open")
    scope.__enter__()
    gpufl.shutdown()
    scope.__exit__(None, None, None)  # after shutdown: ignored
    (row,) = SessionLogs(only_session(log_dir)).scopes()
    assert row["name"] == "still_open" and row["end"] is None
