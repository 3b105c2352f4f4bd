// The peers' model: nn.MultiheadAttention's forward pass (projections with bias, no weights
// returned) as an ONNX graph of plain ops (MatMul, Add, Reshape, Transpose, Softmax), written
// with a minimal protobuf encoder so the benchmark needs no ONNX tooling. The softmax scale
// is folded into the query projection, as an exporter's constant folding would do.

// ---- protobuf wire format: varints and length-delimited fields, as Uint8Arrays ----
function varint(n) {
  const out = [];
  let v = BigInt.asUintN(64, BigInt(n));  // negative int64: two's complement, 10 bytes
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v) byte |= 0x80;
    out.push(byte);
  } while (v);
  return Uint8Array.from(out);
}
function concat(parts) {
  const flat = parts.flat(Infinity);
  const out = new Uint8Array(flat.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of flat) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
const key = (field, wire) => varint((field << 3) | wire);
const int = (field, n) => concat([key(field, 0), varint(n)]);
const bytes = (field, b) => concat([key(field, 2), varint(b.length), b]);
const str = (field, s) => bytes(field, new TextEncoder().encode(s));
const msg = (field, parts) => bytes(field, concat(parts));

// ---- ONNX messages (field numbers from onnx.proto) ----
const FLOAT = 1, UINT8 = 2, INT8 = 3, INT32 = 6, INT64 = 7;
const ATTR_INT = 2, ATTR_INTS = 7;

function tensor(field, name, dims, dataType, raw) {
  return msg(field, [...dims.map((d) => int(1, d)), int(2, dataType), str(8, name),
    bytes(9, new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength))]);
}
function attribute(name, value) {
  return Array.isArray(value)
    ? msg(5, [str(1, name), ...value.map((v) => int(8, v)), int(20, ATTR_INTS)])
    : msg(5, [str(1, name), int(3, value), int(20, ATTR_INT)]);
}
function node(op, inputs, outputs, attributes = {}, domain = '') {
  return msg(1, [...inputs.map((i) => str(1, i)), ...outputs.map((o) => str(2, o)), str(4, op),
    ...Object.entries(attributes).map(([n, v]) => attribute(n, v)), ...(domain ? [str(7, domain)] : [])]);
}
/** A graph input (field 11) or output (12); a string dimension is symbolic (dim_param). */
function valueInfo(field, name, dims, elemType = FLOAT) {
  const shape = msg(2, dims.map((d) => msg(1, [typeof d === 'string' ? str(2, d) : int(1, d)])));
  return msg(field, [str(1, name), msg(2, [msg(1, [int(1, elemType), shape])])]);
}

/** W [out, in] (nn.Linear) -> W^T [in, out], optionally scaled. */
function transposed(w, out, inp, scale = 1) {
  const t = new Float32Array(w.length);
  for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) t[i * out + o] = w[o * inp + i] * scale;
  return t;
}

/**
 * The model bytes. `weights` holds nn.MultiheadAttention's in_proj_weight [3E, E],
 * in_proj_bias [3E], out_proj.weight [E, E], out_proj.bias [E]. Self-attention reads
 * q = k = v = `query`; cross-attention has a second input `key` used as key and value.
 */
