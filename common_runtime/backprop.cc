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
#include "common_runtime/placer.h"
#include "framework/device_spec.h"
#include "framework/recompute_plan.h"

namespace runnel {
namespace {

bool CarriesGradient(DType d) { return IsFloating(d); }

bool IsInvariant(const Node* enter) {
  absl::StatusOr<bool> c =
      GetAttrOr<bool>(enter->attrs(), "is_constant", false);
  return c.ok() && *c;
}

// The `checkpoint = k` a script gave a loop (on its counter's enter); 0.
int64_t CheckpointOf(const Node& counter_enter) {
  absl::StatusOr<int64_t> k =
      GetAttrOr<int64_t>(counter_enter.attrs(), "_checkpoint", 0);
  return k.ok() ? *k : 0;
}

// Whether a script asked a loop to keep its saved values in host memory
// (`swap_memory = true`, on its counter's enter).
bool SwapAskedOf(const Node& counter_enter) {
  absl::StatusOr<bool> swap =
      GetAttrOr<bool>(counter_enter.attrs(), "_swap_memory", false);
  return swap.ok() && *swap;
}

// Whether a node was asked onto a CPU (a `device` block).
bool AskedOntoCpu(const Node& n) {
  absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(n.requested_device());
  return spec.ok() && spec->type == kDeviceCpu;
}

// The nodes that `outputs` depend on, through data and control edges.
absl::flat_hash_set<const Node*> Upstream(const std::vector<NodeOut>& outputs) {
  absl::flat_hash_set<const Node*> seen;
  std::vector<const Node*> stack;
  for (const NodeOut& o : outputs) stack.push_back(o.node);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    for (const NodeOut& in : n->inputs()) stack.push_back(in.node);
    for (const Node* c : n->control_inputs()) stack.push_back(c);
  }
  return seen;
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

// A forward value of a loop body that the backward loop pops. Where it is
// pushed is decided once the backward body is built (Backprop::Save): by
// the forward loop, or by a recomputation in the backward loop.
struct Popped {
  NodeOut v;
  Node* stack = nullptr;  // its stack_new, in the frame around the loop
  Node* pop = nullptr;
  std::vector<Node*> reads;  // recomputations' reads that keep it
};

struct Level {
  std::string frame;  // the forward loop's frame ("" at level 0)
  WhileBuilder* loop = nullptr;
  NodeOut index;  // the forward iteration this backward iteration undoes
  std::vector<std::pair<Node*, Node*>> pushes;  // (pop or read, its push)
  absl::flat_hash_map<NodeOut, NodeOut> pops;
  std::vector<Popped> popped;
  absl::flat_hash_map<NodeOut, size_t> popped_at;  // index into popped
};

// The values of a loop body that its backward loop can compute again from
// the loop's state instead of popping them (Backprop::Recompute): all but
// the stored ones, which are pushed at each iteration as without
// recomputation. Stored are a stateful op's values (a random draw, a
// variable's read, a queue's element: computing them again would not give
// the same value) and a nested loop's results.
class RecomputeCone {
 public:
  enum class Kind { kCounter, kVar, kInvariant, kStored, kRecomputed };

  RecomputeCone(const FrameMap& frames, const FrameMap::Loop& loop,
                std::string frame, const std::vector<LoopVar>& vars)
      : frames_(frames),
        loop_(loop),
        frame_(std::move(frame)),
        vars_(vars),
        needed_(vars.size(), false) {
    for (size_t i = 0; i < vars.size(); ++i) var_of_[vars[i].body_in] = i;
  }

  Kind KindOf(const Node* n) const {
    if (n == loop_.counter_body) return Kind::kCounter;
    if (var_of_.contains(n)) return Kind::kVar;
    if (frames_.frame_of(n) != frame_) return Kind::kStored;
    if (IsEnter(n)) return IsInvariant(n) ? Kind::kInvariant : Kind::kStored;
    const bool loop_node =
        IsExit(n) || IsNextIteration(n) || n->op() == "loop_cond" ||
        (IsMerge(n) && IsBackEdge(n, 1)) ||
        (IsSwitch(n) && n->input(1).node->op() == "loop_cond");
    // A read sees its variable as it is when it runs: later, in the
    // backward loop, the loop's own assignments (or others) may have
    // changed it.
    if (n->stateful() || loop_node || n->op() == "read_variable")
      return Kind::kStored;
    return Kind::kRecomputed;
  }
  size_t var_of(const Node* n) const { return var_of_.at(n); }
  const LoopVar& var(size_t i) const { return vars_[i]; }

  // Adds what computing v again needs: the state variables it reads and
  // the stored values, and what computing those variables' next values
  // needs in turn (the recomputation carries them from iteration to
  // iteration).
  void Add(NodeOut v) {
    std::vector<NodeOut> stack = {v};
    while (!stack.empty()) {
      const NodeOut o = stack.back();
      stack.pop_back();
      const Kind kind = KindOf(o.node);
      if (kind == Kind::kStored) {
        if (stored_seen_.insert(o).second) stored_.push_back(o);
        continue;
      }
      if (!seen_.insert(o.node).second) continue;
      if (kind == Kind::kVar) {
        const size_t i = var_of(o.node);
        needed_[i] = true;
        stack.push_back(vars_[i].body_out);
      } else if (kind == Kind::kRecomputed) {
        for (const NodeOut& in : o.node->inputs()) stack.push_back(in);
        for (Node* c : o.node->control_inputs()) {
          if (KindOf(c) == Kind::kRecomputed) stack.push_back({c, 0});
        }
      }
    }
  }
  const std::vector<bool>& needed() const { return needed_; }
  // The stored values that computing again reads.
  const std::vector<NodeOut>& stored() const { return stored_; }

