// The array kernels of the GPU: the bodies shared with the CPU
// (kernels/common/array_kernels.h) over the GPU's primitives
// (array_primitives.h: a strided copy launch, array.cu; a fill; a memset).
// The kernels that look at elements have the CPU's files: gather and
// dynamic_index_add in slice_kernels.cc, one_hot in creation_kernels.cc,
// gather_grad and tile_grad in grad_kernels.cc, unsorted_segment_sum in
// sparse_kernels.cc. Inputs that give shapes, offsets or fill values (reshape's
// shape, slice's begin and size, ...) are read on the host, so they are
// registered in host memory (HostMemory, framework/kernel.h), and the checks
// on them are the CPU kernels' own (the ops' shape functions, through
// ConcreteOutputShape).
#include "kernels/common/array_kernels.h"

#include <vector>

#include "base/strings.h"
#include "kernels/common/array_util.h"
#include "kernels/cuda/array.h"
#include "kernels/cuda/array_primitives.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {

namespace ak = array_kernels;
using Dims = GpuArrays::Dims;

// The shape function sees the inputs the kernel takes in host memory.
absl::StatusOr<std::vector<Shape>> GpuArrays::OutputShapes(
    OpKernelContext* ctx, const OpKernel& kernel) {
  return ConcreteOutputShapes(*ctx, kernel);
}

// Size-1 dims dropped, neighbours contiguous on both sides merged, a
// wholly contiguous block one memcpy, any other one strided-copy launch.
absl::Status GpuArrays::Copy(OpKernelContext* ctx, size_t esz, const Dims& dims,
                             const void* src, const Dims& src_strides,
                             void* dst, const Dims& dst_strides) {
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
absl::Status GpuArrays::CopyAlongAxis(OpKernelContext* ctx, size_t esz,
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

absl::Status GpuArrays::Fill(OpKernelContext* ctx, void* dst, int64_t n,
                             const void* value, size_t esz) {
  GpuContext& gpu = GpuContextOf(ctx);
  RN_RETURN_IF_ERROR(gpu.Activate());
  RN_CUDA(cuda::LaunchFill(dst, n, value, esz, gpu.compute()));
  return absl::OkStatus();
}

absl::Status GpuArrays::Zero(OpKernelContext* ctx, void* dst, size_t bytes) {
  GpuContext& gpu = GpuContextOf(ctx);
  RN_RETURN_IF_ERROR(gpu.Activate());
  RN_CUDA(cudaMemsetAsync(dst, 0, bytes, gpu.compute()));
  return absl::OkStatus();
}

absl::StatusOr<GpuArrays::GatherPlan> GpuArrays::PlanGather(
    OpKernelContext* ctx, std::string_view prefix) {
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
absl::StatusOr<Tensor> GpuArrays::ToGpu(OpKernelContext* ctx,
                                        const std::vector<int64_t>& v) {
  return GpuContextOf(ctx).FromHost(
      Tensor::FromVector(v, Shape{static_cast<int64_t>(v.size())}));
}

// The sum of the rows of `dy` (viewed as [outer, m, inner]) by `indices`
// (each in [0, n)) into `out` ([outer, n, inner]): the rows of each index
// listed on the host (a counting sort that keeps their order), so the sums
// are deterministic, in the CPU's order, and need no atomics. Serves
// gather_grad and unsorted_segment_sum.
absl::Status GpuArrays::SumRowsByIndex(OpKernelContext* ctx, const Tensor& dy,
                                       const std::vector<int64_t>& indices,
                                       int64_t outer, int64_t n, int64_t inner,
                                       Tensor* out) {
  if (out->num_elements() == 0) return absl::OkStatus();
  const int64_t m = static_cast<int64_t>(indices.size());
  if (m == 0) {
    return Zero(ctx, out->raw_data(), out->bytes());
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

namespace {

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
  Shared<ak::DynamicIndexGradKernel>("dynamic_index_grad", {.inputs = {1}});
  Shared<ak::DynamicUpdateIndexKernel>("dynamic_update_index", {.inputs = {1}});
  Shared<ak::DynamicUpdateIndexGradKernel>("dynamic_update_index_grad",
                                           {.inputs = {1}});
  Shared<ak::FillKernel>("fill", {.inputs = {0, 1}});
  Register<ak::ConstantLikeKernel<GpuArrays, 0>>("zeros_like");
  Register<ak::ConstantLikeKernel<GpuArrays, 1>>("ones_like");
}

}  // namespace
}  // namespace runnel
