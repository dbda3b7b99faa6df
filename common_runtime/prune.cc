#include "common_runtime/prune.h"

#include <queue>

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

// The needed nodes, each after its inputs and control inputs (a loop's back
// edge excepted), lowest id first among the ready ones: creation order,
// unless a control input was added to a node after it was made (autodiff
// orders a loop's stack pushes that way).
std::vector<Node*> TopologicalOrder(const std::vector<Node*>& all,
                                    const std::vector<bool>& needed,
                                    const absl::flat_hash_set<NodeOut>& cut) {
  std::vector<int> waiting(all.size(), 0);
  std::vector<std::vector<int>> after(all.size());
  for (Node* n : all) {
    if (!needed[n->id()]) continue;
    auto edge = [&](const Node* src) {
      if (!needed[src->id()]) return;
      ++waiting[n->id()];
      after[src->id()].push_back(n->id());
    };
    for (int i = 0; i < n->num_inputs(); ++i) {
      const NodeOut& in = n->input(i);
      if (cut.contains(in)) continue;
      if (n->op() == "merge" && in.node->op() == "next_iteration") continue;
      edge(in.node);
    }
    for (const Node* c : n->control_inputs()) edge(c);
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (Node* n : all) {
    if (needed[n->id()] && waiting[n->id()] == 0) ready.push(n->id());
  }
  std::vector<Node*> order;
  while (!ready.empty()) {
    const int id = ready.top();
    ready.pop();
    order.push_back(all[id]);
    for (int next : after[id]) {
      if (--waiting[next] == 0) ready.push(next);
    }
  }
  return order;
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
  pruned.nodes = TopologicalOrder(all, needed, cut);
  for (Node* n : all) {
    if (needed[n->id()] && n->op() == "placeholder")
      pruned.missing_feeds.push_back(n);
  }
  return pruned;
}

}  // namespace runnel
