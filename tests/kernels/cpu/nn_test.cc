// Neural-network ops: softmax family, cross entropies, conv2d, pooling,
// bias_add and l2_loss, against hand values, PyTorch-derived values and
// naive reference loops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/float16.h"
#include "framework/op_registry.h"
#include "framework/ops/resize_plan.h"
#include "tests/util/conv_case.h"
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

// Deterministic values in [-1, 1).
std::vector<float> NnPattern(int64_t n, int seed) {
  return testing::PatternValues(n, seed, 2246822519u);
}

// ---- softmax
// ------------------------------------------------------------------

TEST(NnTest, SoftmaxLastAxis) {
  Tensor y = Run1("softmax", {F32({1, 2, 3, 1000, 1001, 1002}, {2, 3})});
  // The second row would overflow exp without subtracting the maximum.
  ExpectTensor(y, DType::kF32, {2, 3},
               {0.0900305732, 0.2447284711, 0.6652409558, 0.0900305732,
                0.2447284711, 0.6652409558},
               1e-6);
}

TEST(NnTest, SoftmaxRowsSumToOne) {
  std::vector<float> x = NnPattern(37 * 101, 1);
  for (float& v : x) v *= 50;
  Tensor y = Run1("softmax", {F32(x, {37, 101})});
  for (int r = 0; r < 37; ++r) {
    double sum = 0;
    for (int c = 0; c < 101; ++c) {
      const float p = y.at<float>(r * 101 + c);
      EXPECT_GE(p, 0.0f);
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r;
  }
}

TEST(NnTest, SoftmaxStableForHugeLogits) {
  Tensor y = Run1("softmax", {F32({-1e30f, 0, 1e30f, 3e38f}, {4})});
  ExpectTensor(y, DType::kF32, {4}, {0, 0, 0, 1}, 0);
  Tensor l = Run1("log_softmax", {F32({1e4f, 1e4f}, {2})});
  ExpectTensor(l, DType::kF32, {2}, {-0.6931471806, -0.6931471806}, 1e-6);
}

TEST(NnTest, SoftmaxAxisZero) {
  Tensor x = F64({1, 2, 3, 2, 4, 8}, {2, 3});
  ExpectTensor(Run1("softmax", {x}, {{"axis", int64_t{0}}}), DType::kF64,
               {2, 3},
               {0.2689414213699951, 0.11920292202211755, 0.006692850924284856,
                0.7310585786300049, 0.8807970779778823, 0.9933071490757153},
               1e-12);
  ExpectTensor(
      Run1("log_softmax", {x}, {{"axis", int64_t{0}}}), DType::kF64, {2, 3},
      {-1.3132616875182228, -2.1269280110429727, -5.006715348489118,
       -0.31326168751822286, -0.1269280110429726, -0.006715348489117967},
      1e-12);
}

TEST(NnTest, LogSoftmax) {
  ExpectTensor(Run1("log_softmax", {F32({1, 2, 3}, {1, 3})}), DType::kF32,
               {1, 3}, {-2.4076059644, -1.4076059644, -0.4076059644}, 1e-6);
}

TEST(NnTest, SoftmaxHalf) {
  std::vector<Half> x = {FloatToHalf(1), FloatToHalf(2), FloatToHalf(3)};
  ExpectTensor(Run1("softmax", {Tensor::FromVector(x, {3})}), DType::kF16, {3},
               {0.0900305732, 0.2447284711, 0.6652409558}, 1e-3);
}

TEST(NnTest, SoftmaxErrors) {
  EXPECT_EQ(RunError("softmax", {I32({1, 2}, {2})}).message(),
            "softmax: expected a floating-point tensor, got i32[2]");
  EXPECT_EQ(
      RunError("softmax", {F32({1, 2}, {2})}, {{"axis", int64_t{1}}}).message(),
      "softmax: axis 1 is out of range for a tensor of rank 1");
}

// ---- scaled_dot_product_attention -------------------------------------

// The attention of one case in double, naively: every output and, for the
// gradient of sum(out * w), every input's gradient, over the broadcast
// batch (unsummed).
struct AttentionCase {
  std::vector<int64_t> q, k, v, keep;  // shapes; keep empty: a scalar
  std::vector<bool> kept;              // keep's values
  double scale = 1.0;
  bool rsqrt_d = true;
};

struct AttentionWant {
  std::vector<double> out, dq, dk, dv;
  Shape out_shape, dq_shape, dk_shape, dv_shape;
};

std::vector<double> AsDoubles(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

AttentionWant NaiveAttention(const AttentionCase& c,
                             const std::vector<double>& q,
                             const std::vector<double>& k,
                             const std::vector<double>& v,
                             const std::vector<double>& w) {
  const int r = static_cast<int>(c.q.size());
  const int64_t tq = c.q[r - 2], d = c.q[r - 1], tk = c.k[r - 2],
                dv = c.v[r - 1];
  std::vector<int64_t> batch(r - 2);
  int64_t count = 1;
  for (int i = 0; i < r - 2; ++i) {
    batch[i] = 1;  // the dim that is not 1, if any (0 included)
    for (int64_t x : {c.q[i], c.k[i], c.v[i]}) {
      if (x != 1) batch[i] = x;
    }
    count *= batch[i];
  }
  // Offset of batch matrix b in an operand of shape s (size-1 dims repeat).
  auto offset = [&](const std::vector<int64_t>& s, int64_t b) {
    int64_t off = 0, stride = s[r - 2] * s[r - 1];
    for (int i = r - 3; i >= 0; --i) {
      const int64_t idx = b % batch[i];
      b /= batch[i];
      if (s[i] != 1) off += idx * stride;
      stride *= s[i];
    }
    return off;
  };
  const double scale = c.rsqrt_d && d > 0
                           ? c.scale / std::sqrt(static_cast<double>(d))
                           : c.scale;
  const int64_t keep_lines =
      c.keep.empty() || tk == 0 ? 0 : static_cast<int64_t>(c.kept.size()) / tk;
  AttentionWant want;
  want.out.assign(count * tq * dv, 0.0);
  want.dq.assign(count * tq * d, 0.0);
  want.dk.assign(count * tk * d, 0.0);
  want.dv.assign(count * tk * dv, 0.0);
  for (int64_t b = 0; b < count; ++b) {
    const double* qb = q.data() + offset(c.q, b);
    const double* kb = k.data() + offset(c.k, b);
    const double* vb = v.data() + offset(c.v, b);
    for (int64_t i = 0; i < tq; ++i) {
      const int64_t line = keep_lines == 0 ? 0 : (b * tq + i) % keep_lines;
      auto kept = [&](int64_t j) {
        return keep_lines == 0 ? static_cast<bool>(c.kept[0])
                               : static_cast<bool>(c.kept[line * tk + j]);
      };
      std::vector<double> s(tk), p(tk, 0.0);
      double max = -INFINITY, total = 0;
      for (int64_t j = 0; j < tk; ++j) {
        for (int64_t e = 0; e < d; ++e) s[j] += qb[i * d + e] * kb[j * d + e];
        s[j] *= scale;
        if (kept(j)) max = std::max(max, s[j]);
      }
      for (int64_t j = 0; j < tk; ++j) {
        if (kept(j)) total += p[j] = std::exp(s[j] - max);
      }
      for (int64_t j = 0; j < tk; ++j) p[j] = total > 0 ? p[j] / total : 0;
      const double* wi = w.data() + (b * tq + i) * dv;
      // out = p v; dout = w; dp_j = w . v_j; ds = p (dp - p . dp).
      std::vector<double> dp(tk, 0.0);
      double dot = 0;
      for (int64_t j = 0; j < tk; ++j) {
        for (int64_t e = 0; e < dv; ++e) {
          want.out[(b * tq + i) * dv + e] += p[j] * vb[j * dv + e];
          want.dv[(b * tk + j) * dv + e] += p[j] * wi[e];
          dp[j] += wi[e] * vb[j * dv + e];
        }
        dot += p[j] * dp[j];
      }
      for (int64_t j = 0; j < tk; ++j) {
        const double ds = scale * p[j] * (dp[j] - dot);
        for (int64_t e = 0; e < d; ++e) {
          want.dq[(b * tq + i) * d + e] += ds * kb[j * d + e];
          want.dk[(b * tk + j) * d + e] += ds * qb[i * d + e];
        }
      }
    }
  }
  auto shape = [&](int64_t rows, int64_t cols) {
    std::vector<int64_t> dims = batch;
    dims.push_back(rows);
    dims.push_back(cols);
    return Shape(dims);
  };
  want.out_shape = shape(tq, dv);
  want.dq_shape = shape(tq, d);
  want.dk_shape = shape(tk, d);
  want.dv_shape = shape(tk, dv);
  return want;
}

int64_t Elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t x : dims) n *= x;
  return n;
}

