// Gradients through the public API on every build (and the threaded one at 1 and 2 threads):
// forward with grad: true, then backward with dLoss/dOutput = G, against the gradient fixtures
// (PyTorch autograd on nn.MultiheadAttention, or autograd through the float64 references;
// tools/make_fixtures.py). Bound per tensor: |got - want| <= 1e-5 |want| + 8 * 2^-23 * sqrt(K) *
// max|want|, K the case's longest float32 sum (index.json's gradientTolerance, reductionLength).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { caseOptions, layerConfig, loadFixtures, worstError, worstGradientError } from './fixtures.js';

const builds = await loadAllBuilds({ threadCounts: [1, 2] });
const { tolerance, gradientTolerance, gradientCases } = loadFixtures();
const product = (shape) => shape.reduce((n, d) => n * d, 1);
let worstRatio = 0, worstAt = '';

/** Asserts got is within the gradient bound of want, and remembers the largest ratio seen. */
function expectGradient(got, want, c, what) {
  assert.ok(got instanceof Float32Array, `${what}: a Float32Array, got ${got?.constructor?.name}`);
  assert.equal(got.length, want.length, `${what}: length`);
  const e = worstGradientError(got, want, gradientTolerance, c.reductionLength);
  if (e.ratio > worstRatio) { worstRatio = e.ratio; worstAt = `${c.name} ${what}`; }
  assert.ok(e.ratio <= 1, `${what}[${e.index}]: got ${got[e.index]}, want ${want[e.index]} `
    + `(off by ${e.absolute.toExponential(3)}, ${e.ratio.toFixed(1)}x the bound)`);
}

/** Elements of a and b further apart than 8 float32 ulps of the largest |b|. */
function roundingApart(a, b) {
  const ulps8 = 8 * 2 ** -23 * b.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  return a.length !== b.length ? Math.max(a.length, b.length) : a.filter((v, i) => !(Math.abs(v - b[i]) <= ulps8)).length;
}

test(`the gradient fixtures cover at least 30 configurations (${gradientCases.length})`, () => {
  assert.ok(gradientCases.length >= 30);
  // Every option of the list appears in some case.
  const has = (p) => gradientCases.some(p);
  const cfg = (key) => has((c) => c.config[key] !== undefined);
  for (const key of ['headDim', 'outputDim', 'rotary', 'slidingWindow', 'alibi', 'alibiSlopes', 'softcap', 'sinks', 'scale']) {
    assert.ok(cfg(key), key);
  }
  assert.ok(has((c) => c.config.numKvHeads === 1) && has((c) => c.config.numKvHeads > 1 && c.config.numKvHeads < c.config.numHeads), 'MQA and GQA');
  assert.ok(has((c) => c.config.rotary?.interleaved) && has((c) => c.tensors.positions), 'interleaved rotary, positions');
  assert.ok(has((c) => !c.config.bias) && has((c) => c.config.kdim !== c.config.embedDim), 'bias off, kdim');
  assert.ok(has((c) => c.selfAttention) && has((c) => !c.selfAttention), 'self and cross attention');
  assert.ok(has((c) => c.options.causal) && has((c) => c.options.needWeights) && has((c) => c.hasFullyMaskedRows));
  assert.ok(has((c) => c.tensors.query.shape.length === 2), 'unbatched');
  for (const mask of ['keyPaddingMask', 'attnMask']) {
    for (const Kind of [Uint8Array, Float32Array]) assert.ok(has((c) => c.tensors[mask]?.data instanceof Kind), `${mask} ${Kind.name}`);
  }
  assert.ok(has((c) => c.tensors.attnMask?.shape.length === 3) && has((c) => c.tensors.attnMask && c.tensors.keyPaddingMask));
  assert.ok(has((c) => c.tensors.key && c.tensors.key.data.some(Number.isNaN)), 'NaN at padded keys');
});

test('the bound rejects one element off by 1e-4 of the tensor\'s largest entry', () => {
  const c = gradientCases[0];
  const want = c.gradients.query.data;
  const wrong = want.slice();
  wrong[3] += 1e-4 * want.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  assert.ok(worstGradientError(want, want, gradientTolerance, c.reductionLength).ratio === 0);
  const e = worstGradientError(wrong, want, gradientTolerance, c.reductionLength);
  assert.ok(e.ratio > 1 && e.index === 3, JSON.stringify(e));
});

