# SPDX-License-Identifier: Apache-2.0
"""Python frames in the CPU stacks gpufl captures (enable_stack_trace).

Imported by the package: registers the extension's frame provider, so that a
kernel launch or synchronization made from Python is attributed to the Python
line that made it ("train.py:90 in train_step"), and stops it at interpreter
exit, before thread states go away. A CUDA call made while its thread holds
the GIL is walked there and then; one made with the GIL released (PyTorch's)
gets the frames of the outermost open capture_point (python/src/frames.c
says why the GIL is never waited for). Code under the directories below (the
standard library, installed packages, gpufl itself) is marked as library
code, which the analysis never takes for a call's site.
"""
import atexit
import os
import warnings
import site
import sysconfig

from . import _gpufl


def library_dirs():
    """The directories whose Python code is not the application's."""
    dirs = []
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            dirs.append(paths[key])
    try:
        dirs.extend(site.getsitepackages())
    except AttributeError:  # some virtualenv site modules lack it
        pass
    user_site = getattr(site, "getusersitepackages", lambda: None)()
    if user_site:
        dirs.append(user_site)
    dirs.append(os.path.dirname(os.path.abspath(__file__)))  # gpufl
    seen, unique = set(), []
    for d in dirs:
        for form in (d, os.path.realpath(d)):  # code objects may name either
            if form and form not in seen:
                seen.add(form)
                unique.append(form)
    return unique


_stop_registered = False


def start():
    """Registers the provider; a failure costs the Python frames only, with a
    warning, never the import of gpufl."""
    global _stop_registered
    try:
        _gpufl._frames_start(library_dirs())
    except Exception as e:  # noqa: BLE001  (any failure: stacks stay native)
        warnings.warn("gpufl: Python frames will not be in CPU stacks: %s" % e, RuntimeWarning,
                      stacklevel=2)
        return
    if not _stop_registered:
        atexit.register(_gpufl._frames_stop)
        _stop_registered = True


class capture_point:
    """Records the calling thread's Python frames for the CUDA calls made
    inside the block, which then carry them even when the GIL is released
    around the call (as PyTorch releases it). Nested points keep the
    outermost one's frames. Costs a Python stack walk only while a session
    captures stacks."""

    __slots__ = ()

    def __enter__(self):
        _gpufl._frames_capture()
        return self

    def __exit__(self, *exc):
        _gpufl._frames_release()
        return False
