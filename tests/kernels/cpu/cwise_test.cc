// Element-wise ops (framework/ops/math_ops.cc, kernels/cpu/cwise_*.cc): values
// against hand-computed results, broadcasting, dtypes, edge shapes, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "framework/graph.h"
#include "framework/kernel.h"
#include "framework/op_registry.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Bool;
using ::runnel::testing::Eager;
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

Tensor Cast(const Tensor& t, DType d) {
  return Run1("cast", {t}, {{"dtype", d}});
}

// The error message of running `op`, which must fail with InvalidArgument.
std::string ErrorOf(const std::string& op, std::vector<Tensor> in,
                    AttrMap attrs = {}) {
  absl::Status s = RunError(op, std::move(in), std::move(attrs));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

// ---- arithmetic
// ---------------------------------------------------------------

TEST(CwiseTest, ArithmeticSameShapeF32) {
  Tensor x = F32({1, 2, 3, -4}, {2, 2});
  Tensor y = F32({10, 20, 0.5, 8}, {2, 2});
  ExpectTensor(Run1("add", {x, y}), DType::kF32, {2, 2}, {11, 22, 3.5, 4});
  ExpectTensor(Run1("sub", {x, y}), DType::kF32, {2, 2}, {-9, -18, 2.5, -12});
  ExpectTensor(Run1("mul", {x, y}), DType::kF32, {2, 2}, {10, 40, 1.5, -32});
  ExpectTensor(Run1("div", {x, y}), DType::kF32, {2, 2}, {0.1, 0.1, 6, -0.5});
}

TEST(CwiseTest, ArithmeticF64AndI64) {
  ExpectTensor(Run1("mul", {F64({1.5, -2}, {2}), F64({4, 0.25}, {2})}),
               DType::kF64, {2}, {6, -0.5}, 0);
  ExpectTensor(Run1("sub", {I64({5000000000, 3}, {2}), I64({1, 7}, {2})}),
               DType::kI64, {2}, {4999999999, -4}, 0);
}

TEST(CwiseTest, ArithmeticSmallIntsWrap) {
  Tensor a = Cast(I32({250, 3}, {2}), DType::kU8);
  Tensor b = Cast(I32({10, 5}, {2}), DType::kU8);
  ExpectTensor(Run1("add", {a, b}), DType::kU8, {2}, {4, 8}, 0);
  ExpectTensor(Run1("sub", {b, a}), DType::kU8, {2}, {16, 2}, 0);
  Tensor c = Cast(I32({100, -7}, {2}), DType::kI8);
  ExpectTensor(Run1("mul", {c, Cast(I32({2, 3}, {2}), DType::kI8)}), DType::kI8,
               {2}, {-56, -21}, 0);
}

TEST(CwiseTest, IntegerDivIsTrueDivision) {
  ExpectTensor(Run1("div", {I32({7, -7, 1, 0}, {4}), I32({2, 2, 3, 5}, {4})}),
               DType::kF32, {4}, {3.5, -3.5, 1.0 / 3, 0});
  ExpectTensor(Run1("div", {I64({1, 9}, {2}), I64({3, -4}, {2})}), DType::kF64,
               {2}, {1.0 / 3, -2.25}, 1e-15);
  Tensor u = Cast(I32({200, 9}, {2}), DType::kU8);
  ExpectTensor(Run1("div", {u, Cast(I32({8, 2}, {2}), DType::kU8)}),
               DType::kF32, {2}, {25, 4.5});
}

TEST(CwiseTest, FloorDivRoundsDown) {
  ExpectTensor(Run1("floordiv",
                    {I32({7, -7, 7, -7, 6}, {5}), I32({2, 2, -2, -2, 3}, {5})}),
               DType::kI32, {5}, {3, -4, -4, 3, 2}, 0);
  ExpectTensor(Run1("floordiv",
                    {F32({7.5, -7.5, 1, -0.5}, {4}), F32({2, 2, 4, 4}, {4})}),
               DType::kF32, {4}, {3, -4, 0, -1}, 0);
  ExpectTensor(Run1("floordiv", {I64({-9}, {1}), I64({4}, {1})}), DType::kI64,
               {1}, {-3}, 0);
}

TEST(CwiseTest, ModTakesTheSignOfTheDivisor) {
  ExpectTensor(
      Run1("mod", {I32({7, -7, 7, -7, 6}, {5}), I32({3, 3, -3, -3, 3}, {5})}),
      DType::kI32, {5}, {1, 2, -2, -1, 0}, 0);
  ExpectTensor(
      Run1("mod", {F32({5.5, -5.5, 5.5, -5.5}, {4}), F32({2, 2, -2, -2}, {4})}),
      DType::kF32, {4}, {1.5, 0.5, -0.5, -1.5}, 0);
  // A float remainder by zero is nan, not an error.
  ExpectTensor(Run1("mod", {F32({1}, {1}), F32({0}, {1})}), DType::kF32, {1},
               {kNaN});
}

TEST(CwiseTest, IntegerDivisionByZeroIsAnError) {
  for (const char* op : {"div", "floordiv", "mod"}) {
    std::string msg = ErrorOf(op, {I32({1, 2}, {2}), I32({1, 0}, {2})});
    EXPECT_NE(msg.find("division by zero"), std::string::npos) << op << msg;
    ErrorOf(op, {I64({5}, {}), I64({0}, {})});
    ErrorOf(op,
            {Cast(I32({5}, {1}), DType::kU8), Cast(I32({0}, {1}), DType::kU8)});
  }
  // The smallest integer over -1 wraps instead of trapping.
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  ExpectTensor(Run1("floordiv", {I32({kMin}, {1}), I32({-1}, {1})}),
               DType::kI32, {1}, {double(kMin)}, 0);
  ExpectTensor(Run1("mod", {I32({kMin}, {1}), I32({-1}, {1})}), DType::kI32,
               {1}, {0}, 0);
  // Float division by zero follows IEEE.
  ExpectTensor(Run1("div", {F32({1, -1}, {2}), F32({0, 0}, {2})}), DType::kF32,
               {2}, {kInf, -kInf}, 0);
}

TEST(CwiseTest, Pow) {
  ExpectTensor(
      Run1("pow", {F32({2, 4, 9, 2}, {4}), F32({3, 0.5, 0.5, -1}, {4})}),
      DType::kF32, {4}, {8, 2, 3, 0.5});
  ExpectTensor(
      Run1("pow", {I32({2, 3, -2, 5, 0}, {5}), I32({10, 3, 3, 0, 0}, {5})}),
      DType::kI32, {5}, {1024, 27, -8, 1, 1}, 0);
  ExpectTensor(Run1("pow", {I64({3}, {1}), I64({39}, {1})}), DType::kI64, {1},
               {4052555153018976267.0}, 0);
  std::string msg = ErrorOf("pow", {I32({2}, {1}), I32({-1}, {1})});
  EXPECT_NE(msg.find("negative integer powers"), std::string::npos) << msg;
}

TEST(CwiseTest, MaximumMinimumPropagateNaN) {
  Tensor x = F32({1, 5, kNaNf, 2}, {4});
  Tensor y = F32({3, 2, 1, kNaNf}, {4});
  ExpectTensor(Run1("maximum", {x, y}), DType::kF32, {4}, {3, 5, kNaN, kNaN});
  ExpectTensor(Run1("minimum", {x, y}), DType::kF32, {4}, {1, 2, kNaN, kNaN});
  ExpectTensor(Run1("maximum", {I32({-1, 7}, {2}), I32({0, 3}, {2})}),
               DType::kI32, {2}, {0, 7}, 0);
  ExpectTensor(Run1("minimum", {I32({-1, 7}, {2}), I32({0, 3}, {2})}),
               DType::kI32, {2}, {-1, 3}, 0);
}

// ---- broadcasting
// -------------------------------------------------------------

TEST(CwiseTest, BroadcastRowVector) {
  ExpectTensor(
      Run1("add", {F32({1, 2, 3, 4, 5, 6}, {2, 3}), F32({10, 20, 30}, {3})}),
      DType::kF32, {2, 3}, {11, 22, 33, 14, 25, 36}, 0);
  ExpectTensor(
      Run1("sub", {F32({10, 20, 30}, {3}), F32({1, 2, 3, 4, 5, 6}, {2, 3})}),
      DType::kF32, {2, 3}, {9, 18, 27, 6, 15, 24}, 0);
}

TEST(CwiseTest, BroadcastColumnAgainstRow) {
  ExpectTensor(Run1("mul", {F32({1, 2}, {2, 1}), F32({3, 4, 5}, {1, 3})}),
               DType::kF32, {2, 3}, {3, 4, 5, 6, 8, 10}, 0);
  ExpectTensor(Run1("sub", {I32({1, 2}, {2, 1}), I32({3, 4, 5}, {1, 3})}),
               DType::kI32, {2, 3}, {-2, -3, -4, -1, -2, -3}, 0);
}

TEST(CwiseTest, BroadcastScalar) {
  Tensor s = F32({2}, {});
  Tensor t = F32({1, 2, 3}, {3});
  ExpectTensor(Run1("div", {s, t}), DType::kF32, {3}, {2, 1, 2.0 / 3});
  ExpectTensor(Run1("div", {t, s}), DType::kF32, {3}, {0.5, 1, 1.5});
  ExpectTensor(Run1("add", {s, s}), DType::kF32, {}, {4}, 0);
  // A one-element tensor of higher rank raises the rank.
  ExpectTensor(Run1("add", {F32({1}, {1, 1}), t}), DType::kF32, {1, 3},
               {2, 3, 4}, 0);
}

TEST(CwiseTest, BroadcastRank5) {
  // a[i0, 0, i2, 0, 0] + b[0, i1, 0, 0, i4]
  Tensor a = F32({1, 2, 3, 4}, {2, 1, 2, 1, 1});
  Tensor b = F32({10, 20, 30, 40}, {1, 2, 1, 1, 2});
  ExpectTensor(Run1("add", {a, b}), DType::kF32, {2, 2, 2, 1, 2},
               {11, 21, 12, 22, 31, 41, 32, 42, 13, 23, 14, 24, 33, 43, 34, 44},
               0);
}

TEST(CwiseTest, BroadcastLargeUsesAllPaths) {
  // Large enough to be split across threads: [rows, cols] against a
  // column, a row and a scalar.
  const int rows = 700, cols = 300;
  std::vector<float> xv(rows * cols), col(rows), row(cols);
  for (int i = 0; i < rows * cols; ++i) xv[i] = float(i % 1000);
  for (int i = 0; i < rows; ++i) col[i] = float(i);
  for (int j = 0; j < cols; ++j) row[j] = float(-j);
  Tensor x = F32(xv, {rows, cols});
  Tensor a = Run1("sub", {x, F32(col, {rows, 1})});
  Tensor b = Run1("add", {F32(row, {cols}), x});
  Tensor c = Run1("mul", {x, F32({2}, {})});
  Tensor d = Run1("mul", {x, x});
  ASSERT_EQ(a.num_elements(), rows * cols);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const int k = i * cols + j;
      ASSERT_EQ(a.at<float>(k), xv[k] - i) << i << "," << j;
      ASSERT_EQ(b.at<float>(k), xv[k] - j) << i << "," << j;
      ASSERT_EQ(c.at<float>(k), xv[k] * 2) << i << "," << j;
      ASSERT_EQ(d.at<float>(k), xv[k] * xv[k]) << i << "," << j;
    }
  }
}

