// Quantized weights on the JavaScript side: the checks of
// loadQuantized's tensors (what only JavaScript can see: typed-array kinds and lengths against
// the layer's shapes) before anything is copied into wasm memory. The formats themselves are
// stated in docs/quantized.md and computed by the core (src/mha/kernels/weight_formats.hpp).
import { describe, withArticle } from '../api/validate.js';

const QUANTIZED_DTYPES = ['f16', 'int8', 'q4'];
/** Input features per q4 block (one scale each; a row's last block padded with zeros). */
export const Q4_BLOCK = 32;

/**
 * The typed arrays and element counts of a [rows, cols] projection in `dtype`'s canonical layout
 * (row = output feature, column = input feature; docs/quantized.md).
 */
export function quantizedLayout(dtype, rows, cols) {
  const blocks = Math.ceil(cols / Q4_BLOCK);
  switch (dtype) {
    case 'int8': return {
      data: { Array: Int8Array, length: rows * cols, shape: `[${rows}, ${cols}]` },
      scales: { length: rows, shape: `[${rows}]` },
    };
    case 'q4': return {
      data: { Array: Uint8Array, length: rows * blocks * 16, shape: `[${rows}, ${blocks}, 16]` },
      scales: { length: rows * blocks, shape: `[${rows}, ${blocks}]` },
      zeroPoints: { length: rows * Math.ceil(blocks / 2), shape: `[${rows}, ${Math.ceil(blocks / 2)}]` },
    };
    default: return { data: { Array: Uint16Array, length: rows * cols, shape: `[${rows}, ${cols}] (binary16 bits)` } };
  }
}

/**
 * One loadQuantized entry { dtype, data, scales, zeroPoints?, shape? } for projection `name` of
 * shape [rows, cols]. Returns { dtype, data, scales, zeroPoints } (null where absent).
 */
export function checkQuantizedTensor(name, tensor, [rows, cols]) {
  const what = `loadQuantized: weights['${name}']`;
  if (tensor === null || typeof tensor !== 'object' || ArrayBuffer.isView(tensor) || Array.isArray(tensor)) {
    throw new TypeError(`${what} must be { dtype, data, scales, zeroPoints? } (a quantized [${rows}, ${cols}] matrix) `
      + `or a Float32Array, got ${describe(tensor)}`);
  }
  const { dtype } = tensor;
  if (!QUANTIZED_DTYPES.includes(dtype)) {
    throw new TypeError(`${what}.dtype must be one of ${QUANTIZED_DTYPES.map((d) => `'${d}'`).join(', ')} `
      + `(float32 weights are plain Float32Arrays), got ${describe(dtype)}`);
  }
  if (tensor.shape !== undefined && (!Array.isArray(tensor.shape) || tensor.shape.join(',') !== `${rows},${cols}`)) {
    throw new RangeError(`${what}.shape must be [${rows}, ${cols}] (the layer's [out, in] for '${name}'), got `
      + `${Array.isArray(tensor.shape) ? `[${tensor.shape.join(', ')}]` : describe(tensor.shape)}`);
  }
  const layout = quantizedLayout(dtype, rows, cols);
  const check = (field, array, Kind, { length, shape }) => {
    if (!(array instanceof Kind)) {
      throw new TypeError(`${what}.${field} must be ${withArticle(Kind.name)} ${shape} for dtype '${dtype}', got ${describe(array)}`);
    }
    if (array.length !== length) {
      throw new RangeError(`${what}.${field}: dtype '${dtype}' of a [${rows}, ${cols}] matrix needs ${length} elements `
        + `(${Kind.name} ${shape}), got ${array.length}`);
    }
    return array;
  };
  const data = check('data', tensor.data, layout.data.Array, layout.data);
  let scales = null, zeroPoints = null;
  if (layout.scales) scales = check('scales', tensor.scales, Float32Array, layout.scales);
  else if (tensor.scales != null) throw new TypeError(`${what}.scales: dtype '${dtype}' has no scales; omit it`);
  if (tensor.zeroPoints != null) {
    if (!layout.zeroPoints) throw new TypeError(`${what}.zeroPoints: only dtype 'q4' takes zero points (int8 is symmetric); omit it`);
    zeroPoints = check('zeroPoints', tensor.zeroPoints, Uint8Array, layout.zeroPoints);
  }
  return { dtype, data, scales, zeroPoints };
}

/**
 * The message of a quantized layer's parameter gradients (backward's result.params). `how`:
 * "weightDtype 'int8'" or "loadQuantized".
 */
export function noParameterGradients(how) {
  return `backward: params: this layer holds quantized projection weights (${how}), so it has no parameter `
    + 'gradients; backward gives the inputs\' gradients, through the dequantized weights. To train, use a '
    + "weightDtype 'f32' layer, then load its state dict into a quantized one";
}

/**
 * A layer's method under this symbol, (which: 'q' | 'k' | 'v' | 'o') => { dtype, data, scales,
 * zeroPoints } | null, gives a projection it holds quantized in the canonical layout (copied out
 * of the core), or null for a float32 one: how the WebGPU backend uploads the packed bytes. No
 * public API.
 */
export const QUANTIZED_PROJECTION = Symbol('mha-wasm quantized projection');
