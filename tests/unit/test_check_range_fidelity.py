#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/check_range_fidelity.py on a synthetic RangeProfiler session and synthetic ncu
CSVs (kernel replay, range replay): the verdicts of each row, which reference decides it, the
L2 count slack, the JSON summary and the exit status. No GPU: run by CTest (unittest)."""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "..", "gpu", "check_range_fidelity.py")
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
import check_range_fidelity as crf  # noqa: E402

KERNELS = crf.KERNELS
TIME, HIT, MISS, SECTORS = crf.GPU_TIME, crf.L2_HIT, crf.L2_MISS, crf.L2_SECTORS
WRITE = "dram__bytes_write.sum"
IPC = "sm__inst_executed.avg.per_cycle_active"
PART = "sm__issue_active.avg.pct_of_peak_sustained_elapsed"
GROUPS = [[TIME, IPC, HIT, WRITE, PART], [TIME, SECTORS, MISS]]
LAUNCHES = 4  # per range, ours and (unless said) ncu's range replay
# DRAM's peak for the bytes slack: 1000 bytes a cycle at 3 cycles a ns, 3000 B/ns; with
# 100,000 ns a launch and the default fraction 1e-4, a slack of 30,000 bytes.
PEAK = {crf.PEAK_BYTES: (1000.0, "byte/cycle"), crf.DRAM_CLOCK: (3.0, "cycle/nsecond")}
UNITS = {TIME: "ns", IPC: "inst/cycle", HIT: "sector", MISS: "sector", SECTORS: "sector",
         WRITE: "byte", PART: "%", crf.SM_THROUGHPUT: "%", crf.L2_RATE: "%"}

# Per launch: ours, ncu's kernel replay, ncu's range replay. Every row of every kernel agrees
# with the reference that decides it, except where a test changes one.
BASE = {TIME: (100000, 99000, 101000), IPC: (2.0, 2.02, 1.0), PART: (94.0, 95.0, 80.0),
        HIT: (150000, 150200, 150100), SECTORS: (150000, 150100, 150050), MISS: (40, 40, 40),
        WRITE: (1000, 1000, 1000), crf.SM_THROUGHPUT: (None, 95.0, 80.0),
        crf.L2_RATE: (None, 99.9, 100.0)}


def values(**changes):
    """{kernel: {metric: (ours, kernel replay, range replay)}}, BASE with the changes,
    given as kernel=[(metric, (ours, kernel, range))...]."""
    out = {k: dict(BASE) for k in KERNELS}
    for k, rows in changes.items():
        out[k].update(rows)
    return out


# divergent's L2 misses and DRAM writes, fma_chains' lookup hits, as seen on the H100: off
# from kernel replay, close to range replay (counts: tens of misses out of 150,000 sectors).
REAL = dict(
    divergent=[(MISS, (106, 129, 32)), (HIT, (151034, 147333, 150267)),
               (WRITE, (20000, 0, 13500))],
    fma_chains=[(HIT, (154565, 146659, 154154)), (SECTORS, (155000, 155100, 155050))],
    # A count just inside and just outside the L2 count slack (0.5 % of 1,000,000 sectors,
    # 5,000), where 5 % of the count is much less.
    strided=[(SECTORS, (1000000, 1000000, 1000000)), (MISS, (3000, 7990, 3000)),
             (HIT, (990000, 990000, 990000)), (crf.L2_RATE, (None, 99.0, 99.0))],
    stream_triad=[(SECTORS, (1000000, 1000000, 1000000)), (MISS, (3000, 8010, 3000)),
                  (HIT, (990000, 990000, 990000)), (crf.L2_RATE, (None, 99.0, 99.0))],
)


def write_session(path, table, settling=None):
    """A device.log: the range_profiler record, the paths, and per kernel one range of each
    group holding LAUNCHES launches (".sum" counters as totals); settling, {kernel: {metric:
    value per launch}}: that kernel also gets a settling range of group 0 first, with those
    values over the table's, and its group 1 range is settling too."""
    os.makedirs(path)
    lines = [{"type": "range_profiler", "v": 1, "metrics": GROUPS[0], "groups": GROUPS,
              "sm_throughput_of": [PART], "left_out": {crf.L2_RATE: "needs 2 passes"}},
             {"type": "dict", "v": 1, "id": [1, 2, 3, 4], "str": list(KERNELS)}]
    settling = settling or {}

    def record(i, g, k, over=None):
        metrics = {}
        for m in GROUPS[g]:
            v = (over or {}).get(m, table[k][m][0])
            metrics[m] = v * LAUNCHES if m.endswith(".sum") else v
        rec = {"type": "range_metrics", "v": 1, "path": i + 1, "group": g, "metrics": metrics}
        if over is not None or (g == 1 and k in settling):
            rec["settling"] = True
        return rec

    for i, k in enumerate(KERNELS):
        if k in settling:
            lines.append(record(i, 0, k, settling[k]))
        for g in range(len(GROUPS)):
            lines.append(record(i, g, k))
    with open(os.path.join(path, "device.log"), "w") as f:
        f.write("".join(json.dumps(rec) + "\n" for rec in lines))


