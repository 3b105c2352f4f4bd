// Attention step by step on the GPU (docs/steps.md): forward's `capture` and `patch` on the WebGPU
// backend. A teaching path, not a fast one: the projections as every call makes them
// (forward-pass.js's encodeProjections), then one plain, unfused kernel per step
// (wgsl/steps_*.wgsl), each writing its step to a buffer of its own so that it can be read back or
// replaced before the next step reads it. The kernels follow the CPU's step path
// (src/mha/steps/attention_steps.cpp) operation for operation, so both backends give the same numbers.
// Which steps a call captures, their shapes and a patch's heads are the C++ plan's (the planner's
// plannedSteps(), after checkForward): this file holds no list of steps of its own.
import { checkPatch } from '../api/step-options.js';
import { scoreParams } from './attention.js';
import { encodeUnpackHalves } from './cache-f16.js';
import { encodeProjections } from './forward-pass.js';
import { encodeGemm } from './gemm.js';
import { encodeGateProduct, encodeOutputGate } from './output-gate.js';
import { flatWorkgroups, uniformData, workgroups } from './kernel-manifest.js';
import { dispatch, pipeline } from './pipelines.js';
import { checkInput } from './tensors.js';


/**
 * steps_copy.wgsl: a step between its API layout (`step`) and the buffer the computation reads.
 * toBuffer false: capture (step <- buffer, every head); true: patch (buffer <- step, the flagged heads).
 * (The attention function also lays its [B, H, N, D] tensors out as rows with it, and back.)
 */
export function encodeCopy(device, pass, buffers, { buffer, step, flags, count, heads, rows, d, bufferRows, split, toBuffer }) {
  const params = uniformData('steps_copy', {
    count, heads, rows, d, buffer_rows: bufferRows, split, head_inner: split ? rows * d : d, to_buffer: toBuffer,
  });
  dispatch(device, pass, pipeline(device, 'steps_copy'),
    { 0: buffer, 1: step, 2: flags, 3: buffers.uniform(params, 'step copy') }, flatWorkgroups('steps_copy', count));
}

/**
 * forwardAsync's `patch` on WebGPU: core/steps.js' checkPatch, whose step tensor may also be a GPU
 * tensor ({ buffer, shape }, e.g. a step captured with outputLocation 'gpu'), checked as a GPU
 * input. Returns checkPatch's { steps, tensor, heads }, the tensor { buffer, shape, onGpu } then.
 */
export function checkWebGpuPatch(patch) {
  const steps = patch !== null && typeof patch === 'object' ? Object.keys(patch).filter((key) => key !== 'heads') : [];
  const t = steps.length > 0 ? patch[steps[0]] : null;
  if (t === null || typeof t !== 'object' || !('buffer' in t) || ArrayBuffer.isView(t)) return checkPatch(patch);
  const tensor = checkInput(`patch.${steps[0]}`, t, { expected: 'the captured shape of the step' });
  // (checkPatch checks the rest; an empty stand-in passes its CPU tensor check)
  return { ...checkPatch({ ...patch, [steps[0]]: { data: new Float32Array(0), shape: [0] } }), tensor };
}

/**
 * The workgroup counts the step path dispatches (layer.js checks them against the device's limits
 * before anything is made): name -> [x, y, z].
 */
export function stepsGroups(c, { B, L, S }) {
  return {
    'the step path\'s scores': workgroups('steps_scores', [S, L, B * c.numHeads]),
    'the step path\'s softmax': workgroups('steps_softmax', [L, c.numHeads, B]),
    'the step path\'s z': workgroups('steps_z', [c.valueHeadDim, L, B * c.numHeads]),
  };
}

/**
 * The score steps, one buffer each in their captured layout [B, H, L, S]: scores (scale * q.k),
 * logits (steps_scores.wgsl, through the shared epilogue) and the pattern (steps_softmax.wgsl);
 * with `capped`, also the softcapped scores before ALiBi and the masks. `params`: the call's
 * uniform block (attention.js' scoreParams, packed); q, k in the kernels' rows; masks additive (or
 * headParams where there is none). The layer's step path and the attention function's capture.
 */
