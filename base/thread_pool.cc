#include "base/thread_pool.h"

#define EIGEN_USE_THREADS
#include <thread>
#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/CXX11/ThreadPool>

namespace runnel {

// Idle workers sleep at once instead of spinning: a session has an
// inter-op and an intra-op pool, and on 2 cores a spinning idle worker of
// one took the cycles the other's busy ones needed (the char transformer's
// step, 4 alternating rounds twice: median 283.6 ms without spinning
// against 320.5 ms with it; the MLP, CNN, char-LM and loop benchmarks
// showed no difference above the noise).
struct ThreadPool::Impl {
  explicit Impl(int n) : pool(n, /*allow_spinning=*/false), device(&pool, n) {}
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice device;
};

ThreadPool::ThreadPool(int num_threads)
    : impl_(std::make_unique<Impl>(num_threads < 1 ? 1 : num_threads)) {}

ThreadPool::~ThreadPool() = default;

int ThreadPool::num_threads() const { return impl_->pool.NumThreads(); }

void ThreadPool::Schedule(std::function<void()> fn) {
  impl_->pool.Schedule(std::move(fn));
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
  if (num_threads() == 1 || total * cost_per_unit < 400000) {
    fn(0, total);
    return;
  }
  impl_->device.parallelFor(
      total, Eigen::TensorOpCost(0, 0, static_cast<double>(cost_per_unit)),
      [&fn](Eigen::Index begin, Eigen::Index end) { fn(begin, end); });
}

Eigen::ThreadPoolInterface* ThreadPool::eigen_pool() { return &impl_->pool; }

int ThreadPool::DefaultNumThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace runnel
