// Keras- and ONNX-layout weights give the same output as the PyTorch state dict they were made from.
// The test builds those layouts from the fixtures' PyTorch weights with its own index loops.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init, stateDictFromKeras, stateDictFromOnnxAttention } from '../../bindings/js/index.js';
import { layerConfig, loadFixtures, runCase, worstError } from './fixtures.js';

const mha = await init();
const { tolerance, cases } = loadFixtures();

/** PyTorch's q/k/v projection matrices ([out, in] row-major) and sizes of a fixture case. */
function torchParts(c) {
  const { embedDim: E, numHeads: H, kdim, vdim, bias } = c.config;
  const sd = c.stateDict;
  const split = sd.in_proj_weight
    ? [0, 1, 2].map((i) => sd.in_proj_weight.subarray(i * E * E, (i + 1) * E * E))
    : [sd.q_proj_weight, sd.k_proj_weight, sd.v_proj_weight];
  const inBias = bias ? [0, 1, 2].map((i) => sd.in_proj_bias.subarray(i * E, (i + 1) * E)) : null;
  return { E, H, D: E / H, kdim, vdim, bias, Wq: split[0], Wk: split[1], Wv: split[2], inBias, Wo: sd['out_proj.weight'], bo: sd['out_proj.bias'] };
}

/** Keras' EinsumDense kernel [in, H, D] from a PyTorch [H*D, in] weight: kernel[c, h, d] = W[h*D + d, c]. */
function kerasKernel(W, inDim, H, D) {
  const data = new Float32Array(inDim * H * D);
  for (let c = 0; c < inDim; c++) for (let h = 0; h < H; h++) for (let d = 0; d < D; d++) data[(c * H + h) * D + d] = W[(h * D + d) * inDim + c];
  return { data, shape: [inDim, H, D] };
}

function kerasWeights(c) {
  const p = torchParts(c);
  const outKernel = new Float32Array(p.H * p.D * p.E);
  for (let h = 0; h < p.H; h++) for (let d = 0; d < p.D; d++) for (let e = 0; e < p.E; e++) outKernel[(h * p.D + d) * p.E + e] = p.Wo[e * p.E + h * p.D + d];
  const w = {
    'query/kernel': kerasKernel(p.Wq, p.E, p.H, p.D),
    'key/kernel': kerasKernel(p.Wk, p.kdim, p.H, p.D),
    'value/kernel': kerasKernel(p.Wv, p.vdim, p.H, p.D),
    'attention_output/kernel': { data: outKernel, shape: [p.H, p.D, p.E] },
  };
  if (p.bias) {
    ['query', 'key', 'value'].forEach((name, i) => { w[`${name}/bias`] = { data: p.inBias[i].slice(), shape: [p.H, p.D] }; });
    w['attention_output/bias'] = { data: p.bo.slice(), shape: [p.E] };
  }
  return w;
}

function onnxWeights(c) {
  const p = torchParts(c);
  const weight = new Float32Array(p.E * 3 * p.E);   // [E, 3E]: weight[c, j] = in_proj_weight[j, c]
  [p.Wq, p.Wk, p.Wv].forEach((W, part) => {
    for (let r = 0; r < p.E; r++) for (let col = 0; col < p.E; col++) weight[col * 3 * p.E + part * p.E + r] = W[r * p.E + col];
  });
  const outputWeight = new Float32Array(p.E * p.E);  // MatMul B [E, E]: B[c, e] = out_proj.weight[e, c]
  for (let e = 0; e < p.E; e++) for (let col = 0; col < p.E; col++) outputWeight[col * p.E + e] = p.Wo[e * p.E + col];
  const w = { weight: { data: weight, shape: [p.E, 3 * p.E] }, outputWeight: { data: outputWeight, shape: [p.E, p.E] } };
  if (p.bias) {
    w.bias = { data: Float32Array.from([...p.inBias[0], ...p.inBias[1], ...p.inBias[2]]), shape: [3 * p.E] };
    w.outputBias = { data: p.bo.slice(), shape: [p.E] };
  }
  return w;
}

function forwardWith(c, stateDict) {
  const layer = new mha.MultiHeadAttention(layerConfig(c));
  try {
    return runCase(layer.loadStateDict(stateDict), c).output;
  } finally {
    layer.dispose();
  }
}

