// One implementation of the training table on one shape, in its own process (so peak memory is
// per shape):  node bench/training-worker.mjs <impl> <B> <L> <E> <H> <Dh> <threads> [budgetMs]
// impl: mha-wasm | tfjs-wasm | tfjs-cpu. Self-attention (query = key = value = x), no mask.
// Prints one JSON line: { forwardMs, stepMs (forward with grad + backward, gradients copied
// out), forwardCpuMs, stepCpuMs, runs (or stepError), peakMB, wasmMB (ours: the module's memory), check (sums of dx and of
// d out_proj.weight, to compare implementations) }.
import { createRequire } from 'node:module';
import path from 'node:path';

import { randomArray, trainingWeights } from './shapes.mjs';

const [impl, ...rest] = process.argv.slice(2);
const [B, L, E, H, Dh, threads] = rest.slice(0, 6).map(Number);
const BUDGET_MS = Number(rest[6] ?? 2000);
const shape = { B, L, S: L, E, H, Dh };
const weights = trainingWeights(shape);
const x = randomArray(B * L * E, 11), g = randomArray(B * L * E, 13);
const sum = (a) => a.reduce((s, v) => s + v, 0);

/** { forward(): void, step(): { dx, dWo }, memoryMB(): number | undefined } */
async function implementation() {
  if (impl === 'mha-wasm') {
    const { loadBuild } = await import('../tools/load-wasm-build.mjs');
    const { module, MultiHeadAttention } = await loadBuild(threads > 1 ? 'mha-simd-threads' : 'mha-simd');
    if (threads > 1) module.setNumThreads(threads);
    const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, ...(Dh !== E / H ? { headDim: Dh } : {}) });
    layer.loadStateDict(weights);
    const input = { data: x, shape: [B, L, E] }, dOut = { data: g, shape: [B, L, E] };
    return {
      forward: () => layer.forward(input).output.data,
      step: () => {
        const r = layer.forward(input, null, null, { grad: true });
        const grads = r.backward(dOut);
        return { dx: grads.query.data, dWo: grads.params['out_proj.weight'] };
      },
      // The module's memory only grows: its size after the runs is the most they needed.
      memoryMB: () => (module.wasmMemory?.buffer ?? module.HEAP8.buffer).byteLength / 2 ** 20,
    };
  }
  if (impl === 'tfjs-wasm' || impl === 'tfjs-cpu') {
    const tf = await import('@tensorflow/tfjs');  // core, the cpu backend and the gradients
    if (impl === 'tfjs-wasm') {
      const wasm = await import('@tensorflow/tfjs-backend-wasm');
      const require = createRequire(import.meta.url);
      wasm.setWasmPaths(`${path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm'))}/`);
      tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);  // one thread (it has none in Node anyway)
    }
    if (!(await tf.setBackend(impl === 'tfjs-wasm' ? 'wasm' : 'cpu'))) throw new Error(`${impl}: backend failed to start`);
    const { tfjsAttention } = await import('./tfjs-attention.mjs');
    const layer = tfjsAttention(tf, shape, weights);
    return {
      forward: () => layer.forward(x),
      step: () => {
        const { dx, dw } = layer.step(x, g);
        return { dx, dWo: dw[6] };
      },
      memoryMB: () => undefined,
    };
  }
  throw new Error(`unknown implementation ${impl}`);
}

/**
 * Median ms of `fn` after one warm-up call: at least one run, then up to 15 within the budget.
 * A warm-up call over 5 s is the measurement itself (first-call costs are far below 1% of it;
 * tfjs' slowest steps take minutes). Also the median CPU time of the process per call (all its
 * threads): on a machine shared with other work, a one-thread cell's CPU time is what it would
 * take alone (bench/training.mjs --clock=cpu).
 */
function time(fn) {
  const wall = [], cpu = [];
  const once = () => {
    const t0 = performance.now(), c0 = process.cpuUsage();
    const result = fn();
    const c = process.cpuUsage(c0);
    wall.push(performance.now() - t0);
    cpu.push((c.user + c.system) / 1000);
    return result;
  };
  let last = once();
  if (wall[0] < 5000) {
    wall.length = cpu.length = 0;
    const started = performance.now();
    do last = once();
    while (wall.length < 15 && performance.now() - started < BUDGET_MS && (wall.length < 3 || wall[0] < BUDGET_MS / 3));
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  return { ms: median(wall), cpuMs: median(cpu), runs: wall.length, last };
}

const ours = await implementation();
const forward = time(ours.forward);
let step;
try {
  step = time(ours.step);
} catch (error) {  // the forward's figures still count (e.g. a build without backward)
  step = { error: `${error.name}: ${error.message}` };
}
console.log(JSON.stringify({
  forwardMs: forward.ms, forwardCpuMs: forward.cpuMs,
  ...(step.error ? { stepError: step.error } : { stepMs: step.ms, stepCpuMs: step.cpuMs, runs: step.runs, check: [sum(step.last.dx), sum(step.last.dWo)] }),
  peakMB: process.resourceUsage().maxRSS / 1024, wasmMB: ours.memoryMB(),
}));
process.exit(0);  // the threads build's workers would keep the process alive
