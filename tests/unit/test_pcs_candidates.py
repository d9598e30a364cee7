#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The arithmetic of tests/gpu/summarize_pcs_candidates.py (the summary of
tests/gpu/run_pcs_candidates.sh) on synthetic rows: non-user samples given to
kernels by window, the stall mix's largest difference, the added cost per
launch over untraced by round, and the summary written from an output
directory. No GPU: run by CTest (unittest).
"""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
import summarize_pcs_candidates as spc  # noqa: E402

LONG = "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
MATH = "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"


def pc(t0, function, reason, samples, context=1):
    return {"context": context, "t0_ns": t0, "t1_ns": t0 + 10, "function_str": function,
            "reason_str": reason, "samples": samples}


class NonUserByWindow(unittest.TestCase):
    def test_split_by_recorded_samples_of_the_window(self):
        rows = [pc(0, "strided_load", LONG, 300), pc(0, "fma_chains", MATH, 100),
                pc(100, "fma_chains", MATH, 200)]
        windows = [{"context": 1, "t0_ns": 0, "t1_ns": 10, "non_user": 40},
                   {"context": 1, "t0_ns": 100, "t1_ns": 110, "non_user": 200},
                   {"context": 1, "t0_ns": 200, "t1_ns": 210, "non_user": 7}]  # no kernel: none
        kept = spc.kept_shares(rows, windows)
        self.assertEqual(kept["strided"]["non_user"], 30)
        self.assertEqual(kept["fma_chains"]["non_user"], 210)
        self.assertAlmostEqual(kept["strided"]["kept"], 300 / 330, places=4)
        self.assertAlmostEqual(kept["fma_chains"]["kept"], 300 / 510, places=4)
        self.assertIsNone(kept["divergent"]["kept"])


class StallMix(unittest.TestCase):
    def test_selected_left_out_and_points(self):
        rows = [pc(0, "fma_chains", MATH, 60), pc(0, "fma_chains", LONG, 40),
                pc(0, "fma_chains", "smsp__pcsamp_warps_issue_stalled_selected", 500)]
        mix = spc.stall_mix(rows)["fma_chains"]
        self.assertEqual(mix, {"math_pipe_throttle": 0.6, "long_scoreboard": 0.4})
        self.assertEqual(spc.largest_difference_points(mix, {"math_pipe_throttle": 0.5,
                                                             "long_scoreboard": 0.45,
                                                             "wait": 0.05}), 10.0)
        self.assertIsNone(spc.largest_difference_points(mix, {}))


class LaunchCost(unittest.TestCase):
    def test_median_of_per_round_differences(self):
        lines = ["variant=untraced kind=run round=1 us_per_kernel=2.0",
                 "variant=kernels kind=run round=1 us_per_kernel=3.5",
                 "variant=untraced kind=run round=2 us_per_kernel=4.0",
                 "variant=kernels kind=run round=2 us_per_kernel=5.0",
                 "variant=kernels kind=run round=3 us_per_kernel=9.0"]  # no untraced: skipped
        added, base = spc.launch_costs(lines)
        self.assertEqual(added, {"kernels": 1.25})
        self.assertEqual(base, 3.0)


class Summary(unittest.TestCase):
    def test_writes_the_tables_it_has(self):
        with tempfile.TemporaryDirectory() as out:
            with open(os.path.join(out, "launch.txt"), "w") as f:
                f.write("variant=untraced kind=run round=1 us_per_kernel=2.0\n"
                        "variant=all kind=run round=1 us_per_kernel=2.6\n")
            summary = {"workloads": {"transformer": {
                "untraced": {"median_ms": 20.0, "overhead_pct": 0.0},
                "trace": {"median_ms": 21.0, "overhead_pct": 5.0},
                "pcs18+all": {"median_ms": 22.05, "overhead_pct": 10.25}}}}
            with open(os.path.join(out, "train.jsonl"), "w") as f:
                f.write(json.dumps({"variant": "pcs18+all", "median_ms": 22.05,
                                    "stats": {"pc_sampling_stats": {"recorded": 750,
                                                                    "non_user": 250}}}) + "\n")
                f.write(json.dumps({"summary": summary}) + "\n")
            sys.argv = ["summarize", out, "--modes", "all"]
            self.assertEqual(spc.main(), 0)
            with open(os.path.join(out, "summary.json")) as f:
                s = json.load(f)
            self.assertEqual(s["kernels"]["all"], {"error": "no session"})
            self.assertAlmostEqual(s["launch"]["added_us_per_launch"]["all"], 0.6)
            self.assertEqual(s["train"]["pcs18+all"]["kept"], 0.75)
            self.assertEqual(s["train"]["pcs18+all"]["vs_trace_pct"], 5.0)
            with open(os.path.join(out, "summary.md")) as f:
                md = f.read()
            self.assertIn("| pcs18+all | 22.05 | +10.25 % | +5.00 % | 0.75 |", md)
            self.assertIn("| all | +0.600 |", md)


if __name__ == "__main__":
    unittest.main()
