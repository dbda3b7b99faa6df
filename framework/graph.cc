#include "framework/graph.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "base/errors.h"
#include "base/status_macros.h"

namespace runnel {

const Tensor* Node::constant_value() const {
  if (op() != "const") return nullptr;
  auto it = attrs_.find("value");
  return it == attrs_.end() ? nullptr : std::get_if<Tensor>(&it->second);
}

std::string Node::DebugString() const {
  std::vector<std::string> ins;
  for (const NodeOut& in : inputs_) {
    ins.push_back(in.node ? StrCat(in.node->name(), ":", in.index)
                          : std::string("?"));
  }
  for (const Node* c : control_inputs_) ins.push_back("^" + c->name());
  std::vector<std::string> outs;
  for (const TensorSpec& o : outputs_) outs.push_back(o.ToString());
  return StrCat(name_, " = ", op(), "(", absl::StrJoin(ins, ", "),
                ") : ", absl::StrJoin(outs, ", "));
}

absl::StatusOr<std::unique_ptr<Node>> Node::Detached(
    NodeSpec spec, std::vector<TensorSpec> input_specs,
    std::vector<const Tensor*> input_values) {
  const OpDef* def = OpRegistry::Global().Find(spec.op);
  if (def == nullptr) {
    return AttachNode(absl::NotFoundError(StrCat("unknown op '", spec.op, "'")),
                      spec.name, spec.span);
  }
  std::unique_ptr<Node> n(new Node());
  n->name_ = std::move(spec.name);
  n->def_ = def;
  n->attrs_ = std::move(spec.attrs);
  n->span_ = std::move(spec.span);
  n->requested_device_ = std::move(spec.device);
  n->inputs_ = std::move(spec.inputs);
  n->control_inputs_ = std::move(spec.control_inputs);
  for (const TensorSpec& s : input_specs) n->input_dtypes_.push_back(s.dtype);
  absl::StatusOr<std::vector<TensorSpec>> outs = InferOutputs(
      *def, n->attrs_, std::move(input_specs), std::move(input_values));
  if (!outs.ok()) return AttachNode(outs.status(), n->name_, n->span_);
  n->outputs_ = *std::move(outs);
  return n;
}

absl::Status Graph::UpdateInput(Node* n, int i, NodeOut src) {
  if (n->op() != "merge" || i < 0 || i >= n->num_inputs() ||
      src.node == nullptr || src.index >= src.node->num_outputs()) {
    return absl::InvalidArgumentError(
        StrCat("UpdateInput: input ", i, " of '", n->name(),
               "' cannot be replaced (only a merge's inputs can)"));
  }
  const TensorSpec& s = src.node->output(src.index);
  if (s.dtype != n->output_dtype(0) ||
      !s.shape.IsCompatibleWith(n->output_shape(0))) {
    return absl::InvalidArgumentError(
        StrCat("UpdateInput: '", src.node->name(), "' gives ", s.ToString(),
               " but '", n->name(), "' is ", n->output(0).ToString()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  n->inputs_[i] = src;
  return absl::OkStatus();
}

void Graph::AddControlInput(Node* n, Node* c) {
  std::lock_guard<std::mutex> lock(mu_);
  n->control_inputs_.push_back(c);
}

absl::StatusOr<Node*> Graph::AddNode(NodeSpec spec) {
  std::vector<TensorSpec> specs;
  std::vector<const Tensor*> values;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const NodeOut& in = spec.inputs[i];
    if (in.node == nullptr || in.index < 0 ||
        in.index >= in.node->num_outputs()) {
      return AttachNode(
          absl::InvalidArgumentError(
              StrCat(spec.op, ": input ", i, " is not an output of a node")),
          spec.name, spec.span);
    }
    specs.push_back(in.node->output(in.index));
    values.push_back(in.node->constant_value());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (spec.name.empty() || by_name_.contains(spec.name)) {
    return AttachNode(absl::AlreadyExistsError(StrCat("node name '", spec.name,
                                                      "' is empty or taken")),
                      spec.name, spec.span);
  }
  RN_ASSIGN_OR_RETURN(
      std::unique_ptr<Node> n,
      Node::Detached(std::move(spec), std::move(specs), std::move(values)));
  n->id_ = static_cast<int>(nodes_.size());
  Node* raw = n.get();
  by_name_.emplace(raw->name(), raw);
  nodes_.push_back(std::move(n));
  return raw;
}

absl::StatusOr<Node*> Graph::AddConst(Tensor value, std::string name) {
  NodeSpec spec;
  spec.name = std::move(name);
  spec.op = "const";
  spec.attrs["value"] = std::move(value);
  return AddNode(std::move(spec));
}

Node* Graph::FindNode(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

std::string Graph::UniqueName(std::string_view base) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!by_name_.contains(std::string(base))) return std::string(base);
  for (int i = 1;; ++i) {
    std::string candidate = StrCat(base, "_", i);
    if (!by_name_.contains(candidate)) return candidate;
  }
}

int Graph::num_nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(nodes_.size());
}

Node* Graph::node(int id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_[id].get();
}

std::vector<Node*> Graph::nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

absl::StatusOr<std::pair<std::string, int>> ParseTensorName(
    std::string_view name) {
  size_t colon = name.rfind(':');
  if (colon == std::string_view::npos)
    return std::make_pair(std::string(name), 0);
  int index = 0;
  if (!absl::SimpleAtoi(std::string(name.substr(colon + 1)), &index) ||
      index < 0) {
    return absl::InvalidArgumentError(
        StrCat("malformed tensor name '", name, "'"));
  }
  return std::make_pair(std::string(name.substr(0, colon)), index);
}

}  // namespace runnel
