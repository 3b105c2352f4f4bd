// `node bench/webgpu.mjs`: in headless Chromium on its WebGPU adapter, each implementation in a
// page of its own with the same weights and input, every output checked against a float64
// reference first (a wrong one is reported as wrong, not timed), median of --passes after a
// warm-up call:
// - prefill rows: one self-attention layer (projections with bias, no mask) per shape: mha-wasm's
//   WebGPU backend (subgroups requested and not), mha-wasm's wasm (1 and 2 threads) and
//   onnxruntime-web's WebGPU MultiHeadAttention (its default JSEP build, and its native
//   onnxruntime-web/webgpu build with and without subgroups);
// - decode rows: one token of a self-attention layer (MHA and GQA) against 1024 and 4096 cached
//   tokens, the cache on the GPU: our WebGPU layer's GPU KV cache, our wasm layer's cache, and
//   onnxruntime-web's com.microsoft.GroupQueryAttention graph with past_key / past_value in GPU
//   buffers and present_key / present_value kept on the GPU (both builds; the native one also with
//   its shared past/present buffer, and that with graph capture). ms per step and the bytes a
//   step must read.
//
//   node bench/webgpu.mjs [--rows=prefill,decode] [--shapes=0,1] [--decode=0,3] [--passes=3] [--only=mha-webgpu,ort-native]
//
// Needs bench/node_modules (npm ci --prefix bench, as `npm run bench` does) and dist/ (npm run build).
// Chromium's WebGPU adapter here is SwiftShader (software): such figures are for ratios between
// implementations on the same adapter, not a GPU's speed (docs/webgpu.md).
import { chromium } from 'playwright-core';

import { startServer } from '../tools/serve.mjs';
import { routeBenchFiles } from './route-bench-files.mjs';
import { float64Attention, float64DecodeStep, relativeError } from './float64-mha.mjs';
import { decodeHistory, decodeToken } from './webgpu-page.js';
import { benchWeights, decodeWeights, flops, label, randomArray } from './shapes.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const PASSES = Number(args.passes ?? 3);
const ROWS = (args.rows ?? 'prefill,decode').split(',');
const pick = (list, arg) => list.filter((_, i) => !arg || arg.split(',').map(Number).includes(i));
// Prefill shapes of the issue: self-attention (S = L), largest last.
const SHAPES = [
  { B: 1, L: 128, S: 128, E: 512, H: 8 },
  { B: 8, L: 64, S: 64, E: 256, H: 4 },
  { B: 1, L: 512, S: 512, E: 768, H: 12 },
];
const PREFILL_SHAPES = ROWS.includes('prefill') ? pick(SHAPES, args.shapes) : [];
// Decode rows: E 512, 8 query heads, with 8 key/value heads (MHA) or 2 (GQA), P cached tokens.
const DECODE_SHAPES = ROWS.includes('decode') ? pick([
  { E: 512, H: 8, Hkv: 8, P: 1024 },
  { E: 512, H: 8, Hkv: 8, P: 4096 },
  { E: 512, H: 8, Hkv: 2, P: 1024 },
  { E: 512, H: 8, Hkv: 2, P: 4096 },
], args.decode) : [];
const only = ({ name }) => !args.only || args.only.split(',').some((o) => name.startsWith(o));
const IMPLS = [
  { name: 'mha-webgpu', job: { impl: 'ours', backend: 'webgpu', subgroups: true } },
  { name: 'mha-webgpu (no subgroups)', job: { impl: 'ours', backend: 'webgpu', subgroups: false } },
  { name: 'mha-wasm × 1', job: { impl: 'ours', backend: 'wasm', threads: 1 } },
  { name: 'mha-wasm × 2', job: { impl: 'ours', backend: 'wasm', threads: 2 } },
  { name: 'ort-web JSEP webgpu', job: { impl: 'ort', build: 'jsep' } },
  { name: 'ort-web native webgpu', job: { impl: 'ort', build: 'native', subgroups: true } },
  { name: 'ort-web native webgpu (no subgroups)', job: { impl: 'ort', build: 'native', subgroups: false } },
].filter(only);
const DECODE_IMPLS = [
  ...IMPLS.filter(({ job }) => job.impl === 'ours'),
  { name: 'ort-web JSEP webgpu GQA', job: { impl: 'ort', build: 'jsep' } },
  { name: 'ort-web native webgpu GQA', job: { impl: 'ort', build: 'native', subgroups: true } },
  { name: 'ort-web native webgpu GQA (no subgroups)', job: { impl: 'ort', build: 'native', subgroups: false } },
  { name: 'ort-web native webgpu GQA (no subgroups, shared past/present)', job: { impl: 'ort', build: 'native', subgroups: false, shared: true } },
  { name: 'ort-web native webgpu GQA (no subgroups, shared past/present, graph capture)', job: { impl: 'ort', build: 'native', subgroups: false, shared: true, capture: true } },
].filter(only);
const FLAGS = ['--headless', '--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--enable-unsafe-webgpu', '--enable-features=Vulkan',
  '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader', '--use-angle=swiftshader'];

