// One task's side of a cluster (docs/cluster.md), without the transport:
// the partitions registered with it, the rendezvous of each step it takes
// part in, and its variables, shared by name between every worker that
// uses them. distributed/grpc_service.h serves it over gRPC.
#ifndef RUNNEL_DISTRIBUTED_WORKER_H_
#define RUNNEL_DISTRIBUTED_WORKER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "base/thread_pool.h"
#include "common_runtime/executor.h"
#include "common_runtime/rendezvous.h"
#include "framework/device_set.h"
#include "framework/graph.pb.h"

namespace runnel {

// A step's rendezvous on one task. A key sent on another task (its source
// device is there) is fetched from that task with `fetch`.
class StepRendezvous : public Rendezvous,
                       public std::enable_shared_from_this<StepRendezvous> {
 public:
  using Fetch =
      std::function<void(const std::string& src_task, const std::string& key,
                         int64_t step, Done done)>;
  // Fetches several keys from `src_task` at once; `done` hears each key
  // once.
  using FetchMany = std::function<void(
      const std::string& src_task, std::vector<std::string> keys, int64_t step,
      std::function<void(const std::string& key, const absl::Status&,
                         const Tensor&, bool is_dead)>
          done)>;
  StepRendezvous(std::string task, int64_t step, Fetch fetch,
                 FetchMany fetch_many = nullptr)
      : task_(std::move(task)),
        step_(step),
        fetch_(std::move(fetch)),
        fetch_many_(std::move(fetch_many)) {}

  bool Recv(const std::string& key, Done done, absl::Status* status,
            Tensor* value, bool* is_dead) override;
  // With `fetch_many`: the keys sent on another task (but one whose run
  // returns its values, ReturnedBy) are fetched from it in one call, and
  // their receivers here wait for that call to deliver them. Two or more
  // keys from a task, each prefetched once.
  void Prefetch(const std::vector<std::string>& keys) override;

  // The values `task` sends here come with the answer to its run
  // (RunGraphRequest's return_to), so they are not fetched. Before the
  // step's partitions here start.
  void ReturnedBy(const std::string& task);
  // `task`'s run has answered and its values are delivered (Send), but
  // those of `left`, which are being fetched: a receiver of another of its
  // keys fails, as its value will never come.
  void Answered(const std::string& task, const std::vector<std::string>& left);

 private:
  const std::string task_;
  const int64_t step_;
  const Fetch fetch_;
  const FetchMany fetch_many_;
  std::mutex returned_mu_;
  // The keys Prefetch fetches.
  absl::flat_hash_set<std::string> prefetched_ ABSL_GUARDED_BY(returned_mu_);
  // The tasks of ReturnedBy, and whether each has answered.
  absl::flat_hash_map<std::string, bool> returned_by_
      ABSL_GUARDED_BY(returned_mu_);
  absl::flat_hash_set<std::string> left_ ABSL_GUARDED_BY(returned_mu_);
};

// What a run hands back with its answer (RunGraphRequest's return_to and
// end_step).
struct Returned {
  std::string to;        // the task that ran it ("": no values back)
  bool may_end = false;  // the step runs on no other task but `to`
  std::vector<Rendezvous::Held> values;  // the values the run sent there
  std::vector<std::string> left;         // the keys of those too large
  bool step_ended = false;  // the run left nothing of the step here
};

// The replication of a replicated task's state (distributed/replica.h),
// as its Worker sees it.
class Replication {
 public:
  virtual ~Replication() = default;
  // OK while this replica is its task's primary; Unavailable, naming it,
  // while it is a backup.
  virtual absl::Status CheckPrimary() const = 0;
  // Sends the state written since the last call to the other replicas; OK
  // once they all hold it.
  virtual absl::Status Sync() = 0;
};

class Worker {
 public:
  Worker(std::string task, StepRendezvous::Fetch fetch,
         StepRendezvous::FetchMany fetch_many = nullptr);
  ~Worker();

  const std::string& task() const { return task_; }
  // A random number, new with every process: a restarted task has another.
  int64_t incarnation() const { return incarnation_; }
  // The devices partitions run on, and their resources (variables). With
  // `expected_workers` > 0 it also keeps the workers' liveness there
  // (framework/live_workers.h), from their heartbeats.
  void ServeDevices(const DeviceSet* devices, ThreadPool* inter_op_pool,
                    int expected_workers = 0);
  void Heartbeat(const std::string& task, bool leaving);
  // Makes this task one replica of a replicated task: it serves requests
  // only as the primary, takes each run's update tag (RunGraph), refuses
  // graphs with state it cannot replicate, and answers a run or a set of
  // variables only once `replication` has copied what they wrote. Before
  // ServeDevices' first request; not owned.
  void set_replication(Replication* replication);

  // The step's rendezvous, made on first use. A step that has ended gets
  // one aborted with "step ended", so a late request never waits.
  std::shared_ptr<StepRendezvous> Step(int64_t step);
  // Step(step) on a replicated task's primary; Unavailable on a backup.
  // The check follows the rendezvous's making: a demotion after it finds
  // the step in AbortAllSteps, one before is seen here (and ends the step:
  // nothing of it runs on this replica).
  absl::StatusOr<std::shared_ptr<StepRendezvous>> PrimaryStep(int64_t step);
  void AbortStep(int64_t step, const absl::Status& status);
  // Aborts and ends every step open here (a replica that stopped being the
  // primary: the values its steps wait for come from the new one).
  void AbortAllSteps(const absl::Status& status);
  void EndStep(int64_t step);

