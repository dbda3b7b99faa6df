// The window geometry of conv2d, max_pool, avg_pool and their gradients
// (NHWC), and of their 3-D forms conv3d, max_pool3d and avg_pool3d (NDHWC,
// DHWIO filters): how their attributes read, how many outputs a spatial
// dimension has, and where each window falls on the input. The shape functions
// (framework/ops/nn_ops.cc) and the kernels (kernels/cpu/conv_kernels.cc,
// pool_kernels.cc) both use it, so a graph that builds runs with the same
// geometry.
//
// The rules are TensorFlow's: strides, dilations and pool sizes are an int,
// [h, w], or [1, h, w, 1] for NHWC, where the batch and channel entries must
// be 1 (for the 3-D ops: an int, [d, h, w] or [1, d, h, w, 1]); "same" padding
// gives ceil(in / stride) outputs and pads the excess evenly, the odd element
// at the end; "valid" fits whole windows only.
#ifndef RUNNEL_FRAMEWORK_WINDOW_H_
#define RUNNEL_FRAMEWORK_WINDOW_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "framework/attr_value.h"
#include "framework/dtype.h"
#include "framework/shape.h"

namespace runnel {

// A window size, stride or dilation along height and width, and depth for
// the 3-D ops (1 for the 2-D ones; last, so that {h, w} reads as before).
struct HW {
  int64_t h = 1, w = 1, d = 1;
  bool operator==(const HW&) const = default;
};

// The number of spatial dimensions of window op `op`: 3 for conv3d,
// max_pool3d, avg_pool3d and their gradients (the ops whose names have
// "3d"), else 2.
int WindowRank(std::string_view op);

// Attribute `name` as {h, w} (spatial 2): an int n is {n, n}; [h, w]; or
// [1, h, w, 1]; or as {h, w, d} (spatial 3): an int; [d, h, w]; or
// [1, d, h, w, 1]. Absent: every entry `fallback`. Anything else is an
// InvalidArgument naming the attribute: another length, a [b, h, w, c]
// with b or c other than 1 ("... must be 1 for the batch and the channels
// ..."), a value below 1.
absl::StatusOr<HW> ReadWindowAttr(const AttrMap& attrs, std::string_view name,
                                  int64_t fallback, int spatial = 2);

// The `padding` attribute: true for "same" (or "SAME"), false for "valid"
// (or "VALID"), else an InvalidArgument.
absl::StatusOr<bool> ReadSamePadding(const AttrMap& attrs);

// The attributes of conv2d (spatial 2) or conv3d (3) and of their
// gradients.
struct ConvAttrs {
  HW strides, dilations;
  bool same = true;
  int spatial = 2;
};
absl::StatusOr<ConvAttrs> ReadConvAttrs(const AttrMap& attrs, int spatial = 2);

// The attributes of max_pool, avg_pool (spatial 2), max_pool3d, avg_pool3d
// (3) and their gradients: `size` is required; `strides` defaults to
// `size`, `dilations` (the distance between a window's taps) to 1.
struct PoolAttrs {
  HW size, strides, dilations;
  bool same = false;
  int spatial = 2;
};
// The taps of one window along one dimension that fall inside the input:
// `count` of them, the first at input index `first`, `step` apart.
struct Taps {
  int64_t first = 0, step = 1, count = 0;
  int64_t last() const { return first + (count - 1) * step; }
};
// The taps of window `o` (of `size` taps `dilation` apart, placed every
// `stride` from -pad_begin) on an input of `in` elements.
Taps WindowTaps(int64_t o, int64_t stride, int64_t pad_begin, int64_t size,
                int64_t dilation, int64_t in);
absl::StatusOr<PoolAttrs> ReadPoolAttrs(const AttrMap& attrs, int spatial = 2);

// The windows along one spatial dimension.
struct Windows {
  int64_t out = 0;        // number of output positions
  int64_t pad_begin = 0;  // input index of window 0 is -pad_begin
  int64_t pad_end = 0;    // padding past the input's end that windows read
};

// Places windows of `window` elements, `dilation` apart, every `stride`
// elements of an input of `in` elements. With "valid" padding a window
// wider than the input is an InvalidArgument ("the WHAT of effective size E
// is larger than the input (IN) with valid padding"). For shape inference,
// `in` or `window` may be unknown (negative): what cannot be known then is
// kUnknownDim (out) or 0 (pads).
absl::StatusOr<Windows> PlaceWindows(int64_t in, int64_t window, int64_t stride,
                                     int64_t dilation, bool same,
                                     std::string_view what);

// Where conv2d's windows (and its gradients') fall on NHWC `x` with HWIO
// filters `f`, both of `dtype`, for the kernels (CPU and GPU): both must
// have rank 4 ("conv2d needs NHWC input and HWIO filters of rank 4, got
// ...") and agree on the input channels ("channels differ: ..."), else an
// InvalidArgument; then PlaceWindows' errors ("the filter of effective
// size ..."). With attrs.spatial 3 (conv3d), NDHWC `x` and DHWIO `f` of
// rank 5.
struct ConvWindows {
  Windows rows, cols;
  Windows depths = {1, 0, 0};  // one output depth for conv2d
};
absl::StatusOr<ConvWindows> PlaceConvWindows(DType dtype, const Shape& x,
                                             const Shape& f,
                                             const ConvAttrs& attrs);

// Where the windows of max_pool, avg_pool or a gradient of theirs fall on
// NHWC `x` of `dtype`, for the kernels (CPU and GPU). `x` must have rank 4
// ("WHO needs an NHWC input of rank 4, got ...", an InvalidArgument that
// begins with `who`); then PlaceWindows' errors ("the window of effective
// size ..."). With attrs.spatial 3 (the 3-D pools), NDHWC `x` of rank 5.
struct PoolWindows {
  int64_t batch = 0, in_h = 0, in_w = 0, chans = 0;
  Windows rows, cols;
  int64_t in_d = 1;
  Windows depths = {1, 0, 0};  // one depth for the 2-D pools
  int spatial = 2;
  // The pooled output: [batch, rows.out, cols.out, chans], or [batch,
  // depths.out, rows.out, cols.out, chans] for the 3-D pools.
  Shape y() const {
    return spatial == 3 ? Shape{batch, depths.out, rows.out, cols.out, chans}
                        : Shape{batch, rows.out, cols.out, chans};
  }
};
absl::StatusOr<PoolWindows> PlacePoolWindows(DType dtype, const Shape& x,
                                             const PoolAttrs& attrs,
                                             std::string_view who);

// The gradient kernels' check of their `dy` (of `dtype`) against the
// forward output `y` they place: an InvalidArgument "OP: dy f32[...] does
// not match the forward output [...]" when the shapes differ. `name` is
// the input's ("y" for max_pool_grad's copy of the forward output).
absl::Status CheckWindowsDy(std::string_view op, DType dtype, const Shape& dy,
                            const Shape& y, std::string_view name = "dy");

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_WINDOW_H_
