// float16 KV caches on the GPU (createCache({ dtype: 'f16' })): keys and values held as packed
// halves, rounded as the wasm layer's f16 cache rounds them (nearest even) and widened for the
// attention. Compared with the wasm layer's f16 cache on the same weights and calls (fixtures'
// tolerance: both attend to the same halves), self-attention (odd row widths, so rows start
// mid-word) and cross-attention, on a device with subgroups and one without.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { modules } from './devices.js';
import { random, tensor } from './random-data.js';

const wasm = await init();
const devices = await modules();

const close = (got, want, what) => {
  assert.equal(got.length, want.length, `${what}: length`);
  got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= 1e-5 + 1e-4 * Math.abs(want[i]), `${what}[${i}]: ${x} vs ${want[i]}`));
};

for (const [label, mha] of devices) {
  describe(`f16 KV caches on the GPU (${label})`, () => {
    test('self-attention: chunks then single tokens equal the wasm layer\'s f16 cache, not its f32 one', async () => {
      // headDim 5 x 3 heads: 15 halves a row, so every other row starts in the middle of a u32.
      const config = { embedDim: 12, numHeads: 3, headDim: 5, rotary: { dim: 4 } };
      const rand = random(4);
      const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 6 });
      const gpu = new mha.MultiHeadAttention(config).initialize({ seed: 6 });
      const B = 2, T = 140;  // (past one flash-decoding chunk of 128)
      const x = tensor(rand, [B, T, 12]);
      const cpuCache = cpu.createCache({ batch: B, capacity: T, dtype: 'f16' });
      const cpu32 = cpu.createCache({ batch: B, capacity: T });
      const gpuCache = gpu.createCache({ batch: B, capacity: T, dtype: 'f16' });
      assert.equal(gpuCache.dtype, 'f16');
      assert.ok(gpuCache.byteSize < 0.51 * B * T * 15 * 2 * 4 + 64, `${gpuCache.byteSize} bytes: halves`);
      let done = 0, differs = false;
      for (const n of [130, 1, 5, 1, 3]) {
        const chunk = { data: new Float32Array(B * n * 12), shape: [B, n, 12] };
        for (let b = 0; b < B; b++) chunk.data.set(x.data.subarray((b * T + done) * 12, (b * T + done + n) * 12), b * n * 12);
        const want = cpu.forward(chunk, null, null, { cache: cpuCache }).output.data;
        const want32 = cpu.forward(chunk, null, null, { cache: cpu32 }).output.data;
        const got = (await gpu.forwardAsync(chunk, null, null, { cache: gpuCache })).output.data;
        close(got, want, `tokens ${done}..${done + n - 1}`);
        differs ||= got.some((v, i) => v !== want32[i]);
        done += n;
        assert.equal(gpuCache.length, done);
      }
      assert.ok(differs, 'the f16 cache rounds (its results are not the f32 cache\'s)');
      gpuCache.truncate(100);
      cpuCache.truncate(100);
      const q = tensor(rand, [B, 1, 12]);
      close((await gpu.forwardAsync(q, null, null, { cache: gpuCache })).output.data,
        cpu.forward(q, null, null, { cache: cpuCache }).output.data, 'after truncate');
      cpu.dispose();
      gpu.dispose();
    });

    test('cross-attention: setKeyValue into an f16 cache equals the wasm layer\'s', async () => {
      const config = { embedDim: 16, numHeads: 2, kdim: 7, vdim: 9, valueHeadDim: 3 };
      const rand = random(8);
      const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 1 });
      const gpu = new mha.MultiHeadAttention(config).initialize({ seed: 1 });
      const key = tensor(rand, [3, 11, 7]), value = tensor(rand, [3, 11, 9]);
      const cpuCache = cpu.createCache({ batch: 3, capacity: 12, dtype: 'f16' }).setKeyValue(key, value);
      const gpuCache = gpu.createCache({ batch: 3, capacity: 12, dtype: 'f16' }).setKeyValue(key, value);
      for (const L of [1, 4]) {
        const q = tensor(rand, [3, L, 16]);
        close((await gpu.forwardAsync(q, null, null, { cache: gpuCache, needWeights: L > 1 })).output.data,
          cpu.forward(q, null, null, { cache: cpuCache, needWeights: L > 1 }).output.data, `L ${L}`);
      }
      assert.throws(() => gpu.createCache({ capacity: 2, dtype: 'bf16' }), {  // (the wasm layer's words)
        name: 'TypeError', message: "createCache: dtype must be 'f32' or 'f16', got string bf16",
      });
      assert.throws(() => cpu.createCache({ capacity: 2, dtype: 'bf16' }), { message: "createCache: dtype must be 'f32' or 'f16', got string bf16" });
      cpu.dispose();
      gpu.dispose();
    });
  });
}
