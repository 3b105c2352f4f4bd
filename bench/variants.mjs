// The cost of each score-step variant (rotary, GQA, sliding window, ALiBi, softcap, sinks) on
// the wasm build, against the plain causal layer of the same shape measured in the same run:
//   node bench/variants.mjs [--threads=1] [--passes=3]
// Each row alternates with its baseline, pass after pass, in one process; a cell is the median
// of its passes' medians. ratio = baseline ms / variant ms (> 1: the variant is faster).
// GFLOPS count the work the row must do: a sliding window's attention covers L x W keys, not
// the causal triangle, so the GFLOPS column says how fast the work that remains runs.
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { randomArray } from './shapes.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const THREADS = Number(args.threads ?? 1), PASSES = Number(args.passes ?? 3);

const CAUSAL_4096 = { L: 4096, E: 256, H: 4 };
const CAUSAL_2048 = { L: 2048, E: 512, H: 8 };
const ROWS = [
  { name: 'sliding window 512', shape: CAUSAL_4096, config: { slidingWindow: 512 } },
  { name: 'sliding window 128', shape: CAUSAL_4096, config: { slidingWindow: 128 } },
  { name: 'rotary 64 + GQA 8/2 (Llama)', shape: CAUSAL_2048, config: { rotary: { dim: 64 }, numKvHeads: 2 } },
  { name: 'rotary 64', shape: CAUSAL_2048, config: { rotary: { dim: 64 } } },
  { name: 'GQA 8/2', shape: CAUSAL_2048, config: { numKvHeads: 2 } },
  { name: 'rotary + GQA + window 512 (Mistral)', shape: CAUSAL_2048, config: { rotary: { dim: 64 }, numKvHeads: 2, slidingWindow: 512 } },
  { name: 'ALiBi (BLOOM)', shape: CAUSAL_2048, config: { alibi: true } },
  { name: 'softcap 50 (Gemma 2)', shape: CAUSAL_2048, config: { softcap: 50 } },
  { name: 'sinks (gpt-oss)', shape: CAUSAL_2048, config: { sinks: true } },
];

/** Multiply-adds x 2 of the projections and of the attention each query row may see. */
function flops({ L, E, H }, config) {
  const kvRows = (E / H) * (config.numKvHeads ?? H);  // GQA: fewer k/v projection rows
  const projections = 2 * L * E * (2 * E + 2 * kvRows);
  let pairs = 0;
  for (let i = 0; i < L; i++) pairs += Math.min(i + 1, config.slidingWindow ?? Infinity);
  return projections + 4 * pairs * E;
}

const { module, MultiHeadAttention } = await loadBuild(THREADS > 1 ? 'mha-simd-threads' : 'mha-simd');
if (THREADS > 1) module.setNumThreads(THREADS);

function makeLayer({ E, H }, config) {
  const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, ...config });
  const shapes = layer.stateDictShapes();
  let seed = 1;
  const sd = {};
  for (const [key, shape] of Object.entries(shapes)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const scale = shape.length === 2 ? 2 / Math.sqrt(shape[1]) : 0.1;
    sd[key] = randomArray(n, seed++).map((x) => x * scale);
  }
  return layer.loadStateDict(sd);
}

/** Median ms of `forward` over at least 3 calls and ~1 s, after one warm-up call. */
function time(layer, query) {
  layer.forward(query, null, null, { causal: true });
  const times = [];
  const started = performance.now();
  do {
    const t0 = performance.now();
    layer.forward(query, null, null, { causal: true });
    times.push(performance.now() - t0);
  } while (times.length < 3 || (performance.now() - started < 1000 && times.length < 15));
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const results = ROWS.map(() => ({ ours: [], base: [] }));
for (let pass = 0; pass < PASSES; pass++) {
  ROWS.forEach((row, i) => {
    const { L, E } = row.shape;
    const query = { data: randomArray(L * E, 11), shape: [1, L, E] };
    const base = makeLayer(row.shape, {}), variant = makeLayer(row.shape, row.config);
    results[i].base.push(time(base, query));
    results[i].ours.push(time(variant, query));
    base.dispose();
    variant.dispose();
  });
  process.stderr.write(`pass ${pass + 1}/${PASSES}\n`);
}

console.log(`\n#### Variants, wasm ${THREADS} thread${THREADS > 1 ? 's' : ''} (${THREADS > 1 ? 'mha-simd-threads' : 'mha-simd'}), causal self-attention, batch 1; baseline = the plain causal layer of the same shape, same run\n`);
console.log('| variant | shape (L x E x H) | ms | GFLOPS | baseline ms | baseline / variant |');
console.log('|---|---|---:|---:|---:|---:|');
ROWS.forEach((row, i) => {
  const ms = median(results[i].ours), base = median(results[i].base);
  const { L, E, H } = row.shape;
  const gflops = flops(row.shape, row.config) / (ms * 1e6);
  console.log(`| ${row.name} | ${L}x${E}x${H} | ${ms.toFixed(1)} | ${gflops.toFixed(1)} | ${base.toFixed(1)} | ${(base / ms).toFixed(2)}x |`);
});
process.exit(0);
