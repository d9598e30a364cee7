#!/usr/bin/env bash
# Issue 26, call E: (1) Deep with late's order and its CUPTI flush kept out of launches
# (the launch gate; measurement build, GPUFL_DEEP_TRACE=late): SASS counts against ncu,
# stalls beside PcSampling's, its copy and memset rows; (2) the training loop, 6 rounds
# alternated, untraced / Trace / PcSampling (late, flush forced when the pool runs low).
set -u
export LD_LIBRARY_PATH=$PWD/.devbin PYTHONPATH=$PWD/.devbin/python
O=$OUT/e; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/machine.txt 2>&1; date -u >> $O/machine.txt
echo "== deep late gated"
GPUFL_DEEP_TRACE=late timeout 150 tests/gpu/run_sassm_checks.sh /tmp/dl --only deep > $O/deep-late.txt 2>&1; echo "rc=$?"
grep -v '^{"kernel": ' $O/deep-late.txt | tail -12
grep '^{"kernel": ' $O/deep-late.txt | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(d['kernel'], {k:(v['gpufl'],v['ncu'],v['ok']) for k,v in d.items() if isinstance(v,dict)})"
tar -xzf /tmp/dl/sessions.tar.gz -C /tmp/dl 2>/dev/null
for f in $(find /tmp/dl/logs -name device.log); do echo "$f"; grep -h '"trace_stats"' $f | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print({k:d.get(k) for k in ('kernels','copies','memsets','syncs','launches','cupti_dropped','records_incomplete','buffers_refused')})"; grep -o '"code":"pc_sampling_trace[a-z_]*","message":"[^"]*' $f | cut -c1-300; done
echo "== train"
PYTHONUNBUFFERED=1 timeout 280 python3 bench/gpu/pcs_overhead.py --rounds 6 --workloads transformer --variants untraced,trace,pcs18 --steps 40 --log-root /tmp/tl --markdown $O/train.md > $O/train.jsonl 2> $O/train.err; echo "rc=$?"; cat $O/train.md
grep -rh '"trace_stats"' /tmp/tl --include=device.log | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print({k:d.get(k) for k in ('kernels','copies','memsets','launches','cupti_dropped','records_incomplete','buffers_refused')})"
