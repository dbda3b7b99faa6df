// PruneGraph: what a run of some fetches and targets needs, given its feeds.
#include "common_runtime/prune.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::F32;
using ::runnel::testing::Placeholder;

std::vector<std::string> Names(const std::vector<Node*>& nodes) {
  std::vector<std::string> out;
  for (const Node* n : nodes) out.push_back(n->name());
  return out;
}

using Strings = std::vector<std::string>;

// x, y placeholders; c const; a = x + c; b = a + y; unused = c + c;
// group runs `unused` through a control edge.
class PruneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    x_ = Placeholder(g_, "x", {2});
    y_ = Placeholder(g_, "y", {2});
    c_ = *g_.AddConst(F32({1, 2}, {2}), "c");
    a_ = Add(g_, "a", "test_sum", {{x_, 0}, {c_, 0}});
    b_ = Add(g_, "b", "test_sum", {{a_, 0}, {y_, 0}});
    unused_ = Add(g_, "unused", "test_sum", {{c_, 0}, {c_, 0}});
    group_ = *g_.AddNode(
        {.name = "group", .op = "noop", .control_inputs = {unused_}});
  }
  Graph g_;
  Node *x_, *y_, *c_, *a_, *b_, *unused_, *group_;
};

TEST_F(PruneTest, FetchNeedsItsInputsInTopologicalOrder) {
  absl::StatusOr<PrunedGraph> p = PruneGraph(g_, {{b_, 0}}, {}, {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Names(p->nodes), (Strings{"x", "y", "c", "a", "b"}));
  EXPECT_EQ(Names(p->missing_feeds), (Strings{"x", "y"}));
}

TEST_F(PruneTest, FeedsCutTheGraph) {
  // Feeding x and y: nothing is missing.
  absl::StatusOr<PrunedGraph> p =
      PruneGraph(g_, {{b_, 0}}, {}, {{x_, 0}, {y_, 0}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Names(p->nodes), (Strings{"c", "a", "b"}));
  EXPECT_TRUE(p->missing_feeds.empty());
  // Feeding a: neither x nor c is needed, y still is.
  p = PruneGraph(g_, {{b_, 0}}, {}, {{a_, 0}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Names(p->nodes), (Strings{"y", "b"}));
  EXPECT_EQ(Names(p->missing_feeds), (Strings{"y"}));
  // A fetch that is fed needs nothing.
  p = PruneGraph(g_, {{b_, 0}}, {}, {{b_, 0}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->nodes.empty());
}

TEST_F(PruneTest, TargetsFollowControlEdges) {
  absl::StatusOr<PrunedGraph> p = PruneGraph(g_, {}, {group_}, {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Names(p->nodes), (Strings{"c", "unused", "group"}));
  EXPECT_TRUE(p->missing_feeds.empty());
  p = PruneGraph(g_, {{a_, 0}}, {group_}, {{x_, 0}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Names(p->nodes), (Strings{"c", "a", "unused", "group"}));
}

TEST_F(PruneTest, EndpointsMustBelongToTheGraph) {
  Graph other;
  Node* z = *other.AddConst(F32({1}, {1}), "z");
  EXPECT_EQ(PruneGraph(g_, {{b_, 0}}, {}, {{z, 0}}).status().message(),
            "feed is not a tensor of the graph");
  EXPECT_EQ(PruneGraph(g_, {{b_, 0}}, {}, {{x_, 1}}).status().message(),
            "feed is not a tensor of the graph");
  EXPECT_EQ(PruneGraph(g_, {{a_, 3}}, {}, {}).status().message(),
            "fetch is not a tensor of the graph");
  EXPECT_EQ(PruneGraph(g_, {}, {nullptr}, {}).status().message(),
            "target is not a node of the graph");
}

}  // namespace
}  // namespace runnel
