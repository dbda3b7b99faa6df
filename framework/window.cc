#include "framework/window.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/shape.h"

namespace runnel {
namespace {

// "[1, 2, 3]", as a script writes the list.
std::string List(const std::vector<int64_t>& v) {
  return StrCat("[", absl::StrJoin(v, ", "), "]");
}

}  // namespace

int WindowRank(std::string_view op) {
  return op.find("3d") != std::string_view::npos ? 3 : 2;
}

absl::StatusOr<HW> ReadWindowAttr(const AttrMap& attrs, std::string_view name,
                                  int64_t fallback, int spatial) {
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> v,
                      GetAttrOr<std::vector<int64_t>>(
                          attrs, name, std::vector<int64_t>{fallback}));
  const size_t n = v.size();
  const bool ndhwc = spatial == 3;
  if (n != 1 && n != static_cast<size_t>(spatial) &&
      n != static_cast<size_t>(spatial) + 2) {
    return absl::InvalidArgumentError(
        StrCat("attribute '", name, "' must be an int or ",
               ndhwc ? "[d, h, w]" : "[h, w]", ", got ", List(v)));
  }
  if (n == static_cast<size_t>(spatial) + 2) {
    if (v.front() != 1 || v.back() != 1) {
      return absl::InvalidArgumentError(StrCat(
          "attribute '", name,
          "' must be 1 for the batch and the channels, as in ",
          ndhwc ? "[1, d, h, w, 1] (NDHWC)" : "[1, h, w, 1] (NHWC)", ", got ",
          List(v), "; windows move along ",
          ndhwc ? "depth, height and width" : "height and width", " only"));
    }
    v = std::vector<int64_t>(v.begin() + 1, v.end() - 1);
  }
  if (v.size() == 1) v.assign(spatial, v[0]);
  // v is [h, w] or [d, h, w].
  HW hw{v[spatial - 2], v[spatial - 1], spatial == 3 ? v[0] : 1};
  for (int64_t e : v) {
    if (e < 1) {
      return absl::InvalidArgumentError(
          StrCat("attribute '", name, "' must be positive, got ", List(v)));
    }
  }
  return hw;
}

absl::StatusOr<bool> ReadSamePadding(const AttrMap& attrs) {
  // (Not RN_ASSIGN_OR_RETURN: GCC 12 then warns the string may be used
  // uninitialised.)
  absl::StatusOr<std::string> padding = GetAttr<std::string>(attrs, "padding");
  if (!padding.ok()) return padding.status();
  const std::string& p = *padding;
  if (p == "same" || p == "SAME") return true;
  if (p == "valid" || p == "VALID") return false;
  return absl::InvalidArgumentError(
      StrCat("padding must be \"same\" or \"valid\", got \"", p, "\""));
}

absl::StatusOr<ConvAttrs> ReadConvAttrs(const AttrMap& attrs, int spatial) {
  ConvAttrs a;
  a.spatial = spatial;
  RN_ASSIGN_OR_RETURN(a.strides, ReadWindowAttr(attrs, "strides", 1, spatial));
  RN_ASSIGN_OR_RETURN(a.dilations,
                      ReadWindowAttr(attrs, "dilations", 1, spatial));
  RN_ASSIGN_OR_RETURN(a.same, ReadSamePadding(attrs));
  return a;
}

absl::StatusOr<PoolAttrs> ReadPoolAttrs(const AttrMap& attrs, int spatial) {
  if (!attrs.contains("size")) {
    return absl::InvalidArgumentError("missing attribute 'size'");
  }
  PoolAttrs a;
  a.spatial = spatial;
  RN_ASSIGN_OR_RETURN(a.size, ReadWindowAttr(attrs, "size", 1, spatial));
  a.strides = a.size;
  if (attrs.contains("strides")) {
    RN_ASSIGN_OR_RETURN(a.strides,
                        ReadWindowAttr(attrs, "strides", 1, spatial));
  }
  RN_ASSIGN_OR_RETURN(a.dilations,
                      ReadWindowAttr(attrs, "dilations", 1, spatial));
  RN_ASSIGN_OR_RETURN(a.same, ReadSamePadding(attrs));
  return a;
}

Taps WindowTaps(int64_t o, int64_t stride, int64_t pad_begin, int64_t size,
                int64_t dilation, int64_t in) {
  const int64_t start = o * stride - pad_begin;
  // The first tap k with start + k * dilation >= 0, and one past the last
  // with start + k * dilation < in.
  const int64_t lo = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  const int64_t hi =
      in - 1 - start < 0 ? 0 : std::min(size, (in - 1 - start) / dilation + 1);
  Taps t;
  t.step = dilation;
  t.first = start + lo * dilation;
  t.count = std::max<int64_t>(hi - lo, 0);
  return t;
}

