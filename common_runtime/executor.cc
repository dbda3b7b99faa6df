#include "common_runtime/executor.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "base/errors.h"
#include "base/random.h"
#include "base/strings.h"
#include "common_runtime/loop_shortcuts.h"
#include "framework/device_set.h"

namespace runnel {

// Building an executor: its kernels, frames, edge tables and memory plan.
// Running it is executor_run.cc.

namespace {

Executor::Kind KindOf(const Node& n) {
  using K = Executor::Kind;
  const std::string& op = n.op();
  if (op == "switch") return K::kSwitch;
  if (op == "merge") return K::kMerge;
  if (op == "enter") return K::kEnter;
  if (op == "exit") return K::kExit;
  if (op == "next_iteration") return K::kNextIteration;
  if (op == "control_trigger") return K::kControlTrigger;
  if (op == "_send") return K::kSend;
  if (op == "_recv") return K::kRecv;
  return K::kPlain;
}

bool IsBackEdgeInput(const Node& n, int i) {
  return n.op() == "merge" && n.input(i).node->op() == "next_iteration";
}

}  // namespace

// The frame each node runs in: the frame of its inputs, where an enter's
// output is in its child frame and an exit's in its frame's parent.
absl::Status Executor::AssignFrames() {
  frames_.assign(1, StaticFrame{});
  absl::flat_hash_map<std::string, int> by_name;
  auto output_frame = [&](const NodeItem& p) {
    if (p.kind == Kind::kEnter) return p.child_frame;
    if (p.kind == Kind::kExit) return frames_[p.frame].parent;
    return p.frame;
  };
  for (NodeItem& item : items_) {
    const Node& n = *item.node;
    int frame = -1;
    auto meet = [&](const Node* src) -> absl::Status {
      const int f = output_frame(items_[src->id()]);
      if (frame >= 0 && f != frame) {
        return AttachNode(
            absl::InvalidArgumentError(
                StrCat("'", n.name(), "' takes inputs from two frames ('",
                       frames_[frame].name, "' and '", frames_[f].name, "')")),
            n.name(), n.span());
      }
      frame = f;
      return absl::OkStatus();
    };
    for (int i = 0; i < n.num_inputs(); ++i) {
      if (!IsBackEdgeInput(n, i)) RN_RETURN_IF_ERROR(meet(n.input(i).node));
    }
    for (const Node* c : n.control_inputs()) RN_RETURN_IF_ERROR(meet(c));
    item.frame = frame < 0 ? 0 : frame;
    if (item.kind == Kind::kEnter) {
      RN_ASSIGN_OR_RETURN(std::string name, n.attr<std::string>("frame_name"));
      auto [it, fresh] =
          by_name.emplace(name, static_cast<int>(frames_.size()));
      if (fresh) {
        frames_.push_back(StaticFrame{});
        frames_.back().name = name;
        frames_.back().parent = item.frame;
      }
      item.child_frame = it->second;
      if (frames_[item.child_frame].parent != item.frame) {
        return AttachNode(absl::InvalidArgumentError(StrCat(
                              "enter '", n.name(), "' into frame '", name,
                              "' runs in frame '", frames_[item.frame].name,
                              "', not in the frame around the loop")),
                          n.name(), n.span());
      }
      item.is_constant = n.attr<bool>("is_constant").value_or(false);
      StaticFrame& child = frames_[item.child_frame];
      child.num_enters++;
      const int64_t p = n.attr<int64_t>("parallel_iterations").value_or(32);
      child.parallel_iterations =
          std::max<int>(1, std::min<int64_t>(child.parallel_iterations, p));
    }
    if (item.kind == Kind::kExit) frames_[item.frame].exits.push_back(n.id());
    if (item.frame != 0 && n.num_inputs() == 0 && n.control_inputs().empty()) {
      return AttachNode(absl::InternalError(StrCat(
                            "'", n.name(), "' is in loop frame '",
                            frames_[item.frame].name, "' but has no inputs")),
                        n.name(), n.span());
    }
  }
  return absl::OkStatus();
}

void Executor::Ran(int i, int64_t nanos) const {
  std::atomic<int>& runs = cheap_runs_[i];
  if (nanos >= kCheapNanos) {
    runs.store(0, std::memory_order_relaxed);
  } else {
    runs.fetch_add(1, std::memory_order_relaxed);
  }
}

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(
    std::shared_ptr<const Graph> graph, Device* device,
    ThreadPool* inter_op_pool) {
  std::unique_ptr<Executor> ex(
      new Executor(std::move(graph), device, inter_op_pool));
  ex->track_ = DeviceSet::ShortName(device->name());
  std::vector<Node*> nodes = ex->graph_->nodes();
  ex->items_.resize(nodes.size());
  ex->cheap_runs_ = std::make_unique<std::atomic<int>[]>(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeItem& item = ex->items_[i];
    const Node* n = nodes[i];
    item.node = n;
    item.kind = KindOf(*n);
    RN_ASSIGN_OR_RETURN(item.kernel,
                        KernelRegistry::Global().Create(*n, device->type()));
    item.expensive = item.kernel->IsExpensive();
    item.forwards = item.kind == Kind::kSwitch || item.kind == Kind::kEnter ||
                    item.kind == Kind::kExit ||
                    item.kind == Kind::kNextIteration ||
                    n->op() == "identity" || n->op() == "loop_cond";
    if (n->op() == "const" && device->type() == kDeviceCpu) {
      absl::StatusOr<Tensor> value = n->attr<Tensor>("value");
      if (value.ok() && value->dtype() == n->output_dtype(0)) {
        item.forwards = true;
        item.value = *std::move(value);
      }
    }
    if (item.kind == Kind::kPlain &&
        dynamic_cast<AsyncOpKernel*>(item.kernel.get()) != nullptr) {
      item.kind = Kind::kAsync;
    }
    item.num_inputs = n->num_inputs();
    if (item.kind == Kind::kSend || item.kind == Kind::kRecv) {
      RN_ASSIGN_OR_RETURN(item.send_device,
                          n->attr<std::string>("send_device"));
      RN_ASSIGN_OR_RETURN(item.recv_device,
                          n->attr<std::string>("recv_device"));
      RN_ASSIGN_OR_RETURN(item.edge, n->attr<std::string>("edge"));
      item.expensive = false;
    }
    if (item.kind == Kind::kMerge && !n->control_inputs().empty()) {
      return AttachNode(absl::InvalidArgumentError(StrCat(
                            "merge '", n->name(), "' has control inputs")),
                        n->name(), n->span());
    }
  }
  RN_RETURN_IF_ERROR(ex->AssignFrames());
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeItem& item = ex->items_[i];
    const Node* n = nodes[i];
    StaticFrame& f = ex->frames_[item.frame];
    item.local = f.num_nodes++;
    item.input_start = f.num_inputs;
    f.num_inputs += n->num_inputs();
    if (item.kind == Kind::kMerge) {
      item.initial_pending = 1;  // cleared by the input that fires it
      item.merge_expected = n->num_inputs();
      for (int k = 0; k < n->num_inputs(); ++k) {
        if (IsBackEdgeInput(*n, k)) item.merge_expected = 1;
      }
    } else {
      item.initial_pending =
          n->num_inputs() + static_cast<int>(n->control_inputs().size());
    }
    f.initial_pending.push_back(item.initial_pending);
    f.merge_expected.push_back(item.merge_expected);
    if (item.initial_pending == 0) ex->roots_.push_back(static_cast<int>(i));
  }
  // On a CPU, loops without the nodes that compute nothing: a bypassed
  // identity gets no edges (it never runs), a delivered constant waits for
  // nothing and its frame's iterations start with its value.
  LoopShortcuts shortcuts;
  if (device->type() == kDeviceCpu) {
    shortcuts = FindLoopShortcuts(nodes, [&](const Node* n) {
      const NodeItem& item = ex->items_[n->id()];
      return item.forwards && item.kind == Kind::kPlain && !item.value.empty();
    });
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    if (shortcuts.bypassed.contains(n)) continue;
    for (int k = 0; k < n->num_inputs(); ++k) {
      const NodeOut in = shortcuts.Source(n->input(k));
      ex->items_[in.node->id()].out_edges.push_back(
          {static_cast<int>(i), ex->items_[i].input_start + k, in.index});
    }
    if (shortcuts.constants.contains(n)) {
      ex->frames_[ex->items_[i].frame].constants.push_back(static_cast<int>(i));
      continue;
    }
    for (const Node* c : n->control_inputs()) {
      ex->items_[c->id()].control_out.push_back(static_cast<int>(i));
    }
  }
  for (NodeItem& item : ex->items_) {
    std::vector<bool> seen(item.node->num_outputs(), false);
    for (auto e = item.out_edges.rbegin(); e != item.out_edges.rend(); ++e) {
      e->last = !seen[e->src_output];
      seen[e->src_output] = true;
    }
    item.index_used = item.kind == Kind::kMerge && seen.size() > 1 && seen[1];
  }
  ex->AssignMemory();
  return ex;
}

