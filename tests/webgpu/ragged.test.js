// Ragged batches ({ data, shape: [totalTokens, E], lengths }) on the WebGPU layer's forwardAsync:
// the same split and join as the wasm layer (api/ragged.js), so the result equals one GPU call
// per sequence exactly, and the wasm layer's ragged result to float32 rounding; with causal,
// cross-attention, weights, attnMask lists, caches and gradients; outputLocation 'gpu' refused by name.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { worstError } from '../js/fixtures.js';
import { seededFloats } from '../js/seeded.js';
import { modules } from './devices.js';

const wasm = await init();
const E = 16, H = 4, KDIM = 12;
const LENGTHS = [5, 1, 9, 3], KEY_LENGTHS = [4, 7, 2, 6];
const sum = (a) => a.reduce((x, y) => x + y, 0);
const ragged = (lengths, width, seed) => ({ data: seededFloats(sum(lengths) * width, seed), shape: [sum(lengths), width], lengths });
const crossStateDict = () => ({
  q_proj_weight: seededFloats(E * E, 5, 0.3), k_proj_weight: seededFloats(E * KDIM, 6, 0.3), v_proj_weight: seededFloats(E * KDIM, 7, 0.3),
  in_proj_bias: seededFloats(3 * E, 8), 'out_proj.weight': seededFloats(E * E, 9, 0.3), 'out_proj.bias': seededFloats(E, 10),
});

/** Sequence i of a ragged tensor as an unbatched [L_i, width] tensor. */
function part({ data, shape: [, width] }, lengths, i) {
  const start = sum(lengths.slice(0, i));
  return { data: data.slice(start * width, (start + lengths[i]) * width), shape: [lengths[i], width] };
}

function assertClose(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  const e = worstError(got, want, { absolute: 2e-5, relative: 1e-4 });
  assert.ok(e.ratio <= 1, `${what}[${e.index}] = ${got[e.index]}, want ${want[e.index]}`);
}

for (const [label, mha] of await modules()) {
  describe(`ragged batches on WebGPU (${label})`, () => {
    const config = { embedDim: E, numHeads: H, kdim: KDIM, vdim: KDIM };
    const q = ragged(LENGTHS, E, 11), k = ragged(KEY_LENGTHS, KDIM, 12), v = ragged(KEY_LENGTHS, KDIM, 13);

    test('cross-attention with weights: the per-sequence GPU calls exactly, the wasm layer to rounding', async () => {
      const layer = new mha.MultiHeadAttention(config).loadStateDict(crossStateDict());
      const reference = new wasm.MultiHeadAttention(config).loadStateDict(crossStateDict());
      try {
        const r = await layer.forwardAsync(q, k, v, { needWeights: true });
        assert.deepEqual(r.output.shape, [sum(LENGTHS), E]);
        assert.deepEqual([...r.output.lengths], LENGTHS);
        const per = [];
        for (const i of LENGTHS.keys()) {
          per.push(await layer.forwardAsync(part(q, LENGTHS, i), part(k, KEY_LENGTHS, i), part(v, KEY_LENGTHS, i), { needWeights: true }));
        }
        assert.deepEqual(r.output.data, Float32Array.from(per.flatMap((p) => [...p.output.data])));
        r.weights.forEach((w, i) => {
          assert.deepEqual(w.shape, [LENGTHS[i], KEY_LENGTHS[i]]);
          assert.deepEqual(w.data, per[i].weights.data);
        });
        const want = reference.forward(q, k, v, { needWeights: true });
        assertClose(r.output.data, want.output.data, 'output vs wasm');
      } finally {
        layer.dispose();
        reference.dispose();
      }
    });

    test('self-attention: causal, attnMask lists, and gradients against the wasm layer', async () => {
      const self = { embedDim: E, numHeads: H };
      const layer = new mha.MultiHeadAttention(self).initialize({ seed: 3 });
      const reference = new wasm.MultiHeadAttention(self).initialize({ seed: 3 });
      try {
        const masks = LENGTHS.map((n) => ({ data: Uint8Array.from({ length: n * n }, (_, j) => (n > 1 && j % n === 0 && j > 0 ? 1 : 0)), shape: [n, n] }));
        for (const options of [{ causal: true }, { attnMask: masks }]) {
          const got = await layer.forwardAsync(q, null, null, options);
          assertClose(got.output.data, reference.forward(q, null, null, options).output.data, `output ${Object.keys(options)}`);
        }
        const dOut = { data: seededFloats(sum(LENGTHS) * E, 14), shape: [sum(LENGTHS), E] };
        const g = await (await layer.forwardAsync(q, null, null, { grad: true })).backwardAsync(dOut);
        const want = reference.forward(q, null, null, { grad: true }).backward(dOut);
        assert.deepEqual([...g.query.lengths], LENGTHS);
        assertClose(g.query.data, want.query.data, 'dQuery');
        for (const [name, d] of Object.entries(want.params)) assertClose(g.params[name], d, `d${name}`);
      } finally {
        layer.dispose();
        reference.dispose();
      }
    });

    test('caches: one per sequence, a ragged prefill and a step, as per-sequence calls', async () => {
      const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 3 });
      try {
        const caches = LENGTHS.map(() => layer.createCache({ capacity: 16 }));
        const own = LENGTHS.map(() => layer.createCache({ capacity: 16 }));
        const step = ragged(LENGTHS.map(() => 1), E, 15);
        for (const x of [q, step]) {
          const r = await layer.forwardAsync(x, null, null, { cache: caches });
          const want = [];
          for (const i of LENGTHS.keys()) want.push(...(await layer.forwardAsync(part(x, x.lengths, i), null, null, { cache: own[i] })).output.data);
          assert.deepEqual(r.output.data, Float32Array.from(want));
        }
        assert.deepEqual(caches.map((c) => c.length), LENGTHS.map((n) => n + 1));
      } finally {
        layer.dispose();
      }
    });

    test('refused by name: outputLocation \'gpu\', keyPaddingMask', async () => {
      const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 3 });
      try {
        await assert.rejects(layer.forwardAsync(q, null, null, { outputLocation: 'gpu' }), {
          name: 'TypeError',
          message: "forwardAsync: outputLocation: 'gpu' not with ragged inputs (the sequences' outputs are joined on the CPU); use 'cpu'",
        });
        await assert.rejects(layer.forwardAsync(q, null, null, { keyPaddingMask: { data: new Uint8Array(18), shape: [18] } }), {
          name: 'TypeError', message: 'forwardAsync: keyPaddingMask: ragged inputs need no padding mask (each sequence has its own length)',
        });
      } finally {
        layer.dispose();
      }
    });
  });
}
