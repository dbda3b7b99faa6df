#include "runtime/gradients.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "runtime/errors.h"
#include "runtime/strings.h"

namespace runnel {

// ---- GradBuilder ------------------------------------------------------------

GradBuilder::GradBuilder(Graph* graph, const Node* forward, std::string scope)
    : graph_(graph), forward_(forward), scope_(std::move(scope)) {}

DType GradBuilder::dtype(NodeOut t) const {
  return t.node == nullptr ? DType::kF32 : t.node->output_dtype(t.index);
}

const Shape& GradBuilder::shape(NodeOut t) const {
  static const Shape* unknown = new Shape(Shape::UnknownRank());
  return t.node == nullptr ? *unknown : t.node->output_shape(t.index);
}

std::vector<NodeOut> GradBuilder::OpN(std::string_view op,
                                      std::vector<NodeOut> inputs,
                                      AttrMap attrs) {
  if (!status_.ok()) return {};
  for (const NodeOut& in : inputs) {
    if (in.node == nullptr) {
      Fail(absl::InternalError(StrCat("the gradient of ", forward_->op(),
                                      " passed a missing ", "tensor to ", op)));
      return {};
    }
  }
  NodeSpec spec;
  spec.name = graph_->UniqueName(StrCat(scope_, "/", op));
  spec.op = std::string(op);
  spec.inputs = std::move(inputs);
  spec.attrs = std::move(attrs);
  spec.device = forward_->requested_device();
  spec.span = forward_->span();
  absl::StatusOr<Node*> node = graph_->AddNode(std::move(spec));
  if (!node.ok()) {
    Fail(node.status());
    return {};
  }
  std::vector<NodeOut> outs;
  for (int i = 0; i < (*node)->num_outputs(); ++i) outs.push_back({*node, i});
  return outs;
}

NodeOut GradBuilder::Op(std::string_view op, std::vector<NodeOut> inputs,
                        AttrMap attrs) {
  std::vector<NodeOut> outs = OpN(op, std::move(inputs), std::move(attrs));
  return outs.empty() ? NodeOut{} : outs[0];
}

NodeOut GradBuilder::Const(Tensor value) {
  return Op("const", {}, {{"value", std::move(value)}});
}

NodeOut GradBuilder::Scalar(double v, DType d) {
  return Const(Tensor::ScalarOf(d, v));
}

NodeOut GradBuilder::SumToLike(NodeOut g, NodeOut like) {
  if (g.node == nullptr) return g;
  const Shape& gs = shape(g);
  const Shape& ls = shape(like);
  if (gs.IsFullyDefined() && gs == ls) return g;
  return Op("sum_to_like", {g, like});
}

NodeOut GradBuilder::BroadcastLike(NodeOut g, NodeOut like) {
  if (g.node == nullptr) return g;
  const Shape& gs = shape(g);
  if (gs.IsFullyDefined() && gs == shape(like)) return g;
  return Op("broadcast_like", {g, like});
}

NodeOut GradBuilder::ReshapeLike(NodeOut g, NodeOut like) {
  if (g.node == nullptr) return g;
  const Shape& ls = shape(like);
  if (shape(g) == ls && ls.IsFullyDefined()) return g;
  if (!ls.unknown_rank()) {
    int unknown = 0;
    std::vector<int64_t> dims;
    for (int i = 0; i < ls.rank(); ++i) {
      dims.push_back(ls.dim(i) < 0 ? -1 : ls.dim(i));
      unknown += ls.dim(i) < 0;
    }
    if (unknown <= 1) {
      return Op("reshape",
                {g, Const(Tensor::FromVector<int64_t>(
                        dims, Shape{static_cast<int64_t>(dims.size())}))});
    }
  }
  return Op("reshape", {g, Op("shape_of", {like})});
}

NodeOut GradBuilder::AddN(const std::vector<NodeOut>& terms) {
  NodeOut sum;
  for (const NodeOut& t : terms) {
    if (t.node == nullptr) continue;
    sum = sum.node == nullptr ? t : Add(sum, t);
  }
  return sum;
}

// ---- registry ---------------------------------------------------------------

GradientRegistry& GradientRegistry::Global() {
  static GradientRegistry* registry = new GradientRegistry;
  return *registry;
}

absl::Status GradientRegistry::Register(std::string op, GradFn fn) {
  if (entries_.contains(op)) {
    return absl::AlreadyExistsError(
        StrCat("a gradient for op '", op, "' is already registered"));
  }
  entries_[std::move(op)] = Entry{std::move(fn)};
  return absl::OkStatus();
}

absl::Status GradientRegistry::RegisterNotDifferentiable(std::string op) {
  return Register(std::move(op), GradFn());
}

const GradientRegistry::Entry* GradientRegistry::Find(
    std::string_view op) const {
  auto it = entries_.find(std::string(op));
  return it == entries_.end() ? nullptr : &it->second;
}

namespace gradients_internal {

Registrar::Registrar(const char* op, GradFn fn) {
  absl::Status s = GradientRegistry::Global().Register(op, std::move(fn));
  if (!s.ok()) {
    fprintf(stderr, "runnel: %s\n", std::string(s.message()).c_str());
    std::abort();
  }
}

Registrar::Registrar(const char* op) : Registrar(op, GradFn()) {}

}  // namespace gradients_internal

// ---- the backward pass
// --------------------------------------------------------

namespace {

bool CarriesGradient(DType d) { return IsFloating(d); }

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

