// The GPU reductions (kernels/cuda/reduce*), the softmax family and the
// losses (nn*), the activation gradients and the 16-bit floats of the
// element-wise template (cwise*) against their CPU kernels: odd shapes
// (rank 0, empty, every axis, no axis, permuted axes, long reductions cut
// into chunks), NaN and the infinities, every dtype each is registered
// for, and the gradients of the differentiable ones. ctest label `gpu`;
// skipped without a GPU (docs/gpu.md).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "base/strings.h"
#include "common_runtime/session.h"
#include "tests/gpu/gpu_compare.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

const std::vector<DType> kNumbers = {DType::kF32, DType::kF64, DType::kI32,
                                     DType::kI64, DType::kF16, DType::kBF16};
const std::vector<DType> kFloats = {DType::kF32, DType::kF64, DType::kF16,
                                    DType::kBF16};

bool Differentiable(DType d) { return d == DType::kF32 || d == DType::kF64; }

struct Axes {
  Shape shape;
  AttrMap attrs;
};

AttrMap Axis(std::vector<int64_t> axes, bool keepdims = false) {
  return {{"axis", std::move(axes)}, {"keepdims", keepdims}};
}

// Reductions of every kind of layout (reduce_plan.h): rows, columns, the
// middle, several runs (permuted first), all axes, none, rank 0, size-1
// dims.
const std::vector<Axes> kLayouts = {
    {Shape{}, {}},
    {Shape{7, 13}, Axis({1})},
    {Shape{7, 13}, Axis({0}, true)},
    {Shape{7, 13}, {}},
    {Shape{7, 13}, Axis({})},
    {Shape{4, 5, 6}, Axis({1})},
    {Shape{2, 3, 4, 5}, Axis({0, 2}, true)},
    {Shape{2, 3, 4, 5}, Axis({-1, 1})},
    {Shape{3, 1, 70}, Axis({0, 2})},
    {Shape{5, 200}, Axis({1})},  // a block per row
};

// Long reductions, cut into chunks, and large outputs.
const std::vector<Axes> kLong = {
    {Shape{(1 << 20) + 3}, {}},
    {Shape{1 << 15, 3}, Axis({0})},
    {Shape{3, 1 << 14}, Axis({1})},
    {Shape{1 << 12, 300}, Axis({1})},
};

TEST(GpuNnTest, Reductions) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"sum", "mean", "prod", "max", "min"}) {
    const bool prod = std::string(op) == "prod";
    for (DType d : kNumbers) {
      for (const Axes& a : kLayouts) {
        Compare(op, {Random(d, a.shape, 21)}, a.attrs,
                Differentiable(d) && a.shape.num_elements() < 1000,
                /*long_sum=*/true);
      }
      for (const Axes& a : kLong) {
        // Long sums without cancellation (f16 and bf16 accumulate in f32,
        // and round once); long products: ProductsNearOne.
        if (!prod) {
          Compare(op, {Random(d, a.shape, 22, 0, 1)}, a.attrs, false,
                  /*long_sum=*/true);
        }
      }
    }
  }
}

// Products of 2^20 values near 1, which neither overflow nor vanish. In
// f32 their rounding depends on the order of the multiplications far more
// than a sum's does: on an H100 the GPU's tree of products gave 0.383403
// and the CPU's vectorized loop 0.383618, where the exact (f64) product of
// the same f32 values is 0.383646 (a NumPy model of the GPU's order gives
// its 0.383403 too). So f32 is compared within 2e-3 here, and
// LongProductsMissNoElement checks every element exactly.
TEST(GpuNnTest, ProductsNearOne) {
  SKIP_WITHOUT_GPU();
  for (DType d : kNumbers) {
    for (const Axes& a : kLong) {
      const std::vector<Tensor> in = {Random(d, a.shape, 22, 0.999, 1.001)};
      const Result cpu = RunOp("prod", in, a.attrs, "", false);
      const Result gpu = RunOp("prod", in, a.attrs, "/gpu:0", false);
      ASSERT_EQ(cpu.values.size(), 1u);
      ASSERT_EQ(gpu.values.size(), 1u);
      const Tolerance tol =
          d == DType::kF32 ? Tolerance{2e-3, 0} : ToleranceOf(d, true);
      ExpectClose(gpu.values[0], cpu.values[0], tol,
                  StrCat("prod(", DTypeName(d), a.shape.ToString(), ")"));
    }
  }
}

