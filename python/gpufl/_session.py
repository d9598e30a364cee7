# SPDX-License-Identifier: Apache-2.0
"""Sessions: init and shutdown, system-sampling windows, log upload, and the
session() context manager that does all three around a block.

init() takes every field of InitOptions as a keyword, and app_name also as
its one positional argument (init("my_app", enabled=False)). Names from older
releases are handled here before the options reach the C extension: a
renamed one still works with a DeprecationWarning, a removed one raises
TypeError naming what replaces it.
"""
import atexit
import dataclasses
import os
import sys
import warnings

from . import _gpufl
from ._enums import BackendKind, ProfilingEngine, coerce

_TRUTHY = ("1", "true", "yes", "on")

# Keywords that init() no longer takes: what to write instead, by value.
_REMOVED = {
    "enable_profiling": lambda v: (
        "profiling_engine=gpufl.ProfilingEngine.%s" % ("PcSampling" if v else "Monitor")),
    "enable_perf_scope": lambda v: (
        "profiling_engine=gpufl.ProfilingEngine.RangeProfiler" if v else
        "nothing (drop it: Monitor is the default)"),
    "remote_config": lambda v: "backend_url=%r (same meaning)" % (v,),
}
# Keywords renamed: old name -> new name.
_RENAMED = {"sampling_auto_start": "continuous_system_sampling"}

_upload_at_exit_registered = False


@dataclasses.dataclass(frozen=True)
class UploadResult:
    """What upload_logs() did. success: every sealed window is on the server (now or from an
    earlier upload); events_uploaded: records in the windows stored now; windows and bytes
    (before gzip): what the server acknowledged now; errors: windows not delivered this time,
    error: the first reason. The rest count windows the server had already (duplicate), an
    earlier upload delivered (before), that are not sealed yet (open) or were refused for good
    (quarantined), and retries and sessions marked complete; slices: parts of windows
    acknowledged now (a window split to fit the server's body cap)."""

    success: bool
    events_uploaded: int = 0
    windows: int = 0
    bytes: int = 0
    errors: int = 0
    error: str = ""
    windows_duplicate: int = 0
    windows_before: int = 0
    windows_open: int = 0
    windows_quarantined: int = 0
    retries: int = 0
    sessions_completed: int = 0
    slices: int = 0


