// forwardAsync's out, weightsOut and checkFinite on WebGPU: the wasm layer's semantics and errors
// for CPU tensors; out / weightsOut with outputLocation 'gpu' are refused; checkFinite reads
// GPUBuffer inputs back and names the element as `query.buffer[i]`.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { modules } from './devices.js';
import { random, tensor } from './random-data.js';

const wasm = await init();
const [[, mha]] = await modules();

const close = (got, want, what) => got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= 1e-5 + 1e-4 * Math.abs(want[i]),
  `${what}[${i}]: ${x} vs ${want[i]}`));
const failure = async (fn) => {
  try {
    await fn();
  } catch (error) {
    return [error.name, error.message.replace(/^forward(Async)?: /, '')];
  }
  return null;
};

describe('out, weightsOut and checkFinite on WebGPU', () => {
  const config = { embedDim: 16, numHeads: 2, kdim: 8, vdim: 12 };
  const rand = random(13);
  const cpu = new wasm.MultiHeadAttention(config).initialize({ seed: 4 });
  const gpu = new mha.MultiHeadAttention(config).initialize({ seed: 4 });
  const q = tensor(rand, [2, 3, 16]), k = tensor(rand, [2, 5, 8]), v = tensor(rand, [2, 5, 12]);

  test('out and weightsOut receive the results (the same arrays come back)', async () => {
    const out = new Float32Array(2 * 3 * 16), weightsOut = new Float32Array(2 * 2 * 3 * 5);
    const got = await gpu.forwardAsync(q, k, v, { out, weightsOut, needWeights: true, averageWeights: false });
    assert.equal(got.output.data, out);
    assert.equal(got.weights.data, weightsOut);
    const want = cpu.forward(q, k, v, { needWeights: true, averageWeights: false });
    close(out, want.output.data, 'out');
    close(weightsOut, want.weights.data, 'weightsOut');
    assert.deepEqual(got.output.shape, want.output.shape);
  });

  test('bad out / weightsOut: the wasm layer\'s errors; with outputLocation \'gpu\' a TypeError', async () => {
    const rows = [
      { out: new Float32Array(5) },
      { out: new Float64Array(96) },
      { out: [1, 2] },
      { weightsOut: new Float32Array(30) },
      { weightsOut: new Float32Array(31), needWeights: true },
      { weightsOut: new Uint8Array(30), needWeights: true },
    ];
    for (const options of rows) {
      const want = await failure(() => cpu.forward(q, k, v, options));
      assert.ok(want, JSON.stringify(Object.keys(options)));
      assert.deepEqual(await failure(() => gpu.forwardAsync(q, k, v, options)), want);
    }
    await assert.rejects(gpu.forwardAsync(q, k, v, { out: new Float32Array(96), outputLocation: 'gpu' }), {
      name: 'TypeError', message: /forwardAsync: out: a Float32Array destination is for outputLocation 'cpu'/,
    });
  });

  test('checkFinite: CPU inputs as the wasm layer; GPUBuffer inputs read back and named', async () => {
    const bad = { data: k.data.slice(), shape: k.shape };
    bad.data[37] = NaN;
    const mask = { data: new Float32Array(2 * 5), shape: [2, 5] };
    mask.data[3] = -Infinity;  // (allowed: a blocked key)
    for (const [args, options] of [[[q, bad, v], { checkFinite: true }], [[q, k, v], { checkFinite: true, keyPaddingMask: { data: Float32Array.of(...mask.data.slice(0, 9), Infinity), shape: [2, 5] } }]]) {
      const want = await failure(() => cpu.forward(...args, options));
      assert.ok(want);
      assert.deepEqual(await failure(() => gpu.forwardAsync(...args, options)), want);
    }
    close((await gpu.forwardAsync(q, k, v, { checkFinite: true, keyPaddingMask: mask })).output.data,
      cpu.forward(q, k, v, { keyPaddingMask: mask }).output.data, 'finite inputs pass');
    const buffer = mha.device.createBuffer({ size: q.data.byteLength, usage: 0x80 | 0x08 | 0x04 });  // (COPY_SRC: read back)
    const data = q.data.slice();
    data[20] = Infinity;
    mha.device.queue.writeBuffer(buffer, 0, data);
    await assert.rejects(gpu.forwardAsync({ buffer, shape: q.shape }, k, v, { checkFinite: true }), {
      name: 'RangeError', message: 'forwardAsync: checkFinite: query.buffer[20] is Infinity (index [0, 1, 4] of shape [2, 3, 16])',
    });
    // Without the check the non-finite value spreads, as on the CPU.
    const spread = (await gpu.forwardAsync({ buffer, shape: q.shape }, k, v)).output.data;
    assert.ok(spread.some((x) => Number.isNaN(x)));
    buffer.destroy();
  });

  test('cleanup', () => {
    cpu.dispose();
    gpu.dispose();
  });
});
