# SPDX-License-Identifier: Apache-2.0
"""gpufl.viz: timelines of a recorded session, drawn with matplotlib.

    import gpufl.viz as viz
    fig = viz.timeline("./logs", log_prefix="my_app", path="timeline.png")
    viz.kernels(session, start_ms=100, end_ms=250, show=True)

Every panel shares one time axis (since the session's start) and reads the
DataFrames of gpufl.analyzer; boxes of one panel are one PolyCollection, so
a million kernels cost numpy work, not a Python object each. matplotlib is
imported on first use: recording and the analyzer never need it.
"""
import glob
import numbers
import os

from . import _gpufl
from .analyzer import GpuFlightSession, _pandas

__all__ = ["PANELS", "timeline", "kernels", "memory", "utilization", "init", "show"]

#: The panels timeline() can draw, top to bottom.
PANELS = ("scopes", "kernels", "copies", "memory", "utilization")

_TITLES = {"scopes": "Scopes", "kernels": "Kernels", "copies": "Copies and memsets",
           "memory": "Memory used", "utilization": "Utilisation"}
_WHAT = {"scopes": "scopes", "kernels": "kernels", "copies": "copies and memsets"}
# Time units: nanoseconds per unit, and the axis label's name of it.
_UNITS = {"us": (1e3, "µs"), "ms": (1e6, "ms"), "s": (1e9, "s")}
_COPY_KINDS = ("host→device", "device→host", "device→device", "peer", "other", "memset")
_GIB = float(1 << 30)
_GPUFL_ENOTFOUND = -9  # gpufl.h; the code a NotFoundError of the library carries

_current = None  # the session init() loaded, drawn by show()


def _matplotlib():
    try:
        import matplotlib
        from matplotlib.collections import PolyCollection
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as e:
        raise ImportError("gpufl.viz needs matplotlib (Debian: apt-get install "
                          "python3-matplotlib; pip: pip install matplotlib); importing it "
                          "failed: %s" % e) from e
    return matplotlib, Figure, PolyCollection, Patch


def _short_name(name, limit):
    """A kernel or scope name fit for a label: a demangled signature loses its
    parameter list and a leading 'void ', then anything past limit
    characters becomes an ellipsis."""
    if name is None:
        return "(unnamed)"
    text = str(name)
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, 0, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i]
                break
    if text.startswith("void ") and len(text) > 5:
        text = text[5:]
    return text if len(text) <= limit else text[:max(limit - 1, 1)] + "…"


# ---------------------------------------------------------------- arguments

def _session(session, log_prefix, session_id):
    if isinstance(session, GpuFlightSession):
        if log_prefix is not None or session_id is not None:
            raise TypeError("log_prefix and session_id pick a session in a log directory; "
                            "they do not go with a GpuFlightSession")
        return session
    if isinstance(session, (str, os.PathLike)):
        return GpuFlightSession(session, log_prefix=log_prefix, session_id=session_id)
    raise TypeError("session must be a GpuFlightSession or a log directory (str or path), "
                    "not %s" % type(session).__name__)


def _real(name, value, allow_none=True):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s must be a number, not %s" % (name, type(value).__name__))
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("%s must be finite, not %r" % (name, value))
    return float(value)


def _int(name, value, least):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
    if value < least:
        raise ValueError("%s must be at least %d, not %d" % (name, least, value))
    return int(value)


def _panels(panels):
    if isinstance(panels, str):
        panels = (panels,)
    try:
        chosen = tuple(panels)
    except TypeError:
        raise TypeError("panels must be a sequence of panel names (%s), not %s"
                        % (", ".join(PANELS), type(panels).__name__)) from None
    unknown = [p for p in chosen if p not in PANELS]
    if unknown:
        raise ValueError("unknown panel %r: the panels are %s" % (unknown[0], ", ".join(PANELS)))
    if not chosen:
        raise ValueError("panels is empty: name at least one of %s" % ", ".join(PANELS))
    if len(set(chosen)) != len(chosen):
        raise ValueError("panels names a panel twice: %r" % (chosen,))
    return tuple(p for p in PANELS if p in chosen)


