#!/usr/bin/env bash
# Builds the wasm module(s) into dist/ with Emscripten 3.1.6 (see docs/contributing.md: Building by hand).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/stamps.sh
inputs=$(stamp_hash wasm)  # (before the build: a file changed meanwhile makes the next run rebuild)
export NODE_PATH=/usr/share/nodejs   # Emscripten's JS optimizer needs Debian's acorn
TOOLCHAIN=/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake

# em++ must not see /usr/include itself (its x86 headers break the build): a directory
# holding only links to the header-only libraries we use.
INC=build/wasm-include
mkdir -p "$INC"
ln -sfn /usr/include/xsimd "$INC/xsimd"
ln -sfn /usr/include/eigen3 "$INC/eigen3"

build_variant() {  # name, compile flags, extra link flags, --pre-js file
  local name=$1 flags=$2 link=${3:-} pre_js=${4:-} dir=build/wasm-$1
  cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node \
    -DXSIMD_INCLUDE_DIR="$PWD/$INC" -DEIGEN_INCLUDE_DIR="$PWD/$INC/eigen3" \
    -DMHA_WASM_NAME="$name" -DMHA_WASM_VARIANT_FLAGS="$flags" -DMHA_WASM_LINK_FLAGS="$link" -DMHA_WASM_PRE_JS="$pre_js" \
    > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  cmake --build "$dir" -j2
}

# Five variants, one embind API (the threads one adds setNumThreads/numThreads):
#   mha-simd          wasm SIMD128 (xsimd's SSE4.1 arch mapped onto SIMD128, TOOLCHAIN quirk 3)
#   mha-scalar        no SIMD instructions, for engines without WebAssembly SIMD
#   mha-simd-threads  SIMD + pthreads (workers); needs cross-origin isolation in browsers.
#                     Workers are started with the module, one per core (at most 16), so a
#                     forward call never waits for a worker to load. In Node the factory
#                     needs { nodeWorkerThreads } (see src/mha/runtime/wasm_threads_pre.js).
#   mha-relaxed-simd, mha-relaxed-simd-threads
#                     the same two with relaxed SIMD's fused multiply-add (f32x4.relaxed_madd:
#                     src/mha/kernels/simd.hpp's fmadd), for engines that have it (Chrome 114+,
#                     Node 22+, Firefox 145+); the loader picks them there. Clang 14 emits the
#                     proposal's prototype opcode, renumbered after the link
#                     (tools/wasm-relaxed-opcodes.mjs, a POST_BUILD step in CMakeLists.txt).
# The WebGPU kernels, embedded into bindings/js/webgpu/wgsl.generated.js (committed; see the tool).
node tools/embed-wgsl.mjs

mkdir -p dist
build_variant mha-simd "-msimd128 -msse4.1"
build_variant mha-scalar ""
build_variant mha-simd-threads "-msimd128 -msse4.1 -pthread" \
  "-sPTHREAD_POOL_SIZE=Math.min(16,navigator.hardwareConcurrency||4)" "$PWD/src/mha/runtime/wasm_threads_pre.js"
build_variant mha-relaxed-simd "-msimd128 -msse4.1 -mrelaxed-simd"
build_variant mha-relaxed-simd-threads "-msimd128 -msse4.1 -mrelaxed-simd -pthread" \
  "-sPTHREAD_POOL_SIZE=Math.min(16,navigator.hardwareConcurrency||4)" "$PWD/src/mha/runtime/wasm_threads_pre.js"
stamp_write wasm "$inputs"  # (tools/prepare.sh skips the build while its inputs stay the same)
echo "built: $(ls dist)"