export function attentionModel({ B, L, S, E, H }, weights, cross) {
  const Dh = E / H, scale = 1 / Math.sqrt(Dh);
  const w = weights.in_proj_weight, b = weights.in_proj_bias;
  const part = (a, i, n) => a.subarray(i * n, (i + 1) * n);
  const init = [
    tensor(5, 'Wq', [E, E], FLOAT, transposed(part(w, 0, E * E), E, E, scale)),
    tensor(5, 'bq', [E], FLOAT, part(b, 0, E).map((x) => x * scale)),
    tensor(5, 'Wk', [E, E], FLOAT, transposed(part(w, 1, E * E), E, E)),
    tensor(5, 'bk', [E], FLOAT, part(b, 1, E).slice()),
    tensor(5, 'Wv', [E, E], FLOAT, transposed(part(w, 2, E * E), E, E)),
    tensor(5, 'bv', [E], FLOAT, part(b, 2, E).slice()),
    tensor(5, 'Wo', [E, E], FLOAT, transposed(weights['out_proj.weight'], E, E)),
    tensor(5, 'bo', [E], FLOAT, weights['out_proj.bias'].slice()),
    tensor(5, 'q_heads', [4], INT64, new BigInt64Array([B, L, H, Dh].map(BigInt))),
    tensor(5, 'kv_heads', [4], INT64, new BigInt64Array([B, S, H, Dh].map(BigInt))),
    tensor(5, 'merged', [3], INT64, new BigInt64Array([B, L, E].map(BigInt))),
  ];
  const kv = cross ? 'key' : 'query';
  const nodes = [
    node('MatMul', ['query', 'Wq'], ['q0']), node('Add', ['q0', 'bq'], ['q1']),
    node('MatMul', [kv, 'Wk'], ['k0']), node('Add', ['k0', 'bk'], ['k1']),
    node('MatMul', [kv, 'Wv'], ['v0']), node('Add', ['v0', 'bv'], ['v1']),
    node('Reshape', ['q1', 'q_heads'], ['q2']), node('Transpose', ['q2'], ['q'], { perm: [0, 2, 1, 3] }),
    node('Reshape', ['k1', 'kv_heads'], ['k2']), node('Transpose', ['k2'], ['kt'], { perm: [0, 2, 3, 1] }),
    node('Reshape', ['v1', 'kv_heads'], ['v2']), node('Transpose', ['v2'], ['v'], { perm: [0, 2, 1, 3] }),
    node('MatMul', ['q', 'kt'], ['scores']), node('Softmax', ['scores'], ['p'], { axis: -1 }),
    node('MatMul', ['p', 'v'], ['o0']), node('Transpose', ['o0'], ['o1'], { perm: [0, 2, 1, 3] }),
    node('Reshape', ['o1', 'merged'], ['o2']), node('MatMul', ['o2', 'Wo'], ['o3']),
    node('Add', ['o3', 'bo'], ['output']),
  ];
  const inputs = [valueInfo(11, 'query', [B, L, E]), ...(cross ? [valueInfo(11, 'key', [B, S, E])] : [])];
  const graph = msg(7, [...nodes, str(2, 'mha'), ...init, ...inputs, valueInfo(12, 'output', [B, L, E])]);
  const opset = msg(8, [str(1, ''), int(2, 17)]);
  return concat([int(1, 8), opset, graph]);
}

/**
 * The same layer through onnxruntime's fused attention op, as its WebGPU builds run it: three
 * MatMuls (no bias), com.microsoft MultiHeadAttention (num_heads H, the packed q/k/v bias [3E],
 * its default scale 1/sqrt(Dh)), then the output MatMul and its bias. Input query [B, L, E] (and
 * key [B, S, E] for cross-attention, used as key and value), output [B, L, E].
 */
export function fusedAttentionModel({ B, L, S, E, H }, weights, cross) {
  const w = weights.in_proj_weight;
  const part = (a, i, n) => a.subarray(i * n, (i + 1) * n);
  const init = [
    tensor(5, 'Wq', [E, E], FLOAT, transposed(part(w, 0, E * E), E, E)),
    tensor(5, 'Wk', [E, E], FLOAT, transposed(part(w, 1, E * E), E, E)),
    tensor(5, 'Wv', [E, E], FLOAT, transposed(part(w, 2, E * E), E, E)),
    tensor(5, 'qkv_bias', [3 * E], FLOAT, weights.in_proj_bias.slice()),
    tensor(5, 'Wo', [E, E], FLOAT, transposed(weights['out_proj.weight'], E, E)),
    tensor(5, 'bo', [E], FLOAT, weights['out_proj.bias'].slice()),
  ];
  const kv = cross ? 'key' : 'query';
  const nodes = [
    node('MatMul', ['query', 'Wq'], ['q']), node('MatMul', [kv, 'Wk'], ['k']), node('MatMul', [kv, 'Wv'], ['v']),
    node('MultiHeadAttention', ['q', 'k', 'v', 'qkv_bias'], ['o0'], { num_heads: H }, 'com.microsoft'),
    node('MatMul', ['o0', 'Wo'], ['o1']), node('Add', ['o1', 'bo'], ['output']),
  ];
  const inputs = [valueInfo(11, 'query', [B, L, E]), ...(cross ? [valueInfo(11, 'key', [B, S, E])] : [])];
  const graph = msg(7, [...nodes, str(2, 'fused_mha'), ...init, ...inputs, valueInfo(12, 'output', [B, L, E])]);
  const opsets = [msg(8, [str(1, ''), int(2, 17)]), msg(8, [str(1, 'com.microsoft'), int(2, 1)])];
  return concat([int(1, 8), ...opsets, graph]);
}

