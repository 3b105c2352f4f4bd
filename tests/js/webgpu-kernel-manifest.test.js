// The WebGPU kernel manifest (bindings/js/webgpu/kernel-manifest.js) against the kernels
// themselves: every kernel with an entry point is declared, every declared uniform block is its
// WGSL struct field for field, and the workgroup size is the manifest's, substituted.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  flatWorkgroups, KERNELS, lanes, manifestValues, uniformBlock, uniformData, workgroups,
} from '../../bindings/js/webgpu/kernel-manifest.js';
import { specialize } from '../../bindings/js/webgpu/pipelines.js';
import { WGSL } from '../../bindings/js/webgpu/wgsl.generated.js';

const withoutComments = (source) => source.replace(/\/\/[^\n]*/g, '');
const entryKernels = Object.keys(WGSL).filter((name) => /@compute[\s\S]*fn main\s*\(/.test(withoutComments(WGSL[name]))
  && !/^(flat_main|weights_main|gemm_quantized_body)$/.test(name));  // (pieces: their includers are the kernels)

/** The uniform variable of `source` ({ struct, fields: [{ name, type }] }), or undefined. */
function wgslUniform(source) {
  const text = withoutComments(source);
  const uses = [...text.matchAll(/var<uniform>\s+\w+\s*:\s*(\w+)\s*;/g)];
  assert.ok(uses.length <= 1, 'one uniform block per kernel');
  if (uses.length === 0) return undefined;
  const struct = uses[0][1];
  const body = new RegExp(`struct\\s+${struct}\\s*\\{([^}]*)\\}`).exec(text)?.[1];
  assert.ok(body !== undefined, `struct ${struct} is defined`);
  const fields = body.split(',').map((f) => f.trim()).filter(Boolean).map((f) => {
    const [, name, type] = /^(\w+)\s*:\s*(\w+)$/.exec(f) ?? [];
    assert.ok(name, `a plain scalar field: '${f}'`);
    return { name, type };
  });
  return { struct, fields };
}

test('every kernel with an entry point is in the manifest, and every manifest kernel is a kernel', () => {
  assert.deepEqual(Object.keys(KERNELS).sort(), entryKernels.sort());
});

test('every kernel\'s declared uniform fields are its WGSL struct\'s, in order and type', () => {
  for (const name of Object.keys(KERNELS)) {
    assert.deepEqual(uniformBlock(name), wgslUniform(WGSL[name]), name);
  }
});

test('every uniform block is u32 / f32 scalars (4 bytes each, as uniformData packs them)', () => {
  for (const name of Object.keys(KERNELS)) {
    for (const { type } of uniformBlock(name)?.fields ?? []) assert.ok(type === 'u32' || type === 'f32', `${name}: ${type}`);
  }
});

test('the workgroup size is the manifest\'s: no kernel writes its own, and substitution leaves nothing open', () => {
  for (const name of Object.keys(KERNELS)) {
    assert.match(WGSL[name], /@workgroup_size\(\{\{WORKGROUP_SIZE\}\}\)/, name);
    const compiled = specialize(name, Object.fromEntries([...WGSL[name].matchAll(/\{\{(\w+)\}\}/g)]
      .map(([, value]) => value).filter((value) => !(value in manifestValues(name))).map((value) => [value, 1])));
    assert.match(compiled, new RegExp(`@workgroup_size\\(${manifestValues(name).WORKGROUP_SIZE}\\)`), name);
    assert.doesNotMatch(compiled, /\{\{/, name);
  }
  assert.equal(manifestValues('gemm_tiled').WORKGROUP_SIZE, '8, 8');
  assert.equal(lanes('gemm_tiled'), 64);
  assert.equal(manifestValues('decode_split').CHUNK, 128);
});

test('a caller cannot set what the manifest fixes', () => {
  assert.throws(() => specialize('decode_split', { CHUNK: 64 }), /kernel 'decode_split': CHUNK is its manifest's/);
});

test('uniformData packs by name: u32s and f32s in the struct\'s order, booleans 1 / 0, the rest 0, 16-byte rounded', () => {
  const words = uniformData('flash_attention', { L: 5, S: 7, scale: 0.5, causal: true, kv_rows: 9 });
  assert.equal(words.length, 28);
  const floats = new Float32Array(words.buffer);
  assert.deepEqual([words[0], words[1], floats[8], words[11], words[27], words[2]], [5, 7, 0.5, 1, 9, 0]);
  assert.equal(uniformData('gemm_bias_grad', { M: 1 }).length, 4);
  assert.throws(() => uniformData('gemm', { rows: 1 }), /kernel 'gemm': its Dims has no field rows/);
  assert.throws(() => uniformData('buffer_probe', {}), /no uniform block/);
});

test('dispatches: ceil(extent / what a workgroup covers) per axis; flat kernels fold past 65535 workgroups onto y', () => {
  assert.deepEqual(workgroups('flash_attention', [65, 3, 2]), [2, 3, 2]);
  assert.deepEqual(workgroups('gemm_tiled', [33, 64]), [2, 2]);
  assert.deepEqual(flatWorkgroups('rotary', 64 * 65536, 3), [65535, 2, 3]);
  assert.deepEqual(flatWorkgroups('adamw', 257), [2, 1, 1]);
  assert.deepEqual(flatWorkgroups('output_gate', 0), [0, 0, 1]);
  assert.throws(() => workgroups('rotary', [1]), /dispatched flat/);
  assert.throws(() => flatWorkgroups('gemm', 1), /not a flat kernel/);
});
