// NumPy broadcasting and strided iteration for the element-wise and
// reduction CPU kernels, plus the Eigen glue they share.
//
// A kernel over N operands builds a StridedLayout (MakeBroadcastLayout),
// allocates its output with `layout.shape`, and walks the output in rows:
//
//   RN_ASSIGN_OR_RETURN(StridedLayout<2> l,
//                       MakeBroadcastLayout<2>({&x.shape(), &y.shape()}));
//   RN_ASSIGN_OR_RETURN(Tensor* z, ctx->allocate_output(0, l.shape));
//   ParallelForEachRow(ctx->intra_op_pool(), l, /*cost=*/1,
//                      [&](int64_t out, int64_t n, const Offsets<2>& in,
//                          const Offsets<2>& stride) { ... });
//
// A row is a run of `n` consecutive output elements; operand k is read from
// element `in[k]` with step `stride[k]`. The layout collapses adjacent
// dimensions that broadcast alike, so same-shape operands are one row per
// shard (stride 1), a scalar operand has stride 0, and [N,M] + [M] is N rows
// of M. Inside a row, EvalRow evaluates an op's Eigen expression with each
// operand either mapped (stride 1) or a constant (stride 0), so every row is
// one vectorised assignment; 16-bit floats are widened to float a block at
// a time and the result rounded once.
//
// This header pulls in Eigen: include it only from kernels/cpu/*.cc.
#ifndef RUNNEL_KERNELS_CPU_BROADCAST_H_
#define RUNNEL_KERNELS_CPU_BROADCAST_H_

#include <Eigen/Core>

#ifdef __F16C__
#include <immintrin.h>
#endif
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "base/thread_pool.h"
#include "framework/dtype.h"
#include "framework/kernel.h"
#include "framework/shape.h"
#include "framework/shape_fns.h"
#include "kernels/cpu/eigen_types.h"

