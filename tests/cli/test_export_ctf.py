#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`gpufl export --format ctf` read back by babeltrace2 (docs/design/ctf-export.md).

Every fixture session (tests/fixtures/sessions, tests/fixtures/gpu-runs) is exported as a CTF
trace and read with `babeltrace2 DIR`, which must exit 0 and print nothing on stderr; the
records of each event class are counted and compared with the session's own counts: those of
`gpufl report --format json`, and the sync rows of its log files (which the report does not
count), decoded with tests/tools/gpufl_compact.py. Then the clock (scopes' wall times to the
nanosecond, also before the session epoch), the data stream files, strings that need escaping,
a session with no activity, and the bad outputs: `-o -`, an unwritable path, a file, a
directory that is not empty (refused without --force; with it, a previous trace is replaced
and other files are never deleted).

usage: test_export_ctf.py GPUFL SESSIONS_DIR GPU_RUNS_DIR SCRATCH_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

GPUFL, SESSIONS, GPU_RUNS, SCRATCH = sys.argv[1:5]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import gpufl_compact  # noqa: E402

BABELTRACE = shutil.which("babeltrace2")
failures = []

# One event record per line: [time] (+delta) hostname event_class: { ... }
EVENT = re.compile(r"^\[([^\]]*)\] \([^)]*\) (?:.* )?([a-z_]+): \{")


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


def export(session, out, *extra):
    return run(GPUFL, "export", "--format", "ctf", "-o", out, *extra, session)


def read_trace(trace, *options):
    """babeltrace2's text output of a trace: (event lines, stderr, exit code)."""
    p = run(BABELTRACE, *options, trace)
    return p.stdout.splitlines(), p.stderr, p.returncode


def count_classes(lines):
    counts = {}
    for line in lines:
        m = EVENT.match(line)
        if not m:
            fail("babeltrace2 printed a line that is no event record: %r" % line[:200])
            continue
        counts[m.group(2)] = counts.get(m.group(2), 0) + 1
    return counts


def log_rows(session, record_type):
    """Rows of one record type in a session's log files (all segments), read line by line."""
    rows = 0
    for name in sorted(os.listdir(session)):
        if not re.match(r"^(device|scope|system)\.log(\.\d+)?$", name):
            continue
        with open(os.path.join(session, name)) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut short (a killed session)
                if rec.get("type") != record_type:
                    continue
                rec = gpufl_compact.decode(rec)
                rows += len(rec["start_ns"]) if isinstance(rec["start_ns"], list) else 1
    return rows


def expected_counts(session):
    """Records per event class: the report's counts, and the sync rows of the log."""
    p = run(GPUFL, "report", "--format", "json", session)
    report = json.loads(p.stdout)
    records = report["session"]["records"]
    lost = (report.get("scopes") or {}).get("lost_ends", {}).get("count", 0)
    want = {
        "scope_begin": records["scopes"],
        "scope_end": records["scopes"] - records["open_scopes"] + lost,
        "sync": log_rows(session, "sync"),
        "launch": records["launches"],
        "kernel": records["kernels"],
        "copy": records["copies"],
        "memset": records["memsets"],
        "gpu_sample": records["gpu_samples"],
        "host_sample": records["host_samples"],
    }
    return {k: v for k, v in want.items() if v}


def session_dirs():
    for root in (SESSIONS, GPU_RUNS):
        for name in sorted(os.listdir(root)):
            path = os.path.join(root, name)
            if os.path.isdir(path):
                yield os.path.basename(root) + "-" + name, path


def check_fixtures():
    n_events = 0
    for name, session in session_dirs():
        out = os.path.join(SCRATCH, name + ".ctf")
        p = export(session, out)
        want = expected_counts(session)
        # A session without any of the rows a trace holds (sassmetrics: SASS counts only).
        note = "" if want else ("gpufl: note: the session has no scopes, GPU work, syncs or "
                                "samples: the trace holds no events\n")
        if p.returncode != 0 or p.stdout != out + "\n" or p.stderr != note:
            fail("%s: export exit %d, stdout %r, stderr %r" % (name, p.returncode, p.stdout,
                                                               p.stderr))
            continue
        lines, err, rc = read_trace(out)
        if rc != 0 or err:
            fail("%s: babeltrace2 exit %d, stderr: %s" % (name, rc, err.strip()[:2000]))
            continue
        got = count_classes(lines)
        if got != want:
            fail("%s: records per event class %s, the session has %s" % (name, got, want))
        n_events += len(lines)
        print("ok %s: %s" % (name, ", ".join("%s %d" % kv for kv in sorted(got.items()))))
    # Another export of a session is the same trace, byte for byte (the UUID comes from the
    # session, not from chance).
    again = os.path.join(SCRATCH, "again.ctf")
    export(os.path.join(SESSIONS, "timeline"), again)
    first = os.path.join(SCRATCH, "sessions-timeline.ctf")
    for f in sorted(os.listdir(first)):
        with open(os.path.join(first, f), "rb") as x, open(os.path.join(again, f), "rb") as y:
            if x.read() != y.read():
                fail("a second export of timeline differs in %s" % f)
    if n_events < 8000:
        fail("only %d event records in all fixtures" % n_events)


