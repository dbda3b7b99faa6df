#include "distributed/grpc_server.h"

#include "base/status_macros.h"
#include "base/strings.h"
#include "distributed/grpc_channels.h"
#include "distributed/grpc_service.h"
#include "distributed/grpc_util.h"
#include "distributed/replica.h"

namespace runnel {

absl::StatusOr<std::unique_ptr<TaskServer>> TaskServer::Start(
    const ClusterSpec& spec, const std::string& job, int task, int threads,
    GrpcOptions options, int replica) {
  const std::string name = ClusterSpec::TaskName(job, task);
  RN_ASSIGN_OR_RETURN(std::vector<std::string> replicas, spec.Replicas(name));
  if (replica < 0 || replica >= static_cast<int>(replicas.size())) {
    return absl::InvalidArgumentError(StrCat(name, " has ", replicas.size(),
                                             " replica(s) in the spec; there ",
                                             "is no replica ", replica));
  }
  const std::string address = replicas[replica];
  if (!spec.AllLoopback() && options.token.empty()) {
    return absl::InvalidArgumentError(
        "the cluster spec names addresses beyond this machine: every task "
        "needs --token-file");
  }
  auto s = std::unique_ptr<TaskServer>(new TaskServer);
  threads = threads > 0 ? threads : ThreadPool::DefaultNumThreads();
  s->inter_op_pool_ = std::make_unique<ThreadPool>(threads, "runnel-inter");
  s->intra_op_pool_ = std::make_unique<ThreadPool>(threads, "runnel-intra");
  s->devices_ = std::make_unique<DeviceSet>(1, threads, &s->resources_,
                                            s->intra_op_pool_.get(), name);
  s->channels_ = std::make_shared<WorkerChannels>(spec, options);
  s->worker_ = NewGrpcWorker(name, s->channels_, spec);
  s->worker_->ServeDevices(s->devices_.get(), s->inter_op_pool_.get(),
                           spec.num_tasks("worker"));
  if (spec.is_replicated(name)) {
    s->replica_ = std::make_unique<ReplicaServer>(name, replica, replicas,
                                                  options, &s->resources_,
                                                  s->worker_->incarnation());
    s->worker_->set_replication(s->replica_.get());
    Worker* worker = s->worker_.get();
    s->replica_->set_on_demote(
        [worker](const absl::Status& why) { worker->AbortAllSteps(why); });
  }
  RN_ASSIGN_OR_RETURN(
      s->server_,
      WorkerServer::Start(s->worker_.get(), ListenAddress(spec, address),
                          options, s->replica_.get()));
  return s;
}

TaskServer::~TaskServer() { Shutdown(); }

void TaskServer::Wait() { server_->Wait(); }

void TaskServer::Shutdown() {
  if (server_ != nullptr) server_->Shutdown();
}

absl::StatusOr<int64_t> TaskBytesSent(const ClusterSpec& spec,
                                      const std::string& task,
                                      const GrpcOptions& options) {
  WorkerChannels channels(spec, options);
  RN_ASSIGN_OR_RETURN(proto::GetStatusResponse resp, channels.GetStatus(task));
  return resp.bytes_sent();
}

}  // namespace runnel