/**
 * The query, key and value projection weights [out, in] of a state dict: slices of in_proj_weight
 * [E + 2 KV, E], or q_proj_weight / k_proj_weight / v_proj_weight (a GQA layer's).
 */
export function projectionWeights(weights, E, KV) {
  const packed = weights.in_proj_weight;
  return {
    wq: packed ? packed.subarray(0, E * E) : weights.q_proj_weight,
    wk: packed ? packed.subarray(E * E, E * E + KV * E) : weights.k_proj_weight,
    wv: packed ? packed.subarray(E * E + KV * E) : weights.v_proj_weight,
  };
}

/**
 * The graphs of the decode step's four projections (y = x W^T + b, W [out, in] as nn.Linear):
 * - 'f32': MatMul with the float32 weights (transposed to [in, out]);
 * - 'q4', 'q4-acc4': com.microsoft MatMulNBits, 4 bits in blocks of 32, the weights in the q4
 *   format of mha-wasm (ggml q4_0's scales, MatMulNBits' own layout, zero point 8, the default),
 *   accuracy_level 0 (float compute) or 4 (the activations quantized to int8 for the products);
 * - 'int8': com.microsoft DynamicQuantizeMatMul (what onnxruntime's quantize_dynamic becomes
 *   after its graph fusion): the int8 weights with one scale per output feature (column of B),
 *   the activations quantized to uint8 on the fly.
 * The quantized weights are exactly those of mha-wasm's layer with the same weightDtype, so both
 * compare against the same dequantized float32 reference (bench/decode-ort.mjs).
 */
export const DECODE_GRAPHS = ['f32', 'q4', 'q4-acc4', 'int8'];
const GRAPH_DTYPE = { f32: 'f32', q4: 'q4', 'q4-acc4': 'q4', int8: 'int8' };
/** The weightDtype whose weights a graph holds ('q4-acc4' -> 'q4'). */
export const graphDtype = (graph) => GRAPH_DTYPE[graph];

function projection(graph, name, input, output, w, rows, cols, quantizers) {
  const scaleBy = (a, s) => (s === 1 ? a : a.map((x) => x * s));
  return (scale = 1) => {
    if (graph === 'f32') {
      return { init: [tensor(5, name, [cols, rows], FLOAT, transposed(w, rows, cols, scale))], nodes: [node('MatMul', [input, name], [output])] };
    }
    if (graph === 'int8-qdq' || graph === 'int8-mmi') {
      // The forms exporters write: QDQ (DequantizeLinear of the int8 weights, then MatMul) and
      // quantize_dynamic's (DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by both scales).
      const q = quantizers.int8(w, rows, cols);
      const b = new Int8Array(rows * cols);
      for (let o = 0; o < rows; o++) for (let i = 0; i < cols; i++) b[i * rows + o] = q.data[o * cols + i];
      const init = [tensor(5, `${name}_q`, [cols, rows], INT8, b), tensor(5, `${name}_scale`, [rows], FLOAT, scaleBy(q.scales, scale)),
        tensor(5, `${name}_zp`, [rows], INT8, new Int8Array(rows))];
      if (graph === 'int8-qdq') {
        return { init, nodes: [node('DequantizeLinear', [`${name}_q`, `${name}_scale`, `${name}_zp`], [name], { axis: 1 }), node('MatMul', [input, name], [output])] };
      }
      const x = `${name}_x`;
      return {
        init,
        nodes: [node('DynamicQuantizeLinear', [input], [`${x}_q`, `${x}_scale`, `${x}_zp`]),
          node('MatMulInteger', [`${x}_q`, `${name}_q`, `${x}_zp`, `${name}_zp`], [`${name}_i32`]),
          node('Cast', [`${name}_i32`], [`${name}_f32`], { to: FLOAT }),
          node('Mul', [`${x}_scale`, `${name}_scale`], [`${name}_scales`]),
          node('Mul', [`${name}_f32`, `${name}_scales`], [output])],
      };
    }
    if (graph === 'int8') {
      const q = quantizers.int8(w, rows, cols);
      const b = new Int8Array(rows * cols);  // [in, out]: DynamicQuantizeMatMul's B
      for (let o = 0; o < rows; o++) for (let i = 0; i < cols; i++) b[i * rows + o] = q.data[o * cols + i];
      return {
        init: [tensor(5, name, [cols, rows], INT8, b), tensor(5, `${name}_scale`, [rows], FLOAT, scaleBy(q.scales, scale))],
        nodes: [node('DynamicQuantizeMatMul', [input, name, `${name}_scale`], [output], {}, 'com.microsoft')],
      };
    }
    const q = quantizers.q4(w, rows, cols), blocks = Math.ceil(cols / 32);
    const zeroPoints = q.zeroPoints ? [tensor(5, `${name}_zp`, [rows * Math.ceil(blocks / 2)], UINT8, q.zeroPoints)] : [];
    return {
      init: [tensor(5, name, [rows, blocks, 16], UINT8, q.data), tensor(5, `${name}_scale`, [rows * blocks], FLOAT, scaleBy(q.scales, scale)), ...zeroPoints],
      nodes: [node('MatMulNBits', [input, name, `${name}_scale`, ...(q.zeroPoints ? [`${name}_zp`] : [])], [output],
        { K: cols, N: rows, bits: 4, block_size: 32, accuracy_level: graph === 'q4-acc4' ? 4 : 0 }, 'com.microsoft')],
    };
  };
}

