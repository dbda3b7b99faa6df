// Automatic differentiation as a graph-to-graph transformation
// (docs/architecture.md, Autodiff).
//
// AddGradients walks back from `y` to the `xs`, calls each op's gradient
// function and adds the backward nodes to the same graph; gradients that
// meet at one tensor are summed. Nothing runs: the result is a NodeOut per
// x that a Session fetches like any other tensor, so gradients of gradients
// are more of the same.
//
//   Graph g;  ... y depends on w ...
//   std::vector<NodeOut> dw = *AddGradients(&g, y, {w});
//
// Each op family's gradient functions are registered in
// common_runtime/grads/*_grad.cc:
//
//   RUNNEL_REGISTER_GRADIENT("exp", [](GradBuilder& g, const Grads& dy) {
//     return Grads{g.Mul(dy[0], g.y())};
//   });
//
// Ops that are not differentiable (comparisons, argmax, random ops, state
// updates, shape queries) are registered with RUNNEL_NO_GRADIENT: gradients
// stop there, as if the op's outputs were constants. Reaching an op with
// neither is an error naming the node and its source span, never a silent
// zero. Only floating-point tensors carry gradients; integer and bool edges
// are constants.
#ifndef RUNNEL_COMMON_RUNTIME_GRADIENTS_H_
#define RUNNEL_COMMON_RUNTIME_GRADIENTS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common_runtime/cost_model.h"
#include "framework/graph.h"

namespace runnel {

// One gradient per output or input; an empty NodeOut (node == nullptr) means
// "no gradient" (the same as zeros, without building them).
using Grads = std::vector<NodeOut>;

// How backward nodes see forward values: inside the backward loop of a
// loop, a forward value of the loop's body is the one its iteration saved
// on a stack (gradients.cc). Every input of a node a GradBuilder makes goes
// through Resolve, and every node made is reported to Made.
class GradContext {
 public:
  virtual ~GradContext() = default;
  virtual absl::StatusOr<NodeOut> Resolve(NodeOut v) = 0;
  virtual void Made(Node* n) = 0;
};

// Builds the backward nodes of one forward node. Errors are sticky: the
// first failure is kept and later calls return empty NodeOuts, so a gradient
// function reads as straight-line math and AddGradients checks status()
// once.
class GradBuilder {
 public:
  GradBuilder(Graph* graph, const Node* forward, std::string scope,
              GradContext* context = nullptr);

  const Node& node() const { return *forward_; }
  // Forward input `i` and output `i`.
  NodeOut x(int i = 0) const { return forward_->input(i); }
  NodeOut y(int i = 0) const { return {const_cast<Node*>(forward_), i}; }
  DType dtype(NodeOut t) const;
  const Shape& shape(NodeOut t) const;
  template <typename T>
  T attr_or(std::string_view name, T fallback) const {
    absl::StatusOr<T> v = GetAttrOr<T>(forward_->attrs(), name, fallback);
    return v.ok() ? *v : fallback;
  }

  NodeOut Op(std::string_view op, std::vector<NodeOut> inputs,
             AttrMap attrs = {});
  std::vector<NodeOut> OpN(std::string_view op, std::vector<NodeOut> inputs,
                           AttrMap attrs = {});
  NodeOut Const(Tensor value);
  // A scalar of `dtype` (floating or integer) holding `v`.
  NodeOut Scalar(double v, DType dtype);
  // A scalar of t's dtype.
  NodeOut ScalarLike(double v, NodeOut t) { return Scalar(v, dtype(t)); }

  NodeOut Add(NodeOut a, NodeOut b) { return Op("add", {a, b}); }
  NodeOut Sub(NodeOut a, NodeOut b) { return Op("sub", {a, b}); }
  NodeOut Mul(NodeOut a, NodeOut b) { return Op("mul", {a, b}); }
  NodeOut Div(NodeOut a, NodeOut b) { return Op("div", {a, b}); }
  NodeOut Neg(NodeOut a) { return Op("neg", {a}); }
  NodeOut Where(NodeOut c, NodeOut a, NodeOut b) {
    return Op("where", {c, a, b});
  }
  NodeOut ZerosLike(NodeOut t) { return Op("zeros_like", {t}); }
  NodeOut Cast(NodeOut t, DType d) { return Op("cast", {t}, {{"dtype", d}}); }
  // g summed back to like's shape (undoes NumPy broadcasting); g itself
  // when both shapes are fully known and equal.
  NodeOut SumToLike(NodeOut g, NodeOut like);
  // g broadcast to like's shape.
  NodeOut BroadcastLike(NodeOut g, NodeOut like);
  // g reshaped to like's shape, keeping what is known of it statically.
  NodeOut ReshapeLike(NodeOut g, NodeOut like);
  // The sum of `terms` (all non-empty), or an empty NodeOut if none.
  NodeOut AddN(const std::vector<NodeOut>& terms);
  // The sum of two or more sparse gradients of one tensor, kept sparse:
  // their indices and values concatenated. Empty when a term is dense or
  // the rows' shape is not known statically.
  NodeOut AddSparse(const std::vector<NodeOut>& terms);

