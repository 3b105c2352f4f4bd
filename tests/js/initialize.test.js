// initialize({ seed }): PyTorch's initialisation of nn.MultiheadAttention (torch/nn/modules/
// activation.py, _reset_parameters): xavier_uniform_ on in_proj_weight (or on each of q/k/v_proj_weight),
// zero in_proj_bias and out_proj.bias, out_proj.weight as nn.Linear's kaiming_uniform_(a = sqrt(5)),
// i.e. U(-1/sqrt(in), 1/sqrt(in)). Seeded: the same seed gives the same weights on every build.
// And stateDict(): copies keyed as stateDictShapes(), which loadStateDict takes back unchanged.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { seededFloats } from './seeded.js';

const builds = await loadAllBuilds({ threadCounts: [2] });
const product = (shape) => shape.reduce((n, d) => n * d, 1);

/**
 * Asserts `values` look like n draws of U(-bound, bound): all inside, reaching close to the edge,
 * mean, variance and the share inside bound/2 each within 5 standard errors of the uniform's.
 */
function expectUniform(values, bound, what) {
  const n = values.length;
  let sum = 0, sumSq = 0, inner = 0, largest = 0;
  for (const v of values) {
    sum += v;
    sumSq += v * v;
    largest = Math.max(largest, Math.abs(v));
    if (Math.abs(v) < bound / 2) inner++;
  }
  assert.ok(largest <= bound * (1 + 1e-6), `${what}: |w| up to ${largest}, above the bound ${bound}`);
  // The largest of n uniform draws stays below (1 - 10/n) of the bound with probability e^-10.
  assert.ok(largest >= bound * (1 - 10 / n), `${what}: |w| only up to ${largest} of the bound ${bound}`);
  const mean = sum / n, variance = sumSq / n;
  assert.ok(Math.abs(mean) <= 5 * bound / Math.sqrt(3 * n), `${what}: mean ${mean}`);
  // Var(w^2) = b^4/5 - b^4/9 = 4 b^4 / 45 for U(-b, b).
  const varianceError = bound * bound * Math.sqrt(4 / 45 / n);
  assert.ok(Math.abs(variance - bound * bound / 3) <= 5 * varianceError, `${what}: E[w^2] ${variance}, want ${bound * bound / 3}`);
  assert.ok(Math.abs(inner / n - 0.5) <= 5 * Math.sqrt(0.25 / n), `${what}: ${inner} of ${n} inside bound/2`);
}

const xavier = ([rows, cols]) => Math.sqrt(6 / (rows + cols));

