// onnxruntime-web's wasm backend running the decode step of bench/decode.mjs (one new token,
// batch 1) as its users must: the cache goes in as past_key / past_value and the grown one comes
// back as present_key / present_value every call (bench/onnx-graph.mjs decodeStepModel, plain ops
// with a Concat), with float32 weights or its own quantized ones (DECODE_GRAPHS: MatMulNBits 4-bit,
// DynamicQuantizeMatMul int8). One process per thread count (ort's thread pool is fixed at its
// first session).
//   node bench/decode-ort.mjs <threads> <models JSON> [steps] [graphs, e.g. f32,q4,int8] [layers] [wall|cpu]
// With `layers` > 1 a step runs that many distinct layers' sessions one after another (ms per
// layer), as bench/decode.mjs --layers streams distinct weights.
// Prints one JSON line: per model, graph and cache length the median ms, and the largest
// difference of its output from mha-wasm's float32 layer holding the graph's weights dequantized
// (the same history in both), relative to that output's largest magnitude: a check that both run
// the same layer with the same weights.
import ort from 'onnxruntime-web';
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { quantizeInt8, quantizeQ4, storedStateDict } from '../tests/js/quantized-reference.js';
import { decodeStepModel, graphDtype, projectionWeights } from './onnx-graph.mjs';
import { randomArray, randomStateDict } from './shapes.mjs';

const [threads, modelsJson, stepsArg, graphsArg, layersArg] = process.argv.slice(2);
const STEPS = Number(stepsArg ?? 30), GRAPHS = (graphsArg ?? 'f32').split(','), LAYERS = Number(layersArg ?? 1);
// cpu: the process's CPU time per step (1 thread: ort-web then runs on this thread alone).
const now = process.argv[7] === 'cpu' ? () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; } : () => performance.now();
// As bench/decode.mjs: 200 warm-up steps (V8 optimizes the JavaScript side late), but at most
// WARMUP_MS of them and TIMED_MS of timed ones (at least 5): MatMulNBits runs at ~100 ms a step
// in this build, and 230 such steps per cell would take the benchmark's whole budget.
const WARMUP = 200, WARMUP_MS = 2000, TIMED_MS = 4000;
ort.env.wasm.numThreads = Number(threads);
const { MultiHeadAttention } = await loadBuild('mha-simd');

// Quantizing in JavaScript is slow at Llama's size: once per weight matrix, not per session.
const memo = new Map();
const memoized = (fn, tag) => (w, rows, cols) => {
  const id = `${tag} ${w.buffer.byteLength} ${w.byteOffset} ${w.length} ${w[0]} ${w[w.length - 1]}`;
  if (!memo.has(id)) memo.set(id, fn(w, rows, cols));
  return memo.get(id);
};
const quantizers = { int8: memoized(quantizeInt8, 'int8'), q4: memoized(quantizeQ4, 'q4') };

