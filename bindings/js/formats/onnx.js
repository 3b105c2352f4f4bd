// Quantized weights from an ONNX model, as onnxruntime's exporters store them (transformers.js'
// q4 / q8 / int8 files, onnxruntime's quantize_dynamic / matmul_nbits_quantizer), in the canonical
// layouts layer.loadQuantized takes (docs/quantized.md), without a float32 detour:
// - com.microsoft MatMulNBits, bits 4, block_size 32: B [N, blocks, 16] is already q4's data;
//   scales (float32 or float16) and zero points (packed uint8) copied as they are;
// - DequantizeLinear(W int8/uint8 [K, N], scale, zero point, axis 1 or per tensor) -> MatMul,
//   MatMulInteger(x, W, x_zp, W_zp) -> Cast -> Mul(.., x_scale * W_scale) (quantize_dynamic), and
//   com.microsoft DynamicQuantizeMatMul / MatMulIntegerToFloat: int8, one scale per output
//   feature, symmetric (an int8 zero point of 0, or uint8 weights whose q - zero point fits int8).
// Anything else is an error saying what was found and why it cannot be held as is.
import { decodeOnnxGraph } from './onnx-protobuf.js';
import { halfToFloat } from './float16.js';
import { describe } from '../api/validate.js';

const FLOAT = 1, UINT8 = 2, INT8 = 3, INT32 = 6, INT64 = 7, FLOAT16 = 10, DOUBLE = 11;
const TYPE_NAMES = { 1: 'float', 2: 'uint8', 3: 'int8', 6: 'int32', 7: 'int64', 10: 'float16', 11: 'double', 16: 'bfloat16', 21: 'uint4', 22: 'int4' };
const typeName = (t) => TYPE_NAMES[t] ?? `data type ${t}`;

function asBytes(bytes) {
  if (bytes instanceof Uint8Array) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  throw new TypeError(`readOnnx: bytes must be a Uint8Array or an ArrayBuffer (the .onnx file), got ${describe(bytes)}`);
}

/** An initializer's elements as a typed array (copied, so it outlives the file's buffer). */
function tensorValues(t) {
  const count = t.dims.reduce((n, d) => n * d, 1);
  if (t.dataLocation === 1 || t.externalData.length) {
    throw new TypeError(`readOnnx: initializer '${t.name}' is stored in an external file (ONNX external data); `
      + 'load a model with its weights inside (onnx.save_model(..., save_as_external_data=False))');
  }
  const raw = t.rawData;
  const fromRaw = (Type) => {
    if (raw.byteLength !== count * Type.BYTES_PER_ELEMENT) {
      throw new RangeError(`readOnnx: initializer '${t.name}': raw_data has ${raw.byteLength} bytes for ${count} ${typeName(t.dataType)} elements`);
    }
    const out = new Type(count);
    new Uint8Array(out.buffer).set(raw);
    return out;
  };
  switch (t.dataType) {
    case FLOAT: return raw ? fromRaw(Float32Array) : Float32Array.from(t.floatData);
    case DOUBLE: return Float32Array.from(raw ? fromRaw(Float64Array) : []);
    case FLOAT16: return Float32Array.from(raw ? fromRaw(Uint16Array) : t.int32Data, halfToFloat);  // exact
    case UINT8: return raw ? fromRaw(Uint8Array) : Uint8Array.from(t.int32Data);
    case INT8: return raw ? fromRaw(Int8Array) : Int8Array.from(t.int32Data);
    case INT32: return raw ? fromRaw(Int32Array) : Int32Array.from(t.int32Data);
    case INT64: return raw ? Float64Array.from(fromRaw(BigInt64Array), Number) : Float64Array.from(t.int64Data);
    default: throw new TypeError(`readOnnx: initializer '${t.name}' has ${typeName(t.dataType)} elements, which this reader does not take`);
  }
}

function attributes(node) {
  return Object.fromEntries(node.attribute.map((a) => [a.name, a.ints.length ? a.ints : a.i ?? a.f]));
}

/**
 * The model's linear layers with constant weights, and its float initializers:
 * { linears: Map<name, { op, node, dtype, shape: [out, in], data, scales, zeroPoints }>,
 *   floats(name) -> Float32Array }. A linear is found by its MatMul-like node's name, its output,
 * or its weight initializer's name (linear(name) below).
 */
