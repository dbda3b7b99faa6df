// Executor: runs one graph (one device's partition) many times.
//
//   RN_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex,
//                       Executor::Create(graph, device, inter_op_pool));
//   CallFrame frame{.feeds = {...}, .fetches = std::vector<Tensor>(n)};
//   RN_RETURN_IF_ERROR(ex->Run({.call_frame = &frame, .global_seed = 0}));
//
// Create() makes every node's kernel once and precomputes the edge tables
// (docs/architecture.md). Run() schedules nodes as their inputs become
// ready, using atomic pending counts: cheap kernels run inline on the thread
// that readied them, expensive ones go to the inter-op pool, so independent
// branches run in parallel. Every tensor slot carries an `is_dead` bit and
// every scheduled node a frame and iteration, which conditionals and loops
// build on; today only the root frame exists. A node with a dead input
// produces dead outputs without running.
//
// Ownership and threads: the executor keeps the graph alive and borrows the
// device and pool, which must outlive it. Run() may be called from many
// threads at once; each call has its own state. The first kernel error stops
// scheduling and is returned with the failing node's name and span.
#ifndef RUNNEL_RUNTIME_EXECUTOR_H_
#define RUNNEL_RUNTIME_EXECUTOR_H_

#include <atomic>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/device.h"
#include "runtime/graph.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"

namespace runnel {

class Executor {
 public:
  struct RunArgs {
    CallFrame* call_frame = nullptr;
    uint64_t global_seed = 0;
    // When set and it becomes true, no further kernel starts and Run
    // returns Cancelled once the kernels in flight finish (Ctrl-C).
    const std::atomic<bool>* cancelled = nullptr;
  };

  static absl::StatusOr<std::unique_ptr<Executor>> Create(
      std::shared_ptr<const Graph> graph, Device* device,
      ThreadPool* inter_op_pool);
  ~Executor();

  // Runs every node of the graph once; blocks until all are done.
  absl::Status Run(const RunArgs& args);

  int num_nodes() const { return static_cast<int>(items_.size()); }

 private:
  friend class ExecutorState;
  friend struct IterationState;
  struct OutEdge {
    int dst;       // node item index
    int dst_slot;  // absolute input slot of dst
    int src_output;
  };
  struct NodeItem {
    const Node* node = nullptr;
    std::unique_ptr<OpKernel> kernel;
    bool expensive = true;
    int input_start = 0;  // first slot in the per-run input table
    int num_inputs = 0;
    int initial_pending = 0;  // data + control inputs
    std::vector<OutEdge> out_edges;
    std::vector<int> control_out;
  };

  Executor(std::shared_ptr<const Graph> graph, Device* device, ThreadPool* pool)
      : graph_(std::move(graph)), device_(device), pool_(pool) {}

  std::shared_ptr<const Graph> graph_;
  Device* device_;
  ThreadPool* pool_;
  std::vector<NodeItem> items_;
  std::vector<int> roots_;  // items with no inputs
  int total_inputs_ = 0;
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_EXECUTOR_H_
