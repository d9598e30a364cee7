# SPDX-License-Identifier: Apache-2.0
"""gpufl.analyzer: a recorded session as pandas DataFrames.

    from gpufl.analyzer import GpuFlightSession
    session = GpuFlightSession("./logs", log_prefix="my_app")
    session.kernels.groupby("name").duration_ns.sum()
    session.inspect_hotspots(top_n=5)

The session is read by libgpufl's analysis library (gpufl_analysis.h), the
one the gpufl CLI uses: the columns come from C arrays without a Python
object per row, and every inspect_* method prints a section of the same
report `gpufl report` writes. docs/python.md lists every column.
"""
import os
import sys

from . import _gpufl

__all__ = ["GpuFlightSession", "PERF_COLUMNS", "PROFILE_COLUMNS"]

#: The first columns of GpuFlightSession.perf (hardware counters per profiled
#: scope, RangeProfiler engine; settling is 1 on the first ranges after the
#: profiler was configured); one float column per CUPTI metric name the
#: session's range_metrics records hold follows them (NaN where not evaluated).
PERF_COLUMNS = ("ts_ns", "start_ns", "context", "scope", "path", "group", "settling")

#: Columns of GpuFlightSession.scopes: the rows of pc_samples and
#: sass_metrics together, `source` telling which ("pc_sampling",
#: "sass_metrics"); a column the other table lacks is NaN or None there.
PROFILE_COLUMNS = ("source", "ts_ns", "t0_ns", "t1_ns", "context", "function", "mangled", "cubin",
                   "pc", "file", "line", "instruction", "reason", "stall", "samples", "inst",
                   "thread_inst", "sectors", "sectors_ideal")


def _pandas():
    try:
        import numpy
        import pandas
    except ImportError as e:
        raise ImportError("gpufl.analyzer needs pandas and numpy (Debian: apt-get install "
                          "python3-pandas; pip: pip install pandas)") from e
    return numpy, pandas


