// The fused recurrent cells lstm_cell and gru_cell and their gradients:
// values against the cells' formulas evaluated here in double, the
// gradients against central finite differences (and against the formulas
// by hand), 16-bit floats against f32, and the shape errors. The whole
// sequence, lstm_sequence (f32), and its gradient against the recurrence
// evaluated here in double and its finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "common_runtime/eager.h"
#include "common_runtime/session.h"
#include "tests/util/gradient_check.h"
#include "tests/util/test_ops.h"
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

std::vector<Tensor> RunAll(const std::string& op, std::vector<Tensor> inputs,
                           AttrMap attrs = {}) {
  absl::StatusOr<std::vector<Tensor>> out =
      testing::Eager().Execute(op, std::move(inputs), std::move(attrs));
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

// lstm_sequence's inputs as doubles: z [time, batch, 4 units], h0, c0
// [batch, units], w_h [units, 4 units], the bias b [4 units].
struct Sequence {
  int64_t time, batch, units;
  std::vector<double> z, h0, c0, w_h, b;
  std::vector<int32_t> lengths;  // none when empty
  std::vector<double>* input(int i) {
    std::vector<double>* all[] = {&z, &h0, &c0, &w_h, &b};
    return all[i];
  }
};

// The recurrence in double: every step's h and c, and L = sum(hs * w_hs) +
// sum(h * w_h_final) + sum(c * w_c_final) for the given weights.
struct SequenceOutputs {
  std::vector<double> hs, cs;
  std::vector<double> acts;  // each step's activations [time, batch, 4 u]
};
SequenceOutputs RunSequence(const Sequence& s) {
  const int64_t b = s.batch, u = s.units;
  SequenceOutputs f;
  std::vector<double> h = s.h0, c = s.c0;
  f.acts.resize(s.z.size());
  for (int64_t t = 0; t < s.time; ++t) {
    std::vector<double> h2(b * u), c2(b * u);
    for (int64_t r = 0; r < b; ++r) {
      for (int64_t j = 0; j < u; ++j) {
        double g[4];
        for (int k = 0; k < 4; ++k) {
          const int64_t at = (t * b + r) * 4 * u + k * u + j;
          g[k] = s.z[at] + s.b[k * u + j];
          for (int64_t m = 0; m < u; ++m) {
            g[k] += h[r * u + m] * s.w_h[m * 4 * u + k * u + j];
          }
          f.acts[at] = k == 2 ? std::tanh(g[k]) : Sig(g[k]);
        }
        c2[r * u + j] = Sig(g[1]) * c[r * u + j] + Sig(g[0]) * std::tanh(g[2]);
        h2[r * u + j] = Sig(g[3]) * std::tanh(c2[r * u + j]);
        if (!s.lengths.empty() && t >= s.lengths[r]) {
          c2[r * u + j] = c[r * u + j];
          h2[r * u + j] = h[r * u + j];
        }
      }
    }
    h = h2;
    c = c2;
    f.hs.insert(f.hs.end(), h.begin(), h.end());
    f.cs.insert(f.cs.end(), c.begin(), c.end());
  }
  return f;
}

std::vector<float> ToF32(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// 20 rows: a piece of 16 and one of 4 (kernels/cpu/rnn_kernels.cc). The
// bias is zeros unless `bias`.
Sequence MakeSequence(int64_t time, int64_t batch, int64_t units,
                      bool bias = false) {
  Sequence s{time, batch, units, {}, {}, {}, {}, {}, {}};
  int seed = 0;
  for (int i = 0; i < 4; ++i) {
    const int64_t n = i == 0   ? time * batch * 4 * units
                      : i == 3 ? units * 4 * units
                               : batch * units;
    for (float v : testing::PatternValues(n, seed++, 4409u)) {
      s.input(i)->push_back(i == 3 ? 0.6 * v : 1.5 * v);
    }
  }
  s.b.assign(4 * units, 0.0);
  if (bias) {
    const std::vector<float> b = testing::PatternValues(4 * units, 12, 4409u);
    s.b.assign(b.begin(), b.end());
  }
  return s;
}

// lstm_sequence's inputs: z, h0, c0, w_h, then the bias if `bias`, then
// the lengths if it has them.
std::vector<Tensor> SequenceInputs(const Sequence& s, bool bias) {
  const int64_t t = s.time, b = s.batch, u = s.units;
  std::vector<Tensor> in = {F32(ToF32(s.z), {t, b, 4 * u}),
                            F32(ToF32(s.h0), {b, u}), F32(ToF32(s.c0), {b, u}),
                            F32(ToF32(s.w_h), {u, 4 * u})};
  if (bias) in.push_back(F32(ToF32(s.b), {4 * u}));
  if (!s.lengths.empty()) in.push_back(testing::I32(s.lengths, {b}));
  return in;
}

// Every output against the recurrence, with or without lengths (0, past
// the end, and in between, over both pieces: a row's state stays from its
// length on).
void ExpectSequenceValues(bool lengths, bool bias = false) {
  Sequence s = MakeSequence(5, 20, 3, bias);
  for (int r = 0; r < 20 && lengths; ++r) {
    s.lengths.push_back((r * 7) % 8 - 1);
  }
  const SequenceOutputs want = RunSequence(s);
  std::vector<Tensor> out =
      RunAll("lstm_sequence", SequenceInputs(s, bias), {{"bias", bias}});
  ASSERT_EQ(out.size(), 5u);
  ExpectTensor(out[0], DType::kF32, {5, 20, 3}, want.hs, 2e-6);
  const std::vector<double> h(want.hs.end() - 60, want.hs.end());
  const std::vector<double> c(want.cs.end() - 60, want.cs.end());
  ExpectTensor(out[1], DType::kF32, {20, 3}, h, 2e-6);
  ExpectTensor(out[2], DType::kF32, {20, 3}, c, 2e-6);
  ExpectTensor(out[3], DType::kF32, {5, 20, 3}, want.cs, 2e-6);
  // gates: the activations, for every row (past a length too).
  ExpectTensor(out[4], DType::kF32, {5, 20, 12}, want.acts, 2e-6);
}

TEST(RnnSequenceTest, LstmSequenceMatchesTheRecurrence) {
  ExpectSequenceValues(false);
}

TEST(RnnSequenceTest, LstmSequenceWithLengths) { ExpectSequenceValues(true); }

TEST(RnnSequenceTest, LstmSequenceWithBias) {
  ExpectSequenceValues(false, true);
  ExpectSequenceValues(true, true);
}

// No steps: no outputs, and the final state is the initial one.
TEST(RnnSequenceTest, LstmSequenceOfNoSteps) {
  std::vector<Tensor> out = RunAll(
      "lstm_sequence", {F32({}, {0, 2, 4}), F32({0.5f, -0.25f}, {2, 1}),
                        F32({2.0f, 3.0f}, {2, 1}), F32({1, 2, 3, 4}, {1, 4})});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].shape(), Shape({0, 2, 1}));
  ExpectTensor(out[1], DType::kF32, {2, 1}, {0.5, -0.25}, 0);
  ExpectTensor(out[2], DType::kF32, {2, 1}, {2.0, 3.0}, 0);
}