// The op and its gradient op against NaiveAttention, in f32 and f64.
void CheckAttention(const AttentionCase& c) {
  const std::vector<float> q = NnPattern(Elements(c.q), 1),
                           k = NnPattern(Elements(c.k), 2),
                           v = NnPattern(Elements(c.v), 3);
  const Tensor keep = testing::Bool(c.kept, Shape(c.keep));
  const AttrMap attrs{{"scale", c.scale}, {"rsqrt_d", c.rsqrt_d}};
  // The output's gradient w: the values of the output's shape.
  const AttentionWant probe =
      NaiveAttention(c, AsDoubles(q), AsDoubles(k), AsDoubles(v),
                     std::vector<double>(1 << 16, 0.0));
  const std::vector<float> w = NnPattern(probe.out_shape.num_elements(), 4);
  const AttentionWant want =
      NaiveAttention(c, AsDoubles(q), AsDoubles(k), AsDoubles(v), AsDoubles(w));
  for (DType dtype : {DType::kF32, DType::kF64}) {
    SCOPED_TRACE(DTypeName(dtype));
    auto in = [&](const std::vector<float>& x,
                  const std::vector<int64_t>& dims) {
      return dtype == DType::kF32 ? F32(x, Shape(dims))
                                  : F64(AsDoubles(x), Shape(dims));
    };
    const double tol = dtype == DType::kF32 ? 2e-6 : 1e-12;
    const Tensor tq = in(q, c.q), tk = in(k, c.k), tv = in(v, c.v);
    // On the shared pool, and on one thread (where every matrix reuses
    // one scratch buffer).
    EagerContext one_thread({.num_threads = 1});
    for (EagerContext* ctx : {&testing::Eager(), &one_thread}) {
      absl::StatusOr<Tensor> out = ctx->Execute1("scaled_dot_product_attention",
                                                 {tq, tk, tv, keep}, attrs);
      ASSERT_TRUE(out.ok()) << out.status();
      ExpectTensor(*out, dtype, want.out_shape, want.out, tol);
      absl::StatusOr<std::vector<Tensor>> grads =
          ctx->Execute("scaled_dot_product_attention_grad",
                       {tq, tk, tv, keep, in(w, want.out_shape.dims())}, attrs);
      ASSERT_TRUE(grads.ok()) << grads.status();
      ASSERT_EQ(grads->size(), 3u);
      ExpectTensor((*grads)[0], dtype, want.dq_shape, want.dq, tol);
      ExpectTensor((*grads)[1], dtype, want.dk_shape, want.dk, tol);
      ExpectTensor((*grads)[2], dtype, want.dv_shape, want.dv, tol);
    }
  }
}

TEST(NnTest, ScaledDotProductAttention) {
  // No mask (a scalar true), the default 1 / sqrt(d).
  CheckAttention({.q = {2, 3, 5, 4},
                  .k = {2, 3, 6, 4},
                  .v = {2, 3, 6, 7},
                  .keep = {},
                  .kept = {true}});
  // A causal mask [tq, tk]: prefixes of 1, 2, ... keys.
  std::vector<bool> causal;
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 5; ++j) causal.push_back(j <= i);
  }
  CheckAttention({.q = {2, 2, 5, 3},
                  .k = {2, 2, 5, 3},
                  .v = {2, 2, 5, 2},
                  .keep = {5, 5},
                  .kept = causal});
  // An arbitrary mask with a query that keeps none (zeros, and no
  // gradient), k and v broadcast over the heads, a scale of its own.
  CheckAttention({.q = {2, 3, 3, 4},
                  .k = {2, 1, 4, 4},
                  .v = {1, 1, 4, 3},
                  .keep = {3, 4},
                  .kept = {true, false, true, false, false, false, false, false,
                           false, true, true, true},
                  .scale = 0.7,
                  .rsqrt_d = false});
  // A padding mask [tk] (every query keeps the first 2 keys); rank 3; one
  // mask line per query of each batch matrix ([b, tq, tk]).
  CheckAttention({.q = {3, 2, 4},
                  .k = {3, 3, 4},
                  .v = {3, 3, 5},
                  .keep = {3},
                  .kept = {true, true, false}});
  std::vector<bool> lines;
  for (int i = 0; i < 3 * 2 * 3; ++i) lines.push_back(i % 4 != 1);
  CheckAttention({.q = {3, 2, 4},
                  .k = {3, 3, 4},
                  .v = {3, 3, 5},
                  .keep = {3, 2, 3},
                  .kept = lines});
  // Longer than a block of queries (32): a causal mask's blocks multiply
  // only the keys they keep, each block of keys only the queries that
  // keep it.
  std::vector<bool> long_causal;
  for (int i = 0; i < 70; ++i) {
    for (int j = 0; j < 70; ++j) long_causal.push_back(j <= i);
  }
  CheckAttention({.q = {2, 70, 3},
                  .k = {2, 70, 3},
                  .v = {2, 70, 2},
                  .keep = {70, 70},
                  .kept = long_causal});
  // A mask of each matrix's own: every key, then causal, and again (the
  // matrices that share a thread's scratch have different blocks).
  std::vector<bool> mixed;
  for (int b = 0; b < 6; ++b) {
    for (int i = 0; i < 70; ++i) {
      for (int j = 0; j < 70; ++j) mixed.push_back(b % 2 == 0 || j <= i);
    }
  }
  CheckAttention({.q = {6, 70, 3},
                  .k = {6, 70, 3},
                  .v = {6, 70, 2},
                  .keep = {6, 70, 70},
                  .kept = mixed});
  // Blocks that keep fewer keys than the next one and none at all: the
  // first 10 keys, no key, then every third key up to key 48 of 50; each
  // after a matrix that keeps every key (whose probabilities a thread's
  // scratch still holds).
  std::vector<bool> blocks;
  for (int b = 0; b < 6; ++b) {
    for (int i = 0; i < 70; ++i) {
      for (int j = 0; j < 50; ++j) {
        blocks.push_back(b % 2 == 0 ||
                         (i < 32 ? j < 10 : i >= 64 && j % 3 == 0 && j <= 48));
      }
    }
  }
  CheckAttention({.q = {6, 70, 4},
                  .k = {6, 50, 4},
                  .v = {6, 50, 3},
                  .keep = {6, 70, 50},
                  .kept = blocks});
  // A scalar false: nothing kept, zeros everywhere; rank 2.
  CheckAttention(
      {.q = {3, 4}, .k = {2, 4}, .v = {2, 2}, .keep = {}, .kept = {false}});
  // Empty: no keys, no queries, no batch.
  CheckAttention({.q = {2, 3, 4},
                  .k = {2, 0, 4},
                  .v = {2, 0, 5},
                  .keep = {0},
                  .kept = {}});
  CheckAttention({.q = {2, 0, 4},
                  .k = {2, 3, 4},
                  .v = {2, 3, 5},
                  .keep = {},
                  .kept = {true}});
  CheckAttention({.q = {0, 2, 4},
                  .k = {1, 3, 4},
                  .v = {1, 3, 5},
                  .keep = {},
                  .kept = {true}});
}

// x with its dims r - 3 and r - 2 swapped: bhtd <-> bthd.
Tensor SwapHeads(const Tensor& x) {
  std::vector<int64_t> perm;
  for (int i = 0; i < x.rank(); ++i) perm.push_back(i);
  std::swap(perm[x.rank() - 3], perm[x.rank() - 2]);
  return Run1("transpose", {x}, {{"perm", perm}});
}

std::vector<double> Values(const Tensor& t) {
  const float* p = t.data<float>();
  return std::vector<double>(p, p + t.num_elements());
}

// layout "bthd": each operand's heads inside its time steps, the values
// of the layout bhtd (whose results the test above checks) moved.
TEST(NnTest, ScaledDotProductAttentionHeadsInside) {
  struct Case {
    std::vector<int64_t> q, k, v;
    Tensor keep;
  };
  std::vector<bool> causal;
  for (int i = 0; i < 40; ++i) {
    for (int j = 0; j < 40; ++j) causal.push_back(j <= i);
  }
  const Case cases[] = {
      // Causal, over blocks of queries; 3 heads of 4 (values of 2).
      {{2, 3, 40, 4},
       {2, 3, 40, 4},
       {2, 3, 40, 2},
       testing::Bool(causal, {40, 40})},
      // k and v of one head, broadcast over q's 3; no mask; rank 3.
      {{3, 5, 4}, {1, 6, 4}, {1, 6, 3}, testing::Bool({true}, {})},
  };
  for (const Case& c : cases) {
    const Tensor q = F32(NnPattern(Elements(c.q), 1), Shape(c.q)),
                 k = F32(NnPattern(Elements(c.k), 2), Shape(c.k)),
                 v = F32(NnPattern(Elements(c.v), 3), Shape(c.v));
    const Tensor out = Run1("scaled_dot_product_attention", {q, k, v, c.keep});
    const Tensor w = F32(NnPattern(out.num_elements(), 4), out.shape());
    absl::StatusOr<std::vector<Tensor>> grads = testing::Eager().Execute(
        "scaled_dot_product_attention_grad", {q, k, v, c.keep, w});
    ASSERT_TRUE(grads.ok()) << grads.status();
    const AttrMap bthd{{"layout", std::string("bthd")}};
    const Tensor out_t =
        Run1("scaled_dot_product_attention",
             {SwapHeads(q), SwapHeads(k), SwapHeads(v), c.keep}, bthd);
    EXPECT_EQ(out_t.shape(), SwapHeads(out).shape());
    ExpectTensor(SwapHeads(out_t), DType::kF32, out.shape(), Values(out), 1e-6);
    absl::StatusOr<std::vector<Tensor>> grads_t = testing::Eager().Execute(
        "scaled_dot_product_attention_grad",
        {SwapHeads(q), SwapHeads(k), SwapHeads(v), c.keep, SwapHeads(w)}, bthd);
    ASSERT_TRUE(grads_t.ok()) << grads_t.status();
    for (int i = 0; i < 3; ++i) {
      const Tensor& g = (*grads)[i];
      ExpectTensor(SwapHeads((*grads_t)[i]), DType::kF32, g.shape(), Values(g),
                   1e-6);
    }
  }
  // Rank 2 has no heads; an unknown layout is refused.
  const Tensor m = F32({1, 2, 3, 4}, {2, 2});
  const Tensor yes = testing::Bool({true}, {});
  EXPECT_EQ(
      testing::Message(RunError("scaled_dot_product_attention", {m, m, m, yes},
                                {{"layout", std::string("bthd")}})),
      "scaled_dot_product_attention: the layout bthd needs q, k and v of one "
      "rank, 3 or more; got q [2,2], k [2,2] and v [2,2]");
  EXPECT_EQ(
      testing::Message(RunError("scaled_dot_product_attention", {m, m, m, yes},
                                {{"layout", std::string("btdh")}})),
      "scaled_dot_product_attention: layout must be \"bhtd\" or \"bthd\", "
      "got \"btdh\"");
}