class _Options:
    """timeline()'s keyword arguments, checked before anything is read."""

    def __init__(self, panels, path, show, unit, start_ms, end_ms, top_n, max_name_chars,
                 figsize, dpi, title):
        self.panels = _panels(panels)
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError("path must be a file name (str or path), not %s"
                            % type(path).__name__)
        self.path = path
        if not isinstance(show, bool):
            raise TypeError("show must be True or False, not %s" % type(show).__name__)
        self.show = show
        if unit is not None and unit not in _UNITS:
            raise ValueError("unit must be one of %s or None (chosen from the time span), "
                             "not %r" % (", ".join(_UNITS), unit))
        self.unit = unit
        self.start_ms = _real("start_ms", start_ms)
        self.end_ms = _real("end_ms", end_ms)
        if self.start_ms is not None and self.end_ms is not None and self.end_ms <= self.start_ms:
            raise ValueError("end_ms (%g) must be after start_ms (%g)"
                             % (self.end_ms, self.start_ms))
        self.top_n = _int("top_n", top_n, 1)
        self.max_name_chars = _int("max_name_chars", max_name_chars, 8)
        if figsize is not None:
            if (not isinstance(figsize, (tuple, list)) or len(figsize) != 2
                    or any(_real("figsize", v, False) <= 0 for v in figsize)):
                raise ValueError("figsize must be (width, height) in inches, both positive, "
                                 "not %r" % (figsize,))
            figsize = tuple(float(v) for v in figsize)
        self.figsize = figsize
        self.dpi = _real("dpi", dpi, False)
        if self.dpi <= 0:
            raise ValueError("dpi must be positive, not %g" % self.dpi)
        if title is not None and not isinstance(title, str):
            raise TypeError("title must be a str, not %s" % type(title).__name__)
        self.title = title


# ---------------------------------------------------------------- the data

class _Lanes:
    """Boxes on lanes: start and end (ns), lane index and colour index (into a
    palette; -1, its last colour) of each box, the lanes' labels; names and
    open flags of scopes; the kernel names with a colour of their own (top)
    and how many others share the last one."""

    def __init__(self, start, end, lane, color, labels, names=None, open_=None, top=(),
                 others=0):
        self.start, self.end, self.lane, self.color = start, end, lane, color
        self.labels, self.names, self.open = labels, names, open_
        self.top, self.others = top, others

    def extent(self):
        return (self.start.min(), self.end.max()) if len(self.start) else None

    def subset(self, keep):
        """The boxes where the boolean array keep is true, on the same lanes."""
        pick = (lambda a: None if a is None else a[keep])
        return _Lanes(self.start[keep], self.end[keep], self.lane[keep], self.color[keep],
                      self.labels, pick(self.names), pick(self.open), self.top, self.others)

    def window(self, t0, t1):
        """Only the boxes that reach into [t0, t1]."""
        return self.subset((self.end >= t0) & (self.start <= t1))


class _Series:
    """Lines over time: [(label, ts_ns, values, style)] and the values' unit
    ("%", or "bytes": drawn in GiB, or MiB when all stay under 1 GiB)."""

    def __init__(self, lines, unit):
        self.lines, self.unit = lines, unit

    def extent(self):
        return (min(ts.min() for _, ts, _, _ in self.lines),
                max(ts.max() for _, ts, _, _ in self.lines))


def _session_end_ns(session):
    info = session.info
    for key in ("duration_ns", "last_ts_ns"):
        if info.get(key) is not None and info[key] >= 0:
            return info[key]
    return 0


def _lanes_of(frame, keys):
    """The lane of each row (the rank of its keys' values among the distinct
    ones, sorted) and the distinct values, lane by lane."""
    groups = frame.groupby(list(keys), sort=True)
    return groups.ngroup().to_numpy(), list(groups.size().index)


def _scope_lanes(session, numpy, pandas, options):
    frame = session.scope_events
    if not len(frame):
        return None
    end = frame.end_ns.to_numpy()
    open_ = end < 0
    end = numpy.where(open_, max(_session_end_ns(session), frame.start_ns.max()), end)
    threads = frame.tid.nunique() > 1
    keys = ("tid", "depth") if threads else ("depth",)
    lane, values = _lanes_of(frame, keys)
    if threads:
        labels = ["tid %d · depth %d" % (tid, depth) for tid, depth in values]
    else:
        labels = ["depth %d" % depth for depth in values]
    color = pandas.factorize(frame.name)[0] % 20
    return _Lanes(frame.start_ns.to_numpy(), end, lane, color, labels,
                  frame.name.to_numpy(), open_)


