// The array kernels both devices share: one body per op, over a small set
// of device primitives (TensorFlow's functor pattern), so the CPU's kernel
// and the GPU's of one op cannot drift. They move elements without looking
// at them, so one kernel serves every dtype.
//
// A device `D` provides (kernels/cpu/array_kernels.cc: CpuArrays;
// kernels/cuda/array_kernels.cc: GpuArrays):
//
//   // The node's output shapes at run time (array_util.h), from the inputs
//   // the kernel can read on the host.
//   static absl::StatusOr<std::vector<Shape>> OutputShapes(
//       OpKernelContext* ctx, const OpKernel& kernel);
//   // The block `dims` of elements of `esz` bytes from src to dst (strides
//   // in elements; a source stride may be 0 or negative, a destination
//   // stride is positive). Any dim of 0 copies nothing.
//   static absl::Status Copy(OpKernelContext* ctx, size_t esz,
//                            const Dims& dims, const void* src,
//                            const Dims& src_strides, void* dst,
//                            const Dims& dst_strides);
//   // Joins `parts` into `big` (or splits big into them) along an axis:
//   // big has `outer` rows; part i holds part_elements[i] / outer elements
//   // of each row, after those of the parts before it.
//   static absl::Status CopyAlongAxis(OpKernelContext* ctx, size_t esz,
//                                     int64_t outer, void* big,
//                                     const std::vector<void*>& parts,
//                                     const Dims& part_elements, bool join);
//   // The `n` elements of `esz` bytes at dst set to the one at `value`
//   // (in host memory).
//   static absl::Status Fill(OpKernelContext* ctx, void* dst, int64_t n,
//                            const void* value, size_t esz);
//   // `bytes` bytes at dst set to 0 (0 in every dtype).
//   static absl::Status Zero(OpKernelContext* ctx, void* dst, size_t bytes);
//
// The inputs that give shapes, offsets or fill values are read on the host
// (a GPU registers them in host memory), and every check on them is the
// op's shape function's or array_util.h's, so both devices say the same.
#ifndef RUNNEL_KERNELS_COMMON_ARRAY_KERNELS_H_
#define RUNNEL_KERNELS_COMMON_ARRAY_KERNELS_H_

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/ops/array_ops.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"

namespace runnel::array_kernels {

using Dims = std::vector<int64_t>;

// `p` advanced by `elements` elements of `esz` bytes.
template <typename P>
P* At(P* p, int64_t elements, size_t esz) {
  using Byte = std::conditional_t<std::is_const_v<P>, const char, char>;
  return static_cast<P*>(static_cast<Byte*>(p) +
                         elements * static_cast<int64_t>(esz));
}

template <typename D>
absl::StatusOr<Shape> OutputShape(OpKernelContext* ctx,
                                  const OpKernel& kernel) {
  RN_ASSIGN_OR_RETURN(std::vector<Shape> shapes, D::OutputShapes(ctx, kernel));
  return std::move(shapes[0]);
}

// The product of dims[0, end).
inline int64_t Product(const Dims& dims, int end) {
  int64_t n = 1;
  for (int i = 0; i < end; ++i) n *= dims[i];
  return n;
}

// A contiguous copy of `n` elements.
template <typename D>
absl::Status CopyRun(OpKernelContext* ctx, size_t esz, int64_t n,
                     const void* src, void* dst) {
  return D::Copy(ctx, esz, {n}, src, {1}, dst, {1});
}

// The block of x at `begin` with steps `step` and extent `size`, into y
// (row-major over size): the slices and pad's gradient.
template <typename D>
absl::Status TakeBlock(OpKernelContext* ctx, const Tensor& x, const Dims& begin,
                       const Dims& step, const Dims& size, Tensor* y) {
  const size_t esz = DTypeSize(x.dtype());
  const Dims strides = RowMajorStrides(x.shape());
  int64_t offset = 0;
  Dims src(x.rank());
  for (int k = 0; k < x.rank(); ++k) {
    offset += begin[k] * strides[k];
    src[k] = step[k] * strides[k];
  }
  return D::Copy(ctx, esz, size, At(x.raw_data(), offset, esz), src,
                 y->raw_data(), RowMajorStrides(size));
}

// dy (row-major over `dims`) into zeros of out, element k of axis i at
// index begin[i] + k * step[i] (a step may be negative): the gradients of
// the slices. Reversed axes are walked backwards, so every destination
// stride is positive.
template <typename D>
absl::Status ScatterBlock(OpKernelContext* ctx, const Tensor& dy,
                          const Dims& dims, const Dims& begin, const Dims& step,
                          Tensor* out) {
  RN_RETURN_IF_ERROR(D::Zero(ctx, out->raw_data(), out->bytes()));
  const size_t esz = DTypeSize(dy.dtype());
  const Dims out_strides = RowMajorStrides(out->shape());
  int64_t offset = 0, src_offset = 0;
  Dims dst(dims.size());
  Dims src = RowMajorStrides(dims);
  for (size_t k = 0; k < dims.size(); ++k) {
    offset += begin[k] * out_strides[k];
    dst[k] = step[k] * out_strides[k];
    if (dst[k] < 0 && dims[k] > 0) {
      offset += (dims[k] - 1) * dst[k];
      src_offset += (dims[k] - 1) * src[k];
      dst[k] = -dst[k];
      src[k] = -src[k];
    }
  }
  return D::Copy(ctx, esz, dims, At(dy.raw_data(), src_offset, esz), src,
                 At(out->raw_data(), offset, esz), dst);
}

// The plan of strided_slice(x) and its gradient; errors prefixed with the
// node's op.
inline absl::StatusOr<StridedSlicePlan> PlanOf(OpKernelContext* ctx,
                                               const Shape& x) {
  absl::StatusOr<StridedSlicePlan> plan =
      PlanStridedSlice(x, ctx->node().attrs());
  if (!plan.ok()) {
    return absl::Status(plan.status().code(), StrCat(ctx->node().op(), ": ",
                                                     plan.status().message()));
  }
  return plan;
}

// reshape, expand_dims, squeeze: a view of the input's buffer.
template <typename D>
class ViewKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    RN_ASSIGN_OR_RETURN(Tensor view, ctx->input(0).Reshaped(std::move(shape)));
    return ctx->set_output(0, std::move(view));
  }
  bool IsExpensive() const override { return false; }
};

