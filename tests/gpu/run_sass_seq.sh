#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs sass_metrics_seq (tests/gpu/sass_metrics_seq.cu) through the call
# orders that decide the SassMetrics engine's design, each in a fresh
# process, and the same kernels under Nsight Compute for the reference
# figures. Usage: tests/gpu/run_sass_seq.sh OUT_DIR [LAUNCHES [SEQ...]]
# A SEQ written METRICS/OPS runs OPS with SEQ_METRICS=METRICS. Without SEQ
# arguments the list below runs, then Nsight Compute.
# Writes OUT_DIR/seq.jsonl (one header line per sequence, then one line per
# operation), OUT_DIR/ncu_hw.csv and OUT_DIR/ncu_sass.csv.
set -uo pipefail
if [[ $# -lt 1 || $1 == --help ]]; then
  echo "usage: tests/gpu/run_sass_seq.sh OUT_DIR [LAUNCHES [SEQ...]]"; exit 2
fi
out=$1; n=${2:-10}
mkdir -p "$out"
bin=.devbin/sass_metrics_seq
seqs=(
  "TT"                   # baseline timings, no CUPTI
  "PCE0123SFD"           # enable before any module load, one flush
  "PCe0123SFD"           # the same without lazy patching
  "TPCE0123SFD"          # modules loaded before enable (the first probe's order)
  "PCE0SF1SF2SF3SFD"     # a flush after each kernel
  "PCE0SFDE1SFDE2SFDE3SFD" # enable and disable around each kernel
  "PCE0123SF0123SFD"     # is a second flush a delta?
  "PCETSFD"              # timings under patching (first batch patches)
  "PCETTSFD"             # second batch: patched code only
  "XPCE0123SFD"          # with gpufl-like callbacks subscribed
  "APCE0123SFDa"         # activity tracing on first
  "PCE0123SFDA0123Sa"    # activity after SASS metrics
  "pPCE0123SFDgq"        # PC sampling first, then SASS metrics (Deep)
  "PCEp0123SFgqD"        # SASS metrics first, then PC sampling
  "PCEpTSFgqD"           # Deep timings
  "pTgq"                 # PC sampling timings alone
  # With callbacks subscribed, as gpufl always has them:
  "XPCE0123SF0123SFD"    # does collection go on after a flush?
  "XPCe0123SFD"          # eager patching
  "XTPCE0123SFD"         # modules loaded before enable (late init)
  "XPCT0E0123SFD"        # a launch between SetConfig and Enable
  "XPCE0SFDE1SFD"        # disable, then enable again
  "XPCE0SFDUCE1SFD"      # unset and set the configuration again
  "XPCEWSFD"             # flushes on a second thread while kernels run
  "XPCETTSFD"            # patched timings, default metric set
  "smsp__sass_inst_executed/XPCETTSFD"
  "smsp__sass_inst_executed,smsp__sass_thread_inst_executed/XPCETTSFD"
  "smsp__sass_sectors_mem_global,smsp__sass_sectors_mem_global_ideal/XPCETTSFD"
  "XTT"                  # baseline with callbacks subscribed
)
[[ $# -gt 2 ]] && seqs=("${@:3}")
: >"$out/seq.jsonl"
i=0
for s in "${seqs[@]}"; do
  i=$((i + 1))
  metrics=; ops=${s// /}
  if [[ $s == */* ]]; then metrics=${s%%/*}; ops=${s##*/}; fi
  echo "== $s"
  echo "{\"run\":$i,\"metrics\":\"$metrics\"}" >>"$out/seq.jsonl"
  SEQ_METRICS=$metrics timeout 150 "$bin" "$n" "$ops" >>"$out/seq.jsonl" 2>"$out/err_$i.txt"
  rc=$?
  echo "{\"seq_end\":\"$ops\",\"rc\":$rc}" >>"$out/seq.jsonl"
  [[ -s "$out/err_$i.txt" ]] || rm -f "$out/err_$i.txt"
done
[[ $# -gt 2 ]] && exit 0
ncu_bin=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
if [[ -n "$ncu_bin" ]]; then
  hw=smsp__inst_executed.sum,smsp__thread_inst_executed.sum,smsp__thread_inst_executed_pred_on.sum
  hw+=,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
  hw+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
  hw+=,smsp__thread_inst_executed_per_inst_executed.ratio
  timeout 200 "$ncu_bin" --csv --print-units base --metrics "$hw" "$bin" 1 T >"$out/ncu_hw.csv" 2>"$out/ncu_hw.err"
  sm=smsp__sass_inst_executed.sum,smsp__sass_thread_inst_executed.sum
  sm+=,smsp__sass_sectors_mem_global.sum,smsp__sass_sectors_mem_global_ideal.sum
  sm+=,smsp__sass_inst_executed_op_global.sum
  timeout 200 "$ncu_bin" --csv --print-units base --metrics "$sm" "$bin" 1 T >"$out/ncu_sass.csv" 2>"$out/ncu_sass.err"
fi
exit 0
