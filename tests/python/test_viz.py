# SPDX-License-Identifier: Apache-2.0
"""gpufl.viz on the recorded fixture sessions and on sessions this process
records: the panels and lanes drawn, boxes and lines against the analyzer's
DataFrames, the PNG written, empty and partial sessions, the time window,
init()/show(), and the errors of bad arguments."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import matplotlib

matplotlib.use("Agg")  # before pyplot: show() must never open a window here

import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy  # noqa: E402
import pytest  # noqa: E402

import gpufl  # noqa: E402
import gpufl.viz as viz  # noqa: E402
from gpufl.analyzer import GpuFlightSession  # noqa: E402

SESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "sessions")
BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def fixture(name):
    return GpuFlightSession(os.path.join(SESSIONS, name))


def panel(fig, name):
    found = [ax for ax in fig.axes if ax.get_label() == name]
    assert len(found) == 1, [ax.get_label() for ax in fig.axes]
    return found[0]


def collection(ax, gid):
    found = [c for c in ax.collections if c.get_gid() == gid]
    assert len(found) == 1, [c.get_gid() for c in ax.collections]
    return found[0]


def boxes(ax, gid):
    """(x0, width, lane) of every box of one collection, in drawing order."""
    rows = []
    for path in collection(ax, gid).get_paths():
        v = path.vertices[:4]
        rows.append((v[:, 0].min(), v[:, 0].max() - v[:, 0].min(), v[:, 1].mean()))
    return numpy.array(rows).reshape(-1, 3)


def lane_labels(ax):
    return [t.get_text() for t in ax.get_yticklabels()]


def messages(ax):
    return [t.get_text() for t in ax.texts]


def legend_labels(ax):
    return [t.get_text().strip() for t in ax.get_legend().get_texts()]


# ---- panels, lanes and boxes ----

def test_timeline_has_every_panel_on_one_time_axis():
    s = fixture("scoped")
    fig = viz.timeline(s)
    assert [ax.get_label() for ax in fig.axes] == list(viz.PANELS)
    assert [ax.get_title(loc="left") for ax in fig.axes] == [
        "Scopes", "Kernels", "Copies and memsets", "Memory used", "Utilisation"]
    limits = {ax.get_xlim() for ax in fig.axes}
    assert len(limits) == 1  # shared
    (x0, x1), = limits
    # the data run from 0.5 ms (first scope) to 602.2 ms (last copy's end), with a
    # margin of 1 % of that on each side, none before the session's start
    assert x0 == 0.0 and x1 == pytest.approx(602.2 + (602.2 - 0.5) * 0.01)
    assert fig.axes[-1].get_xlabel() == "time since session start (ms)"
    title = fig._suptitle.get_text()
    assert "scoped_demo" in title and s.info["session_id"] in title


def test_kernel_boxes_are_the_kernels_dataframe():
    s = fixture("trace")
    k = s.kernels
    ax = panel(viz.kernels(s, unit="ms"), "kernels")
    assert lane_labels(ax) == ["GPU 0 · stream 7", "GPU 0 · stream 13"]
    got = boxes(ax, "kernels")
    assert len(got) == len(k) == 8
    assert got[:, 0] == pytest.approx(k.start_ns.to_numpy() / 1e6)
    assert got[:, 1] == pytest.approx(k.duration_ns.to_numpy() / 1e6)
    assert got[:, 2].tolist() == [0.0 if stream == 7 else 1.0 for stream in k.stream]
    # one colour per name; the legend lists names by total GPU time
    colors = collection(ax, "kernels").get_facecolors()
    for name in set(k.name):
        rows = numpy.flatnonzero((k.name == name).to_numpy())
        assert (colors[rows] == colors[rows[0]]).all()
    assert len({tuple(c) for c in colors}) == 3
    totals = k.groupby("name").duration_ns.sum().sort_values(ascending=False)
    assert legend_labels(ax) == list(totals.index)


def test_scopes_stack_by_depth_on_each_thread():
    s = fixture("basic")  # two threads; scope 16 never ended
    e = s.scope_events
    ax = panel(viz.kernels(s, unit="ms"), "scopes")
    assert lane_labels(ax) == ["tid 4711 · depth 1", "tid 4711 · depth 2", "tid 4711 · depth 3",
                               "tid 4712 · depth 1", "tid 4712 · depth 2"]
    closed = e[e.open == 0]
    got = boxes(ax, "scopes")
    assert len(got) == len(closed) == 15
    assert got[:, 0] == pytest.approx(closed.start_ns.to_numpy() / 1e6)
    assert got[:, 1] == pytest.approx(closed.duration_ns.to_numpy() / 1e6)
    lanes = {"tid 4711 · depth %d" % d: i for i, d in enumerate((1, 2, 3))}
    lanes.update({"tid 4712 · depth 1": 3, "tid 4712 · depth 2": 4})
    assert got[:, 2].tolist() == [lanes["tid %d · depth %d" % (t, d)]
                                  for t, d in zip(closed.tid, closed.depth)]
    # the open scope runs, hatched, to the session's end (4 s)
    (x0, width, lane), = boxes(ax, "open scopes")
    assert (x0, x0 + width, lane) == pytest.approx((3000.0, 4000.0, 3.0))
    assert collection(ax, "open scopes").get_hatch() == "///"
    assert "train" in messages(ax) and "prefetch" in messages(ax)


def test_one_thread_has_depth_lanes():
    ax = panel(viz.kernels(fixture("gpu")), "scopes")
    assert lane_labels(ax) == ["depth 1", "depth 2"]
    assert boxes(ax, "scopes")[:, 2].tolist() == [0.0, 1.0, 1.0, 1.0]


def test_copies_and_memsets_have_a_lane_per_device_and_direction():
    s = fixture("trace")
    ax = panel(viz.memory(s, unit="ms"), "copies")
    assert lane_labels(ax) == ["GPU 0 · host→device", "GPU 0 · device→host",
                               "GPU 0 · device→device"]
    got = boxes(ax, "copies")
    assert got[:, 0] == pytest.approx(s.memcpy.start_ns.to_numpy() / 1e6)
    assert got[:, 1] == pytest.approx(s.memcpy.duration_ns.to_numpy() / 1e6)
    assert got[:, 2].tolist() == [0, 0, 1, 2]
    scoped = fixture("scoped")
    ax = panel(viz.memory(scoped), "copies")
    assert lane_labels(ax)[-1] == "GPU 0 · memset"
    assert len(boxes(ax, "copies")) == len(scoped.memcpy) + len(scoped.memsets) == 5


def test_memory_and_utilisation_lines():
    s = fixture("gpu")
    fig = viz.timeline(s, panels=("memory", "utilization"))
    memory = panel(fig, "memory")
    lines = {line.get_label(): line for line in memory.get_lines()}
    assert sorted(lines) == ["GPU 0 used (of 79.6 GiB)", "GPU 1 used (of 39.4 GiB)",
                             "process RSS"]
    gpu0 = s.device_metrics[s.device_metrics.device == 0]
    x, y = lines["GPU 0 used (of 79.6 GiB)"].get_data()
    assert x == pytest.approx(gpu0.ts_ns.to_numpy() / 1e6)
    assert y == pytest.approx(gpu0.mem_used_bytes.to_numpy() / 2**30)
    assert memory.get_ylabel() == "GiB"
    util = panel(fig, "utilization")
    lines = {line.get_label(): line for line in util.get_lines()}
    # GPU 1 reports no utilisation (all NaN): no line for it
    assert sorted(lines) == ["GPU 0 SM active", "GPU 0 utilisation", "host CPU",
                             "process CPU (% of a core)"]
    x, y = lines["GPU 0 SM active"].get_data()
    assert len(x) == gpu0.sm_active_pct.notna().sum() == 9 and not numpy.isnan(y).any()
    assert util.get_ylim()[1] >= s.host_metrics.proc_cpu_pct.max() > 100
    assert util.get_ylabel() == "%"


def test_each_function_draws_its_panels():
    s = fixture("scoped")
    assert [ax.get_label() for ax in viz.kernels(s).axes] == ["scopes", "kernels"]
    assert [ax.get_label() for ax in viz.memory(s).axes] == ["copies", "memory"]
    assert [ax.get_label() for ax in viz.utilization(s).axes] == ["utilization"]
    fig = viz.timeline(s, panels=["utilization", "kernels"])  # drawn in PANELS order
    assert [ax.get_label() for ax in fig.axes] == ["kernels", "utilization"]
    assert [ax.get_label() for ax in viz.timeline(s, panels="copies").axes] == ["copies"]


def test_a_log_directory_and_prefix_instead_of_a_session(tmp_path):
    fig = viz.kernels(os.path.join(SESSIONS, "trace"), log_prefix="trace_demo")
    assert len(boxes(panel(fig, "kernels"), "kernels")) == 8
    with pytest.raises(gpufl.NotFoundError, match="not 'other'"):
        viz.kernels(os.path.join(SESSIONS, "trace"), log_prefix="other")


# ---- the PNG ----

def test_png_is_written_with_the_size_asked(tmp_path):
    path = tmp_path / "timeline.png"
    fig = viz.timeline(fixture("scoped"), path=path, figsize=(8, 5), dpi=50)
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000
    image = matplotlib.image.imread(str(path))
    assert image.shape[:2] == (250, 400)
    assert image[..., :3].std() > 0.05  # something is drawn, not a blank page
    assert fig.get_size_inches().tolist() == [8.0, 5.0]


def test_each_function_saves(tmp_path):
    s = fixture("gpu")
    for function in (viz.kernels, viz.memory, viz.utilization):
        path = tmp_path / (function.__name__ + ".png")
        function(s, path=str(path))
        assert path.read_bytes()[:8] == PNG_MAGIC


def test_figures_stay_out_of_pyplot(tmp_path):
    before = plt.get_fignums()
    viz.timeline(fixture("trace"), path=tmp_path / "t.png")
    assert plt.get_fignums() == before


def test_show_calls_pyplot_show(monkeypatch):
    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(plt.get_fignums()))
    fig = viz.utilization(fixture("gpu"), show=True)
    try:
        assert len(shown) == 1 and fig.number in shown[0]
    finally:
        plt.close(fig)


# ---- sessions with little in them ----

def test_an_empty_session_says_what_is_missing(log_dir, tmp_path):
    assert gpufl.init(app_name="empty", log_path=str(log_dir))
    gpufl.shutdown()
    path = tmp_path / "empty.png"
    fig = viz.timeline(str(log_dir), log_prefix="empty", path=path)
    assert [ax.get_label() for ax in fig.axes] == list(viz.PANELS)
    for ax in fig.axes:
        assert not ax.collections and not ax.get_lines() and ax.get_legend() is None
        (text,) = messages(ax)
        assert text.startswith("no ") and "recorded" in text
    assert "Monitor engine" in messages(panel(fig, "kernels"))[0]
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_a_session_without_device_metrics():
    fig = viz.timeline(fixture("basic"))  # host samples only, Monitor engine without a GPU
    assert [line.get_label() for line in panel(fig, "memory").get_lines()] == ["process RSS"]
    assert [line.get_label() for line in panel(fig, "utilization").get_lines()] == [
        "host CPU", "process CPU (% of a core)"]
    assert messages(panel(fig, "kernels")) == [
        "no kernels recorded (the session ran the Monitor engine; kernels are recorded from "
        "the Trace engine up)"]
    fig = viz.timeline(fixture("trace"))  # kernels, no samples at all
    assert messages(panel(fig, "memory"))[0].startswith("no memory samples recorded")
    assert messages(panel(fig, "utilization"))[0].startswith("no utilisation samples recorded")


def test_a_session_with_launches_but_no_kernel_times():
    fig = viz.kernels(fixture("pcsampled"))
    (text,) = messages(panel(fig, "kernels"))
    assert text == ("7 kernel launches recorded but no kernel timed (the session ran the "
                    "PcSampling engine; the Trace engine times kernels)")


def test_a_session_this_process_recorded(log_dir):
    assert gpufl.init(app_name="rec", log_path=str(log_dir), system_sample_rate_ms=10,
                      continuous_system_sampling=True)
    with gpufl.Scope("outer"):
        with gpufl.Scope("inner"):
            time.sleep(0.05)
    gpufl.shutdown()
    s = GpuFlightSession(log_dir, log_prefix="rec")
    fig = viz.timeline(s)
    assert lane_labels(panel(fig, "scopes")) == ["depth 1", "depth 2"]
    assert len(boxes(panel(fig, "scopes"), "scopes")) == 2
    rss = panel(fig, "memory").get_lines()
    assert [line.get_label() for line in rss] == ["process RSS"]
    assert panel(fig, "memory").get_ylabel() == "MiB"  # an interpreter's RSS: under 1 GiB
    assert len(rss[0].get_xdata()) == s.host_metrics.proc_rss_bytes.notna().sum() > 0


# ---- the time window, units and names ----

def test_a_window_draws_what_reaches_into_it():
    s = fixture("trace")
    fig = viz.timeline(s, start_ms=1.45, end_ms=2.1)
    ax = panel(fig, "kernels")
    assert fig.axes[-1].get_xlabel() == "time since session start (µs)"  # 0.65 ms
    assert ax.get_xlim() == pytest.approx((1450.0, 2100.0))
    k = s.kernels
    inside = k[(k.end_ns >= 1450000) & (k.start_ns <= 2100000)]
    got = boxes(ax, "kernels")
    assert len(got) == len(inside) == 4
    assert got[:, 0] == pytest.approx(inside.start_ns.to_numpy() / 1e3)
    assert messages(panel(fig, "copies")) == [
        "nothing in this time window (4 copies and memsets outside it)"]


def test_an_end_before_the_data_starts_the_window_at_zero():
    fig = viz.kernels(fixture("trace"), end_ms=0.5)  # kernels from 1 ms on
    assert fig.axes[0].get_xlim() == pytest.approx((0.0, 500.0))  # µs
    assert messages(panel(fig, "kernels")) == [
        "nothing in this time window (8 kernels outside it)"]


def test_units():
    s = fixture("gpu")  # 0.9 s .. 5.6 s
    assert viz.utilization(s).axes[0].get_xlabel().endswith("(ms)")
    ax = viz.utilization(s, unit="s").axes[0]
    assert ax.get_xlabel().endswith("(s)")
    assert ax.get_lines()[0].get_xdata()[0] == pytest.approx(1.0)


def test_long_names_are_cut():
    name = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
            "at::detail::Array<char*, 1>)")
    short = viz._short_name(name, 40)
    assert short == "at::native::vectorized_elementwise_kern…" and len(short) == 40
    assert viz._short_name("gemm(float const*, float*)", 40) == "gemm"
    assert viz._short_name("(anonymous namespace)::fill(int)", 40) == "(anonymous namespace)::fill"
    assert viz._short_name("_Z4gemmPKfS0_Pfiii", 40) == "_Z4gemmPKfS0_Pfiii"
    assert viz._short_name(None, 40) == "(unnamed)"
    labels = legend_labels(panel(viz.kernels(fixture("scoped"), max_name_chars=10), "kernels"))
    assert all(len(label) <= 10 for label in labels)
    assert "sgemm_128…" in labels and "relu" in labels


def test_top_n_names_get_colours_and_the_rest_share_grey():
    s = fixture("scoped")
    ax = panel(viz.kernels(s, top_n=2), "kernels")
    # sgemm_bwd 5.8 ms in 2 launches, sgemm_128x64 5.6 ms in 4
    assert legend_labels(ax) == ["sgemm_bwd", "sgemm_128x64", "4 other names"]
    colors = collection(ax, "kernels").get_facecolors()
    rest = ~s.kernels.name.str.startswith("sgemm_").to_numpy()
    assert rest.sum() == 8 and len({tuple(c) for c in colors[rest]}) == 1
    assert len({tuple(c) for c in colors}) == 3


def test_many_kernels_draw_as_one_collection(tmp_path):
    sys.path.insert(0, BENCH)
    try:
        from python_analyzer import write_session
    finally:
        sys.path.remove(BENCH)
    with tempfile.TemporaryDirectory(prefix="gpufl-viz-") as directory:
        write_session(directory, 20000)
        s = GpuFlightSession(directory)
        assert len(s.kernels) == 20000
        began = time.perf_counter()
        fig = viz.kernels(s, path=tmp_path / "many.png")
        took = time.perf_counter() - began
    ax = panel(fig, "kernels")
    assert len(collection(ax, "kernels").get_paths()) == 20000 and not ax.patches
    assert lane_labels(ax) == ["GPU 0 · stream %d" % n for n in (7, 8, 9, 10)]
    assert legend_labels(ax)[-1] == "30 other names"
    # about 1 s on the development VM; a patch per kernel takes tens of seconds
    assert took < 15, took


# ---- init() and show() ----

@pytest.fixture
def logs():
    """A directory of two apps' log directories (outside the tree the
    log_schema test validates)."""
    with tempfile.TemporaryDirectory(prefix="gpufl-viz-") as tmp:
        root = pathlib.Path(tmp)
        shutil.copytree(os.path.join(SESSIONS, "trace"), root / "trace_demo.log" / "s1")
        shutil.copytree(os.path.join(SESSIONS, "scoped"), root / "scoped_demo.log" / "s2")
        yield root


@pytest.fixture
def no_current(monkeypatch):
    monkeypatch.setattr(viz, "_current", None)


def test_init_keeps_the_newest_session_a_glob_finds(logs, no_current):
    s = viz.init(str(logs / "*.log"))
    assert s.info["app_name"] == "scoped_demo"  # recorded after trace_demo
    assert viz.init(str(logs / "*.log"), log_prefix="trace_demo").info["app_name"] == "trace_demo"
    assert viz.init(logs / "*" / "s1" / "*.log").directory == str(logs / "trace_demo.log" / "s1")
    assert viz.init(logs / "scoped_demo.log").info["app_name"] == "scoped_demo"


def test_init_errors(logs, no_current):
    with pytest.raises(gpufl.NotFoundError, match="no file or directory matches") as e:
        viz.init(str(logs / "*.nothing"))
    assert e.value.code == -9 and isinstance(e.value, LookupError)
    with pytest.raises(gpufl.NotFoundError, match="no session found by .*'nope'"):
        viz.init(str(logs / "*.log"), log_prefix="nope")
    with pytest.raises(gpufl.NotFoundError, match="does not exist"):
        viz.init(str(logs / "missing"))
    with pytest.raises(TypeError):
        viz.init(3)
    assert viz._current is None


def test_show_draws_the_session_init_loaded(logs, no_current, monkeypatch):
    with pytest.raises(RuntimeError, match=r"call gpufl.viz.init"):
        viz.show()
    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(True))
    viz.init(str(logs / "*.log"), log_prefix="trace_demo")
    fig = viz.show(panels=("kernels",), unit="ms")
    try:
        assert shown == [True]
        assert len(boxes(panel(fig, "kernels"), "kernels")) == 8
    finally:
        plt.close(fig)


# ---- bad arguments ----

@pytest.mark.parametrize("options, error, match", [
    ({"panels": ["kernels", "bogus"]}, ValueError, r"unknown panel 'bogus': the panels are "
                                                   r"scopes, kernels, copies, memory, utilization"),
    ({"panels": []}, ValueError, "panels is empty"),
    ({"panels": ["kernels", "kernels"]}, ValueError, "twice"),
    ({"panels": 3}, TypeError, "panels must be a sequence"),
    ({"unit": "hours"}, ValueError, "unit must be one of us, ms, s"),
    ({"start_ms": "1"}, TypeError, "start_ms must be a number"),
    ({"end_ms": float("nan")}, ValueError, "end_ms must be finite"),
    ({"start_ms": 5, "end_ms": 5}, ValueError, r"end_ms \(5\) must be after start_ms \(5\)"),
    ({"start_ms": 10000}, ValueError, r"the time window is empty: from 10000 ms to 3\.78\d* ms "
                                      r"\(the data run from 0\.1 ms to 3\.75 ms\)"),
    ({"end_ms": -1}, ValueError, "the time window is empty: from 0 ms to -1 ms"),
    ({"top_n": 0}, ValueError, "top_n must be at least 1"),
    ({"top_n": True}, TypeError, "top_n must be an int"),
    ({"max_name_chars": 3}, ValueError, "max_name_chars must be at least 8"),
    ({"path": 3}, TypeError, "path must be a file name"),
    ({"show": "yes"}, TypeError, "show must be True or False"),
    ({"figsize": (0, 4)}, ValueError, "figsize must be"),
    ({"dpi": -1}, ValueError, "dpi must be positive"),
    ({"title": 1}, TypeError, "title must be a str"),
    ({"colour": "red"}, TypeError, "colour"),
])
def test_bad_arguments(options, error, match, tmp_path):
    with pytest.raises(error, match=match):
        viz.timeline(fixture("trace"), **options)


def test_bad_sessions(tmp_path):
    with pytest.raises(TypeError, match="session must be a GpuFlightSession or a log directory"):
        viz.timeline(42)
    with pytest.raises(TypeError, match="do not go with a GpuFlightSession"):
        viz.kernels(fixture("trace"), log_prefix="trace_demo")
    with pytest.raises(gpufl.NotFoundError, match="does not exist"):
        viz.memory(tmp_path / "nowhere")
    with pytest.raises(TypeError):
        viz.kernels(fixture("trace"), panels=("copies",))  # fixed by kernels()


def test_a_bad_argument_writes_nothing(tmp_path):
    path = tmp_path / "t.png"
    with pytest.raises(ValueError):
        viz.timeline(fixture("trace"), path=path, unit="days")
    assert not path.exists()


@pytest.mark.parametrize("modules", ["gpufl, matplotlib.pyplot", "matplotlib.pyplot, gpufl"])
def test_matplotlib_and_gpufl_load_in_either_order(modules):
    # PIL's libgomp needs room in glibc's static TLS reserve for dlopen()ed
    # libraries, which the extension's thread-locals once took nearly whole.
    done = subprocess.run([sys.executable, "-c", "import " + modules], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr


def test_without_matplotlib_the_error_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"apt-get install python3-matplotlib"):
        viz.timeline(fixture("trace"))
