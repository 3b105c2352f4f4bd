#!/usr/bin/env bash
# The inner loop (npm run test:quick): the native unit tests, the JS tests without the slow files
# below, a WebGPU smoke on SwiftShader and one browser smoke. The set-up and the wasm build run
# only when their inputs changed (tools/prepare.sh). Every part runs even when one fails; the
# parts that failed are listed at the end. `npm test` runs everything, these included.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/webgpu-adapter-env.sh

# tests/js files left to `npm test` (tests/stages/20-js.sh): the soaks and the 4 GiB files, and
# those whose tests took more than 20 s (two files at a time, load average 6 to 7, 2026-11-27;
# build/test-quick-js-times.txt has the figures of the last run).
SLOW_JS=(
  tests/js/soak.test.js                     # 100,000 forward calls
  tests/js/gradients-soak.test.js           # 10,000 forward + backward calls
  tests/js/memory-4g.test.js                # the 4 GiB of wasm32, on every build
  tests/js/memory-4g-quantized.test.js
  tests/js/memory-4g-refusal.test.js
  tests/js/memory-4g-refusal-worker.test.js
  tests/js/tfjs-kernels.test.js             # 113 s
  tests/js/sentiment.test.js                # 104 s
  tests/js/tfjs-layer.test.js               # 61 s
  tests/js/long-sequence.test.js            # 39 s
  tests/js/keras.test.js                    # 29 s
  tests/js/train-sentiment-example.test.js  # 27 s
  tests/js/tfjs-page-training.test.js       # 22 s
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
  local file js=() status=0
  for file in tests/js/*.test.js; do
    [[ " ${SLOW_JS[*]} " == *" $file "* ]] || js+=("$file")
  done
  # Two files at a time: Node's default on 2 cores is one (its default is cores - 1). Each file's
  # time goes to build/test-quick-js-times.txt (tools/file-times-reporter.mjs), slowest first.
  mkdir -p build
  node --test --test-concurrency=2 --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=./tools/file-times-reporter.mjs --test-reporter-destination=build/test-quick-js-times.txt "${js[@]}" ||
    status=$?
  echo "quick: the slowest JS files (build/test-quick-js-times.txt):"
  head -n 5 build/test-quick-js-times.txt
  return $status
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
