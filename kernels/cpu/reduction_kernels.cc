// Kernels of the reductions (framework/ops/math_ops.cc): sum mean prod max min
// all any logsumexp argmax argmin.
//
// The input is viewed as [outer, reduced, inner] (framework/reduce_layout.h):
// adjacent dims that are all reduced or all kept merge, and when the
// reduced dims are not one run the input is first transposed to
// [kept..., reduced...]. Then
//   inner == 1 (rows):    each output is an Eigen reduction of a contiguous
//                         row; long rows are cut into fixed-size chunks so
//                         one row can use several threads;
//   inner > 1 (columns):  each output column block accumulates the reduced
//                         rows with vectorised array ops.
// Work is cut by shape only, never by thread count, so results are the same
// whatever the pool size. 16-bit floats accumulate in float.
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/ops/kernel_checks.h"
#include "framework/reduce_layout.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/reduction.h"

namespace runnel {
namespace {

// ---- Planning ---------------------------------------------------------------

struct ReductionPlan {
  Shape out_shape;
  int64_t outer = 1, reduced = 1, inner = 1;
  Tensor transposed;  // the input as [outer, reduced] when it had to move
};

// Copies `x` (any dtype) into `out` so that dims ordered as `perm` become
// row-major, using the strided walker.
template <typename U>
void TransposeCopy(ThreadPool* pool, const StridedLayout<1>& l, const U* in,
                   U* out) {
  ParallelForEachRow<1>(pool, l, /*cost=*/2,
                        [&](int64_t o, int64_t n, const Offsets<1>& off,
                            const Offsets<1>& stride) {
                          const U* p = in + off[0];
                          const int64_t s = stride[0];
                          for (int64_t i = 0; i < n; ++i) out[o + i] = p[i * s];
                        });
}

// `axes` sorted and distinct.
absl::StatusOr<ReductionPlan> PlanReduction(OpKernelContext* ctx,
                                            const Tensor& x,
                                            const std::vector<int>& axes,
                                            bool keepdims) {
  ReductionPlan p;
  p.out_shape = ReducedShape(x.shape(), axes, keepdims);

  const ReduceLayout layout = PlanReduceLayout(x.shape().dims(), axes);
  p.outer = layout.outer;
  p.reduced = layout.reduced;
  p.inner = layout.inner;
  if (layout.permute_dims.empty()) return p;

  // Several runs of reduced dims: move them all to the end.
  StridedLayout<1> l;
  l.shape = Shape{x.num_elements()};
  l.num_elements = x.num_elements();
  l.dims.assign(layout.permute_dims.begin(), layout.permute_dims.end());
  l.strides[0].assign(layout.permute_strides.begin(),
                      layout.permute_strides.end());
  p.transposed = Tensor(x.dtype(), l.shape, ctx->device()->allocator());
  ThreadPool* pool = ctx->intra_op_pool();
  switch (DTypeSize(x.dtype())) {
    case 1:
      TransposeCopy(pool, l, x.data<uint8_t>(), p.transposed.data<uint8_t>());
      break;
    case 2:
      TransposeCopy(pool, l, x.data<uint16_t>(), p.transposed.data<uint16_t>());
      break;
    case 4:
      TransposeCopy(pool, l, x.data<uint32_t>(), p.transposed.data<uint32_t>());
      break;
    default:
      TransposeCopy(pool, l, x.data<uint64_t>(), p.transposed.data<uint64_t>());
      break;
  }
  return p;
}

// The plan for the node's own `axis` and `keepdims` attributes.
absl::StatusOr<ReductionPlan> PlanReduction(OpKernelContext* ctx,
                                            const Tensor& x) {
  const AttrMap& attrs = ctx->node().attrs();
  ShapeContext sc(attrs, {}, {});
  RN_ASSIGN_OR_RETURN(std::vector<int> axes, ReductionAxes(sc, x.rank()));
  RN_ASSIGN_OR_RETURN(bool keepdims, GetAttrOr<bool>(attrs, "keepdims", false));
  return PlanReduction(ctx, x, axes, keepdims);
}

// ---- Reducers over Eigen expressions of accumulator type A ------------------

template <typename A>
struct SumR {
  static constexpr int kCost = 1;
  static constexpr bool kHasIdentity = true;
  static A Identity() { return A(0); }
  template <class X>
  static A Reduce(const X& x) {
    return x.sum();
  }
  static A Combine(A a, A b) { return a + b; }
  template <class Acc, class X>
  static void Accumulate(Acc& acc, const X& x) {
    acc += x;
  }
};

template <typename A>
struct ProdR {
  static constexpr int kCost = 1;
  static constexpr bool kHasIdentity = true;
  static A Identity() { return A(1); }
  template <class X>
  static A Reduce(const X& x) {
    return x.prod();
  }
  static A Combine(A a, A b) { return a * b; }
  template <class Acc, class X>
  static void Accumulate(Acc& acc, const X& x) {
    acc *= x;
  }
};

// max and min propagate nan, like NumPy, and have no identity: reducing
// nothing is an error.
template <typename A>
struct MaxR {
  static constexpr int kCost = 1;
  static constexpr bool kHasIdentity = false;
  template <class X>
  static A Reduce(const X& x) {
    return x.template maxCoeff<Eigen::PropagateNaN>();
  }
  static A Combine(A a, A b) { return (a != a || a > b) ? a : b; }
  template <class Acc, class X>
  static void Accumulate(Acc& acc, const X& x) {
    acc = acc.binaryExpr(
        x, Eigen::internal::scalar_max_op<A, A, Eigen::PropagateNaN>());
  }
};

template <typename A>
struct MinR {
  static constexpr int kCost = 1;
  static constexpr bool kHasIdentity = false;
  template <class X>
  static A Reduce(const X& x) {
    return x.template minCoeff<Eigen::PropagateNaN>();
  }
  static A Combine(A a, A b) { return (a != a || a < b) ? a : b; }
  template <class Acc, class X>
  static void Accumulate(Acc& acc, const X& x) {
    acc = acc.binaryExpr(
        x, Eigen::internal::scalar_min_op<A, A, Eigen::PropagateNaN>());
  }
};

template <typename A>
struct AllR {
  static constexpr int kCost = 1;
  static constexpr bool kHasIdentity = true;
  static A Identity() { return true; }
  template <class X>
  static A Reduce(const X& x) {
    return x.all();
  }
  static A Combine(A a, A b) { return a && b; }
  template <class Acc, class X>
  static void Accumulate(Acc& acc, const X& x) {
    acc = acc && x;
  }
};

template <typename A>
struct AnyR {
  static constexpr int kCost = 1;
  static constexpr bool kHasIdentity = true;
  static A Identity() { return false; }
  template <class X>
  static A Reduce(const X& x) {
    return x.any();
  }
  static A Combine(A a, A b) { return a || b; }
  template <class Acc, class X>
  static void Accumulate(Acc& acc, const X& x) {
    acc = acc || x;
  }
};

// Row chunk for long row reductions; columns per column job.
constexpr int64_t kRowChunk = 16384;
constexpr int64_t kColumnBlock = 1024;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The reduction of p[0, n), n >= 1.
template <typename Red, typename A, typename T>
A ReduceSegment(const T* p, int64_t n) {
  A acc{};
  ForEachBlock<A>(p, n, [&](const auto& x, int64_t off) {
    const A r = Red::Reduce(x);
    acc = off == 0 ? r : Red::Combine(acc, r);
  });
  return acc;
}

// res[o * inner + j] = reduction over r of in[(o * reduced + r) * inner + j],
// for reduced >= 1.
template <typename Red, typename A, typename T>
void Reduce3D(ThreadPool* pool, const T* in, int64_t outer, int64_t reduced,
              int64_t inner, A* res) {
  if (inner == 1) {
    const int64_t chunks = CeilDiv(reduced, kRowChunk);
    if (chunks == 1) {
      pool->ParallelFor(outer, reduced * Red::kCost, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          res[o] = ReduceSegment<Red, A>(in + o * reduced, reduced);
        }
      });
      return;
    }
    auto partial = std::make_unique<A[]>(outer * chunks);
    pool->ParallelFor(
        outer * chunks, kRowChunk * Red::kCost, [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) {
            const int64_t o = j / chunks, c = j % chunks;
            const int64_t start = c * kRowChunk;
            const int64_t len = std::min(kRowChunk, reduced - start);
            partial[j] = ReduceSegment<Red, A>(in + o * reduced + start, len);
          }
        });
    for (int64_t o = 0; o < outer; ++o) {
      A acc = partial[o * chunks];
      for (int64_t c = 1; c < chunks; ++c) {
        acc = Red::Combine(acc, partial[o * chunks + c]);
      }
      res[o] = acc;
    }
    return;
  }

  // Columns. With few column jobs, also split the reduced rows (by shape
  // alone, so the summation order does not depend on the pool).
  const int64_t blocks = CeilDiv(inner, kColumnBlock);
  int64_t rows_per_chunk = reduced;
  if (outer * blocks < 16 && reduced >= 512) {
    rows_per_chunk = std::max<int64_t>(256, CeilDiv(reduced, 16));
  }
  const int64_t rchunks = CeilDiv(reduced, rows_per_chunk);
  std::unique_ptr<A[]> partial;
  if (rchunks > 1) partial = std::make_unique<A[]>(outer * rchunks * inner);
  const int64_t jobs = outer * blocks * rchunks;
  const int64_t job_cost =
      rows_per_chunk * std::min(inner, kColumnBlock) * Red::kCost;
  pool->ParallelFor(jobs, job_cost, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t rc = j % rchunks;
      const int64_t blk = (j / rchunks) % blocks;
      const int64_t o = j / (rchunks * blocks);
      const int64_t j0 = blk * kColumnBlock;
      const int64_t len = std::min(kColumnBlock, inner - j0);
      const int64_t r0 = rc * rows_per_chunk;
      const int64_t r1 = std::min(reduced, r0 + rows_per_chunk);
      A* dst = rchunks == 1 ? res + o * inner + j0
                            : partial.get() + (o * rchunks + rc) * inner + j0;
      Eigen::Map<EigenArray<A>> acc(dst, len);
      const T* base = in + o * reduced * inner + j0;
      ForEachBlock<A>(base + r0 * inner, len, [&](const auto& x, int64_t off) {
        acc.segment(off, x.size()) = x;
      });
      for (int64_t r = r0 + 1; r < r1; ++r) {
        ForEachBlock<A>(base + r * inner, len, [&](const auto& x, int64_t off) {
          auto seg = acc.segment(off, x.size());
          Red::Accumulate(seg, x);
        });
      }
    }
  });
  if (rchunks == 1) return;
  for (int64_t o = 0; o < outer; ++o) {
    Eigen::Map<EigenArray<A>> acc(res + o * inner, inner);
    acc = Eigen::Map<const EigenArray<A>>(partial.get() + o * rchunks * inner,
                                          inner);
    for (int64_t rc = 1; rc < rchunks; ++rc) {
      Red::Accumulate(acc,
                      Eigen::Map<const EigenArray<A>>(
                          partial.get() + (o * rchunks + rc) * inner, inner));
    }
  }
}

