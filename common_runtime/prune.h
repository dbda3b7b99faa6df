// Pruning: the part of a graph that a run needs.
//
// A run names fetches (tensors to return), targets (nodes to run for their
// effect) and feeds (tensors given a value). It needs the nodes the fetches
// and targets reach through data and control edges, walking back from them;
// a fed tensor cuts the walk there, so whatever only computes a fed tensor
// is left out, and so is an unfed placeholder off every needed path.
// Session runs exactly the pruned nodes; `runnel check` uses the same walk
// to report a missing feed without running anything:
//
//   absl::StatusOr<PrunedGraph> p = PruneGraph(graph, fetches, targets, fed);
//   if (!p->missing_feeds.empty()) ... "missing feed for input 'x'" ...
//
// Like TensorFlow's subgraph::RewriteGraphForExecution, without the rewrite:
// Session copies the nodes, putting feed and fetch endpoints in place.
#ifndef RUNNEL_COMMON_RUNTIME_PRUNE_H_
#define RUNNEL_COMMON_RUNTIME_PRUNE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "framework/graph.h"

namespace runnel {

struct PrunedGraph {
  // The needed nodes in a topological order: each after its inputs and
  // control inputs, except a loop's back edge (a merge's input from its
  // next_iteration); creation order where that is one.
  std::vector<Node*> nodes;
  // The placeholders among `nodes`, in id order: inputs the run needs but
  // does not feed. Running would fail at the first one with "missing feed
  // for input 'NAME'"; the lowest id, `missing_feeds.front()`, is the input
  // declared first.
  std::vector<Node*> missing_feeds;
};

// The part of `graph` needed to compute `fetches` and run `targets` when the
// tensors `fed` are given. A fetch that is itself fed needs nothing. Every
// endpoint must be an output of a node of `graph`, else InvalidArgument
// ("feed is not a tensor of the graph", and likewise for a fetch or target).
absl::StatusOr<PrunedGraph> PruneGraph(const Graph& graph,
                                       const std::vector<NodeOut>& fetches,
                                       const std::vector<Node*>& targets,
                                       const std::vector<NodeOut>& fed);

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_PRUNE_H_
