#!/usr/bin/env node
// Seconds per epoch of the tutorial's model.fit (2400 sentences, validationSplit 0.2, batch 64)
// with mha-wasm/tfjs's attention and the fast gradient kernels, on one tfjs backend.
//
//   node bench/tfjs/fit-epochs.mjs --backend=cpu|wasm [--epochs=2]
// Prints { backend, epochs, seconds_per_epoch: [...], median, cpu_seconds_per_epoch: [...], cpu_median }
// (wall time, and this process' CPU time).
import { readFileSync } from 'node:fs';

import { loadTfjs } from './load-tfjs.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { buildSentimentModel, TUTORIAL } from '../../web/sentiment-train/model.js';
import { fitTokenizer } from '../../web/sentiment-train/tokenizer.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const backend = args.backend ?? 'wasm', epochs = Number(args.epochs ?? 2);
const tf = await loadTfjs(backend);
const { multiHeadAttention, registerFastGradients } = await mhaTfjs(tf, { threads: 1 });
registerFastGradients({ backends: [backend] });
const corpus = JSON.parse(readFileSync(new URL('../../web/sentiment-train/corpus.json', import.meta.url)));
const tokenizer = fitTokenizer(corpus.train.texts);
const n = corpus.train.texts.length;
const x = tf.tensor2d(tokenizer.encodeAll(corpus.train.texts, TUTORIAL.maxLen), [n, TUTORIAL.maxLen], 'int32');
const y = tf.tensor2d(corpus.train.labels, [n, 1]);
const model = buildSentimentModel(tf, multiHeadAttention({ numHeads: TUTORIAL.numHeads, keyDim: TUTORIAL.keyDim }));
const seconds = [], cpu = [];
let started = 0, cpuStarted = 0;
// This process' CPU time (user + system): one thread, so on an idle machine about the wall time.
const cpuSeconds = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1e6; };
await model.fit(x, y, {
  epochs, batchSize: 64, validationSplit: 0.2, shuffle: true,
  callbacks: {
    onEpochBegin: async () => { started = performance.now(); cpuStarted = cpuSeconds(); },
    onEpochEnd: async () => { seconds.push((performance.now() - started) / 1000); cpu.push(cpuSeconds() - cpuStarted); },
  },
});
const median = (v) => Number([...v].sort((a, b) => a - b)[Math.floor(v.length / 2)].toFixed(2));
const round = (v) => v.map((s) => Number(s.toFixed(2)));
console.log(JSON.stringify({ backend, epochs, samples: n, seconds_per_epoch: round(seconds), median: median(seconds), cpu_seconds_per_epoch: round(cpu), cpu_median: median(cpu) }));
