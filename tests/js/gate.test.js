// The output gate (config gate: Qwen3-Next's attn_output_gate, Keras' use_gate) on every build:
// its state-dict entries, forward and captured steps against the float64 reference
// (float64-steps.js), its gradients against central differences of that reference, quantized
// weights, the gate step's patch (a constant: no gradient through it) and the bad inputs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { loadAllBuilds } from './all-builds.js';
import { attentionSteps } from './float64-steps.js';
import { quantize } from './quantized-reference.js';
import { seededFloats } from './seeded.js';
import { assertClose, forwardOf, inputsOf } from './variant-cases.js';

const builds = await loadAllBuilds({ threadCounts: [2] });

function randomStateDict(layer, seed) {
  return Object.fromEntries(Object.entries(layer.stateDictShapes()).map(([key, shape], i) => {
    const n = shape.reduce((a, b) => a * b, 1);
    return [key, seededFloats(n, seed + i, shape.length === 2 ? 1.5 / Math.sqrt(shape[1]) : 0.5)];
  }));
}

// Configurations: self and cross attention, GQA with free head sizes, no bias, causal with the
// other variants.
const CASES = [
  { name: 'self-attention', config: { embedDim: 8, numHeads: 2, gate: true }, B: 2, L: 5 },
  { name: 'cross-attention, kdim/vdim', config: { embedDim: 6, numHeads: 3, kdim: 5, vdim: 4, gate: true }, B: 2, L: 3, S: 4 },
  { name: 'GQA, free head sizes, outputDim', config: { embedDim: 10, numHeads: 4, numKvHeads: 2, headDim: 3, valueHeadDim: 5, outputDim: 7, gate: true }, B: 1, L: 6 },
  { name: 'no bias, causal, window, softcap, sinks', config: { embedDim: 8, numHeads: 2, bias: false, slidingWindow: 3, softcap: 5, sinks: true, gate: true }, B: 2, L: 6, causal: true },
];

test('gate: true adds gate_proj.weight [H*Dv, E] (and gate_proj.bias [H*Dv] with bias) after the other keys', () => {
  const { MultiHeadAttention } = builds[0];
  const layer = new MultiHeadAttention({ embedDim: 10, numHeads: 4, headDim: 3, valueHeadDim: 5, gate: true });
  try {
    const shapes = layer.stateDictShapes();
    assert.deepEqual(Object.keys(shapes).slice(-2), ['gate_proj.weight', 'gate_proj.bias']);
    assert.deepEqual(shapes['gate_proj.weight'], [20, 10]);
    assert.deepEqual(shapes['gate_proj.bias'], [20]);
    assert.equal(layer.config.gate, true);
  } finally {
    layer.dispose();
  }
  const plain = new MultiHeadAttention({ embedDim: 8, numHeads: 2 });
  const noBias = new MultiHeadAttention({ embedDim: 8, numHeads: 2, bias: false, gate: true });
  try {
    assert.equal(plain.config.gate, undefined);
    assert.ok(!Object.keys(plain.stateDictShapes()).some((k) => k.startsWith('gate')));
    assert.deepEqual(Object.keys(noBias.stateDictShapes()).filter((k) => k.startsWith('gate')), ['gate_proj.weight']);
    // initialize() draws the gate's weights as a separate projection's (xavier uniform), bias zeros.
    const sd = noBias.initialize({ seed: 3 }).stateDict();
    const bound = Math.sqrt(6 / (8 + 8));
    assert.ok(sd['gate_proj.weight'].every((x) => Math.abs(x) <= bound) && sd['gate_proj.weight'].some((x) => x !== 0));
  } finally {
    plain.dispose();
    noBias.dispose();
  }
});