template <typename D>
class TransposeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    RN_ASSIGN_OR_RETURN(auto src, TransposeReadStrides(ctx->node(), x.shape()));
    if (!src.has_value()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    return D::Copy(ctx, DTypeSize(x.dtype()), shape.dims(), x.raw_data(), *src,
                   y->raw_data(), RowMajorStrides(shape));
  }
};

// concat and stack: the output has the layout of a split's input.
template <typename D>
class JoinKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    RN_ASSIGN_OR_RETURN(int64_t axis, ctx->node().attr<int64_t>("axis"));
    RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, shape.rank()));
    if (ctx->num_inputs() == 1) {
      RN_ASSIGN_OR_RETURN(Tensor view, ctx->input(0).Reshaped(shape));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    Dims elements;
    std::vector<void*> parts;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      elements.push_back(ctx->input(i).num_elements());
      parts.push_back(ctx->input(i).raw_data());
    }
    return D::CopyAlongAxis(ctx, DTypeSize(y->dtype()),
                            Product(shape.dims(), a), y->raw_data(), parts,
                            elements, /*join=*/true);
  }
};

// split and unstack.
template <typename D>
class SplitKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(std::vector<Shape> shapes, D::OutputShapes(ctx, *this));
    RN_ASSIGN_OR_RETURN(int64_t axis, ctx->node().attr<int64_t>("axis"));
    RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, x.rank()));
    if (ctx->num_outputs() == 1) {
      RN_ASSIGN_OR_RETURN(Tensor view, x.Reshaped(shapes[0]));
      return ctx->set_output(0, std::move(view));
    }
    Dims elements;
    std::vector<void*> parts;
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(i, shapes[i]));
      elements.push_back(out->num_elements());
      parts.push_back(out->raw_data());
    }
    return D::CopyAlongAxis(ctx, DTypeSize(x.dtype()),
                            Product(x.shape().dims(), a), x.raw_data(), parts,
                            elements, /*join=*/false);
  }
};

// tile: output axis k of size m*d is (repeat m, element d), a copy whose
// source stride is 0 along the repeats.
template <typename D>
class TileKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const Dims in = RowMajorStrides(x.shape());
    const Dims out = RowMajorStrides(shape);
    Dims dims, src, dst;
    for (int k = 0; k < x.rank(); ++k) {
      const int64_t d = x.dim(k);
      dims.insert(dims.end(), {d == 0 ? 0 : shape.dim(k) / d, d});
      src.insert(src.end(), {0, in[k]});
      dst.insert(dst.end(), {d * out[k], out[k]});
    }
    return D::Copy(ctx, DTypeSize(x.dtype()), dims, x.raw_data(), src,
                   y->raw_data(), dst);
  }
};