/** The bytes a layer must at least move: weights, biases, input and output (float32). */
const minBytes = ({ B, L, E }) => 4 * (4 * E * E + 4 * E + 2 * B * L * E);
/** A decode step's reads: the cache's keys and values (P + 1 tokens), and the weights and biases. */
const cacheBytes = ({ E, H, Hkv, P }) => 4 * 2 * (P + 1) * Hkv * (E / H);
const weightBytes = ({ E, H, Hkv }) => { const KV = Hkv * (E / H); return 4 * (2 * E * E + 2 * KV * E + 2 * E + 2 * KV); };
const decodeLabel = ({ E, H, Hkv, P }) => `E ${E} x H ${H}${Hkv !== H ? ` / ${Hkv} kv (GQA)` : ''}, ${P} cached`;
const MiB = (n) => `${(n / 2 ** 20).toFixed(2)} MiB`;
// The past keys and values of a decode row (the float64 reference's), served to the pages.
const pastData = new Map();

const { server, url } = await startServer({ port: 0 });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: FLAGS });
try {
  const context = await browser.newContext();
  await routeBenchFiles(context, url, pastData);
  /** Runs each of `impls` on `shape` in a page of its own; `want`: the float64 reference. */
  const measure = async (shape, impls, want, extra = {}) => {
    const results = [];
    for (const { name, job } of impls) {
      const page = await context.newPage();
      try {
        await page.goto(`${url}bench/blank.html`);
        const r = await page.evaluate(async (j) => (await import('/bench/webgpu-page.js')).run(j), { ...job, ...extra, shape, passes: PASSES });
        if (r.skipped) { results.push({ name, note: r.skipped }); continue; }
        const bytes = Buffer.from(r.output, 'base64');  // (a small one is a view of Node's shared pool)
        const got = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
        const error = relativeError(got, want);
        results.push(error > 1e-4 ? { name, note: `wrong: error ${error.toExponential(1)} of the output's scale` } : { name, ms: r.ms, error, device: r.device });
      } catch (e) {
        results.push({ name, note: `failed: ${String(e.message).split('\n')[0].slice(0, 400)}` });
      } finally {
        await page.close();
      }
    }
    const ours = results.find((r) => r.name === 'mha-webgpu' && r.ms);
    return results.map((r) => ({ shape, ...r, ratio: ours && r.ms ? r.ms / ours.ms : null }));
  };
  const rows = [];
  for (const shape of PREFILL_SHAPES) {
    const { B, L, E } = shape;
    rows.push(...await measure(shape, IMPLS, float64Attention(shape, benchWeights(E), randomArray(B * L * E, 7))));
  }
  const decodeRows = [];
  for (const shape of DECODE_SHAPES) {
    const { output, pastKey, pastValue } = float64DecodeStep(shape, decodeWeights(shape), decodeHistory(shape), decodeToken(shape));
    const data = `/bench/data/${shape.Hkv}-${shape.P}`;
    pastData.set(`${data}-past_key.bin`, Buffer.from(pastKey.buffer));
    pastData.set(`${data}-past_value.bin`, Buffer.from(pastValue.buffer));
    decodeRows.push(...await measure(shape, DECODE_IMPLS, output, { data }));
  }
  const adapter = [...rows, ...decodeRows].find((r) => r.name.startsWith('mha-webgpu') && r.device)?.device ?? 'unknown adapter';
  if (rows.length) console.log(`\nSelf-attention with projections, headless Chromium, WebGPU adapter: ${adapter}; median of ${PASSES} after a warm-up`);
  console.log(`${new Date().toISOString()}, load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}\n`);
  if (rows.length) console.log('| shape (BxLxExH) | implementation | ms | GFLOPS | its time / mha-webgpu\'s | max error / scale | FLOPs | min bytes |');
  if (rows.length) console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    const f = flops(r.shape);
    console.log(`| ${label(r.shape)} | ${r.name} | ${r.ms ? r.ms.toFixed(1) : r.note} | ${r.ms ? (f / r.ms / 1e6).toFixed(2) : ''} | `
      + `${r.ratio ? r.ratio.toFixed(2) : ''} | ${r.ms ? r.error.toExponential(1) : ''} | ${(f / 1e6).toFixed(0)} M | ${(minBytes(r.shape) / 2 ** 20).toFixed(1)} MiB |`);
  }
  if (decodeRows.length) {
    console.log(`\nDecode steps (one token, self-attention with projections, the cache on the GPU for WebGPU rows), adapter: ${adapter}; median of ${PASSES} after a warm-up\n`);
    console.log('| layer, cache | implementation | ms / step | its time / mha-webgpu\'s | max error / scale | cache bytes read | weight bytes |');
    console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
    for (const r of decodeRows) {
      console.log(`| ${decodeLabel(r.shape)} | ${r.name} | ${r.ms ? r.ms.toFixed(1) : r.note} | ${r.ratio ? r.ratio.toFixed(2) : ''} | `
        + `${r.ms ? r.error.toExponential(1) : ''} | ${MiB(cacheBytes(r.shape))} | ${MiB(weightBytes(r.shape))} |`);
    }
  }
} finally {
  await browser.close();
  server.close();
}
