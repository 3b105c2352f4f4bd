// scaledDotProductAttentionAsync on the WebGPU backend: the call read, checked and planned by the
// wasm module's function (core/attention-function.js, the core's plan), its inputs laid out as the
// layer's GPU attention reads its projections (attention.js: q [B*L, Hq*E], k / v [B*T, Hkv*D],
// additive masks), then the layer's own kernels (flash_attention.wgsl, attention_weights.wgsl).
// Inputs and results are CPU arrays; capture, grad, GPU-buffer tensors and a per-batch (or
// negative) causal offset together with a window or ALiBi are refused by name.
import { PLAN_ATTENTION } from '../core/attention-function.js';
import { withCallName } from '../core/errors.js';
import { describe } from '../core/validate.js';
import { encodeAttention } from './attention.js';
import { failWithLoss, runChecked } from './gpu-work.js';
import { keysPerTile, planKernels } from './kernel-plan.js';
import { CallBuffers, readBack } from './tensors.js';

const CALL = 'scaledDotProductAttentionAsync';
const CAUSAL = { none: 0, topLeft: 1, bottomRight: 2, offset: 3 };  // the core's modes (attention-function.js)
const count = (shape) => shape.reduce((n, d) => n * d, 1);

/** The call's sizes from its plan and inputs: B, Hq, Hkv, L, S, P, T, E, Ev and the form. */
function sizesOf({ tensors, scalars, plan }) {
  const packed = scalars.numHeads > 0, q = tensors.query.shape, k = tensors.key.shape, v = tensors.value.shape;
  const batched = packed || q.length === 4;
  const B = batched ? q[0] : 1;
  const Hq = packed ? scalars.numHeads : q[q.length - 3];
  const Hkv = packed ? scalars.kvNumHeads || scalars.numHeads : k[k.length - 3];
  const L = packed ? q[1] : q[q.length - 2];
  const S = packed ? k[1] : k[k.length - 2];
  const E = packed ? q[2] / Hq : q[q.length - 1];
  const Ev = packed ? v[2] / Hkv : v[v.length - 1];
  const P = tensors.pastKey ? tensors.pastKey.shape[tensors.pastKey.shape.length - 2] : 0;
  return { packed, batched, B, Hq, Hkv, L, S, P, T: P + S, E, Ev, outputShape: plan.output };
}

/** Head h's rows of a [B, H, N, D] tensor (or, packed, [B, N, H*D]) as [B, N, H*D] rows: the kernels' layout. */
function toRows(data, { packed }, B, H, N, D) {
  if (packed) return data;
  const rows = new Float32Array(B * N * H * D);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let n = 0; n < N; n++) {
    rows.set(data.subarray(((b * H + h) * N + n) * D, ((b * H + h) * N + n + 1) * D), ((b * N + n) * H + h) * D);
  }
  return rows;
}

/** [B, N, H*D] rows back to the [B, H, N, D] layout. */
function fromRows(rows, B, H, N, D) {
  const data = new Float32Array(B * H * N * D);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let n = 0; n < N; n++) {
    data.set(rows.subarray(((b * N + n) * H + h) * D, ((b * N + n) * H + h + 1) * D), ((b * H + h) * N + n) * D);
  }
  return data;
}

/** [B, Hkv, T, D] (4-D): the past's rows, then the new ones (key / value in the call's layout). */
function present(past, fresh, z, D) {
  const { B, Hkv, S, P, T, packed } = z;
  const out = new Float32Array(B * Hkv * T * D);
  for (let b = 0; b < B; b++) for (let h = 0; h < Hkv; h++) {
    if (past) out.set(past.subarray((b * Hkv + h) * P * D, (b * Hkv + h + 1) * P * D), (b * Hkv + h) * T * D);
    for (let j = 0; j < S; j++) {
      const at = packed ? ((b * S + j) * Hkv + h) * D : ((b * Hkv + h) * S + j) * D;
      out.set(fresh.subarray(at, at + D), ((b * Hkv + h) * T + P + j) * D);
    }
  }
  return out;
}

