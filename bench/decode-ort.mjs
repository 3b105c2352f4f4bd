// onnxruntime-web's wasm backend running the decode step of bench/decode.mjs (one new token,
// batch 1, fp32) as its users must: the cache goes in as past_key / past_value and the grown one
// comes back as present_key / present_value every call (bench/onnx-graph.mjs decodeStepModel, plain
// ops with a Concat). One process per thread count (ort's thread pool is fixed at its first session).
//   node bench/decode-ort.mjs <threads> <models JSON> [steps]
// Prints one JSON line: per model and cache length the median ms, and the largest difference of
// its output from mha-wasm's on the same weights and cache (a check that both run the same layer).
import ort from 'onnxruntime-web';
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { decodeStepModel, projectionWeights } from './onnx-graph.mjs';
import { randomArray, randomStateDict } from './shapes.mjs';

const [threads, modelsJson, stepsArg] = process.argv.slice(2);
const STEPS = Number(stepsArg ?? 30);
const WARMUP = 200;  // as bench/decode.mjs
ort.env.wasm.numThreads = Number(threads);
const { MultiHeadAttention } = await loadBuild('mha-simd');
const results = [];
for (const model of JSON.parse(modelsJson)) {
  const { E, H, Hkv } = model;
  const Dh = E / H;
  const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: Hkv });
  const weights = randomStateDict(layer, 0);
  layer.loadStateDict(weights);
  const cache = layer.createCache({ capacity: Math.max(...model.lengths) });
  for (const length of model.lengths) {
    const P = length - 1;
    // The past: up to 127 tokens, the same history in both (ORT's past_key / past_value projected
    // here in JS), so their outputs can be compared; longer caches are random (the time does not
    // depend on the values), and mha-wasm's cache is filled by a prefill of random tokens.
    const checked = P <= 127;
    cache.reset();
    const history = randomArray(P * E, 5);
    for (let done = 0; done < P;) {
      const n = Math.min(512, P - done);
      layer.forward({ data: history.subarray(done * E, (done + n) * E), shape: [1, n, E] }, null, null, { cache });
      done += n;
    }
    const pastKey = checked ? new Float32Array(Hkv * P * Dh) : randomArray(Hkv * P * Dh, 11);
    const pastValue = checked ? new Float32Array(Hkv * P * Dh) : randomArray(Hkv * P * Dh, 12);
    if (checked) projectHistory(weights, { E, H, Hkv }, history, P, pastKey, pastValue);
    const step = randomArray(E, 7);
    const ours = layer.forward({ data: step, shape: [1, 1, E] }, null, null, { cache }).output.data;
    const session = await ort.InferenceSession.create(decodeStepModel({ E, H, Hkv, P }, weights),
      { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
    const feeds = () => ({
      query: new ort.Tensor('float32', step, [1, 1, E]),
      past_key: new ort.Tensor('float32', pastKey, [1, Hkv, P, Dh]),
      past_value: new ort.Tensor('float32', pastValue, [1, Hkv, P, Dh]),
    });
    const times = [];
    let output;
    for (let s = 0; s < WARMUP + STEPS; s++) {
      const t0 = performance.now();
      const result = await session.run(feeds());
      output = result.output.data;
      if (result.present_key.data.length !== Hkv * length * Dh) throw new Error("present_key has the wrong size");  // the grown cache, taken back as a caller must
      if (result.present_value.data.length !== Hkv * length * Dh) throw new Error("present_value has the wrong size");
      if (s >= WARMUP) times.push(performance.now() - t0);
    }
    await session.release();
    times.sort((a, b) => a - b);
    let diff = checked ? 0 : null;
    for (let i = 0; checked && i < E; i++) diff = Math.max(diff, Math.abs(output[i] - ours[i]));
    results.push({ name: model.name, length, ms: times[Math.floor(times.length / 2)], diff });
  }
  layer.dispose();
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
