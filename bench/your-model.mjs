// The "Your model" mode's costs on a GPT-2-small-sized checkpoint with random weights (12 layers,
// E 768, 12 heads, vocabulary 50257, 124M parameters), in Hugging Face's layout, float32 and float16:
// - load: read model.safetensors from a local file, parse it, build the model (web/your-model/);
// - a 128-token forward (every layer's weights, the last token's logits and the logit lens, as the
//   page asks) on the wasm builds with 1 thread (mha-simd) and 2 threads (mha-simd-threads);
// - generating: greedy tokens through every layer's KV cache after a 16-token prompt (tokens/s).
//   node bench/your-model.mjs [--dtypes=f32,f16] [--threads=1,2] [--runs=3] [--tokens=16]
// Each figure is the median over --runs of the wall time; the CPU time of the process (every
// thread) is printed beside it, which shows when other tenants slowed the wall clock.
// The checkpoint is written once per dtype into the OS's temporary folder and removed at the end.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSafetensors } from '../bindings/js/formats/safetensors.js';  // (not index.js: no npm packages needed)
import { CONFIG, V, checkpointTensors } from './gpt2-small-checkpoint.mjs';
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { readCheckpoint } from '../bindings/js/models/checkpoint.js';
import { CheckpointModel } from '../bindings/js/models/transformer.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const DTYPES = (args.dtypes ?? 'f32,f16').split(',');
const THREADS = (args.threads ?? '1,2').split(',').map(Number);
const RUNS = Number(args.runs ?? 3);
const TOKENS = Number(args.tokens ?? 16);
const L = 128;

const cpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
/** [wall ms, cpu ms] of an async call. */
async function timed(call) {
  const wall = performance.now(), cpu = cpuMs();
  await call();
  return [performance.now() - wall, cpuMs() - cpu];
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const ids = (n, seed) => Array.from({ length: n }, (_, i) => (i * 7919 + seed * 104729) % V);

const dir = await mkdtemp(join(tmpdir(), 'your-model-bench-'));
const rows = [];
try {
  const builds = Object.fromEntries(await Promise.all(THREADS.map(async (t) => [t, await loadBuild(t === 1 ? 'mha-simd' : 'mha-simd-threads')])));
  for (const [t, build] of Object.entries(builds)) {
    if (build.module.setNumThreads) build.module.setNumThreads(Number(t));
  }
  for (const dtype of DTYPES) {
    const path = join(dir, `model-${dtype}.safetensors`);
    await writeFile(path, writeSafetensors(checkpointTensors(dtype)));
    const config = new TextEncoder().encode(JSON.stringify(CONFIG));
    for (const threads of THREADS) {
      const build = builds[threads];
      const loads = [], forwards = [], rates = [];
      for (let run = 0; run < RUNS; run++) {
        let model;
        loads.push(await timed(async () => {
          const bytes = new Uint8Array(await readFile(path));
          model = await CheckpointModel.create(build, build, readCheckpoint([{ name: 'config.json', bytes: config }, { name: 'model.safetensors', bytes }]));
        }));
        try {
          forwards.push(await timed(() => model.forward(ids(L, run), { logits: 'last' })));
          const caches = model.createCaches(16 + TOKENS);
          let { logits } = await model.forward(ids(16, run), { caches, logits: 'last', lens: false });
          const [wall, cpu] = await timed(async () => {
            for (let n = 0; n < TOKENS; n++) {
              let next = 0;
              for (let v = 1; v < logits.length; v++) if (logits[v] > logits[next]) next = v;
              ({ logits } = await model.forward([next], { caches, logits: 'last', lens: false }));
            }
          });
          rates.push([TOKENS / (wall / 1000), TOKENS / (cpu / 1000)]);
        } finally {
          model.dispose();
        }
      }
      const pick = (list, i) => median(list.map((pair) => pair[i]));
      const row = {
        dtype, threads, loadS: pick(loads, 0) / 1000, loadCpuS: pick(loads, 1) / 1000,
        forwardS: pick(forwards, 0) / 1000, forwardCpuS: pick(forwards, 1) / 1000,
        tokensPerSecond: pick(rates, 0), tokensPerCpuSecond: pick(rates, 1),
      };
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
console.log('\n| weights | threads | load s (CPU s) | 128-token forward s (CPU s) | generating tokens/s (per CPU s) |\n|---|---:|---:|---:|---:|');
const both = (wall, cpu, digits) => `${wall.toFixed(digits)} (${cpu.toFixed(digits)})`;
for (const r of rows) {
  console.log(`| ${r.dtype} | ${r.threads} | ${both(r.loadS, r.loadCpuS, 2)} | ${both(r.forwardS, r.forwardCpuS, 2)} | ${both(r.tokensPerSecond, r.tokensPerCpuSecond, 2)} |`);
}
