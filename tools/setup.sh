#!/usr/bin/env bash
# Installs what the build and tests need on a fresh Debian 12 machine: Debian packages
# (when run as root; otherwise prints the apt command) and the npm dev dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/stamps.sh
inputs=$(stamp_hash setup)  # (before anything runs: a file changed meanwhile makes the next run redo it)

bash tools/install-debian-packages.sh tools/debian-packages.txt
bash tools/lavapipe.sh  # (the WebGPU tests' second adapter, from bookworm-backports into build/lavapipe/)

# Reinstall when package-lock.json changed since the last install: its hash, kept in node_modules/
# (so a node_modules/ shared by a link with another checkout of the same lock file counts).
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f node_modules/.package-lock.json ] || [ "$(cat node_modules/.installed-lock.sha256 2>/dev/null)" != "$lock_hash" ]; then
  # npm ci refuses this lock file: it lacks the optional per-platform @rollup/rollup-* packages
  # (vite's), which the registry here does not serve, so npm install leaves them out. Then fall
  # back to npm install, which installs the locked versions of everything else.
  mkdir -p build
  if ! npm ci --no-audit --no-fund > build/npm-ci.log 2>&1; then
    echo "setup: npm ci refused the lock file ($(grep -m1 -o 'Missing: [^ ]*' build/npm-ci.log || echo 'see build/npm-ci.log')); installing the locked versions with npm install"
    npm install --no-audit --no-fund
  fi
  echo "$lock_hash" > node_modules/.installed-lock.sha256
fi
stamp_write setup "$inputs"  # (tools/prepare.sh skips the set-up while its inputs stay the same)
