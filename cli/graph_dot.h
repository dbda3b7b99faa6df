// Graphviz DOT rendering of a graph, for `runnel graph` and the REPL's
// `:graph`.
//
// By default each top-level name scope (`dense`, `dense_1`, `adam`) is one
// box labelled with its op count; the backward pass folds into one box per
// forward scope (`gradients/dense`), and the optimizer, being one scope, into
// one box. Edges between boxes carry the shapes of the tensors they stand
// for. `expand` and `depth` open boxes; `all` draws every node.
#ifndef RUNNEL_CLI_GRAPH_DOT_H_
#define RUNNEL_CLI_GRAPH_DOT_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/graph.h"

namespace runnel::cli {

struct GraphView {
  // Scopes to open (with their enclosing scopes), e.g. "dense" or
  // "gradients/dense".
  std::vector<std::string> expand;
  // Scopes nested less deeply than this are open: 1 shows the top-level
  // scopes as boxes, 2 opens those and shows their sub-scopes, and so on.
  // The `gradients` prefix does not count as a level.
  int depth = 1;
  // Every node, grouped into one cluster per top-level scope.
  bool all = false;
  // Colour boxes by the device their nodes were assigned (placement must
  // have run: common_runtime/placer.h) and draw the edges that cross devices,
  // each a Send/Recv pair at run time, in bold with "send/recv".
  bool placed = false;
};

// Takes `flag` if it is one of the view options (`--expand SCOPE`,
// `--depth N`, `--all`, `--placed`), reading a value with `take`. Returns
// false for any other flag; sets `*error` when the option is malformed or
// not available.
bool TakeGraphViewOption(const std::string& flag,
                         const std::function<bool(std::string*)>& take,
                         GraphView* view, std::string* error);

// The DOT text. Boxes (and nodes) carry a tooltip listing the graph nodes
// they stand for. An `expand` naming no scope of the graph is an error.
absl::StatusOr<std::string> GraphToDot(const Graph& graph,
                                       const GraphView& view = {});

}  // namespace runnel::cli

#endif  // RUNNEL_CLI_GRAPH_DOT_H_
