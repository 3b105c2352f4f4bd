// A cross-attention cache filled on the GPU (cache.setKeyValue(key, value)): key [B, S, kdim] and
// value [B, S, vdim] projected by the layer's k and v projections (float32 or quantized), the
// keys normed with qkNorm and rotated at positions 0..S-1 with rotary (as src/mha/layer/multihead_attention.cpp's
// set_key_value), and copied into the cache's [B, capacity, ...] buffers. The caller (layer.js)
// has checked the shapes with the planner and owns the error scopes.
import { encodePackHalves } from './cache-f16.js';
import { encodeGemm } from './gemm.js';
import { encodeQkNorm } from './qk-norm.js';
import { encodeRotary, rotaryTable } from './rotary.js';

/**
 * Encodes the projection of `xk` / `xv` (GPUBuffers of B*S rows) into `cache` ({ keys, values,
 * capacity, dtype }); `kernels`: the call's plan (kernel-plan.js).
 */
export function encodeKeyValue(device, encoder, buffers, c, w, { B, S, xk, xv, cache, kernels }) {
  const kernel = kernels.projections.keyValue;
  const KV = c.numKvHeads * c.headDim, VKV = c.numKvHeads * c.valueHeadDim;
  const kp = buffers.storage(B * S * KV, 'cross keys'), vp = buffers.storage(B * S * VKV, 'cross values');
  const pass = encoder.beginComputePass();
  encodeGemm(device, pass, buffers, { x: xk, w: w.k, bias: w.kBias, y: kp, M: B * S, N: KV, K: c.kdim, kernel });
  encodeGemm(device, pass, buffers, { x: xv, w: w.v, bias: w.vBias, y: vp, M: B * S, N: VKV, K: c.vdim, kernel });
  if (c.qkNorm) {
    encodeQkNorm(device, pass, buffers, { x: kp, weight: w.kNorm, rows: B * S, rowStride: KV, heads: c.numKvHeads, headDim: c.headDim, qkNorm: c.qkNorm });
  }
  if (c.rotary) {
    encodeRotary(device, pass, buffers, { x: kp, table: rotaryTable(c.rotary, B, S, null, 0), rows: B * S,
      rowStride: KV, heads: c.numKvHeads, headDim: c.headDim, rotary: c.rotary });
  }
  if (cache.dtype === 'f16') {
    encodePackHalves(device, pass, buffers, { src: kp, cache: cache.keys, B, rows: S, first: 0, features: KV, capacity: cache.capacity });
    encodePackHalves(device, pass, buffers, { src: vp, cache: cache.values, B, rows: S, first: 0, features: VKV, capacity: cache.capacity });
    pass.end();
    return;
  }
  pass.end();
  for (let b = 0; b < B; b++) {
    encoder.copyBufferToBuffer(kp, b * S * KV * 4, cache.keys, b * cache.capacity * KV * 4, S * KV * 4);
    encoder.copyBufferToBuffer(vp, b * S * VKV * 4, cache.values, b * cache.capacity * VKV * 4, S * VKV * 4);
  }
}
