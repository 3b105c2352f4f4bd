// scaledDotProductAttentionAsync({ grad: true })'s result on WebGPU: the forward's buffers kept on
// the GPU (q, k, v in the kernels' rows, the attended values, the rows' log-sum-exps, masks) and
// backwardAsync(dOut) running the layer's attention backward on them (backward.js'
// encodeAttentionBackward), its gradients laid out as the call's inputs: query, key, value, and
// pastKey / pastValue when the call had a past. The result is the layer's WebGPU training result
// (training.js): backwardAsync once, or release().
import { copyRows, encodeLayout } from './attention-function-layout.js';
import { encodeAttentionBackward } from './backward.js';
import { failWithLoss, runChecked } from './gpu-work.js';
import { CallBuffers, resultTensors } from './tensors.js';
import { gpuTrainingRecord, GpuTrainingResult } from './training.js';

/**
 * Encodes and submits the backward pass of `saved` for dLoss/dOutput in the GPUBuffer `dOut`.
 * Returns { name: { buffer, shape } } for query, key, value (and pastKey, pastValue).
 */
function submitBackward(device, buffers, saved, dOut) {
  const { c, z, shapes } = saved;
  const { B, Hq, Hkv, L, S, P, T, E, Ev, packed } = z;
  const KV = Hkv * E, VKV = Hkv * Ev;
  const encoder = device.createCommandEncoder();
  let pass = encoder.beginComputePass();
  const toTensor = (rows, H, N, D, label, rowsPerBatch = N) => {
    const tensor = buffers.storage(B * H * N * D, label);
    encodeLayout(device, pass, buffers, { tensor, rows, B, H, N, D, rowsPerBatch, toRows: false });
    return tensor;
  };
  let dAttended = dOut;
  if (!packed) {
    dAttended = buffers.storage(B * L * Hq * Ev, 'd attended');
    encodeLayout(device, pass, buffers, { tensor: dOut, rows: dAttended, B, H: Hq, N: L, D: Ev, toRows: true });
  }
  const dq = buffers.storage(B * L * Hq * E, 'dq'), dk = buffers.storage(B * T * KV, 'dk'), dv = buffers.storage(B * T * VKV, 'dv');
  encodeAttentionBackward(device, pass, buffers, c, saved.attention, {
    B, L, S: T, q: saved.q, k: saved.k, v: saved.v, attended: saved.attended, dAttended, lse: saved.lse,
    headParams: saved.headParams, dq, dk, dv, dSinks: null,
  });
  const grads = { query: packed ? dq : toTensor(dq, Hq, L, E, 'd query') };
  let [dKey, dValue] = [dk, dv];
  if (shapes.pastKey) {  // the present's rows split: the past's first, then the new keys'
    grads.pastKey = toTensor(dk, Hkv, P, E, 'd pastKey', T);
    grads.pastValue = toTensor(dv, Hkv, P, Ev, 'd pastValue', T);
    pass.end();
    [dKey, dValue] = [buffers.storage(B * S * KV, 'd key rows'), buffers.storage(B * S * VKV, 'd value rows')];
    copyRows(encoder, { from: dk, fromRows: T, fromStart: P, to: dKey, toRows: S, n: S, B, width: KV });
    copyRows(encoder, { from: dv, fromRows: T, fromStart: P, to: dValue, toRows: S, n: S, B, width: VKV });
    pass = encoder.beginComputePass();
  }
  grads.key = packed ? dKey : toTensor(dKey, Hkv, S, E, 'd key');
  grads.value = packed ? dValue : toTensor(dValue, Hkv, S, Ev, 'd value');
  pass.end();
  device.queue.submit([encoder.finish()]);
  return Object.fromEntries(Object.entries(grads).map(([name, buffer]) => [name, { buffer, shape: shapes[name] }]));
}

/** backwardAsync's work: the gradients read back, or with `onGpu` left on the GPU (the caller's). */
async function runBackward(device, saved, dOut, { onGpu }) {
  const buffers = new CallBuffers(device);
  try {
    return await failWithLoss(device, 'backwardAsync', async () => {
      const gradients = await runChecked(device, () => submitBackward(device, buffers, saved,
        dOut.buffer ?? buffers.upload(dOut.data, 'd output')));
      return await resultTensors(device, buffers, gradients, onGpu);
    });
  } finally {
    buffers.free();
  }
}

/**
 * The attention function's result with grad: `result` (its output, presents, weights, steps)
 * with backwardAsync(dOut, { outputLocation }) and release() (training.js' GpuTrainingResult).
 * `saved`: the forward's kept state, its `buffers` freed after the backward or by release().
 */
export function attentionTrainingResult(device, saved, result) {
  const record = gpuTrainingRecord(saved, {
    backward: (s, dOut, how) => runBackward(device, s, dOut, how),
    backwardNow: () => { throw new TypeError('the attention function has no synchronous backward on WebGPU'); },
    onFree: () => {},
  });
  const { output, weights, ...rest } = result;
  const training = new GpuTrainingResult(record, output, weights);
  if (!weights) delete training.weights;
  return Object.assign(training, rest);
}
