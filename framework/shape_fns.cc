#include "framework/shape_fns.h"

#include <algorithm>

#include "base/status_macros.h"
#include "base/strings.h"

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

std::vector<int64_t> BatchOffsets(const Shape& in, const Shape& out,
                                  int64_t matrix_size) {
  const int out_rank = out.rank() - 2, in_rank = in.rank() - 2;
  int64_t count = 1;
  for (int i = 0; i < out_rank; ++i) count *= out.dim(i);
  std::vector<int64_t> strides(out_rank, 0);
  int64_t stride = matrix_size;
  for (int i = in_rank - 1; i >= 0; --i) {
    const int o = i + out_rank - in_rank;
    strides[o] = in.dim(i) == 1 ? 0 : stride;
    stride *= in.dim(i);
  }
  std::vector<int64_t> offsets(count);
  std::vector<int64_t> index(out_rank, 0);
  for (int64_t b = 0; b < count; ++b) {
    int64_t off = 0;
    for (int i = 0; i < out_rank; ++i) off += index[i] * strides[i];
    offsets[b] = off;
    for (int i = out_rank - 1; i >= 0; --i) {
      if (++index[i] < out.dim(i)) break;
      index[i] = 0;
    }
  }
  return offsets;
}

absl::StatusOr<MatMulPlan> PlanMatMul(const Shape& a, const Shape& b, bool ta,
                                      bool tb, DType dtype) {
  auto operands = [&] {
    return StrCat(DTypeName(dtype), a.ToString(), " @ ", DTypeName(dtype),
                  b.ToString());
  };
  if (a.rank() < 2 || b.rank() < 2) {
    return absl::InvalidArgumentError(
        StrCat("operands must have rank >= 2, got ", operands()));
  }
  MatMulPlan p;
  p.ta = ta;
  p.tb = tb;
  p.a_rows = a.dim(a.rank() - 2);
  p.a_cols = a.dim(a.rank() - 1);
  p.b_rows = b.dim(b.rank() - 2);
  p.b_cols = b.dim(b.rank() - 1);
  p.m = ta ? p.a_cols : p.a_rows;
  p.k = ta ? p.a_rows : p.a_cols;
  p.n = tb ? p.b_rows : p.b_cols;
  if (p.k != (tb ? p.b_cols : p.b_rows)) {
    return absl::InvalidArgumentError(
        StrCat("inner dimensions differ: ", operands()));
  }
  Shape batch_a(std::vector<int64_t>(a.dims().begin(), a.dims().end() - 2));
  Shape batch_b(std::vector<int64_t>(b.dims().begin(), b.dims().end() - 2));
  RN_ASSIGN_OR_RETURN(p.out, BroadcastShapes(batch_a, batch_b));
  p.out.mutable_dims().push_back(p.m);
  p.out.mutable_dims().push_back(p.n);
  p.a_offsets = BatchOffsets(a, p.out, p.a_rows * p.a_cols);
  p.b_offsets = BatchOffsets(b, p.out, p.b_rows * p.b_cols);
  // A stack of matrices times one matrix (a dense layer on a batch of
  // sequences) is one product of all their rows: fewer, larger products,
  // the output's layout unchanged.
  const int64_t count = static_cast<int64_t>(p.a_offsets.size());
  bool stacked = count > 1 && !ta;
  for (int64_t i = 0; stacked && i < count; ++i) {
    stacked = p.b_offsets[i] == 0 && p.a_offsets[i] == i * p.a_rows * p.a_cols;
  }
  if (stacked) {
    p.m *= count;
    p.a_rows *= count;
    p.a_offsets = {0};
    p.b_offsets = {0};
  }
  return p;
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
