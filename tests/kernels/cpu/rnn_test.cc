// The fused recurrent cells lstm_cell and gru_cell and their gradients:
// values against the cells' formulas evaluated here in double, the
// gradients against central finite differences (and against the formulas
// by hand), 16-bit floats against f32, and the shape errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common_runtime/eager.h"
#include "tests/util/gradient_check.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using testing::CheckGradient;
using testing::CheckGradientOf;
using testing::Diff;
using testing::ExpectTensor;
using testing::F32;
using testing::F64;
using testing::GradCheckOptions;
using testing::RunError;

double Sig(double x) { return 1 / (1 + std::exp(-x)); }

std::vector<Tensor> RunAll(const std::string& op, std::vector<Tensor> inputs) {
  absl::StatusOr<std::vector<Tensor>> out =
      testing::Eager().Execute(op, std::move(inputs), {});
  EXPECT_TRUE(out.ok()) << op << ": " << out.status();
  return out.ok() ? *out : std::vector<Tensor>();
}

// Two rows of two units, gates (i, f, g, o) each of two columns.
const std::vector<double> kGates = {0.5, -1.0, 2.0,  0.25, -0.5, 1.5,
                                    0.1, -2.0, -0.3, 0.7,  1.2,  -0.4,
                                    3.0, 0.0,  -1.5, 0.9};
const std::vector<double> kC = {0.3, -0.7, 1.1, -0.2};

