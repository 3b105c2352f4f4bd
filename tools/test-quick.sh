#!/usr/bin/env bash
# The inner loop (npm run test:quick): the native unit tests, the JS tests without the slow files
# below, a WebGPU smoke on SwiftShader and one browser smoke. The set-up and the wasm build run
# only when their inputs changed (tools/prepare.sh). Every part runs even when one fails; the
# parts that failed are listed at the end. `npm test` runs everything, these included.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/webgpu-adapter-env.sh

# tests/js files left to `npm test` (tests/stages/20-js.sh): each takes more than 20 s alone
# (docs/contributing.md gives the figures).
SLOW_JS=(
  tests/js/soak.test.js                     # 100,000 forward calls
  tests/js/gradients-soak.test.js           # 10,000 forward + backward calls
  tests/js/memory-4g.test.js                # the 4 GiB of wasm32, on every build
  tests/js/memory-4g-quantized.test.js
  tests/js/memory-4g-refusal.test.js
  tests/js/memory-4g-refusal-worker.test.js
)
# The smokes: the WebGPU backend end to end on one adapter, and the demo page in Chromium.
WEBGPU_SMOKE=(tests/webgpu/adapter.test.js tests/webgpu/options.test.js)
BROWSER_SMOKE=(tests/browser/sentiment.test.js)

failed=()
# $1: the part's name; then its command.
part() {
  local name=$1
  shift
  echo "=== quick: $name"
  "$@" || failed+=("$name")
}

# (The parts' functions chain with &&: `set -e` does not stop a function called before ||.)
native_tests() {
  # EigenOracle.RandomConfigurations*: thousands of random configurations against the float64
  # oracle, most of the native tests' time (tests/stages/10-native.sh runs them).
  bash tools/build-native.sh --target mha_tests &&
    ctest --test-dir build/native --output-on-failure -j2 -E '^EigenOracle\.RandomConfigurations'
}

js_tests() {
  local file js=()
  for file in tests/js/*.test.js; do
    [[ " ${SLOW_JS[*]} " == *" $file "* ]] || js+=("$file")
  done
  # Two files at a time: Node's default on 2 cores is one (its default is cores - 1). Each file's
  # time goes to build/test-quick-js-times.txt (tools/file-times-reporter.mjs), slowest first.
  mkdir -p build
  node --test --test-concurrency=2 --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=./tools/file-times-reporter.mjs --test-reporter-destination=build/test-quick-js-times.txt "${js[@]}" &&
    echo "quick: the slowest JS files (build/test-quick-js-times.txt):" && head -n 5 build/test-quick-js-times.txt
}

webgpu_smoke() {
  webgpu_adapter_env swiftshader && env "${WEBGPU_ENV[@]}" node --test --test-concurrency=1 "${WEBGPU_SMOKE[@]}"
}

bash tools/prepare.sh
part "native unit tests (without the oracle's random configurations)" native_tests
part "JS tests (without ${SLOW_JS[*]})" js_tests
part "WebGPU smoke on SwiftShader (${WEBGPU_SMOKE[*]})" webgpu_smoke
part "browser smoke (${BROWSER_SMOKE[*]})" node --test --test-concurrency=1 "${BROWSER_SMOKE[@]}"

if [ ${#failed[@]} -gt 0 ]; then
  printf 'quick: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "quick: every part passed"