class GpuFlightSession:
    """One recorded session, loaded from its logs (every rotated segment).

    log_dir is a session directory, a log root holding session directories
    (a log_path), or the directory holding "<log_prefix>.log", the default
    log_path of an app named log_prefix. log_prefix (the app_name) keeps the
    sessions of that app; session_id picks one, else the newest is read.
    Raises gpufl.NotFoundError (a LookupError) when nothing matches, with a
    message saying what was found.
    """

    def __init__(self, log_dir, log_prefix=None, session_id=None):
        self.directory = _gpufl.find_session(os.fspath(log_dir), log_prefix, session_id)
        self._analysis = _gpufl.Analysis(self.directory)
        self._strings = []
        self._string_array = None
        self._frames = {}
        self._info = None

    def __repr__(self):
        info = self.info
        return "GpuFlightSession(%r, app=%r, session_id=%r)" % (
            self.directory, info["app_name"], info["session_id"])

    # ------------------------------------------------------------------ tables

    def _strings_as_array(self, numpy):
        """Every string id so far -> its str (None for 0), as an object array."""
        self._strings.extend(self._analysis.strings(len(self._strings)))
        if self._string_array is None or len(self._string_array) != len(self._strings):
            self._string_array = numpy.array(self._strings, dtype=object)
        return self._string_array

    def _columns(self, name):
        """The columns of a C table: {column: numpy array}, strings as objects.
        Each C array is copied once, by memcpy, into an array of our own (the
        library's stays read-only); a string column becomes the objects of
        its ids, one str object per distinct string."""
        numpy, _ = _pandas()
        _, columns = self._analysis.table(name)
        strings = None
        data = {}
        for column, kind, buffer in columns:
            values = numpy.array(buffer)
            if kind == "string":
                if strings is None:
                    strings = self._strings_as_array(numpy)
                values = strings[values]
            data[column] = values
        return data

    def _frame(self, name):
        frame = self._frames.get(name)
        if frame is None:
            _, pandas = _pandas()
            # copy=False: the arrays are ours already; pandas would otherwise
            # copy them all again to merge the columns of one dtype.
            frame = pandas.DataFrame(self._columns(name), copy=False)
            self._frames[name] = frame
        return frame

    @property
    def info(self):
        """What the session's header and end say (dict): session_id, app_name,
        hostname, pid, duration_ns (-1 when it did not end), engine, ... and
        the problems met reading it (corrupt_lines, truncated_lines)."""
        if self._info is None:  # one row: read without numpy
            _, columns = self._analysis.table("session")
            self._strings.extend(self._analysis.strings(len(self._strings)))
            self._info = {column: self._strings[memoryview(buffer)[0]] if kind == "string"
                          else memoryview(buffer)[0] for column, kind, buffer in columns}
        return dict(self._info)

    @property
    def kernels(self):
        """Kernel executions with timing, launch configuration and occupancy
        (Trace engine)."""
        return self._frame("kernels")

    @property
    def memcpy(self):
        """Memory copies (Trace engine)."""
        return self._frame("copies")

    @property
    def memsets(self):
        """Memsets (Trace engine)."""
        return self._frame("memsets")

    @property
    def syncs(self):
        """Synchronization calls and where the program made them."""
        return self._frame("syncs")

    @property
    def launches(self):
        """Kernel launch calls (the engines that time no kernels: PcSampling,
        SassMetrics, RangeProfiler, Deep)."""
        return self._frame("launches")

    @property
    def scope_events(self):
        """Scope begin/end pairs: one row per scope instance."""
        return self._frame("scopes")

    @property
    def pc_samples(self):
        """PC sampling rows: samples per instruction and stall reason."""
        return self._frame("pc_samples")

    @property
    def sass_metrics(self):
        """SASS metrics rows: executions and memory sectors per instruction."""
        return self._frame("sass_metrics")

    @property
    def scopes(self):
        """Profile sample data (PC sampling and SASS metrics rows together,
        `source` saying which; columns: PROFILE_COLUMNS)."""
        frame = self._frames.get("profile")
        if frame is None:
            _, pandas = _pandas()
            parts = [table.assign(source=source)
                     for source, table in (("pc_sampling", self.pc_samples),
                                           ("sass_metrics", self.sass_metrics)) if len(table)]
            frame = (pandas.concat(parts, ignore_index=True) if parts
                     else pandas.DataFrame(columns=list(PROFILE_COLUMNS)))
            frame = frame.reindex(columns=list(PROFILE_COLUMNS))
            self._frames["profile"] = frame
        return frame

    @property
    def device_metrics(self):
        """GPU samples (NVML): utilisation, memory, temperature, power, clocks."""
        return self._frame("device_metrics")

    @property
    def host_metrics(self):
        """Host samples: CPU and memory of the machine, the process, the cgroup."""
        return self._frame("host_metrics")

    @property
    def perf(self):
        """Hardware counters per profiled scope (RangeProfiler engine): the
        columns PERF_COLUMNS, then one per CUPTI metric name."""
        return self._frame("perf")

    @property
    def insights(self):
        """Findings of the insight rules (docs/insights.md), most severe first."""
        return self._frame("insights")

    # ------------------------------------------------------------------ report

    def report(self, format="text", top_n=10, section=None):
        """The session's report as `gpufl report --format FORMAT` writes it
        (text, json, markdown, html), top_n kernel names in the hotspots and
        details; section: one section of the text report only."""
        if isinstance(top_n, bool) or not isinstance(top_n, int):
            raise TypeError("top_n must be an int, not %s" % type(top_n).__name__)
        if top_n < 1:
            raise ValueError("top_n must be at least 1, not %d" % top_n)
        return self._analysis.report(format, section, top_n)

    def _print(self, text, file):
        print(text, end="" if text.endswith("\n") else "\n", file=file or sys.stdout)

    def _print_sections(self, sections, missing, file, top_n=10):
        text = "".join(self.report(top_n=top_n, section=s) for s in sections).lstrip("\n")
        self._print(text if text.strip() else missing, file)

    def _ran(self):
        engine = self.info["engine"]
        return ("it ran the %s engine" % engine if engine
                else "it has no capabilities record naming its engine")

    def print_summary(self, file=None):
        """The session at a glance, then the insights."""
        self._print_sections(("summary", "insights"), "", file)

    def inspect_scopes(self, file=None):
        """Wall time per scope path (a tree), and GPU time per scope."""
        if not len(self.scope_events):
            return self._print("no scopes in this session (none was opened with gpufl.Scope or "
                               "GFL_SCOPE)", file)
        self._print_sections(("scopes", "scope_gpu"), "", file)

    def inspect_hotspots(self, top_n=5, file=None):
        """The top_n kernel names by total GPU time (launch counts under the
        engines that time no kernels: PcSampling, SassMetrics, RangeProfiler,
        Deep)."""
        self._print_sections(("kernels",), "no kernel records in this session (%s); kernels "
                             "are recorded from the Trace engine up" % self._ran(), file, top_n)

    def inspect_stalls(self, file=None):
        """Where warps stalled and why: PC samples per kernel, scope and
        source line."""
        self._print_sections(("pc_sampling",), "no PC samples in this session (%s); the "
                             "PcSampling and Deep engines sample PCs" % self._ran(), file)

    def inspect_profile_samples(self, file=None):
        """Per-instruction detail: the SASS metrics section (executions,
        divergence, memory coalescing per function and source line)."""
        if not len(self.sass_metrics) and len(self.pc_samples):
            return self._print("no SASS metrics in this session (%d PC sample rows: see "
                               "inspect_stalls() and the scopes DataFrame)"
                               % len(self.pc_samples), file)
        self._print_sections(("sass_metrics",), "no profile samples in this session (%s); the "
                             "PcSampling, SassMetrics and Deep engines record them"
                             % self._ran(), file)

    def inspect_perf_metrics(self, file=None):
        """Hardware counters per profiled scope (RangeProfiler engine)."""
        self._print_sections(("hardware_counters",), "no hardware counter results in this "
                             "session (%s); the RangeProfiler engine records them" % self._ran(),
                             file)
