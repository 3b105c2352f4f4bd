// The opt-in check behind `checkFinite: true`: finds the first NaN or Infinity in a call's inputs
// and names it, before anything runs. Without it a non-finite unmasked input spreads through the
// softmax to its whole batch item (docs/api.md, "NaN and Infinity in the inputs").

/** [i0, i1, ...] of flat index `flat` in a row-major tensor of `shape`. */
function indexOf(flat, shape) {
  const index = new Array(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    index[d] = flat % shape[d];
    flat = Math.floor(flat / shape[d]);
  }
  return index;
}

/**
 * Throws a RangeError naming the first non-finite element of the named tensors (in order), e.g.
 * 'checkFinite: key.data[37] is NaN (index [0, 4, 5] of shape [1, 6, 8])'. `masks` are float masks:
 * -Infinity (blocked) is allowed there.
 */
export function checkFinite(tensors, masks = {}) {
  const check = (name, tensor, allowMinusInfinity) => {
    // (Float32Array, or a float64 layer's Float64Array; bool masks hold no floats)
    if (!tensor || !(tensor.data instanceof Float32Array || tensor.data instanceof Float64Array)) return;
    const { data, shape } = tensor;
    for (let i = 0; i < data.length; i++) {
      const x = data[i];
      if (x - x === 0 || (allowMinusInfinity && x === -Infinity)) continue;  // finite: x - x is 0
      throw new RangeError(`checkFinite: ${name}.data[${i}] is ${x} (index [${indexOf(i, shape).join(', ')}] `
        + `of shape [${shape.join(', ')}])`);
    }
  };
  for (const [name, tensor] of Object.entries(tensors)) check(name, tensor, false);
  for (const [name, mask] of Object.entries(masks)) check(name, mask, true);
}
