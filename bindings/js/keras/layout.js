// Keras' MultiHeadAttention layout against the core's (PyTorch's nn.MultiheadAttention state dict),
// in one place for both Keras layers (keras/keras.js, tfjs/layer.js) and stateDictFromKeras
// (formats/interop.js). EinsumDense kernels [in, H, D] are [in, H * D] row-major where nn.Linear
// holds [H * D, in]; the output kernel [H, Dv, out] is [H * Dv, out] against [out, H * Dv]; the
// [H, D] biases are flat, q's, k's and v's stacked in in_proj_bias. Keras' masks say 1 = attend,
// the core's 1 = blocked. (tfjs/gpu-attention.js lays the same weights out on the GPU, with tfjs ops.)
import { transpose } from '../core/transpose.js';

/**
 * Keras' weight names, in get_weights() order: Keras 3.15 builds the query, key, gate (with
 * use_gate), value and output EinsumDense sublayers in that order; the biases only with use_bias.
 */
export const KERAS_WEIGHT_NAMES = Object.freeze(['query/kernel', 'query/bias', 'key/kernel', 'key/bias',
  'gate/kernel', 'gate/bias', 'value/kernel', 'value/bias', 'attention_output/kernel', 'attention_output/bias']);

/**
 * Keras' weight shapes by name, in get_weights() order, for the layer's sizes `s`:
 * { numHeads, keyDim, valueDim, queryDim, keyInputDim, valueInputDim, outputShape, useBias, useGate,
 * outputDims }: outputShape is the output's features (their product, for a tuple output_shape, whose
 * axes are outputDims: the output kernel [H, Dv, ...outputDims] is the core's [H * Dv, product]).
 */
export function kerasWeightShapes(s) {
  const H = s.numHeads, out = s.outputDims ?? [s.outputShape];
  const shapes = {
    'query/kernel': [s.queryDim, H, s.keyDim], 'query/bias': [H, s.keyDim],
    'key/kernel': [s.keyInputDim, H, s.keyDim], 'key/bias': [H, s.keyDim],
    'gate/kernel': [s.queryDim, H, s.valueDim], 'gate/bias': [H, s.valueDim],
    'value/kernel': [s.valueInputDim, H, s.valueDim], 'value/bias': [H, s.valueDim],
    'attention_output/kernel': [H, s.valueDim, ...out], 'attention_output/bias': [...out],
  };
  const kept = (name) => (s.useBias || !name.endsWith('/bias')) && (s.useGate || !name.startsWith('gate/'));
  return Object.fromEntries(KERAS_WEIGHT_NAMES.filter(kept).map((name) => [name, shapes[name]]));
}

/**
 * The core layer's config ({ embedDim, numHeads, kdim, vdim, bias, headDim, valueHeadDim, outputDim,
 * gate, slidingWindow }) for Keras' sizes `s`. Keras' sliding window is the core's: |i - j| < W,
 * and i - W < j <= i with the causal mask.
 */
export function coreConfigFromKeras(s) {
  return {
    embedDim: s.queryDim, numHeads: s.numHeads, kdim: s.keyInputDim, vdim: s.valueInputDim, bias: s.useBias,
    headDim: s.keyDim, valueHeadDim: s.valueDim, outputDim: s.outputShape,
    ...(s.useGate ? { gate: true } : {}), ...(s.slidingWindow ? { slidingWindow: s.slidingWindow } : {}),
  };
}

/** Keras' sizes (as kerasWeightShapes takes them) of a core layer's resolved config. */
export function kerasSizesOfCore(c) {
  return {
    numHeads: c.numHeads, keyDim: c.headDim, valueDim: c.valueHeadDim, queryDim: c.embedDim,
    keyInputDim: c.kdim, valueInputDim: c.vdim, outputShape: c.outputDim, useBias: c.bias, useGate: c.gate === true,
  };
}

/** Arrays end to end, as one Float32Array. */
function concat(arrays) {
  const out = new Float32Array(arrays.reduce((n, a) => n + a.length, 0));
  arrays.reduce((at, a) => { out.set(a, at); return at + a.length; }, 0);
  return out;
}

/**
 * Keras' weights (Float32Arrays by Keras name, of the shapes kerasWeightShapes gives for `s`) as the
 * core's state dict: q/k/v_proj_weight, out_proj.weight and, with s.useBias, in_proj_bias and out_proj.bias;
 * with s.useGate gate_proj.weight (and gate_proj.bias).
 */
export function stateDictFromKerasLayout(weights, s) {
  const qRows = s.numHeads * s.keyDim, vRows = s.numHeads * s.valueDim;
  const stateDict = {
    q_proj_weight: transpose(weights['query/kernel'], s.queryDim, qRows),
    k_proj_weight: transpose(weights['key/kernel'], s.keyInputDim, qRows),
    v_proj_weight: transpose(weights['value/kernel'], s.valueInputDim, vRows),
    'out_proj.weight': transpose(weights['attention_output/kernel'], vRows, s.outputShape),
  };
  if (s.useBias) {
    stateDict.in_proj_bias = concat([weights['query/bias'], weights['key/bias'], weights['value/bias']]);
    stateDict['out_proj.bias'] = weights['attention_output/bias'].slice();
  }
  if (s.useGate) {  // the gate's kernel [queryDim, H, Dv] is nn.Linear's [H * Dv, queryDim] transposed
    stateDict['gate_proj.weight'] = transpose(weights['gate/kernel'], s.queryDim, vRows);
    if (s.useBias) stateDict['gate_proj.bias'] = weights['gate/bias'].slice();
  }
  return stateDict;
}

