// The array kernels of the GPU: the bodies shared with the CPU
// (kernels/common/array_kernels.h) over the GPU's primitives (a strided copy
// launch, array.cu; a fill; a memset), and the kernels that look at
// elements: dynamic_index_add (an add of one row in place), one_hot,
// gather, and the sums of rows by index (gather_grad, unsorted_segment_sum)
// and tile_grad. Inputs that give shapes, offsets or fill values (reshape's
// shape, slice's begin and size, ...) are read on the host, so they are
// registered in host memory (HostMemory, framework/kernel.h), and the checks
// on them are the CPU kernels' own (the ops' shape functions, through
// ConcreteOutputShape).
#include "kernels/common/array_kernels.h"

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

namespace ak = array_kernels;

// The GPU's primitives for the shared array kernels: copies, fills and
// zeros on the compute stream.
struct GpuArrays {
  // The shape function sees the inputs the kernel takes in host memory.
  static absl::StatusOr<std::vector<Shape>> OutputShapes(
      OpKernelContext* ctx, const OpKernel& kernel) {
    return ConcreteOutputShapes(*ctx, kernel);
  }

  // Size-1 dims dropped, neighbours contiguous on both sides merged, a
  // wholly contiguous block one memcpy, any other one strided-copy launch.
  static absl::Status Copy(OpKernelContext* ctx, size_t esz, const Dims& dims,
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

  // One strided copy per part.
  static absl::Status CopyAlongAxis(OpKernelContext* ctx, size_t esz,
                                    int64_t outer, void* big,
                                    const std::vector<void*>& parts,
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
      void* b = ak::At(big, offset, esz);
      if (join) {
        RN_RETURN_IF_ERROR(
            Copy(ctx, esz, dims, parts[i], part_strides, b, big_strides));
      } else {
        RN_RETURN_IF_ERROR(
            Copy(ctx, esz, dims, b, big_strides, parts[i], part_strides));
      }
      offset += chunk;
    }
    return absl::OkStatus();
  }

  static absl::Status Fill(OpKernelContext* ctx, void* dst, int64_t n,
                           const void* value, size_t esz) {
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchFill(dst, n, value, esz, gpu.compute()));
    return absl::OkStatus();
  }

  static absl::Status Zero(OpKernelContext* ctx, void* dst, size_t bytes) {
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cudaMemsetAsync(dst, 0, bytes, gpu.compute()));
    return absl::OkStatus();
  }
};

// dynamic_index_add(x, index, value): x[index] += value, one element-wise
// add in place.
class DynamicIndexAddKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto at, ak::RowUpdate<GpuArrays>(ctx));
    const Tensor& value = ctx->input(2);
    const int64_t row = value.num_elements();
    if (row == 0) return absl::OkStatus();
    const cuda::ElemType type = GpuElemType(value.dtype());
    void* dst =
        ak::At(at.first->raw_data(), at.second * row, DTypeSize(value.dtype()));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchBinary(cuda::BinaryOp::kAdd, type, dst,
                               value.raw_data(), dst, row, nullptr,
                               gpu.compute()));
    return absl::OkStatus();
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
    return GpuArrays::Zero(ctx, out->raw_data(), out->bytes());
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

template <typename K>
void Register(const std::string& op, const HostMemory& host = {}) {
  RegisterKernelForAllTypes<K>(op, kDeviceGpu, host);
}

// A kernel shared with the CPU (kernels/common/array_kernels.h).
template <template <typename> class K>
void Shared(const std::string& op, const HostMemory& host = {}) {
  Register<K<GpuArrays>>(op, host);
}

RUNNEL_STATIC_INIT(GpuArrayKernels) {
  Shared<ak::ViewKernel>("reshape", {.inputs = {1}});
  Shared<ak::ViewKernel>("expand_dims");
  Shared<ak::ViewKernel>("squeeze");
  Shared<ak::TransposeKernel>("transpose");
  Shared<ak::JoinKernel>("concat");
  Shared<ak::JoinKernel>("stack");
  Shared<ak::SplitKernel>("split");
  Shared<ak::SplitKernel>("unstack");
  Shared<ak::TileKernel>("tile", {.inputs = {1}});
  Shared<ak::BroadcastKernel>("broadcast_to", {.inputs = {1}});
  Shared<ak::BroadcastKernel>("broadcast_like");
  Shared<ak::SliceKernel>("slice", {.inputs = {1, 2}});
  Shared<ak::SliceGradKernel>("slice_grad", {.inputs = {1}});
  Shared<ak::StridedSliceKernel>("strided_slice");
  Shared<ak::StridedSliceGradKernel>("strided_slice_grad");
  Shared<ak::PadKernel>("pad", {.inputs = {1, 2}});
  Shared<ak::PadGradKernel>("pad_grad", {.inputs = {2}});
  Shared<ak::DynamicIndexKernel>("dynamic_index", {.inputs = {1}});
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
  Shared<ak::DynamicIndexGradKernel>("dynamic_index_grad", {.inputs = {1}});
  Shared<ak::DynamicUpdateIndexKernel>("dynamic_update_index", {.inputs = {1}});
  Shared<ak::DynamicUpdateIndexGradKernel>("dynamic_update_index_grad",
                                           {.inputs = {1}});
  Register<OneHotKernel>("one_hot");
  Shared<ak::FillKernel>("fill", {.inputs = {0, 1}});
  Register<ak::ConstantLikeKernel<GpuArrays, 0>>("zeros_like");
  Register<ak::ConstantLikeKernel<GpuArrays, 1>>("ones_like");
}

}  // namespace
}  // namespace runnel