TEST(RnnCellTest, LstmCellByHand) {
  std::vector<double> h, c_next;
  for (int r = 0; r < 2; ++r) {
    for (int j = 0; j < 2; ++j) {
      const double* g = kGates.data() + r * 8;
      const double cn =
          Sig(g[2 + j]) * kC[r * 2 + j] + Sig(g[j]) * std::tanh(g[4 + j]);
      c_next.push_back(cn);
      h.push_back(Sig(g[6 + j]) * std::tanh(cn));
    }
  }
  std::vector<Tensor> out =
      RunAll("lstm_cell", {F64(kGates, {2, 8}), F64(kC, {2, 2})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF64, {2, 2}, h, 1e-14);
  ExpectTensor(out[1], DType::kF64, {2, 2}, c_next, 1e-14);
}

// The gradient's formulas on one unit: with d = dc_next + dh * o * (1 -
// tanh(c_next)^2), dgates = (d g i (1 - i), d c f (1 - f), d i (1 - g^2),
// dh tanh(c_next) o (1 - o)) and dc = d f.
TEST(RnnCellTest, LstmCellGradByHand) {
  const double gi = 0.4, gf = -0.6, gg = 1.3, go = 0.2, c = -0.8;
  const double dh = 0.7, dcn = -1.1;
  const double i = Sig(gi), f = Sig(gf), g = std::tanh(gg), o = Sig(go);
  const double t = std::tanh(f * c + i * g);
  const double d = dcn + dh * o * (1 - t * t);
  std::vector<Tensor> out =
      RunAll("lstm_cell_grad", {F64({gi, gf, gg, go}, {1, 4}), F64({c}, {1, 1}),
                                F64({dh}, {1, 1}), F64({dcn}, {1, 1})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF64, {1, 4},
               {d * g * i * (1 - i), d * c * f * (1 - f), d * i * (1 - g * g),
                dh * t * o * (1 - o)},
               1e-14);
  ExpectTensor(out[1], DType::kF64, {1, 1}, {d * f}, 1e-14);
}

TEST(RnnCellTest, GruCellByHand) {
  const std::vector<double> x = {0.5, -1.0, 2.0, 0.25, -0.5, 1.5};
  const std::vector<double> hh = {0.1, -2.0, -0.3, 0.7, 1.2, -0.4};
  const std::vector<double> h = {0.3, -0.7};
  std::vector<double> want;
  for (int j = 0; j < 2; ++j) {
    const double r = Sig(x[j] + hh[j]);
    const double z = Sig(x[2 + j] + hh[2 + j]);
    const double n = std::tanh(x[4 + j] + r * hh[4 + j]);
    want.push_back((1 - z) * n + z * h[j]);
  }
  std::vector<Tensor> out =
      RunAll("gru_cell", {F64(x, {1, 6}), F64(hh, {1, 6}), F64(h, {1, 2})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF64, {1, 2}, want, 1e-14);
}

// Both outputs weighted (the harness's loss reads every output), and each
// alone: the other's gradient is then absent and counts as zeros.
TEST(RnnCellTest, LstmCellGradientMatchesFiniteDifferences) {
  CheckGradient("lstm_cell", {Diff({3, 8}, -2, 2), Diff({3, 2}, -2, 2)});
  CheckGradient("lstm_cell", {Diff({2, 3, 12}, -2, 2), Diff({2, 3, 3})}, {},
                {.unknown_dims = true});
  for (int keep : {0, 1}) {
    CheckGradientOf(
        [keep](Graph& g, const std::vector<NodeOut>& in) {
          Node* cell = *g.AddNode(
              {.name = "cell", .op = "lstm_cell", .inputs = {in[0], in[1]}});
          return std::vector<NodeOut>{{cell, keep}};
        },
        {Diff({2, 12}, -2, 2), Diff({2, 3})});
  }
}

TEST(RnnCellTest, GruCellGradientMatchesFiniteDifferences) {
  CheckGradient("gru_cell",
                {Diff({3, 6}, -2, 2), Diff({3, 6}, -2, 2), Diff({3, 2})});
  CheckGradient("gru_cell",
                {Diff({2, 2, 9}, -2, 2), Diff({2, 2, 9}), Diff({2, 2, 3})}, {},
                {.unknown_dims = true});
}

// f16 and bf16 compute in f32 and round once: within the format's
// precision of the f32 cell.
TEST(RnnCellTest, HalfFloatsAgreeWithF32) {
  const std::vector<float> g32 = testing::PatternValues(4 * 16, 1, 7919u);
  const std::vector<float> c32 = testing::PatternValues(4 * 4, 2, 7919u);
  std::vector<Tensor> want =
      RunAll("lstm_cell", {F32(g32, {4, 16}), F32(c32, {4, 4})});
  ASSERT_EQ(want.size(), 2u);
  for (DType d : {DType::kF16, DType::kBF16}) {
    auto cast = [d](const Tensor& t) {
      return testing::Run1("cast", {t}, {{"dtype", d}});
    };
    std::vector<Tensor> got =
        RunAll("lstm_cell", {cast(F32(g32, {4, 16})), cast(F32(c32, {4, 4}))});
    ASSERT_EQ(got.size(), 2u);
    for (int k = 0; k < 2; ++k) {
      Tensor back = testing::Run1("cast", {got[k]}, {{"dtype", DType::kF32}});
      std::vector<double> w;
      for (int64_t e = 0; e < want[k].num_elements(); ++e) {
        w.push_back(want[k].at<float>(e));
      }
      ExpectTensor(back, DType::kF32, {4, 4}, w,
                   d == DType::kF16 ? 3e-3 : 2e-2);
    }
  }
}

TEST(RnnCellTest, ShapeErrors) {
  EXPECT_EQ(RunError("lstm_cell",
                     {F32(std::vector<float>(6), {1, 6}), F32({0, 0}, {1, 2})})
                .message(),
            "lstm_cell: needs the gates [..., 4 * units] and the state [..., "
            "units] with the same leading dimensions; got gates [1,6] and "
            "state [1,2]");
  EXPECT_EQ(RunError("gru_cell", {F32(std::vector<float>(6), {2, 3}),
                                  F32(std::vector<float>(6), {2, 3}),
                                  F32({0, 0, 0}, {3, 1})})
                .message(),
            "gru_cell: needs the gates [..., 3 * units] and the state [..., "
            "units] with the same leading dimensions; got gates [2,3] and "
            "state [3,1]");
  EXPECT_EQ(RunError("gru_cell",
                     {F32(std::vector<float>(6), {1, 6}),
                      F32(std::vector<float>(3), {1, 3}), F32({0, 0}, {1, 2})})
                .message(),
            "gru_cell: needs the gates [..., 3 * units] and the state [..., "
            "units] with the same leading dimensions; got gates [1,3] and "
            "state [1,2]");
}

}  // namespace
}  // namespace runnel
