#include "runtime/session.h"

#include <atomic>
#include <cstdio>

#include "runtime/errors.h"
#include "runtime/executor.h"
#include "runtime/partition.h"
#include "runtime/placer.h"
#include "runtime/prune.h"
#include "runtime/rendezvous.h"
#include "runtime/status_macros.h"
#include "runtime/strings.h"

namespace runnel {

// What one run signature needs: the pruned graph's executor and the
// variables on its path.
struct Session::Plan {
  std::unique_ptr<Executor> executor;  // with one device
  struct Part {
    std::string device;
    std::unique_ptr<Executor> executor;
  };
  std::vector<Part> parts;  // with several: one per device used
  std::shared_ptr<const Graph> placed;
  int num_fetches = 0;
  std::vector<const Node*> variables;  // nodes of the session's graph
  std::atomic<bool> variables_ready{false};
};

namespace {
int Threads(int n) { return n > 0 ? n : ThreadPool::DefaultNumThreads(); }

std::string Signature(const Session::Feeds& feeds,
                      const std::vector<NodeOut>& fetches,
                      const std::vector<Node*>& targets) {
  std::string key;
  for (const auto& [out, t] : feeds)
    key += StrCat(out.node->id(), ":", out.index, ",");
  key += "|";
  for (const NodeOut& f : fetches)
    key += StrCat(f.node->id(), ":", f.index, ",");
  key += "|";
  for (const Node* n : targets) key += StrCat(n->id(), ",");
  return key;
}
}  // namespace

Session::Session(std::shared_ptr<Graph> graph, SessionOptions options)
    : graph_(std::move(graph)),
      options_(options),
      inter_op_pool_(Threads(options.num_threads)),
      intra_op_pool_(Threads(options.num_threads)),
      devices_(std::make_unique<DeviceSet>(options.cpu_devices,
                                           Threads(options.num_threads),
                                           &resources_, &intra_op_pool_)) {}

Session::~Session() = default;

int Session::num_cached_executors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(plans_.size());
}

absl::StatusOr<std::shared_ptr<Variable>> Session::VariableFor(
    const Node& node) {
  RN_ASSIGN_OR_RETURN(DType dtype, node.attr<DType>("dtype"));
  RN_ASSIGN_OR_RETURN(Shape shape, node.attr<Shape>("shape"));
  return resources_.LookupOrCreate<Variable>(
      node.name(), [&] { return std::make_shared<Variable>(dtype, shape); });
}

absl::StatusOr<std::shared_ptr<Session::Plan>> Session::GetPlan(
    const Feeds& feeds, const std::vector<NodeOut>& fetches,
    const std::vector<Node*>& targets) {
  std::string key = Signature(feeds, fetches, targets);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
  }
  RN_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan,
                      BuildPlan(feeds, fetches, targets));
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = plans_.emplace(key, plan);
  return it->second;
}

