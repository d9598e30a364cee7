# SPDX-License-Identifier: Apache-2.0
"""The kill switch, system-sampling windows, upload_logs() and the
session() context manager; the enums and the package's surface."""
import os
import socket

import pytest

import gpufl
from conftest import SessionLogs, only_session


# ---- the kill switch ----

def exercise_every_call(log_dir):
    """Calls everything a program would; returns what upload_logs() gave."""
    with gpufl.Scope("s", "t"):
        pass
    assert list(gpufl.Scope("b", repeat=2, warmup=1)) == [-1, 0, 1]
    assert gpufl.system_start("phase") is False
    assert gpufl.system_stop("phase") is False
    result = gpufl.upload_logs(log_path=str(log_dir), backend_url="https://example.invalid")
    gpufl.shutdown()
    return result


def test_enabled_false_makes_everything_a_no_op(log_dir):
    assert gpufl.init(app_name="off", log_path=str(log_dir), enabled=False) is False
    assert not gpufl._gpufl.is_active()
    result = exercise_every_call(log_dir)
    assert result == gpufl.UploadResult(success=True, events_uploaded=0)
    assert not log_dir.exists()


@pytest.mark.parametrize("value", ["1", "true", "YES", "On"])
def test_gpufl_disabled_wins_over_enabled_true(log_dir, monkeypatch, value):
    monkeypatch.setenv("GPUFL_DISABLED", value)
    assert gpufl.init(app_name="off", log_path=str(log_dir), enabled=True) is False
    result = exercise_every_call(log_dir)
    assert result.success is True and result.events_uploaded == 0
    assert not log_dir.exists()


def test_gpufl_disabled_without_init(log_dir, monkeypatch):
    monkeypatch.setenv("GPUFL_DISABLED", "1")
    assert gpufl.upload_logs().success


@pytest.mark.parametrize("value", ["0", "off", ""])
def test_gpufl_disabled_false_leaves_gpufl_on(log_dir, monkeypatch, value):
    monkeypatch.setenv("GPUFL_DISABLED", value)
    assert gpufl.init(log_path=str(log_dir)) is True


def test_enabled_again_after_a_disabled_init(log_dir):
    assert gpufl.init(log_path=str(log_dir), enabled=False) is False
    assert gpufl.init(log_path=str(log_dir)) is True
    with pytest.raises(gpufl.InvalidArgumentError, match="a session is running"):  # on again
        gpufl.upload_logs()
    gpufl.shutdown()
    with pytest.raises(gpufl.InvalidArgumentError, match="no server"):
        gpufl.upload_logs()


# ---- system-sampling windows ----

def test_system_windows_are_recorded(log_dir):
    assert gpufl.init(log_path=str(log_dir))
    assert gpufl.system_start("sampling") is True
    assert gpufl.system_start() is True  # the default name, as in C++
    assert gpufl.system_stop() is True
    assert gpufl.system_stop("sampling") is True
    gpufl.shutdown()
    logs = SessionLogs(only_session(log_dir))
    starts = logs.records("system", "system_start")
    stops = logs.records("system", "system_stop")
    assert [r["name"] for r in starts] == ["sampling", "system"]
    assert [r["name"] for r in stops] == ["system", "sampling"]
    assert [r["active"] for r in starts + stops] == [1, 2, 1, 0]


def test_system_stop_of_a_window_never_opened(log_dir):
    assert gpufl.init(log_path=str(log_dir))
    with pytest.raises(gpufl.NotFoundError, match="never_started") as info:
        gpufl.system_stop("never_started")
    assert isinstance(info.value, LookupError) and info.value.code == -9


def test_system_windows_without_a_session():
    assert gpufl.system_start("x") is False
    assert gpufl.system_stop("x") is False


def test_system_window_name_must_be_a_str(log_dir):
    assert gpufl.init(log_path=str(log_dir))
    with pytest.raises(TypeError, match="window name must be a str, not int"):
        gpufl.system_start(3)


# ---- upload ----