def _fspath(value, field):
    """A path option as str: str, os.PathLike or None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str):
            return path
    raise TypeError("%s must be a str, os.PathLike or None, not %s" % (field, type(value).__name__))


def _legacy_keywords(legacy, options):
    """Applies renamed keywords to options, refuses removed and unknown ones."""
    for name, value in legacy.items():
        if name in _REMOVED:
            raise TypeError("init() got an unexpected keyword argument %r: it was removed; "
                            "use %s" % (name, _REMOVED[name](value)))
        if name not in _RENAMED:
            raise TypeError("init() got an unexpected keyword argument %r" % name)
        new = _RENAMED[name]
        if options[new]:
            raise TypeError("init() got both %r and its old name %r" % (new, name))
        warnings.warn("init(): %r is deprecated; use %r" % (name, new), DeprecationWarning,
                      stacklevel=3)
        options[new] = value


def init(app_name="gpufl", *, log_path="", backend_url="", api_key="", api_path="",
         remote_upload=False, enable_stack_trace=False, enable_source_collection=True,
         enable_external_correlation=True, enable_synchronization=True,
         enable_memory_tracking=False, enable_cuda_graphs_tracking=False,
         system_sample_rate_ms=0, kernel_sample_rate_ms=0, continuous_system_sampling=False,
         backend=BackendKind.Auto, profiling_engine=ProfilingEngine.Monitor, config_file="",
         flush_logs_always=False, enable_debug_output=False, enabled=True, **legacy):
    """Starts a session; every keyword is a field of InitOptions, and the
    app name may also be given as the one positional argument.

    Returns True when the session started and False when gpufl is switched
    off (enabled=False, GPUFL_DISABLED=1, or enabled false in the config
    file): then nothing is written and every other call does nothing.
    Fields left at their default may be set by the config file and the
    GPUFL_* environment variables (docs/options.md).

    backend_url (or GPUFL_BACKEND_URL) makes the library warn, once, that
    upload is not built yet in this release and where the logs stay.

    Raises TypeError for an unknown keyword, a value of the wrong type, a
    second positional argument or app_name given both ways,
    InvalidArgumentError (a ValueError) for a value out of range,
    ConfigError for a bad config file, FileAccessError (an OSError) when the
    log directory cannot be written, and AlreadyRunningError when a session
    runs already: call shutdown() first.
    """
    options = dict(
        app_name=app_name, log_path=_fspath(log_path, "log_path"), backend_url=backend_url,
        api_key=api_key, api_path=api_path, remote_upload=remote_upload,
        enable_stack_trace=enable_stack_trace, enable_source_collection=enable_source_collection,
        enable_external_correlation=enable_external_correlation,
        enable_synchronization=enable_synchronization,
        enable_memory_tracking=enable_memory_tracking,
        enable_cuda_graphs_tracking=enable_cuda_graphs_tracking,
        system_sample_rate_ms=system_sample_rate_ms, kernel_sample_rate_ms=kernel_sample_rate_ms,
        continuous_system_sampling=continuous_system_sampling,
        backend=coerce(BackendKind, backend, "backend"),
        profiling_engine=coerce(ProfilingEngine, profiling_engine, "profiling_engine"),
        config_file=_fspath(config_file, "config_file"), flush_logs_always=flush_logs_always,
        enable_debug_output=enable_debug_output, enabled=enabled)
    _legacy_keywords(legacy, options)
    if kernel_sample_rate_ms:
        warnings.warn("init(): kernel_sample_rate_ms is deprecated and has no effect; every "
                      "kernel is recorded", DeprecationWarning, stacklevel=2)
    upload_at_exit = remote_upload or (
        os.environ.get("GPUFL_REMOTE_UPLOAD", "").strip().lower() in _TRUTHY)
    # The deprecation itself is the library's one line at init, the same in
    # C++ and Python; the shim below keeps the old behaviour (upload at exit).
    started = _gpufl.init(**options)
    if started and upload_at_exit:
        _register_upload_at_exit(options)
    if started and "torch" in sys.modules:
        _with_torch()
    return started


def _with_torch():
    """A session beside PyTorch. PyTorch releases the GIL around its syncs
    and launches, so their Python lines come from capture points: importing
    gpufl.torch wraps the syncs in them, and with CPU stacks on
    (enable_stack_trace), operation tagging is enabled on this thread too,
    making every aten operation one, so that kernel launches carry their
    Python line as well (gpufl.torch.disable() turns it off)."""
    try:
        from . import torch as _torch
    except Exception as e:  # noqa: BLE001  (an old PyTorch: native stacks only)
        warnings.warn("gpufl: PyTorch's syncs and launches will have no Python frames: %s" % e,
                      RuntimeWarning, stacklevel=3)
        return
    if _gpufl._frames_capturing():
        _torch.enable()


def _register_upload_at_exit(options):
    """The remote_upload shim: shut down and upload when the interpreter exits."""
    global _upload_at_exit_registered
    if _upload_at_exit_registered:
        return
    _upload_at_exit_registered = True
    paths = {k: options[k] or None for k in ("log_path", "backend_url", "api_key", "api_path")}

    def upload_at_exit():
        shutdown()
        # Nowhere to send to: the library's line at init said where the logs stay.
        if paths["backend_url"] or os.environ.get("GPUFL_BACKEND_URL"):
            _upload_or_say_why(paths)

    atexit.register(upload_at_exit)


def _upload_or_say_why(paths):
    """upload_logs() where a failure must not end the program (at exit, at
    the end of session()): the result, or UploadResult(success=False). A
    failure, or windows left undelivered, becomes one RuntimeWarning."""
    try:
        result = upload_logs(**paths)
    except _gpufl.Error as e:
        warnings.warn("gpufl: the upload failed, the logs stay on disk: %s" % e, RuntimeWarning,
                      stacklevel=3)
        return UploadResult(success=False, error=str(e))
    if not result.success:
        warnings.warn("gpufl: %d window(s) not uploaded, they stay on disk: %s"
                      % (result.errors + result.windows_quarantined, result.error),
                      RuntimeWarning, stacklevel=3)
    return result


def shutdown():
    """Ends the session and writes everything still buffered. Safe to repeat,
    and without init."""
    _gpufl.shutdown()


def snapshot():
    """Flight recorder (GPUFL_FLIGHT_RECORDER_S or flight_recorder_s in the
    config file): writes the last seconds it holds as a session directory of
    its own and returns its path; recording goes on. Raises NotSupportedError
    when the session runs without it, NotRunningError without a session."""
    return _gpufl.snapshot()


def system_start(name="system"):
    """Opens a named system-sampling window (host metrics are sampled while
    one is open). Returns False, and does nothing, when no session runs."""
    return _gpufl.system_start(name)


def system_stop(name="system"):
    """Closes the most recent open window of that name. Returns False when no
    session runs; raises NotFoundError (a LookupError) when none is open."""
    return _gpufl.system_stop(name)


def upload_logs(*, log_path=None, backend_url=None, api_key=None, api_path=None, session=None,
                budget_s=300.0):
    """Uploads finished sessions to gpufl-server after shutdown(): the latest session of
    log_path (or the one session names; by default this process's last session), each window
    once (the log root's .gpufl-upload.json remembers what the server acknowledged).

    backend_url, api_key and api_path default to GPUFL_BACKEND_URL, GPUFL_API_KEY and
    GPUFL_API_PATH, then to what init() was given. Network errors and busy servers are retried
    for at most budget_s seconds. Returns an UploadResult; a network failure is a result with
    success False, never an exception. Raises InvalidArgumentError (no server or key),
    NotFoundError (no session) or NotSupportedError (libcurl missing). When gpufl is switched
    off it sends nothing and returns UploadResult(success=True).
    """
    if not isinstance(budget_s, (int, float)) or isinstance(budget_s, bool) or budget_s <= 0:
        raise ValueError("budget_s must be a positive number of seconds")
    r = _gpufl.upload_logs(_fspath(log_path, "log_path"), backend_url, api_key, api_path,
                           _fspath(session, "session"), int(budget_s * 1000))
    return UploadResult(**r)


class Session:
    """The handle session() returns: ``with gpufl.session(...) as s``.

    started: what init() returned; directory: the session's log directory
    (None when gpufl is switched off); upload: the UploadResult after the
    block when there was a backend to upload to, else None.
    """

    def __init__(self, options):
        self._budget_s = options.pop("upload_budget_s", 300.0)
        self._options = options
        self.started = False
        self.directory = None
        self.upload = None

    def __enter__(self):
        self.started = init(**self._options)
        self.directory = _gpufl.session_dir() if self.started else None
        return self

    def __exit__(self, exc_type, exc, tb):
        shutdown()
        backend_url = self._options.get("backend_url") or os.environ.get("GPUFL_BACKEND_URL")
        if exc_type is None and backend_url:
            self.upload = _upload_or_say_why(dict(
                log_path=self._options.get("log_path") or None, backend_url=backend_url,
                api_key=self._options.get("api_key") or None,
                api_path=self._options.get("api_path") or None,
                session=self.directory, budget_s=self._budget_s))
        return False


def session(app_name=None, **options):
    """A context manager around a whole session: init(app_name, **options)
    on entry, shutdown() on exit, then upload_logs() of the session the block
    recorded when a backend_url is given (or GPUFL_BACKEND_URL is set) and the
    block raised nothing. Takes the same arguments as init(), and
    upload_budget_s (default 300): the most the upload may take.

    The upload never raises: a failure, or windows left undelivered, is one
    RuntimeWarning, and ``s.upload`` is the UploadResult.
    """
    if app_name is not None:
        options["app_name"] = app_name
    return Session(options)
