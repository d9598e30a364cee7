#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, from Debian's archive, what building and testing gpufl needs.
# Only missing packages are installed; uses sudo when not root.
set -euo pipefail

packages=(build-essential cmake pkg-config libjansson-dev libcmocka-dev libdw-dev
          python3 python3-jsonschema
          python3-dev python3-setuptools python3-wheel python3-pip python3-venv python3-pytest
          python3-numpy python3-pandas python3-matplotlib
          libmicrohttpd-dev)

if [[ "${1:-}" == "--help" ]]; then
  echo "usage: scripts/deps.sh"
  echo "Installs the Debian packages gpufl needs: ${packages[*]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=()
[[ $(id -u) -ne 0 ]] && sudo=(sudo)
echo "gpufl: installing ${#missing[@]} Debian packages (a minute or more): ${missing[*]}"
echo "gpufl: updating the package lists"
"${sudo[@]}" apt-get update -qq
# One line a package as apt unpacks and sets it up: progress, not apt's whole log.
set -o pipefail
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q -o Dpkg::Use-Pty=0 \
  "${missing[@]}" | { grep --line-buffered -E '^Setting up ' || true; } |
  sed -u 's/^Setting up \([^ ]*\).*/gpufl: installed \1/'
