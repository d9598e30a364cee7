# SPDX-License-Identifier: Apache-2.0
# The encodings weighed for compact kernel lines, each checked lossless, on a file of plain
# kernel lines (bench_log_bytes KERNELS DIR writes one): python3 options.py kernel-v1.log
# (run from the repository root).
import json, gzip, sys, copy
sys.path.insert(0, 'tests/tools'); import gpufl_compact as g
recs = [json.loads(l) for l in open(sys.argv[1])]
n = sum(len(r["start_ns"]) for r in recs)
K = g.CODES[("kernel", 2)]
keyed = {c: v for c, v in K.items() if v[0] == "keyed"}
ids = {"correlation": ("delta", None, None), "scope": ("delta", None, None), "external_id": ("delta", None, None)}
# DELTA on start with no key = "from previous start": express as delta
opts = [
    ("scalars only", {}),
    ("+ config-fixed columns once per config", dict(keyed)),
    ("+ start delta, end duration, launch before start, id deltas", dict(keyed, start_ns=("delta", None, None), end_ns=("after", "start_ns", None), launch_ns=("before", "start_ns", None), **ids)),
    ("start after the previous row's end, launch delta", dict(keyed, start_ns=("from_prev", "end_ns", None), end_ns=("after", "start_ns", None), launch_ns=("delta", None, None), **ids)),
    ("start after its stream's last end, duration change per config (kept)", dict(K)),
]
def size(lines):
    b = ("\n".join(lines) + "\n").encode()
    return len(b) / n, len(gzip.compress(b, 1, mtime=0)) / n, len(gzip.compress(b, 6, mtime=0)) / n
print("| encoding | raw B/kernel | gzip-1 | gzip-6 |\n|---|---|---|---|")
print("| plain (kernel v 1) | %.1f | %.2f | %.2f |" % size([json.dumps(r, separators=(",", ":")) for r in recs]))
for name, codes in opts:
    g.CODES[("kernel", 2)] = codes
    lines = [json.dumps(g.encode(r, 2), separators=(",", ":")) for r in recs]
    for l, r in zip(lines, recs):  # each option is lossless
        d = g.decode(json.loads(l)); d.pop("v"); r2 = dict(r); r2.pop("v"); assert d == r2
    print("| %s | %.1f | %.2f | %.2f |" % ((name,) + size(lines)))
