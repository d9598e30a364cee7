#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
# usage_error HINT: stderr is exactly the one-line error and "see HINT --help".
usage_error() {
  local lines
  lines=$(wc -l <"$tmp/err")
  [[ $lines == 2 ]] || { fail "usage error: $lines lines on stderr, expected 2"; cat "$tmp/err"; }
  grep -q "^gpufl: ." <(head -1 "$tmp/err") || fail "usage error: no 'gpufl: ...' line first"
  [[ $(sed -n 2p "$tmp/err") == "see $1 --help" ]] ||
    fail "usage error: second line is '$(sed -n 2p "$tmp/err")', expected 'see $1 --help'"
  hasnt err "usage:"
}
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
[[ $order == "scoped_demo trace_demo llm_train bench server trainer stacks_demo pc_demo sass_demo range_demo resnet_train nvtx_shared " ]] ||
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
expect 0 "sessions of a session directory" -- "$gpufl" sessions "$root/20261123T120000.000Z-7070-c3d4"
has out "is a session directory, not a log root: gpufl report "
expect 2 "info with an option" -- "$gpufl" info --bogus
has err "unknown option '--bogus'"
usage_error "gpufl info"
expect 2 "--version with an argument" -- "$gpufl" --version extra
has err "--version takes no argument"
usage_error "gpufl"
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
has err "'$root/not-a-session' is neither a session directory"
expect 1 "report to an unwritable file" -- "$gpufl" report -o "$tmp/nowhere/r.txt" \
  "$root/20261122T031500.123Z-4711-9f3a"
has err "$tmp/nowhere/r.txt"
# report formats: the file is written, stderr stays empty off a terminal.
GPUFL_LOG_PATH=$root expect 0 "report --format html -o" -- "$gpufl" report --format html \
  -o "$tmp/r.html" 20261123T120000.000Z-7070-c3d4
[[ -s $tmp/out ]] && fail "report --format html -o also wrote to stdout"
[[ -s $tmp/err ]] && fail "report --format html wrote to stderr (progress off a terminal?)"
grep -q "^<!DOCTYPE html>" "$tmp/r.html" || fail "report --format html: not an HTML file"
grep -q ">Timeline</h2>" "$tmp/r.html" || fail "report --format html: no timeline"
grep -Eq "https?://" "$tmp/r.html" && fail "report --format html: refers to the network"
GPUFL_LOG_PATH=$root expect 0 "report --format=json" -- "$gpufl" report --format=json \
  20261123T120000.000Z-7070-c3d4
has out '"format": "gpufl-report"'
GPUFL_LOG_PATH=$root expect 0 "report -f markdown" -- "$gpufl" report -f markdown \
  20261123T120000.000Z-7070-c3d4
has out "^# gpufl report: trace\\\\_demo"
has out "^## Kernel hotspots"
GPUFL_LOG_PATH=$root expect 0 "report --format text" -- "$gpufl" report --format text \
  20261123T120000.000Z-7070-c3d4
has out "^Insights"
expect 2 "report with a bad format" -- "$gpufl" report --format xml "$root/20261122T031500.123Z-4711-9f3a"
has err "unknown format 'xml'"
usage_error "gpufl report"
expect 2 "report --format without a value" -- "$gpufl" report --format
has err "needs a format"
usage_error "gpufl report"
expect 2 "report with a bad option" -- "$gpufl" report --bogus
has err "unknown option '--bogus'"
usage_error "gpufl report"

# info: never fails, says why each vendor library is missing.
GPUFL_NVML_LIBRARY=$tmp/no/libnvidia-ml.so.1 GPUFL_CUDA_LIBRARY=$tmp/no/libcuda.so.1 \
  expect 0 "info without a driver" -- "$gpufl" info
has out "NVML: not available: "
has out "libcuda: not available: "
has out "Monitor: yes: host metrics only (no GPU telemetry without NVML)$"
has out "Trace: no: lacks NVML"
has out "PcSampling: no: needs Trace"
has out "SassMetrics: no: needs Trace"
has out "Deep: no: needs PcSampling or SassMetrics"
has out "RangeProfiler: no: needs Trace"
hasnt out $'\033'