absl::StatusOr<std::shared_ptr<Session::Plan>> Session::BuildPlan(
    const Feeds& feeds, const std::vector<NodeOut>& fetches,
    const std::vector<Node*>& targets) {
  absl::flat_hash_map<NodeOut, int> fed;
  std::vector<NodeOut> fed_outs;
  for (size_t i = 0; i < feeds.size(); ++i) {
    fed.emplace(feeds[i].first, static_cast<int>(i));
    fed_outs.push_back(feeds[i].first);
  }
  RN_ASSIGN_OR_RETURN(PrunedGraph needed,
                      PruneGraph(*graph_, fetches, targets, fed_outs));

  // Copy the needed nodes, in their topological order, with feeds and
  // fetches as endpoints.
  auto pruned = std::make_shared<Graph>();
  std::vector<Node*> copy_of(graph_->num_nodes(), nullptr);
  std::vector<Node*> feed_nodes(feeds.size(), nullptr);
  auto feed_node = [&](int i) -> absl::StatusOr<Node*> {
    if (feed_nodes[i] == nullptr) {
      const NodeOut& out = feeds[i].first;
      NodeSpec spec;
      spec.name = StrCat("_feed/", i);
      spec.op = "_feed";
      spec.attrs = {{"index", int64_t{i}},
                    {"dtype", out.node->output_dtype(out.index)},
                    {"shape", out.node->output_shape(out.index)}};
      spec.span = out.node->span();
      RN_ASSIGN_OR_RETURN(feed_nodes[i], pruned->AddNode(std::move(spec)));
    }
    return feed_nodes[i];
  };
  auto map_input = [&](const NodeOut& in) -> absl::StatusOr<NodeOut> {
    auto it = fed.find(in);
    if (it != fed.end()) {
      RN_ASSIGN_OR_RETURN(Node * f, feed_node(it->second));
      return NodeOut{f, 0};
    }
    return NodeOut{copy_of[in.node->id()], in.index};
  };

  auto plan = std::make_shared<Plan>();
  // A loop's back edge (a merge's input from a later next_iteration) is
  // copied as the merge's first input, then set once its source exists.
  std::vector<std::tuple<Node*, int, NodeOut>> back_edges;
  for (Node* n : needed.nodes) {
    NodeSpec spec = n->SpecWithoutInputs();
    for (int i = 0; i < n->num_inputs(); ++i) {
      const NodeOut& in = n->input(i);
      if (!fed.contains(in) && copy_of[in.node->id()] == nullptr) {
        back_edges.emplace_back(n, i, in);
        spec.inputs.push_back(spec.inputs.front());
        continue;
      }
      RN_ASSIGN_OR_RETURN(NodeOut m, map_input(in));
      spec.inputs.push_back(m);
    }
    for (Node* c : n->control_inputs())
      spec.control_inputs.push_back(copy_of[c->id()]);
    RN_ASSIGN_OR_RETURN(copy_of[n->id()], pruned->AddNode(std::move(spec)));
    if (n->op() == "variable") plan->variables.push_back(n);
  }
  for (auto& [n, i, in] : back_edges) {
    RN_ASSIGN_OR_RETURN(NodeOut m, map_input(in));
    RN_RETURN_IF_ERROR(pruned->UpdateInput(copy_of[n->id()], i, m));
  }
  for (size_t i = 0; i < fetches.size(); ++i) {
    RN_ASSIGN_OR_RETURN(NodeOut src, map_input(fetches[i]));
    NodeSpec spec;
    spec.name = StrCat("_fetch/", i);
    spec.op = "_fetch";
    spec.attrs = {{"index", int64_t(i)}};
    spec.inputs = {src};
    RN_RETURN_IF_ERROR(pruned->AddNode(std::move(spec)).status());
  }
  plan->num_fetches = static_cast<int>(fetches.size());
  if (devices_->size() == 1) {
    for (Node* n : pruned->nodes()) {
      n->set_assigned_device(devices_->device(0)->name());
    }
    plan->placed = pruned;
    RN_ASSIGN_OR_RETURN(plan->executor,
                        Executor::Create(pruned, device(), &inter_op_pool_));
    return plan;
  }
  PlacerOptions placer{.soft_placement = options_.soft_placement,
                       .warn = options_.warn};
  if (!placer.warn) {
    placer.warn = [](const Node& n, const std::string& message) {
      const std::string where = n.span().ToString();
      std::fprintf(stderr, "%s%swarning: %s\n", where.c_str(),
                   where.empty() ? "" : ": ", message.c_str());
    };
  }
  RN_RETURN_IF_ERROR(PlaceGraph(*pruned, *devices_, placer));
  plan->placed = pruned;
  RN_ASSIGN_OR_RETURN(
      std::vector<GraphPartition> parts,
      PartitionGraph(*pruned, {.f16_transfers = options_.f16_transfers}));
  for (GraphPartition& p : parts) {
    RN_ASSIGN_OR_RETURN(
        std::unique_ptr<Executor> ex,
        Executor::Create(p.graph, devices_->Find(p.device), &inter_op_pool_));
    plan->parts.push_back({p.device, std::move(ex)});
  }
  return plan;
}

