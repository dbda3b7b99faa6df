// Which implementation pools on the GPU: cuDNN's legacy pooling where it
// gives the CPU kernels' results (kernels/cpu/pool_kernels.cc), Runnel's
// own kernels (pool.h) everywhere else. Plain C++ without CUDA
// (header-only), so that the choice is tested on machines without a GPU
// (tests/kernels/cuda/pool_plan_test.cc).
//
// cuDNN pads a window the same number of rows (columns) before and after
// the input, ignores the padding when taking a maximum (what TensorFlow
// and MXNet rely on; cuDNN's documentation does not spell it out, so
// tests/gpu/conv_test.cc checks it with negative inputs) and, with
// CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, divides a sum by the number
// of the window's elements inside the input, which is the CPU's divisor.
// So it gives the CPU's windows when the padding is symmetric: "valid"
// padding (none), or "same" padding with an even excess. An odd excess
// pads one more at the end; there (and for anything else below) our own
// kernels run. Padding the input by hand, as convolutions do
// (cudnn_params.h), would not do: a padded element would count in the
// average, or be a maximum.
//
// What goes to cuDNN:
//   - max_pool in f32 and f64, and avg_pool in f16, f32 and f64 (the float
//     types cuDNN's legacy pooling takes), not bf16 nor the integers. A
//     maximum is exact; an average may differ from the CPU's by rounding
//     (the CPU sums f16 in f32, and in its own order). An f16 maximum
//     stays on our kernels: for a window of nothing but NaN and -inf,
//     cuDNN gives -65504 (f16's lowest finite value; seen on an H100 with
//     cuDNN 9), where the CPU gives the lowest f32 rounded to f16, -inf,
//     and a window whose true maximum is -65504 gives the same -65504, so
//     no fix-up after cuDNN could tell the two apart;
//   - avg_pool_grad in the same types as avg_pool;
//   - not max_pool_grad: which of a window's equal maxima cuDNN gives the
//     gradient to is not documented (the CPU gives it to the first, and
//     ties are common: windows of zeros after a relu), and for a window of
//     NaN and -inf, whose maximum matches no element, the CPU gives it to
//     the window's first element.
// max_pool ignores NaN on the CPU, and cuDNN with CUDNN_NOT_PROPAGATE_NAN;
// a window with nothing but NaN and -inf pools to the CPU's lowest value
// (the lowest f32 or f64) only after pool.h's LaunchMaxPoolFloor, which
// cuDNN's result then goes through. The
// one difference left in max_pool: a window whose maximum is zero and that
// holds both 0 and -0 may give the other sign than the CPU (which keeps
// the first); neither answer is wrong, and they compare equal.
#ifndef RUNNEL_KERNELS_CUDA_POOL_PLAN_H_
#define RUNNEL_KERNELS_CUDA_POOL_PLAN_H_

#include <climits>
#include <cstdint>
#include <optional>

#include "framework/dtype.h"
#include "framework/window.h"

namespace runnel {

enum class PoolOp : uint8_t { kMaxPool, kAvgPool, kMaxPoolGrad, kAvgPoolGrad };

// What cuDNN's pooling descriptor and NHWC tensors get (all below 2^31).
struct CudnnPoolParams {
  int64_t batch = 0, in_h = 0, in_w = 0, chans = 0;  // x
  int64_t out_h = 0, out_w = 0;                      // y
  HW size, strides;
  int64_t pad_h = 0, pad_w = 0;  // on both sides
  bool operator==(const CudnnPoolParams&) const = default;
};

namespace pool_plan_internal {

// cuDNN's output size along one dimension, (in + 2 pad - size) / stride + 1,
// is ours, and the padding is symmetric and smaller than the window.
inline bool SameWindows(int64_t in, const Windows& w, int64_t size,
                        int64_t stride) {
  if (w.pad_begin != w.pad_end || w.pad_begin >= size) return false;
  const int64_t padded = in + 2 * w.pad_begin;
  return padded >= size && (padded - size) / stride + 1 == w.out;
}

inline bool FitsInt(int64_t a, int64_t b, int64_t c, int64_t d) {
  // Each dimension is at most the product (all are positive here).
  return a <= INT_MAX / b / c / d;
}

}  // namespace pool_plan_internal

// cuDNN's parameters when cuDNN computes `op` on `dtype` with the windows
// `w` (from PlacePoolWindows with `attrs`) as the CPU does; nullopt when
// our own kernels must. Empty tensors never reach cuDNN (nullopt).
inline std::optional<CudnnPoolParams> CudnnPoolPlan(PoolOp op, DType dtype,
                                                    const PoolWindows& w,
                                                    const PoolAttrs& attrs) {
  using pool_plan_internal::FitsInt;
  using pool_plan_internal::SameWindows;
  if (op == PoolOp::kMaxPoolGrad) return std::nullopt;
  if (attrs.dilations != HW{}) return std::nullopt;  // cuDNN has none
  if (attrs.spatial != 2) return std::nullopt;       // our kernels do 3-D
  if (dtype != DType::kF16 && dtype != DType::kF32 && dtype != DType::kF64) {
    return std::nullopt;
  }
  if (op == PoolOp::kMaxPool && dtype == DType::kF16) return std::nullopt;
  if (w.batch <= 0 || w.in_h <= 0 || w.in_w <= 0 || w.chans <= 0 ||
      w.rows.out <= 0 || w.cols.out <= 0) {
    return std::nullopt;
  }
  if (!SameWindows(w.in_h, w.rows, attrs.size.h, attrs.strides.h) ||
      !SameWindows(w.in_w, w.cols, attrs.size.w, attrs.strides.w)) {
    return std::nullopt;
  }
  // cuDNN's descriptors take int, and its kernels index with int.
  if (!FitsInt(w.batch, w.in_h, w.in_w, w.chans) ||
      !FitsInt(w.batch, w.rows.out, w.cols.out, w.chans)) {
    return std::nullopt;
  }
  CudnnPoolParams p;
  p.batch = w.batch;
  p.in_h = w.in_h;
  p.in_w = w.in_w;
  p.chans = w.chans;
  p.out_h = w.rows.out;
  p.out_w = w.cols.out;
  p.size = attrs.size;
  p.strides = attrs.strides;
  p.pad_h = w.rows.pad_begin;
  p.pad_w = w.cols.pad_begin;
  return p;
}

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CUDA_POOL_PLAN_H_
