// What a Session needs from a cluster (docs/cluster.md), without the
// transport: distributed/ implements it over gRPC.
//
// The process that runs a script is one task of the cluster (a worker) and
// the master of its graph. Its session places nodes on its own devices and
// on other tasks' devices; the partitions on another task are registered
// there once and then run by step id, while tensors crossing tasks meet in
// each task's rendezvous for the step.
#ifndef RUNNEL_COMMON_RUNTIME_CLUSTER_CONTEXT_H_
#define RUNNEL_COMMON_RUNTIME_CLUSTER_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common_runtime/rendezvous.h"
#include "framework/graph.h"
#include "framework/tensor.h"

namespace runnel {

class DeviceSet;
class ThreadPool;

class ClusterContext {
 public:
  virtual ~ClusterContext() = default;

  // This task, "/job:worker/task:1", and whether it is the chief (worker
  // 0), which initializes and restores the shared state.
  virtual const std::string& local_task() const = 0;
  virtual bool is_chief() const = 0;
  // The other tasks' devices, full names.
  virtual std::vector<std::string> remote_devices() const = 0;
  // Lets other tasks run partitions on this task's devices (the session's).
  virtual void ServeDevices(const DeviceSet* devices,
                            ThreadPool* inter_op_pool) = 0;

  // A step id no other master uses.
  virtual int64_t NewStepId() = 0;
  // A new update: the number that tags the writes of one run, kept when
  // the run is retried, so that a replicated task writes each once
  // (framework/variable.h: WriteKey).
  virtual int64_t NewUpdate() { return 0; }
  // This task's rendezvous for `step`: receives from other tasks fetch
  // their tensors there.
  virtual std::shared_ptr<Rendezvous> StepRendezvous(int64_t step) = 0;
  // Registers a partition with `task`; the handle runs it. `sync`: the
  // step has synchronous replicas (GraphDef's commit_sends).
  virtual absl::StatusOr<std::string> RegisterPartition(const std::string& task,
                                                        const Graph& graph,
                                                        bool sync) = 0;
  // Runs a registered partition as part of `step`, of a run that reads for
  // `snapshot` (ReadConsistently's id; 0: none) and writes as `update`
  // (NewUpdate). With `returns` (a partition that receives nothing, its
  // task's only one in the step), the values it sends here may come back
  // with its answer instead of being fetched, before `done`. With `ends`
  // (no other task runs a part of the step), the step may end there with
  // the run, when it leaves nothing there to fetch. `done` hears how it ended
  // (an unreachable task is Unavailable, naming it) and whether the step ended
  // there (EndStep need not name the task).
  using PartitionDone = std::function<void(absl::Status, bool ended)>;
  virtual void RunPartition(const std::string& task, const std::string& handle,
                            int64_t step, int64_t snapshot, int64_t update,
                            bool returns, bool ends, PartitionDone done) = 0;
  // Aborts the step on `tasks` (and here) with `status`.
  virtual void AbortStep(int64_t step, const std::vector<std::string>& tasks,
                         const absl::Status& status) = 0;
  // Forgets the step here and on `tasks`.
  virtual void EndStep(int64_t step, const std::vector<std::string>& tasks) = 0;

  // State on other tasks, by variable name.
  virtual absl::StatusOr<std::vector<bool>> VariablesInitialized(
      const std::string& task, const std::vector<std::string>& names) = 0;
  // Sets those that hold no value yet.
  virtual absl::Status InitVariables(const std::string& task,
                                     const std::vector<std::string>& names,
                                     const std::vector<Tensor>& values) = 0;
  // How long a worker waits for the chief to initialize shared state.
  virtual double chief_wait_seconds() const { return 60; }
  // A line for the user ("waiting for the chief ...").
  virtual void Inform(const std::string& message) = 0;

  // How long a run that failed because a task was unreachable is retried
  // (`runnel cluster --restart`: the task comes back; a replicated task's
  // backup takes over); 0: not retried.
  virtual double retry_seconds() const { return 0; }
  // Waits until every other task this process ran partitions on answers
  // (a replicated task: its primary, promoting a backup where the primary
  // is gone), for at most `seconds`.
  virtual absl::Status WaitForTasks(double seconds) = 0;

  // Runs `read` (the chief's read of every variable, for a checkpoint) as
  // a consistent snapshot of the state on other tasks where the cluster can
  // take one (docs/checkpoints.md), passing the snapshot's id for the runs
  // `read` makes (RunOptions::snapshot); 0 when there is none.
  virtual absl::Status ReadConsistently(
      const std::function<absl::Status(int64_t snapshot)>& read) {
    return read(0);
  }
};

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_CLUSTER_CONTEXT_H_
