#!/usr/bin/env bash
# Installs what is needed, builds gpufl, and profiles the demo program: it
# runs a small workload in gpufl scopes and prints the report of its session.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--help" ]]; then
  echo "usage: scripts/demo.sh [demo arguments]"
  echo "Builds gpufl in build/release and runs build/release/examples/gpufl_demo;"
  echo "its logs go to build/demo/gpufl_demo.log/<session>/."
  exit 0
fi

scripts/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DGPUFL_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc)" >/dev/null
mkdir -p build/demo
cd build/demo
exec ../release/examples/gpufl_demo "$@"