// lstm_sequence_grad against central differences of the recurrence in
// double, L weighting every step's h and the final h and c: by z, h0, c0,
// w_h and the bias, every element.
void ExpectSequenceGradient(bool lengths, bool bias = false) {
  const int64_t time = 4, batch = 20, u = 3;
  Sequence s = MakeSequence(time, batch, u, bias);
  for (int r = 0; r < batch && lengths; ++r) {
    s.lengths.push_back((r * 5) % 7 - 1);
  }
  const std::vector<float> w_hs =
      testing::PatternValues(time * batch * u, 9, 4409u);
  const std::vector<float> w_h_last =
      testing::PatternValues(batch * u, 10, 4409u);
  const std::vector<float> w_c_last =
      testing::PatternValues(batch * u, 11, 4409u);
  auto loss = [&](const Sequence& at) {
    const SequenceOutputs f = RunSequence(at);
    double l = 0;
    for (size_t i = 0; i < f.hs.size(); ++i) l += f.hs[i] * w_hs[i];
    for (int64_t i = 0; i < batch * u; ++i) {
      l += f.hs[(time - 1) * batch * u + i] * w_h_last[i];
      l += f.cs[(time - 1) * batch * u + i] * w_c_last[i];
    }
    return l;
  };
  const Shape zs({time, batch, 4 * u}), state({batch, u}), w({u, 4 * u});
  const std::vector<Tensor> in = SequenceInputs(s, bias);
  std::vector<Tensor> fwd = RunAll("lstm_sequence", in, {{"bias", bias}});
  ASSERT_EQ(fwd.size(), 5u);
  std::vector<Tensor> grad_in = {fwd[4],
                                 fwd[3],
                                 fwd[0],
                                 in[1],
                                 in[2],
                                 in[3],
                                 F32(w_hs, {time, batch, u}),
                                 F32(w_h_last, state),
                                 F32(w_c_last, state)};
  if (lengths) grad_in.push_back(in.back());
  std::vector<Tensor> grads = RunAll("lstm_sequence_grad", grad_in);
  ASSERT_EQ(grads.size(), 5u);
  const Shape shapes[] = {zs, state, state, w, Shape({4 * u})};
  const double step = 1e-5;
  // db is dz summed, whether or not the op had a bias.
  for (int i = 0; i < 5; ++i) {
    std::vector<double>& x = *s.input(i);
    std::vector<double> numeric;
    for (double& v : x) {
      const double keep = v;
      v = keep + step;
      const double up = loss(s);
      v = keep - step;
      const double down = loss(s);
      v = keep;
      numeric.push_back((up - down) / (2 * step));
    }
    SCOPED_TRACE(i);
    ExpectTensor(grads[i], DType::kF32, shapes[i], numeric, 2e-5);
  }
}

