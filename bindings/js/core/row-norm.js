// mha-wasm/models' norms of the residual stream in wasm (src/mha/kernels/row_norm.hpp, in double):
// LayerNorm (a bias given) or RMSNorm of rows [rows, E], with the residual add before it fused in,
// in place of elementwise.js' JavaScript loops over tokens × width (which stay the hooked path's
// reference, where the scale and the normalized rows are hook points of their own). Internal: the
// module carries it under ROW_NORM, as it carries MLP_ACTIVATION.
import { copyOutFloats, copyOutFloatsInto, HeapScope } from './heap.js';

export const ROW_NORM = Symbol('mha-wasm row norm');

/**
 * (x [rows, E], E, weight [E], bias [E] | null, eps, add [rows, E] | null) -> Float32Array [rows, E],
 * bound to `module`. With `add`, x += add first, in place (x keeps the sum: the residual stream).
 */
export function defineRowNorm(module) {
  return (x, E, weight, bias, eps, add = null) => {
    if (x.length % E !== 0 || weight.length !== E || (bias && bias.length !== E) || (add && add.length !== x.length)) {
      throw new RangeError(`rowNorm: x must hold [rows, ${E}] and weight${bias ? ', bias' : ''} [${E}]${add ? ', add as x' : ''}; got ${x.length}, ${weight.length}${bias ? `, ${bias.length}` : ''}${add ? `, ${add.length}` : ''} floats`);
    }
    const rows = x.length / E;
    const scope = new HeapScope(module);
    try {
      const input = scope.copyIn(x);
      const out = scope.allocate(4 * x.length);
      module.rowNorm(input, add ? scope.copyIn(add) : 0, out, rows, E, scope.copyIn(weight), bias ? scope.copyIn(bias) : 0, eps);
      if (add) copyOutFloatsInto(module, input, x);
      return copyOutFloats(module, out, x.length);
    } finally {
      scope.free();
    }
  };
}
