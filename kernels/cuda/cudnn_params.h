// What conv2d, conv3d and their gradients give cuDNN, computed from Runnel's
// operands and attributes, and the cache of the algorithm chosen for each
// shape. Plain C++ without CUDA (header-only), so that it is tested on machines
// without a GPU or a CUDA build (tests/kernels/cuda/cudnn_params_test.cc).
//
// Runnel's convolutions are NHWC with HWIO filters (framework/window.h gives
// the geometry); cuDNN takes NHWC images with KRSC (OHWI) filters, and
// padding that is the same before and after. So:
//   - the filters are transposed HWIO -> OHWI (a [H*W*I, O] matrix
//     transposed), and the filter gradient back;
//   - "same" padding with an odd excess pads one more row (column) at the
//     end than at the start: there the input is padded at the end with that
//     one row of zeros, and cuDNN pads pad_begin on both sides, which gives
//     the same windows at the same places. The input gradient is then
//     computed for the padded input and its extra row dropped.
// conv3d's NDHWC images and DHWIO filters are the same with a depth
// (cuDNN's 5-D NDHWC and KDRSC, our ODHWI); conv2d's are conv3d's of
// depth 1, which its 4-D descriptors leave out.
#ifndef RUNNEL_KERNELS_CUDA_CUDNN_PARAMS_H_
#define RUNNEL_KERNELS_CUDA_CUDNN_PARAMS_H_

#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/caching_allocator.h"
#include "framework/dtype.h"
#include "framework/shape.h"
#include "framework/window.h"

namespace runnel {

struct CudnnConvParams {
  int spatial = 2;                                  // 3 for conv3d
  int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;  // x as given
  int64_t k_h = 0, k_w = 0, out_c = 0;              // the filters
  int64_t out_h = 0, out_w = 0;                     // y
  HW strides, dilations;
  // Padding on both sides, as cuDNN takes it.
  int64_t pad_h = 0, pad_w = 0;
  // Rows and columns of zeros added at the end of x before cuDNN sees it
  // (0 or 1 each).
  int64_t extra_h = 0, extra_w = 0;
  // The depth (conv3d): 1, 1, 1, 0, 0 for conv2d.
  int64_t in_d = 1, k_d = 1, out_d = 1, pad_d = 0, extra_d = 0;

  // x as cuDNN sees it, padded at the end.
  int64_t padded_d() const { return in_d + extra_d; }
  int64_t padded_h() const { return in_h + extra_h; }
  int64_t padded_w() const { return in_w + extra_w; }
  bool padded() const { return extra_d > 0 || extra_h > 0 || extra_w > 0; }
  // An NHWC (NDHWC) shape of these spatial sizes.
  Shape Image(int64_t d, int64_t h, int64_t w, int64_t c) const {
    return spatial == 3 ? Shape{batch, d, h, w, c} : Shape{batch, h, w, c};
  }
  Shape x() const { return Image(in_d, in_h, in_w, in_c); }
  Shape padded_x() const {
    return Image(padded_d(), padded_h(), padded_w(), in_c);
  }
  Shape y() const { return Image(out_d, out_h, out_w, out_c); }
  // The filters as given (HWIO, DHWIO) and as cuDNN takes them (OHWI,
  // ODHWI).
  Shape hwio() const {
    return spatial == 3 ? Shape{k_d, k_h, k_w, in_c, out_c}
                        : Shape{k_h, k_w, in_c, out_c};
  }
  Shape ohwi() const {
    return spatial == 3 ? Shape{out_c, k_d, k_h, k_w, in_c}
                        : Shape{out_c, k_h, k_w, in_c};
  }
  // The filter's taps and input channels: the rows of HWIO as a matrix.
  int64_t filter_rows() const { return k_d * k_h * k_w * in_c; }
  // What cuDNN's formula gives for the padded input (the check that the
  // windows are Runnel's): (in + 2 pad - dilated window) / stride + 1.
  static int64_t CudnnOut(int64_t in, int64_t pad, int64_t k, int64_t stride,
                          int64_t dilation) {
    return (in + 2 * pad - ((k - 1) * dilation + 1)) / stride + 1;
  }
};

namespace cudnn_internal {

// cuDNN's descriptors take int dims, and its kernels index with int: every
// tensor it sees must have fewer than 2^31 elements.
inline absl::Status FitsInt(const Shape& s, std::string_view what,
                            std::string_view op) {
  if (s.num_elements() > INT_MAX) {
    return absl::InvalidArgumentError(StrCat(
        op, " on a GPU: ", what, " ", s.ToString(), " has ", s.num_elements(),
        " elements, more than cuDNN takes (2^31 - 1); run it on the "
        "CPU (device \"/cpu:0\" { ... })"));
  }
  return absl::OkStatus();
}

}  // namespace cudnn_internal

// The parameters of conv2d(x, filters) or conv3d (attrs.spatial 3) and of
// their gradients, which take the same x and filters shapes, with the CPU
// kernel's errors for operands that do not fit
// (kernels/cpu/conv_kernels.cc).
inline absl::StatusOr<CudnnConvParams> MakeCudnnConvParams(
    std::string_view op, DType dtype, const Shape& x, const Shape& f,
    const ConvAttrs& attrs) {
  RN_ASSIGN_OR_RETURN(const ConvWindows windows,
                      PlaceConvWindows(dtype, x, f, attrs));
  const Windows& rows = windows.rows;
  const Windows& cols = windows.cols;
  const Windows& depths = windows.depths;
  const int s = attrs.spatial == 3 ? 1 : 0;  // where height starts
  CudnnConvParams p;
  p.spatial = attrs.spatial;
  p.batch = x.dim(0);
  p.in_h = x.dim(1 + s);
  p.in_w = x.dim(2 + s);
  p.in_c = x.dim(3 + s);
  p.k_h = f.dim(s);
  p.k_w = f.dim(1 + s);
  p.out_c = f.dim(3 + s);
  if (s == 1) {
    p.in_d = x.dim(1);
    p.k_d = f.dim(0);
    p.out_d = depths.out;
    p.pad_d = depths.pad_begin;
    p.extra_d = depths.pad_end - depths.pad_begin;
  }
  p.strides = attrs.strides;
  p.dilations = attrs.dilations;
  p.out_h = rows.out;
  p.out_w = cols.out;
  p.pad_h = rows.pad_begin;
  p.pad_w = cols.pad_begin;
  // PlaceWindows puts the odd element of the excess at the end.
  p.extra_h = rows.pad_end - rows.pad_begin;
  p.extra_w = cols.pad_end - cols.pad_begin;
  if (p.extra_h < 0 || p.extra_w < 0 || p.extra_d < 0) {
    return absl::InternalError(
        StrCat(op, ": padding ", depths.pad_begin, "+", depths.pad_end, ", ",
               rows.pad_begin, "+", rows.pad_end, ", ", cols.pad_begin, "+",
               cols.pad_end, " pads more at the start than at the end"));
  }
  for (const auto& [s, what] :
       {std::pair{p.padded_x(), "the input"}, std::pair{p.ohwi(), "filters"},
        std::pair{p.y(), "the output"}}) {
    RN_RETURN_IF_ERROR(cudnn_internal::FitsInt(s, what, op));
  }
  return p;
}

// Which of cuDNN's three convolution calls.
enum class ConvPass : uint8_t { kForward, kBackwardData, kBackwardFilter };

// What the chosen algorithm depends on: the pass, the dtype and every
// number cuDNN's descriptors get.
struct ConvAlgoKey {
  ConvPass pass = ConvPass::kForward;
  DType dtype = DType::kF32;
  std::array<int64_t, 18> dims = {};

