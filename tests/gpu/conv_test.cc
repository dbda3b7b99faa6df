// conv2d, its two gradients, and pooling with theirs, on the GPU (cuDNN and
// kernels/cuda/pool.cu) against the CPU kernels, gradients included. The
// geometries cover what cudnn_params.h, pool_plan.h and pool.h handle
// specially: "same" padding with an odd excess (one more row of padding at
// the end; pooling then runs on our own kernels, with symmetric padding on
// cuDNN), strides, dilations, windows hanging over the edge, ties and NaN
// in max_pool, the 16-bit floats, empty batches. Skipped without a GPU
// (docs/gpu.md), except the check that the pooling cases reach both paths.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/strings.h"
#include "framework/window.h"
#include "kernels/cuda/pool_plan.h"
#include "tests/gpu/gpu_compare.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

struct ConvCase {
  Shape x, f;
  int64_t stride, dilation;
  const char* padding;
};

const std::vector<ConvCase> kConvCases = {
    {Shape{2, 7, 9, 3}, Shape{3, 3, 3, 5}, 1, 1, "same"},
    {Shape{2, 8, 8, 3}, Shape{3, 3, 3, 4}, 2, 1, "same"},  // odd excess
    {Shape{1, 9, 6, 2}, Shape{2, 2, 2, 3}, 1, 1, "same"},  // even window
    {Shape{2, 10, 11, 4}, Shape{3, 3, 4, 6}, 1, 2, "same"},
    {Shape{2, 12, 12, 3}, Shape{5, 5, 3, 4}, 3, 1, "valid"},
    {Shape{3, 6, 6, 16}, Shape{1, 1, 16, 8}, 1, 1, "valid"},
    {Shape{1, 23, 23, 3}, Shape{11, 11, 3, 8}, 4, 1, "valid"},  // AlexNet's
    {Shape{0, 5, 5, 3}, Shape{3, 3, 3, 4}, 1, 1, "same"},       // no images
};

AttrMap ConvAttrsOf(const ConvCase& c) {
  return {{"strides", c.stride},
          {"dilations", c.dilation},
          {"padding", std::string(c.padding)}};
}

// Convolutions sum k_h*k_w*in_c products: absolute error grows with that.
Tolerance ConvTolerance(DType d) {
  return d == DType::kF32 ? Tolerance{1e-4, 1e-4} : Tolerance{3e-2, 3e-2};
}

// `op` on both devices, every output (and gradient) compared with `tol`,
// and the op itself on the GPU.
void CompareWith(const std::string& op, const std::vector<Tensor>& inputs,
                 const AttrMap& attrs, bool grad, Tolerance tol) {
  const std::string what = StrCat(
      op, "(", DTypeName(inputs[0].dtype()), inputs[0].shape().ToString(), ", ",
      inputs.size() > 1 ? inputs[1].shape().ToString() : "", ")");
  SCOPED_TRACE(what);
  const Result cpu = RunOp(op, inputs, attrs, "", grad);
  const Result gpu = RunOp(op, inputs, attrs, "/gpu:0", grad);
  ASSERT_EQ(cpu.values.size(), gpu.values.size());
  // The op's outputs (two for max_pool_with_argmax), then a gradient per
  // input.
  ASSERT_EQ(cpu.values.size(),
            static_cast<size_t>(cpu.num_outputs) + (grad ? inputs.size() : 0));
  bool y_on_gpu = false;
  for (const std::string& n : gpu.on_gpu) y_on_gpu |= n == "y";
  EXPECT_TRUE(y_on_gpu) << what << " did not run on the GPU";
  for (size_t i = 0; i < cpu.values.size(); ++i) {
    ExpectClose(gpu.values[i], cpu.values[i], tol,
                i == 0 ? what : StrCat(what, " gradient ", i - 1));
  }
}

TEST(GpuConvTest, Conv2DAndItsGradients) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF16}) {
    for (const ConvCase& c : kConvCases) {
      const Tensor x = Random(d, c.x, 11, -1, 1);
      const Tensor f = Random(d, c.f, 12, -1, 1);
      CompareWith("conv2d", {x, f}, ConvAttrsOf(c), true, ConvTolerance(d));
    }
  }
}

