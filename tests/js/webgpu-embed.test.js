// The WebGPU kernels' embedded copy (bindings/js/webgpu/wgsl.generated.js, committed so the
// package needs no build step for it) is what tools/embed-wgsl.mjs makes from the .wgsl files.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { generate } from '../../tools/embed-wgsl.mjs';

test('wgsl.generated.js is fresh (run node tools/embed-wgsl.mjs after editing a .wgsl file)', () => {
  const committed = readFileSync(new URL('../../bindings/js/webgpu/wgsl.generated.js', import.meta.url), 'utf8');
  assert.equal(committed, generate());
});

test('every kernel has its includes expanded', async () => {
  const { WGSL } = await import('../../bindings/js/webgpu/wgsl.generated.js');
  for (const name of ['gemm', 'rotary', 'flash_attention', 'attention_weights']) {
    assert.match(WGSL[name], /@compute/, name);
    assert.doesNotMatch(WGSL[name], /#include/, name);
  }
  assert.match(WGSL.flash_attention, /fn final_score/);
});

test('a piece two pieces of one kernel include is pulled in once (head_sizes.wgsl in the dQ kernel)', async () => {
  const { WGSL } = await import('../../bindings/js/webgpu/wgsl.generated.js');
  assert.equal(WGSL.attention_backward_dq.match(/^const DH: u32/gm)?.length, 1);
  assert.match(WGSL.attention_backward_dq, /fn load_key_value_tiles/);
  assert.match(WGSL.attention_backward_dq, /^const RS: u32/m);
});
