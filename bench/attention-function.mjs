// scaledDotProductAttention (docs/attention-function.md) against the layer's attention stage on the
// same shapes, and against onnxruntime-web's wasm Attention (opset 23) and contrib
// MultiHeadAttention on the same projected inputs, all in one process, one thread, the SIMD build:
//   node bench/attention-function.mjs [--passes=5] [--ort] [--clock=cpu]
// The layer's attention stage is its forward pass less its four projections: forward of a layer
// with the same heads and 8 input / output features (so its projections are small), minus four
// linear() calls of the projections' sizes (the GEMM kernel the layer runs). The function reads
// [B, Hq, L, E]. A cell is the median over passes
// of the mean of a few calls after a warm-up; rows alternate within a pass. --ort needs
// `npm install --prefix bench` (onnxruntime-web).
import { loadBuild } from '../tools/load-wasm-build.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const PASSES = Number(args.passes ?? 5);
const SHAPES = [
  { name: '[1, 8, 1024, 64] causal', B: 1, Hq: 8, Hkv: 8, L: 1024, E: 64, causal: true },
  { name: '[4, 32, 512, 128] GQA 32:8', B: 4, Hq: 32, Hkv: 8, L: 512, E: 128, causal: false },
];

const mha = await loadBuild('mha-simd');
let ort = null;
if ('ort' in args) {
  ort = (await import('onnxruntime-web')).default;
  ort.env.wasm.numThreads = 1;
}
const { attentionOpModel } = await import('./onnx-graph.mjs');

const random = (n, seed) => {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  });
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// --clock=cpu: the process's CPU time instead of the wall clock (everything here runs on this
// thread), steadier where other work shares the machine.
const CPU_CLOCK = args.clock === 'cpu';
const now = () => {
  if (!CPU_CLOCK) return performance.now();
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

async function timeCalls(calls, run) {
  await run();  // warm-up
  const started = now();
  for (let i = 0; i < calls; i++) await run();
  return (now() - started) / calls;
}

console.log(`node ${process.version}, ${new Date().toISOString()}, mha-simd, 1 thread, ${PASSES} passes, ${CPU_CLOCK ? 'CPU time' : 'wall clock'}`);
for (const s of SHAPES) {
  const { B, Hq, Hkv, L, E, causal } = s;
  const D = Hq * E, KV = Hkv * E;
  const q = { data: random(B * Hq * L * E, 1), shape: [B, Hq, L, E] };
  const k = { data: random(B * Hkv * L * E, 2), shape: [B, Hkv, L, E] };
  const v = { data: random(B * Hkv * L * E, 3), shape: [B, Hkv, L, E] };
  // The layer's attention stage on the same heads: a layer with 8 input and output features and
  // free head sizes (headDim E), so its four projections are small beside the attention.
  const F = 8;
  const layer = new mha.MultiHeadAttention({ embedDim: F, numHeads: Hq, numKvHeads: Hkv, headDim: E, outputDim: F }).initialize({ seed: 1 });
  const x = { data: random(B * L * F, 4), shape: [B, L, F] };
  const wq = { data: random(D * F, 5), shape: [D, F] }, wkv = { data: random(KV * F, 6), shape: [KV, F] };
  const wo = { data: random(F * D, 7), shape: [F, D] }, attended = { data: random(B * L * D, 8), shape: [B, L, D] };
  const rows = {
    function: () => mha.scaledDotProductAttention(q, k, v, { causal }),
    'layer forward': () => layer.forward(x, null, null, { causal }),
    'layer projections': () => {
      mha.linear(x, wq);
      mha.linear(x, wkv);
      mha.linear(x, wkv);
      mha.linear(attended, wo);
    },
  };
  if (ort) {
    // The contrib op reads the 3-D form [B, L, H*E] (no GQA): the function gets the same arrays.
    const packed = (seed) => ({ data: random(B * L * D, seed), shape: [B, L, D] });
    const [q3, k3, v3] = [packed(17), packed(18), packed(19)];
    const opCalls = {
      Attention: { feeds: { Q: q, K: k, V: v }, ours: () => mha.scaledDotProductAttention(q, k, v, { causal }) },
      MultiHeadAttention: { feeds: { Q: q3, K: k3, V: v3 }, ours: () => mha.scaledDotProductAttention(q3, k3, v3, { causal, numHeads: Hq }) },
    };
    for (const op of ['Attention', 'MultiHeadAttention']) {
      if (op === 'MultiHeadAttention' && Hkv !== Hq) continue;  // the contrib op has no GQA
      try {
        const session = await ort.InferenceSession.create(attentionOpModel({ op, B, Hq, Hkv, L, S: L, Dh: E, causal }), { executionProviders: ['wasm'] });
        const input = Object.fromEntries(Object.entries(opCalls[op].feeds).map(([name, t]) => [name, new ort.Tensor('float32', t.data, t.shape)]));
        // The same computation: ort's Y against the function's output.
        const [y, ours] = [(await session.run(input)).Y.data, opCalls[op].ours().output.data];
        const error = y.reduce((m, x, i) => Math.max(m, Math.abs(x - ours[i])), 0);
        console.log(`${s.name}: ort-web ${op} vs the function, max |difference| ${error.toExponential(1)}`);
        rows[`ort-web ${op}`] = () => session.run(input);
      } catch (error) {
        console.log(`ort-web ${op}: not available (${String(error.message ?? error).split('\n')[0]})`);
      }
    }
  }
  const calls = 4 * B * Hq * L * L * E > 4e9 ? 1 : 3;  // (the GQA shape: 8.6 GFLOP a call)
  const times = Object.fromEntries(Object.keys(rows).map((r) => [r, []]));
  for (let pass = 0; pass < PASSES; pass++) {
    for (const [name, run] of Object.entries(rows)) times[name].push(await timeCalls(calls, run));
  }
  const ms = Object.fromEntries(Object.entries(times).map(([r, t]) => [r, median(t)]));
  const stage = ms['layer forward'] - ms['layer projections'];
  console.log(`\n${s.name}`);
  console.log(`  function                          ${ms.function.toFixed(1)} ms`);
  console.log(`  layer attention stage (fwd - proj) ${stage.toFixed(1)} ms  (forward ${ms['layer forward'].toFixed(1)}, projections ${ms['layer projections'].toFixed(1)})`);
  console.log(`  function / stage                   ${(ms.function / stage).toFixed(2)}`);
  for (const name of Object.keys(ms).filter((r) => r.startsWith('ort'))) {
    console.log(`  ${name.padEnd(33)} ${ms[name].toFixed(1)} ms  (${(ms[name] / ms.function).toFixed(2)}x the function's time)`);
  }
  layer.dispose();
}
