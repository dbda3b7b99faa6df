// Sparse gradients and the ops behind them (framework/ops/sparse_ops.cc):
// unique, unsorted_segment_sum, dynamic_partition and dynamic_stitch against
// hand-computed values and finite differences; sums of sparse gradients
// staying sparse; scatter updates in place unless a reader holds the value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common_runtime/gradients.h"
#include "common_runtime/session.h"
#include "framework/resource_mgr.h"
#include "framework/variable.h"
#include "tests/util/gradient_check.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using testing::CheckGradient;
using testing::CheckGradientOf;
using testing::Diff;
using testing::ExpectTensor;
using testing::F32;
using testing::Fixed;
using ::testing::HasSubstr;
using testing::I32;
using testing::I64;
using testing::Run1;
using testing::RunError;

std::vector<Tensor> RunAll(const std::string& op, std::vector<Tensor> inputs,
                           AttrMap attrs = {}) {
  absl::StatusOr<std::vector<Tensor>> out =
      testing::Eager().Execute(op, std::move(inputs), std::move(attrs));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>{};
}

// ---- the ops ----------------------------------------------------------------

TEST(SparseOps, UniqueKeepsFirstAppearanceOrder) {
  std::vector<Tensor> out = RunAll("unique", {I64({3, 1, 3, 2, 1}, {5})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kI64, Shape{3}, {3, 1, 2}, 0);
  ExpectTensor(out[1], DType::kI32, Shape{5}, {0, 1, 0, 2, 1}, 0);
  out = RunAll("unique", {I32({}, {0})});
  ExpectTensor(out[0], DType::kI32, Shape{0}, {}, 0);
}

TEST(SparseOps, UnsortedSegmentSum) {
  Tensor data = F32({1, 2, 3, 4, 5, 6}, Shape{3, 2});
  ExpectTensor(Run1("unsorted_segment_sum",
                    {data, I32({1, 0, 1}, {3}), Tensor::Scalar<int32_t>(3)}),
               DType::kF32, Shape{3, 2}, {3, 4, 6, 8, 0, 0}, 0);
  // segment_ids of rank 2 over data [2, 2, 1].
  ExpectTensor(Run1("unsorted_segment_sum",
                    {F32({1, 2, 3, 4}, Shape{2, 2, 1}),
                     I32({0, 0, 1, 0}, {2, 2}), Tensor::Scalar<int32_t>(2)}),
               DType::kF32, Shape{2, 1}, {7, 3}, 0);
  absl::Status s =
      RunError("unsorted_segment_sum",
               {data, I32({1, 3, 1}, {3}), Tensor::Scalar<int32_t>(3)});
  EXPECT_THAT(s.message(), HasSubstr("segment id 3 (segment_ids[1])"));
}

TEST(SparseOps, DynamicPartition) {
  Tensor x = F32({10, 11, 20, 21, 30, 31, 40, 41, 50, 51}, Shape{5, 2});
  std::vector<Tensor> out =
      RunAll("dynamic_partition", {x, I32({1, 0, 1, 2, 0}, {5})},
             {{"num_partitions", int64_t{4}}});
  ASSERT_EQ(out.size(), 4u);
  ExpectTensor(out[0], DType::kF32, Shape{2, 2}, {20, 21, 50, 51}, 0);
  ExpectTensor(out[1], DType::kF32, Shape{2, 2}, {10, 11, 30, 31}, 0);
  ExpectTensor(out[2], DType::kF32, Shape{1, 2}, {40, 41}, 0);
  ExpectTensor(out[3], DType::kF32, Shape{0, 2}, {}, 0);
  absl::Status s = RunError("dynamic_partition", {x, I32({1, 0, 4, 2, 0}, {5})},
                            {{"num_partitions", int64_t{4}}});
  EXPECT_THAT(s.message(), HasSubstr("partition 4 (partitions[2])"));
}

TEST(SparseOps, DynamicStitchUndoesPartition) {
  // values_0, values_1, then indices_0, indices_1; index 3 is named twice
  // and the later part wins; row 5 is named by none and is zero.
  Tensor merged =
      Run1("dynamic_stitch", {F32({1, 2, 3}, Shape{3}), F32({4, 5}, Shape{2}),
                              I32({0, 3, 2}, {3}), I32({3, 6}, {2})});
  ExpectTensor(merged, DType::kF32, Shape{7}, {1, 0, 3, 4, 0, 0, 5}, 0);
  Tensor rows = Run1("dynamic_stitch",
                     {F32({1, 2, 3, 4}, Shape{2, 2}), I32({1, 0}, {2})});
  ExpectTensor(rows, DType::kF32, Shape{2, 2}, {3, 4, 1, 2}, 0);
}

// ---- gradients --------------------------------------------------------------

// `op` over `inputs`, its outputs reshaped to `shapes`: the checker weighs
// outputs by shape, and these ops' row counts are known only at run time.
void CheckWithShapes(const std::string& op,
                     const std::vector<testing::GradInput>& inputs,
                     AttrMap attrs, const std::vector<Shape>& shapes,
                     testing::GradCheckOptions options = {}) {
  CheckGradientOf(
      [&](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
        absl::StatusOr<Node*> n = g.AddNode(
            {.name = g.UniqueName(op), .op = op, .inputs = in, .attrs = attrs});
        EXPECT_TRUE(n.ok()) << n.status();
        std::vector<NodeOut> out;
        for (size_t i = 0; i < shapes.size() && n.ok(); ++i) {
          Node* shape = *g.AddConst(Tensor::OfDims(shapes[i].dims()),
                                    g.UniqueName("shape"));
          out.push_back(
              {*g.AddNode({.name = g.UniqueName("reshape"),
                           .op = "reshape",
                           .inputs = {{*n, static_cast<int>(i)}, {shape, 0}}}),
               0});
        }
        return out;
      },
      inputs, options);
}

TEST(SparseGradientCheck, Ops) {
  CheckGradient("unsorted_segment_sum",
                {Diff({4, 3}), Fixed(I32({2, 0, 2, 1}, {4})),
                 Fixed(Tensor::Scalar<int32_t>(4))});
  const AttrMap three{{"num_partitions", int64_t{3}}};
  CheckWithShapes("dynamic_partition",
                  {Diff({5, 2}), Fixed(I32({1, 0, 1, 2, 0}, {5}))}, three,
                  {Shape{2, 2}, Shape{2, 2}, Shape{1, 2}});
  CheckWithShapes(
      "dynamic_partition", {Diff({5, 2}), Fixed(I32({1, 0, 1, 2, 0}, {5}))},
      three, {Shape{2, 2}, Shape{2, 2}, Shape{1, 2}}, {.unknown_dims = true});
  // Partition 1 gets nothing; only partition 0 is used.
  CheckWithShapes("dynamic_partition", {Diff({3}), Fixed(I32({0, 2, 0}, {3}))},
                  three, {Shape{2}});
  CheckWithShapes("dynamic_stitch",
                  {Diff({2, 2}), Diff({3, 2}), Fixed(I32({4, 0}, {2})),
                   Fixed(I32({1, 3, 2}, {3}))},
                  {}, {Shape{5, 2}});
}

// Two lookups of one table: the gradient is one sparse gather_grad whose
// rows are both lookups' rows, and it equals finite differences.
TEST(SparseGradients, SumsOfSparseGradientsStaySparse) {
  auto build = [](Graph& g, const std::vector<NodeOut>& in,
                  NodeOut* grad) -> NodeOut {
    auto add = [&](const char* op, std::vector<NodeOut> inputs) -> NodeOut {
      absl::StatusOr<Node*> n = g.AddNode(
          {.name = g.UniqueName(op), .op = op, .inputs = std::move(inputs)});
      EXPECT_TRUE(n.ok()) << n.status();
      return {*n, 0};
    };
    auto constant = [&](Tensor t) -> NodeOut {
      return {*g.AddConst(std::move(t), g.UniqueName("c")), 0};
    };
    NodeOut a = add("gather", {in[0], constant(I32({2, 0, 2}, {3}))});
    NodeOut b = add("gather", {in[0], constant(I64({1, 2, 0, 0}, {2, 2}))});
    NodeOut y = add("add", {add("sum", {add("square", {a})}),
                            add("sum", {add("sin", {b})})});
    absl::StatusOr<std::vector<NodeOut>> d = AddGradients(&g, y, {in[0]});
    EXPECT_TRUE(d.ok()) << d.status();
    *grad = d.ok() ? (*d)[0] : NodeOut{};
    return *grad;
  };
  CheckGradientOf(
      [&](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
        NodeOut grad;
        build(g, in, &grad);
        std::optional<SparseGradient> sparse = AsSparseGradient(grad);
        EXPECT_TRUE(sparse.has_value()) << grad.node->op();
        if (sparse) {
          EXPECT_EQ(sparse->indices.node->op(), "concat");
          EXPECT_EQ(sparse->values.node->op(), "concat");
        }
        return {grad};
      },
      {Diff({3, 2})});
}

TEST(SparseGradients, OnlyGathersAlongAxisZeroAreSparse) {
  Graph g;
  Node* p =
      *g.AddNode({.name = "p",
                  .op = "placeholder",
                  .attrs = {{"dtype", DType::kF32}, {"shape", Shape{3, 2}}}});
  Node* i = *g.AddConst(I32({1}, {1}), "i");
  Node* g0 =
      *g.AddNode({.name = "g0", .op = "gather", .inputs = {{p, 0}, {i, 0}}});
  Node* g1 = *g.AddNode({.name = "g1",
                         .op = "gather",
                         .inputs = {{p, 0}, {i, 0}},
                         .attrs = {{"axis", int64_t{1}}}});
  Node* s0 = *g.AddNode({.name = "s0", .op = "sum", .inputs = {{g0, 0}}});
  Node* s1 = *g.AddNode({.name = "s1", .op = "sum", .inputs = {{g1, 0}}});
  std::vector<NodeOut> d0 = *AddGradients(&g, {s0, 0}, {{p, 0}});
  std::vector<NodeOut> d1 = *AddGradients(&g, {s1, 0}, {{p, 0}});
  EXPECT_TRUE(AsSparseGradient(d0[0]).has_value());
  EXPECT_FALSE(AsSparseGradient(d1[0]).has_value());
}

// ---- updates in place -------------------------------------------------------

TEST(VariableMutate, InPlaceUnlessAReaderHoldsTheValue) {
  Variable v(DType::kF32, Shape{2});
  ASSERT_TRUE(v.Assign(F32({1, 2}, Shape{2})).ok());
  auto add_one = [](Tensor* t) {
    t->data<float>()[0] += 1;
    return absl::OkStatus();
  };
  const void* before = v.Read()->raw_data();
  Tensor next = *v.Mutate(add_one);
  EXPECT_EQ(next.raw_data(), before) << "nobody read it: updated in place";
  ExpectTensor(next, DType::kF32, Shape{2}, {2, 2}, 0);
  Tensor held = *v.Read();
  next = *v.Mutate(add_one);
  EXPECT_NE(next.raw_data(), held.raw_data()) << "a reader holds it: copied";
  ExpectTensor(held, DType::kF32, Shape{2}, {2, 2}, 0);
  ExpectTensor(next, DType::kF32, Shape{2}, {3, 2}, 0);
  absl::Status failed = v.Mutate([](Tensor*) {
                           return absl::InvalidArgumentError("no");
                         }).status();
  EXPECT_EQ(failed.code(), absl::StatusCode::kInvalidArgument);
  ExpectTensor(*v.Read(), DType::kF32, Shape{2}, {3, 2}, 0);
}

// A write with a key (framework/variable.h: WriteKey) is made once: a
// retried update's writes that are already in change nothing, and a
// replica's copy carries which are in.
TEST(VariableWriteKeys, ARetriedWriteIsMadeOnce) {
  Variable v(DType::kF32, Shape{1});
  ASSERT_TRUE(v.Assign(F32({0}, Shape{1})).ok());
  auto add = [](float d) {
    return [d](const Tensor& old) -> absl::StatusOr<Tensor> {
      Tensor t = old.Clone();
      t.data<float>()[0] += d;
      return t;
    };
  };
  const WriteKey first{.writer = "w0", .seq = 1, .write = "bump@0:0"};
  const WriteKey again_in_loop{.writer = "w0", .seq = 1, .write = "bump@7:1"};
  const WriteKey next{.writer = "w0", .seq = 2, .write = "bump@0:0"};
  const WriteKey other{.writer = "w1", .seq = 1, .write = "bump@0:0"};
  ASSERT_TRUE(v.Update(add(1), &first).ok());
  ASSERT_TRUE(v.Update(add(1), &first).ok());  // the retry: not again
  ExpectTensor(*v.Read(), DType::kF32, Shape{1}, {1}, 0);
  ASSERT_TRUE(v.Update(add(10), &again_in_loop).ok());  // another iteration
  ASSERT_TRUE(v.Update(add(100), &other).ok());         // another writer
  ASSERT_TRUE(v.Update(add(1000), &next).ok());         // the next update
  ASSERT_TRUE(v.Update(add(1), &first).ok());  // an older update: not again
  ExpectTensor(*v.Read(), DType::kF32, Shape{1}, {1111}, 0);
  Tensor held = *v.Read();
  ASSERT_TRUE(v.Mutate(
                   [](Tensor* t) {
                     t->data<float>()[0] += 1;
                     return absl::OkStatus();
                   },
                   nullptr, &next)
                  .ok());
  ASSERT_TRUE(v.Assign(F32({-1}, Shape{1}), nullptr, &other).ok());
  ExpectTensor(*v.Read(), DType::kF32, Shape{1}, {1111}, 0);

  // A replica's copy: the value, the writes in, and a new version at every
  // write that was made.
  const uint64_t version = v.version();
  ASSERT_TRUE(v.Update(add(1), &next).ok());
  EXPECT_EQ(v.version(), version);
  absl::StatusOr<Variable::Copy> copy = v.Snapshot();
  ASSERT_TRUE(copy.ok());
  Variable backup(DType::kF32, Shape{1});
  ASSERT_TRUE(backup.Install(*copy).ok());
  ExpectTensor(*backup.Read(), DType::kF32, Shape{1}, {1111}, 0);
  ASSERT_TRUE(backup.Update(add(1), &next).ok());  // in on the primary
  const WriteKey later{.writer = "w1", .seq = 2, .write = "bump@0:0"};
  ASSERT_TRUE(backup.Update(add(5), &later).ok());
  ExpectTensor(*backup.Read(), DType::kF32, Shape{1}, {1116}, 0);
  Variable::Copy wrong;
  wrong.initialized = true;
  wrong.value = F32({1, 2}, Shape{2});
  EXPECT_FALSE(backup.Install(wrong).ok());
  ASSERT_TRUE(backup.Install(Variable::Copy()).ok());
  EXPECT_FALSE(backup.initialized());
}

}  // namespace
}  // namespace runnel
