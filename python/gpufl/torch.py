# SPDX-License-Identifier: Apache-2.0
"""gpufl.torch: every kernel tagged with the PyTorch (aten) operation that
launched it.

    import torch, gpufl, gpufl.torch       # in either order
    gpufl.init(app_name="train", profiling_engine=gpufl.ProfilingEngine.Trace)
    gpufl.torch.enable()                   # this thread, and the backward passes it starts
    ... train ...
    gpufl.shutdown()

Each aten operation call gets an id of its own, pushed on CUPTI's external
correlation stack of the calling thread for the length of the call
(gpufl_ops.h); the kernels it launches carry that id, and the analysis names
their operation (the `op` column of GpuFlightSession.kernels). Operations are seen through a TorchDispatchMode, below
autograd: a backward pass's kernels are tagged with the backward's own
operations, on the autograd threads, which inherit the mode from the thread
that called backward().

Cost: one Python call around every aten operation (measured on an H100:
docs/gpu-results/2026-11-22-python-torch.md). Tagging works only while a
session traces kernels (Trace and the engines built on it, with
enable_external_correlation, the default); otherwise the pushes do nothing.
"""
import functools
import threading

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _gpufl
from ._frames import capture_point

_indices = {}  # OpOverload -> name index (0: could not be registered)
_register_lock = threading.Lock()
_push = _gpufl._op_push
_pop = _gpufl._op_pop


def _index_of(func):
    with _register_lock:
        index = _indices.get(func)
        if index is None:
            try:
                index = _gpufl._op_register(func._schema.name)
            except _gpufl.Error:  # the table of names is full: this one goes untagged
                index = 0
            _indices[func] = index
    return index


class _OpTagger(TorchDispatchMode):
    """Brackets every aten operation with a push and a pop of its call id."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        index = _indices.get(func)
        if index is None:
            index = _index_of(func)
        try:
            _push(index)  # inside the try: the pop closes what it opened, whatever happens
            return func(*args, **(kwargs or {}))
        finally:
            _pop()


_local = threading.local()

# PyTorch's calls that block the host on the GPU, wrapped in a capture point
# (gpufl._frames): they release the GIL, so their syncs would otherwise have
# no Python frames. Operations are capture points already while enabled.
_SYNC_CALLS = ((torch.cuda, "synchronize"), (torch.cuda.Stream, "synchronize"),
               (torch.cuda.Event, "synchronize"), (torch.cuda.Event, "wait"),
               (torch.cuda.Stream, "wait_event"), (torch.cuda.Stream, "wait_stream"))


def _capturing(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        with capture_point():
            return fn(*args, **kwargs)

    call.__gpufl_capture__ = True
    return call


def install_sync_capture():
    """Wraps PyTorch's synchronizing calls (torch.cuda.synchronize, Stream and
    Event synchronize and waits) so that their syncs carry the caller's
    Python line. Done on import of gpufl.torch, and by gpufl.init() when
    PyTorch is loaded; a name bound before (`from torch.cuda import
    synchronize`) keeps the unwrapped call."""
    for owner, name in _SYNC_CALLS:
        fn = getattr(owner, name, None)
        if fn is not None and not getattr(fn, "__gpufl_capture__", False):
            setattr(owner, name, _capturing(fn))


install_sync_capture()


def enabled():
    """True when enable() is in effect on this thread."""
    return getattr(_local, "mode", None) is not None


def enable():
    """Tags the aten operations of this thread (and of the backward passes it
    starts) from now on; no effect when already enabled."""
    if enabled():
        return
    mode = _OpTagger()
    mode.__enter__()
    _local.mode = mode


def disable():
    """Stops tagging on this thread. Modes entered after enable() must have
    been left first (they form a stack)."""
    mode = getattr(_local, "mode", None)
    if mode is not None:
        _local.mode = None
        mode.__exit__(None, None, None)


class tag_ops:
    """Context manager: tags aten operations inside the block.

        with gpufl.torch.tag_ops():
            loss = model(x).sum(); loss.backward()
    """

    def __enter__(self):
        self._was = enabled()
        enable()
        return self

    def __exit__(self, *exc):
        if not self._was:
            disable()
        return False
