# SPDX-License-Identifier: Apache-2.0
"""gpufl: the GPU flight recorder for Python.

A thin layer over libgpufl's C API (the extension gpufl._gpufl): sessions
write the same NDJSON logs as C and C++ programs do.

    import gpufl
    gpufl.init("my_app", profiling_engine=gpufl.ProfilingEngine.Trace)
    with gpufl.Scope("forward_pass"):
        ...
    gpufl.shutdown()

See docs/python.md for the whole API.
"""
from . import _gpufl
from ._enums import BackendKind, ProfilingEngine
from ._gpufl import (AlreadyRunningError, ConfigError, DisabledError, Error, FileAccessError,
                     InvalidArgumentError, LogFormatError, NotFoundError, NotRunningError,
                     NotSupportedError, OutOfMemoryError, Scope, ThreadStartError)
from ._session import (Session, UploadResult, init, session, shutdown, snapshot, system_start,
                       system_stop, upload_logs)

__version__ = _gpufl.version()

from . import _frames  # noqa: E402  (after the extension: it registers with it)

_frames.start()

__all__ = [
    "init", "shutdown", "snapshot", "Scope", "system_start", "system_stop", "upload_logs", "session",
    "ProfilingEngine", "BackendKind", "UploadResult", "Session",
    "Error", "InvalidArgumentError", "OutOfMemoryError", "FileAccessError", "ConfigError",
    "AlreadyRunningError", "NotRunningError", "DisabledError", "NotSupportedError",
    "NotFoundError", "LogFormatError", "ThreadStartError",
]
