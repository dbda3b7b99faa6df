// conv2d, conv2d_backprop_input and conv2d_backprop_filter on the GPU
// (and conv3d's three, NDHWC with DHWIO filters) through cuDNN
// (kernels/cuda/cudnn.h), with the CPU kernels' geometry and errors
// (kernels/cpu/conv_kernels.cc): NHWC images, HWIO filters, strides, dilations,
// "same" or "valid" padding. How Runnel's operands become cuDNN's is in
// cudnn_params.h (filters transposed to OHWI, an odd "same" padding made even
// by one row of zeros at the end of the input).
//
// The algorithm for each shape is cuDNN's heuristic's first that qualifies
// (PickConvAlgo: deterministic first, workspace within kMaxWorkspace, no
// TF32 for f32, so that results match the CPU's within rounding), chosen
// once per GPU and shape (GpuContext::conv_algos). Registered for f32 and
// f16 (computing in f32); f64 and bf16 convolutions run on the CPU.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/strings.h"
#include "framework/window.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/cudnn_params.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {
namespace {

// The most workspace an algorithm may ask for.
constexpr size_t kMaxWorkspace = size_t{1} << 30;

using TensorDesc = CudnnTensorDesc;
using FilterDesc = CudnnFilterDesc;
using ConvDesc = CudnnConvDesc;

int I(int64_t v) { return static_cast<int>(v); }  // checked by FitsInt

// Everything cuDNN's three convolution calls describe.
struct Descriptors {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  bool fma_only = true;  // f32: no TF32
};

absl::StatusOr<Descriptors> Describe(const Cudnn& dnn, DType dtype,
                                     const CudnnConvParams& p) {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  if (dtype == DType::kF16) {
    type = CUDNN_DATA_HALF;
  } else if (dtype != DType::kF32) {
    return absl::UnimplementedError(
        StrCat("no GPU convolution for ", DTypeName(dtype)));
  }
  Descriptors d;
  d.fma_only = dtype == DType::kF32;
  const bool three = p.spatial == 3;
  if (three) {
    RN_ASSIGN_OR_RETURN(d.x, MakeNdhwcDesc(dnn, type, p.batch, p.padded_d(),
                                           p.padded_h(), p.padded_w(), p.in_c));
    RN_ASSIGN_OR_RETURN(d.y, MakeNdhwcDesc(dnn, type, p.batch, p.out_d, p.out_h,
                                           p.out_w, p.out_c));
  } else {
    RN_ASSIGN_OR_RETURN(d.x, MakeNhwcDesc(dnn, type, p.batch, p.padded_h(),
                                          p.padded_w(), p.in_c));
    RN_ASSIGN_OR_RETURN(
        d.y, MakeNhwcDesc(dnn, type, p.batch, p.out_h, p.out_w, p.out_c));
  }
  cudnnFilterDescriptor_t raw_w = nullptr;
  RN_CUDNN(dnn.cudnnCreateFilterDescriptor(&raw_w));
  d.w.reset(raw_w);
  // NHWC filters are KRSC (KDRSC): our OHWI (ODHWI).
  if (three) {
    const int dims[5] = {I(p.out_c), I(p.in_c), I(p.k_d), I(p.k_h), I(p.k_w)};
    RN_CUDNN(dnn.cudnnSetFilterNdDescriptor(raw_w, type, CUDNN_TENSOR_NHWC, 5,
                                            dims));
  } else {
    RN_CUDNN(dnn.cudnnSetFilter4dDescriptor(raw_w, type, CUDNN_TENSOR_NHWC,
                                            I(p.out_c), I(p.in_c), I(p.k_h),
                                            I(p.k_w)));
  }
  cudnnConvolutionDescriptor_t raw_c = nullptr;
  RN_CUDNN(dnn.cudnnCreateConvolutionDescriptor(&raw_c));
  d.conv.reset(raw_c);
  // Cross-correlation, as conv2d is; f16 accumulates in f32.
  if (three) {
    const int pads[3] = {I(p.pad_d), I(p.pad_h), I(p.pad_w)};
    const int strides[3] = {I(p.strides.d), I(p.strides.h), I(p.strides.w)};
    const int dilations[3] = {I(p.dilations.d), I(p.dilations.h),
                              I(p.dilations.w)};
    RN_CUDNN(dnn.cudnnSetConvolutionNdDescriptor(
        raw_c, 3, pads, strides, dilations, CUDNN_CROSS_CORRELATION,
        CUDNN_DATA_FLOAT));
  } else {
    RN_CUDNN(dnn.cudnnSetConvolution2dDescriptor(
        raw_c, I(p.pad_h), I(p.pad_w), I(p.strides.h), I(p.strides.w),
        I(p.dilations.h), I(p.dilations.w), CUDNN_CROSS_CORRELATION,
        CUDNN_DATA_FLOAT));
  }
  RN_CUDNN(dnn.cudnnSetConvolutionMathType(
      raw_c, d.fma_only ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  // cuDNN's windows must be ours (cudnn_params.h): its output dims, in
  // NC(D)HW order.
  int out[5] = {0, 0, 1, 0, 0};
  if (three) {
    RN_CUDNN(dnn.cudnnGetConvolutionNdForwardOutputDim(raw_c, d.x.get(),
                                                       d.w.get(), 5, out));
  } else {
    RN_CUDNN(dnn.cudnnGetConvolution2dForwardOutputDim(
        raw_c, d.x.get(), d.w.get(), &out[0], &out[1], &out[3], &out[4]));
  }
  if (out[0] != p.batch || out[1] != p.out_c || out[2] != p.out_d ||
      out[3] != p.out_h || out[4] != p.out_w) {
    return absl::InternalError(StrCat(
        "cuDNN's convolution gives ", out[0], "x", out[2], "x", out[3], "x",
        out[4], "x", out[1], " where ", p.y().ToString(),
        " is expected (padding ", p.pad_d, ", ", p.pad_h, ", ", p.pad_w,
        " after ", p.extra_d, ", ", p.extra_h, ", ", p.extra_w, " extra)"));
  }
  return d;
}

// cuDNN's perf results as candidates for PickConvAlgo.
template <typename Perf>
std::vector<ConvAlgoCandidate> Candidates(const Perf* perf, int found) {
  std::vector<ConvAlgoCandidate> out;
  for (int i = 0; i < found; ++i) {
    const Perf& r = perf[i];
    out.push_back({static_cast<int>(r.algo), r.status == CUDNN_STATUS_SUCCESS,
                   r.memory, r.determinism == CUDNN_DETERMINISTIC,
                   r.mathType == CUDNN_TENSOR_OP_MATH ||
                       r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION});
  }
  return out;
}

// cudnnGetConvolution*WorkspaceSize of `pass` for `algo`.
cudnnStatus_t WorkspaceSize(const Cudnn& dnn, cudnnHandle_t handle,
                            ConvPass pass, const Descriptors& d, int algo,
                            size_t* bytes) {
  switch (pass) {
    case ConvPass::kForward:
      return dnn.cudnnGetConvolutionForwardWorkspaceSize(
          handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
          static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
    case ConvPass::kBackwardData:
      return dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
    case ConvPass::kBackwardFilter:
      return dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

// The algorithm for `pass` over `d`, from the cache or chosen now (with the
// handle held). The workspace is the one cuDNN states for it.
absl::StatusOr<ConvAlgo> ChooseAlgo(GpuContext& gpu, cudnnHandle_t handle,
                                    ConvPass pass, DType dtype,
                                    const CudnnConvParams& p,
                                    const Descriptors& d) {
  const Cudnn& dnn = gpu.cudnn();
  return gpu.conv_algos().Get(
      ConvAlgoKey(pass, dtype, p), [&]() -> absl::StatusOr<ConvAlgo> {
        std::vector<ConvAlgoCandidate> candidates;
        int found = 0;
        switch (pass) {
          case ConvPass::kForward: {
            cudnnConvolutionFwdAlgoPerf_t
                perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
            RN_CUDNN(dnn.cudnnGetConvolutionForwardAlgorithm_v7(
                handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
            candidates = Candidates(perf, found);
            break;
          }
          case ConvPass::kBackwardData: {
            cudnnConvolutionBwdDataAlgoPerf_t
                perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
            RN_CUDNN(dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(
                handle, d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, perf));
            candidates = Candidates(perf, found);
            break;
          }
          case ConvPass::kBackwardFilter: {
            cudnnConvolutionBwdFilterAlgoPerf_t
                perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
            RN_CUDNN(dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &found, perf));
            candidates = Candidates(perf, found);
            break;
          }
        }
        // The pick, with the workspace cuDNN states for it with these
        // descriptors (its math type included); one it refuses is dropped
        // and the next picked.
        while (true) {
          absl::StatusOr<ConvAlgo> algo =
              PickConvAlgo(candidates, kMaxWorkspace, d.fma_only);
          if (!algo.ok()) {
            return absl::Status(
                algo.status().code(),
                StrCat("no cuDNN algorithm for ", DTypeName(dtype),
                       " x=", p.padded_x().ToString(), " filters(OHWI)=",
                       p.ohwi().ToString(), ": ", algo.status().message()));
          }
          size_t bytes = 0;
          if (WorkspaceSize(dnn, handle, pass, d, algo->algo, &bytes) ==
                  CUDNN_STATUS_SUCCESS &&
              bytes <= kMaxWorkspace) {
            algo->workspace = std::max(algo->workspace, bytes);
            return algo;
          }
          for (ConvAlgoCandidate& c : candidates) {
            if (c.algo == algo->algo) c.supported = false;
          }
        }
      });
}

// What the three kernels share: the attributes, the checks and the output
// before cuDNN's call (the CPU kernels' errors; zeros when an operand is
// empty), and the steps around it.
class CudnnConvKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_,
                        ReadConvAttrs(node.attrs(), WindowRank(node.op())));
    return absl::OkStatus();
  }

  // Inputs (x, filters) for conv2d, (x, filters, dy) for its gradients.
  absl::Status Compute(OpKernelContext* ctx) final {
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    RN_ASSIGN_OR_RETURN(const CudnnConvParams p,
                        MakeCudnnConvParams(ctx->node().op(), x.dtype(),
                                            x.shape(), f.shape(), attrs_));
    if (ctx->num_inputs() == 3) {
      const Tensor& dy = ctx->input(2);
      RN_RETURN_IF_ERROR(
          CheckWindowsDy(ctx->node().op(), dy.dtype(), dy.shape(), p.y()));
    }
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, OutShape(p)));
    if (out->num_elements() == 0) return absl::OkStatus();
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      if (ctx->input(i).num_elements() == 0) {  // an empty sum: zeros
        RN_CUDA(
            cudaMemsetAsync(out->raw_data(), 0, out->bytes(), gpu.compute()));
        return absl::OkStatus();
      }
    }
    return Run(ctx, gpu, p, out);
  }

 protected:
  virtual Shape OutShape(const CudnnConvParams& p) const = 0;
  // The convolution proper, all operands and `out` non-empty.
  virtual absl::Status Run(OpKernelContext* ctx, GpuContext& gpu,
                           const CudnnConvParams& p, Tensor* out) = 0;

  // HWIO (DHWIO) `f` as OHWI (ODHWI), in a scratch tensor.
  static absl::StatusOr<Tensor> ToOhwi(OpKernelContext* ctx, GpuContext& gpu,
                                       const Tensor& f,
                                       const CudnnConvParams& p) {
    RN_ASSIGN_OR_RETURN(Tensor t, GpuScratch(ctx, f.dtype(), p.ohwi()));
    RN_CUDA(cuda::LaunchTranspose(
        f.raw_data(), t.raw_data(), p.filter_rows(), p.out_c,
        static_cast<int>(DTypeSize(f.dtype())), gpu.compute()));
    return t;
  }

  // `from`, an image of the spatial sizes `in`, copied into `to` of the
  // sizes `out` (d, h, w; the same channels), padded with zeros or cropped
  // at the end: one resize of the rows and columns of every depth plane,
  // then one of the depths (each plane a row), through a scratch tensor
  // when both change.
  static absl::Status ResizeEnd(OpKernelContext* ctx, GpuContext& gpu,
                                const CudnnConvParams& p, const Tensor& from,
                                const int64_t in[3], const int64_t out[3],
                                void* to) {
    const int bytes = static_cast<int>(DTypeSize(from.dtype()));
    const bool planes = in[1] != out[1] || in[2] != out[2];
    const bool depths = in[0] != out[0];
    Tensor between;
    const void* src = from.raw_data();
    if (planes) {
      void* dst = to;
      if (depths) {
        RN_ASSIGN_OR_RETURN(between,
                            GpuScratch(ctx, from.dtype(),
                                       p.Image(in[0], out[1], out[2], p.in_c)));
        dst = between.raw_data();
      }
      RN_CUDA(cuda::LaunchResizeEnd(src, dst, p.batch * in[0], in[1], in[2],
                                    out[1], out[2], p.in_c, bytes,
                                    gpu.compute()));
      src = dst;
    }
    if (depths) {
      RN_CUDA(cuda::LaunchResizeEnd(src, to, p.batch, in[0], 1, out[0], 1,
                                    out[1] * out[2] * p.in_c, bytes,
                                    gpu.compute()));
    }
    return absl::OkStatus();
  }

  // `x` as cuDNN sees it: itself, or padded at the end into a scratch
  // tensor.
  static absl::StatusOr<Tensor> Padded(OpKernelContext* ctx, GpuContext& gpu,
                                       const Tensor& x,
                                       const CudnnConvParams& p) {
    if (!p.padded()) return x;
    RN_ASSIGN_OR_RETURN(Tensor t, GpuScratch(ctx, x.dtype(), p.padded_x()));
    const int64_t in[3] = {p.in_d, p.in_h, p.in_w};
    const int64_t out[3] = {p.padded_d(), p.padded_h(), p.padded_w()};
    RN_RETURN_IF_ERROR(ResizeEnd(ctx, gpu, p, x, in, out, t.raw_data()));
    return t;
  }

  // Runs `call(handle, descriptors, algo, workspace)` for `pass`, holding
  // the handle.
  template <typename Call>
  static absl::Status RunCudnn(OpKernelContext* ctx, GpuContext& gpu,
                               ConvPass pass, const CudnnConvParams& p,
                               const Call& call) {
    const DType dtype = ctx->input(0).dtype();
    RN_ASSIGN_OR_RETURN(cudnnHandle_t handle, gpu.dnn());
    RN_ASSIGN_OR_RETURN(Descriptors d, Describe(gpu.cudnn(), dtype, p));
    std::lock_guard<std::mutex> lock(gpu.dnn_mutex());
    RN_ASSIGN_OR_RETURN(ConvAlgo algo,
                        ChooseAlgo(gpu, handle, pass, dtype, p, d));
    Tensor workspace;
    if (algo.workspace > 0) {
      RN_ASSIGN_OR_RETURN(
          workspace, GpuScratch(ctx, DType::kU8,
                                Shape{static_cast<int64_t>(algo.workspace)}));
    }
    static constexpr const char* kCalls[] = {"cudnnConvolutionForward",
                                             "cudnnConvolutionBackwardData",
                                             "cudnnConvolutionBackwardFilter"};
    return CudnnStatus(call(gpu.cudnn(), handle, d, algo.algo,
                            workspace.raw_data(), algo.workspace),
                       kCalls[static_cast<int>(pass)]);
  }

  static constexpr float kOne = 1, kZero = 0;

 private:
  ConvAttrs attrs_;
};

class Conv2DKernel final : public CudnnConvKernel {
  Shape OutShape(const CudnnConvParams& p) const override { return p.y(); }
  absl::Status Run(OpKernelContext* ctx, GpuContext& gpu,
                   const CudnnConvParams& p, Tensor* y) override {
    RN_ASSIGN_OR_RETURN(const Tensor w, ToOhwi(ctx, gpu, ctx->input(1), p));
    RN_ASSIGN_OR_RETURN(const Tensor x, Padded(ctx, gpu, ctx->input(0), p));
    return RunCudnn(ctx, gpu, ConvPass::kForward, p,
                    [&](const Cudnn& dnn, cudnnHandle_t h, const Descriptors& d,
                        int algo, void* ws, size_t ws_bytes) {
                      return dnn.cudnnConvolutionForward(
                          h, &kOne, d.x.get(), x.raw_data(), d.w.get(),
                          w.raw_data(), d.conv.get(),
                          static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws,
                          ws_bytes, &kZero, d.y.get(), y->raw_data());
                    });
  }
};

// Reads x's shape only.
class Conv2DBackpropInputKernel final : public CudnnConvKernel {
  Shape OutShape(const CudnnConvParams& p) const override { return p.x(); }
  absl::Status Run(OpKernelContext* ctx, GpuContext& gpu,
                   const CudnnConvParams& p, Tensor* dx) override {
    const Tensor& dy = ctx->input(2);
    RN_ASSIGN_OR_RETURN(const Tensor w, ToOhwi(ctx, gpu, ctx->input(1), p));
    // The gradient of the padded input, whose extra row is then dropped.
    Tensor padded;
    if (p.padded()) {
      RN_ASSIGN_OR_RETURN(padded, GpuScratch(ctx, dx->dtype(), p.padded_x()));
    }
    void* out = p.padded() ? padded.raw_data() : dx->raw_data();
    RN_RETURN_IF_ERROR(RunCudnn(
        ctx, gpu, ConvPass::kBackwardData, p,
        [&](const Cudnn& dnn, cudnnHandle_t h, const Descriptors& d, int algo,
            void* ws, size_t ws_bytes) {
          return dnn.cudnnConvolutionBackwardData(
              h, &kOne, d.w.get(), w.raw_data(), d.y.get(), dy.raw_data(),
              d.conv.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(algo),
              ws, ws_bytes, &kZero, d.x.get(), out);
        }));
    if (p.padded()) {
      const int64_t in[3] = {p.padded_d(), p.padded_h(), p.padded_w()};
      const int64_t to[3] = {p.in_d, p.in_h, p.in_w};
      RN_RETURN_IF_ERROR(
          ResizeEnd(ctx, gpu, p, padded, in, to, dx->raw_data()));
    }
    return absl::OkStatus();
  }
};

// Reads the filters' shape only.
class Conv2DBackpropFilterKernel final : public CudnnConvKernel {
  Shape OutShape(const CudnnConvParams& p) const override { return p.hwio(); }
  absl::Status Run(OpKernelContext* ctx, GpuContext& gpu,
                   const CudnnConvParams& p, Tensor* df) override {
    const Tensor& dy = ctx->input(2);
    RN_ASSIGN_OR_RETURN(const Tensor x, Padded(ctx, gpu, ctx->input(0), p));
    RN_ASSIGN_OR_RETURN(Tensor dw, GpuScratch(ctx, df->dtype(), p.ohwi()));
    RN_RETURN_IF_ERROR(RunCudnn(
        ctx, gpu, ConvPass::kBackwardFilter, p,
        [&](const Cudnn& dnn, cudnnHandle_t h, const Descriptors& d, int algo,
            void* ws, size_t ws_bytes) {
          return dnn.cudnnConvolutionBackwardFilter(
              h, &kOne, d.x.get(), x.raw_data(), d.y.get(), dy.raw_data(),
              d.conv.get(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo),
              ws, ws_bytes, &kZero, d.w.get(), dw.raw_data());
        }));
    // OHWI ([O, H*W*I]) back to HWIO (ODHWI to DHWIO).
    RN_CUDA(cuda::LaunchTranspose(
        dw.raw_data(), df->raw_data(), p.out_c, p.filter_rows(),
        static_cast<int>(DTypeSize(df->dtype())), gpu.compute()));
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(GpuConvKernels) {
  for (DType d : {DType::kF16, DType::kF32}) {
    for (const char* conv : {"conv2d", "conv3d"}) {
      RegisterKernel<Conv2DKernel>(conv, kDeviceGpu, d);
      RegisterKernel<Conv2DBackpropInputKernel>(StrCat(conv, "_backprop_input"),
                                                kDeviceGpu, d);
      RegisterKernel<Conv2DBackpropFilterKernel>(
          StrCat(conv, "_backprop_filter"), kDeviceGpu, d);
    }
  }
}

}  // namespace
}  // namespace runnel
