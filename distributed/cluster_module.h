// The cluster as the `runnel` command reaches it. The command is built
// without this layer: gRPC, OpenSSL, c-ares and their libraries took two
// fifths of the start-up of a script that uses no cluster (issue 32). This
// layer is built into a module of its own (runnel_cluster.so, beside the
// `runnel` binary), which the command loads when it serves a task, joins a
// cluster or launches one (cli/load_cluster.h); programs that link the
// layer (the tests) find its entry point linked in.
//
// The interface has only virtual functions and types of the layers below,
// so that the command needs no symbol of this layer to link.
#ifndef RUNNEL_DISTRIBUTED_CLUSTER_MODULE_H_
#define RUNNEL_DISTRIBUTED_CLUSTER_MODULE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common_runtime/cluster_context.h"

namespace runnel {

// Where a task finds its cluster: the spec file (--cluster), the token
// file (--token-file, may be empty), and its own place in the spec.
struct ClusterPlace {
  std::string cluster_file;
  std::string token_file;
  std::string job;
  int task = 0;
};

// A `runnel server` task, serving until Shutdown.
class ServedTask {
 public:
  virtual ~ServedTask() = default;
  // "/job:ps/task:0".
  virtual const std::string& task() const = 0;
  // The address it serves at, and whether the spec replicates the task.
  virtual const std::string& address() const = 0;
  virtual bool replicated() const = 0;
  // Each partition a step runs here, as it starts and as it ends.
  virtual void set_log(std::function<void(const std::string&)> log) = 0;
  // Blocks until Shutdown (from another thread).
  virtual void Wait() = 0;
  virtual void Shutdown() = 0;
};

// A script's process in a cluster (`runnel run --cluster ...`).
struct JoinedCluster {
  std::shared_ptr<ClusterContext> context;
  // The number of tasks of the job "worker".
  int workers = 0;
  int ps = 0;  // and of the job "ps"
  // Stops the heartbeats and tells the parameter servers this worker is
  // gone (synchronous replicas stop waiting for it). Idempotent.
  std::function<void()> leave;
};

class ClusterModule {
 public:
  virtual ~ClusterModule() = default;
  // `runnel server`: starts serving `place` (its replica `replica`) on
  // `threads` threads (0: the machine's cores).
  virtual absl::StatusOr<std::unique_ptr<ServedTask>> Serve(
      const ClusterPlace& place, int threads, int replica) const = 0;
  // Joins `place`'s cluster; a run that fails as unreachable is retried
  // for `retry_unreachable_s`; `seed` is sent with each remote partition.
  virtual absl::StatusOr<JoinedCluster> Join(const ClusterPlace& place,
                                             double retry_unreachable_s,
                                             uint64_t seed) const = 0;
  // `runnel cluster`: the JSON spec of `ps` (each `ps_replicas` times) and
  // `workers` tasks on free loopback ports.
  virtual absl::StatusOr<std::string> LoopbackSpec(int ps, int workers,
                                                   int ps_replicas) const = 0;
};

}  // namespace runnel

// The module's entry point (a C name, looked up with dlsym).
extern "C" const runnel::ClusterModule* runnel_cluster_module();

#endif  // RUNNEL_DISTRIBUTED_CLUSTER_MODULE_H_
