#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Validates gpufl session logs against the JSON Schema and the format's own rules.

Every line of every *.log and *.log.N file under the given directories must
match docs/schema/gpufl-log.schema.json. Beyond what a JSON Schema can say,
this also checks (docs/log-format.md): each file (segment) starts with a
header naming that file and segment; dict ids are defined before a line of the
same segment uses them, and mean the same string in every file of a session;
batch columns have equal lengths; every line ends with a newline; a segment
followed by another ends with segment_end naming it. Finding no file at all is
a failure, so the check cannot pass vacuously.

Uses only the standard library and python3-jsonschema (Debian package).
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpufl_compact  # noqa: E402  (next to this file)

try:
    import jsonschema
except ImportError:  # pragma: no cover - reported, not hidden
    sys.stderr.write("validate_logs.py: python3-jsonschema is not installed "
                     "(apt-get install python3-jsonschema)\n")
    sys.exit(2)

LOG_NAME = re.compile(r"^(device|scope|system)\.log(?:\.([1-9][0-9]*))?$")
BATCH_TYPES = ("dict", "scope_begin", "scope_end", "host_sample", "gpu_sample", "kernel", "copy",
               "memset", "sync", "pc_sample", "pc_window", "launch", "sass_metric")
# Columns of scope_begin that hold dict ids (0 = none for tag).
DICT_COLUMNS = {"scope_begin": ("name", "tag", "path"), "kernel": ("name",),
                "pc_sample": ("cubin", "function", "demangled", "reason"),
                "sass_metric": ("cubin", "function", "demangled")}
ERRORS_PER_FILE = 50


def reject_constant(name):
    raise ValueError("%s is not valid JSON" % name)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


TYPE_TESTS = {
    "integer": is_int,
    "number": lambda v: is_int(v) or isinstance(v, float),
    "null": lambda v: v is None,
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
}


def compile_item_check(schema, definitions):
    """A fast check for a simple column item schema (type, minimum, maximum,
    enum), so long batch columns need not go through jsonschema item by item.
    Returns None for anything else (left to jsonschema)."""
    while "$ref" in schema:
        schema = definitions[schema["$ref"].rsplit("/", 1)[1]]
    if not set(schema) - {"description"} <= {"type", "minimum", "maximum", "enum"}:
        return None
    types = schema.get("type")
    types = [types] if isinstance(types, str) else types
    lo, hi, enum = schema.get("minimum"), schema.get("maximum"), schema.get("enum")

    def check(v):
        if types and not any(TYPE_TESTS[t](v) for t in types):
            return "%r is not of type %s" % (v, ", ".join(repr(t) for t in types))
        if is_int(v) or isinstance(v, float):
            if lo is not None and v < lo:
                return "%r is less than the minimum of %r" % (v, lo)
            if hi is not None and v > hi:
                return "%r is greater than the maximum of %r" % (v, hi)
        if enum is not None and (isinstance(v, bool) or v not in enum):
            return "%r is not one of %r" % (v, enum)
        return None
    return check


def compile_batch_checks(schema):
    """{record type: {column: (max_items, item check)}} for the batch types."""
    definitions = schema.get("definitions", {})
    out = {}
    for rtype in BATCH_TYPES:
        props = definitions.get(rtype, {}).get("properties", {})
        cols = {}
        for name, col in props.items():
            if col.get("type") != "array" or "items" not in col:
                continue
            check = compile_item_check(col["items"], definitions)
            if check:
                cols[name] = (col.get("maxItems"), check)
        out[rtype] = cols
    return out