for (const build of builds) {
  const { MultiHeadAttention } = build;

  describe(`initialize and stateDict on ${build.label}`, () => {
    test('PyTorch\'s statistics for its own layer: xavier_uniform in_proj [3E, E], U(+-1/sqrt(E)) out_proj, zero biases', () => {
      build.use();
      const E = 64;
      const layer = new MultiHeadAttention({ embedDim: E, numHeads: 4 });
      assert.equal(layer.initialize({ seed: 1 }), layer, 'initialize returns the layer');
      const sd = layer.stateDict();
      expectUniform(sd.in_proj_weight, Math.sqrt(6 / (3 * E + E)), 'in_proj_weight');
      expectUniform(sd['out_proj.weight'], 1 / Math.sqrt(E), 'out_proj.weight');
      assert.ok(sd.in_proj_bias.every((v) => v === 0) && sd['out_proj.bias'].every((v) => v === 0), 'zero biases');
      // q, k and v rows are not copies of each other.
      assert.notDeepEqual(sd.in_proj_weight.subarray(0, E * E), sd.in_proj_weight.subarray(E * E, 2 * E * E));
      layer.dispose();
    });

    test('separate q/k/v weights (kdim, vdim, GQA, free head sizes): xavier_uniform on each; out_proj from its fan-in', () => {
      build.use();
      const layer = new MultiHeadAttention({
        embedDim: 48, numHeads: 6, numKvHeads: 2, kdim: 40, vdim: 56, headDim: 10, valueHeadDim: 12, outputDim: 36, sinks: true,
      });
      layer.initialize({ seed: 3 });
      const shapes = layer.stateDictShapes();
      const sd = layer.stateDict();
      for (const key of ['q_proj_weight', 'k_proj_weight', 'v_proj_weight']) expectUniform(sd[key], xavier(shapes[key]), key);
      expectUniform(sd['out_proj.weight'], 1 / Math.sqrt(shapes['out_proj.weight'][1]), 'out_proj.weight');
      assert.ok(sd.in_proj_bias.every((v) => v === 0) && sd['out_proj.bias'].every((v) => v === 0), 'zero biases');
      assert.ok(sd.sinks.every(Number.isFinite), 'finite sinks');
      layer.dispose();
    });

    test('the same seed gives the same weights (on every build); another seed others', () => {
      build.use();
      const config = { embedDim: 16, numHeads: 4, kdim: 12 };
      const a = new MultiHeadAttention(config).initialize({ seed: 7 });
      const b = new MultiHeadAttention(config).initialize({ seed: 7 });
      const c = new MultiHeadAttention(config).initialize({ seed: 8 });
      assert.deepEqual(a.stateDict(), b.stateDict());
      for (const key of Object.keys(a.stateDictShapes()).filter((k) => !k.includes('bias'))) {
        assert.notDeepEqual(a.stateDict()[key], c.stateDict()[key], key);
      }
      // Re-initializing with the first seed returns to the first weights.
      c.initialize({ seed: 7 });
      assert.deepEqual(c.stateDict(), a.stateDict());
      // Every build draws the same numbers: compared with the first build's.
      const first = builds[0] === build ? null : new builds[0].MultiHeadAttention(config).initialize({ seed: 7 });
      if (first) {
        assert.deepEqual(a.stateDict(), first.stateDict());
        first.dispose();
      }
      for (const l of [a, b, c]) l.dispose();
    });

    test('an initialized layer runs forward and backward without loadStateDict', () => {
      build.use();
      const layer = new MultiHeadAttention({ embedDim: 8, numHeads: 2 }).initialize({ seed: 2 });
      const x = { data: seededFloats(2 * 3 * 8, 4), shape: [2, 3, 8] };
      const r = layer.forward(x, null, null, { grad: true });
      assert.ok(r.output.data.every(Number.isFinite) && r.output.data.some((v) => v !== 0));
      const g = r.backward({ data: seededFloats(48, 5), shape: [2, 3, 8] });
      assert.ok(g.params.in_proj_weight.some((v) => v !== 0));
      layer.dispose();
    });

    test('stateDict(): copies keyed and sized as stateDictShapes(); loadStateDict takes them back unchanged', () => {
      build.use();
      for (const config of [
        { embedDim: 8, numHeads: 2 },
        { embedDim: 12, numHeads: 4, numKvHeads: 2, kdim: 5, vdim: 7, sinks: true },
        { embedDim: 10, numHeads: 2, headDim: 3, valueHeadDim: 4, outputDim: 6, bias: false },
      ]) {
        const layer = new MultiHeadAttention(config);
        const shapes = layer.stateDictShapes();
        // Loaded weights come back exactly.
        const loaded = Object.fromEntries(Object.entries(shapes).map(([key, shape], i) => [key, seededFloats(product(shape), 10 + i)]));
        layer.loadStateDict(loaded);
        const sd = layer.stateDict();
        assert.deepEqual(Object.keys(sd), Object.keys(shapes));
        for (const [key, shape] of Object.entries(shapes)) {
          assert.ok(sd[key] instanceof Float32Array, key);
          assert.equal(sd[key].length, product(shape), key);
        }
        assert.deepEqual(sd, loaded);
        // Copies: writing into one changes neither the layer nor the next stateDict().
        const S = config.kdim ? 4 : 3;
        const q = { data: seededFloats(2 * 3 * config.embedDim, 1), shape: [2, 3, config.embedDim] };
        const kv = config.kdim && [{ data: seededFloats(2 * S * config.kdim, 2), shape: [2, S, config.kdim] },
          { data: seededFloats(2 * S * config.vdim, 3), shape: [2, S, config.vdim] }];
        const run = (l) => l.forward(q, kv ? kv[0] : null, kv ? kv[1] : null).output.data;
        const before = run(layer);
        for (const values of Object.values(sd)) values.fill(0.5);
        assert.deepEqual(run(layer), before);
        assert.deepEqual(layer.stateDict(), loaded);
        // A second layer loaded from it is the same layer.
        const other = new MultiHeadAttention(config).loadStateDict(layer.stateDict());
        assert.deepEqual(other.stateDict(), loaded);
        assert.deepEqual(run(other), before);
        layer.dispose();
        other.dispose();
      }
    });

    test('stateDict() after loading the separate q/k/v form into a fused layer gives in_proj_weight', () => {
      build.use();
      const E = 8;
      const layer = new MultiHeadAttention({ embedDim: E, numHeads: 2 });
      const q = seededFloats(E * E, 1), k = seededFloats(E * E, 2), v = seededFloats(E * E, 3);
      layer.loadStateDict({
        q_proj_weight: q, k_proj_weight: k, v_proj_weight: v, in_proj_bias: seededFloats(3 * E, 4),
        'out_proj.weight': seededFloats(E * E, 5), 'out_proj.bias': seededFloats(E, 6),
      });
      const sd = layer.stateDict();
      assert.deepEqual(Object.keys(sd), ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']);
      assert.deepEqual(sd.in_proj_weight, Float32Array.from([...q, ...k, ...v]));
      layer.dispose();
    });
  });
}
