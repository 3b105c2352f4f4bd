// Ragged batches ({ data, shape: [totalTokens, E], lengths }): on every wasm build, a ragged call
// gives exactly what one unbatched call per sequence gives, and what the padded equivalent (a
// [B, maxLength, E] batch with keyPaddingMask) gives on its unpadded rows; with causal, attnMask
// lists, weights, capture, rotary positions, caches and gradients; and every option without a
// per-sequence meaning is refused by name; caches as a list, one per sequence.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { worstError } from './fixtures.js';
import { seededFloats } from './seeded.js';

const builds = await loadAllBuilds({ threadCounts: [3] });
const E = 16, H = 4, KDIM = 12;
const LENGTHS = [5, 1, 9, 3];
const KEY_LENGTHS = [4, 7, 2, 6];
const sum = (a) => a.reduce((x, y) => x + y, 0);

const stateDict = () => ({
  in_proj_weight: seededFloats(3 * E * E, 1, 0.3), in_proj_bias: seededFloats(3 * E, 2), 'out_proj.weight': seededFloats(E * E, 3, 0.3),
  'out_proj.bias': seededFloats(E, 4),
});
const crossStateDict = () => ({
  q_proj_weight: seededFloats(E * E, 5, 0.3), k_proj_weight: seededFloats(E * KDIM, 6, 0.3), v_proj_weight: seededFloats(E * KDIM, 7, 0.3),
  in_proj_bias: seededFloats(3 * E, 8), 'out_proj.weight': seededFloats(E * E, 9, 0.3), 'out_proj.bias': seededFloats(E, 10),
});
const ragged = (lengths, width, seed) => ({ data: seededFloats(sum(lengths) * width, seed), shape: [sum(lengths), width], lengths });

/** Sequence i of a ragged tensor as an unbatched [L_i, width] tensor. */
function part({ data, shape: [, width] }, lengths, i) {
  const start = sum(lengths.slice(0, i));
  return { data: data.slice(start * width, (start + lengths[i]) * width), shape: [lengths[i], width] };
}

/** A ragged tensor padded to [B, max, width] (zeros after each sequence), and its keyPaddingMask [B, max]. */
function padded(tensor, lengths) {
  const width = tensor.shape[1], max = Math.max(...lengths), B = lengths.length;
  const data = new Float32Array(B * max * width), mask = new Uint8Array(B * max).fill(1);
  lengths.forEach((n, b) => {
    data.set(part(tensor, lengths, b).data, b * max * width);
    mask.fill(0, b * max, b * max + n);
  });
  return { tensor: { data, shape: [B, max, width] }, mask: { data: mask, shape: [B, max] } };
}

/** The unpadded rows of a padded [B, max, width] output, packed. */
function unpadded({ data, shape: [, max, width] }, lengths) {
  const out = new Float32Array(sum(lengths) * width);
  let at = 0;
  lengths.forEach((n, b) => {
    out.set(data.subarray(b * max * width, (b * max + n) * width), at);
    at += n * width;
  });
  return out;
}

function assertClose(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  const e = worstError(got, want, { absolute: 1e-5, relative: 1e-4 });
  assert.ok(e.ratio <= 1, `${what}[${e.index}] = ${got[e.index]}, want ${want[e.index]}`);
}

/** The per-sequence calls' outputs, packed. */
function perSequence(layer, q, k, v, optionsOf = () => ({})) {
  const outs = q.lengths.map((_, i) => layer.forward(part(q, q.lengths, i), k && part(k, k.lengths, i), v && part(v, v.lengths, i),
    optionsOf(i)));
  return { data: Float32Array.from(outs.flatMap((r) => [...r.output.data])), results: outs };
}