# insights: the findings of a session, as text or JSON (docs/insights.md).
stacks_id=20261121T080000.000Z-9090-e5f6
trace_id=20261123T120000.000Z-7070-c3d4
basic_id=20261122T031500.123Z-4711-9f3a
expect 0 "insights" -- "$gpufl" insights "$root/$stacks_id"
has out "^\[HIGH\] SYNCHRONIZATION: cudaStreamSynchronize × 4 @ train.cu:90 · 12.0ms (80.4% of session)$"
has out "^\[HIGH\] SYNCHRONIZATION: In-loop sync × 4 — likely blocking GPU pipelining$"
has out "median of 3 kernel launches between"
has out "  at /src/train.cu:90 in train_step(float\*, int)$"
has out "  |     cudaStreamSynchronize(stream);$"
has out "^Not judged (the session lacks what these rules need):$"
hasnt out $'\033'
expect 0 "insights as JSON" -- "$gpufl" insights --format json "$root/$stacks_id"
python3 - "$tmp/out" <<'PY' || fail "insights JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["format"] == "gpufl-insights" and doc["version"] == 1, doc
rules = [x["rule"] for x in doc["insights"]]
assert rules[:2] == ["sync_attribution", "in_loop_sync"], rules
loop = doc["insights"][1]
assert loop["line"] == 90 and loop["file"] == "/src/train.cu", loop
assert {e["name"] for e in loop["evidence"]} >= {"calls", "blocked_ns", "median_launches_between"}
assert all("why" in s and "rule" in s for s in doc["skipped"])
PY
# PC samples: the report's section and the dominant_stall insight.
pc_id=20261120T100000.000Z-9191-7a1b
expect 0 "report of PC samples" -- "$gpufl" report "$root/$pc_id"
has out "^PC sampling"
has out "coverage 96.5%"
has out "stencil.cu:12"
has out "LDG.E R4, desc\[UR4\]\[R2.64\]"
has out "(unattributed)"
expect 0 "insights of PC samples" -- "$gpufl" insights --format json "$root/$pc_id"
python3 - "$tmp/out" <<'PY' || fail "dominant_stall insights"
import json, sys
doc = json.load(open(sys.argv[1]))
stall = [x for x in doc["insights"] if x["rule"] == "dominant_stall"]
assert [x["severity"] for x in stall] == ["HIGH", "MEDIUM"], stall
assert stall[0]["line"] == 12 and stall[0]["file"] == "/src/stencil.cu", stall[0]
assert "long_scoreboard" in stall[0]["title"], stall[0]
PY
# SASS metrics: the report's section and the warp_divergence and
# uncoalesced_global insights.
sassm_id=20261119T090000.000Z-6161-5a55
expect 0 "report of SASS metrics" -- "$gpufl" report "$root/$sassm_id"
has out "^SASS metrics$"
has out "^  Most divergent source lines"
has out "divergent.cu:6 "
has out "LDG.E R4, desc\[UR4\]\[R2.64\]"
expect 0 "report of SASS metrics as JSON" -- "$gpufl" report --format json "$root/$sassm_id"
python3 - "$tmp/out" <<'PY' || fail "sass_metrics JSON"
import json, sys
s = json.load(open(sys.argv[1]))["sass_metrics"]
assert [k["kernel"] for k in s["kernels"]][:2] == ["divergent(float*, int)",
                                                  "strided(float*, float const*, int)"], s
assert s["kernels"][1]["sectors_per_request"] == 32 and s["kernels"][1]["ideal_sectors_per_request"] == 4
assert s["uncoalesced_lines"][0]["line"] == 15, s["uncoalesced_lines"][0]
PY
expect 0 "insights of SASS metrics" -- "$gpufl" insights --format json "$root/$sassm_id"
python3 - "$tmp/out" <<'PY' || fail "SASS metrics insights"
import json, sys
doc = json.load(open(sys.argv[1]))
found = {x["rule"]: x for x in doc["insights"]}
div, unc = found["warp_divergence"], found["uncoalesced_global"]
assert div["severity"] == "HIGH" and div["line"] == 6 and div["file"] == "/src/divergent.cu", div
assert unc["severity"] == "HIGH" and unc["line"] == 15 and unc["file"] == "/src/strided.cu", unc
assert not [s for s in doc["skipped"] if s["rule"] in found], doc["skipped"]
PY

expect 0 "insights above a severity" -- "$gpufl" insights --min-severity high "$root/$basic_id"
has out "^No findings at this severity.$"
expect 2 "insights with a bad format" -- "$gpufl" insights --format xml "$root/$stacks_id"
has err "--format takes text or json, not 'xml'"
usage_error "gpufl insights"
expect 2 "insights with a bad severity" -- "$gpufl" insights --min-severity SEVERE
has err "--min-severity takes LOW, MEDIUM or HIGH"
usage_error "gpufl insights"
expect 1 "insights of no session" -- "$gpufl" insights "$tmp/nowhere"
has err "no such session"