def _kernel_lanes(session, numpy, pandas, options):
    frame = session.kernels
    if not len(frame):
        return None
    lane, values = _lanes_of(frame, ("device", "stream"))
    labels = ["GPU %d · stream %d" % key for key in values]
    totals = frame.groupby("name").duration_ns.sum().sort_values(ascending=False, kind="stable")
    top = list(totals.index[:options.top_n])
    color = pandas.Categorical(frame.name, categories=top).codes.astype(numpy.int64)
    others = len(totals) - len(top) + int(frame.name.isna().any())
    return _Lanes(frame.start_ns.to_numpy(), frame.end_ns.to_numpy(), lane, color, labels,
                  top=top, others=others)


def _copy_lanes(session, numpy, pandas, options):
    parts = []
    if len(session.memcpy):
        parts.append(session.memcpy[["start_ns", "end_ns", "device", "direction"]]
                     .rename(columns={"direction": "kind"}))
    if len(session.memsets):
        parts.append(session.memsets[["start_ns", "end_ns", "device"]].assign(kind="memset"))
    if not parts:
        return None
    frame = pandas.concat(parts, ignore_index=True)
    kinds = list(_COPY_KINDS) + sorted(set(frame.kind.dropna()) - set(_COPY_KINDS))
    frame["kind"] = pandas.Categorical(frame.kind.fillna("other"), categories=kinds)
    frame["order"] = frame.kind.cat.codes
    lane, values = _lanes_of(frame, ("device", "order"))
    labels = ["GPU %d · %s" % (device, kinds[order]) for device, order in values]
    return _Lanes(frame.start_ns.to_numpy(), frame.end_ns.to_numpy(), lane,
                  frame.order.to_numpy().astype(numpy.int64), labels)


def _series(frame, column):
    """(ts_ns, values) of one column, without its unknown (NaN) samples."""
    keep = frame[column].notna().to_numpy()
    return frame.ts_ns.to_numpy()[keep], frame[column].to_numpy()[keep]


def _per_device(device, columns):
    lines = []
    for gpu, frame in device.groupby("device", sort=True):
        for column, label, scale, style in columns:
            ts, values = _series(frame, column)
            if len(ts):
                lines.append((label(gpu, frame), ts, values / scale, style))
    return lines


def _memory_series(session, numpy, pandas, options):
    def used(gpu, frame):
        total = frame.mem_total_bytes.max()
        return ("GPU %d used (of %.1f GiB)" % (gpu, total / _GIB) if total == total
                else "GPU %d used" % gpu)
    lines = _per_device(session.device_metrics, [("mem_used_bytes", used, 1.0, "-")])
    ts, rss = _series(session.host_metrics, "proc_rss_bytes")
    if len(ts):
        lines.append(("process RSS", ts, rss, "--"))
    return _Series(lines, "bytes") if lines else None


def _utilization_series(session, numpy, pandas, options):
    lines = _per_device(session.device_metrics, [
        ("gpu_util_pct", lambda gpu, _: "GPU %d utilisation" % gpu, 1.0, "-"),
        ("sm_active_pct", lambda gpu, _: "GPU %d SM active" % gpu, 1.0, ":")])
    for column, label in (("cpu_pct", "host CPU"), ("proc_cpu_pct", "process CPU (% of a core)")):
        ts, values = _series(session.host_metrics, column)
        if len(ts):
            lines.append((label, ts, values, "--"))
    return _Series(lines, "%") if lines else None


_READERS = {"scopes": _scope_lanes, "kernels": _kernel_lanes, "copies": _copy_lanes,
            "memory": _memory_series, "utilization": _utilization_series}


def _missing(session, panel):
    """The line an empty panel shows: what is missing and what records it."""
    engine = session.info["engine"]
    ran = ("the session ran the %s engine" % engine if engine
           else "the session has no record of its engine")
    if panel == "scopes":
        return "no scopes recorded (none was opened with gpufl.Scope or GFL_SCOPE)"
    if panel == "kernels":
        launches = len(session.launches)
        if launches:
            return ("%d kernel launches recorded but no kernel timed (%s; the Trace engine "
                    "times kernels)" % (launches, ran))
        return "no kernels recorded (%s; kernels are recorded from the Trace engine up)" % ran
    if panel == "copies":
        return ("no memory copies or memsets recorded (%s; they are recorded from the Trace "
                "engine up)" % ran)
    if panel == "memory":
        return ("no memory samples recorded (GPU memory comes from NVML samples, process RSS "
                "from host samples)")
    return ("no utilisation samples recorded (GPU samples come from NVML, CPU samples from "
            "host sampling)")


