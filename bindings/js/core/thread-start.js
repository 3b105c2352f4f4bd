// Waits for the threads build's workers to start. A thread's start allocates (its thread-local
// storage block, on the wasm heap); workers Emscripten preallocated start at once, inside
// setNumThreads, but one beyond them loads first, which needs the main thread to yield. Awaited
// after setNumThreads, the allocation is made here, not inside a later call whose heap use the
// caller measures (src/mha/runtime/thread_pool.hpp).

/**
 * Resolves once module.threadsStarting() is 0 (at once for a build without threads), or after
 * `limitMs` (a worker that never loads is reported by the call that needs it, not here).
 */
export async function threadsStarted(module, limitMs = 10000) {
  const until = Date.now() + limitMs;
  while (module.threadsStarting && module.threadsStarting() > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
