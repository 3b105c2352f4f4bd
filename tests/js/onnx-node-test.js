// Reads one of ONNX's stored node tests (onnx/backend/test/data/node/<case>: model.onnx with one
// node, test_data_set_0/input_N.pb and output_N.pb TensorProtos) with the package's protobuf
// reader: the node's inputs and outputs by their role in the operator, and each tensor as a
// typed array; and an Attention node's case as a scaledDotProductAttention call.
import { readdirSync, readFileSync } from 'node:fs';

import { decodeOnnxGraph, decodeOnnxTensor } from '../../bindings/js/formats/onnx-protobuf.js';
import { halfToFloat } from '../../bindings/js/formats/float16.js';

// TensorProto.DataType values the attention tests use.
const FLOAT = 1, INT32 = 6, INT64 = 7, BOOL = 9, FLOAT16 = 10, DOUBLE = 11;
const TYPE_NAMES = { [FLOAT]: 'float32', [INT32]: 'int32', [INT64]: 'int64', [BOOL]: 'bool', [FLOAT16]: 'float16', [DOUBLE]: 'float64' };

/** Little-endian raw bytes (an unaligned view) -> values of `dataType`; float16 widened to float32. */
function fromRaw(raw, dataType) {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const read = {
    [FLOAT]: [4, Float32Array, (at) => view.getFloat32(at, true)],
    [DOUBLE]: [8, Float64Array, (at) => view.getFloat64(at, true)],
    [INT32]: [4, Int32Array, (at) => view.getInt32(at, true)],
    [INT64]: [8, Float64Array, (at) => Number(view.getBigInt64(at, true))],
    [BOOL]: [1, Uint8Array, (at) => view.getUint8(at)],
    [FLOAT16]: [2, Float32Array, (at) => halfToFloat(view.getUint16(at, true))],
  }[dataType];
  if (!read) throw new TypeError(`onnx node test: data type ${dataType} is not read here`);
  const [size, Kind, get] = read;
  return Kind.from({ length: raw.byteLength / size }, (_, i) => get(i * size));
}

/**
 * A TensorProto's bytes -> { name, dtype, shape, data } (float16 data widened to a Float32Array,
 * its 16-bit patterns also kept as `bits`, a Uint16Array, for runtimes with Float16Array).
 */
export function readTensorProto(bytes) {
  const t = decodeOnnxTensor(bytes);
  const dtype = TYPE_NAMES[t.dataType];
  let data;
  if (t.rawData && t.rawData.length > 0) data = fromRaw(t.rawData, t.dataType);
  else if (t.dataType === FLOAT) data = Float32Array.from(t.floatData);
  else if (t.dataType === BOOL) data = Uint8Array.from(t.int32Data);
  else if (t.dataType === FLOAT16) data = Float32Array.from(t.int32Data, halfToFloat);
  else if (t.dataType === INT64) data = Float64Array.from(t.int64Data);
  else if (t.dataType === INT32) data = Int32Array.from(t.int32Data);
  else data = new Float32Array(0);
  if (t.dataType !== FLOAT16) return { name: t.name, dtype, shape: t.dims, data };
  const bits = t.rawData?.length > 0 ? Uint16Array.from({ length: t.rawData.length / 2 }, (_, i) => t.rawData[2 * i] | (t.rawData[2 * i + 1] << 8))
    : Uint16Array.from(t.int32Data);
  return { name: t.name, dtype, shape: t.dims, data, bits };
}

/**
 * The case in directory `dir`: { node: { opType, attributes: { name: value } }, inputs: [tensor
 * or null, by the node's input index], outputs: [tensor or null, by the node's output index] }.
 */
export function readNodeTest(dir) {
  const graph = decodeOnnxGraph(readFileSync(new URL('model.onnx', dir)));
  if (graph.node.length !== 1) throw new Error(`${dir}: expected one node, got ${graph.node.length}`);
  const [node] = graph.node;
  const attributes = {};
  for (const a of node.attribute) attributes[a.name] = a.f !== undefined ? a.f : a.i;
  const data = new URL('test_data_set_0/', dir);
  const files = readdirSync(data);
  // The .pb tensors are named after the graph's inputs and outputs, which the node lists by role.
  const byName = new Map();
  for (const file of files) {
    const tensor = readTensorProto(readFileSync(new URL(file, data)));
    byName.set(`${file.startsWith('input') ? 'in' : 'out'}:${tensor.name}`, tensor);
  }
  return {
    node: { opType: node.opType, attributes },
    inputs: node.input.map((name) => (name ? byName.get(`in:${name}`) ?? null : null)),
    outputs: node.output.map((name) => (name ? byName.get(`out:${name}`) ?? null : null)),
  };
}

/**
 * An ONNX Attention node's inputs and attributes as a scaledDotProductAttention call
 * (docs/attention-function.md, "ONNX"): the 3-D form takes numHeads / kvNumHeads; is_causal is
 * offset-aligned (j <= i + P with a past, j <= i + nonpad_kv_seqlen[b] - L with it, else
 * top-left); qk_matmul_output_mode 0 and 1 are the scaled scores (after softcap, as ONNX's
 * reference computes them), 2 the logits, 3 the pattern.
 */
export function onnxAttentionCall({ node, inputs }) {
  const [Q, K, V, mask, pastKey, pastValue, nonpad] = inputs;
  const a = node.attributes;
  const tensor = (t) => t && { data: t.data, shape: t.shape };
  const options = {};
  if (Q.shape.length === 3) {
    options.numHeads = a.q_num_heads;
    options.kvNumHeads = a.kv_num_heads;
  }
  if (a.scale !== undefined) options.scale = a.scale;
  if (a.softcap) options.softcap = a.softcap;
  if (mask) options.attnMask = tensor(mask);
  if (pastKey) {
    options.pastKey = tensor(pastKey);
    options.pastValue = tensor(pastValue);
  }
  if (nonpad) options.kvSeqLens = Int32Array.from(nonpad.data);
  const L = Q.shape.length === 3 ? Q.shape[1] : Q.shape[2];
  if (a.is_causal) {
    if (pastKey) options.causalOffset = pastKey.shape[2];
    else if (nonpad) options.causalOffset = Int32Array.from(nonpad.data, (n) => n - L);
    else options.causal = true;
  }
  const mode = a.qk_matmul_output_mode ?? 0;
  const step = mode === 3 ? 'pattern' : mode === 2 ? 'logits' : a.softcap ? 'capped' : 'scores';
  return { query: tensor(Q), key: tensor(K), value: tensor(V), options, step };
}
