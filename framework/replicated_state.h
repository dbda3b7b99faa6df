// State other than variables and random counters that a replicated
// parameter server copies to its backups (distributed/replica.h):
// synchronous replicas' gradient accumulators and barriers
// (kernels/cpu/sync_kernels.cc, framework/sync_barrier.h).
//
// Such state must reach the backups before anything it decided is seen
// outside the task: a kernel makes it durable with CommitReplicas before
// it lets its decision out (the barrier's choice of an applier), and every
// partition of a step that has such state commits before each value it
// sends to another task (distributed/worker.cc). Each state also keeps which
// step every worker's run took part in (RunSteps), so that a run retried after
// a failover takes part again in that step, and once, never in a later
// one.
#ifndef RUNNEL_FRAMEWORK_REPLICATED_STATE_H_
#define RUNNEL_FRAMEWORK_REPLICATED_STATE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "framework/replicated_state.pb.h"
#include "framework/resource_mgr.h"
#include "framework/variable.h"

namespace runnel {

class ReplicatedState : public Resource {
 public:
  // Its kind, the name its maker is registered under (below).
  virtual std::string kind() const = 0;
  // The order of the copy, lowest first: a state whose changes follow
  // another's (a barrier's choice follows the accumulators' sums) is read
  // first, so that a copy never holds an effect without its cause.
  // Variables are read after every state.
  virtual int rank() const = 0;
  // Changes with every change of the state.
  virtual uint64_t version() const = 0;
  struct Saved {
    uint64_t version = 0;
    std::string bytes;
  };
  // The state and its version, read together.
  virtual Saved Save() const = 0;
  // Replaces the state by a copy that Save made (a backup's).
  virtual absl::Status Load(const std::string& bytes) = 0;
};

// Makes an empty state of one kind, for a backup that receives its first
// copy; the kernels that keep a kind register its maker.
using ReplicatedStateMaker =
    std::function<std::shared_ptr<ReplicatedState>(ResourceMgr*)>;
void RegisterReplicatedState(const std::string& kind,
                             ReplicatedStateMaker make);
absl::StatusOr<std::shared_ptr<ReplicatedState>> MakeReplicatedState(
    const std::string& kind, ResourceMgr* resources);

// How kernels of a replicated task make the state written so far durable
// on its backups: the task's Worker keeps one in its device's resources.
class ReplicaCommit : public Resource {
 public:
  static constexpr char kName[] = "_replica_commit";
  explicit ReplicaCommit(std::function<absl::Status()> commit)
      : commit_(std::move(commit)) {}
  absl::Status Commit() const { return commit_(); }

 private:
  const std::function<absl::Status()> commit_;
};

// OK at once on a task without replicas.
absl::Status CommitReplicas(ResourceMgr* resources);

// Which step of a synchronous optimizer each worker's latest run took part
// in. Not thread-safe: its owner's lock guards it.
class RunSteps {
 public:
  // The step the run `tag` took part in, when this is a retry of it
  // (`*retry` true); otherwise records that it takes part in `step`, and
  // returns it.
  int64_t Resolve(const UpdateTag& tag, int64_t step, bool* retry);
  // The step the run `tag` took part in, or `step` when it took part in
  // none. A retried run reads the step count afresh, and may read a later
  // one (its first attempt counted its step, but had not ended it): what
  // it takes and ends is its step, not that.
  int64_t StepOf(const UpdateTag* tag, int64_t step) const;
  void SaveTo(google::protobuf::RepeatedPtrField<proto::RunStep>* out) const;
  void LoadFrom(const google::protobuf::RepeatedPtrField<proto::RunStep>& in);

 private:
  // writer -> (its latest run, the step it took part in)
  std::map<std::string, std::pair<int64_t, int64_t>> by_writer_;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_REPLICATED_STATE_H_
