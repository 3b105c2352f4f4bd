# The npm package through its public JS API, with Node's test runner.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Alone, one at a time: the files that measure memory or run long soaks (the 4 GiB of wasm32, and
# 100,000 calls), which another process beside them would only slow or crowd.
ALONE=(tests/js/soak.test.js tests/js/gradients-soak.test.js tests/js/memory-4g*.test.js)
node --test --test-concurrency=1 "${ALONE[@]}"
# The rest two files at a time (Node's default on 2 cores is one): 317 s instead of 772 s for the
# same files (docs/contributing.md, "What each stage costs").
mapfile -t rest < <(ls tests/js/*.test.js | grep -v -x -F -f <(printf '%s\n' "${ALONE[@]}"))
node --test --test-concurrency=2 "${rest[@]}"