TEST(CwiseTest, EmptyAndScalarShapes) {
  Tensor empty = F32({}, {0, 3});
  ExpectTensor(Run1("add", {empty, F32({1, 2, 3}, {3})}), DType::kF32, {0, 3},
               {});
  ExpectTensor(Run1("mul", {F32({}, {2, 0}), F32({5}, {})}), DType::kF32,
               {2, 0}, {});
  ExpectTensor(Run1("add", {F32({}, {0, 1}), F32({1, 2}, {2})}), DType::kF32,
               {0, 2}, {});
  ExpectTensor(Run1("exp", {F32({}, {0})}), DType::kF32, {0}, {});
  ExpectTensor(Run1("less", {empty, empty}), DType::kBool, {0, 3}, {});
  // An empty result needs no check of the divisor.
  ExpectTensor(Run1("floordiv", {I32({}, {0}), I32({0}, {1})}), DType::kI32,
               {0}, {});
  ExpectTensor(Run1("neg", {F32({3}, {})}), DType::kF32, {}, {-3}, 0);
  ExpectTensor(Run1("maximum", {I32({3}, {}), I32({4}, {})}), DType::kI32, {},
               {4}, 0);
}

// Two scalars (a loop's counters) skip the broadcast layout: every binary
// op and comparison gives what it gives on one-element vectors.
TEST(CwiseTest, ScalarsGiveWhatOneElementVectorsGive) {
  for (DType d : {DType::kF32, DType::kI32, DType::kF16, DType::kI64}) {
    const bool ints = d == DType::kI32 || d == DType::kI64;
    std::vector<std::pair<double, double>> pairs = {
        {7, 2}, {-7, 2}, {-3, -2}, {3, 3}};
    if (!ints) pairs.push_back({2.5, -0.5});
    for (const char* op : {"add", "sub", "mul", "div", "floordiv", "mod", "pow",
                           "maximum", "minimum", "less", "less_equal",
                           "greater", "greater_equal", "equal", "not_equal"}) {
      for (auto [a, b] : pairs) {
        if (std::string(op) == "pow" && b < 0 && ints) {
          continue;  // integers to negative powers are an error
        }
        const Tensor x = Cast(F32({float(a)}, {}), d);
        const Tensor y = Cast(F32({float(b)}, {}), d);
        const Tensor scalar = Run1(op, {x, y});
        const Tensor vector =
            Run1(op, {*x.Reshaped(Shape{1}), *y.Reshaped(Shape{1})});
        EXPECT_EQ(scalar.shape(), Shape{}) << op;
        EXPECT_EQ(scalar.dtype(), vector.dtype()) << op;
        EXPECT_EQ(scalar.ToDoubles(), vector.ToDoubles())
            << op << " " << DTypeName(d) << " " << a << ", " << b;
      }
    }
  }
  EXPECT_NE(
      ErrorOf("div", {I32({1}, {}), I32({0}, {})}).find("division by zero"),
      std::string::npos);
}

