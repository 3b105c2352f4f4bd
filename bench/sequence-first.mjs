// The cost of batchFirst: false (PyTorch's default sequence-first [L, B, E] layout) on the wasm
// build: the layer reads such a call through one batch-first copy of each input and copies the
// output back (src/mha/sequence_first.hpp). Each row times the same call both ways, alternating,
// pass after pass (each first in every other pass), in one process: node bench/sequence-first.mjs [--passes=4]
// ratio = batch-first ms / sequence-first ms (< 1: the copies cost that share).
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { randomArray } from './shapes.mjs';
import { median, time } from './timing.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const PASSES = Number(args.passes ?? 4);

const ROWS = [  // B x L x E x H; self-attention, and cross-attention with S = 2L keys
  { B: 8, L: 128, E: 512, H: 8, S: 0 },
  { B: 32, L: 64, E: 256, H: 4, S: 0 },
  { B: 8, L: 128, E: 512, H: 8, S: 256 },
  { B: 64, L: 1, E: 512, H: 8, S: 0 },  // one decoder position per sequence (PyTorch's helper's shape, larger)
];

const { MultiHeadAttention } = await loadBuild('mha-simd');

function layers({ E, H }) {
  const bf = new MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 1 });
  return [bf, new MultiHeadAttention({ embedDim: E, numHeads: H, batchFirst: false }).loadStateDict(bf.stateDict())];
}

const results = ROWS.map(() => ({ bf: [], sf: [] }));
for (let pass = 0; pass < PASSES; pass++) {
  ROWS.forEach((row, i) => {
    const { B, L, E, S } = row;
    const [bf, sf] = layers(row);
    const q = randomArray(B * L * E, 11), kv = S ? randomArray(B * S * E, 12) : null;
    const bfArgs = [{ data: q, shape: [B, L, E] }, kv && { data: kv, shape: [B, S, E] }, kv && { data: kv, shape: [B, S, E] }];
    const sfArgs = [{ data: q, shape: [L, B, E] }, kv && { data: kv, shape: [S, B, E] }, kv && { data: kv, shape: [S, B, E] }];
    const both = [() => results[i].bf.push(time(() => bf.forward(...bfArgs))), () => results[i].sf.push(time(() => sf.forward(...sfArgs)))];
    (pass % 2 ? both.reverse() : both).forEach((measure) => measure());  // (each goes first in every other pass)
    bf.dispose();
    sf.dispose();
  });
  process.stderr.write(`pass ${pass + 1}/${PASSES}\n`);
}

console.log('\n#### batchFirst: false, wasm 1 thread (mha-simd); the same call batch-first, same run\n');
console.log('| shape (B x L x E x H) | keys | batch-first ms | sequence-first ms | batch-first / sequence-first |');
console.log('|---|---|---:|---:|---:|');
ROWS.forEach((row, i) => {
  const bf = median(results[i].bf), sf = median(results[i].sf);
  console.log(`| ${row.B}x${row.L}x${row.E}x${row.H} | ${row.S ? `cross, S = ${row.S}` : 'self'} | ${bf.toFixed(2)} | ${sf.toFixed(2)} | ${(bf / sf).toFixed(3)} |`);
});
