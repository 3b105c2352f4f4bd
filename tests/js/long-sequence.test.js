// L = S = 16384, E = 256, H = 4 without weights runs in the wasm build in O(L*E) memory (the
// flash-attention kernel never holds an L x S score matrix: one head's would be 1 GiB), and
// sampled output rows match a float64 JavaScript computation of the same rows.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { attendRow, projectRow } from './float64-attention.js';
import { seededFloats } from './seeded.js';

const L = 16384, E = 256, H = 4;

/** Output rows in float64: x W^T + b for every key and value, softmax, out_proj. */
function referenceRows(rows, x, sd) {
  const project = (row, part) => projectRow(x, row, sd.in_proj_weight, sd.in_proj_bias, part * E, E);
  const keys = Array.from({ length: L }, (_, j) => project(j, 1));
  const values = Array.from({ length: L }, (_, j) => project(j, 2));
  return rows.map((i) => attendRow(project(i, 0), keys, values, H, sd['out_proj.weight'], sd['out_proj.bias']));
}

test('L = S = 16384, E = 256, H = 4 runs in O(L*E) memory and matches float64 on sampled rows', () => {
  return init().then((mha) => {
    const sd = {
      in_proj_weight: seededFloats(3 * E * E, 1, 0.12), in_proj_bias: seededFloats(3 * E, 2, 0.1),
      'out_proj.weight': seededFloats(E * E, 3, 0.12), 'out_proj.bias': seededFloats(E, 4, 0.1),
    };
    const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(sd);
    const x = seededFloats(L * E, 5, 1.0);
    const started = performance.now();
    const { output, weights } = layer.forward({ data: x, shape: [1, L, E] });
    const seconds = (performance.now() - started) / 1000;
    layer.dispose();
    const memoryMiB = mha.memoryBytes() / 2 ** 20;
    console.log(`# forward ${seconds.toFixed(1)} s, wasm memory ${memoryMiB.toFixed(0)} MiB`);
    assert.equal(weights, null);
    assert.deepEqual(output.shape, [1, L, E]);
    // Inputs, q/k/v, the attended values and the output are 6 x 16 MiB; one L x S matrix would be 1 GiB.
    assert.ok(memoryMiB < 256, `wasm memory grew to ${memoryMiB} MiB`);
    const rows = [0, 12345];
    const expected = referenceRows(rows, x, sd);
    for (const [n, i] of rows.entries()) {
      const want = expected[n];
      for (let o = 0; o < E; o++) {
        const got = output.data[i * E + o];
        assert.ok(Math.abs(got - want[o]) <= 1e-4 + 1e-3 * Math.abs(want[o]), `row ${i} [${o}]: ${got} vs ${want[o]}`);
      }
    }
  });
});
