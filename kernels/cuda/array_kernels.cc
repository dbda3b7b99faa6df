// The shape, slicing and creation ops on the GPU (the CPU's:
// kernels/cpu/array_kernels.cc, slice_kernels.cc, creation_kernels.cc,
// grad_kernels.cc). Views (reshape, expand_dims, squeeze) share the input's
// buffer; every op that moves elements is one strided copy (array.cu) per
// output or part, and the creation ops one fill; the row updates of loops
// (dynamic_update_index, dynamic_index_add and their gradients) a copy or
// an add of one row in place; the sums of rows by index (gather_grad,
// unsorted_segment_sum) and tile_grad their own kernels. Inputs that give
// shapes, offsets or fill values (reshape's shape, slice's begin and size, ...)
// are read on the host, so they are registered in host memory (HostMemory,
// framework/kernel.h) and the checks on them are the CPU kernels' own (the
// ops' shape functions, through ConcreteOutputShape).
#include <algorithm>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "framework/ops/array_ops.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"
#include "kernels/cuda/array.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {
namespace {

using Dims = std::vector<int64_t>;

// Copies the block `dims` of elements of `esz` bytes from src to dst
// (strides in elements, either side's may be negative or, on the source
// side, 0) on the GPU's compute stream: size-1 dims dropped, neighbours
// contiguous on both sides merged, a wholly contiguous block one memcpy.
absl::Status CopyBlock(OpKernelContext* ctx, size_t esz, const Dims& dims,
                       const void* src, const Dims& src_strides, void* dst,
                       const Dims& dst_strides) {
  Dims d, s, t;
  int64_t n = 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 0) return absl::OkStatus();
    n *= dims[k];
    if (dims[k] == 1) continue;
    if (!d.empty() && s.back() == src_strides[k] * dims[k] &&
        t.back() == dst_strides[k] * dims[k]) {
      d.back() *= dims[k];
      s.back() = src_strides[k];
      t.back() = dst_strides[k];
      continue;
    }
    d.push_back(dims[k]);
    s.push_back(src_strides[k]);
    t.push_back(dst_strides[k]);
  }
  GpuContext& gpu = GpuContextOf(ctx);
  RN_RETURN_IF_ERROR(gpu.Activate());
  if (d.empty() || (d.size() == 1 && s[0] == 1 && t[0] == 1)) {
    RN_CUDA(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * esz,
                            cudaMemcpyDeviceToDevice, gpu.compute()));
    return absl::OkStatus();
  }
  if (d.size() > static_cast<size_t>(cuda::kMaxCopyDims)) {
    return absl::UnimplementedError(
        StrCat(ctx->node().op(), ": a copy of ", d.size(),
               " dims on the GPU (at most ", cuda::kMaxCopyDims, ")"));
  }
  cuda::CopyPlan plan;
  plan.rank = static_cast<int>(d.size());
  for (size_t k = 0; k < d.size(); ++k) {
    plan.dims[k] = d[k];
    plan.src[k] = s[k];
    plan.dst[k] = t[k];
  }
  RN_CUDA(cuda::LaunchStridedCopy(plan, esz, src, dst, gpu.compute()));
  return absl::OkStatus();
}

// `p` advanced by `elements` elements of `esz` bytes.
template <typename P>
P* At(P* p, int64_t elements, size_t esz) {
  using Byte = std::conditional_t<std::is_const_v<P>, const char, char>;
  return static_cast<P*>(static_cast<Byte*>(p) +
                         elements * static_cast<int64_t>(esz));
}

absl::Status Fill(OpKernelContext* ctx, Tensor* y, const void* value) {
  GpuContext& gpu = GpuContextOf(ctx);
  RN_RETURN_IF_ERROR(gpu.Activate());
  RN_CUDA(cuda::LaunchFill(y->raw_data(), y->num_elements(), value,
                           DTypeSize(y->dtype()), gpu.compute()));
  return absl::OkStatus();
}

// Sets `bytes` bytes at the GPU address `dst` to 0 (0 in every dtype).
absl::Status Zero(OpKernelContext* ctx, void* dst, size_t bytes) {
  GpuContext& gpu = GpuContextOf(ctx);
  RN_RETURN_IF_ERROR(gpu.Activate());
  RN_CUDA(cudaMemsetAsync(dst, 0, bytes, gpu.compute()));
  return absl::OkStatus();
}

