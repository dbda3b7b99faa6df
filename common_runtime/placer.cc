#include "common_runtime/placer.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/control_flow.h"
#include "framework/kernel.h"
#include "framework/window.h"

namespace runnel {
namespace {

// A node leaves its inputs' device only to finish at least this much
// earlier: by this factor and this many seconds.
constexpr double kMoveGain = 0.9;
constexpr double kMoveMargin = 2e-5;
// A device other than the first whose estimated share of a run's work is
// below this gives its free groups back to the first (Schedule).
constexpr double kMinShare = 0.05;

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(int a, int b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<int> parent_;
};

double Elements(const Shape& s, int64_t unknown) {
  if (s.unknown_rank()) return static_cast<double>(unknown);
  double n = 1;
  for (int64_t d : s.dims()) n *= static_cast<double>(d < 0 ? unknown : d);
  return n;
}

int64_t Dim(const Shape& s, int i, int64_t unknown) {
  if (s.unknown_rank() || i < 0 || i >= s.rank() || s.dim(i) < 0) {
    return unknown;
  }
  return s.dim(i);
}

// State that the ops using it must run beside.
bool IsState(const Node* n) {
  return n->op() == "variable" || n->op() == "stack_new" || n->op() == "queue";
}

// A loop's own machinery (not its body): the enters of its variables,
// exits, next_iterations, the loop condition, the merges that close it,
// the switches on its condition and the identities after them (the body's
// entry points). Enters of invariants are free: a variable's goes with it.
bool IsLoopControl(const Node* n) {
  if (IsEnter(n)) return !n->attr<bool>("is_constant").value_or(false);
  if (IsExit(n) || IsNextIteration(n) || n->op() == "loop_cond") return true;
  if (IsMerge(n)) {
    for (int i = 0; i < n->num_inputs(); ++i) {
      if (IsBackEdge(n, i)) return true;
    }
    return false;
  }
  if (IsSwitch(n)) return n->input(1).node->op() == "loop_cond";
  return n->op() == "identity" && n->num_inputs() == 1 &&
         IsSwitch(n->input(0).node) &&
         n->input(0).node->input(1).node->op() == "loop_cond";
}

// The plumbing that state's users get without writing it, the enters that
// bring its handle into a loop and the reads of a variable, goes with the
// state: a `device` block around a use asks where the computation runs,
// not where the state lives (as TensorFlow colocates a variable's reads
// with it). So `device "/cpu:1" { let y = w @ x }` reads `w` where it
// lives and sends its value to /cpu:1.
bool IsStatePlumbing(const Node* n) {
  if (!IsEnter(n) && n->op() != "read_variable") return false;
  const Node* src = n->input(0).node;
  while (IsEnter(src)) src = src->input(0).node;
  return IsState(src);
}

class Placer {
 public:
  Placer(Graph& graph, const DeviceSet& devices, const PlacerOptions& options)
      : graph_(graph),
        nodes_(graph.nodes()),
        devices_(devices),
        options_(options),
        groups_(static_cast<int>(nodes_.size())) {}

