// Graph tests: node creation runs shape inference, names are unique, ids are
// a topological order, lookups, debug strings and tensor names.
#include "framework/graph.h"

#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::F32;
using ::runnel::testing::I32;

TEST(GraphTest, AddNodeInfersOutputsAndNumbersNodesInOrder) {
  Graph g;
  Node* a = *g.AddConst(F32({1, 2, 3, 4, 5, 6}, {2, 3}), "a");
  Node* b = *g.AddConst(F32({1, 1, 1}, {3}), "b");
  absl::StatusOr<Node*> s =
      g.AddNode({.name = "s", .op = "add", .inputs = {{a, 0}, {b, 0}}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(a->id(), 0);
  EXPECT_EQ(b->id(), 1);
  EXPECT_EQ((*s)->id(), 2);
  EXPECT_EQ(g.num_nodes(), 3);
  EXPECT_EQ(g.node(2), *s);
  EXPECT_EQ((*s)->op(), "add");
  EXPECT_EQ((*s)->num_outputs(), 1);
  EXPECT_EQ((*s)->output_dtype(0), DType::kF32);
  EXPECT_EQ((*s)->output_shape(0), (Shape{2, 3}));
  EXPECT_EQ((*s)->input_dtype(1), DType::kF32);
  EXPECT_EQ((*s)->DebugString(), "s = add(a:0, b:0) : f32[2,3]");
  ASSERT_NE(a->constant_value(), nullptr);
  EXPECT_EQ(a->constant_value()->at<float>(5), 6);
  EXPECT_EQ((*s)->constant_value(), nullptr);
  std::vector<Node*> all = g.nodes();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], a);
  EXPECT_EQ(all[2], *s);
}

TEST(GraphTest, ControlInputsAppearInTheDebugString) {
  Graph g;
  Node* a = *g.AddConst(F32({1}, {1}), "a");
  Node* group =
      *g.AddNode({.name = "group", .op = "noop", .control_inputs = {a}});
  ASSERT_EQ(group->control_inputs().size(), 1u);
  EXPECT_EQ(group->control_inputs()[0], a);
  EXPECT_EQ(group->DebugString(), "group = noop(^a) : ");
}

TEST(GraphTest, ShapeErrorAtNodeCreation) {
  Graph g;
  Node* a = *g.AddConst(F32({1, 2}, {2}), "a");
  Node* b = *g.AddConst(I32({1, 2}, {2}), "b");
  auto bad = g.AddNode({.name = "s",
                        .op = "add",
                        .inputs = {{a, 0}, {b, 0}},
                        .span = {.file = "x.rnl", .line = 1, .col = 5}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(NodeNameOf(bad.status()).value_or(""), "s");
  EXPECT_EQ(SpanOf(bad.status())->ToString(), "x.rnl:1:5");
  auto v = g.AddNode({.name = "v",
                      .op = "variable",
                      .attrs = {{"dtype", DType::kF32}, {"shape", Shape{-1}}},
                      .span = {.file = "x.rnl", .line = 2, .col = 1}});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(std::string(ToStd(v.status().message())),
            "variable: a variable needs a fully known shape, got [?]");
  EXPECT_EQ(SpanOf(v.status())->ToString(), "x.rnl:2:1");
  // A failed node takes no id and no name.
  EXPECT_EQ(g.num_nodes(), 2);
  EXPECT_EQ(g.FindNode("s"), nullptr);
}

TEST(GraphTest, NamesAreUniqueAndNonEmpty) {
  Graph g;
  Node* a = *g.AddConst(F32({1}, {1}), "a");
  auto dup = g.AddNode({.name = "a", .op = "identity", .inputs = {{a, 0}}});
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(std::string(ToStd(dup.status().message())),
            "node name 'a' is empty or taken");
  EXPECT_FALSE(g.AddNode({.name = "", .op = "noop"}).ok());
  EXPECT_EQ(g.UniqueName("b"), "b");
  EXPECT_EQ(g.UniqueName("a"), "a_1");
  ASSERT_TRUE(g.AddConst(F32({2}, {1}), "a_1").ok());
  EXPECT_EQ(g.UniqueName("a"), "a_2");
  EXPECT_EQ(g.FindNode("a"), a);
  EXPECT_EQ(g.FindNode("nope"), nullptr);
}

TEST(GraphTest, UnknownOpsAndBadInputsAreErrors) {
  Graph g;
  auto unknown = g.AddNode({.name = "z", .op = "no_such_op"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(ToStd(unknown.status().message())),
            "unknown op 'no_such_op'");
  Node* a = *g.AddConst(F32({1}, {1}), "a");
  auto bad = g.AddNode({.name = "n", .op = "neg", .inputs = {{a, 1}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(ToStd(bad.status().message())),
            "neg: input 0 is not an output of a node");
}

TEST(GraphTest, ParseTensorName) {
  EXPECT_EQ(*ParseTensorName("dense/w"),
            std::make_pair(std::string("dense/w"), 0));
  EXPECT_EQ(*ParseTensorName("split:2"),
            std::make_pair(std::string("split"), 2));
  EXPECT_FALSE(ParseTensorName("x:-1").ok());
  EXPECT_EQ(std::string(ToStd(ParseTensorName("x:y").status().message())),
            "malformed tensor name 'x:y'");
}

}  // namespace
}  // namespace runnel