 private:
  const FrameMap& frames_;
  const FrameMap::Loop& loop_;
  std::string frame_;
  const std::vector<LoopVar>& vars_;
  absl::flat_hash_map<const Node*, size_t> var_of_;
  std::vector<bool> needed_;
  absl::flat_hash_set<const Node*> seen_;
  absl::flat_hash_set<NodeOut> stored_seen_;
  std::vector<NodeOut> stored_;
};

class Backprop : public GradContext {
 public:
  Backprop(Graph* graph, FrameMap frames, const GradientOptions& options)
      : graph_(graph),
        frames_(std::move(frames)),
        scope_(options.scope),
        memory_budget_(options.memory_budget),
        swap_rates_(options.swap_rates) {
    levels_.push_back(Level{});
  }

  // The gradients of `targets` when `seeds` (forward tensor, gradient) flow
  // into forward frame `frame`; `boundary` nodes are not walked past. A
  // target no gradient reaches gets zeros like itself, or like
  // `zeros_like[i]` where that is given (a value of the same shape that
  // needs no pop: a loop variable's incoming gradient).
  absl::StatusOr<std::vector<NodeOut>> Walk(
      const std::vector<std::pair<NodeOut, NodeOut>>& seeds,
      const std::vector<NodeOut>& targets, const std::string& frame,
      const absl::flat_hash_set<const Node*>& boundary,
      const std::vector<NodeOut>& zeros_like = {});

  absl::StatusOr<NodeOut> Resolve(NodeOut v) override {
    return ResolveTo(v, depth());
  }
  void Made(Node* n) override {
    if (n->num_inputs() == 0 && n->control_inputs().empty()) {
      depth_[n] = 0;
      return;
    }
    depth_[n] = depth();
    // In a backward loop, a node made of loop invariants alone (entered
    // constants, a shape's fill) would run, live, in every iteration, the
    // one that ends the loop too: its value could start an iteration that
    // never ends. It waits for the iteration's pivot, dead in that one.
    const WhileBuilder* loop = levels_.back().loop;
    if (loop == nullptr || loop->pivot() == nullptr ||
        !n->control_inputs().empty())
      return;
    for (const NodeOut& in : n->inputs()) {
      if (!IsEnter(in.node) || !IsInvariant(in.node)) return;
    }
    graph_->AddControlInput(n, loop->pivot());
  }

