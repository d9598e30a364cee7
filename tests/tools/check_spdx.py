#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that every source file git tracks names the project's licence in an
SPDX line near its top (after a shebang, within the first three lines).

Source files are C, C++, CUDA, Python, shell, CMake, TOML, TypeScript,
JavaScript and CSS; data, fixtures, corpora and prose are not. With --fix, the
line is added where it is missing, in the comment syntax of the file.

Usage: check_spdx.py [--fix] [REPO]   (REPO defaults to the current directory)
Exits 1 listing the files without the line, 2 when git lists no file.
"""
import os
import subprocess
import sys

LICENSE = "Apache-2.0"
TAG = "SPDX-License-Identifier: " + LICENSE
SLASH = ("c", "h", "cpp", "hpp", "cu", "cuh", "ts", "js", "mjs")
HASH = ("py", "sh", "cmake", "toml", "in")
# Folders whose files are data whatever their name says.
DATA = ("tests/fixtures/", "tests/fuzz/corpus/", "bench/results/", "docs/")


def comment_of(path):
    """The comment that carries the tag in this file, or None: not a source file."""
    if path.startswith(DATA):
        return None
    name = os.path.basename(path)
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if ext in SLASH:
        return "// " + TAG
    if ext == "css":
        return "/* " + TAG + " */"
    if ext in HASH or name == "CMakeLists.txt":
        return "# " + TAG
    return None


def shebang_script(repo, path):
    """An extensionless script (.ci/run, say): its first line is a shebang."""
    if "." in os.path.basename(path) or path.startswith(DATA):
        return False
    try:
        with open(os.path.join(repo, path), "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def main():
    args = [a for a in sys.argv[1:] if a != "--fix"]
    fix = len(args) != len(sys.argv) - 1
    repo = args[0] if args else "."
    files = subprocess.run(["git", "-C", repo, "ls-files"], check=True, text=True,
                           stdout=subprocess.PIPE).stdout.split()
    if not files:
        print("check_spdx: git lists no file under " + repo)
        return 2
    missing, checked = [], 0
    for path in files:
        line = comment_of(path) or ("# " + TAG if shebang_script(repo, path) else None)
        full = os.path.join(repo, path)
        if line is None or not os.path.isfile(full):
            continue
        checked += 1
        with open(full, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        head = text.split("\n", 3)[:3]
        if any(TAG in h for h in head):
            continue
        missing.append(path)
        if fix:
            lines = text.split("\n")
            at = 1 if lines and lines[0].startswith("#!") else 0
            lines.insert(at, line)
            with open(full, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write("\n".join(lines))
    for path in missing:
        print(("added the SPDX line to " if fix else "no SPDX line: ") + path)
    print(f"check_spdx: {checked} source files, {len(missing)} without '{TAG}'"
          + (" (fixed)" if fix and missing else ""))
    return 1 if missing and not fix else 0


if __name__ == "__main__":
    sys.exit(main())