/**
 * The four projections of a layer (graphs { Wq, Wk, Wv, Wo }, each a DECODE_GRAPHS form or an
 * exporter's int8 form) reading `query` (q, k, v -> q0, k0, v0) and `attended` (out -> `output`),
 * and their biases bq, bk, bv, bo. The softmax scale folds into q's projection (its weights, or a
 * quantized graph's scales) and bias, as an exporter's constant folding does.
 */
function projectionsWithBiases(graphs, weights, { E, KV, scale }, quantizers, attended, output) {
  const { wq, wk, wv } = projectionWeights(weights, E, KV);
  const bias = weights.in_proj_bias;
  const projections = [
    projection(graphs.Wq, 'Wq', 'query', 'q0', wq, E, E, quantizers)(scale),
    projection(graphs.Wk, 'Wk', 'query', 'k0', wk, KV, E, quantizers)(),
    projection(graphs.Wv, 'Wv', 'query', 'v0', wv, KV, E, quantizers)(),
    projection(graphs.Wo, 'Wo', attended, output, weights['out_proj.weight'], E, E, quantizers)(),
  ];
  return {
    init: [
      ...projections.flatMap((p) => p.init),
      tensor(5, 'bq', [E], FLOAT, bias.subarray(0, E).map((x) => x * scale)),
      tensor(5, 'bk', [KV], FLOAT, bias.slice(E, E + KV)),
      tensor(5, 'bv', [KV], FLOAT, bias.slice(E + KV)),
      tensor(5, 'bo', [E], FLOAT, weights['out_proj.bias'].slice()),
    ],
    nodes: projections.map((p) => p.nodes),
  };
}

/**
 * One decode step with a KV cache, in plain ops, for a layer with `Hkv` key/value heads shared by
 * groups of H / Hkv query heads (GQA; Hkv = H is plain MHA): inputs query [1, 1, E],
 * past_key / past_value [1, Hkv, P, Dh]; outputs output [1, 1, E] and present_key /
 * present_value [1, Hkv, P + 1, Dh] (a Concat of past and new), as a caller of onnxruntime
 * passes its cache in and takes the grown one back each call. With one query row, a group's
 * query heads are the rows of one MatMul against their shared keys. `weights`: the layer's state
 * dict (in_proj_weight, or q_proj_weight / k_proj_weight / v_proj_weight; in_proj_bias; out_proj).
 * `graph`: how the projections run (DECODE_GRAPHS); the quantized ones need `quantizers`
 * { int8, q4 } (tests/js/quantized-reference.js quantizeInt8 / quantizeQ4).
 */