# ---------------------------------------------------------------- drawing

class _Drawing:
    def __init__(self, session, options):
        self.session, self.options = session, options
        self.numpy, self.pandas = _pandas()
        self.mpl, self.Figure, self.PolyCollection, self.Patch = _matplotlib()
        self.data = {p: _READERS[p](session, self.numpy, self.pandas, options)
                     for p in options.panels}
        self._window()

    def _window(self):
        """The time range drawn (ns) and its unit."""
        options = self.options
        extents = [d.extent() for d in self.data.values() if d is not None]
        if extents:
            t0 = min(e[0] for e in extents)
            t1 = max(e[1] for e in extents)
        else:
            t0, t1 = 0, max(_session_end_ns(self.session), 1000000)
        data_ms = (t0 / 1e6, t1 / 1e6)
        pad = max((t1 - t0) * 0.01, 500)
        t0, t1 = max(t0 - pad, 0), t1 + pad
        if options.start_ms is not None:
            t0 = options.start_ms * 1e6
        if options.end_ms is not None:
            t1 = options.end_ms * 1e6
            if options.start_ms is None and t1 <= t0:
                t0 = 0  # an end before the first data: from the session's start
        if t1 <= t0:
            raise ValueError("the time window is empty: from %g ms to %g ms (the data run from "
                             "%g ms to %g ms)" % ((t0 / 1e6, t1 / 1e6) + data_ms))
        self.t0, self.t1 = t0, t1
        unit = options.unit
        if unit is None:
            span = t1 - t0
            unit = "us" if span < 1e6 else "ms" if span < 60e9 else "s"
        self.scale, self.unit_name = _UNITS[unit]
        self.outside = {}  # panel -> boxes it has, none of them in the window
        if options.start_ms is not None or options.end_ms is not None:
            for panel, data in self.data.items():
                if isinstance(data, _Lanes):
                    inside = data.window(t0, t1)
                    self.data[panel] = inside if len(inside.start) else None
                    if not len(inside.start):
                        self.outside[panel] = len(data.start)

    def figure(self):
        options = self.options
        heights = []
        for panel in options.panels:
            data = self.data[panel]
            if data is None:
                heights.append(0.9)
            elif isinstance(data, _Lanes):
                heights.append(max(1.0, 0.3 * len(data.labels) + 0.45))
            else:
                heights.append(1.9)
        figsize = options.figsize or (13.0, sum(heights) + 0.9)
        if options.show:
            import matplotlib.pyplot as plt
            fig = plt.figure(figsize=figsize, layout="constrained")
        else:  # not registered with pyplot: drawn with Agg, freed with its last reference
            fig = self.Figure(figsize=figsize, layout="constrained")
        axes = fig.subplots(len(heights), 1, sharex=True, squeeze=False,
                            gridspec_kw={"height_ratios": heights})[:, 0]
        self.axes_width_pt = figsize[0] * 0.72 * 72
        for ax, panel in zip(axes, options.panels):
            ax.set_label(panel)
            ax.set_title(_TITLES[panel], loc="left", fontsize=9, fontweight="bold")
            ax.tick_params(labelsize=8)
            data = self.data[panel]
            if data is None:
                ax.set_yticks([])
                message = ("nothing in this time window (%d %s outside it)"
                           % (self.outside[panel], _WHAT[panel]) if panel in self.outside
                           else _missing(self.session, panel))
                ax.text(0.5, 0.5, message, transform=ax.transAxes,
                        ha="center", va="center", fontsize=8.5, color="0.35")
            elif panel == "scopes":
                self._scopes(ax, data)
            elif panel == "kernels":
                self._kernels(ax, data)
            elif panel == "copies":
                self._copies(ax, data)
            else:
                self._lines(ax, data, panel)
        last = axes[-1]
        last.set_xlim(self.t0 / self.scale, self.t1 / self.scale)
        last.ticklabel_format(axis="x", style="plain", useOffset=False)
        last.set_xlabel("time since session start (%s)" % self.unit_name, fontsize=9)
        info = self.session.info
        fig.suptitle(options.title if options.title is not None else
                     " · ".join(str(v) for v in (info["app_name"], info["session_id"],
                                                 info["hostname"]) if v),
                     fontsize=10)
        return fig

    # -- lane panels

    def _boxes(self, ax, lanes, colors, gid, **style):
        """One PolyCollection of every box of lanes: numpy builds the
        vertices, so the cost does not grow with a Python loop per box."""
        numpy = self.numpy
        x0 = lanes.start / self.scale
        x1 = lanes.end / self.scale
        y = lanes.lane.astype(float)
        verts = numpy.empty((len(x0), 4, 2))
        verts[:, 0, 0] = verts[:, 1, 0] = x0
        verts[:, 2, 0] = verts[:, 3, 0] = x1
        verts[:, 0, 1] = verts[:, 3, 1] = y - 0.38
        verts[:, 1, 1] = verts[:, 2, 1] = y + 0.38
        face = colors[lanes.color]
        # An edge of the face's colour keeps a box narrower than a pixel visible.
        collection = self.PolyCollection(verts, facecolors=face, edgecolors=face,
                                         linewidths=0.4, gid=gid, **style)
        ax.add_collection(collection)
        return collection

    def _lane_axis(self, ax, labels):
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_ylim(len(labels) - 0.5, -0.5)  # the first lane on top
        ax.grid(axis="x", color="0.9", linewidth=0.6)
        ax.set_axisbelow(True)

    def _palette(self, name, count, last):
        cmap = self.mpl.colormaps[name]
        return self.numpy.array([cmap(i % cmap.N) for i in range(count)] + [last])

    def _scopes(self, ax, lanes):
        colors = self._palette("tab20", 20, (0.6, 0.6, 0.6, 1.0))
        colors[:, 3] = 0.75
        self._boxes(ax, lanes.subset(~lanes.open), colors, "scopes")
        if lanes.open.any():  # never ended: hatched up to the session's end
            self._boxes(ax, lanes.subset(lanes.open), colors, "open scopes", hatch="///")
        self._lane_axis(ax, lanes.labels)
        self._scope_names(ax, lanes)

    def _scope_names(self, ax, lanes, most=150):
        """Names inside the boxes wide enough for a few characters; the
        widest first, at most `most` of them."""
        numpy = self.numpy
        x0 = numpy.maximum(lanes.start, self.t0)
        x1 = numpy.minimum(lanes.end, self.t1)
        chars = ((x1 - x0) / (self.t1 - self.t0) * self.axes_width_pt / 4.4).astype(int)
        wide = numpy.flatnonzero(chars >= 4)
        wide = wide[numpy.argsort(-chars[wide], kind="stable")][:most]
        for i in wide:
            ax.text((x0[i] + x1[i]) / 2 / self.scale, lanes.lane[i],
                    _short_name(lanes.names[i], min(chars[i], self.options.max_name_chars)),
                    ha="center", va="center", fontsize=7, clip_on=True)

    def _kernels(self, ax, lanes):
        colors = self._palette("tab10", len(lanes.top), (0.62, 0.62, 0.62, 1.0))
        self._boxes(ax, lanes, colors, "kernels")
        self._lane_axis(ax, lanes.labels)
        handles = [self.Patch(color=colors[i], label=_short_name(name,
                                                                 self.options.max_name_chars))
                   for i, name in enumerate(lanes.top)]
        if lanes.others:
            handles.append(self.Patch(color=colors[-1], label="%d other name%s" % (
                lanes.others, "" if lanes.others == 1 else "s")))
        self._legend(ax, handles)

    def _copies(self, ax, lanes):
        colors = self._palette("Set2", len(_COPY_KINDS), (0.62, 0.62, 0.62, 1.0))
        self._boxes(ax, lanes, colors, "copies")
        self._lane_axis(ax, lanes.labels)

    # -- line panels

    def _lines(self, ax, series, panel):
        top = max(values.max() for _, _, values, _ in series.lines)
        divisor, ylabel = 1.0, series.unit
        if series.unit == "bytes":
            divisor, ylabel = (_GIB, "GiB") if top >= _GIB else (_GIB / 1024, "MiB")
        for label, ts, values, style in series.lines:
            ax.plot(ts / self.scale, values / divisor, style, label=label, linewidth=1.2,
                    marker="." if len(ts) <= 60 else None, markersize=4)
        top /= divisor
        if panel == "utilization":
            ax.set_ylim(0, max(100.0, top * 1.05))
        else:
            ax.set_ylim(0, top * 1.1 if top > 0 else 1.0)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(color="0.9", linewidth=0.6)
        self._legend(ax, ax.get_legend_handles_labels()[0])

    def _legend(self, ax, handles):
        for handle in handles:  # matplotlib leaves out a label that starts with "_"
            if handle.get_label().startswith("_"):
                handle.set_label(" " + handle.get_label())
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7,
                  frameon=False, borderaxespad=0.0)


