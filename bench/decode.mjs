// Decoding with a KV cache: one new token per call, batch 1, on the wasm builds, with float32 weights
// and with each quantized weightDtype (int8, q4, f16: docs/quantized.md).
//   node --no-liftoff bench/decode.mjs [--threads=2] [--steps=30] [--passes=3] [--layers=1] [--only=Qwen]
//     [--dtypes=f32,int8,q4,f16] [--ort-graphs=f32,int8,q4] [--peer=no] [--clock=cpu] [--simd=relaxed]
// --clock=cpu: the one-thread cells (ours and the peer's) in the process's CPU time instead of
// wall time (robust when other tenants share the cores; a step's waits are then not counted).
// (--no-liftoff: every wasm function optimized from the start, ours and onnxruntime-web's alike;
// otherwise the first rows run partly on V8's baseline code and the numbers depend on row order)
// For each layer shape and cache length: the median ms of a one-token forward with a cache
// already holding `length - 1` tokens, the bytes such a step must read (the layer's weights
// plus the cache's keys and values) and the rate that makes (GB/s). --layers=N runs the step
// over a stack of N distinct layers (per-layer ms), as a real model streams its weights from
// memory instead of re-reading one layer that stays in the last-level cache.
// The bound, in the same run: bench/stream-read.mjs's wasm streaming read of a buffer larger than
// the last-level cache, 1 and N threads; bound ms = bytes / that rate, and bound / ours >= 0.7 is
// the target (1 = the step reads its bytes as fast as the machine can stream them).
// The peer, in the same run: onnxruntime-web's wasm backend on the same step, 1 and N threads
// (bench/decode-ort.mjs, one process each; the cache passed in and taken back every call), with
// float32 weights and with its own quantized graphs of the same quantized weights (MatMulNBits
// 4-bit blocks of 32; DynamicQuantizeMatMul int8; --ort-graphs=...,q4-acc4 adds MatMulNBits with
// accuracy_level 4). A quantized table compares with the fastest of its quantized graphs.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadBuild } from '../tools/load-wasm-build.mjs';
import { randomArray, randomStateDict } from './shapes.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const THREADS = Number(args.threads ?? 2), STEPS = Number(args.steps ?? 30), LAYERS = Number(args.layers ?? 1);
// Passes over every row, ours and the peer's alternating; a cell is the median of its passes'
// medians (this VM's neighbours slow it for seconds at a time: one pass can catch a whole row).
const PASSES = Number(args.passes ?? 3);
const ONLY = args.only ?? '';  // --only=Qwen: the models whose name contains it
const ASKED_DTYPES = (args.dtypes ?? 'f32,int8,q4,f16').split(',');
const CPU_CLOCK = args.clock === 'cpu';
const cpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
// Warm-up steps before the timed ones (ours and the peer's alike): a decoder runs for hundreds of
// steps, and its JavaScript side (argument checks, copies) is optimized by V8 only after many
// calls. With 3, a GPT-2-like one-token step measured 0.20-0.30 ms against 0.15 ms steady.
const WARMUP = 200;

const MODELS = [
  { name: 'Qwen2.5-0.5B-like', E: 896, H: 14, Hkv: 2, lengths: [1, 128, 1024, 4096] },
  { name: 'Llama-3.2-1B-like', E: 2048, H: 32, Hkv: 8, lengths: [1, 128, 1024, 4096] },
  { name: 'GPT-2-like', E: 768, H: 12, Hkv: 12, lengths: [1, 128, 1024] },
].filter((m) => m.name.includes(ONLY));

function makeLayers(MultiHeadAttention, { E, H, Hkv }, count, dtype) {
  return Array.from({ length: count }, (_, l) => {
    const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: Hkv, ...(dtype === 'f32' ? {} : { weightDtype: dtype }) });
    return layer.loadStateDict(randomStateDict(layer, l));
  });
}

/**
 * Bytes of weights a step reads from a layer of `dtype`: the four projections in the dtype's
 * format (data and scales) and the float32 biases. (layer.byteSize also counts the panels' padding
 * and, for float32, the copy of the weights that stateDict and backward read.)
 */
