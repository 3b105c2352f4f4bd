// The q/k norms (config qkNorm) on WebGPU against the float64 reference of the steps
// (tests/js/float64-steps.js, which tests/js/qk-norm.test.js holds the wasm layer to): per head and
// over the projection, self and cross attention, captured steps, a KV cache's decode steps, a
// cross-attention cache, int8 projections, and the training call refused by name. On a device
// with the optional features requested and one without.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { attentionSteps } from '../js/float64-steps.js';
import { modules } from './devices.js';
import { random, tensor } from './random-data.js';

const wasm = await init();

function close(got, want, what, { absolute = 2e-5, relative = 2e-4 } = {}) {
  assert.equal(got.length, want.length, `${what}: length`);
  got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= absolute + relative * Math.abs(want[i]), `${what}[${i}]: ${x} vs ${want[i]}`));
}

/** Weights with the norms' around 1 (as trained ones are). */
function stateDictFor(config, seed) {
  const layer = new wasm.MultiHeadAttention(config).initialize({ seed });
  const sd = layer.stateDict();
  layer.dispose();
  const rand = random(seed + 100);
  for (const key of ['q_norm.weight', 'k_norm.weight']) sd[key] = sd[key].map(() => 1 + rand());
  return sd;
}

const CASES = [
  { name: 'per head (Qwen3), GQA, rotary, causal', config: { embedDim: 12, numHeads: 4, numKvHeads: 2, headDim: 4, bias: false, qkNorm: { over: 'head' }, rotary: true }, B: 2, L: 5 },
  { name: 'over the projection (OLMo-2), partial rotary', config: { embedDim: 8, numHeads: 2, qkNorm: { over: 'projection', eps: 1e-5 }, rotary: { dim: 2 } }, B: 1, L: 6 },
  { name: 'per head, cross-attention, kdim/vdim, window', config: { embedDim: 6, numHeads: 3, kdim: 5, vdim: 4, slidingWindow: 3, qkNorm: { over: 'head', eps: 0.25 } }, B: 2, L: 3, S: 4 },
];

for (const [label, mha] of await modules()) {
  describe(`q/k norms on WebGPU (${label})`, () => {
    for (const c of CASES) {
      test(`${c.name}: output, weights and the captured q, k and pattern equal the float64 reference's`, async () => {
        const sd = stateDictFor(c.config, 3);
        const layer = new mha.MultiHeadAttention(c.config).loadStateDict(sd);
        try {
          const rand = random(7);
          const { embedDim: E, kdim = E, vdim = E } = c.config;
          const query = tensor(rand, [c.B, c.L, E]);
          const key = c.S ? tensor(rand, [c.B, c.S, kdim]) : null, value = c.S ? tensor(rand, [c.B, c.S, vdim]) : null;
          const causal = !c.S;
          const want = attentionSteps(layer.config, sd, { query, key, value, causal });
          const got = await layer.forwardAsync(query, key, value, { needWeights: true, averageWeights: false, causal });
          close(got.output.data, want.output.data, 'output');
          close(got.weights.data, want.pattern.data, 'weights');
          const steps = await layer.forwardAsync(query, key, value, { capture: ['q', 'k', 'pattern'], causal });
          for (const name of ['q', 'k', 'pattern']) close(steps.captured[name].data, want[name].data, name);
        } finally {
          layer.dispose();
        }
      });
    }

    test('a KV cache\'s prefill and one-token steps, and a cross-attention cache, equal the whole calls', async () => {
      const c = CASES[0], E = c.config.embedDim, L = 6;
      const sd = stateDictFor(c.config, 5);
      const layer = new mha.MultiHeadAttention(c.config).loadStateDict(sd);
      const cross = new mha.MultiHeadAttention(CASES[2].config).loadStateDict(stateDictFor(CASES[2].config, 6));
      try {
        const x = tensor(random(9), [1, L, E]);
        const whole = attentionSteps(layer.config, sd, { query: x, causal: true }).output.data;
        const cache = layer.createCache({ batch: 1, capacity: L });
        const rows = [];
        for (const [from, to] of [[0, 4], [4, 5], [5, 6]]) {
          const part = { data: x.data.subarray(from * E, to * E), shape: [1, to - from, E] };
          rows.push(...(await layer.forwardAsync(part, null, null, { cache })).output.data);
        }
        close(rows, whole, 'cached rows');
        cache.dispose();

        const rand = random(4);
        const query = tensor(rand, [1, 3, 6]), key = tensor(rand, [1, 4, 5]), value = tensor(rand, [1, 4, 4]);
        const want = (await cross.forwardAsync(query, key, value)).output.data;
        const crossCache = cross.createCache({ batch: 1, capacity: 4 });
        await crossCache.setKeyValue(key, value);
        close((await cross.forwardAsync(query, null, null, { cache: crossCache })).output.data, want, 'cross cache', { absolute: 1e-6, relative: 1e-5 });
        crossCache.dispose();
      } finally {
        layer.dispose();
        cross.dispose();
      }
    });

    test('int8 projections keep the norms in float32: the GPU layer equals the wasm int8 layer', async () => {
      const config = { ...CASES[1].config, weightDtype: 'int8' };
      const sd = stateDictFor(CASES[1].config, 8);
      const cpu = new wasm.MultiHeadAttention(config).loadStateDict(sd);
      const gpu = new mha.MultiHeadAttention(config).loadStateDict(sd);
      try {
        const query = tensor(random(2), [1, 6, 8]);
        const want = cpu.forward(query, null, null, { causal: true }).output.data;
        close((await gpu.forwardAsync(query, null, null, { causal: true })).output.data, want, 'int8 output');
      } finally {
        cpu.dispose();
        gpu.dispose();
      }
    });

    test('a training call is refused by name', async () => {
      const layer = new mha.MultiHeadAttention(CASES[0].config).loadStateDict(stateDictFor(CASES[0].config, 1));
      try {
        await assert.rejects(layer.forwardAsync(tensor(random(1), [1, 3, 12]), null, null, { grad: true }),
          { name: 'TypeError', message: /^forwardAsync: grad: not with qkNorm/ });
      } finally {
        layer.dispose();
      }
    });
  });
}