// sum, prod, max, min, all, any, and (kMean) mean. The mean of integers
// accumulates in i64 and truncates toward zero, giving the input dtype.
template <typename T, template <class> class R, bool kMean = false>
class ReduceKernel : public OpKernel {
 public:
  using A =
      std::conditional_t<kMean && std::is_integral_v<T>, int64_t, AccumType<T>>;
  using Red = R<A>;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(ReductionPlan p, PlanReduction(ctx, x));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    return ReduceInto(ctx, x, p, y);
  }

  // y (p.out_shape's element count, any shape) = the reduction of x.
  static absl::Status ReduceInto(OpKernelContext* ctx, const Tensor& x,
                                 const ReductionPlan& p, Tensor* y) {
    const int64_t n = y->num_elements();
    if (n == 0) return absl::OkStatus();
    auto out = OutArray(y->data<T>(), n);
    if (p.reduced == 0) {
      if constexpr (kMean) {
        if constexpr (std::is_integral_v<T>) {
          return absl::InvalidArgumentError(
              StrCat("mean: integer mean of an empty dimension of ",
                     DTypeName(x.dtype()), x.shape().ToString()));
        } else {
          Assign(out, EigenArray<A>::Constant(
                          n, std::numeric_limits<A>::quiet_NaN()));
        }
      } else if constexpr (!Red::kHasIdentity) {
        return EmptyReductionError(ctx->node().op(), x);
      } else {
        Assign(out, EigenArray<A>::Constant(n, Red::Identity()));
      }
      return absl::OkStatus();
    }
    const T* in = p.transposed.empty() ? x.data<T>() : p.transposed.data<T>();
    ThreadPool* pool = ctx->intra_op_pool();
    if constexpr (!kMean && std::is_same_v<A, EigenType<T>>) {
      Reduce3D<Red>(pool, in, p.outer, p.reduced, p.inner,
                    reinterpret_cast<A*>(y->data<T>()));
    } else {
      auto acc = std::make_unique<A[]>(n);
      Reduce3D<Red>(pool, in, p.outer, p.reduced, p.inner, acc.get());
      Eigen::Map<const EigenArray<A>> a(acc.get(), n);
      if constexpr (kMean) {
        Assign(out, a / static_cast<A>(p.reduced));
      } else {
        Assign(out, a);
      }
    }
    return absl::OkStatus();
  }
};

