#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds gpufl in Release and runs the benchmarks in bench/, printing their
# figures; with --save, also writes them to bench/results/raw/<date>-core/<date>-<host>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--help" ]]; then
  echo "usage: scripts/bench.sh [--save]"
  exit 0
fi

scripts/deps.sh
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DGPUFL_BUILD_TESTS=OFF >/dev/null
cmake --build build/bench -j "$(nproc)" >/dev/null

out=$(mktemp)
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
       "$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
       "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
  echo "compiler: $(cc --version | head -1)"
  echo
  build/bench/bench/bench_scope --log-path "$(mktemp -d)"
  echo
  build/bench/bench/bench_writer
  echo
  build/bench/bench/bench_reader
  if [[ -d build/bench/python/gpufl ]]; then
    echo
    # Debian's python3, which has pandas (one earlier in PATH may not), as the build found it.
    py=$(sed -n 's/^_Python3_EXECUTABLE:INTERNAL=//p' build/bench/CMakeCache.txt)
    PYTHONPATH=build/bench/python "${py:-python3}" bench/python_analyzer.py \
      --cli build/bench/cmd/gpufl/gpufl
  fi
  if [[ -x build/bench/cmd/gpufl-server/gpufl-server ]]; then
    echo
    # gpufl-server's ingest against the engines' own rates (PostgreSQL from scripts/deps.sh).
    /usr/bin/python3 bench/server_ingest.py --server build/bench/cmd/gpufl-server/gpufl-server
    echo
    # Its query API on a 1 M-kernel session: summary, insights, kernels per name, timelines.
    /usr/bin/python3 bench/server_query.py --server build/bench/cmd/gpufl-server/gpufl-server
  fi
} | tee "$out"

if [[ "${1:-}" == "--save" ]]; then
  day=$(date -u +%Y-%m-%d)
  mkdir -p "bench/results/raw/$day-core"
  dest="bench/results/raw/$day-core/$day-$(hostname -s).txt"
  cp "$out" "$dest"
  echo "saved to $dest"
fi
rm -f "$out"
