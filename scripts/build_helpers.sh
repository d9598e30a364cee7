# SPDX-License-Identifier: Apache-2.0
# build_helpers.sh - sourced by demo.sh and test.sh: configures and builds a
# CMake tree while saying how far it is, so no build is a silent minute, and
# finds the CUDA compiler the GPU demo is built with.
# On a terminal the percentage is rewritten in place; elsewhere (CI logs) a
# line is printed at each quarter. A failed step prints the end of its log.

# gpufl_build LABEL DIR [cmake configure args...]
gpufl_build() {
  local label=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  local log=$dir/gpufl-build.log
  echo "gpufl: configuring $label in $dir"
  if ! cmake -S . -B "$dir" "$@" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "gpufl: configuring $label failed (whole log: $log)" >&2
    return 1
  fi
  local tty=0 next=25 pct line
  [[ -t 1 ]] && tty=1
  echo "gpufl: building $label on $(nproc) cores"
  set -o pipefail
  if ! cmake --build "$dir" -j "$(nproc)" 2>&1 | tee -a "$log" | while IFS= read -r line; do
      [[ $line =~ ^\[\ *([0-9]+)%\] ]] || continue
      pct=${BASH_REMATCH[1]}
      if ((tty)); then
        printf '\rgpufl: building %s %3d%%' "$label" "$pct"
      elif ((pct >= next)); then
        echo "gpufl: building $label $pct%"
        next=$(((pct / 25 + 1) * 25))
      fi
    done; then
    ((tty)) && echo
    tail -n 30 "$log" >&2
    echo "gpufl: building $label failed (whole log: $log)" >&2
    return 1
  fi
  ((tty)) && printf '\rgpufl: building %s done\n' "$label"
  return 0
}

# gpufl_find_nvcc: prints the CUDA compiler's path (PATH, then $CUDA_HOME,
# $CUDA_PATH and /usr/local/cuda); fails when there is none.
gpufl_find_nvcc() {
  command -v nvcc 2>/dev/null && return 0
  local dir
  for dir in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    [[ -n $dir && -x $dir/bin/nvcc ]] && { echo "$dir/bin/nvcc"; return 0; }
  done
  return 1
}
