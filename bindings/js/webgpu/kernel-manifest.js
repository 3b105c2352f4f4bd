// Every WebGPU kernel's shape, declared once: its workgroup size, the constants it is compiled
// with, what one workgroup covers of the work (so the dispatch sites and the device-limit checks
// count workgroups the same way), and its uniform block's fields by name (as onnxruntime's WebGPU
// programs declare their uniforms), in the order of the WGSL struct they fill.
//   pipelines.js   substitutes {{WORKGROUP_SIZE}}, {{LANES}} and the constants into the kernel
//   uniformData()  packs a block from { field: value }, so no call site counts offsets
//   workgroups() / flatWorkgroups()  the dispatch of a kernel over its extent
// tests/js/webgpu-kernel-manifest.test.js checks every block against its WGSL struct, and every
// kernel's {{…}} names against the manifest and its callers.

/** WebGPU's default maxComputeWorkgroupsPerDimension: a flat dispatch folds its workgroups past it onto y. */
export const MAX_WORKGROUPS_PER_DIMENSION = 65535;

const u32 = 'u32', f32 = 'f32';
/** A uniform block: its WGSL struct's name and its fields, [name, type] in the struct's order. */
const block = (struct, fields) => ({ struct, fields: fields.map(([name, type = u32]) => ({ name, type })) });

/** score_epilogue.wgsl's Params: the score step's parameters, shared by every attention kernel. */
const SCORE_PARAMS = block('Params', [
  ['L'], ['S'], ['H'], ['heads_per_kv'],
  ['q_stride'], ['k_stride'], ['v_stride'], ['o_stride'],
  ['scale', f32], ['softcap', f32], ['window'], ['causal'],
  ['first_query'], ['has_key_padding'], ['has_attn_mask'], ['attn_mask_per_head'],
  ['has_sinks'], ['has_alibi'], ['weights_factor', f32], ['average_heads'],
  ['write_lse'], ['seed_low'], ['seed_high'], ['dropout_threshold'],
  ['dropout_scale', f32], ['dropout_active'], ['weights_before_dropout'],
  ['kv_rows'],
]);
const GEMM_DIMS = block('Dims', [['M'], ['N'], ['K'], ['has_bias']]);  // gemm_operands.wgsl
const QUANTIZED_GEMM_DIMS = block('Dims', [['M'], ['N'], ['K'], ['has_bias'], ['blocks'], ['has_zero_points'], ['pad0'], ['pad1']]);
const GRAD_DIMS = block('Dims', [['M'], ['N'], ['K'], ['pad0']]);  // gemm_weight_grad's, also read by gemm_bias_grad

// Workgroup shapes: 64 invocations in a row, or gemm's 8 x 8 (each a 4 x 4 block of outputs).
const ROW = [64, 1, 1];
const GEMM = { workgroupSize: [8, 8, 1], covers: [32, 32, 1], constants: { TILE: 32 } };

/**
 * name -> { workgroupSize [x, y, z], covers [x, y, z] (what one workgroup computes of the extent
 * its dispatch is given, workgroups()), flat (one invocation per element, flatWorkgroups()),
 * constants { NAME: value } (substituted as {{NAME}}), uniform (its block, or absent) }.
 */
