// The trainer's JavaScript parts (web/training/), each gradient against central finite differences
// in float64 arithmetic around float32 values, and the reference attention's forward against
// mha-wasm's. The whole model's gradient is checked the same way, and (once mha-wasm has a
// backward) mha-wasm's layer gradients against the reference attention's.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { init } from '../../bindings/js/index.js';
import { softmaxCrossEntropy } from '../../web/training/cross-entropy.js';
import { embed, embedBackward } from '../../web/training/embedding.js';
import { matmul, matmulTransposedA, matmulTransposedB } from '../../web/training/matmul.js';
import { ReferenceAttention } from '../../web/training/reference-attention.js';
import { Trainer } from '../../web/training/trainer.js';
import { unembed, unembedBackward } from '../../web/training/unembedding.js';
import { seededFloats } from './seeded.js';

const vocab = JSON.parse(await readFile(new URL('../../web/model/vocab.json', import.meta.url), 'utf8'));

/**
 * Checks analytic[i] against (f(x + h e_i) - f(x - h e_i)) / 2h for `count` spread indices of x
 * (changed in place and restored). f returns a number.
 */
function checkGradient(name, x, analytic, f, { h = 1e-2, tolerance = 2e-2, count = 12 } = {}) {
  assert.equal(analytic.length, x.length, `${name}: gradient length`);
  const step = Math.max(1, Math.floor(x.length / count));
  let worst = 0;
  for (let i = (step >> 1); i < x.length; i += step) {
    const saved = x[i];
    x[i] = saved + h;
    const up = f();
    x[i] = saved - h;
    const down = f();
    x[i] = saved;
    const numeric = (up - down) / (2 * h);
    const error = Math.abs(numeric - analytic[i]) / Math.max(1e-2, Math.abs(numeric), Math.abs(analytic[i]));
    worst = Math.max(worst, error);
    assert.ok(error < tolerance, `${name}[${i}]: analytic ${analytic[i]} vs finite difference ${numeric}`);
  }
  return worst;
}

/** sum(out * probe) in float64: a scalar whose gradient with respect to out is `probe`. */
const dot = (a, b) => a.reduce((s, v, i) => s + v * b[i], 0);

test('matmul, matmulTransposedA, matmulTransposedB equal the textbook triple loop (sizes not multiples of 4, accumulate)', () => {
  const [M, N, K] = [5, 7, 9];
  const A = seededFloats(M * K, 40);
  const At = Float32Array.from({ length: K * M }, (_, x) => A[(x % M) * K + Math.floor(x / M)]);  // [K, M]
  const B = seededFloats(K * N, 41);
  const Bt = Float32Array.from({ length: N * K }, (_, x) => B[(x % K) * N + Math.floor(x / K)]);  // [N, K]
  const want = new Float64Array(M * N);
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) for (let k = 0; k < K; k++) want[i * N + j] += A[i * K + k] * B[k * N + j];
  const start = seededFloats(M * N, 42);
  for (const [name, f, a, b] of [['matmul', matmul, A, B], ['matmulTransposedA', matmulTransposedA, At, B], ['matmulTransposedB', matmulTransposedB, A, Bt]]) {
    const fresh = f(a, b, new Float32Array(M * N).fill(9), M, N, K);
    const added = f(a, b, start.slice(), M, N, K, true);
    want.forEach((v, i) => {
      assert.ok(Math.abs(fresh[i] - v) < 1e-5, `${name}[${i}]: ${fresh[i]} vs ${v}`);
      assert.ok(Math.abs(added[i] - (v + start[i])) < 1e-5, `${name} accumulate [${i}]`);
    });
  }
});

test('softmaxCrossEntropy: the loss is PyTorch\'s mean cross-entropy and its gradient matches finite differences', () => {
  const N = 5;
  const V = 7;
  const logits = seededFloats(N * V, 1, 3);
  const targets = [0, 6, 3, 3, 1];
  const { loss, dLogits } = softmaxCrossEntropy(logits, targets, N, V);
  // By hand for row 0: log(sum exp) - logit[target].
  let expected = 0;
  for (let n = 0; n < N; n++) {
    const row = Array.from(logits.subarray(n * V, (n + 1) * V));
    expected += Math.log(row.reduce((s, v) => s + Math.exp(v), 0)) - row[targets[n]];
  }
  assert.ok(Math.abs(loss - expected / N) < 1e-9, `${loss} vs ${expected / N}`);
  const f64 = Float64Array.from(logits);
  checkGradient('dLogits', f64, dLogits, () => softmaxCrossEntropy(f64, targets, N, V, { gradient: false }).loss, { h: 1e-4, tolerance: 1e-4 });
  // Each row of the gradient sums to 0 (softmax minus one-hot).
  for (let n = 0; n < N; n++) assert.ok(Math.abs(dLogits.subarray(n * V, (n + 1) * V).reduce((s, v) => s + v, 0)) < 1e-7);
  assert.throws(() => softmaxCrossEntropy(logits, [0, 7, 0, 0, 0], N, V), /softmaxCrossEntropy: target 1 is 7, not in \[0, 7\)/);
  assert.throws(() => softmaxCrossEntropy(logits, targets, N, V + 1), /softmaxCrossEntropy: logits must hold N\*V = 40 floats, got 35/);
});

