// Two tfjs instances in one program (here the npm package and the copy keras-reference.js bundles):
// mhaTfjs gives each its own MultiHeadAttention class, a subclass of that instance's
// tf.layers.Layer registered with that instance's serialization, and both compute the same layer.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { tf as bundled } from './keras-reference.js';

const { log, warn } = console;
console.log = console.warn = () => {};  // the second tfjs greets Node users and warns of its kernels registered twice
const npm = await import('@tensorflow/tfjs');
Object.assign(console, { log, warn });

test('each tfjs instance gets its own layer class, registered with it, computing the same', async () => {
  assert.notEqual(bundled.layers.Layer, npm.layers.Layer, 'two instances');
  const [a, b] = [await mhaTfjs(bundled, { threads: 1 }), await mhaTfjs(npm, { threads: 1 })];
  assert.notEqual(a.MultiHeadAttention, b.MultiHeadAttention);
  for (const [tf, other, api] of [[bundled, npm, a], [npm, bundled, b]]) {
    assert.equal(api.MultiHeadAttention.className, 'MultiHeadAttention');
    assert.equal(tf.serialization.SerializationMap.getMap().classNameMap.MultiHeadAttention[0], api.MultiHeadAttention);
    const layer = api.multiHeadAttention({ numHeads: 2, keyDim: 3 });
    assert.ok(layer instanceof tf.layers.Layer && !(layer instanceof other.layers.Layer));
  }
  // (Both instances share tfjs' global engine, whose variable names are global: distinct layer names.)
  const layerA = a.multiHeadAttention({ numHeads: 2, keyDim: 3, name: 'mha_in_bundled' });
  const layerB = b.multiHeadAttention({ numHeads: 2, keyDim: 3, name: 'mha_in_npm' });
  const query = npm.tensor3d([...Array(20).keys()].map((i) => Math.sin(i)), [1, 4, 5]);
  const outputA = layerA.apply(query, { value: query });
  layerB.apply(query, { value: query });
  layerB.setWeights(layerA.getWeights());
  assert.deepEqual([layerA.numHeads, layerA.keyDim, layerA.valueDim, layerA.inputSizes], [2, 3, 3, { query: 5, key: 5, value: 5 }]);
  assert.deepEqual(layerB.apply(query, { value: query }).dataSync(), outputA.dataSync());
  assert.deepEqual(b.MultiHeadAttention.fromConfig(b.MultiHeadAttention, layerB.getConfig()).getConfig(), layerB.getConfig());
});