TEST(NnTest, ScaledDotProductAttentionErrors) {
  const Tensor q = F32(std::vector<float>(24, 0.5f), {2, 3, 4});
  const Tensor yes = testing::Bool({true}, {});
  EXPECT_EQ(
      RunError("scaled_dot_product_attention",
               {q, F32(std::vector<float>(30, 1), {2, 5, 3}),
                F32(std::vector<float>(20, 1), {2, 5, 2}), yes})
          .message(),
      "scaled_dot_product_attention: q and k need one last dimension, and k "
      "and v one number of keys (their next-to-last); got q [2,3,4], k "
      "[2,5,3] and v [2,5,2]");
  EXPECT_EQ(RunError("scaled_dot_product_attention",
                     {q, F32(std::vector<float>(24, 1), {3, 2, 4}),
                      F32(std::vector<float>(24, 1), {3, 2, 4}), yes})
                .message(),
            "scaled_dot_product_attention: the batch dimensions of q [2,3,4], "
            "k [3,2,4] and v [3,2,4] cannot be broadcast");
  EXPECT_EQ(RunError("scaled_dot_product_attention",
                     {q, q, q, testing::Bool({true, false}, {2})})
                .message(),
            "scaled_dot_product_attention: the mask [2] must have the last "
            "dimensions of the logits [2,3,3]");
  EXPECT_EQ(RunError("scaled_dot_product_attention_grad",
                     {q, q, q, yes, F32(std::vector<float>(24, 1), {2, 4, 3})})
                .message(),
            "scaled_dot_product_attention_grad: dout [2,4,3] must have the "
            "output's shape [2,3,4]");
}

// masked_softmax: the kept elements' softmax, zeros elsewhere; the mask
// (the logits' last dims) repeats over the leading ones.
TEST(NnTest, MaskedSoftmax) {
  Tensor x = F32({1, 2, 3, 1000, 1001, 1002, 5, -1, 7, 0, 0, 0}, {2, 2, 3});
  Tensor keep = testing::Bool({true, false, true, false, false, false}, {2, 3});
  // softmax([1, 3]) = [0.1192029, 0.8807971]; a row that keeps none is 0.
  ExpectTensor(Run1("masked_softmax", {x, keep}), DType::kF32, {2, 2, 3},
               {0.1192029220, 0, 0.8807970780, 0, 0, 0, 0.1192029220, 0,
                0.8807970780, 0, 0, 0},
               1e-6);
  // Dropped elements take no part, even infinite or NaN ones.
  const float inf = INFINITY, nan = NAN;
  ExpectTensor(
      Run1("masked_softmax", {F32({nan, 2, inf, 2}, {4}),
                              testing::Bool({false, true, false, true}, {4})}),
      DType::kF32, {4}, {0, 0.5, 0, 0.5}, 1e-7);
  // The same for a mask that keeps a prefix (causal, padding), which runs
  // apart; rows over it: a prefix of 2, of 0, and of all 3.
  ExpectTensor(
      Run1("masked_softmax", {F32({1, 2, nan, inf}, {4}),
                              testing::Bool({true, true, false, false}, {4})}),
      DType::kF32, {4}, {0.2689414214, 0.7310585786, 0, 0}, 1e-7);
  ExpectTensor(
      Run1("masked_softmax", {F32({0, 1, 2, 0, 1, 2, 0, 1, 2}, {3, 3}),
                              testing::Bool({true, true, false, false, false,
                                             false, true, true, true},
                                            {3, 3})}),
      DType::kF32, {3, 3},
      {0.2689414214, 0.7310585786, 0, 0, 0, 0, 0.0900305732, 0.2447284711,
       0.6652409558},
      1e-7);
  // A mask of the whole shape; f64.
  ExpectTensor(Run1("masked_softmax",
                    {F64({0, 1, 2, 3}, {2, 2}),
                     testing::Bool({true, true, false, true}, {2, 2})}),
               DType::kF64, {2, 2},
               {0.2689414213699951, 0.7310585786300049, 0, 1}, 1e-12);
}

TEST(NnTest, MaskedSoftmaxErrors) {
  EXPECT_EQ(RunError("masked_softmax", {F32({1, 2, 3, 4}, {2, 2}),
                                        testing::Bool({true, true}, {1, 2})})
                .message(),
            "masked_softmax: the mask [1,2] must have the last dimensions of "
            "the logits [2,2]");
  EXPECT_EQ(RunError("masked_softmax", {F32({1, 2}, {2}), F32({1, 1}, {2})})
                .message(),
            "masked_softmax: the mask must be bool, got f32[2]");
}

// softmax_grad(dy, y) = (dy - sum(dy * y)) * y along the last axis: y =
// [0.2, 0.3, 0.5] and dy = [1, 2, 4] give sum 2.8 and [-0.36, -0.24, 0.6].
TEST(NnTest, SoftmaxGrad) {
  ExpectTensor(
      Run1("softmax_grad", {F32({1, 2, 4, 1, 1, 1}, {2, 3}),
                            F32({0.2f, 0.3f, 0.5f, 0.2f, 0.3f, 0.5f}, {2, 3})}),
      DType::kF32, {2, 3}, {-0.36, -0.24, 0.6, 0, 0, 0}, 1e-6);
  EXPECT_EQ(RunError("softmax_grad", {F32({1, 2}, {2}), F32({1, 2, 3}, {3})})
                .message(),
            "softmax_grad: shapes differ: f32[2] and f32[3]");
}

// Eager's outputs of a multi-output op.
std::vector<Tensor> RunAll(const std::string& op, std::vector<Tensor> inputs,
                           AttrMap attrs = {}) {
  absl::StatusOr<std::vector<Tensor>> out =
      testing::Eager().Execute(op, std::move(inputs), std::move(attrs));
  EXPECT_TRUE(out.ok()) << op << ": " << out.status();
  return out.ok() ? *out : std::vector<Tensor>();
}