// The gradient ops on their own, with a dy that is not all ones (the
// gradients above get ones), so that a channel mixed up shows; and their
// own gradients (conv2d and the other gradient op, on the GPU too).
TEST(GpuConvTest, BackpropOpsWithRandomDy) {
  SKIP_WITHOUT_GPU();
  for (const ConvCase& c : kConvCases) {
    const Tensor x = Random(DType::kF32, c.x, 21, -1, 1);
    const Tensor f = Random(DType::kF32, c.f, 22, -1, 1);
    const Result y = RunOp("conv2d", {x, f}, ConvAttrsOf(c), "", false);
    ASSERT_EQ(y.values.size(), 1u);
    const Tensor dy = Random(DType::kF32, y.values[0].shape(), 23, -1, 1);
    for (const char* op : {"conv2d_backprop_input", "conv2d_backprop_filter"}) {
      CompareWith(op, {x, f, dy}, ConvAttrsOf(c), true,
                  ConvTolerance(DType::kF32));
    }
  }
}

// The same convolution many times (one algorithm, cached) and twice over:
// a GPU run is deterministic.
TEST(GpuConvTest, RepeatedRunsGiveTheSameNumbers) {
  SKIP_WITHOUT_GPU();
  const ConvCase c = kConvCases[1];
  const Tensor x = Random(DType::kF32, c.x, 31, -1, 1);
  const Tensor f = Random(DType::kF32, c.f, 32, -1, 1);
  const Result a = RunOp("conv2d", {x, f}, ConvAttrsOf(c), "/gpu:0", true);
  const Result b = RunOp("conv2d", {x, f}, ConvAttrsOf(c), "/gpu:0", true);
  ASSERT_EQ(a.values.size(), 3u);
  ASSERT_EQ(b.values.size(), 3u);
  for (size_t i = 0; i < a.values.size(); ++i) {
    ExpectClose(a.values[i], b.values[i], {0, 0}, StrCat("run 2, value ", i));
  }
}

struct PoolCase {
  Shape x;
  int64_t size, stride;
  const char* padding;
};

// Which path each takes is in the comment (pool_plan.h; checked by
// PoolCasesReachBothPaths): cuDNN for symmetric padding in f16, f32 and
// f64, our own kernels for an odd "same" excess, bf16, the integers and
// max_pool_grad.
const std::vector<PoolCase> kPoolCases = {
    {Shape{2, 8, 8, 3}, 2, 2, "valid"},    // cuDNN
    {Shape{2, 7, 9, 4}, 3, 2, "same"},     // over the edge, 1 each side: cuDNN
    {Shape{1, 13, 13, 5}, 3, 2, "valid"},  // AlexNet's overlapping: cuDNN
    {Shape{2, 5, 6, 3}, 2, 1, "same"},     // 1 at the end: ours
    {Shape{1, 4, 4, 2}, 4, 4, "same"},     // no padding: cuDNN
    {Shape{0, 4, 4, 2}, 2, 2, "valid"},    // empty: neither runs
    {Shape{3, 32, 32, 64}, 3, 3, "same"},  // 1 at the end: ours
    {Shape{2, 9, 9, 8}, 3, 1, "same"},     // 1 each side, stride 1: cuDNN
    {Shape{1, 8, 7, 3}, 3, 2, "same"},     // rows 1 at the end: ours
};

AttrMap PoolAttrsOf(const PoolCase& c) {
  return {{"size", c.size},
          {"strides", c.stride},
          {"padding", std::string(c.padding)}};
}

// Whether cuDNN computes `op` on `d` for case `c` (pool_plan.h).
bool ByCudnn(PoolOp op, DType d, const PoolCase& c) {
  PoolAttrs a;
  a.size = {c.size, c.size};
  a.strides = {c.stride, c.stride};
  a.same = std::string(c.padding) == "same";
  absl::StatusOr<PoolWindows> w = PlacePoolWindows(d, c.x, a, "pooling");
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() && CudnnPoolPlan(op, d, *w, a).has_value();
}

