#include "distributed/cluster_module.h"

#include <utility>

#include "base/status_macros.h"
#include "distributed/cluster_spec.h"
#include "distributed/grpc_cluster.h"
#include "distributed/grpc_options.h"
#include "distributed/grpc_server.h"

namespace runnel {
namespace {

// The spec of --cluster, and the token of --token-file (if given).
absl::StatusOr<ClusterSpec> LoadSpec(const ClusterPlace& place,
                                     GrpcOptions* options) {
  RN_ASSIGN_OR_RETURN(ClusterSpec spec, ClusterSpec::Load(place.cluster_file));
  if (!place.token_file.empty()) {
    RN_ASSIGN_OR_RETURN(options->token, ReadTokenFile(place.token_file));
  }
  return spec;
}

class GrpcServedTask : public ServedTask {
 public:
  GrpcServedTask(std::unique_ptr<TaskServer> server, std::string address,
                 bool replicated)
      : server_(std::move(server)),
        address_(std::move(address)),
        replicated_(replicated) {}
  const std::string& task() const override { return server_->task(); }
  const std::string& address() const override { return address_; }
  bool replicated() const override { return replicated_; }
  void set_log(std::function<void(const std::string&)> log) override {
    server_->worker().set_log(std::move(log));
  }
  void Wait() override { server_->Wait(); }
  void Shutdown() override { server_->Shutdown(); }

 private:
  std::unique_ptr<TaskServer> server_;
  const std::string address_;
  const bool replicated_;
};

class GrpcClusterModule : public ClusterModule {
 public:
  absl::StatusOr<std::unique_ptr<ServedTask>> Serve(
      const ClusterPlace& place, int threads, int replica) const override {
    GrpcOptions options;
    RN_ASSIGN_OR_RETURN(ClusterSpec spec, LoadSpec(place, &options));
    RN_ASSIGN_OR_RETURN(std::unique_ptr<TaskServer> server,
                        TaskServer::Start(spec, place.job, place.task, threads,
                                          options, replica));
    // Start checked that the task has this replica.
    RN_ASSIGN_OR_RETURN(std::vector<std::string> replicas,
                        spec.Replicas(server->task()));
    const bool replicated = spec.is_replicated(server->task());
    return std::make_unique<GrpcServedTask>(
        std::move(server), replicas[static_cast<size_t>(replica)], replicated);
  }

  absl::StatusOr<JoinedCluster> Join(const ClusterPlace& place,
                                     double retry_unreachable_s,
                                     uint64_t seed) const override {
    GrpcOptions options;
    RN_ASSIGN_OR_RETURN(ClusterSpec spec, LoadSpec(place, &options));
    options.retry_unreachable_s = retry_unreachable_s;
    RN_ASSIGN_OR_RETURN(
        std::shared_ptr<GrpcCluster> cluster,
        GrpcCluster::Start(spec, place.job, place.task, options));
    cluster->set_global_seed(seed);
    JoinedCluster joined;
    joined.context = cluster;
    joined.workers = spec.num_tasks("worker");
    joined.ps = spec.num_tasks("ps");
    joined.leave = [cluster] { cluster->Leave(); };
    return joined;
  }

  absl::StatusOr<std::string> LoopbackSpec(int ps, int workers,
                                           int ps_replicas) const override {
    const int n = ps * ps_replicas + workers;
    std::vector<int> ports = FreeLoopbackPorts(n);
    if (static_cast<int>(ports.size()) != n) {
      return absl::UnavailableError("cannot find free loopback ports");
    }
    return ClusterSpec::Loopback(ps, workers, ports, ps_replicas).ToJson();
  }
};

}  // namespace
}  // namespace runnel

extern "C" const runnel::ClusterModule* runnel_cluster_module() {
  static const runnel::GrpcClusterModule module;
  return &module;
}
