#include "runtime/executor.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "runtime/errors.h"
#include "runtime/strings.h"

namespace runnel {

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(
    std::shared_ptr<const Graph> graph, Device* device,
    ThreadPool* inter_op_pool) {
  std::unique_ptr<Executor> ex(
      new Executor(std::move(graph), device, inter_op_pool));
  std::vector<Node*> nodes = ex->graph_->nodes();
  ex->items_.resize(nodes.size());
  int slot = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeItem& item = ex->items_[i];
    const Node* n = nodes[i];
    item.node = n;
    RN_ASSIGN_OR_RETURN(item.kernel,
                        KernelRegistry::Global().Create(*n, device->type()));
    item.expensive = item.kernel->IsExpensive();
    item.input_start = slot;
    item.num_inputs = n->num_inputs();
    slot += n->num_inputs();
    item.initial_pending =
        n->num_inputs() + static_cast<int>(n->control_inputs().size());
    if (item.initial_pending == 0) ex->roots_.push_back(static_cast<int>(i));
  }
  ex->total_inputs_ = slot;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    for (int k = 0; k < n->num_inputs(); ++k) {
      NodeOut in = n->input(k);
      ex->items_[in.node->id()].out_edges.push_back(
          {static_cast<int>(i), ex->items_[i].input_start + k, in.index});
    }
    for (const Node* c : n->control_inputs()) {
      ex->items_[c->id()].control_out.push_back(static_cast<int>(i));
    }
  }
  return ex;
}

Executor::~Executor() = default;

// A one-shot event. Built on std::mutex and std::condition_variable, which
// ThreadSanitizer sees (Debian's Abseil is not built with its annotations).
class Notification {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return notified_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

// A tensor slot: a value and whether it is dead (on an untaken branch).
struct Entry {
  Tensor tensor;
  bool is_dead = false;
};

// The state of one iteration of one frame. Only the root frame's iteration
// 0 exists until loops arrive; they add one IterationState per live
// iteration, each with its own pending counts and input slots.
struct IterationState {
  IterationState(const std::vector<Executor::NodeItem>& items, int slots)
      : pending(new std::atomic<int>[items.size()]),
        dead_controls(new std::atomic<bool>[items.size()]),
        inputs(slots) {
    for (size_t i = 0; i < items.size(); ++i) {
      pending[i].store(items[i].initial_pending, std::memory_order_relaxed);
      dead_controls[i].store(false, std::memory_order_relaxed);
    }
  }
  std::unique_ptr<std::atomic<int>[]> pending;
  std::unique_ptr<std::atomic<bool>[]> dead_controls;
  std::vector<Entry> inputs;
};

struct FrameState {
  int64_t id = 0;  // 0 = root
  std::vector<std::unique_ptr<IterationState>> iterations;
};

struct TaggedNode {
  int item;
  FrameState* frame;
  int64_t iter;
};

// Per-Run state; deleted when the last node finishes.
class ExecutorState {
 public:
  ExecutorState(const Executor& ex, const Executor::RunArgs& args)
      : ex_(ex), args_(args) {
    root_.iterations.push_back(
        std::make_unique<IterationState>(ex.items_, ex.total_inputs_));
  }