def check_begin(lines, want_when):
    """The trace's time of the scope_begin of scope 1."""
    first = [line for line in lines if " scope_begin: " in line and "{ scope_id = 1," in line]
    when = EVENT.match(first[0]).group(1) if first else None
    if when != want_when:
        fail("scope 1 begins at %s on the trace's clock, not %s" % (when, want_when))


def check_layout_and_clock():
    trace = os.path.join(SCRATCH, "sessions-timeline.ctf")
    files = sorted(os.listdir(trace))
    want = ["gpu0-copies", "gpu0-samples", "gpu0-stream13", "gpu0-stream7", "host-samples",
            "metadata", "thread-4242", "thread-4243", "thread-4250"]
    if files != want:
        fail("timeline's trace files %s, expected %s" % (files, want))
    with open(os.path.join(trace, "metadata")) as f:
        meta = f.read()
    if not meta.startswith("/* CTF 1.8 */"):
        fail("metadata does not open with the CTF 1.8 signature")
    for text in ("freq = 1000000000;", "absolute = true;", "offset_s = 1794902400;",
                 "offset = 0;", 'session_id = "20261117T080000.000Z-4242-7d1e";'):
        if text not in meta:
            fail("metadata lacks %r" % text)
    # Scope 1 ("train") begins 3 ms after the epoch (the fixture's first scope_begin row).
    lines, err, _ = read_trace(trace, "--clock-seconds")
    check_begin(lines, "1794902400.003000000")
    # The thread is in the packet context, the kernel's fields in its payload.
    kernel = [line for line in lines if " kernel: " in line][0]
    if not re.search(r"\{ device = 0, cuda_stream = (7|13) \}, \{ name = ", kernel):
        fail("a kernel record lacks its device and stream: %s" % kernel)


def check_strings_and_early_time():
    """A hostname and scope names that TSDL and CTF strings must carry, and a scope that begins
    5 ms before the session epoch: the clock's origin moves back, no time is lost."""
    src = os.path.join(SESSIONS, "timeline")
    dst = os.path.join(SCRATCH, "quoted-session")
    shutil.copytree(src, dst)
    for log in os.listdir(dst):
        path = os.path.join(dst, log)
        with open(path) as f:
            text = f.read()
        text = text.replace('"hostname":"gpu-node2"', r'"hostname":"gpu \"node\\2\u0001"')
        text = text.replace('"str":["train",', r'"str":["tr\u00e9in \"x\"\t",')
        text = text.replace('"type":"scope_begin","v":1,"ts_ns":[3000000,',
                            '"type":"scope_begin","v":1,"ts_ns":[-5000000,')
        with open(path, "w") as f:
            f.write(text)
    out = os.path.join(SCRATCH, "quoted.ctf")
    p = export(dst, out)
    lines, err, rc = read_trace(out)
    if p.returncode or rc or err:
        fail("quoted names: export exit %d (%s), babeltrace2 exit %d: %s" %
             (p.returncode, p.stderr.strip(), rc, err.strip()[:2000]))
        return
    if not any('gpu "node\\2? scope_begin: ' in line for line in lines):
        fail("the quoted hostname is not shown: %s" % lines[0])
    # babeltrace2 shows a quote and a tab in a string as \" and \t.
    if not any('name = "tr\u00e9in \\"x\\"\\t"' in line for line in lines):
        fail("the scope name with quotes, a tab and an accent is not shown whole")
    lines, err, _ = read_trace(out, "--clock-seconds")
    check_begin(lines, "1794902399.995000000")
    if not any(" scope_begin: " in line and "{ scope_id = 2," in line and
               line.startswith("[1794902400.005000000]") for line in lines):
        fail("scope 2 no longer begins 5 ms after the epoch when the clock's origin moves")