test('unembedding: logits = x W^T + b, and the gradients of x, W and b match finite differences', () => {
  const [N, V, E] = [6, 5, 4];
  const x = Float64Array.from(seededFloats(N * E, 2));
  const weight = Float64Array.from(seededFloats(V * E, 3));
  const bias = Float64Array.from(seededFloats(V, 4));
  const probe = seededFloats(N * V, 5);
  const logits = unembed(x, weight, bias, N, V, E);
  assert.ok(Math.abs(logits[1 * V + 2] - (bias[2] + x.subarray(E, 2 * E).reduce((s, v, i) => s + v * weight[2 * E + i], 0))) < 1e-6);
  const grads = { weight: new Float32Array(V * E), bias: new Float32Array(V) };
  const dx = unembedBackward(probe, x, weight, grads, N, V, E);
  const f = () => dot(unembed(x, weight, bias, N, V, E), probe);
  checkGradient('dx', x, dx, f, { h: 1e-3, tolerance: 1e-3 });
  checkGradient('dW', weight, grads.weight, f, { h: 1e-3, tolerance: 1e-3 });
  checkGradient('db', bias, grads.bias, f, { h: 1e-3, tolerance: 1e-3 });
});

test('embedding: x = table[ids] + positions[offset + t], and the table\'s gradient gathers each use of a row', () => {
  const [B, T, E, V] = [2, 3, 4, 5];
  const ids = Int32Array.from([1, 4, 1, 0, 1, 2]);
  const table = Float64Array.from(seededFloats(V * E, 6));
  const positions = seededFloats(10 * E, 7);
  const x = embed(ids, table, positions, [0, 5], B, T, E);
  assert.ok(Math.abs(x[(1 * T + 2) * E + 3] - (table[2 * E + 3] + positions[(5 + 2) * E + 3])) < 1e-6);
  const probe = seededFloats(B * T * E, 8);
  const gradient = embedBackward(ids, probe, new Float32Array(V * E), B * T, E);
  checkGradient('dTable', table, gradient, () => dot(embed(ids, table, positions, [0, 5], B, T, E), probe), { h: 1e-3, tolerance: 1e-3, count: V * E });
  assert.ok(gradient.subarray(3 * E, 4 * E).every((v) => v === 0), 'an unused token gets no gradient');
});

function referenceLayer(E, H, seed) {
  const layer = new ReferenceAttention({ embedDim: E, numHeads: H });
  layer.loadStateDict({
    in_proj_weight: seededFloats(3 * E * E, seed, 0.6), in_proj_bias: seededFloats(3 * E, seed + 1, 0.2),
    'out_proj.weight': seededFloats(E * E, seed + 2, 0.5), 'out_proj.bias': seededFloats(E, seed + 3, 0.2),
  });
  return layer;
}

test('ReferenceAttention: forward equals mha-wasm\'s (output and per-head weights, causal, batched)', async () => {
  const mha = await init();
  const [B, L, E, H] = [2, 5, 8, 2];
  const reference = referenceLayer(E, H, 10);
  const wasm = new mha.MultiHeadAttention({ embedDim: E, numHeads: H });
  try {
    wasm.loadStateDict(reference.stateDict());
    const x = { data: seededFloats(B * L * E, 11), shape: [B, L, E] };
    const options = { causal: true, needWeights: true, averageWeights: false };
    const a = reference.forward(x, null, null, options);
    const b = wasm.forward(x, null, null, options);
    assert.deepEqual(a.output.shape, b.output.shape);
    assert.deepEqual(a.weights.shape, b.weights.shape);
    a.output.data.forEach((v, i) => assert.ok(Math.abs(v - b.output.data[i]) < 1e-5, `output ${i}: ${v} vs ${b.output.data[i]}`));
    a.weights.data.forEach((v, i) => assert.ok(Math.abs(v - b.weights.data[i]) < 1e-6, `weights ${i}: ${v} vs ${b.weights.data[i]}`));
  } finally {
    wasm.dispose();
  }
});