// layer_norm by hand: row [1, 2, 3, 4] has mean 2.5 and biased variance
// 1.25, so rstd = 1 / sqrt(1.25) (eps 0) and y = (x - 2.5) * rstd * scale
// + offset. A constant row is its offset, with rstd = 1 / sqrt(eps).
TEST(NnTest, LayerNorm) {
  const double r = 1 / std::sqrt(1.25);
  std::vector<Tensor> out =
      RunAll("layer_norm",
             {F64({1, 2, 3, 4, 7, 9, 11, 13}, {2, 4}), F64({1, 2, 0.5, 1}, {4}),
              F64({0, 1, 0, -1}, {4})},
             {{"eps", 0.0}});
  ASSERT_EQ(out.size(), 3u);
  // Row 2 is row 1 times 2 plus 5: the same normalised values.
  ExpectTensor(out[0], DType::kF64, {2, 4},
               {-1.5 * r, -0.5 * r * 2 + 1, 0.5 * r * 0.5, 1.5 * r - 1,
                -1.5 * r, -0.5 * r * 2 + 1, 0.5 * r * 0.5, 1.5 * r - 1},
               1e-12);
  ExpectTensor(out[1], DType::kF64, {2}, {2.5, 10}, 1e-12);
  ExpectTensor(out[2], DType::kF64, {2}, {r, r / 2}, 1e-12);

  out = RunAll("layer_norm", {F32({3, 3, 3}, {1, 3}), F32({1, 1, 1}, {3}),
                              F32({0.5f, -1, 2}, {3})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kF32, {1, 3}, {0.5, -1, 2}, 1e-7);
  ExpectTensor(out[2], DType::kF32, {1}, {1 / std::sqrt(1e-5)}, 1e-6);
}

// f16 normalises in f32: its statistics are f32, its output rounded once.
TEST(NnTest, LayerNormHalf) {
  std::vector<Tensor> out =
      RunAll("layer_norm",
             {Run1("cast", {F32({1, 2, 3, 4}, {4})}, {{"dtype", DType::kF16}}),
              Run1("cast", {F32({1, 1, 1, 1}, {4})}, {{"dtype", DType::kF16}}),
              Run1("cast", {F32({0, 0, 0, 0}, {4})}, {{"dtype", DType::kF16}})},
             {{"eps", 0.0}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].dtype(), DType::kF16);
  EXPECT_EQ(out[1].dtype(), DType::kF32);
  const double r = 1 / std::sqrt(1.25);
  ExpectTensor(Run1("cast", {out[0]}, {{"dtype", DType::kF64}}), DType::kF64,
               {4}, {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, 1e-3);
}

// layer_norm_grad against the formulas on one row of 3 (x = [0, 1, 5],
// eps 0): mean 2, rstd 1 / sqrt(14 / 3), xhat = (x - 2) * rstd; g = dy *
// scale; dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dscale and
// doffset sum dy * xhat and dy over the two (equal) rows.
TEST(NnTest, LayerNormGrad) {
  const double rs = 1 / std::sqrt(14.0 / 3);
  const double xh[3] = {-2 * rs, -1 * rs, 3 * rs};
  const double dy[3] = {1, -2, 0.5}, scale[3] = {2, 1, -1};
  double g[3], mg = 0, mgx = 0;
  for (int k = 0; k < 3; ++k) {
    g[k] = dy[k] * scale[k];
    mg += g[k] / 3;
  }
  for (int k = 0; k < 3; ++k) mgx += g[k] * xh[k] / 3;
  std::vector<double> dx, ds, doff;
  for (int row = 0; row < 2; ++row) {
    for (int k = 0; k < 3; ++k) dx.push_back(rs * (g[k] - mg - xh[k] * mgx));
  }
  for (int k = 0; k < 3; ++k) {
    ds.push_back(2 * dy[k] * xh[k]);
    doff.push_back(2 * dy[k]);
  }
  std::vector<Tensor> out = RunAll(
      "layer_norm_grad",
      {F64({1, -2, 0.5, 1, -2, 0.5}, {2, 3}), F64({0, 1, 5, 0, 1, 5}, {2, 3}),
       F64({2, 1, -1}, {3}), F64({2, 2}, {2}), F64({rs, rs}, {2})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kF64, {2, 3}, dx, 1e-12);
  ExpectTensor(out[1], DType::kF64, {3}, ds, 1e-12);
  ExpectTensor(out[2], DType::kF64, {3}, doff, 1e-12);
}

// Over more rows than one block of the parameter sums, the sums do not
// depend on the thread count: the same bits with 1 thread and with 2.
TEST(NnTest, LayerNormGradManyRows) {
  const int64_t rows = 300, n = 7;
  Tensor x = F32(NnPattern(rows * n, 3), {rows, n});
  Tensor dy = F32(NnPattern(rows * n, 4), {rows, n});
  Tensor scale = F32(NnPattern(n, 5), {n});
  std::vector<Tensor> fwd = RunAll("layer_norm", {x, scale, scale});
  ASSERT_EQ(fwd.size(), 3u);
  std::vector<Tensor> out =
      RunAll("layer_norm_grad", {dy, x, scale, fwd[1], fwd[2]});
  ASSERT_EQ(out.size(), 3u);
  std::vector<double> doff(n, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < n; ++k) doff[k] += dy.at<float>(r * n + k);
  }
  ExpectTensor(out[2], DType::kF32, {n}, doff, 1e-5);
  EagerContext one(EagerOptions{.num_threads = 1});
  absl::StatusOr<std::vector<Tensor>> single =
      one.Execute("layer_norm_grad", {dy, x, scale, fwd[1], fwd[2]});
  ASSERT_TRUE(single.ok()) << single.status();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(out[i].bytes(), (*single)[i].bytes());
    EXPECT_EQ(
        std::memcmp(out[i].raw_data(), (*single)[i].raw_data(), out[i].bytes()),
        0)
        << "output " << i;
  }
}

TEST(NnTest, LayerNormErrors) {
  EXPECT_EQ(RunError("layer_norm", {F32({1, 2, 3, 4}, {2, 2}),
                                    F32({1, 1, 1}, {3}), F32({0, 0}, {2})})
                .message(),
            "layer_norm: the scale [3] must be 1-D and as long as x's last "
            "dimension (x is [2,2])");
  EXPECT_EQ(RunError("layer_norm_grad",
                     {F32({1, 2}, {1, 2}), F32({1, 2}, {1, 2}),
                      F32({1, 1}, {2}), F32({0, 0}, {2}), F32({1}, {1})})
                .message(),
            "layer_norm_grad: the mean [2] must be x's shape [1,2] without "
            "its last dimension");
}

// batch_norm over the rows of x (the channels last): channel 0 holds 1, 2,
// 3, 4 (mean 2.5, biased variance 1.25), channel 1 10, 12, 10, 12 (mean
// 11, variance 1); eps 0.
TEST(NnTest, BatchNorm) {
  std::vector<Tensor> out =
      RunAll("batch_norm",
             {F64({1, 10, 2, 12, 3, 10, 4, 12}, {2, 2, 2}), F64({2, 1}, {2}),
              F64({0.5, -1}, {2})},
             {{"eps", 0.0}});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[1], DType::kF64, {2}, {2.5, 11}, 1e-12);
  ExpectTensor(out[2], DType::kF64, {2}, {1.25, 1}, 1e-12);
  const double r = 1 / std::sqrt(1.25);
  ExpectTensor(out[0], DType::kF64, {2, 2, 2},
               {-1.5 * r * 2 + 0.5, -2, -0.5 * r * 2 + 0.5, 0,
                0.5 * r * 2 + 0.5, -2, 1.5 * r * 2 + 0.5, 0},
               1e-12);
  // A constant channel (variance 0) is its offset with eps 1e-5.
  out = RunAll("batch_norm", {F32({1, 10, 2, 10, 3, 10, 4, 10}, {4, 2}),
                              F32({2, 1}, {2}), F32({0.5, -1}, {2})});
  ASSERT_EQ(out.size(), 3u);
  const double r5 = 1 / std::sqrt(1.25 + 1e-5);
  ExpectTensor(out[0], DType::kF32, {4, 2},
               {-1.5 * r5 * 2 + 0.5, -1, -0.5 * r5 * 2 + 0.5, -1,
                0.5 * r5 * 2 + 0.5, -1, 1.5 * r5 * 2 + 0.5, -1},
               1e-6);
  EXPECT_EQ(RunError("batch_norm",
                     {F32({}, {0, 2}), F32({1, 1}, {2}), F32({0, 0}, {2})})
                .message(),
            "batch_norm: needs at least one row per channel, got x [0,2]");
}

// batch_norm_grad against the formulas, and its parameter sums over more
// rows than one block: the same bits with 1 thread and with 2.
TEST(NnTest, BatchNormGrad) {
  const int64_t rows = 300, c = 3;
  std::vector<float> xs = NnPattern(rows * c, 6), dys = NnPattern(rows * c, 7);
  Tensor x = F32(xs, {rows, c}), dy = F32(dys, {rows, c});
  Tensor scale = F32({0.5, 1, 2}, {3});
  std::vector<Tensor> fwd = RunAll("batch_norm", {x, scale, scale});
  ASSERT_EQ(fwd.size(), 3u);
  std::vector<Tensor> out =
      RunAll("batch_norm_grad", {dy, x, scale, fwd[1], fwd[2]});
  ASSERT_EQ(out.size(), 3u);
  std::vector<double> ds(c, 0), doff(c, 0), dx(rows * c);
  std::vector<double> rstd(c);
  for (int64_t k = 0; k < c; ++k) {
    rstd[k] = 1 / std::sqrt(double{fwd[2].at<float>(k)} + 1e-5);
  }
  auto xhat = [&](int64_t i) {
    return (xs[i] - double{fwd[1].at<float>(i % c)}) * rstd[i % c];
  };
  for (int64_t i = 0; i < rows * c; ++i) {
    ds[i % c] += dys[i] * xhat(i);
    doff[i % c] += dys[i];
  }
  for (int64_t i = 0; i < rows * c; ++i) {
    const int64_t k = i % c;
    dx[i] = scale.at<float>(k) * rstd[k] *
            (dys[i] - doff[k] / rows - xhat(i) * ds[k] / rows);
  }
  ExpectTensor(out[0], DType::kF32, {rows, c}, dx, 1e-4);
  ExpectTensor(out[1], DType::kF32, {c}, ds, 1e-4);
  ExpectTensor(out[2], DType::kF32, {c}, doff, 1e-4);
  EagerContext one(EagerOptions{.num_threads = 1});
  absl::StatusOr<std::vector<Tensor>> single =
      one.Execute("batch_norm_grad", {dy, x, scale, fwd[1], fwd[2]});
  ASSERT_TRUE(single.ok()) << single.status();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(
        std::memcmp(out[i].raw_data(), (*single)[i].raw_data(), out[i].bytes()),
        0)
        << "output " << i;
  }
}

