#include "runtime/prune.h"

#include "absl/container/flat_hash_set.h"

namespace runnel {
namespace {

// Whether `n` is a node of `graph` (ids index `all`, graph.nodes()).
bool InGraph(const std::vector<Node*>& all, const Node* n) {
  return n != nullptr && n->id() >= 0 &&
         n->id() < static_cast<int>(all.size()) && all[n->id()] == n;
}

bool IsTensorOf(const std::vector<Node*>& all, const NodeOut& out) {
  return InGraph(all, out.node) && out.index >= 0 &&
         out.index < out.node->num_outputs();
}

}  // namespace

absl::StatusOr<PrunedGraph> PruneGraph(const Graph& graph,
                                       const std::vector<NodeOut>& fetches,
                                       const std::vector<Node*>& targets,
                                       const std::vector<NodeOut>& fed) {
  const std::vector<Node*> all = graph.nodes();
  absl::flat_hash_set<NodeOut> cut;
  for (const NodeOut& out : fed) {
    if (!IsTensorOf(all, out)) {
      return absl::InvalidArgumentError("feed is not a tensor of the graph");
    }
    cut.insert(out);
  }
  for (const NodeOut& out : fetches) {
    if (!IsTensorOf(all, out)) {
      return absl::InvalidArgumentError("fetch is not a tensor of the graph");
    }
  }
  for (const Node* t : targets) {
    if (!InGraph(all, t)) {
      return absl::InvalidArgumentError("target is not a node of the graph");
    }
  }

  // Mark what the fetches and targets need, stopping at fed tensors.
  std::vector<bool> needed(all.size(), false);
  std::vector<Node*> stack;
  auto need = [&](Node* n) {
    if (!needed[n->id()]) {
      needed[n->id()] = true;
      stack.push_back(n);
    }
  };
  for (const NodeOut& f : fetches) {
    if (!cut.contains(f)) need(f.node);
  }
  for (Node* t : targets) need(t);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const NodeOut& in : n->inputs()) {
      if (!cut.contains(in)) need(in.node);
    }
    for (Node* c : n->control_inputs()) need(c);
  }

  PrunedGraph pruned;
  for (Node* n : all) {
    if (!needed[n->id()]) continue;
    pruned.nodes.push_back(n);
    if (n->op() == "placeholder") pruned.missing_feeds.push_back(n);
  }
  return pruned;
}

}  // namespace runnel
