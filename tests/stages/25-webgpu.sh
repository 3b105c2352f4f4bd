# The WebGPU backend (bindings/js/webgpu/) in Node: Dawn (npm 'webgpu') on two software Vulkan
# drivers (no GPU needed): Chromium's SwiftShader, then Mesa's lavapipe. How each is reached (the
# variables that must be set before the process starts) is written once, in
# tools/webgpu-adapter-env.sh; one file alone: npm run test:file -- tests/webgpu/x.test.js
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/webgpu-adapter-env.sh
# Both drivers must be there before anything runs.
webgpu_adapter_env swiftshader
webgpu_adapter_env lavapipe

# $1: the adapter's name; then the test files.
run_on() {
  local name=$1
  shift
  echo "25-webgpu: the tests on $name"
  webgpu_adapter_env "$name"
  # One file at a time: the software adapter uses every core.
  env "${WEBGPU_ENV[@]}" node --test --test-concurrency=1 "$@"
}
run_on swiftshader tests/webgpu/
# On lavapipe, what its features change: shader-f16 changes how f16 caches and f16 weights are
# read (tests/webgpu/half-reads.test.js, on a device with shader-f16 and one without); no kernel
# uses subgroup operations, so its subgroup size changes nothing else. Not the whole suite: on a
# fresh machine lavapipe compiles each new pipeline with LLVM (seconds each on 2 cores: these
# two files take about a minute), and SwiftShader runs the rest.
run_on lavapipe tests/webgpu/adapter.test.js tests/webgpu/half-reads.test.js
