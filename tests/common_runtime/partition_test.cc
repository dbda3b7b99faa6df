// The partitioner (common_runtime/partition.h): one graph per device, a
// _send/_recv pair per tensor and receiving device, constants copied rather
// than sent, control edges as token pairs, and f16 transfers of large f32
// tensors only.
#include "common_runtime/partition.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/graph.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::Placeholder;

using ::runnel::testing::kCpu0;
using ::runnel::testing::kCpu1;

// The nodes of `g` with op `op`.
std::vector<const Node*> NodesOf(const Graph& g, const std::string& op) {
  std::vector<const Node*> out;
  for (const Node* n : g.nodes()) {
    if (n->op() == op) out.push_back(n);
  }
  return out;
}

TEST(PartitionTest, OnePairPerCutTensorAndDevice) {
  Graph g;
  Node* x = Placeholder(g, "x", Shape{2});
  Node* a = Add(g, "a", "neg", {{x, 0}});
  Node* b = Add(g, "b", "exp", {{a, 0}});
  Node* c = Add(g, "c", "abs", {{a, 0}});
  absl::StatusOr<Node*> d = g.AddNode(
      {.name = "d", .op = "neg", .inputs = {{x, 0}}, .control_inputs = {b}});
  ASSERT_TRUE(d.ok());
  for (Node* n : {x, a, *d}) n->set_assigned_device(kCpu0);
  for (Node* n : {b, c}) n->set_assigned_device(kCpu1);
  absl::StatusOr<std::vector<GraphPartition>> parts = PartitionGraph(g);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 2u);
  // a -> {b, c}: one pair; the control edge b -> d: one more, back.
  EXPECT_EQ((*parts)[0].num_sends, 1);
  EXPECT_EQ((*parts)[1].num_recvs, 1);
  EXPECT_EQ((*parts)[1].num_sends, 1);
  EXPECT_EQ((*parts)[0].num_recvs, 1);
  const Graph& p1 = *(*parts)[1].graph;
  const Node* b1 = p1.FindNode("b");
  const Node* c1 = p1.FindNode("c");
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(b1->input(0).node->op(), "_recv");
  EXPECT_EQ(b1->input(0).node, c1->input(0).node);
  const Node* d0 = (*parts)[0].graph->FindNode("d");
  ASSERT_EQ(d0->control_inputs().size(), 1u);
  EXPECT_EQ(d0->control_inputs()[0]->op(), "_recv");
}

TEST(PartitionTest, OneDeviceIsOneGraphWithoutPairs) {
  Graph g;
  Node* x = Placeholder(g, "x", Shape{3});
  Node* y = Add(g, "y", "exp", {{x, 0}});
  Add(g, "z", "add", {{x, 0}, {y, 0}});
  for (Node* n : g.nodes()) n->set_assigned_device(kCpu0);
  absl::StatusOr<std::vector<GraphPartition>> parts = PartitionGraph(g);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].device, kCpu0);
  EXPECT_EQ((*parts)[0].num_sends, 0);
  EXPECT_EQ((*parts)[0].num_recvs, 0);
  const Graph& p = *(*parts)[0].graph;
  EXPECT_EQ(p.num_nodes(), g.num_nodes());
  const Node* z = p.FindNode("z");
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->input(0).node->name(), "x");
  EXPECT_EQ(z->input(1).node->name(), "y");
}

TEST(PartitionTest, ANodeWithoutADeviceIsAnErrorNamingIt) {
  Graph g;
  Node* x = Placeholder(g, "x", Shape{3});
  Node* y = Add(g, "lonely", "neg", {{x, 0}});
  x->set_assigned_device(kCpu0);
  (void)y;
  absl::StatusOr<std::vector<GraphPartition>> parts = PartitionGraph(g);
  ASSERT_FALSE(parts.ok());
  EXPECT_NE(parts.status().message().find("'lonely' has no device assigned"),
            std::string::npos)
      << parts.status();
}

