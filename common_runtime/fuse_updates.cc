#include "common_runtime/fuse_updates.h"

#include <algorithm>

#include "common_runtime/control_flow.h"

namespace runnel {
namespace {

bool IsF32Matrix(NodeOut x) {
  const Shape& s = x.node->output_shape(x.index);
  return x.node->output_dtype(x.index) == DType::kF32 && !s.unknown_rank() &&
         s.rank() == 2;
}

// The updates that fuse with their gradient's product: the op, its fused
// twin and the position of its gradient input.
struct Fusable {
  const char* op;
  const char* fused;
  int grad;
  int num_inputs;
};
constexpr Fusable kFusable[] = {
    {"apply_sgd", "apply_sgd_matmul", 2, 3},
    {"apply_momentum", "apply_momentum_matmul", 3, 5},
    {"apply_adam", "apply_adam_matmul", 4, 12}};

const Fusable* FusableOf(const Node& n) {
  for (const Fusable& f : kFusable) {
    if (n.op() == f.op && n.num_inputs() == f.num_inputs) return &f;
  }
  return nullptr;
}

// The fused node is placed where the update goes, with its variable: a
// product asked for elsewhere (a `device` block around the layer, but not
// around its variable) keeps its own node there.
bool SameRequest(const Node& product, const Node& apply) {
  const std::string& p = product.requested_device();
  return p.empty() || p == apply.requested_device() ||
         p == apply.input(0).node->requested_device();
}

}  // namespace

UpdateProducts FindUpdateProducts(const std::vector<Node*>& nodes,
                                  const std::vector<NodeOut>& fetches,
                                  const std::vector<NodeOut>& fed) {
  absl::flat_hash_map<NodeOut, int> uses;
  for (const Node* n : nodes) {
    if (IsControlFlow(n)) return {};
    for (const NodeOut& in : n->inputs()) ++uses[in];
  }
  for (const NodeOut& f : fetches) ++uses[f];
  for (const NodeOut& f : fed) uses[f] += 2;  // computed elsewhere: no pair
  UpdateProducts out;
  for (const Node* n : nodes) {
    const Fusable* f = FusableOf(*n);
    if (f == nullptr) continue;
    const NodeOut g = n->input(f->grad);
    const Node* p = g.node;
    if (p->op() != "matmul" || uses[g] != 1 || out.products.contains(p) ||
        !IsF32Matrix(g) || !IsF32Matrix(p->input(0)) ||
        !IsF32Matrix(p->input(1)) || !IsF32Matrix(n->input(0)) ||
        !SameRequest(*p, *n)) {
      continue;
    }
    out.product_of.emplace(n, p);
    out.products.insert(p);
  }
  return out;
}

std::vector<NodeOut> FusedInputs(const Node& apply, const Node& product) {
  const int grad = FusableOf(apply)->grad;
  std::vector<NodeOut> out;
  for (int i = 0; i < apply.num_inputs(); ++i) {
    if (i != grad) {
      out.push_back(apply.input(i));
      continue;
    }
    out.push_back(product.input(0));
    out.push_back(product.input(1));
  }
  return out;
}

NodeSpec FusedUpdateSpec(const Node& apply, const Node& product,
                         std::vector<NodeOut> inputs,
                         std::vector<Node*> control_inputs) {
  NodeSpec spec = apply.SpecWithoutInputs();
  spec.op = FusableOf(apply)->fused;
  for (const char* attr : {"transpose_a", "transpose_b"}) {
    auto it = product.attrs().find(attr);
    if (it != product.attrs().end()) spec.attrs[attr] = it->second;
  }
  spec.inputs = std::move(inputs);
  spec.control_inputs = std::move(control_inputs);
  return spec;
}

void OrderBeforeUpdate(Graph& graph, const std::vector<Node*>& updates) {
  if (updates.empty()) return;
  // Each node's consumers through data edges, and through data and
  // control edges.
  std::vector<std::vector<Node*>> data(graph.num_nodes()),
      all(graph.num_nodes());
  for (Node* n : graph.nodes()) {
    for (const NodeOut& in : n->inputs()) {
      data[in.node->id()].push_back(n);
      all[in.node->id()].push_back(n);
    }
    for (Node* c : n->control_inputs()) all[c->id()].push_back(n);
  }
  for (Node* update : updates) {
    const Node* var = update->input(0).node;
    if (var->op() != "variable") continue;  // named by attribute: unordered
    std::vector<bool> after(graph.num_nodes(), false);
    std::vector<Node*> stack = {update};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (Node* c : all[n->id()]) {
        if (!after[c->id()]) {
          after[c->id()] = true;
          stack.push_back(c);
        }
      }
    }
    // The readers: the variable's consumers, and those of the reads that
    // pass its value on (read_variable, identity).
    std::vector<Node*> readers;
    std::vector<const Node*> passing = {var};
    while (!passing.empty()) {
      const Node* m = passing.back();
      passing.pop_back();
      for (Node* r : data[m->id()]) {
        if (std::find(readers.begin(), readers.end(), r) != readers.end())
          continue;
        readers.push_back(r);
        if (r->op() == "read_variable" || r->op() == "identity")
          passing.push_back(r);
      }
    }
    for (Node* r : readers) {
      const std::vector<Node*>& has = update->control_inputs();
      if (r == update || after[r->id()] ||
          std::find(has.begin(), has.end(), r) != has.end()) {
        continue;
      }
      graph.AddControlInput(update, r);
      all[r->id()].push_back(update);
    }
  }
}

}  // namespace runnel