/**
 * The masks as the kernels read them: attnMask additive, broadcast (NumPy) and padded with
 * blocked keys to [L, T] (shared) or [B*Hq, L, T]; `rowLimit(b)`, when given, blocks keys
 * j > i + rowLimit(b) (a causal offset the kernels' unsigned positions cannot hold).
 */
function maskFor(attnMask, z, rowLimit) {
  const { B, Hq, L, T } = z;
  if (!attnMask && !rowLimit) return { data: null, perHead: false };
  const shape = attnMask ? [...Array(4 - attnMask.shape.length).fill(1), ...attnMask.shape] : [1, 1, 1, T];
  const perHead = Boolean(rowLimit) || shape[0] > 1 || shape[1] > 1;
  const blocks = perHead ? B * Hq : 1;
  const out = new Float32Array(blocks * L * T);
  for (let block = 0; block < blocks; block++) {
    const b = Math.floor(block / Hq), h = block % Hq;
    for (let i = 0; i < L; i++) {
      for (let j = 0; j < T; j++) {
        let bias = 0;
        if (attnMask) {
          const at = (((shape[0] > 1 ? b : 0) * shape[1] + (shape[1] > 1 ? h : 0)) * shape[2] + (shape[2] > 1 ? i : 0)) * shape[3] + j;
          const m = j < shape[3] ? attnMask.data[at] : undefined;
          bias = m === undefined ? -Infinity : attnMask.data instanceof Uint8Array ? (m ? 0 : -Infinity) : m;
        }
        if (rowLimit && j > i + rowLimit(b)) bias = -Infinity;
        out[(block * L + i) * T + j] = bias;
      }
    }
  }
  return { data: out, perHead };
}

