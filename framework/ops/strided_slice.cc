// strided_slice's plan (array_ops.h): NumPy's basic indexing, read from the
// node's begin, end and strides and its masks, for the shape function and
// both devices' kernels.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/ops/array_ops.h"

namespace runnel {
namespace {

absl::Status Invalid(std::string message) {
  return absl::InvalidArgumentError(std::move(message));
}

}  // namespace

absl::StatusOr<StridedSlicePlan> PlanStridedSlice(const Shape& in,
                                                  const AttrMap& attrs) {
  using Ints = std::vector<int64_t>;
  RN_ASSIGN_OR_RETURN(Ints begin, GetAttr<Ints>(attrs, "begin"));
  RN_ASSIGN_OR_RETURN(Ints end, GetAttr<Ints>(attrs, "end"));
  RN_ASSIGN_OR_RETURN(Ints strides,
                      GetAttrOr<Ints>(attrs, "strides", Ints(begin.size(), 1)));
  RN_ASSIGN_OR_RETURN(int64_t begin_mask,
                      GetAttrOr<int64_t>(attrs, "begin_mask", 0));
  RN_ASSIGN_OR_RETURN(int64_t end_mask,
                      GetAttrOr<int64_t>(attrs, "end_mask", 0));
  RN_ASSIGN_OR_RETURN(int64_t shrink_mask,
                      GetAttrOr<int64_t>(attrs, "shrink_axis_mask", 0));
  RN_ASSIGN_OR_RETURN(int64_t new_axis_mask,
                      GetAttrOr<int64_t>(attrs, "new_axis_mask", 0));
  const int n = static_cast<int>(begin.size());
  if (static_cast<int>(end.size()) != n ||
      static_cast<int>(strides.size()) != n) {
    return Invalid(StrCat("begin, end and strides must have one length, got ",
                          n, ", ", end.size(), " and ", strides.size()));
  }
  auto bit = [](int64_t mask, int k) { return k < 63 && (mask >> k & 1); };
  int consumed = 0;
  for (int k = 0; k < n; ++k) {
    if (strides[k] == 0) return Invalid("slice step cannot be zero");
    if (!bit(new_axis_mask, k)) ++consumed;
  }
  StridedSlicePlan plan;
  if (in.unknown_rank()) {
    plan.output = Shape::UnknownRank();
    return plan;
  }
  if (consumed > in.rank()) {
    return Invalid(StrCat("too many indices (", consumed,
                          ") for a tensor of rank ", in.rank()));
  }
  std::vector<int64_t> out;
  auto take = [&](int64_t b, int64_t s, int64_t size) {
    plan.begin.push_back(b);
    plan.stride.push_back(s);
    plan.size.push_back(size);
  };
  int d = 0;
  for (int k = 0; k < n; ++k) {
    if (bit(new_axis_mask, k)) {
      out.push_back(1);
      continue;
    }
    const int64_t dim = in.dim(d);
    const int64_t s = strides[k];
    if (bit(shrink_mask, k)) {
      int64_t index = begin[k];
      if (dim >= 0) {
        if (index < 0) index += dim;
        if (index < 0 || index >= dim) {
          return Invalid(StrCat("index ", begin[k],
                                " is out of range for axis ", d, " of size ",
                                dim));
        }
      }
      take(index, 1, 1);
    } else if (dim < 0) {
      take(0, s, kUnknownDim);
      out.push_back(kUnknownDim);
    } else {
      // Python's rules: negative indices count from the end, then clamp
      // into the range a step in this direction can reach.
      auto norm = [dim](int64_t i) { return i < 0 ? i + dim : i; };
      int64_t b, e, size;
      if (s > 0) {
        b = bit(begin_mask, k) ? 0
                               : std::clamp<int64_t>(norm(begin[k]), 0, dim);
        e = bit(end_mask, k) ? dim : std::clamp<int64_t>(norm(end[k]), 0, dim);
        size = e > b ? (e - b + s - 1) / s : 0;
      } else {
        b = bit(begin_mask, k)
                ? dim - 1
                : std::clamp<int64_t>(norm(begin[k]), -1, dim - 1);
        e = bit(end_mask, k) ? -1
                             : std::clamp<int64_t>(norm(end[k]), -1, dim - 1);
        size = b > e ? (b - e - s - 1) / -s : 0;
      }
      take(b, s, size);
      out.push_back(size);
    }
    ++d;
  }
  for (; d < in.rank(); ++d) {
    take(0, 1, in.dim(d));
    out.push_back(in.dim(d));
  }
  plan.output = Shape(std::move(out));
  return plan;
}

}  // namespace runnel