// On a device whose memory is not the host's, each value lives where its
// producer's kernel puts it (HostMemory, framework/kernel.h); a consumer that
// takes it in the other memory gets a copy, made when the consumer runs.
// A _recv leaves its value in host memory when every consumer takes it
// there (a loop's condition sent to a copy of the loop's control), and a
// _send copies out only a value in device memory. A merge takes its inputs
// in device memory; its second output (the index of its live input) is
// made on the host.
void Executor::AssignMemory() {
  for (NodeItem& item : items_) {
    item.output_in_host.assign(item.node->num_outputs(), false);
  }
  if (device_->type() == kDeviceCpu) return;
  auto takes_host = [&](const NodeItem& item, int input) {
    if (item.kind == Kind::kSend) return true;
    return item.kind != Kind::kMerge &&
           item.kernel->input_in_host_memory(input);
  };
  for (NodeItem& item : items_) {
    if (item.kind == Kind::kRecv) {
      bool host = !item.out_edges.empty();
      for (const OutEdge& e : item.out_edges) {
        const NodeItem& dst = items_[e.dst];
        host = host && takes_host(dst, e.dst_slot - dst.input_start);
      }
      item.output_in_host[0] = host;
    } else if (item.kind == Kind::kMerge) {
      item.output_in_host[1] = true;
    } else {
      for (size_t o = 0; o < item.output_in_host.size(); ++o) {
        item.output_in_host[o] =
            item.kernel->output_in_host_memory(static_cast<int>(o));
      }
    }
  }
  for (NodeItem& item : items_) {
    std::vector<MemoryCopy> copies(item.num_inputs, MemoryCopy::kNone);
    bool any = false;
    for (int i = 0; i < item.num_inputs; ++i) {
      const NodeOut in = item.node->input(i);
      const bool from_host = items_[in.node->id()].output_in_host[in.index];
      const bool to_host = takes_host(item, i);
      if (from_host == to_host) continue;
      copies[i] = to_host ? MemoryCopy::kToHost : MemoryCopy::kToDevice;
      any = true;
    }
    if (any) item.input_copy = std::move(copies);
  }
}

Executor::~Executor() = default;

std::vector<std::string> Executor::RootRecvKeys(int64_t step) const {
  std::vector<std::string> keys;
  for (const NodeItem& item : items_) {
    // The root frame's id and iteration are 0 (executor_run.cc).
    if (item.kind == Kind::kRecv && item.frame == 0) {
      keys.push_back(RendezvousKey(item.send_device, item.recv_device,
                                   item.edge, 0, 0, step));
    }
  }
  return keys;
}

}  // namespace runnel
