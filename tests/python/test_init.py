# SPDX-License-Identifier: Apache-2.0
"""gpufl.init() and shutdown(): keywords, types, errors, the config file,
deprecated names, and what a session writes to disk."""
import inspect
import os
import warnings

import pytest

import gpufl
from conftest import SessionLogs, only_session

# The fields of InitOptions, in the spec's order.
INIT_OPTIONS = [
    "app_name", "log_path", "backend_url", "api_key", "api_path", "remote_upload",
    "enable_stack_trace", "enable_source_collection", "enable_external_correlation",
    "enable_synchronization", "enable_memory_tracking", "enable_cuda_graphs_tracking",
    "system_sample_rate_ms", "kernel_sample_rate_ms", "continuous_system_sampling", "backend",
    "profiling_engine", "config_file", "flush_logs_always", "enable_debug_output", "enabled",
]


def test_init_takes_exactly_the_init_options_the_app_name_also_positionally():
    params = inspect.signature(gpufl.init).parameters
    assert [n for n, p in params.items() if p.kind is not p.VAR_KEYWORD] == INIT_OPTIONS
    assert params["app_name"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    keyword_only = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY]
    assert keyword_only == INIT_OPTIONS[1:]
    assert gpufl.init.__kwdefaults__["profiling_engine"] is gpufl.ProfilingEngine.Monitor
    assert gpufl.init.__kwdefaults__["backend"] is gpufl.BackendKind.Auto
    with pytest.raises(TypeError, match="positional"):
        gpufl.init("my_app", "./logs")  # every other option is a keyword


def test_app_name_as_the_positional_argument(log_dir):
    # As code written for the product's own binding calls it.
    assert gpufl.init("my_app", enabled=False) is False
    assert gpufl.init("positional_app", log_path=str(log_dir)) is True
    gpufl.shutdown()
    header = SessionLogs(only_session(log_dir)).lines["scope"][0]
    assert header["app_name"] == "positional_app"


def test_app_name_both_positionally_and_as_a_keyword_is_a_type_error(log_dir):
    with pytest.raises(TypeError, match="multiple values for argument 'app_name'"):
        gpufl.init("one", app_name="two", log_path=str(log_dir))
    assert not gpufl._gpufl.is_active() and not log_dir.exists()


def test_init_writes_a_session_and_returns_true(log_dir):
    assert gpufl.init(app_name="py_app", log_path=str(log_dir)) is True
    assert gpufl._gpufl.is_active()
    gpufl.shutdown()
    assert not gpufl._gpufl.is_active()
    logs = SessionLogs(only_session(log_dir))
    for file in ("device", "scope", "system"):
        header = logs.lines[file][0]
        assert header["type"] == "header" and header["app_name"] == "py_app"
        assert header["file"] == file
        assert logs.lines[file][-1]["type"] == "session_end"
    assert logs.option("app_name") == {"value": "py_app", "from": "code"}
    assert logs.option("profiling_engine") == {"value": "Monitor", "from": "default"}


def test_every_keyword_reaches_its_field(log_dir, tmp_path, monkeypatch):
    config = tmp_path / "gpufl.json"
    config.write_text("{}")
    registered = []
    monkeypatch.setattr(gpufl._session.atexit, "register", registered.append)
    monkeypatch.setattr(gpufl._session, "_upload_at_exit_registered", False)
    values = dict(
        app_name="all_fields", log_path=log_dir, backend_url="https://example.invalid",
        api_key="gpfl_secret", api_path="/mounted/api", remote_upload=True,
        enable_stack_trace=True, enable_source_collection=False,
        enable_external_correlation=False, enable_synchronization=False,
        enable_memory_tracking=True, enable_cuda_graphs_tracking=True, system_sample_rate_ms=75,
        kernel_sample_rate_ms=10, continuous_system_sampling=True,
        backend=gpufl.BackendKind.None_, profiling_engine=gpufl.ProfilingEngine.Trace,
        config_file=str(config), flush_logs_always=True, enable_debug_output=True, enabled=True)
    assert sorted(values) == sorted(INIT_OPTIONS)
    with pytest.warns(DeprecationWarning) as caught:
        assert gpufl.init(**values)
    messages = " ".join(str(w.message) for w in caught)
    assert "kernel_sample_rate_ms" in messages  # remote_upload: the library's line (below)
    assert len(registered) == 1  # the remote_upload shim
    gpufl.shutdown()

    logs = SessionLogs(only_session(log_dir))
    expected = dict(values, log_path=str(log_dir), api_key="<set>", backend="None",
                    profiling_engine="Trace")
    for name, value in expected.items():
        if isinstance(value, bool):
            value = int(value)
        got = logs.option(name)
        if name == "enabled":  # the default value: it cannot come "from code"
            assert got == {"value": 1, "from": "default"}
        else:
            assert got == {"value": value, "from": "code"}, name
    caps = logs.record("device", "capabilities")
    assert caps["backend_requested"] == "None" and caps["engine_requested"] == "Trace"


