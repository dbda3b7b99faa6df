// matmul: shape function, and kernels for every dtype against hand values
// and a naive reference loop.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/float16.h"
#include "common_runtime/eager.h"
#include "framework/op_registry.h"
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

// Deterministic values in [-1, 1) that are not all simple fractions.
std::vector<float> MatMulPattern(int64_t n, int seed) {
  return testing::PatternValues(n, seed, 2654435761u);
}

// Reference product of stored a [rows_a, cols_a] and b, transposing as asked.
std::vector<double> NaiveMatMul(const std::vector<float>& a,
                                const std::vector<float>& b, int64_t m,
                                int64_t n, int64_t k, bool ta, bool tb) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = ta ? a[p * m + i] : a[i * k + p];
        const double y = tb ? b[j * k + p] : b[p * n + j];
        sum += x * y;
      }
      c[i * n + j] = sum;
    }
  }
  return c;
}

TEST(MatMulTest, SmallF32) {
  Tensor a = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = F32({0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6}, {3, 4});
  ExpectTensor(Run1("matmul", {a, b}), DType::kF32, {2, 4},
               {19, 22, 25, 28, 41.5, 49, 56.5, 64}, 0);
}

TEST(MatMulTest, Transposes) {
  // a^T with a = [[1, 4], [2, 5], [3, 6]] is [[1, 2, 3], [4, 5, 6]].
  Tensor at = F32({1, 4, 2, 5, 3, 6}, {3, 2});
  Tensor b = F32({0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6}, {3, 4});
  // b^T stored as [4, 3].
  Tensor bt = F32({0.5, 2.5, 4.5, 1, 3, 5, 1.5, 3.5, 5.5, 2, 4, 6}, {4, 3});
  const std::vector<double> want = {19, 22, 25, 28, 41.5, 49, 56.5, 64};
  ExpectTensor(Run1("matmul", {at, b}, {{"transpose_a", true}}), DType::kF32,
               {2, 4}, want, 0);
  ExpectTensor(Run1("matmul", {F32({1, 2, 3, 4, 5, 6}, {2, 3}), bt},
                    {{"transpose_b", true}}),
               DType::kF32, {2, 4}, want, 0);
  ExpectTensor(
      Run1("matmul", {at, bt}, {{"transpose_a", true}, {"transpose_b", true}}),
      DType::kF32, {2, 4}, want, 0);
}

// Sizes that cut into uneven pieces (16 rows or columns apart: 200x600x300
// in 4 by columns, 530x400x100 in 5 by rows) and single rows and columns,
// in every transpose combination; widths of 512 and 1024 with 256 rows or
// columns or more, whose untransposed B (beside an untransposed A) or
// transposed A is copied with its rows further apart first
// (kernels/cpu/gemm.cc: 700x33x512, 1024x8x1100, 256x30x512, not
// 255x30x512), whole
// and, large enough to be cut (2^22 multiply-adds a piece), cut by columns
// (40x420x1024) and by rows (1024x420x40).
TEST(MatMulTest, LargeAgainstNaive) {
  struct Case {
    int64_t m, n, k;
  };
  for (Case cs : {Case{37, 29, 53},    Case{130, 70, 600},  Case{7, 300, 5},
                  Case{1, 33, 64},     Case{200, 1, 17},    Case{1000, 3, 300},
                  Case{5, 900, 200},   Case{16, 512, 30},   Case{256, 512, 30},
                  Case{255, 512, 30},  Case{40, 1024, 2},   Case{700, 512, 33},
                  Case{33, 1536, 70},  Case{512, 24, 70},   Case{1024, 1100, 8},
                  Case{96, 40, 900},   Case{200, 300, 600}, Case{530, 100, 400},
                  Case{40, 1024, 420}, Case{1024, 40, 420}}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      std::vector<float> a = MatMulPattern(cs.m * cs.k, 1);
      std::vector<float> b = MatMulPattern(cs.k * cs.n, 2);
      Shape sa = ta ? Shape{cs.k, cs.m} : Shape{cs.m, cs.k};
      Shape sb = tb ? Shape{cs.n, cs.k} : Shape{cs.k, cs.n};
      Tensor c = Run1("matmul", {F32(a, sa), F32(b, sb)},
                      {{"transpose_a", ta}, {"transpose_b", tb}});
      SCOPED_TRACE(StrCat(cs.m, "x", cs.k, "x", cs.n, " ta=", ta, " tb=", tb));
      ExpectTensor(c, DType::kF32, {cs.m, cs.n},
                   NaiveMatMul(a, b, cs.m, cs.n, cs.k, ta, tb), 1e-4);
    }
  }
}

