// First call against later calls of one layer, through the public API (fresh process each run):
//   node bench/first-call.mjs [L=2048] [threads=1]
// Engines start wasm on a baseline compile; init()'s warm-up (bindings/js/core/loader.js) is what keeps
// the first call close to the later ones.
import { init } from '../bindings/js/index.js';
import { benchWeights, randomArray } from './shapes.mjs';

const L = Number(process.argv[2] ?? 2048), threads = Number(process.argv[3] ?? 1), E = 256, H = 4;
const started = performance.now();
const mha = await init({ threads });
const initMs = performance.now() - started;
const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(benchWeights(E));
const query = { data: randomArray(L * E, 11), shape: [1, L, E] };
const times = [];
for (let i = 0; i < 4; i++) {
  const t0 = performance.now();
  layer.forward(query);
  times.push(performance.now() - t0);
}
layer.dispose();
console.log(`${mha.build.name}, ${mha.build.numThreads} thread(s), 1x${L}x${E}x${H}: init ${initMs.toFixed(0)} ms, `
  + times.map((t, i) => `call ${i + 1} ${t.toFixed(0)} ms`).join(', '));