def ncu_csv(rows, names, units):
    """ncu's --csv --page raw output: its own lines and the program's, then a header, the
    units row and one row per launch or range, numbers with thousands separators."""
    metrics = sorted(units)
    head = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
            "Device", "CC"]
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(head + metrics)
    w.writerow([""] * len(head) + [units[m] for m in metrics])
    for i, (name, vals) in enumerate(zip(names, rows)):
        w.writerow([str(i), "7", "pcs_kernels", "127.0.0.1", name, "1", "7", "0", "9.0"] +
                   ["n/a" if vals.get(m) is None else f"{vals[m]:,}" for m in metrics])
    return ("==PROF== Connected to process 7 (pcs_kernels)\n" '{"kernel":"divergent"}\n' +
            buf.getvalue() + "==PROF== Disconnected from process 7\n")


def kernel_replay(table, launches=3):
    units = dict(UNITS, **{m: u for m, (_, u) in PEAK.items()})
    rows, names = [], []
    for k in KERNELS:
        for _ in range(launches):
            row = {m: v[1] for m, v in table[k].items()}
            row.update({m: p for m, (p, _) in PEAK.items()})
            rows.append(row)
            names.append(f"{k}(float *, int)")
    return ncu_csv(rows, names, units)


def range_replay(table, launches=LAUNCHES, kernels=KERNELS, drop=()):
    rows = []
    for k in kernels:
        rows.append({m: (None if m in drop else v[2] * launches if m.endswith(".sum") else v[2])
                     for m, v in table[k].items()})
    return ncu_csv(rows, ["range"] * len(rows), UNITS)


