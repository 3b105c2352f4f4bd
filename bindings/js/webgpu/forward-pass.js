// One forward call's GPU work, encoded into a command encoder: its inputs as the kernels read them
// (callInputs), the projections (gemm), rotary, the appended or static keys (appended-keys.js),
// with a KV cache the new keys and values appended to it, attention (flash_attention, or
// flash-decoding for a few tokens against a cache), the output gate (config gate) and the output
// projection. The caller (layer.js) has checked the call, made the output buffers and owns the
// error scopes.
import { encodeAppendedKeys, padMask } from './appended-keys.js';
import { encodeAttention } from './attention.js';
import { encodePackHalves } from './cache-f16.js';
import { encodeGemm } from './gemm.js';
import { encodeOutputGate } from './output-gate.js';
import { encodeQkNorm } from './qk-norm.js';
import { encodeRotary, rotaryTable } from './rotary.js';
import { encodeSwapPass } from './sequence-first.js';

const count = (shape) => shape.reduce((n, d) => n * d, 1);

/** A mask as the kernels read it: additive floats (a bool mask's true = blocked becomes -inf), or null. */
function additiveMask(mask) {
  if (!mask) return null;
  if (mask.data instanceof Float32Array) return mask.data;
  return Float32Array.from(mask.data, (x) => (x ? -Infinity : 0));
}

/**
 * The call's inputs as the kernels read them, encoded into `encoder`: { x, xk, xv } batch-first
 * buffers (xk, xv: x itself for self-attention). CPU tensors are uploaded; the caller's GPU tensors
 * read in place, or copied with grad (the backward reads them after the call returns); a
 * sequence-first call's swapped into batch-first rows (sequence-first.js), a copy either way.
 */
export function callInputs(device, encoder, buffers, call) {
  const input = (t, label) => {
    const given = t.onGpu ? t.buffer : buffers.upload(t.data, label);
    if (call.sequenceFirst) return encodeSwapPass(device, encoder, buffers, given, t.shape, `${label} batch-first`);
    if (!t.onGpu || !call.grad) return given;
    const copy = buffers.storage(count(t.shape), label);
    if (count(t.shape) > 0) encoder.copyBufferToBuffer(t.buffer, 0, copy, 0, count(t.shape) * 4);
    return copy;
  };
  const x = input(call.query, 'query');
  if (call.sizes.self) return { x, xk: x, xv: x };
  return { x, xk: input(call.key, 'key'), xv: input(call.value, 'value') };
}

/**
 * encodeForward's `call` (and encodeSteps') for a call the layer checked: `call` its ForwardCall
 * (api/call-reader.js, with the layer's cache, appended), `sizes` its { B, L, S, newKeys, cached, cross, self },
 * `kernels` its plan, `io` its buffers { x, xk, xv, output, weights }; the log-sum-exps' buffer
 * made in `buffers` when the call keeps them for backward (grad).
 */
export function forwardCallOf(c, call, { B, L, S, newKeys, cached, cross, self }, kernels, io, buffers) {
  const { cache, appended } = call;
  const dropout = call.training && c.dropout > 0;
  const mask = (m) => (appended ? padMask(additiveMask(m), appended.given, S) : additiveMask(m));
  return {
    B, L, S, newKeys, cached, self, ...io, cache, crossCache: cross, kernels, appended,
    positions: call.positions?.data,
    keyPadding: mask(call.keyPaddingMask), attnMask: mask(call.attnMask),
    attnMaskPerHead: call.attnMask?.shape.length === 3,
    causal: call.causal || (Boolean(cache) && !cross), averageWeights: call.averageWeights,
    dropout: dropout ? { p: c.dropout, seed: call.seed, weightsBeforeDropout: call.weightsBeforeDropout } : null,
    lse: call.grad ? buffers.storage(B * c.numHeads * L, 'lse') : null,
  };
}

/**
 * Encodes the call into `encoder`. c: the resolved config; w: the weights (weights.js);
 * call: { B, L, S, newKeys (keys projected now), cached (tokens already in the cache), self,
 * x, xk, xv (input buffers), output, weights, cache, positions, keyPadding, attnMask (additive
 * Float32Arrays or null), attnMaskPerHead, causal, averageWeights, dropout, kernels (the call's
 * plan: kernel-plan.js), lse (a [B, H, L] buffer for the rows' log-sum-exps, kept for the backward
 * pass, or null) }. Returns the buffers
 * it made and the attention's parameters ({ q, k, v, attended, gate, gated, attention }: what
 * backward.js reads; gate and gated null without the output gate).
 */
export function encodeForward(device, encoder, buffers, c, w, call) {
  const { B, L, S, cached } = call;
  const AD = c.numHeads * c.valueHeadDim;
  const attended = buffers.storage(B * L * AD, 'attended');
  const { q: qp, keys, values, kvDtype, kvRows, pass } = encodeProjections(device, encoder, buffers, c, w, call);
  const attention = {
    B, L, S, q: qp, k: keys, v: values, kvDtype, kvRows, firstQuery: cached, attended, weights: call.weights,
    headParams: w.headParams,
    keyPadding: call.keyPadding && buffers.upload(call.keyPadding, 'key padding mask'),
    attnMask: call.attnMask && buffers.upload(call.attnMask, 'attention mask'),
    attnMaskPerHead: call.attnMaskPerHead, causal: call.causal, averageWeights: call.averageWeights,
    dropout: call.dropout, kernels: call.kernels, dummy: buffers.storage(4, 'unused'), lse: call.lse ?? null,
  };
  encodeAttention(device, pass, buffers, c, attention);
  // The output gate (config gate): out_proj reads the attended values times the gate. (The gate's
  // projection has the query's rows: the query projection's kernel.)
  const { gate = null, gated = null } = c.gate
    ? encodeOutputGate(device, pass, buffers, c, w, { x: call.x, z: attended, rows: B * L, kernel: call.kernels.projections.query })
    : {};
  encodeGemm(device, pass, buffers, { x: gated ?? attended, w: w.out, bias: w.outBias, y: call.output, M: B * L, N: c.outputDim, K: AD,
    kernel: call.kernels.projections.output });
  pass.end();
  return { q: qp, k: keys, v: values, attended, gate, gated, attention, lse: attention.lse };
}