/** The module's scaledDotProductAttentionAsync on `gpu` ({ device, ... } from openDevice), planned by `wasm`. */
export function defineWebGpuAttentionFunction(gpu, wasm) {
  const { device } = gpu;

  async function run(query, key, value, options) {
    for (const [name, t] of [['query', query], ['key', key], ['value', value], ['pastKey', options?.pastKey], ['pastValue', options?.pastValue]]) {
      if (t && typeof t === 'object' && 'buffer' in t && !ArrayBuffer.isView(t)) {
        throw new TypeError(`${name}: GPU-buffer tensors are not taken by scaledDotProductAttentionAsync on WebGPU yet; pass { data, shape }`);
      }
    }
    for (const name of ['capture', 'grad']) {
      if (options?.[name]) throw new TypeError(`${name}: not supported by scaledDotProductAttentionAsync on WebGPU yet (the wasm module's function has it)`);
    }
    const call = wasm[PLAN_ATTENTION](query, key, value, options);
    const { tensors, scalars, plan } = call;
    const z = sizesOf(call);
    const { B, Hq, Hkv, L, T, E, Ev } = z;
    if (keysPerTile(E, Ev) < 1) {
      throw new RangeError(`E + Ev = ${E + Ev} floats per key do not fit the kernels' workgroup storage`);
    }
    // Where query row 0 sits; a negative or per-batch offset becomes part of the mask instead.
    let firstQuery = 0, causal = scalars.causal !== CAUSAL.none, rowLimit = null;
    if (scalars.causal === CAUSAL.bottomRight) [firstQuery, rowLimit] = [T - L, () => T - L];
    if (scalars.causal === CAUSAL.offset) {
      const offsets = tensors.causalOffsets.data;
      firstQuery = offsets[0];
      if (offsets.some((o) => o !== offsets[0])) firstQuery = -1;
      if (offsets.length === 1) rowLimit = () => offsets[0];
      else rowLimit = (b) => offsets[b];
    }
    if (firstQuery < 0) {
      if (scalars.slidingWindow || scalars.alibiSlopes) {
        throw new TypeError(`causalOffset: a per-batch or negative offset with ${scalars.slidingWindow ? 'slidingWindow' : 'alibiSlopes'} `
          + 'is not supported on WebGPU yet (the wasm module\'s function has it)');
      }
      [firstQuery, causal] = [0, false];
    } else {
      rowLimit = null;
    }
    const mask = maskFor(tensors.attnMask, z, rowLimit);
    const keyPadding = tensors.kvSeqLens && Float32Array.from({ length: B * T }, (_, at) => (at % T < tensors.kvSeqLens.data[Math.floor(at / T)] ? 0 : -Infinity));
    const presentKey = present(tensors.pastKey?.data, tensors.key.data, z, E);
    const presentValue = present(tensors.pastValue?.data, tensors.value.data, z, Ev);
    const c = {
      numHeads: Hq, numKvHeads: Hkv, headDim: E, valueHeadDim: Ev,
      scale: scalars.scale ?? 1 / Math.sqrt(E), softcap: scalars.softcap || 0, slidingWindow: scalars.slidingWindow || 0,
      sinks: Boolean(tensors.sinks), alibiSlopes: scalars.alibiSlopes ?? null,
    };
    const headParams = new Float32Array(2 * Hq);
    if (tensors.sinks) headParams.set(tensors.sinks.data);
    if (scalars.alibiSlopes) headParams.set(scalars.alibiSlopes, Hq);

    const buffers = new CallBuffers(device);
    try {
      const attended = buffers.storage(B * L * Hq * Ev, 'attended');
      const weights = plan.weights && buffers.storage(count(plan.weights), 'weights');
      await failWithLoss(device, CALL, () => runChecked(device, () => {
        const encoder = device.createCommandEncoder();
        const pass = encoder.beginComputePass();
        encodeAttention(device, pass, buffers, c, {
          B, L, S: T, kvRows: T, firstQuery, causal, kernels: planKernels(c, { B, L, S: T, weights: Boolean(weights), dropout: Boolean(scalars.dropout) }),
          q: buffers.upload(toRows(tensors.query.data, z, B, Hq, L, E), 'query'),
          k: buffers.upload(toRows(presentKey, { packed: false }, B, Hkv, T, E), 'keys'),
          v: buffers.upload(toRows(presentValue, { packed: false }, B, Hkv, T, Ev), 'values'),
          attended, weights, headParams: buffers.upload(headParams, 'sinks and ALiBi slopes'),
          keyPadding: keyPadding && buffers.upload(keyPadding, 'kvSeqLens as a key padding mask'),
          attnMask: mask.data && buffers.upload(mask.data, 'attention mask'), attnMaskPerHead: mask.perHead,
          averageWeights: false, dropout: scalars.dropout ? { p: scalars.dropout, seed: scalars.seed, weightsBeforeDropout: false } : null,
          dummy: buffers.storage(4, 'unused'), lse: null,
        });
        pass.end();
        device.queue.submit([encoder.finish()]);
      }));
      const rows = await readBack(device, attended, B * L * Hq * Ev);
      const result = { output: { data: z.packed ? rows : fromRows(rows, B, Hq, L, Ev), shape: plan.output } };
      if (plan.presentKey) {
        result.presentKey = { data: presentKey, shape: plan.presentKey };
        result.presentValue = { data: presentValue, shape: plan.presentValue };
      }
      if (weights) result.weights = { data: await readBack(device, weights, count(plan.weights)), shape: plan.weights };
      return result;
    } finally {
      buffers.free();
    }
  }

  /** scaledDotProductAttention on the GPU (docs/attention-function.md): the same arguments and result as the wasm module's. */
  async function scaledDotProductAttentionAsync(query, key, value, options = {}) {
    try {
      if (gpu.lost) throw new Error(`the GPU device was lost (${gpu.lost.reason}): ${gpu.lost.message}`);
      if (options === null || typeof options !== 'object') throw new TypeError(`options must be an object, got ${describe(options)}`);
      return await run(query, key, value, options);
    } catch (error) {
      throw withCallName(error, CALL, ['scaledDotProductAttention']);
    }
  }

  return { scaledDotProductAttentionAsync };
}
