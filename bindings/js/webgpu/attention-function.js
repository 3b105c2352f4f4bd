// scaledDotProductAttentionAsync on the WebGPU backend: the call read, checked and planned by the
// wasm module's function (core/attention-function.js, the core's plan), its inputs laid out as the
// layer's GPU attention reads its projections (attention.js: q [B*L, Hq*E], k / v [B*T, Hkv*D],
// additive masks), then the layer's own kernels (flash_attention.wgsl, attention_weights.wgsl;
// the step path's for capture; the layer's attention backward for grad, in
// attention-function-backward.js). Inputs may be CPU arrays or GPU tensors ({ buffer, shape }),
// laid out on the GPU; results come back as CPU arrays or, with outputLocation 'gpu', stay there.
// A per-batch (or negative) causal offset, which the kernels' unsigned positions cannot hold, goes
// into the mask with the window and ALiBi that depend on it.
import { CAUSAL_MODES, OPTION_KEYS, PLAN_ATTENTION } from '../core/attention-function.js';
import { withCallName } from '../api/errors.js';
import { checkKnownKeys, describe } from '../api/validate.js';
import { encodeAttention, scoreParams } from './attention.js';
import { attentionTrainingResult } from './attention-function-backward.js';
import { copyRows, encodeLayout } from './attention-function-layout.js';
import { failWithLoss, runChecked } from './gpu-work.js';
import { uniformData } from './kernel-manifest.js';
import { keysPerTile, planKernels, rowsPerTile } from './kernel-plan.js';
import { encodeScoreSteps } from './steps.js';
import { CallBuffers, checkGpuInputs, checkInput, resultTensors } from './tensors.js';

const CALL = 'scaledDotProductAttentionAsync';
const count = (shape) => shape.reduce((n, d) => n * d, 1);

/**
 * The masks as the kernels read them: attnMask additive, broadcast (NumPy) and padded with
 * blocked keys to [L, T] (shared) or [B*Hq, L, T]. `positions`, when given ({ offset(b), window,
 * slopes }): query i of batch row b sits at position p = i + offset(b), which the kernels'
 * unsigned positions cannot hold (a negative or per-batch causal offset), so its rules go into the
 * mask, as the core's visible_keys and transform_score apply them: keys j > p blocked, and with a
 * window keys j <= p - window; ALiBi adds -slope[h] * |p - j|.
 */
function maskFor(attnMask, z, positions) {
  const { B, Hq, L, T } = z;
  if (!attnMask && !positions) return { data: null, perHead: false };
  const shape = attnMask ? [...Array(4 - attnMask.shape.length).fill(1), ...attnMask.shape] : [1, 1, 1, T];
  const perHead = Boolean(positions) || shape[0] > 1 || shape[1] > 1;
  const blocks = perHead ? B * Hq : 1;
  const out = new Float32Array(blocks * L * T);
  for (let block = 0; block < blocks; block++) {
    const b = Math.floor(block / Hq), h = block % Hq;
    const slope = positions?.slopes ? Math.fround(positions.slopes[h]) : 0;
    for (let i = 0; i < L; i++) {
      const p = positions ? i + positions.offset(b) : 0;
      const begin = positions?.window > 0 ? p - positions.window + 1 : -Infinity;
      for (let j = 0; j < T; j++) {
        let bias = 0;
        if (attnMask) {
          const at = (((shape[0] > 1 ? b : 0) * shape[1] + (shape[1] > 1 ? h : 0)) * shape[2] + (shape[2] > 1 ? i : 0)) * shape[3] + j;
          const m = j < shape[3] ? attnMask.data[at] : undefined;
          bias = m === undefined ? -Infinity : attnMask.data instanceof Uint8Array ? (m ? 0 : -Infinity) : m;
        }
        if (positions && (j > p || j < begin)) bias = -Infinity;
        else if (slope) bias -= Math.fround(slope * Math.abs(p - j));
        out[(block * L + i) * T + j] = bias;
      }
    }
  }
  return { data: out, perHead };
}

