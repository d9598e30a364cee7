#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: zero-code tracing, NVTX ranges and the flight
# recorder (issue 25) against references, judged by check_zero_code.py.
#   program   zero_code_program recorded in-process (gpufl_init, Trace) and by
#             `gpufl trace --engine trace`: the same kernels, copies, syncs
#             and NVTX scopes; loop time alternated over ROUNDS with the
#             untraced program (the overhead of gpufl trace against in-process).
#   torch     train_nvtx.py (PyTorch, torch.cuda.nvtx ranges, no gpufl) under
#             torch.profiler and under `gpufl trace --engine E` (--torch-engine,
#             default trace): kernels, names, GPU time
#             per name and per NVTX range, and the session's insights; then ms/step alternated: untraced,
#             in-process gpufl.init (Trace), gpufl trace.
#   crash     the flight recorder (`gpufl trace --flight-recorder`) of the
#             program dying of SIGSEGV, of abort(), and of a kernel writing an
#             invalid address: the exit status passed through and the snapshot.
#   rate      memory per second of flight recording per engine: train_nvtx.py
#             under `gpufl trace --flight-recorder 600`, a snapshot at its end
#             (SIGUSR2): the snapshot event's in_bytes over the session time
#             (Monitor with host and GPU samples every 100 ms).
# Session logs are packed as OUT/sessions.tar.gz.
# Usage: tests/gpu/run_zero_code_checks.sh OUT [--only program,torch,crash,rate] [--rounds N] [--iters N]
#        [--engines Monitor,Trace,... (rate)] [--rate-steps N] [--torch-engine E]
set -uo pipefail
if [[ $# -lt 1 || $1 == --help || $1 == -h ]]; then
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
out=$(realpath -m "$1"); shift
only=program,torch,crash,rate
rounds=5
iters=3000
engines=Monitor,Trace,PcSampling
rate_steps=300
torch_engine=trace
while [[ $# -gt 0 ]]; do
  case $1 in
    --only) only=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --engines) engines=$2; shift 2 ;;
    --rate-steps) rate_steps=$2; shift 2 ;;
    --torch-engine) torch_engine=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/../.."
repo=$PWD
bin=$repo/.devbin
export LD_LIBRARY_PATH=$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$bin/python
gpufl=$bin/gpufl
mkdir -p "$out/logs"
status=0
step() { echo "== $* ($(date +%T))"; }
want() { [[ ,$only, == *,$1,* ]]; }
# the verdicts of a check_zero_code.py summary, one line each
show() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(("n/a " if c["ok"] is None else "ok  " if c["ok"] else "FAIL"), c["check"], str(c["detail"])[:200]) for c in d.get("checks", [])]; print(d.get("error",""))' "$1"
}
# median of the numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

if want program; then
  step "program: in-process against gpufl trace"
  GPUFL_LOG_PATH=$out/logs/program-inproc timeout 120 "$bin/zero_code_program_inproc" \
    >"$out/program-inproc.json" 2>"$out/program-inproc.err" || status=1
  timeout 120 "$gpufl" trace --engine trace --output "$out/logs/program-traced" -- \
    "$bin/zero_code_program" >"$out/program-traced.json" 2>"$out/program-traced.err" || status=1
  cat "$out/program-inproc.json" "$out/program-traced.json"
  tail -5 "$out/program-traced.err"
  python3 tests/gpu/check_zero_code.py program "$out/logs/program-inproc" \
    "$out/logs/program-traced" >"$out/check-program.json" || status=1
  show "$out/check-program.json"
  step "program: loop time, $rounds rounds alternated"
  for r in $(seq "$rounds"); do
    for v in none inproc trace; do
      case $v in
        none) res=$(timeout 120 "$bin/zero_code_program" --iters "$iters") ;;
        inproc) res=$(GPUFL_LOG_PATH=$out/logs/time-inproc timeout 120 \
                      "$bin/zero_code_program_inproc" --iters "$iters" 2>/dev/null) ;;
        trace) res=$(timeout 120 "$gpufl" trace --engine trace --output "$out/logs/time-trace-$r" \
                     -- "$bin/zero_code_program" --iters "$iters" 2>/dev/null) ;;
      esac
      echo "{\"variant\":\"$v\",\"round\":$r,\"result\":$res}" >>"$out/program-time.jsonl"
    done
  done
  for v in none inproc trace; do
    m=$(grep "\"$v\"" "$out/program-time.jsonl" | sed 's/.*"loop_ms":\([0-9.]*\).*/\1/' | median)
    echo "program loop ms median: $v $m"
  done | tee "$out/program-time.txt"
fi

