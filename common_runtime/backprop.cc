// The backward pass of AddGradients (gradients.h), through control flow.
//
// The walk runs over one frame at a time: the root, or the body of one
// loop. Inside it, a loop nested one level down is a unit whose inputs are
// its enters' inputs and whose outputs are its exits; its gradient is a
// backward loop (LoopGrad), whose body is the walk over the forward body.
//
// Levels: level 0 is the root; level d is the backward loop of the d-th
// forward loop being differentiated, outermost first. A backward node lives
// at one level. A forward value made in the body of the loop of level e is
// read at level e from a stack: the forward loop pushes it at its
// iteration index, the backward loop pops it at the same index. Values of
// outer levels enter inner backward loops as invariants.
#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/control_flow.h"
#include "common_runtime/gradients.h"

namespace runnel {
namespace {

bool CarriesGradient(DType d) { return IsFloating(d); }

bool IsInvariant(const Node* enter) {
  absl::StatusOr<bool> c =
      GetAttrOr<bool>(enter->attrs(), "is_constant", false);
  return c.ok() && *c;
}

// One step of the walk: a node, or a whole loop nested in the frame.
struct Unit {
  Node* key = nullptr;  // the node, or the loop's first exit
  const FrameMap::Loop* loop = nullptr;
  std::string loop_frame;
  std::vector<NodeOut> inputs;   // the loop's enters' inputs
  std::vector<NodeOut> outputs;  // the loop's exits
};

// A forward loop variable: enter -> merge -> switch -> (exit, body_in);
// body_out -> next_iteration -> merge.
struct LoopVar {
  Node* enter = nullptr;
  Node* merge = nullptr;
  Node* body_in = nullptr;
  NodeOut body_out;
  Node* exit = nullptr;
};

struct Level {
  std::string frame;  // the forward loop's frame ("" at level 0)
  WhileBuilder* loop = nullptr;
  NodeOut index;  // the forward iteration this backward iteration undoes
  std::vector<std::pair<Node*, Node*>> pushes;  // (pop, its push)
  absl::flat_hash_map<NodeOut, NodeOut> pops;
};

class Backprop : public GradContext {
 public:
  Backprop(Graph* graph, FrameMap frames, std::string scope)
      : graph_(graph), frames_(std::move(frames)), scope_(std::move(scope)) {
    levels_.push_back(Level{});
  }

  // The gradients of `targets` when `seeds` (forward tensor, gradient) flow
  // into forward frame `frame`; `boundary` nodes are not walked past.
  absl::StatusOr<std::vector<NodeOut>> Walk(
      const std::vector<std::pair<NodeOut, NodeOut>>& seeds,
      const std::vector<NodeOut>& targets, const std::string& frame,
      const absl::flat_hash_set<const Node*>& boundary);

  absl::StatusOr<NodeOut> Resolve(NodeOut v) override {
    return ResolveTo(v, depth());
  }
  void Made(Node* n) override {
    depth_[n] =
        n->num_inputs() == 0 && n->control_inputs().empty() ? 0 : depth();
  }

 private:
  int depth() const { return static_cast<int>(levels_.size()) - 1; }
  absl::StatusOr<NodeOut> ResolveTo(NodeOut v, int d);
  absl::StatusOr<NodeOut> PopAt(NodeOut v, int e);
  absl::StatusOr<Node*> Forward(std::string op, std::vector<NodeOut> inputs,
                                AttrMap attrs, std::vector<Node*> control,
                                const std::string& frame, const Node* like);
  absl::StatusOr<Grads> LoopGrad(const Unit& u, const Grads& dy);
  absl::Status OrderPushes(const Unit& u, const Level& done,
                           const std::vector<NodeOut>& exits);
  absl::StatusOr<std::vector<LoopVar>> VarsOf(const FrameMap::Loop& loop);
  NodeMaker MakerAt(int d);