// Powers of two multiply exactly in any order, so a product of ones with a
// 2 or a 0.5 at the seams of the GPU's chunks (multiples of 4096 and 4097,
// the last element) shows exactly any element dropped or counted twice.
TEST(GpuNnTest, LongProductsMissNoElement) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64}) {
    for (const Axes& a : kLong) {
      const int64_t n = a.shape.num_elements();
      std::vector<double> v(n, 1.0);
      for (int64_t i = 0; i < n; ++i) {
        if (i % 4097 == 0) v[i] = 0.5;
        if (i % 4096 == 0 || i == n - 1) v[i] = 2.0;
      }
      const Tensor x = testing::Run1("cast", {Tensor::FromVector(v, a.shape)},
                                     {{"dtype", d}});
      const std::vector<Tensor> in = {x};
      const Result cpu = RunOp("prod", in, a.attrs, "", false);
      const Result gpu = RunOp("prod", in, a.attrs, "/gpu:0", false);
      ASSERT_EQ(cpu.values.size(), 1u);
      ASSERT_EQ(gpu.values.size(), 1u);
      ExpectClose(gpu.values[0], cpu.values[0], Tolerance{0, 0},
                  StrCat("prod of powers of two (", DTypeName(d),
                         a.shape.ToString(), ")"));
    }
  }
}

TEST(GpuNnTest, EmptyReductionsGiveTheIdentity) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"sum", "prod", "mean"}) {
    for (DType d : kFloats) {
      Compare(op, {Random(d, Shape{4, 0}, 23)}, Axis({1}));  // 0, 1, NaN
      Compare(op, {Random(d, Shape{0, 4}, 23)}, Axis({1}));  // no outputs
      Compare(op, {Random(d, Shape{0}, 23)}, {});
    }
  }
  Compare("sum", {Random(DType::kI32, Shape{3, 0, 2}, 24)}, Axis({1}));
  Compare("prod", {Random(DType::kI64, Shape{3, 0}, 24)}, Axis({1}));
  Compare("logsumexp", {Random(DType::kF32, Shape{3, 0}, 24)}, Axis({1}));
  Compare("all", {Random(DType::kBool, Shape{2, 0}, 24)}, Axis({1}));
  Compare("any", {Random(DType::kBool, Shape{2, 0}, 24)}, Axis({1}));
  Compare("l2_loss", {Random(DType::kF32, Shape{0, 3}, 24)});
}

TEST(GpuNnTest, ArgReductions) {
  SKIP_WITHOUT_GPU();
  const std::vector<Axes> cases = {
      {Shape{7, 13}, Axis({1})},      {Shape{7, 13}, Axis({0})},
      {Shape{4, 5, 6}, Axis({1})},    {Shape{7, 13}, {}},
      {Shape{5, 200}, Axis({-1})},    {Shape{}, {}},
      {Shape{(1 << 20) + 3}, {}},     {Shape{1 << 15, 3}, Axis({0})},
      {Shape{3, 1 << 14}, Axis({1})},
  };
  for (const char* op : {"argmax", "argmin"}) {
    for (DType d : kNumbers) {
      for (const Axes& a : cases)
        Compare(op, {Random(d, a.shape, 25)}, a.attrs);
    }
    // Ties: the first position wins, across chunks too.
    Compare(op, {Tensor::Zeros(DType::kF32, Shape{1 << 20})});
    Compare(op, {Tensor::Zeros(DType::kI32, Shape{1 << 15, 3})}, Axis({0}));
  }
}

