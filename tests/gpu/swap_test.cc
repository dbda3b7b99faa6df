// A loop's saved values swapped out of the GPU into host memory and back
// (swap_memory, GpuContext::SwapOut/SwapIn, docs/training.md): a stack on
// the GPU whose pushes copy their values out while the kernels after them
// run, and whose pops copy them back in before the kernels that read them.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/strings.h"
#include "common_runtime/session.h"
#include "tests/gpu/gpu_compare.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::I32;

// Pushes neg(values[i]) (computed on the GPU) at index i of one stack with
// `swap`, then pops every index after all the pushes and negates it again
// on the GPU: the fetched values must be `values`, bit for bit.
absl::StatusOr<std::vector<Tensor>> RunSwaps(const std::vector<Tensor>& values,
                                             const std::string& swap) {
  auto g = std::make_shared<Graph>();
  auto add = [&](const std::string& op, std::vector<NodeOut> inputs,
                 AttrMap attrs, std::vector<Node*> control = {}) -> Node* {
    absl::StatusOr<Node*> n = g->AddNode({.name = g->UniqueName(op),
                                          .op = op,
                                          .inputs = std::move(inputs),
                                          .control_inputs = std::move(control),
                                          .attrs = std::move(attrs),
                                          .device = "/gpu:0"});
    EXPECT_TRUE(n.ok()) << n.status();
    return n.ok() ? *n : nullptr;
  };
  Node* stack = add("stack_new", {}, {{"elem_dtype", DType::kF32}});
  std::vector<Node*> pushes, indices;
  for (size_t i = 0; i < values.size(); ++i) {
    Node* c = add("const", {}, {{"value", values[i]}});
    Node* v = add("neg", {{c, 0}}, {});
    Node* index =
        add("const", {}, {{"value", I32({static_cast<int32_t>(i)}, {})}});
    indices.push_back(index);
    pushes.push_back(
        add("stack_push", {{stack, 0}, {index, 0}, {v, 0}}, {{"swap", swap}}));
  }
  std::vector<NodeOut> fetches;
  for (size_t i = 0; i < values.size(); ++i) {
    Node* pop = add("stack_pop", {{stack, 0}, {indices[i], 0}},
                    {{"elem_dtype", DType::kF32}, {"shape", values[i].shape()}},
                    pushes);
    fetches.push_back({add("neg", {{pop, 0}}, {}), 0});
  }
  Session session(g, {.num_threads = 2, .gpu_devices = 1});
  RN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> placed,
                      session.PlacedGraph(Session::Feeds{}, fetches, {}));
  for (const Node* n : placed->nodes()) {
    if ((n->op() == "stack_push" || n->op() == "stack_pop") &&
        n->assigned_device().find("/device:gpu:") == std::string::npos) {
      return absl::InternalError(StrCat(n->name(), " is not on the GPU"));
    }
  }
  return session.Run(Session::Feeds{}, fetches, {});
}

TEST(GpuSwapTest, SwappedValuesComeBackBitForBit) {
  SKIP_WITHOUT_GPU();
  std::vector<Tensor> values;
  // Eight 4 MiB values, a small one and an empty one.
  for (int i = 0; i < 8; ++i) {
    values.push_back(Random(DType::kF32, Shape{1 << 20}, i));
  }
  values.push_back(Random(DType::kF32, Shape{3, 5}, 8));
  values.push_back(Random(DType::kF32, Shape{0, 4}, 9));
  for (const char* swap : {"", "asked", "planned"}) {
    SCOPED_TRACE(swap);
    absl::StatusOr<std::vector<Tensor>> out = RunSwaps(values, swap);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      ExpectClose((*out)[i], values[i], {0, 0}, StrCat("value ", i));
    }
  }
}

// The same stack run again and again: the page-locked buffers and the
// device buffers the copies held go back to their pools.
TEST(GpuSwapTest, RepeatedRunsReuseTheirBuffers) {
  SKIP_WITHOUT_GPU();
  std::vector<Tensor> values;
  for (int i = 0; i < 4; ++i) {
    values.push_back(Random(DType::kF32, Shape{1 << 18}, 20 + i));
  }
  for (int run = 0; run < 20; ++run) {
    absl::StatusOr<std::vector<Tensor>> out = RunSwaps(values, "asked");
    ASSERT_TRUE(out.ok()) << out.status();
    for (size_t i = 0; i < values.size(); ++i) {
      ExpectClose((*out)[i], values[i], {0, 0}, StrCat("run ", run));
    }
  }
}

}  // namespace
}  // namespace runnel
