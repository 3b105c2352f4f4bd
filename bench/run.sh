#!/usr/bin/env bash
# `npm run bench`: installs the peers (bench/package.json and bench/debian-packages.txt, never
# part of npm test), builds the wasm builds and the native Google Benchmark binary, then prints
# the tables (bench/run.mjs, bench/variants.mjs, bench/decode.mjs, bench/prefill-*.mjs, bench/training.mjs).
# Extra arguments go to run.mjs, e.g. `npm run bench -- --shapes=0,3 --js=no`.
set -euo pipefail
cd "$(dirname "$0")/.."
# --ignore-scripts: onnxruntime-node's install script only fetches optional CUDA binaries.
npm ci --prefix bench --no-audit --no-fund --ignore-scripts
bash tools/install-debian-packages.sh bench/debian-packages.txt
bash tools/build-wasm.sh
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release > build/native-configure.log 2>&1 || { cat build/native-configure.log; exit 1; }
cmake --build build/native -j2 --target mha_bench
node bench/run.mjs "$@"
# The variants of today's models (rotary, GQA, sliding window, ALiBi, softcap, sinks) against the
# plain causal layer of the same shape, wasm 1 thread.
node bench/variants.mjs
# Decoding: one-token steps with a KV cache (1 and 2 threads), bytes read and GB/s, the memory
# bound and onnxruntime-web on the same step; then over a stack of 8 distinct layers (their
# weights exceed the last-level cache, as a real model's do), per layer.
node --no-liftoff bench/decode.mjs
node --no-liftoff bench/decode.mjs --layers=8
# Prefill through a KV cache against forward(x, { causal: true }) on the same shapes (target: within 5%).
node bench/prefill-cache.mjs
# Prefill with quantized weights (int8, q4, f16) against float32, the whole layer (target: within 1.15x).
node --no-liftoff bench/prefill-quantized.mjs --clock=cpu
# The attention function (scaledDotProductAttention) against the layer's attention stage and
# onnxruntime-web's wasm Attention (opset 23) / contrib MultiHeadAttention on the same inputs.
node bench/attention-function.mjs --ort --clock=cpu
# Training: forward + backward against forward alone (wasm 1 and 2 threads, native), tfjs' wasm and
# cpu backends and PyTorch (OpenBLAS) on the same step, L = S = 8192 in the wasm builds' memory.
node bench/training.mjs
# WebGPU: our backend against our wasm and onnxruntime-web's WebGPU MultiHeadAttention (JSEP and
# native builds, subgroups on and off) in headless Chromium on its adapter (SwiftShader here: ratios,
# not a GPU's speed), and decode steps against its GroupQueryAttention graph with the cache on the GPU,
# every output checked against float64 first; then ours against wasm in Node (Dawn), and where one
# beats the other (the crossover sweep).
node bench/webgpu.mjs
LD_LIBRARY_PATH=/usr/lib/chromium VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/webgpu-node.mjs
LD_LIBRARY_PATH=/usr/lib/chromium VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/webgpu-crossover-node.mjs