# Usage errors, help and version.
expect 2 "unknown command" -- "$gpufl" bogus
has err "unknown command 'bogus'"
usage_error "gpufl"
expect 2 "no command" -- "$gpufl"
usage_error "gpufl"
expect 2 "unknown top-level option" -- "$gpufl" --bogus
has err "unknown option '--bogus'"
usage_error "gpufl"
expect 2 "help of an unknown command" -- "$gpufl" help bogus
usage_error "gpufl"
expect 2 "sessions with two roots" -- "$gpufl" sessions "$root" "$root"
usage_error "gpufl sessions"
expect 2 "info with an argument" -- "$gpufl" info x
usage_error "gpufl info"
expect 2 "report with three arguments" -- "$gpufl" report "$root" "$trace_id" x
has err "unexpected argument 'x'"
usage_error "gpufl report"
expect 2 "--session without a value" -- "$gpufl" report "$root" --session
has err "needs a session id"
usage_error "gpufl report"
expect 2 "--session and a second argument" -- "$gpufl" insights --session "$trace_id" "$root" x
has err "more than one session given"
usage_error "gpufl insights"
expect 2 "export --max-events not a count" -- "$gpufl" export -f chrome --max-events x "$root"
has err "needs a count"
usage_error "gpufl export"
expect 0 "--version" -- "$gpufl" --version
has out "^gpufl [0-9]"
for args in "--help" "help" "-h"; do
  expect 0 "$args" -- "$gpufl" $args
  has out "exit codes:"
  has out "insights"
  hasnt out "not built"
done
for cmd in report sessions info insights export; do
  expect 0 "$cmd --help" -- "$gpufl" "$cmd" --help
  has out "usage: gpufl $cmd"
  has out "exit codes:"
  hasnt out "not built"
  expect 0 "help $cmd" -- "$gpufl" help "$cmd"
  has out "usage: gpufl $cmd"
done

# export: Chrome JSON and Perfetto traces (docs/export.md).
trace_id=20261123T120000.000Z-7070-c3d4
is_json() { python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }
expect 2 "export with a bad format" -- "$gpufl" export --format bogus "$root/$trace_id"
has err "unknown format 'bogus'"
usage_error "gpufl export"
expect 2 "export without a format" -- "$gpufl" export "$root/$trace_id"
has err "format"
expect 2 "export --max-events for perfetto" -- "$gpufl" export -f perfetto --max-events 5 \
  "$root/$trace_id"
expect 0 "export chrome -o" -- "$gpufl" export --format chrome "$root/$trace_id" -o "$tmp/out.json"
is_json "$tmp/out.json" || fail "export chrome: not valid JSON"
grep -q '"_Z4gemmPKfS0_Pfiii"' "$tmp/out.json" || fail "export chrome: a kernel is missing"
has out "^$tmp/out.json\$"
[[ -s $tmp/err ]] && fail "export wrote to stderr off a terminal (progress?)"
GPUFL_LOG_PATH=$root expect 0 "export perfetto, default name" -- "$gpufl" export -f perfetto \
  "$trace_id"
[[ -s $tmp/$trace_id.perfetto-trace ]] || fail "export perfetto: no $trace_id.perfetto-trace"
[[ $(head -c1 "$tmp/$trace_id.perfetto-trace" | od -An -tx1 | tr -d ' ') == 0a ]] ||
  fail "export perfetto: does not open with a Trace.packet field"
expect 0 "export chrome to stdout" -- "$gpufl" export --format=chrome -o - "$root/$trace_id"
is_json "$tmp/out" || fail "export chrome -o -: stdout is not valid JSON"
expect 0 "export chrome split" -- "$gpufl" export -f chrome --max-events 5 -o "$tmp/s.trace.json" \
  "$root/$trace_id"
has err "split by time into"
[[ $(wc -l <"$tmp/out") -ge 3 ]] || fail "export split: fewer than 3 files listed"
while read -r f; do
  is_json "$f" || fail "export split: $f is not valid JSON"
done <"$tmp/out"
has out "^$tmp/s.1.trace.json\$"
expect 1 "export to an unwritable file" -- "$gpufl" export -f chrome -o "$tmp/nowhere/x.json" \
  "$root/$trace_id"
has err "$tmp/nowhere/x.json"
GPUFL_LOG_PATH=$root expect 1 "export of an unknown session" -- "$gpufl" export -f chrome nosuch
has err "no such session: 'nosuch'"

