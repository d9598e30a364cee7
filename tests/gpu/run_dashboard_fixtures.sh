#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: records the dashboard's fixture sessions from real GPU runs, under
# OUT_DIR/fixtures/<name>/ (the session directories, as written):
#   monitor   gpufl-monitor (1 s samples, 10 s windows) over every GPU for ~40 s: a PyTorch
#             load on GPU 0, and on GPU 1 (when there is one) a process that holds memory and
#             computes nothing (allocated but idle)
#   job       two ranks of one job id (GPUFL_JOB_ID), Trace, rank 1 the straggler
#   trace     a PyTorch loop under Trace with CPU stacks, 20 steps
#   deep      tests/gpu/pcs_kernels under Deep (PC samples, SASS metrics and the SASS)
# plus `gpufl report --format json` of each, for the browser tests' expectations.
# Usage: tests/gpu/run_dashboard_fixtures.sh OUT_DIR   (needs .devbin/ from build_for_device.sh)
set -uo pipefail
if [[ "${1:-}" == "--help" || $# -ne 1 ]]; then
  sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -eq 1 ]] && exit 0 || exit 2
fi
cd "$(dirname "$0")/../.." || exit 1
out=$1/fixtures
mkdir -p "$out"
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: not a GPU machine"; exit 77; }
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PWD/.devbin/python:$PWD/tests/gpu
work=$(mktemp -d)
gpus=$(nvidia-smi -L | wc -l)
echo "GPUs: $gpus"

# monitor: the daemon over all GPUs while a load runs on GPU 0 and GPU 1 holds idle memory
# GPUFL_MONITOR_PRELOAD: a library preloaded into the daemon (libsegv_trace.so, to see a crash)
env ${GPUFL_MONITOR_PRELOAD:+LD_PRELOAD=$GPUFL_MONITOR_PRELOAD} \
  .devbin/gpufl-monitor --interval-ms 1000 --window-s 10 --log-path "$work/monitor" \
  --listen 127.0.0.1:19465 2>"$1/monitor_stderr.txt" &
mon=$!
sleep 3
CUDA_VISIBLE_DEVICES=0 python3 tests/gpu/load.py 5 20 5 >"$1/load.txt" 2>&1 &
load=$!
if [[ $gpus -gt 1 ]]; then
  CUDA_VISIBLE_DEVICES=1 python3 -c '
import time, torch
x = torch.empty(8 << 30, dtype=torch.uint8, device="cuda")  # 8 GiB held, no kernels
time.sleep(32)' >"$1/idle_holder.txt" 2>&1 &
  holder=$!
fi

# job: two ranks, concurrently (one per GPU where there are two)
ranks=()
for rank in 0 1; do
  GPUFL_JOB_ID=dash-job-1 python3 tests/gpu/job_workload.py "$work/job" $rank 40 1 \
    >"$1/job_rank$rank.txt" 2>"$1/job_rank$rank.err" &
  ranks+=($!)
done
for p in "${ranks[@]}"; do wait "$p"; echo "job rank rc=$?"; done
wait "$load"
[[ -n ${holder:-} ]] && wait "$holder"
sleep 3
kill -TERM $mon
wait $mon
echo "monitor rc=$?"

# trace with stacks
python3 tests/gpu/upload_workload.py "$work/trace" 20 >"$1/trace.txt" 2>"$1/trace.err"
echo "trace rc=$?"
# deep on our kernels
GPUFL_PROFILING_ENGINE=Deep GPUFL_BACKEND=Nvidia \
  timeout 300 .devbin/pcs_kernels "$work/deep" 20 >"$1/deep.txt" 2>"$1/deep.err"
echo "deep rc=$?"

for kind in monitor job trace deep; do
  n=0
  for d in "$work/$kind"/*/; do
    [[ -d $d ]] || continue
    name=$kind$([[ $kind == job ]] && echo "-rank$n")
    cp -r "$d" "$out/$name"
    .devbin/gpufl report --format json "$d" >"$out/$name.report.json" 2>"$out/$name.report.err"
    echo "$name: $(basename "$d") report rc=$? $(du -sh "$d" | cut -f1)"
    n=$((n + 1))
  done
done
rm -rf "$work"
