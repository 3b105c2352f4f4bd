// The option walk (tests/js/option-walk.js) on the WebGPU layer: every config key and every
// forwardAsync option (outputLocation included) either changes what the layer does or is refused
// by an Error naming it.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { BASE_CONFIG, knownOptions, walkCall, walkConfig } from '../js/option-walk.js';
import { modules } from './devices.js';

const [[label, mha]] = await modules();

test(`every config key of the WebGPU MultiHeadAttention works or is refused by name (${label})`, async () => {
  const outcome = await walkConfig(mha.MultiHeadAttention);
  // (Every one works, PyTorch's batchFirst, addBiasKv and addZeroAttn included.)
  assert.deepEqual(Object.entries(outcome).filter(([, o]) => o !== 'works').map(([k]) => k), [], JSON.stringify(outcome));
});

test(`every forwardAsync option works or is refused by name (${label})`, async () => {
  const layer = new mha.MultiHeadAttention(BASE_CONFIG).initialize();
  const x = { data: new Float32Array(8), shape: [1, 8] };
  const known = await (async () => {
    try {
      await layer.forwardAsync(x, null, null, { notAnOption: 1 });
    } catch (error) {
      return knownOptions(() => { throw error; });
    }
    throw new Error('an unknown option was accepted');
  })();
  layer.dispose();
  const outcome = await walkCall(mha.MultiHeadAttention, known, { outputLocation: { value: 'gpu' } });
  // (Every one works, PyTorch's staticK and staticV included.)
  assert.deepEqual(Object.entries(outcome).filter(([, o]) => o !== 'works').map(([k]) => k), [], JSON.stringify(outcome));
});