  // The ancestors of y, in creation order, which is a topological order:
  // a node's inputs always exist before it.
  std::vector<Node*> ancestors;
  {
    absl::flat_hash_set<Node*> seen{y.node};
    std::vector<Node*> stack{y.node};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      ancestors.push_back(n);
      for (const NodeOut& in : n->inputs()) {
        if (seen.insert(in.node).second) stack.push_back(in.node);
      }
    }
    std::sort(ancestors.begin(), ancestors.end(),
              [](Node* a, Node* b) { return a->id() < b->id(); });
  }

  // Whether consumer's input i carries a gradient from a node of `set`.
  auto carries = [](const absl::flat_hash_set<Node*>& set, const Node* consumer,
                    int i) {
    return set.contains(consumer->input(i).node) &&
           CarriesGradient(consumer->input_dtype(i));
  };
  // Of the ancestors, the ones a gradient flows through: reachable from an x
  // along floating-point edges...
  absl::flat_hash_set<Node*> between;
  {
    absl::flat_hash_set<Node*> sources;
    for (const NodeOut& x : xs) {
      if (x.node != nullptr) sources.insert(x.node);
    }
    for (Node* n : ancestors) {
      bool reached = sources.contains(n);
      for (int i = 0; i < n->num_inputs() && !reached; ++i) {
        reached = carries(between, n, i);
      }
      if (reached) between.insert(n);
    }
  }
  // ... with a gradient-carrying path on to y.
  {
    absl::flat_hash_set<Node*> useful;
    if (between.contains(y.node)) useful.insert(y.node);
    for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
      Node* n = *it;
      if (!useful.contains(n)) continue;
      for (int i = 0; i < n->num_inputs(); ++i) {
        if (carries(between, n, i)) useful.insert(n->input(i).node);
      }
    }
    between = std::move(useful);
  }
  auto flows = [&](const Node* consumer, int i) {
    return carries(between, consumer, i);
  };

  // How many gradient-carrying edges still have to report to each node.
  absl::flat_hash_map<Node*, int> pending;
  for (Node* n : between) {
    for (int i = 0; i < n->num_inputs(); ++i) {
      if (flows(n, i)) ++pending[n->input(i).node];
    }
  }

  absl::flat_hash_map<NodeOut, std::vector<NodeOut>> partial;
  absl::flat_hash_map<NodeOut, NodeOut> total;
  const GradientRegistry& registry = GradientRegistry::Global();

  auto sum_partials = [&](GradBuilder& b, NodeOut t) -> NodeOut {
    auto done = total.find(t);
    if (done != total.end()) return done->second;
    auto it = partial.find(t);
    NodeOut sum = it == partial.end() ? NodeOut{} : b.AddN(it->second);
    total[t] = sum;
    return sum;
  };

  std::vector<Node*> ready;
  if (between.contains(y.node)) {
    GradBuilder seed(graph, y.node, options.scope);
    partial[y].push_back(seed.Op("ones_like", {y}));
    if (!seed.status().ok()) return seed.status();
    ready.push_back(y.node);
  }
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    GradBuilder b(graph, n, StrCat(options.scope, "/", n->name()));

    Grads dy(n->num_outputs());
    bool any = false;
    for (int i = 0; i < n->num_outputs(); ++i) {
      dy[i] = sum_partials(b, {n, i});
      any = any || dy[i].node != nullptr;
    }
    Grads dx;
    if (any && n->num_inputs() > 0) {
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
    if (!b.status().ok()) {
      return AttachNode(
          absl::Status(b.status().code(),
                       StrCat("grad: while differentiating ", n->op(), " '",
                              n->name(), "': ", b.status().message())),
          n->name(), n->span());
    }
    for (int i = 0; i < n->num_inputs(); ++i) {
      if (!flows(n, i)) continue;
      const NodeOut in = n->input(i);
      if (i < static_cast<int>(dx.size()) && dx[i].node != nullptr) {
        partial[in].push_back(dx[i]);
      }
      if (--pending[in.node] == 0) ready.push_back(in.node);
    }
  }

  std::vector<NodeOut> result;
  for (const NodeOut& x : xs) {
    GradBuilder b(graph, x.node, options.scope);
    NodeOut g = between.contains(x.node) ? sum_partials(b, x) : NodeOut{};
    if (g.node == nullptr) g = b.ZerosLike(x);
    if (!b.status().ok()) return b.status();
    result.push_back(g);
  }
  return result;
}

}  // namespace runnel
