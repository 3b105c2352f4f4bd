// The q/k norms (config qkNorm: Qwen3 and Gemma 3 per head, OLMo-2 over the projection) on every
// build: their state-dict entries, forward and captured steps against the float64 reference
// (float64-steps.js), a KV cache's steps and a cross-attention cache against the whole call,
// quantized projections, and the refusals by name (grad, staticK, addBiasKv, float64, bad values).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { attentionSteps } from './float64-steps.js';
import { worstError } from './fixtures.js';
import { seededFloats } from './seeded.js';
import { assertClose, forwardOf, inputsOf, TOLERANCE } from './variant-cases.js';

const builds = await loadAllBuilds({ threadCounts: [2] });

/** Random weights; the norms' weights around 1 (as trained ones are), the rest scaled like PyTorch's init. */
function randomStateDict(layer, seed) {
  return Object.fromEntries(Object.entries(layer.stateDictShapes()).map(([key, shape], i) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = seededFloats(n, seed + i, shape.length === 2 ? 1.5 / Math.sqrt(shape[1]) : 0.5);
    if (key.endsWith('_norm.weight')) for (let j = 0; j < n; j++) data[j] += 1;
    return [key, data];
  }));
}

const CASES = [
  { name: 'per head (Qwen3), GQA, rotary, causal', config: { embedDim: 12, numHeads: 4, numKvHeads: 2, headDim: 4, bias: false, qkNorm: { over: 'head' }, rotary: true }, B: 2, L: 5, causal: true },
  { name: 'over the projection (OLMo-2), partial rotary', config: { embedDim: 8, numHeads: 2, qkNorm: { over: 'projection', eps: 1e-5 }, rotary: { dim: 2 } }, B: 1, L: 6, causal: true },
  { name: 'per head, cross-attention, kdim/vdim, window, softcap', config: { embedDim: 6, numHeads: 3, kdim: 5, vdim: 4, slidingWindow: 3, softcap: 4, qkNorm: { over: 'head', eps: 0.25 } }, B: 2, L: 3, S: 4 },
];

test('qkNorm adds q_norm.weight and k_norm.weight ([Dh] per head, [H*Dh] / [Hkv*Dh] over the projection), ones from initialize()', () => {
  const { MultiHeadAttention } = builds[0];
  const perHead = new MultiHeadAttention({ embedDim: 12, numHeads: 4, numKvHeads: 2, headDim: 5, qkNorm: { over: 'head' } });
  const whole = new MultiHeadAttention({ embedDim: 12, numHeads: 4, numKvHeads: 2, headDim: 5, qkNorm: { over: 'projection', eps: 1e-5 } });
  const plain = new MultiHeadAttention({ embedDim: 8, numHeads: 2 });
  try {
    assert.deepEqual(perHead.stateDictShapes()['q_norm.weight'], [5]);
    assert.deepEqual(perHead.stateDictShapes()['k_norm.weight'], [5]);
    assert.deepEqual(whole.stateDictShapes()['q_norm.weight'], [20]);
    assert.deepEqual(whole.stateDictShapes()['k_norm.weight'], [10]);
    assert.deepEqual(perHead.config.qkNorm, { over: 'head', eps: 1e-6 });
    assert.deepEqual(whole.config.qkNorm, { over: 'projection', eps: 1e-5 });
    assert.equal(plain.config.qkNorm, undefined);
    const sd = whole.initialize({ seed: 2 }).stateDict();
    assert.ok(sd['q_norm.weight'].every((x) => x === 1) && sd['k_norm.weight'].every((x) => x === 1));
    // A layer without the norms names the option its keys need.
    const extra = { ...randomStateDict(plain, 1), 'q_norm.weight': new Float32Array(4) };
    assert.throws(() => plain.loadStateDict(extra), { name: 'TypeError', message: /unexpected key 'q_norm\.weight' \(the layer has no q\/k norms: give qkNorm\)/ });
  } finally {
    for (const layer of [perHead, whole, plain]) layer.dispose();
  }
});

test('qkNorm refusals name the option: bad values, grad, staticK, addBiasKv, addZeroAttn, float64', () => {
  const { MultiHeadAttention } = builds[0];
  const base = { embedDim: 8, numHeads: 2 };
  assert.throws(() => new MultiHeadAttention({ ...base, qkNorm: 'head' }), { name: 'TypeError', message: "MultiHeadAttention: qkNorm must be { over: 'head' | 'projection', eps }, got string head" });
  assert.throws(() => new MultiHeadAttention({ ...base, qkNorm: { over: 'row' } }), { name: 'TypeError', message: /qkNorm\.over must be 'head' or 'projection', got 'row'/ });
  assert.throws(() => new MultiHeadAttention({ ...base, qkNorm: { over: 'head', eps: -1 } }), { name: 'RangeError', message: /qkNorm\.eps must be a finite number >= 0, got -1/ });
  assert.throws(() => new MultiHeadAttention({ ...base, qkNorm: { over: 'head', epsilon: 1 } }), { name: 'TypeError', message: /qkNorm.*epsilon/ });
  assert.throws(() => new MultiHeadAttention({ ...base, qkNorm: { over: 'head' }, addBiasKv: true }), { name: 'TypeError', message: /^MultiHeadAttention: addBiasKv: not with qkNorm/ });
  assert.throws(() => new MultiHeadAttention({ ...base, qkNorm: { over: 'head' }, addZeroAttn: true }), { name: 'TypeError', message: /^MultiHeadAttention: addZeroAttn: not with qkNorm/ });
  assert.throws(() => new MultiHeadAttention({ ...base, qkNorm: { over: 'head' }, dtype: 'float64' }), { name: 'TypeError', message: /^MultiHeadAttention: qkNorm: not with dtype 'float64'/ });
  const layer = new MultiHeadAttention({ ...base, qkNorm: { over: 'head' } });
  try {
    layer.initialize({ seed: 1 });
    const x = { data: seededFloats(3 * 8, 1, 1), shape: [3, 8] };
    assert.throws(() => layer.forward(x, null, null, { grad: true }), { name: 'TypeError', message: /^forward: grad: not with qkNorm/ });
    const staticK = { data: new Float32Array(2 * 3 * 4), shape: [2, 3, 4] };
    assert.throws(() => layer.forward(x, null, null, { staticK }), { name: 'TypeError', message: /^forward: staticK: not with qkNorm/ });
  } finally {
    layer.dispose();
  }
});