  absl::Status Run() {
    RN_RETURN_IF_ERROR(Colocate());
    PullUpdateMath();
    RN_RETURN_IF_ERROR(Constrain());
    Schedule();
    for (Node* n : nodes_) {
      n->set_assigned_device(
          devices_.device(device_of_group_[groups_.Find(n->id())])->name());
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Colocate() {
    absl::flat_hash_map<std::string, int> variables;
    for (const Node* n : nodes_) {
      if (n->op() == "variable") variables.emplace(n->name(), n->id());
    }
    RN_ASSIGN_OR_RETURN(frames_, FrameMap::Build(graph_));
    const FrameMap& frames = frames_;
    absl::flat_hash_map<std::string, int> loop_group;
    for (const Node* n : nodes_) {
      for (int i = 0; i < n->num_inputs(); ++i) {
        // State and its users (variables, queues), stacks and their
        // pushes and pops, also where the handle reaches them through a
        // loop's enters.
        const Node* src = n->input(i).node;
        while (IsEnter(src)) src = src->input(0).node;
        if (!IsState(src)) continue;
        // A run's results are taken where the run was asked for.
        if (n->op() == "_fetch") continue;
        groups_.Union(n->id(), src->id());
        for (const Node* e = n->input(i).node; IsEnter(e);
             e = e->input(0).node) {
          groups_.Union(e->id(), src->id());
        }
      }
      // A lookup in a variable's rows goes with it (as TensorFlow's
      // embedding_lookup colocates with its params), unless placed
      // explicitly: only the rows looked up cross devices, not the table.
      if (n->op() == "gather" && n->requested_device().empty() &&
          n->attr<int64_t>("axis").value_or(0) == 0) {
        const Node* p = n->input(0).node;
        if (p->op() == "read_variable") p = p->input(0).node;
        if (p->op() == "variable") groups_.Union(n->id(), p->id());
      }
      // An update inside a branch or loop names its variable (its input
      // comes through a switch or an enter).
      if (auto var = n->attrs().find("var"); var != n->attrs().end()) {
        if (const auto* name = std::get_if<std::string>(&var->second)) {
          auto it = variables.find(*name);
          if (it != variables.end()) groups_.Union(n->id(), it->second);
        }
      }
      if (n->op() == "variable") {  // a slot "w/adam_m" goes with "w"
        const size_t slash = n->name().rfind('/');
        if (slash != std::string::npos) {
          auto it = variables.find(n->name().substr(0, slash));
          if (it != variables.end()) groups_.Union(n->id(), it->second);
        }
      }
      // A loop's machinery stays together (its body may spread: the
      // partitioner gives every other device a copy of its control).
      if (IsLoopControl(n)) {
        const std::string f =
            IsExit(n) ? frames.frame_of(n->input(0).node) : frames.frame_of(n);
        auto [it, fresh] = loop_group.emplace(f, n->id());
        if (!fresh) groups_.Union(n->id(), it->second);
      }
    }
    return absl::OkStatus();
  }

  // Update math goes with its variable, as TensorFlow's apply ops do: a
  // node all of whose consumers are in one variable's group joins it when
  // it is cheap work (a few operations an element) no larger than the
  // variable and reads nothing larger. So an optimizer's arithmetic runs
  // where the variable and its slots live (on the parameter server, in a
  // cluster), and only the gradient crosses; the gradient itself (a
  // matmul, or a sum over a batch) stays where it was computed.
  void PullUpdateMath() {
    const int64_t unknown = options_.unknown_dim;
    std::vector<std::vector<const Node*>> consumers(nodes_.size());
    for (const Node* c : nodes_) {
      for (const NodeOut& in : c->inputs()) {
        consumers[in.node->id()].push_back(c);
      }
      for (const Node* ctl : c->control_inputs()) {
        consumers[ctl->id()].push_back(c);
      }
    }
    absl::flat_hash_map<int, double> var_size;  // group -> largest variable
    for (const Node* v : nodes_) {
      if (v->op() != "variable") continue;
      double& size = var_size[groups_.Find(v->id())];
      size = std::max(size, Elements(v->output_shape(0), unknown));
    }
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
      const Node* x = *it;
      const std::string& op = x->op();
      if (consumers[x->id()].empty() || x->stateful() ||
          !x->requested_device().empty() || IsLoopControl(x) || op == "_feed" ||
          op == "_fetch" || IsControlFlow(x) ||
          var_size.contains(groups_.Find(x->id()))) {
        continue;
      }
      int g = -1;
      for (const Node* c : consumers[x->id()]) {
        const int cg = groups_.Find(c->id());
        if (g >= 0 && cg != g) {
          g = -2;
          break;
        }
        g = cg;
      }
      auto size = var_size.find(g);
      if (size == var_size.end()) continue;
      const double limit = size->second;
      bool small = EstimatedFlops(*x, unknown) <= 8 * limit;
      for (int o = 0; small && o < x->num_outputs(); ++o) {
        small = Elements(x->output_shape(o), unknown) <= limit;
      }
      for (int i = 0; small && i < x->num_inputs(); ++i) {
        const NodeOut in = x->input(i);
        small = Elements(in.node->output_shape(in.index), unknown) <= limit;
      }
      if (!small) continue;
      groups_.Union(x->id(), g);
      var_size[groups_.Find(x->id())] = limit;
    }
  }

  // Each group's candidate devices, from its members' requests.
  absl::Status Constrain() {
    struct Request {
      DeviceSpec spec;
      const Node* by = nullptr;  // the node whose request set it
    };
    absl::flat_hash_map<int, Request> requests;
    for (const Node* n : nodes_) {
      if (n->requested_device().empty() || IsStatePlumbing(n)) continue;
      absl::StatusOr<DeviceSpec> spec =
          DeviceSpec::Parse(n->requested_device());
      if (!spec.ok()) return AttachNode(spec.status(), n->name(), n->span());
      Request& r = requests[groups_.Find(n->id())];
      if (r.by == nullptr) {
        r = {*spec, n};
        continue;
      }
      absl::StatusOr<DeviceSpec> merged = DeviceSpec::Merge(r.spec, *spec);
      if (!merged.ok()) {
        return AttachNode(
            absl::InvalidArgumentError(
                StrCat("'", n->name(), "' asks for device ", spec->ToString(),
                       " but must share a device with '", r.by->name(), "'",
                       Where(*r.by), ", which asks for ", r.spec.ToString(),
                       ": ", merged.status().message())),
            n->name(), n->span());
      }
      r.spec = *merged;
    }
    // Free nodes stay on this task.
    std::vector<int> all(devices_.num_local());
    std::iota(all.begin(), all.end(), 0);
    // Each group's first variable, for spreading over task `*`.
    absl::flat_hash_map<int, const Node*> first_variable;
    for (const Node* n : nodes_) {
      if (n->op() == "variable")
        first_variable.emplace(groups_.Find(n->id()), n);
    }
    int next_spread = 0;
    for (const Node* n : nodes_) {
      const int g = groups_.Find(n->id());
      if (candidates_.contains(g)) continue;
      auto it = requests.find(g);
      if (it == requests.end()) {
        candidates_[g] = all;
        continue;
      }
      std::vector<int> match = devices_.Matching(it->second.spec);
      if (it->second.spec.task == "*" && !match.empty()) {
        auto v = first_variable.find(g);
        int rank = next_spread++;
        if (v != first_variable.end()) {
          auto r = options_.spread_order.find(v->second->name());
          if (r != options_.spread_order.end()) rank = r->second;
        }
        match = SpreadOverTasks(match, rank);
      }
      if (match.empty()) {
        const Node& by = *it->second.by;
        const std::string what =
            StrCat("no device matches ", it->second.spec.ToString(),
                   " (devices: ", devices_.Describe(), ")");
        if (!options_.soft_placement) {
          return AttachNode(
              absl::InvalidArgumentError(StrCat(
                  what, "; run with --soft-placement to place it elsewhere")),
              by.name(), by.span());
        }
        if (options_.warn) {
          options_.warn(by, StrCat(what, "; placed by the cost model"));
        }
        match = all;
      }
      candidates_[g] = std::move(match);
    }
    for (const auto& [g, v] : first_variable) variable_groups_.insert(g);
    absl::flat_hash_map<int, const Node*> asked;
    for (const auto& [g, r] : requests) asked.emplace(g, r.by);
    KeepToKernels(asked);
    return absl::OkStatus();
  }

  // A device other than the CPU (a GPU) runs only the groups it has a
  // kernel for, every member's; the CPU has them all. A loop's control
  // goes there too when that device has the control-flow kernels (their
  // predicates in host memory: framework/kernel.h, HostMemory). A group that
  // asked for such a device goes to the CPU with a warning.
  void KeepToKernels(const absl::flat_hash_map<int, const Node*>& asked) {
    absl::flat_hash_set<std::string> types;
    for (int d = 0; d < devices_.num_local(); ++d) {
      if (devices_.device(d)->type() != kDeviceCpu) {
        types.insert(devices_.device(d)->type());
      }
    }
    if (types.empty()) return;
    // Group -> a type it cannot run on, and the member that says so.
    absl::flat_hash_map<int, absl::flat_hash_map<std::string, const Node*>>
        lacking;
    for (const Node* n : nodes_) {
      for (const std::string& t : types) {
        if (!KernelRegistry::Global().HasFor(*n, t)) {
          lacking[groups_.Find(n->id())].emplace(t, n);
        }
      }
    }
    for (auto& [g, devices] : candidates_) {
      auto lack = lacking.find(g);
      if (lack == lacking.end()) continue;
      std::vector<int> kept;
      for (int d : devices) {
        if (!lack->second.contains(devices_.device(d)->type())) {
          kept.push_back(d);
        }
      }
      if (kept.empty()) {
        for (int d = 0; d < devices_.num_local(); ++d) {
          if (devices_.device(d)->type() == kDeviceCpu) kept.push_back(d);
        }
        auto by = asked.find(g);
        if (options_.warn && by != asked.end()) {
          const auto& [type, node] = *lack->second.begin();
          options_.warn(
              *by->second,
              StrCat("'", node->name(), "' (", node->op(), ") has no ", type,
                     " kernel for its dtype; placed on the CPU"));
        }
      }
      devices = std::move(kept);
    }
  }

  // The devices of `match` on its `rank`-th task (round-robin).
  std::vector<int> SpreadOverTasks(const std::vector<int>& match,
                                   int rank) const {
    std::vector<std::string> tasks;
    for (int d : match) {
      std::string t = TaskOfDevice(devices_.device(d)->name());
      if (std::find(tasks.begin(), tasks.end(), t) == tasks.end()) {
        tasks.push_back(std::move(t));
      }
    }
    const std::string& chosen = tasks[rank % tasks.size()];
    std::vector<int> out;
    for (int d : match) {
      if (TaskOfDevice(devices_.device(d)->name()) == chosen) out.push_back(d);
    }
    return out;
  }

  static std::string Where(const Node& n) {
    return n.span().known() ? StrCat(" (", n.span().ToString(), ")") : "";
  }

  // List scheduling: each group goes where its first node (in topological
  // order) would finish first; later members follow it.
  void Schedule() {
    const int64_t unknown = options_.unknown_dim;
    if (devices_.size() == 1) {  // no choice to make, nothing to measure
      for (const Node* n : nodes_) device_of_group_[groups_.Find(n->id())] = 0;
      return;
    }
    const std::vector<CostRates> rates = Rates();
    std::vector<double> busy_until(devices_.size(), 0.0);
    std::vector<double> finish(nodes_.size(), 0.0);
    // Groups that wait for a consumer to go where it goes (Source).
    absl::flat_hash_set<int> pending;
    auto place_pending = [&](const Node* src, int d) {
      const int g = groups_.Find(src->id());
      if (!pending.erase(g)) return;
      const std::vector<int>& options = candidates_.at(g);
      device_of_group_[g] =
          std::find(options.begin(), options.end(), d) != options.end()
              ? d
              : options[0];
    };
    for (const Node* n : nodes_) {
      const int g = groups_.Find(n->id());
      auto placed = device_of_group_.find(g);
      if (placed == device_of_group_.end() && Accelerator(g) < 0 &&
          Source(*n, g)) {
        pending.insert(g);
        continue;
      }
      pending.erase(g);
      auto finish_on = [&](int d) {
        double start = busy_until[d];
        // Inputs not placed yet close loops (or were added later, as
        // control inputs of autodiff); they do not delay the node.
        auto arrive = [&](const Node* src, double bytes) {
          auto placed_src = device_of_group_.find(groups_.Find(src->id()));
          if (placed_src == device_of_group_.end()) return;
          const int sd = placed_src->second;
          double t = finish[src->id()];
          if (sd != d) {
            t += rates[d].transfer_latency_s +
                 bytes / rates[d].transfer_bytes_per_s;
          }
          start = std::max(start, t);
        };
        for (int i = 0; i < n->num_inputs(); ++i) {
          const NodeOut in = n->input(i);
          arrive(in.node, Elements(in.node->output_shape(in.index), unknown) *
                              DTypeSize(in.node->output_dtype(in.index)));
        }
        for (const Node* c : n->control_inputs()) arrive(c, 0);
        return start + EstimatedSeconds(*n, rates[d], unknown);
      };
      int best;
      if (placed != device_of_group_.end()) {
        best = placed->second;
      } else if (const int a = Accelerator(g); a >= 0) {
        best = a;
        device_of_group_[g] = best;
      } else {
        // Home: the device of the first placed input, else the first.
        const std::vector<int>& options = candidates_.at(g);
        best = options[0];
        for (int i = 0; i < n->num_inputs(); ++i) {
          auto in = device_of_group_.find(groups_.Find(n->input(i).node->id()));
          if (in != device_of_group_.end() &&
              std::find(options.begin(), options.end(), in->second) !=
                  options.end()) {
            best = in->second;
            break;
          }
        }
        // Another device must win clearly (the estimates are rough, and
        // every move is a transfer at run time): ties stay home.
        const double home_finish = finish_on(best);
        double best_finish = home_finish;
        for (int d : options) {
          const double f = finish_on(d);
          if (f < best_finish && f < home_finish * kMoveGain - kMoveMargin) {
            best = d;
            best_finish = f;
          }
        }
        device_of_group_[g] = best;
      }
      finish[n->id()] = finish_on(best);
      busy_until[best] = finish[n->id()];
      for (const NodeOut& in : n->inputs()) place_pending(in.node, best);
      for (const Node* c : n->control_inputs()) place_pending(c, best);
    }
    for (int g : pending) device_of_group_[g] = candidates_.at(g)[0];
    // A CPU device left with crumbs (the adds of an optimizer's step count, a
    // one_hot of the labels, sent to it because it was idle at their turn)
    // costs its own partition and a transfer each way every step, for
    // nothing: its free groups (those that may go to the first device) go
    // back there, and a graph that fits one device runs as one piece.
    std::vector<double> work(devices_.size(), 0.0);
    double total = 0;
    for (const Node* n : nodes_) {
      const int d = device_of_group_.at(groups_.Find(n->id()));
      const double t = EstimatedSeconds(*n, rates[d], unknown);
      work[d] += t;
      total += t;
    }
    for (auto& [g, d] : device_of_group_) {
      const std::vector<int>& options = candidates_.at(g);
      if (d != 0 && work[d] < kMinShare * total && devices_.is_local(d) &&
          devices_.device(d)->type() == kDeviceCpu &&
          std::find(options.begin(), options.end(), 0) != options.end()) {
        d = 0;
      }
    }
  }

  // Whether `n` (of group `g`) takes nothing from another group: a
  // variable, a constant, a feed, a read of its own variable. Its value is
  // there when the run starts wherever it goes, so the time it would finish
  // says nothing about where it should go, and placing it on the device
  // idle at that point in the list (as list scheduling would) makes every
  // consumer elsewhere wait for a transfer. Its group goes where its first
  // consumer goes instead (a weight with the layer that reads it).
  bool Source(const Node& n, int g) {
    for (const NodeOut& in : n.inputs()) {
      if (groups_.Find(in.node->id()) != g) return false;
    }
    for (const Node* c : n.control_inputs()) {
      if (groups_.Find(c->id()) != g) return false;
    }
    return true;
  }

  // The device a variable's group goes to without weighing costs: the
  // first device other than a CPU (a GPU) among its candidates, which are
  // those that have kernels for every member (KeepToKernels) and match its
  // requests; -1 for other groups, or when it has no such candidate. The
  // weights, their slots and the update math then stay on the GPU, where
  // the math that reads them runs, instead of crossing each step (as
  // TensorFlow places variables on a GPU first).
  int Accelerator(int group) const {
    if (!variable_groups_.contains(group)) return -1;
    for (int d : candidates_.at(group)) {
      if (devices_.is_local(d) && devices_.device(d)->type() != kDeviceCpu) {
        return d;
      }
    }
    return -1;
  }

  // Each device's rates: the options', else the cost model's for its type
  // and intra-op threads. Another task's device (no pool here) takes the
  // first local device's: nodes go there only when asked to.
  std::vector<CostRates> Rates() const {
    std::vector<CostRates> rates;
    for (int d = 0; d < devices_.size(); ++d) {
      const Device& device = *devices_.device(d);
      if (!devices_.is_local(d) && d > 0) {
        rates.push_back(rates.front());
      } else if (options_.rates) {
        rates.push_back(options_.rates(device));
      } else if (device.type() == kDeviceGpu) {
        rates.push_back(NominalGpuRates());
      } else {
        const ThreadPool* pool = device.intra_op_pool();
        rates.push_back(CostModel::Global().RatesFor(
            device.type(), pool != nullptr ? pool->num_threads() : 1));
      }
    }
    return rates;
  }

  const Graph& graph_;
  std::vector<Node*> nodes_;
  const DeviceSet& devices_;
  const PlacerOptions& options_;
  UnionFind groups_;
  FrameMap frames_;
  absl::flat_hash_map<int, std::vector<int>> candidates_;
  absl::flat_hash_map<int, int> device_of_group_;
  absl::flat_hash_set<int> variable_groups_;  // groups holding a variable
};

}  // namespace

// Not calibrated on a GPU: the GPU sessions so far measured the kernels,
// not these rates.
CostRates NominalGpuRates() {
  CostRates r;
  r.matmul_flops_per_s = 1e13;
  r.elementwise_bytes_per_s = 1e12;
  r.transcendental_bytes_per_s = 5e11;
  r.reduction_bytes_per_s = 5e11;
  r.node_overhead_s = 5e-6;  // a kernel launch
  r.transfer_latency_s = 1e-5;
  r.transfer_bytes_per_s = 2e10;
  return r;
}

double EstimatedFlops(const Node& n, int64_t unknown) {
  const std::string& op = n.op();
  if (op == "matmul" && n.num_inputs() == 2 && n.num_outputs() == 1) {
    const Shape& a = n.input(0).node->output_shape(n.input(0).index);
    const bool ta = n.attr<bool>("transpose_a").value_or(false);
    const int ra = a.unknown_rank() ? 2 : a.rank();
    const int64_t k = Dim(a, ta ? ra - 2 : ra - 1, unknown);
    return 2.0 * Elements(n.output_shape(0), unknown) * static_cast<double>(k);
  }
  // A whole LSTM sequence: a product of h[t-1] and w_h [units, 4 units]
  // for each step's gates; its gradient has two (dh and dw_h).
  // (The lengths, when given, are one more input.)
  const bool sequence = op == "lstm_sequence" && n.num_inputs() >= 4;
  if (sequence || (op == "lstm_sequence_grad" && n.num_inputs() >= 9)) {
    const int w = sequence ? 3 : 5;
    const Shape& w_h = n.input(w).node->output_shape(n.input(w).index);
    const double gates = Elements(n.output_shape(sequence ? 4 : 0), unknown);
    return 2.0 * gates * static_cast<double>(Dim(w_h, 0, unknown)) *
           (sequence ? 1.0 : 2.0);
  }
  // Attention: q k^T and p v for each query of each batch matrix; its
  // gradient has five such products, two and a half times as many.
  const bool attention_grad = op == "scaled_dot_product_attention_grad";
  if ((op == "scaled_dot_product_attention" || attention_grad) &&
      n.num_inputs() >= 4) {
    const Shape& q = n.input(0).node->output_shape(n.input(0).index);
    const Shape& v = n.input(2).node->output_shape(n.input(2).index);
    const int r = q.unknown_rank() ? 2 : q.rank();
    const double d = Dim(q, r - 1, unknown), dv = Dim(v, r - 1, unknown);
    // Output 0 is [batch..., tq, dv] (dq: [batch..., tq, d]).
    const double width = attention_grad ? d : dv;
    const double queries =
        width > 0 ? Elements(n.output_shape(0), unknown) / width : 0;
    return queries * 2.0 * Dim(v, r - 2, unknown) * (d + dv) *
           (attention_grad ? 2.5 : 1.0);
  }
  // A convolution's gradients (x, filters, dy) cost what it does: a
  // window's products for each element of its output, dy.
  const bool backprop =
      (op == "conv2d_backprop_input" || op == "conv2d_backprop_filter" ||
       op == "conv3d_backprop_input" || op == "conv3d_backprop_filter") &&
      n.num_inputs() == 3;
  if (((op == "conv2d" || op == "conv3d") && n.num_inputs() == 2) || backprop) {
    const Shape& w = n.input(1).node->output_shape(n.input(1).index);
    // The filters' taps and input channels: all but the last dimension.
    const int taps = WindowRank(op) + 1;
    double window = 1;
    for (int i = 0; i < taps; ++i) window *= Dim(w, i, unknown);
    const Shape& out = backprop
                           ? n.input(2).node->output_shape(n.input(2).index)
                           : n.output_shape(0);
    return 2.0 * Elements(out, unknown) * window;
  }
  double out = 0;
  for (int i = 0; i < n.num_outputs(); ++i) {
    out += Elements(n.output_shape(i), unknown);
  }
  return out;
}

double EstimatedSeconds(const Node& n, const CostRates& rates,
                        int64_t unknown) {
  auto bytes = [&](const Node* src, int i) {
    return Elements(src->output_shape(i), unknown) *
           static_cast<double>(DTypeSize(src->output_dtype(i)));
  };
  double in = 0, out = 0;
  for (const NodeOut& i : n.inputs()) in += bytes(i.node, i.index);
  for (int i = 0; i < n.num_outputs(); ++i) out += bytes(&n, i);
  double work = 0;
  switch (ClassOfOp(n.op())) {
    case KernelClass::kFree:
      break;
    case KernelClass::kMatmul:
      work = EstimatedFlops(n, unknown) / rates.matmul_flops_per_s;
      break;
    case KernelClass::kElementwise:
      work = (in + out) / rates.elementwise_bytes_per_s;
      break;
    case KernelClass::kTranscendental:
      work = (in + out) / rates.transcendental_bytes_per_s;
      break;
    case KernelClass::kReduction:
      work = in / rates.reduction_bytes_per_s;
      break;
  }
  return rates.node_overhead_s + work;
}

absl::Status PlaceGraph(Graph& graph, const DeviceSet& devices,
                        const PlacerOptions& options) {
  return Placer(graph, devices, options).Run();
}

}  // namespace runnel
