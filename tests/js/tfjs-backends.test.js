// mha-wasm/tfjs on tfjs' cpu and wasm backends in Node: the layer's output and gradients and a
// small model.fit (tfjs-backend-scenario.js) give the same numbers on both. The cpu backend's own
// numbers are checked against tfjs-layers' Keras port in tfjs-call-forms.test.js; webgl and webgpu
// are tests/browser/tfjs-backends.test.js.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadTfjs } from '../../bench/tfjs/load-tfjs.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { backendScenario, compareScenarios } from './tfjs-backend-scenario.js';

const tf = await loadTfjs('wasm');
const api = await mhaTfjs(tf, { threads: 1 });
api.registerFastGradients({ backends: ['cpu', 'wasm'] });  // tfjs-wasm has no Embedding or Conv1D filter gradient of its own

test('the cpu and wasm backends: forward, gradients, model.fit', async () => {
  await tf.setBackend('cpu');
  const cpu = await backendScenario(tf, api);
  await tf.setBackend('wasm');
  const wasm = await backendScenario(tf, api);
  assert.deepEqual([cpu.backend, wasm.backend], ['cpu', 'wasm']);
  assert.ok(cpu.losses[2] < cpu.losses[0], `cpu: the loss falls (${cpu.losses})`);
  compareScenarios(wasm, cpu, assert);
});
