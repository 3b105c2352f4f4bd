// Soak: 10,000 forward + backward calls with varying shapes, masks and options (some released
// without backward, some refused for a wrong dOut, some under dropout, and layers made and
// disposed with results still open) keep the wasm heap flat. Prints the heap figures.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { seededFloats as filled } from './seeded.js';

const mha = await init();
const CALLS = 10_000;
const E = 8, H = 2;
const config = { embedDim: E, numHeads: H, dropout: 0.25, seed: 5 };

/** 89 different requests (a prime, so they line up differently with the periods below). */
function requests() {
  const list = [];
  for (let i = 0; i < 89; i++) {
    const batched = i % 5 !== 0, B = batched ? 1 + (i % 3) : 1, L = 1 + (i % 7), S = 1 + ((i * 5) % 9);
    const shape = (n, e) => (batched ? [B, n, e] : [n, e]);
    const cross = i % 2 === 0;
    const S_ = cross ? S : L;
    const options = {
      grad: true, causal: i % 3 === 0, needWeights: i % 4 === 0, averageWeights: i % 8 !== 0, training: i % 6 === 5,
    };
    if (i % 6 === 1) options.keyPaddingMask = { data: Uint8Array.from({ length: B * S_ }, (_, j) => j % 3 === 0), shape: batched ? [B, S_] : [S_] };
    if (i % 7 === 2) options.attnMask = { data: filled(L * S_, i), shape: [L, S_] };
    list.push({
      args: [
        { data: filled(B * L * E, i), shape: shape(L, E) },
        cross ? { data: filled(B * S * E, i + 1000), shape: shape(S, E) } : null,
        cross ? { data: filled(B * S * E, i + 2000), shape: shape(S, E) } : null,
        options,
      ],
      dOut: { data: filled(B * L * E, i + 3000), shape: shape(L, E) },
    });
  }
  return list;
}

test(`${CALLS.toLocaleString('en')} forward + backward calls with varying shapes keep the wasm heap flat`, () => {
  const list = requests();
  let layer = new mha.MultiHeadAttention(config).initialize({ seed: 1 });
  for (const { args, dOut } of list) layer.forward(...args).backward(dOut); // warm-up: every size once
  const heapBefore = mha.heapAllocatedBytes(), memoryBefore = mha.memoryBytes();
  const start = performance.now();
  let checksum = 0, backwards = 0;
  for (let i = 0; i < CALLS; i++) {
    const { args, dOut } = list[i % list.length];
    const r = layer.forward(...args);
    if (i % 1000 === 999) { // a fresh layer now and then, disposed with this result still open
      layer.dispose();
      assert.throws(() => r.backward(dOut), /disposed/);
      layer = new mha.MultiHeadAttention(config).initialize({ seed: i });
      continue;
    }
    if (i % 97 === 13) { // released without backward
      r.release();
      continue;
    }
    if (i % 211 === 50) { // a wrong dOut is refused; the result still works
      assert.throws(() => r.backward({ data: dOut.data.subarray(1), shape: dOut.shape }), RangeError);
    }
    const g = r.backward(dOut);
    checksum += g.query.data[0] + g.params['out_proj.weight'][0];
    backwards++;
  }
  const seconds = (performance.now() - start) / 1000;
  const heapAfter = mha.heapAllocatedBytes(), memoryAfter = mha.memoryBytes();
  console.log(`gradient soak (${mha.build.name}, ${mha.build.numThreads} threads): ${CALLS} forward calls, `
    + `${backwards} backward, in ${seconds.toFixed(1)} s; heap allocated ${heapBefore} bytes before, ${heapAfter} after; `
    + `wasm memory ${memoryBefore} bytes before, ${memoryAfter} after`);
  assert.ok(Number.isFinite(checksum));
  assert.ok(backwards > 0.95 * CALLS);
  assert.equal(heapAfter, heapBefore);
  assert.equal(memoryAfter, memoryBefore);
  layer.dispose();
});