// Runs without a GPU: the cases below test both cuDNN's path and ours for
// every op and float type that cuDNN takes (f16 maxima are always ours:
// pool_plan.h).
TEST(GpuPoolTest, PoolCasesReachBothPaths) {
  for (DType d : {DType::kF32, DType::kF16, DType::kF64}) {
    for (PoolOp op :
         {PoolOp::kMaxPool, PoolOp::kAvgPool, PoolOp::kAvgPoolGrad}) {
      if (d == DType::kF16 && op == PoolOp::kMaxPool) continue;
      int cudnn = 0, own = 0;
      for (const PoolCase& c : kPoolCases) {
        if (c.x.num_elements() == 0) continue;
        (ByCudnn(op, d, c) ? cudnn : own) += 1;
      }
      EXPECT_GE(cudnn, 3) << DTypeName(d) << " op " << static_cast<int>(op);
      EXPECT_GE(own, 3) << DTypeName(d) << " op " << static_cast<int>(op);
    }
  }
  for (const PoolCase& c : kPoolCases) {
    EXPECT_FALSE(ByCudnn(PoolOp::kMaxPoolGrad, DType::kF32, c));
    EXPECT_FALSE(ByCudnn(PoolOp::kMaxPool, DType::kBF16, c));
    EXPECT_FALSE(ByCudnn(PoolOp::kMaxPool, DType::kF16, c));
  }
}

TEST(GpuPoolTest, PoolingAndItsGradients) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    const Tolerance tol = ToleranceOf(d, false);
    for (const PoolCase& c : kPoolCases) {
      const Tensor x = Random(d, c.x, 41);
      CompareWith("max_pool", {x}, PoolAttrsOf(c), true, tol);
      CompareWith("avg_pool", {x}, PoolAttrsOf(c), true, tol);
    }
  }
  for (DType d : {DType::kI32, DType::kI64}) {
    for (const PoolCase& c : kPoolCases) {
      CompareWith("max_pool", {Random(d, c.x, 42)}, PoolAttrsOf(c), false,
                  {0, 0});
    }
  }
}

// Dilated windows (issue 34) take our own kernels; forward and gradients
// as the CPU's.
TEST(GpuPoolTest, DilatedPoolingAndItsGradients) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    const Tolerance tol = ToleranceOf(d, false);
    for (const char* padding : {"valid", "same"}) {
      const AttrMap attrs = {{"size", int64_t{3}},
                             {"strides", std::vector<int64_t>{1, 2}},
                             {"dilations", std::vector<int64_t>{2, 3}},
                             {"padding", std::string(padding)}};
      const Tensor x = Random(d, Shape{2, 9, 11, 3}, 43);
      CompareWith("max_pool", {x}, attrs, true, tol);
      CompareWith("avg_pool", {x}, attrs, true, tol);
      CompareWith("max_pool_with_argmax", {x}, attrs, true, tol);
    }
  }
}

// The 3-D ops (issue 34): conv3d and its gradients through cuDNN's 5-D
// descriptors (with an odd "same" excess along depth, height and width,
// padded in two steps), and the 3-D pools on our own kernels, against the
// CPU's.
TEST(GpuConvTest, Conv3DAndPool3DAndTheirGradients) {
  SKIP_WITHOUT_GPU();
  struct Case3 {
    Shape x, f;
    std::vector<int64_t> strides, dilations;
    const char* padding;
  };
  const std::vector<Case3> cases = {
      {Shape{2, 5, 6, 7, 3},
       Shape{3, 3, 3, 3, 4},
       {1, 1, 1},
       {1, 1, 1},
       "same"},
      {Shape{2, 6, 8, 8, 2},
       Shape{3, 3, 3, 2, 3},
       {2, 2, 2},
       {1, 1, 1},
       "same"},  // odd excess everywhere
      {Shape{1, 6, 7, 5, 2},
       Shape{2, 2, 3, 2, 3},
       {1, 2, 1},
       {2, 1, 1},
       "same"},
      {Shape{2, 7, 6, 6, 3},
       Shape{3, 2, 2, 3, 2},
       {2, 1, 2},
       {1, 1, 1},
       "valid"},
      {Shape{0, 3, 3, 3, 2},
       Shape{2, 2, 2, 2, 2},
       {1, 1, 1},
       {1, 1, 1},
       "same"},  // no images
  };
  for (DType d : {DType::kF32, DType::kF16}) {
    for (const Case3& c : cases) {
      const AttrMap attrs = {{"strides", c.strides},
                             {"dilations", c.dilations},
                             {"padding", std::string(c.padding)}};
      CompareWith("conv3d",
                  {Random(d, c.x, 51, -1, 1), Random(d, c.f, 52, -1, 1)}, attrs,
                  true, ConvTolerance(d));
    }
  }
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    const Tolerance tol = ToleranceOf(d, false);
    for (const char* padding : {"valid", "same"}) {
      const AttrMap attrs = {{"size", std::vector<int64_t>{2, 3, 2}},
                             {"strides", std::vector<int64_t>{2, 1, 2}},
                             {"dilations", std::vector<int64_t>{1, 1, 2}},
                             {"padding", std::string(padding)}};
      const Tensor x = Random(d, Shape{2, 5, 6, 7, 3}, 53);
      CompareWith("max_pool3d", {x}, attrs, true, tol);
      CompareWith("avg_pool3d", {x}, attrs, true, tol);
    }
  }
}

