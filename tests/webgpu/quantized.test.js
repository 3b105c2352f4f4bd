// Quantized weights on the GPU: a WebGPU layer with weightDtype 'int8' / 'q4' / 'f16' (or weights
// given to loadQuantized) uploads the packed bytes, scales and zero points and dequantizes in the
// kernels (gemm_int8 / gemm_q4 / gemm_f16.wgsl). Its results are the float32 math on the
// dequantized weights, so the reference is a float32 wasm layer loaded with the quantized layer's
// stateDict() (its dequantized weights), at the fixtures' tolerance (1e-5 + 1e-4 |ref|). The
// quantized wasm layer itself is that same math for prefill (its GEMM dequantizes panel slices),
// but its few-row (decode) kernel also rounds the activations to int16: there it is compared
// within 5e-4 of the output's largest magnitude (docs/quantized.md's bound).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { quantize } from '../js/quantized-reference.js';
import { modules } from './devices.js';
import { random, tensor } from './random-data.js';

const wasm = await init();
const devices = await modules();

const close = (got, want, what) => {
  assert.equal(got.length, want.length, `${what}: length`);
  got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= 1e-5 + 1e-4 * Math.abs(want[i]), `${what}[${i}]: ${x} vs ${want[i]}`));
};
const largest = (a) => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
const within = (got, want, relative, what) => {
  const bound = relative * largest(want);
  got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= bound, `${what}[${i}]: ${x} vs ${want[i]} (bound ${bound})`));
};

/** A float32 wasm layer holding `layer`'s weights as it holds them, dequantized. */
function dequantizedTwin(config, layer) {
  const { weightDtype, ...f32 } = config;
  return new wasm.MultiHeadAttention(f32).loadStateDict(layer.stateDict());
}

const CONFIGS = [
  ['self-attention, E 40 (q4: a padded block), causal', { embedDim: 40, numHeads: 4 }, { causal: true }],
  ['GQA, rotary, bias: false, E 64', { embedDim: 64, numHeads: 4, numKvHeads: 2, rotary: { dim: 8 }, bias: false }, { causal: true }],
  ['cross attention, kdim 24, vdim 72, outputDim 20', { embedDim: 32, numHeads: 2, kdim: 24, vdim: 72, outputDim: 20 }, {}],
];

