// registerFastGradients' kernels against tfjs' own cpu kernels (the reference), on the cpu and wasm
// backends: UnsortedSegmentSum (Embedding's gradient) with repeated and out-of-range ids, and
// Conv2DBackpropFilter (Conv1D's filter gradient) for Conv1D's case and general 2-D strides and pads;
// Conv2D and Conv2DBackpropInput (Conv1D's forward and input gradient, cpu) for Conv1D's cases, and
// the cases they refuse reaching tfjs' own kernels; and the registration itself (restore(), idempotence, a clear error where the kernel refuses).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadTfjs } from '../../bench/tfjs/load-tfjs.js';
import { FAST_GRADIENT_KERNELS, registerFastGradients } from '../../bindings/js/tfjs/kernels.js';
import { seededFloats } from './seeded.js';

const tf = await loadTfjs('cpu');
await import('@tensorflow/tfjs-backend-wasm');

const SEGMENT_CASES = [
  { name: 'Embedding-like: [64 * 32, 32] rows into 3001 segments', x: [2048, 32], segments: 3001 },
  { name: 'ids repeated, negative and >= numSegments (dropped), inner [3, 2]', x: [12, 3, 2], segments: 5, ids: [0, 1, 1, -1, 4, 5, 2, 2, 2, 9, 0, 3] },
];
const CONV_CASES = [
  { name: "Conv1D(100, 4, 'same') of the tutorial as conv2d", x: [4, 1, 32, 32], filter: [1, 4, 32, 100], strides: 1, pad: 'same' },
  { name: "Conv1D(7, 3, 'valid'), 2 rows, channels not multiples of 4", x: [3, 2, 9, 5], filter: [1, 3, 5, 7], strides: 1, pad: 'valid' },
  { name: '2-D, stride 2, valid', x: [2, 7, 9, 3], filter: [3, 2, 3, 5], strides: [2, 2], pad: 'valid' },
  { name: '2-D, strides [1, 3], explicit pads', x: [1, 6, 10, 2], filter: [2, 3, 2, 4], strides: [1, 3], pad: [[0, 0], [1, 2], [0, 1], [0, 0]] },
];

// Conv2D and Conv2DBackpropInput: Conv1D's case is computed by the fast kernels (cpu); the others
// (stride, dilation, a 2-D filter) must go to tfjs' own kernel and give its result.
const CONV1D_CASES = [
  { name: "Conv1D(100, 4, 'same') of the tutorial", x: [4, 1, 32, 32], filter: [1, 4, 32, 100], strides: 1, pad: 'same', fast: true },
  { name: "Conv1D(5, 3, 'valid'), 2 rows", x: [2, 2, 9, 3], filter: [1, 3, 3, 5], strides: [1, 1], pad: 'valid', fast: true },
  { name: 'Conv1D, a filter wider than the input', x: [2, 1, 3, 6], filter: [1, 5, 6, 9], strides: 1, pad: 'same', fast: true },
  { name: 'Conv1D, explicit pads', x: [1, 1, 10, 2], filter: [1, 3, 2, 4], strides: 1, pad: [[0, 0], [0, 0], [2, 1], [0, 0]], fast: true },
  { name: 'stride 2 (refused: tfjs\' kernel)', x: [2, 1, 11, 3], filter: [1, 3, 3, 4], strides: [1, 2], pad: 'same', fast: false },
  { name: 'dilation 2 (refused: tfjs\' kernel)', x: [2, 1, 11, 3], filter: [1, 3, 3, 4], strides: 1, pad: 'same', dilations: [1, 2], fast: false },
  { name: 'padding along the height (refused: tfjs\' kernel)', x: [1, 1, 8, 2], filter: [1, 3, 2, 4], strides: 1, pad: [[0, 0], [1, 1], [1, 1], [0, 0]], fast: false },
  { name: 'a 2-D filter (refused: tfjs\' kernel)', x: [1, 5, 6, 2], filter: [2, 2, 2, 3], strides: 1, pad: 'same', fast: false },
];