absl::StatusOr<Windows> PlaceWindows(int64_t in, int64_t window, int64_t stride,
                                     int64_t dilation, bool same,
                                     std::string_view what) {
  Windows w;
  if (in < 0) {
    w.out = kUnknownDim;
    return w;
  }
  if (same) {
    w.out = (in + stride - 1) / stride;
    if (window < 0) return w;  // the pads depend on the window
    const int64_t effective = (window - 1) * dilation + 1;
    const int64_t total =
        std::max<int64_t>(0, (w.out - 1) * stride + effective - in);
    w.pad_begin = total / 2;
    w.pad_end = total - w.pad_begin;
    return w;
  }
  if (window < 0) {
    w.out = kUnknownDim;
    return w;
  }
  const int64_t effective = (window - 1) * dilation + 1;
  if (in < effective) {
    return absl::InvalidArgumentError(
        StrCat("the ", what, " of effective size ", effective,
               " is larger than the input (", in, ") with valid padding"));
  }
  w.out = (in - effective) / stride + 1;
  return w;
}

absl::StatusOr<ConvWindows> PlaceConvWindows(DType dtype, const Shape& x,
                                             const Shape& f,
                                             const ConvAttrs& attrs) {
  const bool three = attrs.spatial == 3;
  const int rank = attrs.spatial + 2;
  if (x.rank() != rank || f.rank() != rank) {
    return absl::InvalidArgumentError(
        StrCat(three ? "conv3d needs NDHWC input and DHWIO filters of rank 5"
                     : "conv2d needs NHWC input and HWIO filters of rank 4",
               ", got ", DTypeName(dtype), x.ToString(), " and ",
               DTypeName(dtype), f.ToString()));
  }
  if (x.dim(rank - 1) != f.dim(rank - 2)) {
    return absl::InvalidArgumentError(
        StrCat("channels differ: the input ", DTypeName(dtype), x.ToString(),
               " has ", x.dim(rank - 1), " but the filters ", DTypeName(dtype),
               f.ToString(), " expect ", f.dim(rank - 2)));
  }
  ConvWindows w;
  const int s = three ? 1 : 0;  // the first of height and width
  if (three) {
    RN_ASSIGN_OR_RETURN(w.depths,
                        PlaceWindows(x.dim(1), f.dim(0), attrs.strides.d,
                                     attrs.dilations.d, attrs.same, "filter"));
  }
  RN_ASSIGN_OR_RETURN(w.rows,
                      PlaceWindows(x.dim(1 + s), f.dim(s), attrs.strides.h,
                                   attrs.dilations.h, attrs.same, "filter"));
  RN_ASSIGN_OR_RETURN(w.cols,
                      PlaceWindows(x.dim(2 + s), f.dim(1 + s), attrs.strides.w,
                                   attrs.dilations.w, attrs.same, "filter"));
  return w;
}

absl::StatusOr<PoolWindows> PlacePoolWindows(DType dtype, const Shape& x,
                                             const PoolAttrs& attrs,
                                             std::string_view who) {
  const bool three = attrs.spatial == 3;
  if (x.rank() != attrs.spatial + 2) {
    return absl::InvalidArgumentError(
        StrCat(who,
               three ? " needs an NDHWC input of rank 5, got "
                     : " needs an NHWC input of rank 4, got ",
               DTypeName(dtype), x.ToString()));
  }
  PoolWindows w;
  w.spatial = attrs.spatial;
  const int s = three ? 1 : 0;
  w.batch = x.dim(0);
  w.in_h = x.dim(1 + s);
  w.in_w = x.dim(2 + s);
  w.chans = x.dim(3 + s);
  if (three) {
    w.in_d = x.dim(1);
    RN_ASSIGN_OR_RETURN(w.depths,
                        PlaceWindows(w.in_d, attrs.size.d, attrs.strides.d,
                                     attrs.dilations.d, attrs.same, "window"));
  }
  RN_ASSIGN_OR_RETURN(w.rows,
                      PlaceWindows(w.in_h, attrs.size.h, attrs.strides.h,
                                   attrs.dilations.h, attrs.same, "window"));
  RN_ASSIGN_OR_RETURN(w.cols,
                      PlaceWindows(w.in_w, attrs.size.w, attrs.strides.w,
                                   attrs.dilations.w, attrs.same, "window"));
  return w;
}

absl::Status CheckWindowsDy(std::string_view op, DType dtype, const Shape& dy,
                            const Shape& y, std::string_view name) {
  if (dy == y) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat(op, ": ", name, " ", DTypeName(dtype), dy.ToString(),
             " does not match the forward output ", y.ToString()));
}

}  // namespace runnel