TEST(RnnSequenceTest, LstmSequenceGradientMatchesFiniteDifferences) {
  ExpectSequenceGradient(false);
}

TEST(RnnSequenceTest, LstmSequenceGradientWithLengths) {
  ExpectSequenceGradient(true);
}

TEST(RnnSequenceTest, LstmSequenceGradientWithBias) {
  ExpectSequenceGradient(false, true);
  ExpectSequenceGradient(true, true);
}

TEST(RnnSequenceTest, LstmSequenceShapeErrors) {
  EXPECT_EQ(
      RunError("lstm_sequence", {F32(std::vector<float>(16), {2, 2, 4}),
                                 F32({0, 0, 0, 0}, {2, 2}), F32({0, 0}, {2, 1}),
                                 F32({1, 2, 3, 4}, {1, 4})})
          .message(),
      "lstm_sequence: needs z [time, batch, 4 * units], h0 and c0 "
      "[batch, units] and w_h [units, 4 * units]; got z [2,2,4], h0 "
      "[2,2], c0 [2,1] and w_h [1,4]");
  EXPECT_EQ(
      RunError("lstm_sequence", {F64({0, 0, 0, 0}, {1, 1, 4}), F64({0}, {1, 1}),
                                 F64({0}, {1, 1}), F64({1, 2, 3, 4}, {1, 4})})
          .message(),
      "lstm_sequence: expected f32 tensors, got f64[1,1,4] as input 0");
  EXPECT_EQ(RunError("lstm_sequence",
                     {F32(std::vector<float>(8), {1, 2, 4}),
                      F32({0, 0}, {2, 1}), F32({0, 0}, {2, 1}),
                      F32({1, 2, 3, 4}, {1, 4}), testing::I32({1, 1, 1}, {3})})
                .message(),
            "lstm_sequence: the lengths must be i32 [batch] [2]; got "
            "i32[3]");
  const std::vector<Tensor> shapes = {F32(std::vector<float>(8), {1, 2, 4}),
                                      F32({0, 0}, {2, 1}), F32({0, 0}, {2, 1}),
                                      F32({1, 2, 3, 4}, {1, 4})};
  EXPECT_EQ(RunError("lstm_sequence", shapes, {{"bias", true}}).message(),
            "lstm_sequence: with bias = true, the bias is input 4 (after "
            "w_h); got 4 inputs");
  std::vector<Tensor> wrong = shapes;
  wrong.push_back(F32({1, 2}, {2}));
  EXPECT_EQ(RunError("lstm_sequence", wrong, {{"bias", true}}).message(),
            "lstm_sequence: the bias must be f32 [4 * units] [4]; got "
            "f32[2]");
}

// A bias whose shape is known only at run time gets the shape function's
// check there, from the kernel.
TEST(RnnSequenceTest, ABiasOfTheWrongShapeFedAtRunTime) {
  auto g = std::make_shared<Graph>();
  std::vector<NodeOut> in = {
      testing::Const(*g, F32(std::vector<float>(8), {1, 2, 4})),
      testing::Const(*g, F32({0, 0}, {2, 1})),
      testing::Const(*g, F32({0, 0}, {2, 1})),
      testing::Const(*g, F32({1, 2, 3, 4}, {1, 4}))};
  Node* b = testing::Placeholder(*g, "b", Shape({kUnknownDim}));
  in.push_back({b, 0});
  Node* lstm = testing::Add(*g, "lstm", "lstm_sequence", in, {{"bias", true}});
  Session s(g, {.num_threads = 2});
  absl::StatusOr<std::vector<Tensor>> out =
      s.Run({{{b, 0}, F32({1, 2}, {2})}}, {{lstm, 1}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find(
                "the bias must be f32 [4 * units] [4]; got f32[2]"),
            std::string::npos)
      << out.status();
  out = s.Run({{{b, 0}, F32({1, 2, 3, 4}, {4})}}, {{lstm, 1}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
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