template <typename T>
using SumKernel = ReduceKernel<T, SumR>;
template <typename T>
using MeanKernel = ReduceKernel<T, SumR, /*kMean=*/true>;
template <typename T>
using ProdKernel = ReduceKernel<T, ProdR>;
template <typename T>
using MaxKernel = ReduceKernel<T, MaxR>;
template <typename T>
using MinKernel = ReduceKernel<T, MinR>;
template <typename T>
using AllKernel = ReduceKernel<T, AllR>;
template <typename T>
using AnyKernel = ReduceKernel<T, AnyR>;

// log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the max; where m is
// not finite (all -inf, any +inf, nan) the result is m.
template <typename T>
class LogSumExpKernel : public OpKernel {
 public:
  using A = AccumType<T>;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(ReductionPlan p, PlanReduction(ctx, x));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    return ReduceInto(ctx, x, p, y);
  }

  // y (p.out_shape's element count, any shape) = the reduction of x.
  static absl::Status ReduceInto(OpKernelContext* ctx, const Tensor& x,
                                 const ReductionPlan& p, Tensor* y) {
    const int64_t n = y->num_elements();
    if (n == 0) return absl::OkStatus();
    auto out = OutArray(y->data<T>(), n);
    if (p.reduced == 0) {
      Assign(out,
             EigenArray<A>::Constant(n, -std::numeric_limits<A>::infinity()));
      return absl::OkStatus();
    }
    const T* in = p.transposed.empty() ? x.data<T>() : p.transposed.data<T>();
    ThreadPool* pool = ctx->intra_op_pool();
    const int64_t reduced = p.reduced, inner = p.inner;
    auto m = std::make_unique<A[]>(n);
    Reduce3D<MaxR<A>>(pool, in, p.outer, reduced, inner, m.get());
    // The shift: m where finite, else 0 (and the result is m there).
    auto shift = std::make_unique<A[]>(n);
    for (int64_t i = 0; i < n; ++i) shift[i] = std::isfinite(m[i]) ? m[i] : 0;
    auto res = std::make_unique<A[]>(n);
    if (inner == 1) {
      pool->ParallelFor(p.outer, reduced * 12, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          A sum = 0;
          ForEachBlock<A>(in + o * reduced, reduced,
                          [&](const auto& x, int64_t) {
                            sum += (x - shift[o]).exp().sum();
                          });
          res[o] = sum;
        }
      });
    } else {
      const int64_t blocks = CeilDiv(inner, kColumnBlock);
      pool->ParallelFor(
          p.outer * blocks, reduced * std::min(inner, kColumnBlock) * 12,
          [&](int64_t b, int64_t e) {
            for (int64_t j = b; j < e; ++j) {
              const int64_t o = j / blocks;
              const int64_t j0 = (j % blocks) * kColumnBlock;
              const int64_t len = std::min(kColumnBlock, inner - j0);
              Eigen::Map<EigenArray<A>> acc(res.get() + o * inner + j0, len);
              Eigen::Map<const EigenArray<A>> s(shift.get() + o * inner + j0,
                                                len);
              const T* base = in + o * reduced * inner + j0;
              acc.setZero();
              for (int64_t r = 0; r < reduced; ++r) {
                ForEachBlock<A>(base + r * inner, len,
                                [&](const auto& x, int64_t off) {
                                  acc.segment(off, x.size()) +=
                                      (x - s.segment(off, x.size())).exp();
                                });
              }
            }
          });
    }
    for (int64_t i = 0; i < n; ++i) {
      res[i] = std::isfinite(m[i]) ? m[i] + std::log(res[i]) : m[i];
    }
    Assign(out, Eigen::Map<const EigenArray<A>>(res.get(), n));
    return absl::OkStatus();
  }
};

