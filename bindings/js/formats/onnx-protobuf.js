// A minimal reader of the protobuf wire format, for the parts of an ONNX model that hold weights
// (onnx.proto: ModelProto.graph -> GraphProto.node / initializer; NodeProto; TensorProto;
// AttributeProto). It decodes only the fields listed below and skips the rest, so a model of any
// size costs one pass over its bytes and views (not copies) of the tensors' raw data.

/** The fields read, by message: field number -> [name, kind]; 'repeated' fields collect arrays. */
const MESSAGES = {
  model: { 7: ['graph', 'message:graph'] },
  graph: {
    1: ['node', 'repeated message:node'], 5: ['initializer', 'repeated message:tensor'], 2: ['name', 'string'],
    11: ['input', 'repeated message:valueInfo'], 12: ['output', 'repeated message:valueInfo'],
  },
  valueInfo: { 1: ['name', 'string'] },
  node: {
    1: ['input', 'repeated string'], 2: ['output', 'repeated string'], 3: ['name', 'string'], 4: ['opType', 'string'],
    5: ['attribute', 'repeated message:attribute'], 7: ['domain', 'string'],
  },
  tensor: {
    1: ['dims', 'repeated int'], 2: ['dataType', 'int'], 8: ['name', 'string'], 9: ['rawData', 'bytes'],
    4: ['floatData', 'repeated float'], 5: ['int32Data', 'repeated int'], 7: ['int64Data', 'repeated int'],
    13: ['externalData', 'repeated bytes'], 14: ['dataLocation', 'int'],
  },
  attribute: {
    1: ['name', 'string'], 2: ['f', 'float'], 3: ['i', 'int'], 4: ['s', 'bytes'], 7: ['floats', 'repeated float'],
    8: ['ints', 'repeated int'], 20: ['type', 'int'],
  },
};

const text = new TextDecoder();

class Reader {
  constructor(bytes, start, end) {
    this.bytes = bytes;
    this.at = start;
    this.end = end;
  }

  /** A varint as a Number (exact to 2^53; int64 fields here are dims and attributes). */
  varint() {
    let value = 0, scale = 1, byte;
    do {
      if (this.at >= this.end) throw new RangeError('readOnnx: the model is truncated (a varint runs past its message)');
      byte = this.bytes[this.at++];
      value += (byte & 0x7f) * scale;
      scale *= 128;
    } while (byte & 0x80);
    // Negative int64 values are 10-byte two's complement: fold them back (dims and attributes
    // are small, so the low 53 bits decide).
    return value >= 2 ** 63 ? value - 2 ** 64 : value;
  }

  /** [start, end) of a length-delimited field. */
  span() {
    const length = this.varint();
    const start = this.at;
    if (start + length > this.end) throw new RangeError('readOnnx: the model is truncated (a field runs past its message)');
    this.at += length;
    return [start, start + length];
  }

  skip(wire) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.at += 8;
    else if (wire === 2) this.span();
    else if (wire === 5) this.at += 4;
    else throw new TypeError(`readOnnx: not an ONNX model (protobuf wire type ${wire})`);
  }
}

function scalar(reader, wire, kind, view) {
  if (kind === 'int') return reader.varint();
  if (kind === 'float') {
    const value = view.getFloat32(reader.at, true);
    reader.at += 4;
    return value;
  }
  const [start, end] = reader.span();
  if (kind === 'string') return text.decode(reader.bytes.subarray(start, end));
  return reader.bytes.subarray(start, end);  // bytes: a view
}

function decode(bytes, start, end, type, view) {
  const fields = MESSAGES[type];
  const out = {};
  for (const [name, kind] of Object.values(fields)) if (kind.startsWith('repeated')) out[name] = [];
  const reader = new Reader(bytes, start, end);
  while (reader.at < reader.end) {
    const key = reader.varint();
    const field = Math.floor(key / 8), wire = key % 8;
    const spec = fields[field];
    if (!spec) {
      reader.skip(wire);
      continue;
    }
    const [name, kind] = spec;
    const repeated = kind.startsWith('repeated ');
    const base = repeated ? kind.slice('repeated '.length) : kind;
    let values;
    if (base.startsWith('message:')) {
      const [s, e] = reader.span();
      values = [decode(bytes, s, e, base.slice('message:'.length), view)];
    } else if (wire === 2 && (base === 'int' || base === 'float')) {  // a packed repeated scalar
      const [s, e] = reader.span();
      const inner = new Reader(bytes, s, e);
      values = [];
      while (inner.at < e) values.push(scalar(inner, base === 'int' ? 0 : 5, base, view));
    } else {
      values = [scalar(reader, wire, base, view)];
    }
    if (repeated) out[name].push(...values);
    else out[name] = values[0];
  }
  return out;
}

/**
 * One TensorProto's bytes (an ONNX test's input_0.pb): { name, dims, dataType, rawData, floatData,
 * int32Data, int64Data, ... } as the fields were stored.
 */
export function decodeOnnxTensor(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return decode(bytes, 0, bytes.length, 'tensor', view);
}

/**
 * The graph of an ONNX model's bytes: { name, node: [{ name, opType, domain, input, output,
 * attribute }], initializer: [{ name, dims, dataType, rawData, floatData, ... }] }.
 */
export function decodeOnnxGraph(bytes) {  // (input / output: [{ name }], the graph's signature)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const model = decode(bytes, 0, bytes.length, 'model', view);
  if (!model.graph) throw new TypeError('readOnnx: not an ONNX model (no graph)');
  return model.graph;
}
