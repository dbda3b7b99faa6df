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
// branches run in parallel. A kernel that says it is expensive is timed
// until it has run in under kCheapNanos kCheapRuns times in a row; from
// then on it counts as cheap (waking a pool thread for it would cost more
// than it runs). Every tensor slot carries an `is_dead` bit and
// every scheduled node a frame and iteration (docs/architecture.md, Control
// flow): switch and merge make conditionals, enter, exit and next_iteration
// loops whose iterations overlap (at most `parallel_iterations` at once). A
// node with a dead input produces dead outputs without running, except merge
// (live when any input is) and control_trigger (never dead).
//
// Ownership and threads: the executor keeps the graph alive and borrows the
// device and pool, which must outlive it. Run() may be called from many
// threads at once; each call has its own state. The first kernel error stops
// scheduling and is returned with the failing node's name and span.
#ifndef RUNNEL_COMMON_RUNTIME_EXECUTOR_H_
#define RUNNEL_COMMON_RUNTIME_EXECUTOR_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/thread_pool.h"
#include "common_runtime/rendezvous.h"
#include "common_runtime/trace.h"
#include "framework/device.h"
#include "framework/graph.h"
#include "framework/kernel.h"

namespace runnel {

class Executor {
 public:
  struct RunArgs {
    CallFrame* call_frame = nullptr;
    uint64_t global_seed = 0;
    // When set and it becomes true, no further kernel starts, kernels
    // that wait (a blocked dequeue) are cancelled through the run's
    // CancellationManager, and Run returns Cancelled once the kernels in
    // flight finish (Ctrl-C). Run looks at it every few tens of ms.
    const std::atomic<bool>* cancelled = nullptr;
    // A partition of a step (common_runtime/partition.h): where its _send and
    // _recv nodes meet the other partitions', and the step's id in their
    // keys. An error here aborts the rendezvous, and so the whole step;
    // an abort of the rendezvous (seen within a few tens of ms) aborts
    // this partition too.
    Rendezvous* rendezvous = nullptr;
    int64_t step_id = 0;
    // When set, every kernel adds an event to the device's track (with
    // `trace_lane`, to the track "<device> <trace_lane>").
    Tracer* tracer = nullptr;
    std::string trace_lane = {};
    // Called (outside any lock) when this partition aborts, so a step whose
    // other partitions run on other tasks can tell them at once: a
    // partition waiting on a remote receive would otherwise wait for a
    // task that waits for it (a worker's Ctrl-C during a dequeue on a ps).
    std::function<void(const absl::Status&)> on_abort = {};
    // The update this run's variable writes belong to, on a replicated
    // parameter server (OpKernelContext::write_key); none elsewhere.
    const UpdateTag* update = nullptr;
    // Called before each _send; an error aborts the run. A replicated
    // task's partition that keeps synchronous replicas' state commits it
    // to the backups here, so that nothing it decided is seen elsewhere
    // before it is durable (framework/replicated_state.h).
    std::function<absl::Status()> before_send = {};
  };

  static absl::StatusOr<std::unique_ptr<Executor>> Create(
      std::shared_ptr<const Graph> graph, Device* device,
      ThreadPool* inter_op_pool);
  ~Executor();

  // Runs every node of the graph once; blocks until all are done.
  absl::Status Run(const RunArgs& args);
  // Runs the partitions of one step at once (each executor with its
  // args), on the pool and this thread; returns when all are done, with
  // the first error.
  static absl::Status RunPartitions(
      const std::vector<std::pair<Executor*, RunArgs>>& parts);

  int num_nodes() const { return static_cast<int>(items_.size()); }
  // The rendezvous keys of the _recv nodes outside loops in `step` (each
  // receives once a step).
  std::vector<std::string> RootRecvKeys(int64_t step) const;

  // The precomputed tables (used by executor.cc only).
  struct OutEdge {
    int dst;       // node item index
    int dst_slot;  // input slot of dst within dst's frame
    int src_output;
    // The last of the item's edges from src_output: it may take the value
    // instead of copying it (one reference count less to change).
    bool last = false;
  };
  enum class MemoryCopy : uint8_t { kNone, kToHost, kToDevice };
  enum class Kind {
    kPlain,
    kSwitch,
    kMerge,
    kEnter,
    kExit,
    kNextIteration,
    kControlTrigger,
    kSend,
    kRecv,
    kAsync  // an AsyncOpKernel
  };
  struct NodeItem {
    const Node* node = nullptr;
    std::unique_ptr<OpKernel> kernel;
    bool expensive = true;
    Kind kind = Kind::kPlain;
    // A node whose kernel only passes its input on (switch, enter, exit,
    // next_iteration, identity, loop_cond) or, on the CPU, gives its value
    // (const, `value`): in untraced runs the executor does that itself,
    // without a kernel call (a counter loop runs eight an iteration).
    bool forwards = false;
    Tensor value;
    int frame = 0;        // static frame (0 = root)
    int local = 0;        // index among the nodes of its frame
    int input_start = 0;  // first input slot within its frame
    int num_inputs = 0;
    int initial_pending = 0;  // data + control inputs (merge: control only)
    int merge_expected = 0;   // merge: data inputs per iteration
    bool index_used = false;  // merge: something reads its value_index
    // enter: the frame it leads into; is_constant.
    int child_frame = -1;
    bool is_constant = false;
    // _send / _recv: the devices and the edge of their rendezvous key.
    std::string send_device, recv_device, edge;
    // On a device whose memory is not the host's (HostMemory in
    // framework/kernel.h): which outputs are in host memory (a _send's
    // input, a _recv's output: whichever its neighbours need), and the
    // copy each input needs to reach the memory the kernel takes it in
    // (empty when none does; a _send takes its input in host memory).
    std::vector<bool> output_in_host;
    std::vector<MemoryCopy> input_copy;
    std::vector<OutEdge> out_edges;
    std::vector<int> control_out;
  };
  // A loop's frame as the graph declares it (instances are made per run,
  // per iteration of the frame around it).
  struct StaticFrame {
    std::string name;
    int parent = -1;
    int num_nodes = 0;
    int num_inputs = 0;
    int parallel_iterations = 32;
    int num_enters = 0;
    std::vector<int> initial_pending;  // by local index
    std::vector<int> merge_expected;   // by local index
    std::vector<int> exits;            // items
    // Constants each iteration starts with (loop_shortcuts.h): items.
    std::vector<int> constants;
  };

 private:
  friend class ExecutorState;
  Executor(std::shared_ptr<const Graph> graph, Device* device, ThreadPool* pool)
      : graph_(std::move(graph)), device_(device), pool_(pool) {}
  absl::Status AssignFrames();
  void AssignMemory();
  // Whether item i's kernel is expensive: it says so, and it has not yet
  // run in under kCheapNanos kCheapRuns times in a row. Ran records how
  // long one run of such a kernel took.
  bool Expensive(int i) const {
    return items_[i].expensive &&
           cheap_runs_[i].load(std::memory_order_relaxed) < kCheapRuns;
  }
  void Ran(int i, int64_t nanos) const;
  static constexpr int64_t kCheapNanos = 5000;
  static constexpr int kCheapRuns = 4;

  std::shared_ptr<const Graph> graph_;
  Device* device_;
  std::string track_;  // the device's short name, for traces
  ThreadPool* pool_;
  std::vector<NodeItem> items_;
  // Per item: its kernel's latest runs in a row under kCheapNanos.
  mutable std::unique_ptr<std::atomic<int>[]> cheap_runs_;
  std::vector<StaticFrame> frames_;
  std::vector<int> roots_;  // items with no inputs
};

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_EXECUTOR_H_
