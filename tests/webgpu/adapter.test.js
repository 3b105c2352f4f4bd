// The adapter under test is the one tests/stages/25-webgpu.sh asked for (MHA_WEBGPU_ADAPTER),
// with what it is known to offer: SwiftShader subgroups of 4 and no shader-f16; Mesa's lavapipe
// subgroups of 8 and shader-f16. A run on another driver (a wrong VK_ICD_FILENAMES) fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { ADAPTERS, adapterName, gpu, openAdapter } from './devices.js';

test(`the adapter is ${adapterName}, with its subgroup size and shader-f16 as expected`, async () => {
  const adapter = await openAdapter();
  const { info } = adapter;
  const expected = ADAPTERS[adapterName];
  console.log(`# WebGPU adapter: ${info.vendor} ${info.architecture} (${info.description}), subgroups ${info.subgroupMinSize}-`
    + `${info.subgroupMaxSize}, shader-f16 ${adapter.features.has('shader-f16')}`);
  assert.ok(expected.is(info), `${adapterName} expected, got ${JSON.stringify(info)}`);
  assert.equal(info.isFallbackAdapter, true);
  assert.equal(adapter.features.has('subgroups'), true);
  assert.equal(info.subgroupMinSize, expected.subgroupSize);
  assert.equal(info.subgroupMaxSize, expected.subgroupSize);
  assert.equal(adapter.features.has('shader-f16'), expected.shaderF16);
});

test('init({ backend: webgpu, gpu }) requests shader-f16 where the adapter has it', async () => {
  const mha = await init({ backend: 'webgpu', gpu });
  assert.equal(mha.features.includes('shader-f16'), ADAPTERS[adapterName].shaderF16);
  mha.device.destroy();
});
