"""Python frames in the CPU stacks gpufl captures (enable_stack_trace).

Imported by the package: registers the extension's frame provider, so that a
kernel launch or synchronization made from Python is attributed to the Python
line that made it ("train.py:90 in train_step"), and stops it at interpreter
exit, before thread states go away. Code under the directories below (the
standard library, installed packages, gpufl itself) is marked as library
code, which the analysis never takes for a call's site.
"""
import atexit
import os
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
    global _stop_registered
    _gpufl._frames_start(library_dirs())
    if not _stop_registered:
        atexit.register(_gpufl._frames_stop)
        _stop_registered = True