namespace runnel {

// ---- Types ----------------------------------------------------------------

template <typename... Ts>
struct TypeList {};

using FloatTypes = TypeList<Half, BFloat16, float, double>;
using NumericTypes =
    TypeList<Half, BFloat16, float, double, int8_t, uint8_t, int32_t, int64_t>;
using AllTypes = TypeList<Half, BFloat16, float, double, int8_t, uint8_t,
                          int32_t, int64_t, bool>;

// Registers K<T> on the CPU for each T in the list (see kernel.h).
template <template <typename> class K, typename... Ts>
void RegisterKernelForTypeList(const std::string& op, TypeList<Ts...>) {
  RegisterKernelForTypes<K, Ts...>(op);
}

template <typename T>
inline constexpr bool kIsHalfLike =
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Eigen's scalar for a storage type; Half and BFloat16 are bit patterns with
// the same layout as Eigen::half and Eigen::bfloat16.

template <typename S>
using EigenArray = Eigen::Array<S, Eigen::Dynamic, 1>;

// 1 / (1 + exp(-x)) of an array expression: the `sigmoid` kernel's formula
// (cwise_unary_kernels.cc says why not Eigen's logistic()), shared by the
// fused kernels that take a sigmoid.
template <class X>
auto SigmoidOf(const X& x) {
  using S = typename X::Scalar;
  return (S(1) + (-x).exp()).inverse();
}

// `n` elements at `p` as an Eigen array of the storage type.
template <typename T>
Eigen::Map<const EigenArray<EigenType<T>>> InArray(const T* p, int64_t n) {
  return Eigen::Map<const EigenArray<EigenType<T>>>(
      reinterpret_cast<const EigenType<T>*>(p), n);
}
template <typename T>
Eigen::Map<EigenArray<EigenType<T>>> OutArray(T* p, int64_t n) {
  return Eigen::Map<EigenArray<EigenType<T>>>(
      reinterpret_cast<EigenType<T>*>(p), n);
}

// Signed and unsigned integers of one width: the same bits, read either way
// (the aliasing rules allow it), so no conversion is needed between them.
template <typename A, typename B>
inline constexpr bool kIntTwins =
    std::is_integral_v<A>&& std::is_integral_v<B> && sizeof(A) == sizeof(B);

// `n` elements at `p` as an expression of scalar type C (converted lazily).
template <typename C, typename T>
auto Load(const T* p, int64_t n) {
  if constexpr (std::is_same_v<C, EigenType<T>>) {
    return InArray(p, n);
  } else if constexpr (kIntTwins<C, EigenType<T>>) {
    return Eigen::Map<const EigenArray<C>>(reinterpret_cast<const C*>(p), n);
  } else {
    return InArray(p, n).template cast<C>();
  }
}

// The element at `p` as C.
template <typename C, typename T>
C LoadScalar(const T* p) {
  return static_cast<C>(*reinterpret_cast<const EigenType<T>*>(p));
}

// `*p` repeated `n` times, as an expression of scalar type C.
template <typename C, typename T>
auto Fill(const T* p, int64_t n) {
  return EigenArray<C>::Constant(n, LoadScalar<C>(p));
}

// Calls fn with operand `p` as an expression of `n` elements of C: the
// elements themselves when `stride` is 1, `*p` repeated when it is 0.
template <typename C, typename T, typename Fn>
void WithOperand(const T* p, int64_t stride, int64_t n, Fn&& fn) {
  if (stride != 0) {
    fn(Load<C>(p, n));
  } else {
    fn(Fill<C>(p, n));
  }
}

// out = expr, converting the scalar type when it differs.
template <typename Out, typename Expr>
void Assign(Out&& out, const Expr& expr) {
  using OS = typename std::decay_t<Out>::Scalar;
  using ES = typename Expr::Scalar;
  if constexpr (std::is_same_v<ES, OS>) {
    out = expr;
  } else if constexpr (kIntTwins<ES, OS>) {
    Eigen::Map<EigenArray<ES>>(reinterpret_cast<ES*>(out.data()), out.size()) =
        expr;
  } else {
    out = expr.template cast<OS>();
  }
}

// Calls fn(x_0, ..., x_{N-1}) with x_k operand k as WithOperand gives it.
template <typename C, int N, int K = 0, typename T, typename Fn, typename... Xs>
void WithOperands(const std::array<const T*, N>& p,
                  const std::array<int64_t, N>& stride, int64_t n, Fn&& fn,
                  const Xs&... xs) {
  if constexpr (K == N) {
    fn(xs...);
  } else {
    WithOperand<C>(p[K], stride[K], n, [&](const auto& x) {
      WithOperands<C, N, K + 1>(p, stride, n, fn, xs..., x);
    });
  }
}

// ---- 16-bit floats ----------------------------------------------------------
//
// Eigen 3.4 does not vectorise `cast<>()`, and with GCC it never enables its
// F16C conversions (EIGEN_HAS_FP16_C tests EIGEN_COMP_CLANG wrongly), so
// kernels widen 16-bit floats to float in blocks with these, eight at a time
// where the CPU allows, and run the float code on the block.

inline constexpr int64_t kWidenBlock = 1024;

// out[i] = float(in[i]), exactly.
template <typename H>
void WidenToFloat(const H* in, float* out, int64_t n) {
  int64_t i = 0;
  if constexpr (std::is_same_v<H, Half>) {
#ifdef __F16C__
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                    reinterpret_cast<const __m128i*>(in + i))));
    }
    for (; i < n; ++i) out[i] = _cvtsh_ss(in[i].bits);
#endif
  } else {
#ifdef EIGEN_VECTORIZE_AVX
    namespace ei = Eigen::internal;
    for (; i + 8 <= n; i += 8) {
      ei::pstoreu(out + i,
                  ei::Bf16ToF32(ei::ploadu<ei::Packet8bf>(
                      reinterpret_cast<const Eigen::bfloat16*>(in + i))));
    }
#endif
  }
  const auto* src = reinterpret_cast<const EigenType<H>*>(in);
  for (; i < n; ++i) out[i] = static_cast<float>(src[i]);
}

