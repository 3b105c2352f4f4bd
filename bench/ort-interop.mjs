#!/usr/bin/env node
// onnxruntime-web and mha-wasm on one WebGPU device in Chromium (SwiftShader): each build's device
// shared (JSEP: ort.env.webgpu.device after InferenceSession.create; native onnxruntime-web/webgpu:
// our device as its execution provider's), GPU buffers passed both ways (ort's output as our
// { buffer, shape } input, our outputLocation 'gpu' output as ort.Tensor.fromGpuBuffer), no buffer
// mapped before the final read, the chain's result against the wasm layer. Needs bench/'s
// onnxruntime-web (npm ci --prefix bench).
//
//   node bench/ort-interop.mjs

import { launchBrowser } from '../tests/browser/browser.js';
import { startServer } from '../tools/serve.mjs';
import { routeBenchFiles } from './route-bench-files.mjs';

const SHAPE = { B: 2, L: 16, E: 64, H: 4 };

const { server, url } = await startServer({ port: 0 });
const browser = await launchBrowser({ gpu: true });
try {
  await routeBenchFiles(browser.context, url);
  for (const build of ['jsep', 'native']) {
    const page = await browser.context.newPage();
    await page.goto(`${url}bench/blank.html`);
    try {
      console.log(JSON.stringify(await page.evaluate(async (job) => (await import('/bench/ort-interop-page.js')).run(job), { build, shape: SHAPE })));
    } catch (error) {
      console.log(JSON.stringify({ build, failed: String(error.message).split('\n')[0] }));
    }
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}
