export LD_LIBRARY_PATH=$PWD/.devbin PYTHONPATH=$PWD/.devbin/python
timeout 200 bash tests/gpu/run_range_checks.sh $OUT/range > $OUT/range.txt 2>&1; echo "range rc=$?" >> $OUT/summary.txt; (cd $OUT && tar czf range.tgz range && rm -rf range)
t0=$(date +%s); s(){ echo "$1 rc=$2 $(( $(date +%s)-t0 ))s" | tee -a $OUT/summary.txt; }
crashed=0
for r in 1 2 3 4 5 6 7 8; do timeout 60 python3 tests/gpu/torch_checks.py time both --engine Deep --steps 3 --dir $OUT/deep >> $OUT/deep.jsonl 2>> $OUT/deep.err; rc=$?; [ $rc != 0 ] && crashed=$((crashed+1)); s deep$r $rc; done
echo "deep crashed $crashed of 8" | tee -a $OUT/summary.txt
grep -h '"pc_sampling_stats"' -r $OUT/deep --include=device.log | cut -c1-600 > $OUT/deep_stats.txt
timeout 200 python3 tests/gpu/torch_checks.py time trace --engine Deep --steps 60 --dir $OUT/deeplong > $OUT/deeplong.txt 2>&1; s deeplong $?
grep -h '"pc_sampling_stats"\|"sass_metrics_stats"\|"pc_sampling_error"\|"session_end"' -r $OUT/deeplong --include=*.log | cut -c1-1500 > $OUT/deeplong_stats.txt
rm -rf $OUT/deep $OUT/deeplong; du -sh $OUT/*