export function encodeScoreSteps(device, pass, buffers, c, params, { B, L, S, q, k, keyPadding, attnMask, headParams, capped = false }) {
  const floats = B * c.numHeads * L * S;
  const steps = { scores: buffers.storage(floats, 'scores'), logits: buffers.storage(floats, 'logits'),
    pattern: buffers.storage(floats, 'pattern'), capped: capped ? buffers.storage(floats, 'capped') : null };
  const groups = stepsGroups(c, { B, L, S });
  dispatch(device, pass, pipeline(device, 'steps_scores', { DH: c.headDim, CAPPED: capped }), {
    0: q, 1: k, 3: keyPadding, 4: attnMask, 5: headParams, 6: params, 7: steps.scores, 8: steps.logits,
    9: steps.capped ?? buffers.storage(1, 'unused'),
  }, groups['the step path\'s scores']);
  dispatch(device, pass, pipeline(device, 'steps_softmax'),
    { 5: headParams, 6: params, 7: steps.logits, 8: steps.pattern }, groups['the step path\'s softmax']);
  return steps;
}

/**
 * A capture or patch call's step path (encodeSteps), for the layer's prepared call `call` (its
 * `planned` steps, patch and grad) and `forwardCall` (forward-pass.js's forwardCallOf). With grad
 * (capture only) it runs beside the fused pass, which makes the output and what backward reads:
 * its own output goes to an unused buffer. The captured `result` reads out_proj as float32:
 * `float32OutWeight()` gives a quantized one dequantized (as the wasm layer's step path reads it).
 */
export function encodeCallSteps(device, encoder, buffers, c, w, { call, forwardCall, float32OutWeight }) {
  const wantsResult = call.planned.captured.some((step) => step.name === 'result');
  const outWeight = w.out.dtype && wantsResult ? buffers.upload(float32OutWeight(), 'out_proj as float32') : w.out;
  const outputs = call.grad ? { output: buffers.storage(call.outputShape.reduce((n, d) => n * d, 1), 'unused output'), weights: null } : {};
  return encodeSteps(device, encoder, buffers, c, w, { ...forwardCall, ...outputs, outWeight, patchTensor: call.patch?.tensor }, call.planned);
}

/**
 * Encodes one call through the steps into `encoder`. `call`: encodeForward's (forward-pass.js),
 * plus `outWeight` (out_proj's weight as float32 on the GPU, for the result step) and
 * `patchTensor` (the patch's tensor: { data } on the CPU or { buffer } on the GPU); `planned`: the
 * planner's plannedSteps() { captured: [{ name, shape }], patch: { name, shape, heads: [bool] } | null }.
 * Writes the output (and weights) as encodeForward does; returns { name: GPUBuffer } for each
 * captured step, in the step's captured layout.
 */
