// The ops gradient functions are built from (runtime/ops/grad_ops.cc, the
// backward ops in nn_ops.cc, dropout's scale, the scatter ops) against hand
// values, values computed offline with NumPy and PyTorch, naive loops, and
// finite differences of the forward ops in f64.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "runtime/float16.h"
#include "runtime/op_registry.h"
#include "runtime/strings.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using testing::ExpectTensor;
using testing::F32;
using testing::F64;
using testing::I32;
using testing::I64;
using testing::Run1;
using testing::RunError;

// Deterministic values in [-1, 1), this file's own stream.
std::vector<float> Pattern(int64_t n, int seed) {
  return testing::PatternValues(n, seed, 3266489917u);
}

// The static output spec of `op` for inputs of `specs`.
std::string InferredSpec(const std::string& op, std::vector<TensorSpec> specs,
                         AttrMap attrs = {}) {
  const OpDef* def = OpRegistry::Global().Find(op);
  EXPECT_NE(def, nullptr) << op;
  if (def == nullptr) return "";
  std::vector<const Tensor*> values(specs.size(), nullptr);
  absl::StatusOr<std::vector<TensorSpec>> out =
      InferOutputs(*def, attrs, std::move(specs), values);
  if (!out.ok()) return std::string(out.status().message());
  std::string s;
  for (const TensorSpec& t : *out) s += (s.empty() ? "" : " ") + t.ToString();
  return s;
}

// ---- activation gradients --------------------------------------------------

TEST(GradOpsTest, ReluGrad) {
  Tensor dy = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor x = F32({-1, 0, 0.5f, 2, -3, NAN}, {2, 3});
  ExpectTensor(Run1("relu_grad", {dy, x}), DType::kF32, {2, 3},
               {0, 0, 3, 4, 0, 0}, 0);
  ExpectTensor(Run1("relu_grad", {I32({7, 8}, {2}), I32({1, -1}, {2})}),
               DType::kI32, {2}, {7, 0}, 0);
  ExpectTensor(Run1("relu_grad", {F64({1, 2}, {2}), F64({1e-300, -0.0}, {2})}),
               DType::kF64, {2}, {1, 0}, 0);
  std::vector<Half> hdy = {FloatToHalf(1.5f), FloatToHalf(-2)};
  std::vector<Half> hx = {FloatToHalf(1), FloatToHalf(-1)};
  ExpectTensor(Run1("relu_grad", {Tensor::FromVector(hdy, {2}),
                                  Tensor::FromVector(hx, {2})}),
               DType::kF16, {2}, {1.5, 0}, 0);
  EXPECT_EQ(
      RunError("relu_grad", {F32({1, 2}, {2}), F32({1, 2, 3}, {3})}).message(),
      "relu_grad: shapes differ: f32[2] and f32[3]");
  EXPECT_EQ(
      RunError("relu_grad", {F32({1, 2}, {2}), F64({1, 2}, {2})}).message(),
      "relu_grad: dtypes differ: f32[2] and f64[2]");
}

TEST(GradOpsTest, SigmoidAndTanhGrad) {
  // y = sigmoid(x) or tanh(x) for some x; the gradients are in y alone.
  Tensor y = F64({0.5, 0.25, 0.9, -0.3}, {4});
  Tensor dy = F64({1, 2, -1, 0.5}, {4});
  ExpectTensor(Run1("sigmoid_grad", {y, dy}), DType::kF64, {4},
               {0.25, 2 * 0.25 * 0.75, -0.9 * 0.1, 0.5 * -0.3 * 1.3}, 1e-15);
  ExpectTensor(Run1("tanh_grad", {y, dy}), DType::kF64, {4},
               {0.75, 2 * (1 - 0.0625), -(1 - 0.81), 0.5 * (1 - 0.09)}, 1e-15);
  ExpectTensor(Run1("tanh_grad", {F32({0.5f}, {1}), F32({2}, {1})}),
               DType::kF32, {1}, {1.5}, 0);
  std::vector<BFloat16> by = {FloatToBFloat16(0.5f)};
  std::vector<BFloat16> bdy = {FloatToBFloat16(4)};
  ExpectTensor(Run1("sigmoid_grad", {Tensor::FromVector(by, {1}),
                                     Tensor::FromVector(bdy, {1})}),
               DType::kBF16, {1}, {1}, 0);
  EXPECT_EQ(RunError("tanh_grad", {I32({1}, {1}), I32({1}, {1})}).message(),
            "tanh_grad: expected a floating-point tensor, got i32[1]");
}

