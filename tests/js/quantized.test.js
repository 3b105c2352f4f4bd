// Quantized weights (weightDtype 'f16' | 'int8' | 'q4') through the public API on every build:
// - what the layer stores is the formats' definition, bit for bit: stateDict() (dequantized)
//   equals the JS twin's dequantize(quantize(W)) (quantized-reference.js) on every fixture
//   configuration, and on input sizes that are not multiples of the q4 block;
// - every option with every dtype (the 61 fixture configurations: masks, GQA, kdim/vdim, free head
//   sizes, rotary, window, ALiBi, softcap, sinks, needWeights, unbatched; the KV cache; backward's
//   input gradients; Keras): the quantized layer equals the float32 layer holding its dequantized
//   weights to the fixtures' tolerance, so the quantized kernels compute the float32 layer's math;
// - accuracy against the float32 layer with the original weights: the largest relative output
//   difference (max |quantized - float32| / max |float32|, per case) within BOUNDS; the figures
//   measured are printed (`node --test tests/js/quantized.test.js`) and quoted in docs/quantized.md.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { layerConfig, loadFixtures, runCase, worstError } from './fixtures.js';
import { quantize, roundTrip, storedStateDict } from './quantized-reference.js';
import { seededFloats } from './seeded.js';
import { randomArray, randomStateDict } from '../../bench/shapes.mjs';

const builds = await loadAllBuilds({ threadCounts: [2] });
const { cases, tolerance } = loadFixtures();
const DTYPES = ['f16', 'int8', 'q4'];
// Largest relative output difference from the float32 layer (random weights; measured figures in
// docs/quantized.md: f16 6e-4, int8 1.2e-2, q4 0.29 at worst on the fixtures, whose layers are
// mostly narrower than one q4 block).
const BOUNDS = { f16: 1e-3, int8: 2e-2, q4: 0.4 };
// The quantized layer against the float32 layer holding its dequantized weights: f16 to the
// fixtures' tolerance; int8 and q4 also quantize a row of activations to int16 (dx = max|x| / 32767)
// in their few-row kernel (src/mha/kernels/quantized_gemv.hpp), which adds up to ~1e-5 relative.
const SAME_MATH = { f16: tolerance, int8: { absolute: 5e-5, relative: 5e-4 }, q4: { absolute: 5e-5, relative: 5e-4 } };

/** max |got - want| / max |want| over the finite elements (NaN where both are NaN is agreement). */
function relativeDifference(got, want) {
  let worst = 0, largest = 0;
  for (let i = 0; i < want.length; i++) {
    if (Number.isNaN(want[i]) && Number.isNaN(got[i])) continue;
    worst = Math.max(worst, Math.abs(got[i] - want[i]));
    largest = Math.max(largest, Math.abs(want[i]));
  }
  return largest === 0 ? worst : worst / largest;
}

function assertWithin(got, want, what, tol = tolerance) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (Number.isNaN(want[i])) {
      assert.ok(Number.isNaN(got[i]), `${what}[${i}]: ${got[i]}, expected NaN`);
    }
  }
  const { ratio, absolute, index } = worstError(got, want, tol);
  assert.ok(ratio <= 1, `${what}: ${ratio.toFixed(2)} of the tolerance (|diff| ${absolute.toExponential(2)} at ${index})`);
}

/** Bit-for-bit equality of two state dicts (every float compared as its bits). */
function assertSameBits(got, want, what) {
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort(), `${what}: keys`);
  for (const key of Object.keys(want)) {
    const a = new Uint32Array(got[key].buffer, got[key].byteOffset, got[key].length);
    const b = new Uint32Array(want[key].buffer, want[key].byteOffset, want[key].length);
    const at = b.findIndex((bits, i) => bits !== a[i]);
    assert.equal(a.length, b.length, `${what}['${key}']: length`);
    assert.equal(at, -1, `${what}['${key}'][${at}]: ${got[key][at]}, the format's definition gives ${want[key][at]}`);
  }
}

const measured = Object.fromEntries(DTYPES.map((d) => [d, { worst: 0, at: '' }]));
const note = (dtype, difference, where) => {
  if (difference > measured[dtype].worst) measured[dtype] = { worst: difference, at: where };
};

