// What the interpretability workflows of mha-wasm/models cost on a GPT-2-small-sized checkpoint
// (random weights, bench/gpt2-small-checkpoint.mjs), 20-token prompts, on the wasm build with one
// thread (mha-simd): the clean run with every hook point cached, activation patching of every
// (layer × head) and every (layer × position) of resid_pre, direct logit attribution and the head
// scores. Beside each sweep: its patched runs per second, and the same number of full forwards
// timed in the same run (the baseline a sweep without reuse would cost).
//   node bench/patching.mjs [--runs=1] [--tokens=20] [--dtype=f32] [--sweeps=head_out,resid_pre,attn_out,mlp_out] [--differ=15,1]
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { readCheckpoint } from '../bindings/js/models/checkpoint.js';
import { writeSafetensors } from '../bindings/js/formats/safetensors.js';
import { modelFromCheckpoint } from '../bindings/js/models/hooked-model.js';
import { activationPatching, directLogitAttribution, headScores } from '../bindings/js/models/index.js';
import { CONFIG, V, checkpointTensors } from './gpt2-small-checkpoint.mjs';
import { cpus } from 'node:os';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const RUNS = Number(args.runs ?? 1);
const L = Number(args.tokens ?? 20);
const DTYPE = args.dtype ?? 'f32';

// A word-level tokenizer.json: the workflows take ids; loadModel wants a tokenizer all the same.
const TOKENIZER = {
  version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
  pre_tokenizer: { type: 'Whitespace' }, post_processor: null, decoder: null,
  model: { type: 'WordLevel', vocab: { '<unk>': 0, the: 1, cat: 2 }, unk_token: '<unk>' },
};
const files = [
  { name: 'config.json', bytes: new TextEncoder().encode(JSON.stringify(CONFIG)) },
  { name: 'model.safetensors', bytes: writeSafetensors(checkpointTensors(DTYPE)) },
  { name: 'tokenizer.json', bytes: new TextEncoder().encode(JSON.stringify(TOKENIZER)) },
];
const build = await loadBuild('mha-simd');
const model = await modelFromCheckpoint(build, readCheckpoint(files));
const ids = (seed) => Array.from({ length: L }, (_, i) => (i * 7919 + seed * 104729) % V);
const clean = ids(1);
// The corrupted prompt: the clean one with one token changed, at each position of --differ (an
// IOI-style pair differs late; at position 1 every later row differs, the sweeps' worst case:
// slices the two runs share are not rerun).
const DIFFER = (args.differ ?? `${L - 5},1`).split(',').map(Number);
const corruptedAt = (pos) => clean.map((id, i) => (i === pos ? (id + 1) % V : id));
const answer = 11, wrong = 12;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
async function seconds(call) {
  const times = [];
  let result;
  for (let r = 0; r < RUNS; r++) {
    const start = performance.now();
    result = await call();
    times.push((performance.now() - start) / 1000);
  }
  return [median(times), result];
}

const rows = [];
const [forwardS] = await seconds(() => model.forward(clean));
const [cacheS, { cache }] = await seconds(() => model.runWithCache(clean));
rows.push(['one forward (logits)', forwardS, 1], ['runWithCache, every hook point', cacheS, 1]);
for (const pos of DIFFER) {
  const corrupted = corruptedAt(pos);
  for (const over of (args.sweeps ?? 'head_out,resid_pre,attn_out,mlp_out').split(',')) {
    const [s, result] = await seconds(() => activationPatching(model, { clean, corrupted, answer, wrong, over }));
    rows.push([`activationPatching '${over}' [${result.shape}], texts differ at token ${pos}`, s, result.data.length]);
  }
}
const [dlaS] = await seconds(async () => directLogitAttribution(model, cache, { answer, wrong }));
const [scoreS] = await seconds(async () => ['previous_token', 'duplicate_token', 'induction'].map((k) => headScores(model, cache, k)));
rows.push(['directLogitAttribution', dlaS, 1], ['headScores, the three kinds', scoreS, 1]);
model.dispose();

console.log(`\nGPT-2-small shape (${DTYPE}, random weights), ${L}-token prompts, wasm mha-simd 1 thread; ${cpus()[0].model}; ${new Date().toISOString().slice(0, 10)}; median of ${RUNS}`);
console.log('| call | runs | s | s per run | full forwards of the same count, s |\n|---|---:|---:|---:|---:|');
for (const [what, s, count] of rows) {
  console.log(`| ${what} | ${count} | ${s.toFixed(2)} | ${(s / count * 1000).toFixed(1)} ms | ${(forwardS * count).toFixed(2)} |`);
}
