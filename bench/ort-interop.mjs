#!/usr/bin/env node
// onnxruntime-web and mha-wasm on one WebGPU device in Chromium (SwiftShader): each build's device
// shared (JSEP: ort.env.webgpu.device after InferenceSession.create; native onnxruntime-web/webgpu:
// our device as its execution provider's), GPU buffers passed both ways (ort's output as our
// { buffer, shape } input, our outputLocation 'gpu' output as ort.Tensor.fromGpuBuffer), no buffer
// mapped before the final read, the chain's result against the wasm layer. Needs bench/'s
// onnxruntime-web (npm ci --prefix bench).
//
//   node bench/ort-interop.mjs
import { readFile } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchBrowser } from '../tests/browser/browser.js';
import { startServer } from '../tools/serve.mjs';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };
const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp', 'Cross-Origin-Resource-Policy': 'same-origin' };
const SHAPE = { B: 2, L: 16, E: 64, H: 4 };

const { server, url } = await startServer({ port: 0 });
const browser = await launchBrowser({ gpu: true });
try {
  // The bench's own files and onnxruntime-web come from bench/, beside the package's server.
  await browser.context.route(`${url}bench/**`, async (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/bench/blank.html') return route.fulfill({ body: '<!doctype html><title>bench</title>', headers: { ...ISOLATION, 'Content-Type': 'text/html' } });
    const file = join(ROOT, path);
    if (!file.startsWith(join(ROOT, 'bench') + '/')) return route.fulfill({ status: 403 });
    try {
      return route.fulfill({ body: await readFile(file), headers: { ...ISOLATION, 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' } });
    } catch {
      return route.fulfill({ status: 404 });
    }
  });
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
