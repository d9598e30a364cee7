# SPDX-License-Identifier: Apache-2.0
"""A small reader of gpufl session logs for the GPU checks (compare_ncu.py,
compare_torch.py): segments, dict lines, column batches as rows (compact lines
decoded by ../tools/gpufl_compact.py), single records. It follows docs/log-format.md and the Trace engine's additions
(kernel_config records; demangled, scope, config columns on kernel rows).

Python 3 standard library only; import it from the scripts next to it.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import gpufl_compact  # noqa: E402  (compact lines: docs/log-format.md, Compact batches)

# Batch record types (one array per column); every other type is a single record.
BATCH_TYPES = {
    "scope_begin", "scope_end", "host_sample", "gpu_sample", "kernel", "copy", "memset",
    "sync", "graph_launch", "alloc", "pc_sample", "pc_window", "launch", "sass_metric",
}
# Columns that hold dict ids, per batch type.
DICT_COLUMNS = {
    "kernel": ("name", "demangled"),
    "scope_begin": ("name", "tag", "path"),
    "pc_sample": ("cubin", "function", "demangled", "reason"),
    "sass_metric": ("cubin", "function", "demangled"),
}


class LogError(Exception):
    """A session log that cannot be read as the format says."""


def _number(v):
    # Integers above 2^53 are written as decimal strings.
    if isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    return v


def _segments(directory, name):
    first = os.path.join(directory, name)
    if not os.path.exists(first):
        return []
    paths, n = [first], 1
    while os.path.exists(f"{first}.{n}"):
        paths.append(f"{first}.{n}")
        n += 1
    return paths


def _batch_rows(rec):
    """The rows of a batch line as dicts. Reads the documented encoding
    (column name -> array) and a "cols" + "rows" variant."""
    if "cols" in rec and "rows" in rec:
        cols = rec["cols"]
        return [dict(zip(cols, row)) for row in rec["rows"]]
    try:
        gpufl_compact.decode(rec)
    except gpufl_compact.CompactError as e:
        raise LogError("%s batch: %s" % (rec["type"], e)) from None
    cols = [k for k in rec if k not in ("type", "v")]
    if not cols:
        return []
    n = len(rec[cols[0]])
    for c in cols:
        if not isinstance(rec[c], list) or len(rec[c]) != n:
            raise LogError(f"{rec['type']} batch: column {c} is not an array of {n} values")
    return [{c: rec[c][i] for c in cols} for i in range(n)]


class Session:
    """Everything in one session directory, read at construction.

    rows[type]    -- batch rows (dicts); dict columns get a "<col>_str" twin
    records[type] -- single records (dicts), in file order
    strings       -- dict id -> string
    files_read    -- the segment paths read
    skipped_lines -- lines that were not JSON (an incomplete last line is normal)
    """

    def __init__(self, directory):
        self.dir = directory
        self.strings = {}
        self.rows = {}
        self.records = {}
        self.files_read = []
        self.skipped_lines = 0
        self.versions = {}  # the newest "v" of each batch type read
        raw_batches = []
        for name in ("device.log", "scope.log", "system.log"):
            for path in _segments(directory, name):
                self.files_read.append(path)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        line = line.strip()
                        if not line:
                            continue
                        try:
                            rec = json.loads(line)
                        except ValueError:
                            self.skipped_lines += 1
                            continue
                        t = rec.get("type")
                        if t == "dict":
                            for i, s in zip(rec["id"], rec["str"]):
                                self.strings[int(i)] = s
                        elif t in BATCH_TYPES:
                            raw_batches.append(rec)
                            self.versions[t] = max(self.versions.get(t, 1), rec.get("v", 1))
                        else:
                            self.records.setdefault(t, []).append(rec)
        if not any(p.endswith("device.log") for p in self.files_read):
            raise LogError(f"no device.log in {directory}")
        # Dict ids are session-wide, so rows are resolved after every dict line is known.
        for rec in raw_batches:
            t = rec["type"]
            out = self.rows.setdefault(t, [])
            for row in _batch_rows(rec):
                for k, v in row.items():
                    row[k] = _number(v)
                for c in DICT_COLUMNS.get(t, ()):
                    if c in row and row[c] is not None:
                        row[c + "_str"] = self.strings.get(row[c], f"<dict id {row[c]} missing>")
                out.append(row)

    # What logs before the legend record (format 1) held: CUPTI's numbers.
    _CUPTI_V1 = {"sync_type": {"event": 1, "stream_wait_event": 2, "stream": 3, "device": 4},
                 "copy_kind": {"host_to_device": 1, "device_to_host": 2, "device_to_device": 8,
                               "host_to_host": 9, "peer": 10},
                 "memory_kind": {"pageable": 1, "pinned": 2, "device": 3, "array": 4,
                                 "managed": 5, "device_static": 6, "managed_static": 7}}

    # gpufl's own values (include/gpufl/gpufl_log.h), which the legend names.
    _GPUFL = {"sync_type": {"device": 1, "stream": 2, "event": 3, "stream_wait_event": 4},
              "copy_kind": {"host_to_device": 1, "device_to_host": 2, "device_to_device": 3,
                            "peer": 4, "host_to_host": 5},
              "memory_kind": {"pageable": 1, "pinned": 2, "device": 3, "managed": 4, "array": 5,
                              "device_static": 6, "managed_static": 7}}
    _TYPE_OF = {"sync_type": "sync", "copy_kind": "copy", "memory_kind": "memset"}

    def value(self, column, name):
        """The number a row's `column` (sync_type, copy_kind, memory_kind) holds
        for `name`: from the session's legend record; without one, gpufl's
        value for rows of "v" 2 and CUPTI's number for rows of "v" 1."""
        for legend in self.records.get("legend", []):
            for number, known in legend.get(column, {}).items():
                if known == name:
                    return int(number)
        if self.versions.get(self._TYPE_OF[column], 1) >= 2:
            return self._GPUFL[column][name]
        return self._CUPTI_V1[column][name]

    def capabilities(self):
        caps = self.records.get("capabilities", [])
        return caps[0] if caps else None

    def trace_state(self):
        """(engine, cupti_trace_on, why) from the capability record."""
        caps = self.capabilities()
        if caps is None:
            return None, False, "no capabilities record in device.log"
        feat = caps.get("features", {}).get("cupti_trace", {})
        return caps.get("engine"), bool(feat.get("on")), feat.get("why", "")

    def kernels(self):
        return self.rows.get("kernel", [])

    def kernel_configs(self):
        """kernel_config records by id, names resolved when given as dict ids."""
        out = {}
        for r in self.records.get("kernel_config", []):
            r = dict(r)
            if isinstance(r.get("name"), int):
                r["name"] = self.strings.get(r["name"], f"<dict id {r['name']} missing>")
            out[r["id"]] = r
        return out

    def events(self, code=None):
        return [e for e in self.records.get("event", []) if code is None or e.get("code") == code]

    def scopes(self):
        """Scope instances: id -> {name, path, begin_ns, end_ns (None if open), tid}."""
        out = {}
        for r in self.rows.get("scope_begin", []):
            out[r["id"]] = {"name": r.get("name_str"), "path": r.get("path_str"),
                            "begin_ns": r["ts_ns"], "end_ns": None, "tid": r.get("tid")}
        for r in self.rows.get("scope_end", []):
            if r["id"] in out:
                out[r["id"]]["end_ns"] = r["ts_ns"]
        return out

    def scope_named(self, name):
        """The single scope instance called name; LogError if none or several."""
        found = [s | {"id": i} for i, s in self.scopes().items() if s["name"] == name]
        if len(found) != 1:
            raise LogError(f"expected one scope named {name!r} in {self.dir}, found {len(found)}")
        return found[0]


def kernel_name(row, prefer_demangled=True):
    """The kernel row's name: demangled when the log has that column."""
    if prefer_demangled and "demangled_str" in row:
        return row["demangled_str"]
    return row.get("name_str", "")