  ConvAlgoKey(ConvPass pass, DType dtype, const CudnnConvParams& p)
      : pass(pass), dtype(dtype), dims{p.batch,       p.padded_h(),
                                       p.padded_w(),  p.in_c,
                                       p.k_h,         p.k_w,
                                       p.out_c,       p.pad_h,
                                       p.pad_w,       p.strides.h,
                                       p.strides.w,   p.dilations.h,
                                       p.dilations.w, p.padded_d(),
                                       p.k_d,         p.pad_d,
                                       p.strides.d,   p.dilations.d} {}
  bool operator==(const ConvAlgoKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const ConvAlgoKey& k) {
    return H::combine(std::move(h), k.pass, k.dtype, k.dims);
  }
};

// One of the algorithms cuDNN's heuristic proposes, in its order (best
// first): cudnnConvolution*AlgoPerf_t in plain numbers.
struct ConvAlgoCandidate {
  int algo = 0;
  bool supported = false;  // status CUDNN_STATUS_SUCCESS
  size_t workspace = 0;    // bytes
  bool deterministic = false;
  bool tensor_cores = false;  // a TENSOR_OP math type
};

// The algorithm to run, with its workspace.
struct ConvAlgo {
  int algo = 0;
  size_t workspace = 0;
  bool operator==(const ConvAlgo&) const = default;
};

// The heuristic's first supported candidate whose workspace fits
// `max_workspace` (and that does not need tensor cores when `fma_only`:
// f32 computes in f32, no TF32, to match the CPU within rounding),
// deterministic ones first, so that a run gives the same numbers each time
// when the heuristic offers one. NotFound when none qualifies.
inline absl::StatusOr<ConvAlgo> PickConvAlgo(
    const std::vector<ConvAlgoCandidate>& candidates, size_t max_workspace,
    bool fma_only) {
  for (bool need_deterministic : {true, false}) {
    for (const ConvAlgoCandidate& c : candidates) {
      if (!c.supported || c.workspace > max_workspace) continue;
      if (fma_only && c.tensor_cores) continue;
      if (need_deterministic && !c.deterministic) continue;
      return ConvAlgo{c.algo, c.workspace};
    }
  }
  return absl::NotFoundError(StrCat(
      "none of the ", candidates.size(),
      " algorithms cuDNN proposes is supported with a workspace within ",
      FormatBytes(max_workspace), fma_only ? " and without tensor cores" : ""));
}

// The algorithm chosen for each key, chosen once (thread-safe). A GPU's
// context keeps one (kernels/cuda/gpu_device.h).
class ConvAlgoCache {
 public:
  // The cached algorithm for `key`, or what `choose()` (a function giving
  // absl::StatusOr<ConvAlgo>) gives, which is then cached. An error is not
  // cached. Two threads missing the same key at once may both choose; the
  // first to finish is kept, and both get it.
  template <typename Choose>
  absl::StatusOr<ConvAlgo> Get(const ConvAlgoKey& key, const Choose& choose) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = algos_.find(key); it != algos_.end()) return it->second;
    }
    // Outside the lock: choosing asks cuDNN, which may take a while.
    RN_ASSIGN_OR_RETURN(ConvAlgo algo, choose());
    std::lock_guard<std::mutex> lock(mu_);
    return algos_.try_emplace(key, algo).first->second;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return algos_.size();
  }

 private:
  mutable std::mutex mu_;
  absl::flat_hash_map<ConvAlgoKey, ConvAlgo> algos_;
};

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CUDA_CUDNN_PARAMS_H_