if want torch; then
  step "torch: torch.profiler reference"
  timeout 300 python3 tests/gpu/profile_script.py "$out/torch-ref.json" tests/gpu/train_nvtx.py \
    >"$out/torch-ref.out" 2>"$out/torch-ref.err" || status=1
  step "torch: gpufl trace"
  timeout 300 "$gpufl" trace --engine "$torch_engine" --output "$out/logs/torch-traced" -- \
    python3 tests/gpu/train_nvtx.py >"$out/torch-traced.out" 2>"$out/torch-traced.err" || status=1
  tail -5 "$out/torch-traced.err"
  sdir=$(dirname "$(find "$out/logs/torch-traced" -name device.log | head -1)")
  "$gpufl" report --format json "$sdir" >"$out/torch-report.json" 2>"$out/torch-report.err" || status=1
  "$gpufl" report "$sdir" >"$out/torch-report.txt" 2>&1 || true
  "$gpufl" insights --format json "$sdir" >"$out/torch-insights.json" 2>"$out/torch-insights.err" || status=1
  "$gpufl" insights "$sdir" >"$out/torch-insights.txt" 2>&1 || true
  python3 tests/gpu/check_zero_code.py torch "$out/torch-ref.json" "$sdir" "$out/torch-report.json" \
    >"$out/check-torch.json" || status=1
  show "$out/check-torch.json"
  step "torch: ms/step, $rounds rounds alternated"
  for r in $(seq "$rounds"); do
    for v in none inproc trace; do
      case $v in
        none) res=$(timeout 200 python3 tests/gpu/train_nvtx.py --steps 60 2>/dev/null | tail -1) ;;
        inproc) res=$(GPUFL_LOG_PATH=$out/logs/ttime-inproc timeout 200 python3 \
                      tests/gpu/train_nvtx.py --steps 60 --gpufl-init 2>/dev/null | tail -1) ;;
        trace) res=$(timeout 200 "$gpufl" trace --engine trace --output "$out/logs/ttime-trace-$r" -- \
                     python3 tests/gpu/train_nvtx.py --steps 60 2>/dev/null | tail -1) ;;
      esac
      echo "{\"variant\":\"$v\",\"round\":$r,\"result\":${res:-null}}" >>"$out/torch-time.jsonl"
    done
  done
  for v in none inproc trace; do
    m=$(grep "\"$v\"" "$out/torch-time.jsonl" | sed -n 's/.*"ms_per_step": *\([0-9.]*\).*/\1/p' | median)
    echo "torch ms/step median: $v $m"
  done | tee "$out/torch-time.txt"
fi

if want crash; then
  for fault in segv abort device; do
    step "crash: flight recorder, fault $fault"
    dir=$out/logs/crash-$fault
    timeout 120 "$gpufl" trace --engine trace --flight-recorder 10 --output "$dir" -- \
      "$bin/zero_code_program" --iters 300 --fault "$fault" >"$out/crash-$fault.out" \
      2>"$out/crash-$fault.err"
    rc=$?
    echo "exit status $rc"; tail -4 "$out/crash-$fault.err"
    case $fault in segv) reason=SIGSEGV ;; *) reason=SIGABRT ;; esac
    python3 tests/gpu/check_zero_code.py snapshot "$dir" "$reason" "$gpufl" \
      >"$out/check-crash-$fault.json" || status=1
    show "$out/check-crash-$fault.json"
    echo "{\"fault\":\"$fault\",\"exit\":$rc}" >>"$out/crash-exit.jsonl"
  done
fi
if want rate; then
  for engine in ${engines//,/ }; do
    step "rate: flight recorder under $engine"
    dir=$out/logs/rate-$engine
    # Monitor samples nothing unless asked: it records host and GPU samples every 100 ms here.
    sampling=()
    [[ $engine == Monitor ]] && sampling=(GPUFL_SYSTEM_SAMPLE_RATE_MS=100 GPUFL_CONTINUOUS_SYSTEM_SAMPLING=1)
    env "${sampling[@]}" timeout 200 "$gpufl" trace --engine "$engine" --flight-recorder 600 --output "$dir" -- \
      python3 tests/gpu/train_nvtx.py --steps "$rate_steps" --raise-usr2 >"$out/rate-$engine.out" \
      2>"$out/rate-$engine.err" || status=1
    python3 - "$dir" "$engine" <<'PY' | tee -a "$out/rate.jsonl"
import glob, json, os, sys
sys.path.insert(0, "tests/gpu")
import gpufl_log
found = []
for log in glob.glob(os.path.join(sys.argv[1], "**", "device.log"), recursive=True):
    s = gpufl_log.Session(os.path.dirname(log))
    for e in s.events():
        if e.get("code") == "flight_recorder_snapshot":
            secs = int(e["ts_ns"]) / 1e9
            found.append({"engine": sys.argv[2], "reason": e.get("reason"),
                          "session_s": round(secs, 2), "in_bytes": e.get("in_bytes"),
                          "bytes_per_s": round(int(e.get("in_bytes") or 0) / secs) if secs else None,
                          "kept_bytes": e.get("kept_bytes"), "kept_rows": e.get("kept_rows"),
                          "kernels": len(s.kernels())})
print(json.dumps(found[0] if len(found) == 1 else {"engine": sys.argv[2], "snapshots": found}))
PY
  done
fi
tar -C "$out" -czf "$out/sessions.tar.gz" logs && rm -rf "$out/logs"
echo "== done ($(date +%T)), status $status"
exit $status