/** The Conv2DBackpropFilter kernel itself (tfjs runs it for conv2d's filter gradient; it has no public op). */
const backpropFilter = (x, dy, filterShape, strides, pad, dataFormat = 'NHWC') =>
  tf.engine().runKernel('Conv2DBackpropFilter', { x, dy }, { strides, pad, dataFormat, dimRoundingMode: undefined, filterShape });

/** Runs fn on `backend` with tfjs' own kernels (fast: false) or the registered ones; returns plain numbers. */
async function on(backend, fast, fn) {
  await tf.setBackend(backend);
  const registration = fast ? registerFastGradients(tf, { backends: [backend] }) : null;
  try {
    return tf.tidy(() => { const t = fn(); return { shape: t.shape, data: Array.from(t.dataSync()) }; });
  } finally {
    registration?.restore();
  }
}

function assertClose(got, want, what) {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  for (let i = 0; i < want.data.length; i++) {
    if (!(Math.abs(got.data[i] - want.data[i]) <= 1e-5 + 1e-5 * Math.abs(want.data[i]))) assert.fail(`${what}[${i}]: ${got.data[i]} vs tfjs ${want.data[i]}`);
  }
}

for (const c of SEGMENT_CASES) {
  test(`UnsortedSegmentSum: ${c.name}`, async () => {
    const size = c.x.reduce((a, b) => a * b, 1);
    const ids = c.ids ?? Array.from({ length: c.x[0] }, (_, i) => (i * 7919) % 997);
    const fn = () => tf.unsortedSegmentSum(tf.tensor(seededFloats(size, 3), c.x), tf.tensor1d(ids, 'int32'), c.segments);
    const want = await on('cpu', false, fn);
    assertClose(await on('cpu', true, fn), want, 'cpu');
    assertClose(await on('wasm', true, fn), want, 'wasm');
  });
}

for (const c of CONV_CASES) {
  test(`Conv2DBackpropFilter: ${c.name}`, async () => {
    const size = (s) => s.reduce((a, b) => a * b, 1);
    const x = () => tf.tensor(seededFloats(size(c.x), 5), c.x);
    // dy has the forward conv's output shape.
    const outShape = (await on('cpu', false, () => tf.conv2d(x(), tf.zeros(c.filter), c.strides, c.pad))).shape;
    const fn = () => backpropFilter(x(), tf.tensor(seededFloats(size(outShape), 6), outShape), c.filter, c.strides, c.pad);
    const want = await on('cpu', false, fn);
    assert.deepEqual(want.shape, c.filter);
    assertClose(await on('cpu', true, fn), want, 'cpu');
    assertClose(await on('wasm', true, fn), want, 'wasm');
  });
}

/** Wraps tfjs' own cpu kernel `kernelName` to count its calls: the fast kernel hands it the cases it refuses. */
function spyOnConv(kernelName) {
  const kernel = tf.getKernel(kernelName, 'cpu');
  const previousFunc = kernel.kernelFunc;
  let ownResults = 0;
  tf.unregisterKernel(kernelName, 'cpu');
  tf.registerKernel({ ...kernel, kernelFunc: (args) => { const out = previousFunc(args); ownResults += 1; return out; } });
  return { count: () => ownResults, restore: () => { tf.unregisterKernel(kernelName, 'cpu'); tf.registerKernel(kernel); } };
}