def check_no_activity():
    src = os.path.join(SESSIONS, "timeline", "scope.log")
    dst = os.path.join(SCRATCH, "idle-session")
    os.makedirs(dst)
    with open(src) as f:
        header = f.readline()
    with open(os.path.join(dst, "scope.log"), "w") as f:
        f.write(header)
    out = os.path.join(SCRATCH, "idle.ctf")
    p = export(dst, out)
    if p.returncode != 0 or "the trace holds no events" not in p.stderr:
        fail("no activity: exit %d, stderr %r" % (p.returncode, p.stderr))
    if sorted(os.listdir(out)) != ["metadata"]:
        fail("no activity: the trace holds %s" % os.listdir(out))
    lines, err, rc = read_trace(out)
    if rc or err or lines:
        fail("no activity: babeltrace2 exit %d, %d lines, stderr %r" % (rc, len(lines), err))


def check_bad_outputs():
    session = os.path.join(SESSIONS, "trace")
    p = export(session, "-")
    if p.returncode != 2 or "a CTF trace is a directory" not in p.stderr:
        fail("-o -: exit %d, stderr %r" % (p.returncode, p.stderr))
    a_file = os.path.join(SCRATCH, "a-file")
    with open(a_file, "w") as f:
        f.write("x")
    for out, why in ((os.path.join(a_file, "x.ctf"), "Not a directory"),
                     (os.path.join(SCRATCH, "no", "such", "x.ctf"), "No such file"),
                     (a_file, "is not a directory")):
        p = export(session, out)
        if p.returncode != 1 or out not in p.stderr or why not in p.stderr:
            fail("unwritable %s: exit %d, stderr %r" % (out, p.returncode, p.stderr))
    # A directory of other files: refused, with --force too; nothing in it is deleted.
    notes = os.path.join(SCRATCH, "notes")
    os.makedirs(notes)
    with open(os.path.join(notes, "todo.txt"), "w") as f:
        f.write("keep me")
    for extra in ((), ("--force",)):
        p = export(session, notes, *extra)
        if p.returncode != 1 or "is not empty" not in p.stderr:
            fail("non-empty directory %s: exit %d, stderr %r" % (extra, p.returncode, p.stderr))
    if os.listdir(notes) != ["todo.txt"]:
        fail("a refused export changed the directory: %s" % os.listdir(notes))
    # An empty directory is fine; a second export into it needs --force, which replaces the
    # trace: no data stream of the first session is left behind.
    trace = os.path.join(SCRATCH, "replaced.ctf")
    os.makedirs(trace)
    p = export(os.path.join(SESSIONS, "timeline"), trace)
    if p.returncode != 0:
        fail("export into an empty directory: exit %d, %r" % (p.returncode, p.stderr))
    p = export(session, trace)
    if p.returncode != 1 or "--force" not in p.stderr:
        fail("export over a trace without --force: exit %d, %r" % (p.returncode, p.stderr))
    p = export(session, trace, "--force")
    if p.returncode != 0:
        fail("export --force over a trace: exit %d, %r" % (p.returncode, p.stderr))
    files = sorted(os.listdir(trace))
    if files != ["gpu0-copies", "gpu0-stream13", "gpu0-stream7", "metadata"]:
        fail("the replaced trace holds %s" % files)
    lines, err, rc = read_trace(trace)
    if rc or err or count_classes(lines) != expected_counts(session):
        fail("the replaced trace does not read as the trace session's")
    # A directory holding a subdirectory is not a trace: refused even with --force.
    os.makedirs(os.path.join(trace, "sub"))
    p = export(session, trace, "--force")
    if p.returncode != 1 or "does not hold a CTF trace" not in p.stderr:
        fail("--force over a directory with a subdirectory: exit %d, %r" % (p.returncode,
                                                                          p.stderr))
    if not os.path.exists(os.path.join(trace, "metadata")):
        fail("a refused --force deleted files")


def main():
    if not BABELTRACE:
        if os.environ.get("GPUFL_REQUIRE_BABELTRACE") == "1":
            print("FAIL: babeltrace2 is not installed (apt-get install babeltrace2)")
            return 1
        print("SKIP: babeltrace2 is not installed (scripts/deps.sh installs it)")
        return 77
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    check_fixtures()
    check_layout_and_clock()
    check_strings_and_early_time()
    check_no_activity()
    check_bad_outputs()
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all CTF export checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
