// The WebGPU backend in Chromium (headless, SwiftShader's WebGPU adapter): PyTorch fixtures
// through forwardAsync on a device with subgroups and one without, the same numbers as in Node
// (within the fixtures' tolerance of PyTorch; tests/webgpu/ runs all of them in Node).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';

import { init } from '../../bindings/js/index.js';
import { startServer } from '../../tools/serve.mjs';
import { caseOptions, layerConfig, loadFixtures, worstError, worstGradientError } from '../js/fixtures.js';
import { CHROMIUM } from './browser.js';

const FLAGS = ['--headless', '--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--enable-unsafe-webgpu', '--enable-features=Vulkan',
  '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader', '--use-angle=swiftshader'];
const NAMES = ['self_weights_per_head', 'kdim_vdim', 'masks_combined', 'attn_float_3d', 'gqa', 'fully_masked_attn_row',
  'free_head_sizes_cross_gqa', 'gpt_oss_sinks_window_rotary_gqa', 'phi_partial_rotary_interleaved_alibi_softcap',
  'rotary_left_padded_positions'];
const { tolerance, cases, gradientTolerance, gradientCases } = loadFixtures();
const chosen = cases.filter((c) => NAMES.includes(c.name));

let server, context, page, profile;
before(async () => {
  ({ server } = await startServer({ port: 0 }));
  profile = await mkdtemp(join(tmpdir(), 'mha-webgpu-chromium-'));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });
  page = await context.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
});
after(async () => {
  await context?.close();
  server?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
});

/** Runs the cases in the page on a device with (or without) subgroups; returns each output and weights. */
async function runInPage(subgroups) {
  const plain = (t) => t && { data: Array.from(t.data), shape: t.shape, kind: t.data.constructor.name };
  const input = chosen.map((c) => ({
    name: c.name, config: layerConfig(c), stateDict: Object.fromEntries(Object.entries(c.stateDict).map(([k, v]) => [k, Array.from(v)])),
    query: plain(c.tensors.query), key: plain(c.tensors.key), value: plain(c.tensors.value),
    options: Object.fromEntries(Object.entries(caseOptions(c)).map(([k, v]) => [k, v?.data ? plain(v) : v])),
  }));
  return page.evaluate(async ({ input, subgroups }) => {
    const { init } = await import('/bindings/js/index.js');
    const adapter = await navigator.gpu.requestAdapter();
    const device = await adapter.requestDevice({ requiredFeatures: subgroups ? ['subgroups'] : [] });
    const mha = await init({ backend: 'webgpu', device });
    const typed = (t) => t && { data: new globalThis[t.kind](t.data), shape: t.shape };
    const results = [];
    for (const c of input) {
      const layer = new mha.MultiHeadAttention(c.config);
      layer.loadStateDict(Object.fromEntries(Object.entries(c.stateDict).map(([k, v]) => [k, new Float32Array(v)])));
      const options = Object.fromEntries(Object.entries(c.options).map(([k, v]) => [k, v?.kind ? typed(v) : v]));
      const { output, weights } = await layer.forwardAsync(typed(c.query), typed(c.key), typed(c.value), options);
      results.push({ output: Array.from(output.data), weights: weights && Array.from(weights.data) });
      layer.dispose();
    }
    return { results, features: mha.features, architecture: mha.adapterInfo.architecture };
  }, { input, subgroups });
}

for (const subgroups of [true, false]) {
  test(`${chosen.length} fixtures in Chromium's WebGPU ${subgroups ? 'with' : 'without'} subgroups match PyTorch`, async () => {
    const { results, features, architecture } = await runInPage(subgroups);
    assert.equal(architecture, 'swiftshader');
    assert.equal(features.includes('subgroups'), subgroups);
    chosen.forEach((c, n) => {
      const e = worstError(Float32Array.from(results[n].output), c.tensors.output.data, tolerance);
      assert.ok(e.ratio <= 1, `${c.name}: output[${e.index}] off by ${e.absolute}`);
      if (c.tensors.weights) {
        const w = worstError(Float32Array.from(results[n].weights), c.tensors.weights.data, tolerance);
        assert.ok(w.ratio <= 1, `${c.name}: weights[${w.index}] off by ${w.absolute}`);
      }
    });
  });
}

