#include "mha/runtime/thread_pool.hpp"

#include <algorithm>
#include <chrono>

#ifdef __EMSCRIPTEN_PTHREADS__
#include <emscripten/em_asm.h>
#endif

namespace mha {

int ThreadPool::hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

int ThreadPool::max_threads() {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  return 1;
#else
  return 256;
#endif
}

ThreadPool::ThreadPool(int num_threads) { set_num_threads(num_threads); }

int ThreadPool::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return participants_ + 1;
}

bool ThreadPool::starts_without_yield(std::thread& t) {
#ifdef __EMSCRIPTEN_PTHREADS__
  // Emscripten posts a pthread's start to its worker at once when the worker is loaded (the
  // PTHREAD_POOL_SIZE workers it preloads); a worker it had to make loads first, which needs the
  // creating thread's event loop.
  return EM_ASM_INT({
    var p = Module['PThread'].pthreads[$0 >>> 0];
    return p && p.worker && p.worker.loaded ? 1 : 0;
  }, reinterpret_cast<uintptr_t>(t.native_handle())) != 0;
#else
  (void)t;
  return true;
#endif
}

void ThreadPool::set_num_threads(int n) {
  std::lock_guard<std::mutex> run(run_mutex_);
  const int workers = std::clamp(n, 1, max_threads()) - 1;
  std::vector<int> awaited;
  while (static_cast<int>(workers_.size()) < workers) {
    const int index = static_cast<int>(workers_.size());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      started_.push_back(0);
    }
    workers_.emplace_back([this, index] { worker_loop(index); });
    if (starts_without_yield(workers_.back())) awaited.push_back(index);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  // Each new thread's start-up allocations happen now, not inside a later call (header comment).
  started_signal_.wait(lock, [&] { return std::all_of(awaited.begin(), awaited.end(), [&](int i) { return started_[i] != 0; }); });
  participants_ = workers;
}

int ThreadPool::starting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(std::count(started_.begin(), started_.end(), 0));
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::work_on(Job& job, int thread) {
  for (int64_t i; (i = job.next.fetch_add(1)) < job.count;) {
    try {
      (*job.task)(i, thread);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
      job.next = job.count;  // stop handing out tasks
    }
  }
}

void ThreadPool::parallel_for(int64_t count, const Task& task) {
  std::lock_guard<std::mutex> run(run_mutex_);
  Job job;
  job.task = &task;
  job.count = count;
  int participants;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    participants = participants_;
  }
  if (participants == 0 || count <= 1) {
    work_on(job, 0);
  } else {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      ++generation_;
      posted_.store(generation_, std::memory_order_release);
    }
    wake_.notify_all();
    work_on(job, 0);
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;  // latecomers no longer join; wait for those that did
    // The workers' last tasks usually end within microseconds of the caller's: watch for that
    // before sleeping, since a sleep costs a futex round trip (the header's kSpin, in reverse).
    lock.unlock();
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (active_.load(std::memory_order_acquire) != 0 && std::chrono::steady_clock::now() < until) {
    }
    lock.lock();
    idle_.wait(lock, [this] { return active_ == 0; });
  }
  if (job.error) std::rethrow_exception(job.error);
}

void ThreadPool::wake() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++wakeups_;
  }
  wake_.notify_all();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0, woken = 0;
  // Watch for a job newer than `seen` for a short while (see the header); the wait then finds it.
  const auto watch = [this](std::unique_lock<std::mutex>& lock, uint64_t seen_generation) {
    lock.unlock();
    constexpr auto kSpin = std::chrono::microseconds(200);
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (posted_.load(std::memory_order_acquire) == seen_generation && std::chrono::steady_clock::now() < until) {
    }
    lock.lock();
  };
  std::unique_lock<std::mutex> lock(mutex_);
  started_[index] = 1;  // (this thread's start-up allocations are made: set_num_threads may go on)
  started_signal_.notify_all();
  for (;;) {
    const auto has_job = [&] { return job_ && generation_ != seen && index < participants_; };
    wake_.wait(lock, [&] { return stop_ || has_job() || (wakeups_ != woken && index < participants_); });
    if (stop_) return;
    if (!has_job()) {  // woken ahead of a job
      woken = wakeups_;
      watch(lock, seen);
      continue;
    }
    seen = generation_;
    Job* job = job_;
    ++active_;
    lock.unlock();
    work_on(*job, index + 1);
    lock.lock();
    if (--active_ == 0) idle_.notify_all();
    watch(lock, seen);
  }
}

}  // namespace mha