TEST(GpuNnTest, LogicalReductions) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"all", "any"}) {
    for (const Axes& a : kLayouts) {
      Compare(op, {Random(DType::kBool, a.shape, 26)}, a.attrs);
    }
    Compare(op, {Tensor::Zeros(DType::kBool, Shape{1 << 20})});
    Tensor ones = Random(DType::kBool, Shape{(1 << 20) + 3}, 27);
    for (int64_t i = 0; i < ones.num_elements(); ++i)
      ones.data<bool>()[i] = true;
    Compare(op, {ones});
    Compare(op, {ones}, Axis({0}, true));
  }
}

TEST(GpuNnTest, LogSumExp) {
  SKIP_WITHOUT_GPU();
  for (DType d : kFloats) {
    for (const Axes& a : kLayouts) {
      Compare("logsumexp", {Random(d, a.shape, 28, -5, 5)}, a.attrs,
              Differentiable(d) && a.shape.num_elements() < 1000, true);
    }
    for (const Axes& a : kLong) {
      Compare("logsumexp", {Random(d, a.shape, 29, -5, 5)}, a.attrs, false,
              true);
    }
  }
}

// NaN wins max, min, argmax and argmin (the first NaN for the args); the
// infinities follow IEEE in sums, and logsumexp gives its max where that is
// not finite.
// cumsum in every dtype it registers, along each axis, every way; with
// its gradient for the floats.
TEST(GpuNnTest, Cumsum) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16}) {
    const bool floats = d != DType::kI32 && d != DType::kI64;
    for (const Shape& s : {Shape{7, 13}, Shape{3, 1000, 5}, Shape{0, 4}}) {
      for (int64_t axis : {0, 1, -1}) {
        for (bool exclusive : {false, true}) {
          for (bool reverse : {false, true}) {
            Compare("cumsum", {Random(d, s, 61)},
                    {{"axis", axis},
                     {"exclusive", exclusive},
                     {"reverse", reverse}},
                    floats && s.num_elements() < 1000);
          }
        }
      }
    }
  }
}

TEST(GpuNnTest, NanAndInfinities) {
  SKIP_WITHOUT_GPU();
  const float inf = INFINITY, nan = NAN;
  Tensor rows = testing::F32({1, nan, 3, nan,          // NaN twice
                              -inf, -inf, -inf, -inf,  // all -inf
                              1, inf, 2, -1,           // +inf
                              inf, -inf, 0, 5},        // both
                             Shape{4, 4});
  for (const char* op :
       {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "logsumexp"}) {
    Compare(op, {rows}, Axis({1}));
    Compare(op, {rows}, Axis({0}));
  }
  for (const char* op : {"softmax", "log_softmax"}) Compare(op, {rows});
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      Compare("cumsum", {rows},
              {{"axis", int64_t{1}},
               {"exclusive", exclusive},
               {"reverse", reverse}});
    }
  }
  Compare("softmax_cross_entropy",
          {rows, Random(DType::kF32, Shape{4, 4}, 30, 0, 1)});
  // A NaN far into a long reduction, past the first chunk.
  Tensor big = Random(DType::kF32, Shape{(1 << 20) + 3}, 31, 0, 1);
  big.data<float>()[(1 << 20) - 5] = nan;
  for (const char* op :
       {"sum", "max", "min", "argmax", "argmin", "logsumexp"}) {
    Compare(op, {big});
  }
}

