#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The dashboard's tests (ctest -R web): web/'s packages installed from package-lock.json (npm
# ci, offline once node_modules matches the lock), its unit tests and type check, the build
# into OUT/dist, then the browser tests against a seeded gpufl-server (run_browser_tests.py).
# A missing tool or an unreachable registry fails with the reason: never a vacuous pass.
set -euo pipefail
usage() { echo "usage: tests/web/run.sh --server BIN --out DIR [playwright args...]"; }
server="" out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --server) server=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) break ;;
  esac
done
[[ -n $server && -n $out ]] || { usage >&2; exit 2; }
mkdir -p "$out"
server=$(realpath "$server") out=$(realpath "$out")
here=$(cd "$(dirname "$0")" && pwd)
web=$(cd "$here/../../web" && pwd)
fail() { echo "tests/web/run.sh: $*" >&2; exit 1; }

command -v node >/dev/null && command -v npm >/dev/null ||
  fail "node and npm are needed (apt-get install nodejs npm, or scripts/deps.sh)"
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 # Debian's Chromium is driven, nothing is downloaded

# npm ci again only when the lock changed since node_modules was installed from it.
stamp="$web/node_modules/.package-lock.json"
if [[ ! -f $stamp || "$web/package-lock.json" -nt $stamp ]]; then
  echo "tests/web/run.sh: npm ci in web/"
  (cd "$web" && npm ci --no-audit --no-fund) ||
    fail "npm ci failed: the npm registry must be reachable once to install web/'s packages"
fi
cd "$web"
npx --no-install tsc --noEmit || fail "tsc --noEmit found errors"
npx --no-install vitest run || fail "the unit tests of web/ failed"
rm -rf "$out/dist"
GPUFL_WEB_OUT="$out/dist" npx --no-install vite build --logLevel warn || fail "vite build failed"
[[ -f $out/dist/index.html ]] || fail "vite build wrote no index.html"
exec /usr/bin/python3 "$here/run_browser_tests.py" --server "$server" --web-root "$out/dist" \
  --out "$out" "$@"
