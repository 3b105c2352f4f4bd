#include "module_pool.hpp"

namespace mha_embind {

#ifdef __EMSCRIPTEN_PTHREADS__
// Made at module start (static initialization, once Emscripten has loaded its preallocated
// workers), not at the first call that needs it: its workers' start-up allocations
// (src/mha/runtime/thread_pool.hpp) are then made before any call, never inside one that a caller
// measures the heap around.
const std::shared_ptr<mha::ThreadPool> module_pool = std::make_shared<mha::ThreadPool>(mha::ThreadPool::hardware_threads());

int setNumThreads(int n) {
  module_pool->set_num_threads(n < 1 ? 1 : n > 256 ? 256 : n);
  return module_pool->size();
}

int numThreads() { return module_pool->size(); }

int threadsStarting() { return module_pool->starting(); }
#endif

}  // namespace mha_embind
