// GPU kernels of the random ops (framework/ops/random_ops.cc; the CPU's:
// kernels/cpu/random_kernels.cc). A run reserves its draws from the node's
// counter as the CPU's does (kernels/common/random_util.h), and each GPU
// thread samples its elements from their counters (random.cu), so a node
// gives the CPU's numbers (base/philox.h says how exactly) wherever it
// runs. f32 and f64 (random_uniform also i32 and i64); 16-bit floats and
// 8-bit integers are sampled on the CPU.
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/ops/kernel_checks.h"
#include "kernels/common/random_util.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_types.h"
#include "kernels/cuda/random.h"

namespace runnel {
namespace {

// The output's shape: the graph's when fully known (a constant shape),
// else the op's shape function on the `shape` input copied to the host.
absl::StatusOr<Shape> SampleShape(OpKernelContext* ctx) {
  const Node& node = ctx->node();
  if (node.output_shape(0).IsFullyDefined()) return node.output_shape(0);
  const Tensor& dims = ctx->input(0);
  RN_ASSIGN_OR_RETURN(Tensor host, GpuContextOf(ctx).ToHost(dims));
  // A replay's `first` too: its shape function checks it.
  std::vector<TensorSpec> specs;
  std::vector<const Tensor*> values = {&host};
  for (int i = 0; i < ctx->num_inputs(); ++i) {
    specs.push_back({ctx->input(i).dtype(), ctx->input(i).shape()});
    if (i > 0) values.push_back(nullptr);
  }
  ShapeContext sc(node.attrs(), std::move(specs), std::move(values));
  absl::StatusOr<std::vector<TensorSpec>> out = node.op_def().shape_fn(sc);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        StrCat(node.op(), ": ", out.status().message()));
  }
  if (!(*out)[0].shape.IsFullyDefined()) {
    return absl::InternalError(StrCat(node.op(), ": output shape ",
                                      (*out)[0].shape.ToString(),
                                      " is not fully defined at run time"));
  }
  return (*out)[0].shape;
}

// random_normal, truncated_normal and random_uniform.
template <typename T, cuda::Distribution kDist>
class GpuRandomKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(seed_, node.attr<int64_t>("seed"));
    if constexpr (kDist == cuda::Distribution::kUniform) {
      RN_ASSIGN_OR_RETURN(UniformRange r, UniformRangeOf<T>(node));
      args_.min = r.min;
      args_.max = r.max;
      args_.below_max = r.below_max;
      args_.min_int = r.min_int;
      args_.range = r.range;
    } else {
      RN_ASSIGN_OR_RETURN(args_.mean, node.attr<double>("mean"));
      RN_ASSIGN_OR_RETURN(args_.stddev, node.attr<double>("stddev"));
    }
    args_.dist = kDist;
    RN_ASSIGN_OR_RETURN(args_.type, GpuNumberType(DTypeOf<T>::value, "random"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, SampleShape(ctx));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    cuda::RandomArgs a = args_;
    a.n = y->num_elements();
    RN_ASSIGN_OR_RETURN(RandomSampler sampler, ReserveSamples(ctx, seed_, a.n));
    a.stream = sampler.stream();
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchRandom(a, y->raw_data(), gpu.compute()));
    return absl::OkStatus();
  }

 private:
  int64_t seed_ = -1;
  cuda::RandomArgs args_;
};

template <typename T>
using GpuRandomNormal = GpuRandomKernel<T, cuda::Distribution::kNormal>;
template <typename T>
using GpuTruncatedNormal =
    GpuRandomKernel<T, cuda::Distribution::kTruncatedNormal>;
template <typename T>
using GpuRandomUniform = GpuRandomKernel<T, cuda::Distribution::kUniform>;

// dropout(x, rate, training): outputs y and scale, as on the CPU. rate and
// training are read on the host (a copy out of the GPU each), for the
// CPU's check of the rate and its choice of path.
template <typename T>
class GpuDropoutKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(seed_, node.attr<int64_t>("seed"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    GpuContext& gpu = GpuContextOf(ctx);
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Tensor rate_host, gpu.ToHost(ctx->input(1)));
    RN_ASSIGN_OR_RETURN(Tensor training_host, gpu.ToHost(ctx->input(2)));
    const double rate = ToDouble(rate_host.data<T>()[0]);
    const bool training = training_host.data<bool>()[0];
    RN_RETURN_IF_ERROR(CheckDropoutRate(rate));
    RN_ASSIGN_OR_RETURN(cuda::ElemType type,
                        GpuNumberType(x.dtype(), "dropout"));
    const int64_t n = x.num_elements();
    RN_ASSIGN_OR_RETURN(Tensor * scale, ctx->allocate_output(1, x.shape()));
    RN_RETURN_IF_ERROR(gpu.Activate());
    if (!training || rate == 0) {
      RN_CUDA(cuda::LaunchFillOne(type, n, scale->raw_data(), gpu.compute()));
      return ctx->set_output(0, x);
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    RN_ASSIGN_OR_RETURN(RandomSampler sampler, ReserveSamples(ctx, seed_, n));
    const double kept = ToDouble(FromDouble<T>(1.0 / (1.0 - rate)));
    RN_CUDA(cuda::LaunchDropout(type, n, sampler.stream(), rate, kept,
                                x.raw_data(), y->raw_data(), scale->raw_data(),
                                gpu.compute()));
    return absl::OkStatus();
  }

 private:
  int64_t seed_ = -1;
};

RUNNEL_STATIC_INIT(GpuRandomKernels) {
  // Each op and its replay (framework/ops/random_ops.cc), whose last input,
  // `first`, is read on the host.
  for (bool at : {false, true}) {
    const std::string suffix = at ? "_at" : "";
    const HostMemory sampled = at ? HostMemory{.inputs = {1}} : HostMemory{};
    RegisterKernelForTypes<GpuRandomNormal, float, double>(
        StrCat("random_normal", suffix), kDeviceGpu, sampled);
    RegisterKernelForTypes<GpuTruncatedNormal, float, double>(
        StrCat("truncated_normal", suffix), kDeviceGpu, sampled);
    RegisterKernelForTypes<GpuRandomUniform, float, double, int32_t, int64_t>(
        StrCat("random_uniform", suffix), kDeviceGpu, sampled);
    RegisterKernelForTypes<GpuDropoutKernel, float, double>(
        StrCat("dropout", suffix), kDeviceGpu,
        at ? HostMemory{.inputs = {3}} : HostMemory{});
  }
  RegisterRandomReserveKernel(kDeviceGpu);
}

}  // namespace
}  // namespace runnel
