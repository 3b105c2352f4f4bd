// Whole-model decode and prefill against the memory bound, per weightDtype, on random weights in
// Hugging Face's layout (bench/random-checkpoints.mjs: GPT-2 small, Qwen2.5-0.5B, Llama-3.2-1B,
// Llama-3.2-3B shapes), through mha-wasm/models' own code (CheckpointModel: the page's and
// HookedModel.generate's forward with KV caches, the last token's logits only):
// - prefill: a 128-token prompt into empty caches (seconds, and the matrices' GFLOPS: 2 x the
//   matrices' weights x 128 / time);
// - decode: greedy tokens through the caches after that prompt (tokens/s, median step);
// - the bound: the bytes of weights a decode step reads (every matrix once, as packed in the
//   weightDtype; an untied embedding only a row) over the wasm streaming-read bandwidth measured
//   in the same run by bench/stream-read.mjs, at the same thread count. "of bound" = bound ms /
//   step ms (1.0 = at memory speed).
// A combination the wasm heap cannot hold (the load's estimate) is reported, not run. The Llama
// shapes are written to a temporary folder first and loaded from it ({ name, path }: streamed).
//   node bench/whole-model.mjs [--shapes=gpt2-small,qwen2.5-0.5b] [--dtypes=f32,f16,int8,q4]
//                              [--threads=1,2] [--tokens=16] [--prompt=128] [--json] [--js-activation]
// Each step's CPU time (the process's, every thread) is printed beside its wall time.
// Benchmarks are not tests: run it on an otherwise idle machine and compare ratios from one run.
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MLP_ACTIVATION } from '../bindings/js/core/mlp-activation.js';
import { closeCheckpoint, openCheckpoint, readCheckpoint } from '../bindings/js/models/checkpoint.js';
import { estimateCheckpoint, packedBytes } from '../bindings/js/models/memory-estimate.js';
import { CheckpointModel } from '../bindings/js/models/transformer.js';
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { randomCheckpoint, writeRandomCheckpoint } from './random-checkpoints.mjs';

/** Shapes too big to hold in memory beside the wasm heap: written to a temporary folder and read from it a tensor at a time. */
const ON_DISK = ['llama-3.2-1b', 'llama-3.2-3b'];

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const SHAPES = (args.shapes ?? 'gpt2-small,qwen2.5-0.5b').split(',');
const DTYPES = (args.dtypes ?? 'f32,f16,int8,q4').split(',');
const THREADS = (args.threads ?? '1,2').split(',').map(Number);
const TOKENS = Number(args.tokens ?? 16);
const PROMPT = Number(args.prompt ?? 128);

/** The process's CPU time (every thread), ms: beside the wall clock, it shows when other tenants slowed a step. */
const cpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const argmax = (logits) => { let best = 0; for (let v = 1; v < logits.length; v++) if (logits[v] > logits[best]) best = v; return best; };

/** The wasm SIMD streaming-read rate (GB/s) at each thread count, from bench/stream-read.mjs. */
function streamRead(maxThreads) {
  const out = execFileSync(process.execPath, [new URL('stream-read.mjs', import.meta.url).pathname, String(maxThreads)], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1));
}

/** Bytes a decode step reads of the weights: every matrix packed, but an untied embedding (a row) and GPT-2's position table. */
function bytesPerToken(checkpoint, dtype) {
  const a = checkpoint.architecture;
  let bytes = 0, flops = 0;
  for (const [key, tensor] of Object.entries(checkpoint.tensors)) {
    if (tensor.shape.length !== 2) continue;
    if (/wpe|position/.test(key)) continue;
    if (/embed_tokens/.test(key) && !a.tiedUnembedding) continue;
    const [rows, cols] = tensor.shape;
    bytes += packedBytes(dtype, rows, cols);
    flops += 2 * rows * cols;
  }
  return { bytes, flops };
}