  Graph* graph_;
  FrameMap frames_;
  std::string scope_;
  std::vector<Level> levels_;
  absl::flat_hash_map<const Node*, int> depth_;  // backward nodes
};

NodeMaker Backprop::MakerAt(int d) {
  return [this, d](NodeSpec spec, bool in_parent) -> absl::StatusOr<Node*> {
    spec.name = graph_->UniqueName(spec.name);
    RN_ASSIGN_OR_RETURN(Node * n, graph_->AddNode(std::move(spec)));
    depth_[n] = in_parent ? d - 1 : d;
    return n;
  };
}

absl::StatusOr<NodeOut> Backprop::ResolveTo(NodeOut v, int d) {
  if (v.node == nullptr) return v;
  int at;
  NodeOut base = v;
  auto it = depth_.find(v.node);
  if (it != depth_.end()) {
    at = it->second;
  } else {
    const std::string& frame = frames_.frame_of(v.node);
    at = -1;
    for (int e = 0; e <= d && at < 0; ++e) {
      if (levels_[e].frame == frame) at = e;
    }
    if (at < 0) {
      return AttachNode(
          absl::InternalError(StrCat("grad: '", v.node->name(),
                                     "' is in a loop the gradient cannot "
                                     "reach")),
          v.node->name(), v.node->span());
    }
    if (at > 0) {
      RN_ASSIGN_OR_RETURN(base, PopAt(v, at));
    }
  }
  if (at > d) {
    return absl::InternalError(
        StrCat("grad: '", v.node->name(), "' used outside its loop"));
  }
  // Enter the value into each deeper backward loop, as an invariant.
  for (int e = at + 1; e <= d; ++e) {
    RN_ASSIGN_OR_RETURN(base, levels_[e].loop->EnterInvariant(base));
  }
  return base;
}

absl::StatusOr<Node*> Backprop::Forward(
    std::string op, std::vector<NodeOut> inputs, AttrMap attrs,
    std::vector<Node*> control, const std::string& frame, const Node* like) {
  NodeSpec spec;
  spec.name = graph_->UniqueName(StrCat(like->name(), "/", op));
  spec.op = std::move(op);
  spec.inputs = std::move(inputs);
  spec.attrs = std::move(attrs);
  spec.control_inputs = std::move(control);
  spec.device = like->requested_device();
  spec.span = like->span();
  RN_ASSIGN_OR_RETURN(Node * n, graph_->AddNode(std::move(spec)));
  frames_.set(n, frame);
  return n;
}

// The forward value v of the body of level e's loop, read in level e's
// backward loop: the forward loop pushes it, the backward loop pops it.
absl::StatusOr<NodeOut> Backprop::PopAt(NodeOut v, int e) {
  Level& level = levels_[e];
  auto it = level.pops.find(v);
  if (it != level.pops.end()) return it->second;
  const FrameMap::Loop* loop = frames_.loop(level.frame);
  const std::string& outer = frames_.parent_of(level.frame);
  const TensorSpec& spec = v.node->output(v.index);
  // A stack per iteration of the enclosing loop: made where that loop's
  // iteration runs.
  std::vector<Node*> once;
  if (e > 1) once.push_back(frames_.loop(outer)->counter_body);
  RN_ASSIGN_OR_RETURN(
      Node * stack, Forward("stack_new", {}, {{"elem_dtype", spec.dtype}}, once,
                            outer, v.node));
  RN_ASSIGN_OR_RETURN(Node * handle, Forward("enter", {{stack, 0}},
                                             {{"frame_name", level.frame},
                                              {"is_constant", true}},
                                             {}, level.frame, v.node));
  RN_ASSIGN_OR_RETURN(
      Node * push,
      Forward("stack_push", {{handle, 0}, {loop->counter_body, 0}, v}, {}, {},
              level.frame, v.node));
  level.pushes.push_back({nullptr, push});
  RN_ASSIGN_OR_RETURN(NodeOut h, ResolveTo({stack, 0}, e));
  NodeSpec pop;
  pop.name = graph_->UniqueName(StrCat(scope_, "/", v.node->name(), "/pop"));
  pop.op = "stack_pop";
  pop.inputs = {h, levels_[e].index};
  pop.attrs = {{"elem_dtype", spec.dtype}, {"shape", spec.shape}};
  pop.device = v.node->requested_device();
  pop.span = v.node->span();
  RN_ASSIGN_OR_RETURN(Node * p, graph_->AddNode(std::move(pop)));
  depth_[p] = e;
  levels_[e].pushes.back().first = p;
  levels_[e].pops[v] = {p, 0};
  return NodeOut{p, 0};
}

absl::StatusOr<std::vector<LoopVar>> Backprop::VarsOf(
    const FrameMap::Loop& loop) {
  std::vector<LoopVar> vars;
  for (Node* enter : loop.enters) {
    if (enter == loop.counter_enter || IsInvariant(enter)) continue;
    LoopVar var;
    var.enter = enter;
    for (auto [m, i] : frames_.consumers(enter)) {
      if (IsMerge(m)) var.merge = m;
    }
    if (var.merge == nullptr) continue;
    var.body_out = var.merge->input(1).node->input(0);
    for (auto [sw, i] : frames_.consumers(var.merge)) {
      if (!IsSwitch(sw)) continue;
      for (auto [c, k] : frames_.consumers(sw)) {
        if (IsExit(c)) var.exit = c;
        if (c->op() == "identity" && c->input(0).index == 1) var.body_in = c;
      }
    }
    if (var.exit == nullptr || var.body_in == nullptr) {
      return AttachNode(
          absl::InternalError(StrCat("grad: loop variable '", enter->name(),
                                     "' does not have the shape of a loop")),
          enter->name(), enter->span());
    }
    vars.push_back(var);
  }
  return vars;
}

// The gradient of a loop nested in the frame being walked: a backward loop
// over the forward trip count. Its variables are the gradients of the
// forward loop's variables (flowing from the exits back to the enters) and
// the sums over iterations of the gradients of the invariants.
absl::StatusOr<Grads> Backprop::LoopGrad(const Unit& u, const Grads& dy) {
  const FrameMap::Loop& loop = *u.loop;
  RN_ASSIGN_OR_RETURN(std::vector<LoopVar> vars, VarsOf(loop));
  const int d = depth();
  GradBuilder at(graph_, loop.counter_exit, StrCat(scope_, "/", u.loop_frame),
                 this);
  RN_ASSIGN_OR_RETURN(NodeOut trips, Resolve({loop.counter_exit, 0}));
  // Initial values: the exits' gradients (zeros where none came).
  std::vector<NodeOut> init;
  std::vector<std::optional<Shape>> shapes;
  std::vector<const LoopVar*> carried;
  for (const LoopVar& var : vars) {
    if (!CarriesGradient(var.exit->output_dtype(0))) continue;
    NodeOut g;
    for (size_t k = 0; k < u.outputs.size(); ++k) {
      if (u.outputs[k].node == var.exit) g = dy[k];
    }
    if (g.node == nullptr) g = at.ZerosLike({var.exit, 0});
    init.push_back(g);
    shapes.push_back(var.merge->output_shape(0));
    carried.push_back(&var);
  }
  std::vector<Node*> invariants;
  for (Node* enter : loop.enters) {
    if (!IsInvariant(enter) || !CarriesGradient(enter->output_dtype(0)))
      continue;
    init.push_back(at.ZerosLike(enter->input(0)));
    shapes.push_back(std::nullopt);
    invariants.push_back(enter);
  }
  RN_RETURN_IF_ERROR(at.status());

  const std::string frame =
      graph_->UniqueName(StrCat(scope_, "/", u.loop_frame, "/grad"));
  WhileBuilder wb(
      graph_, MakerAt(d + 1), [&](NodeOut v) { return ResolveTo(v, d); }, frame,
      frame, loop.counter_exit->span());
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> top, wb.Begin(init, shapes, {}));
  levels_.push_back(Level{u.loop_frame, &wb, {}, {}, {}});
  GradBuilder in(graph_, loop.counter_exit, frame, this);
  NodeOut pred = in.Op("less", {top[0], trips});
  RN_RETURN_IF_ERROR(in.status());
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> body, wb.Condition(pred));
  // Backward iteration i undoes forward iteration trips - 1 - i.
  levels_.back().index =
      in.Sub(in.Sub(trips, in.Scalar(1, DType::kI32)), body[0]);
  RN_RETURN_IF_ERROR(in.status());

