// The fused optimizer updates on the CPU (kernels/cpu/optim_kernels.cc):
// hand-computed values, bit-for-bit equality with the separate ops that
// stdlib/optim.rnl used before (in every float dtype), and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/session.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::F64;
using ::runnel::testing::PatternValues;
using ::runnel::testing::Run1;

// Runs `op` `steps` times on variables "v", "v/1", ... holding `vars` (the
// variable and its slots) with the constant inputs `rest` (lr, the
// gradient, ...); gives the variables' values after, or the run's error.
absl::StatusOr<std::vector<Tensor>> Apply(const std::string& op,
                                          const std::vector<Tensor>& vars,
                                          const std::vector<Tensor>& rest,
                                          AttrMap attrs = {}, int steps = 1) {
  auto g = std::make_shared<Graph>();
  std::vector<NodeOut> inputs, fetches;
  for (size_t i = 0; i < vars.size(); ++i) {
    const std::string name = i == 0 ? "v" : "v/" + std::to_string(i);
    RN_ASSIGN_OR_RETURN(Node * init, g->AddConst(vars[i], name + "_init"));
    RN_ASSIGN_OR_RETURN(
        Node * v,
        g->AddNode({.name = name,
                    .op = "variable",
                    .attrs = {{"dtype", vars[i].dtype()},
                              {"shape", vars[i].shape()},
                              {"initializer", init->name() + ":0"}}}));
    inputs.push_back({v, 0});
    fetches.push_back({v, 0});
  }
  for (size_t i = 0; i < rest.size(); ++i) {
    RN_ASSIGN_OR_RETURN(Node * c,
                        g->AddConst(rest[i], "in" + std::to_string(i)));
    inputs.push_back({c, 0});
  }
  RN_ASSIGN_OR_RETURN(Node * apply, g->AddNode({.name = "apply",
                                                .op = op,
                                                .inputs = inputs,
                                                .attrs = std::move(attrs)}));
  Session session(g, {.num_threads = 2});
  for (int s = 0; s < steps; ++s) {
    RN_RETURN_IF_ERROR(session.Run(Session::Feeds{}, {}, {apply}).status());
  }
  return session.Run(Session::Feeds{}, fetches, {});
}

Tensor Scalar(DType d, double v) { return Tensor::ScalarOf(d, v); }

TEST(OptimKernelsTest, SgdByHand) {
  absl::StatusOr<std::vector<Tensor>> out =
      Apply("apply_sgd", {F32({1, 2, 3}, {3})},
            {F32({0.5f}, {}), F32({2, 4, -2}, {3})}, {}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, Shape{3}, {-1, -2, 5}, 0);
}