function assertSameAsTorch(c, stateDict) {
  const output = forwardWith(c, stateDict);
  const e = worstError(output.data, c.tensors.output.data, tolerance);
  assert.ok(e.ratio <= 1, `${c.name}: output[${e.index}] off by ${e.absolute}`);
  // The converted weights are the same floats, so the output is bit for bit the PyTorch-dict one.
  assert.deepEqual(output.data, forwardWith(c, c.stateDict).data);
}

// Keras MHA has no grouped-query heads and no custom scale (its scale is 1/sqrt(key_dim), PyTorch's default);
// the plain nn.MultiheadAttention layouts only (the cases of today's models' options carry keys
// such as rotary, sinks or headDim that these converters do not map).
const PLAIN_KEYS = ['embedDim', 'numHeads', 'kdim', 'vdim', 'bias', 'numKvHeads', 'scale'];
const kerasCases = cases.filter((c) => c.config.numKvHeads === c.config.numHeads && c.config.scale === undefined
  && Object.keys(c.config).every((k) => PLAIN_KEYS.includes(k)));
const onnxCases = kerasCases.filter((c) => c.config.kdim === c.config.embedDim && c.config.vdim === c.config.embedDim);

describe('stateDictFromKeras', () => {
  test('covers self, cross, kdim != vdim and bias-free cases', () => {
    assert.ok(kerasCases.length >= 25, `${kerasCases.length}`);
    for (const name of ['self_basic', 'kdim_vdim', 'no_bias_kdim', 'odd_sizes_causal_cross', 'large']) {
      assert.ok(kerasCases.some((c) => c.name === name), name);
    }
  });
  for (const c of kerasCases) {
    test(`${c.name}: Keras weights give PyTorch's output`, () => assertSameAsTorch(c, stateDictFromKeras(kerasWeights(c))));
  }
  test('takes the get_weights() list order', () => {
    const c = cases.find((x) => x.name === 'kdim_vdim');
    const w = kerasWeights(c);
    const list = ['query', 'key', 'value', 'attention_output'].flatMap((n) => [w[`${n}/kernel`], w[`${n}/bias`]]);
    assertSameAsTorch(c, stateDictFromKeras(list));
    const noBias = cases.find((x) => x.name === 'no_bias_kdim');
    const w2 = kerasWeights(noBias);
    assertSameAsTorch(noBias, stateDictFromKeras(['query', 'key', 'value', 'attention_output'].map((n) => w2[`${n}/kernel`])));
  });

  test('any key_dim / value_dim / output size: the config it returns runs the weights as Keras does', async () => {
    const mha = await init();
    const keras = new mha.KerasMultiHeadAttention({ numHeads: 4, keyDim: 128, valueDim: 6, outputShape: 9, queryDim: 100, valueInputDim: 7 });
    const list = Object.values(keras.weightShapes()).map((shape, i) => ({
      data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, j) => Math.sin(i * 13 + j * 0.7) * 0.1), shape,
    }));
    keras.setWeights(list);
    const sd = stateDictFromKeras(list);
    assert.deepEqual(sd.config, { embedDim: 100, numHeads: 4, headDim: 128, valueHeadDim: 6, outputDim: 9, kdim: 7, vdim: 7, bias: true });
    assert.ok(!Object.keys(sd).includes('config'));
    const layer = new mha.MultiHeadAttention(sd.config).loadStateDict(sd);
    const q = { data: Float32Array.from({ length: 2 * 3 * 100 }, (_, i) => Math.cos(i)), shape: [2, 3, 100] };
    const v = { data: Float32Array.from({ length: 2 * 5 * 7 }, (_, i) => Math.sin(i)), shape: [2, 5, 7] };
    assert.deepEqual(layer.forward(q, v, v).output.data, keras.call(q, v).output.data);
    layer.dispose();
    keras.dispose();
  });

  const base = () => kerasWeights(cases.find((x) => x.name === 'kdim_vdim'));  // E 12, H 3, D 4, kdim 5, vdim 7
  const BAD = [
    ['an unknown weight', () => ({ ...base(), 'query/gamma': base()['query/bias'] }), TypeError, /unknown weight 'query\/gamma'/],
    ['a list of 6', () => Object.values(base()).slice(0, 6), RangeError, /get_weights\(\) list has 8 tensors \(4 without biases; with use_gate 10, or 5\), got 6/],
    ['a missing kernel', () => { const w = base(); delete w['value/kernel']; return w; }, TypeError, /'value\/kernel' is required/],
    ['a 2-D query kernel', () => ({ ...base(), 'query/kernel': { data: new Float32Array(144), shape: [12, 12] } }), RangeError,
      /'query\/kernel': expected shape \[E, H, key_dim\] = \[\?, \?, \?\], got \[12, 12\]/],
    ['a query kernel whose key_dim differs from the key kernel\'s', () => ({ ...base(), 'query/kernel': { data: new Float32Array(12 * 3 * 2), shape: [12, 3, 2] } }), RangeError,
      /'key\/kernel': expected shape \[kdim, H, key_dim\] = \[\?, 3, 2\], got \[5, 3, 4\]/],
    ['a key kernel with other heads', () => ({ ...base(), 'key/kernel': { data: new Float32Array(5 * 4 * 3), shape: [5, 4, 3] } }), RangeError,
      /'key\/kernel': expected shape \[kdim, H, key_dim\] = \[\?, 3, 4\], got \[5, 4, 3\]/],
    ['only some biases', () => { const w = base(); delete w['key/bias']; return w; }, TypeError, /either all biases or none \(use_bias\), got only query\/bias, value\/bias, attention_output\/bias/],
    ['a mis-sized output bias', () => ({ ...base(), 'attention_output/bias': { data: new Float32Array(11), shape: [11] } }), RangeError,
      /'attention_output\/bias': expected shape \[E\] = \[12\], got \[11\]/],
  ];
  for (const [description, make, ErrorClass, pattern] of BAD) {
    test(`rejects ${description}`, () => {
      assert.throws(() => stateDictFromKeras(make()), (e) => e.constructor === ErrorClass && pattern.test(e.message));
    });
  }
});