TEST(GpuNnTest, SumToLike) {
  SKIP_WITHOUT_GPU();
  struct S {
    Shape dy, x;
  };
  const std::vector<S> cases = {
      {Shape{3, 4, 5}, Shape{4, 1}},    {Shape{3, 4, 5}, Shape{5}},
      {Shape{3, 4, 5}, Shape{}},        {Shape{3, 4, 5}, Shape{3, 1, 5}},
      {Shape{3, 4, 5}, Shape{1, 4, 1}}, {Shape{1, 4}, Shape{4}},  // a view
      {Shape{1 << 16, 10}, Shape{10}},  // bias gradient, cut into chunks
      {Shape{0, 3}, Shape{3}},
  };
  for (DType d : kNumbers) {
    for (const S& s : cases) {
      Compare("sum_to_like", {Random(d, s.dy, 32, 0, 1), Random(d, s.x, 33)},
              {}, false, true);
    }
  }
}

TEST(GpuNnTest, Softmax) {
  SKIP_WITHOUT_GPU();
  const std::vector<Axes> cases = {
      {Shape{128, 10}, {}},
      {Shape{4, 1000}, {}},  // a block per line
      {Shape{3, 4, 5}, {{"axis", int64_t{0}}}},
      {Shape{3, 4, 5}, {{"axis", int64_t{1}}}},
      {Shape{3, 4, 5}, {{"axis", int64_t{-1}}}},
      {Shape{7}, {}},
      {Shape{0, 5}, {}},
      {Shape{5, 0}, {}},
      {Shape{2, 1 << 18}, {}},
  };
  for (const char* op : {"softmax", "log_softmax"}) {
    for (DType d : kFloats) {
      for (const Axes& a : cases) {
        Compare(op, {Random(d, a.shape, 34, -8, 8)}, a.attrs,
                Differentiable(d) && a.shape.num_elements() < 10000, true);
      }
    }
  }
}

// masked_softmax: causal and random masks, rows that keep nothing, lines
// short (a thread each) and long (a block each), the mask repeated over
// the leading dims or as large as the logits.
TEST(GpuNnTest, MaskedSoftmax) {
  SKIP_WITHOUT_GPU();
  for (DType d : kFloats) {
    for (const Shape& s :
         {Shape{2, 3, 5, 5}, Shape{4, 130, 130}, Shape{3, 7}}) {
      const int64_t n = s.dim(s.rank() - 1), m = s.dim(s.rank() - 2);
      Tensor causal(DType::kBool, Shape{m, n});
      for (int64_t i = 0; i < m * n; ++i) {
        // Row 1 keeps nothing.
        causal.data<bool>()[i] = i / n != 1 && i % n <= i / n;
      }
      Tensor full(DType::kBool, s);
      for (int64_t i = 0; i < full.num_elements(); ++i) {
        full.data<bool>()[i] = (i * 7919) % 5 != 0;
      }
      for (const Tensor& keep : {causal, full}) {
        Compare("masked_softmax", {Random(d, s, 37, -8, 8), keep}, {},
                Differentiable(d) && s.num_elements() < 10000, true);
      }
    }
  }
}