// reshape, expand_dims, squeeze: a view of the input's buffer.
class ViewKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(Tensor view, ctx->input(0).Reshaped(std::move(shape)));
    return ctx->set_output(0, std::move(view));
  }
  bool IsExpensive() const override { return false; }
};

class TransposeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(auto src, TransposeReadStrides(ctx->node(), x.shape()));
    if (!src.has_value()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    return CopyBlock(ctx, DTypeSize(x.dtype()), shape.dims(), x.raw_data(),
                     *src, y->raw_data(), RowMajorStrides(shape));
  }
};

// Copies between a big tensor of `outer` rows and its parts (concat and
// stack join, split and unstack split): part i owns part_elements[i] /
// outer elements of each row, after those of the parts before it.
absl::Status CopyAlongAxis(OpKernelContext* ctx, size_t esz, int64_t outer,
                           void* big, const std::vector<void*>& parts,
                           const Dims& part_elements, bool join) {
  if (outer == 0) return absl::OkStatus();
  int64_t row = 0;
  for (int64_t n : part_elements) row += n / outer;
  int64_t offset = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t chunk = part_elements[i] / outer;
    const Dims dims = {outer, chunk};
    const Dims part_strides = {chunk, 1};
    const Dims big_strides = {row, 1};
    void* b = At(big, offset, esz);
    if (join) {
      RN_RETURN_IF_ERROR(
          CopyBlock(ctx, esz, dims, parts[i], part_strides, b, big_strides));
    } else {
      RN_RETURN_IF_ERROR(
          CopyBlock(ctx, esz, dims, b, big_strides, parts[i], part_strides));
    }
    offset += chunk;
  }
  return absl::OkStatus();
}

int64_t Product(const Dims& dims, int end) {
  int64_t n = 1;
  for (int i = 0; i < end; ++i) n *= dims[i];
  return n;
}

// concat and stack.
class JoinKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
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
    return CopyAlongAxis(ctx, DTypeSize(y->dtype()), Product(shape.dims(), a),
                         y->raw_data(), parts, elements, /*join=*/true);
  }
};

// split and unstack.
class SplitKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(std::vector<Shape> shapes,
                        ConcreteOutputShapes(*ctx, *this));
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
    return CopyAlongAxis(ctx, DTypeSize(x.dtype()),
                         Product(x.shape().dims(), a), x.raw_data(), parts,
                         elements, /*join=*/false);
  }
};

// tile: output axis k of size m*d is (repeat m, element d).
class TileKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
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
    return CopyBlock(ctx, DTypeSize(x.dtype()), dims, x.raw_data(), src,
                     y->raw_data(), dst);
  }
};

// broadcast_to(x, shape), broadcast_like(g, x): a view when no element
// repeats.
class BroadcastKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
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
    return CopyBlock(ctx, DTypeSize(x.dtype()), shape.dims(), x.raw_data(), src,
                     y->raw_data(), RowMajorStrides(shape));
  }
};

// The block of x at `begin` with steps `step` and extent `size`, into y
// (row-major over size).
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
  return CopyBlock(ctx, esz, size, At(x.raw_data(), offset, esz), src,
                   y->raw_data(), RowMajorStrides(size));
}

// dy (row-major over `dims`) into zeros of out, element k of axis i at
// begin[i] + k * step[i]: the gradients of the slices.
absl::Status ScatterBlock(OpKernelContext* ctx, const Tensor& dy,
                          const Dims& dims, const Dims& begin, const Dims& step,
                          Tensor* out) {
  RN_RETURN_IF_ERROR(
      Fill(ctx, out, Tensor::ScalarOf(out->dtype(), 0).raw_data()));
  const size_t esz = DTypeSize(dy.dtype());
  const Dims out_strides = RowMajorStrides(out->shape());
  int64_t offset = 0;
  Dims dst(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) {
    offset += begin[k] * out_strides[k];
    dst[k] = step[k] * out_strides[k];
  }
  return CopyBlock(ctx, esz, dims, dy.raw_data(), RowMajorStrides(dims),
                   At(out->raw_data(), offset, esz), dst);
}