/**
 * The call's causal rule as the kernels take it: { firstQuery, causal, positions (maskFor's: the
 * offsets, window and ALiBi slopes that go into the mask instead) }.
 */
function causalRule(tensors, scalars, { T, L }) {
  const causal = scalars.causal !== CAUSAL_MODES.none;
  if (scalars.causal !== CAUSAL_MODES.offset && scalars.causal !== CAUSAL_MODES.bottomRight) return { firstQuery: 0, causal, positions: null };
  const offsets = scalars.causal === CAUSAL_MODES.bottomRight ? [T - L] : tensors.causalOffsets.data;
  const same = offsets.every((o) => o === offsets[0]);
  if (offsets[0] >= 0 && same) return { firstQuery: offsets[0], causal, positions: null };
  // The kernels hold one unsigned position per call: a negative or per-batch offset's rules go
  // into the mask. One offset still keys dropout's rows (wrapped to 32 bits, as the core's stream casts it).
  if (!same && scalars.dropout) {
    throw new TypeError('dropout: with a per-batch causalOffset is not supported on WebGPU yet (dropout keys each row '
      + 'by its position; the wasm module\'s function has it)');
  }
  const positions = { offset: (b) => offsets[offsets.length === 1 ? 0 : b], window: scalars.slidingWindow, slopes: scalars.alibiSlopes ?? null };
  return { firstQuery: same ? offsets[0] : 0, causal: false, positions };
}

const isGpuTensor = (t) => t !== null && typeof t === 'object' && 'buffer' in t && !ArrayBuffer.isView(t);

/**
 * The call's GPU tensors ({ buffer, shape }) checked (tensors.js' checkInput) and taken out:
 * { args: [query, key, value, options] with zero stand-ins of their shapes for the planner (which
 * checks shapes, never values), onGpu: { name: checked GPU tensor } }.
 */
function takeGpuInputs(query, key, value, options) {
  const onGpu = {};
  const take = (name, t, expected) => {
    if (!isGpuTensor(t)) return t;
    onGpu[name] = checkInput(name, t, { expected });
    return { data: new Float32Array(count(onGpu[name].shape)), shape: onGpu[name].shape };
  };
  const packed = options.numHeads !== undefined;
  const args = [
    take('query', query, packed ? '[B, L, numHeads*E]' : '[B, Hq, L, E] or [Hq, L, E]'),
    take('key', key, packed ? '[B, S, kvNumHeads*E]' : '[B, Hkv, S, E]'),
    take('value', value, packed ? '[B, S, kvNumHeads*Ev]' : '[B, Hkv, S, Ev]'),
    { ...options },
  ];
  for (const name of ['pastKey', 'pastValue']) {
    if (options[name] !== undefined) args[3][name] = take(name, options[name], `[B, Hkv, P, ${name === 'pastKey' ? 'E' : 'Ev'}]`);
  }
  return { args, onGpu };
}