for (const build of builds) {
  describe(`q/k norms on ${build.label}`, () => {
    for (const c of CASES) {
      test(`${c.name}: output, weights and every captured step equal the float64 reference's`, () => {
        build.use();
        const layer = new build.MultiHeadAttention(c.config);
        try {
          const sd = randomStateDict(layer, 7);
          layer.loadStateDict(sd);
          const inputs = inputsOf(c);
          const want = attentionSteps(layer.config, sd, inputs);
          const r = forwardOf(layer, inputs, { needWeights: true, averageWeights: false });
          assertClose(r.output.data, want.output.data, 'output');
          assertClose(r.weights.data, want.pattern.data, 'weights');
          const steps = forwardOf(layer, inputs, { capture: true });
          for (const name of ['q', 'k', 'scores', 'pattern', 'z', 'result']) assertClose(steps.captured[name].data, want[name].data, name);
          // Without the norms the layer computes something else: the test sees them.
          const { qkNorm, ...withoutNorm } = layer.config;
          assert.ok(qkNorm);
          const plain = attentionSteps(withoutNorm, sd, inputs);
          assert.ok(worstError(r.output.data, plain.output.data, TOLERANCE).ratio > 1, 'the norms change the output');
        } finally {
          layer.dispose();
        }
      });
    }

    test('through a KV cache: a prefill then one-token steps give the whole causal call\'s rows (keys normed once, as they enter)', () => {
      build.use();
      const c = CASES[0];
      const layer = new build.MultiHeadAttention(c.config);
      try {
        layer.loadStateDict(randomStateDict(layer, 3));
        const E = c.config.embedDim, L = 6;
        const x = seededFloats(L * E, 9, 1);
        const whole = layer.forward({ data: x, shape: [1, L, E] }, null, null, { causal: true }).output.data;
        const cache = layer.createCache({ batch: 1, capacity: L });
        try {
          const parts = [layer.forward({ data: x.subarray(0, 4 * E), shape: [1, 4, E] }, null, null, { cache }).output.data];
          for (let t = 4; t < L; t++) parts.push(layer.forward({ data: x.subarray(t * E, (t + 1) * E), shape: [1, 1, E] }, null, null, { cache }).output.data);
          const stepped = Float32Array.from(parts.flatMap((p) => [...p]));
          assertClose(stepped, Float64Array.from(whole), 'cached rows', { absolute: 1e-5, relative: 1e-4 });
        } finally {
          cache.dispose();
        }
      } finally {
        layer.dispose();
      }
    });

    test('a cross-attention cache (setKeyValue) holds normed keys: its calls equal the call with key and value', () => {
      build.use();
      const c = CASES[2];
      const layer = new build.MultiHeadAttention(c.config);
      try {
        layer.loadStateDict(randomStateDict(layer, 5));
        const inputs = inputsOf({ ...c, B: 1 }, 4);
        const want = forwardOf(layer, inputs).output.data;
        const cache = layer.createCache({ batch: 1, capacity: c.S });
        try {
          cache.setKeyValue(inputs.key, inputs.value);
          const got = layer.forward(inputs.query, null, null, { cache }).output.data;
          assertClose(got, Float64Array.from(want), 'cross cache', { absolute: 1e-6, relative: 1e-5 });
        } finally {
          cache.dispose();
        }
      } finally {
        layer.dispose();
      }
    });

    test('int8 projections: the norms are kept in float32 and applied the same (the quantized layer matches the float layer to its rounding)', () => {
      build.use();
      const c = CASES[1];
      const float = new build.MultiHeadAttention(c.config);
      const int8 = new build.MultiHeadAttention({ ...c.config, weightDtype: 'int8' });
      try {
        const sd = randomStateDict(float, 11);
        float.loadStateDict(sd);
        int8.loadStateDict(sd);
        assert.deepEqual([...int8.stateDict()['q_norm.weight']], [...sd['q_norm.weight']]);
        const inputs = inputsOf(c, 2);
        const want = forwardOf(float, inputs).output.data;
        assertClose(forwardOf(int8, inputs).output.data, Float64Array.from(want), 'int8 output', { absolute: 3e-2, relative: 5e-2 });
      } finally {
        float.dispose();
        int8.dispose();
      }
    });
  });
}
