#!/usr/bin/env bash
# Issue 26, call F: the training loop, 5 rounds alternated, untraced / Trace / PcSampling
# (late, CUPTI's flush forced when the pool runs low or once per batch hold), committed code.
set -u
export LD_LIBRARY_PATH=$PWD/.devbin PYTHONPATH=$PWD/.devbin/python
O=$OUT/f; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/machine.txt 2>&1; date -u >> $O/machine.txt
nvidia-smi --query-compute-apps=pid,name --format=csv >> $O/machine.txt 2>&1
PYTHONUNBUFFERED=1 timeout 200 python3 bench/gpu/pcs_overhead.py --rounds 5 --workloads transformer --variants untraced,trace,pcs18 --steps 40 --log-root /tmp/tl --markdown $O/train.md > $O/train.jsonl 2> $O/train.err; echo "rc=$?"; cat $O/train.md
grep -rh '"trace_stats"' /tmp/tl --include=device.log | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print({k:d.get(k) for k in ('kernels','copies','memsets','launches','cupti_dropped','records_incomplete','buffers_refused')})"