// matmul_add(acc, a, b) = acc + op(a) op(b), in every transpose
// combination and at a width whose B (256 rows of C) or transposed A (256
// columns) is spread first; acc is unchanged.
TEST(MatMulTest, MatMulAddAgainstNaive) {
  struct Case {
    int64_t m, n, k;
  };
  for (Case cs : {Case{3, 4, 2}, Case{37, 29, 53}, Case{256, 512, 9},
                  Case{512, 256, 9}, Case{5, 7, 0}}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      std::vector<float> a = MatMulPattern(cs.m * cs.k, 5);
      std::vector<float> b = MatMulPattern(cs.k * cs.n, 6);
      std::vector<float> acc = MatMulPattern(cs.m * cs.n, 7);
      Shape sa = ta ? Shape{cs.k, cs.m} : Shape{cs.m, cs.k};
      Shape sb = tb ? Shape{cs.n, cs.k} : Shape{cs.k, cs.n};
      Tensor acc_t = F32(acc, {cs.m, cs.n});
      Tensor c = Run1("matmul_add", {acc_t, F32(a, sa), F32(b, sb)},
                      {{"transpose_a", ta}, {"transpose_b", tb}});
      SCOPED_TRACE(StrCat(cs.m, "x", cs.k, "x", cs.n, " ta=", ta, " tb=", tb));
      std::vector<double> want = NaiveMatMul(a, b, cs.m, cs.n, cs.k, ta, tb);
      for (size_t i = 0; i < want.size(); ++i) want[i] += acc[i];
      ExpectTensor(c, DType::kF32, {cs.m, cs.n}, want, 1e-4);
      ExpectTensor(acc_t, DType::kF32, {cs.m, cs.n},
                   std::vector<double>(acc.begin(), acc.end()), 0);
    }
  }
  EXPECT_EQ(std::string(RunError("matmul_add",
                                 {F32({1, 2}, {1, 2}), F32({1, 2}, {1, 2}),
                                  F32({1, 2}, {2, 1})})
                            .message()),
            "matmul_add: the sum f32[1,2] does not match the product f32[1,1]");
  EXPECT_EQ(RunError("matmul_add",
                     {F64({1}, {1, 1}), F64({1}, {1, 1}), F64({1}, {1, 1})})
                .message(),
            "matmul_add: expected f32 tensors, got f64[1,1] as input 0");
}

TEST(MatMulTest, SameResultOnOneThread) {
  for (int64_t n : {90, 512}) {
    std::vector<float> a = MatMulPattern(150 * 400, 3),
                       b = MatMulPattern(400 * n, 4);
    Tensor ta = F32(a, {150, 400}), tb = F32(b, {400, n});
    Tensor two = Run1("matmul", {ta, tb});
    EagerContext one_thread({.num_threads = 1});
    absl::StatusOr<Tensor> one = one_thread.Execute1("matmul", {ta, tb});
    ASSERT_TRUE(one.ok()) << one.status();
    ASSERT_EQ(one->num_elements(), two.num_elements());
    for (int64_t i = 0; i < two.num_elements(); ++i) {
      ASSERT_EQ(one->at<float>(i), two.at<float>(i))
          << "n " << n << ", element " << i;
    }
  }
}

