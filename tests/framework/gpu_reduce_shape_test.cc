// The reductions' host-side planning (framework/reduce_layout.h, shared by
// the CPU and GPU kernels, and the GPU's kernels/cuda/reduce_plan.h), on
// any machine: the [outer, reduced, inner] layout with its merged dims and
// permutation, the split of long reductions into chunks, and the scratch
// it needs. A host model of the GPU kernels' index arithmetic (permute,
// then chunks, then partials) must give the CPU `sum` kernel's results.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "framework/attr_value.h"
#include "framework/reduce_layout.h"
#include "kernels/cuda/reduce_plan.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using cuda::ReduceSplit;
using cuda::SplitReduce;

void ExpectLayout(const ReduceLayout& l, int64_t outer, int64_t reduced,
                  int64_t inner) {
  EXPECT_EQ(l.outer, outer);
  EXPECT_EQ(l.reduced, reduced);
  EXPECT_EQ(l.inner, inner);
}

TEST(GpuReduceLayoutTest, OneRunOfReducedDims) {
  ExpectLayout(PlanReduceLayout({4, 5, 6}, {2}), 20, 6, 1);     // rows
  ExpectLayout(PlanReduceLayout({4, 5, 6}, {0}), 1, 4, 30);     // columns
  ExpectLayout(PlanReduceLayout({4, 5, 6}, {1}), 4, 5, 6);      // middle
  ExpectLayout(PlanReduceLayout({4, 5, 6}, {1, 2}), 4, 30, 1);  // merged
  ExpectLayout(PlanReduceLayout({4, 5, 6}, {0, 1, 2}), 1, 120, 1);
  EXPECT_TRUE(PlanReduceLayout({4, 5, 6}, {1, 2}).permute_dims.empty());
}

TEST(GpuReduceLayoutTest, RankZeroNoAxesAndSizeOne) {
  ExpectLayout(PlanReduceLayout({}, {}), 1, 1, 1);
  ExpectLayout(PlanReduceLayout({7, 3}, {}), 21, 1, 1);  // reduces nothing
  // Dims of size 1 belong to no run: [4, 1, 6] over {0, 2} is one run.
  const ReduceLayout l = PlanReduceLayout({4, 1, 6}, {0, 2});
  ExpectLayout(l, 1, 24, 1);
  EXPECT_TRUE(l.permute_dims.empty());
  ExpectLayout(PlanReduceLayout({1, 1}, {0, 1}), 1, 1, 1);
}

TEST(GpuReduceLayoutTest, EmptyDims) {
  ExpectLayout(PlanReduceLayout({3, 0}, {1}), 3, 0, 1);
  ExpectLayout(PlanReduceLayout({0, 3}, {1}), 0, 3, 1);
  ExpectLayout(PlanReduceLayout({0}, {0}), 1, 0, 1);
}

TEST(GpuReduceLayoutTest, SeveralRunsArePermutedKeptFirst) {
  // [2, 3, 4, 5] over {0, 2}: kept 3 and 5 first, then reduced 2 and 4.
  const ReduceLayout l = PlanReduceLayout({2, 3, 4, 5}, {0, 2});
  ExpectLayout(l, 15, 8, 1);
  EXPECT_EQ(l.permute_dims, (std::vector<int64_t>{3, 5, 2, 4}));
  EXPECT_EQ(l.permute_strides, (std::vector<int64_t>{20, 1, 60, 5}));
}

TEST(GpuReduceSplitTest, ManyOutputsAreOnePass) {
  const ReduceSplit s = SplitReduce(10000, 1 << 20, 1);
  EXPECT_EQ(s.chunks, 1);
  EXPECT_EQ(s.rows, 1 << 20);
  EXPECT_EQ(SplitReduce(1, 100, 1).chunks, 1);         // short
  EXPECT_EQ(SplitReduce(1 << 20, 1000, 2).chunks, 1);  // many columns
  EXPECT_EQ(SplitReduce(3, 0, 1).chunks, 1);           // empty
}

// Every chunk is non-empty and they cover the reduced dim exactly.
void ExpectCovers(const ReduceSplit& s, int64_t reduced) {
  ASSERT_GE(s.chunks, 1);
  EXPECT_GE(s.chunks * s.rows, reduced);
  EXPECT_LT((s.chunks - 1) * s.rows, reduced);
}

