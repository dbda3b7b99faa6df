// Kernels of the shape-manipulation ops (framework/ops/array_ops.cc): views
// (reshape, expand_dims, squeeze), transpose, joining and splitting, tile,
// broadcast_to (and broadcast_like, its gradient-op twin of
// framework/ops/grad_ops.cc), and shape queries. They move bytes, so one
// kernel serves every dtype.
#include <algorithm>
#include <cstring>

#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"

namespace runnel {
namespace {

int64_t ProductOf(const std::vector<int64_t>& dims, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= dims[i];
  return n;
}

// reshape, expand_dims, squeeze: a view of the input's buffer.
class ViewKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    RN_ASSIGN_OR_RETURN(Tensor view, ctx->input(0).Reshaped(std::move(shape)));
    return ctx->set_output(0, std::move(view));
  }
  bool IsExpensive() const override { return false; }
};

class TransposeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    RN_ASSIGN_OR_RETURN(auto src, TransposeReadStrides(ctx->node(), x.shape()));
    if (!src.has_value()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    StridedCopy(ctx->intra_op_pool(), DTypeSize(x.dtype()), shape.dims(),
                x.raw_data(), *src, y->raw_data(), RowMajorStrides(shape));
    return absl::OkStatus();
  }
};

// Joins (concat, stack) or splits (split, unstack) along an axis. The big
// tensor is viewed as [outer, row]; part i owns `chunk[i]` bytes of each
// row, at `offset[i]`.
struct AxisLayout {
  int64_t outer = 1;
  int64_t row = 0;
  std::vector<int64_t> chunk, offset;

  // The big tensor has `outer_rows` rows; part i has part_elements[i]
  // elements, an equal share of them in each row.
  AxisLayout(int64_t outer_rows, const std::vector<int64_t>& part_elements,
             size_t elem_size)
      : outer(outer_rows) {
    for (int64_t n : part_elements) {
      int64_t bytes = outer_rows == 0
                          ? 0
                          : n / outer_rows * static_cast<int64_t>(elem_size);
      offset.push_back(row);
      chunk.push_back(bytes);
      row += bytes;
    }
  }
};

// Copies between the big tensor `big` and its parts, in the direction
// `join` (parts -> big) or not (big -> parts).
void CopyAlongAxis(ThreadPool* pool, const AxisLayout& l, char* big,
                   const std::vector<char*>& parts, bool join) {
  const int n = static_cast<int>(parts.size());
  if (l.outer >= 4 * pool->num_threads()) {
    // Many rows: one parallel pass over rows, each copying every part.
    pool->ParallelFor(l.outer, l.row / 4 + 10, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        char* b = big + r * l.row;
        for (int i = 0; i < n; ++i) {
          char* p = parts[i] + r * l.chunk[i];
          if (join) {
            std::memcpy(b + l.offset[i], p, l.chunk[i]);
          } else {
            std::memcpy(p, b + l.offset[i], l.chunk[i]);
          }
        }
      }
    });
    return;
  }
  // Few, long rows: each part is one strided copy, split over the pool.
  for (int i = 0; i < n; ++i) {
    const int64_t shape[] = {l.outer, l.chunk[i]};
    const int64_t part_strides[] = {l.chunk[i], 1};
    const int64_t big_strides[] = {l.row, 1};
    if (join) {
      StridedCopy(pool, 1, shape, parts[i], part_strides, big + l.offset[i],
                  big_strides);
    } else {
      StridedCopy(pool, 1, shape, big + l.offset[i], big_strides, parts[i],
                  part_strides);
    }
  }
}

// concat and stack. Their output has the layout of a split's input.
class JoinKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    RN_ASSIGN_OR_RETURN(int64_t axis, ctx->node().attr<int64_t>("axis"));
    RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, shape.rank()));
    if (ctx->num_inputs() == 1) {
      // One part has the output's layout already.
      RN_ASSIGN_OR_RETURN(Tensor view, ctx->input(0).Reshaped(shape));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    std::vector<int64_t> elements;
    std::vector<char*> parts;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      elements.push_back(ctx->input(i).num_elements());
      parts.push_back(static_cast<char*>(ctx->input(i).raw_data()));
    }
    AxisLayout layout(ProductOf(shape.dims(), 0, a), elements,
                      DTypeSize(y->dtype()));
    CopyAlongAxis(ctx->intra_op_pool(), layout,
                  static_cast<char*>(y->raw_data()), parts, /*join=*/true);
    return absl::OkStatus();
  }
};

