// Cross-attention caches on the GPU: cache.setKeyValue(key, value) projects an encoder's states
// into a WebGPU layer's cache once; forwardAsync(query, null, null, { cache }) attends to them.
// Compared with the wasm layer's cross cache on the same weights and inputs (fixtures' tolerance),
// on a device with subgroups and one without; bad calls give the wasm layer's errors.
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
const failure = async (fn) => {
  try {
    await fn();
  } catch (error) {
    return [error.name, error.message.replace(/^forward(Async)?: /, '')];
  }
  return null;
};

for (const [label, mha] of devices) {
  describe(`cross-attention caches on the GPU (${label})`, () => {
    const configs = [
      ['kdim 12, vdim 20, GQA, rotary', { embedDim: 32, numHeads: 4, numKvHeads: 2, kdim: 12, vdim: 20, rotary: { dim: 8 } }],
      ['int8 weights, bias: false', { embedDim: 24, numHeads: 2, bias: false, weightDtype: 'int8' }],
    ];
    for (const [name, config] of configs) {
      test(`${name}: decode steps and a prefill against the wasm layer's cross cache, then a new setKeyValue`, async () => {
        const rand = random(5);
        const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 2 });
        const gpu = new mha.MultiHeadAttention(config).initialize({ seed: 2 });
        const B = 2, S = 150, E = config.embedDim;  // (150 keys: flash-decoding over two chunks)
        const key = tensor(rand, [B, S, config.kdim ?? E]), value = tensor(rand, [B, S, config.vdim ?? E]);
        const cpuCache = cpu.createCache({ batch: B, capacity: 160 }).setKeyValue(key, value);
        const gpuCache = gpu.createCache({ batch: B, capacity: 160 });
        assert.equal(gpuCache.setKeyValue(key, value), gpuCache);
        assert.equal(gpuCache.kind, 'cross');
        assert.equal(gpuCache.length, S);
        const padding = new Uint8Array(B * S);
        padding[S + 7] = 1;  // batch row 1 ignores key 7
        for (const [L, options] of [[1, {}], [1, { keyPaddingMask: { data: padding, shape: [B, S] } }], [6, { causal: true }], [3, { needWeights: true }]]) {
          const q = tensor(rand, [B, L, E]);
          const want = cpu.forward(q, null, null, { ...options, cache: cpuCache });
          const got = await gpu.forwardAsync(q, null, null, { ...options, cache: gpuCache });
          close(got.output.data, want.output.data, `L ${L} ${JSON.stringify(Object.keys(options))}`);
          if (options.needWeights) close(got.weights.data, want.weights.data, 'weights');
          assert.equal(gpuCache.length, S);  // (never appends)
        }
        const key2 = tensor(rand, [B, 5, config.kdim ?? E]), value2 = tensor(rand, [B, 5, config.vdim ?? E]);
        cpuCache.setKeyValue(key2, value2);
        gpuCache.setKeyValue(key2, value2);
        assert.equal(gpuCache.length, 5);
        const q = tensor(rand, [B, 2, E]);
        close((await gpu.forwardAsync(q, null, null, { cache: gpuCache })).output.data,
          cpu.forward(q, null, null, { cache: cpuCache }).output.data, 'after a second setKeyValue');
        gpuCache.truncate(3);
        cpuCache.truncate(3);
        assert.equal(gpuCache.kind, 'cross');
        close((await gpu.forwardAsync(q, null, null, { cache: gpuCache })).output.data,
          cpu.forward(q, null, null, { cache: cpuCache }).output.data, 'truncated');
        cpu.dispose();
        gpu.dispose();
      });
    }

    test('bad calls: the wasm layer\'s errors', async () => {
      const config = { embedDim: 8, numHeads: 2, kdim: 6, vdim: 4 };
      const rand = random(9);
      const cpu = new wasm.MultiHeadAttention(config).initialize();
      const gpu = new mha.MultiHeadAttention(config).initialize();
      const pair = () => [cpu.createCache({ batch: 2, capacity: 4 }), gpu.createCache({ batch: 2, capacity: 4 })];
      const key = tensor(rand, [2, 3, 6]), value = tensor(rand, [2, 3, 4]);
      const rows = [
        [tensor(rand, [2, 3, 5]), value],
        [key, tensor(rand, [2, 2, 4])],
        [tensor(rand, [2, 5, 6]), tensor(rand, [2, 5, 4])],
        [tensor(rand, [1, 3, 6]), tensor(rand, [1, 3, 4])],
        [{ data: new Float32Array(3), shape: [2, 3, 6] }, value],
      ];
      for (const [k, v] of rows) {
        const [c, g] = pair();
        const want = await failure(() => c.setKeyValue(k, v));
        assert.ok(want, JSON.stringify(k.shape));
        assert.deepEqual(await failure(() => g.setKeyValue(k, v)), want);
        assert.equal(g.kind, 'none');
      }
      // A filled cross cache given a key and value; a query of another batch; positions.
      const [c, g] = pair();
      c.setKeyValue(key, value);
      g.setKeyValue(key, value);
      const q = tensor(rand, [2, 1, 8]);
      for (const [args, options] of [[[key, value], {}], [[null, null], {}], [[null, null], { positions: { data: new Int32Array(2), shape: [2, 1] } }]]) {
        const query = options.positions ? q : args[0] ? q : tensor(rand, [1, 1, 8]);
        const want = await failure(() => cpu.forward(query, ...args, { ...options, cache: c }));
        assert.ok(want);
        assert.deepEqual(await failure(() => gpu.forwardAsync(query, ...args, { ...options, cache: g })), want);
      }
      // Self tokens in the cache, then setKeyValue.
      const self = new wasm.MultiHeadAttention({ embedDim: 8, numHeads: 2 }).initialize();
      const selfGpu = new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2 }).initialize();
      const sc = self.createCache({ batch: 1, capacity: 4 }), sg = selfGpu.createCache({ batch: 1, capacity: 4 });
      const x = tensor(rand, [1, 2, 8]);
      self.forward(x, null, null, { cache: sc });
      await selfGpu.forwardAsync(x, null, null, { cache: sg });
      const want = await failure(() => sc.setKeyValue(x, x));
      assert.ok(want);
      assert.deepEqual(await failure(() => sg.setKeyValue(x, x)), want);
      const empty = new mha.MultiHeadAttention(config);
      const emptyCpu = new wasm.MultiHeadAttention(config);
      assert.deepEqual(await failure(() => empty.createCache({ batch: 2, capacity: 4 }).setKeyValue(key, value)),
        await failure(() => emptyCpu.createCache({ batch: 2, capacity: 4 }).setKeyValue(key, value)));
      for (const layer of [cpu, gpu, self, selfGpu, empty, emptyCpu]) layer.dispose();
    });
  });
}
