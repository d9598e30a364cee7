#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the whole test suite three ways: a -Werror build, an ASan+UBSan
# build, and a TSan build (unit tests, which all run the collector thread, and
# the tests labelled tsan).
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build_helpers.sh

quick=0
for arg in "$@"; do
  case $arg in
    -h|--help)
      echo "usage: scripts/test.sh [--quick]"
      echo "Builds gpufl three ways and runs the test suite in each: build/ci (-Werror),"
      echo "build/asan (ASan+UBSan) and build/tsan (TSan, unit tests and those labelled tsan)."
      echo "  --quick   only the -Werror build (no sanitizer builds)"
      exit 0 ;;
    --quick) quick=1 ;;
    *) echo "scripts/test.sh: unknown argument '$arg' (see scripts/test.sh --help)" >&2; exit 2 ;;
  esac
done

scripts/deps.sh
# deps.sh installed Prometheus, PostgreSQL and babeltrace2: their tests must run here, not skip.
export GPUFL_REQUIRE_PROMETHEUS=1 GPUFL_REQUIRE_POSTGRES=1 GPUFL_REQUIRE_BABELTRACE=1
jobs=$(nproc)

run() { # name, cmake args..., then -- ctest args...
  local name=$1; shift
  local cfg=() ctest_args=()
  while [[ $# -gt 0 && $1 != -- ]]; do cfg+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift && ctest_args=("$@")
  echo "== $name"
  gpufl_build "$name" "build/$name" -DGPUFL_WERROR=ON "${cfg[@]}"
  rm -rf "build/$name/test-logs" && mkdir -p "build/$name/test-logs"
  (cd "build/$name" && ctest --output-on-failure -j "$jobs" "${ctest_args[@]}")
}

# The CI build also compiles the GPU demo where a CUDA compiler is found, so
# that it cannot rot on machines without a GPU.
gpu_demo=()
if nvcc=$(gpufl_find_nvcc); then
  gpu_demo=(-DGPUFL_BUILD_GPU_DEMO=ON "-DCMAKE_CUDA_COMPILER=$nvcc")
fi
run ci -DCMAKE_BUILD_TYPE=RelWithDebInfo "${gpu_demo[@]}"
if ((!quick)); then
  run asan -DCMAKE_BUILD_TYPE=Debug "-DGPUFL_SANITIZE=address;undefined" -DGPUFL_BUILD_BENCH=OFF \
      -- -LE api
  # TSan: the unit tests, and the tests labelled tsan (gpufl-monitor under process churn).
  TSAN_OPTIONS="halt_on_error=1" \
  run tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFL_SANITIZE=thread -DGPUFL_BUILD_BENCH=OFF \
      -- -L "unit|schema|tsan"
fi
echo "gpufl: all test builds passed"