TEST(GpuReduceSplitTest, LongReductionsAreCut) {
  const int64_t n = (int64_t{1} << 20) + 7;
  const ReduceSplit all = SplitReduce(1, n, 1);  // reduce everything
  EXPECT_GT(all.chunks, 100);
  EXPECT_LE(all.chunks, cuda::kRowBlocks);
  EXPECT_GE(all.rows, cuda::kMinRowChunk);
  ExpectCovers(all, n);
  const ReduceSplit cols = SplitReduce(1, n, 3);  // [n, 3] over axis 0
  EXPECT_GT(cols.chunks, 1000);
  EXPECT_GE(cols.rows, cuda::kMinColumnChunk);
  ExpectCovers(cols, n);
  for (int64_t reduced : {8192, 8193, 100000, 3000000}) {
    for (int64_t inner : {1, 2, 100}) {
      ExpectCovers(SplitReduce(2, reduced, inner), reduced);
    }
  }
}

TEST(GpuReduceSplitTest, ScratchHoldsPartialsAndExtraOutputs) {
  EXPECT_EQ(cuda::ReduceScratchBytes(10000, 1 << 20, 1, 0), 0u);
  EXPECT_EQ(cuda::ReduceScratchBytes(10, 20, 3, 1), 30 * cuda::kPartialBytes);
  const ReduceSplit s = SplitReduce(2, 1 << 20, 1);
  EXPECT_EQ(cuda::ReduceScratchBytes(2, 1 << 20, 1, 1),
            static_cast<size_t>(2 * s.chunks + 2) * cuda::kPartialBytes);
}

// The GPU kernels' walk, on the host: permute as LaunchPermute does, then
// each slot (o, c, j) sums its chunk, then the partials are summed.
std::vector<double> ModelSum(const std::vector<double>& x,
                             const std::vector<int64_t>& dims,
                             const std::vector<int>& axes) {
  const ReduceLayout l = PlanReduceLayout(dims, axes);
  std::vector<double> in = x;
  if (!l.permute_dims.empty()) {
    const int rank = static_cast<int>(l.permute_dims.size());
    for (size_t i = 0; i < x.size(); ++i) {
      int64_t rest = static_cast<int64_t>(i), from = 0;
      for (int d = rank - 1; d >= 0; --d) {
        from += (rest % l.permute_dims[d]) * l.permute_strides[d];
        rest /= l.permute_dims[d];
      }
      in[i] = x[from];
    }
  }
  const ReduceSplit s = SplitReduce(l.outer, l.reduced, l.inner);
  std::vector<double> partial(l.outer * s.chunks * l.inner, 0.0);
  for (int64_t q = 0; q < static_cast<int64_t>(partial.size()); ++q) {
    const int64_t j = q % l.inner;
    const int64_t c = (q / l.inner) % s.chunks;
    const int64_t o = q / (l.inner * s.chunks);
    for (int64_t r = c * s.rows; r < std::min(l.reduced, (c + 1) * s.rows);
         ++r) {
      partial[q] += in[(o * l.reduced + r) * l.inner + j];
    }
  }
  std::vector<double> out(l.outer * l.inner, 0.0);
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t c = 0; c < s.chunks; ++c) {
      for (int64_t j = 0; j < l.inner; ++j) {
        out[o * l.inner + j] += partial[(o * s.chunks + c) * l.inner + j];
      }
    }
  }
  return out;
}

TEST(GpuReduceModelTest, MatchesTheCpuSum) {
  struct Case {
    std::vector<int64_t> dims;
    std::vector<int> axes;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4, 5}, {0, 2}},
      {{2, 3, 4, 5}, {1, 3}},
      {{2, 3, 4, 5}, {0, 3}},
      {{2, 3, 4, 5}, {0, 1, 2, 3}},
      {{3, 1, 4}, {0, 2}},
      {{6, 7}, {}},
      {{}, {}},
      {{1 << 15, 3}, {0}},
      {{3, 1 << 14}, {1}},
      {{2, 0, 3}, {1}},
  };
  for (const Case& c : cases) {
    const Shape shape(c.dims);
    Tensor x = Tensor(DType::kF64, shape);
    const std::vector<float> v =
        testing::PatternValues(shape.num_elements(), 3, 101);
    for (int64_t i = 0; i < shape.num_elements(); ++i) {
      // Integers, so that any summation order is exact.
      x.data<double>()[i] = static_cast<double>(static_cast<int>(v[i] * 8));
    }
    std::vector<int64_t> axes(c.axes.begin(), c.axes.end());
    const Tensor cpu = testing::Run1("sum", {x}, {{"axis", axes}});
    const std::vector<double> model = ModelSum(x.ToDoubles(), c.dims, c.axes);
    EXPECT_EQ(model, cpu.ToDoubles()) << shape.ToString();
  }
}

}  // namespace
}  // namespace runnel