// slice(x, begin, size).
class SliceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    if (shape == x.shape()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    return TakeBlock(ctx, x, ctx->input(1).ToInt64s(), Dims(x.rank(), 1),
                     shape.dims(), y);
  }
};

// slice_grad(x, begin, dy).
class SliceGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(2);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    if (shape == dy.shape()) return ctx->set_output(0, dy);
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    return ScatterBlock(ctx, dy, dy.shape().dims(), ctx->input(1).ToInt64s(),
                        Dims(shape.rank(), 1), out);
  }
};

absl::StatusOr<StridedSlicePlan> Plan(OpKernelContext* ctx, const Shape& x) {
  absl::StatusOr<StridedSlicePlan> plan =
      PlanStridedSlice(x, ctx->node().attrs());
  if (!plan.ok()) {
    return absl::Status(plan.status().code(), StrCat(ctx->node().op(), ": ",
                                                     plan.status().message()));
  }
  return plan;
}

class StridedSliceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(StridedSlicePlan plan, Plan(ctx, x.shape()));
    if (plan.size == x.shape().dims() && plan.stride == Dims(x.rank(), 1)) {
      RN_ASSIGN_OR_RETURN(Tensor view, x.Reshaped(plan.output));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, plan.output));
    return TakeBlock(ctx, x, plan.begin, plan.stride, plan.size, y);
  }
};

// strided_slice_grad(x, dy).
class StridedSliceGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& dy = ctx->input(1);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(StridedSlicePlan plan, Plan(ctx, x.shape()));
    if (plan.size == shape.dims() && plan.stride == Dims(shape.rank(), 1)) {
      RN_ASSIGN_OR_RETURN(Tensor view, dy.Reshaped(shape));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    return ScatterBlock(ctx, dy, plan.size, plan.begin, plan.stride, out);
  }
};

// pad(x, paddings, value): the value everywhere, then x inside.
class PadKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    if (shape == x.shape()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    RN_RETURN_IF_ERROR(Fill(ctx, y, ctx->input(2).raw_data()));
    const Dims pads = ctx->input(1).ToInt64s();
    const Dims strides = RowMajorStrides(shape);
    int64_t offset = 0;
    for (int k = 0; k < x.rank(); ++k) offset += pads[2 * k] * strides[k];
    const size_t esz = DTypeSize(x.dtype());
    return CopyBlock(ctx, esz, x.shape().dims(), x.raw_data(),
                     RowMajorStrides(x.shape()), At(y->raw_data(), offset, esz),
                     strides);
  }
};

// pad_grad(dy, x, paddings): the block of dy inside the padding.
class PadGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    if (shape == dy.shape()) return ctx->set_output(0, dy);
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    const Dims pads = ctx->input(2).ToInt64s();
    Dims begin;
    for (int k = 0; k < shape.rank(); ++k) begin.push_back(pads[2 * k]);
    return TakeBlock(ctx, dy, begin, Dims(shape.rank(), 1), shape.dims(), out);
  }
};

// dynamic_index(x, index): row `index` of x (checked on the host, with
// the CPU's error).
class DynamicIndexKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(int64_t i, AxisPosition(ctx->input(1), x.dim(0)));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const int64_t row = y->num_elements();
    const size_t esz = DTypeSize(x.dtype());
    return CopyBlock(ctx, esz, {row}, At(x.raw_data(), i * row, esz), {1},
                     y->raw_data(), {1});
  }
};

// dynamic_index_grad(x, index, dy): zeros but for row `index`, dy.
class DynamicIndexGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& dy = ctx->input(2);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(int64_t i, AxisPosition(ctx->input(1), x.dim(0),
                                                "dynamic_index_grad: "));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    RN_RETURN_IF_ERROR(Zero(ctx, out->raw_data(), out->bytes()));
    const int64_t row = dy.num_elements();
    const size_t esz = DTypeSize(dy.dtype());
    return CopyBlock(ctx, esz, {row}, dy.raw_data(), {1},
                     At(out->raw_data(), i * row, esz), {1});
  }
};