 private:
  int depth() const { return static_cast<int>(levels_.size()) - 1; }
  absl::StatusOr<NodeOut> ResolveTo(NodeOut v, int d);
  absl::StatusOr<NodeOut> PopAt(NodeOut v, int e);
  absl::StatusOr<Node*> NewStack(const Node* like, DType dtype, int e);
  // `swap`: stack_push's attr ("": keep the value where it is).
  absl::StatusOr<Node*> PushEach(NodeOut v, Node* stack, int e,
                                 const std::string& swap = "");
  absl::StatusOr<Node*> MakePop(NodeOut handle, NodeOut index,
                                const TensorSpec& spec, const Node* like,
                                bool keep, int depth);
  absl::StatusOr<NodeOut> Save(const Unit& u, const std::vector<LoopVar>& vars,
                               const std::vector<NodeOut>& next, NodeOut trips,
                               NodeOut token, GradBuilder& in);
  // A loop's checkpoint interval: k > 0, or (for a trip count known only
  // at run time) the recompute_plan node that gives it and the split;
  // neither: store, in host memory where `swap` says so (stack_push's
  // attr). With k, `split` > 0: only the first `split` iterations are
  // computed again, the others keep their values (0: all are).
  struct Schedule {
    int64_t k = 0;
    Node* runtime = nullptr;
    std::string swap;
    int64_t split = 0;
  };
  // Whether the budget's plan keeps the loop's saved values (`bytes` per
  // iteration) in host memory: when the session has a device that swaps
  // and that costs less than computing them again (`again`, the share of
  // the iterations the plan would compute again), or nothing else fits.
  bool PlanSwap(const FrameMap::Loop& loop, double bytes, bool fits,
                double again) const;
  absl::StatusOr<Schedule> Plan(const Unit& u, const RecomputeCone& cone,
                                const std::vector<bool>& used);
  absl::StatusOr<NodeOut> Recompute(
      const Unit& u, const std::vector<LoopVar>& vars,
      const RecomputeCone& cone, const std::vector<bool>& used,
      NodeOut k_forward, NodeOut k_backward, NodeOut split, Node* recomputes,
      NodeOut trips, NodeOut token, GradBuilder& in);
  // An i32 constant in the body of `loop` (frame `frame`).
  absl::StatusOr<Node*> LoopConst(const FrameMap::Loop& loop,
                                  const std::string& frame, int64_t v);
  // A node named `name` (made unique) on `like`'s device and span.
  absl::StatusOr<Node*> Like(const Node* like, std::string name, std::string op,
                             std::vector<NodeOut> inputs, AttrMap attrs,
                             std::vector<Node*> control);
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
  int64_t memory_budget_;
  std::optional<CostRates> swap_rates_;
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

absl::StatusOr<Node*> Backprop::Like(const Node* like, std::string name,
                                     std::string op,
                                     std::vector<NodeOut> inputs, AttrMap attrs,
                                     std::vector<Node*> control) {
  NodeSpec spec;
  spec.name = graph_->UniqueName(name);
  spec.op = std::move(op);
  spec.inputs = std::move(inputs);
  spec.attrs = std::move(attrs);
  spec.control_inputs = std::move(control);
  spec.device = like->requested_device();
  spec.span = like->span();
  return graph_->AddNode(std::move(spec));
}

absl::StatusOr<Node*> Backprop::LoopConst(const FrameMap::Loop& loop,
                                          const std::string& frame, int64_t v) {
  return Forward(
      "const", {},
      {{"value", Tensor::ScalarOf(DType::kI32, static_cast<int32_t>(v))}},
      {loop.counter_body}, frame, loop.counter_body);
}

absl::StatusOr<Node*> Backprop::Forward(
    std::string op, std::vector<NodeOut> inputs, AttrMap attrs,
    std::vector<Node*> control, const std::string& frame, const Node* like) {
  RN_ASSIGN_OR_RETURN(
      Node * n, Like(like, StrCat(like->name(), "/", op), op, std::move(inputs),
                     std::move(attrs), std::move(control)));
  frames_.set(n, frame);
  return n;
}

// A new stack for values of level e's loop body, made where an iteration of
// the enclosing loop runs (a stack per iteration of that loop).
absl::StatusOr<Node*> Backprop::NewStack(const Node* like, DType dtype, int e) {
  const std::string& outer = frames_.parent_of(levels_[e].frame);
  std::vector<Node*> once;
  if (e > 1) once.push_back(frames_.loop(outer)->counter_body);
  return Forward("stack_new", {}, {{"elem_dtype", dtype}}, once, outer, like);
}

// Level e's forward loop pushes v, of its body, onto `stack` at each
// iteration's index.
absl::StatusOr<Node*> Backprop::PushEach(NodeOut v, Node* stack, int e,
                                         const std::string& swap) {
  const std::string& frame = levels_[e].frame;
  RN_ASSIGN_OR_RETURN(
      Node * handle, Forward("enter", {{stack, 0}},
                             {{"frame_name", frame}, {"is_constant", true}}, {},
                             frame, v.node));
  AttrMap attrs;
  if (!swap.empty()) attrs["swap"] = swap;
  return Forward("stack_push",
                 {{handle, 0}, {frames_.loop(frame)->counter_body, 0}, v},
                 std::move(attrs), {}, frame, v.node);
}

absl::StatusOr<Node*> Backprop::MakePop(NodeOut handle, NodeOut index,
                                        const TensorSpec& spec,
                                        const Node* like, bool keep,
                                        int depth) {
  AttrMap attrs = {{"elem_dtype", spec.dtype}, {"shape", spec.shape}};
  if (keep) attrs["keep"] = true;
  RN_ASSIGN_OR_RETURN(
      Node * p,
      Like(like, StrCat(scope_, "/", like->name(), keep ? "/read" : "/pop"),
           "stack_pop", {handle, index}, std::move(attrs), {}));
  depth_[p] = depth;
  return p;
}

// The forward value v of the body of level e's loop, read in level e's
// backward loop: pushed at its iteration index (by the forward loop, or by
// a recomputation: Save), popped by the backward loop at the same index.
absl::StatusOr<NodeOut> Backprop::PopAt(NodeOut v, int e) {
  auto it = levels_[e].pops.find(v);
  if (it != levels_[e].pops.end()) return it->second;
  const TensorSpec& spec = v.node->output(v.index);
  RN_ASSIGN_OR_RETURN(Node * stack, NewStack(v.node, spec.dtype, e));
  RN_ASSIGN_OR_RETURN(NodeOut h, ResolveTo({stack, 0}, e));
  RN_ASSIGN_OR_RETURN(Node * p, MakePop(h, levels_[e].index, spec, v.node,
                                        /*keep=*/false, e));
  Level& level = levels_[e];
  level.popped_at[v] = level.popped.size();
  level.popped.push_back({v, stack, p, {}});
  level.pops[v] = {p, 0};
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

// Whether g is the product of two f32 matrices, which matmul_add can add
// into a sum.
bool IsMatrixProduct(NodeOut g) {
  if (g.node->op() != "matmul" || g.node->output_dtype(g.index) != DType::kF32)
    return false;
  for (int i = 0; i < 2; ++i) {
    const NodeOut x = g.node->input(i);
    const Shape& s = x.node->output_shape(x.index);
    if (s.unknown_rank() || s.rank() != 2) return false;
  }
  return true;
}

// The op that adds a row-scattering gradient op's rows (its inputs 1 and
// 2, with its attributes) into a sum in place; nullptr for other ops.
const char* RowsAddedInPlace(const std::string& grad_op) {
  if (grad_op == "dynamic_index_grad") return "dynamic_index_add";
  if (grad_op == "gather_grad") return "gather_grad_add";
  return nullptr;
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
  // A loop that may recompute carries a token from each backward
  // iteration's recomputation to the next one's (Recompute).
  const bool may_recompute =
      memory_budget_ > 0 || CheckpointOf(*loop.counter_enter) > 0;
  if (may_recompute) {
    init.push_back(trips);
    shapes.push_back(std::nullopt);
  }

  const std::string frame =
      graph_->UniqueName(StrCat(scope_, "/", u.loop_frame, "/grad"));
  // A loop that may recompute runs few backward iterations at once: each
  // holds the values it popped until its gradient is done, which the
  // budget's plan counts (kIterationsInFlight).
  WhileBuilder wb(
      graph_, MakerAt(d + 1), [&](NodeOut v) { return ResolveTo(v, d); }, frame,
      frame, loop.counter_exit->span(),
      may_recompute ? static_cast<int>(kIterationsInFlight) : 32);
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> top, wb.Begin(init, shapes, {}));
  Level level;
  level.frame = u.loop_frame;
  level.loop = &wb;
  levels_.push_back(std::move(level));
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
  // A variable the body never reads gets zeros like its incoming
  // gradient, which needs no pop of the variable.
  std::vector<NodeOut> zeros_like;
  for (size_t k = 0; k < carried.size(); ++k) {
    seeds.push_back({carried[k]->body_out, body[k + 1]});
    targets.push_back({carried[k]->body_in, 0});
    zeros_like.push_back(body[k + 1]);
  }
  for (Node* enter : invariants) targets.push_back({enter, 0});
  for (const LoopVar& var : vars) boundary.insert(var.body_in);
  for (Node* enter : loop.enters) boundary.insert(enter);
  boundary.insert(loop.counter_body);
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> step,
                      Walk(seeds, targets, u.loop_frame, boundary, zeros_like));
  std::vector<NodeOut> next;
  for (size_t k = 0; k < carried.size(); ++k) next.push_back(step[k]);
  for (size_t j = 0; j < invariants.size(); ++j) {
    const NodeOut sum = body[carried.size() + j + 1];
    const NodeOut g = step[carried.size() + j];
    // The gradient of a row read x[i] (or of rows gathered, an embedding's
    // lookup in a recurrent step) is a zero tensor shaped like x with dy
    // at i: add dy into those rows of the sum instead (in place), so a scan
    // over T rows costs O(T * row) backwards, not O(T^2 * row), and a
    // lookup no table-sized gradient an iteration.
    const DType d = g.node->output_dtype(g.index);
    const char* adds = RowsAddedInPlace(g.node->op());
    if (adds != nullptr && (d == DType::kF32 || d == DType::kF64)) {
      next.push_back(in.Op(adds, {sum, g.node->input(1), g.node->input(2)},
                           g.node->attrs()));
    } else if (IsMatrixProduct(g)) {
      // A weight's gradient (h^T dz in a recurrent step): the sgemm adds
      // it into the sum, instead of writing it for an add to read.
      next.push_back(in.Op("matmul_add",
                           {sum, g.node->input(0), g.node->input(1)},
                           g.node->attrs()));
    } else {
      next.push_back(in.Add(sum, g));
    }
  }
  RN_RETURN_IF_ERROR(in.status());
  RN_ASSIGN_OR_RETURN(
      NodeOut token,
      Save(u, vars, next, trips, may_recompute ? body.back() : NodeOut{}, in));
  if (may_recompute) next.push_back(token);
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
  const absl::flat_hash_set<const Node*> used = Upstream(exits);
  std::vector<Node*> pushes;
  absl::flat_hash_set<Node*> taken;
  for (auto [pop, push] : done.pushes) {
    if (used.contains(pop) && taken.insert(push).second) pushes.push_back(push);
  }
  if (!pushes.empty()) {
    RN_ASSIGN_OR_RETURN(Node * trigger,
                        Forward("control_trigger", {}, {}, pushes, u.loop_frame,
                                loop.counter_next));
    graph_->AddControlInput(loop.counter_next, trigger);
  }
  return absl::OkStatus();
}

// Once the backward body of the loop at the deepest level is built: how the
// values it pops reach their stacks. Without recomputation the forward loop
// pushes each at every iteration. With it (the loop's `checkpoint = k`, or
// the plan for the memory budget) the forward loop pushes only the state
// every k iterations and the stored values, and each backward iteration
// first computes again the values it pops (Recompute). Returns the token's
// next value (`token` when there is no token or nothing recomputes).
absl::StatusOr<NodeOut> Backprop::Save(const Unit& u,
                                       const std::vector<LoopVar>& vars,
                                       const std::vector<NodeOut>& next,
                                       NodeOut trips, NodeOut token,
                                       GradBuilder& in) {
  using Kind = RecomputeCone::Kind;
  const int e = depth();
  const FrameMap::Loop& loop = *u.loop;
  const std::string& frame = levels_[e].frame;
  RecomputeCone cone(frames_, loop, frame, vars);
  // A gradient function may pop a value it then does not use (for an
  // input that needs no gradient): only the pops the backward body's
  // results need are computed again. (Without recomputation, OrderPushes
  // leaves the other pushes out.)
  std::vector<bool> used(levels_[e].popped.size(), true);
  bool any = false;
  if (token.node != nullptr) {
    const absl::flat_hash_set<const Node*> needed = Upstream(next);
    for (size_t i = 0; i < used.size(); ++i) {
      const Popped& p = levels_[e].popped[i];
      used[i] = needed.contains(p.pop);
      if (!used[i] || cone.KindOf(p.v.node) == Kind::kStored) continue;
      cone.Add(p.v);
      any = true;
    }
  }
  Schedule plan;
  if (SwapAskedOf(*loop.counter_enter)) {
    plan.swap = "asked";
  } else if (any) {
    plan.k = CheckpointOf(*loop.counter_enter);
    if (plan.k == 0) {
      RN_ASSIGN_OR_RETURN(plan, Plan(u, cone, used));
    }
  }
  NodeOut token_next = token;
  const bool recomputing = plan.k > 0 || plan.runtime != nullptr;
  // Whether some iterations keep their values (a split, or a plan made at
  // run time, which may keep everything).
  const bool keeps = plan.runtime != nullptr || plan.split > 0;
  // In the forward body: whether the iteration recomputes (k != 0, and
  // the counter below the split when there is one).
  Node* recomputes = nullptr;
  if (recomputing) {
    NodeOut k_forward, k_backward, split_forward, split_backward;
    if (plan.runtime != nullptr) {
      for (int out : {0, 1}) {
        RN_ASSIGN_OR_RETURN(
            Node * in_loop,
            Forward("enter", {{plan.runtime, out}},
                    {{"frame_name", frame}, {"is_constant", true}}, {}, frame,
                    loop.counter_body));
        (out == 0 ? k_forward : split_forward) = {in_loop, 0};
      }
      k_backward = {plan.runtime, 0};
      split_backward = {plan.runtime, 1};
    } else {
      RN_ASSIGN_OR_RETURN(Node * k, LoopConst(loop, frame, plan.k));
      k_forward = {k, 0};
      k_backward = in.Scalar(static_cast<double>(plan.k), DType::kI32);
      if (plan.split > 0) {
        RN_ASSIGN_OR_RETURN(Node * sp, LoopConst(loop, frame, plan.split));
        split_forward = {sp, 0};
        split_backward =
            in.Scalar(static_cast<double>(plan.split), DType::kI32);
      }
    }
    RN_ASSIGN_OR_RETURN(Node * zero, LoopConst(loop, frame, 0));
    RN_ASSIGN_OR_RETURN(recomputes, Forward("not_equal", {k_forward, {zero, 0}},
                                            {}, {}, frame, loop.counter_body));
    if (keeps) {
      RN_ASSIGN_OR_RETURN(
          Node * below, Forward("less", {{loop.counter_body, 0}, split_forward},
                                {}, {}, frame, loop.counter_body));
      RN_ASSIGN_OR_RETURN(
          recomputes, Forward("logical_and", {{recomputes, 0}, {below, 0}}, {},
                              {}, frame, loop.counter_body));
    }
    RN_ASSIGN_OR_RETURN(
        token_next, Recompute(u, vars, cone, used, k_forward, k_backward,
                              split_backward, recomputes, trips, token, in));
  }
  // What is not computed again, the forward loop pushes; where some
  // iterations keep their values, what could be is pushed by those (the
  // false branch of `recomputes`).
  Level& level = levels_[e];
  for (size_t i = 0; i < level.popped.size(); ++i) {
    const Popped& p = level.popped[i];
    NodeOut v = p.v;
    if (recomputing && cone.KindOf(v.node) != Kind::kStored) {
      if (!keeps || !used[i]) continue;
      RN_ASSIGN_OR_RETURN(Node * sw, Forward("switch", {v, {recomputes, 0}}, {},
                                             {}, frame, v.node));
      v = {sw, 0};
    }
    RN_ASSIGN_OR_RETURN(Node * push, PushEach(v, p.stack, e, plan.swap));
    level.pushes.push_back({p.pop, push});
    for (Node* r : p.reads) level.pushes.push_back({r, push});
  }
  return token_next;
}

// The checkpoint interval for the memory budget: 0 (store everything) when
// the stacks fit, else the plan that computes again fewest iterations
// (PlanCheckpoints: the first `split` of them, the others keep their
// values), or swap (PlanSwap) when that costs less; an error naming the
// loop when even that does not fit, or when the saved values' sizes or
// (for a loop without a trip count, a `while`) the number of iterations
// are known only at run time. When the trip count is a tensor (a `for`
// over a range or a tensor, a scan), a recompute_plan node makes the same
// choice at run time.
absl::StatusOr<Backprop::Schedule> Backprop::Plan(
    const Unit& u, const RecomputeCone& cone, const std::vector<bool>& used) {
  const FrameMap::Loop& loop = *u.loop;
  const Node* site = loop.counter_exit;
  auto refuse = [&](std::string message) {
    return AttachNode(absl::ResourceExhaustedError(std::move(message)),
                      site->name(), site->span());
  };
  const std::string how =
      "choose its interval (k near the square root of the iterations) with "
      "`scan(..., checkpoint = k)` or `loop ... with checkpoint = k { }`";
  LoopStackSizes sizes;
  sizes.trips = GetAttrOr<int64_t>(loop.counter_enter->attrs(), "_trips", -1)
                    .value_or(-1);
  std::string unknown;
  auto add = [&](const TensorSpec& spec, const Node* n, int64_t* sum) {
    const int64_t b = spec.StaticBytes();
    if (b < 0 && unknown.empty())
      unknown = StrCat("'", n->name(), "' (", spec.ToString(), ")");
    *sum += std::max<int64_t>(b, 0);
  };
  // A variable's read is the variable's own buffer at every iteration,
  // unless the loop assigns to variables.
  bool assigns = false;
  for (const Node* n : graph_->nodes()) {
    if (n->stateful() && frames_.frame_of(n) == levels_[depth()].frame &&
        (n->op().rfind("assign", 0) == 0 || n->op().rfind("scatter_", 0) == 0))
      assigns = true;
  }
  auto costs = [&](NodeOut v) {
    return assigns || v.node->op() != "read_variable";
  };
  absl::flat_hash_set<NodeOut> counted;
  const std::vector<Popped>& popped = levels_[depth()].popped;
  for (size_t i = 0; i < popped.size(); ++i) {
    const Popped& p = popped[i];
    if (!used[i]) continue;
    const RecomputeCone::Kind kind = cone.KindOf(p.v.node);
    counted.insert(p.v);
    // An invariant is the same tensor at every index: it costs nothing.
    if (kind == RecomputeCone::Kind::kInvariant || !costs(p.v)) continue;
    add(p.v.node->output(p.v.index), p.v.node,
        kind == RecomputeCone::Kind::kStored ? &sizes.stored
                                             : &sizes.recomputed);
  }
  for (const NodeOut& v : cone.stored()) {
    if (counted.insert(v).second && costs(v))
      add(v.node->output(v.index), v.node, &sizes.stored);
  }
  for (size_t i = 0; i < cone.needed().size(); ++i) {
    if (cone.needed()[i])
      add(cone.var(i).merge->output(0), cone.var(i).merge, &sizes.state);
  }
  const std::string budget = StrCat("grad: --memory-budget ", memory_budget_,
                                    ": the gradient of this loop ");
  if (!unknown.empty()) {
    return refuse(StrCat(budget, "saves ", unknown,
                         ", whose size is known only at run time; ", how));
  }
  const double bytes = static_cast<double>(sizes.recomputed + sizes.stored);
  if (sizes.trips >= 0) {
    const CheckpointPlan plan = PlanCheckpoints(sizes, memory_budget_);
    const double again = static_cast<double>(plan.split) /
                         static_cast<double>(std::max<int64_t>(sizes.trips, 1));
    if (plan.k > 0 &&
        PlanSwap(loop, bytes, plan.held <= memory_budget_, again)) {
      return Schedule{0, nullptr, "planned"};
    }
    if (plan.held > memory_budget_) {
      return refuse(PlanDoesNotFit(sizes, plan, memory_budget_));
    }
    return Schedule{plan.k, nullptr, "",
                    plan.split < sizes.trips ? plan.split : 0};
  }
  // The trip count is known only at run time, but the costs of both grow
  // with it alike.
  if (PlanSwap(loop, bytes, true, 1.0)) {
    return Schedule{0, nullptr, "planned"};
  }
  for (Node* enter : loop.enters) {
    if (!enter->attrs().contains("_trip_count")) continue;
    RN_ASSIGN_OR_RETURN(
        Node * runtime,
        Forward("recompute_plan", {enter->input(0)},
                {{"budget", memory_budget_},
                 {"recomputed", sizes.recomputed},
                 {"stored", sizes.stored},
                 {"state", sizes.state}},
                {}, frames_.parent_of(levels_[depth()].frame), site));
    return Schedule{0, runtime, ""};
  }
  return refuse(StrCat(budget,
                       "runs a number of iterations known only when it "
                       "ends (a while loop), so its stacks cannot be "
                       "planned; ",
                       how));
}

bool Backprop::PlanSwap(const FrameMap::Loop& loop, double bytes, bool fits,
                        double again) const {
  if (!swap_rates_ || AskedOntoCpu(*loop.counter_enter)) return false;
  if (!fits) return true;
  // One more forward iteration: the body's nodes on the device's rates.
  const std::string& frame = levels_[depth()].frame;
  double forward_s = 0;
  for (const Node* n : graph_->nodes()) {
    if (frames_.frame_of(n) == frame) {
      forward_s += EstimatedSeconds(*n, *swap_rates_, /*unknown_dim=*/32);
    }
  }
  return SwapCostsLess(bytes, forward_s * again,
                       swap_rates_->transfer_bytes_per_s);
}

// Recomputation with interval k. The forward loop saves the state that the
// values popped need (the cone's variables) at iterations 0, k, 2k, ...
// below the split (`split`, a multiple of k; a null `split`: every
// iteration), and from the split on pushes the values themselves, as
// without recomputation. The backward iteration that undoes the last
// iteration j of a segment [s, j] (j = s + k - 1, or the loop's or the
// split's last) runs a loop of j - s + 1
// iterations from the state saved at s: a copy of the forward body that
// pushes the popped values at their indices; the other backward iterations
// run it for no iteration. Their pops wait for it, and each iteration's
// copy waits for the last one's (the token), so a segment's pushes are
// done before its pops, which free them: the stacks hold one segment.
// The copy computes the same values from the same inputs with the same
// kernels, so the gradient is the same, bit for bit. k is a tensor:
// `k_forward` in the forward body, `k_backward` in the backward one; a
// constant, or a plan made at run time, whose 0 means that the forward
// loop keeps everything and nothing is computed again (`recomputes`, in
// the forward body, is k != 0 and the counter below the split).
absl::StatusOr<NodeOut> Backprop::Recompute(
    const Unit& u, const std::vector<LoopVar>& vars, const RecomputeCone& cone,
    const std::vector<bool>& used, NodeOut k_forward, NodeOut k_backward,
    NodeOut split, Node* recomputes, NodeOut trips, NodeOut token,
    GradBuilder& in) {
  using Kind = RecomputeCone::Kind;
  const int e = depth();
  const FrameMap::Loop& loop = *u.loop;
  const std::string& frame = levels_[e].frame;
  const SourceSpan span = loop.counter_exit->span();
  // The segment of this backward iteration's index j: its start s, and the
  // iterations to compute again (0 unless j ends it, or when k is 0: a plan
  // made at run time that keeps everything).
  const NodeOut j = levels_[e].index;
  const NodeOut one = in.Scalar(1, DType::kI32);
  const NodeOut zero = in.Scalar(0, DType::kI32);
  const NodeOut every = in.Op("maximum", {k_backward, one});
  const NodeOut r = in.Op("mod", {j, every});
  const NodeOut seg = in.Sub(j, r);
  // The last iteration computed again: the loop's, or the split's (which
  // is at most the loop's).
  const NodeOut end = split.node == nullptr ? trips : split;
  const NodeOut ends =
      in.Op("logical_or", {in.Op("equal", {r, in.Sub(every, one)}),
                           in.Op("equal", {j, in.Sub(end, one)})});
  NodeOut recomputing = in.Op("not_equal", {k_backward, zero});
  if (split.node != nullptr) {
    recomputing =
        in.Op("logical_and", {recomputing, in.Op("less", {j, split})});
  }
  const NodeOut n = in.Mul(in.Mul(in.Add(r, one), in.Cast(ends, DType::kI32)),
                           in.Cast(recomputing, DType::kI32));
  RN_RETURN_IF_ERROR(in.status());

  // The forward loop saves the state at every k-th iteration; the backward
  // iteration reads (keeps) the one at s.
  RN_ASSIGN_OR_RETURN(Node * zero_f, LoopConst(loop, frame, 0));
  RN_ASSIGN_OR_RETURN(Node * one_f, LoopConst(loop, frame, 1));
  RN_ASSIGN_OR_RETURN(Node * every_f,
                      Forward("maximum", {k_forward, {one_f, 0}}, {}, {}, frame,
                              loop.counter_body));
  RN_ASSIGN_OR_RETURN(Node * phase,
                      Forward("mod", {{loop.counter_body, 0}, {every_f, 0}}, {},
                              {}, frame, loop.counter_body));
  RN_ASSIGN_OR_RETURN(Node * at_start,
                      Forward("equal", {{phase, 0}, {zero_f, 0}}, {}, {}, frame,
                              loop.counter_body));
  RN_ASSIGN_OR_RETURN(
      Node * saves, Forward("logical_and", {{at_start, 0}, {recomputes, 0}}, {},
                            {}, frame, loop.counter_body));
  std::vector<size_t> state;  // indices into vars
  std::vector<NodeOut> reads;
  std::vector<std::optional<Shape>> shapes;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!cone.needed()[i]) continue;
    const LoopVar& var = vars[i];
    const TensorSpec& spec = var.merge->output(0);
    RN_ASSIGN_OR_RETURN(Node * stack, NewStack(var.body_in, spec.dtype, e));
    RN_ASSIGN_OR_RETURN(
        Node * sw, Forward("switch", {{var.body_in, 0}, {saves, 0}}, {}, {},
                           frame, var.body_in));
    RN_ASSIGN_OR_RETURN(Node * push, PushEach({sw, 1}, stack, e));
    RN_ASSIGN_OR_RETURN(NodeOut h, ResolveTo({stack, 0}, e));
    RN_ASSIGN_OR_RETURN(Node * read,
                        MakePop(h, seg, spec, var.body_in, /*keep=*/true, e));
    levels_[e].pushes.push_back({read, push});
    state.push_back(i);
    reads.push_back({read, 0});
    shapes.push_back(spec.shape);
  }