test('decoding with a KV cache in Chromium (flash-decoding over 2 chunks) gives the wasm layer\'s full forward', async () => {
  const config = { embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: { dim: 4 } };
  const T = 150, E = 16;
  const x = Float32Array.from({ length: T * E }, (_, i) => Math.sin(i * 0.37));
  const wasm = await init();
  const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 1 });
  const want = cpu.forward({ data: x, shape: [1, T, E] }, null, null, { causal: true }).output.data;
  const stateDict = Object.fromEntries(Object.entries(cpu.stateDict()).map(([k, v]) => [k, Array.from(v)]));
  cpu.dispose();
  const got = await page.evaluate(async ({ config, stateDict, x, T, E }) => {
    const { init: initInPage } = await import('/bindings/js/index.js');
    const mha = await initInPage({ backend: 'webgpu' });
    const layer = new mha.MultiHeadAttention(config);
    layer.loadStateDict(Object.fromEntries(Object.entries(stateDict).map(([k, v]) => [k, new Float32Array(v)])));
    const cache = layer.createCache({ capacity: T });
    const out = [];
    for (const [first, n] of [[0, T - 3], [T - 3, 1], [T - 2, 2]]) {
      const { output } = await layer.forwardAsync({ data: new Float32Array(x.slice(first * E, (first + n) * E)), shape: [1, n, E] },
        null, null, { cache });
      out.push(...output.data);
    }
    layer.dispose();
    return out;
  }, { config, stateDict, x: Array.from(x), T, E });
  const e = worstError(Float32Array.from(got), want, tolerance);
  assert.ok(e.ratio <= 1, `output[${e.index}] off by ${e.absolute}`);
});

test('the backward pass in Chromium (grad: true, backwardAsync): two gradient fixtures match PyTorch\'s autograd', async () => {
  const plain = (t) => t && { data: Array.from(t.data), shape: t.shape, kind: t.data.constructor.name };
  const chosenGrad = gradientCases.filter((c) => ['grad_gpt_oss_sinks_window_rotary_gqa', 'grad_kpm_bool'].includes(c.name));
  assert.equal(chosenGrad.length, 2);
  const input = chosenGrad.map((c) => ({
    config: layerConfig(c), stateDict: Object.fromEntries(Object.entries(c.stateDict).map(([k, v]) => [k, Array.from(v)])),
    query: plain(c.tensors.query), key: plain(c.tensors.key), value: plain(c.tensors.value), dOut: plain(c.tensors.gradOutput),
    options: Object.fromEntries(Object.entries(caseOptions(c, { grad: true })).map(([k, v]) => [k, v?.data ? plain(v) : v])),
  }));
  const results = await page.evaluate(async (input) => {
    const { init } = await import('/bindings/js/index.js');
    const mha = await init({ backend: 'webgpu' });
    const typed = (t) => t && { data: new globalThis[t.kind](t.data), shape: t.shape };
    const out = [];
    for (const c of input) {
      const layer = new mha.MultiHeadAttention(c.config);
      layer.loadStateDict(Object.fromEntries(Object.entries(c.stateDict).map(([k, v]) => [k, new Float32Array(v)])));
      const options = Object.fromEntries(Object.entries(c.options).map(([k, v]) => [k, v?.kind ? typed(v) : v]));
      const r = await layer.forwardAsync(typed(c.query), typed(c.key), typed(c.value), options);
      const g = await r.backwardAsync({ data: new Float32Array(c.dOut.data), shape: r.output.shape });
      out.push({
        query: Array.from(g.query.data), key: g.key && Array.from(g.key.data), value: g.value && Array.from(g.value.data),
        params: Object.fromEntries(Object.entries(g.params).map(([k, v]) => [k, Array.from(v)])),
      });
      layer.dispose();
    }
    return out;
  }, input);
  chosenGrad.forEach((c, n) => {
    const expect = (got, want, what) => {
      const e = worstGradientError(Float32Array.from(got), want, gradientTolerance, c.reductionLength);
      assert.ok(e.ratio <= 1, `${c.name}: d${what}[${e.index}] off by ${e.absolute}`);
    };
    expect(results[n].query, c.gradients.query.data, 'query');
    for (const name of ['key', 'value']) if (c.gradients[name]) expect(results[n][name], c.gradients[name].data, name);
    assert.deepEqual(Object.keys(results[n].params), Object.keys(c.paramGradients));
    for (const [name, want] of Object.entries(c.paramGradients)) expect(results[n].params[name], want, name);
  });
});
