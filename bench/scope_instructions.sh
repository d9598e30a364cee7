#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions executed per scope begin+end pair (GFL_SCOPE through the shared
# library, the caller's loop, PLT/GOT and TLS-descriptor code included), counted
# by callgrind in bench_scope_pairs of each build dir given. Time on a shared VM
# moves from run to run; this count does not, so it tells two builds apart
# where the TSC reads hide the rest of a scope's cost.
set -euo pipefail

if [[ $# -lt 1 || "$1" == "--help" ]]; then
  echo "usage: bench/scope_instructions.sh BUILD_DIR...   (each holding bench/bench_scope_pairs)"
  exit $([[ "${1:-}" == "--help" ]] && echo 0 || echo 2)
fi
command -v valgrind >/dev/null || { echo "scope_instructions: valgrind is needed" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for dir in "$@"; do
  bin=$dir/bench/bench_scope_pairs
  [[ -x $bin ]] || { echo "scope_instructions: no $bin" >&2; exit 2; }
  pairs=$(LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    valgrind --tool=callgrind --toggle-collect=bench_scope_pairs_batch \
      --callgrind-out-file="$work/cg" "$bin" "$work/logs" 2>/dev/null | sed -n 's/^pairs: \([0-9]*\),.*/\1/p')
  total=$(callgrind_annotate "$work/cg" | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
  echo "$dir: $(awk -v t="$total" -v p="$pairs" 'BEGIN { printf "%.1f", t / p }') instructions per pair ($pairs pairs)"
  callgrind_annotate "$work/cg" | grep -E '^ *[0-9,]+ .*(gpufl_scope|tlsdesc|bench_scope_pairs_batch)' | sed 's/^/  /'
done