  std::vector<std::pair<NodeOut, NodeOut>> seeds;
  std::vector<NodeOut> targets;
  absl::flat_hash_set<const Node*> boundary;
  for (size_t k = 0; k < carried.size(); ++k) {
    seeds.push_back({carried[k]->body_out, body[k + 1]});
    targets.push_back({carried[k]->body_in, 0});
  }
  for (Node* enter : invariants) targets.push_back({enter, 0});
  for (const LoopVar& var : vars) boundary.insert(var.body_in);
  for (Node* enter : loop.enters) boundary.insert(enter);
  boundary.insert(loop.counter_body);
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> step,
                      Walk(seeds, targets, u.loop_frame, boundary));
  std::vector<NodeOut> next;
  for (size_t k = 0; k < carried.size(); ++k) next.push_back(step[k]);
  for (size_t j = 0; j < invariants.size(); ++j) {
    const NodeOut sum = body[carried.size() + j + 1];
    const NodeOut g = step[carried.size() + j];
    // The gradient of a row read x[i] is a zero tensor shaped like x with
    // dy at i: add dy into row i of the sum instead (in place), so a scan
    // over T rows costs O(T * row) backwards, not O(T^2 * row).
    const DType d = g.node->output_dtype(g.index);
    if (g.node->op() == "dynamic_index_grad" &&
        (d == DType::kF32 || d == DType::kF64)) {
      next.push_back(in.Op("dynamic_index_add",
                           {sum, g.node->input(1), g.node->input(2)}));
    } else {
      next.push_back(in.Add(sum, g));
    }
  }
  RN_RETURN_IF_ERROR(in.status());
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> exits, wb.Finish(next, {}));

  Level done = std::move(levels_.back());
  levels_.pop_back();
  RN_RETURN_IF_ERROR(OrderPushes(u, done, exits));
  // Gradients of the loop unit's inputs (its enters', in order).
  Grads dx(u.inputs.size());
  for (size_t i = 0; i < loop.enters.size(); ++i) {
    for (size_t k = 0; k < carried.size(); ++k) {
      if (carried[k]->enter == loop.enters[i]) dx[i] = exits[k + 1];
    }
    for (size_t j = 0; j < invariants.size(); ++j) {
      if (invariants[j] == loop.enters[i])
        dx[i] = exits[carried.size() + j + 1];
    }
  }
  return dx;
}

