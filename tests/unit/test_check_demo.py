#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/check_demo.py on the GPU demo's recorded run (bench/results/raw/2026-11-27-demo-gpu):
it passes on what the H200 recorded, and fails when the program's counts, the step count or
ncu's occupancy disagree with the report. No GPU: run by CTest (unittest)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
CHECK = os.path.join(REPO, "tests", "gpu", "check_demo.py")
RUN = os.path.join(REPO, "bench", "results", "raw", "2026-11-27-demo-gpu")


def check(report, steps, ncu):
    p = subprocess.run([sys.executable, CHECK, report, str(steps), ncu], text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return p.returncode, p.stdout


class CheckDemo(unittest.TestCase):
    def setUp(self):
        self.report = os.path.join(RUN, "report.json")
        self.ncu = os.path.join(RUN, "ncu.csv")

    def test_the_recorded_run_passes(self):
        rc, out = check(self.report, 50, self.ncu)
        self.assertEqual(rc, 0, out)
        self.assertIn("19 passed, 0 failed", out)

    def test_a_wrong_step_count_fails(self):
        rc, out = check(self.report, 49, self.ncu)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL  launches of matmul_tiled: 151 (program: 148)", out)

    def test_an_occupancy_unlike_ncus_fails(self):
        doc = json.load(open(self.report, encoding="utf-8"))
        for k in doc["kernel_details"]["kernels"]:
            if k["name"].startswith("row_loss"):
                k["configs"][0]["occupancy_pct"] = 25.0
        with tempfile.TemporaryDirectory() as tmp:
            changed = os.path.join(tmp, "report.json")
            json.dump(doc, open(changed, "w", encoding="utf-8"))
            rc, out = check(changed, 50, self.ncu)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL  occupancy of row_loss vs ncu: gpufl 25.0 %, ncu 50.0 %", out)


if __name__ == "__main__":
    unittest.main()
