// Session: runs parts of a graph, holding its state between runs.
//
//   auto graph = std::make_shared<Graph>();
//   ... add nodes ...
//   Session session(graph, {.num_threads = 2, .seed = 0});
//   absl::StatusOr<std::vector<Tensor>> out =
//       session.Run({{x, batch}}, {loss}, {train_step});
//
// Run(feeds, fetches, targets) prunes the graph to what the fetches and
// targets need (a fed tensor cuts the graph there, so an unfed placeholder
// off that path is fine), builds an executor for that pruned graph once and
// caches it by the run's signature, initialises any variable on the path
// that has never been initialised (once, by running its initializer), and
// runs. Independent ops run in parallel on the inter-op pool; kernels split
// work over the intra-op pool.
//
// Thread-safety: Run may be called concurrently from many threads. The
// graph may grow while a session is in use (nodes are immutable), so the
// session's cached executors stay valid.
#ifndef RUNNEL_COMMON_RUNTIME_SESSION_H_
#define RUNNEL_COMMON_RUNTIME_SESSION_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "base/thread_pool.h"
#include "common_runtime/cluster_context.h"
#include "common_runtime/trace.h"
#include "framework/device.h"
#include "framework/device_set.h"
#include "framework/graph.h"
#include "framework/resource_mgr.h"
#include "framework/variable.h"

namespace runnel {

struct CallFrame;

struct SessionOptions {
  int num_threads = 0;  // size of each pool; 0 = all cores
  uint64_t seed = 0;    // global seed (docs/architecture.md)
  // Local CPU devices (`--devices cpu=N`): with more than one, each run's
  // graph is placed (common_runtime/placer.h) and partitioned with Send/Recv
  // (common_runtime/partition.h), and its partitions run concurrently.
  int cpu_devices = 1;
  // GPUs (docs/gpu.md): how many join the device set after the CPUs; -1:
  // every visible one (the command line's default, `--devices gpu=all`).
  // More than are visible makes every Run fail saying why.
  int gpu_devices = 0;
  GpuOptions gpu = {};
  bool soft_placement = false;
  bool f16_transfers = false;  // --transfer-dtype f16
  // Soft placement's warnings (the node, the message); stderr when unset.
  std::function<void(const Node&, const std::string&)> warn = {};
  // This session's task in a cluster (docs/cluster.md): other tasks'
  // devices join the device set, and partitions placed there run there.
  std::shared_ptr<ClusterContext> cluster = nullptr;
};

// How one Session::Run runs.
struct RunOptions {
  // When it turns true mid-run, no further kernel starts, kernels that
  // wait (a dequeue) are cancelled, and Run returns Cancelled
  // ("interrupted"); variables keep what completed assignments wrote.
  const std::atomic<bool>* cancelled = nullptr;
  // When traced, the run's kernels go to tracks named "<device>
  // <trace_lane>" (a runner's thread) instead of "<device>".
  std::string trace_lane = {};
  // In a cluster: the consistent snapshot this run reads for
  // (ClusterContext::ReadConsistently gives its id); 0: none.
  int64_t snapshot = 0;
  // In a cluster: the update the run's writes belong to
  // (ClusterContext::NewUpdate). Session::Run sets it, once for the run
  // and its retries.
  int64_t update = 0;
};

class Session {
 public:
  using Feeds = std::vector<std::pair<NodeOut, Tensor>>;

  explicit Session(std::shared_ptr<Graph> graph, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Returns one tensor per fetch. `targets` run but return nothing.
  absl::StatusOr<std::vector<Tensor>> Run(const Feeds& feeds,
                                          const std::vector<NodeOut>& fetches,
                                          const std::vector<Node*>& targets,
                                          const RunOptions& options = {});
  // Where the last plan built for these fetches put each node: the placed
  // (unpartitioned) graph of the run, for `runnel graph --placed`.
  absl::StatusOr<std::shared_ptr<const Graph>> PlacedGraph(
      const Feeds& feeds, const std::vector<NodeOut>& fetches,
      const std::vector<Node*>& targets);
  // The same by tensor name: "node" or "node:index".
  absl::StatusOr<std::vector<Tensor>> Run(
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets);

  // The variable resource for a `variable` node, created if absent.
  absl::StatusOr<std::shared_ptr<Variable>> VariableFor(const Node& node);

  Graph& graph() { return *graph_; }
  Device* device() { return devices_->device(0); }
  const DeviceSet& devices() const { return *devices_; }
  // Values that variables take instead of running their initializers, by
  // name (`--checkpoint-dir`: the newest checkpoint). A variable not in it
  // is initialized as usual; one whose dtype or shape differs there is an
  // error naming `source`. In a cluster the chief restores shared state
  // this way, also after a parameter server restarted empty.
  void set_initial_values(
      std::shared_ptr<const std::map<std::string, Tensor>> values,
      std::string source);
  // Runs trace their kernels into `tracer` while it is set (nullptr: off).
  void set_tracer(Tracer* tracer) { tracer_.store(tracer); }
  ResourceMgr* resources() { return &resources_; }
  ThreadPool* inter_op_pool() { return &inter_op_pool_; }
  const SessionOptions& options() const { return options_; }
  int num_cached_executors() const;

 private:
  struct Plan;
  absl::StatusOr<std::shared_ptr<Plan>> GetPlan(
      const Feeds& feeds, const std::vector<NodeOut>& fetches,
      const std::vector<Node*>& targets);
  absl::StatusOr<std::shared_ptr<Plan>> BuildPlan(
      const Feeds& feeds, const std::vector<NodeOut>& fetches,
      const std::vector<Node*>& targets);
  absl::Status InitializeVariables(Plan& plan);
  absl::Status InitializeRemoteVariables(Plan& plan);
  void InitializeDeclaredVariables();
  absl::StatusOr<NodeOut> InitializerOf(const Node& variable);
  // The initial value set_initial_values gave `variable`: nullopt when
  // there is none; an error when it does not fit the variable.
  absl::StatusOr<std::optional<Tensor>> InitialValue(const Node& variable);
  absl::StatusOr<std::vector<Tensor>> RunOnce(
      const Feeds& feeds, const std::vector<NodeOut>& fetches,
      const std::vector<Node*>& targets, const RunOptions& run);
  absl::Status RunClusterStep(Plan& plan, CallFrame* frame,
                              const RunOptions& run);
  // PlacerOptions::spread_order for the graph as it is now.
  absl::flat_hash_map<std::string, int> SpreadOrder();

  std::shared_ptr<Graph> graph_;
  SessionOptions options_;
  ThreadPool inter_op_pool_;
  ThreadPool intra_op_pool_;
  ResourceMgr resources_;
  std::unique_ptr<DeviceSet> devices_;
  // Why the device set could not be made as asked (too many GPUs).
  absl::Status devices_status_;
  std::atomic<int64_t> next_step_{0};
  std::atomic<Tracer*> tracer_{nullptr};

  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Plan>> plans_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> spread_order_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const std::map<std::string, Tensor>> initial_values_
      ABSL_GUARDED_BY(mu_);
  std::string initial_source_ ABSL_GUARDED_BY(mu_);
  int spread_scanned_ ABSL_GUARDED_BY(mu_) = 0;
  int spread_count_ ABSL_GUARDED_BY(mu_) = 0;
  // Nodes up to here were looked at by InitializeDeclaredVariables.
  int declared_scanned_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_SESSION_H_
