#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that the relative links of the project's Markdown files point at files that exist.

Every link of every *.md file under the given paths ([text](target), ![alt](target),
reference definitions "[name]: target", and href/src attributes of inline HTML) is resolved
against the file's own directory (a leading "/" against the repository root) and must name an
existing file or directory inside the repository. Links with a scheme (https:, mailto:) and
links to an anchor of the same page are not checked; the anchor and query of a path are
dropped. Code blocks and inline code are skipped: their text is not a link.

With --mentions, paths written out in prose or inline code that start at the repository root
(docs/..., bench/results/..., tests/..., and so on) must exist as well: a moved results file
is often named that way rather than linked. Paths with a placeholder (<date>, *, {a,b}, $VAR)
are not checked, and a program's name passes when its source file is there (tests/gpu/pcs_kernels
for tests/gpu/pcs_kernels.cu).

Exit status: 0 when every link resolves, 1 when one does not (each is printed as
FILE:LINE: TARGET), 2 on bad usage or when no Markdown file or no link was found, so that the
check cannot pass vacuously. Standard library only; run by CTest (label docs).
"""
import argparse
import os
import re
import sys
import urllib.parse

INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
                         r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ATTR = re.compile(r"\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# Top-level directories whose paths, written from the repository root, are checked with
# --mentions. A path must hold at least one "/" after the directory.
MENTION_ROOTS = ("docs", "bench", "tests", "lib", "include", "cmd", "python", "scripts")
MENTION = re.compile(r"(?<![\w./-])((?:%s)/[A-Za-z0-9_.+/-]*[A-Za-z0-9_/+-])" % "|".join(MENTION_ROOTS))
PLACEHOLDER = re.compile(r"[<>*{}$]|\.\.\.")
PLACEHOLDER_NEXT = "<>*{}$"


def repo_root():
    return os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def markdown_files(paths):
    for path in paths:
        if os.path.isfile(path):
            if path.endswith(".md"):
                yield path
            continue
        for directory, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.endswith(".md"):
                    yield os.path.join(directory, name)


def text_lines(lines):
    """Yields (line number, text outside code spans, text of the code spans) for every line
    outside fenced code blocks."""
    fence = None
    for number, line in enumerate(lines, 1):
        match = FENCE.match(line)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        spans = [m.group(2) for m in CODE_SPAN.finditer(line)]
        yield number, CODE_SPAN.sub(" ", line), spans


def link_targets(text):
    for match in INLINE_LINK.finditer(text):
        yield match.group(1)
    match = REFERENCE.match(text)
    if match:
        yield match.group(1)
    for match in HTML_ATTR.finditer(text):
        yield match.group(1)


def resolve(target, base_dir, root):
    """Returns the absolute path a relative link names, or None for links not checked."""
    target = target.strip()
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    if not target or target.startswith("#") or target.startswith("//") or SCHEME.match(target):
        return None
    path = urllib.parse.unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not path:
        return None
    if path.startswith("/"):
        return os.path.normpath(os.path.join(root, path.lstrip("/")))
    return os.path.normpath(os.path.join(base_dir, path))


def exists_in_repo(path, root):
    inside = path == root or path.startswith(root + os.sep)
    return inside and os.path.exists(path)


def mention_exists(path, root):
    """A path named in the text exists, or is a program built from a source file of its name."""
    if exists_in_repo(path, root):
        return True
    directory, name = os.path.split(path)
    if not exists_in_repo(directory, root):
        return False
    return any(entry.startswith(name + ".") for entry in os.listdir(directory))


def check_file(md_path, root, mentions):
    """Returns (links checked, list of (line, target, why))."""
    with open(md_path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    base_dir = os.path.dirname(os.path.abspath(md_path))
    checked, broken = 0, []
    for number, text, spans in text_lines(lines):
        for target in link_targets(text):
            path = resolve(target, base_dir, root)
            if path is None:
                continue
            checked += 1
            if not exists_in_repo(path, root):
                broken.append((number, target, "link"))
        if not mentions:
            continue
        # Prose and inline code, with the links' own targets taken out (checked above).
        for chunk in [INLINE_LINK.sub(" ", text)] + spans:
            for match in MENTION.finditer(chunk):
                mention = match.group(1)
                following = chunk[match.end():match.end() + 1]
                if PLACEHOLDER.search(mention) or (following and following in PLACEHOLDER_NEXT):
                    continue
                checked += 1
                path = os.path.normpath(os.path.join(root, mention))
                if not mention_exists(path, root):
                    broken.append((number, mention, "path"))
    return checked, broken


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="Markdown files or directories to check")
    parser.add_argument("--root", default=repo_root(),
                        help="repository root, for links starting with / and for --mentions "
                             "(default: two levels above this script)")
    parser.add_argument("--mentions", action="store_true",
                        help="also check paths written from the repository root in the text")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    files = list(markdown_files(args.paths))
    if not files:
        sys.stderr.write("check_doc_links.py: no Markdown file under %s\n" % " ".join(args.paths))
        return 2
    total, failures = 0, 0
    for md_path in files:
        checked, broken = check_file(md_path, root, args.mentions)
        total += checked
        for number, target, kind in broken:
            failures += 1
            print("%s:%d: %s %s does not exist" % (os.path.relpath(md_path, root), number,
                                                  "linked file" if kind == "link" else "path",
                                                  target))
    if total == 0:
        sys.stderr.write("check_doc_links.py: no link found in %d Markdown files\n" % len(files))
        return 2
    print("check_doc_links.py: %d files, %d links and paths, %d broken" % (len(files), total, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
