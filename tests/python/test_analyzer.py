# SPDX-License-Identifier: Apache-2.0
"""gpufl.analyzer and gpufl.report on the recorded fixture sessions of
tests/fixtures/sessions: DataFrames against what the fixtures hold, the
session lookup and its errors, and the report against `gpufl report`."""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile

import numpy
import pytest

import gpufl
from gpufl.analyzer import PERF_COLUMNS, PROFILE_COLUMNS, GpuFlightSession
from gpufl.report import TextReport, generate_report

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
SESSIONS = os.path.join(FIXTURES, "sessions")
ALL = sorted(os.listdir(SESSIONS))
# The gpufl binary, set by ctest; read now, before conftest's clean_state
# drops every GPUFL_* variable.
CLI = os.environ.get("GPUFL_CLI")


def fixture(name):
    return GpuFlightSession(os.path.join(SESSIONS, name))


# ---- tables against the fixtures ----

def test_kernels_of_a_trace_session():
    k = fixture("trace").kernels
    assert k.shape[0] == 8
    assert k.name.value_counts().to_dict() == {
        "_Z4gemmPKfS0_Pfiii": 4, "_Z4reluPfi": 3, "_Z7softmaxPKfPfi": 1}
    assert k.start_ns.tolist()[:3] == [1000000, 1400000, 1500000]
    assert (k.duration_ns == k.end_ns - k.start_ns).all()
    assert k.duration_ns.sum() == 1110000
    assert k.stream.tolist() == [7, 7, 7, 13, 7, 7, 7, 7]
    assert k.grid_x[0] == 128 and k.block_x[0] == 16 and k.registers[0] == 64
    assert k.dynamic_smem_bytes[0] == 16384
    assert k.start_ns.dtype == numpy.int64 and k.occupancy.dtype == numpy.float64
    assert k.name.dtype == object
    assert (k.scope == -1).all() and k.scope_path.isna().all()  # no scopes in this session


def test_memcpy_of_a_trace_session():
    m = fixture("trace").memcpy
    assert m.bytes.tolist() == [1048576, 1048576, 2097152, 4194304]
    assert m.direction.tolist() == ["host→device", "host→device", "device→host",
                                    "device→device"]
    assert m.duration_ns.tolist() == [100000, 50000, 100000, 50000]


def test_scoped_session_attributes_work_to_scopes():
    s = fixture("scoped")
    k = s.kernels
    assert len(k) == 14 and len(s.memsets) == 2 and len(s.memcpy) == 3 and len(s.syncs) == 1
    assert set(k.scope_path.dropna()) == {"batch/forward_pass",
                                          "batch/forward_pass/attention", "batch/backward_pass",
                                          "data_loading"}
    attn = k[k.name == "attn_kernel"]
    assert len(attn) == 2
    assert attn.occupancy.tolist() == [0.125, 0.125] and attn.limiter.tolist() == [
        "shared_memory"] * 2
    assert s.syncs.scope_path.tolist() == ["batch/backward_pass"]
    assert s.syncs.call[0] == "cudaStreamSynchronize"


def test_scope_events_are_begin_end_pairs():
    e = fixture("scoped").scope_events
    assert len(e) == 10
    assert e.name.tolist()[:4] == ["batch", "forward_pass", "attention", "backward_pass"]
    assert e.tag.tolist()[0] == "step=0" and e.tag.isna().sum() == 8
    assert (e.open == 0).all() and (e.duration_ns == e.end_ns - e.start_ns).all()
    batch = e[e.path == "batch"]
    assert batch.duration_ns.tolist() == [120000000, 100000000]


def test_nvtx_ranges_are_scopes_with_their_source():
    # Recorded by tests/integration/nvtx_shared.c: NVTX push/pop ranges (one in domain
    # "loader") around fake kernels, and a start/end range (docs/nvtx.md).
    s = fixture("nvtx")
    e = s.scope_events
    assert len(e) == 7
    assert set(e.source) == {"nvtx", "nvtx_start_end"}
    fetch = e[e.path == "train_step/fetch"]
    assert len(fetch) == 3 and (fetch.source == "nvtx").all()
    assert (fetch.domain == "loader").all()
    assert e[e.path == "train_step"].domain.isna().all()  # NVTX's default domain
    epoch = e[e.path == "epoch"]
    assert epoch.source.tolist() == ["nvtx_start_end"] and epoch.parent.tolist() == [0]
    # Kernels launched inside push/pop ranges carry them as their scope.
    k = s.kernels
    assert k.groupby("scope_path").size().to_dict() == {
        "train_step": 3, "train_step/fetch": 3}
    assert k.scope_path.isna().sum() == 1  # launched inside the start/end range only
    # The report lists them with their source and domain.
    text = TextReport(s).generate()
    assert "fetch [nvtx:loader]" in text and "epoch [nvtx start/end]" in text


