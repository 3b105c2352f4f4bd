// The whole layer's prefill with quantized weights against float32 (issue 24: within 1.15x):
//   node --no-liftoff bench/prefill-quantized.mjs [--threads=2] [--passes=7] [--dtypes=f32,int8,q4,f16] [--clock=cpu]
//     [--only=Llama] [--lengths=128,512]
// A prefill is one forward of L tokens through an empty KV cache, through the public JS API, on
// the wasm builds (mha-simd 1 thread, mha-simd-threads N threads). Shapes: the prefill
// benchmark's self-attention shapes (bench/shapes.mjs, as bench/prefill-cache.mjs) and the decode
// layers of bench/decode.mjs (Qwen-, Llama-, GPT-2-like, GQA as theirs) at --lengths tokens.
// A pass runs one prefill of each dtype of a shape in turn (the order rotating pass by pass, so a
// burst of the machine's other tenants falls on every dtype alike); a shape gets --passes passes,
// more while under 2 s. A cell is the median of its passes, and a ratio the median of the passes'
// ratios to f32's prefill in the same pass. --clock=cpu: the 1-thread cells in the process's CPU
// time (robust when other tenants share the cores); the N-thread cells are always wall time.
// The outputs are compared with f32's too (largest |difference| / largest |f32 output|).
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { label, randomArray, randomStateDict, SHAPES } from './shapes.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const THREADS = Number(args.threads ?? 2), PASSES = Number(args.passes ?? 7);
const DTYPES = (args.dtypes ?? 'f32,int8,q4,f16').split(',');
if (DTYPES[0] !== 'f32') DTYPES.unshift('f32');  // the ratios' denominator
const CPU_CLOCK = args.clock === 'cpu', ONLY = args.only ?? '';
const LENGTHS = (args.lengths ?? '128,512').split(',').map(Number);
const cpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

const DECODE_LAYERS = [  // bench/decode.mjs' MODELS
  { name: 'Qwen2.5-0.5B-like', E: 896, H: 14, Hkv: 2 },
  { name: 'Llama-3.2-1B-like', E: 2048, H: 32, Hkv: 8 },
  { name: 'GPT-2-like', E: 768, H: 12, Hkv: 12 },
];
const ROWS = [
  ...SHAPES.filter((s) => s.S === s.L).map((s) => ({ ...s, Hkv: s.H, name: label(s) })),
  ...DECODE_LAYERS.flatMap((m) => LENGTHS.map((L) => ({ ...m, B: 1, L, name: `${m.name} 1x${L}` }))),
].filter((s) => s.name.includes(ONLY));

function makeLayer(MultiHeadAttention, { E, H, Hkv }, dtype) {
  const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: Hkv, ...(dtype === 'f32' ? {} : { weightDtype: dtype }) });
  return layer.loadStateDict(randomStateDict(layer, 0));  // the same float32 weights for every dtype
}

const builds = [['mha-simd', 1], ['mha-simd-threads', THREADS]];
const cells = {};  // `${row} ${threads} ${dtype}` -> { ms: [], ratios: [], diff }
for (const [buildName, threads] of builds) {
  const { module, MultiHeadAttention } = await loadBuild(buildName);
  if (module.setNumThreads) module.setNumThreads(threads);
  await new Promise((resolve) => { setTimeout(resolve, 200); });  // new pthreads start once the main thread yields
  const now = threads === 1 && CPU_CLOCK ? cpuMs : () => performance.now();
  for (const s of ROWS) {
    const query = { data: randomArray(s.B * s.L * s.E, 11), shape: [s.B, s.L, s.E] };
    const runs = DTYPES.map((dtype) => {
      const layer = makeLayer(MultiHeadAttention, s, dtype);
      const cache = layer.createCache({ batch: s.B, capacity: s.L });
      const out = new Float32Array(s.B * s.L * s.E);
      const prefill = () => {
        cache.reset();
        layer.forward(query, null, null, { cache, out });
        return out;
      };
      return { dtype, layer, prefill, first: prefill().slice() };  // warm-up, and the comparison
    });
    const ref = runs[0].first;
    const scale = ref.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    for (const r of runs) {
      let diff = 0;
      for (let i = 0; i < ref.length; i++) diff = Math.max(diff, Math.abs(ref[i] - r.first[i]));
      (cells[`${s.name} ${threads} ${r.dtype}`] ??= { ms: [], ratios: [], diff: 0 }).diff = diff / scale;
    }
    const started = performance.now();
    for (let pass = 0; pass < PASSES || (pass < 100 && performance.now() - started < 2000); pass++) {
      const ms = {};
      for (let i = 0; i < runs.length; i++) {  // dtype order rotates pass by pass
        const r = runs[(i + pass) % runs.length];
        const t0 = now();
        r.prefill();
        ms[r.dtype] = now() - t0;
      }
      for (const r of runs) {
        const cell = cells[`${s.name} ${threads} ${r.dtype}`];
        cell.ms.push(ms[r.dtype]);
        cell.ratios.push(ms[r.dtype] / ms.f32);
      }
    }
    for (const r of runs) r.layer.dispose();
    process.stderr.write(`${buildName}: ${s.name} done\n`);
  }
}

const clock1 = CPU_CLOCK ? 'CPU ms' : 'ms';
console.log(`\n#### Prefill (one forward of L tokens through an empty KV cache) with quantized weights vs float32, wasm`);
console.log(`(1 thread: mha-simd, ${CPU_CLOCK ? 'process CPU time' : 'wall time'}; ${THREADS} threads: mha-simd-threads, wall time; `
  + `median of at least ${PASSES} passes, dtypes alternating call by call; ratio: the median of the passes' ratios)\n`);
console.log(`| shape | dtype | 1 thread ${clock1} | / f32 | ${THREADS} threads ms | / f32 | passes | largest difference / largest output |`);
console.log('|---|---|---:|---:|---:|---:|---:|---:|');
for (const s of ROWS) {
  for (const dtype of DTYPES) {
    const one = cells[`${s.name} 1 ${dtype}`], n = cells[`${s.name} ${THREADS} ${dtype}`];
    console.log(`| ${s.name} | ${dtype} | ${median(one.ms).toFixed(2)} | ${median(one.ratios).toFixed(3)} | ${median(n.ms).toFixed(2)} | `
      + `${median(n.ratios).toFixed(3)} | ${one.ms.length} / ${n.ms.length} | ${dtype === 'f32' ? '' : Math.max(one.diff, n.diff).toExponential(1)} |`);
  }
}
process.exit(0);