  const absl::Status& status() const { return status_; }
  void Fail(absl::Status s) {
    if (status_.ok()) status_ = std::move(s);
  }

 private:
  Graph* graph_;
  const Node* forward_;
  std::string scope_;
  GradContext* context_;
  absl::Status status_;
};

// dy[i] is the gradient flowing into output i, empty for an output nothing
// differentiated (a function of a multi-output op builds zeros where it
// needs them); at least one is present. The result has one entry per input,
// empty where the input gets no gradient.
using GradFn = std::function<Grads(GradBuilder& g, const Grads& dy)>;

class GradientRegistry {
 public:
  static GradientRegistry& Global();
  // Fails (and keeps the first) when the op already has an entry.
  absl::Status Register(std::string op, GradFn fn);
  absl::Status RegisterNotDifferentiable(std::string op);

  struct Entry {
    GradFn fn;  // empty: not differentiable
  };
  // nullptr when the op has no entry at all.
  const Entry* Find(std::string_view op) const;

 private:
  absl::flat_hash_map<std::string, Entry> entries_;
};

// A sparse gradient (docs/sparse.md): the gradient of gather(params,
// indices) along axis 0 is the node gather_grad(params, indices, values),
// which adds the rows of `values` into zeros shaped like params. That node
// is where the gradient becomes dense, and it runs only when something
// uses it densely; an optimizer reads `indices` and `values` instead and
// updates those rows alone.
struct SparseGradient {
  NodeOut params, indices, values;
};
// The parts of g when g is a sparse gradient.
std::optional<SparseGradient> AsSparseGradient(NodeOut g);
// [-1, row dims...]: the shape that flattens a sparse gradient's values of
// a table shaped `params` to one row per index; nullopt unless the row
// dims are known statically.
std::optional<std::vector<int64_t>> SparseRowsShape(const Shape& params);

struct GradientOptions {
  // Prefix of the backward nodes' names.
  std::string scope = "gradients";
  // Bytes that the stacks of each loop's gradient may hold; 0: no bound.
  // A loop whose stacks would hold more recomputes its body's values in
  // the backward loop from its state saved every k iterations, with the k
  // that holds least (a loop's `checkpoint = k` chooses k itself).
  int64_t memory_budget = 0;
  // Set when the session has a device that can keep a loop's saved values
  // in host memory instead of its own (a GPU: Device::SwapsToHost): its
  // rates, by which the budget's plan weighs copying them out and back
  // (transfer_bytes_per_s) against computing them again, and picks the
  // cheaper. A loop asked onto the CPU is never planned to swap.
  std::optional<CostRates> swap_rates;
};

// Adds d(y)/d(x) for each x to `graph`. `y` must be floating point; a
// non-scalar y is differentiated as sum(y) (the seed is ones_like(y)). An x
// that y does not depend on gets zeros_like(x).
//
// Through control flow (docs/architecture.md): the gradient of a switch is
// a merge and that of a merge a switch on the branch it took, so only the
// taken branch gets a gradient. A loop is differentiated as a unit: a
// backward loop runs as many iterations as the forward one did, each the
// gradient of the body, reading the forward values it needs from stacks
// that the forward loop pushes them onto (indexed by iteration).
absl::StatusOr<std::vector<NodeOut>> AddGradients(
    Graph* graph, NodeOut y, absl::Span<const NodeOut> xs,
    const GradientOptions& options = {});

namespace gradients_internal {
struct Registrar {
  Registrar(const char* op, GradFn fn);
  explicit Registrar(const char* op);  // not differentiable
};
}  // namespace gradients_internal

#define RUNNEL_REGISTER_GRADIENT(op, ...) \
  RUNNEL_GRADIENT_UNIQ_(__COUNTER__, op, __VA_ARGS__)
#define RUNNEL_NO_GRADIENT(op) RUNNEL_GRADIENT_UNIQ_(__COUNTER__, op)
#define RUNNEL_GRADIENT_UNIQ_(ctr, ...) RUNNEL_GRADIENT_UNIQ2_(ctr, __VA_ARGS__)
#define RUNNEL_GRADIENT_UNIQ2_(ctr, ...)               \
  static const ::runnel::gradients_internal::Registrar \
      runnel_grad_registrar_##ctr [[maybe_unused]] (__VA_ARGS__)

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_GRADIENTS_H_
