// mha-wasm's WebGPU backend on tfjs' own GPUDevice in Chromium (SwiftShader): tfjs tensors in
// through their GPU buffers, results out as tfjs tensors, no CPU round trip in between (no buffer
// mapped while it runs), the same values as the wasm layer's; a buffer of another device is a
// clear error.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { startServer } from '../../tools/serve.mjs';
import { launchBrowser } from './browser.js';

let server, browser, page;
const problems = [];

before(async () => {
  let url;
  ({ server, url } = await startServer({ port: 0 }));
  browser = await launchBrowser({ gpu: true });
  page = await browser.context.newPage();
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  await page.goto(`${url}/style.css`);  // any page of the server's origin
  await page.addScriptTag({ url: '/node_modules/@tensorflow/tfjs/dist/tf.min.js' });
  await page.addScriptTag({ url: '/node_modules/@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js' });
  await page.evaluate(async () => {
    if (!(await window.tf.setBackend('webgpu'))) throw new Error('tfjs webgpu did not start');
    // Every readback to the CPU maps a buffer: count them.
    window.mapped = 0;
    const mapAsync = GPUBuffer.prototype.mapAsync;
    GPUBuffer.prototype.mapAsync = function counted(...args) { window.mapped += 1; return mapAsync.apply(this, args); };
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

test('init on tfjs\' device: tfjs tensors in and out on the GPU, equal to the wasm layer, nothing mapped', async () => {
  const result = await page.evaluate(async () => {
    const { tf } = window;
    const { init } = await import('/bindings/js/index.js');
    const { tfjsToGpu, gpuToTfjs } = await import('/bindings/js/tfjs.js');
    const gpu = await init({ backend: 'webgpu', device: tf.backend().device });
    const wasm = await init({ threads: 1 });
    const config = { embedDim: 16, numHeads: 2, seed: 3 };
    const reference = new wasm.MultiHeadAttention(config).initialize({ seed: 3 });
    const layer = new gpu.MultiHeadAttention(config).loadStateDict(reference.stateDict());
    const values = Float32Array.from({ length: 2 * 5 * 16 }, (_, i) => Math.sin(i * 0.37));
    const queryOnCpu = tf.tensor(values, [2, 5, 16]);  // (values made from JS: moved to the GPU by tfjsToGpu)
    const query = tf.mul(queryOnCpu, 1);               // (a kernel's output: already on the GPU)
    const dOutValues = Float32Array.from({ length: 2 * 5 * 16 }, (_, i) => Math.cos(i * 0.11));
    const dOut = tf.mul(tf.tensor(dOutValues, [2, 5, 16]), 1);
    const expected = reference.forward({ data: values, shape: [2, 5, 16] }, null, null, { causal: true, grad: true });
    const expectedGrads = expected.backward({ data: dOutValues, shape: [2, 5, 16] });

    const mappedBefore = window.mapped;
    const input = tfjsToGpu(tf, query);
    const input2 = tfjsToGpu(tf, queryOnCpu);
    const { output } = await layer.forwardAsync(input, null, null, { causal: true, outputLocation: 'gpu' });
    const wrapped = gpuToTfjs(tf, output, { zeroCopy: true });
    const sameBuffer = tf.backend().tensorMap.get(wrapped.dataId).resource === output.buffer;  // (tfjs' internals: proof of zero copy)
    const doubled = tf.mul(wrapped, 2);  // tfjs computes on our buffer
    const second = await layer.forwardAsync(input2, null, null, { causal: true, outputLocation: 'gpu' });
    const copied = gpuToTfjs(tf, second.output);  // tfjs' own copy: ours can go at once
    second.output.dispose();
    await tf.backend().device.queue.onSubmittedWorkDone();
    const forwardMaps = window.mapped - mappedBefore;
    const train = await layer.forwardAsync(input, null, null, { causal: true, grad: true, outputLocation: 'gpu' });
    const dOutGpu = tfjsToGpu(tf, dOut);
    const grads = await train.backwardAsync(dOutGpu, { outputLocation: 'cpu' });  // (gradients read back to compare)
    const [outData, doubledData, copiedData] = await Promise.all([wrapped.data(), doubled.data(), copied.data()]);
    tf.dispose([wrapped, doubled, copied, queryOnCpu, query, dOut]);
    output.dispose();  // (after the tensor that read it)
    train.output.dispose();
    input.dispose(); input2.dispose(); dOutGpu.dispose();
    const worst = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]) / Math.max(1, Math.abs(b[i]))), 0);

    // A buffer of another device: an mha-wasm module on a device of its own gets tfjs' buffer.
    const own = await init({ backend: 'webgpu' });
    const stranger = new own.MultiHeadAttention(config).loadStateDict(reference.stateDict());
    const foreign = tfjsToGpu(tf, tf.ones([2, 5, 16]));
    let error = null;
    try { await stranger.forwardAsync(foreign, null, null, { outputLocation: 'gpu' }); } catch (e) { error = e.message; }
    foreign.dispose();
    stranger.dispose(); layer.dispose(); reference.dispose();
    return {
      sameDevice: gpu.device === tf.backend().device, sameBuffer, inputUsage: input.buffer.usage,
      output: worst(outData, expected.output.data), doubled: worst(doubledData, expected.output.data.map((x) => 2 * x)),
      copied: worst(copiedData, expected.output.data),
      dQuery: worst(grads.query.data, expectedGrads.query.data),
      forwardMaps, error,
    };
  });
  console.log(`# ${JSON.stringify(result)}`);
  assert.equal(result.sameDevice, true);
  assert.equal(result.sameBuffer, true, 'zeroCopy: the tfjs tensor reads our output buffer itself');
  assert.equal(result.inputUsage & 0x80, 0x80, 'tfjs\' buffer is a storage buffer');
  assert.ok(result.output < 1e-5, `output vs wasm ${result.output}`);
  assert.ok(result.doubled < 1e-5, `tfjs' kernel on our buffer ${result.doubled}`);
  assert.ok(result.copied < 1e-5, `copied output ${result.copied}`);
  assert.ok(result.dQuery < 1e-5, `dQuery from tfjs' dOut buffer ${result.dQuery}`);
  // tfjs' tensors in, two forwards, the results wrapped and used by a tfjs kernel: no buffer mapped.
  assert.equal(result.forwardMaps, 0, 'no readback between tfjs and mha-wasm');
  assert.match(result.error ?? '', /query\.buffer cannot be used on this layer's device \(a buffer of another GPUDevice/);
  assert.deepEqual(problems, []);
});
