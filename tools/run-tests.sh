#!/usr/bin/env bash
# Runs every test stage in tests/stages/ in name order (NN-what.sh); stops at the first failure.
# `npm test` runs this after tools/setup.sh and the wasm build.
set -euo pipefail
cd "$(dirname "$0")/.."
for stage in tests/stages/*.sh; do
  echo "=== test stage: $(basename "$stage" .sh)"
  start=$SECONDS
  bash "$stage"
  echo "=== test stage: $(basename "$stage" .sh) passed in $((SECONDS - start)) s"
done
