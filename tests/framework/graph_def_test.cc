#include "framework/graph_def.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "common_runtime/control_flow.h"
#include "common_runtime/session.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::I32;

TEST(GraphDefTest, RoundTripsNodesAttrsSpansAndRuns) {
  Graph g;
  Node* c = *g.AddConst(F32({1, 2, 3}, {3}), "scope/c");
  Node* x = *g.AddNode({.name = "x",
                        .op = "placeholder",
                        .attrs = {{"dtype", DType::kF32}, {"shape", Shape{-1}}},
                        .device = "/cpu:0",
                        .span = {"m.rnl", 4, 2, 4, 9}});
  Node* w = *g.AddNode({.name = "w",
                        .op = "variable",
                        .attrs = {{"dtype", DType::kF32},
                                  {"shape", Shape{3}},
                                  {"initializer", std::string("scope/c:0")}}});
  Node* a =
      *g.AddNode({.name = "a", .op = "assign_add", .inputs = {{w, 0}, {c, 0}}});
  *g.AddNode({.name = "g", .op = "noop", .control_inputs = {a, x}});

  proto::GraphDef def = ToGraphDef(g);
  // Through the wire format and back.
  std::string bytes = def.SerializeAsString();
  proto::GraphDef parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  auto g2 = std::make_shared<Graph>();
  ASSERT_TRUE(FromGraphDef(parsed, g2.get()).ok());
  ASSERT_EQ(g2->num_nodes(), 5);
  for (Node* n : g.nodes()) {
    Node* m = g2->FindNode(n->name());
    ASSERT_NE(m, nullptr) << n->name();
    EXPECT_EQ(m->DebugString(), n->DebugString());
    EXPECT_EQ(m->requested_device(), n->requested_device());
    EXPECT_EQ(m->span().ToString(), n->span().ToString());
    EXPECT_EQ(m->attrs().size(), n->attrs().size());
  }
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(ToGraphDef(*g2), def));

  Session s(g2, {.num_threads = 1});
  auto out = s.Run({}, {"a"}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {3}, {2, 4, 6});
}

// A loop's merges take their next_iterations, made after them: the back
// edges a GraphDef holds as ordinary inputs (a worker registering a
// partition with a loop, issue 31 item 11). Sums 0 + 1 + ... + 4.
TEST(GraphDefTest, RoundTripsALoopWithItsBackEdges) {
  auto g = std::make_shared<Graph>();
  WhileBuilder wb(
      g.get(),
      [&g](NodeSpec spec, bool) -> absl::StatusOr<Node*> {
        spec.name = g->UniqueName(spec.name);
        return g->AddNode(std::move(spec));
      },
      [](NodeOut v) -> absl::StatusOr<NodeOut> { return v; }, "loop", "loop",
      SourceSpan{});
  Node* zero = *g->AddConst(I32({0}, {}), "zero");
  Node* n = *g->AddConst(I32({5}, {}), "n");
  std::vector<NodeOut> top = *wb.Begin({{zero, 0}}, {std::nullopt}, {});
  NodeOut limit = *wb.EnterInvariant({n, 0});
  Node* less = *g->AddNode(
      {.name = "loop/less", .op = "less", .inputs = {top[0], limit}});
  std::vector<NodeOut> in = *wb.Condition({less, 0});
  Node* sum =
      *g->AddNode({.name = "loop/sum", .op = "add", .inputs = {in[1], in[0]}});
  std::vector<NodeOut> exits = *wb.Finish({{sum, 0}}, {});

  auto g2 = std::make_shared<Graph>();
  absl::Status status = FromGraphDef(ToGraphDef(*g), g2.get());
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      ToGraphDef(*g2), ToGraphDef(*g)));
  Session s(g2, {.num_threads = 2});
  auto out = s.Run({}, {exits[1].node->name()}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kI32, {}, {10});
}

TEST(GraphDefTest, RejectsBadInput) {
  proto::GraphDef def;
  proto::NodeDef* n = def.add_node();
  n->set_name("a");
  n->set_op("identity");
  n->add_input("missing:0");
  Graph g;
  absl::Status s = FromGraphDef(def, &g);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(ToStd(s.message())).find("not in the GraphDef"),
            std::string::npos);

  proto::GraphDef cyc;
  for (const char* name : {"p", "q"}) {
    proto::NodeDef* nd = cyc.add_node();
    nd->set_name(name);
    nd->set_op("identity");
    nd->add_input(std::string(name) == "p" ? "q:0" : "p:0");
  }
  Graph g2;
  EXPECT_NE(std::string(ToStd(FromGraphDef(cyc, &g2).message())).find("cycle"),
            std::string::npos);

  proto::TensorProto t = ToProto(F32({1, 2}, {2}));
  t.set_content("abc");
  EXPECT_FALSE(FromProto(t).ok());
}

}  // namespace
}  // namespace runnel