// Output 0 of dynamic_update_index / dynamic_index_add(x, index, value):
// x, in x's own buffer when the executor hands it over (a loop's
// accumulator), so a step costs one row; and the row the value goes to.
absl::StatusOr<std::pair<Tensor*, int64_t>> RowUpdate(OpKernelContext* ctx) {
  const Tensor& x = ctx->input(0);
  RN_ASSIGN_OR_RETURN(int64_t i,
                      RowUpdatePosition(x, ctx->input(1), ctx->input(2)));
  bool forwarded = false;
  RN_ASSIGN_OR_RETURN(
      Tensor * y, ctx->forward_input_or_allocate(0, 0, x.shape(), &forwarded));
  if (!forwarded) {
    RN_RETURN_IF_ERROR(CopyBlock(ctx, DTypeSize(x.dtype()), {x.num_elements()},
                                 x.raw_data(), {1}, y->raw_data(), {1}));
  }
  return std::make_pair(y, i);
}

// dynamic_update_index(x, index, value): x[index] = value.
class DynamicUpdateIndexKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto at, RowUpdate(ctx));
    const Tensor& value = ctx->input(2);
    const int64_t row = value.num_elements();
    const size_t esz = DTypeSize(value.dtype());
    return CopyBlock(ctx, esz, {row}, value.raw_data(), {1},
                     At(at.first->raw_data(), at.second * row, esz), {1});
  }
};

// dynamic_index_add(x, index, value): x[index] += value, one element-wise
// add in place.
class DynamicIndexAddKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto at, RowUpdate(ctx));
    const Tensor& value = ctx->input(2);
    const int64_t row = value.num_elements();
    if (row == 0) return absl::OkStatus();
    const cuda::ElemType type = GpuElemType(value.dtype());
    void* dst =
        At(at.first->raw_data(), at.second * row, DTypeSize(value.dtype()));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchBinary(cuda::BinaryOp::kAdd, type, dst,
                               value.raw_data(), dst, row, nullptr,
                               gpu.compute()));
    return absl::OkStatus();
  }
};

// dynamic_update_index_grad(dy, index) -> (dy with row index zeroed, that
// row), the first in dy's buffer when nothing else holds it.
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
    RN_RETURN_IF_ERROR(CopyBlock(ctx, esz, {n}, At(dy.raw_data(), i * n, esz),
                                 {1}, row->raw_data(), {1}));
    bool forwarded = false;
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->forward_input_or_allocate(
                                         0, 0, dy.shape(), &forwarded));
    if (!forwarded) {
      RN_RETURN_IF_ERROR(CopyBlock(ctx, esz, {dy.num_elements()}, dy.raw_data(),
                                   {1}, dx->raw_data(), {1}));
    }
    return Zero(ctx, At(dx->raw_data(), i * n, esz), row->bytes());
  }
};

// one_hot(indices): indices (integers, on the GPU) as [outer, inner]
// around the new axis.
class OneHotKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(a_, OneHotAttrs::Of(node));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const auto [outer, inner] = a_.OuterInner(indices);
    if (!IsInteger(indices.dtype())) {
      return absl::InvalidArgumentError(
          StrCat("one_hot: indices must be integers, got ",
                 DTypeName(indices.dtype())));
    }
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchOneHot(GpuElemType(indices.dtype()), indices.raw_data(),
                               y->raw_data(), DTypeSize(y->dtype()), outer,
                               a_.depth, inner, a_.on.raw_data(),
                               a_.off.raw_data(), gpu.compute()));
    return absl::OkStatus();
  }

 private:
  OneHotAttrs a_;  // on and off in host memory
};

// Output `a`'s outer, axis and inner sizes of gather's params; the
// indices, checked as on the CPU (they are in host memory), and the axis.
struct GatherPlan {
  int axis = 0;
  int64_t outer = 1, n = 0, inner = 1;
  std::vector<int64_t> indices;
};
absl::StatusOr<GatherPlan> PlanGather(OpKernelContext* ctx,
                                      std::string_view prefix) {
  const Tensor& params = ctx->input(0);
  RN_ASSIGN_OR_RETURN(int64_t axis, ctx->node().attr<int64_t>("axis"));
  GatherPlan p;
  RN_ASSIGN_OR_RETURN(p.axis, NormalizeAxis(axis, params.rank()));
  for (int k = 0; k < p.axis; ++k) p.outer *= params.dim(k);
  for (int k = p.axis + 1; k < params.rank(); ++k) p.inner *= params.dim(k);
  p.n = params.dim(p.axis);
  p.indices = ctx->input(1).ToInt64s();
  RN_RETURN_IF_ERROR(
      CheckGatherIndices(p.indices, p.n, p.axis, params.shape(), prefix));
  return p;
}