const results = [];
for (const model of JSON.parse(modelsJson)) {
  const { E, H, Hkv } = model;
  const Dh = E / H;
  const config = { embedDim: E, numHeads: H, numKvHeads: Hkv };
  const shapes = new MultiHeadAttention(config);
  // The weights of bench/decode.mjs's layers: the same seeds, so both run the same stack.
  const stack = Array.from({ length: LAYERS }, (_, l) => randomStateDict(shapes, l));
  const stateShapes = shapes.stateDictShapes();
  shapes.dispose();
  for (const graph of GRAPHS) {
    // The reference: our float32 layer with the graph's weights dequantized (layer 0's).
    const reference = new MultiHeadAttention(config).loadStateDict(storedStateDict(graphDtype(graph), stack[0], stateShapes));
    const cache = reference.createCache({ capacity: Math.max(...model.lengths) });
    for (const length of model.lengths) {
      const P = length - 1;
      // The past: up to 127 tokens, the same history in both (ORT's past_key / past_value projected
      // here in JS), so their outputs can be compared; longer caches are random (the time does not
      // depend on the values), and the reference's cache is filled by a prefill of random tokens.
      const checked = P <= 127;
      cache.reset();
      const history = randomArray(P * E, 5);
      for (let done = 0; done < P;) {
        const n = Math.min(512, P - done);
        reference.forward({ data: history.subarray(done * E, (done + n) * E), shape: [1, n, E] }, null, null, { cache });
        done += n;
      }
      const pastKey = checked ? new Float32Array(Hkv * P * Dh) : randomArray(Hkv * P * Dh, 11);
      const pastValue = checked ? new Float32Array(Hkv * P * Dh) : randomArray(Hkv * P * Dh, 12);
      if (checked) projectHistory(storedStateDict(graphDtype(graph), stack[0], stateShapes), { E, H, Hkv }, history, P, pastKey, pastValue);
      const step = randomArray(E, 7);
      const expected = reference.forward({ data: step, shape: [1, 1, E] }, null, null, { cache }).output.data;
      const sessions = [];
      for (const weights of stack) {
        sessions.push(await ort.InferenceSession.create(decodeStepModel({ E, H, Hkv, P }, weights, { graph, quantizers }),
          { executionProviders: ['wasm'], graphOptimizationLevel: 'all' }));
      }
      const feeds = () => ({
        query: new ort.Tensor('float32', step, [1, 1, E]),
        past_key: new ort.Tensor('float32', pastKey, [1, Hkv, P, Dh]),
        past_value: new ort.Tensor('float32', pastValue, [1, Hkv, P, Dh]),
      });
      const times = [];
      let output;
      const started = performance.now();
      let warmup = WARMUP, timedStart = null;
      for (let s = 0; ; s++) {
        if (timedStart === null && (s >= warmup || performance.now() - started > WARMUP_MS)) {
          warmup = s;
          timedStart = performance.now();
        }
        if (timedStart !== null && times.length >= (performance.now() - timedStart > TIMED_MS ? 5 : STEPS)) break;
        const t0 = now();
        for (const [l, session] of sessions.entries()) {
          const result = await session.run(feeds());
          if (l === 0) output = result.output.data;
          // The grown cache, taken back as a caller must.
          if (result.present_key.data.length !== Hkv * length * Dh) throw new Error('present_key has the wrong size');
          if (result.present_value.data.length !== Hkv * length * Dh) throw new Error('present_value has the wrong size');
        }
        if (timedStart !== null) times.push((now() - t0) / sessions.length);
      }
      for (const session of sessions) await session.release();
      times.sort((a, b) => a - b);
      let diff = null;
      if (checked) {
        let worst = 0, scale = 0;
        for (let i = 0; i < E; i++) {
          worst = Math.max(worst, Math.abs(output[i] - expected[i]));
          scale = Math.max(scale, Math.abs(expected[i]));
        }
        diff = worst / scale;
      }
      results.push({ name: model.name, graph, length, ms: times[Math.floor(times.length / 2)], steps: times.length, diff });
    }
    reference.dispose();
  }
}
console.log(JSON.stringify(results));
process.exit(0);  // ort-web's worker threads would keep the process alive

/** K and V of the history tokens, [Hkv, P, Dh] each, in float64 sums rounded to float32. */
function projectHistory(weights, { E, H, Hkv }, x, P, keys, values) {
  const Dh = E / H, KV = Hkv * Dh;
  const { wk, wv } = projectionWeights(weights, E, KV);
  const b = weights.in_proj_bias;
  for (let t = 0; t < P; t++) {
    for (let o = 0; o < KV; o++) {
      let k = b[E + o], v = b[E + KV + o];
      for (let i = 0; i < E; i++) {
        k += wk[o * E + i] * x[t * E + i];
        v += wv[o * E + i] * x[t * E + i];
      }
      const h = Math.floor(o / Dh), d = o % Dh;
      keys[(h * P + t) * Dh + d] = k;
      values[(h * P + t) * Dh + d] = v;
    }
  }
}
