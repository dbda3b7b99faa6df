#include "runtime/graph_def.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "runtime/session.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;

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