class Checker:
    def __init__(self, schema, allow_truncated):
        self.validator = jsonschema.Draft7Validator(schema)
        self.batch_checks = compile_batch_checks(schema)
        self.allow_truncated = {os.path.realpath(p) for p in allow_truncated}
        self.errors = []
        self.files = 0
        self.lines = 0
        self.session_dict = {}  # session dir -> {id: str}

    def error(self, path, line, message):
        if line:
            self.errors.append("%s:%d: %s" % (path, line, message))
        else:
            self.errors.append("%s: %s" % (path, message))

    def check_file(self, path, stem, segment, session_ids, next_exists):
        self.files += 1
        with open(path, "rb") as f:
            data = f.read()
        chunks = data.split(b"\n")
        last = chunks.pop()  # b"" when the file ends with a newline
        if last:
            if os.path.realpath(path) in self.allow_truncated:
                pass  # an incomplete last line a killed writer may leave
            else:
                self.error(path, len(chunks) + 1, "incomplete last line (no newline at the end)")
        defined = set()
        errors_before = len(self.errors)
        last_type = None
        for number, raw in enumerate(chunks, start=1):
            if len(self.errors) - errors_before >= ERRORS_PER_FILE:
                self.error(path, 0, "too many errors, stopped checking this file")
                break
            last_type = self.check_line(path, number, raw, stem, segment, defined, session_ids)
        if not chunks:
            self.error(path, 0, "no complete line: a file starts with its header")
        if next_exists and last_type != "segment_end":
            self.error(path, len(chunks), "followed by segment %d but does not end with "
                       "segment_end" % (segment + 1))

    def check_line(self, path, number, raw, stem, segment, defined, session_ids):
        self.lines += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            self.error(path, number, "not UTF-8: %s" % e)
            return None
        if not text:
            self.error(path, number, "empty line")
            return None
        try:
            rec = json.loads(text, parse_constant=reject_constant)
        except ValueError as e:
            self.error(path, number, "not JSON: %s" % e)
            return None
        if not isinstance(rec, dict):
            self.error(path, number, "not a JSON object")
            return None
        # A compact line is checked as the plain line it stands for (the schema's columns).
        try:
            gpufl_compact.decode(rec)
        except gpufl_compact.CompactError as e:
            self.error(path, number, "compact line: %s" % e)
            return None
        ok = True
        seen = set()
        shallow = rec
        fast = self.batch_checks.get(rec.get("type"))
        if fast:
            # Long columns: items checked here, only the first left to jsonschema.
            shallow = dict(rec)
            for name, (max_items, check) in fast.items():
                values = rec.get(name)
                if not isinstance(values, list) or len(values) < 2:
                    continue
                if max_items is not None and len(values) > max_items:
                    self.error(path, number, "schema: %s: is too long (%d items, at most %d)" %
                               (name, len(values), max_items))
                    ok = False
                for i, v in enumerate(values):
                    why = check(v)
                    if why:
                        self.error(path, number, "schema: %s/%d: %s" % (name, i, why))
                        ok = False
                        break
                shallow[name] = values[:1]
        for err in sorted(self.validator.iter_errors(shallow), key=lambda e: list(e.path)):
            where = "/".join(str(p) for p in err.path)
            message = "schema: %s%s" % (where + ": " if where else "", err.message)
            if message not in seen:
                seen.add(message)
                self.error(path, number, message)
            ok = False
        rtype = rec.get("type")
        if number == 1 and rtype != "header":
            self.error(path, number, "the first line is %r, not a header" % rtype)
        if rtype == "header" and ok:
            if number != 1:
                self.error(path, number, "a header that is not the first line")
            if rec["file"] != stem:
                self.error(path, number, "header names file %r" % rec["file"])
            if rec["segment"] != segment:
                self.error(path, number, "header says segment %d" % rec["segment"])
            session_ids.add(rec["session_id"])
        if rtype in BATCH_TYPES:
            lengths = {k: len(v) for k, v in rec.items() if isinstance(v, list)}
            if len(set(lengths.values())) > 1:
                self.error(path, number, "batch columns of unequal length: %s" %
                           ", ".join("%s=%d" % kv for kv in sorted(lengths.items())))
                return rtype
        if rtype == "dict" and ok:
            sdict = self.session_dict.setdefault(os.path.dirname(path), {})
            for i, s in zip(rec["id"], rec["str"]):
                if sdict.setdefault(i, s) != s:
                    self.error(path, number, "dict id %d is %r here but %r elsewhere in the "
                               "session" % (i, s, sdict[i]))
                defined.add(i)
        for column in DICT_COLUMNS.get(rtype, ()):
            values = rec.get(column)
            if not isinstance(values, list):
                continue
            for row, i in enumerate(values):
                if isinstance(i, int) and i != 0 and i not in defined:
                    self.error(path, number, "%s row %d: dict id %d used before a dict line of "
                               "this segment defines it" % (column, row, i))
                    break
        return rtype

    def check_dir(self, root):
        groups = {}  # (dir, stem) -> {segment: path}
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                m = LOG_NAME.match(name)
                if m:
                    seg = int(m.group(2) or 0)
                    groups.setdefault((dirpath, m.group(1)), {})[seg] = os.path.join(dirpath, name)
        by_dir = {}
        for (dirpath, stem), segs in sorted(groups.items()):
            session_ids = by_dir.setdefault(dirpath, set())
            for seg in sorted(segs):
                if seg > 0 and seg - 1 not in segs:
                    self.error(segs[seg], 0, "segment %d is missing before it" % (seg - 1))
                self.check_file(segs[seg], stem, seg, session_ids, seg + 1 in segs)
        for dirpath, ids in sorted(by_dir.items()):
            if len(ids) > 1:
                self.error(dirpath, 0, "files of one session directory name different "
                           "sessions: %s" % ", ".join(sorted(ids)))


def main(argv):
    ap = argparse.ArgumentParser(
        description="Validate every line of gpufl session logs (*.log, *.log.N) found under "
                    "DIR against the JSON Schema and the log format's rules. Exits 1 on any "
                    "error, and when no log file is found.")
    ap.add_argument("--schema", required=True, help="the JSON Schema (draft 7) of a log line")
    ap.add_argument("--allow-truncated", action="append", default=[], metavar="FILE",
                    help="a log file whose last line may be incomplete (a killed writer); "
                         "may be repeated")
    ap.add_argument("dirs", nargs="+", metavar="DIR", help="directories searched recursively")
    args = ap.parse_args(argv)

    with open(args.schema, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    checker = Checker(schema, args.allow_truncated)
    for d in args.dirs:
        if not os.path.isdir(d):
            checker.error(d, 0, "not a directory")
            continue
        checker.check_dir(d)
    if checker.files == 0 and not checker.errors:
        checker.error(" ".join(args.dirs), 0, "no log file found (*.log, *.log.N)")

    for e in checker.errors:
        print(e)
    if checker.errors:
        print("%d files, %d lines, %d errors" % (checker.files, checker.lines,
                                                 len(checker.errors)))
        return 1
    print("%d files, %d lines valid" % (checker.files, checker.lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
