#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/import_graph.py on small trees made here: arrows are counted per directory pair,
a planted include that breaks the layering fails --check with its file and line, so does an
allowed arrow that grew, and one that shrank or disappeared asks to be removed from the
allow-list. Run by CTest (unittest)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "import_graph.py")
ALLOWED = "tests/tools/import_graph_allowed.txt"


class ImportGraph(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        # A tree layered as it should be, with one known violation (core -> nvidia).
        self.write("lib/util/dl.h", "#pragma once\n")
        self.write("lib/util/dl.c", '#include "util/dl.h"\n#include <stdio.h>\n')
        self.write("lib/core/error.h", '#include "gpufl/gpufl.h"\n')
        self.write("lib/core/session.c", '#include "core/error.h"\n#include "util/dl.h"\n'
                   '#include "nvidia/nvml.h"\n')
        self.write("lib/host/host.c", '#include "core/error.h"\n')
        self.write("lib/nvidia/nvml.h", "#pragma once\n")
        self.write("lib/nvidia/nvml.c", '#include "nvidia/nvml.h"\n#include "core/error.h"\n'
                   ' #  include "util/dl.h"\n#include "util/dl.h"\n')
        self.write("lib/analysis/model.h", '#include "util/dl.h"\n#include <gpufl/gpufl.h>\n')
        self.write("cmd/gpufl/main.c", '#include "cli.h"\n#include "gpufl/gpufl.h"\n'
                   '#include <gpufl/gpufl_analysis.h>\n')
        self.write("python/src/module.c", '#include "gpufl_py.h"\n#include "gpufl/gpufl.h"\n')
        self.write("include/gpufl/gpufl.h", "#pragma once\n")
        self.write(ALLOWED, "# known violations\nlib/core -> lib/nvidia: 1  # session.c\n")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)

    def append(self, rel, text):
        with open(os.path.join(self.root, rel), "a", encoding="utf-8") as handle:
            handle.write(text)

    def run_script(self, *args):
        proc = subprocess.run([sys.executable, SCRIPT, "--root", self.root] + list(args),
                              cwd=self.root, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout + proc.stderr

    def test_arrows_are_counted_per_directory_pair(self):
        code, out = self.run_script()
        self.assertEqual(code, 0, out)
        lines = out.splitlines()
        self.assertEqual(lines, [
            "lib/analysis -> lib/util: 1",
            "lib/core -> lib/nvidia: 1  (breaks the layering)",
            "lib/core -> lib/util: 1",
            "lib/host -> lib/core: 1",
            "lib/nvidia -> lib/core: 1",
            "lib/nvidia -> lib/util: 2",
        ])

    def test_todays_tree_passes_the_check(self):
        code, out = self.run_script("--check")
        self.assertEqual(code, 0, out)
        self.assertIn("6 arrows, 1 break the layering (1 includes), 1 allowed: ok", out)

    def test_planted_violation_fails_with_its_file_and_line(self):
        self.append("lib/util/dl.c", '#include "core/error.h"\n')
        code, out = self.run_script("--check")
        self.assertEqual(code, 1, out)
        self.assertIn("lib/util -> lib/core: 1: breaks the layering", out)
        self.assertIn('lib/util/dl.c:3: #include "core/error.h"', out)
        self.assertIn("FAILED", out)

    def test_every_rule_catches_its_arrow(self):
        planted = {"lib/core/x.c": "host/h.h", "lib/host/x.c": "nvidia/nvml.h",
                   "lib/nvidia/x.c": "analysis/model.h", "lib/host/y.c": "analysis/model.h",
                   "lib/core/y.c": "analysis/model.h", "lib/util/x.c": "host/h.h",
                   "lib/analysis/x.c": "core/error.h", "lib/analysis/y.c": "nvidia/nvml.h",
                   "cmd/gpufl/x.c": "analysis/model.h", "cmd/gpufl-monitor/x.c": "util/dl.h",
                   "python/src/x.c": "core/error.h", "python/src/y.c": "util/dl.h"}
        self.write("lib/host/h.h", "#pragma once\n")
        for rel, header in planted.items():
            self.write(rel, '#include "%s"\n' % header)
        code, out = self.run_script("--check")
        self.assertEqual(code, 1, out)
        for rel, header in planted.items():
            arrow = "%s -> lib/%s: 1: breaks" % (os.path.dirname(rel), header.split("/")[0])
            self.assertIn(arrow, out)
            self.assertIn('%s:1: #include "%s"' % (rel, header), out)

    def test_allowed_arrow_that_grows_fails(self):
        self.append("lib/core/session.c", '#include "nvidia/nvml.h"\n')
        code, out = self.run_script("--check")
        self.assertEqual(code, 1, out)
        self.assertIn("lib/core -> lib/nvidia: 2, more than the 1 allowed", out)
        self.assertIn('lib/core/session.c:4: #include "nvidia/nvml.h"', out)

    def test_allowed_arrow_that_disappears_must_be_removed(self):
        self.write("lib/core/session.c", '#include "core/error.h"\n')
        code, out = self.run_script("--check")
        self.assertEqual(code, 1, out)
        self.assertIn("lib/core -> lib/nvidia: gone (allowed 1): remove it from the allow-list",
                      out)

    def test_allowed_arrow_that_shrinks_must_be_lowered(self):
        self.write(ALLOWED, "lib/core -> lib/nvidia: 3\n")
        code, out = self.run_script("--check")
        self.assertEqual(code, 1, out)
        self.assertIn("lib/core -> lib/nvidia: 1, fewer than the 3 allowed: lower it to 1", out)
        self.assertIn("remove it from the allow-list", out)

    def test_downward_arrows_need_no_allowance(self):
        self.append("cmd/gpufl/main.c", '#include <gpufl/gpufl_log.h>\n')
        self.append("lib/host/host.c", '#include "util/dl.h"\n')
        code, out = self.run_script("--check")
        self.assertEqual(code, 0, out)

    def test_bad_allow_lists_are_errors(self):
        for text, message in (("lib/core -> lib/nvidia 1\n", "expected 'from -> to: count'"),
                              ("lib/analysis -> lib/util: 1\n", "breaks no layering rule"),
                              ("lib/core -> lib/nvidia: 1\nlib/core -> lib/nvidia: 1\n",
                               "listed twice")):
            self.write(ALLOWED, text)
            code, out = self.run_script("--check")
            self.assertEqual(code, 2, out)
            self.assertIn(message, out)
        os.unlink(os.path.join(self.root, ALLOWED))
        code, out = self.run_script("--check")
        self.assertEqual(code, 2, out)
        self.assertIn("import_graph_allowed.txt", out)

    def test_tree_without_lib_is_an_error(self):
        shutil.rmtree(os.path.join(self.root, "lib"))
        code, out = self.run_script("--check")
        self.assertEqual(code, 2, out)
        self.assertIn("no lib/", out)

    def test_dot_marks_violations(self):
        code, out = self.run_script("--dot", "-")
        self.assertEqual(code, 0, out)
        self.assertIn("digraph imports {", out)
        self.assertIn('"lib/util";', out)
        self.assertIn('"lib/nvidia" -> "lib/util" [label="2"];', out)
        self.assertRegex(out, r'"lib/core" -> "lib/nvidia" \[label="1", color="#c62828".*'
                              r'constraint=false\];')

    @unittest.skipUnless(shutil.which("dot"), "Graphviz's dot is not installed")
    def test_png_and_svg_are_rendered(self):
        png = os.path.join(self.root, "g.png")
        svg = os.path.join(self.root, "g.svg")
        code, out = self.run_script("--png", png, "--svg", svg)
        self.assertEqual(code, 0, out)
        with open(png, "rb") as handle:
            self.assertEqual(handle.read(8), b"\x89PNG\r\n\x1a\n")
        with open(svg, encoding="utf-8") as handle:
            self.assertIn("lib/nvidia", handle.read())


if __name__ == "__main__":
    unittest.main()