// ---- comparisons and logic
// ------------------------------------------------------

TEST(CwiseTest, Comparisons) {
  Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = F32({2, 2, 5}, {3});
  ExpectTensor(Run1("equal", {x, y}), DType::kBool, {2, 3}, {0, 1, 0, 0, 0, 0});
  ExpectTensor(Run1("not_equal", {x, y}), DType::kBool, {2, 3},
               {1, 0, 1, 1, 1, 1});
  ExpectTensor(Run1("less", {x, y}), DType::kBool, {2, 3}, {1, 0, 1, 0, 0, 0});
  ExpectTensor(Run1("less_equal", {x, y}), DType::kBool, {2, 3},
               {1, 1, 1, 0, 0, 0});
  ExpectTensor(Run1("greater", {x, y}), DType::kBool, {2, 3},
               {0, 0, 0, 1, 1, 1});
  ExpectTensor(Run1("greater_equal", {x, y}), DType::kBool, {2, 3},
               {0, 1, 0, 1, 1, 1});
}

TEST(CwiseTest, ComparisonsOfOtherDTypes) {
  ExpectTensor(Run1("less", {I32({-1, 5}, {2}), I32({0}, {})}), DType::kBool,
               {2}, {1, 0}, 0);
  ExpectTensor(
      Run1("equal", {Bool({true, false, true}, {3}), Bool({true}, {})}),
      DType::kBool, {3}, {1, 0, 1}, 0);
  ExpectTensor(Run1("greater", {I64({3, 4}, {2}), I64({4, 3}, {2})}),
               DType::kBool, {2}, {0, 1}, 0);
  // nan compares unequal to everything, itself included.
  Tensor n = F32({kNaNf, 1}, {2});
  ExpectTensor(Run1("equal", {n, n}), DType::kBool, {2}, {0, 1}, 0);
  ExpectTensor(Run1("not_equal", {n, n}), DType::kBool, {2}, {1, 0}, 0);
  Tensor h = Cast(F32({0.5, 2}, {2}), DType::kF16);
  ExpectTensor(Run1("less_equal", {h, Cast(F32({0.5}, {}), DType::kF16)}),
               DType::kBool, {2}, {1, 0}, 0);
}