for (const c of CONV1D_CASES) {
  test(`Conv2D and Conv2DBackpropInput: ${c.name}`, async () => {
    const size = (s) => s.reduce((a, b) => a * b, 1);
    const x = () => tf.tensor(seededFloats(size(c.x), 7), c.x), filter = () => tf.tensor(seededFloats(size(c.filter), 8), c.filter);
    const forward = () => tf.conv2d(x(), filter(), c.strides, c.pad, 'NHWC', c.dilations ?? 1);
    const want = await on('cpu', false, forward);
    assertClose(await on('cpu', true, forward), want, 'Conv2D cpu');
    const dyShape = want.shape;
    const backward = () => tf.engine().runKernel('Conv2DBackpropInput', { dy: tf.tensor(seededFloats(size(dyShape), 9), dyShape), filter: filter() },
      { inputShape: c.x, strides: c.strides, pad: c.pad, dataFormat: 'NHWC', dimRoundingMode: undefined });
    if (!c.dilations) {  // tfjs' Conv2DBackpropInput has no dilation
      const wantDx = await on('cpu', false, backward);
      assert.deepEqual(wantDx.shape, c.x);
      assertClose(await on('cpu', true, backward), wantDx, 'Conv2DBackpropInput cpu');
    }
    // Which kernel ran: the fast one computes Conv1D's case itself; the others reach tfjs' (spied) kernel.
    await tf.setBackend('cpu');
    const spies = [spyOnConv('Conv2D'), spyOnConv('Conv2DBackpropInput')];
    const registration = registerFastGradients(tf, { backends: ['cpu'] });
    try {
      tf.tidy(() => { forward().dataSync(); if (!c.dilations) backward().dataSync(); });
      assert.equal(spies[0].count() + spies[1].count(), c.fast ? 0 : (c.dilations ? 1 : 2), 'calls that reached tfjs\' own kernels');
    } finally {
      registration.restore();
      spies.forEach((s) => s.restore());
    }
  });
}

test('Conv2D and Conv2DBackpropInput: gradients of a Conv1D layer equal tfjs\' own (cpu)', async () => {
  const grads = async (fast) => {
    await tf.setBackend('cpu');
    const registration = fast ? registerFastGradients(tf, { backends: ['cpu'] }) : null;
    try {
      return tf.tidy(() => {
        const x = tf.tensor(seededFloats(2 * 16 * 8, 10), [2, 16, 8]), w = tf.tensor(seededFloats(4 * 8 * 6, 11), [4, 8, 6]);
        const g = tf.grads((a, b) => tf.sum(tf.mul(tf.conv1d(a, b, 1, 'same'), tf.tensor(seededFloats(2 * 16 * 6, 12), [2, 16, 6]))));
        return g([x, w]).map((t) => ({ shape: t.shape, data: Array.from(t.dataSync()) }));
      });
    } finally {
      registration?.restore();
    }
  };
  const [want, got] = [await grads(false), await grads(true)];
  assertClose(got[0], want[0], 'dx');
  assertClose(got[1], want[1], 'dW');
});

// Add: a bias along the last axes is summed by the fast kernel (cpu), with tfjs' bits; other cases reach tfjs' own.
const ADD_CASES = [
  { name: "Conv1D's biasAdd: [64, 32, 100] + [1, 1, 100]", a: [64, 32, 100], b: [1, 1, 100], fast: true },
  { name: 'the bias first: [7] + [3, 5, 7]', a: [7], b: [3, 5, 7], fast: true },
  { name: "Dense's bias: [4, 1] + [1]", a: [4, 1], b: [1], fast: false },
  { name: 'the same shapes (tfjs\' own loop is direct)', a: [3, 4], b: [3, 4], fast: false },
  { name: 'a column, not a bias: [2, 3] + [2, 1]', a: [2, 3], b: [2, 1], fast: false },
];
for (const c of ADD_CASES) {
  test(`Add: ${c.name}`, async () => {
    const size = (s) => s.reduce((x, y) => x * y, 1);
    const fn = () => tf.add(tf.tensor(seededFloats(size(c.a), 13), c.a), tf.tensor(seededFloats(size(c.b), 14), c.b));
    const want = await on('cpu', false, fn);
    const got = await on('cpu', true, fn);
    assert.deepEqual(got, want, 'the same float32 sums, bit for bit');
    await tf.setBackend('cpu');
    const spy = spyOnConv('Add');
    const registration = registerFastGradients(tf, { backends: ['cpu'] });
    try {
      tf.tidy(() => fn().dataSync());
      assert.equal(spy.count(), c.fast ? 0 : 1, 'calls that reached tfjs\' own Add');
    } finally {
      registration.restore();
      spy.restore();
    }
  });
}

