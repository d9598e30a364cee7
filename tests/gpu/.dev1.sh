export LD_LIBRARY_PATH=$PWD/.devbin PYTHONPATH=$PWD/.devbin/python
nvidia-smi -L > $OUT/machine.txt; nvidia-smi --query-gpu=driver_version --format=csv >> $OUT/machine.txt
t0=$(date +%s)
timeout 330 bash tests/gpu/run_torch_checks.sh $OUT/torch 3 8 > $OUT/torch.txt 2>&1; echo "torch rc=$? $(( $(date +%s)-t0 ))s" >> $OUT/summary.txt
timeout 60 python3 tests/gpu/range_cases.py $OUT/range > $OUT/range_cases.txt 2>&1; echo "range_cases rc=$? $(( $(date +%s)-t0 ))s" >> $OUT/summary.txt
GPUFL_DISABLED=1 timeout 60 ncu --csv --page raw --print-units base --clock-control none --metrics breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed,breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed .devbin/pcs_kernels $OUT/ncu-logs 1 > $OUT/ncu_breakdown.csv 2> $OUT/ncu_breakdown.err; echo "ncu rc=$? $(( $(date +%s)-t0 ))s" >> $OUT/summary.txt
timeout 100 python3 tests/gpu/torch_checks.py time trace --engine Deep --steps 300 --dir $OUT/deeplong > $OUT/deeplong.txt 2>&1; echo "deeplong rc=$? $(( $(date +%s)-t0 ))s" >> $OUT/summary.txt
grep -h '"pc_sampling_stats"\|"sass_metrics_stats"\|"trace_stats"' -r $OUT/deeplong --include=*.log | cut -c1-1500 > $OUT/deeplong_stats.txt
rm -rf $OUT/deeplong/*/*/*.log.* 2>/dev/null
du -sh $OUT/* >> $OUT/summary.txt
cat $OUT/summary.txt
