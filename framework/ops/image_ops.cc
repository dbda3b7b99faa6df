// resize and its gradient (tf.image.resize, torch.nn.functional.interpolate
// of NHWC images): nearest or (bi)linear, separable along height and width.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/ops/resize_plan.h"
#include "framework/shape_fns.h"

namespace runnel {

absl::StatusOr<ResizeAttrs> ResizeAttrs::Read(const AttrMap& attrs) {
  ResizeAttrs a;
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> size,
                      GetAttr<std::vector<int64_t>>(attrs, "size"));
  if (size.size() != 2 || size[0] < 1 || size[1] < 1) {
    return absl::InvalidArgumentError(
        StrCat("size must be [height, width], both at least 1, got [",
               absl::StrJoin(size, ", "), "]"));
  }
  a.out_h = size[0];
  a.out_w = size[1];
  RN_ASSIGN_OR_RETURN(std::string method,
                      GetAttr<std::string>(attrs, "method"));
  if (method != "nearest" && method != "linear") {
    return absl::InvalidArgumentError(StrCat(
        "method must be \"nearest\" or \"linear\", got \"", method, "\""));
  }
  a.linear = method == "linear";
  RN_ASSIGN_OR_RETURN(a.coordinates,
                      GetAttr<std::string>(attrs, "coordinates"));
  if (a.coordinates != "half_pixel" && a.coordinates != "align_corners" &&
      a.coordinates != "asymmetric") {
    return absl::InvalidArgumentError(
        StrCat("coordinates must be \"half_pixel\", \"align_corners\" or "
               "\"asymmetric\", got \"",
               a.coordinates, "\""));
  }
  return a;
}

ResizeAxis PlanResizeAxis(int64_t in, int64_t out, const ResizeAttrs& a) {
  ResizeAxis p;
  p.lo.resize(out);
  p.hi.resize(out);
  p.w.assign(out, 0.0);
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double corners =
      out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0;
  for (int64_t o = 0; o < out; ++o) {
    int64_t lo;
    double w = 0;
    if (!a.linear) {
      // PyTorch's "nearest-exact" (TensorFlow 2's half-pixel nearest),
      // "nearest", and the rounded corner-aligned position.
      const double src = a.coordinates == "half_pixel" ? (o + 0.5) * scale
                         : a.coordinates == "asymmetric"
                             ? o * scale
                             : std::round(o * corners);
      lo = static_cast<int64_t>(std::floor(src));
    } else {
      double src = a.coordinates == "half_pixel"   ? (o + 0.5) * scale - 0.5
                   : a.coordinates == "asymmetric" ? o * scale
                                                   : o * corners;
      src = std::max(src, 0.0);
      lo = static_cast<int64_t>(std::floor(src));
      w = src - static_cast<double>(lo);
    }
    lo = std::min(lo, in - 1);
    p.lo[o] = lo;
    p.hi[o] = std::min(lo + 1, in - 1);
    p.w[o] = w;
  }
  return p;
}

Shape ResizeImage::y() const { return Shape{batch, out_h, out_w, chans}; }