TEST(CwiseTest, LogicalOps) {
  Tensor a = Bool({true, true, false, false}, {2, 2});
  Tensor b = Bool({true, false}, {2});
  ExpectTensor(Run1("logical_and", {a, b}), DType::kBool, {2, 2}, {1, 0, 0, 0},
               0);
  ExpectTensor(Run1("logical_or", {a, b}), DType::kBool, {2, 2}, {1, 1, 1, 0},
               0);
  ExpectTensor(Run1("logical_not", {a}), DType::kBool, {2, 2}, {0, 0, 1, 1}, 0);
  EXPECT_NE(ErrorOf("logical_and", {a, F32({1, 0}, {2})}).find("bool"),
            std::string::npos);
  EXPECT_NE(ErrorOf("logical_not", {I32({1}, {1})}).find("bool"),
            std::string::npos);
}

// ---- unary
// --------------------------------------------------------------------

TEST(CwiseTest, UnaryNumeric) {
  Tensor x = F32({-1.5, 0, 2, kNaNf}, {4});
  ExpectTensor(Run1("abs", {x}), DType::kF32, {4}, {1.5, 0, 2, kNaN});
  ExpectTensor(Run1("neg", {x}), DType::kF32, {4}, {1.5, 0, -2, kNaN});
  ExpectTensor(Run1("sign", {x}), DType::kF32, {4}, {-1, 0, 1, kNaN});
  ExpectTensor(Run1("square", {x}), DType::kF32, {4}, {2.25, 0, 4, kNaN});
  ExpectTensor(Run1("relu", {x}), DType::kF32, {4}, {0, 0, 2, kNaN});

  Tensor i = I32({-3, 0, 4}, {3});
  ExpectTensor(Run1("abs", {i}), DType::kI32, {3}, {3, 0, 4}, 0);
  ExpectTensor(Run1("neg", {i}), DType::kI32, {3}, {3, 0, -4}, 0);
  ExpectTensor(Run1("sign", {i}), DType::kI32, {3}, {-1, 0, 1}, 0);
  ExpectTensor(Run1("square", {i}), DType::kI32, {3}, {9, 0, 16}, 0);
  ExpectTensor(Run1("relu", {i}), DType::kI32, {3}, {0, 0, 4}, 0);
  Tensor u = Cast(I32({0, 7}, {2}), DType::kU8);
  ExpectTensor(Run1("abs", {u}), DType::kU8, {2}, {0, 7}, 0);
  ExpectTensor(Run1("sign", {u}), DType::kU8, {2}, {0, 1}, 0);
  ExpectTensor(Run1("neg", {u}), DType::kU8, {2}, {0, 249}, 0);
}

