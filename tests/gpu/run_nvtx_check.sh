#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NVTX ranges as scopes on the GPU machine (docs/nvtx.md): nvtx_check (CUDA, NVTX push/pop and
# start/end ranges around kernels timed with CUDA events, libgpufl linked statically) and
# nvtx_torch.py (torch.cuda.nvtx.range under gpufl.init), each checked by nvtx_check.py against
# `gpufl report --format json`. Needs .devbin/ from build_for_device.sh.
# Usage: tests/gpu/run_nvtx_check.sh OUT_DIR [STEPS]
set -uo pipefail
if [[ "${1:-}" == "--help" || $# -lt 1 ]]; then
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "$0")/../.."
out=$1
steps=${2:-20}
mkdir -p "$out"
export PYTHONPATH=$PWD/.devbin/python LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
status=0
echo "== nvtx_check (CUDA)"
.devbin/nvtx_check "$out/cuda" "$steps" >"$out/cuda.json" 2>"$out/cuda.err" || status=1
python3 tests/gpu/nvtx_check.py cuda "$out/cuda.json" | tee "$out/check-cuda.json" || status=1
echo "== nvtx_torch.py (PyTorch)"
python3 tests/gpu/nvtx_torch.py "$out/torch" "$steps" >"$out/torch.json" 2>"$out/torch.err" || status=1
python3 tests/gpu/nvtx_check.py torch "$out/torch.json" | tee "$out/check-torch.json" || status=1
.devbin/gpufl report "$out/cuda" >"$out/report-cuda.txt" 2>&1 || status=1
.devbin/gpufl report "$out/torch" >"$out/report-torch.txt" 2>&1 || status=1
exit $status