export function readOnnx(bytes) {
  const graph = decodeOnnxGraph(asBytes(bytes));
  const initializers = new Map(graph.initializer.map((t) => [t.name, t]));
  const producers = new Map();
  const consumers = new Map();
  for (const node of graph.node) {
    for (const output of node.output) producers.set(output, node);
    for (const input of node.input) (consumers.get(input) ?? consumers.set(input, []).get(input)).push(node);
  }
  const values = new Map();
  const value = (name) => {
    if (!values.has(name)) {
      const t = initializers.get(name);
      values.set(name, t ? { dims: t.dims, type: t.dataType, data: tensorValues(t) } : null);
    }
    return values.get(name);
  };

  const linears = new Map();
  // A linear layer is found by its node's name, its output (the projection's result), its weight
  // initializer's name, or other names of the same thing (the dequantized weight, MatMulInteger's raw output).
  const add = (node, weightName, linear, { output = node.output[0], aliases = [] } = {}) => {
    const entry = { op: node.opType, node: node.name, output, weight: weightName, ...linear };
    for (const key of [node.name, output, weightName, node.output[0], ...aliases]) if (key) linears.set(key, entry);
  };
  for (const node of graph.node) {
    const what = `readOnnx: ${node.opType} '${node.name || node.output[0]}'`;
    if (node.opType === 'MatMulNBits') {
      add(node, node.input[1], matMulNBits(what, node, value));
    } else if (node.opType === 'MatMul') {
      const dq = producers.get(node.input[1]);
      if (dq?.opType === 'DequantizeLinear' && value(dq.input[0])) {
        const w = value(dq.input[0]);
        add(node, dq.input[0], int8Linear(what, w, value(dq.input[1]), dq.input[2] ? value(dq.input[2]) : null,
          attributes(dq).axis ?? 1), { aliases: [dq.output[0]] });
      }
    } else if (node.opType === 'DynamicQuantizeMatMul' || node.opType === 'MatMulIntegerToFloat') {
      const [w, scale, zp] = node.opType === 'DynamicQuantizeMatMul' ? [1, 2, 3] : [1, 3, 5];
      if (value(node.input[w])) {
        add(node, node.input[w], int8Linear(what, value(node.input[w]), value(node.input[scale]),
          node.input[zp] ? value(node.input[zp]) : null, 1));
      }
    } else if (node.opType === 'MatMulInteger' && value(node.input[1])) {
      // quantize_dynamic: MatMulInteger -> Cast -> Mul(.., x_scale * W_scale) (either order)
      const { scale, output } = weightScaleOfMatMulInteger(node, consumers, producers, value) ?? {};
      if (!scale) throw new TypeError(`${what}: its weight scale was not found (expected Cast -> Mul by x_scale * W_scale, as quantize_dynamic writes)`);
      add(node, node.input[1], int8Linear(what, value(node.input[1]), scale, node.input[3] ? value(node.input[3]) : null, 1), { output });
    }
  }

  return {
    linears,
    /** The linear layer `name` (its node's name, its output's or its weight initializer's), as loadQuantized takes it. */
    linear(name) {
      const found = linears.get(name);
      if (!found) {
        const names = [...new Set([...linears.values()].map((l) => l.node || l.output))];
        throw new TypeError(`readOnnx: no quantized linear layer named '${name}'; found ${names.length}: `
          + `${names.slice(0, 8).join(', ')}${names.length > 8 ? ', ...' : ''}`);
      }
      return found;
    },
    /** A float initializer (float32, float16 or double) as a Float32Array. */
    floats(name) {
      const t = initializers.get(name);
      if (!t) throw new TypeError(`readOnnx: no initializer named '${name}'`);
      if (![FLOAT, FLOAT16, DOUBLE].includes(t.dataType)) throw new TypeError(`readOnnx: initializer '${name}' holds ${typeName(t.dataType)}, not floats`);
      return value(name).data;
    },
  };
}