// broadcast_to(x, shape), broadcast_like(g, x): input 0 broadcast to the
// output shape, NumPy-style; a view when no element repeats.
template <typename D>
class BroadcastKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    if (shape.num_elements() == x.num_elements()) {
      RN_ASSIGN_OR_RETURN(Tensor view, x.Reshaped(shape));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const Dims in = RowMajorStrides(x.shape());
    const int offset = shape.rank() - x.rank();
    Dims src(shape.rank(), 0);
    for (int k = 0; k < x.rank(); ++k) {
      src[offset + k] = x.dim(k) == 1 ? 0 : in[k];
    }
    return D::Copy(ctx, DTypeSize(x.dtype()), shape.dims(), x.raw_data(), src,
                   y->raw_data(), RowMajorStrides(shape));
  }
};

// slice(x, begin, size).
template <typename D>
class SliceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    if (shape == x.shape()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    return TakeBlock<D>(ctx, x, ctx->input(1).ToInt64s(), Dims(x.rank(), 1),
                        shape.dims(), y);
  }
};

// slice_grad(x, begin, dy).
template <typename D>
class SliceGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(2);
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    if (shape == dy.shape()) return ctx->set_output(0, dy);
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    return ScatterBlock<D>(ctx, dy, dy.shape().dims(), ctx->input(1).ToInt64s(),
                           Dims(shape.rank(), 1), out);
  }
};

template <typename D>
class StridedSliceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(StridedSlicePlan plan, PlanOf(ctx, x.shape()));
    if (plan.size == x.shape().dims() && plan.stride == Dims(x.rank(), 1)) {
      RN_ASSIGN_OR_RETURN(Tensor view, x.Reshaped(plan.output));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, plan.output));
    return TakeBlock<D>(ctx, x, plan.begin, plan.stride, plan.size, y);
  }
};

// strided_slice_grad(x, dy): dy holds the taken elements in order (new and
// shrunk axes are of size 1 and move none).
template <typename D>
class StridedSliceGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& dy = ctx->input(1);
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    RN_ASSIGN_OR_RETURN(StridedSlicePlan plan, PlanOf(ctx, x.shape()));
    if (plan.size == shape.dims() && plan.stride == Dims(shape.rank(), 1)) {
      RN_ASSIGN_OR_RETURN(Tensor view, dy.Reshaped(shape));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    return ScatterBlock<D>(ctx, dy, plan.size, plan.begin, plan.stride, out);
  }
};

// pad(x, paddings, value): the value everywhere, then x inside.
template <typename D>
class PadKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    if (shape == x.shape()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const size_t esz = DTypeSize(x.dtype());
    RN_RETURN_IF_ERROR(D::Fill(ctx, y->raw_data(), y->num_elements(),
                               ctx->input(2).raw_data(), esz));
    const Dims pads = ctx->input(1).ToInt64s();
    const Dims strides = RowMajorStrides(shape);
    int64_t offset = 0;
    for (int k = 0; k < x.rank(); ++k) offset += pads[2 * k] * strides[k];
    return D::Copy(ctx, esz, x.shape().dims(), x.raw_data(),
                   RowMajorStrides(x.shape()), At(y->raw_data(), offset, esz),
                   strides);
  }
};

// pad_grad(dy, x, paddings): the block of dy inside the padding.
template <typename D>
class PadGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    if (shape == dy.shape()) return ctx->set_output(0, dy);
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    const Dims pads = ctx->input(2).ToInt64s();
    Dims begin;
    for (int k = 0; k < shape.rank(); ++k) begin.push_back(pads[2 * k]);
    return TakeBlock<D>(ctx, dy, begin, Dims(shape.rank(), 1), shape.dims(),
                        out);
  }
};

// dynamic_index(x, index): row `index` of x.
template <typename D>
class DynamicIndexKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    RN_ASSIGN_OR_RETURN(int64_t i, AxisPosition(ctx->input(1), x.dim(0)));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const int64_t row = y->num_elements();
    const size_t esz = DTypeSize(x.dtype());
    return CopyRun<D>(ctx, esz, row, At(x.raw_data(), i * row, esz),
                      y->raw_data());
  }
};

