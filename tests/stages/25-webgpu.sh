# The WebGPU backend (bindings/js/webgpu/) in Node: Dawn (npm 'webgpu') on two software Vulkan
# drivers (no GPU needed): Chromium's SwiftShader (subgroups of 4, no shader-f16), then Mesa's
# lavapipe from bookworm-backports (subgroups of 8, shader-f16; fetched into build/lavapipe/ by
# tools/lavapipe.sh, which tools/setup.sh runs). The driver is found through LD_LIBRARY_PATH and
# VK_ICD_FILENAMES, which must be set before the process starts; MHA_WEBGPU_ADAPTER names the
# adapter, and the tests fail if the adapter they get is another (tests/webgpu/devices.js).
set -euo pipefail
cd "$(dirname "$0")/../.."
swiftshader=/usr/lib/chromium/vk_swiftshader_icd.json
lavapipe=$PWD/build/lavapipe/lvp_icd.json
if [ ! -f "$swiftshader" ]; then
  echo "25-webgpu: $swiftshader not found; tools/setup.sh installs Debian's chromium" >&2
  exit 1
fi
if [ ! -f "$lavapipe" ]; then
  echo "25-webgpu: $lavapipe not found; run bash tools/lavapipe.sh (tools/setup.sh runs it)" >&2
  exit 1
fi
lavapipe_lib=$(dirname "$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$lavapipe")")

# $1: the adapter's name; $2: its ICD file; $3: its libraries' folder (besides Chromium's Vulkan loader); then the test files.
run_on() {
  local name=$1 icd=$2 libs=$3
  shift 3
  echo "25-webgpu: the tests on $name"
  # One file at a time: the software adapter uses every core.
  MHA_WEBGPU_ADAPTER=$name LD_LIBRARY_PATH=/usr/lib/chromium$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    VK_ICD_FILENAMES=$icd node --test --test-concurrency=1 "$@"
}
run_on swiftshader "$swiftshader" "" tests/webgpu/
# On lavapipe, what its features change: shader-f16 changes how f16 caches and f16 weights are
# read (tests/webgpu/half-reads.test.js, on a device with shader-f16 and one without); no kernel
# uses subgroup operations, so its subgroup size changes nothing else. Not the whole suite: on a
# fresh machine lavapipe compiles each new pipeline with LLVM (seconds each on 2 cores: these
# two files take about a minute), and SwiftShader runs the rest. Its shader cache is kept in
# build/lavapipe/shader-cache, so a second run is faster.
export MESA_SHADER_CACHE_DIR=$PWD/build/lavapipe/shader-cache
run_on lavapipe "$lavapipe" ":$lavapipe_lib" tests/webgpu/adapter.test.js tests/webgpu/half-reads.test.js
