#include "common_runtime/session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include "absl/strings/str_format.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/executor.h"
#include "common_runtime/fuse_updates.h"
#include "common_runtime/partition.h"
#include "common_runtime/placer.h"
#include "common_runtime/prune.h"
#include "common_runtime/rendezvous.h"
#include "common_runtime/session_plan.h"
#include "framework/device_spec.h"

namespace runnel {

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
      inter_op_pool_(Threads(options.num_threads), "runnel-inter"),
      intra_op_pool_(Threads(options.num_threads), "runnel-intra"),
      devices_(std::make_unique<DeviceSet>(
          options.cpu_devices, Threads(options.num_threads), &resources_,
          &intra_op_pool_,
          options.cluster ? options.cluster->local_task()
                          : std::string("/job:localhost/task:0"))) {
  devices_status_ =
      devices_->AddGpus(options.gpu_devices, &resources_, options.gpu);
  if (options_.cluster != nullptr) {
    for (const std::string& d : options_.cluster->remote_devices()) {
      devices_->AddRemote(d);
    }
    options_.cluster->ServeDevices(devices_.get(), &inter_op_pool_);
  }
}

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
  RN_RETURN_IF_ERROR(devices_status_);
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
  // On this process's CPUs, an update by a weight's product fused with the
  // product (common_runtime/fuse_updates.h).
  bool local_cpus = true;
  for (int i = 0; i < devices_->size(); ++i) {
    local_cpus = local_cpus && devices_->is_local(i) &&
                 devices_->device(i)->type() == kDeviceCpu;
  }
  const UpdateProducts fuse =
      local_cpus ? FindUpdateProducts(needed.nodes, fetches, fed_outs)
                 : UpdateProducts{};
  std::vector<Node*> updates;
  // A node's control inputs in the plan; one that waits for a product left
  // out waits for the product's inputs and control inputs instead.
  auto controls_of = [&](const Node* n) {
    std::vector<Node*> out;
    auto add = [&](Node* c) {
      if (c != nullptr && std::find(out.begin(), out.end(), c) == out.end())
        out.push_back(c);
    };
    std::vector<const Node*> todo = {n};
    while (!todo.empty()) {
      const Node* m = todo.back();
      todo.pop_back();
      for (Node* c : m->control_inputs()) {
        if (!fuse.products.contains(c)) {
          add(copy_of[c->id()]);
          continue;
        }
        for (const NodeOut& in : c->inputs()) add(copy_of[in.node->id()]);
        todo.push_back(c);
      }
    }
    return out;
  };
  // A loop's back edge (a merge's input from a later next_iteration) is
  // copied as the merge's first input, then set once its source exists.
  std::vector<std::tuple<Node*, int, NodeOut>> back_edges;
  for (Node* n : needed.nodes) {
    if (fuse.products.contains(n)) continue;
    if (auto it = fuse.product_of.find(n); it != fuse.product_of.end()) {
      const Node& product = *it->second;
      std::vector<NodeOut> inputs;
      for (const NodeOut& in : FusedInputs(*n, product)) {
        RN_ASSIGN_OR_RETURN(NodeOut m, map_input(in));
        inputs.push_back(m);
      }
      std::vector<Node*> controls = controls_of(n);
      for (Node* c : controls_of(&product)) controls.push_back(c);
      RN_ASSIGN_OR_RETURN(copy_of[n->id()], pruned->AddNode(FusedUpdateSpec(
                                                *n, product, std::move(inputs),
                                                std::move(controls))));
      updates.push_back(copy_of[n->id()]);
      continue;
    }
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
    spec.control_inputs = controls_of(n);
    RN_ASSIGN_OR_RETURN(copy_of[n->id()], pruned->AddNode(std::move(spec)));
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
  OrderBeforeUpdate(*pruned, updates);
  plan->num_fetches = static_cast<int>(fetches.size());
  for (Node* n : needed.nodes) {
    if (n->op() == "variable") plan->variables.push_back(n);
  }
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
                       .warn = options_.warn,
                       .spread_order = SpreadOrder()};
  if (!placer.warn) {
    placer.warn = [](const Node& n, const std::string& message) {
      const std::string where = n.span().ToString();
      std::fprintf(stderr, "%s%swarning: %s\n", where.c_str(),
                   where.empty() ? "" : ": ", message.c_str());
    };
  }
  RN_RETURN_IF_ERROR(PlaceGraph(*pruned, *devices_, placer));
  plan->placed = pruned;
  for (const Node* v : plan->variables) {
    const std::string& d = copy_of[v->id()]->assigned_device();
    const int i = devices_->IndexOf(d);
    plan->variable_tasks.push_back(
        i >= 0 && !devices_->is_local(i) ? TaskOfDevice(d) : std::string());
  }
  RN_ASSIGN_OR_RETURN(
      std::vector<GraphPartition> parts,
      PartitionGraph(*pruned, {.f16_transfers = options_.f16_transfers}));
  // Synchronous replicas: a replicated task commits before it sends.
  const std::vector<Node*> nodes = pruned->nodes();
  const bool sync = std::any_of(nodes.begin(), nodes.end(), [](const Node* n) {
    return n->op().starts_with("sync_");
  });
  for (GraphPartition& p : parts) {
    const int i = devices_->IndexOf(p.device);
    if (i >= 0 && !devices_->is_local(i)) {
      const std::string task = TaskOfDevice(p.device);
      RN_ASSIGN_OR_RETURN(
          std::string handle,
          options_.cluster->RegisterPartition(task, *p.graph, sync));
      const std::vector<Node*> part = p.graph->nodes();
      plan->remote.push_back(
          {.task = task,
           .handle = std::move(handle),
           .returns = std::none_of(part.begin(), part.end(), [](const Node* n) {
             return n->op() == "_recv";
           })});
      continue;
    }
    RN_ASSIGN_OR_RETURN(
        std::unique_ptr<Executor> ex,
        Executor::Create(p.graph, devices_->Find(p.device), &inter_op_pool_));
    plan->parts.push_back({p.device, std::move(ex)});
  }
  for (Plan::RemotePart& r : plan->remote) {
    r.returns =
        r.returns && std::count_if(plan->remote.begin(), plan->remote.end(),
                                   [&](const Plan::RemotePart& o) {
                                     return o.task == r.task;
                                   }) == 1;
  }
  return plan;
}

