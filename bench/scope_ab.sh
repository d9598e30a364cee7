#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compares two Release builds of the core benchmarks in one sitting: runs
# bench_scope and bench_writer of build A, then of build B, ROUNDS times, so
# that both see the same phases of a shared machine. Prints every run. A
# build dir's lib/ goes first on LD_LIBRARY_PATH for its runs (copies of the
# builds can so run on another machine).
set -euo pipefail

if [[ $# -lt 2 || "${1:-}" == "--help" ]]; then
  echo "usage: bench/scope_ab.sh BUILD_A BUILD_B [ROUNDS]   (build dirs holding bench/bench_scope)"
  exit $([[ "${1:-}" == "--help" ]] && echo 0 || echo 2)
fi
a=$1 b=$2 rounds=${3:-5}
for dir in "$a" "$b"; do
  [[ -x "$dir/bench/bench_scope" && -x "$dir/bench/bench_writer" ]] ||
    { echo "scope_ab: no bench/bench_scope and bench/bench_writer in $dir" >&2; exit 2; }
done

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
     "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
echo "A: $a"
echo "B: $b"
for ((i = 1; i <= rounds; i++)); do
  for side in A B; do
    dir=$a
    [[ $side == B ]] && dir=$b
    echo
    echo "== round $i, $side"
    LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$dir/bench/bench_scope" --log-path "$logs"
    LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$dir/bench/bench_writer"
  done
done
