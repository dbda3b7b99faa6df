// `runnel server`: a task of the cluster that serves its devices and state
// to the others (docs/cluster.md).
#ifndef RUNNEL_DISTRIBUTED_GRPC_SERVER_H_
#define RUNNEL_DISTRIBUTED_GRPC_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "base/thread_pool.h"
#include "distributed/cluster_spec.h"
#include "distributed/grpc_options.h"
#include "distributed/worker.h"
#include "framework/device_set.h"
#include "framework/resource_mgr.h"

namespace runnel {

class ReplicaServer;
class WorkerChannels;
class WorkerServer;

// `runnel server`: a task that owns one CPU device and its state, and runs
// the partitions other tasks register with it, until Shutdown. A task the
// spec replicates is served as its replica `replica` (replica.h), at that
// replica's address.
class TaskServer {
 public:
  static absl::StatusOr<std::unique_ptr<TaskServer>> Start(
      const ClusterSpec& spec, const std::string& job, int task, int threads,
      GrpcOptions options, int replica = 0);
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
  std::unique_ptr<ReplicaServer> replica_;
  std::unique_ptr<WorkerServer> server_;
};

// Statistics of a task (tests and benchmarks): bytes its RecvTensor sent.
absl::StatusOr<int64_t> TaskBytesSent(const ClusterSpec& spec,
                                      const std::string& task,
                                      const GrpcOptions& options);

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_GRPC_SERVER_H_
