// The threads the handles run on: in the threads build, one pool for the whole module.
#pragma once

#include <memory>

#include "mha/runtime/thread_pool.hpp"

namespace mha_embind {

#ifdef __EMSCRIPTEN_PTHREADS__
// wasm threads are workers the module preallocates, so they are a per-module resource: one
// pool for every layer, with one thread per core; setNumThreads resizes it.
extern const std::shared_ptr<mha::ThreadPool> module_pool;

// Threads the layers use from the next forward call on (clamped to 1..256); returns that count.
int setNumThreads(int n);
int numThreads();
// The pool's workers whose thread has not started yet (beyond Emscripten's preallocated workers,
// a thread starts only once the main thread yields): the JS loaders wait for 0, so that each
// thread's start-up allocations are made before the caller's first call.
int threadsStarting();
#endif

// The pool the attention function and mha.Linear run on: the module's, or none (the calling
// thread) in a build without threads.
inline mha::ThreadPool* pool() {
#ifdef __EMSCRIPTEN_PTHREADS__
  return module_pool.get();
#else
  return nullptr;
#endif
}

// Threads a call's buffers are budgeted for.
inline int pool_threads() {
#ifdef __EMSCRIPTEN_PTHREADS__
  return module_pool->size();
#else
  return 1;
#endif
}

}  // namespace mha_embind
