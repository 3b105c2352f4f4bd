// web/generation.js, the worker's half of the demo's Generate mode, in Node: the sampler, the
// seeded stream, option checks, a GenerationSession's cache against recomputing the text, and its
// generation with patched heads (the Steps view's ablation and patching).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { init, readSafetensors } from '../../bindings/js/index.js';
import { CACHE_CAPACITY, chooseToken, checkSampling, GenerationSession, MAX_NEW_TOKENS, seededRandom } from '../../web/generation.js';
import { DemoModel, tokenize } from '../../web/model.js';

let model;
let session;

before(async () => {
  const dir = new URL('../../web/model/', import.meta.url);
  model = new DemoModel(await init(), readSafetensors(await readFile(new URL('demo-model.safetensors', dir))),
    JSON.parse(await readFile(new URL('vocab.json', dir), 'utf8')));
  session = new GenerationSession(model);
});

after(() => {
  session?.dispose();
  model?.dispose();
});

/** Runs a generation to its end: the tokens, and the generator's return value. */
async function drain(steps) {
  const tokens = [];
  for (;;) {
    const { value, done } = await steps.next();
    if (done) return { tokens, end: value };
    tokens.push(value);
  }
}

test('seededRandom: a seed is a repeatable stream in [0, 1); another seed another stream', () => {
  const a = seededRandom(42);
  const b = seededRandom(42);
  const c = seededRandom(43);
  const xs = Array.from({ length: 1000 }, a);
  assert.deepEqual(Array.from({ length: 1000 }, b), xs);
  assert.notDeepEqual(Array.from({ length: 1000 }, c), xs);
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  assert.ok(Math.abs(mean - 0.5) < 0.05, `mean ${mean}`);
});

test('chooseToken: greedy takes the largest allowed logit; sampling stays in the top k and follows the softmax', () => {
  const logits = Float32Array.from([1, 5, 3, 5.5, -2]);
  assert.equal(chooseToken(logits, {}, Math.random), 3);
  assert.equal(chooseToken(logits, {}, Math.random, [3]), 1, 'a banned token is never chosen');
  const random = seededRandom(7);
  const counts = [0, 0, 0, 0, 0];
  const draws = 20000;
  for (let n = 0; n < draws; n++) counts[chooseToken(logits, { temperature: 1, topK: 2 }, random)] += 1;
  assert.equal(counts[0] + counts[2] + counts[4], 0, 'only the 2 most likely tokens');
  // softmax over {5, 5.5}: p(3) = 1 / (1 + e^-0.5) = 0.6225
  assert.ok(Math.abs(counts[3] / draws - 1 / (1 + Math.exp(-0.5))) < 0.02, `p(3) = ${counts[3] / draws}`);
  // A high temperature flattens: all five appear; top-k 1 is greedy at any temperature.
  const flat = new Set(Array.from({ length: 2000 }, () => chooseToken(logits, { temperature: 100 }, random)));
  assert.equal(flat.size, 5);
  assert.equal(chooseToken(logits, { temperature: 50, topK: 1 }, random), 3);
});

test('checkSampling names the bad option', () => {
  assert.throws(() => checkSampling({ count: 0 }), { name: 'RangeError', message: `count must be an integer from 1 to ${MAX_NEW_TOKENS} (new tokens), got 0` });
  assert.throws(() => checkSampling({ count: MAX_NEW_TOKENS + 1 }), { name: 'RangeError', message: /count must be an integer from 1 to 2000/ });
  assert.throws(() => checkSampling({ count: 5, temperature: -1 }), { name: 'RangeError', message: 'temperature must be a number >= 0 (0 = greedy), got -1' });
  assert.throws(() => checkSampling({ count: 5, topK: 1.5 }), { name: 'RangeError', message: 'topK must be an integer >= 0 (0 = every token), got 1.5' });
  assert.throws(() => checkSampling({ count: 5, seed: -3 }), { name: 'RangeError', message: 'seed must be an integer from 0 to 4294967295, got -3' });
  const { ids } = tokenize('abc', model.vocab);
  assert.throws(() => session.generate(ids, { count: 5, temperature: NaN }), { name: 'RangeError', message: /temperature/ });
  assert.throws(() => session.generate(new Array(CACHE_CAPACITY - 10).fill(5), { count: 11 }),
    { name: 'RangeError', message: `the prompt (${CACHE_CAPACITY - 10} tokens) plus count (11) must fit in ${CACHE_CAPACITY} tokens` });
});