// dynamic_index_grad(x, index, dy): zeros but for row `index`, dy.
template <typename D>
class DynamicIndexGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& dy = ctx->input(2);
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    RN_ASSIGN_OR_RETURN(int64_t i, AxisPosition(ctx->input(1), x.dim(0),
                                                "dynamic_index_grad: "));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    RN_RETURN_IF_ERROR(D::Zero(ctx, out->raw_data(), out->bytes()));
    const int64_t row = dy.num_elements();
    const size_t esz = DTypeSize(dy.dtype());
    return CopyRun<D>(ctx, esz, row, dy.raw_data(),
                      At(out->raw_data(), i * row, esz));
  }
};

// Output 0 of dynamic_update_index / dynamic_index_add(x, index, value): x,
// in x's own buffer when the executor hands it over (a scan's accumulator,
// a loop gradient's sum), so a step costs one row; and the row the value
// goes to. The value must fit one row of x.
template <typename D>
absl::StatusOr<std::pair<Tensor*, int64_t>> RowUpdate(OpKernelContext* ctx) {
  const Tensor& x = ctx->input(0);
  RN_ASSIGN_OR_RETURN(int64_t i,
                      RowUpdatePosition(x, ctx->input(1), ctx->input(2)));
  bool forwarded = false;
  RN_ASSIGN_OR_RETURN(
      Tensor * y, ctx->forward_input_or_allocate(0, 0, x.shape(), &forwarded));
  if (!forwarded) {
    RN_RETURN_IF_ERROR(CopyRun<D>(ctx, DTypeSize(x.dtype()), x.num_elements(),
                                  x.raw_data(), y->raw_data()));
  }
  return std::make_pair(y, i);
}

// dynamic_update_index(x, index, value): x[index] = value.
template <typename D>
class DynamicUpdateIndexKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto at, RowUpdate<D>(ctx));
    const Tensor& value = ctx->input(2);
    const int64_t row = value.num_elements();
    const size_t esz = DTypeSize(value.dtype());
    return CopyRun<D>(ctx, esz, row, value.raw_data(),
                      At(at.first->raw_data(), at.second * row, esz));
  }
};

// dynamic_update_index_grad(dy, index) -> (dy with row index zeroed, that
// row), the first in dy's buffer when nothing else holds it.
template <typename D>
class DynamicUpdateIndexGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    RN_ASSIGN_OR_RETURN(int64_t i, RowPosition(dy, ctx->input(1)));
    const Dims row_dims(dy.shape().dims().begin() + 1, dy.shape().dims().end());
    RN_ASSIGN_OR_RETURN(Tensor * row, ctx->allocate_output(1, Shape(row_dims)));
    const int64_t n = row->num_elements();
    const size_t esz = DTypeSize(dy.dtype());
    // The row first: dx may be dy's own buffer.
    RN_RETURN_IF_ERROR(CopyRun<D>(ctx, esz, n, At(dy.raw_data(), i * n, esz),
                                  row->raw_data()));
    bool forwarded = false;
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->forward_input_or_allocate(
                                         0, 0, dy.shape(), &forwarded));
    if (!forwarded) {
      RN_RETURN_IF_ERROR(CopyRun<D>(ctx, esz, dy.num_elements(), dy.raw_data(),
                                    dx->raw_data()));
    }
    return D::Zero(ctx, At(dx->raw_data(), i * n, esz), row->bytes());
  }
};

// fill(shape, value).
template <typename D>
class FillKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, OutputShape<D>(ctx, *this));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    return D::Fill(ctx, y->raw_data(), y->num_elements(),
                   ctx->input(1).raw_data(), DTypeSize(y->dtype()));
  }
};

// zeros_like (kValue 0) and ones_like (kValue 1).
template <typename D, int kValue>
class ConstantLikeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Tensor * y,
                        ctx->allocate_output(0, ctx->input(0).shape()));
    const Tensor value = Tensor::ScalarOf(ctx->output_dtype(0), kValue);
    return D::Fill(ctx, y->raw_data(), y->num_elements(), value.raw_data(),
                   DTypeSize(y->dtype()));
  }
};

}  // namespace runnel::array_kernels

#endif  // RUNNEL_KERNELS_COMMON_ARRAY_KERNELS_H_
