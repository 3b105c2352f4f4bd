#!/usr/bin/env node
// Seconds per training step of the Keras tutorial's sentiment model (batch 64, Adam) on one tfjs
// backend, for the rows of issue 26's speed table. One backend per process (bench/tfjs/run.mjs
// runs both and prints the table).
//
//   node bench/tfjs/training-steps.mjs --backend=cpu|wasm [--steps=3] [--slow-steps=1] [--rows=a,b]
// Prints one JSON line per row: { row, backend, seconds (median wall time per step), cpu_seconds (the
// same in this process' CPU time), steps }. Rows that take
// tens of seconds a step on this backend run --slow-steps steps with no warm-up step.
import { readFileSync } from 'node:fs';

import { loadTfjs } from './load-tfjs.js';
import { referenceAttentionLayers } from './reference-attention.js';
import { buildSentimentModel, TUTORIAL } from '../../web/sentiment-train/model.js';
import { fitTokenizer } from '../../web/sentiment-train/tokenizer.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const backend = args.backend ?? 'cpu';
const steps = Number(args.steps ?? 3), slowSteps = Number(args['slow-steps'] ?? 1);
const tf = await loadTfjs(backend);
const { registerFastGradients } = await import('../../bindings/js/tfjs/kernels.js');
const { mhaTfjs } = await import('../../bindings/js/tfjs.js');
const { OpsAttention, IdentityAttention } = referenceAttentionLayers(tf);
const mha = await mhaTfjs(tf, { threads: 1 });

const corpus = JSON.parse(readFileSync(new URL('../../web/sentiment-train/corpus.json', import.meta.url)));
const tokenizer = fitTokenizer(corpus.train.texts);
const BATCH = 64;
const x = tf.tensor2d(tokenizer.encodeAll(corpus.train.texts.slice(0, BATCH), TUTORIAL.maxLen), [BATCH, TUTORIAL.maxLen], 'int32');
const y = tf.tensor2d(corpus.train.labels.slice(0, BATCH), [BATCH, 1]);

const attention = {
  identity: () => new IdentityAttention({ name: 'attention' }),
  ops: () => new OpsAttention({ numHeads: TUTORIAL.numHeads, keyDim: TUTORIAL.keyDim, name: 'attention' }),
  mha: () => mha.multiHeadAttention({ numHeads: TUTORIAL.numHeads, keyDim: TUTORIAL.keyDim, name: 'attention' }),
};
// [row name, attention, frozen layers, fast gradient kernels registered, slow on this backend]
const ROWS = [
  ['everything, attention as identity', 'identity', [], false, true],
  ['Embedding frozen, attention as identity', 'identity', ['embedding'], false, true],
  ['Conv1D frozen, attention as identity', 'identity', ['conv1d'], false, true],
  ['Embedding and Conv1D frozen, attention from tfjs ops', 'ops', ['embedding', 'conv1d'], false, true],
  ['Embedding and Conv1D frozen, attention as identity', 'identity', ['embedding', 'conv1d'], false, false],
  ['everything, attention from tfjs ops (tfjs alone)', 'ops', [], false, true],
  ['fast kernels: everything, attention as identity', 'identity', [], true, false],
  ['fast kernels: everything, attention from tfjs ops', 'ops', [], true, backend === 'cpu'],
  ['fast kernels: everything, mha-wasm attention', 'mha', [], true, false],
];
const only = args.rows ? args.rows.split(',').map(Number) : null;

/** This process' CPU time (user + system), in seconds: what other jobs on a shared machine inflate far less than the wall time. */
function cpuSeconds() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

for (const [i, [row, kind, frozen, fast, slow]] of ROWS.entries()) {
  if (only && !only.includes(i)) continue;
  const registration = fast ? registerFastGradients(tf, { backends: [backend] }) : null;
  const model = buildSentimentModel(tf, attention[kind]());
  for (const name of frozen) model.getLayer(name).trainable = false;
  model.compile({ optimizer: tf.train.adam(0.001), loss: 'binaryCrossentropy', metrics: ['accuracy'] });
  const count = slow ? slowSteps : steps;
  const times = [], cpuTimes = [];
  let failure = null;
  try {
    // Step 0 warms up, except in slow rows (tens of seconds a step): their first step is timed.
    const warmUp = slow ? 0 : 1;
    for (let s = 1 - warmUp; s <= count; s++) {
      const started = performance.now(), cpuStarted = cpuSeconds();
      await model.trainOnBatch(x, y);
      if (s > 0) {
        times.push((performance.now() - started) / 1000);
        cpuTimes.push(cpuSeconds() - cpuStarted);
      }
    }
  } catch (error) {  // e.g. tfjs-wasm has no kernel for a gradient the step needs
    failure = `cannot run: ${error.message.split('\n')[0]}`;
  }
  model.dispose();
  registration?.restore();
  console.log(JSON.stringify(failure ? { row, backend, seconds: null, note: failure } : { row, backend, seconds: median(times), cpu_seconds: median(cpuTimes), steps: count }));
}