TEST(CwiseTest, UnaryFloatMath) {
  ExpectTensor(Run1("sqrt", {F32({4, 9, 2, 0}, {4})}), DType::kF32, {4},
               {2, 3, 1.41421356, 0});
  ExpectTensor(Run1("sqrt", {F32({-1}, {1})}), DType::kF32, {1}, {kNaN});
  ExpectTensor(Run1("rsqrt", {F32({4, 0.25, 16}, {3})}), DType::kF32, {3},
               {0.5, 2, 0.25});
  ExpectTensor(Run1("exp", {F32({0, 1, -1}, {3})}), DType::kF32, {3},
               {1, 2.71828183, 0.36787944});
  ExpectTensor(Run1("log", {F32({1, 2.71828183, 0.5}, {3})}), DType::kF32, {3},
               {0, 1, -0.69314718});
  Tensor log0 = Run1("log", {F32({0}, {1})});
  EXPECT_EQ(log0.at<float>(0), -kInff);
  ExpectTensor(Run1("log1p", {F32({0, 1e-10f, 1}, {3})}), DType::kF32, {3},
               {0, 1e-10, 0.69314718});
  ExpectTensor(Run1("sin", {F32({0, 1.57079633, -0.5}, {3})}), DType::kF32, {3},
               {0, 1, -0.47942554});
  ExpectTensor(Run1("cos", {F32({0, 3.14159265, 0.5}, {3})}), DType::kF32, {3},
               {1, -1, 0.87758256});
  ExpectTensor(Run1("tanh", {F32({0, 1, -2, 20}, {4})}), DType::kF32, {4},
               {0, 0.76159416, -0.96402758, 1});
  ExpectTensor(Run1("sigmoid", {F32({0, 2, -2, 100, -100}, {5})}), DType::kF32,
               {5}, {0.5, 0.88079708, 0.11920292, 1, 0});
  ExpectTensor(Run1("elu", {F32({-1, 0, 2, -20}, {4})}), DType::kF32, {4},
               {-0.63212056, 0, 2, -1});
  ExpectTensor(Run1("softplus", {F32({0, 1, -1, 100, -100}, {5})}), DType::kF32,
               {5}, {0.69314718, 1.31326169, 0.31326169, 100, 0});
  // math.erf's values; erf is odd and saturates at +-1.
  ExpectTensor(Run1("erf", {F32({0, 1, -0.5, 3, -10, 0.01}, {6})}), DType::kF32,
               {6}, {0, 0.84270079, -0.52049988, 0.99997791, -1, 0.011283416});
  ExpectTensor(Run1("erf", {F64({0.5, -2}, {2})}), DType::kF64, {2},
               {0.5204998778130465, -0.9953222650189527}, 1e-15);
  ExpectTensor(Run1("exp", {F64({1}, {1})}), DType::kF64, {1},
               {2.718281828459045}, 1e-15);
  // Underflow, on the vectorized path and its tail alike (67 elements): the
  // C library's subnormals and zeros, not the smallest normal number that
  // Eigen's clamped exp gives (issue 31's siblings).
  {
    const std::vector<float> xs = {-88.5f,  -90.0f,  -100.0f,  -103.0f,
                                   -104.0f, -200.0f, -1000.0f, -kInff};
    std::vector<float> in, want;
    for (int i = 0; i < 67; ++i) in.push_back(xs[i % xs.size()]);
    Tensor y = Run1("exp", {F32(in, {67})});
    for (int i = 0; i < 67; ++i) {
      EXPECT_EQ(y.at<float>(i), std::exp(in[i])) << "exp(" << in[i] << ")";
    }
    // A NaN beside them changes nothing.
    Tensor yn = Run1("exp", {F32({kNaNf, -100.0f}, {2})});
    EXPECT_TRUE(std::isnan(yn.at<float>(0)));
    EXPECT_EQ(yn.at<float>(1), std::exp(-100.0f));
    const std::vector<double> xd = {-709.0, -710.0, -740.0, -745.1, -800.0};
    std::vector<double> ind;
    for (int i = 0; i < 19; ++i) ind.push_back(xd[i % xd.size()]);
    Tensor yd = Run1("exp", {F64(ind, {19})});
    for (int i = 0; i < 19; ++i) {
      EXPECT_EQ(yd.at<double>(i), std::exp(ind[i])) << "exp(" << ind[i] << ")";
    }
  }
  ExpectTensor(Run1("tanh", {F64({0.5}, {1})}), DType::kF64, {1},
               {0.46211715726000974}, 1e-14);
}

TEST(CwiseTest, Rounding) {
  Tensor x = F32({-1.5, 1.5, 2, 2.5, -0.5, 0.5, 2.4, -2.6}, {8});
  ExpectTensor(Run1("floor", {x}), DType::kF32, {8},
               {-2, 1, 2, 2, -1, 0, 2, -3}, 0);
  ExpectTensor(Run1("ceil", {x}), DType::kF32, {8}, {-1, 2, 2, 3, 0, 1, 3, -2},
               0);
  // Half to even, as NumPy.
  ExpectTensor(Run1("round", {x}), DType::kF32, {8}, {-2, 2, 2, 2, 0, 0, 2, -3},
               0);
  Tensor i = I32({-3, 5}, {2});
  for (const char* op : {"floor", "ceil", "round"}) {
    ExpectTensor(Run1(op, {i}), DType::kI32, {2}, {-3, 5}, 0);
  }
}

TEST(CwiseTest, NanAndFinitePredicates) {
  Tensor x = F32({1, kNaNf, kInff, -kInff}, {4});
  ExpectTensor(Run1("isnan", {x}), DType::kBool, {4}, {0, 1, 0, 0}, 0);
  ExpectTensor(Run1("isfinite", {x}), DType::kBool, {4}, {1, 0, 0, 0}, 0);
  ExpectTensor(Run1("isnan", {I32({1, 2}, {2})}), DType::kBool, {2}, {0, 0}, 0);
  ExpectTensor(Run1("isfinite", {I32({1, 2}, {2})}), DType::kBool, {2}, {1, 1},
               0);
  Tensor h = Cast(F32({1, kNaNf, kInff}, {3}), DType::kBF16);
  ExpectTensor(Run1("isnan", {h}), DType::kBool, {3}, {0, 1, 0}, 0);
  ExpectTensor(Run1("isfinite", {h}), DType::kBool, {3}, {1, 0, 0}, 0);
}

