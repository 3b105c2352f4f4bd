// One implementation on one shape, in its own process (so peak memory is per shape):
//   node bench/worker.mjs <impl> <B> <L> <S> <E> <H> <threads> [model.onnx]
// impl: mha-wasm | ort-web | ort-node | js-loop. Prints one JSON line:
//   { ms: median forward time (copies into and out of the engine included), runs, peakMB, checksum,
//     gemm: the GEMM variant our wasm process ran (kernel_choice.hpp: calibrated at its first use),
//     kernels: every kernel's variant it ran, as MHA_KERNELS would name them }
import { readFileSync } from 'node:fs';

import { benchWeights, randomArray } from './shapes.mjs';

const [impl, ...rest] = process.argv.slice(2);
const [B, L, S, E, H, threads] = rest.slice(0, 6).map(Number);
const modelPath = rest[6];
const shape = { B, L, S, E, H };
const cross = S !== L;
const weights = benchWeights(E);
const query = randomArray(B * L * E, 11), key = cross ? randomArray(B * S * E, 12) : query;

let gemmVariant, kernelVariants;  // mha-wasm: read after the warm-up (each kernel's first use calibrates it)

async function forwardFunction() {
  if (impl === 'mha-wasm') {
    const { loadBuild } = await import('../tools/load-wasm-build.mjs');
    // MHA_BENCH_BUILD: bench/run.mjs's --simd choice (default: the plain SIMD128 builds).
    const { module, MultiHeadAttention } = await loadBuild(process.env.MHA_BENCH_BUILD || (threads > 1 ? 'mha-simd-threads' : 'mha-simd'));
    if (threads > 1) module.setNumThreads(threads);
    const layer = new MultiHeadAttention({ embedDim: E, numHeads: H });
    layer.loadStateDict(weights);
    const q = { data: query, shape: [B, L, E] }, k = { data: key, shape: [B, S, E] };
    gemmVariant = () => JSON.parse(module.kernelChoice()).gemm.variant;
    kernelVariants = () => Object.entries(JSON.parse(module.kernelChoice())).map(([k, v]) => `${k}=${v.variant}`).join(',');
    return () => (cross ? layer.forward(q, k, k) : layer.forward(q)).output.data;
  }
  if (impl === 'ort-web' || impl === 'ort-node') {
    const ort = await import(impl === 'ort-web' ? 'onnxruntime-web' : 'onnxruntime-node');
    const options = { graphOptimizationLevel: 'all' };
    if (impl === 'ort-web') {
      ort.env.wasm.numThreads = threads;
      options.executionProviders = ['wasm'];
    } else {
      options.intraOpNumThreads = threads;
      options.interOpNumThreads = 1;
      options.executionMode = 'sequential';
    }
    const session = await ort.InferenceSession.create(readFileSync(modelPath), options);
    const feeds = () => ({
      query: new ort.Tensor('float32', query, [B, L, E]),
      ...(cross ? { key: new ort.Tensor('float32', key, [B, S, E]) } : {}),
    });
    return async () => (await session.run(feeds())).output.getData();
  }
  if (impl === 'js-loop') {
    const { forwardJs } = await import('./js-loop.mjs');
    return () => forwardJs(shape, weights, query, key);
  }
  throw new Error(`unknown implementation ${impl}`);
}

const forward = await forwardFunction();
const slow = impl === 'js-loop';
const times = [];
let checksum = 0;
for (let i = 0; i < (slow ? 0 : 2); i++) await forward();  // warm-up
const budgetMs = 2000, started = performance.now();
do {
  const t0 = performance.now();
  const out = await forward();
  times.push(performance.now() - t0);
  checksum = out[0] + out[out.length - 1];
} while (!slow && times.length < 15 && (times.length < 3 || performance.now() - started < budgetMs));
times.sort((a, b) => a - b);
const ms = times[Math.floor(times.length / 2)];
console.log(JSON.stringify({ ms, runs: times.length, peakMB: process.resourceUsage().maxRSS / 1024, checksum, gemm: gemmVariant?.(), kernels: kernelVariants?.() }));
process.exit(0);  // ort-web's worker threads would keep the process alive
