#!/usr/bin/env bash
# Issue 26, last checks, call A: kernels option on PyTorch and in_loop_sync; late in_loop_sync; Deep with late's order.
set -u
export LD_LIBRARY_PATH=$PWD/.devbin PYTHONPATH=$PWD/.devbin/python
O=$OUT/a; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/machine.txt 2>&1
date -u >> $O/machine.txt
echo "== torch kernels"; 
GPUFL_PC_SAMPLING_TRACE=kernels timeout 200 tests/gpu/run_zero_code_checks.sh $O/zk --only torch --rounds 0 --torch-engine pcsampling > $O/zk.out 2>&1; echo "rc=$?"
tail -25 $O/zk.out
echo "== in_loop_sync kernels"
GPUFL_PC_SAMPLING_TRACE=kernels timeout 120 python3 tests/gpu/check_in_loop_sync.py .devbin/in_loop_sync .devbin/gpufl $O/ils-kernels pcsampling > $O/ils-kernels.txt 2>&1; echo "rc=$?"; tail -30 $O/ils-kernels.txt
echo "== in_loop_sync late"
timeout 120 python3 tests/gpu/check_in_loop_sync.py .devbin/in_loop_sync .devbin/gpufl $O/ils-late pcsampling > $O/ils-late.txt 2>&1; echo "rc=$?"; tail -8 $O/ils-late.txt
echo "== deep none"
timeout 200 tests/gpu/run_sassm_checks.sh $O/deep-none --only deep > $O/deep-none.out 2>&1; echo "rc=$?"; tail -30 $O/deep-none.out
echo "== deep late"
GPUFL_DEEP_TRACE=late timeout 200 tests/gpu/run_sassm_checks.sh $O/deep-late --only deep > $O/deep-late.out 2>&1; echo "rc=$?"; tail -30 $O/deep-late.out
cd $OUT && tar -czf a.tar.gz a && rm -rf a
