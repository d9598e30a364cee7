#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demos' shared command line (examples/demo_args.h), run as a user would:
# a bad --steps, an unknown argument or a missing value is one line on stderr
# and exit 2; --help prints the usage and exits 0.
# Usage: run_demo_args_test.sh DEMO [DEMO...]
set -u
fails=0
expect() { # demo, expected exit code, expected stderr (exact), args...
  local demo=$1 code=$2 want=$3
  shift 3
  local err rc
  err=$("$demo" "$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc != "$code" || $err != "$want" ]]; then
    echo "FAIL  $(basename "$demo") $*: exit $rc, stderr '$err' (want $code, '$want')"
    fails=$((fails + 1))
  fi
}
[[ $# -ge 1 ]] || { echo "usage: run_demo_args_test.sh DEMO [DEMO...]"; exit 2; }
for demo in "$@"; do
  name=$(basename "$demo")
  expect "$demo" 2 "$name: --steps takes a whole number >= 0, not 'abc'" --steps abc
  expect "$demo" 2 "$name: --steps takes a whole number >= 0, not '-1'" --steps -1
  expect "$demo" 2 "$name: unknown argument '--bogus' (try --help)" --bogus
  expect "$demo" 2 "$name: missing value for '--steps' (try --help)" --steps
  expect "$demo" 0 "" --help
  "$demo" --help | grep -q "^usage: $name " || { echo "FAIL  $name --help: no usage line"; fails=$((fails + 1)); }
done
echo "demo arguments: $fails failed"
exit $((fails > 0))