// Ties (after a relu, windows of zeros), NaN and -inf: the gradient goes to
// the first maximal element, NaN never wins, and a window of NaN and -inf
// pools to the lowest value of the type the CPU computes in (f32 for f16,
// so -inf once rounded) with its gradient on its first element. With
// symmetric padding the forward is cuDNN's, then LaunchMaxPoolFloor.
TEST(GpuPoolTest, MaxPoolTiesAndNaNAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x32(DType::kF32, Shape{1, 4, 6, 2});
  float* v = x32.data<float>();
  for (int64_t i = 0; i < x32.num_elements(); ++i) {
    v[i] = i % 5 == 0 ? 1.0f : 0.0f;  // many ties
  }
  v[0] = nan;
  v[2] = nan;
  // Window (0, 2) of channel 0: NaN and -inf only.
  for (int64_t h : {0, 1}) {
    for (int64_t w : {4, 5}) v[(h * 6 + w) * 2] = w == 4 ? nan : -inf;
  }
  for (DType d : {DType::kF32, DType::kF16}) {
    const Tensor x =
        d == DType::kF32 ? x32 : testing::Run1("cast", {x32}, {{"dtype", d}});
    for (const char* padding : {"valid", "same"}) {
      for (int64_t stride : {1, 2}) {
        const AttrMap attrs = {{"size", int64_t{2}},
                               {"strides", stride},
                               {"padding", std::string(padding)}};
        CompareWith("max_pool", {x}, attrs, true, {0, 0});
        // max_pool_grad with a random dy (sum's gradient is all ones).
        const Result y = RunOp("max_pool", {x}, attrs, "", false);
        ASSERT_EQ(y.values.size(), 1u);
        const Tensor dy = Random(d, y.values[0].shape(), 43);
        CompareWith("max_pool_grad", {x, y.values[0], dy}, attrs, false,
                    {0, 0});
        CompareWith("avg_pool_grad", {x, dy}, attrs, false,
                    ToleranceOf(d, false));
      }
    }
  }
}

// The gradient ops on their own with a dy that is not all ones, on both
// paths (avg_pool_grad through cuDNN with symmetric padding, max_pool_grad
// always on our kernels), f32 and f16.
TEST(GpuPoolTest, GradOpsWithRandomDy) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF16}) {
    const Tolerance tol = ToleranceOf(d, false);
    for (const PoolCase& c : kPoolCases) {
      SCOPED_TRACE(StrCat(c.x.ToString(), " size ", c.size, " stride ",
                          c.stride, " ", c.padding, " cuDNN ",
                          ByCudnn(PoolOp::kAvgPoolGrad, d, c)));
      const Tensor x = Random(d, c.x, 51);
      const Result y = RunOp("max_pool", {x}, PoolAttrsOf(c), "", false);
      ASSERT_EQ(y.values.size(), 1u);
      const Tensor dy = Random(d, y.values[0].shape(), 52, -1, 1);
      CompareWith("max_pool_grad", {x, y.values[0], dy}, PoolAttrsOf(c), false,
                  tol);
      CompareWith("avg_pool_grad", {x, dy}, PoolAttrsOf(c), false, tol);
    }
  }
}

// Negative inputs where windows hang over the edge: the padding is no
// element (a maximum of -1 stays -1, not 0) and does not count in an
// average's divisor, on both paths.
TEST(GpuPoolTest, PaddingIsNoElement) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF16}) {
    for (const PoolCase& c : kPoolCases) {
      if (std::string(c.padding) != "same") continue;
      const Tensor x = Random(d, c.x, 61, -3, -1);
      CompareWith("max_pool", {x}, PoolAttrsOf(c), true, {0, 0});
      CompareWith("avg_pool", {x}, PoolAttrsOf(c), true, ToleranceOf(d, false));
    }
  }
}

}  // namespace
}  // namespace runnel
