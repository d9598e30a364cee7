#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: Deep's periodic PC-sampling drain against first
# launches (tests/gpu/deep_drain_stress.cu), RUNS processes of each of two
# library builds, interleaved: "gated" (as built: drains pass the launch
# gate) and "ungated" (-DGPUFL_DIAGNOSE_DEEP_UNGATED: drains whenever due,
# as Deep did before the gate; CUPTI crashed there). Each run: Deep, a drain
# every 10 ms, THREADS threads making 512 first launches at once. Writes per
# run its exit status and the session's pc_sampling_stats and trace_stats
# (runs.jsonl), and prints the crashes and drains of each build.
# Needs .devbin from tests/gpu/build_for_device.sh.
# Usage: tests/gpu/run_deep_drain.sh OUTDIR [RUNS (8)] [THREADS (4)] [ROUNDS (3)]
set -uo pipefail
if [[ $# -lt 1 || $1 == --help || $1 == -h ]]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
out=$1
runs=${2:-8}
threads=${3:-4}
rounds=${4:-3}
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$out"; out=$(cd "$out" && pwd)
: > "$out/runs.jsonl"
for r in $(seq "$runs"); do
  for variant in gated ungated; do
    bin=.devbin/deep_drain_stress
    [[ $variant == ungated ]] && bin=.devbin/deep_drain_stress_ungated
    log=$out/$variant-$r
    GPUFL_PROFILING_ENGINE=Deep GPUFL_BACKEND=Nvidia GPUFL_PC_SAMPLING_DRAIN_MS=10 \
      timeout 180 "$bin" "$log" "$threads" "$rounds" > "$log.out" 2> "$log.err"
    rc=$?
    session=$(sed -n 's/.*"session":"\([^"]*\)".*/\1/p' "$log.out")
    pcs='null'; trace='null'
    if [[ -n $session && -f $session/device.log ]]; then
      pcs=$(grep -h '"type":"pc_sampling_stats"' "$session/device.log" | tail -1)
      trace=$(grep -h '"type":"trace_stats"' "$session/device.log" | tail -1)
    fi
    echo "{\"variant\":\"$variant\",\"run\":$r,\"rc\":$rc,\"run_line\":$(head -1 "$log.out" | grep . || echo null),\"pc_sampling_stats\":${pcs:-null},\"trace_stats\":${trace:-null}}" >> "$out/runs.jsonl"
    echo "$variant run $r: exit $rc"
  done
done
python3 - "$out/runs.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for v in ("gated", "ungated"):
    mine = [r for r in rows if r["variant"] == v]
    bad = [r["rc"] for r in mine if r["rc"] != 0]
    pcs = [r["pc_sampling_stats"] or {} for r in mine]
    tr = [r["trace_stats"] or {} for r in mine]
    print("%-8s runs %d, failed %d %s; drains %s; deferred %s; buffer_full %s; gate waits %s; "
          "overruns %s" % (v, len(mine), len(bad), bad, [p.get("drains") for p in pcs],
                           [p.get("drains_deferred") for p in pcs],
                           [p.get("buffer_full") for p in pcs], [t.get("gate_waits") for t in tr],
                           [t.get("gate_overruns") for t in tr]))
PY