// gelu(x) = x * Phi(x): Phi(1) = 0.8413447460685429, Phi(-2) =
// 0.0227501319481792; gelu_grad(dy, x) = dy * (Phi(x) + x * phi(x)), phi(1)
// = 0.24197072451914337.
TEST(NnTest, Gelu) {
  ExpectTensor(Run1("gelu", {F64({0, 1, -2}, {3})}), DType::kF64, {3},
               {0, 0.8413447460685429, -2 * 0.0227501319481792}, 1e-12);
  ExpectTensor(Run1("gelu", {F32({0, 1, -2}, {3})}), DType::kF32, {3},
               {0, 0.8413447460685429, -2 * 0.0227501319481792}, 1e-6);
  ExpectTensor(
      Run1("gelu_grad", {F64({2, 3}, {2}), F64({0, 1}, {2})}), DType::kF64, {2},
      {2 * 0.5, 3 * (0.8413447460685429 + 0.24197072451914337)}, 1e-12);
}

// ---- cross entropies --------------------------------------------------------

TEST(NnTest, SoftmaxCrossEntropy) {
  Tensor logits = F32({1, 2, 3, 1, 1, 1}, {2, 3});
  Tensor probs = F32({0, 0, 1, 0.5, 0.25, 0.25}, {2, 3});
  ExpectTensor(Run1("softmax_cross_entropy", {logits, probs}), DType::kF32, {2},
               {0.4076059644443804, 1.0986122886681098}, 1e-6);
  // Per-example loss keeps the leading dimensions.
  Tensor l3 = F64({1, 2, 3, 1, 1, 1}, {2, 1, 3});
  Tensor p3 = F64({0, 0, 1, 0.5, 0.25, 0.25}, {2, 1, 3});
  ExpectTensor(Run1("softmax_cross_entropy", {l3, p3}), DType::kF64, {2, 1},
               {0.4076059644443804, 1.0986122886681098}, 1e-12);
}

TEST(NnTest, SoftmaxCrossEntropyShapeMismatch) {
  EXPECT_EQ(RunError("softmax_cross_entropy",
                     {F32({1, 2, 3}, {1, 3}), F32({1, 0}, {1, 2})})
                .message(),
            "softmax_cross_entropy: logits f32[1,3] and probs f32[1,2] differ "
            "in shape");
}

TEST(NnTest, SparseSoftmaxCrossEntropy) {
  Tensor logits = F32({1, 2, 3, 1000, 0, -1000, -5, 7, 0.5}, {3, 3});
  const std::vector<double> want = {0.4076059644443804, 0, 6.501508445129706};
  ExpectTensor(
      Run1("sparse_softmax_cross_entropy", {logits, I32({2, 0, 2}, {3})}),
      DType::kF32, {3}, want, 1e-5);
  ExpectTensor(
      Run1("sparse_softmax_cross_entropy", {logits, I64({2, 0, 2}, {3})}),
      DType::kF32, {3}, want, 1e-5);
}

TEST(NnTest, SparseSoftmaxCrossEntropyLabelOutOfRange) {
  Tensor logits = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  absl::Status s =
      RunError("sparse_softmax_cross_entropy", {logits, I32({0, 3}, {2})});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("label 3"), std::string_view::npos) << s;
  EXPECT_NE(s.message().find("3 classes"), std::string_view::npos) << s;
  absl::Status neg =
      RunError("sparse_softmax_cross_entropy", {logits, I64({-1, 0}, {2})});
  EXPECT_NE(neg.message().find("label -1"), std::string_view::npos) << neg;
}

TEST(NnTest, SparseSoftmaxCrossEntropyShapeErrors) {
  EXPECT_EQ(RunError("sparse_softmax_cross_entropy",
                     {F32({1, 2, 3, 4}, {2, 2}), I32({0, 1, 1}, {3})})
                .message(),
            "sparse_softmax_cross_entropy: labels i32[3] must have the shape "
            "of logits f32[2,2] without its last dimension, [2]");
  EXPECT_EQ(RunError("sparse_softmax_cross_entropy",
                     {F32({1, 2, 3, 4}, {2, 2}), F32({0, 1}, {2})})
                .message(),
            "sparse_softmax_cross_entropy: labels must be i32 or i64, got "
            "f32[2]");
}

TEST(NnTest, SigmoidCrossEntropy) {
  Tensor x = F32({-100, -1, 0, 2, 100}, {5});
  Tensor z = F32({0, 1, 0.5, 0, 1}, {5});
  ExpectTensor(
      Run1("sigmoid_cross_entropy", {x, z}), DType::kF32, {5},
      {0.0, 1.3132616875182228, 0.6931471805599453, 2.1269280110429727, 0.0},
      1e-6);
  // exp(-x) for x = -1000 would overflow in the naive formula.
  ExpectTensor(Run1("sigmoid_cross_entropy",
                    {F64({-1000, 1000}, {2}), F64({1, 0}, {2})}),
               DType::kF64, {2}, {1000, 1000}, 1e-12);
}

// ---- bias_add, l2_loss ------------------------------------------------------

TEST(NnTest, BiasAdd) {
  ExpectTensor(Run1("bias_add",
                    {F32({1, 2, 3, 4, 5, 6}, {2, 3}), F32({10, 20, 30}, {3})}),
               DType::kF32, {2, 3}, {11, 22, 33, 14, 25, 36}, 0);
  ExpectTensor(
      Run1("bias_add", {I32({1, 2, 3, 4}, {2, 1, 2}), I32({-1, 1}, {2})}),
      DType::kI32, {2, 1, 2}, {0, 3, 2, 5}, 0);
  EXPECT_EQ(
      RunError("bias_add", {F32({1, 2, 3, 4}, {2, 2}), F32({1, 2, 3}, {3})})
          .message(),
      "bias_add: bias f32[3] does not match the last dimension of "
      "f32[2,2]");
}

TEST(NnTest, L2Loss) {
  ExpectTensor(Run1("l2_loss", {F32({1, 2, 3}, {3})}), DType::kF32, {}, {7}, 0);
  ExpectTensor(Run1("l2_loss", {F64({0.5, -1.5, 2, 1}, {2, 2})}), DType::kF64,
               {}, {3.75}, 0);
  std::vector<float> big(100000, 0.5f);
  ExpectTensor(Run1("l2_loss", {F32(big, {100000})}), DType::kF32, {}, {12500},
               1e-6);
}

// ---- conv2d
// -------------------------------------------------------------------

using ::runnel::testing::ConvAttrs;
using ::runnel::testing::ConvCase;

// TensorFlow's conv2d, written out: the reference for the kernels.
std::vector<double> NaiveConv(const ConvCase& k, const std::vector<float>& x,
                              const std::vector<float>& f, int64_t* oh,
                              int64_t* ow) {
  const int64_t eh = (k.kh - 1) * k.dh + 1, ew = (k.kw - 1) * k.dw + 1;
  int64_t pt = 0, pl = 0;
  if (k.same) {
    *oh = (k.h + k.sh - 1) / k.sh;
    *ow = (k.w + k.sw - 1) / k.sw;
    pt = std::max<int64_t>(0, (*oh - 1) * k.sh + eh - k.h) / 2;
    pl = std::max<int64_t>(0, (*ow - 1) * k.sw + ew - k.w) / 2;
  } else {
    *oh = (k.h - eh) / k.sh + 1;
    *ow = (k.w - ew) / k.sw + 1;
  }
  std::vector<double> y(k.n * *oh * *ow * k.o, 0.0);
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t i = 0; i < *oh; ++i)
      for (int64_t j = 0; j < *ow; ++j)
        for (int64_t o = 0; o < k.o; ++o) {
          double sum = 0;
          for (int64_t u = 0; u < k.kh; ++u)
            for (int64_t v = 0; v < k.kw; ++v)
              for (int64_t c = 0; c < k.c; ++c) {
                const int64_t ih = i * k.sh - pt + u * k.dh;
                const int64_t iw = j * k.sw - pl + v * k.dw;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                sum += double(x[((b * k.h + ih) * k.w + iw) * k.c + c]) *
                       f[((u * k.kw + v) * k.c + c) * k.o + o];
              }
          y[((b * *oh + i) * *ow + j) * k.o + o] = sum;
        }
  return y;
}

TEST(NnTest, Conv2DHandValues) {
  Tensor x = F32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  Tensor f = F32({1, 1, 1, 1}, {2, 2, 1, 1});
  ExpectTensor(Run1("conv2d", {x, f}, {{"padding", std::string("valid")}}),
               DType::kF32, {1, 2, 2, 1}, {12, 16, 24, 28}, 0);
  // "same" pads one row and column, at the bottom and right.
  ExpectTensor(Run1("conv2d", {x, f}), DType::kF32, {1, 3, 3, 1},
               {12, 16, 9, 24, 28, 15, 15, 17, 9}, 0);
}

