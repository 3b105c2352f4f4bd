// The projections: y[M, N] = x[M, K] · w[N, K]ᵀ + bias on gemm_tiled.wgsl (GPUs: 32 x 32 tiles
// through workgroup memory, 4 x 4 outputs per invocation) or gemm.wgsl (software adapters: the
// same 4 x 4 blocks without workgroup memory or barriers, which they pay dearly for), or, for a
// projection held quantized, on gemm_int8 / gemm_q4 / gemm_f16.wgsl, which read its packed bytes
// and dequantize in the kernel. Both float32 kernels compute the same sums in the same order;
// which one a call runs is its plan's (kernel-plan.js).
import { halfReadValues } from './half-reads.js';
import { uniformData, workgroups } from './kernel-manifest.js';
import { dispatch, pipeline } from './pipelines.js';

/**
 * Encodes y = x wᵀ (+ bias when given) into `pass`; x, bias, y are GPUBuffers, w a GPUBuffer of
 * float32 or a quantized projection { dtype, data, scales, zeroPoints, blocks } (weights.js).
 * `kernel`: the float32 kernel, 'gemm_tiled' or 'gemm' (the call's plan: kernel-plan.js).
 */
export function encodeGemm(device, pass, buffers, { x, w, bias, y, M, N, K, kernel }) {
  if (w.dtype) {
    encodeQuantizedGemm(device, pass, buffers, { x, w, bias, y, M, N, K });
    return;
  }
  if (kernel !== 'gemm' && kernel !== 'gemm_tiled') throw new TypeError(`encodeGemm: kernel must be 'gemm' or 'gemm_tiled', got ${kernel}`);
  const dims = buffers.uniform(uniformData(kernel, { M, N, K, has_bias: Boolean(bias) }), 'gemm dims');
  // vec4 loads when every row starts on a multiple of 4 floats.
  const made = pipeline(device, kernel, K % 4 === 0
    ? { T: 'vec4<f32>', V: 4, DOT: 'dot(a, b)', ZERO: 'vec4f(0.0)' } : { T: 'f32', V: 1, DOT: 'a * b', ZERO: '0.0' });
  dispatch(device, pass, made, { 0: x, 1: w, 2: bias ?? w, 3: y, 4: dims }, workgroups(kernel, [N, M]));
}

function encodeQuantizedGemm(device, pass, buffers, { x, w, bias, y, M, N, K }) {
  const kernel = `gemm_${w.dtype}`;
  const dims = buffers.uniform(uniformData(kernel, { M, N, K, has_bias: Boolean(bias), blocks: w.blocks, has_zero_points: Boolean(w.zeroPoints) }),
    'gemm dims');
  const bindings = { 0: x, 1: w.data, 2: bias ?? x, 3: y, 4: dims };
  if (w.dtype !== 'f16') bindings[5] = w.scales;
  if (w.dtype === 'q4') bindings[6] = w.zeroPoints ?? w.scales;  // (unread without zero points)
  const values = w.dtype === 'f16' ? halfReadValues(device, 'f16', { DATA: 'data' }) : { DATA_T: 'u32' };
  dispatch(device, pass, pipeline(device, kernel, values), bindings, workgroups(kernel, [N, M]));
}
