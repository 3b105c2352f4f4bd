// Limits: requests whose buffers cannot fit in wasm memory fail with a RangeError naming the
// sizes before anything is allocated, and the module keeps working. (More rows, with exact
// messages, are in bad-inputs.table.js.)
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { E, H, stateDict, x } from './bad-inputs.table.js';

const mha = await init();
const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict());
const expected = layer.forward(x(1, 4)).output.data;

/**
 * Runs `call`, which must be refused up front; then (after `cleanUp`) checks nothing was allocated
 * or lost. The same calls run once before the measured ones (a warm-up, docs/contributing.md).
 */
function assertRefused(call, pattern, cleanUp = () => {}) {
  assert.throws(call, RangeError);
  cleanUp();
  layer.forward(x(1, 4));  // (a successful call frees the layer's record of the last error message)
  const heap = mha.heapAllocatedBytes(), memory = mha.memoryBytes();
  assert.throws(call, (error) => {
    assert.equal(error.constructor, RangeError, error.message);
    assert.match(error.message, pattern);
    return true;
  });
  cleanUp();
  assert.equal(mha.memoryBytes(), memory, 'wasm memory did not grow');
  assert.deepEqual(layer.forward(x(1, 4)).output.data, expected, 'the module still works');
  assert.equal(mha.heapAllocatedBytes(), heap, 'no memory lost');
}

test('a layer whose weights could be kept but never loaded is refused at loadStateDict, before copying', () => {
  // embedDim 12288: 2.25 GiB of weights fits in 4 GiB, but loading needs the copy, a checked copy and the parameters.
  let big = null;
  assertRefused(() => {
    big = new mha.MultiHeadAttention({ embedDim: 12288, numHeads: 8 });
    big.loadStateDict({ 'out_proj.bias': new Float32Array(12288) });
  }, /^loadStateDict: the weights need [\d.]+ GiB of WebAssembly memory \(state dict copied in 48\.0 KiB, checked copy 2\.[23] GiB, parameters 2\.[23] GiB\), more than the 4\.0 GiB this build can address$/,
  () => big.dispose());
});

test('forward with per-head weights of 11.9 GiB is refused before the query is copied in', () => {
  assertRefused(() => layer.forward(x(1, 40000), null, null, { needWeights: true, averageWeights: false }),
    /^forward: the inputs and buffers need 11\.9 GiB of WebAssembly memory \(query 1\.2 MiB, .*attention weights 11\.9 GiB\), more than the [\d.]+ GiB this build can address$/);
});

test('a bool mask is counted twice: as the bytes copied in and as floats', () => {
  const L = 40000, mask = { data: new Uint8Array(L), shape: [1, L] };
  assertRefused(() => layer.forward(x(1, L), null, null, { keyPaddingMask: mask, needWeights: true, averageWeights: false }),
    /\(query 1\.2 MiB, keyPaddingMask 39\.1 KiB, keyPaddingMask as floats 156\.2 KiB, .*attention weights 11\.9 GiB\)/);
});

test('a request that fits right after a refused one runs normally', () => {
  assert.throws(() => layer.forward(x(1, 40000), null, null, { needWeights: true, averageWeights: false }), RangeError);
  const { output, weights } = layer.forward(x(2, 300), null, null, { needWeights: true });
  assert.deepEqual(output.shape, [2, 300, E]);
  assert.deepEqual(weights.shape, [2, 300, 300]);
});