// scaled_dot_product_attention and its gradient op: a causal mask with a
// query that keeps nothing, a full mask, a scalar mask; k and v broadcast
// over a batch dim; rows longer than a block (300 keys); empty batches.
TEST(GpuNnTest, ScaledDotProductAttention) {
  SKIP_WITHOUT_GPU();
  const std::string grad_op = "scaled_dot_product_attention_grad";
  for (DType d : {DType::kF32, DType::kF64}) {
    for (const auto& [q, k, v] :
         {std::tuple{Shape{2, 3, 5, 4}, Shape{2, 3, 5, 4}, Shape{2, 3, 5, 6}},
          std::tuple{Shape{2, 3, 5, 4}, Shape{2, 1, 5, 4}, Shape{1, 1, 5, 3}},
          std::tuple{Shape{3, 300, 8}, Shape{3, 300, 8}, Shape{3, 300, 8}},
          std::tuple{Shape{0, 5, 4}, Shape{1, 5, 4}, Shape{1, 5, 2}}}) {
      const int64_t tq = q.dim(q.rank() - 2), tk = k.dim(k.rank() - 2);
      Tensor causal(DType::kBool, Shape{tq, tk});
      for (int64_t i = 0; i < tq * tk; ++i) {
        causal.data<bool>()[i] = i / tk != 1 && i % tk <= i / tk;
      }
      Tensor full(DType::kBool, Shape{tk});
      for (int64_t i = 0; i < tk; ++i) full.data<bool>()[i] = i % 3 != 1;
      Tensor all(DType::kBool, Shape{});
      all.data<bool>()[0] = true;
      for (const Tensor& keep : {causal, full, all}) {
        Compare("scaled_dot_product_attention",
                {Random(d, q, 61), Random(d, k, 62), Random(d, v, 63), keep},
                {{"scale", 0.9}}, true, true, {grad_op});
      }
    }
    // The heads inside the time steps (layout bthd), k and v of one head
    // broadcast over q's 3, causal.
    Tensor causal(DType::kBool, Shape{40, 40});
    for (int64_t i = 0; i < 40 * 40; ++i) {
      causal.data<bool>()[i] = i % 40 <= i / 40;
    }
    Compare(
        "scaled_dot_product_attention",
        {Random(d, Shape{2, 40, 3, 4}, 64), Random(d, Shape{2, 40, 1, 4}, 65),
         Random(d, Shape{2, 40, 1, 3}, 66), causal},
        {{"layout", std::string("bthd")}}, true, true, {grad_op});
  }
}

// softmax_grad over short lines (a thread each) and long ones (a block).
TEST(GpuNnTest, SoftmaxGrad) {
  SKIP_WITHOUT_GPU();
  for (DType d : kFloats) {
    for (const Shape& s : {Shape{3, 7}, Shape{4, 130}, Shape{2, 3, 300}}) {
      Compare("softmax_grad", {Random(d, s, 56), Random(d, s, 57, 0, 1)}, {},
              Differentiable(d) && s.num_elements() < 1000, true);
    }
  }
}

// layer_norm and its gradient (layer_norm_grad, which must run on the GPU
// too): rows short and long, one row, and many rows for the parameter sums.
TEST(GpuNnTest, LayerNorm) {
  SKIP_WITHOUT_GPU();
  for (DType d : kFloats) {
    for (const Shape& s :
         {Shape{3, 7}, Shape{2, 4, 130}, Shape{1, 500}, Shape{700, 9}}) {
      const Shape c{s.dim(s.rank() - 1)};
      Compare("layer_norm",
              {Random(d, s, 58, -3, 3), Random(d, c, 59, 0.5, 1.5),
               Random(d, c, 60)},
              {{"eps", 1e-3}}, Differentiable(d), true,
              Differentiable(d) ? std::vector<std::string>{"layer_norm_grad"}
                                : std::vector<std::string>{});
    }
  }
}

// The fused recurrent cells and their gradients (which must run on the
// GPU too): one row, many rows, a unit and many, a rank-3 state.
TEST(GpuNnTest, RecurrentCells) {
  SKIP_WITHOUT_GPU();
  for (DType d : kFloats) {
    for (const Shape& s :
         {Shape{1, 1}, Shape{32, 256}, Shape{700, 3}, Shape{2, 5, 7}}) {
      Shape g4 = s, g3 = s;
      g4.mutable_dims().back() *= 4;
      g3.mutable_dims().back() *= 3;
      const bool diff = Differentiable(d);
      Compare("lstm_cell", {Random(d, g4, 64, -3, 3), Random(d, s, 65, -2, 2)},
              {}, diff, false,
              diff ? std::vector<std::string>{"lstm_cell_grad"}
                   : std::vector<std::string>{});
      Compare("gru_cell",
              {Random(d, g3, 66, -3, 3), Random(d, g3, 67, -3, 3),
               Random(d, s, 68)},
              {}, diff, false,
              diff ? std::vector<std::string>{"gru_cell_grad"}
                   : std::vector<std::string>{});
    }
  }
}

