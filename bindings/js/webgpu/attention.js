// Attention on the GPU: flash_attention.wgsl (the attended values, FlashAttention-2) and, when
// the call asks for weights, attention_weights.wgsl (the probabilities from the row's
// log-sum-exp). Both take the score step's parameters from one uniform block (score_epilogue.wgsl).
import { halfReadValues } from './half-reads.js';
import { uniformData, workgroups } from './kernel-manifest.js';
import { dispatch, pipeline } from './pipelines.js';

/**
 * The score step's uniform fields by name (score_epilogue.wgsl's Params, declared in
 * kernel-manifest.js), shared by every attention kernel; the backward pass and the step path reuse them.
 */
export function scoreParams(c, call) {
  const p = Math.fround(call.dropout?.p ?? 0);
  return {
    L: call.L, S: call.S, H: c.numHeads, heads_per_kv: c.numHeads / c.numKvHeads,
    q_stride: c.numHeads * c.headDim, k_stride: c.numKvHeads * c.headDim,
    v_stride: c.numKvHeads * c.valueHeadDim, o_stride: c.numHeads * c.valueHeadDim,
    scale: c.scale, softcap: c.softcap ?? 0, window: c.slidingWindow ?? 0, causal: Boolean(call.causal),
    first_query: call.firstQuery ?? 0, has_key_padding: Boolean(call.keyPadding), has_attn_mask: Boolean(call.attnMask),
    attn_mask_per_head: Boolean(call.attnMaskPerHead), has_sinks: Boolean(c.sinks), has_alibi: Boolean(c.alibiSlopes),
    weights_factor: call.averageWeights ? 1 / c.numHeads : 1, average_heads: Boolean(call.averageWeights),
    write_lse: Boolean(call.weights || call.lse),
    // (dropout.wgsl; the threshold and factor as src/mha/kernels/dropout.hpp computes them)
    ...(call.dropout && {
      seed_low: call.dropout.seed % 2 ** 32, seed_high: Math.floor(call.dropout.seed / 2 ** 32),
      dropout_threshold: Math.min(4294967295, Math.floor(p * 4294967296)), dropout_scale: 1 / Math.fround(1 - p),
      dropout_active: true, weights_before_dropout: Boolean(call.dropout.weightsBeforeDropout),
    }),
    kv_rows: call.kvRows ?? call.S,
  };
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
  const params = buffers.uniform(uniformData('flash_attention', scoreParams(c, call)), 'attention params');
  const lse = call.lse ?? (call.weights ? buffers.storage(B * H * L, 'lse') : call.dummy);
  const kv = halfReadValues(device, call.kvDtype ?? 'f32', { K: 'k', V: 'v' });  // (an f16 cache's halves read directly)
  const shared = {
    0: call.q, 1: call.k, 3: call.keyPadding ?? call.headParams, 4: call.attnMask ?? call.headParams,
    5: call.headParams, 6: params,
  };
  if (kernels.attention === 'decode') {  // flash-decoding: chunks of the keys in parallel, then their reduction
    const chunks = kernels.decodeChunks;
    const partials = buffers.storage(B * H * L * chunks * (Dv + 2), 'decode partials');
    dispatch(device, pass, pipeline(device, 'decode_split', { DH: Dh, DV: Dv, ...kv }),
      { ...shared, 2: call.v, 7: partials }, workgroups('decode_split', [chunks, H, B * L]));
    dispatch(device, pass, pipeline(device, 'decode_reduce', { DV: Dv, CHUNKS: chunks }),
      { 5: shared[5], 6: params, 7: call.attended, 8: partials }, workgroups('decode_reduce', [Dv, H, B * L]));
    return;
  }
  dispatch(device, pass, pipeline(device, 'flash_attention', { DH: Dh, DV: Dv, BC: kernels.keysPerTile, ...kv }),
    { ...shared, 2: call.v, 7: call.attended, 8: lse }, workgroups('flash_attention', [L, H, B]));
  if (call.weights) {
    dispatch(device, pass, pipeline(device, 'attention_weights', { DH: Dh, ENABLE_F16: kv.ENABLE_F16, K_T: kv.K_T, K_AT: kv.K_AT }),
      { ...shared, 7: call.weights, 8: lse }, workgroups('attention_weights', [S, L, B * (call.averageWeights ? 1 : H)]));
  }
}