// ---- sum_to_like and broadcast_like ----------------------------------------

TEST(GradOpsTest, SumToLike) {
  std::vector<double> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i;
  Tensor dy = F64(v, {2, 3, 4});
  // Expected sums from NumPy: dy.sum(axis=(0, 2), keepdims=True)[0], ...
  ExpectTensor(Run1("sum_to_like", {dy, F64({0, 0, 0}, {3, 1})}), DType::kF64,
               {3, 1}, {60, 92, 124}, 0);
  ExpectTensor(Run1("sum_to_like", {dy, F64({0}, {})}), DType::kF64, {}, {276},
               0);
  ExpectTensor(Run1("sum_to_like", {dy, I32({0, 0, 0, 0}, {4})}), DType::kF64,
               {4}, {60, 66, 72, 78}, 0);
  ExpectTensor(
      Run1("sum_to_like", {dy, F64(std::vector<double>(8), {2, 1, 4})}),
      DType::kF64, {2, 1, 4}, {12, 15, 18, 21, 48, 51, 54, 57}, 0);
  ExpectTensor(Run1("sum_to_like", {dy, F64({0, 0, 0}, {1, 3, 1})}),
               DType::kF64, {1, 3, 1}, {60, 92, 124}, 0);
  ExpectTensor(Run1("sum_to_like", {I32({1, 2, 3, 4}, {2, 2}), I32({0}, {1})}),
               DType::kI32, {1}, {10}, 0);
}

TEST(GradOpsTest, SumToLikeSameShapeSharesTheBuffer) {
  Tensor dy = F32({1, 2, 3}, {3});
  Tensor same = Run1("sum_to_like", {dy, F32({0, 0, 0}, {3})});
  ExpectTensor(same, DType::kF32, {3}, {1, 2, 3}, 0);
  EXPECT_TRUE(same.SharesBufferWith(dy));
  // Only size-1 axes differ: a view too.
  Tensor dy13 = F32({1, 2, 3}, {1, 3});
  Tensor view = Run1("sum_to_like", {dy13, F32({0, 0, 0}, {3})});
  ExpectTensor(view, DType::kF32, {3}, {1, 2, 3}, 0);
  EXPECT_TRUE(view.SharesBufferWith(dy13));
}

// Naive sum of a [a, b, c] tensor over the axes flagged.
std::vector<double> NaiveSum3(const std::vector<float>& x, int64_t a, int64_t b,
                              int64_t c, bool ra, bool rb, bool rc) {
  const int64_t oa = ra ? 1 : a, ob = rb ? 1 : b, oc = rc ? 1 : c;
  std::vector<double> out(oa * ob * oc, 0.0);
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k) {
        out[((ra ? 0 : i) * ob + (rb ? 0 : j)) * oc + (rc ? 0 : k)] +=
            x[(i * b + j) * c + k];
      }
  return out;
}

TEST(GradOpsTest, SumToLikeLargeAgainstNaive) {
  struct Case {
    int64_t a, b, c;
    bool ra, rb, rc;
  };
  // Long reduced runs, many reduced rows, wide kept rows, alternating axes.
  const std::vector<Case> cases = {
      {1, 1, 100003, false, false, true}, {3, 7001, 5, true, false, true},
      {50001, 2, 1, true, false, false},  {5, 3, 9000, false, true, false},
      {64, 196, 64, true, true, false},   {2, 40000, 3, false, true, false},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(
        StrCat("[", k.a, ",", k.b, ",", k.c, "] reduce ", k.ra, k.rb, k.rc));
    std::vector<float> x = Pattern(k.a * k.b * k.c, 1);
    std::vector<double> want = NaiveSum3(x, k.a, k.b, k.c, k.ra, k.rb, k.rc);
    const Shape like{k.ra ? 1 : k.a, k.rb ? 1 : k.b, k.rc ? 1 : k.c};
    Tensor target(DType::kF64, like);
    std::vector<double> xd(x.begin(), x.end());
    ExpectTensor(Run1("sum_to_like", {F64(xd, {k.a, k.b, k.c}), target}),
                 DType::kF64, like, want, 1e-12);
    ExpectTensor(Run1("sum_to_like", {F32(x, {k.a, k.b, k.c}), target}),
                 DType::kF32, like, want, 1e-4);
  }
}