def test_upload_to_a_server_that_does_not_answer(log_dir):
    """A network failure is a result, never an exception, and never names the key; the
    delivery itself is tested against the real server (tests/integration/test_upload.py)."""
    assert gpufl.init(log_path=str(log_dir))
    with gpufl.Scope("work"):
        pass
    gpufl.shutdown()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    result = gpufl.upload_logs(log_path=str(log_dir), backend_url="http://127.0.0.1:%d" % port,
                               api_key="gpfl_abcdefghij_notarealkey", budget_s=1)
    assert result.success is False and result.windows == 0 and result.errors >= 1
    assert result.retries >= 1 and "gave up" in result.error
    assert "notarealkey" not in result.error
    with pytest.raises(gpufl.InvalidArgumentError, match="no API key"):
        gpufl.upload_logs(log_path=str(log_dir), backend_url="http://127.0.0.1:%d" % port)
    with pytest.raises(ValueError, match="budget_s"):
        gpufl.upload_logs(budget_s=0)
    with pytest.raises(TypeError):
        gpufl.upload_logs(str(log_dir))  # keywords only
    with pytest.raises(TypeError, match="api_key must be a str or None, not int"):
        gpufl.upload_logs(api_key=1)


# ---- session() ----

def test_session_context_manager(log_dir):
    with gpufl.session(app_name="ctx", log_path=str(log_dir)) as s:
        assert s.started and gpufl._gpufl.is_active()
        with gpufl.Scope("inside"):
            pass
    assert not gpufl._gpufl.is_active()
    assert s.upload is None  # no backend: nothing to upload
    assert s.directory == only_session(log_dir)
    assert [x["name"] for x in SessionLogs(s.directory).scopes()] == ["inside"]


def test_session_takes_the_app_name_positionally(log_dir):
    with gpufl.session("ctx_positional", log_path=str(log_dir)) as s:
        assert s.started
    assert SessionLogs(s.directory).lines["scope"][0]["app_name"] == "ctx_positional"
    with pytest.raises(TypeError, match="multiple values for argument 'app_name'"):
        gpufl.session("one", app_name="two")
    with pytest.raises(TypeError, match="positional"):
        gpufl.session("one", str(log_dir))


def test_init_with_a_backend_says_nothing(log_dir, capfd):
    """backend_url at init is what upload_logs() later sends to: nothing to warn about."""
    assert gpufl.init(log_path=str(log_dir), backend_url="https://example.invalid")
    assert capfd.readouterr().err == ""
    with gpufl.Scope("work"):
        pass
    gpufl.shutdown()
    assert capfd.readouterr().err == ""


def closed_port_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "http://127.0.0.1:%d" % s.getsockname()[1]  # closed when the block ends


def test_backend_url_from_the_environment_says_nothing(log_dir, capfd, monkeypatch):
    monkeypatch.setenv("GPUFL_BACKEND_URL", "https://example.invalid")
    assert gpufl.init(log_path=str(log_dir))
    gpufl.shutdown()
    assert capfd.readouterr().err == ""


def test_session_with_a_backend_ends_without_raising(log_dir):
    # The server does not answer: one RuntimeWarning after the block, and s.upload says what
    # was not sent; the session itself ended cleanly.
    with pytest.warns(RuntimeWarning, match="not uploaded, they stay on disk"):
        with gpufl.session(log_path=str(log_dir), backend_url=closed_port_url(),
                           api_key="gpfl_abcdefghij_k", upload_budget_s=1) as s:
            pass
    assert not gpufl._gpufl.is_active()
    assert s.upload.success is False and s.upload.errors >= 1 and "gave up" in s.upload.error
    assert SessionLogs(only_session(log_dir)).lines["scope"][-1]["type"] == "session_end"


def test_session_without_a_key_warns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUFL_BACKEND_URL", closed_port_url())
    with pytest.warns(RuntimeWarning, match="the upload failed, the logs stay on disk: upload: "
                      "no API key"):
        with gpufl.session("default_path") as s:
            pass
    assert s.upload.success is False and "no API key" in s.upload.error
    assert os.path.isdir(s.directory)


