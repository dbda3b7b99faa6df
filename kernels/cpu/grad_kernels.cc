// Kernels of the gradient ops (runtime/ops/grad_ops.cc).
//
// The activation gradients are element-wise rows evaluated like the other
// element-wise kernels (broadcast.h). sum_to_like and tile_grad share
// SumAxes, a reduction over any set of axes whose work is cut by shape only,
// so the result does not depend on the number of threads. The scattering
// adjoints (slice, strided_slice, dynamic_index, pad) move bytes and serve
// every dtype.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/array_util.h"
#include "kernels/cpu/broadcast.h"
#include "runtime/kernel.h"
#include "runtime/strings.h"

namespace runnel {
namespace {

// ---- activation gradients --------------------------------------------------

struct ReluGrad {
  static constexpr int kCost = 1;
  template <class Dy, class X>
  static auto Eval(const Dy& dy, const X& x) {
    using S = typename Dy::Scalar;
    return (x > S(0)).select(dy, S(0));
  }
};
struct SigmoidGrad {
  static constexpr int kCost = 3;
  template <class Y, class Dy>
  static auto Eval(const Y& y, const Dy& dy) {
    using S = typename Y::Scalar;
    return dy * y * (S(1) - y);
  }
};
struct TanhGrad {
  static constexpr int kCost = 3;
  template <class Y, class Dy>
  static auto Eval(const Y& y, const Dy& dy) {
    using S = typename Y::Scalar;
    return dy * (S(1) - y * y);
  }
};

// out = F(input 0, input 1), both of one shape.
template <typename T, typename F>
class BinaryGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    if (a.shape() != b.shape()) {
      return absl::InvalidArgumentError(
          StrCat(ctx->node().op(), ": shapes differ: ", DTypeName(a.dtype()),
                 a.shape().ToString(), " and ", DTypeName(b.dtype()),
                 b.shape().ToString()));
    }
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, a.shape()));
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out->data<T>();
    ctx->intra_op_pool()->ParallelFor(
        a.num_elements(), F::kCost, [&](int64_t begin, int64_t end) {
          EvalRow<AccumType<T>, 2, T>(
              {pa + begin, pb + begin}, {1, 1}, po + begin, end - begin,
              [](const auto& x, const auto& y) { return F::Eval(x, y); });
        });
    return absl::OkStatus();
  }
};

template <typename T>
using ReluGradKernel = BinaryGradKernel<T, ReluGrad>;
template <typename T>
using SigmoidGradKernel = BinaryGradKernel<T, SigmoidGrad>;
template <typename T>
using TanhGradKernel = BinaryGradKernel<T, TanhGrad>;

// ---- SumAxes ---------------------------------------------------------------

// Row-major index walker over `sizes`, tracking sum(index[i] * strides[i]).
class Odometer {
 public:
  Odometer(const std::vector<int64_t>& sizes,
           const std::vector<int64_t>& strides)
      : sizes_(sizes), strides_(strides), index_(sizes.size(), 0) {}
  void Seek(int64_t linear) {
    offset_ = 0;
    for (int i = static_cast<int>(sizes_.size()) - 1; i >= 0; --i) {
      index_[i] = linear % sizes_[i];
      linear /= sizes_[i];
      offset_ += index_[i] * strides_[i];
    }
  }
  void Next() {
    for (int i = static_cast<int>(sizes_.size()) - 1; i >= 0; --i) {
      offset_ += strides_[i];
      if (++index_[i] < sizes_[i]) return;
      offset_ -= sizes_[i] * strides_[i];
      index_[i] = 0;
    }
  }
  int64_t offset() const { return offset_; }

 private:
  const std::vector<int64_t>& sizes_;
  const std::vector<int64_t>& strides_;
  std::vector<int64_t> index_;
  int64_t offset_ = 0;
};

// Elements one task of SumAxes reads, about.
constexpr int64_t kSumChunk = 16384;
// Output columns one task of SumAxes accumulates, at most.
constexpr int64_t kSumColumns = 4096;