// `v` in the GPU's memory, for a kernel on its compute stream.
absl::StatusOr<Tensor> ToGpu(OpKernelContext* ctx,
                             const std::vector<int64_t>& v) {
  return GpuContextOf(ctx).FromHost(
      Tensor::FromVector(v, Shape{static_cast<int64_t>(v.size())}));
}

// gather(params, indices): the indices checked on the host (the CPU's
// error), then copied to the GPU.
class GatherKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(GatherPlan p, PlanGather(ctx, ""));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    if (y->num_elements() == 0) return absl::OkStatus();
    RN_ASSIGN_OR_RETURN(Tensor indices, ToGpu(ctx, p.indices));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchGather(params.raw_data(), indices.data<int64_t>(),
                               y->raw_data(), p.outer, p.n,
                               static_cast<int64_t>(p.indices.size()), p.inner,
                               DTypeSize(params.dtype()), gpu.compute()));
    return absl::OkStatus();
  }
};

// The sum of the rows of `dy` (viewed as [outer, m, inner]) by `indices`
// (each in [0, n)) into `out` ([outer, n, inner]): the rows of each index
// listed on the host (a counting sort that keeps their order), so the sums
// are deterministic, in the CPU's order, and need no atomics. Serves
// gather_grad and unsorted_segment_sum.
absl::Status SumRowsByIndex(OpKernelContext* ctx, const Tensor& dy,
                            const std::vector<int64_t>& indices, int64_t outer,
                            int64_t n, int64_t inner, Tensor* out) {
  if (out->num_elements() == 0) return absl::OkStatus();
  const int64_t m = static_cast<int64_t>(indices.size());
  if (m == 0) {
    return Fill(ctx, out, Tensor::ScalarOf(out->dtype(), 0).raw_data());
  }
  const cuda::ElemType type = GpuElemType(out->dtype());
  std::vector<int64_t> starts(n + 1, 0), order(m);
  for (int64_t r : indices) ++starts[r + 1];
  for (int64_t r = 0; r < n; ++r) starts[r + 1] += starts[r];
  std::vector<int64_t> next(starts.begin(), starts.end() - 1);
  for (int64_t j = 0; j < m; ++j) order[next[indices[j]]++] = j;
  RN_ASSIGN_OR_RETURN(Tensor starts_gpu, ToGpu(ctx, starts));
  RN_ASSIGN_OR_RETURN(Tensor order_gpu, ToGpu(ctx, order));
  GpuContext& gpu = GpuContextOf(ctx);
  RN_RETURN_IF_ERROR(gpu.Activate());
  RN_CUDA(cuda::LaunchGatherGrad(type, dy.raw_data(),
                                 starts_gpu.data<int64_t>(),
                                 order_gpu.data<int64_t>(), out->raw_data(),
                                 outer, n, m, inner, gpu.compute()));
  return absl::OkStatus();
}

// gather_grad(params, indices, dy).
class GatherGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(GatherPlan p, PlanGather(ctx, "gather_grad: "));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    return SumRowsByIndex(ctx, ctx->input(2), p.indices, p.outer, p.n, p.inner,
                          out);
  }
};

// unsorted_segment_sum(data, segment_ids, num_segments), checked on the
// host as on the CPU (the ids are in host memory).
class SegmentSumKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    RN_ASSIGN_OR_RETURN(SegmentSumPlan plan,
                        PlanSegmentSum(data, ctx->input(1), ctx->input(2)));
    RN_ASSIGN_OR_RETURN(Tensor * y,
                        ctx->allocate_output(0, plan.output_shape()));
    return SumRowsByIndex(ctx, data, plan.ids, 1, plan.num, plan.row_size(), y);
  }
};

