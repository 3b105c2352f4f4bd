// Loads one wasm build from dist/ by name in Node, for the tests and the benchmark (the
// package's own loader, which picks a build for the user, is bindings/js/). Returns the raw
// embind module plus the MultiHeadAttention class bound to it.
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import v8 from 'node:v8';

import { defineAttentionFunction } from '../bindings/js/core/attention-function.js';
import { defineKerasMultiHeadAttention } from '../bindings/js/keras/keras.js';
import { defineMultiHeadAttention } from '../bindings/js/core/layer.js';
import { defineLinear } from '../bindings/js/core/linear.js';
import { defineLinearLayer } from '../bindings/js/core/linear-layer.js';
import { defineMlpActivation, MLP_ACTIVATION } from '../bindings/js/core/mlp-activation.js';
import { defineRowNorm, ROW_NORM } from '../bindings/js/core/row-norm.js';

export const BUILDS = ['mha-simd', 'mha-scalar', 'mha-simd-threads', 'mha-relaxed-simd', 'mha-relaxed-simd-threads'];
const DIST = new URL('../dist/', import.meta.url);

/** @param {'mha-simd' | 'mha-scalar' | 'mha-simd-threads' | 'mha-relaxed-simd' | 'mha-relaxed-simd-threads'} name */
export async function loadBuild(name) {
  // Node 20's V8 has relaxed SIMD behind a flag (shipped from V8 11.4, Node 22): the tests and
  // the benchmark turn it on for these builds, as Chrome and Node 22+ have it.
  if (name.includes('relaxed')) v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  const { default: createMhaModule } = await import(new URL(`${name}.mjs`, DIST));
  const args = { wasmBinary: await readFile(new URL(`${name}.wasm`, DIST)) };  // TOOLCHAIN quirk 6
  if (name.endsWith('-threads')) {
    // Node has no web Worker: the build makes its pthreads on node:worker_threads
    // (src/mha/runtime/wasm_threads_pre.js).
    args.nodeWorkerThreads = await import('node:worker_threads');
    args.hardwareConcurrency = os.availableParallelism();
    // As the package's Node loader (bindings/js/platform.node.js): Emscripten's browser glue warns
    // once that the main thread blocks on its workers, which is how a forward call waits in Node.
    args.printErr = (text) => text.startsWith('Blocking on the main thread') || console.error(text);
  }
  const module = await createMhaModule(args);
  // The kernel variants are chosen now, at load, as init() does (what the choice keeps lives as
  // long as the module: made at a fixed point, not inside a test's heap window): MHA_KERNELS
  // (gemm=NAME,gemv_f16=NAME,gemv_q4=NAME) forces them, else this machine's calibration (src/mha/kernels/kernel_choice.hpp).
  if (process.env.MHA_KERNELS && module.forceKernels) {
    const refused = module.forceKernels(process.env.MHA_KERNELS, false);
    if (refused) throw new Error(`MHA_KERNELS: ${refused}`);
  }
  module.kernelChoice?.();
  const MultiHeadAttention = defineMultiHeadAttention(module);
  return { module, MultiHeadAttention, KerasMultiHeadAttention: defineKerasMultiHeadAttention(MultiHeadAttention), ...defineLinear(module), Linear: defineLinearLayer(module), ...defineAttentionFunction(module), [MLP_ACTIVATION]: defineMlpActivation(module), [ROW_NORM]: defineRowNorm(module) };
}