class CheckRangeFidelity(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def run_check(self, table, ranged=None, args=(), settling=None):
        """(exit status, stdout) of the checker on the table; ranged: the range CSV's text;
        settling: as write_session's."""
        session = os.path.join(self.tmp.name, "session")
        if not os.path.exists(session):
            write_session(session, table, settling)
        with open(os.path.join(self.tmp.name, "ncu.csv"), "w") as f:
            f.write(kernel_replay(table))
        cmd = [sys.executable, CHECK, session, os.path.join(self.tmp.name, "ncu.csv"),
               "--launches-per-scope", str(LAUNCHES)] + list(args)
        if ranged is not None:
            with open(os.path.join(self.tmp.name, "ncu_range.csv"), "w") as f:
                f.write(ranged)
            cmd += ["--ncu-range", os.path.join(self.tmp.name, "ncu_range.csv")]
        p = subprocess.run(cmd, capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def row(self, out, kernel, metric):
        found = [ln for ln in out.splitlines() if ln.startswith(kernel + " ") and metric in ln]
        self.assertEqual(len(found), 1, f"{kernel} {metric}:\n{out}")
        return found[0].rstrip()

    def summary(self, out):
        return json.loads([ln for ln in out.splitlines() if ln.startswith('{"compared"')][-1])

    def test_kernel_replay_alone(self):
        rc, out = self.run_check(values(**REAL))
        self.assertEqual(rc, 1, out)
        self.assertNotIn("ncu range", out)
        # Tens of sectors of 150,000: within the L2 count slack (0.5 % of the sectors).
        self.assertTrue(self.row(out, "divergent", MISS).endswith("  ok (slack)"), out)
        self.assertTrue(self.row(out, "strided", MISS).endswith("  ok (slack)"), out)
        self.assertTrue(self.row(out, "stream_triad", MISS).endswith("  DIFF"), out)
        self.assertTrue(self.row(out, "fma_chains", HIT).endswith("  DIFF"), out)
        self.assertTrue(self.row(out, "divergent", WRITE).endswith("  ok (slack)"), out)
        s = self.summary(out)
        self.assertEqual(s["compared"] - s["within"], 2, s)
        self.assertNotIn("range_replay", s)

    def test_range_replay_decides_l2_state(self):
        rc, out = self.run_check(values(**REAL), range_replay(values(**REAL)))
        self.assertEqual(rc, 0, out)
        self.assertIn("ncu range", out)
        hit = self.row(out, "fma_chains", HIT)
        self.assertTrue(hit.endswith("DIFF       ok          ok (range)"), hit)
        self.assertTrue(self.row(out, "stream_triad", MISS).endswith("  ok (range)"), out)
        self.assertTrue(self.row(out, "divergent", MISS).endswith("  ok (slack, range)"), out)
        self.assertTrue(self.row(out, "divergent", WRITE).endswith("  ok (slack, range)"), out)
        self.assertTrue(self.row(out, "divergent", crf.L2_DERIVED).endswith("  ok (range)"), out)
        # Rows that do not depend on L2's contents: kernel replay decides, whatever range says.
        ipc = self.row(out, "divergent", IPC)
        self.assertTrue(ipc.endswith("ok         DIFF        ok (kernel)"), ipc)
        self.assertTrue(self.row(out, "divergent", TIME).endswith("  ok (kernel)"), out)
        self.assertTrue(self.row(out, "divergent", "sm_throughput").endswith("  ok (kernel)"))
        s = self.summary(out)
        self.assertEqual(s["within"], s["compared"], s)
        self.assertEqual(s["decided_by_kernel"] + s["decided_by_range"], s["compared"], s)
        # Per kernel: L2 hits, sectors, misses, DRAM writes and the derived hit rate.
        self.assertEqual(s["decided_by_range"], 4 * 5, s)
        self.assertEqual(s["kernel_replay"]["compared"], s["compared"], s)
        self.assertEqual(s["kernel_replay"]["compared"] - s["kernel_replay"]["within"], 2, s)
        # IPC, the SM throughput part and the derived SM throughput, on every kernel.
        self.assertEqual(s["range_replay"]["compared"] - s["range_replay"]["within"], 12, s)

    def test_range_replay_fails_what_kernel_replay_passes(self):
        table = values(divergent=[(WRITE, (100000, 100000, 13500))])
        rc, out = self.run_check(table, range_replay(table))
        self.assertEqual(rc, 1, out)
        write = self.row(out, "divergent", WRITE)
        self.assertTrue(write.endswith("ok         DIFF        DIFF (range)"), write)

    def test_no_range_value_leaves_kernel_replay_deciding(self):
        table = values(**REAL)
        rc, out = self.run_check(table, range_replay(table, drop=(HIT,)))
        self.assertEqual(rc, 1, out)
        self.assertTrue(self.row(out, "fma_chains", HIT).endswith("  DIFF (kernel)"), out)
        self.assertTrue(self.row(out, "divergent", HIT).endswith("  ok (kernel)"), out)

    def test_range_launches(self):
        table = values(**REAL)
        rc, out = self.run_check(table, range_replay(table, launches=40),
                                 ["--ncu-range-launches", "40"])
        self.assertEqual(rc, 0, out)
        self.assertIn("range replay 40 per range", out)
        rc, out = self.run_check(table, range_replay(table, launches=40))
        self.assertEqual(rc, 1, out)  # taken as 4 launches a range: ten times too many

    def test_range_count_checked(self):
        table = values()
        rc, out = self.run_check(table, range_replay(table, kernels=KERNELS[:3]))
        self.assertEqual(rc, 2, out)
        self.assertIn("3 ranges", out)
        rc, out = self.run_check(table, kernel_replay(table))  # kernel rows, no "range" row
        self.assertEqual(rc, 2, out)

    def test_settling_ranges_set_aside(self):
        # The first range after the profiler's start, as on the H100: 1.5 MB of DRAM writes a
        # launch and a longer time; set aside, and the group-1 range that is settling too is
        # kept, its group having no other.
        table = values(**REAL)
        over = {"divergent": {WRITE: 1500000, TIME: 125000, HIT: 150000}}
        rc, out = self.run_check(table, range_replay(table), settling=over)
        self.assertEqual(rc, 0, out)
        self.assertIn("divergent: 2 ranges (1 settling set aside)", out)
        self.assertIn("strided: 2 ranges (0 settling set aside)", out)
        self.assertTrue(self.row(out, "divergent", MISS).endswith("  ok (slack, range)"), out)
        rc, out = self.run_check(table, range_replay(table), args=["--keep-settling"])
        self.assertEqual(rc, 1, out)
        self.assertIn("divergent: 3 ranges (0 settling set aside)", out)
        write = self.row(out, "divergent", WRITE)
        self.assertTrue(write.endswith("DIFF (range)"), write)
        kept, aside = crf.settled([{"group": 1, "settling": True}, {"settling": True}, {}])
        self.assertEqual((len(kept), aside), (2, 1))

    def test_parsing(self):
        path = os.path.join(self.tmp.name, "r.csv")
        with open(path, "w") as f:
            f.write(range_replay(values(**REAL), launches=40))
        rows, why = crf.read_ncu_ranges(path)
        self.assertIsNone(why)
        self.assertEqual(list(rows), list(KERNELS))
        self.assertEqual(rows["divergent"][HIT], 150267 * 40)  # "6,010,680" in the CSV
        self.assertEqual(crf.range_value(HIT, rows["divergent"], 40), 150267)
        self.assertEqual(crf.range_value(IPC, rows["divergent"], 40), 1.0)
        self.assertIsNone(crf.range_value(HIT, None, 40))
        self.assertTrue(crf.decided_by_range("dram__throughput.avg.pct_of_peak_sustained_elapsed"))
        self.assertTrue(crf.decided_by_range(crf.L2_DERIVED))
        self.assertFalse(crf.decided_by_range(TIME))
        self.assertFalse(crf.decided_by_range("l1tex__t_sector_hit_rate.pct"))


if __name__ == "__main__":
    unittest.main()
