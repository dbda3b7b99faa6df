#include "cli/graph_dot.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "base/strings.h"
#include "common_runtime/gradients.h"

namespace runnel::cli {
namespace {

// The backward pass's nodes are named "gradients/<forward node>/..."; this
// prefix is not a level of its own, so each forward scope gets its own
// gradient box.
constexpr std::string_view kGradients = "gradients";
// At most this many distinct tensor specs label one edge.
constexpr int kMaxEdgeLines = 3;

std::vector<std::string_view> Split(std::string_view name) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t slash = name.find('/', start);
    parts.push_back(name.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

// The parent scope of `path` ("" at the top).
std::string Parent(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// `lines` as one DOT string literal, "\n" between lines.
std::string Quoted(const std::vector<std::string>& lines) {
  std::string out = "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\\n";
    for (char c : lines[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out + "\"";
}

// What is drawn as one DOT node: a graph node, or a closed scope (a box).
struct Unit {
  std::string id;
  std::string scope;  // the box's scope path; "" for a single node
  std::vector<const Node*> members;
  std::string cluster;  // the open scope drawn around it; "" for none
};

// Which part of training a unit belongs to: the backward pass, the
// updates of state (the optimizer) or the rest, the forward pass.
enum class Part { kForward, kGradient, kUpdate };

Part PartOf(const Unit& u) {
  if (u.members[0]->name().rfind(StrCat(kGradients, "/"), 0) == 0) {
    return Part::kGradient;
  }
  for (const Node* n : u.members) {
    if (n->op().rfind("assign", 0) == 0) return Part::kUpdate;
  }
  return Part::kForward;
}

struct Edge {
  int from = 0, to = 0;
  std::vector<NodeOut> tensors;  // distinct, in order of appearance
  bool control = false;
};

std::string NodeColor(const Node& n) {
  if (n.op() == "placeholder" || n.op() == "placeholder_with_default") {
    return "lightyellow";
  }
  if (n.op() == "variable") return "lightblue";
  if (n.op() == "const") return "gray95";
  return "white";
}

// The device of a unit's nodes ("" when they are on several).
std::string UnitDevice(const Unit& u) {
  const std::string& d = u.members[0]->assigned_device();
  for (const Node* n : u.members) {
    if (n->assigned_device() != d) return "";
  }
  return d;
}

// Fill colours for devices in order of first use, and the short name.
const char* const kDeviceColors[] = {"lightblue", "palegreen",   "khaki",
                                     "plum",      "lightsalmon", "lightcyan"};
std::string ShortDevice(const std::string& full) {
  const std::string local = "/job:localhost/task:0/device:";
  return full.rfind(local, 0) == 0 ? "/" + full.substr(local.size()) : full;
}

// Sparse gradients (common_runtime/gradients.h) and whether something uses each
// densely: there, and only there, the gradient becomes a dense tensor.
using SparseUses = absl::flat_hash_map<const Node*, bool>;

SparseUses FindSparseGradients(const std::vector<Node*>& nodes) {
  SparseUses uses;
  for (const Node* n : nodes) {
    if (AsSparseGradient({const_cast<Node*>(n), 0})) uses.try_emplace(n, false);
  }
  for (const Node* n : nodes) {
    for (int i = 0; i < n->num_inputs(); ++i) {
      auto it = uses.find(n->input(i).node);
      if (it != uses.end() && n->input(i).index == 0) it->second = true;
    }
  }
  return uses;
}

std::string UnitLine(const Unit& u,
                     const absl::flat_hash_map<std::string, int>* devices,
                     const SparseUses& sparse) {
  std::vector<std::string> label;
  std::string color, extra;
  std::vector<std::string> tooltip;
  for (const Node* n : u.members) tooltip.push_back(n->name());
  if (u.scope.empty()) {
    const Node& n = *u.members[0];
    label = {n.name(), n.op()};
    if (!n.requested_device().empty()) label.push_back(n.requested_device());
    if (auto it = sparse.find(&n); it != sparse.end()) {
      label.push_back(it->second ? "densifies a sparse gradient"
                                 : "sparse gradient, never densified");
    }
    color = PartOf(u) == Part::kGradient ? "mistyrose" : NodeColor(n);
    tooltip[0] += " = " + n.op();
  } else {
    const size_t count = u.members.size();
    label = {u.scope, StrCat(count, count == 1 ? " op" : " ops")};
    std::string device = u.members[0]->requested_device();
    bool one_device = true;
    for (const Node* n : u.members) {
      one_device = one_device && n->requested_device() == device;
    }
    if (one_device && !device.empty()) label.push_back(device);
    int dense = 0;
    for (const Node* n : u.members) {
      auto it = sparse.find(n);
      dense += it != sparse.end() && it->second ? 1 : 0;
    }
    if (dense > 0) {
      label.push_back(StrCat("densifies ", dense, " sparse gradient",
                             dense == 1 ? "" : "s"));
    }
    const Part part = PartOf(u);
    color = part == Part::kGradient ? "mistyrose"
            : part == Part::kUpdate ? "honeydew"
                                    : "aliceblue";
    extra = ", penwidth=1.5";
  }
  if (devices != nullptr) {
    const std::string d = UnitDevice(u);
    label.push_back(d.empty() ? "several devices" : "on " + ShortDevice(d));
    color = d.empty()
                ? "white"
                : kDeviceColors[devices->at(d) % std::size(kDeviceColors)];
  }
  return StrCat("n", u.id, " [label=", Quoted(label), ", fillcolor=", color,
                ", tooltip=", Quoted(tooltip), extra, "];\n");
}

std::string EdgeLabel(const Edge& e) {
  std::vector<std::pair<std::string, int>> specs;
  for (const NodeOut& t : e.tensors) {
    const std::string s = t.node->output(t.index).ToString();
    auto it = std::find_if(specs.begin(), specs.end(),
                           [&](const auto& p) { return p.first == s; });
    if (it == specs.end()) {
      specs.emplace_back(s, 1);
    } else {
      ++it->second;
    }
  }
  std::vector<std::string> lines;
  for (const auto& [spec, n] : specs) {
    if (static_cast<int>(lines.size()) == kMaxEdgeLines) {
      lines.push_back(StrCat("+", specs.size() - kMaxEdgeLines, " more"));
      break;
    }
    lines.push_back(n == 1 ? spec : StrCat(n, "× ", spec));
  }
  return Quoted(lines);
}

}  // namespace

bool TakeGraphViewOption(const std::string& flag,
                         const std::function<bool(std::string*)>& take,
                         GraphView* view, std::string* error) {
  if (flag == "--expand") {
    std::string scope;
    if (!take(&scope) || scope.empty()) {
      *error = "--expand needs a scope, e.g. --expand dense";
    } else {
      while (scope.size() > 1 && scope.back() == '/') scope.pop_back();
      view->expand.push_back(scope);
    }
  } else if (flag == "--depth") {
    std::string v;
    char* end = nullptr;
    const long n = take(&v) ? std::strtol(v.c_str(), &end, 10) : 0;
    if (v.empty() || *end != '\0' || n < 1 || n > 1000) {
      *error = "--depth needs a positive integer";
    } else {
      view->depth = static_cast<int>(n);
    }
  } else if (flag == "--all") {
    view->all = true;
  } else if (flag == "--placed") {
    view->placed = true;
  } else {
    return false;
  }
  return true;
}

absl::StatusOr<std::string> GraphToDot(const Graph& graph,
                                       const GraphView& view) {
  const std::vector<Node*> nodes = graph.nodes();
  const SparseUses sparse = FindSparseGradients(nodes);
  // Every proper prefix of a node's name is a scope.
  absl::flat_hash_set<std::string> scopes;
  std::vector<std::string> top_scopes;
  for (const Node* n : nodes) {
    size_t slash = n->name().find('/');
    while (slash != std::string::npos) {
      std::string scope = n->name().substr(0, slash);
      if (scopes.insert(scope).second && scope.find('/') == std::string::npos) {
        top_scopes.push_back(scope);
      }
      slash = n->name().find('/', slash + 1);
    }
  }
  absl::flat_hash_set<std::string> expanded;
  for (const std::string& scope : view.expand) {
    if (!scopes.contains(scope)) {
      std::sort(top_scopes.begin(), top_scopes.end());
      std::string known;
      for (const std::string& s : top_scopes) {
        known += (known.empty() ? "" : ", ") + s;
      }
      return absl::InvalidArgumentError(StrCat(
          "--expand: the graph has no scope '", scope,
          "' (its top-level scopes: ", known.empty() ? "none" : known, ")"));
    }
    for (std::string s = scope; !s.empty(); s = Parent(s)) expanded.insert(s);
  }
  // A scope holding only constants, reads and slots under a node of its own
  // name (a variable's initial value, its reads and its optimizer slots
  // `<var>/<slot>`) opens only when asked to.
  auto is_slot = [&](const Node* n) {
    if (n->op() != "variable") return false;
    const Node* owner = graph.FindNode(Parent(n->name()));
    return owner != nullptr && owner->op() == "variable";
  };
  absl::flat_hash_set<std::string> computing;
  for (const Node* n : nodes) {
    if (n->op() == "const" || n->op() == "read_variable" || is_slot(n)) {
      continue;
    }
    for (std::string s = Parent(n->name()); !s.empty(); s = Parent(s)) {
      if (!computing.insert(s).second) break;
    }
  }
  auto open = [&](const std::string& scope, int level) {
    if (view.all || level <= 0 || expanded.contains(scope)) return true;
    return level < view.depth &&
           (computing.contains(scope) || graph.FindNode(scope) == nullptr);
  };

  // Each node's unit: the first closed scope on its path, else itself.
  // Outside --all, a constant outside any scope (a literal the script
  // wrote) joins the unit of the nodes that read it.
  std::vector<Unit> units;
  absl::flat_hash_map<std::string, int> box_index;
  absl::flat_hash_map<const Node*, int> unit_of;
  std::vector<const Node*> literals;
  auto add_node = [&](const Node* n, const std::string& cluster) {
    unit_of[n] = static_cast<int>(units.size());
    units.push_back({StrCat(n->id()), "", {n}, cluster});
  };
  for (const Node* n : nodes) {
    const std::vector<std::string_view> parts = Split(n->name());
    if (!view.all && parts.size() == 1 && n->op() == "const" &&
        !scopes.contains(n->name())) {
      literals.push_back(n);
      continue;
    }
    const int skip = parts.size() > 1 && parts[0] == kGradients ? 1 : 0;
    std::string prefix, cluster, box;
    for (size_t len = 1; len <= parts.size(); ++len) {
      if (len > 1) prefix += '/';
      prefix += parts[len - 1];
      const int level = static_cast<int>(len) - skip;
      if (!scopes.contains(prefix)) break;  // the node's own last part
      if (!open(prefix, level)) {
        box = prefix;
        break;
      }
      if (level >= 1) cluster = prefix;
    }
    if (view.all) cluster = parts.size() > 1 ? std::string(parts[0]) : "";
    if (box.empty()) {
      add_node(n, cluster);
      continue;
    }
    auto [it, added] =
        box_index.try_emplace(box, static_cast<int>(units.size()));
    if (added) {
      units.push_back({StrCat("s", box_index.size()), box, {}, cluster});
    }
    units[it->second].members.push_back(n);
    unit_of[n] = it->second;
  }
  if (!literals.empty()) {
    absl::flat_hash_map<const Node*, absl::flat_hash_set<int>> readers;
    for (const Node* n : nodes) {
      for (const NodeOut& in : n->inputs()) {
        auto it = unit_of.find(n);
        if (it != unit_of.end()) readers[in.node].insert(it->second);
      }
    }
    for (const Node* n : literals) {
      const absl::flat_hash_set<int>& r = readers[n];
      if (r.size() == 1) {
        unit_of[n] = *r.begin();
        units[*r.begin()].members.push_back(n);
      } else {
        add_node(n, "");
      }
    }
  }

  // A box holding one node named like its scope, the constants that
  // initialize it and the reads of it (a variable, its initial value and
  // its reads, with its slots and theirs) is drawn as the node.
  for (Unit& u : units) {
    if (u.scope.empty()) continue;
    auto named =
        std::find_if(u.members.begin(), u.members.end(),
                     [&](const Node* n) { return n->name() == u.scope; });
    if (named != u.members.end() &&
        std::all_of(u.members.begin(), u.members.end(), [&](const Node* n) {
          return n == *named || n->op() == "const" ||
                 n->op() == "read_variable" || is_slot(n);
        })) {
      std::rotate(u.members.begin(), named, named + 1);
      u.scope.clear();
    }
  }

  // The clusters: open scopes holding units, with their enclosing scopes.
  std::map<std::string, std::vector<int>> cluster_units;
  std::map<std::string, std::vector<std::string>> child_clusters;
  for (int i = 0; i < static_cast<int>(units.size()); ++i) {
    const std::string& c = units[i].cluster;
    const bool is_new = !cluster_units.contains(c);
    cluster_units[c].push_back(i);
    for (std::string s = c; is_new && !s.empty();) {
      std::string parent = Parent(s);
      if (parent == kGradients) parent.clear();
      if (view.all) parent.clear();
      auto& siblings = child_clusters[parent];
      if (std::find(siblings.begin(), siblings.end(), s) != siblings.end()) {
        break;
      }
      siblings.push_back(s);
      s = parent;
    }
  }

  std::string out = "digraph runnel {\n  rankdir=TB;\n";
  out +=
      "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
      "fontname=\"Helvetica\", fontsize=10];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=8];\n";
  out += "  graph [fontname=\"Helvetica\", fontsize=11];\n";
  int cluster_count = 0;
  absl::flat_hash_map<std::string, int> device_index;
  if (view.placed) {
    for (const Node* n : nodes) {
      if (n->assigned_device().empty()) {
        return absl::FailedPreconditionError(
            StrCat("--placed: '", n->name(), "' has no device assigned"));
      }
      device_index.try_emplace(n->assigned_device(),
                               static_cast<int>(device_index.size()));
    }
  }
  const auto* devices = view.placed ? &device_index : nullptr;
  std::function<void(const std::string&, const std::string&)> emit =
      [&](const std::string& cluster, const std::string& indent) {
        for (int i : cluster_units[cluster]) {
          out += indent + UnitLine(units[i], devices, sparse);
        }
        for (const std::string& child : child_clusters[cluster]) {
          out += StrCat(indent, "subgraph cluster_", cluster_count++, " {\n",
                        indent, "  label=", Quoted({child}), ";\n", indent,
                        "  style=dashed;\n");
          emit(child, indent + "  ");
          out += indent + "}\n";
        }
      };
  emit("", "  ");

  std::vector<Edge> edges;
  absl::flat_hash_map<std::pair<int, int>, int> edge_index;
  auto edge = [&](const Node* from, const Node* to) -> Edge* {
    const int a = unit_of[from], b = unit_of[to];
    if (a == b) return nullptr;
    auto [it, added] =
        edge_index.try_emplace(std::pair(a, b), static_cast<int>(edges.size()));
    if (added) edges.push_back({a, b, {}, false});
    return &edges[it->second];
  };
  for (const Node* n : nodes) {
    for (const NodeOut& in : n->inputs()) {
      Edge* e = edge(in.node, n);
      if (e != nullptr && std::find(e->tensors.begin(), e->tensors.end(), in) ==
                              e->tensors.end()) {
        e->tensors.push_back(in);
      }
    }
    for (const Node* c : n->control_inputs()) {
      if (Edge* e = edge(c, n)) e->control = true;
    }
  }
  for (const Edge& e : edges) {
    // The backward pass in red; what it and the optimizer read from the
    // forward pass (activations, weights) in grey, so that the forward
    // and backward chains stand out. Edges between gradient boxes are
    // laid out from the input end of the model down, so each layer's
    // gradient box sits beside the layer.
    const Part from = PartOf(units[e.from]), to = PartOf(units[e.to]);
    std::string attrs =
        e.tensors.empty() ? "style=dashed" : StrCat("label=", EdgeLabel(e));
    int a = e.from, b = e.to;
    if (from == Part::kGradient) {
      attrs += ", color=firebrick, fontcolor=firebrick";
      if (to == Part::kGradient) {
        std::swap(a, b);
        attrs += ", dir=back";
      }
    } else if (from == Part::kForward && to != Part::kForward) {
      attrs += ", color=gray60, fontcolor=gray45";
    }
    // Placed: an edge between devices is a Send/Recv pair at run time.
    bool crosses = false;
    for (const NodeOut& t : e.tensors) {
      for (const Node* n : units[e.to].members) {
        for (const NodeOut& in : n->inputs()) {
          crosses |=
              in == t && n->assigned_device() != t.node->assigned_device();
        }
      }
    }
    if (view.placed && crosses) {
      attrs += ", penwidth=2.5, color=darkorange, fontcolor=darkorange";
      attrs += StrCat(", xlabel=\"send/recv\"");
    }
    out +=
        StrCat("  n", units[a].id, " -> n", units[b].id, " [", attrs, "];\n");
  }
  out += "}\n";
  return out;
}

}  // namespace runnel::cli
