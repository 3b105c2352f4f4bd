// A small fork-join pool: parallel_for(count, task) runs task(i, thread) for i in 0..count-1 on
// the pool's threads and the calling thread, and returns when all are done; `thread` (0 = the
// caller, < size()) lets tasks use per-thread scratch memory. Not a global: whoever runs layers
// (the embind module, the native benchmark) owns one and hands it to the layers.
//
// Deadlock-free even when a worker has not started yet (in wasm a new pthread only starts
// once the main thread yields): tasks are claimed from a shared counter, so the caller alone
// can finish them, and it only waits for workers that actually claimed this job. For the same
// reason the pool never shrinks: set_num_threads parks surplus workers instead of joining
// them (joining a pthread that never started would hang the wasm main thread).
//
// A thread's start allocates (in wasm, its thread-local storage block: 48 bytes of the heap), so
// set_num_threads waits for the workers it made to start, wherever that cannot hang (natively
// always; in wasm, a worker Emscripten preloaded, PTHREAD_POOL_SIZE): otherwise the allocation
// lands in some later call of the caller, at a time that depends on scheduling, and heap
// accounting around that call (tests/js/gradients-lifetime.test.js) sees it some of the time.
// starting() counts the workers still to start (those that wait for the caller to yield).
//
// A worker that finishes a job watches for the next one for a short while (kSpin) before it
// sleeps: a decode step runs five small jobs back to back (projections, attention, output), and
// waking a sleeping thread costs about as long as one of them (in wasm, a futex round trip
// through the JS event machinery), so without the spin the caller had done the whole job alone
// by the time the worker arrived. wake() starts the watch early, when the caller knows a job
// is coming after serial work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mha {

class ThreadPool {
 public:
  // num_threads counts the caller: 1 means no extra threads. Clamped to [1, max_threads()].
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads parallel_for uses, the caller included.
  int size() const;
  // Uses n threads from the next parallel_for on (clamped to [1, max_threads()]); starts
  // workers when there are too few (and waits for them to start: see above), parks the surplus.
  void set_num_threads(int n);
  // Workers made whose thread has not started yet: in wasm, those beyond Emscripten's preloaded
  // pool, which start only after the calling thread yields to its event loop. 0 natively.
  int starting() const;

  // Runs one job at a time; an exception from a task is rethrown here after all stop.
  using Task = std::function<void(int64_t index, int thread)>;
  void parallel_for(int64_t count, const Task& task);
  // Wakes the sleeping workers to watch for a job (kSpin) without giving them one: a caller that
  // will post a job after some serial work calls it first, so the wake-up overlaps that work.
  void wake();

  // Threads this build can run: 1 without thread support (the non-pthread wasm builds).
  static int max_threads();
  // The machine's logical cores (at least 1).
  static int hardware_threads();

 private:
  struct Job {
    const Task* task;
    int64_t count;
    std::atomic<int64_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
  };
  static void work_on(Job& job, int thread);
  // Whether thread t starts without the caller yielding (see the header comment).
  static bool starts_without_yield(std::thread& t);
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // serializes parallel_for and set_num_threads
  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_, idle_, started_signal_;
  std::vector<char> started_;  // per worker: its thread has started (set at the top of worker_loop)
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  uint64_t wakeups_ = 0;  // wake() calls
  std::atomic<uint64_t> posted_{0};  // generation_, readable without the mutex (the workers' spin)
  std::atomic<int> active_{0};  // workers inside the current job (changed under mutex_; read by the caller's spin)
  int participants_ = 0;  // workers 0..participants_-1 take part in jobs
  bool stop_ = false;
};

}  // namespace mha