absl::Status Session::InitializeVariables(Plan& plan) {
  if (plan.variables_ready.load(std::memory_order_acquire))
    return absl::OkStatus();
  std::vector<std::shared_ptr<Variable>> pending;
  std::vector<NodeOut> initializers;
  for (const Node* v : plan.variables) {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Variable> var, VariableFor(*v));
    if (var->initialized()) continue;
    RN_ASSIGN_OR_RETURN(std::string init, v->attr<std::string>("initializer"));
    if (init.empty()) {
      return AttachNode(absl::FailedPreconditionError(StrCat(
                            "variable '", v->name(), "' has no initializer")),
                        v->name(), v->span());
    }
    RN_ASSIGN_OR_RETURN(auto parsed, ParseTensorName(init));
    Node* init_node = graph_->FindNode(parsed.first);
    if (init_node == nullptr || parsed.second >= init_node->num_outputs()) {
      return AttachNode(
          absl::NotFoundError(StrCat("initializer '", init, "' of variable '",
                                     v->name(), "' not found")),
          v->name(), v->span());
    }
    pending.push_back(var);
    initializers.push_back({init_node, parsed.second});
  }
  if (!pending.empty()) {
    // Initializers may read other variables: Run initialises those first.
    RN_ASSIGN_OR_RETURN(std::vector<Tensor> values,
                        Run(Feeds{}, initializers, {}));
    for (size_t i = 0; i < pending.size(); ++i) {
      // Concurrent runs may race here; the first value wins.
      if (!pending[i]->initialized()) {
        absl::Status s = pending[i]->Assign(values[i]);
        if (!s.ok()) {
          const Node* v = plan.variables[i];
          return AttachNode(s, v->name(), v->span());
        }
      }
    }
  }
  plan.variables_ready.store(true, std::memory_order_release);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Session::Run(
    const Feeds& feeds, const std::vector<NodeOut>& fetches,
    const std::vector<Node*>& targets, const std::atomic<bool>* cancelled) {
  RN_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan,
                      GetPlan(feeds, fetches, targets));
  RN_RETURN_IF_ERROR(InitializeVariables(*plan));
  CallFrame frame;
  frame.feeds.reserve(feeds.size());
  for (const auto& [out, t] : feeds) frame.feeds.push_back(t);
  frame.fetches.resize(plan->num_fetches);
  frame.fetched.assign(plan->num_fetches, false);
  if (plan->executor != nullptr) {
    RN_RETURN_IF_ERROR(plan->executor->Run({.call_frame = &frame,
                                            .global_seed = options_.seed,
                                            .cancelled = cancelled,
                                            .tracer = tracer_.load()}));
  } else {
    Rendezvous rendezvous;
    const int64_t step = next_step_.fetch_add(1) + 1;
    std::vector<std::pair<Executor*, Executor::RunArgs>> runs;
    for (Plan::Part& p : plan->parts) {
      runs.push_back({p.executor.get(),
                      {.call_frame = &frame,
                       .global_seed = options_.seed,
                       .cancelled = cancelled,
                       .rendezvous = &rendezvous,
                       .step_id = step,
                       .tracer = tracer_.load()}});
    }
    RN_RETURN_IF_ERROR(Executor::RunPartitions(runs));
  }
  for (size_t i = 0; i < fetches.size(); ++i) {
    if (!frame.fetched[i]) {
      const Node* n = fetches[i].node;
      return AttachNode(
          absl::InvalidArgumentError(
              StrCat("'", n->name(),
                     "' has no value in this run: it is computed "
                     "only on a branch of an in-graph 'if' that did not run")),
          n->name(), n->span());
    }
  }
  return std::move(frame.fetches);
}

absl::StatusOr<std::shared_ptr<const Graph>> Session::PlacedGraph(
    const Feeds& feeds, const std::vector<NodeOut>& fetches,
    const std::vector<Node*>& targets) {
  RN_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan,
                      GetPlan(feeds, fetches, targets));
  return plan->placed;
}

absl::StatusOr<std::vector<Tensor>> Session::Run(
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  auto find = [&](const std::string& name) -> absl::StatusOr<NodeOut> {
    RN_ASSIGN_OR_RETURN(auto parsed, ParseTensorName(name));
    Node* n = graph_->FindNode(parsed.first);
    if (n == nullptr) {
      return absl::NotFoundError(StrCat("no node named '", parsed.first, "'"));
    }
    if (parsed.second >= n->num_outputs()) {
      return absl::NotFoundError(StrCat("node '", parsed.first, "' has ",
                                        n->num_outputs(), " output(s)"));
    }
    return NodeOut{n, parsed.second};
  };
  Feeds f;
  for (const auto& [name, t] : feeds) {
    RN_ASSIGN_OR_RETURN(NodeOut out, find(name));
    f.emplace_back(out, t);
  }
  std::vector<NodeOut> outs;
  for (const std::string& name : fetches) {
    RN_ASSIGN_OR_RETURN(NodeOut out, find(name));
    outs.push_back(out);
  }
  std::vector<Node*> ts;
  for (const std::string& name : targets) {
    Node* n = graph_->FindNode(name);
    if (n == nullptr)
      return absl::NotFoundError(StrCat("no node named '", name, "'"));
    ts.push_back(n);
  }
  return Run(f, outs, ts);
}

}  // namespace runnel
