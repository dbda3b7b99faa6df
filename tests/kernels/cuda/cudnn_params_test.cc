// What the GPU's convolutions give cuDNN (kernels/cuda/cudnn_params.h),
// checked without a GPU: the descriptors' numbers computed from Runnel's
// operands and attributes, the padding that makes "same" windows cuDNN's,
// the choice among the heuristic's algorithms, and the cache of chosen
// algorithms.
#include "kernels/cuda/cudnn_params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

namespace runnel {
namespace {

using ::testing::HasSubstr;

ConvAttrs Attrs(HW strides, HW dilations, bool same) {
  ConvAttrs a;
  a.strides = strides;
  a.dilations = dilations;
  a.same = same;
  return a;
}

absl::StatusOr<CudnnConvParams> Params(const Shape& x, const Shape& f,
                                       const ConvAttrs& a) {
  return MakeCudnnConvParams("conv2d", DType::kF32, x, f, a);
}

TEST(CudnnParamsTest, SameStrideOneIsSymmetric) {
  absl::StatusOr<CudnnConvParams> p =
      Params(Shape{2, 5, 7, 3}, Shape{3, 3, 3, 8}, Attrs({1, 1}, {1, 1}, true));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->pad_h, 1);
  EXPECT_EQ(p->pad_w, 1);
  EXPECT_FALSE(p->padded());
  EXPECT_EQ(p->padded_x(), (Shape{2, 5, 7, 3}));
  EXPECT_EQ(p->y(), (Shape{2, 5, 7, 8}));
  EXPECT_EQ(p->ohwi(), (Shape{8, 3, 3, 3}));
}

TEST(CudnnParamsTest, OddSamePaddingAddsARowOfZerosAtTheEnd) {
  // 8 rows, 3-row window every 2: 4 outputs, 1 row of padding, at the end.
  absl::StatusOr<CudnnConvParams> p =
      Params(Shape{1, 8, 9, 2}, Shape{3, 3, 2, 4}, Attrs({2, 2}, {1, 1}, true));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->out_h, 4);
  EXPECT_EQ(p->out_w, 5);
  EXPECT_EQ(p->pad_h, 0);
  EXPECT_EQ(p->extra_h, 1);
  // 9 columns: 5 outputs need (5-1)*2+3-9 = 2 columns, one each side.
  EXPECT_EQ(p->pad_w, 1);
  EXPECT_EQ(p->extra_w, 0);
  EXPECT_TRUE(p->padded());
  EXPECT_EQ(p->padded_x(), (Shape{1, 9, 9, 2}));
}

TEST(CudnnParamsTest, ValidHasNoPadding) {
  absl::StatusOr<CudnnConvParams> p =
      Params(Shape{4, 224, 224, 3}, Shape{11, 11, 3, 64},
             Attrs({4, 4}, {1, 1}, false));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->pad_h, 0);
  EXPECT_EQ(p->pad_w, 0);
  EXPECT_FALSE(p->padded());
  EXPECT_EQ(p->y(), (Shape{4, 54, 54, 64}));
}