def test_every_rotated_segment_is_read():
    s = fixture("rotated")
    e = s.scope_events
    assert e.id.tolist() == [1, 2, 3, 4, 5]  # scope 2 ends, 3..5 begin in scope.log.1
    assert (e.open == 0).all()
    assert e.duration_ns.tolist() == [10000000, 20000000, 30000000, 40000000, 5000000]
    assert s.info["segments"] == 3


def test_killed_session_ignores_its_incomplete_last_line():
    s = fixture("killed")
    e = s.scope_events
    assert len(e) == 5
    last = e[e.id == 5].iloc[0]
    assert last.open == 1 and last.end_ns == -1 and last.duration_ns == -1  # its end was cut
    assert s.info["truncated_lines"] == 1 and s.info["corrupt_lines"] == 0
    assert s.info["ended"] == 0 and s.info["duration_ns"] == -1


def test_host_metrics_unknown_values_are_nan():
    h = fixture("basic").host_metrics
    assert len(h) == 5
    assert numpy.isnan(h.cpu_pct[0]) and h.cpu_pct.tolist()[1:] == [40.0, 60.5, 55.5, 30.0]
    assert h.mem_used_bytes[0] == 8589934592
    assert h.cg_mem_limit_bytes.isna().all()


def test_device_metrics_and_insights():
    s = fixture("gpu")
    d = s.device_metrics
    assert len(d) == 20 and set(d.device) == {0, 1}
    assert d.gpu_name.notna().all()
    assert d.ts_ns.is_monotonic_increasing or len(d.ts_ns.unique()) > 1
    assert len(s.insights) == 2
    assert set(s.insights.severity) <= {"LOW", "MEDIUM", "HIGH"}
    assert s.insights.severity_level.is_monotonic_decreasing


def test_pc_samples_launches_and_profile_scopes():
    s = fixture("pcsampled")
    pc = s.pc_samples
    assert len(pc) == 11 and len(s.launches) == 7 and s.kernels.empty
    assert set(pc.function) == {"stencil(float*, float const*, int)",
                                "gemm(float const*, float const*, float*)", "tiny()"}
    assert pc.mangled.str.startswith("_Z").all()
    stencil = pc[pc.mangled == "_Z7stencilPfPKfi"]
    assert (stencil.file == "/src/stencil.cu").all() and (stencil.line > 0).all()
    profile = s.scopes
    assert list(profile.columns) == list(PROFILE_COLUMNS)
    assert len(profile) == 11 and set(profile.source) == {"pc_sampling"}
    assert profile.samples.sum() == pc.samples.sum()


def test_sass_metrics():
    s = fixture("sassmetrics")
    assert len(s.sass_metrics) == 24
    assert (s.sass_metrics.inst >= 0).all()
    assert set(s.scopes.source) == {"sass_metrics"} and len(s.scopes) == 24


def test_sync_sites_come_from_cpu_stacks():
    syncs = fixture("stacks").syncs
    assert len(syncs) == 4
    assert syncs.site_file.tolist() == ["/src/train.cu"] * 4
    assert syncs.site_line.tolist() == [90] * 4
    assert syncs.site_function[0] == "train_step(float*, int)"


def test_perf_is_empty_with_documented_columns():
    perf = fixture("trace").perf
    assert perf.empty and list(perf.columns) == list(PERF_COLUMNS)


def test_perf_has_a_column_per_metric(capsys):
    s = fixture("rangeprof")
    perf = s.perf
    assert list(perf.columns[:len(PERF_COLUMNS)]) == list(PERF_COLUMNS)
    assert len(perf.columns) == len(PERF_COLUMNS) + 11
    assert perf.path.tolist() == ["train", "eval"]
    assert perf.scope.tolist() == [1, 3]
    assert perf.group.tolist() == [0, 0]  # a log without metric groups
    assert perf.settling.tolist() == [1, 0]  # a first range after the profiler's start
    assert perf["gpu__time_duration.sum"].tolist() == [41250000.0, 12500000.0]
    assert perf["dram__bytes_read.sum"].dtype == "float64"
    l1 = perf["l1tex__t_sector_hit_rate.pct"]
    assert l1[0] == pytest.approx(42.1) and numpy.isnan(l1[1])  # null: not evaluated
    s.inspect_perf_metrics()
    out = capsys.readouterr().out
    assert out.startswith("Hardware counters per scope\n") and "nested 1" in out