TEST(NnTest, Conv2DAgainstNaive) {
  const std::vector<ConvCase> cases = {
      {2, 9, 11, 3, 3, 3, 5, 2, 2, 1, 1, true},
      {2, 9, 11, 3, 3, 3, 5, 2, 2, 1, 1, false},
      {1, 8, 8, 4, 5, 5, 17, 1, 1, 1, 1, true},
      {3, 7, 6, 2, 2, 3, 4, 1, 2, 1, 1, false},
      {1, 10, 10, 3, 3, 3, 6, 1, 1, 2, 2, true},    // dilated
      {2, 6, 5, 7, 1, 1, 9, 1, 1, 1, 1, true},      // pointwise
      {4, 12, 12, 1, 5, 5, 32, 1, 1, 1, 1, true},   // first layer of a CNN
      {1, 13, 13, 40, 3, 3, 20, 2, 2, 1, 1, true},  // deep: k > 256
      {1, 5, 20, 3, 3, 3, 4, 1, 2, 1, 1, true},     // wide rows, stride 2
      {2, 6, 16, 2, 3, 3, 3, 2, 1, 1, 2, false},    // dilated along w
      {1, 6, 14, 30, 3, 3, 8, 1, 1, 1, 1, true},    // slices split a tap
      {11, 5, 5, 4, 3, 3, 6, 1, 1, 1, 1, true},     // batch: uneven pieces
      {9, 8, 7, 3, 4, 2, 5, 3, 2, 1, 1, false},     // uneven, strided
  };
  for (const ConvCase& k : cases) {
    std::vector<float> x = NnPattern(k.n * k.h * k.w * k.c, 1);
    std::vector<float> f = NnPattern(k.kh * k.kw * k.c * k.o, 2);
    int64_t oh, ow;
    std::vector<double> want = NaiveConv(k, x, f, &oh, &ow);
    SCOPED_TRACE(StrCat("x [", k.n, ",", k.h, ",", k.w, ",", k.c, "] f [", k.kh,
                        ",", k.kw, ",", k.o, "] stride ", k.sh, "x", k.sw,
                        " dilation ", k.dh, " ", k.same ? "same" : "valid"));
    Tensor y =
        Run1("conv2d",
             {F32(x, {k.n, k.h, k.w, k.c}), F32(f, {k.kh, k.kw, k.c, k.o})},
             ConvAttrs(k));
    ExpectTensor(y, DType::kF32, {k.n, oh, ow, k.o}, want, 1e-4);
    // f64 takes the direct path.
    std::vector<double> xd(x.begin(), x.end()), fd(f.begin(), f.end());
    Tensor yd =
        Run1("conv2d",
             {F64(xd, {k.n, k.h, k.w, k.c}), F64(fd, {k.kh, k.kw, k.c, k.o})},
             ConvAttrs(k));
    ExpectTensor(yd, DType::kF64, {k.n, oh, ow, k.o}, want, 1e-10);
  }
}

TEST(NnTest, Conv2DBFloat16) {
  // Small integers are exact in bf16, and so are these sums.
  std::vector<BFloat16> x, f;
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f}) {
    x.push_back(FloatToBFloat16(v));
  }
  for (int i = 0; i < 4; ++i) f.push_back(FloatToBFloat16(1));
  ExpectTensor(Run1("conv2d",
                    {Tensor::FromVector(x, {1, 3, 3, 1}),
                     Tensor::FromVector(f, {2, 2, 1, 1})},
                    {{"padding", std::string("valid")}}),
               DType::kBF16, {1, 2, 2, 1}, {12, 16, 24, 28}, 0);
}

TEST(NnTest, Conv2DStridesAsTensorFlowList) {
  Tensor x = F32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  Tensor f = F32({1}, {1, 1, 1, 1});
  ExpectTensor(
      Run1("conv2d", {x, f}, {{"strides", std::vector<int64_t>{1, 2, 2, 1}}}),
      DType::kF32, {1, 2, 2, 1}, {1, 3, 7, 9}, 0);
}

TEST(NnTest, Conv2DShapeErrors) {
  Tensor x = F32(std::vector<float>(2 * 5 * 5 * 3, 1), {2, 5, 5, 3});
  Tensor f = F32(std::vector<float>(3 * 3 * 2 * 4, 1), {3, 3, 2, 4});
  EXPECT_EQ(RunError("conv2d", {x, f}).message(),
            "conv2d: channels differ: the input f32[2,5,5,3] has 3 but the "
            "filters f32[3,3,2,4] expect 2");
  Tensor g = F32(std::vector<float>(3 * 3 * 3 * 4, 1), {3, 3, 3, 4});
  EXPECT_EQ(
      RunError("conv2d", {x, g}, {{"padding", std::string("full")}}).message(),
      "conv2d: padding must be \"same\" or \"valid\", got \"full\"");
  Tensor big = F32(std::vector<float>(7 * 7 * 3 * 1, 1), {7, 7, 3, 1});
  EXPECT_EQ(
      RunError("conv2d", {x, big}, {{"padding", std::string("valid")}})
          .message(),
      "conv2d: the filter of effective size 7 is larger than the input (5) "
      "with valid padding");
  EXPECT_EQ(RunError("conv2d", {F32({1, 2, 3}, {3}), g}).message(),
            "conv2d: the input (NHWC) must have rank 4, got f32[3]");
  EXPECT_EQ(RunError("conv2d", {x, g}, {{"strides", int64_t{0}}}).message(),
            "conv2d: attribute 'strides' must be positive, got [0, 0]");
}

TEST(NnTest, Conv2DShapeFunctionPartial) {
  const OpDef* def = OpRegistry::Global().Find("conv2d");
  ASSERT_NE(def, nullptr);
  AttrMap attrs = {{"strides", int64_t{2}}};
  absl::StatusOr<std::vector<TensorSpec>> out =
      InferOutputs(*def, attrs,
                   {TensorSpec{DType::kF32, Shape{kUnknownDim, 28, 27, 1}},
                    TensorSpec{DType::kF32, Shape{5, 5, 1, 32}}},
                   {nullptr, nullptr});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToString(), "f32[?,14,14,32]");
}

// ---- pooling
// -------------------------------------------------------------------

TEST(NnTest, MaxPoolValid) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = (i * 7) % 16;
  // x = [[0, 7, 14, 5], [12, 3, 10, 1], [8, 15, 6, 13], [4, 11, 2, 9]]
  ExpectTensor(Run1("max_pool", {F32(x, {1, 4, 4, 1})}, {{"size", int64_t{2}}}),
               DType::kF32, {1, 2, 2, 1}, {12, 14, 15, 13}, 0);
  // 3x3 windows moved by 1.
  ExpectTensor(Run1("max_pool", {F32(x, {1, 4, 4, 1})},
                    {{"size", int64_t{3}}, {"strides", int64_t{1}}}),
               DType::kF32, {1, 2, 2, 1}, {15, 15, 15, 15}, 0);
}

TEST(NnTest, PoolSamePadding) {
  Tensor x = F32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  AttrMap attrs = {{"size", int64_t{2}}, {"padding", std::string("same")}};
  ExpectTensor(Run1("max_pool", {x}, attrs), DType::kF32, {1, 2, 2, 1},
               {5, 6, 8, 9}, 0);
  // Windows hanging over the edge average only their elements inside.
  ExpectTensor(Run1("avg_pool", {x}, attrs), DType::kF32, {1, 2, 2, 1},
               {3, 4.5, 7.5, 9}, 0);
}

// Dilated windows (issue 34; PyTorch's MaxPool2d(dilation), ONNX's
// MaxPool dilations): a 2x2 window with taps 2 apart spans 3x3.
TEST(NnTest, DilatedPooling) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = (i * 7) % 16;
  // x = [[0, 7, 14, 5], [12, 3, 10, 1], [8, 15, 6, 13], [4, 11, 2, 9]]
  const AttrMap attrs = {
      {"size", int64_t{2}}, {"strides", int64_t{1}}, {"dilations", int64_t{2}}};
  // Window (0, 0) reads x[0, 0], x[0, 2], x[2, 0], x[2, 2]: 0, 14, 8, 6.
  ExpectTensor(Run1("max_pool", {F32(x, {1, 4, 4, 1})}, attrs), DType::kF32,
               {1, 2, 2, 1}, {14, 15, 12, 11}, 0);
  ExpectTensor(Run1("avg_pool", {F32(x, {1, 4, 4, 1})}, attrs), DType::kF32,
               {1, 2, 2, 1}, {7, 10, 7, 6}, 0);
  // "same": 2 outputs a row of 3, the excess of the span 3 (2) split; the
  // taps over the edge count for nothing (nor in the mean).
  const AttrMap same = {{"size", int64_t{2}},
                        {"strides", int64_t{2}},
                        {"dilations", int64_t{2}},
                        {"padding", std::string("same")}};
  Tensor y = F32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  // Window (0, 0) starts at -1: taps -1 and 1 along each axis, so x[1, 1].
  ExpectTensor(Run1("avg_pool", {y}, same), DType::kF32, {1, 2, 2, 1},
               {5, 5, 5, 5}, 0);
}