test('GenerationSession: the cache and recomputation give the same tokens, greedy and seeded; rows cover every key', async () => {
  const { ids } = tokenize('the kelu sat on the mat. the kelu', model.vocab);
  for (const sampling of [{ count: 120 }, { count: 120, temperature: 0.8, topK: 10, seed: 3 }]) {
    const cached = await drain(session.generate(ids, { ...sampling, useCache: true }));
    const full = await drain(session.generate(ids, { ...sampling, useCache: false }));
    assert.deepEqual(cached.tokens.map((t) => t.id), full.tokens.map((t) => t.id));
    cached.tokens.forEach((t, n) => {
      const keys = ids.length + n + 1;  // the new token sees the prompt, the tokens before it and itself
      assert.equal(t.cacheLength, keys);
      t.layers.forEach((layer, l) => {
        assert.equal(layer.weights.length, model.numHeads * keys);
        assert.equal(layer.output.length, model.dModel);
        for (let h = 0; h < model.numHeads; h++) {
          const row = layer.weights.subarray(h * keys, (h + 1) * keys);
          assert.ok(Math.abs(row.reduce((s, w) => s + w, 0) - 1) < 1e-5);
          const other = full.tokens[n].layers[l].weights.subarray(h * keys, (h + 1) * keys);
          for (let j = 0; j < keys; j++) assert.ok(Math.abs(row[j] - other[j]) <= 1e-5, `token ${n} layer ${l} head ${h} key ${j}`);
        }
      });
    });
    assert.ok(!cached.tokens.some((t) => t.id === model.vocab.bos || t.id === model.vocab.unk));
  }
});

test('GenerationSession: a new prompt keeps the cached prefix it shares; stop() ends a run between steps', async () => {
  const { ids } = tokenize('the red boat. the red', model.vocab);
  const first = await drain(session.generate(ids, { count: 30 }));
  assert.equal(session.cacheLength, ids.length + 30);
  // The same text plus what was generated: everything but the last token is reused.
  const continued = [...ids, ...first.tokens.map((t) => t.id)];
  const next = session.generate(continued, { count: 5 });
  assert.equal((await drain(next)).end.reused, continued.length - 1);
  // An edit at character 4 keeps <bos> and the 4 characters before it.
  const edited = [...continued];
  edited[5] = edited[5] === 7 ? 8 : 7;
  assert.equal(session.keepPrefix(edited), 5);
  assert.equal(session.cacheLength, 5);
  // Stop between steps: the run ends with what it had.
  const steps = session.generate(edited, { count: 50 });
  await steps.next();
  await steps.next();
  session.stop();
  const rest = await drain(steps);
  assert.equal(rest.tokens.length, 0);
  assert.equal(rest.end.reused, 5);
  assert.equal(session.cacheLength, edited.length + 2);
});

test('GenerationSession with patches: every step runs the whole text with them (the cache unused); steps are its last row', async () => {
  const ids = tokenize('the cat sat on the', model.vocab).ids;
  const H = model.numHeads, Dv = model.dModel / H;
  // Layer 0 head 3 ablated: zeros in its z, for a text of any length.
  const ablate = (text) => [{ z: { data: new Float32Array(text.length * H * Dv), shape: [text.length, H, Dv] }, heads: [3] }];
  const clean = (await drain(session.generate(ids, { count: 6 }))).tokens.map((t) => t.id);
  const cacheBefore = session.cacheLength;
  const { tokens } = await drain(session.generate(ids, { count: 6, steps: true, patches: ablate }));
  assert.equal(session.cacheLength, cacheBefore, 'the caches are not touched');
  assert.ok(tokens.every((t) => t.cacheLength === 0));
  // The same greedy tokens from the whole text's forward with the same patch, step by step.
  const text = [...ids];
  const V = model.vocab.tokens.length;
  for (const token of tokens) {
    const { logits } = model.forward(text, { patches: ablate(text) });
    const last = logits.subarray((text.length - 1) * V);
    const banned = [model.vocab.bos, model.vocab.unk];
    const best = [...last.keys()].filter((id) => !banned.includes(id)).reduce((a, b) => (last[b] > last[a] ? b : a));
    assert.equal(token.id, best);
    text.push(token.id);
  }
  assert.notDeepEqual(tokens.map((t) => t.id), clean, 'the ablation changes the text');
  // The newest token's steps: the last row of the whole text's capture, k and v whole.
  const whole = model.forward(text, { capture: true, patches: ablate(text) }).layers[1].captured;
  const { captured } = tokens.at(-1).layers[1];
  const L = text.length;
  assert.deepEqual(captured.q.shape, [H, 1, Dv]);
  assert.deepEqual(captured.pattern.shape, [H, 1, L]);
  assert.deepEqual(captured.z.shape, [1, H, Dv]);
  assert.deepEqual(captured.k, whole.k);
  assert.deepEqual(Array.from(captured.pattern.data.subarray(2 * L, 3 * L)), Array.from(whole.pattern.data.subarray((2 * L + L - 1) * L, (2 * L + L) * L)));
  assert.deepEqual(Array.from(captured.z.data), Array.from(whole.z.data.subarray((L - 1) * H * Dv)));
  assert.throws(() => session.generate(ids, { count: 1, patches: [] }), { name: 'TypeError', message: /patches must be a function/ });
});