for (const build of builds) {
  describe(`ragged batches on ${build.label}`, () => {
    build.use();
    const layer = new build.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict());
    const cross = new build.MultiHeadAttention({ embedDim: E, numHeads: H, kdim: KDIM, vdim: KDIM }).loadStateDict(crossStateDict());
    const q = ragged(LENGTHS, E, 11);

    test('self-attention: the per-sequence calls\' outputs, and the padded batch\'s unpadded rows', () => {
      const r = layer.forward(q);
      assert.deepEqual(r.output.shape, [sum(LENGTHS), E]);
      assert.deepEqual([...r.output.lengths], LENGTHS);
      assert.equal(r.weights, null);
      assert.deepEqual(r.output.data, perSequence(layer, q).data);
      const p = padded(q, LENGTHS);
      const full = layer.forward(p.tensor, null, null, { keyPaddingMask: p.mask }).output;
      assertClose(r.output.data, unpadded(full, LENGTHS), 'padded');
    });

    test('lengths as an Int32Array, and forwardAsync, give the same', async () => {
      const want = layer.forward(q).output.data;
      assert.deepEqual(layer.forward({ ...q, lengths: Int32Array.from(LENGTHS) }).output.data, want);
      assert.deepEqual((await layer.forwardAsync(q)).output.data, want);
    });

    test('causal: per sequence, and the padded batch with causal and keyPaddingMask', () => {
      const r = layer.forward(q, null, null, { causal: true });
      assert.deepEqual(r.output.data, perSequence(layer, q, null, null, () => ({ causal: true })).data);
      const p = padded(q, LENGTHS);
      const full = layer.forward(p.tensor, null, null, { keyPaddingMask: p.mask, causal: true }).output;
      assertClose(r.output.data, unpadded(full, LENGTHS), 'padded');
    });

    test('cross-attention with key lengths of their own; weights as a list', () => {
      const k = ragged(KEY_LENGTHS, KDIM, 12), v = ragged(KEY_LENGTHS, KDIM, 13);
      const r = cross.forward(q, k, v, { needWeights: true });
      const want = perSequence(cross, q, k, v, () => ({ needWeights: true }));
      assert.deepEqual(r.output.data, want.data);
      assert.equal(r.weights.length, LENGTHS.length);
      r.weights.forEach((w, i) => {
        assert.deepEqual(w.shape, [LENGTHS[i], KEY_LENGTHS[i]]);
        assert.deepEqual(w.data, want.results[i].weights.data);
      });
      const pq = padded(q, LENGTHS), pk = padded(k, KEY_LENGTHS), pv = padded(v, KEY_LENGTHS);
      const full = cross.forward(pq.tensor, pk.tensor, pv.tensor, { keyPaddingMask: pk.mask }).output;
      assertClose(r.output.data, unpadded(full, LENGTHS), 'padded');
    });

    test('attnMask: a list, one mask per sequence', () => {
      const masks = LENGTHS.map((n, i) => ({ data: Uint8Array.from({ length: n * n }, (_, j) => (j % n === (i + 1) % n && n > 1 ? 1 : 0)), shape: [n, n] }));
      const r = layer.forward(q, null, null, { attnMask: masks });
      assert.deepEqual(r.output.data, perSequence(layer, q, null, null, (i) => ({ attnMask: masks[i] })).data);
      assert.notDeepEqual(r.output.data, layer.forward(q).output.data);
    });

    test('capture: one record per sequence', () => {
      const r = layer.forward(q, null, null, { capture: ['scores'] });
      assert.equal(r.captured.length, LENGTHS.length);
      r.captured.forEach((c, i) => assert.deepEqual(c.scores.shape, [H, LENGTHS[i], LENGTHS[i]]));
    });

    test('caches: a list, one per sequence; a ragged prefill, then one-token steps, as per-sequence calls', () => {
      const make = () => LENGTHS.map(() => layer.createCache({ capacity: 16 }));
      const caches = make(), own = make();
      try {
        const prefill = layer.forward(q, null, null, { cache: caches });
        assert.deepEqual(prefill.output.data, perSequence(layer, q, null, null, (i) => ({ cache: own[i] })).data);
        assert.deepEqual(caches.map((c) => c.length), LENGTHS);
        const step = ragged(LENGTHS.map(() => 1), E, 15);
        const next = layer.forward(step, null, null, { cache: caches });
        assert.deepEqual(next.output.data, perSequence(layer, step, null, null, (i) => ({ cache: own[i] })).data);
        assert.deepEqual(caches.map((c) => c.length), LENGTHS.map((n) => n + 1));
        assert.throws(() => layer.forward(step, null, null, { cache: caches.slice(1) }),
          { name: 'RangeError', message: 'forward: cache: one cache per sequence (4), got 3' });
        assert.throws(() => layer.forward(step, null, null, { cache: [caches[0], caches[0], caches[1], caches[2]] }),
          { name: 'TypeError', message: 'forward: cache: each sequence needs a cache of its own (the list repeats one)' });
      } finally {
        [...caches, ...own].forEach((c) => c.dispose());
      }
    });

    test('rotary positions: packed [totalTokens], split per sequence', () => {
      const rotary = new build.MultiHeadAttention({ embedDim: E, numHeads: H, rotary: true }).loadStateDict(stateDict());
      try {
        const positions = { data: Int32Array.from({ length: sum(LENGTHS) }, (_, j) => 2 * j), shape: [sum(LENGTHS)] };
        const r = rotary.forward(q, null, null, { positions });
        const want = perSequence(rotary, q, null, null, (i) => ({ positions: { data: part({ data: positions.data, shape: [sum(LENGTHS), 1] }, LENGTHS, i).data, shape: [LENGTHS[i]] } }));
        assert.deepEqual(r.output.data, want.data);
        assert.notDeepEqual(r.output.data, rotary.forward(q).output.data);  // (the positions count)
        assert.throws(() => rotary.forward(q, null, null, { positions: { data: new Int32Array(4), shape: [4] } }),
          { message: `forward: positions: with ragged inputs, { data: Int32Array, shape: [${sum(LENGTHS)}] } (one per token, packed as the query), got shape [4]` });
      } finally {
        rotary.dispose();
      }
    });

    test('grad: backward takes dOut packed; input gradients packed, parameter gradients summed', () => {
      const dOut = { data: seededFloats(sum(LENGTHS) * E, 14), shape: [sum(LENGTHS), E] };
      const r = layer.forward(q, null, null, { grad: true });
      const g = r.backward(dOut);
      assert.ok(r.released);
      assert.deepEqual(g.query.shape, [sum(LENGTHS), E]);
      assert.deepEqual([...g.query.lengths], LENGTHS);
      assert.equal(g.key, null);
      const wantQuery = [], wantParams = {};
      LENGTHS.forEach((_, i) => {
        const one = layer.forward(part(q, LENGTHS, i), null, null, { grad: true }).backward(part(dOut, LENGTHS, i));
        wantQuery.push(...one.query.data);
        for (const [name, d] of Object.entries(one.params)) {
          wantParams[name] ??= new Float32Array(d.length);
          d.forEach((x, j) => { wantParams[name][j] += x; });
        }
      });
      assert.deepEqual(g.query.data, Float32Array.from(wantQuery));
      assert.deepEqual(Object.keys(g.params), Object.keys(wantParams));
      for (const [name, want] of Object.entries(wantParams)) assert.deepEqual(g.params[name], want, name);
      const again = layer.forward(q, null, null, { grad: true });
      assert.throws(() => again.backward({ data: new Float32Array(3), shape: [3] }),
        { message: `backward: dOut: expected the output's shape [${sum(LENGTHS)}, ${E}], got [3]` });
      again.release();
      assert.ok(again.released);
    });

    test('refusals name the argument and the expected form', () => {
      const cases = [
        [() => layer.forward(q, null, null, { keyPaddingMask: { data: new Uint8Array(4), shape: [4] } }),
          'forward: keyPaddingMask: ragged inputs need no padding mask (each sequence has its own length)'],
        [() => layer.forward(q, null, null, { cache: layer.createCache({ capacity: 4 }) }),
          'forward: cache: with ragged inputs, a list of caches, one per sequence (each from createCache(), batch 1), got an object (KvCache)'],
        [() => layer.forward({ ...q, lengths: [5, 1, 9] }),
          `forward: query.lengths: they sum to 15, but shape [${sum(LENGTHS)}, ${E}] has ${sum(LENGTHS)} rows (totalTokens)`],
        [() => layer.forward({ ...q, lengths: [5, 0, 9, 4] }),
          'forward: query.lengths[1] must be a positive integer (a sequence\'s length), got 0'],
        [() => layer.forward({ ...q, lengths: 18 }),
          'forward: query.lengths must be an Int32Array or an array of numbers (one length per sequence), got number 18'],
        [() => layer.forward(q, null, null, { attnMask: { data: new Uint8Array(1), shape: [1, 1] } }),
          'forward: attnMask: with ragged inputs, a list of masks, one per sequence ([L_i, S_i] or [numHeads, L_i, S_i] each), got an object (Object)'],
        [() => cross.forward(q, { data: new Float32Array(KDIM), shape: [1, KDIM] }, { data: new Float32Array(KDIM), shape: [1, KDIM] }),
          'forward: key: a ragged query takes a ragged key { data, shape: [totalKeys, kdim], lengths } (one length per query sequence), '
          + 'or null for self-attention'],
        [() => cross.forward(q, ragged([1, 2], KDIM, 1), ragged([1, 2], KDIM, 2)),
          'forward: key.lengths: one length per query sequence (4), got 2'],
        [() => cross.forward(q, ragged(KEY_LENGTHS, KDIM, 1), ragged([4, 7, 3, 5], KDIM, 2)),
          'forward: value.lengths[2] must equal key.lengths[2] (2), got 3'],
        [() => layer.forward({ data: new Float32Array(E), shape: [1, E] }, ragged([1], E, 1), ragged([1], E, 2)),
          'forward: query: a ragged key or value needs a ragged query { data, shape: [totalTokens, embedDim], lengths }'],
      ];
      for (const [call, message] of cases) assert.throws(call, { message });
      // An error in one sequence's call says which sequence.
      const wrongWidth = { data: new Float32Array(18 * 3), shape: [18, 3], lengths: LENGTHS };
      assert.throws(() => layer.forward(wrongWidth), (e) => e.message.startsWith('forward: query')
        && e.message.endsWith('(in sequence 0 of the ragged batch, rows 0 to 4)'));
      // A failure after earlier sequences ran with grad: their saved state is freed.
      const masks = LENGTHS.map((n, i) => ({ data: new Uint8Array(i === 1 ? 4 : n * n), shape: i === 1 ? [2, 2] : [n, n] }));
      const failing = () => assert.throws(() => layer.forward(q, null, null, { grad: true, attnMask: masks }),
        (e) => e.message.startsWith('forward: attnMask') && e.message.endsWith('(in sequence 1 of the ragged batch, rows 5 to 5)'));
      failing();  // (the first grad call may keep a scratch buffer for the next ones)
      const before = build.heapAllocatedBytes();
      failing();
      failing();
      assert.equal(build.heapAllocatedBytes(), before);
      assert.deepEqual(layer.forward(q).output.shape, [sum(LENGTHS), E]);  // (the layer still works)
    });
  });
}
