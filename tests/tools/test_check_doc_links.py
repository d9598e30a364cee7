#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/check_doc_links.py on small trees made here: links that resolve pass, a link or
a root-relative path to a missing file fails with its file and line, code and external links
are left alone, and a tree with nothing to check is an error. Run by CTest (unittest)."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_doc_links.py")


class CheckDocLinks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        self.write("docs/gpu-results/page.md", "# Page\n")
        self.write("bench/results/raw/2026-01-01-topic/run.txt", "raw\n")
        self.write("tests/gpu/probe.cu", "// probe\n")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(text))

    def run_check(self, *args):
        proc = subprocess.run([sys.executable, CHECK, "--root", self.root] + list(args),
                              cwd=self.root, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout + proc.stderr

    def test_links_that_resolve_pass(self):
        self.write("docs/results.md", """\
            See [the page](gpu-results/page.md#conclusion-current), the
            [raw run](../bench/results/raw/2026-01-01-topic/run.txt "title"), the
            [folder](<../bench/results/raw/2026-01-01-topic/>), ![img](gpu-results/page.md),
            [root](/docs/gpu-results/page.md), [site](https://example.org/missing.md),
            [anchor](#here) and [ref].

            [ref]: gpu-results/page.md
            """)
        code, out = self.run_check("--mentions", "docs")
        self.assertEqual(code, 0, out)
        self.assertIn("0 broken", out)

    def test_broken_link_fails_with_file_and_line(self):
        self.write("docs/results.md", "# Results\n\nSee [the page](gpu-results/moved.md).\n")
        code, out = self.run_check("docs")
        self.assertEqual(code, 1, out)
        self.assertIn("docs/results.md:3: linked file gpu-results/moved.md does not exist", out)

    def test_broken_reference_and_html_links_fail(self):
        self.write("docs/a.md", "[x]: gone.md\n")
        self.write("docs/b.md", '<a href="gone/">raw</a>\n')
        code, out = self.run_check("docs")
        self.assertEqual(code, 1, out)
        self.assertIn("docs/a.md:1: linked file gone.md", out)
        self.assertIn("docs/b.md:1: linked file gone/", out)

    def test_link_out_of_the_repository_fails(self):
        self.write("docs/a.md", "[up](../../outside.md)\n")
        with open(os.path.join(os.path.dirname(self.root), "outside.md"), "w") as handle:
            handle.write("x\n")
        try:
            code, out = self.run_check("docs")
        finally:
            os.unlink(os.path.join(os.path.dirname(self.root), "outside.md"))
        self.assertEqual(code, 1, out)

    def test_code_is_not_a_link(self):
        self.write("docs/a.md", """\
            [ok](gpu-results/page.md) and `[not](missing.md)`

            ```
            [not a link](missing.md)
            ```
            """)
        code, out = self.run_check("docs")
        self.assertEqual(code, 0, out)

    def test_root_relative_paths_in_text(self):
        self.write("docs/a.md", """\
            Raw output in bench/results/raw/2026-01-01-topic/ and `tests/gpu/probe`
            (built from probe.cu); `bench/results/raw/<date>-<topic>/`, docs/gpu-results/*.md.
            """)
        code, out = self.run_check("--mentions", "docs")
        self.assertEqual(code, 0, out)
        self.write("docs/b.md", "[Page](gpu-results/page.md); raw output in\n"
                   "`docs/gpu-results/2026-01-01-topic/run.txt`.\n")
        code, out = self.run_check("docs")
        self.assertEqual(code, 0, out)  # paths in text are checked only with --mentions
        code, out = self.run_check("--mentions", "docs")
        self.assertEqual(code, 1, out)
        self.assertIn("docs/b.md:2: path docs/gpu-results/2026-01-01-topic/run.txt does not exist",
                      out)

    def test_nothing_to_check_is_an_error(self):
        os.makedirs(os.path.join(self.root, "empty"))
        code, out = self.run_check("empty")
        self.assertEqual(code, 2, out)
        self.write("plain/a.md", "No link here.\n")
        code, out = self.run_check("plain")
        self.assertEqual(code, 2, out)


if __name__ == "__main__":
    unittest.main()
