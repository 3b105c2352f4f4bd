// Every fixture through the public JS API matches PyTorch: |ours - torch| <= 1e-5 + 1e-4 |torch|.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { layerConfig, loadFixtures, runCase, worstError } from './fixtures.js';

const mha = await init();
const { tolerance, cases } = loadFixtures();
let largest = 0;

describe('parity with torch.nn.MultiheadAttention', () => {
  test('the fixture set covers at least 24 configurations', () => {
    assert.ok(cases.length >= 24, `${cases.length} cases`);
  });

  for (const c of cases) {
    test(c.name, () => {
      const layer = new mha.MultiHeadAttention(layerConfig(c));
      try {
        layer.loadStateDict(c.stateDict);
        const { output, weights } = runCase(layer, c);
        assert.deepEqual(output.shape, c.tensors.output.shape);
        assert.ok(output.data instanceof Float32Array);
        const e = worstError(output.data, c.tensors.output.data, tolerance);
        largest = Math.max(largest, e.absolute);
        assert.ok(e.ratio <= 1, `output[${e.index}] off by ${e.absolute}`);
        if (c.options.needWeights) {
          assert.deepEqual(weights.shape, c.tensors.weights.shape);
          const w = worstError(weights.data, c.tensors.weights.data, tolerance);
          largest = Math.max(largest, w.absolute);
          assert.ok(w.ratio <= 1, `weights[${w.index}] off by ${w.absolute}`);
        } else {
          assert.equal(weights, null);
        }
        assert.ok(output.data.every(Number.isFinite), 'output has NaN or Inf');
      } finally {
        layer.dispose();
      }
    });
  }

  after(() => console.log(`# largest absolute error over all fixtures: ${largest.toExponential(3)}`));
});

describe('fully masked query rows', () => {
  test('give zero weights and an output equal to out_proj.bias', () => {
    const c = cases.find((x) => x.name === 'fully_masked_attn_row');
    const layer = new mha.MultiHeadAttention(layerConfig(c));
    layer.loadStateDict(c.stateDict);
    const { output, weights } = runCase(layer, c);
    layer.dispose();
    const [B, H, L, S] = weights.shape;
    const E = c.config.embedDim;
    for (let b = 0; b < B; b++) {
      for (let h = 0; h < H; h++) {
        for (let j = 0; j < S; j++) assert.equal(weights.data[((b * H + h) * L + 1) * S + j], 0);
      }
      const row = output.data.slice((b * L + 1) * E, (b * L + 2) * E);
      assert.deepEqual([...row], [...c.stateDict['out_proj.bias']]);
    }
  });
});

describe('results', () => {
  test('are copies the caller owns, unchanged by later calls and memory growth', () => {
    const c = cases.find((x) => x.name === 'self_weights_averaged');
    const layer = new mha.MultiHeadAttention(layerConfig(c));
    layer.loadStateDict(c.stateDict);
    const first = runCase(layer, c);
    const snapshot = first.output.data.slice();
    // A large call grows the heap; the first result must not change.
    const big = 256 * 1024;
    layer.forward({ data: new Float32Array(big * 8), shape: [big, 1, 8] });
    runCase(layer, c);
    assert.deepEqual(first.output.data, snapshot);
    assert.notEqual(first.output.data.buffer, layer.forward(c.tensors.query).output.data.buffer);
    layer.dispose();
  });

  test('self-attention with key and value omitted equals passing the query three times', () => {
    const c = cases.find((x) => x.name === 'self_basic');
    const layer = new mha.MultiHeadAttention(layerConfig(c));
    layer.loadStateDict(c.stateDict);
    const q = c.tensors.query;
    assert.deepEqual(layer.forward(q).output.data, layer.forward(q, q, q).output.data);
    layer.dispose();
  });

  test('a Map state dict and the separate q/k/v form load the same weights', () => {
    const c = cases.find((x) => x.name === 'self_basic');
    const E = c.config.embedDim;
    const w = c.stateDict.in_proj_weight;
    const fused = new mha.MultiHeadAttention(layerConfig(c)).loadStateDict(new Map(Object.entries(c.stateDict)));
    const split = new mha.MultiHeadAttention(layerConfig(c)).loadStateDict({
      q_proj_weight: w.slice(0, E * E),
      k_proj_weight: w.slice(E * E, 2 * E * E),
      v_proj_weight: w.slice(2 * E * E),
      in_proj_bias: c.stateDict.in_proj_bias,
      'out_proj.weight': c.stateDict['out_proj.weight'],
      'out_proj.bias': c.stateDict['out_proj.bias'],
    });
    assert.deepEqual(fused.forward(c.tensors.query).output.data, split.forward(c.tensors.query).output.data);
    fused.dispose();
    split.dispose();
  });

  test('config reports every resolved value and stateDictShapes the PyTorch keys', () => {
    const layer = new mha.MultiHeadAttention({ embedDim: 16, numHeads: 4, kdim: 6, numKvHeads: 2 });
    assert.deepEqual(layer.config, {
      embedDim: 16, numHeads: 4, kdim: 6, vdim: 16, bias: true, numKvHeads: 2, headDim: 4, scale: 0.5,
      valueHeadDim: 4, outputDim: 16,
    });
    assert.deepEqual(layer.stateDictShapes(), {
      q_proj_weight: [16, 16], k_proj_weight: [8, 6], v_proj_weight: [8, 16],
      in_proj_bias: [32], 'out_proj.weight': [16, 16], 'out_proj.bias': [16],
    });
    layer.dispose();
  });

  test('init() is single-flight: every call returns the same module', async () => {
    assert.equal(await init(), mha);
    const [a, b] = await Promise.all([init(), init()]);
    assert.equal(a, b);
  });
});
