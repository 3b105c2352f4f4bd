// The quantized weight formats, stated in plain JavaScript (the reference twin of the C++ code in
// src/mha/, bit for bit; /work/CONTRACT.md "Quantized weights" and docs/quantized.md state them).
// Every float32 operation of the definition is one Math.fround of a double operation, which is
// the correctly rounded float32 result (a double holds a product or quotient of two floats
// closely enough to round once). Layouts are the canonical external ones (row = output feature,
// column = input feature), which loadQuantized takes:
//   int8: data Int8Array [out][in], scales Float32Array [out]
//   q4:   data Uint8Array [out][ceil(in/32)][16] (element j of a block in byte j/2, low nibble for
//         even j: onnxruntime MatMulNBits' B), scales Float32Array [out][ceil(in/32)], zeroPoints
//         null (8) or Uint8Array [out][ceil(ceil(in/32)/2)], two per byte, low nibble first
//   f16:  data Uint16Array [out][in] (IEEE binary16 bits)
import { floatToHalf, halfToFloat } from '../../bindings/js/formats/float16.js';

const f = Math.fround;
export const Q4_BLOCK = 32;
export const WEIGHT_DTYPES = ['f32', 'f16', 'int8', 'q4'];

/** C's roundf: round half away from zero (|x| < 2^24 here, so + 0.5 is exact in a double). */
const roundf = (x) => (x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5));

/** int8, one scale per output row: ggml q8_0's arithmetic with the row as the block. */
export function quantizeInt8(w, rows, cols) {
  const data = new Int8Array(rows * cols), scales = new Float32Array(rows);
  for (let o = 0; o < rows; o++) {
    let amax = 0;
    for (let i = 0; i < cols; i++) amax = Math.max(amax, Math.abs(w[o * cols + i]));
    const d = f(amax / 127), id = d ? f(1 / d) : 0;
    scales[o] = d;
    for (let i = 0; i < cols; i++) {
      data[o * cols + i] = Math.max(-127, Math.min(127, roundf(f(w[o * cols + i] * id))));
    }
  }
  return { dtype: 'int8', shape: [rows, cols], data, scales, zeroPoints: null };
}

export function dequantizeInt8({ data, scales }, rows, cols) {
  const w = new Float32Array(rows * cols);
  for (let o = 0; o < rows; o++) for (let i = 0; i < cols; i++) w[o * cols + i] = f(data[o * cols + i] * scales[o]);
  return w;
}

/** Blocks of 32 per row; the last one of a row whose length is not a multiple of 32 padded with zeros. */
export const q4Blocks = (cols) => Math.ceil(cols / Q4_BLOCK);

/** q4: ggml q4_0's arithmetic (scale = the largest-magnitude element / -8) in MatMulNBits' layout. */
export function quantizeQ4(w, rows, cols) {
  const blocks = q4Blocks(cols);
  const data = new Uint8Array(rows * blocks * 16), scales = new Float32Array(rows * blocks);
  for (let o = 0; o < rows; o++) {
    for (let b = 0; b < blocks; b++) {
      const x = (j) => (b * Q4_BLOCK + j < cols ? w[o * cols + b * Q4_BLOCK + j] : 0);
      let max = 0, amax = 0;
      for (let j = 0; j < Q4_BLOCK; j++) {
        if (Math.abs(x(j)) > amax) { amax = Math.abs(x(j)); max = x(j); }  // the first on ties
      }
      const d = f(max / -8), id = d ? f(1 / d) : 0;
      scales[o * blocks + b] = d;
      const at = (o * blocks + b) * 16;
      for (let j = 0; j < Q4_BLOCK; j++) {
        const q = Math.min(15, Math.trunc(f(f(x(j) * id) + 8.5)));  // (int)(x * id + 8.5f), in float32 steps
        data[at + (j >> 1)] |= j & 1 ? q << 4 : q;
      }
    }
  }
  return { dtype: 'q4', shape: [rows, cols], data, scales, zeroPoints: null };
}

/** The zero point of block b of row o: 8 without zeroPoints, else its nibble (low first). */
export function q4ZeroPoint(zeroPoints, blocks, o, b) {
  if (!zeroPoints) return 8;
  const byte = zeroPoints[o * Math.ceil(blocks / 2) + (b >> 1)];
  return b & 1 ? byte >> 4 : byte & 15;
}

export function dequantizeQ4({ data, scales, zeroPoints }, rows, cols) {
  const blocks = q4Blocks(cols), w = new Float32Array(rows * cols);
  for (let o = 0; o < rows; o++) {
    for (let i = 0; i < cols; i++) {
      const b = Math.floor(i / Q4_BLOCK), j = i % Q4_BLOCK;
      const byte = data[(o * blocks + b) * 16 + (j >> 1)];
      const q = j & 1 ? byte >> 4 : byte & 15;
      w[o * cols + i] = f((q - q4ZeroPoint(zeroPoints, blocks, o, b)) * scales[o * blocks + b]);
    }
  }
  return w;
}

/** f16: IEEE binary16, round to nearest even. */
export function quantizeF16(w, rows, cols) {
  return { dtype: 'f16', shape: [rows, cols], data: Uint16Array.from(w, floatToHalf), scales: null, zeroPoints: null };
}

export function dequantizeF16({ data }) {
  return Float32Array.from(data, halfToFloat);
}

const FORMATS = {
  int8: [quantizeInt8, dequantizeInt8],
  q4: [quantizeQ4, dequantizeQ4],
  f16: [quantizeF16, dequantizeF16],
};

/** A [rows, cols] float32 matrix in `dtype` ('f32' returns a copy). */
export function quantize(dtype, w, rows, cols) {
  if (dtype === 'f32') return { dtype, shape: [rows, cols], data: Float32Array.from(w), scales: null, zeroPoints: null };
  return FORMATS[dtype][0](w, rows, cols);
}

export function dequantize(q) {
  if (q.dtype === 'f32') return Float32Array.from(q.data);
  return FORMATS[q.dtype][1](q, ...q.shape);
}

/** What a layer with weightDtype `dtype` holds for a float32 matrix: dequantize(quantize(w)). */
export const roundTrip = (dtype, w, rows, cols) => dequantize(quantize(dtype, w, rows, cols));

/** The projection matrices a layer quantizes (everything else of a state dict stays float32). */
export const isProjectionWeight = (name) => /(^|_)(in_proj_weight|q_proj_weight|k_proj_weight|v_proj_weight)$|^out_proj\.weight$/.test(name);

/**
 * A state dict as a layer of `dtype` stores it, under the layer's keys (`shapes`: its
 * stateDictShapes(); separate q/k/v weights of a layer that fuses them are fused first, as
 * loadStateDict does): its projection matrices round-tripped, the rest copied.
 */
export function storedStateDict(dtype, stateDict, shapes) {
  let entries = Object.entries(stateDict);
  if (shapes.in_proj_weight && !stateDict.in_proj_weight) {
    const { q_proj_weight: q, k_proj_weight: k, v_proj_weight: v, ...rest } = stateDict;
    const fused = new Float32Array(q.length + k.length + v.length);
    fused.set(q);
    fused.set(k, q.length);
    fused.set(v, q.length + k.length);
    entries = [['in_proj_weight', fused], ...Object.entries(rest)];
  }
  return Object.fromEntries(entries.map(([name, w]) => {
    if (!isProjectionWeight(name) || dtype === 'f32') return [name, Float32Array.from(w)];
    const [rows, cols] = shapes[name];
    return [name, roundTrip(dtype, w, rows, cols)];
  }));
}