// argmax / argmin: the index of the first extreme along the reduced run, as
// i32; nan counts as the extreme (NumPy).
template <typename T, bool kMax>
class ArgReduceKernel : public OpKernel {
 public:
  using C = AccumType<T>;

  static bool Better(C v, C best) {
    if (v != v) return best == best;
    return kMax ? v > best : v < best;
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(ReductionPlan p, PlanReduction(ctx, x));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    return ReduceInto(ctx, x, p, y);
  }

  // y (p.out_shape's element count, any shape) = the reduction of x.
  static absl::Status ReduceInto(OpKernelContext* ctx, const Tensor& x,
                                 const ReductionPlan& p, Tensor* y) {
    const int64_t n = y->num_elements();
    if (n == 0) return absl::OkStatus();
    if (p.reduced == 0) return EmptyReductionError(ctx->node().op(), x);
    if (p.reduced > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(
          StrCat(ctx->node().op(), ": reduces ", p.reduced,
                 " elements; i32 indices overflow"));
    }
    const T* in = p.transposed.empty() ? x.data<T>() : p.transposed.data<T>();
    int32_t* out = y->data<int32_t>();
    const int64_t reduced = p.reduced, inner = p.inner;
    ThreadPool* pool = ctx->intra_op_pool();
    if (inner == 1) {
      pool->ParallelFor(p.outer, reduced * 2, [&](int64_t b, int64_t e) {
        // The extreme by a vectorised reduction, then its first position.
        using Extreme = std::conditional_t<kMax, MaxR<C>, MinR<C>>;
        for (int64_t o = b; o < e; ++o) {
          const T* row = in + o * reduced;
          const C m = ReduceSegment<Extreme, C>(row, reduced);
          int32_t arg = 0;
          if (m == m) {
            while (!(LoadScalar<C>(row + arg) == m)) ++arg;
          } else {
            while (!(LoadScalar<C>(row + arg) != LoadScalar<C>(row + arg))) {
              ++arg;
            }
          }
          out[o] = arg;
        }
      });
      return absl::OkStatus();
    }
    const int64_t blocks = CeilDiv(inner, kColumnBlock);
    pool->ParallelFor(
        p.outer * blocks, reduced * std::min(inner, kColumnBlock) * 2,
        [&](int64_t b, int64_t e) {
          std::vector<C> best(kColumnBlock);
          for (int64_t j = b; j < e; ++j) {
            const int64_t o = j / blocks;
            const int64_t j0 = (j % blocks) * kColumnBlock;
            const int64_t len = std::min(kColumnBlock, inner - j0);
            const T* base = in + o * reduced * inner + j0;
            int32_t* arg = out + o * inner + j0;
            for (int64_t i = 0; i < len; ++i) {
              best[i] = LoadScalar<C>(base + i);
              arg[i] = 0;
            }
            for (int64_t r = 1; r < reduced; ++r) {
              const T* row = base + r * inner;
              for (int64_t i = 0; i < len; ++i) {
                const C v = LoadScalar<C>(row + i);
                if (Better(v, best[i])) {
                  best[i] = v;
                  arg[i] = static_cast<int32_t>(r);
                }
              }
            }
          }
        });
    return absl::OkStatus();
  }
};

