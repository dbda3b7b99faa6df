#include "runtime/shape_fns.h"

#include <algorithm>

#include "runtime/status_macros.h"
#include "runtime/strings.h"

namespace runnel {

Specs UnchangedShape(const ShapeContext& c) {
  return One(c.dtype(0), c.shape(0));
}

Specs FloatUnchangedShape(const ShapeContext& c) {
  if (!IsFloating(c.dtype(0))) {
    return absl::InvalidArgumentError(StrCat(
        "expected a floating-point tensor, got ", c.input(0).ToString()));
  }
  return One(c.dtype(0), c.shape(0));
}

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return Shape::UnknownRank();
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a.dim(ia) : 1;
    int64_t db = ib >= 0 ? b.dim(ib) : 1;
    if (da == 1) {
      out[i] = db;
    } else if (db == 1) {
      out[i] = da;
    } else if (da < 0 || db < 0) {
      out[i] = da < 0 ? db : da;  // unknown vs n: must be n at run time
      if (da < 0 && db < 0) out[i] = kUnknownDim;
    } else if (da == db) {
      out[i] = da;
    } else {
      return absl::InvalidArgumentError(StrCat("shapes ", a.ToString(), " and ",
                                               b.ToString(),
                                               " cannot be broadcast"));
    }
  }
  return Shape(std::move(out));
}

absl::Status SameDTypes(const ShapeContext& c, int first, int last) {
  for (int i = first + 1; i <= last; ++i) {
    if (c.dtype(i) != c.dtype(first)) {
      return absl::InvalidArgumentError(
          StrCat("dtypes differ: ", c.input(first).ToString(), " and ",
                 c.input(i).ToString()));
    }
  }
  return absl::OkStatus();
}

Specs BinaryBroadcastShape(const ShapeContext& c,
                           std::optional<DType> out_dtype) {
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  RN_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(c.shape(0), c.shape(1)));
  return One(out_dtype.value_or(c.dtype(0)), std::move(s));
}

absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        StrCat("axis ", axis, " is out of range for a tensor of rank ", rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

absl::StatusOr<std::vector<int>> ReductionAxes(const ShapeContext& c,
                                               int rank) {
  std::vector<int> axes;
  if (!c.attrs().contains("axis")) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> raw,
                      c.attr<std::vector<int64_t>>("axis"));
  for (int64_t a : raw) {
    RN_ASSIGN_OR_RETURN(int n, NormalizeAxis(a, rank));
    axes.push_back(n);
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

Shape ReducedShape(const Shape& in, const std::vector<int>& axes,
                   bool keepdims) {
  if (in.unknown_rank()) return Shape::UnknownRank();
  std::vector<int64_t> out;
  for (int i = 0; i < in.rank(); ++i) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced) {
      out.push_back(in.dim(i));
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return Shape(std::move(out));
}

absl::StatusOr<Shape> ShapeFromTensor(const Tensor* value,
                                      const TensorSpec& spec) {
  if (spec.dtype != DType::kI32 && spec.dtype != DType::kI64) {
    return absl::InvalidArgumentError(
        StrCat("a shape must be an i32 or i64 vector, got ", spec.ToString()));
  }
  if (spec.shape.rank() > 1) {
    return absl::InvalidArgumentError(
        StrCat("a shape must be a vector, got ", spec.ToString()));
  }
  if (value == nullptr) {
    if (spec.shape.rank() == 1 && spec.shape.dim(0) >= 0) {
      return Shape(std::vector<int64_t>(spec.shape.dim(0), kUnknownDim));
    }
    return Shape::UnknownRank();
  }
  return Shape(value->ToInt64s());
}

}  // namespace runnel