// lstm_sequence (f32) and its gradient op (db too) against the CPU's,
// without and with lengths and a bias: no steps, one, and several over a batch
// of several of the CPU's pieces and units whose gates are not a multiple of
// the tile; the gradient op on inputs drawn at random (it is a function of them
// whatever they are).
TEST(GpuNnTest, LstmSequence) {
  SKIP_WITHOUT_GPU();
  const DType f = DType::kF32;
  for (const auto& [time, batch, u] :
       {std::tuple{0, 3, 2}, std::tuple{1, 4, 3}, std::tuple{7, 37, 5},
        std::tuple{28, 64, 128}}) {
    const Shape z{time, batch, 4 * u}, steps{time, batch, u}, state{batch, u},
        w{u, 4 * u};
    Compare("lstm_sequence",
            {Random(f, z, 71, -2, 2), Random(f, state, 72),
             Random(f, state, 73), Random(f, w, 74, -0.3, 0.3)},
            {}, false, true);
    Compare("lstm_sequence_grad",
            {Random(f, z, 75, -2, 2), Random(f, steps, 76),
             Random(f, steps, 77), Random(f, state, 78), Random(f, state, 79),
             Random(f, w, 80, -0.3, 0.3), Random(f, steps, 81),
             Random(f, state, 82), Random(f, state, 83)},
            {}, false, true);
    // With lengths: small integers, some past the end and some below 0.
    const Tensor lengths = Random(DType::kI32, Shape{batch}, 84);
    Compare("lstm_sequence",
            {Random(f, z, 85, -2, 2), Random(f, state, 86),
             Random(f, state, 87), Random(f, w, 88, -0.3, 0.3), lengths},
            {}, false, true);
    // With a bias (input 4), with and without lengths after it.
    const Tensor b = Random(f, Shape{4 * u}, 98);
    Compare("lstm_sequence",
            {Random(f, z, 99, -2, 2), Random(f, state, 100),
             Random(f, state, 101), Random(f, w, 102, -0.3, 0.3), b},
            {{"bias", true}}, false, true);
    Compare("lstm_sequence",
            {Random(f, z, 103, -2, 2), Random(f, state, 104),
             Random(f, state, 105), Random(f, w, 106, -0.3, 0.3), b, lengths},
            {{"bias", true}}, false, true);
    Compare("lstm_sequence_grad",
            {Random(f, z, 89, -2, 2), Random(f, steps, 90),
             Random(f, steps, 91), Random(f, state, 92), Random(f, state, 93),
             Random(f, w, 94, -0.3, 0.3), Random(f, steps, 95),
             Random(f, state, 96), Random(f, state, 97), lengths},
            {}, false, true);
  }
}

// batch_norm and its gradient (batch_norm_grad on the GPU too): few rows
// and many (several chunks of the per-channel sums), one channel and many.
TEST(GpuNnTest, BatchNorm) {
  SKIP_WITHOUT_GPU();
  for (DType d : kFloats) {
    for (const Shape& s :
         {Shape{5, 3}, Shape{4, 6, 6, 16}, Shape{700, 1}, Shape{2, 300}}) {
      const Shape c{s.dim(s.rank() - 1)};
      Compare("batch_norm",
              {Random(d, s, 61, -3, 3), Random(d, c, 62, 0.5, 1.5),
               Random(d, c, 63)},
              {{"eps", 1e-3}}, Differentiable(d), true,
              Differentiable(d) ? std::vector<std::string>{"batch_norm_grad"}
                                : std::vector<std::string>{});
    }
  }
}

TEST(GpuNnTest, SoftmaxCrossEntropy) {
  SKIP_WITHOUT_GPU();
  for (DType d : kFloats) {
    for (const Shape& s : {Shape{128, 10}, Shape{4, 1000}, Shape{2, 3, 7},
                           Shape{5}, Shape{3, 0}, Shape{0, 4}}) {
      Compare("softmax_cross_entropy",
              {Random(d, s, 35, -5, 5), Random(d, s, 36, 0, 1)}, {},
              Differentiable(d) && s.num_elements() < 10000, true);
    }
  }
}