absl::StatusOr<NodeOut> Session::InitializerOf(const Node& v) {
  RN_ASSIGN_OR_RETURN(std::string init, v.attr<std::string>("initializer"));
  if (init.empty()) {
    return AttachNode(absl::FailedPreconditionError(StrCat(
                          "variable '", v.name(), "' has no initializer")),
                      v.name(), v.span());
  }
  RN_ASSIGN_OR_RETURN(auto parsed, ParseTensorName(init));
  Node* init_node = graph_->FindNode(parsed.first);
  if (init_node == nullptr || parsed.second >= init_node->num_outputs()) {
    return AttachNode(
        absl::NotFoundError(StrCat("initializer '", init, "' of variable '",
                                   v.name(), "' not found")),
        v.name(), v.span());
  }
  return NodeOut{init_node, parsed.second};
}

void Session::set_initial_values(
    std::shared_ptr<const std::map<std::string, Tensor>> values,
    std::string source) {
  std::lock_guard<std::mutex> lock(mu_);
  initial_values_ = std::move(values);
  initial_source_ = std::move(source);
}

absl::StatusOr<std::optional<Tensor>> Session::InitialValue(
    const Node& variable) {
  std::shared_ptr<const std::map<std::string, Tensor>> values;
  std::string source;
  {
    std::lock_guard<std::mutex> lock(mu_);
    values = initial_values_;
    source = initial_source_;
  }
  if (values == nullptr) return std::nullopt;
  auto it = values->find(variable.name());
  if (it == values->end()) return std::nullopt;
  RN_ASSIGN_OR_RETURN(DType dtype, variable.attr<DType>("dtype"));
  RN_ASSIGN_OR_RETURN(Shape shape, variable.attr<Shape>("shape"));
  const Tensor& t = it->second;
  if (t.dtype() != dtype || t.shape() != shape) {
    return AttachNode(absl::InvalidArgumentError(StrCat(
                          "'", variable.name(), "' is ", DTypeName(dtype),
                          shape.ToString(), " but ", source, " has ",
                          DTypeName(t.dtype()), t.shape().ToString())),
                      variable.name(), variable.span());
  }
  return t;
}

