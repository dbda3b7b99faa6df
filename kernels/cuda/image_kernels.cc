// The GPU's kernels of resize, resize_grad and non_max_suppression (the
// CPU's: kernels/cpu/image_kernels.cc). resize: the plan made on the host
// by the CPU's code (framework/ops/resize_plan.h) and copied to the GPU,
// one thread per output element (resize) or per input element
// (resize_grad, which reads the plan backwards: no atomics, a fixed
// order).
#include <array>
#include <cstring>
#include <vector>

#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/ops/resize_plan.h"
#include "kernels/common/nms.h"
#include "kernels/cuda/array_primitives.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/image.h"

namespace runnel {
namespace {

// `v`'s doubles on the GPU (carried in an i64 tensor's memory).
absl::StatusOr<Tensor> DoublesToGpu(OpKernelContext* ctx,
                                    const std::vector<double>& v) {
  std::vector<int64_t> words(v.size(), 0);
  if (!v.empty())
    std::memcpy(words.data(), v.data(), v.size() * sizeof(double));
  return GpuArrays::ToGpu(ctx, words);
}

// One axis of a plan on the GPU: two index vectors and the weights.
struct AxisOnGpu {
  Tensor a, b, w;
  const int64_t* first() const { return a.data<int64_t>(); }
  const int64_t* second() const { return b.data<int64_t>(); }
  const double* weights() const {
    return reinterpret_cast<const double*>(w.data<int64_t>());
  }
};
absl::StatusOr<AxisOnGpu> AxisToGpu(OpKernelContext* ctx,
                                    const std::vector<int64_t>& a,
                                    const std::vector<int64_t>& b,
                                    const std::vector<double>& w) {
  AxisOnGpu g;
  RN_ASSIGN_OR_RETURN(g.a, GpuArrays::ToGpu(ctx, a));
  RN_ASSIGN_OR_RETURN(g.b, GpuArrays::ToGpu(ctx, b));
  RN_ASSIGN_OR_RETURN(g.w, DoublesToGpu(ctx, w));
  return g;
}

class ResizeBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, ResizeAttrs::Read(node.attrs()));
    return absl::OkStatus();
  }

 protected:
  ResizeAttrs attrs_;
};

class ResizeKernel : public ResizeBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(const ResizeImage im, CheckResize(x, attrs_));
    const int64_t batch = im.batch, in_h = im.in_h, in_w = im.in_w,
                  chans = im.chans;
    RN_ASSIGN_OR_RETURN(
        Tensor * y, ctx->allocate_output(
                        0, Shape{batch, attrs_.out_h, attrs_.out_w, chans}));
    if (y->num_elements() == 0) return absl::OkStatus();
    const ResizeAxis rows = PlanResizeAxis(in_h, attrs_.out_h, attrs_);
    const ResizeAxis cols = PlanResizeAxis(in_w, attrs_.out_w, attrs_);
    RN_ASSIGN_OR_RETURN(const AxisOnGpu r,
                        AxisToGpu(ctx, rows.lo, rows.hi, rows.w));
    RN_ASSIGN_OR_RETURN(const AxisOnGpu c,
                        AxisToGpu(ctx, cols.lo, cols.hi, cols.w));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchResize(
        GpuElemType(x.dtype()), x.raw_data(), y->raw_data(), batch, in_h, in_w,
        chans, attrs_.out_h, attrs_.out_w, {r.first(), r.second(), r.weights()},
        {c.first(), c.second(), c.weights()}, gpu.compute()));
    return absl::OkStatus();
  }
};