def test_session_upload_failure_is_a_warning_not_an_exception(log_dir, monkeypatch):
    # The upload's failures must not fail the program: all of it runs after the workload.
    def failing_upload(**paths):
        raise gpufl.FileAccessError("cannot read the logs")

    monkeypatch.setattr(gpufl._session, "upload_logs", failing_upload)
    with pytest.warns(RuntimeWarning, match="the upload failed, the logs stay on disk: cannot "
                      "read the logs"):
        with gpufl.session(log_path=str(log_dir), backend_url="https://example.invalid") as s:
            pass
    assert s.upload == gpufl.UploadResult(success=False, error="cannot read the logs")


def test_session_body_error_propagates_without_upload(log_dir):
    with pytest.raises(ZeroDivisionError):
        with gpufl.session(log_path=str(log_dir), backend_url="https://example.invalid"):
            1 / 0
    assert not gpufl._gpufl.is_active()


def test_disabled_session_uploads_nothing_successfully(log_dir):
    with gpufl.session(log_path=str(log_dir), enabled=False,
                       backend_url="https://example.invalid") as s:
        assert not s.started and s.directory is None
    assert s.upload == gpufl.UploadResult(success=True, events_uploaded=0)
    assert not log_dir.exists()


def test_session_rejects_bad_options_on_entry(log_dir):
    with pytest.raises(TypeError, match="bogus"):
        with gpufl.session(log_path=str(log_dir), bogus=True):
            pass


# ---- enums and the package ----

def test_enums_match_the_c_library():
    assert [m.name for m in gpufl.ProfilingEngine] == list(gpufl._gpufl.engine_names())
    assert [m.name for m in gpufl.BackendKind] == list(gpufl._gpufl.backend_names())
    assert [int(m) for m in gpufl.ProfilingEngine] == list(range(6))
    assert [int(m) for m in gpufl.BackendKind] == list(range(4))


def test_backend_none_alias():
    assert gpufl.BackendKind.None_ is getattr(gpufl.BackendKind, "None")
    assert gpufl.BackendKind["None_"] is gpufl.BackendKind(3)
    assert gpufl.ProfilingEngine.Monitor == 0


def test_package_surface():
    assert gpufl.__version__ == gpufl._gpufl.version()
    for name in gpufl.__all__:
        assert hasattr(gpufl, name), name
    for name in ("InvalidArgumentError", "ConfigError", "FileAccessError",
                 "AlreadyRunningError", "NotSupportedError", "NotFoundError"):
        assert issubclass(getattr(gpufl, name), gpufl.Error)
    assert gpufl._gpufl.__file__.endswith(".abi3.so")


# ---- the flight recorder ----

def test_snapshot_writes_the_flight_recorder_as_a_session(log_dir, monkeypatch):
    monkeypatch.setenv("GPUFL_FLIGHT_RECORDER_S", "60")
    assert gpufl.init(app_name="fr", log_path=str(log_dir)) is True
    for i in range(20):
        with gpufl.Scope(f"step_{i}"):
            pass
    assert not log_dir.exists()  # nothing written while recording
    path = gpufl.snapshot()
    assert os.path.dirname(path) == str(log_dir)
    assert only_session(log_dir) == path
    logs = SessionLogs(path)
    assert [s["name"] for s in logs.scopes()] == [f"step_{i}" for i in range(20)]
    assert logs.lines["scope"][-1]["type"] == "session_end"
    gpufl.shutdown()
    assert only_session(log_dir) == path  # shutdown writes nothing more


def test_snapshot_without_the_flight_recorder(log_dir):
    with pytest.raises(gpufl.NotRunningError):
        gpufl.snapshot()
    assert gpufl.init(log_path=str(log_dir)) is True
    with pytest.raises(gpufl.NotSupportedError, match="flight_recorder_s"):
        gpufl.snapshot()
