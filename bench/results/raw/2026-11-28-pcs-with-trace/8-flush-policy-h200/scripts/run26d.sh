#!/usr/bin/env bash
# Issue 26, call D: (1) where Deep hangs with late's order (measurement build with
# GPUFL_DEEP_TRACE=late): every thread's stack from cuda-gdb attached after 25 s;
# (2) the training loop under late with the flush forced only when the pool runs low
# or once per batch hold: trace_stats against Trace's.
set -u
export LD_LIBRARY_PATH=$PWD/.devbin PYTHONPATH=$PWD/.devbin/python
O=$OUT/d; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/machine.txt 2>&1; date -u >> $O/machine.txt
echo "== deep hang"
GPUFL_DEEP_TRACE=late GPUFL_PROFILING_ENGINE=Deep GPUFL_BACKEND=Nvidia .devbin/pcs_kernels /tmp/deeplogs 20 > $O/deep.txt 2> $O/deep.err &
pid=$!
sleep 25
if kill -0 $pid 2>/dev/null; then
  echo "still running after 25 s: attaching"
  timeout 90 cuda-gdb -p $pid -batch -ex "set pagination off" -ex "info threads" -ex "thread apply all bt 30" > $O/deep-bt.txt 2>&1
  echo "cuda-gdb rc=$?"; kill -9 $pid
else
  echo "finished"; wait $pid; echo "rc=$?"
fi
cat $O/deep.txt; tail -5 $O/deep.err
grep -E '^#|^\* |^  [0-9]+ +Thread|Thread 0x' $O/deep-bt.txt | cut -c1-220 | head -120
echo "== train"
PYTHONUNBUFFERED=1 timeout 300 python3 bench/gpu/pcs_overhead.py --rounds 3 --workloads transformer --variants untraced,trace,pcs18 --steps 40 --log-root /tmp/tl --markdown $O/train.md > $O/train.jsonl 2> $O/train.err; echo "rc=$?"; cat $O/train.md
grep -rh '"trace_stats"\|"pc_sampling_stats"' /tmp/tl --include=device.log | cut -c1-3000 > $O/train-stats.jsonl
python3 - $O/train-stats.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l)
    if d.get('type')=='trace_stats': print({k:d.get(k) for k in ('kernels','copies','memsets','syncs','launches','cupti_dropped','records_incomplete','buffers_refused') if k in d})
PY
ls -la $O
