// Every GPU kernel (kernels/cuda) against its CPU kernel on the same
// inputs, within tolerances per dtype, and the gradients of the
// differentiable ops the same way (their backward nodes ask for the GPU
// too; those without a GPU kernel run on the CPU). Also the GPU allocator's
// limit and its out-of-memory message. ctest label `gpu`; without a GPU
// every test is skipped, saying why (docs/gpu.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common_runtime/session.h"
#include "tests/gpu/gpu_compare.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

const std::vector<std::vector<Shape>> kBinaryShapes = {
    {Shape{3, 5}, Shape{3, 5}},
    {Shape{3, 1, 5}, Shape{4, 5}},
    {Shape{5}, Shape{}},
    {Shape{2, 3, 4}, Shape{3, 1}},
    {Shape{1 << 20}, Shape{1 << 20}},
    {Shape{0, 3}, Shape{3}},
};

TEST(GpuKernelsTest, BinaryArithmetic) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"add", "sub", "mul", "maximum", "minimum"}) {
    for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      for (const auto& s : kBinaryShapes) {
        const bool grad = d == DType::kF32 || d == DType::kF64;
        Compare(op, {Random(d, s[0], 1), Random(d, s[1], 2)}, {},
                grad && s[0].num_elements() < 1000);
      }
    }
  }
  for (const char* op : {"div", "floordiv", "mod", "pow"}) {
    for (DType d : {DType::kF32, DType::kF64}) {
      for (const auto& s : kBinaryShapes) {
        // Positive operands: pow of a negative base is NaN on both, and a
        // divisor near zero makes floordiv a coin toss.
        const bool grad = std::string(op) == "div" || std::string(op) == "pow";
        Compare(op, {Random(d, s[0], 3, 0.5, 3), Random(d, s[1], 4, 0.5, 3)},
                {}, grad && s[0].num_elements() < 1000);
      }
    }
  }
}

TEST(GpuKernelsTest, ComparisonsAndLogic) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater",
                         "greater_equal"}) {
    for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      for (const auto& s : kBinaryShapes) {
        Tensor a = Random(d, s[0], 5), b = Random(d, s[1], 6);
        Compare(op, {a, b});
        Compare(op, {a, a});  // equal everywhere
      }
    }
  }
  for (const char* op : {"logical_and", "logical_or", "equal", "not_equal"}) {
    Compare(op, {Random(DType::kBool, Shape{4, 5}, 7),
                 Random(DType::kBool, Shape{5}, 8)});
  }
  Compare("logical_not", {Random(DType::kBool, Shape{9}, 9)});
}

TEST(GpuKernelsTest, Unary) {
  SKIP_WITHOUT_GPU();
  struct U {
    const char* op;
    double lo, hi;
    bool ints, grad;
  };
  const std::vector<U> ops = {
      {"abs", -3, 3, true, true},         {"neg", -3, 3, true, true},
      {"sign", -3, 3, true, false},       {"square", -3, 3, true, true},
      {"relu", -3, 3, true, true},        {"floor", -3, 3, false, false},
      {"ceil", -3, 3, false, false},      {"round", -3, 3, false, false},
      {"isnan", -3, 3, true, false},      {"isfinite", -3, 3, true, false},
      {"sqrt", 0.1, 4, false, true},      {"rsqrt", 0.1, 4, false, true},
      {"exp", -5, 5, false, true},        {"log", 0.1, 4, false, true},
      {"log1p", -0.5, 4, false, true},    {"sin", -4, 4, false, true},
      {"cos", -4, 4, false, true},        {"tanh", -4, 4, false, true},
      {"sigmoid", -8, 8, false, true},    {"elu", -3, 3, false, true},
      {"softplus", -30, 30, false, true}, {"erf", -4, 4, false, true},
      {"gelu", -5, 5, false, true},       {"asin", -0.9, 0.9, false, true},
      {"acos", -0.9, 0.9, false, true},   {"atan", -4, 4, false, true},
      {"asinh", -4, 4, false, true},      {"acosh", 1.1, 4, false, true},
      {"atanh", -0.9, 0.9, false, true},
  };
  for (const U& u : ops) {
    for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      const bool is_int = d == DType::kI32 || d == DType::kI64;
      if (is_int && !u.ints) continue;
      for (const Shape& s : {Shape{7, 13}, Shape{(1 << 20) + 3}, Shape{}}) {
        Compare(u.op, {Random(d, s, 10, u.lo, u.hi)}, {},
                u.grad && !is_int && s.num_elements() < 1000);
      }
    }
  }
  // NaN and the infinities where they matter.
  const float inf = INFINITY, nan = NAN;
  Tensor special = testing::F32(
      {nan, inf, -inf, 0.0f, -0.0f, 2.5f, -2.5f, 0.5f, 1.5f}, Shape{9});
  for (const char* op :
       {"abs",      "neg",  "sign", "relu",    "round",    "floor", "isnan",
        "isfinite", "exp",  "tanh", "sigmoid", "softplus", "elu",   "erf",
        "gelu",     "asin", "acos", "atan",    "asinh",    "acosh", "atanh"}) {
    Compare(op, {special});
  }
  Compare("maximum", {special, testing::F32({1}, Shape{1})});
  Compare("minimum", {testing::F32({1}, Shape{1}), special});
}

