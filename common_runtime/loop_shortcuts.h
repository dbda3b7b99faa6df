// Nodes an executor leaves out of every iteration of its loops.
//
// An in-graph loop runs its body's nodes once an iteration, and on a CPU
// the executor's cost of a node (scheduling it, counting its inputs,
// passing its values on) is most of a small loop's time. Two kinds of
// node there compute nothing:
//
//  - A body identity (WhileBuilder's `body`, one per loop variable, that
//    reads the switch's output into the body) is where control edges
//    hang: a switch's own deadness is not one output's. One that no
//    control edge hangs on is bypassed: its consumers read the switch's
//    output, which carries the same value and the same deadness.
//  - A constant the body makes again in every iteration (GraphBuilder::
//    Import does, with the loop's pivot as its control input, so that
//    shape functions still see its value) is delivered to each iteration
//    as it starts, as a loop invariant is, and never runs.
//
// The pivot's control edge makes such a constant dead in the iteration
// that leaves the loop, and a delivered value is live there. So a
// constant is delivered only where that changes nothing: each consumer is
// an ordinary op (dead when any input, data or control, is) that has
// another input computed from the body's values by such ops, and so is
// dead in that iteration anyway; and nothing waits on the constant
// itself. The graph is not changed: its shapes, names and the trace of a
// run stay as built, less the nodes that no longer run.
//
//   LoopShortcuts s = FindLoopShortcuts(graph->nodes(), can_deliver);
//   ... a node in s.bypassed gets no edges, its consumers' edges leave
//       from s.Source(input); one in s.constants does not wait for its
//       pivot, and each iteration of its frame starts with its value ...
#ifndef RUNNEL_COMMON_RUNTIME_LOOP_SHORTCUTS_H_
#define RUNNEL_COMMON_RUNTIME_LOOP_SHORTCUTS_H_

#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "framework/graph.h"

namespace runnel {

struct LoopShortcuts {
  // Body identity -> the switch output its consumers read instead.
  absl::flat_hash_map<const Node*, NodeOut> bypassed;
  // Constants made in every iteration, delivered as it starts instead.
  absl::flat_hash_set<const Node*> constants;

  // Where a consumer of `in` reads it.
  NodeOut Source(NodeOut in) const {
    auto it = bypassed.find(in.node);
    return it == bypassed.end() ? in : it->second;
  }
};

// The shortcuts among `nodes` (a graph's, each after its inputs but for
// loops' back edges); `can_deliver` says whether a constant's value can be
// delivered without running it (the executor has it at hand).
LoopShortcuts FindLoopShortcuts(
    const std::vector<Node*>& nodes,
    const std::function<bool(const Node*)>& can_deliver);

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_LOOP_SHORTCUTS_H_