for (const build of builds) {
  describe(`the output gate on ${build.label}`, () => {
    for (const c of CASES) {
      test(`${c.name}: output, weights and every captured step equal the float64 reference's`, () => {
        build.use();
        const layer = new build.MultiHeadAttention(c.config);
        try {
          const sd = randomStateDict(layer, 7);
          layer.loadStateDict(sd);
          const inputs = inputsOf(c);
          const want = attentionSteps(layer.config, sd, inputs);
          const r = forwardOf(layer, inputs, { needWeights: true, averageWeights: false });
          assertClose(r.output.data, want.output.data, 'output');
          assertClose(r.weights.data, want.pattern.data, 'weights');
          const steps = forwardOf(layer, inputs, { capture: true });
          assert.deepEqual(Object.keys(steps.captured), ['q', 'k', 'v', 'scores', 'logits', 'pattern', 'z', 'gate', 'result']);
          assert.deepEqual(steps.captured.gate.shape, [c.B, c.L, layer.config.numHeads, layer.config.valueHeadDim]);
          for (const name of ['z', 'gate', 'result']) assertClose(steps.captured[name].data, want[name].data, name);
          assertClose(steps.output.data, want.output.data, 'output of the step path');
        } finally {
          layer.dispose();
        }
      });
    }

    test('a gate of sigmoid(+30) = 1 gives the ungated layer\'s output; sigmoid(-30) leaves out_proj\'s bias', () => {
      build.use();
      const config = { embedDim: 8, numHeads: 2 };
      const plain = new build.MultiHeadAttention(config);
      const gated = new build.MultiHeadAttention({ ...config, gate: true });
      try {
        const sd = randomStateDict(plain, 11);
        plain.loadStateDict(sd);
        const open = { ...sd, 'gate_proj.weight': new Float32Array(64), 'gate_proj.bias': new Float32Array(8).fill(30) };
        const inputs = inputsOf(CASES[0], 5);
        const want = forwardOf(plain, inputs).output.data;
        assertClose(forwardOf(gated.loadStateDict(open), inputs).output.data, Float64Array.from(want), 'open gate', { absolute: 1e-6, relative: 1e-5 });
        const shut = { ...open, 'gate_proj.bias': new Float32Array(8).fill(-30) };
        const out = forwardOf(gated.loadStateDict(shut), inputs).output.data;
        const bias = sd['out_proj.bias'];
        assertClose(out, Float64Array.from(out, (_, i) => bias[i % 8]), 'shut gate', { absolute: 1e-6, relative: 1e-5 });
      } finally {
        plain.dispose();
        gated.dispose();
      }
    });

    test('gradients of every input and parameter equal central differences of the float64 reference', () => {
      build.use();
      for (const c of CASES) {
        const layer = new build.MultiHeadAttention(c.config);
        try {
          const sd = randomStateDict(layer, 13);
          layer.loadStateDict(sd);
          const inputs = inputsOf(c, 3);
          const r = forwardOf(layer, inputs, { grad: true });
          const G = seededFloats(r.output.data.length, 99, 1);
          const g = r.backward({ data: G, shape: r.output.shape });
          // loss = sum(output * G) in float64; the derivative of entry k of `tensor` by central differences.
          const loss = () => attentionSteps(layer.config, sd, inputs).output.data.reduce((s, x, i) => s + x * G[i], 0);
          const numeric = (tensor, k) => {
            const saved = tensor[k], h = 1e-3;
            tensor[k] = saved + h;
            const up = loss();
            tensor[k] = saved - h;
            const down = loss();
            tensor[k] = saved;
            return (up - down) / (2 * h);
          };
          // A sample of entries of each tensor (every one for the gate's), float64 inputs for the differences.
          const check = (what, tensor, got) => {
            const step = what.startsWith('gate') ? 1 : Math.max(1, Math.floor(tensor.length / 12));
            for (let k = 0; k < tensor.length; k += step) {
              const want = numeric(tensor, k);
              assert.ok(Math.abs(got[k] - want) <= 2e-3 * (1 + Math.abs(want)), `${c.name}: d${what}[${k}]: ${got[k]} vs ${want}`);
            }
          };
          const wide = (t) => ({ ...t, data: Float64Array.from(t.data) });
          for (const name of ['query', 'key', 'value']) if (inputs[name]) inputs[name] = wide(inputs[name]);
          for (const key of Object.keys(sd)) sd[key] = Float64Array.from(sd[key]);
          check('query', inputs.query.data, g.query.data);
          if (inputs.key) check('key', inputs.key.data, g.key.data);
          for (const key of Object.keys(sd)) check(key, sd[key], g.params[key]);
          assert.ok(g.params['gate_proj.weight'].some((x) => x !== 0));
        } finally {
          layer.dispose();
        }
      }
    });
  });
}