/**
 * The core's state dict, or its backward's parameter gradients (the same names), as Float32Arrays
 * by Keras name in Keras' layout, for the sizes `s`. The core keeps q, k and v in one
 * in_proj_weight when the three have one input size and one head size; either form is read.
 */
export function kerasLayoutFromStateDict(stateDict, s) {
  const qRows = s.numHeads * s.keyDim, vRows = s.numHeads * s.valueDim;
  let q = stateDict.q_proj_weight, k = stateDict.k_proj_weight, v = stateDict.v_proj_weight;
  if (stateDict.in_proj_weight) {
    const w = stateDict.in_proj_weight, kAt = qRows * s.queryDim, vAt = kAt + qRows * s.keyInputDim;
    [q, k, v] = [w.subarray(0, kAt), w.subarray(kAt, vAt), w.subarray(vAt, vAt + vRows * s.valueInputDim)];
  }
  const keras = {
    'query/kernel': transpose(q, qRows, s.queryDim),
    'key/kernel': transpose(k, qRows, s.keyInputDim),
    'value/kernel': transpose(v, vRows, s.valueInputDim),
    'attention_output/kernel': transpose(stateDict['out_proj.weight'], s.outputShape, vRows),
  };
  if (s.useBias) {
    const b = stateDict.in_proj_bias;
    Object.assign(keras, {
      'query/bias': b.slice(0, qRows),
      'key/bias': b.slice(qRows, 2 * qRows),
      'value/bias': b.slice(2 * qRows, 2 * qRows + vRows),
      'attention_output/bias': stateDict['out_proj.bias'].slice(),
    });
  }
  if (s.useGate) {
    keras['gate/kernel'] = transpose(stateDict['gate_proj.weight'], vRows, s.queryDim);
    if (s.useBias) keras['gate/bias'] = stateDict['gate_proj.bias'].slice();
  }
  return Object.fromEntries(Object.keys(kerasWeightShapes(s)).map((name) => [name, keras[name]]));
}

/**
 * Keras' masks for a call with a [B, T, ...] query, an S-long value and H heads, combined as Keras
 * 3.15's _compute_attention_mask and broadcast as its _masked_softmax does, as the core's blocking
 * mask. `masks`: { attentionMask, queryMask, valueMask, keyMask }, each { data, shape } or absent
 * (1 / true = attend). attentionMask has rank 2 ([T, S]), 3 ([B, T, S]) or 4 ([B, H, T, S]), any
 * dimension 1 broadcast (a rank-2 mask is always [T, S]); queryMask is
 * [B, T], valueMask and keyMask [B, S]. (Causal and sliding-window masks are the core's own.)
 * Returns {} (nothing masked), { attnMask } ([T, S] when no batch row or head differs, else
 * [B * H, T, S]), or { error: what was wrong } for the caller to word.
 */
export function coreMasksFromKeras(masks, { B, T, S, H }) {
  const { attentionMask, queryMask, valueMask, keyMask } = masks;
  const sameAs = (t, dims) => t.shape.length === dims.length && dims.every((d, i) => d === t.shape[i]);
  for (const [name, t, dims] of [['queryMask', queryMask, [B, T]], ['valueMask', valueMask, [B, S]], ['keyMask', keyMask, [B, S]]]) {
    if (t && !sameAs(t, dims)) return { error: `${name}: expected shape [${dims.join(', ')}], got [${t.shape.join(', ')}]` };
  }
  let full = null;  // [rank 4] attend flags with each dimension 1 or its size: [B|1, H|1, T|1, S|1]
  if (attentionMask) {
    // Keras expands a mask at the heads' axis (-3) until it has the scores' rank: [T, S] -> [1, 1, T, S],
    // [B, T, S] -> [B, 1, T, S].
    const { shape } = attentionMask, rank = shape.length;
    const as4 = rank === 2 ? [1, 1, ...shape] : rank === 3 ? [shape[0], 1, shape[1], shape[2]] : shape;
    if (rank < 2 || rank > 4 || as4.some((d, i) => d !== 1 && d !== [B, H, T, S][i])) {
      return { error: `expected [T, S], [B, T, S] or [B, H, T, S] = [${B}, ${H}, ${T}, ${S}], each dimension its size or 1 `
        + `(a rank-2 mask is [T, S]; a [B, S] padding mask is valueMask), got [${shape.join(', ')}]` };
    }
    full = { data: attentionMask.data, shape: as4 };
  }
  const perRow = queryMask || valueMask || keyMask || (full && (full.shape[0] > 1 || full.shape[1] > 1));
  if (!full && !perRow) return {};
  const [mb, mh, mt, ms] = full?.shape ?? [1, 1, 1, 1];
  const heads = perRow ? B * H : 1, at = (d, i) => (d === 1 ? 0 : i);
  const blocked = new Uint8Array(heads * T * S);
  for (let bh = 0; bh < heads; bh++) {
    const b = Math.floor(bh / H), h = bh % H;
    for (let t = 0; t < T; t++) {
      for (let s = 0; s < S; s++) {
        let attend = !full || full.data[((at(mb, b) * mh + at(mh, h)) * mt + at(mt, t)) * ms + at(ms, s)];
        if (queryMask) attend = attend && queryMask.data[b * T + t];
        if (valueMask) attend = attend && valueMask.data[b * S + s];
        if (keyMask) attend = attend && keyMask.data[b * S + s];
        blocked[(bh * T + t) * S + s] = attend ? 0 : 1;
      }
    }
  }
  return { attnMask: { data: blocked, shape: perRow ? [B * H, T, S] : [T, S] } };
}
