// The cluster over gRPC (docs/cluster.md): every task serves the Worker
// service of worker.proto (grpc_service.h); `GrpcCluster` is the
// ClusterContext of the process that runs a script.
//
//   auto spec = ClusterSpec::Load("c.json");
//   TaskServer ps(*spec, "ps", 0, {});          // grpc_server.h
//   auto cluster = GrpcCluster::Start(*spec, "worker", 0, {});
//   Session session(graph, {.cluster = *cluster});
//
// Failures of other tasks come back as Unavailable, "/job:ps/task:0
// unreachable (...)": connection failures at once, a task that stopped
// answering through keepalive pings within seconds.
#ifndef RUNNEL_DISTRIBUTED_GRPC_CLUSTER_H_
#define RUNNEL_DISTRIBUTED_GRPC_CLUSTER_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "base/thread_pool.h"
#include "common_runtime/cluster_context.h"
#include "distributed/cluster_spec.h"
#include "distributed/grpc_options.h"
#include "distributed/worker.h"
#include "framework/device_set.h"

namespace runnel {

namespace proto {
class RunGraphResponse;
}  // namespace proto
class WorkerChannels;
class WorkerCollectives;
class WorkerServer;

// The ClusterContext of a script's process: this task's Worker, served at
// its address, and the stubs of the others.
class GrpcCluster : public ClusterContext {
 public:
  static absl::StatusOr<std::shared_ptr<GrpcCluster>> Start(
      const ClusterSpec& spec, const std::string& job, int task,
      GrpcOptions options);
  ~GrpcCluster() override;

  const std::string& local_task() const override;
  bool is_chief() const override { return chief_; }
  std::vector<std::string> remote_devices() const override;
  void ServeDevices(const DeviceSet* devices,
                    ThreadPool* inter_op_pool) override;
  int64_t NewStepId() override;
  int64_t NewUpdate() override;
  std::shared_ptr<Rendezvous> StepRendezvous(int64_t step) override;
  absl::StatusOr<std::string> RegisterPartition(const std::string& task,
                                                const Graph& graph,
                                                bool sync) override;
  void RunPartition(const std::string& task, const std::string& handle,
                    int64_t step, int64_t snapshot, int64_t update,
                    bool returns, bool ends, PartitionDone done) override;
  void AbortStep(int64_t step, const std::vector<std::string>& tasks,
                 const absl::Status& status) override;
  void EndStep(int64_t step, const std::vector<std::string>& tasks) override;
  absl::StatusOr<std::vector<bool>> VariablesInitialized(
      const std::string& task, const std::vector<std::string>& names) override;
  absl::Status InitVariables(const std::string& task,
                             const std::vector<std::string>& names,
                             const std::vector<Tensor>& values) override;
  double chief_wait_seconds() const override { return options_.chief_wait_s; }
  // A cluster with replicated tasks retries for at least a minute: a
  // primary's backup takes over within seconds.
  double retry_seconds() const override {
    return spec_.has_replicas() ? std::max(options_.retry_unreachable_s, 60.0)
                                : options_.retry_unreachable_s;
  }
  absl::Status WaitForTasks(double seconds) override;
  void Inform(const std::string& message) override;

  // The run's global seed, sent with every remote partition run.
  void set_global_seed(uint64_t seed) { seed_ = seed; }
  // Variables on another task, read and set by name (checkpoints).
  absl::StatusOr<std::vector<Tensor>> ReadVariables(
      const std::string& task, const std::vector<std::string>& names);
  // A consistent snapshot of the parameter servers (docs/checkpoints.md):
  // freezes them, waits up to `drain_s` (5 s) for the steps in flight to
  // end, runs `read` with the freeze's id (the steps of runs made with it
  // pass the freeze), unfreezes. When they do not end in time (a step waits
  // on a queue or a barrier for a step held by the freeze) or a ps does not
  // answer, it unfreezes, warns once and runs `read` unfrozen.
  absl::Status ReadConsistently(
      const std::function<absl::Status(int64_t snapshot)>& read) override {
    return ReadConsistently(read, 5);
  }
  absl::Status ReadConsistently(
      const std::function<absl::Status(int64_t snapshot)>& read,
      double drain_s);
  // How many of those reads ran unfrozen.
  int64_t unfrozen_reads() const { return unfrozen_reads_.load(); }
  WorkerChannels& channels() { return *channels_; }
  Worker& worker() { return *worker_; }
  // Stops the heartbeats and tells the parameter servers that this worker
  // is gone (synchronous replicas stop waiting for it). Idempotent; the
  // destructor calls it.
  void Leave();

 private:
  void Beat();  // the heartbeat thread
  // Hands the values `task`'s run returned with `resp` to the step here,
  // and fetches those it left (RunPartition with `returns`).
  absl::Status Deliver(const std::string& task, int64_t step,
                       const proto::RunGraphResponse& resp,
                       const std::shared_ptr<runnel::StepRendezvous>& to);
  absl::Status FreezePs(const std::vector<std::string>& ps, int64_t id,
                        double drain_s);
  bool UnfreezePs(const std::vector<std::string>& ps, int64_t id);
  void WarnSnapshot(std::string_view why);
  std::vector<std::string> PsTasks() const;

  GrpcCluster(const ClusterSpec& spec, std::string task, bool chief,
              GrpcOptions options);

  const ClusterSpec spec_;
  const std::string task_;
  const bool chief_;
  const GrpcOptions options_;
  int worker_index_ = -1;  // this task's index among the workers, or -1
  // The all_reduce kernel's, on a worker (under beat_mu_).
  std::shared_ptr<WorkerCollectives> collectives_;
  uint64_t seed_ = 0;
  std::shared_ptr<WorkerChannels> channels_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<WorkerServer> server_;
  std::mutex beat_mu_;
  std::condition_variable beat_cv_;
  bool leaving_ = false;
  std::thread beater_;
  std::atomic<bool> snapshot_warned_{false};
  // This process as the writer of its runs' updates, and the next update.
  std::string writer_;
  std::atomic<int64_t> next_update_{1};
  // The tasks partitions were registered with (WaitForTasks).
  std::mutex used_mu_;
  std::set<std::string> used_;
  std::atomic<int64_t> unfrozen_reads_{0};
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_GRPC_CLUSTER_H_
