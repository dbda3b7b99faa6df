#include "distributed/grpc_server.h"

#include "base/status_macros.h"
#include "base/strings.h"
#include "distributed/grpc_channels.h"
#include "distributed/grpc_service.h"
#include "distributed/grpc_util.h"

namespace runnel {

absl::StatusOr<std::unique_ptr<TaskServer>> TaskServer::Start(
    const ClusterSpec& spec, const std::string& job, int task, int threads,
    GrpcOptions options) {
  RN_ASSIGN_OR_RETURN(std::string address, spec.Address(job, task));
  if (!spec.AllLoopback() && options.token.empty()) {
    return absl::InvalidArgumentError(
        "the cluster spec names addresses beyond this machine: every task "
        "needs --token-file");
  }
  auto s = std::unique_ptr<TaskServer>(new TaskServer);
  const std::string name = ClusterSpec::TaskName(job, task);
  threads = threads > 0 ? threads : ThreadPool::DefaultNumThreads();
  s->inter_op_pool_ = std::make_unique<ThreadPool>(threads);
  s->intra_op_pool_ = std::make_unique<ThreadPool>(threads);
  s->devices_ = std::make_unique<DeviceSet>(1, threads, &s->resources_,
                                            s->intra_op_pool_.get(), name);
  s->channels_ = std::make_shared<WorkerChannels>(spec, options);
  std::shared_ptr<WorkerChannels> channels = s->channels_;
  s->worker_ = std::make_unique<Worker>(
      name, [channels](const std::string& src, const std::string& key,
                       int64_t step, Rendezvous::Done done) {
        channels->RecvTensor(src, key, step, std::move(done));
      });
  s->worker_->ServeDevices(s->devices_.get(), s->inter_op_pool_.get(),
                           spec.num_tasks("worker"));
  RN_ASSIGN_OR_RETURN(
      s->server_, WorkerServer::Start(s->worker_.get(),
                                      ListenAddress(spec, address), options));
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
