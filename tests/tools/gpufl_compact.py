# SPDX-License-Identifier: Apache-2.0
"""Compact batch lines (docs/log-format.md, "Compact batches") decoded into the plain lines they
stand for: the Python twin of lib/util/colcode.c for the test and GPU-check scripts, which read
logs with the standard library. Keep CODES in step with colcode.c.
"""

# In declaration order: a code refers to columns before it in the row, or to earlier rows.
# (code, reference, key): with a key, "the row before" is the last earlier row with the same
# key value, and a key's first row counts from 0. A key of two columns is their key_pair().
# "high_keyed" (external_id): the value less the key's last high bits (above bit 40) joined to
# the row before's low 40 bits.
_IDS = {"correlation": ("delta", None, None), "scope": ("delta", None, None)}
_STREAM = dict({"start_ns": ("from_prev", "end_ns", "stream"),
                "end_ns": ("after", "start_ns", None)}, **_IDS)
_SYNC = dict({"start_ns": ("from_prev", "end_ns", None),
              "end_ns": ("after", "start_ns", None)}, **_IDS)
_KERNEL = dict({"start_ns": ("from_prev", "end_ns", "stream"),
                "end_ns": ("after", "start_ns", ("config", "grid_x"))}, **_IDS,
               launch_ns=("delta", None, None), external_id=("high_keyed", None, "config"),
               **{c: ("keyed", "config", None) for c in (
                   "name", "demangled", "registers", "static_smem_bytes", "dynamic_smem_bytes",
                   "local_bytes_per_thread", "block_x", "block_y", "block_z", "grid_x", "grid_y",
                   "grid_z", "stream", "tid")})
# (type, v) -> {column: (code, reference)}
CODES = {("kernel", 2): _KERNEL, ("copy", 3): _STREAM, ("memset", 3): _STREAM, ("sync", 3): _SYNC}


MAX_ROWS = 4096  # GPUFL_COLCODE_MAX_ROWS
_M64 = (1 << 64) - 1
_LOW = 40  # the bits of external_id's counter (PyTorch's ids are seq << 40 | counter)


def _split(v):
    """(high bits, low 40 bits) of an int64: v == high << 40 | low, high floored."""
    return v >> _LOW, v & ((1 << _LOW) - 1)


def _predict(hi, lo):
    return (hi << _LOW) | lo


def key_pair(k1, k2):
    """gpufl__colcode_key_pair: one int64 of two key cells (None: null)."""
    a, b = (0x2545F4914F6CDD1D if k is None else _int(k) & _M64 for k in (k1, k2))
    h = (((a * 0x9E3779B97F4A7C15) & _M64) ^ b) * 0xBF58476D1CE4E5B9 & _M64
    return h - (1 << 64) if h >> 63 else h


def _key(rec, key, r):
    """Row r's key value: None without a key or for a key column the line lacks."""
    if isinstance(key, tuple):
        return key_pair(*(_key(rec, k, r) for k in key))
    return rec[key][r] if key in rec else None


class CompactError(ValueError):
    """A compact line whose encoding is malformed."""


def _int(v):
    return int(v) if isinstance(v, str) else v


def decode(rec):
    """rec (a parsed line) as its plain form, in place; other lines are returned as they are."""
    codes = CODES.get((rec.get("type"), rec.get("v")))
    if codes is None:
        return rec
    lengths = {len(v) for k, v in rec.items()
               if isinstance(v, list) and codes.get(k, ("",))[0] != "keyed"}
    if len(lengths) != 1:
        raise CompactError("a compact %s line needs column arrays of one length" % rec["type"])
    rows = lengths.pop()
    if rows > MAX_ROWS:
        raise CompactError("a compact %s line of %d rows (at most %d)"
                           % (rec["type"], rows, MAX_ROWS))
    coded = set()
    for k, v in list(rec.items()):
        if k in ("type", "v") or isinstance(v, (list, dict)):
            if isinstance(v, list) and k in codes:
                coded.add(k)
                rec[k] = list(v)
            continue
        rec[k] = [v] * rows  # a scalar: every row's value, never coded
    for col in coded:
        code, ref, key = codes[col]
        if code == "keyed" and len(rec[col]) == rows:
            continue  # plain: a key per row, or no key to go by
        if ref is not None and ref not in rec:
            raise CompactError("column %s needs column %s" % (col, ref))
        if code != "keyed" and len(rec[col]) != rows:
            raise CompactError("column %s has %d values, the line %d rows"
                               % (col, len(rec[col]), rows))
    # keyed columns first: a relative code may key on one (end_ns on grid_x)
    for col in coded:
        code, ref, _ = codes[col]
        vals = rec[col]
        if code != "keyed" or len(vals) == rows:
            continue
        if len(vals) > rows:
            raise CompactError("column %s has %d values, more than the line's %d rows"
                               % (col, len(vals), rows))
        count = {}
        for key in rec[ref]:
            count[key] = count.get(key, 0) + 1
        first, own, it, out = {}, {}, iter(vals), []
        for key in rec[ref]:
            if key not in first:
                v = first[key] = next(it, it)
                if v is it:
                    raise CompactError("column %s has too few values" % col)
                if v is not None and _int(v) < 0:  # an exception: -n, then the key's n rows
                    if -_int(v) != count[key]:
                        raise CompactError("column %s: marker %d for a key of %d rows"
                                           % (col, _int(v), count[key]))
                    own[key] = [next(it, it) for _ in range(count[key])]
                    if it in own[key]:
                        raise CompactError("column %s has too few values" % col)
                    own[key].reverse()
            out.append(own[key].pop() if key in own else first[key])
        if next(it, it) is not it:
            raise CompactError("column %s has too many values" % col)
        rec[col] = out
    rel = [c for c in codes if c in coded and codes[c][0] != "keyed"]
    last = {c: {} for c in rel}  # column -> {key value: running base}
    for r in range(rows):
        for col in rel:
            code, ref, key = codes[col]
            k = _key(rec, key, r)
            v = rec[col][r]
            if v is not None and code == "high_keyed":
                lo = last[col].get("lo", 0)
                v = _int(v) + _predict(last[col].get(k, 0), lo)
                if not -2**63 <= v < 2**63:
                    raise CompactError("row %d: %s decodes past 64 bits" % (r, col))
                last[col][k], last[col]["lo"] = _split(v)
                rec[col][r] = v
            elif v is not None:
                v, base = _int(v), last[col].get(k, 0)
                if code == "after":
                    base = base if key else 0  # unkeyed: the duration itself
                    if rec[ref][r] is None:
                        raise CompactError("row %d: %s is relative to a null %s" % (r, col, ref))
                    last[col][k] = base + v
                    v = _int(rec[ref][r]) + base + v
                else:
                    v = base + v
                    if code == "delta":
                        last[col][k] = v
                rec[col][r] = v
        for col in rel:
            code, ref, key = codes[col]
            if code == "from_prev" and rec[ref][r] is not None:
                last[col][_key(rec, key, r)] = _int(rec[ref][r])
    return rec