@pytest.mark.parametrize("keyword, value, message", [
    ("app_name", 5, "app_name must be a str or None, not int"),
    ("log_path", 3.5, "log_path must be a str, os.PathLike or None, not float"),
    ("enable_stack_trace", "yes", "enable_stack_trace must be a bool, not str"),
    ("enable_stack_trace", 2, "enable_stack_trace must be a bool, not int"),
    ("system_sample_rate_ms", "50", "system_sample_rate_ms must be an int, not str"),
    ("system_sample_rate_ms", True, "system_sample_rate_ms must be an int, not bool"),
    ("system_sample_rate_ms", 50.0, "system_sample_rate_ms must be an int, not float"),
    ("profiling_engine", gpufl.BackendKind.Nvidia,
     "profiling_engine must be a gpufl.ProfilingEngine, not BackendKind"),
    ("backend", 1.0, "backend must be a gpufl.BackendKind, not float"),
])
def test_wrong_types_raise_type_error_and_start_nothing(log_dir, keyword, value, message):
    with pytest.raises(TypeError, match=message):
        gpufl.init(**dict(dict(app_name="t", log_path=str(log_dir)), **{keyword: value}))
    assert not gpufl._gpufl.is_active()
    assert not log_dir.exists()


@pytest.mark.parametrize("keyword, value, message", [
    ("system_sample_rate_ms", -1, "system_sample_rate_ms must be between 0 and 3600000"),
    ("system_sample_rate_ms", 10**20, r"system_sample_rate_ms=10+ is out of range"),
    ("profiling_engine", 9, r"profiling_engine=9 is not one of Monitor, Trace, .*Deep"),
    ("profiling_engine", "Fastest", r"profiling_engine='Fastest' is not one of Monitor"),
    ("backend", "Nvidea", r"backend='Nvidea' is not one of Auto, Nvidia, Amd, None"),
    ("app_name", "a\0b", "app_name must not contain a NUL character"),
])
def test_bad_values_raise_value_error(log_dir, keyword, value, message):
    with pytest.raises(ValueError, match=message):
        gpufl.init(**dict(dict(app_name="t", log_path=str(log_dir)), **{keyword: value}))
    assert not gpufl._gpufl.is_active()


def test_out_of_range_is_the_librarys_invalid_argument_error(log_dir):
    with pytest.raises(gpufl.InvalidArgumentError) as info:
        gpufl.init(log_path=str(log_dir), system_sample_rate_ms=-5)
    assert info.value.code == -1 and "got -5" in str(info.value)


def test_enums_by_name_any_case_and_by_value(log_dir):
    assert gpufl.init(log_path=str(log_dir), profiling_engine="trace", backend="none")
    gpufl.shutdown()
    logs = SessionLogs(only_session(log_dir))
    assert logs.option("profiling_engine")["value"] == "Trace"
    assert logs.option("backend")["value"] == "None"


def test_unknown_keyword_is_a_type_error(log_dir):
    with pytest.raises(TypeError, match=r"init\(\) got an unexpected keyword argument 'bogus'$"):
        gpufl.init(app_name="t", log_path=str(log_dir), bogus=1)
    assert not log_dir.exists()


def test_malformed_config_file_from_the_environment(log_dir, tmp_path, monkeypatch):
    config = tmp_path / "bad.json"
    config.write_text('{\n  "app_name": "x",\n  "system_sample_rate_ms": ]\n}\n')
    monkeypatch.setenv("GPUFL_CONFIG_FILE", str(config))
    with pytest.raises(gpufl.ConfigError) as info:
        gpufl.init(log_path=str(log_dir))
    assert isinstance(info.value, ValueError) and isinstance(info.value, gpufl.Error)
    assert info.value.code == -4
    assert str(config) in str(info.value) and "line 3" in str(info.value)
    assert not gpufl._gpufl.is_active() and not log_dir.exists()


def test_config_file_values_and_errors(log_dir, tmp_path):
    config = tmp_path / "ok.json"
    config.write_text('{"app_name": "from_config", "system_sample_rate_ms": 40}')
    assert gpufl.init(log_path=log_dir, config_file=config)  # os.PathLike paths
    gpufl.shutdown()
    logs = SessionLogs(only_session(log_dir))
    assert logs.option("app_name") == {"value": "from_config", "from": "config"}
    assert logs.option("system_sample_rate_ms") == {"value": 40, "from": "config"}

    missing = tmp_path / "missing.json"
    with pytest.raises(gpufl.ConfigError, match="missing.json' cannot be opened"):
        gpufl.init(log_path=str(log_dir), config_file=str(missing))
    wrong_type = tmp_path / "wrong.json"
    wrong_type.write_text('{"system_sample_rate_ms": "fast"}')
    with pytest.raises(gpufl.ConfigError, match="system_sample_rate_ms"):
        gpufl.init(log_path=str(log_dir), config_file=str(wrong_type))