// out[i] = in[i] rounded to nearest even.
template <typename H>
void NarrowFromFloat(const float* in, H* out, int64_t n) {
  int64_t i = 0;
  if constexpr (std::is_same_v<H, Half>) {
#ifdef __F16C__
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    for (; i + 8 <= n; i += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kRound));
    }
    for (; i < n; ++i) out[i].bits = _cvtss_sh(in[i], kRound);
#endif
  } else {
#ifdef EIGEN_VECTORIZE_AVX
    namespace ei = Eigen::internal;
    for (; i + 8 <= n; i += 8) {
      ei::pstoreu(reinterpret_cast<Eigen::bfloat16*>(out + i),
                  ei::F32ToBf16(ei::ploadu<ei::Packet8f>(in + i)));
    }
#endif
  }
  auto* dst = reinterpret_cast<EigenType<H>*>(out);
  for (; i < n; ++i) dst[i] = EigenType<H>(in[i]);
}

// Calls fn(x, offset) for consecutive blocks of p[0, n), x an Eigen
// expression of A: all of it at once, or blocks of kWidenBlock widened to
// float for the 16-bit floats.
template <typename A, typename T, typename Fn>
void ForEachBlock(const T* p, int64_t n, Fn&& fn) {
  if constexpr (kIsHalfLike<T>) {
    float buf[kWidenBlock];
    for (int64_t off = 0; off < n; off += kWidenBlock) {
      const int64_t m = std::min(kWidenBlock, n - off);
      WidenToFloat(p + off, buf, m);
      fn(Eigen::Map<const EigenArray<float>>(buf, m), off);
    }
  } else {
    fn(Load<A>(p, n), int64_t{0});
  }
}

// One row of an element-wise op: out[0, n) = eval(x_0, ..., x_{N-1}), x_k
// operand k as an Eigen expression of C (see WithOperand). 16-bit float
// operands are widened to float block by block (C is float for them) and a
// 16-bit result is narrowed back, so it is rounded once.
template <typename C, int N, typename T, typename Out, typename Eval>
void EvalRow(const std::array<const T*, N>& in,
             const std::array<int64_t, N>& stride, Out* out, int64_t n,
             const Eval& eval) {
  if constexpr (kIsHalfLike<T>) {
    static_assert(std::is_same_v<C, float>);
    float buf[N][kWidenBlock];
    float result[kIsHalfLike<Out> ? kWidenBlock : 1];
    std::array<const float*, N> src;
    for (int k = 0; k < N; ++k) {
      src[k] = buf[k];
      if (stride[k] == 0) buf[k][0] = LoadScalar<float>(in[k]);
    }
    for (int64_t off = 0; off < n; off += kWidenBlock) {
      const int64_t m = std::min(kWidenBlock, n - off);
      for (int k = 0; k < N; ++k) {
        if (stride[k] != 0) WidenToFloat(in[k] + off, buf[k], m);
      }
      WithOperands<float, N>(src, stride, m, [&](const auto&... x) {
        if constexpr (kIsHalfLike<Out>) {
          Assign(OutArray(result, m), eval(x...));
        } else {
          Assign(OutArray(out + off, m), eval(x...));
        }
      });
      if constexpr (kIsHalfLike<Out>) NarrowFromFloat(result, out + off, m);
    }
  } else {
    WithOperands<C, N>(in, stride, n, [&](const auto&... x) {
      Assign(OutArray(out, n), eval(x...));
    });
  }
}

// ---- Strided layouts ------------------------------------------------------

template <int N>
using Offsets = std::array<int64_t, N>;

// An output of `shape` whose elements, in row-major order over `dims`, read
// operand k at offset sum_i idx[i] * strides[k][i].
template <int N>
struct StridedLayout {
  Shape shape;               // the output shape, as allocated
  int64_t num_elements = 0;  // of the output
  // Inline: building a layout allocates nothing for up to 4 collapsed
  // dims (a loop's scalar counters build one an iteration).
  using Dims = absl::InlinedVector<int64_t, 4>;
  Dims dims;                    // collapsed output dims; never empty
  std::array<Dims, N> strides;  // per operand and dim
};