// out = the sum of `in` (row-major over `dims`) over the axes where
// `reduced` is set; `out` is row-major over the other axes. Sums are taken
// in AccumType<T> over fixed chunks of the input, combined in order, so
// the result depends on the shape alone.
template <typename T>
void SumAxes(ThreadPool* pool, const T* in, const std::vector<int64_t>& dims,
             const std::vector<bool>& reduced, T* out) {
  using A = AccumType<T>;
  int64_t in_n = 1, out_n = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    in_n *= dims[i];
    if (!reduced[i]) out_n *= dims[i];
  }
  if (out_n == 0) return;
  auto* o = reinterpret_cast<EigenType<T>*>(out);
  if (in_n == 0) {
    std::fill_n(o, out_n, EigenType<T>(0));
    return;
  }
  // Merge adjacent axes reduced alike; axes of size 1 belong to neither.
  std::vector<int64_t> size;
  std::vector<bool> is_reduced;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!size.empty() && is_reduced.back() == reduced[i]) {
      size.back() *= dims[i];
    } else {
      size.push_back(dims[i]);
      is_reduced.push_back(reduced[i]);
    }
  }
  std::vector<int64_t> stride(size.size(), 1);
  for (int g = static_cast<int>(size.size()) - 2; g >= 0; --g) {
    stride[g] = stride[g + 1] * size[g + 1];
  }
  // The last axis is either kept (`inner` contiguous outputs per row) or
  // reduced (`run` contiguous elements summed into one output).
  int64_t inner = 1, run = 1;
  int groups = static_cast<int>(size.size());
  if (groups > 0) {
    (is_reduced.back() ? run : inner) = size.back();
    --groups;
  }
  std::vector<int64_t> row_sizes, row_strides, item_sizes, item_strides;
  for (int g = 0; g < groups; ++g) {
    (is_reduced[g] ? item_sizes : row_sizes).push_back(size[g]);
    (is_reduced[g] ? item_strides : row_strides).push_back(stride[g]);
  }
  // A long reduced run is cut into pieces: one more (innermost) item axis.
  int64_t piece = run;
  if (run > kSumChunk) {
    piece = kSumChunk;
    const int64_t pieces = (run + piece - 1) / piece;
    item_sizes.push_back(pieces);
    item_strides.push_back(piece);
  }
  int64_t rows = 1, items = 1;
  for (int64_t s : row_sizes) rows *= s;
  for (int64_t s : item_sizes) items *= s;
  const int64_t width = std::min(inner, kSumColumns);
  const int64_t col_blocks = (inner + width - 1) / width;
  const int64_t per_chunk = std::max<int64_t>(1, kSumChunk / (width * piece));
  const int64_t chunks = (items + per_chunk - 1) / per_chunk;
  // partial[(row * chunks + chunk) * inner + column]
  std::vector<A> partial(rows * chunks * inner, A(0));
  pool->ParallelFor(
      rows * col_blocks * chunks, per_chunk * width * piece,
      [&](int64_t begin, int64_t end) {
        Odometer row_it(row_sizes, row_strides),
            item_it(item_sizes, item_strides);
        for (int64_t t = begin; t < end; ++t) {
          const int64_t chunk = t % chunks;
          const int64_t block = t / chunks % col_blocks;
          const int64_t row = t / (chunks * col_blocks);
          const int64_t c0 = block * width;
          const int64_t w = std::min(width, inner - c0);
          row_it.Seek(row);
          const int64_t first = chunk * per_chunk;
          const int64_t last = std::min(items, first + per_chunk);
          item_it.Seek(first);
          A* acc = partial.data() + (row * chunks + chunk) * inner + c0;
          auto acc_map = OutArray(acc, w);
          for (int64_t i = first; i < last; ++i, item_it.Next()) {
            const T* p = in + row_it.offset() + item_it.offset();
            if (inner > 1) {
              acc_map += Load<A>(p + c0, w);
            } else {
              // The last piece of a cut run may be short.
              const int64_t len =
                  run > piece
                      ? std::min(piece, run - (i % item_sizes.back()) * piece)
                      : run;
              acc[0] += Load<A>(p, len).sum();
            }
          }
        }
      });
  pool->ParallelFor(rows * inner, chunks, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t row = k / inner, col = k % inner;
      A sum = partial[row * chunks * inner + col];
      for (int64_t c = 1; c < chunks; ++c) {
        sum += partial[(row * chunks + c) * inner + col];
      }
      o[k] = static_cast<EigenType<T>>(sum);
    }
  });
}

// sum_to_like(dy, x): dy summed to x's shape.
template <typename T>
class SumToLikeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    if (shape.num_elements() == dy.num_elements()) {
      // Only axes of size 1 differ: the same elements in the same order.
      RN_ASSIGN_OR_RETURN(Tensor view, dy.Reshaped(shape));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    const int offset = dy.rank() - shape.rank();
    std::vector<bool> reduced(dy.rank());
    for (int i = 0; i < dy.rank(); ++i) {
      reduced[i] = i < offset || (shape.dim(i - offset) == 1 && dy.dim(i) != 1);
    }
    SumAxes(ctx->intra_op_pool(), dy.data<T>(), dy.shape().dims(), reduced,
            out->data<T>());
    return absl::OkStatus();
  }
};

// broadcast_like(g, x): g broadcast to x's shape.
class BroadcastLikeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    if (shape.num_elements() == g.num_elements()) {
      RN_ASSIGN_OR_RETURN(Tensor view, g.Reshaped(shape));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const std::vector<int64_t> g_strides = RowMajorStrides(g.shape());
    const int offset = shape.rank() - g.rank();
    std::vector<int64_t> src(shape.rank(), 0);
    for (int k = 0; k < g.rank(); ++k) {
      src[offset + k] = g.dim(k) == 1 ? 0 : g_strides[k];
    }
    StridedCopy(ctx->intra_op_pool(), DTypeSize(g.dtype()), shape.dims(),
                g.raw_data(), src, y->raw_data(), RowMajorStrides(shape));
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(GradKernels) {
  RegisterKernelForTypeList<ReluGradKernel>("relu_grad", NumericTypes{});
  RegisterKernelForTypeList<SigmoidGradKernel>("sigmoid_grad", FloatTypes{});
  RegisterKernelForTypeList<TanhGradKernel>("tanh_grad", FloatTypes{});
  RegisterKernelForTypeList<SumToLikeKernel>("sum_to_like", NumericTypes{});
  RegisterKernelForAllTypes<BroadcastLikeKernel>("broadcast_like");
}

}  // namespace
}  // namespace runnel
