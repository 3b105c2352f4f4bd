// The keys and values that do not come straight from the key and value projections (PyTorch's
// options), on the GPU as src/mha/layer/appended_keys.hpp has them on the CPU:
// - add_bias_kv / add_zero_attn (config addBiasKv, addZeroAttn): after each sequence's given keys
//   and values, the learned rows bias_k / bias_v, then a zero row; the masks padded by a column
//   for each (additive 0: the appended keys stay visible, as PyTorch pads them);
// - static_k / static_v (forward options staticK, staticV): per-head rows [B*Hkv, S, head size]
//   that replace a projection, which then does not run; constants for backward.
// append_keys.wgsl lays the rows out as attention reads them ([B, S, Hkv*head size]);
// appended_keys_grad.wgsl takes their gradients back: bias_k's and bias_v's, and the given rows'
// for the projections' backward (zeros for static rows). Shapes and the rules between the options
// (no cache, no causal, no bias with static keys, ...) are the C++ plan's.
import { flatWorkgroups, uniformData } from './kernel-manifest.js';
import { dispatch, pipeline } from './pipelines.js';

/** The keys config addBiasKv / addZeroAttn append to every sequence. */
const extraKeys = (c) => (c.addBiasKv ? 1 : 0) + (c.addZeroAttn ? 1 : 0);

/**
 * How a call's keys and values are made when not only by the projections, or null: { given (keys
 * per sequence the masks cover), keys (S, the appended ones counted: the plan's keyLen), biasRow,
 * staticK, staticV (Float32Arrays, or null) }.
 */
export function appendedKeysOf(c, call, keys) {
  const extra = extraKeys(c);
  if (extra === 0 && !call.staticK && !call.staticV) return null;
  if (call.steps && (call.staticK || call.staticV)) {  // (the wasm layer's step path refuses them too)
    throw new TypeError(`${call.capture !== undefined ? 'capture' : 'patch'}: not with ${call.staticK ? 'staticK' : 'staticV'} yet`);
  }
  return { given: keys - extra, keys, biasRow: Boolean(c.addBiasKv), staticK: call.staticK?.data ?? null, staticV: call.staticV?.data ?? null };
}

/** An additive mask of rows of `given` keys (Float32Array, or null) padded to rows of `keys`: the appended keys visible. */
export function padMask(mask, given, keys) {
  if (!mask || given === keys) return mask;
  const rows = mask.length / given;
  const padded = new Float32Array(rows * keys);
  for (let r = 0; r < rows; r++) padded.set(mask.subarray(r * given, (r + 1) * given), r * keys);
  return padded;
}

/** One tensor's rows (keys or values) laid out [B, S, heads * headSize] (append_keys.wgsl). */
function encodeAppend(device, pass, buffers, { B, appended, projected, rows, bias, heads, headSize, label }) {
  const out = buffers.storage(B * appended.keys * heads * headSize, label);
  const src = rows ? buffers.upload(rows, `static ${label}`) : projected;
  const params = buffers.uniform(uniformData('append_keys', {
    batch: B, given: appended.given, keys: appended.keys, heads, head_size: headSize, per_head: Boolean(rows),
    bias_row: Boolean(appended.biasRow),
  }), 'append keys');
  dispatch(device, pass, pipeline(device, 'append_keys'), { 0: src, 1: bias ?? src, 2: out, 3: params },
    flatWorkgroups('append_keys', B * appended.keys * heads * headSize));
  return out;
}

/**
 * Encodes the keys and values attention reads, [B, S, Hkv*Dh] and [B, S, Hkv*Dv], from the
 * projections' kp [B, given, ·] and vp (unread where static rows replace them). Returns { keys, values }.
 */
export function encodeAppendedKeys(device, pass, buffers, c, w, appended, { B, kp, vp }) {
  const heads = c.numKvHeads;
  return {
    keys: encodeAppend(device, pass, buffers, { B, appended, projected: kp, rows: appended.staticK, bias: w.biasK, heads,
      headSize: c.headDim, label: 'keys' }),
    values: encodeAppend(device, pass, buffers, { B, appended, projected: vp, rows: appended.staticV, bias: w.biasV, heads,
      headSize: c.valueHeadDim, label: 'values' }),
  };
}

function encodeGrad(device, pass, buffers, { B, appended, d, constant, dBias, features, label }) {
  const dGiven = buffers.storage(B * appended.given * features, label);
  const params = buffers.uniform(uniformData('appended_keys_grad', {
    batch: B, given: appended.given, keys: appended.keys, features, constant: Boolean(constant), bias_row: Boolean(dBias),
  }), 'appended keys grad');
  dispatch(device, pass, pipeline(device, 'appended_keys_grad'), { 0: d, 1: dGiven, 2: dBias ?? buffers.storage(1, 'unused'), 3: params },
    flatWorkgroups('appended_keys_grad', B * appended.given * features));
  return dGiven;
}

/**
 * The backward of encodeAppendedKeys: from attention's dk [B, S, Hkv*Dh] and dv, bias_k's and
 * bias_v's gradients (into dBiasK, dBiasV with addBiasKv) and the given rows' [B, given, ·] for the
 * projections (zeros where static rows were used). Returns { dk, dv } of the given rows.
 */
export function encodeAppendedKeysBackward(device, pass, buffers, c, appended, { B, dk, dv, dBiasK, dBiasV }) {
  const KV = c.numKvHeads * c.headDim, VKV = c.numKvHeads * c.valueHeadDim;
  return {
    dk: encodeGrad(device, pass, buffers, { B, appended, d: dk, constant: Boolean(appended.staticK), dBias: dBiasK, features: KV, label: 'dk given' }),
    dv: encodeGrad(device, pass, buffers, { B, appended, d: dv, constant: Boolean(appended.staticV), dBias: dBiasV, features: VKV, label: 'dv given' }),
  };
}
