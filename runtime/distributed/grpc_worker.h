// The cluster over gRPC (docs/cluster.md): every task serves the Worker
// service of worker.proto; `GrpcCluster` is the ClusterContext of the
// process that runs a script, and `TaskServer` is `runnel server`.
//
//   auto spec = ClusterSpec::Load("c.json");
//   TaskServer ps(*spec, "ps", 0, {});          // serves /job:ps/task:0
//   auto cluster = GrpcCluster::Start(*spec, "worker", 0, {});
//   Session session(graph, {.cluster = *cluster});
//
// Failures of other tasks come back as Unavailable, "/job:ps/task:0
// unreachable (...)": connection failures at once, a task that stopped
// answering through keepalive pings within seconds.
#ifndef RUNNEL_RUNTIME_DISTRIBUTED_GRPC_WORKER_H_
#define RUNNEL_RUNTIME_DISTRIBUTED_GRPC_WORKER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "runtime/cluster_context.h"
#include "runtime/device_set.h"
#include "runtime/distributed/cluster_spec.h"
#include "runtime/distributed/worker.h"
#include "runtime/resource_mgr.h"
#include "runtime/thread_pool.h"

namespace runnel {

struct GrpcOptions {
  // Required of every request when not empty (the spec names non-loopback
  // addresses); compared in constant time.
  std::string token;
  // How long the first contact with a task may wait for it to come up
  // (later calls fail at once when it is down).
  double connect_timeout_s = 10;
  // Largest message accepted (tensors cross in chunks of 8 MiB,
  // tensor_coding.h).
  int max_message_bytes = 256 << 20;
  // How long a worker waits for the chief to initialize shared state.
  double chief_wait_s = 60;
  // How long a run that failed as unreachable is retried (--restart).
  double retry_unreachable_s = 0;
};

// Reads the token file: its first line, which must not be empty.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

class WorkerChannels;
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
  std::shared_ptr<Rendezvous> StepRendezvous(int64_t step) override;
  absl::StatusOr<std::string> RegisterPartition(const std::string& task,
                                                const Graph& graph) override;
  void RunPartition(const std::string& task, const std::string& handle,
                    int64_t step,
                    std::function<void(absl::Status)> done) override;
  void AbortStep(int64_t step, const std::vector<std::string>& tasks,
                 const absl::Status& status) override;
  void EndStep(int64_t step, const std::vector<std::string>& tasks) override;
  absl::StatusOr<std::vector<bool>> VariablesInitialized(
      const std::string& task, const std::vector<std::string>& names) override;
  absl::Status InitVariables(const std::string& task,
                             const std::vector<std::string>& names,
                             const std::vector<Tensor>& values) override;
  double chief_wait_seconds() const override { return options_.chief_wait_s; }
  double retry_seconds() const override { return options_.retry_unreachable_s; }
  absl::Status WaitForTasks(double seconds) override;
  void Inform(const std::string& message) override;

  // The run's global seed, sent with every remote partition run.
  void set_global_seed(uint64_t seed) { seed_ = seed; }
  // Variables on another task, read and set by name (checkpoints).
  absl::StatusOr<std::vector<Tensor>> ReadVariables(
      const std::string& task, const std::vector<std::string>& names);
  // Runs `read` (the chief's read of every variable, for a checkpoint) as
  // a consistent snapshot of the parameter servers (docs/checkpoints.md):
  // freezes them, waits up to `drain_s` for the steps in flight to end,
  // runs `read`, unfreezes. When they do not end in time (a step waits on
  // a queue or a barrier for a step held by the freeze) or a ps does not
  // answer, it unfreezes, warns once and runs `read` unfrozen.
  absl::Status ReadConsistently(const std::function<absl::Status()>& read,
                                double drain_s = 5);
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
  uint64_t seed_ = 0;
  std::shared_ptr<WorkerChannels> channels_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<WorkerServer> server_;
  std::mutex beat_mu_;
  std::condition_variable beat_cv_;
  bool leaving_ = false;
  std::thread beater_;
  // The steps of a snapshot's read, with the freeze that admits them.
  std::mutex snapshot_mu_;
  absl::flat_hash_map<int64_t, int64_t> snapshot_steps_;
  std::atomic<bool> snapshot_warned_{false};
  std::atomic<int64_t> unfrozen_reads_{0};
};

// `runnel server`: a task that owns one CPU device and its state, and runs
// the partitions other tasks register with it, until Shutdown.
class TaskServer {
 public:
  static absl::StatusOr<std::unique_ptr<TaskServer>> Start(
      const ClusterSpec& spec, const std::string& job, int task, int threads,
      GrpcOptions options);
  ~TaskServer();
  const std::string& task() const { return worker_->task(); }
  Worker& worker() { return *worker_; }
  // Blocks until Shutdown (from another thread or a signal handler's
  // thread).
  void Wait();
  void Shutdown();

 private:
  TaskServer() = default;
  ResourceMgr resources_;
  std::unique_ptr<ThreadPool> inter_op_pool_, intra_op_pool_;
  std::unique_ptr<DeviceSet> devices_;
  std::shared_ptr<WorkerChannels> channels_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<WorkerServer> server_;
};

// Statistics of a task (tests and benchmarks): bytes its RecvTensor sent.
absl::StatusOr<int64_t> TaskBytesSent(const ClusterSpec& spec,
                                      const std::string& task,
                                      const GrpcOptions& options);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_DISTRIBUTED_GRPC_WORKER_H_
