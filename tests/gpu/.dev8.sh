export LD_LIBRARY_PATH=$PWD/.devbin
timeout 200 bash tests/gpu/run_range_checks.sh $OUT/range > $OUT/range.txt 2>&1; echo "range rc=$?" | tee -a $OUT/summary.txt
# The cost of the engine with its switching budget: pcs_kernels, 16 scopes of 40 launches per kernel.
for r in 1 2; do for v in off 0 5 100; do
  t0=$(date +%s.%N)
  if [ $v = off ]; then GPUFL_DISABLED=1 PCS_KERNELS_SCOPES=16 timeout 90 .devbin/pcs_kernels $OUT/cost-$v 40 > $OUT/cost-$v-$r.txt 2>&1
  else GPUFL_RANGE_PROFILER_SWITCH_PCT=$v GPUFL_PROFILING_ENGINE=RangeProfiler GPUFL_BACKEND=Nvidia PCS_KERNELS_SCOPES=16 timeout 90 .devbin/pcs_kernels $OUT/cost-$v 40 > $OUT/cost-$v-$r.txt 2>&1; fi
  rc=$?; t1=$(date +%s.%N); echo "cost round $r pct $v rc=$rc wall $(awk "BEGIN{print $t1 - $t0}") s" | tee -a $OUT/summary.txt
done; done
grep -h '"range_profiler_stats"' -r $OUT/cost-* --include=device.log | cut -c1-500 > $OUT/cost_stats.txt
cd $OUT && tar czf all.tgz range summary.txt cost_stats.txt cost-*.txt range.txt && rm -rf range cost-* summary.txt cost_stats.txt range.txt
