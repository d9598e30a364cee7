#!/usr/bin/env bash
# Issue 26, call C (small outputs): the training loop's session stats under late, and the
# per-name GPU time checks' raw files (Trace and pcsampling+kernels).
set -u
export LD_LIBRARY_PATH=$PWD/.devbin PYTHONPATH=$PWD/.devbin/python
O=$OUT/c; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/machine.txt 2>&1
date -u >> $O/machine.txt
zk() { echo "== torch $1"; timeout 150 tests/gpu/run_zero_code_checks.sh /tmp/$1 --only torch --rounds 0 --torch-engine $2 > /tmp/$1.out 2>&1; grep -E '^(ok|FAIL) ' /tmp/$1.out | head -4; cp /tmp/$1/check-torch.json $O/$1-check.json; cp /tmp/$1/torch-insights.json $O/$1-insights.json 2>/dev/null; }
zk zk-trace trace
GPUFL_PC_SAMPLING_TRACE=kernels zk zk-kernels pcsampling
zk zk-late pcsampling
echo "== train"
PYTHONUNBUFFERED=1 timeout 240 python3 bench/gpu/pcs_overhead.py --rounds 3 --workloads transformer --variants untraced,trace,pcs18 --steps 40 --log-root /tmp/tl --markdown $O/train.md > $O/train.jsonl 2> $O/train.err; echo "rc=$?"; cat $O/train.md
grep -rh '"trace_stats"\|"pc_sampling_stats"' /tmp/tl --include=device.log | cut -c1-2000 > $O/train-stats.jsonl
python3 - $O/train-stats.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l)
    if d.get('type')=='trace_stats': print({k:d.get(k) for k in ('kernels','copies','memsets','syncs','launches','cupti_dropped','records_incomplete','buffers_refused') if k in d})
PY
ls -la $O
