#!/usr/bin/env bash
# `npm run bench:kernels`: the GEMM and flash-attention micro-kernels alone, one thread, built with
# the wasm SIMD build's flags (run in Node with optimized code from the start: --no-liftoff, since
# a single long call would otherwise stay on V8's baseline compile) and natively with g++.
# `bash bench/kernels/run.sh gemv`: only the decode GEMV's f16 and q4 variants; `... gemm`: only the GEMM's.
set -euo pipefail
cd "$(dirname "$0")/../.."
export NODE_PATH=/usr/share/nodejs   # Emscripten's JS optimizer needs Debian's acorn
out=build/kernel-bench
mkdir -p "$out/include"
ln -sfn /usr/include/xsimd "$out/include/xsimd"
sources=(bench/kernels/kernel_benchmark.cpp src/mha/kernels/packed_linear.cpp src/mha/kernels/gemm_variants.cpp src/mha/kernels/gemm_calibration.cpp src/mha/kernels/variant_calibration.cpp src/mha/kernels/gemv_variants.cpp src/mha/kernels/gemv_calibration.cpp src/mha/kernels/kernel_choice.cpp src/mha/kernels/flash_calibration.cpp src/mha/kernels/exp_variants.cpp src/mha/kernels/weight_formats.cpp src/mha/kernels/quantized_panels.cpp src/mha/kernels/quantized_gemv.cpp src/mha/kernels/quantized_gemv_reference.cpp src/mha/kernels/attention_flash.cpp src/mha/kernels/attention_decode.cpp src/mha/kernels/attention_backward_flash.cpp)
em++ -O3 -DNDEBUG -msimd128 -msse4.1 -std=c++17 -Isrc -isystem "$out/include" "${sources[@]}" \
  -sALLOW_MEMORY_GROWTH=1 -o "$out/kernels.cjs"
# The relaxed-SIMD build's flags too (fused multiply-add; tools/wasm-relaxed-opcodes.mjs renumbers
# clang 14's prototype opcode), run with V8's relaxed-SIMD flag where Node has it behind one.
em++ -O3 -DNDEBUG -msimd128 -msse4.1 -mrelaxed-simd -std=c++17 -Isrc -isystem "$out/include" "${sources[@]}" \
  -sALLOW_MEMORY_GROWTH=1 -o "$out/kernels-relaxed.cjs"
node tools/wasm-relaxed-opcodes.mjs "$out/kernels-relaxed.wasm"
g++ -O3 -DNDEBUG -march=native -std=c++17 -Isrc "${sources[@]}" -o "$out/kernels-native"
echo "### wasm SIMD128 (Node $(node --version), 1 thread)"
node --no-experimental-fetch --no-liftoff "$out/kernels.cjs" "$@"
echo
relaxed_flag=$(node -e "process.stdout.write(WebAssembly.validate(new Uint8Array([0,97,115,109,1,0,0,0,1,5,1,96,0,1,123,3,2,1,0,10,15,1,13,0,65,1,253,15,65,2,253,15,253,128,2,11])) ? '' : '--experimental-wasm-relaxed-simd')")
echo "### wasm relaxed SIMD (Node $(node --version) ${relaxed_flag}, 1 thread)"
node --no-experimental-fetch --no-liftoff $relaxed_flag "$out/kernels-relaxed.cjs" "$@"
echo
echo "### native ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), 1 thread)"
"$out/kernels-native" "$@"