export function decodeStepModel({ E, H, Hkv, P }, weights, { graph = 'f32', quantizers = null } = {}) {
  const Dh = E / H, G = H / Hkv, scale = 1 / Math.sqrt(Dh), KV = Hkv * Dh;
  const ints = (name, values) => tensor(5, name, [values.length], INT64, new BigInt64Array(values.map(BigInt)));
  const graphs = { Wq: graph, Wk: graph, Wv: graph, Wo: graph };
  const projections = projectionsWithBiases(graphs, weights, { E, KV, scale }, quantizers, 'o1', 'o2');
  const init = [
    ...projections.init,
    ints('q_groups', [1, Hkv, G, Dh]), ints('kv_row', [1, Hkv, 1, Dh]), ints('merged', [1, 1, E]),
  ];
  const [pq, pk, pv, po] = projections.nodes;
  const nodes = [
    ...pq, node('Add', ['q0', 'bq'], ['q1']), node('Reshape', ['q1', 'q_groups'], ['q']),
    ...pk, node('Add', ['k0', 'bk'], ['k1']), node('Reshape', ['k1', 'kv_row'], ['k']),
    ...pv, node('Add', ['v0', 'bv'], ['v1']), node('Reshape', ['v1', 'kv_row'], ['v']),
    node('Concat', ['past_key', 'k'], ['present_key'], { axis: 2 }),
    node('Concat', ['past_value', 'v'], ['present_value'], { axis: 2 }),
    node('Transpose', ['present_key'], ['kt'], { perm: [0, 1, 3, 2] }),
    node('MatMul', ['q', 'kt'], ['scores']), node('Softmax', ['scores'], ['p'], { axis: -1 }),
    node('MatMul', ['p', 'present_value'], ['o0']), node('Reshape', ['o0', 'merged'], ['o1']),
    ...po, node('Add', ['o2', 'bo'], ['output']),
  ];
  const inputs = [valueInfo(11, 'query', [1, 1, E]), valueInfo(11, 'past_key', [1, Hkv, P, Dh]), valueInfo(11, 'past_value', [1, Hkv, P, Dh])];
  const outputs = [valueInfo(12, 'output', [1, 1, E]), valueInfo(12, 'present_key', [1, Hkv, P + 1, Dh]), valueInfo(12, 'present_value', [1, Hkv, P + 1, Dh])];
  const graphProto = msg(7, [...nodes, str(2, 'decode_step'), ...init, ...inputs, ...outputs]);
  const opsets = [msg(8, [str(1, ''), int(2, 17)]), ...(graph === 'f32' ? [] : [msg(8, [str(1, 'com.microsoft'), int(2, 1)])])];
  return concat([int(1, 8), ...opsets, graphProto]);
}

/**
 * One decode step through onnxruntime's fused com.microsoft.GroupQueryAttention (what its
 * exporters and onnxruntime-genai emit for a decoder layer), for a layer with `Hkv` key/value
 * heads (Hkv = H: plain MHA): the q, k, v MatMuls and bias Adds, GroupQueryAttention (num_heads
 * H, kv_num_heads Hkv, its default scale 1/sqrt(Dh)), the output MatMul and bias. Inputs: query
 * [1, 1, E]; past_key / past_value [1, Hkv, past, Dh] (BNSH); seqlens_k int32 [1] (the tokens
 * in the cache after this step, less one) and total_sequence_length int32 [1] (the spec's scalar
 * as a 1-element tensor, which onnxruntime takes too, so that graph capture can bind it as a GPU
 * buffer: capture needs every input in one). Outputs:
 * output [1, 1, E], present_key / present_value [1, Hkv, present, Dh] (`past` and `present`
 * symbolic: present is past + 1, or the same buffer as past when the caller passes it as the
 * output, onnxruntime's shared past/present buffer).
 */
