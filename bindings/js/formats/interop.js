// Weights from other frameworks, converted to the PyTorch state dict that loadStateDict takes.
// PyTorch's Linear stores W as [out, in] (y = x W^T + b); Keras and ONNX store it input-major
// [in, out] (y = x W + b), so every conversion is a transpose plus a reshape of the head axes.
import { transpose } from '../core/transpose.js';
import { checkPlainObject, checkTensor, describe } from '../api/validate.js';
import { KERAS_WEIGHT_NAMES as KERAS_KEYS, kerasWeightShapes, stateDictFromKerasLayout } from '../keras/layout.js';

function checkShape(what, tensor, expected, description) {
  checkTensor(what, tensor, { expected: description });
  const ok = tensor.shape.length === expected.length && expected.every((d, i) => d === undefined || d === tensor.shape[i]);
  if (!ok) {
    const want = expected.map((d) => d ?? '?').join(', ');
    throw new RangeError(`${what}: expected shape ${description} = [${want}], got [${tensor.shape.join(', ')}]`);
  }
  return tensor.shape;
}

/** Keras' weight names of a layer with or without biases and the gate (use_gate), in get_weights() order. */
const kerasKeys = (bias, gate) => KERAS_KEYS.filter((k) => (bias || !k.endsWith('bias')) && (gate || !k.startsWith('gate/')));

/** get_weights() order, with or without biases and the gate, -> Keras weight names. */
function kerasWeightsByName(weights) {
  if (Array.isArray(weights)) {
    // 8 tensors (4 without biases); with use_gate 10 (5).
    const layout = { 8: [true, false], 4: [false, false], 10: [true, true], 5: [false, true] }[weights.length];
    if (layout) return Object.fromEntries(kerasKeys(...layout).map((k, i) => [k, weights[i]]));
    throw new RangeError(`stateDictFromKeras: a get_weights() list has 8 tensors (4 without biases; with use_gate 10, or 5), got ${weights.length}`);
  }
  checkPlainObject('stateDictFromKeras: weights', weights);
  for (const key of Object.keys(weights)) {
    if (!KERAS_KEYS.includes(key)) {
      throw new TypeError(`stateDictFromKeras: unknown weight '${key}'; expected ${KERAS_KEYS.join(', ')}`);
    }
  }
  return weights;
}

/**
 * A Keras `MultiHeadAttention` layer's weights -> a PyTorch state dict. `weights` is either the
 * layer's `get_weights()` list or an object keyed 'query/kernel', 'query/bias', ..., each a
 * { data, shape } tensor: query/key/value kernels [E_in, H, Dk], biases [H, Dk], the output kernel
 * [H, Dv, E_out], its bias [E_out]; with use_gate the gate's kernel [E_in, H, Dv] and bias [H, Dv]
 * (config gate: true). Any key_dim and value_dim: the returned state dict carries,
 * as its non-enumerable `config` property, the layer config to load it into
 * ({ embedDim: query E_in, numHeads: H, headDim: key_dim, valueHeadDim: value_dim, outputDim: E_out,
 * kdim, vdim, bias }; Keras' scale 1/sqrt(key_dim) is the default).
 */