TEST(OptimKernelsTest, MomentumByHand) {
  // buf = 0.9 * [0.5, -1] + [1, 2] = [1.45, 1.1]; v -= 0.1 * buf.
  absl::StatusOr<std::vector<Tensor>> out =
      Apply("apply_momentum", {F64({1, 2}, {2}), F64({0.5, -1}, {2})},
            {F64({0.1}, {}), F64({1, 2}, {2}), F64({0.9}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF64, Shape{2}, {0.855, 1.89}, 1e-12);
  ExpectTensor((*out)[1], DType::kF64, Shape{2}, {1.45, 1.1}, 1e-12);
  // Nesterov: v -= 0.1 * (g + 0.9 * buf) = [1 - 0.2305, 2 - 0.299].
  out = Apply("apply_momentum", {F64({1, 2}, {2}), F64({0.5, -1}, {2})},
              {F64({0.1}, {}), F64({1, 2}, {2}), F64({0.9}, {})},
              {{"nesterov", true}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF64, Shape{2}, {0.7695, 1.701}, 1e-12);
  ExpectTensor((*out)[1], DType::kF64, Shape{2}, {1.45, 1.1}, 1e-12);
}

TEST(OptimKernelsTest, AdamByHand) {
  // Step 1 from zero moments: m = 0.1 g, s = 0.001 g^2, and with the
  // corrections 0.1 and 0.001 the step is lr * g / (|g| + eps).
  absl::StatusOr<std::vector<Tensor>> out = Apply(
      "apply_adam", {F64({1, -1}, {2}), F64({0, 0}, {2}), F64({0, 0}, {2})},
      {F64({0.01}, {}), F64({2, -0.5}, {2}), F64({0.9}, {}), F64({0.1}, {}),
       F64({0.999}, {}), F64({0.001}, {}), F64({1e-8}, {}), F64({0.1}, {}),
       F64({0.001}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF64, Shape{2},
               {1 - 0.01 * 2 / (2 + 1e-8), -1 + 0.01 * 0.5 / (0.5 + 1e-8)},
               1e-12);
  ExpectTensor((*out)[1], DType::kF64, Shape{2}, {0.2, -0.05}, 1e-12);
  ExpectTensor((*out)[2], DType::kF64, Shape{2}, {0.004, 0.00025}, 1e-12);
}

// The separate ops' arithmetic (eagerly, as the graph the stdlib built).
Tensor Op(const std::string& op, Tensor a, Tensor b) {
  return Run1(op, {std::move(a), std::move(b)});
}

Tensor Values(DType d, int64_t n, int seed, bool positive) {
  std::vector<float> v = PatternValues(n, seed, 71);
  if (positive) {
    for (float& x : v) x = x * x;
  }
  return Run1("cast", {F32(v, {n})}, {{"dtype", d}});
}

// sqrt correctly rounded (in f32 for 16-bit floats, then rounded), as the
// fused update and the GPU take it. The CPU's sqrt kernel is Eigen's, whose
// AVX-512 version (EIGEN_FAST_MATH: rsqrt14 and Newton steps) can be an
// ulp off, and gives nan for inf.
Tensor ExactSqrt(const Tensor& x) {
  const std::vector<double> v = x.ToDoubles();
  if (x.dtype() == DType::kF64) {
    std::vector<double> r;
    for (double d : v) r.push_back(std::sqrt(d));
    return F64(r, x.shape());
  }
  std::vector<float> r;
  for (double d : v) r.push_back(std::sqrt(static_cast<float>(d)));
  return Run1("cast", {F32(r, x.shape())}, {{"dtype", x.dtype()}});
}

void ExpectSame(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.bytes(), b.bytes()) << what;
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0)
      << what << ": " << a.DebugString() << " vs " << b.DebugString();
}

// Each dtype, bit for bit: sgd, momentum and adam as the separate ops
// compute them, each rounding to the dtype (16-bit floats in between too),
// with no fused multiply-add; adam's sqrt correctly rounded (ExactSqrt).
TEST(OptimKernelsTest, EqualTheSeparateOpsBitForBit) {
  const int64_t n = 1000;
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    const std::string name(DTypeName(d));
    const Tensor v = Values(d, n, 1, false), g = Values(d, n, 2, false);
    const Tensor buf = Values(d, n, 3, false), s = Values(d, n, 4, true);
    const Tensor lr = Scalar(d, 0.01), mom = Scalar(d, 0.9);

    absl::StatusOr<std::vector<Tensor>> out = Apply("apply_sgd", {v}, {lr, g});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectSame((*out)[0], Op("sub", v, Op("mul", lr, g)), name + " sgd");

    for (bool nesterov : {false, true}) {
      out = Apply("apply_momentum", {v, buf}, {lr, g, mom},
                  {{"nesterov", nesterov}});
      ASSERT_TRUE(out.ok()) << out.status();
      const Tensor b = Op("add", Op("mul", mom, buf), g);
      const Tensor step = nesterov ? Op("add", g, Op("mul", mom, b)) : b;
      ExpectSame((*out)[1], b, name + " momentum buf");
      ExpectSame((*out)[0], Op("sub", v, Op("mul", lr, step)),
                 name + " momentum");
    }

    // As stdlib/optim.rnl writes adam at step t = 3.
    const Tensor b1 = Scalar(d, 0.9), ob1 = Scalar(d, 1.0 - 0.9);
    const Tensor b2 = Scalar(d, 0.999), ob2 = Scalar(d, 1.0 - 0.999);
    const Tensor eps = Scalar(d, 1e-8), one = Scalar(d, 1), t = Scalar(d, 3);
    const Tensor c1 = Op("sub", one, Op("pow", b1, t));
    const Tensor c2 = Op("sub", one, Op("pow", b2, t));
    out = Apply("apply_adam", {v, buf, s},
                {lr, g, b1, ob1, b2, ob2, eps, c1, c2});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor m1 = Op("add", Op("mul", b1, buf), Op("mul", ob1, g));
    const Tensor s1 =
        Op("add", Op("mul", b2, s), Op("mul", ob2, Run1("square", {g})));
    const Tensor den = Op("add", ExactSqrt(Op("div", s1, c2)), eps);
    const Tensor v1 =
        Op("sub", v, Op("div", Op("mul", Op("div", lr, c1), m1), den));
    ExpectSame((*out)[1], m1, name + " adam m");
    ExpectSame((*out)[2], s1, name + " adam v");
    ExpectSame((*out)[0], v1, name + " adam");
  }
}

TEST(OptimKernelsTest, Errors) {
  // A gradient of another shape: the shape function says so.
  absl::StatusOr<std::vector<Tensor>> out = Apply(
      "apply_sgd", {F32({1, 2, 3}, {3})}, {F32({0.5f}, {}), F32({1, 2}, {2})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find(
                "`grad` is f32[2] but must be shaped like the variable [3]"),
            std::string::npos)
      << out.status();
  // A learning rate that is no scalar.
  out = Apply("apply_sgd", {F32({1, 2}, {2})},
              {F32({0.5f, 1}, {2}), F32({1, 2}, {2})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("`lr` is f32[2] but must be a scalar"),
            std::string::npos)
      << out.status();
  // Integer variables have no optimizer.
  out = Apply("apply_sgd", {Tensor::FromVector<int32_t>({1, 2})},
              {Tensor::FromVector<int32_t>({1}, Shape{}),
               Tensor::FromVector<int32_t>({1, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("needs a floating variable"),
            std::string::npos)
      << out.status();
}

// Row r of matrix t.
Tensor Row(const Tensor& t, int64_t r) {
  Tensor row(t.dtype(), Shape{t.dim(1)});
  std::memcpy(row.raw_data(),
              static_cast<const char*>(t.raw_data()) + r * row.bytes(),
              row.bytes());
  return row;
}

// The sparse updates change rows `indices` as the dense update changes
// them, bit for bit, and leave the other rows (and their slots) alone.
TEST(OptimKernelsTest, SparseUpdatesEqualTheDenseOnesOnTheirRows) {
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(d));
    const int64_t rows = 5, cols = 3;
    const Shape shape{rows, cols};
    auto table = [&](int seed, bool positive) {
      return *Values(d, rows * cols, seed, positive).Reshaped(shape);
    };
    const Tensor v = table(1, false), m = table(2, false), s = table(3, true);
    const Tensor g = table(4, false);
    // Rows 3 and 0 of the gradient, in that order.
    const std::vector<int64_t> picked = {3, 0};
    Tensor g_rows(d, Shape{2, cols});
    const size_t row_bytes = cols * DTypeSize(d);
    for (size_t j = 0; j < picked.size(); ++j) {
      std::memcpy(
          static_cast<char*>(g_rows.raw_data()) + j * row_bytes,
          static_cast<const char*>(g.raw_data()) + picked[j] * row_bytes,
          row_bytes);
    }
    const Tensor idx = Tensor::FromVector(std::vector<int32_t>{3, 0}, Shape{2});
    const std::vector<Tensor> adam_scalars = {
        Scalar(d, 0.9),  Scalar(d, 0.1),  Scalar(d, 0.999), Scalar(d, 0.001),
        Scalar(d, 1e-3), Scalar(d, 0.19), Scalar(d, 0.002)};
    auto with = [](std::vector<Tensor> head, const std::vector<Tensor>& tail) {
      head.insert(head.end(), tail.begin(), tail.end());
      return head;
    };
    struct Case {
      std::string dense, sparse;
      std::vector<Tensor> vars;
      std::vector<Tensor> scalars;  // after grad (and indices)
    };
    for (const Case& c :
         {Case{"apply_momentum",
               "sparse_apply_momentum",
               {v, m},
               {Scalar(d, 0.9)}},
          Case{"apply_adam", "sparse_apply_adam", {v, m, s}, adam_scalars}}) {
      SCOPED_TRACE(c.sparse);
      absl::StatusOr<std::vector<Tensor>> dense =
          Apply(c.dense, c.vars, with({Scalar(d, 0.05), g}, c.scalars));
      absl::StatusOr<std::vector<Tensor>> sparse = Apply(
          c.sparse, c.vars, with({Scalar(d, 0.05), g_rows, idx}, c.scalars));
      ASSERT_TRUE(dense.ok()) << dense.status();
      ASSERT_TRUE(sparse.ok()) << sparse.status();
      for (size_t i = 0; i < c.vars.size(); ++i) {
        for (int64_t r = 0; r < rows; ++r) {
          const bool moved = r == 3 || r == 0;
          const Tensor& want = moved ? (*dense)[i] : c.vars[i];
          ExpectSame(Row((*sparse)[i], r), Row(want, r),
                     StrCat("variable ", i, " row ", r));
        }
      }
    }
  }
}

TEST(OptimKernelsTest, SparseErrors) {
  const Tensor v = F32({1, 2, 3, 4}, {2, 2}), m = F32({0, 0, 0, 0}, {2, 2});
  auto run = [&](std::vector<int32_t> idx, Tensor g) {
    const int64_t n = static_cast<int64_t>(idx.size());
    return Apply("sparse_apply_momentum", {v, m},
                 {F32({0.1f}, {}), std::move(g),
                  Tensor::FromVector(idx, Shape{n}), F32({0.9f}, {})});
  };
  // A row twice: its two updates would race.
  absl::StatusOr<std::vector<Tensor>> out =
      run({1, 1}, F32({1, 1, 1, 1}, {2, 2}));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find(
                "index 1 (indices[1]) is repeated; the indices must be "
                "distinct"),
            std::string::npos)
      << out.status();
  // A row out of range.
  out = run({2}, F32({1, 1}, {1, 2}));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("index 2 (indices[0]) is out of range "
                                        "[0, 2) for the variable [2,2]"),
            std::string::npos)
      << out.status();
  // Gradient rows that are not the indices' rows.
  out = run({0}, F32({1, 1, 1}, {1, 3}));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("`grad` is f32[1,3] but must be the "
                                        "rows `indices` of the variable"),
            std::string::npos)
      << out.status();
}

}  // namespace
}  // namespace runnel