test('ReferenceAttention: backward (input and all four parameters) matches finite differences', () => {
  const [B, L, E, H] = [2, 4, 6, 2];
  const layer = referenceLayer(E, H, 20);
  const x = Float64Array.from(seededFloats(B * L * E, 21));
  const probe = seededFloats(B * L * E, 22);
  const params = layer.stateDict();
  const run = () => {
    layer.loadStateDict(params);
    return layer.forward({ data: Float32Array.from(x), shape: [B, L, E] }, null, null, { causal: true, grad: true });
  };
  const g = run().backward({ data: probe, shape: [B, L, E] });
  assert.deepEqual(g.query.shape, [B, L, E]);
  assert.equal(g.key, null);
  const f = () => dot(run().output.data, probe);
  checkGradient('dx', x, g.query.data, f);
  for (const [key, value] of Object.entries(params)) checkGradient(key, value, g.params[key], f);
});

test('Trainer: the whole model\'s gradient (embedding, two attention layers, unembedding) matches finite differences', () => {
  const trainer = new Trainer({ vocab, settings: { seed: 3, dModel: 8, numHeads: 2, numLayers: 2, batchSize: 2, seqLen: 9, positionOffsets: false } });
  try {
    const { ids, offsets } = trainer.nextBatch();
    const { loss, grads } = trainer.lossAndGradients(ids, 2, 9, offsets);
    assert.ok(loss > 3 && loss < 6, `a fresh model's loss is near log(${vocab.tokens.length}) = ${Math.log(vocab.tokens.length).toFixed(2)}, got ${loss}`);
    // Perturbing a parameter must reach the layers: the trainer reloads them on each step, so
    // reload here through a zero-learning-rate path (setAblated of nothing reloads).
    for (const [name, param] of Object.entries(trainer.params)) {
      checkGradient(name, param, grads[name], () => {
        trainer.setAblated(0, 0, false);
        return trainer.lossAndGradients(ids, 2, 9, offsets, { gradient: false }).loss;
      }, { h: 5e-3, tolerance: 5e-2, count: 6 });
    }
  } finally {
    trainer.dispose();
  }
});

test('Trainer: an ablated head contributes nothing (its out_proj columns are zeroed in the layers) and gets no gradient there', () => {
  const settings = { seed: 4, dModel: 8, numHeads: 2, numLayers: 2, batchSize: 2, seqLen: 9, positionOffsets: false };
  const trainer = new Trainer({ vocab, settings });
  try {
    const { ids, offsets } = trainer.nextBatch();
    const before = trainer.lossAndGradients(ids, 2, 9, offsets).loss;
    trainer.setAblated(1, 0);
    const { loss, grads } = trainer.lossAndGradients(ids, 2, 9, offsets);
    assert.notEqual(loss, before);
    // By hand: the same model with layer 1's out_proj columns 0..3 zeroed.
    const copy = new Trainer({ vocab, settings });
    const w = copy.params['layers.1.out_proj.weight'];
    for (let row = 0; row < 8; row++) w.fill(0, row * 8, row * 8 + 4);
    copy.setAblated(0, 0, false);  // reloads the layers
    assert.ok(Math.abs(copy.lossAndGradients(ids, 2, 9, offsets, { gradient: false }).loss - loss) < 1e-6);
    copy.dispose();
    const g = grads['layers.1.out_proj.weight'];
    for (let row = 0; row < 8; row++) assert.ok(g.subarray(row * 8, row * 8 + 4).every((v) => v === 0), `row ${row}`);
    assert.ok(g.some((v) => v !== 0));
    assert.throws(() => trainer.setAblated(2, 0), /ablate: layer must be an integer in \[0, 2\), got 2/);
    assert.throws(() => trainer.setAblated(0, -1), /ablate: head must be an integer in \[0, 2\), got -1/);
  } finally {
    trainer.dispose();
  }
});

test('mha-wasm\'s backward and the reference attention\'s give the same gradients (skipped until the build has a backward)', async (t) => {
  const mha = await init({ threads: 1 });
  const [B, L, E, H] = [2, 6, 8, 2];
  const reference = referenceLayer(E, H, 30);
  const wasm = new mha.MultiHeadAttention({ embedDim: E, numHeads: H });
  try {
    wasm.loadStateDict(reference.stateDict());
    const x = { data: seededFloats(B * L * E, 31), shape: [B, L, E] };
    let r;
    try {
      r = wasm.forward(x, null, null, { causal: true, grad: true });
    } catch (error) {
      t.skip(`this build has no backward yet: ${error.message}`);
      return;
    }
    const dOut = { data: seededFloats(B * L * E, 32), shape: [B, L, E] };
    const got = r.backward(dOut);
    const want = reference.forward(x, null, null, { causal: true, grad: true }).backward(dOut);
    const close = (name, a, b) => a.forEach((v, i) => assert.ok(Math.abs(v - b[i]) < 1e-4 * Math.max(1, Math.abs(b[i])), `${name}[${i}]: ${v} vs ${b[i]}`));
    close('query', got.query.data, want.query.data);
    for (const key of Object.keys(want.params)) close(key, got.params[key], want.params[key]);
  } finally {
    wasm.dispose();
  }
});