function weightBytes({ E, H, Hkv }, dtype) {
  const KV = (E / H) * Hkv, matrices = [[E, E], [KV, E], [KV, E], [E, E]];
  const perMatrix = ([rows, cols]) => ({
    f32: 4 * rows * cols, f16: 2 * rows * cols, int8: rows * cols + 4 * rows, q4: rows * Math.ceil(cols / 32) * (16 + 4),
  })[dtype];
  return matrices.reduce((n, m) => n + perMatrix(m), 0) + 4 * (2 * E + 2 * KV);
}

/** Median ms per layer of one decode step at `length` cached tokens (after the append). */
function measure(layers, caches, E, length, now = () => performance.now()) {
  for (const [i, layer] of layers.entries()) {  // fill each cache to length - 1
    const cache = caches[i];
    cache.reset();
    for (let done = 0; done < length - 1;) {
      const n = Math.min(512, length - 1 - done);
      layer.forward({ data: randomArray(n * E, 5 + done), shape: [1, n, E] }, null, null, { cache });
      done += n;
    }
  }
  const step = { data: randomArray(E, 7), shape: [1, 1, E] }, out = new Float32Array(E);
  const times = [];
  for (let s = 0; s < WARMUP + STEPS; s++) {
    const t0 = now();
    for (const [i, layer] of layers.entries()) layer.forward(step, null, null, { cache: caches[i], out });
    const ms = (now() - t0) / layers.length;
    for (const cache of caches) cache.truncate(length - 1);
    if (s >= WARMUP) times.push(ms);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const streamScript = new URL('./stream-read.mjs', import.meta.url).pathname;
const stream = JSON.parse(execFileSync(process.execPath, [streamScript, String(THREADS)], { encoding: 'utf8' }).trim());
process.stderr.write(`wasm streaming read: ${stream[1].toFixed(1)} GB/s on 1 thread, ${stream[THREADS].toFixed(1)} on ${THREADS}\n`);

// --simd=relaxed: our relaxed-SIMD builds (tools/load-wasm-build.mjs turns V8's flag on in Node 20).
const SIMD = args.simd === 'relaxed' ? 'mha-relaxed-simd' : 'mha-simd';
const builds = [[SIMD, 1], [`${SIMD}-threads`, THREADS]];
const loaded = [];
for (const [name, threads] of builds) {
  const { module, MultiHeadAttention } = await loadBuild(name);
  loaded.push({ name, threads, module, MultiHeadAttention });
}
// The dtypes this build takes (a build before quantized weights: float32 only).
const DTYPES = ASKED_DTYPES.filter((dtype) => {
  if (dtype === 'f32') return true;
  if (!loaded[0].module.LayerHandle.prototype.loadQuantized) {
    process.stderr.write(`weightDtype '${dtype}': not measured (this build predates quantized weights)\n`);
    return false;
  }
  try {
    new loaded[0].MultiHeadAttention({ embedDim: 32, numHeads: 1, weightDtype: dtype }).dispose();
    return true;
  } catch (error) {
    process.stderr.write(`weightDtype '${dtype}': not measured (${error.message})\n`);
    return false;
  }
});
// A cell: per dtype, the bytes a step reads (weights + the float32 cache's keys and values) and
// each thread count's pass medians.
const rows = MODELS.map((model) => {
  const cacheBytes = (length) => 4 * 2 * length * model.Hkv * (model.E / model.H);
  return {
    model,
    row: model.lengths.map((length) => Object.fromEntries([['length', length], ...DTYPES.map((dtype) => [dtype, {
      bytes: weightBytes(model, dtype) + cacheBytes(length), cacheBytes: cacheBytes(length), 1: [], [THREADS]: [],
    }])])),
  };
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// The peer (never at the same time as ours: the machine's cores are shared).
const ortInstalled = args.peer !== 'no' && existsSync(new URL('./node_modules/onnxruntime-web/package.json', import.meta.url));
// Its quantized graphs run when we measure a quantized dtype: every quantized table compares with them.
const ORT_GRAPHS = args['ort-graphs']?.split(',') ?? ['f32', ...(DTYPES.length > 1 ? ['int8', 'q4'] : [])];
const peerRuns = {};
const worstDiff = {};  // per graph: the largest relative difference from the dequantized float32 reference
function measurePeer() {
  for (const threads of [1, THREADS]) {
    const script = new URL('./decode-ort.mjs', import.meta.url).pathname;
    const out = execFileSync(process.execPath, [...process.execArgv, script, String(threads), JSON.stringify(MODELS), String(STEPS),
      ORT_GRAPHS.join(','), String(LAYERS), threads === 1 && CPU_CLOCK ? 'cpu' : 'wall'], { encoding: 'utf8', maxBuffer: 1 << 24 });
    for (const r of JSON.parse(out.trim().split('\n').pop())) {
      (peerRuns[`${r.name} ${r.length} ${threads} ${r.graph}`] ??= []).push(r.ms);
      if (r.diff !== null) worstDiff[r.graph] = Math.max(worstDiff[r.graph] ?? 0, r.diff);
    }
  }
}

for (let pass = 1; pass <= PASSES; pass++) {
  for (const { model, row } of rows) {
    for (const { threads, module, MultiHeadAttention } of loaded) {
      if (module.setNumThreads) module.setNumThreads(threads);
      await new Promise((resolve) => { setTimeout(resolve, 200); });  // new pthreads start once the main thread yields
      for (const dtype of DTYPES) {
        const layers = makeLayers(MultiHeadAttention, model, LAYERS, dtype);
        const caches = layers.map((l) => l.createCache({ capacity: Math.max(...model.lengths) }));
        for (const cell of row) {
          cell[dtype][threads].push(measure(layers, caches, model.E, cell.length, threads === 1 && CPU_CLOCK ? cpuMs : undefined));
        }
        for (const l of layers) l.dispose();
      }
    }
  }
  process.stderr.write(`pass ${pass}/${PASSES}: measured ours\n`);
  if (ortInstalled) {
    measurePeer();
    process.stderr.write(`pass ${pass}/${PASSES}: measured onnxruntime-web\n`);
  }
}
for (const { row } of rows) for (const cell of row) for (const dtype of DTYPES) for (const t of [1, THREADS]) cell[dtype][t] = median(cell[dtype][t]);
const peer = Object.fromEntries(Object.entries(peerRuns).map(([key, runs]) => [key, median(runs)]));
const hasPeer = Object.keys(peer).length > 0;
const layersText = `${LAYERS} distinct layer${LAYERS > 1 ? 's' : ''}, ms per layer${CPU_CLOCK ? ' (1 thread: CPU ms)' : ''}; median of ${PASSES} passes`;

console.log(`\n#### Decoding: one token per call with a KV cache, batch 1, fp32 (${layersText})\n`);
console.log(`wasm streaming read (bench/stream-read.mjs, 256 MiB): ${stream[1].toFixed(1)} GB/s on 1 thread, `
  + `${stream[THREADS].toFixed(1)} GB/s on ${THREADS}; bound = bytes / that rate\n`);
const hasF32Peer = hasPeer && ORT_GRAPHS.includes('f32');
console.log(`| layer like | cached tokens | bytes read | 1 thread ms | GB/s | bound / ours | ${THREADS} threads ms | GB/s | bound / ours | ${THREADS}T vs 1T |`
  + `${hasF32Peer ? ` ORT-web 1T ms | vs ORT-web 1T | ORT-web ${THREADS}T ms | vs ORT-web ${THREADS}T |` : ''}`);
console.log(`|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|${hasF32Peer ? '---:|---:|---:|---:|' : ''}`);
const modelLabel = (model) => `${model.name} (E ${model.E}, ${model.H} heads, ${model.Hkv} kv)`;
for (const { model, row } of rows) {
  for (const { length, f32: cell } of row) {
    if (!cell) continue;
    const gbs = (ms) => (cell.bytes / (ms * 1e6)).toFixed(1);
    const bound = (threads, ms) => (cell.bytes / (stream[threads] * 1e6) / ms).toFixed(2);
    const ort1 = peer[`${model.name} ${length} 1 f32`], ortN = peer[`${model.name} ${length} ${THREADS} f32`];
    console.log(`| ${modelLabel(model)} | ${length} | ${(cell.bytes / 2 ** 20).toFixed(1)} MiB | `
      + `${cell[1].toFixed(3)} | ${gbs(cell[1])} | ${bound(1, cell[1])} | ${cell[THREADS].toFixed(3)} | ${gbs(cell[THREADS])} | ${bound(THREADS, cell[THREADS])} | `
      + `${(cell[1] / cell[THREADS]).toFixed(2)}x |`
      + `${hasF32Peer ? ` ${ort1.toFixed(3)} | ${(ort1 / cell[1]).toFixed(2)}x | ${ortN.toFixed(3)} | ${(ortN / cell[THREADS]).toFixed(2)}x |` : ''}`);
  }
}

// The quantized tables: our step against our float32 step (same run) and against the fastest of
// onnxruntime-web's quantized graphs at the same cache length and thread count.
const quantizedGraphs = ORT_GRAPHS.filter((g) => g !== 'f32');
const fastestPeer = (model, length, threads) => {
  let best = null;
  for (const graph of quantizedGraphs) {
    const ms = peer[`${model.name} ${length} ${threads} ${graph}`];
    if (ms !== undefined && (best === null || ms < best.ms)) best = { ms, graph };
  }
  return best;
};
const hasQuantizedPeer = hasPeer && quantizedGraphs.length > 0;
for (const dtype of DTYPES.filter((d) => d !== 'f32')) {
  console.log(`\n#### Decoding with weightDtype '${dtype}' (${layersText})\n`);
  console.log(`| layer like | cached tokens | bytes read | 1 thread ms | vs f32 | bound / ours | ${THREADS} threads ms | vs f32 | bound / ours |`
    + `${hasQuantizedPeer ? ` ORT-web quantized 1T ms | vs ORT-web 1T | ORT-web ${THREADS}T ms | vs ORT-web ${THREADS}T |` : ''}`);
  console.log(`|---|---:|---:|---:|---:|---:|---:|---:|---:|${hasQuantizedPeer ? '---:|---:|---:|---:|' : ''}`);
  for (const { model, row } of rows) {
    for (const { length, [dtype]: cell, f32 } of row) {
      const bound = (threads, ms) => (cell.bytes / (stream[threads] * 1e6) / ms).toFixed(2);
      const vsF32 = (threads) => (f32 ? `${(f32[threads] / cell[threads]).toFixed(2)}x` : '');
      const peerCells = (threads) => {
        const best = fastestPeer(model, length, threads);
        return best ? ` ${best.ms.toFixed(3)} (${best.graph}) | ${(best.ms / cell[threads]).toFixed(2)}x |` : ' | |';
      };
      console.log(`| ${modelLabel(model)} | ${length} | ${(cell.bytes / 2 ** 20).toFixed(1)} MiB | `
        + `${cell[1].toFixed(3)} | ${vsF32(1)} | ${bound(1, cell[1])} | ${cell[THREADS].toFixed(3)} | ${vsF32(THREADS)} | ${bound(THREADS, cell[THREADS])} |`
        + `${hasQuantizedPeer ? `${peerCells(1)}${peerCells(THREADS)}` : ''}`);
    }
  }
}
if (hasPeer) {
  const version = JSON.parse((await import('node:fs')).readFileSync(new URL('./node_modules/onnxruntime-web/package.json', import.meta.url), 'utf8')).version;
  console.log(`\nonnxruntime-web ${version}: plain ops with a Concat of past and new K/V (bench/onnx-graph.mjs decodeStepModel); `
    + 'projections: f32 MatMul, q4 com.microsoft MatMulNBits (bits 4, block 32), int8 com.microsoft DynamicQuantizeMatMul, '
    + 'on the same quantized weights as ours. Its output against our float32 layer holding the same weights (dequantized), '
    + 'largest difference relative to the output\'s largest magnitude on every row with up to 128 cached tokens: '
    + `${Object.entries(worstDiff).map(([graph, d]) => `${graph} ${d.toExponential(1)}`).join(', ')}`
    + `${worstDiff.int8 !== undefined ? ' (int8: DynamicQuantizeMatMul also quantizes the activations to 8 bits)' : ''}.`);
} else {
  console.log('\n(onnxruntime-web is not installed: `npm ci --prefix bench` adds the peer columns.)');
}
process.exit(0);