// tile_grad(dy, x): each element of x's gradient adds its tiles of dy.
class TileGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    if (shape == dy.shape()) return ctx->set_output(0, dy);
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    if (out->num_elements() == 0) return absl::OkStatus();
    if (shape.rank() > cuda::kMaxCopyDims) {
      return absl::UnimplementedError(StrCat("tile_grad: rank ", shape.rank(),
                                             " on the GPU (at most ",
                                             cuda::kMaxCopyDims, ")"));
    }
    const cuda::ElemType type = GpuElemType(dy.dtype());
    cuda::TilePlan plan;
    plan.rank = shape.rank();
    const Dims strides = RowMajorStrides(dy.shape());
    for (int k = 0; k < shape.rank(); ++k) {
      plan.dims[k] = shape.dim(k);
      plan.multiples[k] = dy.dim(k) / shape.dim(k);
      plan.dy_strides[k] = strides[k];
    }
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchTileGrad(type, plan, dy.raw_data(), out->raw_data(),
                                 gpu.compute()));
    return absl::OkStatus();
  }
};

// fill(shape, value).
class FillKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    return Fill(ctx, y, ctx->input(1).raw_data());
  }
};

// zeros_like, ones_like.
template <int kValue>
class ConstantLikeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Tensor * y,
                        ctx->allocate_output(0, ctx->input(0).shape()));
    return Fill(ctx, y,
                Tensor::ScalarOf(ctx->output_dtype(0), kValue).raw_data());
  }
};

template <typename K>
void Register(const std::string& op, const HostMemory& host = {}) {
  RegisterKernelForAllTypes<K>(op, kDeviceGpu, host);
}

RUNNEL_STATIC_INIT(GpuArrayKernels) {
  Register<ViewKernel>("reshape", {.inputs = {1}});
  Register<ViewKernel>("expand_dims");
  Register<ViewKernel>("squeeze");
  Register<TransposeKernel>("transpose");
  Register<JoinKernel>("concat");
  Register<JoinKernel>("stack");
  Register<SplitKernel>("split");
  Register<SplitKernel>("unstack");
  Register<TileKernel>("tile", {.inputs = {1}});
  Register<BroadcastKernel>("broadcast_to", {.inputs = {1}});
  Register<BroadcastKernel>("broadcast_like");
  Register<SliceKernel>("slice", {.inputs = {1, 2}});
  Register<SliceGradKernel>("slice_grad", {.inputs = {1}});
  Register<StridedSliceKernel>("strided_slice");
  Register<StridedSliceGradKernel>("strided_slice_grad");
  Register<PadKernel>("pad", {.inputs = {1, 2}});
  Register<PadGradKernel>("pad_grad", {.inputs = {2}});
  Register<DynamicIndexKernel>("dynamic_index", {.inputs = {1}});
  Register<GatherKernel>("gather", {.inputs = {1}});
  // The element types the GPU's sums and adds have (cwise.h's ElemType
  // but bool), the CPU kernels' own but i8 and u8.
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16}) {
    RegisterKernel<GatherGradKernel>("gather_grad", kDeviceGpu, d,
                                     {.inputs = {1}});
    RegisterKernel<SegmentSumKernel>("unsorted_segment_sum", kDeviceGpu, d,
                                     {.inputs = {1, 2}});
    RegisterKernel<TileGradKernel>("tile_grad", kDeviceGpu, d);
  }
  // The CPU's dynamic_index_add has these four.
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
    RegisterKernel<DynamicIndexAddKernel>("dynamic_index_add", kDeviceGpu, d,
                                          {.inputs = {1}});
  }
  Register<DynamicIndexGradKernel>("dynamic_index_grad", {.inputs = {1}});
  Register<DynamicUpdateIndexKernel>("dynamic_update_index", {.inputs = {1}});
  Register<DynamicUpdateIndexGradKernel>("dynamic_update_index_grad",
                                         {.inputs = {1}});
  Register<OneHotKernel>("one_hot");
  Register<FillKernel>("fill", {.inputs = {0, 1}});
  Register<ConstantLikeKernel<0>>("zeros_like");
  Register<ConstantLikeKernel<1>>("ones_like");
}

}  // namespace
}  // namespace runnel
