#!/usr/bin/env bash
# Runs the whole test suite three ways: a -Werror build, an ASan+UBSan
# build, and a TSan build (unit tests, which all run the collector thread).
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--help" ]]; then
  echo "usage: scripts/test.sh [--quick]"
  echo "  --quick   only the -Werror build (no sanitizer builds)"
  exit 0
fi

scripts/deps.sh
jobs=$(nproc)

run() { # name, cmake args..., then -- ctest args...
  local name=$1; shift
  local cfg=() ctest_args=()
  while [[ $# -gt 0 && $1 != -- ]]; do cfg+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift && ctest_args=("$@")
  echo "== $name"
  cmake -S . -B "build/$name" -DGPUFL_WERROR=ON "${cfg[@]}" >/dev/null
  cmake --build "build/$name" -j "$jobs" >/dev/null
  rm -rf "build/$name/test-logs" && mkdir -p "build/$name/test-logs"
  (cd "build/$name" && ctest --output-on-failure -j "$jobs" "${ctest_args[@]}")
}

run ci -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [[ "${1:-}" != "--quick" ]]; then
  run asan -DCMAKE_BUILD_TYPE=Debug "-DGPUFL_SANITIZE=address;undefined" -DGPUFL_BUILD_BENCH=OFF \
      -- -LE api
  TSAN_OPTIONS="halt_on_error=1" \
  run tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFL_SANITIZE=thread -DGPUFL_BUILD_BENCH=OFF \
      -- -L "unit|schema"
fi
echo "gpufl: all test builds passed"
