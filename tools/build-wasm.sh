#!/usr/bin/env bash
# Builds the wasm module(s) into dist/ with Emscripten 3.1.6 (see README: Building).
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH=/usr/share/nodejs   # Emscripten's JS optimizer needs Debian's acorn
TOOLCHAIN=/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake

# em++ must not see /usr/include itself (its x86 headers break the build): a directory
# holding only links to the header-only libraries we use.
INC=build/wasm-include
mkdir -p "$INC"
ln -sfn /usr/include/xsimd "$INC/xsimd"
ln -sfn /usr/include/eigen3 "$INC/eigen3"

build_variant() {  # name, compile flags
  local name=$1 flags=$2 dir=build/wasm-$1
  cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node \
    -DXSIMD_INCLUDE_DIR="$PWD/$INC" -DEIGEN_INCLUDE_DIR="$PWD/$INC/eigen3" \
    -DMHA_WASM_NAME="$name" -DMHA_WASM_VARIANT_FLAGS="$flags" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  cmake --build "$dir" -j2
}

mkdir -p dist
build_variant mha-simd "-msimd128 -msse4.1"
echo "built: $(ls dist)"
