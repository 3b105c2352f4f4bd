// The projections: y[M, N] = x[M, K] · w[N, K]ᵀ + bias on gemm.wgsl (4 x 4 blocks of y per invocation).
import { dispatch, pipeline } from './pipelines.js';

/** Encodes y = x wᵀ (+ bias when given) into `pass`; x, w, y are GPUBuffers. */
export function encodeGemm(device, pass, buffers, { x, w, bias, y, M, N, K }) {
  const dims = buffers.uniform(new Uint32Array([M, N, K, bias ? 1 : 0]), 'gemm dims');
  // vec4 loads when every row starts on a multiple of 4 floats.
  const made = pipeline(device, 'gemm', K % 4 === 0 ? { T: 'vec4<f32>', V: 4, DOT: 'dot(a, b)' } : { T: 'f32', V: 1, DOT: 'a * b' });
  dispatch(device, pass, made, { 0: x, 1: w, 2: bias ?? w, 3: y, 4: dims }, [Math.ceil(N / 32), Math.ceil(M / 32), 1]);
}