/**
 * The first half of encodeForward, shared with the step path (steps.js): the projections, q/k norms, rotary and
 * the cache's append, in a compute pass it leaves open. Returns { q [B*L, H*Dh], keys, values (kvRows
 * rows per batch row, of which the first S are seen: a cache's buffers, or the projections), kvDtype
 * ('f16' when keys and values are an f16 cache's packed halves, else 'f32'), kvRows, pass }.
 */
export function encodeProjections(device, encoder, buffers, c, w, call) {
  const { B, L, S, newKeys, cached, cache, appended } = call;
  const QD = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, VKV = c.numKvHeads * c.valueHeadDim;
  // (Static keys or values replace their projection, which then does not run.)
  const projectK = newKeys > 0 && !appended?.staticK, projectV = newKeys > 0 && !appended?.staticV;
  const qp = buffers.storage(B * L * QD, 'q');
  const kp = projectK ? buffers.storage(B * newKeys * KV, 'k') : null;
  const vp = projectV ? buffers.storage(B * newKeys * VKV, 'v') : null;
  const { projections } = call.kernels;

  let pass = encoder.beginComputePass();
  encodeGemm(device, pass, buffers, { x: call.x, w: w.q, bias: w.qBias, y: qp, M: B * L, N: QD, K: c.embedDim, kernel: projections.query });
  // (a cross-attention cache holds its keys and values already)
  if (projectK) encodeGemm(device, pass, buffers, { x: call.xk, w: w.k, bias: w.kBias, y: kp, M: B * newKeys, N: KV, K: c.kdim, kernel: projections.keyValue });
  if (projectV) encodeGemm(device, pass, buffers, { x: call.xv, w: w.v, bias: w.vBias, y: vp, M: B * newKeys, N: VKV, K: c.vdim, kernel: projections.keyValue });
  if (c.qkNorm) {  // (before rotary, as the CPU's normalize_qk)
    encodeQkNorm(device, pass, buffers, { x: qp, weight: w.qNorm, rows: B * L, rowStride: QD, heads: c.numHeads, headDim: c.headDim, qkNorm: c.qkNorm });
    if (kp) encodeQkNorm(device, pass, buffers, { x: kp, weight: w.kNorm, rows: B * newKeys, rowStride: KV, heads: c.numKvHeads, headDim: c.headDim, qkNorm: c.qkNorm });
  }
  if (c.rotary) {  // (self-attention keys share the queries' positions; a cache's come after what it holds)
    encodeRotary(device, pass, buffers, { x: qp, table: rotaryTable(c.rotary, B, L, call.positions, cached), rows: B * L,
      rowStride: QD, heads: c.numHeads, headDim: c.headDim, rotary: c.rotary });
    encodeRotary(device, pass, buffers, { x: kp, table: rotaryTable(c.rotary, B, newKeys, call.self ? call.positions : null, cached),
      rows: B * newKeys, rowStride: KV, heads: c.numKvHeads, headDim: c.headDim, rotary: c.rotary });
  }
  let keys = kp, values = vp, kvRows = S;
  if (appended) {  // addBiasKv / addZeroAttn rows after the given ones, or static rows (appended-keys.js)
    ({ keys, values } = encodeAppendedKeys(device, pass, buffers, c, w, appended, { B, kp, vp }));
  } else if (cache?.dtype === 'f16') {  // halves: append rounded (self); the attention kernels read them as they are
    const capacity = cache.handle.capacity();
    if (!call.crossCache) {
      encodePackHalves(device, pass, buffers, { src: kp, cache: cache.keys, B, rows: L, first: cached, features: KV, capacity });
      encodePackHalves(device, pass, buffers, { src: vp, cache: cache.values, B, rows: L, first: cached, features: VKV, capacity });
    }
    [keys, values, kvRows] = [cache.keys, cache.values, capacity];
  } else if (call.crossCache) {  // attend to what setKeyValue put there
    [keys, values, kvRows] = [cache.keys, cache.values, cache.handle.capacity()];
  } else if (cache) {  // append the new keys and values after each batch row's cached ones
    pass.end();
    const capacity = cache.handle.capacity();
    for (let b = 0; b < B; b++) {
      encoder.copyBufferToBuffer(kp, b * L * KV * 4, cache.keys, (b * capacity + cached) * KV * 4, L * KV * 4);
      encoder.copyBufferToBuffer(vp, b * L * VKV * 4, cache.values, (b * capacity + cached) * VKV * 4, L * VKV * 4);
    }
    pass = encoder.beginComputePass();
    [keys, values, kvRows] = [cache.keys, cache.values, capacity];
  }
  return { q: qp, keys, values, kvDtype: cache?.dtype ?? 'f32', kvRows, pass };
}