// max_pool_with_argmax: the maxima and their positions in the image,
// (h * width + w) * channels + c; a tie goes to the first tap.
TEST(NnTest, MaxPoolWithArgmax) {
  auto Run = [](const std::string& op, std::vector<Tensor> in, AttrMap attrs) {
    absl::StatusOr<std::vector<Tensor>> out =
        testing::Eager().Execute(op, std::move(in), std::move(attrs));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : std::vector<Tensor>();
  };
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = (i * 7) % 16;
  // x = [[0, 7, 14, 5], [12, 3, 10, 1], [8, 15, 6, 13], [4, 11, 2, 9]]
  std::vector<Tensor> out = Run("max_pool_with_argmax", {F32(x, {1, 4, 4, 1})},
                                {{"size", int64_t{2}}});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {1, 2, 2, 1}, {12, 14, 15, 13}, 0);
  ExpectTensor(out[1], DType::kI64, {1, 2, 2, 1}, {4, 2, 9, 11}, 0);
  // Two channels, a tie in channel 0 (first tap), dilated taps.
  out =
      Run("max_pool_with_argmax", {F32({5, 1, 5, 2, 0, 3, 5, 4}, {1, 2, 2, 2})},
          {{"size", int64_t{2}}});
  ExpectTensor(out[0], DType::kF32, {1, 1, 1, 2}, {5, 4}, 0);
  ExpectTensor(out[1], DType::kI64, {1, 1, 1, 2}, {0, 7}, 0);
}

// resize (issue 34): PyTorch's interpolate of [[1, 2], [3, 4]] to 4x4,
// bilinear with align_corners = False (TensorFlow 2's half-pixel), and
// its "nearest"; corner-aligned to 3x3; and a downsampling.
TEST(NnTest, Resize) {
  const Tensor x = F32({1, 2, 3, 4}, {1, 2, 2, 1});
  const std::vector<int64_t> four = {4, 4};
  ExpectTensor(Run1("resize", {x}, {{"size", four}}), DType::kF32, {1, 4, 4, 1},
               {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3,
                3.25, 3.75, 4},
               1e-6);
  for (const char* coordinates : {"half_pixel", "asymmetric"}) {
    ExpectTensor(Run1("resize", {x},
                      {{"size", four},
                       {"method", std::string("nearest")},
                       {"coordinates", std::string(coordinates)}}),
                 DType::kF32, {1, 4, 4, 1},
                 {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 0);
  }
  ExpectTensor(Run1("resize", {x},
                    {{"size", std::vector<int64_t>{3, 3}},
                     {"coordinates", std::string("align_corners")}}),
               DType::kF32, {1, 3, 3, 1}, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4},
               1e-6);
  // 4 columns to 2, half-pixel: positions 0.5 and 2.5, the means of pairs.
  ExpectTensor(Run1("resize", {F32({0, 2, 4, 6}, {1, 1, 4, 1})},
                    {{"size", std::vector<int64_t>{1, 2}}}),
               DType::kF32, {1, 1, 2, 1}, {1, 5}, 1e-6);
}

// The plan read backwards (what the GPU's resize_grad gathers by) gives
// the CPU kernel's gradient.
TEST(NnTest, ResizeBackPlanIsTheGradient) {
  for (const char* coordinates :
       {"half_pixel", "align_corners", "asymmetric"}) {
    for (int64_t out : {2, 5, 11}) {
      ResizeAttrs a;
      a.coordinates = coordinates;
      a.out_h = 1;
      a.out_w = out;
      const int64_t in = 4;
      std::vector<float> dy(out);
      for (int64_t o = 0; o < out; ++o) dy[o] = 0.5f + o;
      const Tensor dx =
          Run1("resize_grad",
               {F32(dy, {1, 1, out, 1}), F32({0, 0, 0, 0}, {1, 1, in, 1})},
               {{"size", std::vector<int64_t>{1, out}},
                {"coordinates", std::string(coordinates)}});
      const ResizeBackAxis back =
          PlanResizeBack(PlanResizeAxis(in, out, a), in);
      for (int64_t i = 0; i < in; ++i) {
        float sum = 0;
        for (int64_t k = back.starts[i]; k < back.starts[i + 1]; ++k) {
          sum += back.w[k] * dy[back.out[k]];
        }
        EXPECT_NEAR(dx.data<float>()[i], sum, 1e-5)
            << coordinates << " " << out << " at " << i;
      }
    }
  }
}

TEST(NnTest, AvgPoolValidChannels) {
  // Two channels pooled independently, 2x2 windows, stride [1, 2].
  std::vector<float> x;
  for (int i = 0; i < 12; ++i) x.push_back(i);  // [1, 2, 3, 2]
  ExpectTensor(Run1("avg_pool", {F32(x, {1, 2, 3, 2})},
                    {{"size", std::vector<int64_t>{2, 2}},
                     {"strides", std::vector<int64_t>{1, 2}}}),
               DType::kF32, {1, 1, 1, 2}, {4, 5}, 0);
  ExpectTensor(
      Run1("max_pool", {I32({3, -1, 4, 1, -5, 9, 2, -6}, {2, 2, 2, 1})},
           {{"size", int64_t{2}}}),
      DType::kI32, {2, 1, 1, 1}, {4, 9}, 0);
}

TEST(NnTest, PoolAgainstNaiveSameStride) {
  const int64_t n = 2, h = 7, w = 8, c = 3, k = 3, s = 2;
  std::vector<float> x = NnPattern(n * h * w * c, 3);
  const int64_t oh = (h + s - 1) / s, ow = (w + s - 1) / s;
  const int64_t pt = std::max<int64_t>(0, (oh - 1) * s + k - h) / 2;
  const int64_t pl = std::max<int64_t>(0, (ow - 1) * s + k - w) / 2;
  std::vector<double> want_max, want_avg;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t ch = 0; ch < c; ++ch) {
          double mx = -1e30, sum = 0;
          int count = 0;
          for (int64_t u = 0; u < k; ++u)
            for (int64_t v = 0; v < k; ++v) {
              const int64_t ih = i * s - pt + u, iw = j * s - pl + v;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              const double val = x[((b * h + ih) * w + iw) * c + ch];
              mx = std::max(mx, val);
              sum += val;
              ++count;
            }
          want_max.push_back(mx);
          want_avg.push_back(sum / count);
        }
  AttrMap attrs = {{"size", int64_t{k}},
                   {"strides", int64_t{s}},
                   {"padding", std::string("same")}};
  ExpectTensor(Run1("max_pool", {F32(x, {n, h, w, c})}, attrs), DType::kF32,
               {n, oh, ow, c}, want_max, 0);
  ExpectTensor(Run1("avg_pool", {F32(x, {n, h, w, c})}, attrs), DType::kF32,
               {n, oh, ow, c}, want_avg, 1e-6);
}

// ---- the 3-D ops (issue 34)
// ---------------------------------------------------

// One spatial axis of a 3-D window op: input size, window, stride,
// dilation; where window o starts (TensorFlow's "same" or "valid").
struct Axis3 {
  int64_t in, k, stride, dil;
  int64_t out = 0, pad = 0;
  void Place(bool same) {
    const int64_t span = (k - 1) * dil + 1;
    out = same ? (in + stride - 1) / stride : (in - span) / stride + 1;
    pad = same ? std::max<int64_t>(0, (out - 1) * stride + span - in) / 2 : 0;
  }
};

// conv3d written out (NDHWC x, DHWIO f), in f64: the reference.
std::vector<double> NaiveConv3D(int64_t n, Axis3 a[3], int64_t c, int64_t o,
                                const std::vector<float>& x,
                                const std::vector<float>& f) {
  std::vector<double> y;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < a[0].out; ++i)
      for (int64_t j = 0; j < a[1].out; ++j)
        for (int64_t l = 0; l < a[2].out; ++l)
          for (int64_t oc = 0; oc < o; ++oc) {
            double sum = 0;
            for (int64_t u = 0; u < a[0].k; ++u)
              for (int64_t v = 0; v < a[1].k; ++v)
                for (int64_t t = 0; t < a[2].k; ++t) {
                  const int64_t id = i * a[0].stride - a[0].pad + u * a[0].dil;
                  const int64_t ih = j * a[1].stride - a[1].pad + v * a[1].dil;
                  const int64_t iw = l * a[2].stride - a[2].pad + t * a[2].dil;
                  if (id < 0 || id >= a[0].in || ih < 0 || ih >= a[1].in ||
                      iw < 0 || iw >= a[2].in)
                    continue;
                  for (int64_t ch = 0; ch < c; ++ch) {
                    sum +=
                        double(
                            x[(((b * a[0].in + id) * a[1].in + ih) * a[2].in +
                               iw) *
                                  c +
                              ch]) *
                        f[(((u * a[1].k + v) * a[2].k + t) * c + ch) * o + oc];
                  }
                }
            y.push_back(sum);
          }
  return y;
}

