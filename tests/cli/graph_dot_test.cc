// `runnel graph`'s DOT text for the benchmark MLP (bench/train_mlp.rnl:
// 784-256-128-10 with Adam): one box per scope with its op count, edges
// labelled with shapes, gradients folded per forward scope, the options
// that open boxes, and every node drawn in exactly one unit.
#include "cli/graph_dot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "interpreter/interpreter.h"

namespace runnel::cli {
namespace {

// One DOT node: its id, label lines and the graph nodes its tooltip lists.
struct DotUnit {
  std::string id;
  std::vector<std::string> label;
  std::vector<std::string> members;
};

struct DotEdge {
  std::string from, to;  // the data's direction (dir=back undone)
  std::vector<std::string> label;
  bool dashed = false;
};

std::vector<std::string> Lines(const std::string& escaped) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] == '\\' && i + 1 < escaped.size() && escaped[i + 1] == 'n') {
      out.emplace_back();
      ++i;
    } else {
      out.back() += escaped[i];
    }
  }
  return out;
}

struct Dot {
  std::map<std::string, DotUnit> units;  // by id
  std::vector<DotEdge> edges;
  std::vector<std::string> clusters;  // cluster labels

  explicit Dot(const std::string& text) {
    static const std::regex unit_re(
        R"re(^\s*(n\w+) \[label="([^"]*)", fillcolor=\w+, tooltip="([^"]*)")re");
    static const std::regex edge_re(R"re(^\s*(n\w+) -> (n\w+) \[(.*)\];$)re");
    static const std::regex label_re(R"re(label="([^"]*)")re");
    static const std::regex cluster_re(R"re(^\s*label="([^"]*)";$)re");
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      const std::string line = text.substr(start, end - start);
      start = end + 1;
      std::smatch m;
      if (std::regex_search(line, m, edge_re)) {
        DotEdge e{m[1], m[2], {}, false};
        const std::string attrs = m[3];
        std::smatch l;
        if (std::regex_search(attrs, l, label_re)) e.label = Lines(l[1]);
        e.dashed = attrs.find("style=dashed") != std::string::npos;
        if (attrs.find("dir=back") != std::string::npos) {
          std::swap(e.from, e.to);
        }
        edges.push_back(e);
      } else if (std::regex_search(line, m, unit_re)) {
        DotUnit u{m[1], Lines(m[2]), {}};
        for (std::string member : Lines(m[3])) {
          member = member.substr(0, member.find(" = "));
          u.members.push_back(member);
        }
        units[u.id] = u;
      } else if (std::regex_search(line, m, cluster_re)) {
        clusters.push_back(m[1]);
      }
    }
  }

  // The unit whose label starts with `name`, or nullptr.
  const DotUnit* Find(const std::string& name) const {
    for (const auto& [id, u] : units) {
      if (u.label[0] == name) return &u;
    }
    return nullptr;
  }
  // The label of the edge carrying data from unit `from` to unit `to`.
  std::vector<std::string> EdgeLabel(const std::string& from,
                                     const std::string& to) const {
    const DotUnit* a = Find(from);
    const DotUnit* b = Find(to);
    if (a == nullptr || b == nullptr) return {"(no unit)"};
    for (const DotEdge& e : edges) {
      if (e.from == a->id && e.to == b->id) return e.label;
    }
    return {"(no edge)"};
  }
};

class GraphDotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    err_ = std::tmpfile();
    sink_ = std::make_unique<lang::DiagnosticSink>(err_);
    interp::Options options;
    options.threads = 2;
    options.err = err_;
    options.check_mode = true;
    interp_ = std::make_unique<interp::Interpreter>(options, sink_.get());
    ASSERT_EQ(interp_->RunFile(RUNNEL_SOURCE_DIR "/bench/train_mlp.rnl"), 0);
  }
  void TearDown() override {
    interp_.reset();
    std::fclose(err_);
  }
  Dot View(const GraphView& view) {
    absl::StatusOr<std::string> dot = GraphToDot(interp_->graph(), view);
    EXPECT_TRUE(dot.ok()) << dot.status();
    return Dot(dot.ok() ? *dot : "");
  }
  // Every graph node is listed by exactly one unit.
  void ExpectPartition(const Dot& dot) {
    std::map<std::string, int> seen;
    for (const auto& [id, u] : dot.units) {
      for (const std::string& m : u.members) ++seen[m];
    }
    const std::vector<Node*> nodes = interp_->graph().nodes();
    EXPECT_EQ(seen.size(), nodes.size());
    for (const Node* n : nodes) {
      EXPECT_EQ(seen[n->name()], 1) << n->name();
    }
  }
  // How many graph nodes are named `scope/...`.
  int CountUnder(const std::string& scope) {
    int count = 0;
    for (const Node* n : interp_->graph().nodes()) {
      count += n->name().rfind(scope + "/", 0) == 0;
    }
    return count;
  }

  std::FILE* err_ = nullptr;
  std::unique_ptr<lang::DiagnosticSink> sink_;
  std::unique_ptr<interp::Interpreter> interp_;
};

TEST_F(GraphDotTest, OneBoxPerScopeWithItsOpCount) {
  const Dot dot = View({});
  // dense: w and b with their initial values and reads, matmul, bias_add,
  // relu (9), and Adam's slots dense/w/adam_m, ... (4 slots, each a
  // variable and its initial value: the fused apply_adam reads them itself).
  ASSERT_NE(dot.Find("dense"), nullptr);
  EXPECT_EQ(dot.Find("dense")->label[1], "17 ops");
  EXPECT_EQ(dot.Find("dense_2")->label[1], "16 ops");  // no relu
  EXPECT_EQ(dot.Find("cross_entropy")->label[1], "2 ops");
  for (const std::string scope :
       {"dense", "dense_1", "dense_2", "cross_entropy", "adam"}) {
    ASSERT_NE(dot.Find(scope), nullptr) << scope;
    EXPECT_EQ(dot.Find(scope)->label[1],
              std::to_string(CountUnder(scope)) + " ops")
        << scope;
  }
  // The backward pass: one box per forward scope; the optimizer: one box.
  for (const std::string scope :
       {"dense", "dense_1", "dense_2", "cross_entropy"}) {
    const DotUnit* box = dot.Find("gradients/" + scope);
    ASSERT_NE(box, nullptr) << scope;
    EXPECT_EQ(box->label[1],
              std::to_string(CountUnder("gradients/" + scope)) + " ops");
  }
  // Inputs and the global step stay single nodes.
  EXPECT_EQ(dot.Find("x")->label[1], "placeholder");
  EXPECT_EQ(dot.Find("global_step")->label[1], "variable");
  // 2 inputs, 5 forward boxes, the global step, the gradient seed, 4
  // gradient boxes: a picture of 13 units instead of ~280 nodes.
  EXPECT_EQ(dot.units.size(), 13u);
  EXPECT_TRUE(dot.clusters.empty());
  ExpectPartition(dot);
}

TEST_F(GraphDotTest, EdgesCarryShapes) {
  const Dot dot = View({});
  using L = std::vector<std::string>;
  EXPECT_EQ(dot.EdgeLabel("x", "dense"), L{"f32[?,784]"});
  EXPECT_EQ(dot.EdgeLabel("dense", "dense_1"), L{"f32[?,256]"});
  EXPECT_EQ(dot.EdgeLabel("dense_1", "dense_2"), L{"f32[?,128]"});
  EXPECT_EQ(dot.EdgeLabel("dense_2", "cross_entropy"), L{"f32[?,10]"});
  EXPECT_EQ(dot.EdgeLabel("y", "cross_entropy"), L{"i32[?]"});
  // Backpropagation runs from the loss to the first layer...
  EXPECT_EQ(dot.EdgeLabel("gradients/dense_1", "gradients/dense"),
            L{"f32[?,256]"});
  // ...and the gradients of w and b reach the optimizer.
  EXPECT_EQ(dot.EdgeLabel("gradients/dense", "adam"),
            (L{"f32[784,256]", "f32[256]"}));
  EXPECT_EQ(dot.EdgeLabel("global_step", "adam"), L{"i64[]"});
  // No edge inside a box, none twice.
  std::map<std::pair<std::string, std::string>, int> pairs;
  for (const DotEdge& e : dot.edges) {
    EXPECT_NE(e.from, e.to);
    EXPECT_EQ(++pairs[std::pair(e.from, e.to)], 1) << e.from << " -> " << e.to;
  }
}

TEST_F(GraphDotTest, ExpandOpensOneScope) {
  GraphView view;
  view.expand = {"dense", "gradients/dense_1"};
  const Dot dot = View(view);
  std::vector<std::string> clusters = dot.clusters;
  std::sort(clusters.begin(), clusters.end());
  EXPECT_EQ(clusters, (std::vector<std::string>{"dense", "gradients/dense_1"}));
  EXPECT_EQ(dot.Find("dense"), nullptr);
  ASSERT_NE(dot.Find("dense/y"), nullptr);
  EXPECT_EQ(dot.Find("dense/y")->label[1], "matmul");
  // A variable, its initial value and its read are one node, with its
  // optimizer slots (`<var>/<slot>`) and theirs.
  EXPECT_EQ(dot.Find("dense/w")->label[1], "variable");
  EXPECT_EQ(dot.Find("dense/w")->members,
            (std::vector<std::string>{
                "dense/w", "dense/w/initial_value", "dense/w/read",
                "dense/w/adam_m/initial_value", "dense/w/adam_m",
                "dense/w/adam_v/initial_value", "dense/w/adam_v"}));
  EXPECT_EQ(dot.EdgeLabel("x", "dense/y"),
            std::vector<std::string>{"f32[?,784]"});
  EXPECT_EQ(dot.EdgeLabel("dense/relu", "dense_1"),
            std::vector<std::string>{"f32[?,256]"});
  // The other scopes stay closed; the opened gradients box shows its parts.
  EXPECT_NE(dot.Find("dense_1"), nullptr);
  EXPECT_NE(dot.Find("gradients/dense"), nullptr);
  EXPECT_EQ(dot.Find("gradients/dense_1"), nullptr);
  EXPECT_NE(dot.Find("gradients/dense_1/y"), nullptr);
  ExpectPartition(dot);
}

TEST_F(GraphDotTest, DepthOpensEveryScopeToThatLevel) {
  GraphView view;
  view.depth = 2;
  const Dot dot = View(view);
  for (const std::string scope :
       {"dense", "dense_1", "dense_2", "cross_entropy", "adam",
        "gradients/dense", "gradients/cross_entropy"}) {
    EXPECT_NE(std::find(dot.clusters.begin(), dot.clusters.end(), scope),
              dot.clusters.end())
        << scope;
    EXPECT_EQ(dot.Find(scope), nullptr) << scope;
  }
  // Adam's per-variable updates are one box at this depth.
  ASSERT_NE(dot.Find("adam/_apply"), nullptr);
  EXPECT_EQ(dot.Find("adam/_apply")->label[1],
            std::to_string(CountUnder("adam/_apply")) + " ops");
  EXPECT_EQ(dot.Find("gradients/dense/y")->label[1], "3 ops");
  ExpectPartition(dot);

  // Deep enough, no box is left: every unit is one node (with the
  // constants that initialize it).
  view.depth = 100;
  const Dot deep = View(view);
  for (const auto& [id, u] : deep.units) {
    EXPECT_EQ(u.label[1].find(" op"), std::string::npos) << u.label[0];
    EXPECT_EQ(u.members[0], u.label[0]);
  }
  ExpectPartition(deep);
}

TEST_F(GraphDotTest, AllDrawsEveryNode) {
  GraphView view;
  view.all = true;
  const Dot dot = View(view);
  EXPECT_EQ(static_cast<int>(dot.units.size()), interp_->graph().num_nodes());
  for (const auto& [id, u] : dot.units) EXPECT_EQ(u.members.size(), 1u);
  // One cluster per top-level scope.
  EXPECT_NE(std::find(dot.clusters.begin(), dot.clusters.end(), "gradients"),
            dot.clusters.end());
  EXPECT_NE(std::find(dot.clusters.begin(), dot.clusters.end(), "adam"),
            dot.clusters.end());
  ExpectPartition(dot);
}

TEST_F(GraphDotTest, ExpandingAMissingScopeIsAnError) {
  GraphView view;
  view.expand = {"dens"};
  absl::StatusOr<std::string> dot = GraphToDot(interp_->graph(), view);
  ASSERT_FALSE(dot.ok());
  EXPECT_EQ(dot.status().message(),
            "--expand: the graph has no scope 'dens' (its top-level scopes: "
            "adam, cross_entropy, dense, dense_1, dense_2, global_step, "
            "gradients)");
}

TEST(GraphViewOptions, ParsesAndRefuses) {
  GraphView view;
  std::string error;
  std::vector<std::string> values = {"dense/", "3", "0"};
  size_t next = 0;
  auto take = [&](std::string* v) {
    if (next >= values.size()) return false;
    *v = values[next++];
    return true;
  };
  EXPECT_TRUE(TakeGraphViewOption("--expand", take, &view, &error));
  EXPECT_EQ(view.expand, std::vector<std::string>{"dense"});
  EXPECT_TRUE(TakeGraphViewOption("--depth", take, &view, &error));
  EXPECT_EQ(view.depth, 3);
  EXPECT_TRUE(error.empty());
  EXPECT_TRUE(TakeGraphViewOption("--depth", take, &view, &error));
  EXPECT_EQ(error, "--depth needs a positive integer");
  error.clear();
  EXPECT_TRUE(TakeGraphViewOption("--all", take, &view, &error));
  EXPECT_TRUE(view.all);
  EXPECT_TRUE(TakeGraphViewOption("--placed", take, &view, &error));
  EXPECT_TRUE(view.placed);
  EXPECT_TRUE(error.empty());
  EXPECT_FALSE(TakeGraphViewOption("--seed", take, &view, &error));
}

}  // namespace
}  // namespace runnel::cli