TEST(GradOpsTest, SumToLikeErrorsAndStaticShape) {
  EXPECT_EQ(RunError("sum_to_like",
                     {F32({1, 2, 3, 4, 5, 6}, {2, 3}), F32({1, 2}, {2})})
                .message(),
            "sum_to_like: cannot sum f32[2,3] to the shape of f32[2], which "
            "does not broadcast to it");
  EXPECT_EQ(InferredSpec("sum_to_like", {{DType::kF32, Shape{kUnknownDim, 10}},
                                         {DType::kF32, Shape{10}}}),
            "f32[10]");
  EXPECT_EQ(InferredSpec("sum_to_like", {{DType::kF64, Shape{2, 3, 4}},
                                         {DType::kF32, Shape{3, 1}}}),
            "f64[3,1]");
}

TEST(GradOpsTest, BroadcastLike) {
  Tensor x = F32(std::vector<float>(24), {2, 3, 4});
  ExpectTensor(Run1("broadcast_like", {F64({1, 2, 3}, {3, 1}), x}), DType::kF64,
               {2, 3, 4}, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                           1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3},
               0);
  ExpectTensor(Run1("broadcast_like", {F32({5}, {}), F32({0, 0}, {2})}),
               DType::kF32, {2}, {5, 5}, 0);
  ExpectTensor(Run1("broadcast_like",
                    {I64({1, 2}, {2}), F32({0, 0, 0, 0, 0, 0}, {3, 2})}),
               DType::kI64, {3, 2}, {1, 2, 1, 2, 1, 2}, 0);
  Tensor g = F32({1, 2, 3, 4}, {4});
  Tensor same = Run1("broadcast_like", {g, F32({0, 0, 0, 0}, {1, 4})});
  ExpectTensor(same, DType::kF32, {1, 4}, {1, 2, 3, 4}, 0);
  EXPECT_TRUE(same.SharesBufferWith(g));
  EXPECT_EQ(RunError("broadcast_like", {F32({1, 2}, {2}), x}).message(),
            "broadcast_like: cannot broadcast f32[2] to the shape of "
            "f32[2,3,4]");
  EXPECT_EQ(InferredSpec("broadcast_like", {{DType::kF32, Shape{3, 1}},
                                            {DType::kF32, Shape{2, -1, 4}}}),
            "f32[2,3,4]");
}

// ---- stop_gradient, check_numerics, debug_print ----------------------------

TEST(GradOpsTest, StopGradientIsIdentity) {
  Tensor x = F32({1, 2}, {2});
  Tensor y = Run1("stop_gradient", {x});
  ExpectTensor(y, DType::kF32, {2}, {1, 2}, 0);
  EXPECT_TRUE(y.SharesBufferWith(x));
}

TEST(GradOpsTest, CheckNumerics) {
  Tensor ok = F32({1, 2}, {2});
  EXPECT_TRUE(Run1("check_numerics", {ok}, {{"message", std::string("m")}})
                  .SharesBufferWith(ok));
  absl::Status s = RunError("check_numerics", {F32({1, NAN, INFINITY}, {3})},
                            {{"message", std::string("loss")}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "check_numerics: loss: found NaN/Inf in f32[3] (1 NaN, 1 Inf; the "
            "first at element 1)");
  EXPECT_EQ(RunError("check_numerics", {F64({-INFINITY}, {})}).message(),
            "check_numerics: found NaN/Inf in f64[] (0 NaN, 1 Inf; the first "
            "at element 0)");
  EXPECT_EQ(RunError("check_numerics", {I32({1}, {1})}).message(),
            "check_numerics: expected a floating-point tensor, got i32[1]");
}

TEST(GradOpsTest, DebugPrintPrintsAndForwards) {
  Tensor x = I32({4, 5}, {2});
  ::testing::internal::CaptureStderr();
  Tensor y = Run1("debug_print", {x}, {{"message", std::string("x is")}});
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "x is " + x.DebugString() + "\n");
  EXPECT_TRUE(y.SharesBufferWith(x));
}

}  // namespace
}  // namespace runnel