absl::flat_hash_map<std::string, int> Session::SpreadOrder() {
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<Node*> nodes = graph_->nodes();
  for (; spread_scanned_ < static_cast<int>(nodes.size()); ++spread_scanned_) {
    const Node* n = nodes[spread_scanned_];
    if (n->op() != "variable" || n->requested_device().empty()) continue;
    absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(n->requested_device());
    if (!spec.ok() || spec->task != "*") continue;
    const size_t slash = n->name().rfind('/');
    if (slash != std::string::npos) {  // a slot goes with its variable
      auto base = spread_order_.find(n->name().substr(0, slash));
      if (base != spread_order_.end()) {
        spread_order_[n->name()] = base->second;
        continue;
      }
    }
    spread_order_[n->name()] = spread_count_++;
  }
  return spread_order_;
}

absl::Status Session::InitializeVariables(Plan& plan) {
  if (plan.variables_ready.load(std::memory_order_acquire))
    return absl::OkStatus();
  std::vector<std::shared_ptr<Variable>> pending;
  std::vector<const Node*> pending_nodes;
  std::vector<NodeOut> initializers;
  for (size_t k = 0; k < plan.variables.size(); ++k) {
    const Node* v = plan.variables[k];
    if (!plan.variable_tasks.empty() && !plan.variable_tasks[k].empty()) {
      continue;  // on another task: InitializeRemoteVariables
    }
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Variable> var, VariableFor(*v));
    if (var->initialized()) continue;
    RN_ASSIGN_OR_RETURN(std::optional<Tensor> restored, InitialValue(*v));
    if (restored.has_value()) {
      absl::Status s = var->Assign(*restored);
      if (!s.ok()) return AttachNode(s, v->name(), v->span());
      continue;
    }
    RN_ASSIGN_OR_RETURN(NodeOut init, InitializerOf(*v));
    pending.push_back(var);
    pending_nodes.push_back(v);
    initializers.push_back(init);
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
          const Node* v = pending_nodes[i];
          return AttachNode(s, v->name(), v->span());
        }
      }
    }
  }
  if (options_.cluster != nullptr) {
    RN_RETURN_IF_ERROR(InitializeRemoteVariables(plan));
    if (options_.cluster->is_chief()) InitializeDeclaredVariables();
  }
  plan.variables_ready.store(true, std::memory_order_release);
  return absl::OkStatus();
}

// The other workers wait for the chief to initialize what they use, and a
// variable may be used only by them (`if task().index == 1 { run ... }`).
// So the chief initializes every variable the script has declared so far,
// as TensorFlow's chief runs the initializers of every global variable:
// those on other tasks, placed by a plan whose targets are the variables
// alone. Best effort: a failure here is told and left to the worker that
// needs the variable, which times out naming it.
void Session::InitializeDeclaredVariables() {
  std::vector<Node*> declared;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::vector<Node*> nodes = graph_->nodes();
    for (; declared_scanned_ < static_cast<int>(nodes.size());
         ++declared_scanned_) {
      Node* n = nodes[declared_scanned_];
      if (n->op() == "variable") declared.push_back(n);
    }
  }
  if (declared.empty()) return;
  absl::Status s = [&]() -> absl::Status {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan,
                        GetPlan(Feeds{}, {}, declared));
    return InitializeRemoteVariables(*plan);
  }();
  if (!s.ok()) {
    options_.cluster->Inform(
        StrCat("could not initialize the variables declared so far for the "
               "other workers: ",
               s.message()));
  }
}