@pytest.mark.parametrize("name", ALL)
def test_every_table_of_every_fixture_loads(name):
    s = fixture(name)
    for table in ("kernels", "memcpy", "memsets", "syncs", "launches", "scope_events", "scopes",
                  "pc_samples", "sass_metrics", "device_metrics", "host_metrics", "insights",
                  "perf"):
        frame = getattr(s, table)
        assert frame is getattr(s, table)  # built once
        assert len(frame.columns) > 0
    assert s.info["session_id"]


def test_columns_view_the_c_arrays_without_a_copy():
    a = gpufl._gpufl.Analysis(os.path.join(SESSIONS, "trace"))
    rows, columns = a.table("kernels")
    name, kind, buffer = columns[0]
    view = memoryview(buffer)
    assert (name, kind, rows) == ("start_ns", "int64", 8)
    assert view.format == "q" and view.shape == (8,) and view.readonly
    array = numpy.asarray(buffer)
    del a, columns, buffer, view  # the array keeps the session alive
    assert array.tolist()[-1] == 3000000


# ---- finding sessions ----

@pytest.fixture
def root():
    """A log root with three sessions of three apps, outside the tree the
    log_schema test validates (the killed session ends in a cut line)."""
    with tempfile.TemporaryDirectory(prefix="gpufl-analyzer-") as tmp:
        r = pathlib.Path(tmp) / "logs"
        r.mkdir()
        for name in ("basic", "rotated", "killed"):
            shutil.copytree(os.path.join(SESSIONS, name), r / name)
        yield r


def test_newest_session_of_an_app(root):
    # basic (trainer) 2026-11-22 03:15, killed (server) 04:00, rotated (bench) 05:00
    assert GpuFlightSession(root).info["app_name"] == "bench"
    assert GpuFlightSession(root, log_prefix="trainer").directory == str(root / "basic")
    s = GpuFlightSession(root, session_id="20261122T040000.000Z-900-00ff")
    assert s.info["app_name"] == "server"
    assert GpuFlightSession(str(root), session_id="killed").directory == str(root / "killed")


def test_the_default_log_path_of_an_app(tmp_path):
    shutil.copytree(os.path.join(SESSIONS, "trace"), tmp_path / "trace_demo.log" / "s1")
    s = GpuFlightSession(tmp_path, log_prefix="trace_demo")
    assert s.directory == str(tmp_path / "trace_demo.log" / "s1")


def test_a_session_directory_itself():
    s = GpuFlightSession(os.path.join(SESSIONS, "basic"), log_prefix="trainer")
    assert s.info["app_name"] == "trainer"
    with pytest.raises(gpufl.NotFoundError, match="is of app 'trainer', not 'other'"):
        GpuFlightSession(os.path.join(SESSIONS, "basic"), log_prefix="other")


def test_missing_directory(tmp_path):
    with pytest.raises(gpufl.NotFoundError, match="does not exist") as e:
        GpuFlightSession(tmp_path / "nowhere")
    assert isinstance(e.value, LookupError) and e.value.code == -9


