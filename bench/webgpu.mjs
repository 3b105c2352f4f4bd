// `node bench/webgpu.mjs`: one self-attention layer (projections with bias, no mask) per shape, in
// headless Chromium on its WebGPU adapter: mha-wasm's WebGPU backend (subgroups requested and not),
// mha-wasm's wasm (1 and 2 threads) and onnxruntime-web's WebGPU MultiHeadAttention (its default
// JSEP build, and its native onnxruntime-web/webgpu build with and without subgroups), each in a
// page of its own, the same weights and input. Every output is checked against a float64
// reference first: a wrong one is reported as wrong, not timed. Median of --passes after a warm-up.
//
//   node bench/webgpu.mjs [--shapes=0,1] [--passes=3] [--only=mha-webgpu,ort-native]
//
// Needs bench/node_modules (npm ci --prefix bench, as `npm run bench` does) and dist/ (npm run build).
// Chromium's WebGPU adapter here is SwiftShader (software): such figures are for ratios between
// implementations on the same adapter, not a GPU's speed (docs/webgpu.md).
import { readFile } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

import { startServer } from '../tools/serve.mjs';
import { float64Attention, relativeError } from './float64-mha.mjs';
import { benchWeights, flops, label, randomArray } from './shapes.mjs';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const PASSES = Number(args.passes ?? 3);
// Prefill shapes of the issue: self-attention (S = L), largest last.
const SHAPES = [
  { B: 1, L: 128, S: 128, E: 512, H: 8 },
  { B: 8, L: 64, S: 64, E: 256, H: 4 },
  { B: 1, L: 512, S: 512, E: 768, H: 12 },
].filter((_, i) => !args.shapes || args.shapes.split(',').map(Number).includes(i));
const IMPLS = [
  { name: 'mha-webgpu', job: { impl: 'ours', backend: 'webgpu', subgroups: true } },
  { name: 'mha-webgpu (no subgroups)', job: { impl: 'ours', backend: 'webgpu', subgroups: false } },
  { name: 'mha-wasm × 1', job: { impl: 'ours', backend: 'wasm', threads: 1 } },
  { name: 'mha-wasm × 2', job: { impl: 'ours', backend: 'wasm', threads: 2 } },
  { name: 'ort-web JSEP webgpu', job: { impl: 'ort', build: 'jsep' } },
  { name: 'ort-web native webgpu', job: { impl: 'ort', build: 'native', subgroups: true } },
  { name: 'ort-web native webgpu (no subgroups)', job: { impl: 'ort', build: 'native', subgroups: false } },
].filter(({ name }) => !args.only || args.only.split(',').some((o) => name.startsWith(o)));
const FLAGS = ['--headless', '--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--enable-unsafe-webgpu', '--enable-features=Vulkan',
  '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader', '--use-angle=swiftshader'];
const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };
const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp', 'Cross-Origin-Resource-Policy': 'same-origin' };

/** The bytes a layer must at least move: weights, biases, input and output (float32). */
const minBytes = ({ B, L, E }) => 4 * (4 * E * E + 4 * E + 2 * B * L * E);

const { server, url } = await startServer({ port: 0 });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: FLAGS });
try {
  const context = await browser.newContext();
  // The bench's own files and onnxruntime-web come from bench/, beside the package's server.
  await context.route(`${url}bench/**`, async (route) => {
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
  const rows = [];
  for (const shape of SHAPES) {
    const { B, L, E } = shape;
    const want = float64Attention(shape, benchWeights(E), randomArray(B * L * E, 7));
    const results = [];
    for (const { name, job } of IMPLS) {
      const page = await context.newPage();
      try {
        await page.goto(`${url}bench/blank.html`);
        const r = await page.evaluate(async (j) => (await import('/bench/webgpu-page.js')).run(j), { ...job, shape, passes: PASSES });
        if (r.skipped) { results.push({ name, note: r.skipped }); continue; }
        const got = new Float32Array(Buffer.from(r.output, 'base64').buffer.slice(0));
        const error = relativeError(got, want);
        results.push(error > 1e-4 ? { name, note: `wrong: error ${error.toExponential(1)} of the output's scale` } : { name, ms: r.ms, error, device: r.device });
      } catch (e) {
        results.push({ name, note: `failed: ${String(e.message).split('\n')[0].slice(0, 120)}` });
      } finally {
        await page.close();
      }
    }
    const ours = results.find((r) => r.name === 'mha-webgpu' && r.ms);
    for (const r of results) rows.push({ shape, ...r, ratio: ours && r.ms ? r.ms / ours.ms : null });
  }
  const adapter = rows.find((r) => r.name.startsWith('mha-webgpu') && r.device)?.device ?? 'unknown adapter';
  console.log(`\nSelf-attention with projections, headless Chromium, WebGPU adapter: ${adapter}; median of ${PASSES} after a warm-up`);
  console.log(`${new Date().toISOString()}, load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}\n`);
  console.log('| shape (BxLxExH) | implementation | ms | GFLOPS | its time / mha-webgpu\'s | max error / scale | FLOPs | min bytes |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    const f = flops(r.shape);
    console.log(`| ${label(r.shape)} | ${r.name} | ${r.ms ? r.ms.toFixed(1) : r.note} | ${r.ms ? (f / r.ms / 1e6).toFixed(2) : ''} | `
      + `${r.ratio ? r.ratio.toFixed(2) : ''} | ${r.ms ? r.error.toExponential(1) : ''} | ${(f / 1e6).toFixed(0)} M | ${(minBytes(r.shape) / 2 ** 20).toFixed(1)} MiB |`);
  }
} finally {
  await browser.close();
  server.close();
}
