#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_nvtx_report_test.sh - NVTX ranges through NVTX_INJECTION64_PATH into `gpufl report`: runs
# itest_nvtx_shared (linked with libgpufl.so), then checks that the text and JSON reports list
# the NVTX ranges with their source and domain, and the fake kernels under them.
# Usage: PROGRAM GPUFL_CLI LOG_PATH FAKE_CUPTI FAKE_CUDA
set -euo pipefail
program=$1 cli=$2 logs=$3 cupti=$4 cuda=$5
rm -rf "$logs"
"$program" "$logs" "$cupti" "$cuda"
fail() { echo "FAIL: $*" >&2; exit 1; }
text=$("$cli" report "$logs")
json=$("$cli" report --format json "$logs")
grep -q "train_step \[nvtx\]" <<<"$text" || fail "no 'train_step [nvtx]' in the report: $text"
grep -q "fetch \[nvtx:loader\]" <<<"$text" || fail "no 'fetch [nvtx:loader]' in the report: $text"
grep -q "epoch \[nvtx start/end\]" <<<"$text" || fail "no 'epoch [nvtx start/end]': $text"
python3 - "$json" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
paths = {p["path"]: p for p in r["scopes"]["paths"]}
assert paths["train_step"]["source"] == "nvtx" and paths["train_step"]["domain"] == "", paths
assert paths["train_step"]["calls"] == 3, paths["train_step"]
assert paths["train_step/fetch"]["domain"] == "loader", paths
assert paths["epoch"]["source"] == "nvtx_start_end", paths
gpu = {g["path"]: g for g in r["scope_gpu"]["paths"]}
# Push/pop ranges hold the kernels launched inside them, as scopes do; the start/end
# range the one launched while it was open.
assert gpu["train_step"]["kernels"] == 6, gpu["train_step"]
assert gpu["train_step/fetch"]["kernels"] == 3, gpu["train_step/fetch"]
assert gpu["epoch"]["kernels"] == 1, gpu["epoch"]
assert gpu["epoch"]["top_kernels"][0]["name"] == "tail()", gpu["epoch"]
# The start/end range's work is an overlay: the sum over scopes stays the session's.
sg = r["scope_gpu"]
assert sg["all_ns"] == 7000 and sg["in_scopes_ns"] == 6000, (sg["all_ns"], sg["in_scopes_ns"])
PY
echo "ok"