// The forward loop's next iteration waits for this one's pushes, so the
// backward loop (which starts after the forward loop's exits) finds every
// value pushed. A pushed value on an untaken branch is dead and its push
// does not run; the trigger runs all the same. Only the pushes of pops the
// backward loop (`done`, whose exits are `exits`) uses run: a gradient
// function may read a forward value for an input that needs no gradient.
absl::Status Backprop::OrderPushes(const Unit& u, const Level& done,
                                   const std::vector<NodeOut>& exits) {
  const FrameMap::Loop& loop = *u.loop;
  absl::flat_hash_set<const Node*> used;
  {
    std::vector<const Node*> stack;
    for (const NodeOut& e : exits) stack.push_back(e.node);
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      if (!used.insert(n).second) continue;
      for (const NodeOut& in : n->inputs()) stack.push_back(in.node);
      for (const Node* c : n->control_inputs()) stack.push_back(c);
    }
  }
  std::vector<Node*> pushes;
  for (auto [pop, push] : done.pushes) {
    if (used.contains(pop)) pushes.push_back(push);
  }
  if (!pushes.empty()) {
    RN_ASSIGN_OR_RETURN(Node * trigger,
                        Forward("control_trigger", {}, {}, pushes, u.loop_frame,
                                loop.counter_next));
    graph_->AddControlInput(loop.counter_next, trigger);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NodeOut>> Backprop::Walk(
    const std::vector<std::pair<NodeOut, NodeOut>>& seeds,
    const std::vector<NodeOut>& targets, const std::string& frame,
    const absl::flat_hash_set<const Node*>& boundary) {
  // The units between the seeds and whatever they depend on in this frame.
  std::vector<Unit> units;
  absl::flat_hash_map<const Node*, int> unit_of;
  auto unit_for = [&](Node* n) -> int {
    auto it = unit_of.find(n);
    if (it != unit_of.end()) return it->second;
    Unit u;
    u.key = n;
    if (IsExit(n) && frames_.frame_of(n->input(0).node) != frame) {
      u.loop_frame = frames_.frame_of(n->input(0).node);
      u.loop = frames_.loop(u.loop_frame);
      u.key = u.loop->exits.front();
      for (Node* e : u.loop->enters) u.inputs.push_back(e->input(0));
      for (Node* e : u.loop->exits) u.outputs.push_back({e, 0});
      auto known = unit_of.find(u.key);
      if (known != unit_of.end()) {
        for (Node* e : u.loop->exits) unit_of[e] = known->second;
        return known->second;
      }
    } else {
      if (!boundary.contains(n)) u.inputs = n->inputs();
      for (int i = 0; i < n->num_outputs(); ++i) u.outputs.push_back({n, i});
    }
    units.push_back(std::move(u));
    const int id = static_cast<int>(units.size()) - 1;
    if (units[id].loop != nullptr) {
      for (Node* e : units[id].loop->exits) unit_of[e] = id;
    }
    unit_of[n] = id;
    return id;
  };
  std::vector<int> stack;
  for (const auto& [t, g] : seeds) {
    const size_t before = units.size();
    const int id = unit_for(t.node);
    if (units.size() > before) stack.push_back(id);
  }
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    for (size_t i = 0; i < units[id].inputs.size(); ++i) {
      Node* in = units[id].inputs[i].node;
      const size_t before = units.size();
      const int producer = unit_for(in);
      if (units.size() > before) stack.push_back(producer);
    }
  }
  // Creation order of the keys is a topological order of the units.
  std::vector<int> order(units.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return units[a].key->id() < units[b].key->id();
  });
  auto input_dtype = [](const Unit& u, size_t i) {
    return u.inputs[i].node->output_dtype(u.inputs[i].index);
  };
  // Reachable from a target along floating-point edges...
  absl::flat_hash_set<NodeOut> target_set(targets.begin(), targets.end());
  std::vector<bool> between(units.size(), false);
  for (int id : order) {
    const Unit& u = units[id];
    bool reached = false;
    for (const NodeOut& o : u.outputs)
      reached = reached || target_set.contains(o);
    for (size_t i = 0; i < u.inputs.size() && !reached; ++i) {
      reached = between[unit_of[u.inputs[i].node]] &&
                CarriesGradient(input_dtype(u, i));
    }
    between[id] = reached;
  }
  // ... with a gradient-carrying path on to a seed.
  std::vector<bool> useful(units.size(), false);
  for (const auto& [t, g] : seeds) {
    if (between[unit_of[t.node]]) useful[unit_of[t.node]] = true;
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (!useful[*it]) continue;
    const Unit& u = units[*it];
    for (size_t i = 0; i < u.inputs.size(); ++i) {
      const int p = unit_of[u.inputs[i].node];
      if (between[p] && CarriesGradient(input_dtype(u, i))) useful[p] = true;
    }
  }
  auto flows = [&](const Unit& u, size_t i) {
    return useful[unit_of[u.inputs[i].node]] &&
           CarriesGradient(input_dtype(u, i));
  };
  std::vector<int> pending(units.size(), 0);
  for (int id : order) {
    if (!useful[id]) continue;
    for (size_t i = 0; i < units[id].inputs.size(); ++i) {
      if (flows(units[id], i)) ++pending[unit_of[units[id].inputs[i].node]];
    }
  }

  absl::flat_hash_map<NodeOut, std::vector<NodeOut>> partial;
  absl::flat_hash_map<NodeOut, NodeOut> total;
  for (const auto& [t, g] : seeds) {
    if (useful[unit_of[t.node]]) partial[t].push_back(g);
  }
  auto sum_partials = [&](GradBuilder& b, NodeOut t) -> NodeOut {
    auto done = total.find(t);
    if (done != total.end()) return done->second;
    auto it = partial.find(t);
    NodeOut sum;
    if (it != partial.end()) {
      // Sparse gradients of a tensor outside loops stay sparse
      // (gradients.h, SparseGradient).
      if (depth() == 0) sum = b.AddSparse(it->second);
      if (sum.node == nullptr) sum = b.AddN(it->second);
    }
    total[t] = sum;
    return sum;
  };
  std::vector<int> ready;
  for (int id : order) {
    if (useful[id] && pending[id] == 0) ready.push_back(id);
  }
  const GradientRegistry& registry = GradientRegistry::Global();
  while (!ready.empty()) {
    const int id = ready.back();
    ready.pop_back();
    const Unit& u = units[id];
    Node* n = u.key;
    GradBuilder b(graph_, n, StrCat(scope_, "/", n->name()), this);
    Grads dy(u.outputs.size());
    bool any = false;
    for (size_t i = 0; i < u.outputs.size(); ++i) {
      dy[i] = sum_partials(b, u.outputs[i]);
      any = any || dy[i].node != nullptr;
    }
    Grads dx;
    const bool stop = u.loop == nullptr && boundary.contains(n);
    if (any && !u.inputs.empty() && !stop) {
      if (u.loop != nullptr) {
        RN_ASSIGN_OR_RETURN(dx, LoopGrad(u, dy));
      } else {
        const GradientRegistry::Entry* entry = registry.Find(n->op());
        if (entry == nullptr) {
          return AttachNode(
              absl::UnimplementedError(
                  StrCat("grad: op '", n->op(), "' has no gradient (node '",
                         n->name(), "' lies between y and x)")),
              n->name(), n->span());
        }
        if (entry->fn) dx = entry->fn(b, dy);
      }
    }
    if (!b.status().ok()) {
      return AttachNode(
          absl::Status(b.status().code(),
                       StrCat("grad: while differentiating ", n->op(), " '",
                              n->name(), "': ", b.status().message())),
          n->name(), n->span());
    }
    for (size_t i = 0; i < u.inputs.size(); ++i) {
      if (!flows(u, i)) continue;
      const NodeOut in = u.inputs[i];
      if (i < dx.size() && dx[i].node != nullptr) partial[in].push_back(dx[i]);
      if (--pending[unit_of[in.node]] == 0) ready.push_back(unit_of[in.node]);
    }
  }

  std::vector<NodeOut> result;
  for (const NodeOut& x : targets) {
    GradBuilder b(graph_, x.node, scope_, this);
    auto known = unit_of.find(x.node);
    NodeOut g = known != unit_of.end() && useful[known->second]
                    ? sum_partials(b, x)
                    : NodeOut{};
    if (g.node == nullptr) g = b.ZerosLike(x);
    RN_RETURN_IF_ERROR(b.status());
    result.push_back(g);
  }
  return result;
}