describe('stateDictFromOnnxAttention', () => {
  test('covers bias and bias-free cases', () => {
    assert.ok(onnxCases.some((c) => !c.config.bias) && onnxCases.length >= 20, `${onnxCases.length}`);
  });
  for (const c of onnxCases) {
    test(`${c.name}: ONNX [E, 3E] weights give PyTorch's output`, () => assertSameAsTorch(c, stateDictFromOnnxAttention(onnxWeights(c))));
  }
  const base = () => onnxWeights(cases.find((x) => x.name === 'self_basic'));  // E 8
  const BAD = [
    ['a transposed weight', () => ({ ...base(), weight: { data: new Float32Array(192), shape: [24, 8] } }), RangeError,
      /weight: expected shape \[E, 3E\] = \[24, 72\], got \[24, 8\]/],
    ['a mis-sized output weight', () => ({ ...base(), outputWeight: { data: new Float32Array(64), shape: [4, 16] } }), RangeError,
      /outputWeight: expected shape \[E, E\] = \[8, 8\], got \[4, 16\]/],
    ['a bias of E', () => ({ ...base(), bias: { data: new Float32Array(8), shape: [8] } }), RangeError, /bias: expected shape \[3E\] = \[24\], got \[8\]/],
    ['one bias only', () => ({ ...base(), outputBias: undefined }), TypeError, /give both bias and outputBias or neither, got bias only/],
    ['an unknown input', () => ({ ...base(), mask: {} }), TypeError, /unknown weight 'mask'/],
  ];
  for (const [description, make, ErrorClass, pattern] of BAD) {
    test(`rejects ${description}`, () => {
      assert.throws(() => stateDictFromOnnxAttention(make()), (e) => e.constructor === ErrorClass && pattern.test(e.message));
    });
  }
});

test('stateDictFromKeras: a gated layer\'s 10 get_weights() tensors (use_gate) load into a core layer with gate: true that computes the same', () => {
  const keras = new mha.KerasMultiHeadAttention({ numHeads: 2, keyDim: 3, valueDim: 4, useGate: true, queryDim: 6, seed: 5 });
  const x = { data: Float32Array.from({ length: 2 * 3 * 6 }, (_, i) => Math.sin(i)), shape: [2, 3, 6] };
  try {
    const weights = keras.getWeights();
    assert.equal(weights.length, 10);
    const sd = stateDictFromKeras(weights);
    assert.equal(sd.config.gate, true);
    const core = new mha.MultiHeadAttention(sd.config).loadStateDict(sd);
    const want = keras.call(x, x).output.data;
    assert.deepEqual(core.forward(x, x, x).output.data, want);
    core.dispose();
    // Without biases: 5 tensors.
    const noBias = new mha.KerasMultiHeadAttention({ numHeads: 2, keyDim: 3, useGate: true, useBias: false, queryDim: 6 });
    assert.equal(Object.keys(stateDictFromKeras(noBias.getWeights())).includes('gate_proj.weight'), true);
    noBias.dispose();
  } finally {
    keras.dispose();
  }
});