/** The module's scaledDotProductAttentionAsync on `gpu` ({ device, ... } from openDevice), planned by `wasm`. */
export function defineWebGpuAttentionFunction(gpu, wasm) {
  const { device } = gpu;

  /**
   * Encodes and submits the forward pass: inputs laid out as rows (the pasts concatenated before
   * the new keys), attention (its log-sum-exps kept with grad), the captured steps, and the
   * results in the call's layouts. Returns the buffers of the results and what backward needs.
   */
  function submitForward(buffers, call, z, onGpu, { grad, keepOutput }) {
    const { tensors, scalars, plan } = call;
    const { B, Hq, Hkv, L, S, P, T, E, Ev, packed } = z;
    const KV = Hkv * E, VKV = Hkv * Ev;
    const { firstQuery, causal, positions } = causalRule(tensors, scalars, z);
    const mask = maskFor(tensors.attnMask, z, positions);
    const keyPadding = tensors.kvSeqLens && Float32Array.from({ length: B * T }, (_, at) => (at % T < tensors.kvSeqLens.data[Math.floor(at / T)] ? 0 : -Infinity));
    const c = {
      numHeads: Hq, numKvHeads: Hkv, headDim: E, valueHeadDim: Ev,
      scale: scalars.scale ?? 1 / Math.sqrt(E), softcap: scalars.softcap || 0,
      // (in the mask when the positions are)
      slidingWindow: positions ? 0 : scalars.slidingWindow || 0, alibiSlopes: positions ? null : scalars.alibiSlopes ?? null,
      sinks: Boolean(tensors.sinks),
    };
    const headParams = new Float32Array(2 * Hq);
    if (tensors.sinks) headParams.set(tensors.sinks.data);
    if (c.alibiSlopes) headParams.set(c.alibiSlopes, Hq);
    const source = (name) => onGpu[name]?.buffer ?? buffers.upload(tensors[name].data, name);

    const encoder = device.createCommandEncoder();
    let pass = encoder.beginComputePass();
    /**
     * Input `name` ([B, H, N, D], or rows already in the 3-D form) as the kernels' rows; a copy
     * of a caller's GPU tensor with grad (the backward reads its own copies, as the wasm function's).
     */
    const rowsOf = (name, H, N, D, inRows = packed) => {
      if (inRows && !(grad && onGpu[name])) return source(name);
      const rows = buffers.storage(B * N * H * D, `${name} rows`);
      const layout = inRows ? { H: 1, D: H * D } : { H, D };  // (one head of H * D: a plain copy)
      encodeLayout(device, pass, buffers, { tensor: source(name), rows, B, N, ...layout, toRows: true });
      return rows;
    };
    const q = rowsOf('query', Hq, L, E);
    let k = rowsOf('key', Hkv, S, E), v = rowsOf('value', Hkv, S, Ev);
    if (tensors.pastKey) {  // present = past rows, then the new ones, in each batch row
      const pastK = rowsOf('pastKey', Hkv, P, E, false), pastV = rowsOf('pastValue', Hkv, P, Ev, false);
      pass.end();
      const [allK, allV] = [buffers.storage(B * T * KV, 'present key rows'), buffers.storage(B * T * VKV, 'present value rows')];
      copyRows(encoder, { from: pastK, fromRows: P, to: allK, toRows: T, n: P, B, width: KV });
      copyRows(encoder, { from: k, fromRows: S, to: allK, toRows: T, toStart: P, n: S, B, width: KV });
      copyRows(encoder, { from: pastV, fromRows: P, to: allV, toRows: T, n: P, B, width: VKV });
      copyRows(encoder, { from: v, fromRows: S, to: allV, toRows: T, toStart: P, n: S, B, width: VKV });
      [k, v] = [allK, allV];
      pass = encoder.beginComputePass();
    }
    const attended = buffers.storage(B * L * Hq * Ev, 'attended');
    const weights = plan.weights && buffers.storage(count(plan.weights), 'weights');
    const lse = grad ? buffers.storage(B * Hq * L, 'log-sum-exps') : null;
    const attention = {
      B, L, S: T, kvRows: T, firstQuery, causal,
      kernels: planKernels(c, { B, L, S: T, weights: Boolean(weights), dropout: Boolean(scalars.dropout) }),
      keyPadding: keyPadding && buffers.upload(keyPadding, 'kvSeqLens as a key padding mask'),
      attnMask: mask.data && buffers.upload(mask.data, 'attention mask'), attnMaskPerHead: mask.perHead,
      averageWeights: false, dropout: scalars.dropout ? { p: scalars.dropout, seed: scalars.seed, weightsBeforeDropout: false } : null,
    };
    const headBuffer = buffers.upload(headParams, 'sinks and ALiBi slopes');
    encodeAttention(device, pass, buffers, c, {
      ...attention, q, k, v, attended, weights, headParams: headBuffer, dummy: buffers.storage(4, 'unused'), lse,
    });
    const results = { weights: weights && { buffer: weights, shape: plan.weights } };
    if (plan.steps) {  // the steps path's kernels, on the same inputs and parameters
      const steps = encodeScoreSteps(device, pass, buffers, c, buffers.uniform(uniformData('steps_scores', scoreParams(c, attention)), 'step params'), {
        B, L, S: T, q, k, keyPadding: attention.keyPadding ?? headBuffer, attnMask: attention.attnMask ?? headBuffer,
        headParams: headBuffer, capped: Boolean(plan.capped),
      });
      results.steps = Object.fromEntries(['scores', 'capped', 'logits', 'pattern'].filter((name) => steps[name])
        .map((name) => [name, { buffer: steps[name], shape: plan.steps }]));
    }
    /** Rows (rowsPerBatch of them per batch row, the first N taken) as a new [B, H, N, D] tensor. */
    const unrows = (rows, H, N, D, label, rowsPerBatch = N) => {
      const tensor = buffers.storage(B * H * N * D, label);
      encodeLayout(device, pass, buffers, { tensor, rows, B, H, N, D, rowsPerBatch, toRows: false });
      return tensor;
    };
    let output = packed ? attended : unrows(attended, Hq, L, Ev, 'output');
    if (plan.presentKey) {
      results.presentKey = { buffer: unrows(k, Hkv, T, E, 'presentKey'), shape: plan.presentKey };
      results.presentValue = { buffer: unrows(v, Hkv, T, Ev, 'presentValue'), shape: plan.presentValue };
    }
    pass.end();
    if (keepOutput && output === attended) {  // (the caller's output must not be the buffer backward reads)
      output = buffers.storage(B * L * Hq * Ev, 'output');
      encoder.copyBufferToBuffer(attended, 0, output, 0, B * L * Hq * Ev * 4);
    }
    results.output = { buffer: output, shape: plan.output };
    device.queue.submit([encoder.finish()]);
    return { results, saved: { c, attention, q, k, v, attended, lse, headParams: headBuffer } };
  }

  async function run(query, key, value, options) {
    checkKnownKeys('options', options, [...OPTION_KEYS, 'outputLocation']);
    const { outputLocation = 'cpu', ...rest } = options;
    if (outputLocation !== 'cpu' && outputLocation !== 'gpu') throw new TypeError(`outputLocation must be 'cpu' or 'gpu', got ${describe(outputLocation)}`);
    const { args, onGpu } = takeGpuInputs(query, key, value, rest);
    const call = wasm[PLAN_ATTENTION](...args);
    const z = call.plan.sizes;  // B, Hq, Hkv, L, S, P, T, E, Ev and the form, as the core planned them
    if (keysPerTile(z.E, z.Ev) < 1) {
      throw new RangeError(`E + Ev = ${z.E + z.Ev} floats per key do not fit the kernels' workgroup storage`);
    }
    const grad = call.grad;
    if (grad && rowsPerTile({ headDim: z.E, valueHeadDim: z.Ev }) < 1) {
      throw new RangeError(`grad: E + Ev = ${z.E + z.Ev} floats per query row do not fit the backward kernel's workgroup storage`);
    }
    await checkGpuInputs(device, Object.entries(onGpu));
    const toGpu = outputLocation === 'gpu';
    const buffers = new CallBuffers(device);
    let kept = false;  // true when a training result holds the buffers for its backward pass
    try {
      return await failWithLoss(device, CALL, async () => {
        const { results, saved } = await runChecked(device, () => submitForward(buffers, call, z, onGpu, { grad, keepOutput: grad && toGpu }));
        const { steps, ...tensors } = results;
        const [shaped, captured] = await Promise.all([resultTensors(device, buffers, tensors, toGpu),
          steps && resultTensors(device, buffers, steps, toGpu)]);
        const result = Object.fromEntries(Object.entries(shaped).filter(([, t]) => t));
        if (captured) result.steps = captured;
        if (!grad) return result;
        kept = true;
        return attentionTrainingResult(device, { ...saved, buffers, z, shapes: Object.fromEntries(
          ['query', 'key', 'value', 'pastKey', 'pastValue'].map((name) => [name, call.tensors[name] && [...call.tensors[name].shape]])) }, result);
      });
    } finally {
      if (!kept) buffers.free();
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
