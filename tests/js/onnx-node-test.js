// Reads one of ONNX's stored node tests (onnx/backend/test/data/node/<case>: model.onnx with one
// node, test_data_set_0/input_N.pb and output_N.pb TensorProtos) with the package's protobuf
// reader: the node's inputs and outputs by their role in the operator, and each tensor as a
// typed array.
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

/** A TensorProto's bytes -> { name, dtype, shape, data } (float16 data widened to a Float32Array). */
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
  return { name: t.name, dtype, shape: t.dims, data };
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