test('registration: restore() puts back tfjs\' kernels (cpu) and the absence of one (wasm); twice is a no-op', async () => {
  const own = tf.getKernel('UnsortedSegmentSum', 'cpu');
  assert.equal(tf.getKernel('UnsortedSegmentSum', 'wasm'), undefined);
  const first = registerFastGradients(tf), second = registerFastGradients(tf);
  for (const name of FAST_GRADIENT_KERNELS) assert.equal(tf.getKernel(name, 'cpu').fastGradientOf, 'mha-wasm');
  // On wasm only the two kernels tfjs-wasm lacks; its own Conv2D and Conv2DBackpropInput are compiled code.
  for (const name of ['UnsortedSegmentSum', 'Conv2DBackpropFilter']) assert.equal(tf.getKernel(name, 'wasm').fastGradientOf, 'mha-wasm');
  for (const name of ['Conv2D', 'Conv2DBackpropInput', 'Add']) assert.equal(tf.getKernel(name, 'wasm').fastGradientOf, undefined);
  second.restore();  // registered nothing
  assert.equal(tf.getKernel('UnsortedSegmentSum', 'cpu').fastGradientOf, 'mha-wasm');
  first.restore();
  assert.equal(tf.getKernel('UnsortedSegmentSum', 'cpu'), own);
  assert.equal(tf.getKernel('UnsortedSegmentSum', 'wasm'), undefined);
  assert.equal(tf.getKernel('Conv2DBackpropFilter', 'wasm'), undefined);
  assert.equal(tf.getKernel('Conv2D', 'cpu').fastGradientOf, undefined);
});

test('bad arguments and refused cases are clear errors', async () => {
  assert.throws(() => registerFastGradients({}), { name: 'TypeError', message: "registerFastGradients: pass the @tensorflow/tfjs namespace (import * as tf from '@tensorflow/tfjs')" });
  assert.throws(() => registerFastGradients(tf, { backends: 'wasm' }), { name: 'TypeError', message: 'registerFastGradients: backends must be an array of backend names, got "wasm"' });
  await tf.setBackend('wasm');
  const registration = registerFastGradients(tf, { backends: ['wasm'] });
  try {
    assert.throws(() => backpropFilter(tf.zeros([1, 2, 4, 4]), tf.zeros([1, 3, 4, 4]), [1, 2, 2, 3], 1, 'same', 'NCHW'),
      { message: "Conv2DBackpropFilter (mha-wasm/tfjs fast gradients): only channels-last (NHWC) data is supported, got dataFormat 'NCHW'" });
  } finally {
    registration.restore();
    await tf.setBackend('cpu');
  }
  // Where there is no kernel of tfjs' own to go to, a case other than Conv1D's is an Error naming it.
  const own = tf.getKernel('Conv2D', 'cpu');
  tf.unregisterKernel('Conv2D', 'cpu');
  const alone = registerFastGradients(tf, { backends: ['cpu'] });
  try {
    assert.throws(() => tf.conv2d(tf.zeros([1, 1, 8, 2]), tf.zeros([1, 3, 2, 2]), [1, 2], 'same'),
      { message: "Conv2D (mha-wasm/tfjs fast kernels): only Conv1D's case is supported (float32, channels last, a filter 1 row high, stride 1, dilation 1), got strides [1,2]" });
    assert.throws(() => tf.conv2d(tf.zeros([1, 3, 8, 2]), tf.zeros([2, 3, 2, 2]), 1, 'same'),
      { message: "Conv2D (mha-wasm/tfjs fast kernels): only Conv1D's case is supported (float32, channels last, a filter 1 row high, stride 1, dilation 1), got a filter 2 rows high" });
  } finally {
    alone.restore();
    tf.registerKernel(own);
  }
});
