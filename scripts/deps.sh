#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, from Debian's archive, what building and testing gpufl needs.
# Only missing packages are installed; uses sudo when not root.
set -euo pipefail

packages=(build-essential cmake pkg-config libjansson-dev libcmocka-dev libdw-dev
          python3 python3-jsonschema
          python3-dev python3-setuptools python3-wheel python3-pip python3-venv python3-pytest
          python3-numpy python3-pandas python3-matplotlib)
# gpufl-monitor: libmicrohttpd serves its HTTP endpoints, libcurl its OTLP push.
packages+=(libmicrohttpd-dev libcurl4-openssl-dev)
# gpufl-server: SQLite, its embedded database (the default --db sqlite:PATH).
packages+=(libsqlite3-dev)
# gpufl-server: libsodium (API keys, Argon2id passwords, SHA-256), zlib (gzip windows), libzstd
# (zstd windows; the zstd CLI makes the tests' zstd bodies); openssl makes the self-signed
# certificate of the TLS test.
packages+=(libsodium-dev zlib1g-dev libzstd-dev zstd openssl)
# gpufl-server: libpq, its PostgreSQL client (--db postgresql://...).
packages+=(libpq-dev)
# Test-only: python3-yaml reads the deployment files (deploy/). Without their recommends, each of
# which would add a service (prometheus's node-exporter, docker-compose's Docker daemon): a real
# Prometheus server (with promtool) scrapes gpufl-monitor in its tests, and docker-compose checks
# deploy/docker/docker-compose.yml. The service prometheus's installation starts (on every
# interface) is stopped and disabled: tests start their own, on 127.0.0.1.
packages+=(python3-yaml python3-prometheus-client)
# Test-only: babeltrace2 reads the CTF traces of `gpufl export --format ctf` (the export_ctf test).
packages+=(babeltrace2)
# The dashboard (web/): Node.js and npm build it (its packages come from npm's registry through
# web/package-lock.json), and its browser tests drive Debian's Chromium headless through
# Playwright (no browser downloaded: tests/web/run.sh). npm comes with some builds of the nodejs
# package and conflicts with the npm package there: it is asked for only where it is missing.
packages+=(nodejs chromium)
command -v npm >/dev/null 2>&1 || packages+=(npm)
# PostgreSQL's server (Debian's postgresql, version 15) likewise: the storage tests start their
# own throwaway cluster (tests/integration/pg_harness.py), so the service and the cluster the
# package sets up on installation are stopped and disabled.
lean_packages=(prometheus docker-compose postgresql)
services=(prometheus postgresql)

if [[ "${1:-}" == "--help" ]]; then
  echo "usage: scripts/deps.sh"
  echo "Installs the Debian packages gpufl needs: ${packages[*]} ${lean_packages[*]}"
  echo "(the last ${#lean_packages[@]} without recommends; the services of ${services[*]} are stopped)"
  exit 0
fi

missing_of() { # packages...: prints those not installed
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"
  done
}
mapfile -t missing < <(missing_of "${packages[@]}")
mapfile -t missing_lean < <(missing_of "${lean_packages[@]}")
[[ ${#missing[@]} -eq 0 && ${#missing_lean[@]} -eq 0 ]] && exit 0

sudo=()
[[ $(id -u) -ne 0 ]] && sudo=(sudo)
all=("${missing[@]}" "${missing_lean[@]}")
echo "gpufl: installing ${#all[@]} Debian packages (a minute or more): ${all[*]}"
echo "gpufl: updating the package lists"
"${sudo[@]}" apt-get update -qq
# One line a package as apt unpacks and sets it up: progress, not apt's whole log.
# Waits for the dpkg lock rather than failing while another install runs.
set -o pipefail
apt_install() { # apt-get options and packages...
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q -o Dpkg::Use-Pty=0 \
    -o DPkg::Lock::Timeout=300 "$@" | { grep --line-buffered -E '^Setting up ' || true; } |
    sed -u 's/^Setting up \([^ ]*\).*/gpufl: installed \1/'
}
if [[ ${#missing[@]} -gt 0 ]]; then apt_install "${missing[@]}"; fi

# The package's service: stopped now and not started at boot, whether systemd or an init script
# runs it (containers often have the latter, or neither).
stop_package_service() { # name
  if [[ -d /run/systemd/system ]]; then
    "${sudo[@]}" systemctl disable --now "$1.service" >/dev/null 2>&1 || true
  elif [[ -x /etc/init.d/$1 ]]; then
    "${sudo[@]}" /etc/init.d/"$1" stop >/dev/null 2>&1 || true
    "${sudo[@]}" update-rc.d "$1" disable >/dev/null 2>&1 || true
  fi
  echo "gpufl: stopped and disabled the $1 service (tests start their own on 127.0.0.1)"
}
if [[ ${#missing_lean[@]} -gt 0 ]]; then
  apt_install --no-install-recommends "${missing_lean[@]}"
  for s in "${services[@]}"; do
    if [[ " ${missing_lean[*]} " == *" $s "* ]]; then stop_package_service "$s"; fi
  done
fi
