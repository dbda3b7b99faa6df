// The Worker service of worker.proto over gRPC: every task serves it, at
// its address in the cluster spec, for the tasks that register and run
// partitions on it, fetch tensors from its rendezvous and read or set its
// variables. Requests must carry the cluster's token when it has one.
#ifndef RUNNEL_DISTRIBUTED_GRPC_SERVICE_H_
#define RUNNEL_DISTRIBUTED_GRPC_SERVICE_H_

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "distributed/grpc_options.h"
#include "distributed/worker.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace runnel {

class ReplicaServer;

// Serves `worker` until Shutdown; with `replica` (not owned), as one
// replica of a replicated task (replica.h).
class WorkerServer {
 public:
  static absl::StatusOr<std::unique_ptr<WorkerServer>> Start(
      Worker* worker, const std::string& address, const GrpcOptions& options,
      ReplicaServer* replica = nullptr);
  ~WorkerServer();
  // Blocks until Shutdown.
  void Wait();
  // Stops serving; calls in flight get a second to finish. Idempotent.
  void Shutdown();

 private:
  WorkerServer();
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::once_flag shutdown_;
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_GRPC_SERVICE_H_
