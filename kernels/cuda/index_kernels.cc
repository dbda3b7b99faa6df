// The GPU's kernels of gather_elements, gather_nd, scatter_elements,
// scatter_nd and top_k (the CPU's: kernels/cpu/index_kernels.cc). The indices
// are in host memory: the plan (framework/ops/index_checks.h) is made and
// checked there, with the CPU's messages, and its targets copied to the GPU. A
// scatter combines each place's updates in one thread, in the CPU's order,
// so both devices give the same bits. top_k takes one thread per line
// (kernels/cuda/index.h). nonzero reads its count back to the host, which
// sizes its output (as TensorFlow's GPU Where does), then writes the
// coordinates on the GPU; unique_all reads back its number of distinct
// values the same way.
#include <vector>

#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/ops/index_checks.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"
#include "kernels/cuda/array.h"
#include "kernels/cuda/array_primitives.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/index.h"

namespace runnel {
namespace {

static_assert(static_cast<int>(cuda::ScatterHow::kMin) ==
              static_cast<int>(ScatterReduction::kMin));

template <bool kNd>
class GatherKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    std::vector<int64_t> target;
    int64_t slice = 1;
    Shape shape = indices.shape();
    if constexpr (kNd) {
      RN_ASSIGN_OR_RETURN(int64_t b, ctx->node().attr<int64_t>("batch_dims"));
      RN_ASSIGN_OR_RETURN(NdPlan plan, PlanNd(x.shape(), indices, b));
      target = std::move(plan.target);
      slice = plan.slice;
      shape = std::move(plan.output);
    } else {
      RN_ASSIGN_OR_RETURN(int64_t axis, ctx->node().attr<int64_t>("axis"));
      RN_ASSIGN_OR_RETURN(AlongAxisPlan plan,
                          PlanAlongAxis(x.shape(), indices, axis));
      target = std::move(plan.target);
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    if (y->num_elements() == 0) return absl::OkStatus();
    // Each target starts a slice (a multiple of its size): gather's rows
    // of x viewed as [1, slices, slice].
    for (int64_t& t : target) t /= slice;
    RN_ASSIGN_OR_RETURN(Tensor rows, GpuArrays::ToGpu(ctx, target));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchGather(x.raw_data(), rows.data<int64_t>(),
                               y->raw_data(), 1, x.num_elements() / slice,
                               static_cast<int64_t>(target.size()), slice,
                               DTypeSize(x.dtype()), gpu.compute()));
    return absl::OkStatus();
  }
};

template <bool kNd>
class ScatterKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, ScatterAttrs::Of(node, kNd));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& updates = ctx->input(2);
    RN_ASSIGN_OR_RETURN(ScatterPlan plan,
                        PlanScatter(kNd, data.shape(), ctx->input(1),
                                    updates.shape(), attrs_.at, attrs_.how));
    bool forwarded = false;
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->forward_input_or_allocate(
                                        0, 0, data.shape(), &forwarded));
    if (!forwarded && data.num_elements() > 0) {
      RN_RETURN_IF_ERROR(GpuArrays::Copy(ctx, DTypeSize(data.dtype()),
                                         {data.num_elements()}, data.raw_data(),
                                         {1}, y->raw_data(), {1}));
    }
    if (plan.target.empty() || plan.slice == 0) return absl::OkStatus();
    const TargetGroups g = GroupTargets(plan.target);
    RN_ASSIGN_OR_RETURN(Tensor places, GpuArrays::ToGpu(ctx, g.places));
    RN_ASSIGN_OR_RETURN(Tensor starts, GpuArrays::ToGpu(ctx, g.starts));
    RN_ASSIGN_OR_RETURN(Tensor order, GpuArrays::ToGpu(ctx, g.order));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchScatterSlices(
        GpuElemType(data.dtype()), static_cast<cuda::ScatterHow>(attrs_.how),
        updates.raw_data(), places.data<int64_t>(), starts.data<int64_t>(),
        order.data<int64_t>(), static_cast<int64_t>(g.places.size()),
        plan.slice, y->raw_data(), gpu.compute()));
    return absl::OkStatus();
  }

 private:
  ScatterAttrs attrs_;
};

// top_k(x, k): k in host memory, checked as on the CPU.
class TopKKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, TopKAttrs::Of(node));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(TopKPlan plan, PlanTopK(x, ctx->input(1), attrs_.axis));
    const int axis = plan.axis;
    const int64_t k = plan.k;
    RN_ASSIGN_OR_RETURN(Tensor * values, ctx->allocate_output(0, plan.output));
    RN_ASSIGN_OR_RETURN(Tensor * indices, ctx->allocate_output(1, plan.output));
    if (values->num_elements() == 0) return absl::OkStatus();
    const AxisLines lines(x.shape(), axis);
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchTopK(GpuElemType(x.dtype()), x.raw_data(),
                             values->raw_data(), indices->data<int32_t>(),
                             lines.outer, lines.len, lines.inner, k,
                             attrs_.largest, gpu.compute()));
    return absl::OkStatus();
  }

 private:
  TopKAttrs attrs_;
};

class NonzeroKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const int64_t n = x.num_elements();
    const int r = x.rank();
    if (r > cuda::kMaxDims) {
      return absl::InvalidArgumentError(
          StrCat("nonzero on a GPU takes at most ", cuda::kMaxDims,
                 " dimensions, got ", x.shape().ToString(),
                 "; run it on the CPU (device \"/cpu:0\" { ... })"));
    }
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    cudaStream_t stream = gpu.compute();
    int64_t count = 0;
    Tensor inclusive;
    if (n > 0) {
      size_t bytes = 0;
      RN_CUDA(cuda::LaunchNonzeroCount(GpuElemType(x.dtype()), nullptr, n,
                                       nullptr, nullptr, &bytes, stream));
      RN_ASSIGN_OR_RETURN(inclusive, GpuScratch(ctx, DType::kI64, Shape{n}));
      RN_ASSIGN_OR_RETURN(
          Tensor temp,
          GpuScratch(ctx, DType::kU8,
                     Shape{std::max<int64_t>(1, static_cast<int64_t>(bytes))}));
      RN_CUDA(cuda::LaunchNonzeroCount(GpuElemType(x.dtype()), x.raw_data(), n,
                                       inclusive.data<int64_t>(),
                                       temp.raw_data(), &bytes, stream));
      RN_CUDA(cudaMemcpyAsync(&count, inclusive.data<int64_t>() + n - 1,
                              sizeof(count), cudaMemcpyDeviceToHost, stream));
      RN_CUDA(cudaStreamSynchronize(stream));
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape{count, r}));
    if (count == 0 || r == 0) return absl::OkStatus();
    RN_CUDA(cuda::LaunchNonzeroWrite(inclusive.data<int64_t>(), n, r,
                                     x.shape().dims().data(),
                                     y->data<int64_t>(), stream));
    return absl::OkStatus();
  }
};

// unique_all: the slices sorted on the GPU (a stable merge sort with the
// CPU's comparison), the number of distinct ones read back to size the
// outputs, then the outputs written on the GPU.
class UniqueAllKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, UniqueAttrs::Of(node));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(const UniquePlan plan,
                        PlanUnique(x.shape(), attrs_.axis));
    const int64_t n = plan.n;
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    cudaStream_t stream = gpu.compute();
    const cuda::ElemType type = GpuElemType(x.dtype());
    size_t bytes = 0;
    RN_CUDA(cuda::LaunchUniqueSort(type, nullptr, plan.outer, n, plan.inner,
                                   nullptr, nullptr, nullptr, &bytes, stream));
    RN_ASSIGN_OR_RETURN(Tensor order, GpuScratch(ctx, DType::kI64, Shape{n}));
    RN_ASSIGN_OR_RETURN(Tensor run, GpuScratch(ctx, DType::kI64, Shape{n}));
    RN_ASSIGN_OR_RETURN(
        Tensor temp,
        GpuScratch(ctx, DType::kU8, Shape{static_cast<int64_t>(bytes)}));
    int64_t m = 0;
    if (n > 0) {
      RN_CUDA(cuda::LaunchUniqueSort(
          type, x.raw_data(), plan.outer, n, plan.inner, order.data<int64_t>(),
          run.data<int64_t>(), temp.raw_data(), &bytes, stream));
      RN_CUDA(cudaMemcpyAsync(&m, run.data<int64_t>() + n - 1, sizeof(m),
                              cudaMemcpyDeviceToHost, stream));
      RN_CUDA(cudaStreamSynchronize(stream));
    }
    RN_ASSIGN_OR_RETURN(Tensor * values,
                        ctx->allocate_output(0, plan.Values(x.shape(), m)));
    RN_ASSIGN_OR_RETURN(Tensor * positions, ctx->allocate_output(1, Shape{m}));
    RN_ASSIGN_OR_RETURN(Tensor * inverse, ctx->allocate_output(2, Shape{n}));
    RN_ASSIGN_OR_RETURN(Tensor * counts, ctx->allocate_output(3, Shape{m}));
    RN_ASSIGN_OR_RETURN(Tensor scratch,
                        GpuScratch(ctx, DType::kI64, Shape{4 * m + 1}));
    RN_CUDA(cuda::LaunchUniqueWrite(
        type, x.raw_data(), plan.outer, n, plan.inner, order.data<int64_t>(),
        run.data<int64_t>(), m, attrs_.sorted, values->raw_data(),
        positions->data<int64_t>(), inverse->data<int64_t>(),
        counts->data<int64_t>(), scratch.data<int64_t>(), temp.raw_data(),
        bytes, stream));
    return absl::OkStatus();
  }

 private:
  UniqueAttrs attrs_;
};

RUNNEL_STATIC_INIT(GpuIndexKernels) {
  // The element types the GPU computes in (not the 8-bit integers).
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16, DType::kBool}) {
    RegisterKernel<NonzeroKernel>("nonzero", kDeviceGpu, d);
    RegisterKernel<UniqueAllKernel>("unique_all", kDeviceGpu, d);
  }
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16}) {
    RegisterKernel<TopKKernel>("top_k", kDeviceGpu, d, {.inputs = {1}});
  }
  RegisterKernelForAllTypes<GatherKernel<false>>("gather_elements", kDeviceGpu,
                                                 {.inputs = {1}});
  RegisterKernelForAllTypes<GatherKernel<true>>("gather_nd", kDeviceGpu,
                                                {.inputs = {1}});
  // The element types the GPU computes in (not the 8-bit integers).
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16, DType::kBool}) {
    RegisterKernel<ScatterKernel<false>>("scatter_elements", kDeviceGpu, d,
                                         {.inputs = {1}});
    RegisterKernel<ScatterKernel<true>>("scatter_nd", kDeviceGpu, d,
                                        {.inputs = {1}});
  }
}

}  // namespace
}  // namespace runnel