export const KERNELS = {
  // Attention (attention.js, backward.js, steps.js): one query row (or key, or feature) per invocation.
  flash_attention: { workgroupSize: ROW, covers: ROW, uniform: SCORE_PARAMS },  // over [L, H, B]
  attention_weights: { workgroupSize: ROW, covers: ROW, uniform: SCORE_PARAMS },  // over [S, L, B * H]
  // flash-decoding: a workgroup per chunk of CHUNK keys (over [chunks, H, B * L]), then their reduction over [Dv, H, B * L]
  decode_split: { workgroupSize: ROW, covers: [1, 1, 1], constants: { CHUNK: 128 }, uniform: SCORE_PARAMS },
  decode_reduce: { workgroupSize: ROW, covers: ROW, uniform: SCORE_PARAMS },
  attention_backward_prepare: { workgroupSize: ROW, covers: ROW, uniform: block('Dims', [['L'], ['H'], ['q_stride'], ['o_stride']]) },
  attention_backward_dq: { workgroupSize: ROW, covers: ROW, uniform: SCORE_PARAMS },  // over [L, H, B]
  attention_backward_dkdv: { workgroupSize: ROW, covers: ROW, uniform: SCORE_PARAMS },  // over [S, Hkv, B]
  attention_backward_sinks: { workgroupSize: ROW, covers: ROW, uniform: block('Dims', [['B'], ['H'], ['L'], ['pad0']]) },
  steps_scores: { workgroupSize: ROW, covers: ROW, uniform: SCORE_PARAMS },  // over [S, L, B * H]
  steps_softmax: { workgroupSize: ROW, covers: ROW, uniform: SCORE_PARAMS },  // over [L, H, B]
  steps_z: { workgroupSize: ROW, covers: ROW, uniform: SCORE_PARAMS },  // over [Dv, L, B * H]
  steps_weights: { workgroupSize: ROW, covers: ROW, uniform: SCORE_PARAMS },  // over [S, L, B * H]

  // The projections (gemm.js) and their gradients (backward.js): 32 x 32 outputs per workgroup.
  gemm: { ...GEMM, uniform: GEMM_DIMS },  // over [N, M]
  gemm_tiled: { ...GEMM, uniform: GEMM_DIMS },
  gemm_int8: { ...GEMM, uniform: QUANTIZED_GEMM_DIMS },
  gemm_q4: { ...GEMM, uniform: QUANTIZED_GEMM_DIMS },
  gemm_f16: { ...GEMM, uniform: QUANTIZED_GEMM_DIMS },
  gemm_input_grad: { ...GEMM, uniform: block('Dims', [['M'], ['N'], ['K'], ['accumulate']]) },  // over [K, M]
  gemm_weight_grad: { ...GEMM, uniform: GRAD_DIMS },  // over [K, N]
  gemm_bias_grad: { workgroupSize: ROW, covers: ROW, uniform: GRAD_DIMS },  // over [N]

  // Element-wise kernels: one invocation per element, dispatched flat.
  append_keys: { workgroupSize: ROW, flat: true,
    uniform: block('Params', [['batch'], ['given'], ['keys'], ['heads'], ['head_size'], ['per_head'], ['bias_row'], ['pad']]) },
  appended_keys_grad: { workgroupSize: ROW, flat: true,
    uniform: block('Params', [['batch'], ['given'], ['keys'], ['features'], ['constant'], ['bias_row'], ['pad0'], ['pad1']]) },
  cache_f16_pack: { workgroupSize: ROW, flat: true, uniform: block('Params', [['first'], ['count'], ['batch_stride'], ['pad0']]) },
  cache_f16_unpack: { workgroupSize: ROW, flat: true, uniform: block('Params', [['count'], ['batch_stride'], ['pad0'], ['pad1']]) },
  output_gate: { workgroupSize: ROW, flat: true, uniform: block('Params', [['count'], ['sigmoid'], ['_a'], ['_b']]) },
  output_gate_backward: { workgroupSize: ROW, flat: true, uniform: block('Params', [['count'], ['_a'], ['_b'], ['_c']]) },
  qk_norm: { workgroupSize: ROW, flat: true,
    uniform: block('Params', [['rows'], ['row_stride'], ['groups'], ['size'], ['eps', f32], ['pad0'], ['pad1'], ['pad2']]) },
  rotary: { workgroupSize: ROW, flat: true,
    uniform: block('Params', [['rows'], ['row_stride'], ['heads'], ['head_dim'], ['half'], ['interleaved'], ['pad0'], ['pad1']]) },
  steps_copy: { workgroupSize: ROW, flat: true,
    uniform: block('Params', [['count'], ['heads'], ['rows'], ['d'], ['buffer_rows'], ['split'], ['head_inner'], ['to_buffer']]) },
  steps_result: { workgroupSize: ROW, flat: true, uniform: block('Params', [['rows'], ['heads'], ['dv'], ['out_dim']]) },
  swap_leading_axes: { workgroupSize: ROW, flat: true, uniform: block('Dims', [['d0'], ['d1'], ['features'], ['pad']]) },

  // The optimizer (adamw.js): 256 parameters per workgroup; the sum of squares: one workgroup per tensor.
  adamw: { workgroupSize: [256, 1, 1], flat: true, uniform: block('Step', [
    ['n'], ['beta1', f32], ['oneMinusBeta1', f32], ['beta2', f32],
    ['oneMinusBeta2', f32], ['stepSize', f32], ['decay', f32], ['correction2Root', f32],
    ['eps', f32], ['gradScale', f32], ['pad0'], ['pad1'],
  ]) },
  sum_squares: { workgroupSize: [256, 1, 1], covers: [1, 1, 1], uniform: block('Dims', [['n'], ['slot'], ['pad0'], ['pad1']]) },
  buffer_probe: { workgroupSize: [1, 1, 1], covers: [1, 1, 1] },  // (tensors.js: is a buffer usable as storage?)
};

