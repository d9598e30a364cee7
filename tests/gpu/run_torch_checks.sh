#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The gpufl Python package with PyTorch on the GPU machine (torch_checks.py):
# the in-loop sync insight naming the Python line and aten operations on
# kernels, in both import orders; the operations against torch.profiler's;
# and the cost of Python stacks and operation tagging, side by side; and
# three PcSampling sessions one after another in one process.
# Usage: tests/gpu/run_torch_checks.sh OUT_DIR [ROUNDS] [DEEP_RUNS]
# DEEP_RUNS: that many short runs of the loop under the Deep engine, each in
# its own process, to catch crashes at start-up and shutdown (default 0).
# Needs .devbin/ from build_for_device.sh (libgpufl, the Python package).
set -uo pipefail
if [[ "${1:-}" == "--help" || $# -lt 1 ]]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "$0")/../.."
out=$1
rounds=${2:-3}
deep_runs=${3:-0}
mkdir -p "$out"
export PYTHONPATH=$PWD/.devbin/python LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
py=python3
status=0
for order in gpufl-first torch-first; do
  dir=$out/$order
  echo "== run ($order)"
  $py tests/gpu/torch_checks.py run "$dir" --order "$order" >"$out/run-$order.json" 2>"$out/run-$order.err" || status=1
  cat "$out/run-$order.json"
done
echo "== run (no gpufl.torch.enable(): syncs only)"
$py tests/gpu/torch_checks.py run "$out/no-ops" --order torch-first --no-ops >"$out/run-no-ops.json" \
  2>"$out/run-no-ops.err" || status=1
echo "== profile"
$py tests/gpu/torch_checks.py profile "$out/gpufl-first" 2>"$out/profile.err" || status=1
for order in gpufl-first torch-first no-ops; do
  extra=()
  [[ $order == gpufl-first ]] && extra=(--against-profiler)
  [[ $order == no-ops ]] && extra=(--no-ops)
  echo "== check ($order)"
  $py tests/gpu/torch_checks.py check "$out/$order" "${extra[@]}" >"$out/check-$order.json" \
    2>"$out/check-$order.err" || status=1
  $py -c "import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps({k: r.get(k) for k in ('checks','in_loop_titles','sync_sites','kernels','kernels_tagged','against_profiler','trace_stats')}, default=str))" "$out/check-$order.json" || status=1
done
echo "== time ($rounds rounds)"
for r in $(seq "$rounds"); do
  for v in none trace stacks ops both; do
    $py tests/gpu/torch_checks.py time "$v" --dir "$out/time" >>"$out/time.jsonl" 2>>"$out/time.err" || status=1
  done
done
$py - "$out/time.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["variant"], []).append(r["ms_per_step"])
base = statistics.median(by.get("none", [float("nan")]))
for v, ms in by.items():
    m = statistics.median(ms)
    print("%-7s median %.3f ms/step  x%.3f  runs %s" % (v, m, m / base, ["%.3f" % x for x in ms]))
PY
if [[ $deep_runs -gt 0 ]]; then
  echo "== Deep, $deep_runs runs"
  crashed=0
  for r in $(seq "$deep_runs"); do
    $py tests/gpu/torch_checks.py time both --engine Deep --steps 3 --dir "$out/deep" \
      >>"$out/deep.jsonl" 2>>"$out/deep.err"
    rc=$?
    [[ $rc != 0 ]] && { crashed=$((crashed + 1)); echo "run $r: exit $rc"; }
  done
  echo "Deep: $crashed of $deep_runs runs failed"
  [[ $crashed == 0 ]] || status=1
fi
echo "== three PcSampling sessions in one process"
$py tests/gpu/torch_checks.py reinit "$out/reinit" >"$out/reinit.json" 2>"$out/reinit.err" || status=1
$py -c "import json,sys; print(json.load(open(sys.argv[1]))['checks'])" "$out/reinit.json" || status=1
echo "torch checks: $([[ $status == 0 ]] && echo passed || echo FAILED)"
exit $status
