// Which kernels a WebGPU call runs, decided in one place: the float32 projections' GEMM
// (gemm_tiled.wgsl or gemm.wgsl), the attention's (flash_attention.wgsl, or flash-decoding's
// decode_split / decode_reduce for a few tokens against a cache) and the tile sizes the kernels
// are compiled with. The encoders (forward-pass.js, attention.js, key-value.js, steps.js,
// backward.js) take the plan and decide nothing themselves. docs/webgpu.md says why each rule.
import { kernelConstant } from './kernel-manifest.js';

const WORKGROUP_VEC4S = 1000;  // of the 1024 the default 16 KiB of workgroup storage holds
const GEMM_TILE_ROWS = kernelConstant('gemm_tiled', 'TILE');  // gemm_tiled's rows of x per workgroup
/** Query rows up to which a call with a cache uses flash-decoding. */
export const DECODE_ROWS = 4;
/** Keys per workgroup of decode_split.wgsl: its manifest's CHUNK, which the plan counts chunks with. */
const DECODE_CHUNK = kernelConstant('decode_split', 'CHUNK');

const gemmChoices = new WeakMap();  // device -> 'auto' | 'gemm_tiled' | 'gemm' (setGemmKernel)

/**
 * Picks the float32 GEMM kernel of `device` for every later call: 'auto' (gemm_tiled when x has
 * at least a tile's 32 rows, gemm for fewer, as a decode step's), 'gemm_tiled' or 'gemm'. Without
 * it a device of a fallback (software) adapter runs 'gemm', where gemm_tiled's barriers cost
 * 1.2-10x (docs/webgpu.md), and others 'auto'. Internal: benchmarks and tests set it to compare both.
 */
export function setGemmKernel(device, kernel) {
  if (!['auto', 'gemm_tiled', 'gemm'].includes(kernel)) throw new TypeError(`setGemmKernel: unknown kernel ${kernel}`);
  gemmChoices.set(device, kernel);
}

/** The GEMM choice planKernels takes for `device` (opened with `adapterInfo`). */
export const gemmChoiceOf = (device, adapterInfo) => gemmChoices.get(device) ?? (adapterInfo?.isFallbackAdapter ? 'gemm' : 'auto');

/** flash_attention's keys per tile: as many as fit in workgroup memory with their values (vec4-padded), at most 32 (one u32 of flags). */
export function keysPerTile(headDim, valueHeadDim) {
  return Math.min(32, Math.floor(WORKGROUP_VEC4S / (Math.ceil(headDim / 4) + Math.ceil(valueHeadDim / 4))));
}

/** vec4s per packed query row of the attention backward (q, dO, then lse and D). */
export const packedRowVec4s = (c) => Math.ceil(c.headDim / 4) + Math.ceil(c.valueHeadDim / 4) + 1;

/** Query rows per tile of attention_backward_dkdv: as many packed rows as fit, at most 64. */
export const rowsPerTile = (c) => Math.min(64, Math.floor(WORKGROUP_VEC4S / packedRowVec4s(c)));

const gemmFor = (choice, rows) => (choice !== 'auto' ? choice : rows >= GEMM_TILE_ROWS ? 'gemm_tiled' : 'gemm');

/**
 * The kernels of one call of a layer with resolved config `c`. `sizes`: { B, L (query rows), S
 * (keys seen), newKeys (keys projected now) } and what the call asks: cache (a KV cache is read),
 * weights (the attention weights are returned), dropout (training with dropout). `gemm`:
 * gemmChoiceOf(device, adapterInfo). Returns:
 *   projections  { query, keyValue, output }: 'gemm' | 'gemm_tiled' for each float32 projection
 *                (one with quantized weights runs its own kernel: gemm.js)
 *   attention    'decode' (flash-decoding: a few query rows against a cache, no weights, no
 *                dropout) or 'flash'
 *   decodeChunks decode_split's workgroups per head and row (0 unless attention is 'decode')
 *   keysPerTile  flash_attention's and attention_backward_dq's keys per tile (BC; < 1: does not fit)
 *   rowsPerTile  attention_backward_dkdv's query rows per tile (BR; < 1: does not fit)
 */
export function planKernels(c, { B, L, S, newKeys = S, cache = false, weights = false, dropout = false }, gemm = 'auto') {
  const decode = cache && L <= DECODE_ROWS && !weights && !dropout;
  return {
    projections: { query: gemmFor(gemm, B * L), keyValue: gemmFor(gemm, B * newKeys), output: gemmFor(gemm, B * L) },
    attention: decode ? 'decode' : 'flash',
    decodeChunks: decode ? Math.max(1, Math.ceil(S / DECODE_CHUNK)) : 0,
    keysPerTile: keysPerTile(c.headDim, c.valueHeadDim),
    rowsPerTile: rowsPerTile(c),
  };
}