function kernelOf(name) {
  const kernel = KERNELS[name];
  if (kernel === undefined) throw new Error(`webgpu: no kernel '${name}' in the manifest`);
  return kernel;
}

/** Invocations per workgroup of `name`. */
export const lanes = (name) => kernelOf(name).workgroupSize.reduce((a, b) => a * b, 1);

/**
 * The template values the manifest gives kernel `name` (pipelines.js adds them to the caller's):
 * WORKGROUP_SIZE ("64", "8, 8"), LANES (invocations per workgroup) and its constants.
 */
export function manifestValues(name) {
  const { workgroupSize, constants = {} } = kernelOf(name);
  const [x, y, z] = workgroupSize;
  return { WORKGROUP_SIZE: z > 1 ? `${x}, ${y}, ${z}` : y > 1 ? `${x}, ${y}` : `${x}`, LANES: lanes(name), ...constants };
}

/** Constant `constant` of kernel `name` (e.g. decode_split's CHUNK, for the plan that counts chunks with it). */
export function kernelConstant(name, constant) {
  const value = kernelOf(name).constants?.[constant];
  if (value === undefined) throw new Error(`webgpu: kernel '${name}' has no constant ${constant}`);
  return value;
}

/**
 * The workgroups of a dispatch of `name` over `extent` ([x], [x, y] or [x, y, z]: a dispatch's
 * missing axes are 1): ceil(extent / covers) on each axis given.
 */
export function workgroups(name, extent) {
  const { covers } = kernelOf(name);
  if (!covers) throw new Error(`webgpu: kernel '${name}' is dispatched flat (flatWorkgroups)`);
  return extent.map((n, axis) => Math.ceil(n / covers[axis]));
}

/** The workgroups of a flat kernel over `count` elements: x up to the limit, the rest over y; z as given. */
export function flatWorkgroups(name, count, z = 1) {
  if (!kernelOf(name).flat) throw new Error(`webgpu: kernel '${name}' is not a flat kernel (workgroups)`);
  const groups = Math.ceil(count / lanes(name));
  const x = Math.min(groups, MAX_WORKGROUPS_PER_DIMENSION);
  return [x, x === 0 ? 0 : Math.ceil(groups / x), z];
}

/** The uniform block of kernel `name` (its struct and fields), or undefined. */
export const uniformBlock = (name) => kernelOf(name).uniform;

/**
 * Kernel `name`'s uniform block filled from `values` ({ field: number | boolean }, booleans as
 * 1 / 0; a field not given is 0, as the pads are), in its struct's order, 16-byte padded, as the
 * Uint32Array the uniform buffer is made from. A name the block does not have throws.
 */
export function uniformData(name, values) {
  const { uniform } = kernelOf(name);
  if (!uniform) throw new Error(`webgpu: kernel '${name}' has no uniform block`);
  const words = new Uint32Array(Math.ceil(uniform.fields.length / 4) * 4);
  const floats = new Float32Array(words.buffer);
  const at = new Map(uniform.fields.map((field, i) => [field.name, { i, type: field.type }]));
  for (const [field, value] of Object.entries(values)) {
    const slot = at.get(field);
    if (!slot) throw new Error(`webgpu: kernel '${name}': its ${uniform.struct} has no field ${field}`);
    const number = typeof value === 'boolean' ? Number(value) : value;
    if (slot.type === f32) floats[slot.i] = number;
    else words[slot.i] = number;
  }
  return words;
}
