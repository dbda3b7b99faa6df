// Graphviz DOT rendering of a graph, for `runnel graph`.
#ifndef RUNNEL_INTERPRETER_GRAPH_DOT_H_
#define RUNNEL_INTERPRETER_GRAPH_DOT_H_

#include <string>

#include "runtime/graph.h"

namespace runnel::interp {

// One box per node ("name" over "op", with its device when requested),
// solid edges for data labelled with the tensor's dtype and shape, dashed
// edges for control dependencies. Nodes are grouped into clusters by their
// top-level scope.
std::string GraphToDot(const Graph& graph);

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_GRAPH_DOT_H_