// A gradient through an in-graph loop reads the forward loop's values back
// from stacks, and a pop has no gradient: differentiating such a gradient
// again with respect to what the stacks hold (a second order through the
// loop) would silently miss that dependence and give 0. Refused when y
// pops a stack that some x flows into.
absl::Status RefuseSecondOrderThroughLoops(const Graph& graph, NodeOut y,
                                           absl::Span<const NodeOut> xs) {
  const Node* pop = nullptr;
  absl::flat_hash_set<const Node*> seen;
  std::vector<const Node*> stack = {y.node};
  while (!stack.empty() && pop == nullptr) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (n->op() == "stack_pop") pop = n;
    for (const NodeOut& in : n->inputs()) stack.push_back(in.node);
    for (const Node* c : n->control_inputs()) stack.push_back(c);
  }
  if (pop == nullptr) return absl::OkStatus();
  absl::flat_hash_map<const Node*, std::vector<const Node*>> consumers;
  for (const Node* n : graph.nodes()) {
    for (const NodeOut& in : n->inputs()) consumers[in.node].push_back(n);
  }
  seen.clear();
  for (const NodeOut& x : xs) {
    if (x.node != nullptr) stack.push_back(x.node);
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (n->op() == "stack_push") {
      return AttachNode(
          absl::UnimplementedError(
              "grad: y is (or depends on) a gradient through an in-graph "
              "loop, and differentiating it again with respect to what flows "
              "through that loop (a second-order gradient through a loop) is "
              "not supported yet; unroll the loop (a host `for`), or take the "
              "second derivative by finite differences"),
          pop->name(), pop->span());
    }
    auto c = consumers.find(n);
    if (c == consumers.end()) continue;
    for (const Node* next : c->second) stack.push_back(next);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<NodeOut>> AddGradients(
    Graph* graph, NodeOut y, absl::Span<const NodeOut> xs,
    const GradientOptions& options) {
  if (y.node == nullptr) return absl::InvalidArgumentError("grad: no y");
  if (!CarriesGradient(y.node->output_dtype(y.index))) {
    return absl::InvalidArgumentError(
        StrCat("grad: y must be a floating-point tensor, got ",
               y.node->output(y.index).ToString()));
  }
  RN_ASSIGN_OR_RETURN(FrameMap frames, FrameMap::Build(*graph));
  for (const NodeOut& t : xs) {
    if (t.node != nullptr && !frames.frame_of(t.node).empty()) {
      return AttachNode(absl::InvalidArgumentError(StrCat(
                            "grad: '", t.node->name(),
                            "' is inside a loop; differentiate with respect "
                            "to values outside it")),
                        t.node->name(), t.node->span());
    }
  }
  if (!frames.frame_of(y.node).empty()) {
    return absl::InvalidArgumentError(
        StrCat("grad: y ('", y.node->name(), "') is inside a loop"));
  }
  RN_RETURN_IF_ERROR(RefuseSecondOrderThroughLoops(*graph, y, xs));
  Backprop backprop(graph, std::move(frames), options.scope);
  GradBuilder seed(graph, y.node, options.scope, &backprop);
  NodeOut ones = seed.Op("ones_like", {y});
  RN_RETURN_IF_ERROR(seed.status());
  std::vector<NodeOut> targets(xs.begin(), xs.end());
  return backprop.Walk({{y, ones}}, targets, "", {});
}

}  // namespace runnel