class ResizeGradKernel : public ResizeBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    RN_ASSIGN_OR_RETURN(const ResizeImage im, CheckResizeGrad(dy, x, attrs_));
    const int64_t batch = im.batch, in_h = im.in_h, in_w = im.in_w,
                  chans = im.chans;
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->allocate_output(0, x.shape()));
    if (dx->num_elements() == 0) return absl::OkStatus();
    const ResizeBackAxis rows =
        PlanResizeBack(PlanResizeAxis(in_h, attrs_.out_h, attrs_), in_h);
    const ResizeBackAxis cols =
        PlanResizeBack(PlanResizeAxis(in_w, attrs_.out_w, attrs_), in_w);
    RN_ASSIGN_OR_RETURN(const AxisOnGpu r,
                        AxisToGpu(ctx, rows.starts, rows.out, rows.w));
    RN_ASSIGN_OR_RETURN(const AxisOnGpu c,
                        AxisToGpu(ctx, cols.starts, cols.out, cols.w));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchResizeGrad(
        GpuElemType(dy.dtype()), dy.raw_data(), dx->raw_data(), batch, in_h,
        in_w, chans, attrs_.out_h, attrs_.out_w,
        {r.first(), r.second(), r.weights()},
        {c.first(), c.second(), c.weights()}, gpu.compute()));
    return absl::OkStatus();
  }
};

// non_max_suppression: every pair's overlap computed on the GPU as bits
// (LaunchNmsMask), read back with the scores, and the CPU's greedy
// selection (NmsSelect) made on the host from them (as torchvision's CUDA
// kernel does); max_per_class and the thresholds are in host memory.
class NmsKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(center_, node.attr<bool>("center_point_box"));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(const NmsRun r, NmsRunOf(ctx));
    const Tensor& boxes = ctx->input(0);
    const int64_t batch = r.batch, n = r.n;
    const int64_t words = (n + 63) / 64;
    if (batch * n * words > kMaxMaskWords) {
      return absl::ResourceExhaustedError(StrCat(
          "non_max_suppression on a GPU keeps a bit for each pair of an "
          "image's boxes, ",
          batch * n * words * 8, " bytes for boxes ", boxes.shape().ToString(),
          "; run it on the CPU (device \"/cpu:0\" { ... })"));
    }
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_ASSIGN_OR_RETURN(Tensor mask,
                        GpuScratch(ctx, DType::kI64, Shape{batch * n * words}));
    RN_CUDA(cuda::LaunchNmsMask(
        GpuElemType(boxes.dtype()), boxes.raw_data(), batch, n, center_, r.iou,
        reinterpret_cast<uint64_t*>(mask.data<int64_t>()), gpu.compute()));
    RN_ASSIGN_OR_RETURN(const Tensor bits, gpu.ToHost(mask));
    RN_ASSIGN_OR_RETURN(const Tensor host_scores, gpu.ToHost(ctx->input(1)));
    const int64_t* m = bits.data<int64_t>();
    auto suppresses = [&](int64_t i, int64_t j, int64_t k) {
      const uint64_t word =
          static_cast<uint64_t>(m[(i * n + j) * words + k / 64]);
      return ((word >> (k % 64)) & 1) != 0;
    };
    std::vector<std::array<int64_t, 3>> kept;
    if (boxes.dtype() == DType::kF32) {
      kept = NmsSelect(host_scores.data<float>(), batch, r.classes, n, r.limit,
                       r.floor, suppresses);
    } else {
      kept = NmsSelect(host_scores.data<double>(), batch, r.classes, n, r.limit,
                       r.floor, suppresses);
    }
    std::vector<int64_t> rows;
    for (const auto& row : kept)
      rows.insert(rows.end(), row.begin(), row.end());
    RN_ASSIGN_OR_RETURN(
        Tensor selected,
        gpu.FromHost(Tensor::FromVector(
            rows, Shape{static_cast<int64_t>(kept.size()), 3})));
    return ctx->set_output(0, selected);
  }

 private:
  // 1 GiB of bits at most (n = 92,000 boxes of one image).
  static constexpr int64_t kMaxMaskWords = int64_t{1} << 27;

  bool center_ = false;
};

RUNNEL_STATIC_INIT(GpuImageKernels) {
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    RegisterKernel<ResizeKernel>("resize", kDeviceGpu, d);
    RegisterKernel<ResizeGradKernel>("resize_grad", kDeviceGpu, d);
  }
  for (DType d : {DType::kF32, DType::kF64}) {
    RegisterKernel<NmsKernel>("non_max_suppression", kDeviceGpu, d,
                              {.inputs = {2, 3, 4}});
  }
}

}  // namespace
}  // namespace runnel