  // The same graph registered twice (by two workers) gets the same handle.
  absl::StatusOr<std::string> RegisterGraph(const proto::GraphDef& def);
  // Runs a registered graph as part of `step`; blocks until it is done.
  // While this task is frozen, a step that is not admitted first waits
  // (`freeze_id`: the freezing chief's own step), until the freeze ends,
  // the step is aborted, or `cancelled` says its caller has left.
  // `update` (on a replicated task) tags its writes of variables, so that
  // a retried update writes once (framework/variable.h: WriteKey).
  // With `returned`, a run that succeeds hands back the values it sent to
  // its `to` task (up to kReturnedBytes each; the keys of larger ones stay
  // here to be fetched) and, when `may_end` and nothing else of the step
  // is left here, ends the step.
  absl::Status RunGraph(const std::string& handle, int64_t step,
                        uint64_t global_seed, int64_t freeze_id = 0,
                        const std::function<bool()>& cancelled = nullptr,
                        const UpdateTag* update = nullptr,
                        Returned* returned = nullptr);
  static constexpr int64_t kReturnedBytes = 64 << 10;
  int num_graphs() const;
  // Called with a line when a partition of a step starts to run here and
  // when it ends (`runnel server --verbose`); none by default.
  void set_log(std::function<void(const std::string&)> log);

  // Variables of this task, by name.
  absl::StatusOr<std::vector<bool>> VariablesInitialized(
      const std::vector<std::string>& names) const;
  // Sets the variables (those that hold no value yet, unless `overwrite`).
  absl::Status SetVariables(const std::vector<std::string>& names,
                            const std::vector<Tensor>& values, bool overwrite);
  absl::StatusOr<std::vector<Tensor>> ReadVariables(
      const std::vector<std::string>& names) const;

  // A consistent snapshot's freeze (worker.proto: FreezeRequest). Freeze
  // holds the partitions of steps not open here at RunGraph's entry, for
  // `lease_s` unless renewed (a freezing chief that dies cannot leave this
  // task frozen), and returns the steps open here: run here and not yet
  // ended. A second freeze replaces the first.
  std::vector<int64_t> Freeze(int64_t freeze_id, double lease_s);
  // Lets `steps` through too (FailedPrecondition when the freeze lapsed).
  absl::Status Admit(int64_t freeze_id, const std::vector<int64_t>& steps,
                     double lease_s);
  // Waits up to `wait_s` (or until `cancelled`) until none of `steps` is
  // open here; whether none is.
  absl::StatusOr<bool> Drain(int64_t freeze_id,
                             const std::vector<int64_t>& steps, double wait_s,
                             double lease_s,
                             const std::function<bool()>& cancelled = nullptr);
  // Ends the freeze; whether it held until now (its lease did not lapse).
  bool Unfreeze(int64_t freeze_id);

  // Tensor bytes sent to other tasks (RecvTensor), and the calls that
  // asked for them (RecvTensor or RecvTensors).
  void AddBytesSent(int64_t n) { bytes_sent_.fetch_add(n); }
  int64_t bytes_sent() const { return bytes_sent_.load(); }
  void AddRecvCall() { recv_calls_.fetch_add(1); }
  int64_t recv_calls() const { return recv_calls_.load(); }

 private:
  ResourceMgr* resources() const;  // nullptr until ServeDevices
  // resources(), or FailedPrecondition when this task holds no state.
  absl::StatusOr<ResourceMgr*> State() const;

  const std::string task_;
  const StepRendezvous::Fetch fetch_;
  const StepRendezvous::FetchMany fetch_many_;
  const int64_t incarnation_;
  std::atomic<int64_t> bytes_sent_{0};
  std::atomic<int64_t> recv_calls_{0};
  Replication* replication_ = nullptr;
  // OK unless this is a replica that is not its task's primary.
  absl::Status CheckPrimary() const;

  mutable std::mutex mu_;
  const DeviceSet* devices_ ABSL_GUARDED_BY(mu_) = nullptr;
  ThreadPool* inter_op_pool_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::flat_hash_map<int64_t, std::shared_ptr<StepRendezvous>> steps_
      ABSL_GUARDED_BY(mu_);
  // The latest ended steps, oldest first (bounded).
  std::deque<int64_t> ended_order_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> ended_ ABSL_GUARDED_BY(mu_);
  struct Registered {
    std::shared_ptr<Graph> graph;
    std::unique_ptr<Executor> executor;
    // A partition of a step with synchronous replicas (GraphDef's
    // commit_sends): on a replicated task it commits the state written so
    // far to the backups before each value it sends.
    bool commits = false;
  };
  // RunGraph's hand-back of a run's values (see there).
  void TakeReturned(int64_t step, StepRendezvous& rendezvous,
                    Returned* returned);
  // Ends the freeze when its lease has run out.
  void ExpireFreeze(std::chrono::steady_clock::time_point now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A step still open here (see Freeze).
  bool IsOpen(int64_t step, std::chrono::steady_clock::time_point now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct Frozen {
    int64_t id = 0;  // 0: not frozen
    std::chrono::steady_clock::time_point lease_end;
    absl::flat_hash_set<int64_t> admitted;
  };
  Frozen frozen_ ABSL_GUARDED_BY(mu_);
  struct OpenStep {
    int running = 0;  // partitions of the step running here
    std::chrono::steady_clock::time_point last_end;
  };
  // Steps that ran here and have not ended (EndStep).
  absl::flat_hash_map<int64_t, OpenStep> open_ ABSL_GUARDED_BY(mu_);
  std::condition_variable admission_cv_;
  absl::flat_hash_map<std::string, std::string> handle_of_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::string&)> log_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<Registered>> graphs_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_WORKER_H_