TEST(GpuNnTest, SparseSoftmaxCrossEntropy) {
  SKIP_WITHOUT_GPU();
  for (DType d : kFloats) {
    for (DType ld : {DType::kI32, DType::kI64}) {
      for (const Shape& s :
           {Shape{128, 10}, Shape{4, 1000}, Shape{2, 3, 7}, Shape{0, 4}}) {
        const int64_t classes = s.dim(s.rank() - 1);
        std::vector<int64_t> dims = s.dims();
        dims.pop_back();
        Tensor labels(ld, Shape(dims));
        for (int64_t i = 0; i < labels.num_elements(); ++i) {
          const int64_t v = (i * 7 + 3) % classes;
          if (ld == DType::kI32) {
            labels.data<int32_t>()[i] = static_cast<int32_t>(v);
          } else {
            labels.data<int64_t>()[i] = v;
          }
        }
        Compare("sparse_softmax_cross_entropy",
                {Random(d, s, 37, -5, 5), labels}, {},
                Differentiable(d) && s.num_elements() < 10000, true);
      }
    }
  }
}

// The error of `op` run on the GPU, which must fail.
absl::Status GpuError(const std::string& op, const std::vector<Tensor>& in) {
  auto g = std::make_shared<Graph>();
  std::vector<NodeOut> ins;
  Session::Feeds feeds;
  for (size_t i = 0; i < in.size(); ++i) {
    absl::StatusOr<Node*> p = g->AddNode(
        {.name = "in" + std::to_string(i),
         .op = "placeholder",
         .attrs = {{"dtype", in[i].dtype()}, {"shape", in[i].shape()}}});
    EXPECT_TRUE(p.ok()) << p.status();
    ins.push_back({*p, 0});
    feeds.push_back({{*p, 0}, in[i]});
  }
  absl::StatusOr<Node*> y =
      g->AddNode({.name = "y", .op = op, .inputs = ins, .device = "/gpu:0"});
  EXPECT_TRUE(y.ok()) << y.status();
  Session session(g, {.num_threads = 2, .gpu_devices = 1});
  absl::StatusOr<std::vector<Tensor>> out =
      session.Run(feeds, {NodeOut{*y, 0}}, {});
  EXPECT_FALSE(out.ok()) << op << " should fail on the GPU";
  return out.ok() ? absl::OkStatus() : out.status();
}

// A label out of range fails as on the CPU, naming the first bad one.
TEST(GpuNnTest, SparseLabelOutOfRange) {
  SKIP_WITHOUT_GPU();
  for (DType ld : {DType::kI32, DType::kI64}) {
    Tensor labels = Tensor::Zeros(ld, Shape{300});
    auto set = [&](int i, int64_t v) {
      if (ld == DType::kI32) {
        labels.data<int32_t>()[i] = static_cast<int32_t>(v);
      } else {
        labels.data<int64_t>()[i] = v;
      }
    };
    set(200, -1);
    set(17, 10);  // the first bad row
    // A thread per row (10 classes).
    absl::Status t =
        GpuError("sparse_softmax_cross_entropy",
                 {Random(DType::kF32, Shape{300, 10}, 38), labels});
    EXPECT_NE(t.message().find("label 10 (at index 17) is out of range for "
                               "10 classes; labels must be in [0, 10)"),
              std::string::npos)
        << t;
    // A block per row (classes >= 64) reports the same way.
    absl::Status s = GpuError("sparse_softmax_cross_entropy",
                              {Random(DType::kF32, Shape{300, 100}, 39), [&] {
                                 Tensor t = Tensor::Zeros(ld, Shape{300});
                                 if (ld == DType::kI32) {
                                   t.data<int32_t>()[299] = 100;
                                 } else {
                                   t.data<int64_t>()[299] = 100;
                                 }
                                 return t;
                               }()});
    EXPECT_NE(s.message().find("label 100 (at index 299) is out of range for "
                               "100 classes"),
              std::string::npos)
        << s;
  }
}