  const std::string rframe =
      graph_->UniqueName(StrCat(scope_, "/", u.loop_frame, "/recompute"));
  WhileBuilder wr(
      graph_, MakerAt(e + 1), [&](NodeOut v) { return ResolveTo(v, e); },
      rframe, rframe, span);
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> top,
                      wr.Begin(reads, shapes, {token.node}));
  auto make = [&](std::string op, std::vector<NodeOut> inputs, AttrMap attrs,
                  std::vector<Node*> control,
                  const Node* like) -> absl::StatusOr<Node*> {
    RN_ASSIGN_OR_RETURN(
        Node * made,
        Like(like, StrCat(rframe, "/", like->name()), std::move(op),
             std::move(inputs), std::move(attrs), std::move(control)));
    depth_[made] = e + 1;
    return made;
  };
  RN_ASSIGN_OR_RETURN(NodeOut n_in, wr.EnterInvariant(n));
  RN_ASSIGN_OR_RETURN(Node * more,
                      make("less", {top[0], n_in}, {}, {}, loop.counter_exit));
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> body, wr.Condition({more, 0}));
  RN_ASSIGN_OR_RETURN(NodeOut seg_in, wr.EnterInvariant(seg));
  RN_ASSIGN_OR_RETURN(
      Node * idx, make("add", {body[0], seg_in}, {}, {}, loop.counter_body));

  // The copy of the body, value by value.
  absl::flat_hash_map<size_t, NodeOut> state_in;  // var -> value in the copy
  for (size_t p = 0; p < state.size(); ++p) state_in[state[p]] = body[p + 1];
  absl::flat_hash_map<const Node*, Node*> copies;
  std::function<absl::StatusOr<NodeOut>(NodeOut)> again =
      [&](NodeOut v) -> absl::StatusOr<NodeOut> {
    switch (cone.KindOf(v.node)) {
      case Kind::kCounter:
        return NodeOut{idx, 0};
      case Kind::kVar:
        return state_in.at(cone.var_of(v.node));
      case Kind::kInvariant: {
        RN_ASSIGN_OR_RETURN(NodeOut outer, ResolveTo(v.node->input(0), e));
        return wr.EnterInvariant(outer);
      }
      case Kind::kStored: {
        RN_RETURN_IF_ERROR(PopAt(v, e).status());
        Popped& p = levels_[e].popped[levels_[e].popped_at.at(v)];
        RN_ASSIGN_OR_RETURN(NodeOut h, ResolveTo({p.stack, 0}, e));
        RN_ASSIGN_OR_RETURN(NodeOut h_in, wr.EnterInvariant(h));
        RN_ASSIGN_OR_RETURN(Node * read,
                            MakePop(h_in, {idx, 0}, v.node->output(v.index),
                                    v.node, /*keep=*/true, e + 1));
        p.reads.push_back(read);
        return NodeOut{read, 0};
      }
      case Kind::kRecomputed:
        break;
    }
    auto it = copies.find(v.node);
    if (it != copies.end()) return NodeOut{it->second, v.index};
    std::vector<NodeOut> inputs;
    for (const NodeOut& x : v.node->inputs()) {
      RN_ASSIGN_OR_RETURN(NodeOut c, again(x));
      inputs.push_back(c);
    }
    std::vector<Node*> control;
    for (Node* c : v.node->control_inputs()) {
      const Kind kind = cone.KindOf(c);
      if (kind == Kind::kCounter) control.push_back(wr.pivot());
      if (kind == Kind::kRecomputed) {
        RN_ASSIGN_OR_RETURN(NodeOut cc, again({c, 0}));
        control.push_back(cc.node);
      }
    }
    if (inputs.empty() && control.empty()) control.push_back(wr.pivot());
    RN_ASSIGN_OR_RETURN(Node * copy,
                        make(v.node->op(), std::move(inputs), v.node->attrs(),
                             std::move(control), v.node));
    copies[v.node] = copy;
    return NodeOut{copy, v.index};
  };

  std::vector<Node*> pushes;
  for (size_t i = 0; i < used.size(); ++i) {
    const NodeOut v = levels_[e].popped[i].v;
    if (!used[i] || cone.KindOf(v.node) == Kind::kStored) continue;
    RN_ASSIGN_OR_RETURN(NodeOut value, again(v));
    RN_ASSIGN_OR_RETURN(NodeOut h,
                        ResolveTo({levels_[e].popped[i].stack, 0}, e));
    RN_ASSIGN_OR_RETURN(NodeOut h_in, wr.EnterInvariant(h));
    RN_ASSIGN_OR_RETURN(Node * push, make("stack_push", {h_in, {idx, 0}, value},
                                          {}, {}, v.node));
    pushes.push_back(push);
  }
  std::vector<NodeOut> next;
  for (size_t i : state) {
    RN_ASSIGN_OR_RETURN(NodeOut value, again(vars[i].body_out));
    next.push_back(value);
  }
  // A push of a value on an untaken branch does not run; the trigger does.
  RN_ASSIGN_OR_RETURN(Node * pushed, make("control_trigger", {}, {}, pushes,
                                          loop.counter_next));
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> exits, wr.Finish(next, {pushed}));
  for (const auto& [v, pop] : levels_[e].pops) {
    graph_->AddControlInput(pop.node, exits[0].node);
  }
  return exits[0];
}

absl::StatusOr<std::vector<NodeOut>> Backprop::Walk(
    const std::vector<std::pair<NodeOut, NodeOut>>& seeds,
    const std::vector<NodeOut>& targets, const std::string& frame,
    const absl::flat_hash_set<const Node*>& boundary,
    const std::vector<NodeOut>& zeros_like) {
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
  for (size_t i = 0; i < targets.size(); ++i) {
    const NodeOut& x = targets[i];
    GradBuilder b(graph_, x.node, scope_, this);
    auto known = unit_of.find(x.node);
    NodeOut g = known != unit_of.end() && useful[known->second]
                    ? sum_partials(b, x)
                    : NodeOut{};
    if (g.node == nullptr) {
      g = b.ZerosLike(i < zeros_like.size() && zeros_like[i].node != nullptr
                          ? zeros_like[i]
                          : x);
    }
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
  Backprop backprop(graph, std::move(frames), options);
  GradBuilder seed(graph, y.node, options.scope, &backprop);
  NodeOut ones = seed.Op("ones_like", {y});
  RN_RETURN_IF_ERROR(seed.status());
  std::vector<NodeOut> targets(xs.begin(), xs.end());
  return backprop.Walk({{y, ones}}, targets, "", {});
}

}  // namespace runnel
