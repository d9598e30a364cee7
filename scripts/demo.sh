#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's first command: installs what is needed, builds gpufl, profiles
# a demo program and prints the report of its session. Where an NVIDIA driver
# and a CUDA compiler are present the demo is a small CUDA training loop under
# the Trace engine; elsewhere a CPU-only program. It ends with the commands
# that reopen the session with the gpufl tool.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build_helpers.sh

usage() {
  cat <<'TEXT'
usage: scripts/demo.sh [--cpu] [--no-build] [--steps N] [--log-path DIR]

Builds gpufl in build/release and runs the demo; its logs go to
build/demo/gpufl_demo.log/<session>/ and the gpufl tool lands in
build/release/cmd/gpufl/gpufl.
  --cpu           run the CPU-only demo even where a GPU is present
  --no-build      run the demo of an earlier build (no package install, no build)
  --steps N       training steps of the demo
  --log-path DIR  where the demo writes its sessions (relative: to build/demo)
TEXT
}

mode=auto build=1 demo_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --cpu) mode=cpu ;;
    --no-build) build=0 ;;
    --steps|--log-path) [[ $# -ge 2 ]] || { echo "scripts/demo.sh: $1 needs a value" >&2; exit 2; }
                        demo_args+=("$1" "$2"); shift ;;
    --) shift; demo_args+=("$@"); break ;;
    *) echo "scripts/demo.sh: unknown argument '$1' (see scripts/demo.sh --help)" >&2; exit 2 ;;
  esac
  shift
done

# A driver is there when the kernel module answers or nvidia-smi lists a GPU.
has_nvidia_driver() {
  [[ -e /proc/driver/nvidia/version ]] && return 0
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1
}

gpu=0 cmake_gpu=()
if [[ $mode == auto ]]; then
  if ! has_nvidia_driver; then
    echo "gpufl: no NVIDIA driver on this machine: running the CPU-only demo"
  elif ! nvcc=$(gpufl_find_nvcc); then
    echo "gpufl: an NVIDIA driver is here but no CUDA compiler (nvcc) to build the GPU demo:" \
         "install the CUDA toolkit; running the CPU-only demo"
  else
    gpu=1
    cmake_gpu=(-DGPUFL_BUILD_GPU_DEMO=ON "-DCMAKE_CUDA_COMPILER=$nvcc")
  fi
fi

build_dir=build/release
if ((build)); then
  scripts/deps.sh
  gpufl_build "gpufl (Release)" "$build_dir" -DCMAKE_BUILD_TYPE=Release -DGPUFL_BUILD_TESTS=OFF \
    -DGPUFL_BUILD_BENCH=OFF -DGPUFL_BUILD_PYTHON=OFF "${cmake_gpu[@]}"
elif [[ ! -x $build_dir/examples/gpufl_demo ]]; then
  echo "scripts/demo.sh: --no-build, but $build_dir has no demo: run scripts/demo.sh once first" >&2
  exit 1
fi
if ((gpu)) && [[ ! -x $build_dir/examples/gpufl_demo_gpu ]]; then
  echo "gpufl: $build_dir has no GPU demo (built without a GPU): running the CPU-only demo" \
       "(scripts/demo.sh without --no-build builds it)"
  gpu=0
fi

log_root=build/demo/gpufl_demo.log
for ((i = 0; i + 1 < ${#demo_args[@]}; ++i)); do
  if [[ ${demo_args[i]} == --log-path ]]; then
    log_root=${demo_args[i + 1]}
    [[ $log_root == /* ]] || log_root=build/demo/$log_root
  fi
done
mkdir -p build/demo
rc=0
if ((gpu)); then
  echo "gpufl: running the GPU demo (Trace engine, CPU stacks on)"
  (cd build/demo && ../release/examples/gpufl_demo_gpu "${demo_args[@]}") || rc=$?
  if ((rc == 77)); then
    echo "gpufl: running the CPU-only demo instead"
    gpu=0 rc=0
  fi
elif [[ $mode == cpu ]]; then
  echo "gpufl: running the CPU-only demo (--cpu)"
fi
if ((!gpu)); then
  (cd build/demo && ../release/examples/gpufl_demo "${demo_args[@]}") || rc=$?
fi
((rc == 0)) || exit "$rc"

# The session just written: the newest directory under the log root.
session=$(ls -1td "$log_root"/*/ 2>/dev/null | head -n 1)
session=${session%/}
[[ -n $session ]] || exit 0
tool=$build_dir/cmd/gpufl/gpufl
cat <<TEXT

gpufl: the session is in $session/
Reopen it with the gpufl tool, from the repository root ($PWD):
  $tool report $session
  $tool report --format html --output report.html $session
  $tool insights $session
  $tool export --format perfetto $session
  $tool sessions $log_root
TEXT