describe('the gate with quantized weights, patches and bad inputs', () => {
  const { MultiHeadAttention } = builds[0];

  for (const dtype of ['f16', 'int8', 'q4']) {
    test(`weightDtype '${dtype}' quantizes the gate's projection too, and loadQuantized takes it`, () => {
      const config = { embedDim: 32, numHeads: 2, gate: true };
      const full = new MultiHeadAttention(config);
      const stored = new MultiHeadAttention({ ...config, weightDtype: dtype });
      const given = new MultiHeadAttention(config);
      try {
        const sd = randomStateDict(full, 17);
        full.loadStateDict(sd);
        stored.loadStateDict(sd);
        const inputs = { query: { data: seededFloats(2 * 4 * 32, 4, 1), shape: [2, 4, 32] }, causal: false };
        const want = forwardOf(full, inputs).output.data;
        const got = forwardOf(stored, inputs).output.data;
        assertClose(got, Float64Array.from(want), `${dtype} output`, { absolute: 0.05, relative: 0.05 });
        assert.ok(stored.byteSize < full.byteSize, 'the gate is held quantized too');
        // The layer holds what dequantize(quantize(w)) gives, the gate's weight included.
        const back = stored.stateDict()['gate_proj.weight'];
        assert.ok(back.some((x, i) => x !== sd['gate_proj.weight'][i]) || dtype === 'f16');
        // loadQuantized: the gate's projection in the canonical layout, the rest as float32.
        const projections = Object.entries(full.stateDictShapes()).filter(([, shape]) => shape.length === 2);
        const weights = { ...sd };
        for (const [key, [rows, cols]] of projections) weights[key] = quantize(dtype, sd[key], rows, cols);
        given.loadQuantized(weights);
        assert.deepEqual(forwardOf(given, inputs).output.data, got);
        // Backward of a quantized layer: input gradients only.
        const r = forwardOf(stored, inputs, { grad: true });
        const g = r.backward({ data: new Float32Array(r.output.data.length).fill(1), shape: r.output.shape });
        assert.ok(g.query.data.some((x) => x !== 0));
      } finally {
        full.dispose();
        stored.dispose();
        given.dispose();
      }
    });
  }

  test('patching the gate replaces it where the reference does, and its heads pass no gradient to gate_proj', () => {
    const layer = new MultiHeadAttention({ embedDim: 8, numHeads: 2, gate: true });
    try {
      const sd = randomStateDict(layer, 21);
      layer.loadStateDict(sd);
      const inputs = inputsOf(CASES[0], 8);
      const patchData = seededFloats(2 * 5 * 2 * 4, 31, 1);
      const patch = { gate: { data: patchData, shape: [2, 5, 2, 4] }, heads: [1] };
      const want = attentionSteps(layer.config, sd, inputs, { step: 'gate', data: patchData, heads: [1] });
      const r = forwardOf(layer, inputs, { patch, capture: ['gate'], grad: true });
      assertClose(r.output.data, want.output.data, 'patched output');
      assertClose(r.captured.gate.data, want.gate.data, 'patched gate');
      const g = r.backward({ data: seededFloats(r.output.data.length, 5, 1), shape: r.output.shape });
      // gate_proj's rows 4..7 make head 1's gate, a constant here: zero gradient; head 0's flow.
      const dW = g.params['gate_proj.weight'];
      assert.ok(dW.subarray(32).every((x) => x === 0) && dW.subarray(0, 32).some((x) => x !== 0));
      assert.ok(g.params['gate_proj.bias'].subarray(4).every((x) => x === 0));
    } finally {
      layer.dispose();
    }
  });

  test('bad inputs name the gate', () => {
    assert.throws(() => new MultiHeadAttention({ embedDim: 8, numHeads: 2, gate: 1 }), { name: 'TypeError', message: /gate must be a boolean/ });
    const plain = new MultiHeadAttention({ embedDim: 8, numHeads: 2 }).initialize();
    try {
      const x = { data: new Float32Array(16), shape: [2, 8] };
      assert.throws(() => plain.forward(x, null, null, { capture: ['gate'] }), {
        name: 'TypeError', message: "forward: capture[0]: the step 'gate' needs a layer with the output gate (config gate: true)",
      });
      assert.deepEqual(Object.keys(plain.forward(x, null, null, { capture: true }).captured), ['q', 'k', 'v', 'scores', 'logits', 'pattern', 'z', 'result']);
      assert.throws(() => plain.loadStateDict({ ...plain.stateDict(), 'gate_proj.weight': new Float32Array(64) }), {
        name: 'TypeError', message: /unexpected key 'gate_proj\.weight' \(the layer has no gate: give gate: true\)/,
      });
    } finally {
      plain.dispose();
    }
    const gated = new MultiHeadAttention({ embedDim: 8, numHeads: 2, gate: true });
    try {
      const { 'gate_proj.bias': _, ...rest } = randomStateDict(gated, 1);
      assert.throws(() => gated.loadStateDict(rest), { name: 'TypeError', message: /missing key 'gate_proj\.bias' \(expected 8 floats, shape \[8\]\)/ });
    } finally {
      gated.dispose();
    }
  });
});
