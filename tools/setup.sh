#!/usr/bin/env bash
# Installs what the build and tests need on a fresh Debian 12 machine: Debian packages
# (when run as root; otherwise prints the apt command) and the npm dev dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(emscripten libeigen3-dev libxsimd-dev nlohmann-json3-dev cmake g++ libgtest-dev libbenchmark-dev)
[ -n "${MHA_EXTRA_PACKAGES:-}" ] && read -r -a extra <<<"$MHA_EXTRA_PACKAGES" && PACKAGES+=("${extra[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${missing[*]}"
    bash -c "$cmd"
  else
    echo "setup: missing Debian packages. Run as root:" >&2
    echo "  sudo bash -c '$cmd'" >&2
    exit 1
  fi
fi

if [ -f package-lock.json ] && [ ! -d node_modules ]; then
  npm ci --no-audit --no-fund
fi
