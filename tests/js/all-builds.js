// Every wasm build in dist/ loaded side by side (tools/load-wasm-build.mjs), and the threaded
// build at more than one thread count, for tests that must hold on each of them.
import { threadsStarted } from '../../bindings/js/core/thread-start.js';
import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';

/**
 * One entry per (build, thread count): { label, MultiHeadAttention, KerasMultiHeadAttention, Linear, heapAllocatedBytes(),
 * memoryBytes(), use() }. Call use() before running on an entry: it sets the thread count.
 */
export async function loadAllBuilds({ threadCounts = [1, 3] } = {}) {
  const entries = [];
  for (const name of BUILDS) {
    const { module, MultiHeadAttention, KerasMultiHeadAttention, linear, linearBackward, Linear, scaledDotProductAttention } = await loadBuild(name);
    const base = {
      MultiHeadAttention,
      KerasMultiHeadAttention,
      linear,
      linearBackward,
      Linear,
      scaledDotProductAttention,
      heapAllocatedBytes: () => module.heapAllocatedBytes(),
      memoryBytes: () => (module.wasmMemory?.buffer ?? module.HEAP8.buffer).byteLength,
    };
    if (!module.setNumThreads) {
      entries.push({ ...base, label: name, use: () => {} });
      continue;
    }
    // Every thread the entries will use starts now (a start allocates; the pool never shrinks),
    // not in the first test that measures the heap around a call.
    module.setNumThreads(Math.max(...threadCounts));
    await threadsStarted(module);
    for (const n of threadCounts) {
      entries.push({ ...base, label: `${name} × ${n} threads`, use: () => module.setNumThreads(n) });
    }
  }
  return entries;
}