TEST(NnTest, Conv3DHandValues) {
  // A 2x2x2 image of 1..8 and a 2x2x2 filter of ones: "valid" sums it all.
  Tensor x = F32({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2, 1});
  Tensor f = F32({1, 1, 1, 1, 1, 1, 1, 1}, {2, 2, 2, 1, 1});
  ExpectTensor(Run1("conv3d", {x, f}, {{"padding", std::string("valid")}}),
               DType::kF32, {1, 1, 1, 1, 1}, {36}, 0);
  // "same" pads one plane, row and column at the end: each output sums the
  // elements at or after it.
  ExpectTensor(Run1("conv3d", {x, f}), DType::kF32, {1, 2, 2, 2, 1},
               {36, 20, 22, 12, 26, 14, 15, 8}, 0);
}

TEST(NnTest, Conv3DAgainstNaive) {
  struct Case {
    int64_t n, d, h, w, c, kd, kh, kw, o, sd, sh, sw, dd, dh, dw;
    bool same;
  };
  const std::vector<Case> cases = {
      {2, 5, 6, 7, 3, 3, 3, 3, 4, 1, 1, 1, 1, 1, 1, true},
      {2, 5, 6, 7, 3, 3, 3, 3, 4, 1, 1, 1, 1, 1, 1, false},
      {1, 7, 6, 5, 2, 3, 2, 3, 5, 2, 1, 2, 1, 1, 1, true},   // strided
      {1, 8, 7, 6, 2, 2, 2, 2, 3, 1, 2, 1, 3, 1, 2, true},   // dilated
      {3, 4, 5, 4, 1, 1, 1, 1, 6, 1, 1, 1, 1, 1, 1, false},  // pointwise
      {11, 3, 3, 3, 2, 2, 3, 2, 3, 1, 1, 1, 1, 1, 1, true},  // uneven pieces
  };
  for (const Case& k : cases) {
    Axis3 a[3] = {{k.d, k.kd, k.sd, k.dd},
                  {k.h, k.kh, k.sh, k.dh},
                  {k.w, k.kw, k.sw, k.dw}};
    for (Axis3& axis : a) axis.Place(k.same);
    std::vector<float> x = NnPattern(k.n * k.d * k.h * k.w * k.c, 5);
    std::vector<float> f = NnPattern(k.kd * k.kh * k.kw * k.c * k.o, 6);
    const std::vector<double> want = NaiveConv3D(k.n, a, k.c, k.o, x, f);
    SCOPED_TRACE(StrCat("x [", k.n, ",", k.d, ",", k.h, ",", k.w, ",", k.c,
                        "] f [", k.kd, ",", k.kh, ",", k.kw, ",", k.o, "] ",
                        k.same ? "same" : "valid"));
    const AttrMap attrs = {
        {"strides", std::vector<int64_t>{k.sd, k.sh, k.sw}},
        {"dilations", std::vector<int64_t>{k.dd, k.dh, k.dw}},
        {"padding", std::string(k.same ? "same" : "valid")}};
    const Shape ys{k.n, a[0].out, a[1].out, a[2].out, k.o};
    const Shape xs{k.n, k.d, k.h, k.w, k.c}, fs{k.kd, k.kh, k.kw, k.c, k.o};
    ExpectTensor(Run1("conv3d", {F32(x, xs), F32(f, fs)}, attrs), DType::kF32,
                 ys, want, 1e-4);
    // f64 takes the direct path.
    std::vector<double> xd(x.begin(), x.end()), fd(f.begin(), f.end());
    ExpectTensor(Run1("conv3d", {F64(xd, xs), F64(fd, fs)}, attrs), DType::kF64,
                 ys, want, 1e-10);
  }
}

// The 3-D pools against loops over their windows, every dtype path: f32,
// f64 and (max) i32.
TEST(NnTest, Pool3DAgainstNaive) {
  for (bool same : {true, false}) {
    const int64_t n = 2, c = 3;
    Axis3 a[3] = {{5, 2, 2, 1}, {6, 3, 2, 1}, {7, 2, 1, 2}};
    for (Axis3& axis : a) axis.Place(same);
    std::vector<float> x = NnPattern(n * a[0].in * a[1].in * a[2].in * c, 7);
    std::vector<double> want_max, want_avg;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < a[0].out; ++i)
        for (int64_t j = 0; j < a[1].out; ++j)
          for (int64_t l = 0; l < a[2].out; ++l)
            for (int64_t ch = 0; ch < c; ++ch) {
              double mx = -1e30, sum = 0;
              int count = 0;
              for (int64_t u = 0; u < a[0].k; ++u)
                for (int64_t v = 0; v < a[1].k; ++v)
                  for (int64_t t = 0; t < a[2].k; ++t) {
                    const int64_t id =
                                      i * a[0].stride - a[0].pad + u * a[0].dil,
                                  ih =
                                      j * a[1].stride - a[1].pad + v * a[1].dil,
                                  iw =
                                      l * a[2].stride - a[2].pad + t * a[2].dil;
                    if (id < 0 || id >= a[0].in || ih < 0 || ih >= a[1].in ||
                        iw < 0 || iw >= a[2].in)
                      continue;
                    const double val =
                        x[(((b * a[0].in + id) * a[1].in + ih) * a[2].in + iw) *
                              c +
                          ch];
                    mx = std::max(mx, val);
                    sum += val;
                    ++count;
                  }
              want_max.push_back(mx);
              want_avg.push_back(sum / count);
            }
    SCOPED_TRACE(same ? "same" : "valid");
    const AttrMap attrs = {{"size", std::vector<int64_t>{2, 3, 2}},
                           {"strides", std::vector<int64_t>{2, 2, 1}},
                           {"dilations", std::vector<int64_t>{1, 1, 2}},
                           {"padding", std::string(same ? "same" : "valid")}};
    const Shape xs{n, a[0].in, a[1].in, a[2].in, c};
    const Shape ys{n, a[0].out, a[1].out, a[2].out, c};
    ExpectTensor(Run1("max_pool3d", {F32(x, xs)}, attrs), DType::kF32, ys,
                 want_max, 0);
    ExpectTensor(Run1("avg_pool3d", {F32(x, xs)}, attrs), DType::kF32, ys,
                 want_avg, 1e-6);
    std::vector<double> xd(x.begin(), x.end());
    ExpectTensor(Run1("avg_pool3d", {F64(xd, xs)}, attrs), DType::kF64, ys,
                 want_avg, 1e-12);
    std::vector<int32_t> xi;
    std::vector<double> want_i;
    for (float v : x) xi.push_back(static_cast<int32_t>(v * 1000));
    Tensor yi = Run1("max_pool3d", {I32(xi, xs)}, attrs);
    Tensor yf =
        Run1("max_pool3d", {F32(std::vector<float>(xi.begin(), xi.end()), xs)},
             attrs);
    for (int64_t e = 0; e < yf.num_elements(); ++e) {
      want_i.push_back(yf.data<float>()[e]);
    }
    ExpectTensor(yi, DType::kI32, ys, want_i, 0);
  }
}

TEST(NnTest, Conv3DAndPool3DErrors) {
  Tensor x4 = F32({1, 2, 3, 4}, {1, 2, 2, 1});
  EXPECT_EQ(RunError("conv3d", {x4, F32({1}, {1, 1, 1, 1})}).message(),
            "conv3d: the input (NDHWC) must have rank 5, got f32[1,2,2,1]");
  EXPECT_EQ(RunError("max_pool3d", {x4}, {{"size", int64_t{2}}}).message(),
            "max_pool3d: the input (NDHWC) must have rank 5, got f32[1,2,2,1]");
  Tensor x5 = F32({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2, 1});
  EXPECT_EQ(RunError("avg_pool3d", {x5}, {{"size", std::vector<int64_t>{2, 2}}})
                .message(),
            "avg_pool3d: attribute 'size' must be an int or [d, h, w], got "
            "[2, 2]");
  EXPECT_EQ(
      RunError("max_pool3d", {x5},
               {{"size", int64_t{2}},
                {"strides", std::vector<int64_t>{2, 1, 1, 1, 1}}})
          .message(),
      "max_pool3d: attribute 'strides' must be 1 for the batch and the "
      "channels, as in [1, d, h, w, 1] (NDHWC), got [2, 1, 1, 1, 1]; windows "
      "move along depth, height and width only");
}

TEST(NnTest, PoolErrors) {
  Tensor x = F32({1, 2, 3, 4}, {1, 2, 2, 1});
  EXPECT_EQ(RunError("max_pool", {x}).message(),
            "max_pool: missing attribute 'size'");
  EXPECT_EQ(RunError("avg_pool", {x},
                     {{"size", int64_t{2}}, {"padding", std::string("SAME!")}})
                .message(),
            "avg_pool: padding must be \"same\" or \"valid\", got \"SAME!\"");
  EXPECT_EQ(RunError("max_pool", {x}, {{"size", int64_t{3}}}).message(),
            "max_pool: the window of effective size 3 is larger than the "
            "input (2) with valid padding");
  EXPECT_EQ(RunError("avg_pool", {I32({1, 2, 3, 4}, {1, 2, 2, 1})},
                     {{"size", int64_t{2}}})
                .message(),
            "avg_pool: expected a floating-point tensor, got i32[1,2,2,1]");
}

}  // namespace
}  // namespace runnel
