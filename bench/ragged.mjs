// Ragged batches against their padded equivalent on the wasm build, 1 thread: the same sequences
// as one ragged call ({ data, shape: [totalTokens, E], lengths }: one unbatched call per sequence,
// no padded row computed) and as a [B, maxLength, E] batch with keyPaddingMask. Each row times
// both, alternating, pass after pass (each first in every other pass), in one process:
// node bench/ragged.mjs [--passes=4]; ratio = padded ms / ragged ms (> 1: ragged is faster).
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { randomArray } from './shapes.mjs';
import { median, time } from './timing.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const PASSES = Number(args.passes ?? 4);
const E = 512, H = 8;
const ROWS = [
  { lengths: [512, 64, 32, 200, 16, 300, 8, 128], causal: false },
  { lengths: [512, 64, 32, 200, 16, 300, 8, 128], causal: true },
  { lengths: [128, 120, 100, 96], causal: false },  // near-equal lengths: little padding to save
  // Equal lengths, no padding at all: what one call per sequence costs against one batched call.
  { lengths: Array(8).fill(64), causal: false },
  { lengths: Array(64).fill(8), causal: false },
];

const { MultiHeadAttention } = await loadBuild('mha-simd');
const layer = new MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 1 });

/** The row's inputs: the ragged query, and the padded batch with its keyPaddingMask. */
function inputs(lengths) {
  const total = lengths.reduce((a, b) => a + b, 0), B = lengths.length, max = Math.max(...lengths);
  const data = randomArray(total * E, 11);
  const padded = new Float32Array(B * max * E), mask = new Uint8Array(B * max).fill(1);
  let row = 0;
  lengths.forEach((n, b) => {
    padded.set(data.subarray(row * E, (row + n) * E), b * max * E);
    mask.fill(0, b * max, b * max + n);
    row += n;
  });
  return {
    ragged: { data, shape: [total, E], lengths },
    padded: { data: padded, shape: [B, max, E] },
    keyPaddingMask: { data: mask, shape: [B, max] },
  };
}

const results = ROWS.map(() => ({ ragged: [], padded: [] }));
for (let pass = 0; pass < PASSES; pass++) {
  ROWS.forEach((row, i) => {
    const x = inputs(row.lengths);
    const both = [
      () => results[i].ragged.push(time(() => layer.forward(x.ragged, null, null, { causal: row.causal }))),
      () => results[i].padded.push(time(() => layer.forward(x.padded, null, null, { keyPaddingMask: x.keyPaddingMask, causal: row.causal }))),
    ];
    (pass % 2 ? both.reverse() : both).forEach((measure) => measure());  // (each goes first in every other pass)
  });
  process.stderr.write(`pass ${pass + 1}/${PASSES}\n`);
}
layer.dispose();

console.log(`\n#### Ragged batches vs padded with keyPaddingMask, wasm 1 thread (mha-simd), E ${E}, ${H} heads, self-attention\n`);
console.log('| lengths | tokens (padded) | causal | ragged ms | padded ms | padded / ragged |');
console.log('|---|---|---|---:|---:|---:|');
ROWS.forEach((row, i) => {
  const r = median(results[i].ragged), p = median(results[i].padded);
  const total = row.lengths.reduce((a, b) => a + b, 0), padded = row.lengths.length * Math.max(...row.lengths);
  const shown = new Set(row.lengths).size === 1 ? `${row.lengths.length} × ${row.lengths[0]}` : row.lengths.join(', ');
  console.log(`| ${shown} | ${total} (${padded}) | ${row.causal ? 'yes' : 'no'} | ${r.toFixed(2)} | ${p.toFixed(2)} | ${(p / r).toFixed(2)} |`);
});
