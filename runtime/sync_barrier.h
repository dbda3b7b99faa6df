// The barrier of one synchronous optimizer (docs/cluster.md): the workers
// meet there for each step, the arrival that completes the set of
// min(replicas, live workers) becomes the applier, and the others wait
// until it ends the step (Advance). A resource of the task that holds the
// optimizer's step count (kernels/cpu/sync_kernels.cc).
//
// An applier can die between being chosen and Advance (killed with its
// worker: its run on this task then aborts, since it can no longer receive
// from it). Its run's cancellation tells the barrier, which stops counting
// that arrival and picks another applier among the waiters, once enough
// are live; the accumulated gradients are still there (sync_take does not
// consume them), so the step is applied once, by the new applier. So the
// other workers never wait forever for a dead one.
#ifndef RUNNEL_RUNTIME_SYNC_BARRIER_H_
#define RUNNEL_RUNTIME_SYNC_BARRIER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/cancellation.h"
#include "runtime/live_workers.h"
#include "runtime/resource_mgr.h"

namespace runnel {

class SyncBarrier : public Resource,
                    public std::enable_shared_from_this<SyncBarrier> {
 public:
  using Done = std::function<void(bool applier)>;

  // Made through Create (it hands weak references of itself to the
  // cancellation of the applier's run). `live` may be null: one worker.
  static std::shared_ptr<SyncBarrier> Create(std::shared_ptr<LiveWorkers> live);
  ~SyncBarrier() override;

  // A worker arrives for `step`; `done` gets true for the applier, false
  // for the others once the step has ended (at once for an older step).
  // `run` is the cancellation of the arriving run (null outside one).
  void Arrive(int64_t step, int64_t replicas, CancellationManager* run,
              Done done);
  // Ends `step`: every worker waiting for it goes on. Called from the
  // applier's run, before that run ends.
  void Advance(int64_t step);

 private:
  explicit SyncBarrier(std::shared_ptr<LiveWorkers> live);
  struct Waiter {
    Done done;
    CancellationManager* run = nullptr;  // null: no loss detection
    bool counts = true;  // towards the step's set (a late one does not)
  };
  // Completes stale arrivals, and picks the applier once enough arrived.
  void Evaluate();
  // The run of the applier of `step` aborted before Advance.
  void ApplierLost(int64_t step,
                   const std::shared_ptr<CancellationManager::Token>& token);

  std::shared_ptr<LiveWorkers> live_;
  int subscription_ = -1;
  std::mutex mu_;
  int64_t step_ = -1;
  int64_t replicas_ = 1;
  int64_t arrived_ = 0;
  bool applying_ = false;
  // The applier's run and its registration there, until Advance.
  CancellationManager* applier_run_ = nullptr;
  CancellationManager::Token applier_token_ = 0;
  std::vector<Waiter> waiting_;
  std::vector<Done> stale_;
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_SYNC_BARRIER_H_
