#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that the log's wire format is encoded only in lib/core/wire*.c:
no source of a backend or a host source (lib/host, lib/nvidia, lib/amd)
includes the JSON writer (util/jsonw.h) or calls its encoders or the record
line builders. Sources fill typed rows and structs; the wire files encode.

Usage: check_wire_encoders.py [--self-test] [REPO]  (REPO: the current directory)
Exits 1 listing each offending line.
"""
import os
import re
import sys
import tempfile

SOURCE_DIRS = ("lib/host", "lib/nvidia", "lib/amd")
FORBIDDEN = re.compile(
    r'#\s*include\s*"util/jsonw\.h"'
    r"|\bgpufl__buf_\w+\s*\("
    r"|\bgpufl__line_(begin\w*|end|dict)\s*\("
)


def offending(repo):
    """(path, line number, text) of each line that encodes JSON outside the wire files."""
    found = []
    for top in SOURCE_DIRS:
        root = os.path.join(repo, top)
        for dirpath, _, names in os.walk(root):
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for no, text in enumerate(f, 1):
                        if FORBIDDEN.search(text):
                            found.append((os.path.relpath(path, repo), no, text.strip()))
    return found


def self_test():
    """The checker must fail on planted encoders and pass on a clean tree."""
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "lib/nvidia"))
        clean = os.path.join(tmp, "lib/nvidia/clean.c")
        with open(clean, "w") as f:
            f.write('#include "core/wire_engines.h"\nvoid f(void) { gpufl__wire_sass(0, 0); }\n')
        if offending(tmp):
            return "a clean source was reported"
        for bad in ('#include "util/jsonw.h"\n', "x; gpufl__buf_kv_i64(b, \"k\", 1);\n",
                    "gpufl_buf_t *b = gpufl__line_begin(&l, \"t\");\n"):
            with open(os.path.join(tmp, "lib/nvidia/bad.c"), "w") as f:
                f.write(bad)
            if len(offending(tmp)) != 1:
                return "missed: " + bad.strip()
    return None


def main(argv):
    args = [a for a in argv[1:] if a != "--self-test"]
    if len(args) != len(argv) - 1:
        why = self_test()
        if why:
            print("check_wire_encoders self-test failed: " + why)
            return 1
    repo = args[0] if args else "."
    found = offending(repo)
    for path, no, text in found:
        print(f"{path}:{no}: encodes the wire format outside lib/core/wire*.c: {text}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