for (const [label, mha] of devices) {
  describe(`quantized weights on the GPU (${label})`, () => {
    for (const dtype of ['int8', 'q4', 'f16']) {
      for (const [name, base, options] of CONFIGS) {
        test(`${dtype}: ${name}: prefill equals the wasm layer, decode its dequantized twin`, async () => {
          const config = { ...base, weightDtype: dtype };
          const rand = random(7);
          const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 3 });
          const gpu = new mha.MultiHeadAttention(config).initialize({ seed: 3 });
          assert.equal(gpu.byteSize, cpu.byteSize);
          const twin = dequantizedTwin(config, cpu);
          const E = base.embedDim, B = 2, L = 9;
          const q = tensor(rand, [B, L, E]);
          const k = base.kdim ? tensor(rand, [B, 6, base.kdim]) : null;
          const v = base.kdim ? tensor(rand, [B, 6, base.vdim]) : null;
          const got = (await gpu.forwardAsync(q, k, v, options)).output.data;
          close(got, twin.forward(q, k, v, options).output.data, 'vs the dequantized float32 layer');
          close(got, cpu.forward(q, k, v, options).output.data, 'vs the quantized wasm layer (prefill)');
          // One row (the wasm layer's few-row kernel): int16 activations on the CPU.
          const one = { data: q.data.subarray(0, E), shape: [1, 1, E] };
          const k1 = k && { data: k.data.subarray(0, 6 * base.kdim), shape: [1, 6, base.kdim] };
          const v1 = v && { data: v.data.subarray(0, 6 * base.vdim), shape: [1, 6, base.vdim] };
          const row = (await gpu.forwardAsync(one, k1, v1)).output.data;
          close(row, twin.forward(one, k1, v1).output.data, 'one row vs the dequantized float32 layer');
          within(row, cpu.forward(one, k1, v1).output.data, 5e-4, 'one row vs the quantized wasm layer');
          for (const layer of [cpu, gpu, twin]) layer.dispose();
        });
      }

      test(`${dtype}: decoding with a KV cache (flash-decoding) gives the dequantized twin's causal forward`, async () => {
        const config = { embedDim: 48, numHeads: 4, numKvHeads: 2, rotary: { dim: 12 }, weightDtype: dtype };
        const rand = random(11);
        const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 5 });
        const gpu = new mha.MultiHeadAttention(config).initialize({ seed: 5 });
        const twin = dequantizedTwin(config, cpu);
        const T = 7, x = tensor(rand, [1, T, 48]);
        const full = twin.forward(x, null, null, { causal: true }).output.data;
        const cache = gpu.createCache({ capacity: T });
        let done = 0;
        for (const n of [3, 1, 1, 1, 1]) {
          const chunk = { data: x.data.subarray(done * 48, (done + n) * 48), shape: [1, n, 48] };
          const { output } = await gpu.forwardAsync(chunk, null, null, { cache });
          close(output.data, full.subarray(done * 48, (done + n) * 48), `tokens ${done}..${done + n - 1}`);
          done += n;
        }
        for (const layer of [cpu, gpu, twin]) layer.dispose();
      });
    }

    test('loadQuantized: q4 with zero points, int8 and f16 projections mixed, as the wasm layer computes them', async () => {
      const E = 40, rand = random(21);
      const config = { embedDim: E, numHeads: 4 };
      const source = new wasm.MultiHeadAttention(config).initialize({ seed: 9 });
      const floats = source.stateDict();
      source.dispose();
      const W = floats.in_proj_weight;
      const part = (i) => W.slice(i * E * E, (i + 1) * E * E);
      const q4 = quantize('q4', part(0), E, E);
      const blocks = Math.ceil(E / 32);
      q4.zeroPoints = Uint8Array.from({ length: E * Math.ceil(blocks / 2) }, (_, i) => (i * 5 + 3) & 0xff);
      const weights = {
        q_proj_weight: q4,
        k_proj_weight: quantize('int8', part(1), E, E),
        v_proj_weight: quantize('f16', part(2), E, E),
        'out_proj.weight': quantize('q4', floats['out_proj.weight'], E, E),
        in_proj_bias: floats.in_proj_bias,
        'out_proj.bias': floats['out_proj.bias'],
      };
      const cpu = new wasm.MultiHeadAttention(config).loadQuantized(weights);
      const gpu = new mha.MultiHeadAttention(config).loadQuantized(weights);
      const twin = dequantizedTwin(config, cpu);
      const x = tensor(rand, [2, 9, E]);
      const got = (await gpu.forwardAsync(x)).output.data;
      close(got, twin.forward(x).output.data, 'vs the dequantized float32 layer');
      close(got, cpu.forward(x).output.data, 'vs the wasm layer (prefill)');
      // A loaded layer takes quantized projections alone: the GPU uploads the new ones.
      const int8 = quantize('int8', part(0), E, E);
      cpu.loadQuantized({ q_proj_weight: int8 });
      gpu.loadQuantized({ q_proj_weight: int8 });
      close((await gpu.forwardAsync(x)).output.data, cpu.forward(x).output.data, 'after replacing q');
      for (const layer of [cpu, gpu, twin]) layer.dispose();
    });

    test('bad input: the wasm layer\'s errors', async () => {
      const message = (fn) => {
        try {
          fn();
        } catch (error) {
          return [error.name, error.message];
        }
        return null;
      };
      for (const config of [{ embedDim: 8, numHeads: 2, weightDtype: 'int4' }, { embedDim: 8, numHeads: 2, weightDtype: 8 }]) {
        const want = message(() => new wasm.MultiHeadAttention(config));
        assert.ok(want);
        assert.deepEqual(message(() => new mha.MultiHeadAttention(config)), want);
      }
      const cpu = new wasm.MultiHeadAttention({ embedDim: 8, numHeads: 2 });
      const gpu = new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2 });
      const bad = [
        { in_proj_weight: { dtype: 'int8', data: new Int8Array(10), scales: new Float32Array(24) } },
        { in_proj_weight: { dtype: 'q5', data: new Uint8Array(10), scales: new Float32Array(24) } },
        { 'out_proj.weight': { dtype: 'q4', data: new Uint8Array(8 * 16), scales: new Float32Array(3) } },
      ];
      for (const weights of bad) {
        const want = message(() => cpu.loadQuantized(weights));
        assert.ok(want, JSON.stringify(Object.keys(weights)));
        assert.deepEqual(message(() => gpu.loadQuantized(weights)), want);
      }
      await assert.rejects(gpu.forwardAsync({ data: new Float32Array(8), shape: [1, 8] }), /no weights yet/);
      cpu.dispose();
      gpu.dispose();
    });
  });
}