// split and unstack.
class SplitKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(std::vector<Shape> shapes, ConcreteOutputShapes(*ctx));
    RN_ASSIGN_OR_RETURN(int64_t axis, ctx->node().attr<int64_t>("axis"));
    RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, x.rank()));
    if (ctx->num_outputs() == 1) {
      RN_ASSIGN_OR_RETURN(Tensor view, x.Reshaped(shapes[0]));
      return ctx->set_output(0, std::move(view));
    }
    std::vector<int64_t> elements;
    std::vector<char*> parts;
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(i, shapes[i]));
      elements.push_back(out->num_elements());
      parts.push_back(static_cast<char*>(out->raw_data()));
    }
    AxisLayout layout(ProductOf(x.shape().dims(), 0, a), elements,
                      DTypeSize(x.dtype()));
    CopyAlongAxis(ctx->intra_op_pool(), layout,
                  static_cast<char*>(x.raw_data()), parts, /*join=*/false);
    return absl::OkStatus();
  }
};

// tile and broadcast_to: copies where some source strides are 0.
class TileKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    // Output axis k of size m*d splits into (repeat m, element d).
    std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
    std::vector<int64_t> out_strides = RowMajorStrides(shape);
    std::vector<int64_t> dims, src, dst;
    for (int k = 0; k < x.rank(); ++k) {
      const int64_t d = x.dim(k);
      dims.insert(dims.end(), {d == 0 ? 0 : shape.dim(k) / d, d});
      src.insert(src.end(), {0, in_strides[k]});
      dst.insert(dst.end(), {d * out_strides[k], out_strides[k]});
    }
    StridedCopy(ctx->intra_op_pool(), DTypeSize(x.dtype()), dims, x.raw_data(),
                src, y->raw_data(), dst);
    return absl::OkStatus();
  }
};

// broadcast_to(x, shape) and broadcast_like(g, x): input 0 broadcast to the
// output shape, NumPy-style (a view when no element repeats).
class BroadcastKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    if (shape.num_elements() == x.num_elements()) {
      RN_ASSIGN_OR_RETURN(Tensor view, x.Reshaped(shape));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
    const int offset = shape.rank() - x.rank();
    std::vector<int64_t> src(shape.rank(), 0);
    for (int k = 0; k < x.rank(); ++k) {
      src[offset + k] = x.dim(k) == 1 ? 0 : in_strides[k];
    }
    StridedCopy(ctx->intra_op_pool(), DTypeSize(x.dtype()), shape.dims(),
                x.raw_data(), src, y->raw_data(), RowMajorStrides(shape));
    return absl::OkStatus();
  }
};

// shape_of, size, rank: integers describing the input's shape.
enum class ShapeQuery { kShape, kSize, kRank };

template <ShapeQuery kQuery>
class ShapeQueryKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    std::vector<int64_t> values;
    if constexpr (kQuery == ShapeQuery::kShape) values = x.shape().dims();
    if constexpr (kQuery == ShapeQuery::kSize) values = {x.num_elements()};
    if constexpr (kQuery == ShapeQuery::kRank) values = {x.rank()};
    Shape shape = kQuery == ShapeQuery::kShape
                      ? Shape{static_cast<int64_t>(values.size())}
                      : Shape{};
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    for (size_t i = 0; i < values.size(); ++i) {
      if (y->dtype() == DType::kI64) {
        y->data<int64_t>()[i] = values[i];
      } else {
        y->data<int32_t>()[i] = static_cast<int32_t>(values[i]);
      }
    }
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

RUNNEL_STATIC_INIT(ArrayKernels) {
  RegisterKernelForAllTypes<ViewKernel>("reshape");
  RegisterKernelForAllTypes<ViewKernel>("expand_dims");
  RegisterKernelForAllTypes<ViewKernel>("squeeze");
  RegisterKernelForAllTypes<TransposeKernel>("transpose");
  RegisterKernelForAllTypes<JoinKernel>("concat");
  RegisterKernelForAllTypes<JoinKernel>("stack");
  RegisterKernelForAllTypes<SplitKernel>("split");
  RegisterKernelForAllTypes<SplitKernel>("unstack");
  RegisterKernelForAllTypes<TileKernel>("tile");
  RegisterKernelForAllTypes<BroadcastKernel>("broadcast_to");
  RegisterKernelForAllTypes<BroadcastKernel>("broadcast_like");
  RegisterKernelForAllTypes<ShapeQueryKernel<ShapeQuery::kShape>>("shape_of");
  RegisterKernelForAllTypes<ShapeQueryKernel<ShapeQuery::kSize>>("size");
  RegisterKernelForAllTypes<ShapeQueryKernel<ShapeQuery::kRank>>("rank");
}

}  // namespace
}  // namespace runnel