export function groupQueryAttentionStepModel({ E, H, Hkv }, weights) {
  const Dh = E / H, KV = Hkv * Dh;
  const { wq, wk, wv } = projectionWeights(weights, E, KV);
  const bias = weights.in_proj_bias;
  const init = [
    tensor(5, 'Wq', [E, E], FLOAT, transposed(wq, E, E)), tensor(5, 'Wk', [E, KV], FLOAT, transposed(wk, KV, E)),
    tensor(5, 'Wv', [E, KV], FLOAT, transposed(wv, KV, E)), tensor(5, 'bq', [E], FLOAT, bias.slice(0, E)),
    tensor(5, 'bk', [KV], FLOAT, bias.slice(E, E + KV)), tensor(5, 'bv', [KV], FLOAT, bias.slice(E + KV)),
    tensor(5, 'Wo', [E, E], FLOAT, transposed(weights['out_proj.weight'], E, E)), tensor(5, 'bo', [E], FLOAT, weights['out_proj.bias'].slice()),
  ];
  const nodes = [
    node('MatMul', ['query', 'Wq'], ['q0']), node('Add', ['q0', 'bq'], ['q']),
    node('MatMul', ['query', 'Wk'], ['k0']), node('Add', ['k0', 'bk'], ['k']),
    node('MatMul', ['query', 'Wv'], ['v0']), node('Add', ['v0', 'bv'], ['v']),
    node('GroupQueryAttention', ['q', 'k', 'v', 'past_key', 'past_value', 'seqlens_k', 'total_sequence_length'],
      ['o0', 'present_key', 'present_value'], { num_heads: H, kv_num_heads: Hkv }, 'com.microsoft'),
    node('MatMul', ['o0', 'Wo'], ['o1']), node('Add', ['o1', 'bo'], ['output']),
  ];
  const inputs = [valueInfo(11, 'query', [1, 1, E]), valueInfo(11, 'past_key', [1, Hkv, 'past', Dh]),
    valueInfo(11, 'past_value', [1, Hkv, 'past', Dh]), valueInfo(11, 'seqlens_k', [1], INT32),
    valueInfo(11, 'total_sequence_length', [1], INT32)];
  const outputs = [valueInfo(12, 'output', [1, 1, E]), valueInfo(12, 'present_key', [1, Hkv, 'present', Dh]),
    valueInfo(12, 'present_value', [1, Hkv, 'present', Dh])];
  const graph = msg(7, [...nodes, str(2, 'gqa_decode_step'), ...init, ...inputs, ...outputs]);
  const opsets = [msg(8, [str(1, ''), int(2, 17)]), msg(8, [str(1, 'com.microsoft'), int(2, 1)])];
  return concat([int(1, 8), ...opsets, graph]);
}

/**
 * Self-attention over a whole sequence (no mask), for a layer with `Hkv` key/value heads (GQA:
 * groups of H / Hkv query heads broadcast against their shared keys), each projection in its own
 * graph form (`graphs` { Wq, Wk, Wv, Wo }: 'f32', 'q4', 'int8', 'int8-qdq', 'int8-mmi'; the q4 and
 * int8 quantizers as decodeStepModel's). Input query [B, L, E], output [B, L, E]. The softmax
 * scale is folded into q's projection (weights or scales) and bias, as an exporter folds it: the
 * same layer in mha-wasm reads these initializers with `scale: 1`. tests/js/quantized-onnx.test.js
 * writes such files to test readOnnx.
 */
export function selfAttentionModel({ B, L, E, H, Hkv = H }, weights, { graphs, quantizers = null }) {
  const Dh = E / H, G = H / Hkv, KV = Hkv * Dh, scale = 1 / Math.sqrt(Dh);
  const ints = (name, values) => tensor(5, name, [values.length], INT64, new BigInt64Array(values.map(BigInt)));
  const projections = projectionsWithBiases(graphs, weights, { E, KV, scale }, quantizers, 'o2', 'o3');
  const init = [
    ...projections.init,
    ints('q_groups', [B, L, Hkv, G, Dh]), ints('kv_heads', [B, L, Hkv, 1, Dh]), ints('merged', [B, L, E]),
  ];
  const [pq, pk, pv, po] = projections.nodes;
  const nodes = [
    ...pq, node('Add', ['q0', 'bq'], ['q1']), node('Reshape', ['q1', 'q_groups'], ['q2']), node('Transpose', ['q2'], ['q'], { perm: [0, 2, 3, 1, 4] }),
    ...pk, node('Add', ['k0', 'bk'], ['k1']), node('Reshape', ['k1', 'kv_heads'], ['k2']), node('Transpose', ['k2'], ['kt'], { perm: [0, 2, 3, 4, 1] }),
    ...pv, node('Add', ['v0', 'bv'], ['v1']), node('Reshape', ['v1', 'kv_heads'], ['v2']), node('Transpose', ['v2'], ['v'], { perm: [0, 2, 3, 1, 4] }),
    node('MatMul', ['q', 'kt'], ['scores']), node('Softmax', ['scores'], ['p'], { axis: -1 }),
    node('MatMul', ['p', 'v'], ['o0']), node('Transpose', ['o0'], ['o1'], { perm: [0, 3, 1, 2, 4] }),
    node('Reshape', ['o1', 'merged'], ['o2']), ...po, node('Add', ['o3', 'bo'], ['output']),
  ];
  const graph = msg(7, [...nodes, str(2, 'self_attention'), ...init, valueInfo(11, 'query', [B, L, E]), valueInfo(12, 'output', [B, L, E])]);
  const opsets = [msg(8, [str(1, ''), int(2, 17)]), msg(8, [str(1, 'com.microsoft'), int(2, 1)])];
  return concat([int(1, 8), ...opsets, graph]);
}

