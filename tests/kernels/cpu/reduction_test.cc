// Reductions (framework/ops/math_ops.cc, kernels/cpu/reduction_kernels.cc):
// every axis of a rank-3 tensor, several axes, keepdims, dtypes, edge shapes
// and errors, against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "framework/op_registry.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Bool;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::F64;
using ::runnel::testing::I32;
using ::runnel::testing::I64;
using ::runnel::testing::Run1;
using ::runnel::testing::RunError;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInff = std::numeric_limits<float>::infinity();

AttrMap Axis(int64_t a, bool keepdims = false) {
  return {{"axis", a}, {"keepdims", keepdims}};
}
AttrMap Axes(std::vector<int64_t> a, bool keepdims = false) {
  return {{"axis", std::move(a)}, {"keepdims", keepdims}};
}

Tensor Cast(const Tensor& t, DType d) {
  return Run1("cast", {t}, {{"dtype", d}});
}

// x[i, j, k] = 12 i + 4 j + k, shape [2, 3, 4].
Tensor Iota234() {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = float(i);
  return F32(v, {2, 3, 4});
}

std::string ErrorOf(const std::string& op, std::vector<Tensor> in,
                    AttrMap attrs = {}) {
  absl::Status s = RunError(op, std::move(in), std::move(attrs));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(ReductionTest, SumEachAxisOfRank3) {
  Tensor x = Iota234();
  // sum_i = 12 + 2 (4 j + k)
  ExpectTensor(Run1("sum", {x}, Axis(0)), DType::kF32, {3, 4},
               {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}, 0);
  // sum_j = 36 i + 12 + 3 k
  ExpectTensor(Run1("sum", {x}, Axis(1)), DType::kF32, {2, 4},
               {12, 15, 18, 21, 48, 51, 54, 57}, 0);
  // sum_k = 48 i + 16 j + 6
  ExpectTensor(Run1("sum", {x}, Axis(2)), DType::kF32, {2, 3},
               {6, 22, 38, 54, 70, 86}, 0);
  ExpectTensor(Run1("sum", {x}, Axis(-1)), DType::kF32, {2, 3},
               {6, 22, 38, 54, 70, 86}, 0);
  ExpectTensor(Run1("sum", {x}, Axis(-3)), DType::kF32, {3, 4},
               {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}, 0);
}

TEST(ReductionTest, SumSeveralAxes) {
  Tensor x = Iota234();
  // Over i and k (not adjacent: the input is transposed first): 60 + 32 j.
  ExpectTensor(Run1("sum", {x}, Axes({0, 2})), DType::kF32, {3}, {60, 92, 124},
               0);
  ExpectTensor(Run1("sum", {x}, Axes({2, -3})), DType::kF32, {3}, {60, 92, 124},
               0);
  // Over i and j: 60 + 6 k.
  ExpectTensor(Run1("sum", {x}, Axes({0, 1})), DType::kF32, {4},
               {60, 66, 72, 78}, 0);
  // Over j and k: 144 i + 66.
  ExpectTensor(Run1("sum", {x}, Axes({1, 2})), DType::kF32, {2}, {66, 210}, 0);
  ExpectTensor(Run1("sum", {x}), DType::kF32, {}, {276}, 0);
  ExpectTensor(Run1("sum", {x}, Axes({0, 1, 2})), DType::kF32, {}, {276}, 0);
  // An empty axis list reduces nothing.
  ExpectTensor(Run1("sum", {F32({1, 2}, {2})}, Axes({})), DType::kF32, {2},
               {1, 2}, 0);
}

TEST(ReductionTest, KeepDims) {
  Tensor x = Iota234();
  ExpectTensor(Run1("sum", {x}, Axis(1, true)), DType::kF32, {2, 1, 4},
               {12, 15, 18, 21, 48, 51, 54, 57}, 0);
  ExpectTensor(Run1("sum", {x}, Axes({0, 2}, true)), DType::kF32, {1, 3, 1},
               {60, 92, 124}, 0);
  ExpectTensor(Run1("max", {x}, {{"keepdims", true}}), DType::kF32, {1, 1, 1},
               {23}, 0);
  ExpectTensor(Run1("argmax", {x}, Axis(2, true)), DType::kI32, {2, 3, 1},
               {3, 3, 3, 3, 3, 3}, 0);
}

TEST(ReductionTest, Mean) {
  Tensor x = Iota234();
  ExpectTensor(Run1("mean", {x}, Axis(1)), DType::kF32, {2, 4},
               {4, 5, 6, 7, 16, 17, 18, 19}, 0);
  ExpectTensor(Run1("mean", {x}), DType::kF32, {}, {11.5}, 0);
  ExpectTensor(Run1("mean", {x}, Axes({0, 2})), DType::kF32, {3},
               {7.5, 11.5, 15.5}, 0);
  ExpectTensor(Run1("mean", {F64({1, 2, 4}, {3})}), DType::kF64, {}, {7.0 / 3},
               1e-15);
  // Integer means truncate toward zero and keep the dtype.
  ExpectTensor(Run1("mean", {I32({1, 2, 4, -1, -2, -4}, {2, 3})}, Axis(1)),
               DType::kI32, {2}, {2, -2}, 0);
  // ... accumulating wider than the input, so small ints do not wrap.
  Tensor u = Cast(I32({200, 250, 100}, {3}), DType::kU8);
  ExpectTensor(Run1("mean", {u}), DType::kU8, {}, {183}, 0);
}

TEST(ReductionTest, MaxMin) {
  Tensor x = Iota234();
  ExpectTensor(Run1("max", {x}, Axis(0)), DType::kF32, {3, 4},
               {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}, 0);
  ExpectTensor(Run1("min", {x}, Axis(2)), DType::kF32, {2, 3},
               {0, 4, 8, 12, 16, 20}, 0);
  ExpectTensor(Run1("max", {x}, Axes({0, 2})), DType::kF32, {3}, {15, 19, 23},
               0);
  ExpectTensor(Run1("min", {x}, Axis(1)), DType::kF32, {2, 4},
               {0, 1, 2, 3, 12, 13, 14, 15}, 0);
  ExpectTensor(Run1("max", {I32({-5, 3, -9, -1}, {2, 2})}, Axis(1)),
               DType::kI32, {2}, {3, -1}, 0);
  ExpectTensor(Run1("min", {I64({-5, 3, -9, -1}, {2, 2})}, Axis(0)),
               DType::kI64, {2}, {-9, -1}, 0);
  // nan propagates, in rows and in columns.
  Tensor n = F32({1, kNaNf, 3, 4}, {2, 2});
  ExpectTensor(Run1("max", {n}, Axis(1)), DType::kF32, {2}, {kNaN, 4});
  ExpectTensor(Run1("min", {n}, Axis(0)), DType::kF32, {2}, {1, kNaN});
  ExpectTensor(Run1("max", {F32({-kInff, -kInff}, {2})}), DType::kF32, {},
               {-kInf}, 0);
}

TEST(ReductionTest, Prod) {
  Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  ExpectTensor(Run1("prod", {x}, Axis(1)), DType::kF32, {2}, {6, 120}, 0);
  ExpectTensor(Run1("prod", {x}, Axis(0)), DType::kF32, {3}, {4, 10, 18}, 0);
  ExpectTensor(Run1("prod", {x}), DType::kF32, {}, {720}, 0);
  ExpectTensor(Run1("prod", {I32({-2, 3, 5}, {3})}), DType::kI32, {}, {-30}, 0);
}

TEST(ReductionTest, AllAny) {
  Tensor b = Bool({true, true, false, true, true, true}, {2, 3});
  ExpectTensor(Run1("all", {b}, Axis(1)), DType::kBool, {2}, {0, 1}, 0);
  ExpectTensor(Run1("all", {b}, Axis(0)), DType::kBool, {3}, {1, 1, 0}, 0);
  ExpectTensor(Run1("any", {b}, Axis(0)), DType::kBool, {3}, {1, 1, 1}, 0);
  ExpectTensor(Run1("all", {b}), DType::kBool, {}, {0}, 0);
  ExpectTensor(Run1("any", {b}), DType::kBool, {}, {1}, 0);
  Tensor f = Bool({false, false, true, false}, {2, 2});
  ExpectTensor(Run1("any", {f}, Axis(1)), DType::kBool, {2}, {0, 1}, 0);
  ExpectTensor(Run1("any", {f}, Axis(0)), DType::kBool, {2}, {1, 0}, 0);
}

TEST(ReductionTest, ArgMaxArgMin) {
  Tensor x = F32({1, 5, 5, 7, 2, 7}, {2, 3});
  // The first extreme wins.
  ExpectTensor(Run1("argmax", {x}, Axis(1)), DType::kI32, {2}, {1, 0}, 0);
  ExpectTensor(Run1("argmax", {x}, Axis(0)), DType::kI32, {3}, {1, 0, 1}, 0);
  ExpectTensor(Run1("argmin", {x}, Axis(1)), DType::kI32, {2}, {0, 1}, 0);
  ExpectTensor(Run1("argmin", {x}, Axis(-2)), DType::kI32, {3}, {0, 1, 0}, 0);
  // Without an axis: the index into the flattened tensor.
  ExpectTensor(Run1("argmax", {x}), DType::kI32, {}, {3}, 0);
  ExpectTensor(Run1("argmin", {x}), DType::kI32, {}, {0}, 0);
  ExpectTensor(Run1("argmax", {Iota234()}, Axis(1)), DType::kI32, {2, 4},
               {2, 2, 2, 2, 2, 2, 2, 2}, 0);
  ExpectTensor(Run1("argmin", {Iota234()}), DType::kI32, {}, {0}, 0);
  ExpectTensor(Run1("argmax", {Iota234()}), DType::kI32, {}, {23}, 0);
  // nan is the extreme, as in NumPy.
  Tensor n = F32({1, kNaNf, 3}, {3});
  ExpectTensor(Run1("argmax", {n}), DType::kI32, {}, {1}, 0);
  ExpectTensor(Run1("argmin", {n}), DType::kI32, {}, {1}, 0);
  ExpectTensor(Run1("argmax", {I64({-3, -1, -2}, {3})}, Axis(0)), DType::kI32,
               {}, {1}, 0);
  Tensor u = Cast(I32({4, 200, 9, 1}, {2, 2}), DType::kU8);
  ExpectTensor(Run1("argmin", {u}, Axis(0)), DType::kI32, {2}, {0, 1}, 0);
  EXPECT_NE(ErrorOf("argmax", {x}, Axes({0, 1})).find("single axis"),
            std::string::npos);
}

// cumsum against numpy.cumsum (and ONNX CumSum's exclusive and reverse).
TEST(ReductionTest, Cumsum) {
  auto attrs = [](int64_t axis, bool exclusive, bool reverse) {
    return AttrMap{
        {"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}};
  };
  const Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  ExpectTensor(Run1("cumsum", {x}, attrs(1, false, false)), DType::kF32, {2, 3},
               {1, 3, 6, 4, 9, 15});
  ExpectTensor(Run1("cumsum", {x}, attrs(0, false, false)), DType::kF32, {2, 3},
               {1, 2, 3, 5, 7, 9});
  ExpectTensor(Run1("cumsum", {x}, attrs(-1, true, false)), DType::kF32, {2, 3},
               {0, 1, 3, 0, 4, 9});
  ExpectTensor(Run1("cumsum", {x}, attrs(1, false, true)), DType::kF32, {2, 3},
               {6, 5, 3, 15, 11, 6});
  ExpectTensor(Run1("cumsum", {x}, attrs(1, true, true)), DType::kF32, {2, 3},
               {5, 3, 0, 11, 6, 0});
  // Integers wrap as their addition does; f64 keeps its precision.
  ExpectTensor(
      Run1("cumsum", {I32({2147483647, 1, 1}, {3})}, attrs(0, false, false)),
      DType::kI32, {3}, {2147483647, -2147483648.0, -2147483647}, 0);
  ExpectTensor(Run1("cumsum", {F64({1e8, 1, 1}, {3})}, attrs(0, false, false)),
               DType::kF64, {3}, {1e8, 1e8 + 1, 1e8 + 2}, 0);
  // An empty axis, and a NaN that spreads forward only.
  ExpectTensor(Run1("cumsum", {F32({}, {2, 0})}, attrs(1, false, false)),
               DType::kF32, {2, 0}, {});
  Tensor n = Run1("cumsum", {F32({1, kNaNf, 2}, {3})}, attrs(0, false, false));
  EXPECT_EQ(n.at<float>(0), 1);
  EXPECT_TRUE(std::isnan(n.at<float>(1)) && std::isnan(n.at<float>(2)));
  EXPECT_NE(ErrorOf("cumsum", {x}, attrs(2, false, false)).find("axis"),
            std::string::npos);
  EXPECT_NE(ErrorOf("cumsum", {Bool({true}, {1})}, attrs(0, false, false))
                .find("cumsum"),
            std::string::npos);
}

TEST(ReductionTest, LogSumExp) {
  ExpectTensor(Run1("logsumexp", {F32({0, 0}, {2})}), DType::kF32, {},
               {0.69314718});
  // Stable for large values.
  ExpectTensor(Run1("logsumexp", {F32({1000, 1000, -1000}, {3})}), DType::kF32,
               {}, {1000.69314718});
  ExpectTensor(Run1("logsumexp", {F32({-kInff, -kInff}, {2})}), DType::kF32, {},
               {-kInf}, 0);
  ExpectTensor(Run1("logsumexp", {F32({1, kInff}, {2})}), DType::kF32, {},
               {kInf}, 0);
  // Along axis 0 of the rank-3 iota: log(e^a + e^(a+12)) = a + 12 +
  // log1p(e^-12), columns of a reduction with inner > 1.
  Tensor l = Run1("logsumexp", {Iota234()}, Axis(0));
  std::vector<double> want(12);
  for (int a = 0; a < 12; ++a) want[a] = a + 12.00000614421;
  ExpectTensor(l, DType::kF32, {3, 4}, want);
  ExpectTensor(Run1("logsumexp", {F64({1, 2, 3, 4}, {2, 2})}, Axis(1)),
               DType::kF64, {2}, {2.31326168751822, 4.31326168751822}, 1e-13);
}

TEST(ReductionTest, Rank5) {
  // x = 16 a + 8 b + 4 c + 2 d + e; summing over b and d gives
  // 4 (16 a + 4 c + e) + 20, indexed [a, c, e].
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[i] = float(i);
  Tensor x = F32(v, {2, 2, 2, 2, 2});
  ExpectTensor(Run1("sum", {x}, Axes({1, 3})), DType::kF32, {2, 2, 2},
               {20, 24, 36, 40, 84, 88, 100, 104}, 0);
  ExpectTensor(Run1("max", {x}, Axes({0, 2, 4}, true)), DType::kF32,
               {1, 2, 1, 2, 1}, {21, 23, 29, 31}, 0);
  ExpectTensor(Run1("argmax", {x}, Axis(3)), DType::kI32, {2, 2, 2, 2},
               std::vector<double>(16, 1), 0);
}

TEST(ReductionTest, OtherDTypes) {
  for (DType d : {DType::kF16, DType::kBF16}) {
    Tensor h = Cast(F32({1, 2, 3, 4.5}, {2, 2}), d);
    ExpectTensor(Run1("sum", {h}), d, {}, {10.5}, 0);
    ExpectTensor(Run1("sum", {h}, Axis(0)), d, {2}, {4, 6.5}, 0);
    ExpectTensor(Run1("mean", {h}, Axis(1)), d, {2}, {1.5, 3.75}, 0);
    ExpectTensor(Run1("max", {h}, Axis(1)), d, {2}, {2, 4.5}, 0);
    ExpectTensor(Run1("prod", {h}), d, {}, {27}, 0);
    ExpectTensor(Run1("argmax", {h}), DType::kI32, {}, {3}, 0);
    ExpectTensor(Run1("logsumexp", {h}, Axis(1)), d, {2},
                 {2.31326169, 4.70141328}, 1e-2);
  }
  // 16-bit floats accumulate in float: 4096 halves of 1 sum to 4096 even
  // though f16 cannot count past 2048 by ones.
  Tensor ones = Cast(F32(std::vector<float>(4096, 1), {4096}), DType::kF16);
  ExpectTensor(Run1("sum", {ones}), DType::kF16, {}, {4096}, 0);
  Tensor i8 = Cast(I32({100, 100, -3}, {3}), DType::kI8);
  ExpectTensor(Run1("sum", {i8}), DType::kI8, {}, {-59}, 0);  // 197 wraps
  ExpectTensor(Run1("max", {i8}), DType::kI8, {}, {100}, 0);
  ExpectTensor(Run1("sum", {I64({5000000000, 1}, {2})}), DType::kI64, {},
               {5000000001}, 0);
}

TEST(ReductionTest, EmptyShapes) {
  Tensor e = F32({}, {0, 3});
  ExpectTensor(Run1("sum", {e}, Axis(0)), DType::kF32, {3}, {0, 0, 0}, 0);
  ExpectTensor(Run1("prod", {e}, Axis(0)), DType::kF32, {3}, {1, 1, 1}, 0);
  ExpectTensor(Run1("mean", {e}, Axis(0)), DType::kF32, {3},
               {kNaN, kNaN, kNaN});
  ExpectTensor(Run1("logsumexp", {e}, Axis(0)), DType::kF32, {3},
               {-kInf, -kInf, -kInf}, 0);
  ExpectTensor(Run1("sum", {e}, Axis(1)), DType::kF32, {0}, {});
  ExpectTensor(Run1("max", {e}, Axis(1)), DType::kF32, {0}, {});
  ExpectTensor(Run1("argmax", {e}, Axis(1)), DType::kI32, {0}, {});
  ExpectTensor(Run1("sum", {e}), DType::kF32, {}, {0}, 0);
  ExpectTensor(Run1("all", {Bool({}, {0})}), DType::kBool, {}, {1}, 0);
  ExpectTensor(Run1("any", {Bool({}, {0})}), DType::kBool, {}, {0}, 0);
  // No identity: max, min, argmax, argmin of nothing, and integer means.
  for (const char* op : {"max", "min", "argmax", "argmin"}) {
    std::string msg = ErrorOf(op, {e}, Axis(0));
    EXPECT_NE(msg.find("empty"), std::string::npos) << msg;
  }
  EXPECT_NE(ErrorOf("mean", {I32({}, {0})}).find("empty"), std::string::npos);
}

TEST(ReductionTest, Scalars) {
  Tensor s = F32({3.5}, {});
  ExpectTensor(Run1("sum", {s}), DType::kF32, {}, {3.5}, 0);
  ExpectTensor(Run1("max", {s}, {{"keepdims", true}}), DType::kF32, {}, {3.5},
               0);
  ExpectTensor(Run1("argmax", {s}), DType::kI32, {}, {0}, 0);
  ExpectTensor(Run1("logsumexp", {s}), DType::kF32, {}, {3.5});
  // Size-1 dims reduce to the element itself.
  ExpectTensor(Run1("mean", {F32({1, 2}, {1, 2, 1})}, Axes({0, 2})),
               DType::kF32, {2}, {1, 2}, 0);
}

TEST(ReductionTest, LargeRowsAndColumns) {
  // Long rows are summed in chunks, tall columns in row blocks, in
  // parallel; integers in float keep every sum exact.
  const int n = 100000;
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = float(i % 7);
  // sum of i % 7 over 0..99999: 14285 full cycles of 21, then 0..4.
  const double total = 14285.0 * 21 + 10;
  ExpectTensor(Run1("sum", {F32(v, {n})}), DType::kF32, {}, {total}, 0);
  ExpectTensor(Run1("max", {F32(v, {n})}), DType::kF32, {}, {6}, 0);
  // [4, 25000] rows: row r holds i = 25000 r .. 25000 r + 24999.
  Tensor rows = Run1("sum", {F32(v, {4, 25000})}, Axis(1));
  double expected_rows[4] = {0, 0, 0, 0};
  for (int i = 0; i < n; ++i) expected_rows[i / 25000] += i % 7;
  ExpectTensor(
      rows, DType::kF32, {4},
      {expected_rows[0], expected_rows[1], expected_rows[2], expected_rows[3]},
      0);
  // [20000, 5] columns: column c holds i = 5 r + c.
  Tensor cols = Run1("sum", {F32(v, {20000, 5})}, Axis(0));
  std::vector<double> expected_cols(5, 0);
  for (int i = 0; i < n; ++i) expected_cols[i % 5] += i % 7;
  ExpectTensor(cols, DType::kF32, {5}, expected_cols, 0);
  Tensor argmax = Run1("argmax", {F32(v, {20000, 5})}, Axis(0));
  // The first row with i % 7 == 6 in column c: 5 r + c = 6 (mod 7).
  ExpectTensor(argmax, DType::kI32, {5}, {4, 1, 5, 2, 6}, 0);
  // Wide columns: [3, 3000] over axis 0 uses several column blocks.
  std::vector<float> w(9000);
  for (int i = 0; i < 9000; ++i) w[i] = float(i / 3000 + 1);
  Tensor wide = Run1("prod", {F32(w, {3, 3000})}, Axis(0));
  ExpectTensor(wide, DType::kF32, {3000}, std::vector<double>(3000, 6), 0);
}

TEST(ReductionTest, ShapeErrors) {
  Tensor x = Iota234();
  std::string msg = ErrorOf("sum", {x}, Axis(3));
  EXPECT_NE(msg.find("axis 3 is out of range for a tensor of rank 3"),
            std::string::npos)
      << msg;
  ErrorOf("mean", {x}, Axis(-4));
  ErrorOf("argmax", {x}, Axis(5));
  EXPECT_NE(ErrorOf("sum", {Bool({true}, {1})}).find("numeric"),
            std::string::npos);
  EXPECT_NE(ErrorOf("all", {F32({1}, {1})}).find("bool"), std::string::npos);
  msg = ErrorOf("logsumexp", {I32({1}, {1})});
  EXPECT_NE(msg.find("floating-point"), std::string::npos) << msg;
}

TEST(ReductionTest, ShapeFunctionWithUnknownShapes) {
  const OpDef* sum = OpRegistry::Global().Find("sum");
  ASSERT_NE(sum, nullptr);
  AttrMap none;
  auto out =
      InferOutputs(*sum, none, {{DType::kF32, Shape::UnknownRank()}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToString(), "f32[]");
  AttrMap axis1 = Axis(1);
  out =
      InferOutputs(*sum, axis1, {{DType::kF32, Shape{kUnknownDim, 3, 4}}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToString(), "f32[?,4]");
  const OpDef* argmax = OpRegistry::Global().Find("argmax");
  AttrMap last = Axis(-1);
  out =
      InferOutputs(*argmax, last, {{DType::kF64, Shape{kUnknownDim, 10}}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToString(), "i32[?]");
}

}  // namespace
}  // namespace runnel
