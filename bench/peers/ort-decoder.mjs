// onnxruntime-web's wasm backend in Node running an ONNX decoder with a KV cache
// (tools/export_onnx_decoder.py's interface) as transformers.js does: a prefill of the prompt with
// an empty past, then one token a step, the presents fed back as the next past, greedy. One
// process per thread count (ort's thread pool is fixed at its first session):
//   node bench/peers/ort-decoder.mjs <model.onnx> <threads> <prompt ids JSON> <new tokens>
// (<model.onnx>.json: the cache's sizes, written by the exporter.)
// Prints one JSON line: { ids (generated), prefillMs, decodeMs (each step), loadMs }.
import { readFileSync } from 'node:fs';
import ort from 'onnxruntime-web';

const [path, threads, promptJson, newTokens] = process.argv.slice(2);
ort.env.wasm.numThreads = Number(threads);
const loadStart = performance.now();
const session = await ort.InferenceSession.create(readFileSync(path), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
const loadMs = performance.now() - loadStart;
const pastNames = session.inputNames.filter((n) => n.startsWith('past_key_values.'));
const prompt = JSON.parse(promptJson);

/** The inputs of a step: `ids` after `past` tokens whose cache is `cache` (name -> tensor). */
function feeds(ids, past, cache) {
  const seq = ids.length, total = past + seq;
  const int64 = (values, dims) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), dims);
  return {
    input_ids: int64(ids, [1, seq]),
    attention_mask: int64(Array(total).fill(1), [1, total]),
    position_ids: int64(ids.map((_, i) => past + i), [1, seq]),
    ...cache,
  };
}

const argmaxLast = (logits) => {
  const V = logits.dims[2], row = logits.data.subarray((logits.dims[1] - 1) * V);
  let best = 0;
  for (let v = 1; v < V; v++) if (row[v] > row[best]) best = v;
  return best;
};

// The empty first past: [1, Hkv, 0, D] (the sizes the exporter wrote beside the graph).
const { numKvHeads, headDim } = JSON.parse(readFileSync(path + '.json', 'utf8'));
const empty = Object.fromEntries(pastNames.map((n) => [n, new ort.Tensor('float32', new Float32Array(0), [1, numKvHeads, 0, headDim])]));

const nextCache = (out) => Object.fromEntries(pastNames.map((n) => [n, out[n.replace('past_key_values.', 'present.')]]));
let started = performance.now();
let out = await session.run(feeds(prompt, 0, empty));
const prefillMs = performance.now() - started;
const ids = [argmaxLast(out.logits)];
const decodeMs = [];
for (let step = 1; step < Number(newTokens); step++) {
  const cache = nextCache(out);
  started = performance.now();
  out = await session.run(feeds([ids.at(-1)], prompt.length + step - 1, cache));
  decodeMs.push(performance.now() - started);
  ids.push(argmaxLast(out.logits));
}
console.log(JSON.stringify({ ids, prefillMs, decodeMs, loadMs }));