TEST(CwiseTest, HalfFloatsComputeInFloat) {
  for (DType d : {DType::kF16, DType::kBF16}) {
    Tensor x = Cast(F32({0, 1, -2, 0.5}, {4}), d);
    ExpectTensor(Run1("exp", {x}), d, {4},
                 {1, 2.71828183, 0.13533528, 1.6487213}, 1e-2);
    ExpectTensor(Run1("sigmoid", {x}), d, {4},
                 {0.5, 0.73105858, 0.11920292, 0.62245933}, 1e-2);
    ExpectTensor(Run1("add", {x, Cast(F32({1}, {}), d)}), d, {4},
                 {1, 2, -1, 1.5}, 0);
    ExpectTensor(Run1("mul", {x, x}), d, {4}, {0, 1, 4, 0.25}, 0);
    ExpectTensor(Run1("div", {x, Cast(F32({4}, {}), d)}), d, {4},
                 {0, 0.25, -0.5, 0.125}, 0);
    ExpectTensor(Run1("maximum", {x, Cast(F32({0}, {}), d)}), d, {4},
                 {0, 1, 0, 0.5}, 0);
    ExpectTensor(Run1("round", {x}), d, {4}, {0, 1, -2, 0}, 0);
    ExpectTensor(Run1("floordiv", {x, Cast(F32({0.75}, {}), d)}), d, {4},
                 {0, 1, -3, 0}, 0);
  }
  // f16 rounds the float result once: 1/3 -> 0.333251953125.
  Tensor third = Run1("div", {Cast(F32({1}, {1}), DType::kF16),
                              Cast(F32({3}, {1}), DType::kF16)});
  ExpectTensor(third, DType::kF16, {1}, {0.333251953125}, 0);
}

TEST(CwiseTest, HalfFloatsInLongRows) {
  // Rows longer than one conversion block, not a multiple of the vector
  // width, with a repeated operand; every value is exact in both types.
  const int n = 2053;
  std::vector<float> xv(n);
  std::vector<double> sum(n), neg(n), less(n);
  for (int i = 0; i < n; ++i) {
    xv[i] = float(i % 64) * 0.5f;
    sum[i] = xv[i] + 1;
    neg[i] = -xv[i];
    less[i] = xv[i] < 16;
  }
  for (DType d : {DType::kF16, DType::kBF16}) {
    Tensor x = Cast(F32(xv, {n}), d);
    ExpectTensor(Run1("add", {x, Cast(F32({1}, {}), d)}), d, {n}, sum, 0);
    ExpectTensor(Run1("neg", {x}), d, {n}, neg, 0);
    ExpectTensor(Run1("less", {x, Cast(F32({16}, {}), d)}), DType::kBool, {n},
                 less, 0);
    ExpectTensor(Cast(x, DType::kF32), DType::kF32, {n},
                 std::vector<double>(xv.begin(), xv.end()), 0);
    ExpectTensor(Cast(x, DType::kF64), DType::kF64, {n},
                 std::vector<double>(xv.begin(), xv.end()), 0);
  }
}

// ---- clip, where, cast
// ----------------------------------------------------------

TEST(CwiseTest, Clip) {
  ExpectTensor(
      Run1("clip", {F32({-2, 0.5, 3, kNaNf}, {4}), F32({0}, {}), F32({1}, {})}),
      DType::kF32, {4}, {0, 0.5, 1, kNaN});
  // Bounds per column.
  ExpectTensor(Run1("clip", {I32({-5, 5, 15, 25, 0, 10}, {2, 3}),
                             I32({0, 10, 20}, {3}), I32({5, 12, 22}, {3})}),
               DType::kI32, {2, 3}, {0, 10, 20, 5, 10, 20}, 0);
  // Bounds that raise the output shape.
  ExpectTensor(
      Run1("clip", {F32({1, 4}, {2}), F32({2, 0}, {2, 1}), F32({3}, {})}),
      DType::kF32, {2, 2}, {2, 3, 1, 3}, 0);
  Tensor h = Cast(F32({-1, 0.25, 9}, {3}), DType::kF16);
  ExpectTensor(Run1("clip", {h, Cast(F32({0}, {}), DType::kF16),
                             Cast(F32({1}, {}), DType::kF16)}),
               DType::kF16, {3}, {0, 0.25, 1}, 0);
  EXPECT_NE(
      ErrorOf("clip", {F32({1}, {1}), F32({0}, {}), F64({1}, {})}).find("f64"),
      std::string::npos);
}