const builds = {};
for (const threads of THREADS) {
  builds[threads] = await loadBuild(threads === 1 ? 'mha-simd' : 'mha-simd-threads');
  builds[threads].module.setNumThreads?.(threads);
  // --js-activation: the MLP activations as JavaScript loops (elementwise.js), for an A/B of the wasm kernel
  if (args['js-activation'] !== undefined) delete builds[threads][MLP_ACTIVATION];
}
const bandwidth = streamRead(Math.max(...THREADS));
const rows = [];
for (const shape of SHAPES) {
  let checkpoint, dir = null;
  if (ON_DISK.includes(shape)) {
    dir = await mkdtemp(join(tmpdir(), 'whole-model-'));
    await writeRandomCheckpoint(shape, dir);
    checkpoint = await openCheckpoint(['config.json', 'model.safetensors'].map((name) => ({ name, path: join(dir, name) })));
  } else {
    checkpoint = readCheckpoint(randomCheckpoint(shape).files);
  }
  const V = checkpoint.architecture.vocabSize;
  const prompt = Array.from({ length: PROMPT }, (_, i) => (i * 7919 + 104729) % V);
  for (const dtype of DTYPES) {
    const estimate = estimateCheckpoint(checkpoint, { weightDtype: dtype, contextLength: PROMPT + TOKENS, available: 2 ** 32 });
    const { bytes, flops } = bytesPerToken(checkpoint, dtype);
    for (const threads of THREADS) {
      const row = { shape, dtype, threads, weightMB: +(bytes / 1e6).toFixed(1) };
      if (!estimate.fits) {
        rows.push({ ...row, skipped: `needs ${(estimate.bytes.total / 2 ** 30).toFixed(2)} GiB of the 4 GiB heap` });
        console.error(JSON.stringify(rows.at(-1)));
        continue;
      }
      const build = builds[threads];
      const started = performance.now();
      const model = await CheckpointModel.create(build, build, checkpoint, { weightDtype: dtype });
      const loadS = (performance.now() - started) / 1000;
      // The wasm heap the model holds, and the process's peak resident memory so far (JavaScript
      // and every wasm memory together: run one shape per process for a figure of its own).
      const heapGiB = build.module.heapAllocatedBytes() / 2 ** 30;
      try {
        const caches = model.createCaches(PROMPT + TOKENS + 1);
        const t0 = performance.now();
        let { logits } = await model.forward(prompt, { caches, logits: 'last', lens: false });
        const prefillS = (performance.now() - t0) / 1000;
        const steps = [], cpuSteps = [];
        for (let n = 0; n < TOKENS; n++) {
          const t = performance.now(), cpu = cpuMs();
          ({ logits } = await model.forward([argmax(logits)], { caches, logits: 'last', lens: false }));
          steps.push(performance.now() - t);
          cpuSteps.push(cpuMs() - cpu);
        }
        for (const cache of caches) cache.dispose();
        row.heapGiB = +heapGiB.toFixed(2);
        row.peakRssGiB = +(process.resourceUsage().maxRSS / 2 ** 20).toFixed(2);
        const stepMs = median(steps);
        const boundMs = bytes / (bandwidth[threads] * 1e9) * 1000;
        rows.push({
          ...row, loadS: +loadS.toFixed(2), prefillS: +prefillS.toFixed(3), prefillGflops: +(flops * PROMPT / prefillS / 1e9).toFixed(1),
          tokensPerSecond: +(1000 / stepMs).toFixed(1), stepMs: +stepMs.toFixed(2), stepCpuMs: +median(cpuSteps).toFixed(2), boundMs: +boundMs.toFixed(2), ofBound: +(boundMs / stepMs).toFixed(2),
        });
      } finally {
        model.dispose();
      }
      console.error(JSON.stringify(rows.at(-1)));
    }
  }
  if (dir) {
    await closeCheckpoint(checkpoint);
    await rm(dir, { recursive: true, force: true });
  }
}

const machine = `${cpus()[0].model}, ${cpus().length} cores, Node ${process.versions.node}`;
if (args.json !== undefined) {
  console.log(JSON.stringify({ machine, date: new Date().toISOString(), bandwidth, rows }));
} else {
  console.log(`${machine}, ${new Date().toISOString()}; wasm streaming read: ${THREADS.map((t) => `${bandwidth[t].toFixed(1)} GB/s at ${t} thread${t > 1 ? 's' : ''}`).join(', ')}`);
  console.log('| shape | weightDtype | threads | weights read / token | load | prefill 128 | prefill GFLOPS | decode tokens/s | step (CPU) / bound | of bound | wasm heap / peak RSS |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    if (r.skipped) console.log(`| ${r.shape} | ${r.dtype} | ${r.threads} | ${r.weightMB} MB | ${r.skipped} | | | | | | |`);
    else console.log(`| ${r.shape} | ${r.dtype} | ${r.threads} | ${r.weightMB} MB | ${r.loadS} s | ${r.prefillS} s | ${r.prefillGflops} | ${r.tokensPerSecond} | ${r.stepMs} (${r.stepCpuMs}) / ${r.boundMs} ms | ${r.ofBound} | ${r.heapGiB} / ${r.peakRssGiB} GiB |`);
  }
}
