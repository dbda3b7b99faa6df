// The dataflow graph: nodes, their data and control edges, attributes,
// devices, scope-path names and source spans (docs/architecture.md).
//
//   Graph g;
//   Node* a = *g.AddNode({.name = "a", .op = "const", .attrs = {{"value",
//   t}}}); Node* b = *g.AddNode({.name = "b", .op = "neg", .inputs = {{a,
//   0}}});
//
// AddNode runs the op's shape function, so a dtype or shape mistake is an
// error when the node is made, carrying the node's span. Nodes are never
// removed or changed after creation (only `assigned_device` is set later), so
// Node pointers stay valid for the Graph's lifetime and executors built from
// a graph stay valid as it grows. All methods are thread-safe.
#ifndef RUNNEL_FRAMEWORK_GRAPH_H_
#define RUNNEL_FRAMEWORK_GRAPH_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "base/source_span.h"
#include "framework/attr_value.h"
#include "framework/op_registry.h"

namespace runnel {

class Node;

// One output of a node: the source end of a data edge.
struct NodeOut {
  Node* node = nullptr;
  int index = 0;
  bool operator==(const NodeOut& o) const {
    return node == o.node && index == o.index;
  }
  template <typename H>
  friend H AbslHashValue(H h, const NodeOut& o) {
    return H::combine(std::move(h), o.node, o.index);
  }
};

// Everything needed to make a node.
struct NodeSpec {
  std::string name;  // scope path, e.g. "encoder/dense_1/w"; unique in a graph
  std::string op;
  // Defaulted so that designated initializers may leave them out.
  std::vector<NodeOut> inputs = {};
  std::vector<Node*> control_inputs = {};
  AttrMap attrs = {};
  std::string device = {};  // requested device spec, "" = anywhere
  SourceSpan span = {};
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& op() const { return def_->name; }
  const OpDef& op_def() const { return *def_; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  NodeOut input(int i) const { return inputs_[i]; }
  const std::vector<NodeOut>& inputs() const { return inputs_; }
  DType input_dtype(int i) const { return input_dtypes_[i]; }
  const std::vector<DType>& input_dtypes() const { return input_dtypes_; }
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const TensorSpec& output(int i) const { return outputs_[i]; }
  DType output_dtype(int i) const { return outputs_[i].dtype; }
  const Shape& output_shape(int i) const { return outputs_[i].shape; }
  const std::vector<TensorSpec>& outputs() const { return outputs_; }

  const AttrMap& attrs() const { return attrs_; }
  template <typename T>
  absl::StatusOr<T> attr(std::string_view name) const {
    return GetAttr<T>(attrs_, name);
  }
  // This node's name, op, attributes, requested device and span, without
  // inputs: the start of a copy in another graph (pruning, partitioning).
  NodeSpec SpecWithoutInputs() const {
    return {.name = name_,
            .op = op(),
            .attrs = attrs_,
            .device = requested_device_,
            .span = span_};
  }
  const std::string& requested_device() const { return requested_device_; }
  const std::string& assigned_device() const { return assigned_device_; }
  void set_assigned_device(std::string d) { assigned_device_ = std::move(d); }
  const SourceSpan& span() const { return span_; }
  bool stateful() const { return def_->stateful; }
  // The value of a `const` node, else nullptr.
  const Tensor* constant_value() const;

  // "name = op(in0, in1) : f32[2,3]" for graph dumps and debugging.
  std::string DebugString() const;

  // Makes a node outside any graph (used by eager execution). Runs the
  // shape function with `input_specs` and `input_values`.
  static absl::StatusOr<std::unique_ptr<Node>> Detached(
      NodeSpec spec, std::vector<TensorSpec> input_specs,
      std::vector<const Tensor*> input_values);

 private:
  friend class Graph;
  Node() = default;

  int id_ = -1;
  std::string name_;
  const OpDef* def_ = nullptr;
  std::vector<NodeOut> inputs_;
  std::vector<DType> input_dtypes_;
  std::vector<Node*> control_inputs_;
  AttrMap attrs_;
  std::vector<TensorSpec> outputs_;
  std::string requested_device_;
  std::string assigned_device_;
  SourceSpan span_;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Checks the op, the inputs and the name, runs shape inference and adds
  // the node. Errors carry the spec's name and span (errors.h).
  absl::StatusOr<Node*> AddNode(NodeSpec spec);
  // Replaces input `i` of merge `n` (a loop's back edge, made after the
  // merge). The only change a node may get after creation besides
  // AddControlInput; src must keep n's dtype and fit its shape.
  absl::Status UpdateInput(Node* n, int i, NodeOut src);
  // Adds control input `c` to `n` (autodiff orders a loop's stack pushes
  // before its next iteration).
  void AddControlInput(Node* n, Node* c);
  // Shorthand for a `const` node holding `value`.
  absl::StatusOr<Node*> AddConst(Tensor value, std::string name);

  Node* FindNode(std::string_view name) const;
  // `base` if free, else `base_1`, `base_2`, ... (the first free one).
  std::string UniqueName(std::string_view base) const;
  int num_nodes() const;
  Node* node(int id) const;
  std::vector<Node*> nodes() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Node>> nodes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Node*> by_name_ ABSL_GUARDED_BY(mu_);
};

// Parses "name" or "name:3" into a node name and output index.
absl::StatusOr<std::pair<std::string, int>> ParseTensorName(
    std::string_view name);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_GRAPH_H_