absl::StatusOr<std::vector<Tensor>> Session::Run(
    const Feeds& feeds, const std::vector<NodeOut>& fetches,
    const std::vector<Node*>& targets, const RunOptions& run) {
  ClusterContext* cluster = options_.cluster.get();
  if (cluster == nullptr || cluster->retry_seconds() <= 0) {
    return RunOnce(feeds, fetches, targets, run);
  }
  // Under `runnel cluster --restart` a task that died comes back: wait for
  // it, plan again (it lost its graphs, and perhaps its state, which the
  // chief restores from the newest checkpoint) and run the step again. A
  // replicated task's backup takes over instead; the run's writes that its
  // first attempt made there are not made again (RunOptions::update).
  const auto start = std::chrono::steady_clock::now();
  RunOptions attempt = run;
  attempt.update = cluster->NewUpdate();
  std::optional<std::chrono::steady_clock::time_point> failed;
  for (int retries = 0;; ++retries) {
    absl::StatusOr<std::vector<Tensor>> r =
        RunOnce(feeds, fetches, targets, attempt);
    if (r.ok() && failed.has_value()) {
      cluster->Inform(
          StrCat("the run went through ",
                 absl::StrFormat("%.2f",
                                 std::chrono::duration<double>(
                                     std::chrono::steady_clock::now() - *failed)
                                     .count()),
                 " s after it first failed (", retries + 1, " attempts)"));
    }
    if (r.ok() || r.status().code() != absl::StatusCode::kUnavailable ||
        (run.cancelled != nullptr && run.cancelled->load())) {
      return r;
    }
    const double left =
        cluster->retry_seconds() -
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (left <= 0) return r;
    if (!failed.has_value()) {
      failed = std::chrono::steady_clock::now();
      cluster->Inform(
          StrCat(r.status().message(), "; retrying the run once it is back"));
    } else {
      // A task that answers but cannot serve yet (a primary waiting for
      // its backup's restart): not in a tight loop.
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::min(50 * retries, 500)));
    }
    // (Failing until the time is up; the next attempt says how.)
    cluster->WaitForTasks(left).IgnoreError();
    std::lock_guard<std::mutex> lock(mu_);
    plans_.clear();
  }
}

absl::StatusOr<std::vector<Tensor>> Session::RunOnce(
    const Feeds& feeds, const std::vector<NodeOut>& fetches,
    const std::vector<Node*>& targets, const RunOptions& run) {
  const std::atomic<bool>* cancelled = run.cancelled;
  const std::string& trace_lane = run.trace_lane;
  RN_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan,
                      GetPlan(feeds, fetches, targets));
  RN_RETURN_IF_ERROR(InitializeVariables(*plan));
  CallFrame frame;
  frame.feeds.reserve(feeds.size());
  for (const auto& [out, t] : feeds) frame.feeds.push_back(t);
  frame.fetches.resize(plan->num_fetches);
  frame.fetched.assign(plan->num_fetches, false);
  // A cluster of one task (one worker, no ps) has one device: its plan is
  // one executor, as a local run's.
  if (options_.cluster != nullptr && plan->executor == nullptr) {
    RN_RETURN_IF_ERROR(RunClusterStep(*plan, &frame, run));
  } else if (plan->executor != nullptr) {
    RN_RETURN_IF_ERROR(plan->executor->Run({.call_frame = &frame,
                                            .global_seed = options_.seed,
                                            .cancelled = cancelled,
                                            .tracer = tracer_.load(),
                                            .trace_lane = trace_lane}));
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
                       .tracer = tracer_.load(),
                       .trace_lane = trace_lane}});
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