TEST(PartitionTest, AConstantIsCopiedToItsConsumersDeviceNotSent) {
  Graph g;
  Node* x = Placeholder(g, "x", Shape{2});
  Node* c = Add(g, "c", "const", {},
                {{"value", Tensor::FromVector(std::vector<float>{1e-8f, 2})}});
  Node* y = Add(g, "y", "add", {{x, 0}, {c, 0}});
  for (Node* n : {x, c}) n->set_assigned_device(kCpu0);
  y->set_assigned_device(kCpu1);
  // Even under f16 transfers the copy keeps full precision (1e-8 would
  // round to 0 in f16).
  absl::StatusOr<std::vector<GraphPartition>> parts =
      PartitionGraph(g, {.f16_transfers = true});
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 2u);
  // x crosses (one pair); c does not.
  EXPECT_EQ((*parts)[0].num_sends, 1);
  EXPECT_EQ((*parts)[1].num_recvs, 1);
  const Node* y1 = (*parts)[1].graph->FindNode("y");
  ASSERT_NE(y1, nullptr);
  EXPECT_EQ(y1->input(0).node->op(), "_recv");
  const Node* copy = y1->input(1).node;
  EXPECT_EQ(copy->op(), "const");
  absl::StatusOr<Tensor> value = GetAttr<Tensor>(copy->attrs(), "value");
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value->dtype(), DType::kF32);
  EXPECT_EQ(value->data<float>()[0], 1e-8f);
}

TEST(PartitionTest, F16TransfersCastLargeF32TensorsOnly) {
  Graph g;
  Node* big = Placeholder(g, "big", Shape{32, 32});  // 1024 elements
  Node* small = Placeholder(g, "small", Shape{1023});
  Node* a = Add(g, "a", "neg", {{big, 0}});
  Node* b = Add(g, "b", "neg", {{small, 0}});
  for (Node* n : {big, small}) n->set_assigned_device(kCpu0);
  for (Node* n : {a, b}) n->set_assigned_device(kCpu1);

  absl::StatusOr<std::vector<GraphPartition>> plain = PartitionGraph(g);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(NodesOf(*(*plain)[0].graph, "cast").empty());
  EXPECT_TRUE(NodesOf(*(*plain)[1].graph, "cast").empty());

  absl::StatusOr<std::vector<GraphPartition>> parts =
      PartitionGraph(g, {.f16_transfers = true});
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].num_sends, 2);
  // The large one: f32 -> f16 before the send, f16 -> f32 after the
  // receive; its consumer sees f32.
  const Node* a1 = (*parts)[1].graph->FindNode("a");
  ASSERT_NE(a1, nullptr);
  const Node* to_f32 = a1->input(0).node;
  EXPECT_EQ(to_f32->op(), "cast");
  EXPECT_EQ(to_f32->output_dtype(0), DType::kF32);
  const Node* recv = to_f32->input(0).node;
  EXPECT_EQ(recv->op(), "_recv");
  EXPECT_EQ(recv->output_dtype(0), DType::kF16);
  const std::vector<const Node*> sender_casts =
      NodesOf(*(*parts)[0].graph, "cast");
  ASSERT_EQ(sender_casts.size(), 1u);
  EXPECT_EQ(sender_casts[0]->input(0).node->name(), "big");
  EXPECT_EQ(sender_casts[0]->output_dtype(0), DType::kF16);
  // The small one crosses as it is.
  const Node* b1 = (*parts)[1].graph->FindNode("b");
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(b1->input(0).node->op(), "_recv");
  EXPECT_EQ(b1->input(0).node->output_dtype(0), DType::kF32);
}

TEST(PartitionTest, PartitionsFollowTheOrderDevicesFirstAppear) {
  Graph g;
  Node* x = Placeholder(g, "x", Shape{2});
  Node* y = Add(g, "y", "neg", {{x, 0}});
  x->set_assigned_device(kCpu1);
  y->set_assigned_device(kCpu0);
  absl::StatusOr<std::vector<GraphPartition>> parts = PartitionGraph(g);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].device, kCpu1);
  EXPECT_EQ((*parts)[1].device, kCpu0);
  EXPECT_EQ((*parts)[0].num_sends, 1);
  EXPECT_EQ((*parts)[1].num_recvs, 1);
}

}  // namespace
}  // namespace runnel
