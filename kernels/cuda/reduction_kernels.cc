// GPU kernels of the reductions (the CPU's: kernels/cpu/reduction_kernels.cc)
// sum mean prod max min argmax argmin all any logsumexp, of sum_to_like
// (kernels/cpu/grad_kernels.cc) and l2_loss (kernels/cpu/nn_kernels.cc), all
// through the one scheme of reduce.cu. The host plans the walk
// (framework/reduce_layout.h, reduce_plan.h), permutes the input first when its
// reduced dims are not one run, and raises the CPU's errors: reducing an empty
// dim for the ops without an identity, argmax over more elements than i32
// indexes.
#include <cstdint>
#include <limits>
#include <vector>

#include "base/strings.h"
#include "framework/reduce_layout.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/reduce_plan.h"

namespace runnel {
namespace {

using cuda::ReduceOp;

absl::Status EmptyReductionError(const Node& node, const Tensor& x) {
  return absl::InvalidArgumentError(StrCat(
      node.op(), ": cannot reduce an empty dimension of ", DTypeName(x.dtype()),
      x.shape().ToString(), ": the reduction has no identity"));
}

// The CPU's refusals, for a reduction of `x` laid out as `l`.
absl::Status CheckReduction(const Node& node, ReduceOp op, const Tensor& x,
                            const ReduceLayout& l) {
  const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
  if (l.reduced == 0) {
    if (op == ReduceOp::kMean && IsInteger(x.dtype())) {
      return absl::InvalidArgumentError(
          StrCat("mean: integer mean of an empty dimension of ",
                 DTypeName(x.dtype()), x.shape().ToString()));
    }
    if (arg || op == ReduceOp::kMax || op == ReduceOp::kMin) {
      return EmptyReductionError(node, x);
    }
  }
  if (arg && l.reduced > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(StrCat(
        node.op(), ": reduces ", l.reduced, " elements; i32 indices overflow"));
  }
  if (l.permute_dims.size() > static_cast<size_t>(cuda::kMaxPermuteDims)) {
    return absl::UnimplementedError(StrCat(
        node.op(), ": the kept and reduced dims of ", x.shape().ToString(),
        " alternate in ", l.permute_dims.size(),
        " runs; the GPU reduction takes at most ", cuda::kMaxPermuteDims));
  }
  return absl::OkStatus();
}

// out (the reduced shape's element count, any shape) = the reduction of
// `x` over `axes` (sorted, distinct).
absl::Status Reduce(OpKernelContext* ctx, ReduceOp op, const Tensor& x,
                    const std::vector<int>& axes, Tensor* out) {
  if (out->num_elements() == 0) return absl::OkStatus();
  const ReduceLayout l = PlanReduceLayout(x.shape().dims(), axes);
  RN_RETURN_IF_ERROR(CheckReduction(ctx->node(), op, x, l));
  const cuda::ElemType type = GpuElemType(x.dtype());
  GpuContext& gpu = GpuContextOf(ctx);
  RN_RETURN_IF_ERROR(gpu.Activate());
  Allocator* allocator = ctx->device()->allocator();
  // Temporaries are freed to the compute stream's pool, which hands them
  // out again only to later work on that stream.
  const void* in = x.raw_data();
  Tensor permuted;
  if (!l.permute_dims.empty()) {
    permuted = Tensor(x.dtype(), x.shape(), allocator);
    RN_CUDA(cuda::LaunchPermute(
        static_cast<int>(DTypeSize(x.dtype())), x.raw_data(),
        permuted.raw_data(), x.num_elements(),
        static_cast<int>(l.permute_dims.size()), l.permute_dims.data(),
        l.permute_strides.data(), gpu.compute()));
    in = permuted.raw_data();
  }
  const size_t scratch_bytes = cuda::ReduceScratchBytes(
      l.outer, l.reduced, l.inner, op == ReduceOp::kLogSumExp ? 1 : 0);
  Tensor scratch;
  if (scratch_bytes > 0) {
    scratch = Tensor(DType::kU8, Shape{static_cast<int64_t>(scratch_bytes)},
                     allocator);
  }
  RN_CUDA(cuda::LaunchReduce(
      op, type, in, out->raw_data(), l.outer, l.reduced, l.inner,
      scratch_bytes > 0 ? scratch.raw_data() : nullptr, gpu.compute()));
  return absl::OkStatus();
}

// The reductions with attributes `axis` (absent: all) and `keepdims`.
template <ReduceOp kOp>
class ReduceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const AttrMap& attrs = ctx->node().attrs();
    RN_ASSIGN_OR_RETURN(std::vector<int> axes,
                        ReductionAxes(ShapeContext(attrs, {}, {}), x.rank()));
    RN_ASSIGN_OR_RETURN(bool keepdims,
                        GetAttrOr<bool>(attrs, "keepdims", false));
    RN_ASSIGN_OR_RETURN(
        Tensor * y,
        ctx->allocate_output(0, ReducedShape(x.shape(), axes, keepdims)));
    return Reduce(ctx, kOp, x, axes, y);
  }
};