TEST(GpuNnTest, ElementWiseLossesAndBias) {
  SKIP_WITHOUT_GPU();
  for (DType d : kFloats) {
    for (const Shape& s :
         {Shape{128, 10}, Shape{}, Shape{(1 << 20) + 3}, Shape{0, 2}}) {
      const bool grad = Differentiable(d) && s.num_elements() < 10000;
      Compare("sigmoid_cross_entropy",
              {Random(d, s, 40, -30, 30), Random(d, s, 41, 0, 1)}, {}, grad,
              true);
      Compare("l2_loss", {Random(d, s, 42)}, {}, grad, true);
    }
  }
  for (DType d : kNumbers) {
    for (const std::vector<Shape>& s :
         {std::vector<Shape>{Shape{128, 10}, Shape{10}},
          {Shape{2, 3, 4}, Shape{4}},
          {Shape{5}, Shape{5}},
          {Shape{0, 3}, Shape{3}},
          {Shape{1 << 16, 17}, Shape{17}}}) {
      Compare("bias_add", {Random(d, s[0], 43), Random(d, s[1], 44)}, {},
              Differentiable(d) && s[0].num_elements() < 10000, true);
    }
  }
}

TEST(GpuNnTest, ActivationGradients) {
  SKIP_WITHOUT_GPU();
  for (const Shape& s : {Shape{7, 13}, Shape{}, Shape{(1 << 20) + 3}}) {
    for (DType d : kNumbers) {
      Compare("relu_grad", {Random(d, s, 45), Random(d, s, 46)}, {},
              Differentiable(d) && s.num_elements() < 1000);
    }
    for (DType d : kFloats) {
      const bool grad = Differentiable(d) && s.num_elements() < 1000;
      Compare("sigmoid_grad", {Random(d, s, 47, 0, 1), Random(d, s, 48)}, {},
              grad);
      Compare("tanh_grad", {Random(d, s, 49, -1, 1), Random(d, s, 50)}, {},
              grad);
      Compare("gelu_grad", {Random(d, s, 54), Random(d, s, 55, -4, 4)}, {},
              grad);
    }
  }
  // relu_grad passes nothing where x is NaN (x > 0 is false).
  Tensor x = testing::F32({NAN, 1, -1, 0}, Shape{4});
  Compare("relu_grad", {testing::F32({1, 2, 3, 4}, Shape{4}), x});
}

// The element-wise template on f16 and bf16: computed in f32, rounded once.
TEST(GpuNnTest, HalfElementWise) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF16, DType::kBF16}) {
    for (const Shape& s : {Shape{7, 13}, Shape{(1 << 20) + 3}, Shape{}}) {
      for (const char* op :
           {"abs",     "neg",   "sign",     "square",   "relu", "floor",
            "ceil",    "round", "isnan",    "isfinite", "sqrt", "rsqrt",
            "exp",     "log",   "log1p",    "sin",      "cos",  "tanh",
            "sigmoid", "elu",   "softplus", "erf",      "gelu"}) {
        Compare(op, {Random(d, s, 51)});
      }
    }
    for (const std::vector<Shape>& s :
         {std::vector<Shape>{Shape{3, 5}, Shape{3, 5}},
          {Shape{3, 1, 5}, Shape{4, 5}},
          {Shape{1 << 20}, Shape{1 << 20}}}) {
      for (const char* op :
           {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "maximum",
            "minimum", "equal", "not_equal", "less", "less_equal", "greater",
            "greater_equal"}) {
        Compare(op, {Random(d, s[0], 52), Random(d, s[1], 53)});
      }
    }
  }
}

}  // namespace
}  // namespace runnel