TEST(GpuKernelsTest, MatMul) {
  SKIP_WITHOUT_GPU();
  struct M {
    Shape a, b;
    bool ta, tb;
  };
  const std::vector<M> cases = {
      {Shape{4, 5}, Shape{5, 3}, false, false},
      {Shape{5, 4}, Shape{5, 3}, true, false},
      {Shape{4, 5}, Shape{3, 5}, false, true},
      {Shape{5, 4}, Shape{3, 5}, true, true},
      {Shape{2, 4, 5}, Shape{2, 5, 3}, false, false},    // strided batch
      {Shape{2, 4, 5}, Shape{5, 3}, false, false},       // b repeated
      {Shape{2, 1, 4, 5}, Shape{3, 5, 6}, false, true},  // irregular batch
      {Shape{128, 784}, Shape{784, 256}, false, false},
      {Shape{3, 0}, Shape{0, 4}, false, false},  // empty sum: zeros
  };
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    for (const M& m : cases) {
      Shape b = m.b;
      if (m.tb && m.b.rank() == 3) b = Shape{3, 6, 5};
      const bool grad =
          (d == DType::kF32 || d == DType::kF64) && m.a.num_elements() < 10000;
      Compare("matmul", {Random(d, m.a, 11, -1, 1), Random(d, b, 12, -1, 1)},
              {{"transpose_a", m.ta}, {"transpose_b", m.tb}}, grad);
    }
  }
  // matmul_add (acc + a @ b, f32 matrices): cuBLASLt with beta 1.
  for (const M& m : cases) {
    if (m.a.rank() != 2 || m.b.rank() != 2) continue;
    const Shape acc{m.a.dim(m.ta ? 1 : 0), m.b.dim(m.tb ? 0 : 1)};
    Compare("matmul_add",
            {Random(DType::kF32, acc, 13, -1, 1),
             Random(DType::kF32, m.a, 11, -1, 1),
             Random(DType::kF32, m.b, 12, -1, 1)},
            {{"transpose_a", m.ta}, {"transpose_b", m.tb}},
            m.a.num_elements() < 10000);
  }
}

// The allocator's limit holds, and running out names the sizes.
TEST(GpuKernelsTest, MemoryLimitAndOutOfMemory) {
  SKIP_WITHOUT_GPU();
  auto g = std::make_shared<Graph>();
  absl::StatusOr<Node*> x = g->AddNode(
      {.name = "x",
       .op = "placeholder",
       .attrs = {{"dtype", DType::kF32}, {"shape", Shape{64 << 20}}}});
  ASSERT_TRUE(x.ok());
  absl::StatusOr<Node*> y = g->AddNode(
      {.name = "y", .op = "neg", .inputs = {{*x, 0}}, .device = "/gpu:0"});
  ASSERT_TRUE(y.ok());
  // 256 MiB do not fit a 200 MiB limit (cuBLASLt's workspace holds 32).
  Session session(g, {.num_threads = 2,
                      .gpu_devices = 1,
                      .gpu = {.memory_limit = size_t{200} << 20}});
  absl::StatusOr<std::vector<Tensor>> out = session.Run(
      {{NodeOut{*x, 0}, Tensor::Zeros(DType::kF32, Shape{64 << 20})}},
      {NodeOut{*y, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find(
                "out of memory (268435456 bytes requested; gpu:0: "),
            std::string::npos)
      << out.status();
  EXPECT_NE(out.status().message().find("limit 200 MiB)"), std::string::npos)
      << out.status();
  // Without the limit the same run works.
  Session unlimited(g, {.num_threads = 2, .gpu_devices = 1});
  out = unlimited.Run(
      {{NodeOut{*x, 0}, Tensor::Zeros(DType::kF32, Shape{64 << 20})}},
      {NodeOut{*y, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].at<float>(12345), 0.0f);
}

}  // namespace
}  // namespace runnel