def test_not_a_session(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(LookupError, match="no session under"):
        GpuFlightSession(tmp_path)
    with pytest.raises(gpufl.NotFoundError, match="is not a directory"):
        GpuFlightSession(tmp_path / "notes.txt")
    with pytest.raises(gpufl.NotFoundError, match="not a session directory"):
        gpufl._gpufl.Analysis(str(tmp_path))


def test_unknown_session_id_and_app(root):
    with pytest.raises(gpufl.NotFoundError, match="no session 'nope' of app 'bench'"):
        GpuFlightSession(root, log_prefix="bench", session_id="nope")
    with pytest.raises(gpufl.NotFoundError,
                       match=r"no session of app 'x' .*apps found: bench, server, trainer"):
        GpuFlightSession(root, log_prefix="x")


def test_bad_argument_types(root):
    with pytest.raises(TypeError):
        GpuFlightSession(root, log_prefix=3)
    with pytest.raises(TypeError):
        GpuFlightSession(None)


def test_a_session_this_process_recorded(log_dir):
    assert gpufl.init(app_name="roundtrip", log_path=str(log_dir / "roundtrip.log"))
    with gpufl.Scope("outer", "t1"):
        with gpufl.Scope("inner"):
            pass
    gpufl.shutdown()
    s = GpuFlightSession(log_dir, log_prefix="roundtrip")
    e = s.scope_events
    assert e.path.tolist() == ["outer", "outer/inner"] and e.tag.tolist() == ["t1", None]
    assert (e.open == 0).all() and s.info["ended"] == 1


# ---- the report ----

def cli_report(directory, *args):
    if not CLI:
        pytest.skip("GPUFL_CLI (the gpufl binary) is not set: run through ctest")
    return subprocess.run([CLI, "report", *args, directory], check=True, capture_output=True,
                          env=dict(os.environ, NO_COLOR="1")).stdout.decode("utf-8")


@pytest.mark.parametrize("name", ALL)
def test_text_report_is_the_cli_report(name):
    session = fixture(name)
    text = TextReport(session).generate()
    with open(os.path.join(FIXTURES, "golden", name + ".txt"), encoding="utf-8") as f:
        assert text == f.read()
    assert text == cli_report(session.directory)


@pytest.mark.parametrize("fmt", ["json", "markdown", "html"])
def test_other_formats_are_the_cli_report(fmt):
    directory = os.path.join(SESSIONS, "scoped")
    text = generate_report(directory, format=fmt)
    assert text == cli_report(directory, "--format", fmt)
    if fmt == "json":
        json.loads(text)


def test_report_print_save_and_output_path(tmp_path, capsys):
    session = fixture("trace")
    report = TextReport(session, top_n=10)
    report.print()
    assert capsys.readouterr().out == report.generate()
    report.save(tmp_path / "r.txt")
    assert (tmp_path / "r.txt").read_text(encoding="utf-8") == report.generate()
    text = generate_report(os.path.join(SESSIONS, "trace"), log_prefix="trace_demo",
                           output_path=str(tmp_path / "g.txt"))
    assert text == report.generate() == (tmp_path / "g.txt").read_text(encoding="utf-8")


def test_top_n_limits_the_hotspots():
    text = TextReport(fixture("scoped"), top_n=2).generate()
    assert "top 2 kernel names" in text and "... and 4 more names" in text
    with pytest.raises(ValueError, match="at least 1"):
        TextReport(fixture("scoped"), top_n=0)
    with pytest.raises(TypeError):
        TextReport("not a session")
    with pytest.raises(gpufl.InvalidArgumentError, match="unknown report format"):
        fixture("trace").report("pdf")
    with pytest.raises(gpufl.InvalidArgumentError, match="unknown report section"):
        fixture("trace").report(section="nope")


# ---- inspect_* ----

def test_inspect_prints_report_sections(capsys):
    s = fixture("scoped")
    s.print_summary()
    out = capsys.readouterr().out
    assert out.startswith("Session\n") and "\nInsights\n" in out
    s.inspect_scopes()
    out = capsys.readouterr().out
    assert out.startswith("Scope timing\n") and "GPU time per scope" in out
    s.inspect_hotspots(top_n=2)
    out = capsys.readouterr().out
    assert out.startswith("Kernel hotspots\n  top 2 kernel names")
    assert out in TextReport(s, top_n=2).generate()


def test_inspect_says_in_one_line_what_is_missing(capsys):
    s = fixture("basic")
    for method in (s.inspect_hotspots, s.inspect_stalls, s.inspect_profile_samples,
                   s.inspect_perf_metrics):
        method()
        out = capsys.readouterr().out
        assert out.count("\n") == 1 and "Monitor engine" in out, out
    fixture("trace").inspect_scopes()
    assert capsys.readouterr().out.startswith("no scopes in this session")


def test_inspect_stalls_and_profile_samples(capsys):
    fixture("pcsampled").inspect_stalls()
    assert capsys.readouterr().out.startswith("PC sampling\n")
    fixture("sassmetrics").inspect_profile_samples()
    assert capsys.readouterr().out.startswith("SASS metrics\n")
    fixture("pcsampled").inspect_profile_samples()
    assert "11 PC sample rows" in capsys.readouterr().out