TEST(MatMulTest, BatchedBroadcast) {
  // a [2,1,2,3] and b [3,3,2] broadcast to [2,3,2,2].
  std::vector<float> a(12), b(18);
  for (int i = 0; i < 12; ++i) a[i] = i - 5;
  for (int i = 0; i < 18; ++i) b[i] = i % 7 - 3;
  ExpectTensor(Run1("matmul", {F32(a, {2, 1, 2, 3}), F32(b, {3, 3, 2})}),
               DType::kF32, {2, 3, 2, 2},
               {16, 4, 7,   4, -7, 16, -4, 7,   5,  -7, -1,  -4,
                -2, 4, -11, 4, -1, -2, 2,  -11, -7, -1, -13, 2},
               0);
}

TEST(MatMulTest, BatchedRank3WithTranspose) {
  // Many small products, each checked against the naive loop.
  const int64_t batch = 9, m = 5, k = 7, n = 4;
  std::vector<float> a = MatMulPattern(batch * m * k, 5);
  std::vector<float> b = MatMulPattern(batch * n * k, 6);
  Tensor c = Run1("matmul", {F32(a, {batch, m, k}), F32(b, {batch, n, k})},
                  {{"transpose_b", true}});
  std::vector<double> want;
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<float> ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k);
    std::vector<float> bi(b.begin() + i * n * k, b.begin() + (i + 1) * n * k);
    std::vector<double> ci = NaiveMatMul(ai, bi, m, n, k, false, true);
    want.insert(want.end(), ci.begin(), ci.end());
  }
  ExpectTensor(c, DType::kF32, {batch, m, n}, want, 1e-5);
}

TEST(MatMulTest, StackTimesOneMatrix) {
  // a [2, 3, m, k] times b [k, n] or b [1, k, n] (tb: [n, k]): planned as
  // one product of all a's rows; each matrix checked against the naive
  // loop, in f32, f64 and i32.
  const int64_t stack = 6, m = 5, k = 7, n = 33;
  std::vector<float> a = MatMulPattern(stack * m * k, 7);
  std::vector<float> b = MatMulPattern(k * n, 8);
  for (bool tb : {false, true}) {
    for (const std::vector<int64_t>& b_batch :
         {std::vector<int64_t>{}, std::vector<int64_t>{1}}) {
      SCOPED_TRACE(::testing::Message()
                   << "tb=" << tb << " b rank " << 2 + b_batch.size());
      std::vector<int64_t> b_dims = b_batch;
      b_dims.push_back(tb ? n : k);
      b_dims.push_back(tb ? k : n);
      std::vector<double> want;
      for (int64_t i = 0; i < stack; ++i) {
        std::vector<float> ai(a.begin() + i * m * k,
                              a.begin() + (i + 1) * m * k);
        std::vector<double> ci = NaiveMatMul(ai, b, m, n, k, false, tb);
        want.insert(want.end(), ci.begin(), ci.end());
      }
      const AttrMap attrs{{"transpose_b", tb}};
      ExpectTensor(
          Run1("matmul", {F32(a, {2, 3, m, k}), F32(b, Shape(b_dims))}, attrs),
          DType::kF32, {2, 3, m, n}, want, 1e-5);
      std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());
      ExpectTensor(
          Run1("matmul", {F64(a64, {2, 3, m, k}), F64(b64, Shape(b_dims))},
               attrs),
          DType::kF64, {2, 3, m, n}, want, 1e-12);
    }
  }
  std::vector<int32_t> ai(stack * m * k), bi(k * n);
  for (size_t i = 0; i < ai.size(); ++i) ai[i] = static_cast<int>(i % 5) - 2;
  for (size_t i = 0; i < bi.size(); ++i) bi[i] = static_cast<int>(i % 3) - 1;
  std::vector<double> want;
  for (int64_t s = 0; s < stack; ++s) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int64_t sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += ai[(s * m + i) * k + p] * bi[p * n + j];
        }
        want.push_back(static_cast<double>(sum));
      }
    }
  }
  ExpectTensor(Run1("matmul", {I32(ai, {stack, m, k}), I32(bi, {k, n})}),
               DType::kI32, {stack, m, n}, want, 0);
}

