// The option walk (tests/js/option-walk.js) on the wasm layer: every config key and every forward
// option either changes what the layer does or is refused by an Error naming it.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { BASE_CONFIG, knownOptions, walkCall, walkConfig, walkOption } from './option-walk.js';

const mha = await init({ threads: 1 });

test('every config key of MultiHeadAttention works or is refused by name', async () => {
  const outcome = await walkConfig(mha.MultiHeadAttention);
  // Each works on the wasm backend (none is refused).
  assert.deepEqual(Object.values(outcome).filter((o) => o !== 'works'), [], JSON.stringify(outcome));
});

test('every forward option works or is refused by name', async () => {
  const layer = new mha.MultiHeadAttention(BASE_CONFIG).initialize();
  const x = { data: new Float32Array(8), shape: [1, 8] };
  const known = knownOptions(() => layer.forward(x, null, null, { notAnOption: 1 }));
  layer.dispose();
  const outcome = await walkCall(mha.MultiHeadAttention, known);
  assert.deepEqual(Object.values(outcome).filter((o) => o !== 'works'), [], JSON.stringify(outcome));
});

test('the walk fails an option that is accepted and ignored', async () => {
  // A layer class whose forward drops `causal`: the walk must catch it.
  class Ignoring extends mha.MultiHeadAttention {
    forward(q, k, v, { causal, ...rest } = {}) { return super.forward(q, k, v, rest); }
  }
  await assert.rejects(walkOption(Ignoring, 'causal'), /causal: accepted and ignored/);
  assert.equal(await walkOption(mha.MultiHeadAttention, 'causal'), 'works');
});
