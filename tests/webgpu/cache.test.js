// KV caches on the GPU: decoding token by token (and in chunks) through a WebGPU layer's cache
// gives the full causal forward of the wasm layer, with rotary, GQA, a sliding window and masks
// covering the cache; truncate, reset; and the wasm layer's errors for bad calls with a cache.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { modules } from './devices.js';
import { random } from './random-data.js';

const wasm = await init();
const [[, mha]] = await modules();

const close = (got, want, what) => got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= 1e-5 + 1e-4 * Math.abs(want[i]),
  `${what}[${i}]: ${x} vs ${want[i]}`));

/** Rows first .. first + n - 1 of each batch row of x [B, T, E]. */
function rows(x, B, T, E, first, n) {
  const out = new Float32Array(B * n * E);
  for (let b = 0; b < B; b++) out.set(x.subarray((b * T + first) * E, (b * T + first + n) * E), b * n * E);
  return { data: out, shape: [B, n, E] };
}

describe('a KV cache on the GPU', () => {
  const config = { embedDim: 32, numHeads: 4, numKvHeads: 2, rotary: { dim: 8 }, slidingWindow: 6 };
  const B = 2, T = 11, E = 32;
  const rand = random(3);
  const x = Float32Array.from({ length: B * T * E }, rand);

  test('chunks then single tokens give the full causal forward, with a key padding mask over the cache', async () => {
    const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 8 });
    const layer = new mha.MultiHeadAttention(config).initialize({ seed: 8 });
    const padding = new Uint8Array(B * T);
    padding[1] = 1;  // batch row 0 ignores token 1
    const full = cpu.forward({ data: x, shape: [B, T, E] }, null, null,
      { causal: true, keyPaddingMask: { data: padding, shape: [B, T] } }).output.data;
    const cache = layer.createCache({ batch: B, capacity: T });
    assert.equal(cache.kind, 'none');
    const steps = [5, 1, 1, 3, 1];
    let done = 0;
    for (const n of steps) {
      const mask = new Uint8Array(B * (done + n));
      for (let b = 0; b < B; b++) for (let j = 0; j < done + n; j++) mask[b * (done + n) + j] = padding[b * T + j];
      const { output } = await layer.forwardAsync(rows(x, B, T, E, done, n), null, null,
        { cache, keyPaddingMask: { data: mask, shape: [B, done + n] } });
      close(output.data, rows(full, B, T, E, done, n).data, `tokens ${done}..${done + n - 1}`);
      done += n;
      assert.equal(cache.length, done);
    }
    assert.equal(cache.kind, 'self');
    assert.equal(cache.byteSize, B * T * 2 * 16 * 4);
    cpu.dispose();
    layer.dispose();
    assert.equal(cache.alive, false);
  });

  test('a long cache (flash-decoding over 3 chunks) with sinks, ALiBi and a whole chunk padded', async () => {
    const long = { embedDim: 32, numHeads: 4, numKvHeads: 1, sinks: true, alibi: true };
    const N = 304, prefill = 300;
    const xs = Float32Array.from({ length: B * N * E }, random(4));
    const padding = new Uint8Array(B * N);
    padding.fill(1, N, N + 140);  // batch row 1: tokens 0..139 are padding
    const cpu = new wasm.MultiHeadAttention(long).initialize({ seed: 2 });
    const sinks = Float32Array.from({ length: 4 }, (_, h) => h - 1.5);
    cpu.loadStateDict({ ...cpu.stateDict(), sinks });
    const layer = new mha.MultiHeadAttention(long).loadStateDict(cpu.stateDict());
    const full = cpu.forward({ data: xs, shape: [B, N, E] }, null, null,
      { causal: true, keyPaddingMask: { data: padding, shape: [B, N] } }).output.data;
    const cache = layer.createCache({ batch: B, capacity: N });
    let done = 0;
    for (const n of [prefill, 1, 1, 2]) {
      const mask = new Uint8Array(B * (done + n));
      for (let b = 0; b < B; b++) for (let j = 0; j < done + n; j++) mask[b * (done + n) + j] = padding[b * N + j];
      const { output } = await layer.forwardAsync(rows(xs, B, N, E, done, n), null, null,
        { cache, keyPaddingMask: { data: mask, shape: [B, done + n] } });
      if (n < prefill) close(output.data, rows(full, B, N, E, done, n).data, `tokens ${done}..${done + n - 1}`);
      done += n;
    }
    cpu.dispose();
    layer.dispose();
  });

  test('truncate and reset, then decoding again', async () => {
    const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 9 });
    const layer = new mha.MultiHeadAttention(config).initialize({ seed: 9 });
    const full = cpu.forward({ data: x, shape: [B, T, E] }, null, null, { causal: true }).output.data;
    const cache = layer.createCache({ batch: B, capacity: T });
    await layer.forwardAsync(rows(x, B, T, E, 0, 4), null, null, { cache });
    await layer.forwardAsync(rows(new Float32Array(B * T * E).fill(9), B, T, E, 0, 2), null, null, { cache });  // a draft
    cache.truncate(4);
    const { output } = await layer.forwardAsync(rows(x, B, T, E, 4, 1), null, null, { cache });
    close(output.data, rows(full, B, T, E, 4, 1).data, 'after truncate');
    cache.reset();
    assert.equal(cache.length, 0);
    const again = await layer.forwardAsync(rows(x, B, T, E, 0, 3), null, null, { cache });
    close(again.output.data, rows(full, B, T, E, 0, 3).data, 'after reset');
    cache.dispose();
    cpu.dispose();
    layer.dispose();
  });

  test("bad calls: the wasm layer's errors", async () => {
    const cpu = new wasm.MultiHeadAttention(config).initialize();
    const layer = new mha.MultiHeadAttention(config).initialize();
    const cpuCache = cpu.createCache({ batch: B, capacity: 4 });
    const cache = layer.createCache({ batch: B, capacity: 4 });
    const q = rows(x, B, T, E, 0, 3);
    const same = async (call, options) => {
      let expected;
      try {
        cpu.forward(...call, { ...options, cache: cpuCache });
      } catch (error) {
        expected = error;
      }
      assert.ok(expected);
      await assert.rejects(layer.forwardAsync(...call, { ...options, cache }),
        { name: expected.name, message: expected.message.replace(/^forward: /, 'forwardAsync: ') });
    };
    await same([q, q, q], {});
    await same([q, null, null], { causal: false });
    await same([rows(x, B, T, E, 0, 5), null, null], {});
    await same([{ data: x.subarray(0, 3 * E), shape: [1, 3, E] }, null, null], {});
    await same([q, null, null], { keyPaddingMask: { data: new Uint8Array(B * 2), shape: [B, 2] } });
    const other = new mha.MultiHeadAttention(config).initialize();
    await assert.rejects(other.forwardAsync(q, null, null, { cache }), /forwardAsync: cache: this cache belongs to another layer/);
    assert.throws(() => layer.createCache({ capacity: 0 }), /createCache: capacity must be an integer >= 1, got 0/);
    assert.equal(layer.createCache({ capacity: 4, dtype: 'f16' }).dtype, 'f16');  // (f16-cache.test.js)
    assert.equal(cache.setKeyValue(q, q).kind, 'cross');  // (no call above appended: cross-attention tests are cross-cache.test.js)
    cache.dispose();
    await assert.rejects(layer.forwardAsync(q, null, null, { cache }), /forwardAsync: cache: this cache was disposed/);
    for (const l of [cpu, layer, other]) l.dispose();
  });
});