def _draw(session, log_prefix, session_id, panels, *, path=None, show=False, unit=None,
          start_ms=None, end_ms=None, top_n=10, max_name_chars=40, figsize=None, dpi=120,
          title=None):
    options = _Options(panels, path, show, unit, start_ms, end_ms, top_n, max_name_chars,
                       figsize, dpi, title)
    fig = _Drawing(_session(session, log_prefix, session_id), options).figure()
    if options.path is not None:
        fig.savefig(os.fspath(options.path), dpi=options.dpi)
    if options.show:
        import matplotlib.pyplot as plt
        plt.show()
    return fig


# ---------------------------------------------------------------- the API

def timeline(session, log_prefix=None, session_id=None, *, panels=PANELS, **options):
    """The session's timeline: one panel each of `panels` (PANELS, in that
    order), all on one time axis. Returns the matplotlib Figure.

    session is a GpuFlightSession, or a log directory that
    GpuFlightSession(session, log_prefix, session_id) reads. Keywords:
    path (write the figure there: PNG, or the format of its extension),
    show (plt.show()), unit ("us", "ms", "s"; default: from the span),
    start_ms and end_ms (the window drawn, default: all the data),
    top_n (kernel names given their own colour, 10), max_name_chars
    (longer names are cut, 40), figsize (inches), dpi (of the file, 120),
    title (default: app, session id and host). A panel without data says
    what is missing and which engine records it.
    """
    return _draw(session, log_prefix, session_id, panels, **options)


