// Where the GPU's pooling goes through cuDNN and where through Runnel's own
// kernels (kernels/cuda/pool_plan.h), checked without a GPU: symmetric
// padding in f16, f32 and f64 goes to cuDNN with the CPU's windows; an odd
// "same" excess, bf16, the integers, max_pool_grad, empty tensors and
// tensors beyond cuDNN's int do not.
#include "kernels/cuda/pool_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

#include "framework/shape.h"

namespace runnel {
namespace {

PoolAttrs PoolAttrsOf(HW size, HW strides, bool same) {
  PoolAttrs a;
  a.size = size;
  a.strides = strides;
  a.same = same;
  return a;
}

std::optional<CudnnPoolParams> Plan(PoolOp op, DType dtype, const Shape& x,
                                    const PoolAttrs& a) {
  absl::StatusOr<PoolWindows> w = PlacePoolWindows(dtype, x, a, "pooling");
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return std::nullopt;
  return CudnnPoolPlan(op, dtype, *w, a);
}

TEST(PoolPlanTest, ValidPaddingGoesToCudnn) {
  // 13 rows, 3-row windows every 2 (AlexNet's): 6 outputs, no padding.
  const PoolAttrs a = PoolAttrsOf({3, 3}, {2, 2}, false);
  const std::optional<CudnnPoolParams> p =
      Plan(PoolOp::kMaxPool, DType::kF32, Shape{2, 13, 12, 5}, a);
  ASSERT_TRUE(p.has_value());
  CudnnPoolParams want;
  want.batch = 2;
  want.in_h = 13;
  want.in_w = 12;
  want.chans = 5;
  want.out_h = 6;
  want.out_w = 5;  // column 11 is in no window
  want.size = {3, 3};
  want.strides = {2, 2};
  EXPECT_EQ(*p, want);
}

// cuDNN's pooling has no dilation: dilated windows take our own kernels.
TEST(PoolPlanTest, DilatedWindowsAreOurs) {
  PoolAttrs a = PoolAttrsOf({3, 3}, {2, 2}, false);
  a.dilations = {2, 1};
  for (PoolOp op : {PoolOp::kMaxPool, PoolOp::kAvgPool, PoolOp::kAvgPoolGrad}) {
    EXPECT_FALSE(Plan(op, DType::kF32, Shape{2, 13, 12, 5}, a).has_value());
  }
}

TEST(PoolPlanTest, SymmetricSamePaddingGoesToCudnn) {
  // 7 rows, 3-row windows every 2: 4 outputs need (4-1)*2+3-7 = 2 rows of
  // padding, one each side; 9 columns: 5 outputs, 2 columns, one each side.
  const PoolAttrs a = PoolAttrsOf({3, 3}, {2, 2}, true);
  for (PoolOp op : {PoolOp::kMaxPool, PoolOp::kAvgPool, PoolOp::kAvgPoolGrad}) {
    const std::optional<CudnnPoolParams> p =
        Plan(op, DType::kF32, Shape{2, 7, 9, 4}, a);
    ASSERT_TRUE(p.has_value()) << static_cast<int>(op);
    EXPECT_EQ(p->out_h, 4);
    EXPECT_EQ(p->out_w, 5);
    EXPECT_EQ(p->pad_h, 1);
    EXPECT_EQ(p->pad_w, 1);
  }
  // A stride of 1 with a 3x3 window: one row and column each side.
  const std::optional<CudnnPoolParams> p =
      Plan(PoolOp::kAvgPool, DType::kF64, Shape{1, 5, 6, 2},
           PoolAttrsOf({3, 3}, {1, 1}, true));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pad_h, 1);
  EXPECT_EQ(p->pad_w, 1);
  EXPECT_EQ(p->out_h, 5);
  EXPECT_EQ(p->out_w, 6);
}

TEST(PoolPlanTest, AnOddSameExcessStaysOnOurKernels) {
  // 32 rows, 3-row windows every 3: 11 outputs need 1 row of padding, at
  // the end; cuDNN pads both sides alike.
  EXPECT_FALSE(Plan(PoolOp::kMaxPool, DType::kF32, Shape{3, 32, 32, 8},
                    PoolAttrsOf({3, 3}, {3, 3}, true))
                   .has_value());
  // Only the columns odd: still ours.
  EXPECT_FALSE(Plan(PoolOp::kAvgPool, DType::kF32, Shape{1, 7, 6, 2},
                    PoolAttrsOf({3, 2}, {2, 1}, true))
                   .has_value());
  // 2x2 windows every 1 pad 1 at the end.
  EXPECT_FALSE(Plan(PoolOp::kAvgPoolGrad, DType::kF32, Shape{2, 5, 6, 3},
                    PoolAttrsOf({2, 2}, {1, 1}, true))
                   .has_value());
}

TEST(PoolPlanTest, OnlyF16F32AndF64GoToCudnn) {
  const PoolAttrs a = PoolAttrsOf({2, 2}, {2, 2}, false);
  const Shape x{2, 8, 8, 3};
  for (DType d : {DType::kF32, DType::kF64}) {
    EXPECT_TRUE(Plan(PoolOp::kMaxPool, d, x, a).has_value()) << DTypeName(d);
  }
  for (DType d : {DType::kF16, DType::kF32, DType::kF64}) {
    EXPECT_TRUE(Plan(PoolOp::kAvgPool, d, x, a).has_value()) << DTypeName(d);
    EXPECT_TRUE(Plan(PoolOp::kAvgPoolGrad, d, x, a).has_value())
        << DTypeName(d);
  }
  // cuDNN's f16 maximum of a window of NaN and -inf is -65504, the CPU's
  // -inf (pool_plan.h).
  EXPECT_FALSE(Plan(PoolOp::kMaxPool, DType::kF16, x, a).has_value());
  for (DType d : {DType::kBF16, DType::kI32, DType::kI64}) {
    EXPECT_FALSE(Plan(PoolOp::kMaxPool, d, x, a).has_value()) << DTypeName(d);
  }
}

TEST(PoolPlanTest, MaxPoolGradStaysOnOurKernels) {
  // cuDNN's choice among equal maxima is not documented.
  for (bool same : {false, true}) {
    EXPECT_FALSE(Plan(PoolOp::kMaxPoolGrad, DType::kF32, Shape{2, 8, 8, 3},
                      PoolAttrsOf({2, 2}, {2, 2}, same))
                     .has_value());
  }
}

TEST(PoolPlanTest, EmptyTensorsStayOnOurKernels) {
  const PoolAttrs a = PoolAttrsOf({2, 2}, {2, 2}, true);
  EXPECT_FALSE(
      Plan(PoolOp::kMaxPool, DType::kF32, Shape{0, 4, 4, 2}, a).has_value());
  EXPECT_FALSE(
      Plan(PoolOp::kAvgPool, DType::kF32, Shape{1, 4, 4, 0}, a).has_value());
  EXPECT_FALSE(
      Plan(PoolOp::kAvgPool, DType::kF32, Shape{1, 0, 4, 1}, a).has_value());
}

TEST(PoolPlanTest, TensorsBeyondCudnnsIntStayOnOurKernels) {
  const PoolAttrs a = PoolAttrsOf({2, 2}, {2, 2}, false);
  // 2^31 elements in x: one more than cuDNN indexes.
  EXPECT_FALSE(Plan(PoolOp::kMaxPool, DType::kF32,
                    Shape{2, 1 << 10, 1 << 10, 1 << 10}, a)
                   .has_value());
  // 2^31 - 2^20 elements: cuDNN's.
  EXPECT_TRUE(Plan(PoolOp::kMaxPool, DType::kF32,
                   Shape{1, 1 << 10, 1 << 10, (1 << 11) - 1}, a)
                  .has_value());
}

TEST(PoolPlanTest, ThePlanMatchesCudnnsOutputFormula) {
  // Every geometry the plan sends to cuDNN gives cuDNN's output size,
  // (in + 2 pad - size) / stride + 1, and the CPU's windows: a window
  // starts at o * stride - pad on both.
  for (bool same : {false, true}) {
    for (int64_t in = 1; in <= 12; ++in) {
      for (int64_t size = 1; size <= 5; ++size) {
        for (int64_t stride = 1; stride <= 4; ++stride) {
          const PoolAttrs a = PoolAttrsOf({size, size}, {stride, stride}, same);
          absl::StatusOr<PoolWindows> w =
              PlacePoolWindows(DType::kF32, Shape{1, in, in, 1}, a, "pooling");
          if (!w.ok()) continue;  // valid windows larger than the input
          const std::optional<CudnnPoolParams> p =
              CudnnPoolPlan(PoolOp::kMaxPool, DType::kF32, *w, a);
          const bool symmetric = w->rows.pad_begin == w->rows.pad_end;
          EXPECT_EQ(p.has_value(), symmetric)
              << "in " << in << " size " << size << " stride " << stride
              << (same ? " same" : " valid");
          if (!p.has_value()) continue;
          EXPECT_EQ((in + 2 * p->pad_h - size) / stride + 1, w->rows.out);
          EXPECT_EQ(p->pad_h, w->rows.pad_begin);
          EXPECT_LT(p->pad_h, size);
        }
      }
    }
  }
}

}  // namespace
}  // namespace runnel
