// Soak: 100,000 forward calls with varying shapes, masks and options (and some failing calls,
// and layers made and disposed) keep the wasm heap flat. Prints the heap figures.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { seededFloats as filled } from './seeded.js';

const mha = await init();
const CALLS = 100_000;
const E = 16, H = 4;

const stateDict = {
  in_proj_weight: filled(3 * E * E, 1), in_proj_bias: filled(3 * E, 2), 'out_proj.weight': filled(E * E, 3),
  'out_proj.bias': filled(E, 4),
};

/** 97 different requests (a prime, so they line up differently with the other periods below). */
function requests() {
  const list = [];
  for (let i = 0; i < 97; i++) {
    const batched = i % 5 !== 0, B = batched ? 1 + (i % 3) : 1, L = 1 + (i % 9), S = 1 + ((i * 7) % 11);
    const shape = (n, e) => (batched ? [B, n, e] : [n, e]);
    const cross = i % 2 === 0;
    const S_ = cross ? S : L;
    const options = { causal: i % 3 === 0, needWeights: i % 4 === 0, averageWeights: i % 8 !== 0 };
    if (i % 6 === 1) options.keyPaddingMask = { data: Uint8Array.from({ length: B * S_ }, (_, j) => j % 3 === 0), shape: batched ? [B, S_] : [S_] };
    if (i % 7 === 2) options.attnMask = { data: filled(L * S_, i), shape: [L, S_] };
    list.push([
      { data: filled(B * L * E, i), shape: shape(L, E) },
      cross ? { data: filled(B * S * E, i + 1000), shape: shape(S, E) } : null,
      cross ? { data: filled(B * S * E, i + 2000), shape: shape(S, E) } : null,
      options,
    ]);
  }
  return list;
}

test(`${CALLS.toLocaleString('en')} forward calls with varying shapes keep the wasm heap flat`, () => {
  const list = requests();
  let layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict);
  for (const request of list) layer.forward(...request); // warm-up: every size once
  const heapBefore = mha.heapAllocatedBytes(), memoryBefore = mha.memoryBytes();
  const start = performance.now();
  let checksum = 0;
  for (let i = 0; i < CALLS; i++) {
    if (i % 1000 === 999) { // a fresh layer now and then
      layer.dispose();
      layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict);
    }
    if (i % 500 === 250) {
      assert.throws(() => layer.forward({ data: filled(E, i), shape: [1, 1, E + 1] }), RangeError);
      continue;
    }
    const { output } = layer.forward(...list[i % list.length]);
    checksum += output.data[0];
  }
  const seconds = (performance.now() - start) / 1000;
  const heapAfter = mha.heapAllocatedBytes(), memoryAfter = mha.memoryBytes();
  console.log(`soak (${mha.build.name}, ${mha.build.numThreads} threads): ${CALLS} calls in ${seconds.toFixed(1)} s; heap allocated ${heapBefore} bytes before, `
    + `${heapAfter} after; wasm memory ${memoryBefore} bytes before, ${memoryAfter} after`);
  assert.ok(Number.isFinite(checksum));
  assert.equal(heapAfter, heapBefore);
  assert.equal(memoryAfter, memoryBefore);
  layer.dispose();
});

test('dispose() twice is harmless and frees the layer exactly once', () => {
  const before = mha.heapAllocatedBytes();
  const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict);
  assert.ok(mha.heapAllocatedBytes() > before);
  layer.dispose();
  layer.dispose();
  assert.equal(mha.heapAllocatedBytes(), before);
  assert.equal(layer.alive, false);
  assert.throws(() => layer.forward({ data: filled(E, 1), shape: [1, E] }), /this layer was disposed/);
  // Other layers are unaffected.
  const other = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict);
  assert.equal(other.forward({ data: filled(E, 1), shape: [1, E] }).output.shape.join(), `1,${E}`);
  other.dispose();
  assert.equal(mha.heapAllocatedBytes(), before);
});
