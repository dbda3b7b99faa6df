// The window geometry of conv2d, max_pool, avg_pool and their gradients
// (NHWC): how their attributes read, how many outputs a spatial dimension
// has, and where each window falls on the input. The shape functions
// (framework/ops/nn_ops.cc) and the kernels (kernels/cpu/conv_kernels.cc,
// pool_kernels.cc) both use it, so a graph that builds runs with the same
// geometry.
//
// The rules are TensorFlow's: strides, dilations and pool sizes are an int,
// [h, w], or [1, h, w, 1] for NHWC, where the batch and channel entries must
// be 1; "same" padding gives ceil(in / stride) outputs and pads the excess
// evenly, the odd element at the end; "valid" fits whole windows only.
#ifndef RUNNEL_FRAMEWORK_WINDOW_H_
#define RUNNEL_FRAMEWORK_WINDOW_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "framework/attr_value.h"
#include "framework/dtype.h"
#include "framework/shape.h"

namespace runnel {

// A window size, stride or dilation along height and width.
struct HW {
  int64_t h = 1, w = 1;
  bool operator==(const HW&) const = default;
};

// Attribute `name` as {h, w}: an int n is {n, n}; [h, w]; or [1, h, w, 1].
// Absent: {fallback, fallback}. Anything else is an InvalidArgument naming
// the attribute: another length, a [b, h, w, c] with b or c other than 1
// ("... must be 1 for the batch and the channels ..."), a value below 1.
absl::StatusOr<HW> ReadWindowAttr(const AttrMap& attrs, std::string_view name,
                                  int64_t fallback);

// The `padding` attribute: true for "same" (or "SAME"), false for "valid"
// (or "VALID"), else an InvalidArgument.
absl::StatusOr<bool> ReadSamePadding(const AttrMap& attrs);

// The attributes of conv2d and of its two gradients.
struct ConvAttrs {
  HW strides, dilations;
  bool same = true;
};
absl::StatusOr<ConvAttrs> ReadConvAttrs(const AttrMap& attrs);

// The attributes of max_pool, avg_pool and their gradients: `size` is
// required; `strides` defaults to `size`, `dilations` (the distance
// between a window's taps) to 1.
struct PoolAttrs {
  HW size, strides, dilations;
  bool same = false;
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
absl::StatusOr<PoolAttrs> ReadPoolAttrs(const AttrMap& attrs);

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
// size ...").
struct ConvWindows {
  Windows rows, cols;
};
absl::StatusOr<ConvWindows> PlaceConvWindows(DType dtype, const Shape& x,
                                             const Shape& f,
                                             const ConvAttrs& attrs);

// Where the windows of max_pool, avg_pool or a gradient of theirs fall on
// NHWC `x` of `dtype`, for the kernels (CPU and GPU). `x` must have rank 4
// ("WHO needs an NHWC input of rank 4, got ...", an InvalidArgument that
// begins with `who`); then PlaceWindows' errors ("the window of effective
// size ...").
struct PoolWindows {
  int64_t batch = 0, in_h = 0, in_w = 0, chans = 0;
  Windows rows, cols;
  // The pooled output: [batch, rows.out, cols.out, chans].
  Shape y() const { return Shape{batch, rows.out, cols.out, chans}; }
};
absl::StatusOr<PoolWindows> PlacePoolWindows(DType dtype, const Shape& x,
                                             const PoolAttrs& attrs,
                                             std::string_view who);

// The gradient kernels' check of their `dy` (of `dtype`) against the
// forward output `y` they place: an InvalidArgument "OP: dy f32[...] does
// not match the forward output [...]" when the shapes differ.
absl::Status CheckWindowsDy(std::string_view op, DType dtype, const Shape& dy,
                            const Shape& y);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_WINDOW_H_