TEST(MatMulTest, F64) {
  Tensor a = F64({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = F64({0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6}, {3, 4});
  ExpectTensor(Run1("matmul", {a, b}), DType::kF64, {2, 4},
               {19, 22, 25, 28, 41.5, 49, 56.5, 64}, 0);
  ExpectTensor(
      Run1("matmul", {b, a}, {{"transpose_a", true}, {"transpose_b", true}}),
      DType::kF64, {4, 2}, {19, 41.5, 22, 49, 25, 56.5, 28, 64}, 0);
}

TEST(MatMulTest, Integers) {
  Tensor a = I32({1, -2, 3, 4, 5, -6}, {2, 3});
  Tensor b = I32({7, 8, 9, 10, -11, 12}, {3, 2});
  ExpectTensor(Run1("matmul", {a, b}), DType::kI32, {2, 2}, {-44, 24, 139, 10},
               0);
  Tensor a64 = I64({1, -2, 3, 4, 5, -6}, {1, 2, 3});
  Tensor b64 = I64({7, 8, 9, 10, -11, 12}, {3, 2});
  ExpectTensor(Run1("matmul", {a64, b64}), DType::kI64, {1, 2, 2},
               {-44, 24, 139, 10}, 0);
}

// The integers' own loop: a batch with both operands transposed as stored,
// and products and sums that wrap (two's complement) as integer ops do.
TEST(MatMulTest, IntegersTransposedBatchedAndWrapping) {
  // Batch 0 is the case above stored transposed; batch 1 negates a.
  Tensor a = I32({1, 4, -2, 5, 3, -6, -1, -4, 2, -5, -3, 6}, {2, 3, 2});
  Tensor b = I32({7, 9, -11, 8, 10, 12, 7, 9, -11, 8, 10, 12}, {2, 2, 3});
  ExpectTensor(
      Run1("matmul", {a, b}, {{"transpose_a", true}, {"transpose_b", true}}),
      DType::kI32, {2, 2, 2}, {-44, 24, 139, 10, 44, -24, -139, -10}, 0);
  // 2^30 * 4 = 2^32 wraps to 0; (2^31 - 1) * 2 + 3 * 1 wraps to 1.
  ExpectTensor(Run1("matmul", {I32({1 << 30}, {1, 1}), I32({4}, {1, 1})}),
               DType::kI32, {1, 1}, {0}, 0);
  ExpectTensor(
      Run1("matmul", {I32({2147483647, 3}, {1, 2}), I32({2, 1}, {2, 1})}),
      DType::kI32, {1, 1}, {1}, 0);
  ExpectTensor(
      Run1("matmul", {I64({int64_t{1} << 62}, {1, 1}), I64({4}, {1, 1})}),
      DType::kI64, {1, 1}, {0}, 0);
}

TEST(MatMulTest, HalfAndBFloat16) {
  std::vector<Half> ah, bh;
  std::vector<BFloat16> ab, bb;
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) {
    ah.push_back(FloatToHalf(v));
    ab.push_back(FloatToBFloat16(v));
  }
  for (double v :
       {0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0}) {
    bh.push_back(FloatToHalf(v));
    bb.push_back(FloatToBFloat16(v));
  }
  const std::vector<double> want = {19, 22, 25, 28, 41.5, 49, 56.5, 64};
  ExpectTensor(Run1("matmul", {Tensor::FromVector(ah, {2, 3}),
                               Tensor::FromVector(bh, {3, 4})}),
               DType::kF16, {2, 4}, want, 0);
  // bf16 has 8 significant bits: 41.5 and 56.5 round to 41.5 and 56.5 but
  // check within its precision anyway.
  ExpectTensor(Run1("matmul", {Tensor::FromVector(ab, {2, 3}),
                               Tensor::FromVector(bb, {3, 4})}),
               DType::kBF16, {2, 4}, want, 1e-2);
}

TEST(MatMulTest, EmptyInnerDimensionGivesZeros) {
  ExpectTensor(Run1("matmul", {F32({}, {2, 0}), F32({}, {0, 3})}), DType::kF32,
               {2, 3}, {0, 0, 0, 0, 0, 0}, 0);
  // Every dtype, batched too, and in memory that held other values just
  // before (Eigen's product with an empty inner dimension writes nothing:
  // an f64 [3,0] @ [0,4] gave 1.1e248 among its zeros, found on a GPU
  // machine comparing against the CPU).
  for (DType d : {DType::kF64, DType::kF32, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16}) {
    for (int round = 0; round < 3; ++round) {
      const Tensor dirty = Run1(
          "fill", {Tensor::FromVector<int32_t>({2, 3, 4}), F64({7.5}, {})});
      ASSERT_EQ(dirty.num_elements(), 24);
      const Tensor a = Run1("cast", {F32({}, {2, 3, 0})}, {{"dtype", d}});
      const Tensor b = Run1("cast", {F32({}, {0, 4})}, {{"dtype", d}});
      const Tensor c =
          Run1("cast", {Run1("matmul", {a, b})}, {{"dtype", DType::kF64}});
      ExpectTensor(c, DType::kF64, {2, 3, 4}, std::vector<double>(24, 0.0), 0);
    }
  }
}

TEST(MatMulTest, InnerDimensionErrorNamesBothOperands) {
  const OpDef* def = OpRegistry::Global().Find("matmul");
  ASSERT_NE(def, nullptr);
  AttrMap attrs;
  absl::StatusOr<std::vector<TensorSpec>> out =
      InferOutputs(*def, attrs,
                   {TensorSpec{DType::kF32, Shape{kUnknownDim, 784}},
                    TensorSpec{DType::kF32, Shape{700, 10}}},
                   {nullptr, nullptr});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(),
            "matmul: inner dimensions differ: f32[?,784] @ f32[700,10]");
}

