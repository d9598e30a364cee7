export LD_LIBRARY_PATH=$PWD/.devbin PYTHONPATH=$PWD/.devbin/python
t0=$(date +%s); s(){ echo "$1 rc=$2 $(( $(date +%s)-t0 ))s" | tee -a $OUT/summary.txt; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/machine.txt
timeout 280 bash tests/gpu/run_range_checks.sh $OUT/range > $OUT/range.txt 2>&1; s range $?
timeout 60 python3 tests/gpu/range_cases.py $OUT/cases > $OUT/range_cases.txt 2>&1; s cases $?
grep -h '"range_profiler' -r $OUT/cases --include=device.log > $OUT/cases_records.jsonl
timeout 230 bash tests/gpu/run_torch_checks.sh $OUT/torch 2 0 > $OUT/torch.txt 2>&1; s torch $?
cd $OUT && tar czf range.tgz range && find torch -name '*.json' -o -name '*.jsonl' -o -name '*.err' -o -name '*.txt' -o -name '*.csv' -o -name "*.md" | tar czf torch.tgz -T - && rm -rf torch range cases; du -sh $OUT/*
