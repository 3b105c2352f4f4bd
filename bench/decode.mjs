// Decoding with a KV cache: one new token per call, batch 1, fp32, on the wasm builds.
//   node bench/decode.mjs [--threads=2] [--steps=30] [--layers=1]
// For each layer shape and cache length: the median ms of a one-token forward with a cache
// already holding `length - 1` tokens, the bytes such a step must read (the layer's weights
// plus the cache's keys and values) and the rate that makes (GB/s). --layers=N runs the step
// over a stack of N distinct layers (per-layer ms), as a real model streams its weights from
// memory instead of re-reading one layer that stays in the last-level cache.
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { randomArray } from './shapes.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const THREADS = Number(args.threads ?? 2), STEPS = Number(args.steps ?? 30), LAYERS = Number(args.layers ?? 1);

const MODELS = [
  { name: 'Qwen2.5-0.5B-like', E: 896, H: 14, Hkv: 2, lengths: [1, 128, 1024, 4096] },
  { name: 'Llama-3.2-1B-like', E: 2048, H: 32, Hkv: 8, lengths: [1, 128, 1024, 4096] },
  { name: 'GPT-2-like', E: 768, H: 12, Hkv: 12, lengths: [1, 128, 1024] },
];

function makeLayers(MultiHeadAttention, { E, H, Hkv }, count) {
  return Array.from({ length: count }, (_, l) => {
    const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: Hkv });
    const sd = {};
    let seed = 1 + 10 * l;
    for (const [key, shape] of Object.entries(layer.stateDictShapes())) {
      const scale = shape.length === 2 ? 1 / Math.sqrt(shape[1]) : 0.1;
      sd[key] = randomArray(shape.reduce((a, b) => a * b, 1), seed++).map((x) => x * scale);
    }
    return layer.loadStateDict(sd);
  });
}

/** Median ms per layer of one decode step at `length` cached tokens (after the append). */
function measure(layers, caches, E, length) {
  for (const [i, layer] of layers.entries()) {  // fill each cache to length - 1
    const cache = caches[i];
    cache.reset();
    for (let done = 0; done < length - 1;) {
      const n = Math.min(512, length - 1 - done);
      layer.forward({ data: randomArray(n * E, 5 + done), shape: [1, n, E] }, null, null, { cache });
      done += n;
    }
  }
  const step = { data: randomArray(E, 7), shape: [1, 1, E] }, out = new Float32Array(E);
  const times = [];
  for (let s = 0; s < STEPS + 3; s++) {
    const t0 = performance.now();
    for (const [i, layer] of layers.entries()) layer.forward(step, null, null, { cache: caches[i], out });
    const ms = (performance.now() - t0) / layers.length;
    for (const cache of caches) cache.truncate(length - 1);
    if (s >= 3) times.push(ms);  // 3 warm-up steps
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const builds = [['mha-simd', 1], ['mha-simd-threads', THREADS]];
const rows = [];
for (const model of MODELS) {
  const weightBytes = 4 * (2 * model.E * model.E + 2 * model.E * (model.E / model.H) * model.Hkv + model.E + 2 * (model.E / model.H) * model.Hkv + model.E);
  const row = model.lengths.map((length) => ({ length, bytes: weightBytes + 4 * 2 * length * model.Hkv * (model.E / model.H) }));
  for (const [name, threads] of builds) {
    const { module, MultiHeadAttention } = await loadBuild(name);
    if (module.setNumThreads) module.setNumThreads(threads);
    const layers = makeLayers(MultiHeadAttention, model, LAYERS);
    const caches = layers.map((l) => l.createCache({ capacity: Math.max(...model.lengths) }));
    for (const cell of row) cell[threads] = measure(layers, caches, model.E, cell.length);
    for (const l of layers) l.dispose();
    process.stderr.write(`measured ${model.name} on ${name}\n`);
  }
  rows.push({ model, row });
}

console.log(`\n#### Decoding: one token per call with a KV cache, batch 1, fp32 (${LAYERS} distinct layer${LAYERS > 1 ? 's' : ''}, ms per layer)\n`);
console.log(`| layer like | cached tokens | bytes read | 1 thread ms | GB/s | ${THREADS} threads ms | GB/s | ${THREADS}T vs 1T |`);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const { model, row } of rows) {
  for (const cell of row) {
    const gbs = (ms) => (cell.bytes / (ms * 1e6)).toFixed(1);
    console.log(`| ${model.name} (E ${model.E}, ${model.H} heads, ${model.Hkv} kv) | ${cell.length} | ${(cell.bytes / 2 ** 20).toFixed(1)} MiB | `
      + `${cell[1].toFixed(3)} | ${gbs(cell[1])} | ${cell[THREADS].toFixed(3)} | ${gbs(cell[THREADS])} | ${(cell[1] / cell[THREADS]).toFixed(2)}x |`);
  }
}
process.exit(0);