export function stateDictFromKeras(weights) {
  const w = kerasWeightsByName(weights);
  const what = (key) => `stateDictFromKeras: '${key}'`;
  const [, H, Dk] = checkShape(what('query/kernel'), w['query/kernel'], [undefined, undefined, undefined], '[E, H, key_dim]');
  const [Dv, E] = checkShape(what('attention_output/kernel'), w['attention_output/kernel'], [H, undefined, undefined],
    '[H, value_dim, E]').slice(1);
  const [Eq] = w['query/kernel'].shape;
  const [kdim] = checkShape(what('key/kernel'), w['key/kernel'], [undefined, H, Dk], '[kdim, H, key_dim]');
  const [vdim] = checkShape(what('value/kernel'), w['value/kernel'], [undefined, H, Dv], '[vdim, H, value_dim]');

  const gate = w['gate/kernel'] !== undefined && w['gate/kernel'] !== null;
  if (gate) checkShape(what('gate/kernel'), w['gate/kernel'], [Eq, H, Dv], '[E, H, value_dim]');
  const biasKeys = kerasKeys(true, gate).filter((k) => k.endsWith('bias'));
  const present = biasKeys.filter((k) => w[k] !== undefined && w[k] !== null);
  if (present.length !== 0 && present.length !== biasKeys.length) {
    throw new TypeError(`stateDictFromKeras: either all biases or none (use_bias), got only ${present.join(', ')}`);
  }
  if (present.length) {
    checkShape(what('query/bias'), w['query/bias'], [H, Dk], '[H, key_dim]');
    checkShape(what('key/bias'), w['key/bias'], [H, Dk], '[H, key_dim]');
    checkShape(what('value/bias'), w['value/bias'], [H, Dv], '[H, value_dim]');
    checkShape(what('attention_output/bias'), w['attention_output/bias'], [E], '[E]');
    if (gate) checkShape(what('gate/bias'), w['gate/bias'], [H, Dv], '[H, value_dim]');
  }
  const sizes = {
    numHeads: H, keyDim: Dk, valueDim: Dv, queryDim: Eq, keyInputDim: kdim, valueInputDim: vdim, outputShape: E, useBias: present.length > 0,
    useGate: gate,
  };
  const data = Object.fromEntries(Object.keys(kerasWeightShapes(sizes)).map((name) => [name, w[name].data]));
  const stateDict = stateDictFromKerasLayout(data, sizes);
  const config = {
    embedDim: Eq, numHeads: H, headDim: Dk, valueHeadDim: Dv, outputDim: E, kdim, vdim, bias: present.length > 0, ...(gate ? { gate: true } : {}),
  };
  return Object.defineProperty(stateDict, 'config', { value: config, enumerable: false });
}

/**
 * onnxruntime's fused `Attention` op (com.microsoft) -> a PyTorch state dict. `weight` [E, 3E] and
 * `bias` [3E] are the op's inputs (columns: Q, K, V, heads contiguous inside each); the op has no
 * output projection, so pass the MatMul that follows it: `outputWeight` [E, E] (input-major, as ONNX
 * MatMul's B) and `outputBias` [E]. Load into { embedDim: E, numHeads: the op's num_heads }.
 */
export function stateDictFromOnnxAttention(weights) {
  checkPlainObject('stateDictFromOnnxAttention: weights', weights);
  const known = ['weight', 'bias', 'outputWeight', 'outputBias'];
  for (const key of Object.keys(weights)) {
    if (!known.includes(key)) throw new TypeError(`stateDictFromOnnxAttention: unknown weight '${key}'; expected ${known.join(', ')}`);
  }
  const what = (key) => `stateDictFromOnnxAttention: ${key}`;
  const [E] = checkShape(what('weight'), weights.weight, [undefined, undefined], '[E, 3E]');
  checkShape(what('weight'), weights.weight, [E, 3 * E], '[E, 3E]');
  checkShape(what('outputWeight'), weights.outputWeight, [E, E], '[E, E]');
  const hasBias = weights.bias !== undefined && weights.bias !== null;
  if (hasBias !== (weights.outputBias !== undefined && weights.outputBias !== null)) {
    throw new TypeError(`stateDictFromOnnxAttention: give both bias and outputBias or neither, got ${
      hasBias ? 'bias only' : `outputBias only (bias is ${describe(weights.bias)})`}`);
  }
  const stateDict = {
    in_proj_weight: transpose(weights.weight.data, E, 3 * E),
    'out_proj.weight': transpose(weights.outputWeight.data, E, E),
  };
  if (hasBias) {
    checkShape(what('bias'), weights.bias, [3 * E], '[3E]');
    checkShape(what('outputBias'), weights.outputBias, [E], '[E]');
    stateDict.in_proj_bias = weights.bias.data.slice();
    stateDict['out_proj.bias'] = weights.outputBias.data.slice();
  }
  return stateDict;
}
