#!/usr/bin/env bash
# The gpufl command-line tool, driven as a user would: the fixture sessions
# copied into a temporary log root, then every subcommand's output and exit
# code. Usage: run_cli_test.sh GPUFL_BINARY FIXTURE_SESSIONS_DIR
set -uo pipefail
gpufl=$1
fixtures=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect CODE DESCRIPTION -- command...: runs it, output in $tmp/out and $tmp/err.
expect() {
  local want=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [[ $got == "$want" ]] || { fail "$what: exit $got, expected $want"; cat "$tmp/err"; }
}
has() { grep -q -- "$2" "$tmp/$1" || fail "'$2' not in $1 of the last command"; }
hasnt() { ! grep -q -- "$2" "$tmp/$1" || fail "'$2' should not be in $1 of the last command"; }

# The log root: each fixture under its session id, as the library names them.
root=$tmp/root
mkdir -p "$root"
for dir in "$fixtures"/*/; do
  id=$(head -1 "$dir/device.log" | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
  cp -r "$dir" "$root/$id"
done
mkdir "$root/not-a-session"   # ignored: holds no log
unset GPUFL_LOG_PATH GPUFL_APP_NAME
cd "$tmp"

# sessions: newest first (by the header's start time), with app, duration, size.
expect 0 "sessions ROOT" -- "$gpufl" sessions "$root"
order=$(awk 'NR > 1 {print $4}' "$tmp/out" | tr '\n' ' ')
[[ $order == "scoped_demo trace_demo llm_train bench server trainer " ]] ||
  fail "sessions order: '$order'"
grep -Eq "^20261124T090000.000Z-8080-5c0e +2026-11-24 09:00:00 +scoped_demo +0.700 s +[0-9.]+ KiB$" \
  "$tmp/out" || fail "the newest session's row"
grep -q "server .*running or died" "$tmp/out" || fail "the killed session is not 'running or died'"
grep -q "trainer .*4.000 s" "$tmp/out" || fail "trainer's duration"
hasnt out "not-a-session"
hasnt out $'\033'                     # no colour into a file
GPUFL_LOG_PATH=$root expect 0 "sessions from GPUFL_LOG_PATH" -- "$gpufl" sessions
has out "scoped_demo"
mkdir "$tmp/empty"
expect 0 "sessions of an empty root" -- "$gpufl" sessions "$tmp/empty"
has out "no sessions found under"
expect 1 "sessions of a missing root" -- "$gpufl" sessions "$tmp/nowhere"
has err "$tmp/nowhere"

# report: a directory, a session id under the root, the latest, to a file.
expect 0 "report DIR" -- "$gpufl" report "$root/20261122T031500.123Z-4711-9f3a"
has out "gpufl report: trainer"
has out "^Session"
GPUFL_LOG_PATH=$root expect 0 "report SESSION" -- "$gpufl" report 20261123T120000.000Z-7070-c3d4
has out "gpufl report: trace_demo"
GPUFL_LOG_PATH=$root expect 0 "report (latest)" -- "$gpufl" report
has out "gpufl report: scoped_demo"
GPUFL_LOG_PATH=$root expect 0 "report --output" -- "$gpufl" report --output "$tmp/r.txt" \
  20261123T120000.000Z-7070-c3d4
[[ -s $tmp/out ]] && fail "report --output also wrote to stdout"
grep -q "gpufl report: trace_demo" "$tmp/r.txt" || fail "report --output: file lacks the report"
expect 1 "report with no session" -- "$gpufl" report
has err "no session found"
GPUFL_LOG_PATH=$tmp/empty expect 1 "report with an empty root" -- "$gpufl" report
has err "no session found under '$tmp/empty'"
GPUFL_LOG_PATH=$root expect 1 "report of an unknown session" -- "$gpufl" report nosuch
has err "no such session: 'nosuch'"
expect 1 "report of a directory without logs" -- "$gpufl" report "$root/not-a-session"
has err "not a session directory"
expect 1 "report to an unwritable file" -- "$gpufl" report -o "$tmp/nowhere/r.txt" \
  "$root/20261122T031500.123Z-4711-9f3a"
has err "$tmp/nowhere/r.txt"
expect 2 "report with a bad option" -- "$gpufl" report --bogus
has err "unknown option '--bogus'"
has err "usage: gpufl report"

# info: never fails, says why each vendor library is missing.
GPUFL_NVML_LIBRARY=$tmp/no/libnvidia-ml.so.1 GPUFL_CUDA_LIBRARY=$tmp/no/libcuda.so.1 \
  expect 0 "info without a driver" -- "$gpufl" info
has out "NVML: not available: "
has out "libcuda: not available: "
has out "Monitor: host metrics only"
has out "Trace: no: lacks NVML"
has out "PcSampling/SassMetrics/RangeProfiler/Deep: not built yet (run as Trace)"
hasnt out $'\033'

# Not built yet, usage errors, help and version.
expect 3 "insights" -- "$gpufl" insights
has err "not built yet in this release"
expect 3 "export" -- "$gpufl" export somewhere
has err "not built yet in this release"
expect 2 "unknown command" -- "$gpufl" bogus
has err "unknown command 'bogus'"
has err "usage: gpufl"
expect 2 "no command" -- "$gpufl"
expect 2 "unknown top-level option" -- "$gpufl" --bogus
expect 2 "help of an unknown command" -- "$gpufl" help bogus
expect 0 "--version" -- "$gpufl" --version
has out "^gpufl [0-9]"
for args in "--help" "help" "-h"; do
  expect 0 "$args" -- "$gpufl" $args
  has out "exit codes:"
  has out "insights"
done
for cmd in report sessions info insights export; do
  expect 0 "$cmd --help" -- "$gpufl" "$cmd" --help
  has out "usage: gpufl $cmd"
  has out "3  subcommand not built yet"
  expect 0 "help $cmd" -- "$gpufl" help "$cmd"
  has out "usage: gpufl $cmd"
done

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "cli: all checks passed"
