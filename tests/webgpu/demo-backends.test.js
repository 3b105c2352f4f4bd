// The demo page's backend choice (web/backends.js) on Dawn in Node (SwiftShader, a fallback
// adapter): no navigator.gpu keeps wasm and says why; a software adapter opens but is not the
// default; WebGPU runs the modes it can (the default model with the wasm numbers, generation with
// GPU caches with the wasm tokens) and names what it lacks for the rest; a destroyed device moves everything to wasm and the switch reopens one.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { init, readSafetensors } from '../../bindings/js/index.js';
import { Backends, WEBGPU_LACKS } from '../../web/backends.js';
import { GenerationSession } from '../../web/generation.js';
import { DemoModel, tokenize } from '../../web/model.js';
import { gpu } from './devices.js';

const webFile = (path) => readFileSync(new URL(`../../web/${path}`, import.meta.url));
const wasm = await init({ threads: 1 });

test('without navigator.gpu: wasm for every mode, and a note that says why', async () => {
  const backends = new Backends(wasm, { threads: 1 });
  assert.equal(await backends.openWebGpu(), false);
  assert.match(backends.note, /^WebGPU: this browser has none \(no navigator\.gpu in the worker\); running on wasm$/);
  await assert.rejects(backends.choose('webgpu'), /no navigator\.gpu/);
  const info = backends.info();
  assert.equal(info.chosen, 'wasm');
  assert.equal(info.available, false);
  assert.equal(info.adapter, null);
  for (const mode of Object.values(info.modes)) assert.deepEqual(mode, { backend: 'wasm', why: null });
  await assert.rejects(backends.choose('cuda'), { name: 'TypeError', message: "backend must be 'webgpu' or 'wasm', got cuda" });
});

test('a software adapter: opened, not the default; the switch runs the default model on it with the wasm numbers', async () => {
  globalThis.navigator = { gpu };
  const backends = new Backends(wasm, { threads: 1 });
  const lost = [];
  backends.onLost = (info) => lost.push(info);
  assert.equal(await backends.openWebGpu(), true);
  let timed = 0;
  await backends.chooseDefault(async () => { timed += 1; return 1; });
  assert.equal(timed, 0, 'a fallback adapter is not timed');
  assert.equal(backends.chosen, 'wasm');
  assert.match(backends.note, /software one \(not the default: wasm is faster\); the switch reaches it/);
  assert.equal(backends.info().adapter.isFallbackAdapter, true);
  assert.equal(backends.info().adapter.name, backends.info().adapter.description || 'google swiftshader');

  await backends.choose('webgpu');
  const { modes } = backends.info();
  for (const [mode, { backend, why }] of Object.entries(modes)) {
    assert.equal(backend, WEBGPU_LACKS[mode] ? 'wasm' : 'webgpu', mode);
    assert.equal(why, WEBGPU_LACKS[mode] ?? null, mode);
  }
  assert.deepEqual(Object.keys(WEBGPU_LACKS).sort(), []);

  const vocab = JSON.parse(webFile('model/vocab.json'));
  const model = new DemoModel(wasm, readSafetensors(new Uint8Array(webFile('model/demo-model.safetensors'))), vocab);
  const onGpu = model.copyOn(backends.gpu);
  const { ids } = tokenize('kelumi likes the red boat. kelu', vocab);
  const a = await model.forwardAsync(ids);
  const b = await onGpu.forwardAsync(ids);
  const worst = (x, y) => x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i])), 0);
  a.layers.forEach((layer, l) => {
    assert.ok(worst(layer.weights, b.layers[l].weights) <= 1e-5, `layer ${l} weights`);
    assert.ok(worst(layer.output, b.layers[l].output) <= 1e-4, `layer ${l} output`);
  });
  assert.ok(worst(a.logits, b.logits) <= 1e-4, 'logits');
  assert.deepEqual(a.layers.map((l) => l.weights), model.forward(ids).layers.map((l) => l.weights), 'forwardAsync is forward on wasm');

  // Generate: the same greedy tokens from a session whose KV caches are on the GPU.
  const greedy = async (m) => {
    const session = new GenerationSession(m);
    const tokens = [];
    for await (const step of session.generate(ids, { count: 12 })) tokens.push(step.id);
    session.dispose();
    return tokens;
  };
  assert.deepEqual(await greedy(onGpu), await greedy(model));

  backends.gpu.device.destroy();
  await assert.rejects(onGpu.forwardAsync(ids), /forwardAsync: the GPU device was lost/);
  await new Promise((resolve) => { setTimeout(resolve, 50); });
  assert.equal(lost.length, 1);
  assert.match(lost[0].note, /^the WebGPU device was lost \(destroyed[^)]*\); continuing on wasm$/);
  assert.equal(lost[0].chosen, 'wasm');
  assert.equal(backends.backendFor('default'), 'wasm');
  onGpu.dispose();

  await backends.choose('webgpu');  // a new device
  assert.equal(backends.backendFor('default'), 'webgpu');
  assert.equal(backends.note, null);
  const again = model.copyOn(backends.gpu);
  assert.ok(worst(a.logits, (await again.forwardAsync(ids)).logits) <= 1e-4);
  again.dispose();
  model.dispose();
  backends.gpu.device.destroy();
});
