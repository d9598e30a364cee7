# SPDX-License-Identifier: Apache-2.0
"""ctypes binding of the few gpufl C API calls the Python GPU checks need
(compare_torch.py), until the Python package exists. The option struct
mirrors gpufl_options_t in include/gpufl/gpufl.h field by field; the library
is told its size, so a library whose struct has grown since still reads only
what is here.
"""
import ctypes
import os

ENGINE_MONITOR = 0
ENGINE_TRACE = 1
ENGINE_PC_SAMPLING = 2
ENGINE_SASS_METRICS = 3
ENGINE_DEEP = 5

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Options(ctypes.Structure):
    """gpufl_options_t, in the header's order."""
    _fields_ = [
        ("size", ctypes.c_size_t),
        # identity
        ("app_name", ctypes.c_char_p),
        ("log_path", ctypes.c_char_p),
        # fleet upload
        ("backend_url", ctypes.c_char_p),
        ("api_key", ctypes.c_char_p),
        ("api_path", ctypes.c_char_p),
        ("remote_upload", ctypes.c_int),
        # what to capture
        ("enable_stack_trace", ctypes.c_int),
        ("enable_source_collection", ctypes.c_int),
        ("enable_external_correlation", ctypes.c_int),
        ("enable_synchronization", ctypes.c_int),
        ("enable_memory_tracking", ctypes.c_int),
        ("enable_cuda_graphs_tracking", ctypes.c_int),
        # sampling
        ("system_sample_rate_ms", ctypes.c_int),
        ("kernel_sample_rate_ms", ctypes.c_int),
        ("continuous_system_sampling", ctypes.c_int),
        # profiling engine (C enums: int-sized)
        ("backend", ctypes.c_int),
        ("profiling_engine", ctypes.c_int),
        # advanced
        ("config_file", ctypes.c_char_p),
        ("flush_logs_always", ctypes.c_int),
        ("enable_debug_output", ctypes.c_int),
        ("enabled", ctypes.c_int),
        # limits
        ("ring_capacity_records", ctypes.c_size_t),
        ("memory_cap_bytes", ctypes.c_size_t),
        ("log_rotate_bytes", ctypes.c_size_t),
        ("flush_interval_ms", ctypes.c_int),
        ("pc_sampling_period", ctypes.c_int),
    ]


def default_library():
    """$GPUFL_LIBRARY, else .devbin/libgpufl.so (tests/gpu/build_for_device.sh),
    else the development build's."""
    for p in (os.environ.get("GPUFL_LIBRARY"), os.path.join(REPO, ".devbin", "libgpufl.so"),
              os.path.join(REPO, "build", "lib", "libgpufl.so")):
        if p and os.path.exists(p):
            return p
    return os.path.join(REPO, ".devbin", "libgpufl.so")


class Gpufl:
    def __init__(self, path=None):
        self.path = path or default_library()
        lib = ctypes.CDLL(self.path)
        lib.gpufl_options_init_sized.argtypes = [ctypes.POINTER(Options), ctypes.c_size_t]
        lib.gpufl_options_init_sized.restype = None
        lib.gpufl_init.argtypes = [ctypes.POINTER(Options)]
        lib.gpufl_init.restype = ctypes.c_int
        lib.gpufl_shutdown.argtypes = []
        lib.gpufl_shutdown.restype = None
        lib.gpufl_last_error.argtypes = []
        lib.gpufl_last_error.restype = ctypes.c_char_p
        lib.gpufl_strerror.argtypes = [ctypes.c_int]
        lib.gpufl_strerror.restype = ctypes.c_char_p
        lib.gpufl_session_dir.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.gpufl_session_dir.restype = ctypes.c_int
        lib.gpufl_scope_begin.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.gpufl_scope_begin.restype = ctypes.c_uint64
        lib.gpufl_scope_end.argtypes = [ctypes.c_uint64]
        lib.gpufl_scope_end.restype = None
        lib.gpufl_flush.argtypes = []
        lib.gpufl_flush.restype = ctypes.c_int
        lib.gpufl_version.argtypes = []
        lib.gpufl_version.restype = ctypes.c_char_p
        self.lib = lib

    def version(self):
        return self.lib.gpufl_version().decode()

    def init(self, app_name, log_path, engine=ENGINE_TRACE, **fields):
        """gpufl_init with the defaults, then these fields; returns its code."""
        o = Options()
        self.lib.gpufl_options_init_sized(ctypes.byref(o), ctypes.sizeof(o))
        o.app_name = app_name.encode()
        o.log_path = log_path.encode()
        o.profiling_engine = engine
        for k, v in fields.items():
            setattr(o, k, v.encode() if isinstance(v, str) else v)
        self._options = o  # the strings stay alive while the library may read them
        return self.lib.gpufl_init(ctypes.byref(o))

    def last_error(self):
        return (self.lib.gpufl_last_error() or b"").decode(errors="replace")

    def strerror(self, code):
        return self.lib.gpufl_strerror(code).decode()

    def session_dir(self):
        buf = ctypes.create_string_buffer(4096)
        n = self.lib.gpufl_session_dir(buf, len(buf))
        return buf.value.decode() if n > 0 else None

    def scope_begin(self, name):
        return self.lib.gpufl_scope_begin(name.encode(), None)

    def scope_end(self, handle):
        self.lib.gpufl_scope_end(handle)

    def flush(self):
        return self.lib.gpufl_flush()

    def shutdown(self):
        self.lib.gpufl_shutdown()
