#!/usr/bin/env bash
# Issue 26, last checks, call B: GPU time per kernel name against torch.profiler under Trace,
# under pcsampling+kernels (twice) and at a longer period; late (default) on the training loop
# against untraced and Trace; fidelity late vs none.
set -u
export LD_LIBRARY_PATH=$PWD/.devbin PYTHONPATH=$PWD/.devbin/python
O=$OUT/b; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/machine.txt 2>&1
date -u >> $O/machine.txt
zk() { echo "== torch $1"; timeout 150 tests/gpu/run_zero_code_checks.sh $O/$1 --only torch --rounds 0 --torch-engine $2 > $O/$1.out 2>&1; grep -E '^(ok|FAIL) ' $O/$1.out | head -4; }
zk zk-trace trace
GPUFL_PC_SAMPLING_TRACE=kernels zk zk-kernels2 pcsampling
GPUFL_PC_SAMPLING_TRACE=kernels GPUFL_PC_SAMPLING_PERIOD=22 zk zk-kernels-p22 pcsampling
zk zk-trace2 trace
echo "== train"
timeout 300 python3 bench/gpu/pcs_overhead.py --rounds 3 --workloads transformer --variants untraced,trace,pcs18 --steps 40 --log-root $O/logs --markdown $O/train.md > $O/train.jsonl 2> $O/train.err; echo "rc=$?"; cat $O/train.md; tail -3 $O/train.err
echo "== candidates"
timeout 200 tests/gpu/run_pcs_candidates.sh $O/cand --rounds 2 --only refs,kernels --modes late,none --budget 190 > $O/cand.out 2>&1; echo "rc=$?"; tail -30 $O/cand/summary.md
tar -czf $O/logs.tar.gz -C $O logs 2>/dev/null; rm -rf $O/logs
cd $OUT && tar -czf b.tar.gz b && rm -rf b
