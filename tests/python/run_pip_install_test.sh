#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_pip_install_test.sh - installs the Python package as a user would, offline and from a copy
# of the source tree (so nothing is written into the checkout): `pip install
# --no-build-isolation --no-index --target DIR ./python` with Debian's setuptools, then imports
# it from that directory and records a session. It also checks the wheel's abi3 tag, that
# the module exports nothing but its init function and NVTX's entry point, and that the gpufl command pip installs and
# `python -m gpufl` run the command-line tool.
#
# Usage: run_pip_install_test.sh <source dir> [python3]. Exits non-zero on the first failure.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: $0 <source dir> [python3]" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
python=${2:-python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpufl-pip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The parts of the tree that setup.py's CMake build reads.
mkdir "$tmp/src"
cp -r "$src/CMakeLists.txt" "$src/cmake" "$src/include" "$src/lib" "$src/cmd" "$src/python" \
      "$tmp/src/"
rm -rf "$tmp/src/python/build" "$tmp/src/python/"*.egg-info

echo "== pip install --no-build-isolation --no-index --target $tmp/site ./python"
if ! (cd "$tmp/src" && "$python" -m pip install --no-build-isolation --no-index \
          --no-cache-dir --target "$tmp/site" ./python) >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    echo "FAIL: pip install" >&2
    exit 1
fi
grep -q "gpufl-.*-cp311-abi3-linux_.*\.whl" "$tmp/pip.log" ||
    { echo "FAIL: the wheel is not tagged cp311-abi3" >&2; grep -i whl "$tmp/pip.log" >&2; exit 1; }

module=$(ls "$tmp"/site/gpufl/_gpufl*.so)
[[ $(basename "$module") == _gpufl.abi3.so ]] || { echo "FAIL: module is $module" >&2; exit 1; }
# Besides its init function, NVTX's injection entry point (docs/nvtx.md: gpufl.init() points
# NVTX_INJECTION64_PATH at this module).
exported=$(nm -D --defined-only "$module" | awk '{print $3}' | sort | tr '\n' ' ')
[[ $exported == "InitializeInjectionNvtx2 PyInit__gpufl " ]] ||
    { echo "FAIL: the module exports: $exported" >&2; exit 1; }

echo "== import gpufl from the install and record a session"
mkdir "$tmp/run"
(cd "$tmp/run" && env -u GPUFL_DISABLED -u GPUFL_CONFIG_FILE PYTHONPATH="$tmp/site" \
    "$python" -c '
import os, gpufl
assert gpufl.__file__.startswith(os.environ["PYTHONPATH"]), gpufl.__file__
assert gpufl.init(app_name="pip_check") is True
with gpufl.Scope("installed", "ok"):
    pass
gpufl.shutdown()
(session,) = os.listdir("pip_check.log")
scope_log = open(os.path.join("pip_check.log", session, "scope.log")).read()
assert "\"installed\"" in scope_log and "scope_end" in scope_log, scope_log
print("gpufl", gpufl.__version__, "installed and recorded", session)
')

echo "== the gpufl command pip installed, and python -m gpufl"
gpufl_cmd=$tmp/site/bin/gpufl
[[ -x $gpufl_cmd ]] || { echo "FAIL: pip installed no gpufl command" >&2; ls "$tmp/site" >&2; exit 1; }
PYTHONPATH="$tmp/site" "$gpufl_cmd" --help >"$tmp/help.txt" ||
    { echo "FAIL: gpufl --help" >&2; exit 1; }
grep -q "^usage: gpufl <command>" "$tmp/help.txt" ||
    { echo "FAIL: gpufl --help printed:" >&2; cat "$tmp/help.txt" >&2; exit 1; }
(cd "$tmp/run" && env -u GPUFL_LOG_PATH PYTHONPATH="$tmp/site" \
    "$python" -m gpufl sessions "$src/tests/fixtures/sessions") >"$tmp/sessions.txt" ||
    { echo "FAIL: python -m gpufl sessions" >&2; exit 1; }
grep -q "^scoped  .* scoped_demo " "$tmp/sessions.txt" ||
    { echo "FAIL: python -m gpufl sessions printed:" >&2; cat "$tmp/sessions.txt" >&2; exit 1; }
set +e
PYTHONPATH="$tmp/site" "$gpufl_cmd" report --bogus 2>"$tmp/usage.txt"
code=$?
set -e
[[ $code == 2 && $(cat "$tmp/usage.txt") == $'gpufl: unknown option \'--bogus\'\nsee gpufl report --help' ]] ||
    { echo "FAIL: gpufl report --bogus: exit $code" >&2; cat "$tmp/usage.txt" >&2; exit 1; }
echo "gpufl command and python -m gpufl run the installed CLI"