for (const build of builds) {
  describe(`gradients on ${build.label}`, () => {
    for (const c of gradientCases) {
      test(c.name, () => {
        build.use();
        const t = c.tensors;
        const layer = new build.MultiHeadAttention(layerConfig(c)).loadStateDict(c.stateDict);
        try {
          const plain = layer.forward(t.query, t.key ?? null, t.value ?? null, caseOptions(c));
          const r = layer.forward(t.query, t.key ?? null, t.value ?? null, caseOptions(c, { grad: true }));
          // grad: true changes nothing in what forward returns (no dropout here) but float32 rounding:
          // inference takes the decode kernel for a few query rows, training the flash kernel.
          assert.deepEqual(r.output.shape, plain.output.shape);
          assert.equal(roundingApart(r.output.data, plain.output.data), 0, 'output apart from the plain forward\'s');
          assert.deepEqual(r.weights?.shape, plain.weights?.shape);
          if (plain.weights) assert.equal(roundingApart(r.weights.data, plain.weights.data), 0, 'weights apart from the plain forward\'s');
          const out = worstError(r.output.data, t.output.data, tolerance);
          assert.ok(out.ratio <= 1, `output[${out.index}] off by ${out.absolute}`);
          if (c.options.needWeights) {
            assert.deepEqual(r.weights.shape, t.weights.shape);
            const w = worstError(r.weights.data, t.weights.data, tolerance);
            assert.ok(w.ratio <= 1, `weights[${w.index}] off by ${w.absolute}`);
          } else {
            assert.equal(r.weights, null);
          }

          const g = r.backward({ data: t.gradOutput.data, shape: r.output.shape });
          assert.deepEqual(g.query.shape, c.gradients.query.shape);
          expectGradient(g.query.data, c.gradients.query.data, c, 'dquery');
          for (const input of ['key', 'value']) {
            if (c.gradients[input]) {
              assert.deepEqual(g[input].shape, c.gradients[input].shape);
              expectGradient(g[input].data, c.gradients[input].data, c, `d${input}`);
            } else {
              assert.equal(g[input], null, `forward got ${input} = null, so g.${input} is null`);
            }
          }
          const shapes = layer.stateDictShapes();
          assert.deepEqual(Object.keys(g.params), Object.keys(shapes));
          assert.deepEqual(Object.keys(c.paramGradients), Object.keys(shapes));
          for (const [key, shape] of Object.entries(shapes)) {
            assert.equal(g.params[key].length, product(shape), `d${key}: length of shape [${shape}]`);
            expectGradient(g.params[key], c.paramGradients[key], c, `d${key}`);
          }
          // Again: the same bits (no order-dependent sums), and backward freed what forward kept.
          const heapBefore = build.heapAllocatedBytes();
          const again = layer.forward(t.query, t.key ?? null, t.value ?? null, caseOptions(c, { grad: true }))
            .backward({ data: t.gradOutput.data, shape: r.output.shape });
          assert.deepEqual(again, g);
          assert.equal(build.heapAllocatedBytes(), heapBefore);
        } finally {
          layer.dispose();
        }
      });
    }
  });
}

describe('masked keys and blocked rows get exactly zero gradients, never NaN', () => {
  /** The [B, S, D] rows of `data` whose key is padded (keyPaddingMask [B, S] true). */
  const paddedRows = (data, mask, D) => [...mask].flatMap((padded, j) => (padded ? [...data.subarray(j * D, (j + 1) * D)] : []));
  for (const build of builds) {
    test(build.label, () => {
      build.use();
      for (const name of ['grad_fully_padded_batch', 'grad_nan_at_padded_keys']) {
        const c = gradientCases.find((x) => x.name === name);
        const t = c.tensors;
        const layer = new build.MultiHeadAttention(layerConfig(c)).loadStateDict(c.stateDict);
        const g = layer.forward(t.query, t.key, t.value, caseOptions(c, { grad: true })).backward(t.gradOutput);
        layer.dispose();
        const mask = t.keyPaddingMask.data;
        assert.ok(mask.some((m) => m) && mask.some((m) => !m));
        for (const input of ['key', 'value']) {
          const rows = paddedRows(g[input].data, mask, g[input].shape.at(-1));
          assert.ok(rows.every((v) => v === 0), `${name}: d${input} at padded keys: ${rows.filter((v) => v !== 0).slice(0, 3)}`);
        }
        for (const values of [g.query.data, g.key.data, g.value.data, ...Object.values(g.params)]) {
          assert.ok(values.every(Number.isFinite), `${name}: a gradient has NaN or Inf`);
        }
        if (name === 'grad_fully_padded_batch') {  // batch 0 sees no key: its queries get no gradient
          const [, L, E] = g.query.shape;
          assert.ok(g.query.data.subarray(0, L * E).every((v) => v === 0));
        }
      }
    });
  }
});

after(() => console.log(`# largest gradient error: ${worstRatio.toFixed(3)} of the bound (${worstAt})`));