def test_double_init_raises_and_the_first_session_goes_on(log_dir):
    assert gpufl.init(app_name="first", log_path=str(log_dir))
    first = gpufl._gpufl.session_dir()
    with pytest.raises(gpufl.AlreadyRunningError, match="already running") as info:
        gpufl.init(app_name="second", log_path=str(log_dir))
    assert isinstance(info.value, RuntimeError) and info.value.code == -5
    assert gpufl._gpufl.is_active()
    with gpufl.Scope("after_second_init"):
        pass
    gpufl.shutdown()
    assert only_session(log_dir) == first
    assert [s["name"] for s in SessionLogs(first).scopes()] == ["after_second_init"]


def test_init_after_shutdown_starts_a_new_session(log_dir):
    assert gpufl.init(log_path=str(log_dir))
    first = gpufl._gpufl.session_dir()
    gpufl.shutdown()
    gpufl.shutdown()  # twice: nothing happens
    assert gpufl.init(log_path=str(log_dir))
    second = gpufl._gpufl.session_dir()
    gpufl.shutdown()
    assert first != second and len(os.listdir(log_dir)) == 2


def test_unwritable_log_path_is_a_file_access_error(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.raises(gpufl.FileAccessError) as info:
        gpufl.init(log_path=str(blocker / "logs"))
    assert isinstance(info.value, OSError) and info.value.code == -3
    assert "a_file" in str(info.value)


def test_shutdown_without_init_does_nothing():
    gpufl.shutdown()
    assert not gpufl._gpufl.is_active()


# ---- names of earlier releases (the spec's migration table) ----

def test_renamed_keyword_warns_and_still_works(log_dir):
    with pytest.warns(DeprecationWarning, match="'sampling_auto_start' is deprecated; use "
                                                "'continuous_system_sampling'"):
        assert gpufl.init(log_path=str(log_dir), sampling_auto_start=True)
    gpufl.shutdown()
    logs = SessionLogs(only_session(log_dir))
    assert logs.option("continuous_system_sampling") == {"value": 1, "from": "code"}


def test_renamed_keyword_with_its_new_name_is_refused(log_dir):
    with pytest.raises(TypeError, match="both 'continuous_system_sampling' and its old name"):
        gpufl.init(log_path=str(log_dir), continuous_system_sampling=True,
                   sampling_auto_start=True)


@pytest.mark.parametrize("keyword, value, replacement", [
    ("enable_profiling", False, "profiling_engine=gpufl.ProfilingEngine.Monitor"),
    ("enable_profiling", True, "profiling_engine=gpufl.ProfilingEngine.PcSampling"),
    ("enable_perf_scope", True, "profiling_engine=gpufl.ProfilingEngine.RangeProfiler"),
    ("remote_config", "https://old.example", "backend_url='https://old.example'"),
])
def test_removed_keywords_name_their_replacement(log_dir, keyword, value, replacement):
    with pytest.raises(TypeError) as info:
        gpufl.init(log_path=str(log_dir), **{keyword: value})
    message = str(info.value)
    assert message.startswith("init() got an unexpected keyword argument '%s'" % keyword)
    assert replacement in message
    assert not log_dir.exists()


def test_remote_upload_shim_uploads_at_exit(log_dir, monkeypatch, capfd):
    registered = []
    monkeypatch.setattr(gpufl._session.atexit, "register", registered.append)
    monkeypatch.setattr(gpufl._session, "_upload_at_exit_registered", False)
    monkeypatch.setenv("GPUFL_REMOTE_UPLOAD", "yes")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no Python warning of its own: the library's line
        assert gpufl.init(log_path=str(log_dir))
    assert len(registered) == 1
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1 and "remote_upload is deprecated and has no effect" in err[0], err
    assert "gpufl.upload_logs()" in err[0]
    assert "until then the logs stay in " + str(log_dir) in err[0]
    # At exit: the session ends; with no server configured there is nothing to send to, and
    # the line at init already said where the logs stay. No traceback, no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        registered[0]()
    assert not gpufl._gpufl.is_active()
    assert capfd.readouterr().err == ""


def test_no_warning_for_current_keywords(log_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gpufl.init(log_path=str(log_dir), continuous_system_sampling=True)


def test_the_extension_needs_no_static_tls():
    """A module dlopen()ed into a process (the extension, imported before or
    after PyTorch) must not take static TLS: glibc keeps little of it for
    dlopen, and PyTorch's libgomp needs it too."""
    import shutil
    import subprocess
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("no readelf")
    out = subprocess.run([readelf, "-dW", gpufl._gpufl.__file__], capture_output=True,
                         text=True, check=True).stdout
    assert "STATIC_TLS" not in out
