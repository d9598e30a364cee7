#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: gpufl-monitor (libsegv_trace.so preloaded, core dumps allowed) for
# SECONDS (default 60) while short-lived CUDA processes start and exit on every GPU (the driver
# API alone, PyTorch, PyTorch under Trace with a job id, memory held; some killed mid-run) and
# scrapers hammer /metrics (both formats), /api/v1/gpus and /healthz. The case the daemon died in
# on two H200s (tests/gpu/run_dashboard_fixtures.sh, exit 139), made denser and longer.
# Writes under OUT_DIR: monitor_stderr.txt (a fatal signal's line and backtrace), crash.txt (the
# same, from the session directory), logs/ (the sessions), scrapes.txt, workers.txt and
# verdict.txt (PASS or FAIL and why). Exit 0 on PASS, 1 on FAIL, 77 without a GPU.
# Usage: tests/gpu/run_monitor_churn.sh OUT_DIR [SECONDS] [INTERVAL_MS]
#        (needs .devbin/ from tests/gpu/build_for_device.sh)
set -uo pipefail
if [[ "${1:-}" == "--help" || $# -lt 1 || $# -gt 3 ]]; then
  sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'
  [[ "${1:-}" == "--help" ]] && exit 0 || exit 2
fi
cd "$(dirname "$0")/../.." || exit 1
out=$1
seconds=${2:-60}
interval_ms=${3:-1000}
mkdir -p "$out"
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: not a GPU machine"; exit 77; }
[[ -x .devbin/gpufl-monitor && -f .devbin/libsegv_trace.so ]] ||
  { echo "no .devbin/gpufl-monitor or libsegv_trace.so: run tests/gpu/build_for_device.sh"; exit 2; }
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PWD/.devbin/python:$PWD/tests/gpu
gpus=$(nvidia-smi -L | wc -l)
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
  echo "seconds=$seconds interval_ms=$interval_ms"; } >"$out/machine.txt"
work=$(mktemp -d)
port=19466

ulimit -c unlimited 2>/dev/null
LD_PRELOAD=$PWD/.devbin/libsegv_trace.so .devbin/gpufl-monitor --interval-ms "$interval_ms" \
  --window-s 10 --log-path "$work/logs" --listen 127.0.0.1:$port 2>"$out/monitor_stderr.txt" &
mon=$!
for _ in $(seq 100); do
  grep -q "logs in" "$out/monitor_stderr.txt" 2>/dev/null && break
  sleep 0.1
done
end=$((SECONDS + seconds))

# Scrapers: each writes one line per request (its HTTP status; 000 when none came).
scrape() { # name, path, [header]
  local name=$1 path=$2 header=${3:-}
  while ((SECONDS < end)) && kill -0 "$mon" 2>/dev/null; do
    curl -s -o /dev/null -m 10 ${header:+-H "$header"} -w '%{http_code}\n' \
      "http://127.0.0.1:$port$path" >>"$work/scrape_$name.txt"
  done
}
scrape metrics1 /metrics & scrapers=($!)
scrape metrics2 /metrics & scrapers+=($!)
scrape openmetrics /metrics 'Accept: application/openmetrics-text; version=1.0.0' & scrapers+=($!)
scrape gpus1 /api/v1/gpus & scrapers+=($!)
scrape gpus2 /api/v1/gpus & scrapers+=($!)
scrape healthz /healthz & scrapers+=($!)

# Churners: per GPU, three loops that each start one short-lived process after another; one in
# five is killed with SIGKILL mid-run (its context torn down by the driver, not by the process).
churn() { # gpu, loop
  local gpu=$1 loop=$2 n=0 modes=(driver driver torch trace hold driver)
  while ((SECONDS < end)) && kill -0 "$mon" 2>/dev/null; do
    local mode=${modes[$(((n + loop) % ${#modes[@]}))]}
    local life=$((RANDOM % 3)).$((RANDOM % 10))
    CUDA_VISIBLE_DEVICES=$gpu GPUFL_JOB_ID=churn-$gpu-$loop \
      python3 tests/gpu/churn_worker.py "$mode" "$life" "$work/trace" \
      >>"$work/worker_${gpu}_$loop.txt" 2>&1 &
    local w=$!
    if ((RANDOM % 5 == 0)); then
      sleep 0.$((RANDOM % 10))
      kill -KILL "$w" 2>/dev/null
    fi
    wait "$w"
    echo "gpu $gpu loop $loop mode $mode life $life rc $?" >>"$work/workers.txt"
    n=$((n + 1))
  done
}
churners=()
for ((g = 0; g < gpus; g++)); do
  for loop in 0 1 2; do
    churn "$g" "$loop" 2>/dev/null & # no "Killed" notes from bash
    churners+=($!)
  done
done

while ((SECONDS < end)) && kill -0 "$mon" 2>/dev/null; do sleep 1; done
wait "${churners[@]}" 2>/dev/null
wait "${scrapers[@]}" 2>/dev/null
alive=0
kill -0 "$mon" 2>/dev/null && alive=1
if ((alive)); then
  kill -TERM "$mon"
fi
wait "$mon"
rc=$?

# What happened: the requests per status, the processes started, the sessions.
cat "$work"/scrape_*.txt 2>/dev/null | sort | uniq -c >"$out/scrapes.txt"
cp "$work/workers.txt" "$out/workers.txt" 2>/dev/null
mkdir -p "$out/logs"
cp -r "$work/logs/." "$out/logs/" 2>/dev/null
find "$work/logs" -name crash.txt -exec cat {} + >"$out/crash.txt" 2>/dev/null
[[ -s $out/crash.txt ]] || rm -f "$out/crash.txt"
started=$(wc -l <"$out/workers.txt" 2>/dev/null || echo 0)
described=$(cat "$work"/logs/*/device.log* 2>/dev/null | grep -c '"type": *"process_info"')
requests=$(cat "$work"/scrape_*.txt 2>/dev/null | wc -l)
bad=$(cat "$work"/scrape_*.txt 2>/dev/null | grep -cvE '^(200|503)$')
summary="$started GPU processes started, $described described by the daemon, $requests requests ($bad not answered 200/503)"
if ((alive && rc == 0 && bad == 0 && described > 0)); then
  echo "PASS: the daemon lived ${seconds} s of churn and exited 0: $summary" >"$out/verdict.txt"
else
  {
    echo "FAIL: alive at the end: $alive, exit status $rc: $summary"
    ((described == 0)) && echo "no GPU process reached the daemon: the churn did not run (workers.txt)"
    grep -E "fatal signal|segv_trace|AddressSanitizer|runtime error" "$out/monitor_stderr.txt"
  } >"$out/verdict.txt"
fi
cat "$out/verdict.txt"
rm -rf "$work"
[[ $(head -c 4 "$out/verdict.txt") == PASS ]]
