#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: gpufl-monitor (the daemon, 100 ms interval) beside
# nvidia-smi while a PyTorch load runs, scraping /metrics and /api/v1/gpus on
# the way; then its session log against nvidia-smi (compare_nvidia_smi.py) and
# its served identity and readings against nvidia-smi's. Writes under OUT_DIR.
# Usage: tests/gpu/run_monitor_check.sh OUT_DIR   (needs .devbin/ from build_for_device.sh)
set -uo pipefail
if [[ "${1:-}" == "--help" || $# -ne 1 ]]; then
  sed -n '3,7p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -eq 1 ]] && exit 0 || exit 2
fi
cd "$(dirname "$0")/../.." || exit 1
out=$1
mkdir -p "$out"
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: not a GPU machine"; exit 77; }
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,enforced.power.limit,compute_cap \
  --format=csv,noheader,nounits >"$out/smi_static.csv"
logs=$(mktemp -d)
port=19464
.devbin/gpufl-monitor --interval-ms 100 --window-s 5 --log-path "$logs" --listen 127.0.0.1:$port \
  2>"$out/monitor_stderr.txt" &
mon=$!
nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,temperature.gpu,power.draw.instant,clocks.sm,clocks.mem \
  --format=csv,noheader,nounits -lms 100 >"$out/smi_log.csv" &
smi=$!
sleep 1
python3 tests/gpu/load.py 3 16 3 >"$out/load.txt" 2>&1 &
load=$!
echo "$load" >"$out/load_pid.txt"
# Into the busy phase: the load's memory is on the GPU (CUDA started), then its
# 3 s idle phase has passed.
for i in $(seq 60); do
  used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | tr -d ' ')
  [[ ${used:-0} -gt 100 ]] && break
  sleep 0.25
done
sleep 4
# During the load: the same moment through the daemon and through nvidia-smi.
curl -s "127.0.0.1:$port/metrics" >"$out/metrics.txt"
curl -s -H 'Accept: application/openmetrics-text; version=1.0.0' "127.0.0.1:$port/metrics" >"$out/metrics_om.txt"
curl -s "127.0.0.1:$port/api/v1/gpus" >"$out/gpus.json"
nvidia-smi --query-gpu=index,utilization.gpu,memory.used,power.draw.instant,temperature.gpu \
  --format=csv,noheader,nounits >"$out/smi_at_scrape.csv"
curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "127.0.0.1:$port/healthz" >"$out/healthz.txt"
for i in $(seq 200); do curl -s -o /dev/null -w '%{time_total}\n' "127.0.0.1:$port/metrics"; done \
  >"$out/scrape_times.txt"
# Per-process utilization beside nvidia-smi pmon (the same driver samples), one reading a second
# for 6 s, and where the daemon's resident memory lies (smaps, per mapping).
nvidia-smi pmon -c 6 -d 1 -s um >"$out/pmon.txt" 2>&1 &
pmon=$!
for i in $(seq 6); do curl -s "127.0.0.1:$port/api/v1/gpus"; echo; sleep 1; done >"$out/proc_api.jsonl"
wait $pmon
cat /proc/$mon/smaps >"$out/monitor_smaps.txt" 2>/dev/null
grep -E '^(VmRSS|RssAnon|RssFile|RssShmem)' /proc/$mon/status >"$out/monitor_status.txt" 2>/dev/null
wait $load
kill -TERM $mon
wait $mon
echo "monitor exit $?" >>"$out/monitor_stderr.txt"
kill $smi
session=$(ls -d "$logs"/*/ | head -1)
cat "$session"/device.log* >"$out/device.log"
python3 tests/gpu/compare_nvidia_smi.py "$session" "$out/smi_static.csv" "$out/smi_log.csv" \
  | tee "$out/compare.txt"
python3 tests/gpu/check_monitor_http.py "$out" | tee "$out/check_http.txt"