# A log root names its latest session; --session ID, or a session id after the
# root, picks another. One lookup serves report, insights and export.
latest=20261124T090000.000Z-8080-5c0e
expect 0 "report ROOT" -- "$gpufl" report "$root"
has out "gpufl report: scoped_demo"
expect 0 "report --session ID ROOT" -- "$gpufl" report --session "$trace_id" "$root"
has out "gpufl report: trace_demo"
expect 0 "report ROOT --session=ID" -- "$gpufl" report "$root" --session="$trace_id"
has out "gpufl report: trace_demo"
expect 0 "report ROOT SESSION" -- "$gpufl" report -f json "$root" "$trace_id"
has out '"app": "trace_demo"'
expect 0 "report of a session directory with its own id" -- "$gpufl" report \
  --session "$trace_id" "$root/$trace_id"
has out "gpufl report: trace_demo"
"$gpufl" insights --format json "$root/$latest" >"$tmp/want.json"
expect 0 "insights ROOT" -- "$gpufl" insights --format json "$root"
cmp -s "$tmp/out" "$tmp/want.json" || fail "insights ROOT: not the latest session's insights"
expect 0 "insights ROOT SESSION" -- "$gpufl" insights "$root" "$stacks_id"
has out "^\[HIGH\] SYNCHRONIZATION: In-loop sync × 4"
expect 0 "insights --session ID ROOT" -- "$gpufl" insights --session="$stacks_id" "$root"
has out "^\[HIGH\] SYNCHRONIZATION: In-loop sync × 4"
rm -f "$tmp/$latest.perfetto-trace"
expect 0 "export ROOT" -- "$gpufl" export -f perfetto "$root"
has out "^$latest.perfetto-trace\$"
[[ -s $tmp/$latest.perfetto-trace ]] || fail "export ROOT: no $latest.perfetto-trace"
"$gpufl" export -f chrome -o "$tmp/want.json" "$root/$trace_id" >/dev/null
expect 0 "export ROOT SESSION" -- "$gpufl" export -f chrome -o - "$root" "$trace_id"
cmp -s "$tmp/out" "$tmp/want.json" || fail "export ROOT SESSION: not that session's trace"
expect 0 "export --session ID ROOT" -- "$gpufl" export -f chrome -o - --session "$trace_id" "$root"
cmp -s "$tmp/out" "$tmp/want.json" || fail "export --session: not that session's trace"
GPUFL_LOG_PATH=$root expect 0 "report --session ID (default root)" -- "$gpufl" report \
  --session "$trace_id"
has out "gpufl report: trace_demo"
# What cannot be found says what was looked for and how to see what there is.
for cmd in report insights "export -f chrome"; do
  expect 1 "$cmd of an empty directory" -- "$gpufl" $cmd "$tmp/empty"
  has err "^gpufl: '$tmp/empty' is neither a session directory (no device.log or scope.log) nor a log root holding sessions$"
  expect 1 "$cmd --session of an unknown id" -- "$gpufl" $cmd --session nosuch "$root"
  has err "^gpufl: no such session: 'nosuch' under '$root' (see gpufl sessions $root)$"
  expect 1 "$cmd ROOT SESSION of an unknown id" -- "$gpufl" $cmd "$root" nosuch
  has err "^gpufl: no such session: 'nosuch' under '$root' (see gpufl sessions $root)$"
  expect 1 "$cmd of a missing directory" -- "$gpufl" $cmd "$tmp/nowhere"
  has err "^gpufl: no such session or log root: '$tmp/nowhere'$"
done
expect 1 "report of a session directory with another id" -- "$gpufl" report \
  --session "$stacks_id" "$root/$trace_id"
has err "is '$trace_id', not '$stacks_id'"

# A PcSampling session: launch rows, no kernel rows (docs/log-format.md, `launch`).
pc_id=20261120T100000.000Z-9191-7a1b
expect 0 "report of a PcSampling session" -- "$gpufl" report "$root/$pc_id"
has out "this engine does not time kernels: see docs/log-format.md, \`launch\`"
has out "^Kernel launches"
has out "gpu_idle: needs kernel GPU times"
expect 0 "report json of a PcSampling session" -- "$gpufl" report --format json "$root/$pc_id"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert d["kernels"] is None and d["kernel_launches"]["count"] == 7' "$tmp/out" ||
  fail "report json: kernel_launches"
expect 0 "export chrome of launch rows" -- "$gpufl" export -f chrome -o "$tmp/pc.json" \
  "$root/$pc_id"
python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["traceEvents"]
assert sum(x["ph"] == "i" and x["cat"] == "launch" for x in e) == 7' "$tmp/pc.json" ||
  fail "export chrome: launch rows are not 7 instants"

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "cli: all checks passed"
