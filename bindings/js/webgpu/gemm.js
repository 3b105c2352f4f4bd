// The projections: y[M, N] = x[M, K] · w[N, K]ᵀ + bias on gemm.wgsl (4 x 4 blocks of y per
// invocation), or, for a projection held quantized, on gemm_int8 / gemm_q4 / gemm_f16.wgsl, which
// read its packed bytes and dequantize in the kernel.
import { halfReadValues } from './half-reads.js';
import { dispatch, pipeline } from './pipelines.js';

/**
 * Encodes y = x wᵀ (+ bias when given) into `pass`; x, bias, y are GPUBuffers, w a GPUBuffer of
 * float32 or a quantized projection { dtype, data, scales, zeroPoints, blocks } (weights.js).
 */
export function encodeGemm(device, pass, buffers, { x, w, bias, y, M, N, K }) {
  if (w.dtype) {
    encodeQuantizedGemm(device, pass, buffers, { x, w, bias, y, M, N, K });
    return;
  }
  const dims = buffers.uniform(new Uint32Array([M, N, K, bias ? 1 : 0]), 'gemm dims');
  // vec4 loads when every row starts on a multiple of 4 floats.
  const made = pipeline(device, 'gemm', K % 4 === 0 ? { T: 'vec4<f32>', V: 4, DOT: 'dot(a, b)' } : { T: 'f32', V: 1, DOT: 'a * b' });
  dispatch(device, pass, made, { 0: x, 1: w, 2: bias ?? w, 3: y, 4: dims }, [Math.ceil(N / 32), Math.ceil(M / 32), 1]);
}

function encodeQuantizedGemm(device, pass, buffers, { x, w, bias, y, M, N, K }) {
  const dims = buffers.uniform(new Uint32Array([M, N, K, bias ? 1 : 0, w.blocks, w.zeroPoints ? 1 : 0, 0, 0]), 'gemm dims');
  const bindings = { 0: x, 1: w.data, 2: bias ?? x, 3: y, 4: dims };
  if (w.dtype !== 'f16') bindings[5] = w.scales;
  if (w.dtype === 'q4') bindings[6] = w.zeroPoints ?? w.scales;  // (unread without zero points)
  const values = w.dtype === 'f16' ? halfReadValues(device, 'f16', { DATA: 'data' }) : { DATA_T: 'u32' };
  dispatch(device, pass, pipeline(device, `gemm_${w.dtype}`, values), bindings, [Math.ceil(N / 32), Math.ceil(M / 32), 1]);
}
