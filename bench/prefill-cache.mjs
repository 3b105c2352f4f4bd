// Prefill through a KV cache against today's causal forward, on the benchmark's self-attention
// shapes (bench/shapes.mjs), wasm, 1 and N threads:
//   node bench/prefill-cache.mjs [--threads=2] [--passes=3] [--shapes=0,3]
// A prefill projects the same rows and runs the same attention as forward(x, { causal: true });
// it also appends the keys and values to the cache and the attention reads them from there. The
// target (issue 10) is within 5% of forward. Both run in one process, alternating call by call
// (this VM's neighbours slow it for seconds at a time), the cache reset before each prefill;
// a cell is the median of its passes' medians. The outputs are compared too.
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { benchWeights, label, randomArray, SHAPES } from './shapes.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const THREADS = Number(args.threads ?? 2), PASSES = Number(args.passes ?? 3);
const shapes = (args.shapes ? args.shapes.split(',').map((i) => SHAPES[Number(i)]) : SHAPES).filter((s) => s.S === s.L);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

/** Median ms of forward and of the cached prefill, measured alternately; and their largest |difference|. */
function measure(MultiHeadAttention, { B, L, E, H }) {
  const layer = new MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(benchWeights(E));
  const cache = layer.createCache({ batch: B, capacity: L });
  const query = { data: randomArray(B * L * E, 11), shape: [B, L, E] };
  const forward = () => layer.forward(query, null, null, { causal: true }).output.data;
  const prefill = () => {
    cache.reset();
    return layer.forward(query, null, null, { cache }).output.data;
  };
  const a = forward(), b = prefill();  // warm-up, and the comparison
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i] - b[i]));
  const times = { forward: [], prefill: [] };
  const started = performance.now();
  do {
    for (const [name, run] of [['forward', forward], ['prefill', prefill]]) {
      const t0 = performance.now();
      run();
      times[name].push(performance.now() - t0);
    }
  } while (times.forward.length < 3 || (times.forward.length < 60 && performance.now() - started < 2000));
  layer.dispose();
  return { forward: median(times.forward), prefill: median(times.prefill), diff };
}

const builds = [['mha-simd', 1], ['mha-simd-threads', THREADS]];
const cells = {};  // `${shape} ${threads}` -> { forward: [], prefill: [], diff }
for (let pass = 1; pass <= PASSES; pass++) {
  for (const [name, threads] of builds) {
    const { module, MultiHeadAttention } = await loadBuild(name);
    if (module.setNumThreads) module.setNumThreads(threads);
    await new Promise((resolve) => { setTimeout(resolve, 200); });  // new pthreads start once the main thread yields
    for (const s of shapes) {
      const r = measure(MultiHeadAttention, s);
      const cell = (cells[`${label(s)} ${threads}`] ??= { forward: [], prefill: [], diff: 0 });
      cell.forward.push(r.forward);
      cell.prefill.push(r.prefill);
      cell.diff = Math.max(cell.diff, r.diff);
    }
  }
  process.stderr.write(`pass ${pass}/${PASSES} done\n`);
}

console.log(`\n#### Prefill through a KV cache vs forward(x, { causal: true }), wasm (median of ${PASSES} passes)\n`);
console.log(`| shape | 1 thread forward ms | prefill ms | prefill / forward | ${THREADS} threads forward ms | prefill ms | prefill / forward | largest difference |`);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const s of shapes) {
  const one = cells[`${label(s)} 1`], n = cells[`${label(s)} ${THREADS}`];
  const f1 = median(one.forward), p1 = median(one.prefill), fn = median(n.forward), pn = median(n.prefill);
  console.log(`| ${label(s)} | ${f1.toFixed(2)} | ${p1.toFixed(2)} | ${(p1 / f1).toFixed(3)} | ${fn.toFixed(2)} | ${pn.toFixed(2)} | `
    + `${(pn / fn).toFixed(3)} | ${Math.max(one.diff, n.diff).toExponential(1)} |`);
}
process.exit(0);