TEST(CwiseTest, WhereBroadcastsThreeWays) {
  Tensor cond = Bool({true, false}, {2, 1});
  ExpectTensor(Run1("where", {cond, F32({1, 2, 3}, {1, 3}), F32({0}, {})}),
               DType::kF32, {2, 3}, {1, 2, 3, 0, 0, 0}, 0);
  ExpectTensor(Run1("where", {Bool({true, false, true}, {3}),
                              I64({1, 2, 3}, {3}), I64({-1, -2, -3}, {3})}),
               DType::kI64, {3}, {1, -2, 3}, 0);
  ExpectTensor(Run1("where", {Bool({false, true}, {2}), Bool({true}, {}),
                              Bool({false, true}, {2})}),
               DType::kBool, {2}, {0, 1}, 0);
  Tensor h = Cast(F32({1.5, 2.5}, {2}), DType::kBF16);
  ExpectTensor(Run1("where", {Bool({false, true}, {2}), h,
                              Cast(F32({-1}, {}), DType::kBF16)}),
               DType::kBF16, {2}, {-1, 2.5}, 0);
  EXPECT_NE(ErrorOf("where", {F32({1}, {1}), F32({1}, {1}), F32({1}, {1})})
                .find("condition must be a bool"),
            std::string::npos);
  std::string msg =
      ErrorOf("where", {Bool({true}, {1}), F32({1}, {1}), I32({1}, {1})});
  EXPECT_NE(msg.find("f32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("i32"), std::string::npos) << msg;
}

TEST(CwiseTest, CastEveryPair) {
  // 0, 1, 2 and 100 exist in every numeric dtype; bool keeps x != 0.
  for (DType from : kAllDTypes) {
    Tensor x = Cast(F32({0, 1, 2, 100}, {2, 2}), from);
    ASSERT_EQ(x.dtype(), from);
    for (DType to : kAllDTypes) {
      std::vector<double> want = {0, 1, 2, 100};
      if (from == DType::kBool || to == DType::kBool) want = {0, 1, 1, 1};
      ExpectTensor(Cast(x, to), to, {2, 2}, want, 0);
    }
  }
}

TEST(CwiseTest, CastConversions) {
  Tensor f = F32({1.7, -1.7, kNaNf, 3e10, -3e10, 0.5}, {6});
  ExpectTensor(Cast(f, DType::kI32), DType::kI32, {6},
               {1, -1, 0, 2147483647, -2147483648.0, 0}, 0);
  ExpectTensor(Cast(f, DType::kU8), DType::kU8, {6}, {1, 0, 0, 255, 0, 0}, 0);
  ExpectTensor(Cast(f, DType::kI8), DType::kI8, {6}, {1, -1, 0, 127, -128, 0},
               0);
  ExpectTensor(Cast(F64({1e300, -9.5}, {2}), DType::kI64), DType::kI64, {2},
               {9223372036854775807.0, -9}, 0);
  ExpectTensor(Cast(F32({0, -0.0, 0.1, kNaNf}, {4}), DType::kBool),
               DType::kBool, {4}, {0, 0, 1, 1}, 0);
  // Narrowing integers wrap.
  ExpectTensor(Cast(I32({300, -1}, {2}), DType::kU8), DType::kU8, {2},
               {44, 255}, 0);
  // Rounding to the 16-bit floats.
  ExpectTensor(Cast(F32({3.14159265, 70000}, {2}), DType::kBF16), DType::kBF16,
               {2}, {3.140625, 70144}, 0);
  ExpectTensor(Cast(F32({3.14159265, 70000}, {2}), DType::kF16), DType::kF16,
               {2}, {3.140625, kInf}, 0);
  ExpectTensor(Cast(Cast(F32({0.1}, {1}), DType::kF16), DType::kF64),
               DType::kF64, {1}, {0.0999755859375}, 0);
  // Same dtype: no copy needed.
  Tensor same = Cast(f, DType::kF32);
  EXPECT_TRUE(same.SharesBufferWith(f));
}

// ---- shape-function errors
// ------------------------------------------------------

TEST(CwiseTest, DTypeMismatchNamesBothDTypes) {
  std::string msg = ErrorOf("add", {F32({1}, {1}), F64({1}, {1})});
  EXPECT_NE(msg.find("add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f64"), std::string::npos) << msg;
  msg = ErrorOf("less", {I32({1}, {1}), I64({1}, {1})});
  EXPECT_NE(msg.find("i32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("i64"), std::string::npos) << msg;
}

TEST(CwiseTest, IncompatibleBroadcast) {
  std::string msg =
      ErrorOf("mul", {F32({1, 2, 3, 4, 5, 6}, {2, 3}), F32({1, 2, 3, 4}, {4})});
  EXPECT_NE(msg.find("[2,3] and [4] cannot be broadcast"), std::string::npos)
      << msg;
  ErrorOf("where",
          {Bool({true, false}, {2}), F32({1, 2, 3}, {3}), F32({1}, {})});
}

// Python's math module's values (the C library's); outside the domain NaN,
// and atanh(+-1) is +-inf, as NumPy and ONNX give.
TEST(CwiseTest, InverseTrigonometric) {
  ExpectTensor(
      Run1("asin", {F64({0, 0.5, -1, 0.99}, {4})}), DType::kF64, {4},
      {0.0, 0.5235987755982989, -1.5707963267948966, 1.4292568534704693},
      1e-15);
  ExpectTensor(Run1("acos", {F64({0, 0.5, -1, 1}, {4})}), DType::kF64, {4},
               {1.5707963267948966, 1.0471975511965979, 3.141592653589793, 0},
               1e-15);
  ExpectTensor(
      Run1("atan", {F32({0, 2, -1e3, 0.1}, {4})}), DType::kF32, {4},
      {0, 1.1071487177940904, -1.5697963271282298, 0.09966865249116204});
  ExpectTensor(
      Run1("asinh", {F32({0, 1, -10, 1e-3}, {4})}), DType::kF32, {4},
      {0, 0.881373587019543, -2.99822295029797, 0.0009999998333334083});
  ExpectTensor(Run1("acosh", {F64({1, 2, 10, 1.5}, {4})}), DType::kF64, {4},
               {0, 1.3169578969248166, 2.993222846126381, 0.9624236501192069},
               1e-15);
  ExpectTensor(
      Run1("atanh", {F32({0, 0.5, -0.9, 0.99}, {4})}), DType::kF32, {4},
      {0, 0.5493061443340548, -1.4722194895832204, 2.6466524123622457});
  Tensor edges = Run1("asin", {F32({2, -1.5, kNaNf}, {3})});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(edges.at<float>(i)));
  EXPECT_TRUE(std::isnan(Run1("acosh", {F32({0.5}, {1})}).at<float>(0)));
  Tensor inf = Run1("atanh", {F32({1, -1}, {2})});
  EXPECT_EQ(inf.at<float>(0), kInff);
  EXPECT_EQ(inf.at<float>(1), -kInff);
}

TEST(CwiseTest, FloatOpsRejectIntegers) {
  for (const char* op : {"sqrt", "rsqrt", "exp", "log", "log1p", "sin", "cos",
                         "tanh", "sigmoid", "elu", "softplus", "erf", "asin",
                         "acos", "atan", "asinh", "acosh", "atanh"}) {
    std::string msg = ErrorOf(op, {I32({1, 2}, {2})});
    EXPECT_NE(msg.find(op), std::string::npos) << msg;
    EXPECT_NE(msg.find("floating-point"), std::string::npos) << msg;
    EXPECT_NE(msg.find("i32[2]"), std::string::npos) << msg;
  }
}

TEST(CwiseTest, ArithmeticRejectsBool) {
  Tensor b = Bool({true}, {1});
  for (const char* op : {"add", "mul", "pow", "maximum", "less"}) {
    EXPECT_NE(ErrorOf(op, {b, b}).find("numeric"), std::string::npos) << op;
  }
  EXPECT_NE(ErrorOf("neg", {b}).find("numeric"), std::string::npos);
}

TEST(CwiseTest, ShapeFunctionsWithUnknownDims) {
  const OpDef* add = OpRegistry::Global().Find("add");
  ASSERT_NE(add, nullptr);
  AttrMap attrs;
  auto out = InferOutputs(
      *add, attrs,
      {{DType::kF32, Shape{kUnknownDim, 3}}, {DType::kF32, Shape{3}}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToString(), "f32[?,3]");
  const OpDef* div = OpRegistry::Global().Find("div");
  out = InferOutputs(*div, attrs,
                     {{DType::kI64, Shape{2}}, {DType::kI64, Shape{}}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToString(), "f64[2]");
  const OpDef* cast = OpRegistry::Global().Find("cast");
  AttrMap cast_attrs = {{"dtype", DType::kBF16}};
  out = InferOutputs(*cast, cast_attrs, {{DType::kI8, Shape{kUnknownDim}}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToString(), "bf16[?]");
}

// A unary kernel writes into its input's buffer when its caller allows it
// and nothing else holds the buffer (relu after a bias_add), but not an op
// that fixes its values up from the input afterwards (exp's underflow).
TEST(CwiseTest, UnaryWritesInPlaceOnlyWhenAloneAndNotFixedUp) {
  Device* device = Eager().device();
  auto run = [&](const std::string& op, Tensor* x) {
    std::unique_ptr<Node> node = *Node::Detached(
        {.name = "u", .op = op}, {{x->dtype(), x->shape()}}, {nullptr});
    std::unique_ptr<OpKernel> k =
        *KernelRegistry::Global().Create(*node, device->type());
    OpKernelContext ctx(*node, device, {x}, 0, nullptr);
    ctx.allow_input_forwarding();
    EXPECT_TRUE(k->Compute(&ctx).ok());
    return ctx.output(0);
  };
  Tensor alone = F32({-1, 2, -3, 4}, {4});
  Tensor y = run("relu", &alone);
  EXPECT_TRUE(y.SharesBufferWith(alone));
  ExpectTensor(y, DType::kF32, {4}, {0, 2, 0, 4}, 0);

  Tensor shared = F32({-1, 2, -3, 4}, {4});
  Tensor other = shared;  // a second holder: the kernel must not write it
  y = run("relu", &shared);
  EXPECT_FALSE(y.SharesBufferWith(shared));
  ExpectTensor(y, DType::kF32, {4}, {0, 2, 0, 4}, 0);
  ExpectTensor(other, DType::kF32, {4}, {-1, 2, -3, 4}, 0);

  Tensor x = F32({0, -100, 1, -200}, {4});
  y = run("exp", &x);
  EXPECT_FALSE(y.SharesBufferWith(x));
  ExpectTensor(y, DType::kF32, {4}, {1, std::exp(-100.0f), std::exp(1.0f), 0},
               1e-6);
}

}  // namespace
}  // namespace runnel
