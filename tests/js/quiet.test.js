// A library should not talk: loading each build and running forward passes (the threaded build
// blocks Node's main thread on its workers, which Emscripten's browser glue warns about) writes
// nothing to the console. Its own file, so each build here is loaded fresh in this process.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';

for (const options of [{ threads: 2 }, { threads: 1 }, { simd: false, threads: 1 }]) {
  test(`init(${JSON.stringify(options)}) and forward log nothing`, async (t) => {
    const calls = ['log', 'info', 'warn', 'error', 'debug'].map((name) => t.mock.method(console, name, () => {}));
    const mha = await init(options);
    const layer = new mha.MultiHeadAttention({ embedDim: 64, numHeads: 4 });
    const shapes = layer.stateDictShapes();
    layer.loadStateDict(Object.fromEntries(Object.entries(shapes).map(([k, s]) => [k, new Float32Array(s.reduce((a, b) => a * b, 1)).fill(0.01)])));
    const { output } = layer.forward({ data: new Float32Array(2 * 300 * 64).fill(1), shape: [2, 300, 64] });
    layer.dispose();
    assert.equal(output.data.length, 2 * 300 * 64);
    assert.ok(Math.abs(output.data[0] - (0.01 * 64 * (0.01 * 64 + 0.01) + 0.01)) < 1e-5);
    const said = calls.flatMap((c) => c.mock.calls.map((call) => call.arguments.join(' ')));
    assert.deepEqual(said, []);
  });
}
