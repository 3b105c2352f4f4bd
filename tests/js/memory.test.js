// No leaks: repeated forward calls, errors and dispose() leave the wasm heap where it was.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';

const mha = await init();
const E = 16;
const sd = {
  in_proj_weight: new Float32Array(3 * E * E).fill(0.05), in_proj_bias: new Float32Array(3 * E),
  'out_proj.weight': new Float32Array(E * E).fill(0.05), 'out_proj.bias': new Float32Array(E),
};

// Each measured window is preceded by the same calls (a warm-up, docs/contributing.md), and a
// check of its own that the warm-up leaves nothing behind once its layer is disposed.
test('10,000 forward calls do not grow the wasm heap', () => {
  const heapAtStart = mha.heapAllocatedBytes();
  const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: 4 }).loadStateDict(sd);
  const q = { data: new Float32Array(2 * 6 * E).fill(0.3), shape: [2, 6, E] };
  const mask = { data: new Uint8Array(2 * 6), shape: [2, 6] };
  const run = (i) => layer.forward(q, null, null, { needWeights: i % 2 === 0, keyPaddingMask: mask, causal: i % 3 === 0 });
  for (let i = 0; i < 100; i++) run(i); // warm up
  const before = mha.heapAllocatedBytes();
  for (let i = 0; i < 10_000; i++) run(i);
  const after = mha.heapAllocatedBytes();
  console.log(`# heap allocated: ${before} bytes before, ${after} after 10,000 forward calls`);
  assert.equal(after, before);
  layer.dispose();
  assert.equal(mha.heapAllocatedBytes(), heapAtStart, 'the layer and its warm-up left nothing behind');
});

test('creating, loading and disposing layers, and failing calls, leak nothing', () => {
  const cycle = () => {
    const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: 4 }).loadStateDict(sd);
    assert.throws(() => layer.forward({ data: new Float32Array(E), shape: [1, 1, E + 1] }), RangeError);
    assert.throws(() => layer.loadStateDict({ ...sd, in_proj_bias: new Float32Array(1) }), RangeError);
    assert.throws(() => new mha.MultiHeadAttention({ embedDim: 10, numHeads: 3 }), RangeError);
    layer.dispose();
  };
  const heapAtStart = mha.heapAllocatedBytes();
  cycle();  // the warm-up
  assert.equal(mha.heapAllocatedBytes(), heapAtStart, 'the warm-up left nothing behind');
  const before = mha.heapAllocatedBytes();
  for (let i = 0; i < 500; i++) cycle();
  assert.equal(mha.heapAllocatedBytes(), before);
});
