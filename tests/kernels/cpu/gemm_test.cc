// PackedMatrixF32 (kernels/cpu/gemm.h): products against sums in double,
// for every count of rows a kernel block takes (1 to 6 and more), whole
// and partial panels of columns, B transposed, C overwritten or added to
// with a leading dimension wider than its columns, and k = 0.
#include "kernels/cpu/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/util/test_util.h"

namespace runnel {
namespace {

// A (m x k, leading dimension lda), B (k x n, stored n x k when
// `transposed`), C (m x n, leading dimension ldc) starting from `c0`.
void ExpectProduct(int64_t m, int64_t k, int64_t n, bool transposed,
                   bool accumulate) {
  SCOPED_TRACE(::testing::Message()
               << m << "x" << k << "x" << n << (transposed ? " B^T" : "")
               << (accumulate ? " +=" : ""));
  const int64_t lda = k + 3, ldc = n + 5;
  const std::vector<float> a = testing::PatternValues(m * lda, 1, 977u);
  const std::vector<float> b = testing::PatternValues(k * n, 2, 977u);
  const std::vector<float> c0 = testing::PatternValues(m * ldc, 3, 977u);
  const ConstMatrixF32 bm = transposed ? ConstMatrixF32{b.data(), 1, k}
                                       : ConstMatrixF32{b.data(), n, 1};
  ThreadPool pool(2);
  const PackedMatrixF32 packed(&pool, k, n, bm);
  EXPECT_EQ(packed.k(), k);
  EXPECT_EQ(packed.n(), n);
  std::vector<float> c = c0;
  packed.Multiply(m, a.data(), lda, c.data(), ldc, accumulate);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= n) {  // past C's columns: untouched
        ASSERT_EQ(got, c0[i * ldc + j]) << i << "," << j;
        continue;
      }
      double want = accumulate ? c0[i * ldc + j] : 0.0;
      for (int64_t l = 0; l < k; ++l) {
        want += double{a[i * lda + l]} * b[transposed ? j * k + l : l * n + j];
      }
      ASSERT_NEAR(got, want, 1e-5 * (1 + std::abs(want))) << i << "," << j;
    }
  }
}

TEST(PackedGemmTest, EveryBlockOfRowsAndPanel) {
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 13, 16}) {
    for (int64_t n : {16, 3, 37}) {
      ExpectProduct(m, 9, n, /*transposed=*/false, /*accumulate=*/false);
    }
  }
}

TEST(PackedGemmTest, TransposedAndAccumulated) {
  for (bool transposed : {false, true}) {
    for (bool accumulate : {false, true}) {
      ExpectProduct(16, 128, 48, transposed, accumulate);
      ExpectProduct(5, 20, 12, transposed, accumulate);
    }
  }
}

// k = 0: C = 0, or left as it is.
TEST(PackedGemmTest, NoProductsToSum) {
  ExpectProduct(4, 0, 20, false, false);
  ExpectProduct(4, 0, 20, false, true);
}

}  // namespace
}  // namespace runnel
