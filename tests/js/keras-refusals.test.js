// Nothing accepted and ignored by the two Keras surfaces' constructors: every argument of Keras
// 3.15's MultiHeadAttention (camelCased, and a few in Keras' own snake_case), given a sentinel
// value, either works (the layer is made) or is refused with an Error naming it. The exact
// messages are rows of bad-inputs.table.js and tfjs-bad-inputs.table.js.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { loadTfjs } from '../../bench/tfjs/load-tfjs.js';
import { init } from '../../bindings/js/index.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';

const mha = await init({ threads: 1 });
const tf = await loadTfjs('cpu');
const { multiHeadAttention } = await mhaTfjs(tf, { threads: 1 });
const made = [];
after(() => { for (const layer of made) layer.dispose(); });

// Keras 3.15's MultiHeadAttention.__init__ arguments (keras/src/layers/attention/multi_head_attention.py)
// with a value that is not the default, and whether each surface implements it.
const KERAS_ARGUMENTS = [
  { name: 'valueDim', value: 3, keras: true, tfjs: true },
  { name: 'dropout', value: 0.25, keras: true, tfjs: true },
  { name: 'useBias', value: false, keras: true, tfjs: true },
  { name: 'outputShape', value: 5, keras: true, tfjs: true },
  { name: 'attentionAxes', value: [1], keras: true, tfjs: true },
  { name: 'kernelInitializer', value: 'zeros', keras: true, tfjs: true },
  { name: 'biasInitializer', value: 'ones', keras: true, tfjs: true },
  { name: 'kernelRegularizer', value: { className: 'L1L2', config: { l1: 0.1, l2: 0 } }, keras: false, tfjs: true },
  { name: 'biasRegularizer', value: { className: 'L1L2', config: { l1: 0.1, l2: 0 } }, keras: false, tfjs: true },
  { name: 'activityRegularizer', value: null, keras: false, tfjs: true },
  { name: 'kernelConstraint', value: 'nonNeg', keras: true, tfjs: true },
  { name: 'biasConstraint', value: 'nonNeg', keras: true, tfjs: true },
  { name: 'seed', value: 7, keras: true, tfjs: false },
  { name: 'flashAttention', value: true, keras: false, tfjs: false },
  { name: 'useGate', value: true, keras: true, tfjs: true },
  { name: 'slidingWindow', value: 2, keras: true, tfjs: true },
  { name: 'use_gate', value: true, keras: false, tfjs: false },
  { name: 'sliding_window', value: 2, keras: false, tfjs: false },
  { name: 'num_heads', value: 2, keras: false, tfjs: false },
  // Not Keras' argument: ours for its quantize('int8') (both surfaces store the projections quantized).
  { name: 'weightDtype', value: 'int8', keras: true, tfjs: true },
];

/** The Error `make()` throws, or null (a KerasMultiHeadAttention made is disposed after; an unbuilt tfjs layer holds nothing). */
function thrown(make) {
  try {
    const layer = make();
    if (layer instanceof mha.KerasMultiHeadAttention) made.push(layer);
    return null;
  } catch (error) {
    return error;
  }
}

for (const { name, value, keras, tfjs } of KERAS_ARGUMENTS) {
  test(`${name}: ${keras ? 'works' : 'refused by name'} in mha.KerasMultiHeadAttention`, () => {
    const error = thrown(() => new mha.KerasMultiHeadAttention({ numHeads: 2, keyDim: 4, queryDim: 8, [name]: value }));
    if (keras) assert.equal(error, null, error?.message);
    else assert.match(error?.message ?? 'accepted', new RegExp(`^KerasMultiHeadAttention: (${name}:|config: unknown option '${name}')`));
  });
  test(`${name}: ${tfjs ? 'works' : 'refused by name'} in mha-wasm/tfjs's MultiHeadAttention`, () => {
    const error = thrown(() => multiHeadAttention({ numHeads: 2, keyDim: 4, [name]: value }));
    if (tfjs) assert.equal(error, null, error?.message);
    else assert.match(error?.message ?? 'accepted', new RegExp(`^MultiHeadAttention: (${name}:|unknown argument '${name}')`));
  });
}