template <typename T>
using ArgMaxKernel = ArgReduceKernel<T, true>;
template <typename T>
using ArgMinKernel = ArgReduceKernel<T, false>;

RUNNEL_STATIC_INIT(ReductionKernels) {
  RegisterKernelForTypeList<SumKernel>("sum", NumericTypes{});
  RegisterKernelForTypeList<MeanKernel>("mean", NumericTypes{});
  RegisterKernelForTypeList<ProdKernel>("prod", NumericTypes{});
  RegisterKernelForTypeList<MaxKernel>("max", NumericTypes{});
  RegisterKernelForTypeList<MinKernel>("min", NumericTypes{});
  RegisterKernelForTypeList<ArgMaxKernel>("argmax", NumericTypes{});
  RegisterKernelForTypeList<ArgMinKernel>("argmin", NumericTypes{});
  RegisterKernelForTypeList<AllKernel>("all", TypeList<bool>{});
  RegisterKernelForTypeList<AnyKernel>("any", TypeList<bool>{});
  RegisterKernelForTypeList<LogSumExpKernel>("logsumexp", FloatTypes{});
}

}  // namespace

template <typename T>
absl::Status SumOverAxes(OpKernelContext* ctx, const Tensor& x,
                         const std::vector<int>& axes, Tensor* out) {
  RN_ASSIGN_OR_RETURN(ReductionPlan p,
                      PlanReduction(ctx, x, axes, /*keepdims=*/false));
  if (p.out_shape.num_elements() != out->num_elements()) {
    return absl::InternalError(StrCat("SumOverAxes: ", x.shape().ToString(),
                                      " reduced is ", p.out_shape.ToString(),
                                      ", not ", out->shape().ToString()));
  }
  return SumKernel<T>::ReduceInto(ctx, x, p, out);
}

template absl::Status SumOverAxes<Half>(OpKernelContext*, const Tensor&,
                                        const std::vector<int>&, Tensor*);
template absl::Status SumOverAxes<BFloat16>(OpKernelContext*, const Tensor&,
                                            const std::vector<int>&, Tensor*);
template absl::Status SumOverAxes<float>(OpKernelContext*, const Tensor&,
                                         const std::vector<int>&, Tensor*);
template absl::Status SumOverAxes<double>(OpKernelContext*, const Tensor&,
                                          const std::vector<int>&, Tensor*);
template absl::Status SumOverAxes<int8_t>(OpKernelContext*, const Tensor&,
                                          const std::vector<int>&, Tensor*);
template absl::Status SumOverAxes<uint8_t>(OpKernelContext*, const Tensor&,
                                           const std::vector<int>&, Tensor*);
template absl::Status SumOverAxes<int32_t>(OpKernelContext*, const Tensor&,
                                           const std::vector<int>&, Tensor*);
template absl::Status SumOverAxes<int64_t>(OpKernelContext*, const Tensor&,
                                           const std::vector<int>&, Tensor*);

}  // namespace runnel
