#include "base/thread_pool.h"

#include <pthread.h>

#define EIGEN_USE_THREADS
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unsupported/Eigen/CXX11/ThreadPool>

namespace runnel {

namespace {

// Eigen's thread environment, with the pool's name on its threads (what
// `top -H`, `perf` and debuggers show; at most 15 characters are kept).
struct NamedThreads : Eigen::StlThreadEnvironment {
  std::string name;
  EnvThread* CreateThread(std::function<void()> f) {
    return new EnvThread([name = name, f = std::move(f)] {
      pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
      f();
    });
  }
};

}  // namespace

// Idle workers sleep at once instead of spinning: a session has an
// inter-op and an intra-op pool, and on 2 cores a spinning idle worker of
// one took the cycles the other's busy ones needed (the char transformer's
// step, 4 alternating rounds twice: median 283.6 ms without spinning
// against 320.5 ms with it; the MLP, CNN, char-LM and loop benchmarks
// showed no difference above the noise).
struct ThreadPool::Impl {
  Impl(int n, std::string name)
      : pool(n, /*allow_spinning=*/false, NamedThreads{{}, std::move(name)}) {}
  Eigen::ThreadPoolTempl<NamedThreads> pool;
};

ThreadPool::ThreadPool(int num_threads, std::string name)
    : impl_(std::make_unique<Impl>(num_threads < 1 ? 1 : num_threads,
                                   std::move(name))) {}

ThreadPool::~ThreadPool() = default;

int ThreadPool::num_threads() const { return impl_->pool.NumThreads(); }

void ThreadPool::Schedule(std::function<void()> fn) {
  impl_->pool.Schedule(std::move(fn));
}

namespace {

// The items of one RunClaimed call. Helpers hold it by shared_ptr: one that
// starts after the caller returned finds no item left and touches nothing
// else, so `fn` (the caller's) is read only by whoever claimed an item, and
// the caller waits for every claimed item.
struct Claims {
  Claims(int64_t n, const std::function<void(int64_t)>* f) : count(n), fn(f) {}
  const int64_t count;
  const std::function<void(int64_t)>* const fn;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> finished{0};
  std::mutex mu;
  std::condition_variable cv;

  void Work() {
    int64_t ran = 0;
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;
         ++ran) {
      (*fn)(i);
    }
    if (ran > 0 &&
        finished.fetch_add(ran, std::memory_order_acq_rel) + ran == count) {
      std::lock_guard<std::mutex> lock(mu);
      cv.notify_all();
    }
  }

  bool Done() const {
    return finished.load(std::memory_order_acquire) == count;
  }
};

}  // namespace

void ThreadPool::RunClaimed(int64_t count,
                            const std::function<void(int64_t)>& fn) {
  if (count <= 0) return;
  if (count == 1 || num_threads() == 1) {
    for (int64_t i = 0; i < count; ++i) fn(i);
    return;
  }
  // Every pool thread is woken, not only as many as the caller needs: Linux
  // may queue a woken thread behind the busy thread that woke it even with
  // another core idle (it scans for an idle core only while the cores'
  // load is low), and such a helper starts after the caller finished.
  // Waking them all, one lands on the idle core; the others find nothing
  // left. On the 2-core machine of stop 69, the Fashion MLP's weight
  // gradient (three GEMM pieces) took 200 us in most steps with one helper,
  // 133 with two (a trace of 41 steps each).
  const int64_t helpers = std::min<int64_t>(num_threads(), count);
  auto claims = std::make_shared<Claims>(count, &fn);
  for (int64_t h = 0; h < helpers; ++h) {
    impl_->pool.Schedule([claims] { claims->Work(); });
  }
  claims->Work();
  // What is left are items a helper is running: wait for them, briefly
  // spinning first (an item is a fraction of the whole).
  for (int spin = 0; spin < 1000 && !claims->Done(); ++spin) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  if (!claims->Done()) {
    std::unique_lock<std::mutex> lock(claims->mu);
    claims->cv.wait(lock, [&] { return claims->Done(); });
  }
}

void ThreadPool::ParallelFor(int64_t total, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (total <= 0) return;
  // Below ~400k cycles (about 100 us) of work, threading costs more than
  // it saves: waking a sleeping worker takes tens of microseconds. At 20k
  // cycles, the char-LM's element-wise ops on its [32, 1024] gates were
  // split, and its training step took 32 ms on two threads against 26-30
  // ms at 400k (the Fashion MLP, the CNN, the row-LSTM and the char
  // transformer unchanged).
  const int64_t work = total * cost_per_unit;
  if (num_threads() == 1 || work < 400000) {
    fn(0, total);
    return;
  }
  // Blocks of at least ~100k cycles, 1 to 4 a thread, claimed in turn: the
  // caller starts at once and a helper takes blocks from when it wakes.
  const int64_t blocks =
      std::min<int64_t>(total, std::clamp<int64_t>(work / 100000, num_threads(),
                                                   4 * int64_t{num_threads()}));
  RunClaimed(blocks, [&](int64_t b) {
    fn(total * b / blocks, total * (b + 1) / blocks);
  });
}

Eigen::ThreadPoolInterface* ThreadPool::eigen_pool() { return &impl_->pool; }

int ThreadPool::DefaultNumThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace runnel