MAX_KEYS = 256  # GPUFL_COLCODE_MAX_KEYS


def encode(rec, version):
    """A plain batch line (a dict, columns in order) as the compact line of `version`, as the
    writer (lib/core/wire.c) encodes it: a column of one value as a scalar (never the first),
    else as its code says, a keyed column plain where a key has two values or keys are many."""
    codes = CODES[(rec["type"], version)]
    out = {"type": rec["type"], "v": version}
    cols = [k for k in rec if k not in ("type", "v")]
    rows = len(rec[cols[0]])
    for i, col in enumerate(cols):
        vals = rec[col]
        if i > 0 and rows > 1 and all(v == vals[0] for v in vals):
            out[col] = vals[0]
            continue
        code, ref, key = codes.get(col, (None, None, None))
        if code is None:
            out[col] = vals
        elif code == "keyed" and ref not in rec:
            out[col] = vals
        elif code == "keyed":
            out[col] = _keyed(rec[ref], vals)
        elif code == "high_keyed":
            last, lo, coded = {}, 0, []
            for r, v in enumerate(vals):
                if v is None:
                    coded.append(None)
                    continue
                k, v = _key(rec, key, r), _int(v)
                coded.append(v - _predict(last.get(k, 0), lo))
                last[k], lo = _split(v)
            out[col] = coded
        else:
            last, coded = {}, []
            for r, v in enumerate(vals):
                k = _key(rec, key, r)
                if v is not None:
                    v, base = _int(v), last.get(k, 0)
                    if code == "after":
                        base = base if key else 0  # unkeyed: the duration itself
                        diff = v - _int(rec[ref][r])
                        coded.append(diff - base)
                        last[k] = diff
                    else:
                        coded.append(v - base)
                        if code == "delta":
                            last[k] = v
                else:
                    coded.append(None)
                if code == "from_prev" and rec[ref][r] is not None:
                    last[k] = _int(rec[ref][r])
            out[col] = coded
    return out


def _keyed(keys, vals):
    """A keyed column as the writer writes it: each key's value once, in order of first
    appearance; a key whose rows disagree (or whose value is negative) as -n and its n rows'
    values; the plain column past MAX_KEYS keys or unless that is fewer entries than rows."""
    rows = {}
    for k, v in zip(keys, vals):
        rows.setdefault(k, []).append(v)
    if len(rows) > MAX_KEYS:
        return vals
    out = []
    for own in rows.values():
        v = own[0]
        if all(x == v for x in own) and (v is None or _int(v) >= 0):
            out.append(v)
        else:
            out += [-len(own)] + own
    return out if len(out) < len(vals) else vals


def _fits(rec, codes):
    """Whether every coded column holds int64 values only (what the writer's cells hold): a
    hand-written id past 2^63 keeps its line plain."""
    return all(v is None or -2**63 <= _int(v) < 2**63
               for col in codes if isinstance(rec.get(col), list) for v in rec[col])


def _main(argv):
    """gpufl_compact.py SRC DST: the session in SRC with its plain kernel, copy, memset and
    sync lines rewritten as compact lines into DST (copy, memset and sync only from v 2: a
    v 1 line holds CUPTI's numbers and stays as it is; see _fits)."""
    import json
    import os
    src, dst = argv
    os.makedirs(dst, exist_ok=True)
    newest = {t: v for (t, v) in CODES}
    for name in sorted(os.listdir(src)):
        with open(os.path.join(src, name), encoding="utf-8") as f:
            lines = f.read().splitlines()
        with open(os.path.join(dst, name), "w", encoding="utf-8") as f:
            for line in lines:
                rec = json.loads(line)
                t, v = rec.get("type"), rec.get("v")
                if t in newest and v == newest[t] - 1 and _fits(rec, CODES[(t, newest[t])]):
                    line = json.dumps(encode(rec, newest[t]), separators=(",", ":"))
                f.write(line + "\n")


if __name__ == "__main__":
    import sys
    _main(sys.argv[1:])
