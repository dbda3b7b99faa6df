#include "common_runtime/gradients.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "base/errors.h"
#include "base/strings.h"

namespace runnel {

// ---- GradBuilder ------------------------------------------------------------

GradBuilder::GradBuilder(Graph* graph, const Node* forward, std::string scope,
                         GradContext* context)
    : graph_(graph),
      forward_(forward),
      scope_(std::move(scope)),
      context_(context) {}

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
  if (context_ != nullptr) {
    for (NodeOut& in : inputs) {
      absl::StatusOr<NodeOut> r = context_->Resolve(in);
      if (!r.ok()) {
        Fail(r.status());
        return {};
      }
      in = *r;
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
  if (context_ != nullptr) context_->Made(*node);
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

std::optional<SparseGradient> AsSparseGradient(NodeOut g) {
  if (g.node == nullptr || g.index != 0 || g.node->op() != "gather_grad") {
    return std::nullopt;
  }
  absl::StatusOr<int64_t> axis =
      GetAttrOr<int64_t>(g.node->attrs(), "axis", int64_t{0});
  if (!axis.ok() || *axis != 0) return std::nullopt;
  return SparseGradient{g.node->input(0), g.node->input(1), g.node->input(2)};
}

std::optional<std::vector<int64_t>> SparseRowsShape(const Shape& params) {
  if (params.unknown_rank() || params.rank() == 0) return std::nullopt;
  std::vector<int64_t> rows{-1};
  for (int k = 1; k < params.rank(); ++k) {
    if (params.dim(k) < 0) return std::nullopt;
    rows.push_back(params.dim(k));
  }
  return rows;
}

NodeOut GradBuilder::AddSparse(const std::vector<NodeOut>& terms) {
  if (terms.size() < 2) return {};
  std::vector<SparseGradient> parts;
  for (const NodeOut& t : terms) {
    std::optional<SparseGradient> s = AsSparseGradient(t);
    if (!s || (!parts.empty() && !(s->params == parts[0].params))) return {};
    parts.push_back(*s);
  }
  // Every term's indices and values flattened alike.
  std::optional<std::vector<int64_t>> rows =
      SparseRowsShape(shape(parts[0].params));
  if (!rows) return {};
  NodeOut flat = Const(Tensor::OfDims({-1}));
  NodeOut row_shape = Const(Tensor::OfDims(*rows));
  std::vector<NodeOut> indices, values;
  for (const SparseGradient& s : parts) {
    NodeOut ix = s.indices;
    if (dtype(ix) != DType::kI64) ix = Cast(ix, DType::kI64);
    indices.push_back(Op("reshape", {ix, flat}));
    values.push_back(Op("reshape", {s.values, row_shape}));
  }
  return Op("gather_grad",
            {parts[0].params, Op("concat", indices, {{"axis", int64_t{0}}}),
             Op("concat", values, {{"axis", int64_t{0}}})},
            {{"axis", int64_t{0}}});
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

}  // namespace runnel