TEST(MatMulTest, ShapeFunctionPartialShapes) {
  const OpDef* def = OpRegistry::Global().Find("matmul");
  ASSERT_NE(def, nullptr);
  AttrMap attrs = {{"transpose_b", true}};
  absl::StatusOr<std::vector<TensorSpec>> out = InferOutputs(
      *def, attrs,
      {TensorSpec{DType::kF32, Shape{kUnknownDim, 1, kUnknownDim, 8}},
       TensorSpec{DType::kF32, Shape{5, 3, 8}}},
      {nullptr, nullptr});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToString(), "f32[?,5,?,3]");
}

TEST(MatMulTest, Errors) {
  EXPECT_EQ(RunError("matmul", {F32({1, 2, 3, 4, 5, 6}, {2, 3}),
                                F32({1, 2, 3, 4}, {2, 2})})
                .message(),
            "matmul: inner dimensions differ: f32[2,3] @ f32[2,2]");
  EXPECT_EQ(
      RunError("matmul", {F32({1, 2}, {1, 2}), F64({1, 2}, {2, 1})}).message(),
      "matmul: dtypes differ: f32[1,2] and f64[2,1]");
  EXPECT_EQ(
      RunError("matmul", {F32({1, 2}, {2}), F32({1, 2}, {2, 1})}).message(),
      "matmul: the left operand must have rank >= 2, got f32[2]");
  EXPECT_EQ(RunError("matmul", {F32(std::vector<float>(12, 1), {2, 2, 3}),
                                F32(std::vector<float>(18, 1), {3, 3, 2})})
                .message(),
            "matmul: batch dimensions of f32[2,2,3] and f32[3,3,2] cannot be "
            "broadcast");
}

}  // namespace
}  // namespace runnel
