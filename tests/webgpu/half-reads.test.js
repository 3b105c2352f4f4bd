// Reading float16 data on the GPU (bindings/js/webgpu/half-reads.js): an f16 KV cache's halves are
// read by the attention kernels as they are (f16 where the device has shader-f16, packed u32
// words unpacked otherwise; no float32 copy), and f16 weights likewise. On lavapipe (shader-f16)
// the two devices of devices.js cover both reads; on SwiftShader, the packed one twice. Checked:
// which read a device gets; a whole sequence through an f16 cache in one call (flash_attention
// and attention_weights on the halves) equals the same tokens one by one (flash-decoding on the
// halves) and the wasm layer's f16 cache; f16 weights equal their dequantized float32 twin.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { halfReadValues } from '../../bindings/js/webgpu/half-reads.js';
import { modules } from './devices.js';
import { random, tensor } from './random-data.js';

const wasm = await init();
const devices = await modules();

const close = (got, want, what) => {
  assert.equal(got.length, want.length, `${what}: length`);
  got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= 1e-5 + 1e-4 * Math.abs(want[i]), `${what}[${i}]: ${x} vs ${want[i]}`));
};
/** Rows first .. first + n - 1 of each batch row of x [B, T, E]. */
function rows(x, B, T, E, first, n) {
  const out = new Float32Array(B * n * E);
  for (let b = 0; b < B; b++) out.set(x.data.subarray((b * T + first) * E, (b * T + first + n) * E), b * n * E);
  return { data: out, shape: [B, n, E] };
}

for (const [label, mha] of devices) {
  describe(`float16 data read directly (${label})`, () => {
    const f16 = mha.features.includes('shader-f16');

    test(`the device gets the ${f16 ? 'f16' : 'packed u32'} read; float32 data is read as it is`, () => {
      const halves = halfReadValues(mha.device, 'f16', { K: 'k' });
      assert.deepEqual(halves, f16
        ? { ENABLE_F16: 'enable f16;', K_T: 'f16', K_AT: 'f32(k[e])' }
        : { ENABLE_F16: '', K_T: 'u32', K_AT: 'unpack2x16float(k[(e) >> 1u])[(e) & 1u]' });
      assert.deepEqual(halfReadValues(mha.device, 'f32', { K: 'k' }), { ENABLE_F16: '', K_T: 'f32', K_AT: 'k[e]' });
    });

    test('an f16 cache: the whole sequence in one call equals it token by token, and the wasm layer\'s f16 cache', async () => {
      // GQA, rotary, odd head size (rows start mid-word), sinks; 12 tokens, prefill on flash_attention.
      const config = { embedDim: 12, numHeads: 4, numKvHeads: 2, headDim: 3, rotary: { dim: 2 }, sinks: true };
      const B = 2, T = 12, E = 12;
      const x = tensor(random(11), [B, T, E]);
      const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 4 });
      const gpu = new mha.MultiHeadAttention(config).initialize({ seed: 4 });
      const whole = gpu.createCache({ batch: B, capacity: T, dtype: 'f16' });
      const { output, weights } = await gpu.forwardAsync(x, null, null, { cache: whole, needWeights: true, averageWeights: false });
      const cpuWhole = cpu.createCache({ batch: B, capacity: T, dtype: 'f16' });
      const want = cpu.forward(x, null, null, { cache: cpuWhole, needWeights: true, averageWeights: false });
      close(output.data, want.output.data, 'one call');
      close(weights.data, want.weights.data, 'its weights');
      const steps = gpu.createCache({ batch: B, capacity: T, dtype: 'f16' });
      for (let t = 0; t < T; t++) {
        const step = await gpu.forwardAsync(rows(x, B, T, E, t, 1), null, null, { cache: steps });
        close(step.output.data, rows(output, B, T, E, t, 1).data, `token ${t}`);
      }
      cpu.dispose();
      gpu.dispose();
    });

    test('large keys and values (near the f16 maximum) stay finite and equal the wasm layer\'s f16 cache', async () => {
      const config = { embedDim: 8, numHeads: 2 };
      const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 2 });
      const gpu = new mha.MultiHeadAttention(config).initialize({ seed: 2 });
      const rand = random(5);
      const key = { data: Float32Array.from({ length: 2 * 5 * 8 }, () => rand() * 60000), shape: [2, 5, 8] };
      const cpuCache = cpu.createCache({ batch: 2, capacity: 5, dtype: 'f16' }).setKeyValue(key, key);
      const gpuCache = gpu.createCache({ batch: 2, capacity: 5, dtype: 'f16' }).setKeyValue(key, key);
      const q = tensor(rand, [2, 1, 8]);
      const got = (await gpu.forwardAsync(q, null, null, { cache: gpuCache })).output.data;
      assert.ok(got.every(Number.isFinite), 'finite');
      close(got, cpu.forward(q, null, null, { cache: cpuCache }).output.data, 'vs the wasm layer');
      cpu.dispose();
      gpu.dispose();
    });

    test('f16 weights: prefill and one row equal the dequantized float32 layer', async () => {
      const config = { embedDim: 20, numHeads: 2, weightDtype: 'f16' };
      const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 9 });
      const gpu = new mha.MultiHeadAttention(config).initialize({ seed: 9 });
      const twin = new wasm.MultiHeadAttention({ embedDim: 20, numHeads: 2 }).loadStateDict(cpu.stateDict());
      const rand = random(6);
      for (const L of [7, 1]) {
        const q = tensor(rand, [2, L, 20]);
        close((await gpu.forwardAsync(q, null, null, { causal: true })).output.data,
          twin.forward(q, null, null, { causal: true }).output.data, `L ${L}`);
      }
      cpu.dispose();
      gpu.dispose();
      twin.dispose();
    });
  });
}
