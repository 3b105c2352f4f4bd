// Layer lifetime: dispose(), [Symbol.dispose] for `using`, and the FinalizationRegistry safety net
// that frees (and warns once about) layers garbage-collected without dispose().
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

import { init } from '../../bindings/js/index.js';

const mha = await init({ threads: 1 });
const INDEX_URL = new URL('../../bindings/js/index.js', import.meta.url).href;

test('[Symbol.dispose] frees the layer like dispose()', () => {
  const before = mha.heapAllocatedBytes();
  const layer = new mha.MultiHeadAttention({ embedDim: 16, numHeads: 4 });
  assert.ok(mha.heapAllocatedBytes() > before);
  assert.equal(typeof layer[Symbol.dispose], 'function');
  layer[Symbol.dispose]();
  assert.equal(layer.alive, false);
  assert.equal(mha.heapAllocatedBytes(), before);
  layer[Symbol.dispose]();  // twice is harmless, like dispose()
  assert.throws(() => layer.stateDictShapes(), { name: 'TypeError', message: /this layer was disposed/ });
});

// Garbage collection needs --expose-gc, so this part runs in a child process.
const CHILD = `
import { init } from ${JSON.stringify(INDEX_URL)};
const mha = await init({ threads: 1 });
const warnings = [];
console.warn = (...args) => warnings.push(args.join(' '));
const before = mha.heapAllocatedBytes();
(() => { for (let i = 0; i < 50; i++) new mha.MultiHeadAttention({ embedDim: 32, numHeads: 4 }); })();
const leaked = mha.heapAllocatedBytes();
(() => { for (let i = 0; i < 50; i++) new mha.MultiHeadAttention({ embedDim: 32, numHeads: 4 }).dispose(); })();
for (let round = 0; round < 50 && mha.heapAllocatedBytes() !== before; round++) {
  globalThis.gc();
  await new Promise((resolve) => setTimeout(resolve, 10));
}
console.log(JSON.stringify({ before, leaked, after: mha.heapAllocatedBytes(), warnings }));
`;

test('layers collected without dispose() are freed, with one warning in all', () => {
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', CHILD], { encoding: 'utf8' });
  const { before, leaked, after, warnings } = JSON.parse(out.trim().split('\n').pop());
  assert.ok(leaked > before, 'the layers held wasm memory');
  assert.equal(after, before, 'the registry freed every collected layer');
  assert.deepEqual(warnings, ['mha-wasm: a MultiHeadAttention layer was garbage-collected without dispose(); '
    + 'its wasm memory was freed late. Call layer.dispose() (or use `using`) when done with a layer.']);
});