export function encodeSteps(device, encoder, buffers, c, w, call, planned) {
  const { B, L, S, cached } = call;
  const H = c.numHeads, Hkv = c.numKvHeads, Dh = c.headDim, Dv = c.valueHeadDim;
  const KV = Hkv * Dh, VKV = Hkv * Dv, AD = H * Dv, OD = c.outputDim;
  let { q, keys, values, kvDtype, kvRows, pass } = encodeProjections(device, encoder, buffers, c, w, call);
  if (kvDtype === 'f16') {  // (the step kernels read float32: widen the seen rows of an f16 cache)
    keys = encodeUnpackHalves(device, pass, buffers, { cache: keys, B, rows: S, features: KV, capacity: kvRows, label: 'cache keys' });
    values = encodeUnpackHalves(device, pass, buffers, { cache: values, B, rows: S, features: VKV, capacity: kvRows, label: 'cache values' });
    kvRows = S;
  }
  const { patch } = planned;
  const patched = (name) => patch?.name === name;
  const patchBuffer = !patch ? null : call.patchTensor.onGpu ? call.patchTensor.buffer : buffers.upload(call.patchTensor.data, `patch ${patch.name}`);
  const flags = patch ? buffers.upload(Uint32Array.from(patch.heads, Number), 'patched heads') : buffers.storage(1, 'unused');
  const wanted = new Set(planned.captured.map((step) => step.name));

  // A patch of k or v with a cache changes what this call reads, never what the cache keeps:
  // the seen rows are copied out first and patched there.
  if ((patched('k') || patched('v')) && call.cache) {
    pass.end();
    const k = buffers.storage(B * S * KV, 'k (patched)'), v = buffers.storage(B * S * VKV, 'v (patched)');
    for (let b = 0; b < B && S > 0; b++) {
      encoder.copyBufferToBuffer(keys, b * kvRows * KV * 4, k, b * S * KV * 4, S * KV * 4);
      encoder.copyBufferToBuffer(values, b * kvRows * VKV * 4, v, b * S * VKV * 4, S * VKV * 4);
    }
    [keys, values, kvRows] = [k, v, S];
    pass = encoder.beginComputePass();
  }

  // q, k, v: patched in the projections' rows, then captured in split_heads' layout.
  const split = {
    q: { buffer: q, heads: H, rows: L, d: Dh, bufferRows: L },
    k: { buffer: keys, heads: Hkv, rows: S, d: Dh, bufferRows: kvRows },
    v: { buffer: values, heads: Hkv, rows: S, d: Dv, bufferRows: kvRows },
  };
  const captured = {};
  const countOf = (s) => B * s.heads * s.rows * s.d;
  if (patch && split[patch.name]) {
    const s = split[patch.name];
    encodeCopy(device, pass, buffers, { ...s, step: patchBuffer, flags, count: countOf(s), split: true, toBuffer: true });
  }
  for (const [name, s] of Object.entries(split)) {
    if (!wanted.has(name)) continue;
    captured[name] = buffers.storage(countOf(s), name);
    encodeCopy(device, pass, buffers, { ...s, step: captured[name], flags, count: countOf(s), split: true, toBuffer: false });
  }

  // scores and logits, then the pattern: one buffer each ([B, H, L, S], their captured layout).
  const headParams = w.headParams;
  const params = buffers.uniform(uniformData('steps_scores', scoreParams(c, {
    L, S, causal: call.causal, firstQuery: cached, keyPadding: call.keyPadding, attnMask: call.attnMask,
    attnMaskPerHead: call.attnMaskPerHead, averageWeights: call.averageWeights, weights: call.weights,
    dropout: call.dropout, kvRows,
  })), 'step params');
  const keyPadding = call.keyPadding ? buffers.upload(call.keyPadding, 'key padding mask') : headParams;
  const attnMask = call.attnMask ? buffers.upload(call.attnMask, 'attention mask') : headParams;
  const { scores, logits, pattern } = encodeScoreSteps(device, pass, buffers, c, params,
    { B, L, S, q, k: keys, keyPadding, attnMask, headParams });
  // Same layouts: a pattern's head is a block of L * S floats, z's a block of Dv in each row.
  const patchInPlace = (buffer, count, headBlock) => encodeCopy(device, pass, buffers, {
    buffer, step: patchBuffer, flags, count, heads: H, rows: 1, d: headBlock, bufferRows: 1, split: false, toBuffer: true });
  if (patched('pattern')) patchInPlace(pattern, B * H * L * S, L * S);
  Object.assign(captured, wanted.has('scores') && { scores }, wanted.has('logits') && { logits },
    wanted.has('pattern') && { pattern });

  // z: the pattern (after dropout when training) times v, in the rows the output projection reads.
  const z = buffers.storage(B * L * AD, 'z');
  dispatch(device, pass, pipeline(device, 'steps_z', { DV: Dv }),
    { 2: values, 6: params, 7: z, 8: pattern }, stepsGroups(c, { B, L, S })['the step path\'s z']);
  if (patched('z')) patchInPlace(z, B * L * AD, Dv);
  if (wanted.has('z')) captured.z = z;
  if (call.weights) {
    dispatch(device, pass, pipeline(device, 'steps_weights'), { 6: params, 7: call.weights, 8: pattern },
      workgroups('steps_weights', [S, L, B * (call.averageWeights ? 1 : H)]));
  }

  // The output gate (config gate): z times sigmoid of the query's gate projection; a patched gate
  // is taken as given (the product made again), as the CPU's step path.
  let combined = z;
  if (c.gate) {
    const { gate, gated } = encodeOutputGate(device, pass, buffers, c, w, { x: call.x, z, rows: B * L,
      kernel: call.kernels.projections.query });
    if (patched('gate')) {
      patchInPlace(gate, B * L * AD, Dv);
      encodeGateProduct(device, pass, buffers, { z, gate, gated, count: B * L * AD, sigmoid: false });
    }
    if (wanted.has('gate')) captured.gate = gate;
    combined = gated;
  }

  // The output as every call makes it; each head's share of it on request.
  encodeGemm(device, pass, buffers, { x: combined, w: w.out, bias: w.outBias, y: call.output, M: B * L, N: OD, K: AD,
    kernel: call.kernels.projections.output });
  if (wanted.has('result')) {
    captured.result = buffers.storage(B * L * H * OD, 'result');
    dispatch(device, pass, pipeline(device, 'steps_result'), {
      0: combined, 1: call.outWeight, 2: buffers.uniform(uniformData('steps_result', { rows: B * L, heads: H, dv: Dv, out_dim: OD }), 'result dims'),
      3: captured.result,
    }, flatWorkgroups('steps_result', B * L * H * OD));
  }
  pass.end();
  return captured;
}
