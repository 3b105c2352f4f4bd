#!/usr/bin/env node
// The attention layer alone at the tutorial's shape (batch 64, 32 tokens, 100 features, 4 heads x
// keyDim 128): mha-wasm/tfjs's layer (tfjs tensors in, weights as tfjs variables, gradients through
// tf.customGrad) against direct mha-wasm calls (layer.forward / backward on Float32Arrays), one
// thread, forward and forward + backward, interleaved rounds, medians.
//
//   node bench/tfjs/attention-overhead.mjs --backend=cpu|wasm [--rounds=15] [--clock=wall|cpu]
// Prints one JSON line per measurement: { what, backend, clock, ms, direct_ms, ratio }. --clock=cpu
// times each call by this process' CPU time (process.cpuUsage: user + system), which other jobs on
// a shared machine inflate far less than the wall time.
import { loadTfjs } from './load-tfjs.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { stateDictFromKeras } from '../../bindings/js/index.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const backend = args.backend ?? 'wasm', rounds = Number(args.rounds ?? 15), clock = args.clock ?? 'wall';
if (clock !== 'wall' && clock !== 'cpu') throw new Error(`--clock must be wall or cpu, got ${clock}`);
const cpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
const now = clock === 'cpu' ? cpuMs : () => performance.now();
const tf = await loadTfjs(backend);
const { multiHeadAttention, module: mha } = await mhaTfjs(tf, { threads: 1 });
const [B, T, E, H, D] = [64, 32, 100, 4, 128];

const layer = multiHeadAttention({ numHeads: H, keyDim: D });
const x = tf.randomNormal([B, T, E]), G = tf.randomNormal([B, T, E]);
layer.apply(x, { value: x }).dispose();  // builds it
const weights = layer.trainableWeights.map((w) => w.read());
const direct = new mha.MultiHeadAttention({ embedDim: E, numHeads: H, headDim: D });
const names = ['query/kernel', 'query/bias', 'key/kernel', 'key/bias', 'value/kernel', 'value/bias', 'attention_output/kernel', 'attention_output/bias'];
direct.loadStateDict(stateDictFromKeras(Object.fromEntries(names.map((n, i) => [n, { data: weights[i].dataSync(), shape: weights[i].shape }]))));
const xData = { data: x.dataSync().slice(), shape: [B, T, E] }, gData = { data: G.dataSync().slice(), shape: [B, T, E] };

const cases = {
  // Each side ends with its result in hand: a tensor (cpu and wasm run synchronously, so it is
  // computed), or the direct call's Float32Arrays.
  'forward, tfjs layer': () => layer.apply(x, { value: x }).dispose(),
  'forward, direct': () => direct.forward(xData, null, null).output.data,
  // The gradient of the weights for dOut = G, as the direct call gets it: tfjs' engine.gradients with
  // dy given (what model.fit's optimizer runs, minus the loss' own ops, which are not the layer's).
  'forward + backward, tfjs layer': () => {
    const { value, grads } = tf.engine().gradients(() => layer.apply(x, { value: x }), weights, G);
    tf.dispose([value, ...grads]);
  },
  'forward + backward, direct': () => direct.forward(xData, null, null, { grad: true }).backward(gData),
};
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let r = 0; r <= rounds; r++) {
  for (const [name, run] of Object.entries(cases)) {
    const started = now();
    run();
    if (r > 0) times[name].push(now() - started);  // round 0 warms up
  }
}
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
for (const what of ['forward', 'forward + backward']) {
  const ms = median(times[`${what}, tfjs layer`]), directMs = median(times[`${what}, direct`]);
  console.log(JSON.stringify({ what, backend, clock, ms: Number(ms.toFixed(2)), direct_ms: Number(directMs.toFixed(2)), ratio: Number((ms / directMs).toFixed(3)) }));
}
