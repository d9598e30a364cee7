#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: a gpufl Monitor session beside nvidia-smi while a
# PyTorch load runs, then the comparison. Writes everything under $OUT.
# Expects the static binaries in .devbin/ (tests/gpu/build_for_device.sh).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-/tmp/gpufl-gpu-out}
mkdir -p "$out"
if ! command -v nvidia-smi >/dev/null; then
  echo "no nvidia-smi: not a GPU machine"; exit 77
fi
nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,enforced.power.limit,compute_cap \
  --format=csv,noheader,nounits > "$out/smi_static.csv"
nvidia-smi -q > "$out/nvidia_smi_q.txt"
logs=$(mktemp -d)
nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,temperature.gpu,power.draw.instant,clocks.sm,clocks.mem \
  --format=csv,noheader,nounits -lms 100 > "$out/smi_log.csv" &
smi=$!
.devbin/monitor_session "$logs" 14 100 "$out/report.txt" > "$out/session_dir.txt" 2> "$out/monitor_stderr.txt" &
mon=$!
sleep 1
python3 tests/gpu/load.py 3 6 3 > "$out/load.txt" 2>&1
wait $mon
kill $smi
session=$(cat "$out/session_dir.txt")
cp "$session"/device.log "$out/"
python3 tests/gpu/compare_nvidia_smi.py "$session" "$out/smi_static.csv" "$out/smi_log.csv" | tee "$out/compare.txt"
