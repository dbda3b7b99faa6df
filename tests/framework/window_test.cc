// Window geometry shared by the conv2d and pooling shape functions and
// kernels.
#include "framework/window.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/shape.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::F32;
using ::runnel::testing::RunError;

using ::runnel::testing::Message;

TEST(WindowTest, ReadsAnIntHWOrNHWCList) {
  EXPECT_EQ(*ReadWindowAttr({{"strides", int64_t{2}}}, "strides", 1),
            (HW{2, 2}));
  EXPECT_EQ(
      *ReadWindowAttr({{"strides", std::vector<int64_t>{2, 3}}}, "strides", 1),
      (HW{2, 3}));
  EXPECT_EQ(*ReadWindowAttr({{"strides", std::vector<int64_t>{1, 3, 4, 1}}},
                            "strides", 1),
            (HW{3, 4}));
  EXPECT_EQ(*ReadWindowAttr({}, "dilations", 1), (HW{1, 1}));
  EXPECT_EQ(*ReadWindowAttr({}, "size", 5), (HW{5, 5}));
}

// The 3-D ops' attributes (spatial 3): an int, [d, h, w] or
// [1, d, h, w, 1]; HW keeps height and width first, the depth last.
TEST(WindowTest, ReadsThreeSpatialDimensions) {
  EXPECT_EQ(*ReadWindowAttr({{"strides", int64_t{2}}}, "strides", 1, 3),
            (HW{2, 2, 2}));
  EXPECT_EQ(*ReadWindowAttr({{"strides", std::vector<int64_t>{2, 3, 4}}},
                            "strides", 1, 3),
            (HW{3, 4, 2}));
  EXPECT_EQ(*ReadWindowAttr({{"strides", std::vector<int64_t>{1, 5, 3, 4, 1}}},
                            "strides", 1, 3),
            (HW{3, 4, 5}));
  EXPECT_EQ(*ReadWindowAttr({}, "dilations", 1, 3), (HW{1, 1, 1}));
  EXPECT_EQ(Message(ReadWindowAttr({{"size", std::vector<int64_t>{2, 2}}},
                                   "size", 1, 3)
                        .status()),
            "attribute 'size' must be an int or [d, h, w], got [2, 2]");
  EXPECT_EQ(WindowRank("conv3d_backprop_input"), 3);
  EXPECT_EQ(WindowRank("max_pool3d"), 3);
  EXPECT_EQ(WindowRank("conv2d"), 2);
  EXPECT_EQ(WindowRank("max_pool_with_argmax"), 2);
  // Where a 3-D pool's windows fall: NDHWC, the depth placed too.
  PoolAttrs pool = *ReadPoolAttrs({{"size", std::vector<int64_t>{2, 3, 3}},
                                   {"padding", std::string("same")}},
                                  3);
  PoolWindows w =
      *PlacePoolWindows(DType::kF32, Shape{2, 5, 6, 7, 3}, pool, "pooling");
  EXPECT_EQ(w.in_d, 5);
  EXPECT_EQ(w.depths.out, 3);
  EXPECT_EQ(w.depths.pad_begin, 0);
  EXPECT_EQ(w.depths.pad_end, 1);
  EXPECT_EQ(w.y(), (Shape{2, 3, 2, 3, 3}));
  EXPECT_EQ(Message(PlacePoolWindows(DType::kF32, Shape{2, 5, 6, 3}, pool,
                                     "max_pool3d:")
                        .status()),
            "max_pool3d: needs an NDHWC input of rank 5, got f32[2,5,6,3]");
}

