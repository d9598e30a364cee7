#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Takes docs/images/report-html.png: the HTML report of the fixture session
# tests/fixtures/sessions/timeline (kernels, copies, scopes with tags, open
# scopes), or of another session, in headless Chromium, scrolled to its timeline.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--help" ]]; then
  echo "usage: scripts/screenshot_report.sh [BUILD_DIR] [OUT_PNG] [SESSION]"
  echo "Runs BUILD_DIR/cmd/gpufl/gpufl (default build-dev) and chromium (\$CHROMIUM, default"
  echo "chromium) on SESSION (default the fixture tests/fixtures/sessions/timeline); writes"
  echo "OUT_PNG (default docs/images/report-html.png)."
  exit 0
fi

build=${1:-build-dev}
out=${2:-docs/images/report-html.png}
gpufl=$build/cmd/gpufl/gpufl
chromium=${CHROMIUM:-chromium}
session=${3:-$PWD/tests/fixtures/sessions/timeline}
[[ -x $gpufl ]] || { echo "no $gpufl: build gpufl first" >&2; exit 1; }
command -v "$chromium" >/dev/null || { echo "no $chromium: apt-get install chromium" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gpufl" report --format html --output "$tmp/report.html" "$session"
# The report in a frame opened at its timeline: Chromium captures a page that
# jumps to a fragment itself before the jump is painted (a blank top).
cat >"$tmp/view.html" <<'EOF'
<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>html,body{margin:0;overflow:hidden}
iframe{border:0;display:block;width:1400px;height:1800px}</style></head>
<body><iframe src="report.html#timeline"></iframe></body></html>
EOF
"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1800 \
  --screenshot="$tmp/shot.png" "file://$tmp/view.html" 2>"$tmp/chromium.err" ||
  { cat "$tmp/chromium.err" >&2; exit 1; }
[[ -s $tmp/shot.png ]] || { cat "$tmp/chromium.err" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
cp "$tmp/shot.png" "$out"
size=$(stat -c %s "$out")
echo "$out: $size bytes"
((size < 300 * 1024)) || { echo "$out is over 300 KiB: crop it or lower the window" >&2; exit 1; }
