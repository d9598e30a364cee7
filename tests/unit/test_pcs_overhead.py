#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The arithmetic of bench/gpu/pcs_overhead.py, on synthetic blocks: the GetData calls read
from the library's debug output, the comparison of steps that overlap a call with those that
do not, and the in-process summary (per-round ratios against the untraced block of the same
round and process, and the lower-quartile step). No GPU and no torch: run by CTest (unittest).
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "gpu"))
import pcs_overhead as po  # noqa: E402

DEBUG = (
    "gpufl: debug: session s started\n"
    "gpufl: debug: PC sampling: context 1 GetData at 100.0 ms (mono 3100000 ns, took 1500000 ns): "
    "12 PCs, 0 left, recorded 40, total 40, dropped 0, non-user 0\n"
    "some other line mentioning GetData at 3 ms\n"
    "gpufl: debug: PC sampling: context 1 GetData at 200.0 ms (mono 20000000 ns, took 100000 ns): "
    "3 PCs, 0 left, recorded 9, total 9, dropped 0, non-user 0\n")


def block(variant, process, rnd, step_ms, workload="w"):
    return {"workload": workload, "variant": variant, "process": process, "round": rnd,
            "step_ms": step_ms, "median_ms": sorted(step_ms)[len(step_ms) // 2]}


class GetDataCalls(unittest.TestCase):
    def test_calls_from_debug_lines(self):
        # Only the library's lines with a start and a length count.
        self.assertEqual(po.getdata_calls(DEBUG), [(3100000, 4600000), (20000000, 20100000)])

    def test_none_without_debug_output(self):
        self.assertEqual(po.getdata_calls("gpufl: warning: x\n"), [])


class Overlap(unittest.TestCase):
    def test_steps_split_by_overlap(self):
        # Steps of 1 ms from 0; the first call (3.1 to 4.6 ms) overlaps steps 3 and 4.
        mono = [(1000000 * i, 1000000 * i + 1000000) for i in range(10)]
        ms = [10.0] * 10
        ms[3], ms[4] = 14.0, 16.0
        got = po.overlap_stats({"step_mono_ns": mono, "step_ms": ms},
                               po.getdata_calls(DEBUG))
        self.assertEqual(got["getdata_calls"], 1)  # the second starts after the block
        self.assertEqual(got["steps_with_getdata"], 2)
        self.assertEqual(got["median_ms_with_getdata"], 15.0)
        self.assertEqual(got["median_ms_without"], 10.0)
        self.assertEqual(got["getdata_ms_median"], 1.5)

    def test_no_timeline(self):
        self.assertIsNone(po.overlap_stats({"step_ms": [1.0]}, []))


class InProcessSummary(unittest.TestCase):
    def test_ratios_pair_blocks_of_the_same_round_and_process(self):
        # Process 1 runs 20 % slower overall; the traced blocks cost 10 % in each.
        runs = []
        for p, scale in ((0, 1.0), (1, 1.2)):
            for r in range(3):
                base = [scale * (10 + i % 4) for i in range(8)]
                runs.append(block("untraced", p, r, base))
                runs.append(block("pcs18", p, r, [1.1 * v for v in base]))
        out = po.summarize_in_process(runs, ["w"], ["untraced", "pcs18"])["w"]
        self.assertEqual(out["pcs18"]["blocks"], 6)
        self.assertAlmostEqual(out["pcs18"]["overhead_pct"], 10.0, places=6)
        self.assertAlmostEqual(out["pcs18"]["overhead_lower_quartile_pct"], 10.0, places=6)
        self.assertEqual(out["pcs18"]["overhead_pct_range"], [10.0, 10.0])
        self.assertAlmostEqual(out["untraced"]["overhead_pct"], 0.0)

    def test_slow_steps_move_the_median_not_the_lower_quartile(self):
        # A GetData-like hold on two steps of eight: the lower quartile stays.
        base = [10.0] * 8
        held = [10.0] * 6 + [20.0, 20.0]
        runs = [block("untraced", 0, 0, base), block("pcs18", 0, 0, held)]
        out = po.summarize_in_process(runs, ["w"], ["untraced", "pcs18"])["w"]["pcs18"]
        self.assertEqual(out["overhead_lower_quartile_pct"], 0.0)

    def test_block_without_its_untraced_pair_is_left_out(self):
        runs = [block("untraced", 0, 0, [10.0] * 4), block("pcs18", 0, 0, [11.0] * 4),
                block("pcs18", 0, 1, [50.0] * 4)]
        out = po.summarize_in_process(runs, ["w"], ["untraced", "pcs18"])["w"]["pcs18"]
        self.assertEqual(out["blocks"], 1)
        self.assertAlmostEqual(out["overhead_pct"], 10.0, places=6)

    def test_workload_without_untraced_blocks_is_skipped(self):
        runs = [block("pcs18", 0, 0, [11.0] * 4)]
        self.assertEqual(po.summarize_in_process(runs, ["w"], ["untraced", "pcs18"]), {})


class CpuList(unittest.TestCase):
    def test_sysfs_list(self):
        self.assertEqual(po.parse_cpulist("0-3,8,10-11\n"), {0, 1, 2, 3, 8, 10, 11})
        self.assertEqual(po.parse_cpulist(""), set())


if __name__ == "__main__":
    unittest.main()