function matMulNBits(what, node, value) {
  const { K, N, bits, block_size: block } = attributes(node);
  if (bits !== 4) throw new TypeError(`${what}: bits ${bits}; mha-wasm's q4 holds 4-bit weights (bits 4)`);
  if (block !== 32) throw new TypeError(`${what}: block_size ${block}; mha-wasm's q4 uses blocks of 32 input features`);
  if (node.input[4]) throw new TypeError(`${what}: g_idx (act-order) is not supported: blocks must follow the input order`);
  const blocks = Math.ceil(K / 32);
  const b = value(node.input[1]), scales = value(node.input[2]);
  if (!b || !scales) throw new TypeError(`${what}: its weights and scales must be initializers`);
  if (b.data.length !== N * blocks * 16) throw new RangeError(`${what}: B has ${b.data.length} bytes, expected N * ceil(K / 32) * 16 = ${N * blocks * 16}`);
  if (scales.data.length !== N * blocks) throw new RangeError(`${what}: scales has ${scales.data.length} elements, expected N * ceil(K / 32) = ${N * blocks}`);
  let zeroPoints = null;
  if (node.input[3]) {
    const zp = value(node.input[3]);
    if (!zp || zp.type !== UINT8) {
      throw new TypeError(`${what}: zero points must be a uint8 initializer (4-bit, packed two per byte), got ${zp ? typeName(zp.type) : 'a computed value'}`);
    }
    zeroPoints = zp.data;
  }
  return { dtype: 'q4', shape: [N, K], data: b.data, scales: Float32Array.from(scales.data), zeroPoints };
}

/**
 * int8 weights [K, N] (input features by output features, as MatMul's B) -> q [N, K] with one
 * scale per output feature. Symmetric only: q - zero point must fit int8.
 */
function int8Linear(what, w, scale, zeroPoint, axis) {
  if (w.type !== INT8 && w.type !== UINT8) throw new TypeError(`${what}: weights of ${typeName(w.type)}; int8 import takes int8 or uint8`);
  if (w.dims.length !== 2) throw new RangeError(`${what}: weights of shape [${w.dims.join(', ')}]; expected [in, out]`);
  const [K, N] = w.dims;
  if (!scale) throw new TypeError(`${what}: its scale must be an initializer`);
  const perColumn = scale.data.length === N && N !== 1;
  if (!(scale.data.length === 1 || (perColumn && (axis === 1 || axis === -1)))) {
    throw new TypeError(`${what}: a scale of ${scale.data.length} elements (axis ${axis}); int8 takes one per output feature (axis 1) or one in all`);
  }
  const zp = (n) => (zeroPoint ? zeroPoint.data[zeroPoint.data.length === 1 ? 0 : n] : 0);  // ONNX's default: 0
  const data = new Int8Array(N * K);
  for (let k = 0; k < K; k++) {
    for (let n = 0; n < N; n++) {
      const q = w.data[k * N + n] - zp(n);
      if (q < -128 || q > 127) {
        throw new RangeError(`${what}: asymmetric weights (zero point ${zp(n)}, a weight at ${w.data[k * N + n]}): `
          + 'q - zero point does not fit int8, so mha-wasm\'s symmetric int8 cannot hold them as they are; dequantize them and '
          + "use loadStateDict on a weightDtype 'int8' layer (which quantizes again)");
      }
      data[n * K + k] = q;
    }
  }
  const scales = Float32Array.from({ length: N }, (_, n) => scale.data[perColumn ? n : 0]);
  return { dtype: 'int8', shape: [N, K], data, scales, zeroPoints: null };
}

/** The W_scale of quantize_dynamic's MatMulInteger -> Cast -> Mul(y, x_scale * W_scale). */
function weightScaleOfMatMulInteger(node, consumers, producers, value) {
  const cast = (consumers.get(node.output[0]) ?? []).find((n) => n.opType === 'Cast');
  const mul = cast && (consumers.get(cast.output[0]) ?? []).find((n) => n.opType === 'Mul');
  if (!mul) return null;
  const other = mul.input.find((i) => i !== cast.output[0]);
  const scales = producers.get(other);
  const scale = scales?.opType === 'Mul' ? scales.input.map(value).find((v) => v !== null) : value(other);  // or a constant product
  return scale ? { scale, output: mul.output[0] } : null;
}
