// Greedy text generation with the demo's character model (web/model/), token by token through a
// KV cache per layer, and the same tokens again by recomputing the whole text each step; checks
// that both give the same text and prints both rates.
//   node examples/generate.mjs ["prompt"] [tokens]
import { readFile } from 'node:fs/promises';

import { init, readSafetensors } from 'mha-wasm';
import { DemoModel, tokenize } from '../web/model.js';

const prompt = process.argv[2] ?? 'the kelu sat on the mat. the kelu';
const count = Number(process.argv[3] ?? 200);

const modelDir = new URL('../web/model/', import.meta.url);
const mha = await init();
const weights = readSafetensors(await readFile(new URL('demo-model.safetensors', modelDir)));
const vocab = JSON.parse(await readFile(new URL('vocab.json', modelDir), 'utf8'));
const model = new DemoModel(mha, weights, vocab);
const V = vocab.tokens.length;
const argmax = (row) => row.reduce((best, v, i) => (v > row[best] ? i : best), 0);

const { ids } = tokenize(prompt, vocab);

// 1. With a cache: the prompt's tokens go in one at a time (a chunked prefill works too), then
//    every generated token costs one cached forward per layer.
const caches = model.createCaches(ids.length + count);
let started = performance.now();
let logits;
for (const id of ids) logits = model.step(id, caches);
const cached = [];
for (let n = 0; n < count; n++) {
  const next = argmax(logits);
  cached.push(next);
  logits = model.step(next, caches);
}
const cachedMs = performance.now() - started;

// 2. Without: each step runs the model over the whole text so far.
started = performance.now();
const full = [...ids];
const recomputed = [];
for (let n = 0; n < count; n++) {
  const all = model.forward(full).logits;
  const next = argmax(all.subarray((full.length - 1) * V, full.length * V));
  recomputed.push(next);
  full.push(next);
}
const fullMs = performance.now() - started;

const text = (tokens) => tokens.map((id) => vocab.tokens[id]).join('');
console.log(`prompt:    ${JSON.stringify(prompt)}`);
console.log(`generated: ${JSON.stringify(text(cached))}`);
console.log(`with a KV cache:   ${count} tokens in ${cachedMs.toFixed(0)} ms (${(count / cachedMs * 1000).toFixed(0)} tokens/s, the prompt included)`);
console.log(`recomputing all:   ${count} tokens in ${fullMs.toFixed(0)} ms (${(count / fullMs * 1000).toFixed(0)} tokens/s)`);
const same = cached.every((id, i) => id === recomputed[i]);
console.log(same ? 'the same tokens both ways' : `DIFFERENT tokens: ${JSON.stringify(text(recomputed))}`);
model.dispose();
process.exit(same ? 0 : 1);