for (const build of builds) {
  describe(`quantized weights on ${build.label}`, () => {
    for (const dtype of DTYPES) {
      test(`${dtype}: the 61 fixture configurations (every option): stored weights exact, output = the dequantized float32 layer's, bounded difference from float32`, () => {
        build.use();
        for (const c of cases) {
          const config = layerConfig(c);
          const layer = new build.MultiHeadAttention({ ...config, weightDtype: dtype }).loadStateDict(c.stateDict);
          const stored = storedStateDict(dtype, c.stateDict, layer.stateDictShapes());
          const reference = new build.MultiHeadAttention(config).loadStateDict(stored);
          const float = new build.MultiHeadAttention(config).loadStateDict(c.stateDict);
          try {
            assert.equal(layer.config.weightDtype, dtype);
            assertSameBits(layer.stateDict(), stored, `${c.name} stateDict`);
            const got = runCase(layer, c), want = runCase(reference, c);
            assertWithin(got.output.data, want.output.data, `${c.name} output`, SAME_MATH[dtype]);
            if (want.weights) assertWithin(got.weights.data, want.weights.data, `${c.name} weights`, SAME_MATH[dtype]);
            note(dtype, relativeDifference(got.output.data, runCase(float, c).output.data), c.name);
            assert.ok(measured[dtype].worst <= BOUNDS[dtype], `${dtype}: ${measured[dtype].worst} at ${measured[dtype].at}`);
          } finally {
            for (const l of [layer, reference, float]) l.dispose();
          }
        }
      });

      test(`${dtype}: input sizes that are not multiples of 32 (the last q4 block padded)`, () => {
        build.use();
        const config = { embedDim: 80, numHeads: 4, kdim: 33, vdim: 47, headDim: 10, valueHeadDim: 9, outputDim: 71 };
        const layer = new build.MultiHeadAttention({ ...config, weightDtype: dtype });
        const shapes = layer.stateDictShapes();
        const sd = Object.fromEntries(Object.entries(shapes).map(([k, s], i) => [k, seededFloats(s.reduce((a, b) => a * b, 1), 40 + i)]));
        layer.loadStateDict(sd);
        const reference = new build.MultiHeadAttention(config).loadStateDict(storedStateDict(dtype, sd, shapes));
        try {
          assertSameBits(layer.stateDict(), storedStateDict(dtype, sd, shapes), 'stateDict');
          const q = { data: seededFloats(2 * 7 * 80, 1), shape: [2, 7, 80] };
          const k = { data: seededFloats(2 * 5 * 33, 2), shape: [2, 5, 33] };
          const v = { data: seededFloats(2 * 5 * 47, 3), shape: [2, 5, 47] };
          assertWithin(layer.forward(q, k, v).output.data, reference.forward(q, k, v).output.data, 'output', SAME_MATH[dtype]);
        } finally {
          layer.dispose();
          reference.dispose();
        }
      });

      test(`${dtype}: KV cache decoding (f32 and f16 caches) equals the dequantized float32 layer's`, () => {
        build.use();
        const configs = [
          { embedDim: 64, numHeads: 4 },
          { embedDim: 96, numHeads: 6, numKvHeads: 2, rotary: true },
          { embedDim: 48, numHeads: 4, numKvHeads: 1, alibi: true, softcap: 4, slidingWindow: 6 },
          { embedDim: 40, numHeads: 2, sinks: true, bias: false },
        ];
        for (const config of configs) {
          for (const cacheDtype of ['f32', 'f16']) {
            const layer = new build.MultiHeadAttention({ ...config, weightDtype: dtype });
            const shapes = layer.stateDictShapes();
            const sd = Object.fromEntries(Object.entries(shapes).map(([k, s], i) => [k, seededFloats(s.reduce((a, b) => a * b, 1), 7 + i, 1 / Math.sqrt(s.at(-1)))]));
            layer.loadStateDict(sd);
            const reference = new build.MultiHeadAttention(config).loadStateDict(storedStateDict(dtype, sd, shapes));
            try {
              const caches = [layer, reference].map((l) => l.createCache({ batch: 2, capacity: 12, dtype: cacheDtype }));
              const E = config.embedDim;
              for (const [i, n] of [5, 1, 1, 3, 1].entries()) {
                const x = { data: seededFloats(2 * n * E, 100 + i), shape: [2, n, E] };
                const got = layer.forward(x, null, null, { cache: caches[0], needWeights: true });
                const want = reference.forward(x, null, null, { cache: caches[1], needWeights: true });
                assertWithin(got.output.data, want.output.data, `${JSON.stringify(config)} ${cacheDtype} call ${i} output`, SAME_MATH[dtype]);
                assertWithin(got.weights.data, want.weights.data, `${JSON.stringify(config)} ${cacheDtype} call ${i} weights`, SAME_MATH[dtype]);
              }
            } finally {
              layer.dispose();
              reference.dispose();
            }
          }
        }
      });

      test(`${dtype}: cross-attention cache, out buffers, dropout in training calls equal the dequantized float32 layer's`, () => {
        build.use();
        const config = { embedDim: 48, numHeads: 4, kdim: 20, vdim: 36, dropout: 0.25 };
        const layer = new build.MultiHeadAttention({ ...config, weightDtype: dtype });
        const shapes = layer.stateDictShapes();
        const sd = Object.fromEntries(Object.entries(shapes).map(([k, s], i) => [k, seededFloats(s.reduce((a, b) => a * b, 1), 80 + i, 0.3)]));
        layer.loadStateDict(sd);
        const reference = new build.MultiHeadAttention(config).loadStateDict(storedStateDict(dtype, sd, shapes));
        try {
          const q = { data: seededFloats(2 * 3 * 48, 1), shape: [2, 3, 48] };
          const k = { data: seededFloats(2 * 9 * 20, 2), shape: [2, 9, 20] }, v = { data: seededFloats(2 * 9 * 36, 3), shape: [2, 9, 36] };
          const [a, b] = [layer, reference].map((l) => {
            const cache = l.createCache({ batch: 2, capacity: 9 });
            cache.setKeyValue(k, v);
            return l.forward(q, null, null, { cache, out: new Float32Array(2 * 3 * 48) }).output.data;
          });
          assertWithin(a, b, 'cross cache', SAME_MATH[dtype]);
          const options = { training: true, seed: 7, needWeights: true, averageWeights: false };
          const [c, d] = [layer, reference].map((l) => l.forward(q, k, v, options));
          assertWithin(c.output.data, d.output.data, 'dropout output', SAME_MATH[dtype]);
          assertWithin(c.weights.data, d.weights.data, 'dropout weights', SAME_MATH[dtype]);
        } finally {
          layer.dispose();
          reference.dispose();
        }
      });

      test(`${dtype}: backward gives the inputs' gradients through the dequantized weights; params is a TypeError`, () => {
        build.use();
        for (const c of cases.filter((x) => ['self_basic', 'cross_l_ne_s', 'kdim_vdim', 'gqa', 'causal', 'masks_combined', 'llama_rotary_gqa',
          'gpt_oss_sinks_window_rotary_gqa', 'phi_partial_rotary_interleaved_alibi_softcap', 'free_head_sizes_cross_gqa', 'unbatched'].includes(x.name))) {
          const config = layerConfig(c);
          const layer = new build.MultiHeadAttention({ ...config, weightDtype: dtype }).loadStateDict(c.stateDict);
          const reference = new build.MultiHeadAttention(config).loadStateDict(storedStateDict(dtype, c.stateDict, layer.stateDictShapes()));
          try {
            const got = runCase(layer, c, { grad: true }), want = runCase(reference, c, { grad: true });
            const dOut = { data: seededFloats(want.output.data.length, 5), shape: want.output.shape };
            const g = got.backward(dOut), w = want.backward(dOut);
            for (const name of ['query', 'key', 'value']) {
              if (w[name] === null) assert.equal(g[name], null);
              else assertWithin(g[name].data, w[name].data, `${c.name} d${name}`, { absolute: 1e-5, relative: 1e-3 });
            }
            assert.throws(() => g.params, (error) => error instanceof TypeError
              && error.message.startsWith(`backward: params: this layer holds quantized projection weights (weightDtype '${dtype}')`));
          } finally {
            layer.dispose();
            reference.dispose();
          }
        }
      });

      test(`${dtype}: KerasMultiHeadAttention stores quantized weights; getWeights gives them dequantized`, () => {
        build.use();
        const make = (extra) => new build.KerasMultiHeadAttention({ numHeads: 3, keyDim: 12, valueDim: 7, queryDim: 36, valueInputDim: 20, ...extra });
        const layer = make({ weightDtype: dtype });
        const weights = Object.entries(layer.weightShapes()).map(([, shape], i) => ({ data: seededFloats(shape.reduce((a, b) => a * b, 1), 60 + i, 0.3), shape }));
        layer.setWeights(weights);
        const reference = make({}).setWeights(layer.getWeights());
        try {
          assert.equal(layer.config.weightDtype, dtype);
          // The query kernel [36, 3, 12] is q_proj_weight transposed: its round trip, transposed back.
          const [rows, cols] = [36, 36];
          const kernel = weights[0].data, qProj = new Float32Array(rows * cols);
          for (let i = 0; i < cols; i++) for (let o = 0; o < rows; o++) qProj[o * cols + i] = kernel[i * rows + o];
          const stored = roundTrip(dtype, qProj, rows, cols), got = layer.getWeights()[0].data;
          for (let i = 0; i < cols; i++) for (let o = 0; o < rows; o++) assert.equal(got[i * rows + o], stored[o * cols + i]);
          const q = { data: seededFloats(2 * 5 * 36, 3), shape: [2, 5, 36] }, v = { data: seededFloats(2 * 4 * 20, 4), shape: [2, 4, 20] };
          const options = { useCausalMask: false, returnAttentionScores: true };
          const a = layer.call(q, v, null, options), b = reference.call(q, v, null, options);
          assertWithin(a.output.data, b.output.data, 'output', SAME_MATH[dtype]);
          assertWithin(a.scores.data, b.scores.data, 'scores', SAME_MATH[dtype]);
        } finally {
          layer.dispose();
          reference.dispose();
        }
      });
    }

    test('loadQuantized on a loaded float32 layer replaces one projection as given; params then names loadQuantized', () => {
      build.use();
      const c = cases.find((x) => x.name === 'gqa');
      const layer = new build.MultiHeadAttention(layerConfig(c)).loadStateDict(c.stateDict);
      try {
        const before = layer.stateDict();
        const [rows, cols] = layer.stateDictShapes()['out_proj.weight'];
        const q4 = quantize('q4', seededFloats(rows * cols, 3), rows, cols);
        layer.loadQuantized({ 'out_proj.weight': q4 });
        const after = layer.stateDict();
        assertSameBits(after, { ...before, 'out_proj.weight': roundTrip('q4', seededFloats(rows * cols, 3), rows, cols) }, 'stateDict');
        const r = runCase(layer, c, { grad: true });
        const g = r.backward({ data: new Float32Array(r.output.data.length).fill(1), shape: r.output.shape });
        assert.throws(() => g.params, { name: 'TypeError', message: /^backward: params: this layer holds quantized projection weights \(loadQuantized\)/ });
      } finally {
        layer.dispose();
      }
    });

    test('loadQuantized takes f16 data as its Uint16Array (its length in halves, the bytes twice that)', () => {
      build.use();
      const c = cases.find((x) => x.name === 'gqa');
      const layer = new build.MultiHeadAttention(layerConfig(c)).loadStateDict(c.stateDict);
      try {
        const before = layer.stateDict();
        const [rows, cols] = layer.stateDictShapes()['out_proj.weight'];
        layer.loadQuantized({ 'out_proj.weight': quantize('f16', seededFloats(rows * cols, 5), rows, cols) });
        assertSameBits(layer.stateDict(), { ...before, 'out_proj.weight': roundTrip('f16', seededFloats(rows * cols, 5), rows, cols) }, 'stateDict');
      } finally {
        layer.dispose();
      }
    });

    test('byteSize: the projections as stored plus float32 biases (a float32 layer holds its matrices twice)', () => {
      build.use();
      const config = { embedDim: 64, numHeads: 4, numKvHeads: 2, kdim: 40 };
      // q [64, 64], k [32, 40], v [32, 64], out [64, 64]; biases 64 + 32 + 32 + 64 floats.
      const matrices = [[64, 64], [32, 40], [32, 64], [64, 64]];
      // f32: the kernels' packed panels and the float32 copy stateDict() and backward read.
      const bytes = {
        f32: (r, c) => 8 * r * c, f16: (r, c) => 2 * r * c, int8: (r, c) => r * c + 4 * r, q4: (r, c) => r * Math.ceil(c / 32) * 20,
      };
      for (const dtype of ['f32', ...DTYPES]) {
        const layer = new build.MultiHeadAttention({ ...config, weightDtype: dtype });
        try {
          assert.equal(layer.byteSize, 0, `${dtype}: before weights`);
          layer.initialize({ seed: 1 });
          const want = matrices.reduce((n, [r, c]) => n + bytes[dtype](r, c), 0) + 4 * 192;
          assert.equal(layer.byteSize, want, dtype);
        } finally {
          layer.dispose();
        }
      }
    });
  });
}