namespace {

absl::Status NeedImage(const Tensor& t, const char* what) {
  if (t.rank() != 4) {
    return absl::InvalidArgumentError(StrCat(
        what, " must be an NHWC image of rank 4, got ", t.shape().ToString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ResizeImage> CheckResize(const Tensor& x, const ResizeAttrs& a) {
  RN_RETURN_IF_ERROR(NeedImage(x, "x"));
  ResizeImage im{x.dim(0), x.dim(1), x.dim(2), x.dim(3), a.out_h, a.out_w};
  if ((im.in_h == 0 || im.in_w == 0) && im.batch * im.chans > 0) {
    return absl::InvalidArgumentError(
        StrCat("cannot resize an empty image ", x.shape().ToString()));
  }
  return im;
}

absl::StatusOr<ResizeImage> CheckResizeGrad(const Tensor& dy, const Tensor& x,
                                            const ResizeAttrs& a) {
  RN_RETURN_IF_ERROR(NeedImage(dy, "dy"));
  RN_ASSIGN_OR_RETURN(ResizeImage im, CheckResize(x, a));
  if (dy.shape() != im.y()) {
    return absl::InvalidArgumentError(
        StrCat("resize_grad: dy ", dy.shape().ToString(),
               " does not match the forward output ", im.y().ToString()));
  }
  return im;
}

ResizeBackAxis PlanResizeBack(const ResizeAxis& axis, int64_t in) {
  std::vector<std::vector<std::pair<int64_t, double>>> reads(in);
  for (size_t o = 0; o < axis.lo.size(); ++o) {
    const int64_t lo = axis.lo[o], hi = axis.hi[o];
    const double w = axis.w[o];
    if (lo == hi) {
      reads[lo].push_back({static_cast<int64_t>(o), (1 - w) + w});
    } else {
      reads[lo].push_back({static_cast<int64_t>(o), 1 - w});
      if (w != 0) reads[hi].push_back({static_cast<int64_t>(o), w});
    }
  }
  ResizeBackAxis b;
  b.starts.push_back(0);
  for (const auto& r : reads) {
    for (const auto& [o, w] : r) {
      b.out.push_back(o);
      b.w.push_back(w);
    }
    b.starts.push_back(static_cast<int64_t>(b.out.size()));
  }
  return b;
}

namespace {

absl::Status RequireFloatImage(const ShapeContext& c, int i, const char* what) {
  if (!IsFloating(c.dtype(i))) {
    return absl::InvalidArgumentError(
        StrCat(what, " must be floating, got ", c.input(i).ToString()));
  }
  if (!c.shape(i).unknown_rank() && c.shape(i).rank() != 4) {
    return absl::InvalidArgumentError(StrCat(
        what, " must be an NHWC image of rank 4, got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

Specs ResizeShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireFloatImage(c, 0, "x"));
  RN_ASSIGN_OR_RETURN(ResizeAttrs a, ResizeAttrs::Read(c.attrs()));
  const Shape& x = c.shape(0);
  if (x.unknown_rank()) {
    return One(c.dtype(0), Shape{kUnknownDim, a.out_h, a.out_w, kUnknownDim});
  }
  return One(c.dtype(0), Shape{x.dim(0), a.out_h, a.out_w, x.dim(3)});
}

// resize_grad(dy, x): dy of resize(x)'s shape; dx of x's.
Specs ResizeGradShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireFloatImage(c, 0, "dy"));
  RN_RETURN_IF_ERROR(RequireFloatImage(c, 1, "x"));
  RN_ASSIGN_OR_RETURN(ResizeAttrs a, ResizeAttrs::Read(c.attrs()));
  const Shape& dy = c.shape(0);
  if (!dy.unknown_rank() && ((dy.dim(1) >= 0 && dy.dim(1) != a.out_h) ||
                             (dy.dim(2) >= 0 && dy.dim(2) != a.out_w))) {
    return absl::InvalidArgumentError(StrCat("dy ", c.input(0).ToString(),
                                             " is not of size [", a.out_h, ", ",
                                             a.out_w, "]"));
  }
  return One(c.dtype(0), c.shape(1));
}

// non_max_suppression(boxes [B, N, 4], scores [B, C, N], max_per_class,
// iou_threshold, score_threshold) -> i64 [?, 3].
Specs NmsShape(const ShapeContext& c) {
  if (!IsFloating(c.dtype(0)) || c.dtype(1) != c.dtype(0)) {
    return absl::InvalidArgumentError(
        StrCat("boxes and scores must be floats of one dtype, got ",
               c.input(0).ToString(), " and ", c.input(1).ToString()));
  }
  const Shape& b = c.shape(0);
  const Shape& s = c.shape(1);
  if (!b.IsCompatibleWith(Shape{kUnknownDim, kUnknownDim, 4})) {
    return absl::InvalidArgumentError(
        StrCat("boxes must be [batch, boxes, 4], got ", c.input(0).ToString()));
  }
  if (!s.IsCompatibleWith(Shape{kUnknownDim, kUnknownDim, kUnknownDim})) {
    return absl::InvalidArgumentError(StrCat(
        "scores must be [batch, classes, boxes], got ", c.input(1).ToString()));
  }
  for (int i = 2; i < 5; ++i) {
    if (!c.shape(i).IsCompatibleWith(Shape{})) {
      return absl::InvalidArgumentError(
          StrCat("max_per_class and the thresholds must be scalars, got ",
                 c.input(i).ToString()));
    }
  }
  return One(DType::kI64, Shape{kUnknownDim, 3});
}

}  // namespace

RUNNEL_REGISTER_OP(
    OpDefBuilder("non_max_suppression")
        .Inputs({"boxes", "scores", "max_per_class", "iou_threshold",
                 "score_threshold"})
        .Outputs({"selected"})
        .SameDType({0, 1})
        .Attr("center_point_box", false)
        .Shape(NmsShape)
        .Doc("Greedy non-maximum suppression (ONNX NonMaxSuppression, "
             "tf.image.non_max_suppression per image and class): for each "
             "image and class, the boxes scoring above score_threshold, best "
             "first (equal scores by position), each kept unless its "
             "intersection over union with one kept before exceeds "
             "iou_threshold, at most max_per_class; one row [image, class, "
             "box] each. Boxes are [y1, x1, y2, x2] (corners in either "
             "order), or [x_center, y_center, width, height] with "
             "center_point_box."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("resize")
        .Inputs({"x"})
        .Outputs({"y"})
        .OptionalAttr("size")
        .Attr("method", std::string("linear"))
        .Attr("coordinates", std::string("half_pixel"))
        .Shape(ResizeShape)
        .Doc("NHWC `x` resized to `size` [height, width] (tf.image.resize, "
             "torch.nn.functional.interpolate): `method` \"linear\" "
             "(bilinear) or \"nearest\"; `coordinates` \"half_pixel\" "
             "(TensorFlow 2's, PyTorch's align_corners = False and "
             "\"nearest-exact\"), \"align_corners\" or \"asymmetric\" "
             "(PyTorch's \"nearest\")."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("resize_grad")
        .Inputs({"dy", "x"})
        .Outputs({"dx"})
        .OptionalAttr("size")
        .Attr("method", std::string("linear"))
        .Attr("coordinates", std::string("half_pixel"))
        .Shape(ResizeGradShape)
        .Doc("The gradient of resize(x) given dy: each element of dy shared "
             "among the input elements it was made of, by their weights; "
             "reads only x's shape."));

}  // namespace runnel
