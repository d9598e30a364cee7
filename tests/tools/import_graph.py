#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The directory-level import graph of gpufl, drawn and held to the layering.

Reads every `#include "dir/file.h"` of lib/**, cmd/** and python/src/** and counts, for each
pair of directories A != B, the includes by which a file of A names a header of B (a header
"dir/file.h" belongs to lib/dir when lib/dir exists: the library's include root). Public
headers (include/gpufl/) and a directory's own headers are no arrows.

The layers (docs/architecture.md, "Layers"), lowest first: lib/util names nothing; lib/core
names nothing above it (host, a vendor, the analysis); lib/host names no vendor; no source or
backend (lib/host, lib/nvidia, lib/amd later) names the analysis; the executables (cmd/*) and
the Python package (python/src) name nothing in lib/: they use the public headers (gpufl.h,
gpufl_analysis.h) and the build gives them no include path into lib/. --check lists the arrows
that break these rules and holds them to an allow-list (tests/tools/import_graph_allowed.txt)
that may only shrink.

Usage:
  import_graph.py [--root DIR]                 print the arrows, "from -> to: count"
  import_graph.py --dot FILE [--png F] [--svg F] write Graphviz DOT ("-": stdout); the pictures
                                               need Graphviz's `dot` (Debian: graphviz)
  import_graph.py --check [--allowed FILE]     exit 1 on a new or grown violation, or on an
                                               allowed one that shrank or disappeared
Exit status: 0 fine, 1 the check failed, 2 bad usage or input.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.dirname(os.path.dirname(HERE))
ALLOWED = os.path.join("tests", "tools", "import_graph_allowed.txt")

# Drawn even when nothing points to or from them; others appear when found.
NODES = ("cmd/gpufl", "python/src", "lib/analysis", "lib/host", "lib/nvidia", "lib/core",
         "lib/net", "lib/util")
VENDORS = ("lib/nvidia", "lib/amd")
# from -> the directories it must not include; None: must include nothing outside itself.
FORBIDDEN = {
    "lib/util": None,
    "lib/core": ("lib/host",) + VENDORS + ("lib/analysis",),
    "lib/host": VENDORS + ("lib/analysis",),
    # libgpufl-analysis links only the internal utility library and libgpufl's public API.
    "lib/analysis": ("lib/core", "lib/host") + VENDORS,
    # The upload module: the util library and public headers; core calls it, not the reverse.
    "lib/net": ("lib/core", "lib/host", "lib/analysis") + VENDORS,
}
for _vendor in VENDORS:
    FORBIDDEN[_vendor] = ("lib/analysis",)
# Sources whose every arrow into lib/ breaks the layering: public headers only.
PUBLIC_ONLY = ("cmd/", "python/src")
# Rows of the picture, top to bottom: who includes sits above what it includes.
RANKS = (("cmd/gpufl", "python/src"), ("lib/analysis",), ("lib/host",) + VENDORS, ("lib/core",),
         ("lib/net",), ("lib/util",))

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".hpp")
ALLOW_LINE = re.compile(r"^\s*(\S+)\s*->\s*(\S+)\s*:\s*(\d+)\s*$")


def node_of(rel):
    """The graph node a repository-relative file belongs to, or None."""
    parts = rel.split("/")
    if parts[0] in ("lib", "cmd") and len(parts) >= 3:
        return parts[0] + "/" + parts[1]
    if parts[:2] == ["python", "src"] and len(parts) >= 3:
        return "python/src"
    return None


def scan(root):
    """{(from, to): [(file, line, header), ...]} for every include across directories."""
    lib = os.path.join(root, "lib")
    edges = {}
    for top in ("lib", "cmd", os.path.join("python", "src")):
        for directory, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs.sort()
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(directory, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                source = node_of(rel)
                if source is None:
                    continue
                with open(path, encoding="utf-8", errors="replace") as handle:
                    for number, text in enumerate(handle, 1):
                        match = INCLUDE.match(text)
                        if not match or "/" not in match.group(1):
                            continue
                        first = match.group(1).split("/", 1)[0]
                        if not os.path.isdir(os.path.join(lib, first)):
                            continue  # a public header (gpufl/...) or a relative path
                        target = "lib/" + first
                        if target != source:
                            edges.setdefault((source, target), []).append(
                                (rel, number, match.group(1)))
    return edges


def breaks_layering(source, target):
    if source.startswith(PUBLIC_ONLY):
        return target.startswith("lib/")
    if source not in FORBIDDEN:
        return False
    forbidden = FORBIDDEN[source]
    return forbidden is None or target in forbidden


def violations(edges):
    return {edge: len(sites) for edge, sites in edges.items() if breaks_layering(*edge)}


def read_allowed(path):
    """{(from, to): count} from the allow-list; raises ValueError on a malformed line."""
    allowed = {}
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, 1):
            text = text.split("#", 1)[0]
            if not text.strip():
                continue
            match = ALLOW_LINE.match(text)
            if not match:
                raise ValueError("%s:%d: expected 'from -> to: count', got %r"
                                 % (path, number, text.strip()))
            edge = (match.group(1), match.group(2))
            if edge in allowed:
                raise ValueError("%s:%d: %s -> %s listed twice" % (path, number, *edge))
            if not breaks_layering(*edge):
                raise ValueError("%s:%d: %s -> %s breaks no layering rule: remove it from the "
                                 "allow-list" % (path, number, *edge))
            allowed[edge] = int(match.group(3))
    return allowed


def check(edges, allowed):
    """The failures, one line each (empty: the check passes)."""
    found = violations(edges)
    failures = []
    for edge in sorted(found):
        count, limit = found[edge], allowed.get(edge)
        if limit is not None and count <= limit:
            continue
        if limit is None:
            failures.append("%s -> %s: %d: breaks the layering (docs/architecture.md); "
                            "the includes:" % (*edge, count))
        else:
            failures.append("%s -> %s: %d, more than the %d allowed; the includes:"
                            % (*edge, count, limit))
        failures.extend("  %s:%d: #include \"%s\"" % site for site in edges[edge])
    for edge in sorted(allowed):
        count, limit = found.get(edge, 0), allowed[edge]
        if count == 0:
            failures.append("%s -> %s: gone (allowed %d): remove it from the allow-list"
                            % (*edge, limit))
        elif count < limit:
            failures.append("%s -> %s: %d, fewer than the %d allowed: lower it to %d in the "
                            "allow-list (remove it from the allow-list when none is left)"
                            % (*edge, count, limit, count))
    return failures


def to_dot(edges):
    nodes = list(NODES) + sorted({n for edge in edges for n in edge} - set(NODES))
    lines = ["// The directory-level import graph of gpufl (tests/tools/import_graph.py).",
             "// An arrow A -> B: files of A include headers of B, labelled with the count;",
             "// red arrows break the layering (docs/architecture.md, Layers).",
             "digraph imports {",
             '  graph [rankdir=TB, nodesep=0.5, ranksep=0.7, fontname="Helvetica"];',
             '  node [shape=box, style="rounded,filled", fillcolor="#eef2f7", '
             'fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=11];']
    lines.extend('  "%s";' % node for node in nodes)
    for rank in RANKS:
        present = [node for node in rank if node in nodes]
        if len(present) > 1:
            lines.append("  { rank=same; %s }" % " ".join('"%s";' % n for n in present))
    for (source, target), sites in sorted(edges.items()):
        if breaks_layering(source, target):
            # Upward arrows do not reorder the layers; they show as red.
            style = ', color="#c62828", fontcolor="#c62828", penwidth=1.6, constraint=false'
        else:
            style = ""
        lines.append('  "%s" -> "%s" [label="%d"%s];' % (source, target, len(sites), style))
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot_text, fmt, path):
    dot = shutil.which("dot")
    if dot is None:
        print("import_graph: Graphviz's dot is not installed (Debian: apt-get install graphviz); "
              "cannot write " + path, file=sys.stderr)
        return False
    proc = subprocess.run([dot, "-T" + fmt, "-o", path], input=dot_text, text=True,
                          capture_output=True, check=False)
    if proc.returncode != 0:
        print("import_graph: dot failed on %s: %s" % (path, proc.stderr.strip()), file=sys.stderr)
        return False
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help="the repository (default: this one)")
    parser.add_argument("--dot", metavar="FILE", help="write Graphviz DOT there ('-': stdout)")
    parser.add_argument("--png", metavar="FILE", help="render a PNG (needs dot)")
    parser.add_argument("--svg", metavar="FILE", help="render an SVG (needs dot)")
    parser.add_argument("--check", action="store_true",
                        help="hold the layering violations to the allow-list")
    parser.add_argument("--allowed", metavar="FILE",
                        help="the allow-list (default: ROOT/" + ALLOWED + ")")
    args = parser.parse_args()

    if not os.path.isdir(os.path.join(args.root, "lib")):
        print("import_graph: no lib/ under " + args.root, file=sys.stderr)
        return 2
    edges = scan(args.root)
    if not edges:
        print("import_graph: no include crosses a directory under " + args.root, file=sys.stderr)
        return 2

    status = 0
    dot_text = to_dot(edges)
    if args.dot == "-":
        sys.stdout.write(dot_text)
    elif args.dot:
        with open(args.dot, "w", encoding="utf-8") as handle:
            handle.write(dot_text)
    for fmt, path in (("png", args.png), ("svg", args.svg)):
        if path and not render(dot_text, fmt, path):
            status = 2
    if args.dot != "-":
        for (source, target), sites in sorted(edges.items()):
            mark = "  (breaks the layering)" if breaks_layering(source, target) else ""
            print("%s -> %s: %d%s" % (source, target, len(sites), mark))

    if args.check:
        allowed_path = args.allowed or os.path.join(args.root, ALLOWED)
        try:
            allowed = read_allowed(allowed_path)
        except (OSError, ValueError) as error:
            print("import_graph: " + str(error), file=sys.stderr)
            return 2
        failures = check(edges, allowed)
        for line in failures:
            print(line)
        found = violations(edges)
        print("import_graph: %d arrows, %d break the layering (%d includes), %d allowed: %s"
              % (len(edges), len(found), sum(found.values()), len(allowed),
                 "FAILED" if failures else "ok"))
        if failures:
            status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