test('the measured accuracy (largest relative output difference from the float32 layer, fixture configurations)', () => {
  for (const dtype of DTYPES) {
    console.log(`# ${dtype}: ${measured[dtype].worst.toExponential(2)} (${measured[dtype].at}); bound ${BOUNDS[dtype]}`);
  }
});

// The decode benchmark's layers (bench/decode.mjs: its weights, scaled like trained ones), one
// build: a 128-token prefill through the cache, then one decode step; both outputs compared.
test('the decode benchmark layers: quantized against float32 after a 128-token prefill and one step', () => {
  const [build] = builds;
  build.use();
  const MODELS = [
    { name: 'Qwen2.5-0.5B-like', E: 896, H: 14, Hkv: 2 },
    { name: 'Llama-3.2-1B-like', E: 2048, H: 32, Hkv: 8 },
    { name: 'GPT-2-like', E: 768, H: 12, Hkv: 12 },
  ];
  for (const { name, E, H, Hkv } of MODELS) {
    const outputs = {};
    for (const dtype of ['f32', ...DTYPES]) {
      const layer = new build.MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: Hkv, weightDtype: dtype });
      layer.loadStateDict(randomStateDict(layer, 0));
      const cache = layer.createCache({ capacity: 129 });
      const prefill = layer.forward({ data: randomArray(128 * E, 5), shape: [1, 128, E] }, null, null, { cache }).output.data;
      const step = layer.forward({ data: randomArray(E, 7), shape: [1, 1, E] }, null, null, { cache }).output.data;
      outputs[dtype] = { prefill, step };
      layer.dispose();
    }
    for (const dtype of DTYPES) {
      const prefill = relativeDifference(outputs[dtype].prefill, outputs.f32.prefill);
      const step = relativeDifference(outputs[dtype].step, outputs.f32.step);
      console.log(`# ${name} ${dtype}: prefill ${prefill.toExponential(2)}, step ${step.toExponential(2)}`);
      assert.ok(Math.max(prefill, step) <= BOUNDS[dtype], `${name} ${dtype}: ${prefill}, ${step}`);
    }
  }
});

