#!/usr/bin/env bash
# Installs what the build and tests need on a fresh Debian 12 machine: Debian packages
# (when run as root; otherwise prints the apt command) and the npm dev dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install-debian-packages.sh tools/debian-packages.txt
bash tools/lavapipe.sh  # (the WebGPU tests' second adapter, from bookworm-backports into build/lavapipe/)

# Reinstall when package-lock.json changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # npm ci refuses this lock file: it lacks the optional per-platform @rollup/rollup-* packages
  # (vite's), which the registry here does not serve, so npm install leaves them out. Then fall
  # back to npm install, which installs the locked versions of everything else.
  mkdir -p build
  if ! npm ci --no-audit --no-fund > build/npm-ci.log 2>&1; then
    echo "setup: npm ci refused the lock file ($(grep -m1 -o 'Missing: [^ ]*' build/npm-ci.log || echo 'see build/npm-ci.log')); installing the locked versions with npm install"
    npm install --no-audit --no-fund
  fi
fi