/**
 * One linear layer y = x W as a one-node graph, for tests of readOnnx's refusals: 'MatMulNBits'
 * with the given bits / block_size attributes, B [N, ceil(K / block), block * bits / 8] and scales,
 * or 'DequantizeLinear' of W [K, N] (int8 or uint8, `type`) with scale and zero point [N] -> MatMul.
 */
export function linearModel({ op, K, N, bits = 4, blockSize = 32, type = 'int8' }, { data, scales, zeroPoints = null }) {
  const input = valueInfo(11, 'x', [1, K]), output = valueInfo(12, 'y', [1, N]);
  let nodes, init;
  if (op === 'MatMulNBits') {
    const blocks = Math.ceil(K / blockSize);
    init = [tensor(5, 'B', [N, blocks, (blockSize * bits) / 8], UINT8, data), tensor(5, 'scales', [N * blocks], FLOAT, scales)];
    nodes = [node('MatMulNBits', ['x', 'B', 'scales'], ['y'], { K, N, bits, block_size: blockSize }, 'com.microsoft')];
  } else {
    init = [tensor(5, 'W', [K, N], type === 'int8' ? INT8 : UINT8, data), tensor(5, 'scale', [N], FLOAT, scales),
      ...(zeroPoints ? [tensor(5, 'zp', [N], type === 'int8' ? INT8 : UINT8, zeroPoints)] : [])];
    nodes = [node('DequantizeLinear', ['W', 'scale', ...(zeroPoints ? ['zp'] : [])], ['Wf'], { axis: 1 }), node('MatMul', ['x', 'Wf'], ['y'])];
  }
  const graph = msg(7, [...nodes, str(2, 'linear'), ...init, input, output]);
  return concat([int(1, 8), msg(8, [str(1, ''), int(2, 17)]), msg(8, [str(1, 'com.microsoft'), int(2, 1)]), graph]);
}

/**
 * One attention node on projected inputs, for bench/attention-function.mjs. `op` 'Attention':
 * ONNX's Attention (opset 23) on 4-D Q [B, Hq, L, Dh], K / V [B, Hkv, S, Dh] (is_causal = top-left
 * without a past), output Y [B, Hq, L, Dh]. `op` 'MultiHeadAttention': com.microsoft's contrib op on
 * 3-D query / key / value [B, L|S, H*Dh] (no GQA: Hkv = Hq), output [B, L, H*Dh]; causal through
 * its unidirectional attribute.
 */
export function attentionOpModel({ op, B, Hq, Hkv, L, S, Dh, causal }) {
  if (op === 'Attention') {
    const nodes = [node('Attention', ['Q', 'K', 'V'], ['Y'], causal ? { is_causal: 1 } : {})];
    const inputs = [valueInfo(11, 'Q', [B, Hq, L, Dh]), valueInfo(11, 'K', [B, Hkv, S, Dh]), valueInfo(11, 'V', [B, Hkv, S, Dh])];
    const graph = msg(7, [...nodes, str(2, 'attention'), ...inputs, valueInfo(12, 'Y', [B, Hq, L, Dh])]);
    return concat([int(1, 8), msg(8, [str(1, ''), int(2, 23)]), graph]);
  }
  const nodes = [node('MultiHeadAttention', ['Q', 'K', 'V'], ['Y'], { num_heads: Hq, ...(causal ? { unidirectional: 1 } : {}) }, 'com.microsoft')];
  const inputs = [valueInfo(11, 'Q', [B, L, Hq * Dh]), valueInfo(11, 'K', [B, S, Hq * Dh]), valueInfo(11, 'V', [B, S, Hq * Dh])];
  const graph = msg(7, [...nodes, str(2, 'contrib_mha'), ...inputs, valueInfo(12, 'Y', [B, L, Hq * Dh])]);
  const opsets = [msg(8, [str(1, ''), int(2, 17)]), msg(8, [str(1, 'com.microsoft'), int(2, 1)])];
  return concat([int(1, 8), ...opsets, graph]);
}
