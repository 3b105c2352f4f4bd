// Attention on the GPU: flash_attention.wgsl (the attended values, FlashAttention-2) and, when
// the call asks for weights, attention_weights.wgsl (the probabilities from the row's
// log-sum-exp). Both take the score step's parameters from one uniform block (score_epilogue.wgsl).
import { halfReadValues } from './half-reads.js';
import { DECODE_CHUNK } from './kernel-plan.js';
import { dispatch, pipeline } from './pipelines.js';

/** The score step's uniform block (score_epilogue.wgsl's Params); the backward pass reuses it. */
export function paramsBlock(c, call) {
  const u = new Uint32Array(28);
  const f = new Float32Array(u.buffer);
  u.set([call.L, call.S, c.numHeads, c.numHeads / c.numKvHeads,
    c.numHeads * c.headDim, c.numKvHeads * c.headDim, c.numKvHeads * c.valueHeadDim, c.numHeads * c.valueHeadDim]);
  f[8] = c.scale;
  f[9] = c.softcap ?? 0;
  u.set([c.slidingWindow ?? 0, call.causal ? 1 : 0, call.firstQuery ?? 0, call.keyPadding ? 1 : 0, call.attnMask ? 1 : 0,
    call.attnMaskPerHead ? 1 : 0, c.sinks ? 1 : 0, c.alibiSlopes ? 1 : 0], 10);
  f[18] = call.averageWeights ? 1 / c.numHeads : 1;
  u[19] = call.averageWeights ? 1 : 0;
  u[20] = call.weights || call.lse ? 1 : 0;
  if (call.dropout) {  // (dropout.wgsl; the threshold and factor as src/mha/kernels/dropout.hpp computes them)
    const p = Math.fround(call.dropout.p);
    u.set([call.dropout.seed % 2 ** 32, Math.floor(call.dropout.seed / 2 ** 32), Math.min(4294967295, Math.floor(p * 4294967296))], 21);
    f[24] = 1 / Math.fround(1 - p);
    u[25] = 1;
    u[26] = call.dropout.weightsBeforeDropout ? 1 : 0;
  }
  u[27] = call.kvRows ?? call.S;
  return u;
}

/**
 * Encodes attention of q [B*L, H*Dh] against k [B*S, Hkv*Dh], v [B*S, Hkv*Dv] into attended
 * [B*L, H*Dv], and the weights into call.weights when given. With a KV cache: k and v hold
 * call.kvRows rows per batch row (its capacity), of which the first S are seen, and query row r
 * is at position call.firstQuery + r; call.kvDtype 'f16': k and v are an f16 cache's halves (read directly). call.kernels:
 * the call's plan (kernel-plan.js): its attention 'decode' runs flash-decoding (decode_split.wgsl,
 * decode_reduce.wgsl) instead of flash_attention.wgsl, with its tile sizes. `headParams`: [H] sinks then [H]
 * ALiBi slopes; masks additive (0 / -inf for bool); call.dropout: { p, seed, weightsBeforeDropout } when training;
 * call.lse: a [B, H, L] buffer for the rows' log-sum-exps (kept for the backward pass), when given.
 */
export function encodeAttention(device, pass, buffers, c, call) {
  const { B, L, S } = call;
  const Dh = c.headDim, Dv = c.valueHeadDim, H = c.numHeads;
  const { kernels } = call;
  const params = buffers.uniform(paramsBlock(c, call), 'attention params');
  const lse = call.lse ?? (call.weights ? buffers.storage(B * H * L, 'lse') : call.dummy);
  const kv = halfReadValues(device, call.kvDtype ?? 'f32', { K: 'k', V: 'v' });  // (an f16 cache's halves read directly)
  const shared = {
    0: call.q, 1: call.k, 3: call.keyPadding ?? call.headParams, 4: call.attnMask ?? call.headParams,
    5: call.headParams, 6: params,
  };
  if (kernels.attention === 'decode') {  // flash-decoding: chunks of the keys in parallel, then their reduction
    const chunks = kernels.decodeChunks;
    const partials = buffers.storage(B * H * L * chunks * (Dv + 2), 'decode partials');
    dispatch(device, pass, pipeline(device, 'decode_split', { DH: Dh, DV: Dv, CHUNK: DECODE_CHUNK, ...kv }),
      { ...shared, 2: call.v, 7: partials }, [chunks, H, B * L]);
    dispatch(device, pass, pipeline(device, 'decode_reduce', { DV: Dv, CHUNKS: chunks }),
      { 5: shared[5], 6: params, 7: call.attended, 8: partials }, [Math.ceil(Dv / 64), H, B * L]);
    return;
  }
  dispatch(device, pass, pipeline(device, 'flash_attention', { DH: Dh, DV: Dv, BC: kernels.keysPerTile, ...kv }),
    { ...shared, 2: call.v, 7: call.attended, 8: lse }, [Math.ceil(L / 64), H, B]);
  if (call.weights) {
    dispatch(device, pass, pipeline(device, 'attention_weights', { DH: Dh, ENABLE_F16: kv.ENABLE_F16, K_T: kv.K_T, K_AT: kv.K_AT }),
      { ...shared, 7: call.weights, 8: lse }, [Math.ceil(S / 64), L, B * (call.averageWeights ? 1 : H)]);
  }
}
