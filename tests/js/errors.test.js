// Bad input throws a TypeError or RangeError naming the argument, and the module keeps working.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';

const mha = await init();
const E = 8, H = 2;
const f32 = (n, v = 0.1) => new Float32Array(n).fill(v);
const stateDict = () => ({
  in_proj_weight: f32(3 * E * E), in_proj_bias: f32(3 * E), 'out_proj.weight': f32(E * E), 'out_proj.bias': f32(E),
});
const x = (B, L) => ({ data: f32(B * L * E), shape: [B, L, E] });

function loaded() {
  return new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(stateDict());
}

// [description, call, error class, message pattern]
const CASES = [
  ['config is not an object', () => new mha.MultiHeadAttention(8), TypeError, /config must be an object, got number 8/],
  ['embedDim missing', () => new mha.MultiHeadAttention({ numHeads: 2 }), TypeError, /embedDim must be a number, got undefined/],
  ['embedDim not an integer', () => new mha.MultiHeadAttention({ embedDim: 8.5, numHeads: 2 }), RangeError, /embedDim must be an integer >= 1, got 8.5/],
  ['numHeads does not divide embedDim', () => new mha.MultiHeadAttention({ embedDim: 10, numHeads: 3 }), RangeError, /numHeads \(3\) must divide embedDim \(10\)/],
  ['numKvHeads does not divide numHeads', () => new mha.MultiHeadAttention({ embedDim: 16, numHeads: 4, numKvHeads: 3 }), RangeError, /numKvHeads \(3\) must divide numHeads \(4\)/],
  ['unknown config key', () => new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, heads: 2 }), TypeError, /unknown option 'heads'/],
  ['bias not a boolean', () => new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, bias: 1 }), TypeError, /bias must be a boolean, got number 1/],
  ['scale not finite', () => new mha.MultiHeadAttention({ embedDim: 8, numHeads: 2, scale: Infinity }), RangeError, /scale must be a finite number/],
  ['state dict key missing', () => { const sd = stateDict(); delete sd['out_proj.bias']; new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(sd); },
    TypeError, /loadStateDict: stateDict: missing key 'out_proj.bias' \(expected 8 floats, shape \[8\]\)/],
  ['state dict entry mis-sized', () => new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict({ ...stateDict(), in_proj_weight: f32(10) }),
    RangeError, /stateDict\['in_proj_weight'\]: expected 192 floats \(shape \[24, 8\]\), got 10/],
  ['state dict key unknown', () => new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict({ ...stateDict(), bias_k: f32(8) }),
    TypeError, /unexpected key 'bias_k'/],
  ['state dict bias on a bias-free layer', () => new mha.MultiHeadAttention({ embedDim: E, numHeads: H, bias: false }).loadStateDict(stateDict()),
    TypeError, /unexpected key 'in_proj_bias' \(the layer has bias: false\)/],
  ['state dict value not a Float32Array', () => new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict({ ...stateDict(), in_proj_bias: [0, 1] }),
    TypeError, /stateDict\['in_proj_bias'\] must be a Float32Array, got an Array/],
  ['forward before loading weights', () => new mha.MultiHeadAttention({ embedDim: E, numHeads: H }).forward(x(1, 2)), TypeError, /call loadStateDict\(\) first/],
  ['query missing', () => loaded().forward(), TypeError, /query is required/],
  ['query data is a plain array', () => loaded().forward({ data: [1, 2], shape: [1, 2] }), TypeError, /query.data must be a Float32Array, got an Array/],
  ['query data length does not match shape', () => loaded().forward({ data: f32(10), shape: [1, 2, 8] }), RangeError, /query: shape \[1, 2, 8\] needs 16 elements, but data has 10/],
  ['query last dimension wrong', () => loaded().forward({ data: f32(14), shape: [1, 2, 7] }), RangeError, /query: last dimension must be embedDim = 8, expected shape \[B, L, 8\], got \[1, 2, 7\]/],
  ['query rank wrong', () => loaded().forward({ data: f32(16), shape: [1, 1, 2, 8] }), RangeError, /query: expected shape \[B, L, 8\] or \[L, 8\], got \[1, 1, 2, 8\]/],
  ['shape with a negative extent', () => loaded().forward({ data: f32(0), shape: [-1, 8] }), RangeError, /query.shape must hold non-negative integers/],
  ['key given without value', () => loaded().forward(x(1, 2), x(1, 3)), TypeError, /value: key and value must be given together/],
  ['value batch differs', () => loaded().forward(x(2, 2), x(2, 3), x(1, 3)), RangeError, /value: expected shape \[B, S, vdim\] = \[2, 3, 8\], got \[1, 3, 8\]/],
  ['options passed in place of key', () => loaded().forward(x(1, 2), { causal: true }), TypeError, /forward\(query, null, null, options\)/],
  ['unknown forward option', () => loaded().forward(x(1, 2), null, null, { need_weights: true }), TypeError, /unknown option 'need_weights'/],
  ['causal not a boolean', () => loaded().forward(x(1, 2), null, null, { causal: 'yes' }), TypeError, /causal must be a boolean/],
  ['keyPaddingMask of the wrong kind', () => loaded().forward(x(1, 2), null, null, { keyPaddingMask: { data: new Int32Array(2), shape: [1, 2] } }),
    TypeError, /keyPaddingMask.data must be a Uint8Array or Float32Array, got a Int32Array/],
  ['keyPaddingMask of the wrong shape', () => loaded().forward(x(2, 3), null, null, { keyPaddingMask: { data: new Uint8Array(3), shape: [3] } }),
    RangeError, /keyPaddingMask: expected shape \[B, S\] = \[2, 3\], got \[3\]/],
  ['attnMask of the wrong shape', () => loaded().forward(x(2, 3), null, null, { attnMask: { data: new Uint8Array(6), shape: [3, 2] } }),
    RangeError, /attnMask: expected shape \[L, S\] = \[3, 3\] or \[B\*numHeads, L, S\] = \[4, 3, 3\], got \[3, 2\]/],
  ['attnMask 3-D with the wrong head count', () => loaded().forward(x(2, 3), null, null, { attnMask: { data: new Float32Array(18), shape: [2, 3, 3] } }),
    RangeError, /attnMask: expected shape \[B\*numHeads, L, S\] = \[4, 3, 3\], got \[2, 3, 3\]/],
  ['cross attention without key when kdim differs', () => new mha.MultiHeadAttention({ embedDim: E, numHeads: H, kdim: 4 })
    .loadStateDict({ q_proj_weight: f32(64), k_proj_weight: f32(32), v_proj_weight: f32(64), in_proj_bias: f32(24), 'out_proj.weight': f32(64), 'out_proj.bias': f32(8) })
    .forward(x(1, 2)), TypeError, /key and value are required when kdim or vdim differ from embedDim/],
  ['disposed layer', () => { const l = loaded(); l.dispose(); l.forward(x(1, 2)); }, TypeError, /MultiHeadAttention.forward: this layer was disposed/],
];

describe('bad input', () => {
  test(`the table has at least 15 distinct cases (${CASES.length})`, () => assert.ok(CASES.length >= 15));

  const reference = loaded();
  const expected = reference.forward(x(1, 3)).output.data;

  for (const [what, call, ErrorClass, pattern] of CASES) {
    test(what, () => {
      assert.throws(call, (error) => {
        assert.equal(error.constructor, ErrorClass, `${error.constructor.name}: ${error.message}`);
        assert.match(error.message, pattern);
        return true;
      });
      // The module still works after the error, with the same numbers.
      assert.deepEqual(reference.forward(x(1, 3)).output.data, expected);
    });
  }

  test('a failed loadStateDict leaves the old weights in place', () => {
    const layer = loaded();
    const before = layer.forward(x(1, 2)).output.data;
    assert.throws(() => layer.loadStateDict({ ...stateDict(), in_proj_weight: f32(192, 5), 'out_proj.bias': f32(3) }), RangeError);
    assert.deepEqual(layer.forward(x(1, 2)).output.data, before);
    layer.dispose();
  });

  test('dispose() twice is harmless', () => {
    const layer = loaded();
    layer.dispose();
    layer.dispose();
    assert.equal(layer.alive, false);
  });
});
