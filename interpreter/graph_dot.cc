#include "interpreter/graph_dot.h"

#include <map>
#include <vector>

#include "runtime/strings.h"

namespace runnel::interp {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string GraphToDot(const Graph& graph) {
  std::string out = "digraph runnel {\n  rankdir=TB;\n";
  out +=
      "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
      "fontname=\"Helvetica\", fontsize=10];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=8];\n";
  std::map<std::string, std::vector<Node*>> clusters;
  std::vector<Node*> top;
  const std::vector<Node*> nodes = graph.nodes();
  for (Node* n : nodes) {
    size_t slash = n->name().find('/');
    if (slash == std::string::npos) {
      top.push_back(n);
    } else {
      clusters[n->name().substr(0, slash)].push_back(n);
    }
  }
  auto node_line = [](const Node* n, const std::string& indent) {
    std::string label = n->name() + "\\n" + n->op();
    if (!n->requested_device().empty()) label += "\\n" + n->requested_device();
    std::string color = "white";
    if (n->op() == "placeholder" || n->op() == "placeholder_with_default") {
      color = "lightyellow";
    } else if (n->op() == "variable") {
      color = "lightblue";
    } else if (n->op() == "const") {
      color = "gray95";
    }
    std::string escaped;
    for (char c : label) {
      if (c == '"') escaped += '\\';
      escaped += c;
    }
    return StrCat(indent, "n", n->id(), " [label=\"", escaped,
                  "\", fillcolor=", color, "];\n");
  };
  for (const Node* n : top) out += node_line(n, "  ");
  int k = 0;
  for (const auto& [scope, members] : clusters) {
    out += StrCat("  subgraph cluster_", k++, " {\n    label=", Quote(scope),
                  ";\n    style=dashed;\n");
    for (const Node* n : members) out += node_line(n, "    ");
    out += "  }\n";
  }
  for (const Node* n : nodes) {
    for (const NodeOut& in : n->inputs()) {
      const TensorSpec& spec = in.node->output(in.index);
      out += StrCat("  n", in.node->id(), " -> n", n->id(), " [label=\"",
                    spec.ToString(), "\"];\n");
    }
    for (const Node* c : n->control_inputs()) {
      out += StrCat("  n", c->id(), " -> n", n->id(), " [style=dashed];\n");
    }
  }
  out += "}\n";
  return out;
}

}  // namespace runnel::interp
