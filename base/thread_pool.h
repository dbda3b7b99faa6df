// A fixed-size pool of worker threads (Eigen's non-blocking pool inside).
//
// The session owns two: the inter-op pool, on which the executor runs
// expensive kernels, and the intra-op pool, which kernels use through
// ParallelFor, RunClaimed or an Eigen ThreadPoolDevice to split one op
// across cores.
// All methods are thread-safe. Destruction waits for scheduled work.
#ifndef RUNNEL_BASE_THREAD_POOL_H_
#define RUNNEL_BASE_THREAD_POOL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace Eigen {
class ThreadPoolInterface;
}  // namespace Eigen

namespace runnel {

class ThreadPool {
 public:
  // `name` is given to the pool's threads.
  explicit ThreadPool(int num_threads, std::string name = "runnel-pool");
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const;
  void Schedule(std::function<void()> fn);
  // Runs fn(begin, end) over shards of [0, total), in parallel and on the
  // calling thread, returning when all are done. `cost_per_unit` is a rough
  // count of cycles per element; small totals run inline in one shard.
  void ParallelFor(int64_t total, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn);
  // Runs fn(i) once for each i in [0, count), returning when all are done.
  // The caller and the pool's threads (up to `count` of them woken) claim
  // the items in turn: the caller starts at once and never waits for a
  // helper to wake, only for the items helpers took. Items must not block
  // on each other.
  void RunClaimed(int64_t count, const std::function<void(int64_t)>& fn);
  // For kernels that build an Eigen::ThreadPoolDevice.
  Eigen::ThreadPoolInterface* eigen_pool();

  // Cores on this machine.
  static int DefaultNumThreads();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace runnel

#endif  // RUNNEL_BASE_THREAD_POOL_H_
