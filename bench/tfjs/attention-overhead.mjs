#!/usr/bin/env node
// The attention layer alone at the tutorial's shape (batch 64, 32 tokens, 100 features, 4 heads x
// keyDim 128): mha-wasm/tfjs's layer (tfjs tensors in, weights as tfjs variables, gradients through
// tf.customGrad) against direct mha-wasm calls (layer.forward / backward on Float32Arrays), one
// thread, forward and forward + backward, interleaved rounds, medians.
//
//   node bench/tfjs/attention-overhead.mjs --backend=cpu|wasm [--rounds=15]
// Prints one JSON line per measurement: { what, backend, ms, direct_ms, ratio }.
import { loadTfjs } from './load-tfjs.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { stateDictFromKeras } from '../../bindings/js/index.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const backend = args.backend ?? 'wasm', rounds = Number(args.rounds ?? 15);
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
  'forward, tfjs layer': () => { const y = layer.apply(x, { value: x }); y.dataSync(); y.dispose(); },
  'forward, direct': () => direct.forward(xData, null, null).output.data,
  'forward + backward, tfjs layer': () => {
    const { value, grads } = tf.variableGrads(() => tf.sum(tf.mul(layer.apply(x, { value: x }), G)), weights);
    value.dataSync();
    tf.dispose([value, ...Object.values(grads)]);
  },
  'forward + backward, direct': () => direct.forward(xData, null, null, { grad: true }).backward(gData),
};
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let r = 0; r <= rounds; r++) {
  for (const [name, run] of Object.entries(cases)) {
    const started = performance.now();
    run();
    if (r > 0) times[name].push(performance.now() - started);  // round 0 warms up
  }
}
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
for (const what of ['forward', 'forward + backward']) {
  const ms = median(times[`${what}, tfjs layer`]), directMs = median(times[`${what}, direct`]);
  console.log(JSON.stringify({ what, backend, ms: Number(ms.toFixed(2)), direct_ms: Number(directMs.toFixed(2)), ratio: Number((ms / directMs).toFixed(3)) }));
}
