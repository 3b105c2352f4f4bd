#!/usr/bin/env node
// mha-wasm/tfjs on each tfjs backend (bench/tfjs/backend-bench.js): the attention layer alone,
// the cost of moving a tensor between the backend and the CPU (the layer computes on the CPU: it
// reads its inputs back and hands its output to tfjs as a new tensor), and an epoch of the
// tutorial's model. cpu and wasm in Node (one thread); webgl and webgpu in Chromium on SwiftShader
// (this machine has no GPU: SwiftShader is the CPU emulating one, so its figures say what moving
// data costs relative to the rest, not what a GPU would take).
//
//   node bench/tfjs/backends.mjs [--backends=cpu,wasm,webgl,webgpu] [--rounds=5] [--samples=640]
// Prints one JSON line per backend, then a markdown table.
import { readFile } from 'node:fs/promises';

import { loadTfjs } from './load-tfjs.js';
import { measureBackend } from './backend-bench.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { buildSentimentModel, initializeAttentionLikeDense, TUTORIAL } from '../../web/sentiment-train/model.js';
import { fitTokenizer } from '../../web/sentiment-train/tokenizer.js';
import { launchBrowser } from '../../tests/browser/browser.js';
import { startServer } from '../../tools/serve.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const backends = (args.backends ?? 'cpu,wasm,webgl,webgpu').split(',');
const options = { rounds: Number(args.rounds ?? 5), samples: Number(args.samples ?? 640) };
const corpus = JSON.parse(await readFile(new URL('../../web/sentiment-train/corpus.json', import.meta.url), 'utf8'));
const results = [];
const report = (r, where) => { r.where = where; results.push(r); console.log(JSON.stringify(r)); };

const inNode = backends.filter((b) => b === 'cpu' || b === 'wasm');
if (inNode.length) {
  const tf = await loadTfjs(inNode.includes('wasm') ? 'wasm' : 'cpu');
  const api = await mhaTfjs(tf, { threads: 1 });
  api.registerFastGradients({ backends: ['cpu', 'wasm'] });
  for (const backend of inNode) {
    await tf.setBackend(backend);
    report(await measureBackend(tf, api, { buildSentimentModel, initializeAttentionLikeDense, fitTokenizer, TUTORIAL, corpus }, options), 'Node');
  }
}

// webgpu-shared: tfjs' webgpu backend with mhaTfjs(tf, { webgpu: true }): the attention on mha-wasm's
// WebGPU backend on tfjs' device, tfjs' GPU tensors in and out (no readback).
const inChromium = backends.filter((b) => b === 'webgl' || b === 'webgpu' || b === 'webgpu-shared');
if (inChromium.length) {
  const { server, url } = await startServer({ port: 0 });
  const browser = await launchBrowser({ gpu: true });
  try {
    for (const backend of inChromium) {
      const page = await browser.context.newPage();  // (a page each: one tfjs, bound once by mhaTfjs)
      await page.goto(`${url}/style.css`);
      await page.addScriptTag({ url: '/node_modules/@tensorflow/tfjs/dist/tf.min.js' });
      await page.addScriptTag({ url: '/node_modules/@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js' });
      report(await page.evaluate(async ({ source, backend, corpus, options }) => {
        const measure = new Function(`return ${source}`)();
        const { mhaTfjs } = await import('/bindings/js/tfjs.js');
        const { buildSentimentModel, initializeAttentionLikeDense, TUTORIAL } = await import('/sentiment-train/model.js');
        const { fitTokenizer } = await import('/sentiment-train/tokenizer.js');
        const shared = backend === 'webgpu-shared';
        if (!(await window.tf.setBackend(shared ? 'webgpu' : backend))) throw new Error(`tfjs backend ${backend} did not start`);
        const api = await mhaTfjs(window.tf, { threads: 1, webgpu: shared });
        return { ...await measure(window.tf, api, { buildSentimentModel, initializeAttentionLikeDense, fitTokenizer, TUTORIAL, corpus }, options), backend };
      }, { source: measureBackend.toString().replace(/^async function measureBackend/, 'async function'), backend, corpus, options }), 'Chromium (SwiftShader)');
    }
  } finally {
    await browser.close();
    server.close();
  }
}

console.log(`\n| backend | where | layer forward ms | layer forward + backward ms | read back 64x32x100 ms | upload 64x32x100 ms | epoch of ${options.samples} sentences (${results[0]?.steps_per_epoch} steps) s |`);
console.log('|---|---|---:|---:|---:|---:|---:|');
for (const r of results) {
  console.log(`| ${r.backend} | ${r.where} | ${r.forward_ms} | ${r.forward_backward_ms} | ${r.readback_ms} | ${r.upload_ms} | ${r.epoch_s} |`);
}
