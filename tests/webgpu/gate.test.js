// The output gate (config gate: true) on WebGPU against the wasm layer, which tests/js/gate.test.js
// checks against a float64 reference: forward (self and cross attention, GQA, free head sizes),
// the step path (the gate captured and patched), backward (every gradient, the gate's included),
// and a quantized gate projection.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { modules } from './devices.js';
import { random, tensor } from './random-data.js';

const wasm = await init();
const [[label, mha]] = await modules();

function close(got, want, what, { absolute = 2e-5, relative = 2e-4 } = {}) {
  assert.equal(got.length, want.length, `${what}: length`);
  got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= absolute + relative * Math.abs(want[i]), `${what}[${i}]: ${x} vs ${want[i]}`));
}

/** The same random weights (gate biases included) in a WebGPU and a wasm layer of `config`. */
function twins(config, seed) {
  const cpu = new wasm.MultiHeadAttention(config).initialize({ seed });
  const rand = random(seed + 100);
  const sd = cpu.stateDict();
  for (const key of ['in_proj_bias', 'out_proj.bias', 'gate_proj.bias']) if (sd[key]) sd[key] = sd[key].map(rand);
  cpu.loadStateDict(sd);
  return { cpu, gpu: new mha.MultiHeadAttention(config).loadStateDict(sd) };
}

const CASES = [
  { name: 'self-attention', config: { embedDim: 16, numHeads: 2, gate: true }, B: 2, L: 5 },
  { name: 'cross-attention, GQA, free head sizes, no bias', config: { embedDim: 12, numHeads: 4, numKvHeads: 2, headDim: 3, valueHeadDim: 5, outputDim: 7, kdim: 6, vdim: 9, bias: false, gate: true }, B: 2, L: 4, S: 6 },
];

describe(`the output gate on WebGPU (${label})`, () => {
  for (const c of CASES) {
    const inputs = (rand) => {
      const { embedDim: E, kdim = E, vdim = E } = c.config;
      return [tensor(rand, [c.B, c.L, E]), c.S ? tensor(rand, [c.B, c.S, kdim]) : null, c.S ? tensor(rand, [c.B, c.S, vdim]) : null];
    };

    test(`${c.name}: forward and every captured step equal the wasm layer's`, async () => {
      const { cpu, gpu } = twins(c.config, 3);
      try {
        const [q, k, v] = inputs(random(7));
        const want = cpu.forward(q, k, v, { needWeights: true, averageWeights: false, causal: !c.S });
        const got = await gpu.forwardAsync(q, k, v, { needWeights: true, averageWeights: false, causal: !c.S });
        close(got.output.data, want.output.data, 'output');
        close(got.weights.data, want.weights.data, 'weights');
        const wantSteps = cpu.forward(q, k, v, { capture: true, causal: !c.S });
        const gotSteps = await gpu.forwardAsync(q, k, v, { capture: true, causal: !c.S });
        assert.deepEqual(Object.keys(gotSteps.captured), Object.keys(wantSteps.captured));
        for (const name of ['z', 'gate', 'result']) {
          assert.deepEqual(gotSteps.captured[name].shape, wantSteps.captured[name].shape, `${name}'s shape`);
          close(gotSteps.captured[name].data, wantSteps.captured[name].data, name);
        }
        close(gotSteps.output.data, want.output.data, 'the step path\'s output');
        // A patched gate (head 1 ablated) flows into result and the output as on the CPU.
        const gate = wantSteps.captured.gate;
        const patch = { gate: { data: new Float32Array(gate.data.length), shape: gate.shape }, heads: [1] };
        const wantPatched = cpu.forward(q, k, v, { patch, capture: ['gate'], causal: !c.S });
        const gotPatched = await gpu.forwardAsync(q, k, v, { patch, capture: ['gate'], causal: !c.S });
        close(gotPatched.captured.gate.data, wantPatched.captured.gate.data, 'patched gate');
        close(gotPatched.output.data, wantPatched.output.data, 'patched output');
        assert.ok(wantPatched.output.data.some((x, i) => Math.abs(x - want.output.data[i]) > 1e-3), 'the patch changes the output');
      } finally {
        cpu.dispose();
        gpu.dispose();
      }
    });

    test(`${c.name}: backward's gradients (gate_proj's included) equal the wasm layer's`, async () => {
      const { cpu, gpu } = twins(c.config, 5);
      try {
        const rand = random(11);
        const [q, k, v] = inputs(rand);
        const r = await gpu.forwardAsync(q, k, v, { grad: true });
        const dOut = tensor(rand, r.output.shape);
        const got = await r.backwardAsync(dOut);
        const want = cpu.forward(q, k, v, { grad: true }).backward(dOut);
        assert.deepEqual(Object.keys(got.params), Object.keys(want.params));
        assert.ok('gate_proj.weight' in got.params);
        for (const input of ['query', 'key', 'value']) {
          if (want[input]) close(got[input].data, want[input].data, `d${input}`, { absolute: 1e-4, relative: 1e-3 });
        }
        for (const key of Object.keys(want.params)) close(got.params[key], want.params[key], `d${key}`, { absolute: 1e-4, relative: 1e-3 });
      } finally {
        cpu.dispose();
        gpu.dispose();
      }
    });
  }

  test('a gate projection held as int8 (weightDtype) reads its packed bytes as the wasm layer does', async () => {
    const config = { embedDim: 32, numHeads: 2, gate: true, weightDtype: 'int8' };
    const { cpu, gpu } = twins(config, 9);
    try {
      const q = tensor(random(13), [2, 3, 32]);
      close((await gpu.forwardAsync(q, null, null)).output.data, cpu.forward(q, null, null).output.data, 'int8 output', { absolute: 1e-4, relative: 1e-3 });
    } finally {
      cpu.dispose();
      gpu.dispose();
    }
  });
});
