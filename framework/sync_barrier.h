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
//
// On a replicated parameter server (runs carry an UpdateTag) the barrier
// is state its backups copy (ReplicatedState): the step, the applier
// chosen for it, and the step each worker's latest run arrived for. The
// applier is committed to the backups before it is told, and stays the
// applier of its step until it ends it: after a failover its retried run
// (the same tag) is the applier again, so the writes its first attempt
// made are not made again (framework/variable.h: WriteKey) and those it
// had not made are made once. A run that arrives again (its retry) takes
// part in the step it first arrived for, and replaces its earlier arrival;
// a later step waits until the chosen applier ends this one. Only a chosen
// applier whose worker is gone (framework/live_workers.h) gives its step
// to another.
#ifndef RUNNEL_FRAMEWORK_SYNC_BARRIER_H_
#define RUNNEL_FRAMEWORK_SYNC_BARRIER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/cancellation.h"
#include "framework/live_workers.h"
#include "framework/replicated_state.h"
#include "framework/resource_mgr.h"

namespace runnel {

class SyncBarrier : public ReplicatedState,
                    public std::enable_shared_from_this<SyncBarrier> {
 public:
  using Done = std::function<void(bool applier)>;

  // Made through Create (it hands weak references of itself to the
  // cancellation of the applier's run). `live` may be null: one worker.
  static std::shared_ptr<SyncBarrier> Create(std::shared_ptr<LiveWorkers> live);
  ~SyncBarrier() override;

  // A worker arrives for `step`; `done` gets true for the applier, false
  // for the others once the step has ended (at once for an older step).
  // `run` is the cancellation of the arriving run (null outside one), and
  // `tag` its update on a replicated task (null elsewhere).
  void Arrive(int64_t step, int64_t replicas, CancellationManager* run,
              const UpdateTag* tag, Done done);
  // Ends `step` (for a tagged run, the step it arrived for: RunSteps::StepOf):
  // every worker waiting for it goes on. Called from the applier's run,
  // before that run ends.
  void Advance(int64_t step, const UpdateTag* tag = nullptr);

  // Calls `granted` once no step is being applied (at once, or when the
  // applier ends its step); from then on no applier is chosen until
  // Release(run), or until `run` is cancelled. A cancelled run's pending
  // hold is dropped and `granted` called, so its kernel ends.
  void Hold(CancellationManager* run, std::function<void()> granted);
  void Release(CancellationManager* run);

  // ReplicatedState.
  std::string kind() const override { return "sync_barrier"; }
  int rank() const override { return 0; }
  uint64_t version() const override;
  Saved Save() const override;
  absl::Status Load(const std::string& bytes) override;

 private:
  explicit SyncBarrier(std::shared_ptr<LiveWorkers> live);
  struct Waiter {
    Done done;
    CancellationManager* run = nullptr;  // null: no loss detection
    bool counts = true;  // towards the step's set (a late one does not)
    std::optional<UpdateTag> tag;
    int64_t id = 0;  // its arrival's (Leave)
  };
  // Whether `w` is the chosen applier's run.
  bool IsChosen(const Waiter& w) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets a chosen applier whose worker is gone (or came back as a new
  // process); returns whether it did.
  bool DropDeadChoice() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
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
  // Makes arrival `id` leave (Leave) should `run` be cancelled while it
  // waits.
  void WatchRun(CancellationManager* run, int64_t id);
  // Arrival `id`'s run was cancelled (its step aborted, on this task or
  // elsewhere): if it still waits, it goes on and no longer counts. (Else
  // an aborted step would wait here until the step ends, or for ever.)
  void Leave(int64_t id);
  // The run of the applier of `step` aborted before Advance.
  void ApplierLost(int64_t step,
                   const std::shared_ptr<CancellationManager::Token>& token);

  std::shared_ptr<LiveWorkers> live_;
  int subscription_ = -1;
  mutable std::mutex mu_;
  int64_t step_ = -1;
  int64_t replicas_ = 1;
  int64_t arrived_ = 0;
  int64_t arrivals_ = 0;  // the last arrival's id
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
    std::optional<UpdateTag> tag;
    Done done;
    int64_t id = 0;
  };
  // Arrives again with each of `early` (a step ended, or its choice was
  // dropped).
  void ArriveAgain(std::vector<Early> early);
  std::vector<Early> early_;
  std::vector<Holder> holders_;  // granted (granted empty) or pending
  std::vector<Done> stale_;
  // Replicated tasks only: the applier chosen for step_, and the step each
  // worker's latest run arrived for.
  std::optional<UpdateTag> chosen_;
  RunSteps runs_;
  uint64_t version_ = 0;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_SYNC_BARRIER_H_
