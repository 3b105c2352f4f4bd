// linear() and linearBackward() (bindings/js/core/linear.js) on every wasm build: values against the
// textbook float64 products on shapes that hit the GEMM's tile edges, batched shapes, caller-owned
// buffers written whole, no wasm memory kept; and the demo trainer's unembedding on them equals its
// plain-JavaScript path.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';
import { unembed, unembedBackward } from '../../web/training/unembedding.js';
import { assertClose, textbookLinear } from './float64-linear.js';
import { seededFloats } from './seeded.js';

/** dX = dY W, dW = dY^T X, db = column sums of dY, in float64. */
function textbookBackward(dy, x, w, rows, inF, outF) {
  const dx = new Float64Array(rows * inF);
  const dw = new Float64Array(outF * inF);
  const db = new Float64Array(outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      const g = dy[r * outF + o];
      db[o] += g;
      for (let i = 0; i < inF; i++) {
        dx[r * inF + i] += g * w[o * inF + i];
        dw[o * inF + i] += g * x[r * inF + i];
      }
    }
  }
  return { dx, dw, db };
}

for (const name of BUILDS) {
  describe(`linear on ${name}`, async () => {
    const mha = await loadBuild(name);

    test('linear and linearBackward equal the textbook products on every tile edge (with and without bias)', () => {
      let seed = 1;
      for (const rows of [1, 3, 4, 9, 130]) {
        for (const inF of [1, 5, 64]) {
          for (const outF of [1, 7, 33, 56]) {
            const x = seededFloats(rows * inF, seed++);
            const w = seededFloats(outF * inF, seed++);
            const b = seededFloats(outF, seed++);
            const dy = seededFloats(rows * outF, seed++);
            for (const bias of [b, null]) {
              const y = mha.linear({ data: x, shape: [rows, inF] }, { data: w, shape: [outF, inF] }, bias);
              assert.deepEqual(y.shape, [rows, outF]);
              assertClose(`y ${rows}x${inF}x${outF}`, y.data, textbookLinear(x, w, bias, rows, inF, outF), inF);
            }
            const g = mha.linearBackward({ data: dy, shape: [rows, outF] }, { data: x, shape: [rows, inF] }, { data: w, shape: [outF, inF] });
            const want = textbookBackward(dy, x, w, rows, inF, outF);
            assert.deepEqual(g.input.shape, [rows, inF]);
            assertClose(`dX ${rows}x${inF}x${outF}`, g.input.data, want.dx, outF);
            assertClose(`dW ${rows}x${inF}x${outF}`, g.weight, want.dw, rows);
            assertClose(`db ${rows}x${inF}x${outF}`, g.bias, want.db, rows);
          }
        }
      }
    });

    test('batched shapes keep their leading dimensions; caller-owned buffers are written whole and returned', () => {
      const [B, T, inF, outF] = [2, 3, 6, 5];
      const x = { data: seededFloats(B * T * inF, 40), shape: [B, T, inF] };
      const w = { data: seededFloats(outF * inF, 41), shape: [outF, inF] };
      const bias = seededFloats(outF, 42);
      const out = new Float32Array(B * T * outF).fill(NaN);
      const y = mha.linear(x, w, bias, { out });
      assert.equal(y.data, out);
      assert.deepEqual(y.shape, [B, T, outF]);
      assertClose('y', out, textbookLinear(x.data, w.data, bias, B * T, inF, outF), inF);
      const dy = { data: seededFloats(B * T * outF, 43), shape: [B, T, outF] };
      const dInput = new Float32Array(B * T * inF).fill(NaN);
      const dWeight = new Float32Array(outF * inF).fill(NaN);
      const dBias = new Float32Array(outF).fill(NaN);
      const g = mha.linearBackward(dy, x, w, { dInput, dWeight, dBias });
      assert.equal(g.input.data, dInput);
      assert.equal(g.weight, dWeight);
      assert.equal(g.bias, dBias);
      assert.deepEqual(g.input.shape, [B, T, inF]);
      const want = textbookBackward(dy.data, x.data, w.data, B * T, inF, outF);
      assertClose('dX', dInput, want.dx, outF);
      assertClose('dW', dWeight, want.dw, B * T);
      assertClose('db', dBias, want.db, B * T);
    });

    test('no rows: an empty output, zero weight and bias gradients', () => {
      const w = { data: seededFloats(6, 50), shape: [3, 2] };
      const y = mha.linear({ data: new Float32Array(0), shape: [0, 2] }, w);
      assert.deepEqual(y.shape, [0, 3]);
      assert.equal(y.data.length, 0);
      const g = mha.linearBackward({ data: new Float32Array(0), shape: [0, 3] }, { data: new Float32Array(0), shape: [0, 2] }, w);
      assert.deepEqual(Array.from(g.weight), [0, 0, 0, 0, 0, 0]);
      assert.deepEqual(Array.from(g.bias), [0, 0, 0]);
    });

    test('calls keep no wasm memory', () => {
      const x = { data: seededFloats(64 * 16, 60), shape: [64, 16] };
      const w = { data: seededFloats(8 * 16, 61), shape: [8, 16] };
      const dy = { data: seededFloats(64 * 8, 62), shape: [64, 8] };
      mha.linear(x, w, null);
      mha.linearBackward(dy, x, w);
      const before = mha.module.heapAllocatedBytes();
      for (let i = 0; i < 50; i++) {
        mha.linear(x, w, seededFloats(8, i));
        mha.linearBackward(dy, x, w);
      }
      assert.equal(mha.module.heapAllocatedBytes(), before);
    });

    test('the trainer\'s unembedding through linear() equals its plain-JavaScript loops', () => {
      const [N, V, E] = [37, 11, 16];
      const x = seededFloats(N * E, 70);
      const weight = seededFloats(V * E, 71);
      const bias = seededFloats(V, 72);
      const dLogits = seededFloats(N * V, 73);
      assertClose('logits', unembed(x, weight, bias, N, V, E, mha), unembed(x, weight, bias, N, V, E), E);
      const wasm = { weight: new Float32Array(V * E), bias: new Float32Array(V) };
      const js = { weight: new Float32Array(V * E), bias: new Float32Array(V) };
      assertClose('dx', unembedBackward(dLogits, x, weight, wasm, N, V, E, mha), unembedBackward(dLogits, x, weight, js, N, V, E), V);
      assertClose('dW', wasm.weight, js.weight, N);
      assertClose('db', wasm.bias, js.bias, N);
    });
  });
}
