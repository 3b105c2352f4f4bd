#!/usr/bin/env bash
# What `npm test`, `npm start` and `npm run test:quick` run first: the set-up (tools/setup.sh)
# and the wasm build (npm run build), each only when an input it reads changed since it last
# succeeded (tools/stamps.sh says which inputs). A clean clone has no stamps, so both run.
# MHA_FORCE_PREPARE=1 runs both anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/stamps.sh

if [ -z "${MHA_FORCE_PREPARE:-}" ] && stamp_fresh setup; then
  echo "prepare: set-up skipped (${STAMP_INPUTS_setup[*]} unchanged since it last ran)"
else
  bash tools/setup.sh
fi
if [ -z "${MHA_FORCE_PREPARE:-}" ] && stamp_fresh wasm; then
  echo "prepare: wasm build skipped (${STAMP_INPUTS_wasm[*]} unchanged since dist/ was built)"
else
  bash tools/build-wasm.sh
fi
