// resize's geometry (framework/ops/image_ops.cc): for each output position
// along one axis, the two input positions it reads and the weight of the
// second, by the method and the coordinate rule. The shape function, the
// kernels and the gradient's kernel all use it.
#ifndef RUNNEL_FRAMEWORK_OPS_RESIZE_PLAN_H_
#define RUNNEL_FRAMEWORK_OPS_RESIZE_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/graph.h"
#include "framework/tensor.h"

namespace runnel {

// resize's attributes: `size` [out_h, out_w]; `method` "nearest" or
// "linear"; `coordinates` "half_pixel" (TensorFlow 2's and PyTorch's
// align_corners = False), "align_corners" or "asymmetric" (TensorFlow 1's,
// PyTorch's "nearest").
struct ResizeAttrs {
  int64_t out_h = 0, out_w = 0;
  bool linear = true;
  std::string coordinates = "half_pixel";
  static absl::StatusOr<ResizeAttrs> Read(const AttrMap& attrs);
};

// resize's (and resize_grad's) operands as the kernels of both devices
// check them: NHWC images; for resize_grad, dy of the forward output's
// shape. The image's dims.
struct ResizeImage {
  int64_t batch = 0, in_h = 0, in_w = 0, chans = 0;
  Shape y() const;  // [batch, out_h, out_w, chans]
  int64_t out_h = 0, out_w = 0;
};
absl::StatusOr<ResizeImage> CheckResize(const Tensor& x, const ResizeAttrs& a);
absl::StatusOr<ResizeImage> CheckResizeGrad(const Tensor& dy, const Tensor& x,
                                            const ResizeAttrs& a);

// Output position o reads input positions lo[o] and hi[o], weighing hi[o]
// by w[o] (0 for nearest: lo[o] alone). The weights are doubles so that
// f64 images get them exactly on both devices; f32 rounds them.
struct ResizeAxis {
  std::vector<int64_t> lo, hi;
  std::vector<double> w;
};
ResizeAxis PlanResizeAxis(int64_t in, int64_t out, const ResizeAttrs& a);

// The same axis read backwards, for a gradient that gathers: input
// position i is read, with weight w[k], by output position out[k] for k in
// [starts[i], starts[i + 1]) (its two taps' weights added when they are
// one position).
struct ResizeBackAxis {
  std::vector<int64_t> starts, out;
  std::vector<double> w;
};
ResizeBackAxis PlanResizeBack(const ResizeAxis& axis, int64_t in);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_OPS_RESIZE_PLAN_H_