// sum_to_like(dy, x): dy summed over the axes x was broadcast along.
class SumToLikeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    if (shape.num_elements() == dy.num_elements()) {
      // Only axes of size 1 differ: the same elements in the same order.
      RN_ASSIGN_OR_RETURN(Tensor view, dy.Reshaped(shape));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    const int offset = dy.rank() - shape.rank();
    std::vector<int> axes;
    for (int i = 0; i < dy.rank(); ++i) {
      if (i < offset || (shape.dim(i - offset) == 1 && dy.dim(i) != 1)) {
        axes.push_back(i);
      }
    }
    return Reduce(ctx, ReduceOp::kSum, dy, axes, out);
  }
};

// l2_loss(x) = sum(x^2) / 2, a scalar.
class L2LossKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape{}));
    std::vector<int> all(x.rank());
    for (int i = 0; i < x.rank(); ++i) all[i] = i;
    return Reduce(ctx, ReduceOp::kL2Loss, x, all, y);
  }
};

// The CPU kernels' dtypes but i8 and u8 (which stay on the CPU).
const std::vector<DType> kNumbers = {DType::kF32, DType::kF64, DType::kI32,
                                     DType::kI64, DType::kF16, DType::kBF16};
const std::vector<DType> kFloats = {DType::kF32, DType::kF64, DType::kF16,
                                    DType::kBF16};

template <class K>
void Register(const std::string& op, const std::vector<DType>& dtypes) {
  for (DType d : dtypes) RegisterKernel<K>(op, kDeviceGpu, d);
}

RUNNEL_STATIC_INIT(GpuReductionKernels) {
  Register<ReduceKernel<ReduceOp::kSum>>("sum", kNumbers);
  Register<ReduceKernel<ReduceOp::kMean>>("mean", kNumbers);
  Register<ReduceKernel<ReduceOp::kProd>>("prod", kNumbers);
  Register<ReduceKernel<ReduceOp::kMax>>("max", kNumbers);
  Register<ReduceKernel<ReduceOp::kMin>>("min", kNumbers);
  Register<ReduceKernel<ReduceOp::kArgMax>>("argmax", kNumbers);
  Register<ReduceKernel<ReduceOp::kArgMin>>("argmin", kNumbers);
  Register<ReduceKernel<ReduceOp::kAll>>("all", {DType::kBool});
  Register<ReduceKernel<ReduceOp::kAny>>("any", {DType::kBool});
  Register<ReduceKernel<ReduceOp::kLogSumExp>>("logsumexp", kFloats);
  Register<SumToLikeKernel>("sum_to_like", kNumbers);
  Register<L2LossKernel>("l2_loss", kFloats);
}

}  // namespace
}  // namespace runnel
