// A cluster spec (docs/cluster.md): which tasks make up a cluster and where
// each listens, as JSON in the shape of TensorFlow's TF_CONFIG cluster:
//
//   {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}
//
// A task given as a list of addresses is replicated (docs/cluster.md,
// "Replicated parameter servers"): one process per address, each holding
// the task's state; the first is the primary when the cluster starts.
//
//   {"ps": [["127.0.0.1:2222", "127.0.0.1:2225"]], "worker": [...]}
//
// A task is named "/job:ps/task:0"; its device is that name with
// "/device:cpu:0".
#ifndef RUNNEL_DISTRIBUTED_CLUSTER_SPEC_H_
#define RUNNEL_DISTRIBUTED_CLUSTER_SPEC_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/device_spec.h"

namespace runnel {

class ClusterSpec {
 public:
  // Parses the JSON text of the file `file` (named in errors, with the
  // field at fault: "c.json: \"worker\"[1]: ...").
  static absl::StatusOr<ClusterSpec> Parse(std::string_view text,
                                           const std::string& file);
  static absl::StatusOr<ClusterSpec> Load(const std::string& path);
  // A spec of `ps` and `workers` tasks on these loopback ports (ps first).
  // With `ps_replicas` > 1, each ps task has that many replicas (ports:
  // the ps tasks' first replicas, then their second, ..., then the workers).
  static ClusterSpec Loopback(int ps, int workers,
                              const std::vector<int>& ports,
                              int ps_replicas = 1);

  const std::map<std::string, std::vector<std::string>>& jobs() const {
    return jobs_;
  }
  int num_tasks(const std::string& job) const;
  // "127.0.0.1:2222" (a replicated task's first replica); NotFound names
  // the job and task.
  absl::StatusOr<std::string> Address(const std::string& job, int task) const;
  // Every replica's address of the task called "/job:ps/task:0", in order
  // (one for a task that is not replicated).
  absl::StatusOr<std::vector<std::string>> Replicas(
      const std::string& task_name) const;
  bool is_replicated(const std::string& task_name) const {
    return replicas_.contains(task_name);
  }
  bool has_replicas() const { return !replicas_.empty(); }
  // Every task's name, "/job:ps/task:0", jobs in name order.
  std::vector<std::string> TaskNames() const;
  // The address of the task called "/job:ps/task:0".
  absl::StatusOr<std::string> AddressOf(const std::string& task_name) const;
  // Whether every address is a loopback one (then no token is needed).
  bool AllLoopback() const;
  // The JSON form (for `runnel cluster`, which writes it for its tasks).
  std::string ToJson() const;

  static std::string TaskName(const std::string& job, int task) {
    return "/job:" + job + "/task:" + std::to_string(task);
  }

 private:
  std::map<std::string, std::vector<std::string>> jobs_;
  // The replicated tasks' addresses, by task name (jobs_ holds the first).
  std::map<std::string, std::vector<std::string>> replicas_;
};

// `n` loopback ports free right now (fewer when the system has none).
std::vector<int> FreeLoopbackPorts(int n);

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_CLUSTER_SPEC_H_
