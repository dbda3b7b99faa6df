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
//
// A snapshot holds the barrier (Hold, Release): once no step is being
// applied, and until the holding run releases it or ends by an error, no
// applier is chosen, so every variable the optimizer updates stands still
// between two of its steps (docs/cluster.md, checkpoints under synchronous
// replicas).
#ifndef RUNNEL_FRAMEWORK_SYNC_BARRIER_H_
#define RUNNEL_FRAMEWORK_SYNC_BARRIER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/cancellation.h"
#include "framework/live_workers.h"
#include "framework/resource_mgr.h"

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

  // Calls `granted` once no step is being applied (at once, or when the
  // applier ends its step); from then on no applier is chosen until
  // Release(run), or until `run` is cancelled. A cancelled run's pending
  // hold is dropped and `granted` called, so its kernel ends.
  void Hold(CancellationManager* run, std::function<void()> granted);
  void Release(CancellationManager* run);

 private:
  explicit SyncBarrier(std::shared_ptr<LiveWorkers> live);
  struct Waiter {
    Done done;
    CancellationManager* run = nullptr;  // null: no loss detection
    bool counts = true;  // towards the step's set (a late one does not)
  };
  // Completes stale arrivals, and picks the applier once enough arrived.
  void Evaluate();
  struct Holder {
    CancellationManager* run = nullptr;
    std::shared_ptr<CancellationManager::Token> token;
    std::function<void()> granted;  // empty once called
  };
  // Grants the pending holds (no step is being applied); returns their
  // callbacks, to call outside mu_.
  std::vector<std::function<void()>> GrantHolds();
  bool Held() const;
  // The run of a hold was cancelled.
  void HoldCancelled(CancellationManager* run,
                     const std::shared_ptr<CancellationManager::Token>& token);
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
  // Arrivals for a later step while this one is being applied: a run that
  // read the step count after the applier advanced it but before Advance.
  // They arrive again once Advance has ended the step.
  struct Early {
    int64_t step, replicas;
    CancellationManager* run;
    Done done;
  };
  std::vector<Early> early_;
  std::vector<Holder> holders_;  // granted (granted empty) or pending
  std::vector<Done> stale_;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_SYNC_BARRIER_H_
