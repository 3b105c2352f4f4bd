// mha-wasm/models' MLP activation in wasm SIMD (src/mha/kernels/mlp_activation.hpp): SwiGLU and
// tanh GeGLU of the stacked [rows, 2I] gate-and-up product, or silu / tanh GELU of [rows, I], in
// place of a JavaScript loop of Math.exp / Math.tanh per element (a decode step's largest
// per-token loop: 2 ms of Qwen2.5-0.5B's 24 layers). Internal: the module carries it under
// MLP_ACTIVATION, as it carries its PLANNER; the exact-erf GELU stays JavaScript.
import { copyOutFloats, HeapScope } from './heap.js';

export const MLP_ACTIVATION = Symbol('mha-wasm MLP activation');

/** The activations the kernel runs. */
export const WASM_ACTIVATIONS = ['silu', 'gelu_tanh'];

/** (x [rows, gated ? 2I : I], rows, I, act, gated) -> Float32Array [rows, I], bound to `module`. */
export function defineMlpActivation(module) {
  return (x, rows, I, act, gated) => {
    if (!WASM_ACTIVATIONS.includes(act)) throw new TypeError(`mlpActivation: act must be one of ${WASM_ACTIVATIONS.join(', ')}, got ${act}`);
    if (x.length !== rows * I * (gated ? 2 : 1)) throw new RangeError(`mlpActivation: x must hold [${rows}, ${gated ? 2 * I : I}], got ${x.length} floats`);
    const scope = new HeapScope(module);
    try {
      const input = scope.copyIn(x);
      const out = scope.allocate(4 * rows * I);
      module.mlpActivation(input, rows, I, act, gated, out);
      return copyOutFloats(module, out, rows * I);
    } finally {
      scope.free();
    }
  };
}