// The layout of the NumPy broadcast of `shapes` (fully defined). Fails with
// "shapes [2,3] and [4] cannot be broadcast".
template <int N>
absl::StatusOr<StridedLayout<N>> MakeBroadcastLayout(
    const std::array<const Shape*, N>& shapes) {
  StridedLayout<N> l;
  bool same = true;
  for (int k = 1; k < N; ++k) same = same && *shapes[k] == *shapes[0];
  if (same) {
    l.shape = *shapes[0];
  } else {
    Shape out = *shapes[0];
    for (int k = 1; k < N; ++k) {
      RN_ASSIGN_OR_RETURN(out, BroadcastShapes(out, *shapes[k]));
    }
    l.shape = std::move(out);
  }
  l.num_elements = l.shape.num_elements();
  if (same) {
    l.dims = {std::max<int64_t>(l.num_elements, 1)};
    for (int k = 0; k < N; ++k) l.strides[k] = {1};
    return l;
  }
  // For each output dim > 1, which operands span it (the rest broadcast);
  // adjacent dims with the same pattern merge into one.
  const int rank = l.shape.rank();
  std::vector<std::array<bool, N>> spans;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = l.shape.dim(i);
    if (d == 1) continue;
    std::array<bool, N> s;
    for (int k = 0; k < N; ++k) {
      const int j = shapes[k]->rank() - rank + i;
      s[k] = j >= 0 && shapes[k]->dim(j) == d;
    }
    if (!spans.empty() && spans.back() == s) {
      l.dims.back() *= d;
    } else {
      l.dims.push_back(d);
      spans.push_back(s);
    }
  }
  if (l.dims.empty()) {
    l.dims.push_back(1);
    spans.push_back({});
    spans.back().fill(true);
  }
  for (int k = 0; k < N; ++k) {
    l.strides[k].assign(l.dims.size(), 0);
    int64_t stride = 1;
    for (int i = static_cast<int>(l.dims.size()) - 1; i >= 0; --i) {
      if (spans[i][k]) {
        l.strides[k][i] = stride;
        stride *= l.dims[i];
      }
    }
  }
  return l;
}

// Calls row(out, n, in, stride) for the rows covering output elements
// [begin, end) of `l`, in order.
template <int N, typename Row>
void ForEachRow(const StridedLayout<N>& l, int64_t begin, int64_t end,
                Row&& row) {
  if (begin >= end) return;
  const int r = static_cast<int>(l.dims.size());
  const int64_t inner = l.dims[r - 1];
  absl::InlinedVector<int64_t, 8> idx(r);
  Offsets<N> off{}, inner_stride;
  int64_t rem = begin;
  for (int i = r - 1; i >= 0; --i) {
    idx[i] = rem % l.dims[i];
    rem /= l.dims[i];
  }
  for (int k = 0; k < N; ++k) {
    for (int i = 0; i < r; ++i) off[k] += idx[i] * l.strides[k][i];
    inner_stride[k] = l.strides[k][r - 1];
  }
  int64_t pos = begin;
  while (true) {
    const int64_t n = std::min(inner - idx[r - 1], end - pos);
    row(pos, n, off, inner_stride);
    pos += n;
    if (pos >= end) return;
    // The row ended: step to the start of the next one.
    for (int k = 0; k < N; ++k) off[k] -= idx[r - 1] * inner_stride[k];
    idx[r - 1] = 0;
    for (int i = r - 2; i >= 0; --i) {
      for (int k = 0; k < N; ++k) off[k] += l.strides[k][i];
      if (++idx[i] < l.dims[i]) break;
      for (int k = 0; k < N; ++k) off[k] -= l.dims[i] * l.strides[k][i];
      idx[i] = 0;
    }
  }
}

// ForEachRow over all of `l`, split across `pool`. `cost` is rough cycles
// per element.
template <int N, typename Row>
void ParallelForEachRow(ThreadPool* pool, const StridedLayout<N>& l,
                        int64_t cost, const Row& row) {
  pool->ParallelFor(l.num_elements, cost, [&](int64_t begin, int64_t end) {
    ForEachRow<N>(l, begin, end, row);
  });
}

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CPU_BROADCAST_H_