// For every small geometry: cuDNN's output size for the padded input and
// symmetric padding is Runnel's, window o starts at the same input index
// (o * stride - pad in both), and the last window stays inside what cuDNN
// pads, so cuDNN computes exactly Runnel's windows.
TEST(CudnnParamsTest, CudnnWindowsAreRunnels) {
  int checked = 0;
  for (int64_t in = 1; in <= 12; ++in) {
    for (int64_t k = 1; k <= 5; ++k) {
      for (int64_t s = 1; s <= 3; ++s) {
        for (int64_t d = 1; d <= 2; ++d) {
          for (bool same : {true, false}) {
            const Shape x{1, in, in + 1, 1}, f{k, k, 1, 1};
            absl::StatusOr<CudnnConvParams> p =
                Params(x, f, Attrs({s, s}, {d, d}, same));
            if (!same && (k - 1) * d + 1 > in) {
              EXPECT_FALSE(p.ok());  // the CPU's error: window too large
              continue;
            }
            ASSERT_TRUE(p.ok()) << p.status();
            SCOPED_TRACE(::testing::Message()
                         << "in " << in << " k " << k << " s " << s << " d "
                         << d << " same " << same);
            for (auto [padded, pad, extra, out, in_dim] :
                 {std::tuple{p->padded_h(), p->pad_h, p->extra_h, p->out_h, in},
                  std::tuple{p->padded_w(), p->pad_w, p->extra_w, p->out_w,
                             in + 1}}) {
              EXPECT_EQ(CudnnConvParams::CudnnOut(padded, pad, k, s, d), out);
              EXPECT_GE(extra, 0);
              EXPECT_LE(extra, 1);
              EXPECT_EQ(padded, in_dim + extra);
              // The last window ends inside cuDNN's padded extent.
              EXPECT_LE((out - 1) * s - pad + (k - 1) * d + 1, padded + pad);
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(CudnnParamsTest, BadOperandsGetTheCpuKernelsErrors) {
  absl::StatusOr<CudnnConvParams> p =
      Params(Shape{2, 5, 5}, Shape{3, 3, 3, 8}, Attrs({1, 1}, {1, 1}, true));
  EXPECT_THAT(p.status().message(),
              HasSubstr("conv2d needs NHWC input and HWIO filters of rank 4, "
                        "got f32[2,5,5] and f32[3,3,3,8]"));
  p = Params(Shape{2, 5, 5, 4}, Shape{3, 3, 3, 8}, Attrs({1, 1}, {1, 1}, true));
  EXPECT_THAT(p.status().message(),
              HasSubstr("channels differ: the input f32[2,5,5,4] has 4 but "
                        "the filters f32[3,3,3,8] expect 3"));
}

TEST(CudnnParamsTest, TooLargeForCudnnSaysSo) {
  absl::StatusOr<CudnnConvParams> p = MakeCudnnConvParams(
      "conv2d_backprop_input", DType::kF32, Shape{2, 32768, 32768, 1},
      Shape{1, 1, 1, 1}, Attrs({1, 1}, {1, 1}, true));
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(),
              HasSubstr("conv2d_backprop_input on a GPU: the input "
                        "[2,32768,32768,1] has 2147483648 elements, more than "
                        "cuDNN takes"));
}

TEST(CudnnParamsTest, KeysDifferInEverythingTheAlgorithmDependsOn) {
  const ConvAttrs a = Attrs({1, 1}, {1, 1}, true);
  const CudnnConvParams p = *Params(Shape{8, 28, 28, 1}, Shape{5, 5, 1, 32}, a);
  const ConvAlgoKey key(ConvPass::kForward, DType::kF32, p);
  EXPECT_EQ(key, ConvAlgoKey(ConvPass::kForward, DType::kF32, p));
  EXPECT_NE(key, ConvAlgoKey(ConvPass::kBackwardData, DType::kF32, p));
  EXPECT_NE(key, ConvAlgoKey(ConvPass::kForward, DType::kF16, p));
  const std::vector<CudnnConvParams> others = {
      *Params(Shape{16, 28, 28, 1}, Shape{5, 5, 1, 32}, a),
      *Params(Shape{8, 28, 27, 1}, Shape{5, 5, 1, 32}, a),
      *Params(Shape{8, 28, 28, 1}, Shape{5, 5, 1, 16}, a),
      *Params(Shape{8, 28, 28, 1}, Shape{3, 5, 1, 32}, a),
      *Params(Shape{8, 28, 28, 1}, Shape{5, 5, 1, 32},
              Attrs({2, 1}, {1, 1}, true)),
      *Params(Shape{8, 28, 28, 1}, Shape{5, 5, 1, 32},
              Attrs({1, 1}, {1, 2}, true)),
      *Params(Shape{8, 28, 28, 1}, Shape{5, 5, 1, 32},
              Attrs({1, 1}, {1, 1}, false)),
  };
  for (const CudnnConvParams& o : others) {
    EXPECT_NE(key, ConvAlgoKey(ConvPass::kForward, DType::kF32, o));
  }
}

TEST(CudnnParamsTest, CacheChoosesOncePerKey) {
  ConvAlgoCache cache;
  const CudnnConvParams p = *Params(Shape{8, 28, 28, 1}, Shape{5, 5, 1, 32},
                                    Attrs({1, 1}, {1, 1}, true));
  int chosen = 0;
  auto choose = [&](int algo) {
    return [&chosen, algo]() -> absl::StatusOr<ConvAlgo> {
      ++chosen;
      return ConvAlgo{algo, size_t{1024} * algo};
    };
  };
  const ConvAlgoKey fwd(ConvPass::kForward, DType::kF32, p);
  const ConvAlgoKey bwd(ConvPass::kBackwardFilter, DType::kF32, p);
  EXPECT_EQ(*cache.Get(fwd, choose(1)), (ConvAlgo{1, 1024}));
  EXPECT_EQ(*cache.Get(fwd, choose(2)), (ConvAlgo{1, 1024}));  // cached
  EXPECT_EQ(chosen, 1);
  EXPECT_EQ(*cache.Get(bwd, choose(3)), (ConvAlgo{3, 3072}));
  EXPECT_EQ(chosen, 2);
  EXPECT_EQ(cache.size(), 2u);
  // An error is returned and not kept: the next call chooses again.
  const ConvAlgoKey f16(ConvPass::kForward, DType::kF16, p);
  absl::StatusOr<ConvAlgo> failed = cache.Get(
      f16,
      []() -> absl::StatusOr<ConvAlgo> { return absl::NotFoundError("none"); });
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(*cache.Get(f16, choose(4)), (ConvAlgo{4, 4096}));
  EXPECT_EQ(chosen, 3);
}

TEST(CudnnParamsTest, PickTakesTheFirstDeterministicThatFits) {
  // {algo, supported, workspace, deterministic, tensor_cores}
  const std::vector<ConvAlgoCandidate> c = {
      {7, false, 0, true, false},        // not supported
      {6, true, 2u << 30, true, false},  // workspace too large
      {5, true, 0, false, false},        // not deterministic
      {4, true, 1024, true, true},       // tensor cores
      {3, true, 4096, true, false},     {2, true, 0, true, false},
  };
  EXPECT_EQ(*PickConvAlgo(c, size_t{1} << 30, /*fma_only=*/true),
            (ConvAlgo{3, 4096}));
  EXPECT_EQ(*PickConvAlgo(c, size_t{1} << 30, /*fma_only=*/false),
            (ConvAlgo{4, 1024}));
  EXPECT_EQ(*PickConvAlgo(c, 100, true), (ConvAlgo{2, 0}));
  // No deterministic one left: the first that fits.
  EXPECT_EQ(*PickConvAlgo({c[2], c[0]}, 100, true), (ConvAlgo{5, 0}));
  absl::StatusOr<ConvAlgo> none = PickConvAlgo({c[0], c[3]}, 100, true);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(),
              HasSubstr("none of the 2 algorithms cuDNN proposes is supported "
                        "with a workspace within 100 bytes and without tensor "
                        "cores"));
}

}  // namespace
}  // namespace runnel
