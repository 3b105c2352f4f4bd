// Keras' MultiHeadAttention layout against the core's (PyTorch's nn.MultiheadAttention state dict),
// in one place for both Keras layers (keras/keras.js, tfjs/layer.js) and stateDictFromKeras
// (formats/interop.js). EinsumDense kernels [in, H, D] are [in, H * D] row-major where nn.Linear
// holds [H * D, in]; the output kernel [H, Dv, out] is [H * Dv, out] against [out, H * Dv]; the
// [H, D] biases are flat, q's, k's and v's stacked in in_proj_bias. Keras' masks say 1 = attend,
// the core's 1 = blocked. (tfjs/gpu-attention.js lays the same weights out on the GPU, with tfjs ops.)
import { transpose } from '../core/transpose.js';

/** Keras' weight names, in get_weights() order (the biases only with use_bias). */
export const KERAS_WEIGHT_NAMES = Object.freeze(['query/kernel', 'query/bias', 'key/kernel', 'key/bias',
  'value/kernel', 'value/bias', 'attention_output/kernel', 'attention_output/bias']);

/**
 * Keras' weight shapes by name, in get_weights() order, for the layer's sizes `s`:
 * { numHeads, keyDim, valueDim, queryDim, keyInputDim, valueInputDim, outputShape, useBias }.
 */
export function kerasWeightShapes(s) {
  const H = s.numHeads;
  const shapes = {
    'query/kernel': [s.queryDim, H, s.keyDim], 'query/bias': [H, s.keyDim],
    'key/kernel': [s.keyInputDim, H, s.keyDim], 'key/bias': [H, s.keyDim],
    'value/kernel': [s.valueInputDim, H, s.valueDim], 'value/bias': [H, s.valueDim],
    'attention_output/kernel': [H, s.valueDim, s.outputShape], 'attention_output/bias': [s.outputShape],
  };
  return Object.fromEntries(KERAS_WEIGHT_NAMES.filter((name) => s.useBias || !name.endsWith('/bias')).map((name) => [name, shapes[name]]));
}

/** The core layer's config ({ embedDim, numHeads, kdim, vdim, bias, headDim, valueHeadDim, outputDim }) for Keras' sizes `s`. */
export function coreConfigFromKeras(s) {
  return {
    embedDim: s.queryDim, numHeads: s.numHeads, kdim: s.keyInputDim, vdim: s.valueInputDim, bias: s.useBias,
    headDim: s.keyDim, valueHeadDim: s.valueDim, outputDim: s.outputShape,
  };
}

/** Keras' sizes (as kerasWeightShapes takes them) of a core layer's resolved config. */
export function kerasSizesOfCore(c) {
  return {
    numHeads: c.numHeads, keyDim: c.headDim, valueDim: c.valueHeadDim, queryDim: c.embedDim,
    keyInputDim: c.kdim, valueInputDim: c.vdim, outputShape: c.outputDim, useBias: c.bias,
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
 * core's state dict: q/k/v_proj_weight, out_proj.weight and, with s.useBias, in_proj_bias and out_proj.bias.
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
  return Object.fromEntries(Object.keys(kerasWeightShapes(s)).map((name) => [name, keras[name]]));
}

/**
 * Keras' attention_mask (`values` of `shape`, 1 / true = attend) for a [B, T, ...] query, an S-long
 * key and H heads, as the core's blocking masks: [B, T, S] per batch row (the core's [B * H, T, S]),
 * [T, S] for every batch row (Keras' reading of a rank-2 mask), else [B, S] per batch row (key
 * padding). Null for any other shape: the caller words the error.
 */
export function coreMasksFromKeras(values, shape, { B, T, S, H }) {
  const blocked = Uint8Array.from(values, (x) => (x ? 0 : 1));
  const is = (...dims) => shape.length === dims.length && dims.every((d, i) => d === shape[i]);
  if (is(B, T, S)) {
    const perHead = new Uint8Array(B * H * T * S);
    for (let b = 0; b < B; b++) {
      for (let h = 0; h < H; h++) perHead.set(blocked.subarray(b * T * S, (b + 1) * T * S), (b * H + h) * T * S);
    }
    return { attnMask: { data: perHead, shape: [B * H, T, S] } };
  }
  if (is(T, S)) return { attnMask: { data: blocked, shape: [T, S] } };
  if (is(B, S)) return { keyPaddingMask: { data: blocked, shape: [B, S] } };
  return null;
}