  absl::Status RunToCompletion() {
    if (ex_.roots_.empty()) return absl::OkStatus();
    std::vector<TaggedNode> ready;
    for (int r : ex_.roots_) ready.push_back({r, &root_, 0});
    outstanding_.store(static_cast<int>(ready.size()));
    std::deque<TaggedNode> inline_ready;
    ScheduleReady(ready, &inline_ready);
    Process(std::move(inline_ready));
    done_.Wait();
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  void Process(std::deque<TaggedNode> inline_ready) {
    std::vector<TaggedNode> ready;
    while (!inline_ready.empty()) {
      TaggedNode tn = inline_ready.front();
      inline_ready.pop_front();
      const Executor::NodeItem& item = ex_.items_[tn.item];
      IterationState& iter = *tn.frame->iterations[tn.iter];
      Entry* in = iter.inputs.data() + item.input_start;

      bool is_dead =
          iter.dead_controls[tn.item].load(std::memory_order_relaxed);
      for (int i = 0; i < item.num_inputs; ++i) is_dead |= in[i].is_dead;

      std::vector<Tensor> outputs;
      if (!is_dead && args_.cancelled != nullptr &&
          args_.cancelled->load(std::memory_order_relaxed)) {
        Abort(absl::CancelledError("interrupted"));
      }
      if (!is_dead && !aborted_.load(std::memory_order_relaxed)) {
        std::vector<const Tensor*> inputs(item.num_inputs);
        for (int i = 0; i < item.num_inputs; ++i) inputs[i] = &in[i].tensor;
        OpKernelContext ctx(*item.node, ex_.device_, std::move(inputs),
                            args_.global_seed, args_.call_frame);
        absl::Status s = ComputeSafely(*item.kernel, &ctx);
        if (!s.ok()) {
          Abort(AttachNode(s, item.node->name(), item.node->span()));
          is_dead = true;
        } else {
          outputs = std::move(ctx.outputs());
        }
      } else {
        is_dead = true;
      }
      // Inputs are no longer needed: release their buffers now.
      for (int i = 0; i < item.num_inputs; ++i) in[i].tensor = Tensor();

      ready.clear();
      PropagateOutputs(tn, item, std::move(outputs), is_dead, &ready);
      // This node is done (-1) and `ready` nodes are now outstanding.
      int delta = static_cast<int>(ready.size()) - 1;
      if (outstanding_.fetch_add(delta, std::memory_order_acq_rel) + delta ==
          0) {
        done_.Notify();
        return;
      }
      ScheduleReady(ready, &inline_ready);
    }
  }

  void PropagateOutputs(const TaggedNode& tn, const Executor::NodeItem& item,
                        std::vector<Tensor> outputs, bool is_dead,
                        std::vector<TaggedNode>* ready) {
    IterationState& iter = *tn.frame->iterations[tn.iter];
    for (const Executor::OutEdge& e : item.out_edges) {
      Entry& dst = iter.inputs[e.dst_slot];
      if (is_dead) {
        dst.is_dead = true;
      } else {
        dst.tensor = outputs[e.src_output];
      }
      if (iter.pending[e.dst].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        ready->push_back({e.dst, tn.frame, tn.iter});
      }
    }
    for (int dst : item.control_out) {
      if (is_dead)
        iter.dead_controls[dst].store(true, std::memory_order_relaxed);
      if (iter.pending[dst].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        ready->push_back({dst, tn.frame, tn.iter});
      }
    }
  }

  // Cheap nodes join this thread's queue; expensive ones go to the pool,
  // except one kept here when this thread would otherwise sit idle.
  void ScheduleReady(const std::vector<TaggedNode>& ready,
                     std::deque<TaggedNode>* inline_ready) {
    const TaggedNode* keep = nullptr;
    for (const TaggedNode& tn : ready) {
      if (!ex_.items_[tn.item].expensive) {
        inline_ready->push_back(tn);
        continue;
      }
      if (keep != nullptr) {
        TaggedNode other = *keep;
        ex_.pool_->Schedule([this, other] { Process({other}); });
      }
      keep = &tn;
    }
    if (keep == nullptr) return;
    if (inline_ready->empty()) {
      inline_ready->push_back(*keep);
    } else {
      TaggedNode other = *keep;
      ex_.pool_->Schedule([this, other] { Process({other}); });
    }
  }

  void Abort(absl::Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = std::move(s);
    aborted_.store(true, std::memory_order_relaxed);
  }

  const Executor& ex_;
  const Executor::RunArgs args_;
  FrameState root_;
  std::atomic<int> outstanding_{0};
  std::atomic<bool> aborted_{false};
  Notification done_;
  std::mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

absl::Status Executor::Run(const RunArgs& args) {
  ExecutorState state(*this, args);
  return state.RunToCompletion();
}

}  // namespace runnel
