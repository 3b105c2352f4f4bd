#!/usr/bin/env bash
# `npm run bench:kernels`: the GEMM and flash-attention micro-kernels alone, one thread, built with
# the wasm SIMD build's flags (run in Node with optimized code from the start: --no-liftoff, since
# a single long call would otherwise stay on V8's baseline compile) and natively with g++.
# `bash bench/kernels/run.sh gemv`: only the decode GEMV's f16 and q4 variants.
set -euo pipefail
cd "$(dirname "$0")/../.."
export NODE_PATH=/usr/share/nodejs   # Emscripten's JS optimizer needs Debian's acorn
out=build/kernel-bench
mkdir -p "$out/include"
ln -sfn /usr/include/xsimd "$out/include/xsimd"
sources=(bench/kernels/kernel_benchmark.cpp src/mha/kernels/packed_linear.cpp src/mha/kernels/gemm_variants.cpp src/mha/kernels/gemm_calibration.cpp src/mha/kernels/variant_calibration.cpp src/mha/kernels/gemv_variants.cpp src/mha/kernels/gemv_calibration.cpp src/mha/kernels/kernel_choice.cpp src/mha/kernels/flash_calibration.cpp src/mha/kernels/exp_variants.cpp src/mha/kernels/weight_formats.cpp src/mha/kernels/quantized_panels.cpp src/mha/kernels/quantized_gemv.cpp src/mha/kernels/quantized_gemv_reference.cpp src/mha/kernels/attention_flash.cpp src/mha/kernels/attention_decode.cpp src/mha/kernels/attention_backward_flash.cpp)
em++ -O3 -DNDEBUG -msimd128 -msse4.1 -std=c++17 -Isrc -isystem "$out/include" "${sources[@]}" \
  -sALLOW_MEMORY_GROWTH=1 -o "$out/kernels.cjs"
g++ -O3 -DNDEBUG -march=native -std=c++17 -Isrc "${sources[@]}" -o "$out/kernels-native"
echo "### wasm SIMD128 (Node $(node --version), 1 thread)"
node --no-experimental-fetch --no-liftoff "$out/kernels.cjs" "$@"
echo
echo "### native ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), 1 thread)"
"$out/kernels-native" "$@"