TEST(WindowTest, BatchAndChannelStridesAreErrors) {
  for (const std::vector<int64_t>& v :
       {std::vector<int64_t>{2, 1, 1, 1}, std::vector<int64_t>{1, 2, 2, 3}}) {
    absl::StatusOr<HW> hw = ReadWindowAttr({{"strides", v}}, "strides", 1);
    ASSERT_FALSE(hw.ok());
    EXPECT_EQ(hw.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(Message(hw.status())
                  .find("attribute 'strides' must be 1 for the batch and the "
                        "channels, as in [1, h, w, 1] (NHWC), got ["),
              std::string::npos)
        << hw.status();
  }
  EXPECT_EQ(Message(ReadWindowAttr({{"strides", std::vector<int64_t>{1, 2, 3}}},
                                   "strides", 1)
                        .status()),
            "attribute 'strides' must be an int or [h, w], got [1, 2, 3]");
  EXPECT_EQ(
      Message(ReadWindowAttr({{"size", std::vector<int64_t>{2, 0}}}, "size", 1)
                  .status()),
      "attribute 'size' must be positive, got [2, 0]");
}

TEST(WindowTest, Padding) {
  EXPECT_TRUE(*ReadSamePadding({{"padding", std::string("SAME")}}));
  EXPECT_FALSE(*ReadSamePadding({{"padding", std::string("valid")}}));
  EXPECT_EQ(
      Message(ReadSamePadding({{"padding", std::string("full")}}).status()),
      "padding must be \"same\" or \"valid\", got \"full\"");
  EXPECT_FALSE(ReadSamePadding({}).ok());
}

TEST(WindowTest, PoolStridesDefaultToTheSize) {
  absl::StatusOr<PoolAttrs> a = ReadPoolAttrs(
      {{"size", std::vector<int64_t>{2, 3}}, {"padding", std::string("same")}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->size, (HW{2, 3}));
  EXPECT_EQ(a->strides, (HW{2, 3}));
  EXPECT_TRUE(a->same);
  EXPECT_EQ(Message(ReadPoolAttrs({{"padding", std::string("same")}}).status()),
            "missing attribute 'size'");
  absl::StatusOr<ConvAttrs> c =
      ReadConvAttrs({{"strides", int64_t{2}},
                     {"dilations", std::vector<int64_t>{1, 3}},
                     {"padding", std::string("valid")}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->strides, (HW{2, 2}));
  EXPECT_EQ(c->dilations, (HW{1, 3}));
  EXPECT_FALSE(c->same);
}

TEST(WindowTest, SamePadsTheExcessEvenlyTheOddOneAtTheEnd) {
  // 5 inputs, window 4, stride 2: 3 outputs reading 2 * 2 + 4 = 8 elements,
  // 3 of padding: 1 before, 2 after.
  absl::StatusOr<Windows> w = PlaceWindows(5, 4, 2, 1, true, "window");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->out, 3);
  EXPECT_EQ(w->pad_begin, 1);
  EXPECT_EQ(w->pad_end, 2);
  // Dilation 2 makes a window of 3 span 5.
  w = PlaceWindows(7, 3, 1, 2, true, "filter");
  EXPECT_EQ(w->out, 7);
  EXPECT_EQ(w->pad_begin, 2);
  EXPECT_EQ(w->pad_end, 2);
  // A stride past the window: no padding is needed.
  w = PlaceWindows(6, 1, 3, 1, true, "window");
  EXPECT_EQ(w->out, 2);
  EXPECT_EQ(w->pad_begin, 0);
  EXPECT_EQ(w->pad_end, 0);
}

TEST(WindowTest, ValidFitsWholeWindows) {
  absl::StatusOr<Windows> w = PlaceWindows(7, 3, 2, 1, false, "window");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->out, 3);
  EXPECT_EQ(w->pad_begin, 0);
  EXPECT_EQ(w->pad_end, 0);
  EXPECT_EQ(Message(PlaceWindows(4, 3, 1, 2, false, "filter").status()),
            "the filter of effective size 5 is larger than the input (4) "
            "with valid padding");
}

TEST(WindowTest, UnknownSizesForShapeInference) {
  EXPECT_EQ(PlaceWindows(-1, 3, 1, 1, true, "window")->out, kUnknownDim);
  EXPECT_EQ(PlaceWindows(10, -1, 3, 1, true, "window")->out, 4);
  EXPECT_EQ(PlaceWindows(10, -1, 3, 1, false, "window")->out, kUnknownDim);
}

// The shape function and the kernel agree: a batch stride is an error when
// the node is made, before any kernel runs.
TEST(WindowTest, Conv2DAndPoolRejectABatchStride) {
  Tensor x = F32(std::vector<float>(2 * 4 * 4 * 1, 1), {2, 4, 4, 1});
  Tensor f = F32({1}, {1, 1, 1, 1});
  const std::string want =
      "attribute 'strides' must be 1 for the batch and the channels, as in "
      "[1, h, w, 1] (NHWC), got [2, 1, 1, 1]; windows move along height and "
      "width only";
  EXPECT_EQ(Message(RunError("conv2d", {x, f},
                             {{"strides", std::vector<int64_t>{2, 1, 1, 1}}})),
            "conv2d: " + want);
  EXPECT_EQ(Message(RunError("max_pool", {x},
                             {{"size", int64_t{2}},
                              {"strides", std::vector<int64_t>{2, 1, 1, 1}}})),
            "max_pool: " + want);
}

// The kernels' checks (CPU and GPU share them): operands of the wrong rank,
// channels that differ, a dy that is not the forward output.
TEST(WindowTest, KernelChecksNameTheOperands) {
  ConvAttrs conv;
  EXPECT_EQ(
      Message(
          PlaceConvWindows(DType::kF16, Shape{2, 4, 4}, Shape{1, 1, 1, 1}, conv)
              .status()),
      "conv2d needs NHWC input and HWIO filters of rank 4, got f16[2,4,4] and "
      "f16[1,1,1,1]");
  EXPECT_EQ(Message(PlaceConvWindows(DType::kF32, Shape{1, 4, 4, 3},
                                     Shape{3, 3, 2, 8}, conv)
                        .status()),
            "channels differ: the input f32[1,4,4,3] has 3 but the filters "
            "f32[3,3,2,8] expect 2");
  absl::StatusOr<ConvWindows> cw =
      PlaceConvWindows(DType::kF32, Shape{1, 5, 7, 3}, Shape{3, 3, 3, 8}, conv);
  ASSERT_TRUE(cw.ok()) << cw.status();
  EXPECT_EQ(cw->rows.out, 5);
  EXPECT_EQ(cw->cols.pad_begin, 1);

  PoolAttrs pool;
  pool.size = pool.strides = {2, 2};
  EXPECT_EQ(
      Message(PlacePoolWindows(DType::kF32, Shape{4, 4}, pool, "max_pool_grad:")
                  .status()),
      "max_pool_grad: needs an NHWC input of rank 4, got f32[4,4]");
  absl::StatusOr<PoolWindows> pw =
      PlacePoolWindows(DType::kF32, Shape{2, 5, 4, 3}, pool, "pooling");
  ASSERT_TRUE(pw.ok()) << pw.status();
  EXPECT_EQ(pw->y(), (Shape{2, 2, 2, 3}));

  EXPECT_TRUE(
      CheckWindowsDy("avg_pool_grad", DType::kF32, Shape{2, 2, 2, 3}, pw->y())
          .ok());
  EXPECT_EQ(Message(CheckWindowsDy("avg_pool_grad", DType::kF32,
                                   Shape{2, 2, 3, 3}, pw->y())),
            "avg_pool_grad: dy f32[2,2,3,3] does not match the forward output "
            "[2,2,2,3]");
  EXPECT_EQ(Message(CheckWindowsDy("max_pool_grad", DType::kF32,
                                   Shape{2, 2, 3, 3}, pw->y(), "y")),
            "max_pool_grad: y f32[2,2,3,3] does not match the forward output "
            "[2,2,2,3]");
}

}  // namespace
}  // namespace runnel