test('the twin quantizes a q4 block as defined (largest magnitude / -8, first on ties, padding, the zero point 8)', () => {
  const row = new Float32Array(40);
  row[3] = -2; row[7] = 2; row[9] = 1; row[35] = 0.5;  // block 0: max -2 (the first of |2|); block 1: 0.5 and 4 zeros
  const q = quantize('q4', row, 1, 40);
  assert.deepEqual([...q.scales], [0.25, -0.0625]);
  assert.equal(q.data[1] >> 4, 0);     // -2 * 4 + 8.5 = 0.5 -> 0: dequantized (0 - 8) * 0.25 = -2
  assert.equal(q.data[3] >> 4, 15);    // 2 -> min(15, 16) = 15: 1.75 (the clipped end)
  assert.equal(q.data[4] >> 4, 12);    // 1 * 4 + 8.5 = 12.5 -> 12: 1
  assert.equal(q.data[16 + 1] >> 4, 0);  // 0.5 / -0.0625 = -8 -> 0.5 -> 0
  assert.deepEqual([...roundTrip('q4', row, 1, 40)].filter((x) => x !== 0), [-2, 1.75, 1, 0.5]);
});

test('the twin rounds int8 half away from zero and clamps to ±127', () => {
  const row = Float32Array.from([127, -0.5, 0.5, 1.5, -63.5]);  // d = 1
  assert.deepEqual([...quantize('int8', row, 1, 5).data], [127, -1, 1, 2, -64]);
});