def kernels(session, log_prefix=None, session_id=None, **options):
    """Kernels on one lane per device and stream, under the scopes (one lane
    per nesting depth, and per thread when several opened scopes). The
    keywords are timeline()'s."""
    return _draw(session, log_prefix, session_id, ("scopes", "kernels"), **options)


def memory(session, log_prefix=None, session_id=None, **options):
    """Copies and memsets on one lane per device and direction, and the
    memory used of each GPU and the process's RSS over time. The keywords
    are timeline()'s."""
    return _draw(session, log_prefix, session_id, ("copies", "memory"), **options)


def utilization(session, log_prefix=None, session_id=None, **options):
    """GPU utilisation and SM activity per device, host and process CPU over
    time. The keywords are timeline()'s."""
    return _draw(session, log_prefix, session_id, ("utilization",), **options)


def init(pattern, log_prefix=None, session_id=None):
    """Loads the session that show() draws and returns it (a
    GpuFlightSession). pattern is a log directory, a session directory or a
    glob of them or of log files ("./logs/*.log"); of the sessions found
    (of app log_prefix, with id session_id, when given) the newest is kept.
    Raises gpufl.NotFoundError when none is found."""
    global _current
    if not isinstance(pattern, (str, os.PathLike)):
        raise TypeError("pattern must be a path or a glob (str), not %s" % type(pattern).__name__)
    text = os.path.expanduser(os.fspath(pattern))
    if not glob.has_magic(text):
        _current = GpuFlightSession(text, log_prefix=log_prefix, session_id=session_id)
        return _current
    found, errors = {}, []
    for match in sorted(glob.glob(text)):
        where = match if os.path.isdir(match) else os.path.dirname(match) or "."
        try:
            session = GpuFlightSession(where, log_prefix=log_prefix, session_id=session_id)
        except _gpufl.NotFoundError as e:
            errors.append(str(e))
            continue
        found.setdefault(os.path.realpath(session.directory), session)
    if not found:
        error = _gpufl.NotFoundError(
            "no session found by %r: %s" % (pattern, errors[0] if errors else
                                             "no file or directory matches it"))
        error.code = _GPUFL_ENOTFOUND
        raise error
    _current = max(found.values(), key=lambda s: s.info["epoch_unix_us"])
    return _current


def show(**options):
    """Draws the timeline of the session init() loaded and shows it
    (plt.show()); returns the Figure. The keywords are timeline()'s."""
    if _current is None:
        raise RuntimeError("gpufl.viz.show() has no session to draw: call "
                           "gpufl.viz.init(\"./logs\") first")
    return timeline(_current, show=True, **options)
