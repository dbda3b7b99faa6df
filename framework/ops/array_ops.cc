// Shape-manipulation and creation ops: reshape, transpose, concat, slicing,
// gather, padding, broadcasting; fill, range, eye, one_hot.
//
// Ops whose output shape comes from an input (reshape's `shape`, slice's
// `begin` and `size`, fill's `shape`, ...) use that input's value when it is
// known before run time and infer what they can otherwise. Their kernels run
// the same shape functions on the actual inputs, so the checks here are the
// checks at run time too.
#include "framework/ops/array_ops.h"

#include <algorithm>
#include <cmath>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/shape_fns.h"
#include "framework/tensor.h"

namespace runnel {
namespace {

absl::Status Invalid(std::string message) {
  return absl::InvalidArgumentError(std::move(message));
}

bool IsIndexDType(DType d) { return d == DType::kI32 || d == DType::kI64; }

// Input `i` must be an i32 or i64 vector (`what` names it in errors).
absl::Status CheckIndexVector(const ShapeContext& c, int i,
                              std::string_view what) {
  const TensorSpec& s = c.input(i);
  if (!IsIndexDType(s.dtype) ||
      (!s.shape.unknown_rank() && s.shape.rank() != 1)) {
    return Invalid(
        StrCat(what, " must be an i32 or i64 vector, got ", s.ToString()));
  }
  return absl::OkStatus();
}

// Input `i` must be a scalar (`what` names it in errors).
absl::Status CheckScalar(const ShapeContext& c, int i, std::string_view what) {
  const Shape& s = c.shape(i);
  if (!s.unknown_rank() && s.rank() != 0) {
    return Invalid(
        StrCat(what, " must be a scalar, got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

// The length of vector input `i` when known, else -1.
int64_t VectorLength(const ShapeContext& c, int i) {
  const Shape& s = c.shape(i);
  return s.unknown_rank() || s.rank() != 1 ? -1 : s.dim(0);
}

std::string IntsToString(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += StrCat(i ? "," : "", v[i]);
  return s + "]";
}

// Two dimensions that must agree; unknown (-1) agrees with anything.
bool MergeDim(int64_t a, int64_t b, int64_t* out) {
  if (a >= 0 && b >= 0 && a != b) return false;
  *out = a >= 0 ? a : b;
  return true;
}

// An output shape read from input `i` (fill, random ops, broadcast_to):
// known values must be non-negative.
absl::StatusOr<Shape> OutputShapeInput(const ShapeContext& c, int i) {
  RN_ASSIGN_OR_RETURN(Shape s, ShapeFromTensor(c.value(i), c.input(i)));
  if (c.value(i) != nullptr) {
    for (int64_t d : s.dims()) {
      if (d < 0) {
        return Invalid(
            StrCat("shape ", s.ToString(), " has a negative dimension"));
      }
    }
  }
  return s;
}

// ---- reshape, expand_dims, squeeze, transpose ------------------------------

Specs ReshapeShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(Shape target, ShapeFromTensor(c.value(1), c.input(1)));
  if (c.value(1) == nullptr) return One(c.dtype(0), std::move(target));
  const Shape& in = c.shape(0);
  const int64_t n = in.unknown_rank() ? -1 : in.num_elements();
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < target.rank(); ++i) {
    int64_t d = target.dim(i);
    if (d == -1) {
      if (infer >= 0) {
        return Invalid(StrCat("shape ", target.ToString(),
                              " has more than one -1 dimension"));
      }
      infer = i;
    } else if (d < 0) {
      return Invalid(
          StrCat("shape ", target.ToString(), " has a negative dimension"));
    } else if (__builtin_mul_overflow(known, d, &known)) {
      return Invalid(
          StrCat("shape ", target.ToString(), " has too many elements"));
    }
  }
  auto mismatch = [&](std::string wanted) {
    return Invalid(StrCat("cannot reshape ", in.ToString(), " (", n,
                          " elements) to ", target.ToString(), " (", wanted,
                          ")"));
  };
  if (infer >= 0) {
    if (n < 0) return One(c.dtype(0), std::move(target));
    if (known == 0) {
      if (n != 0) return mismatch("0 elements");
      target.mutable_dims()[infer] = 0;
    } else if (n % known != 0) {
      return mismatch(StrCat("a multiple of ", known, " elements"));
    } else {
      target.mutable_dims()[infer] = n / known;
    }
  } else if (n >= 0 && n != known) {
    return mismatch(StrCat(known, " elements"));
  }
  return One(c.dtype(0), std::move(target));
}

Specs ExpandDimsShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  const Shape& in = c.shape(0);
  if (in.unknown_rank()) return One(c.dtype(0), Shape::UnknownRank());
  RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, in.rank() + 1));
  std::vector<int64_t> dims = in.dims();
  dims.insert(dims.begin() + a, 1);
  return One(c.dtype(0), Shape(std::move(dims)));
}

Specs SqueezeShape(const ShapeContext& c) {
  const Shape& in = c.shape(0);
  if (in.unknown_rank()) return One(c.dtype(0), Shape::UnknownRank());
  std::vector<bool> drop(in.rank(), false);
  if (c.attrs().contains("axis")) {
    RN_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                        c.attr<std::vector<int64_t>>("axis"));
    for (int64_t axis : axes) {
      RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, in.rank()));
      if (in.dim(a) >= 0 && in.dim(a) != 1) {
        return Invalid(StrCat("cannot squeeze axis ", axis, " of ",
                              in.ToString(), ": its size is ", in.dim(a),
                              ", not 1"));
      }
      drop[a] = true;
    }
  } else {
    for (int i = 0; i < in.rank(); ++i) {
      // Whether an unknown dimension goes is only known at run time.
      if (in.dim(i) < 0) return One(c.dtype(0), Shape::UnknownRank());
      drop[i] = in.dim(i) == 1;
    }
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (!drop[i]) dims.push_back(in.dim(i));
  }
  return One(c.dtype(0), Shape(std::move(dims)));
}

Specs TransposeShape(const ShapeContext& c) {
  const Shape& in = c.shape(0);
  std::vector<int64_t> perm;
  if (c.attrs().contains("perm")) {
    RN_ASSIGN_OR_RETURN(perm, c.attr<std::vector<int64_t>>("perm"));
  } else if (in.unknown_rank()) {
    return One(c.dtype(0), Shape::UnknownRank());
  } else {
    for (int i = in.rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  const int rank = static_cast<int>(perm.size());
  if (!in.unknown_rank() && in.rank() != rank) {
    return Invalid(StrCat("perm ", IntsToString(perm), " has ", rank,
                          " entries for a tensor of rank ", in.rank()));
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) {
      return Invalid(StrCat("perm ", IntsToString(perm),
                            " is not a permutation of 0..", rank - 1));
    }
    seen[p] = true;
  }
  std::vector<int64_t> dims(rank, kUnknownDim);
  if (!in.unknown_rank()) {
    for (int i = 0; i < rank; ++i) dims[i] = in.dim(perm[i]);
  }
  return One(c.dtype(0), Shape(std::move(dims)));
}

// ---- concat, stack, unstack, split -----------------------------------------

Specs ConcatShape(const ShapeContext& c) {
  const int n = c.num_inputs();
  if (n == 0) return Invalid("needs at least one tensor");
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, n - 1));
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  int first = -1;  // the first input of known rank
  for (int i = 0; i < n && first < 0; ++i) {
    if (!c.shape(i).unknown_rank()) first = i;
  }
  if (first < 0) return One(c.dtype(0), Shape::UnknownRank());
  const Shape& ref = c.shape(first);
  if (ref.rank() == 0) return Invalid("cannot concatenate scalars");
  RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, ref.rank()));
  std::vector<int64_t> dims = ref.dims();
  dims[a] = 0;
  for (int i = 0; i < n; ++i) {
    const Shape& s = c.shape(i);
    if (s.unknown_rank()) {
      dims[a] = kUnknownDim;
      continue;
    }
    if (s.rank() != ref.rank()) {
      return Invalid(StrCat("ranks differ: ", c.input(first).ToString(),
                            " and ", c.input(i).ToString()));
    }
    for (int d = 0; d < s.rank(); ++d) {
      if (d == a) {
        dims[a] =
            dims[a] < 0 || s.dim(d) < 0 ? kUnknownDim : dims[a] + s.dim(d);
      } else if (!MergeDim(dims[d], s.dim(d), &dims[d])) {
        return Invalid(StrCat("shapes ", ref.ToString(), " and ", s.ToString(),
                              " differ outside axis ", axis));
      }
    }
  }
  return One(c.dtype(0), Shape(std::move(dims)));
}

Specs StackShape(const ShapeContext& c) {
  const int n = c.num_inputs();
  if (n == 0) return Invalid("needs at least one tensor");
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, n - 1));
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  Shape merged = Shape::UnknownRank();
  for (int i = 0; i < n; ++i) {
    const Shape& s = c.shape(i);
    if (s.unknown_rank()) continue;
    if (merged.unknown_rank()) {
      merged = s;
      continue;
    }
    bool ok = s.rank() == merged.rank();
    for (int d = 0; ok && d < s.rank(); ++d) {
      ok = MergeDim(merged.dim(d), s.dim(d), &merged.mutable_dims()[d]);
    }
    if (!ok) {
      return Invalid(StrCat("shapes ", c.shape(0).ToString(), " and ",
                            s.ToString(),
                            " differ; stacked tensors must "
                            "have one shape"));
    }
  }
  if (merged.unknown_rank()) return One(c.dtype(0), Shape::UnknownRank());
  RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, merged.rank() + 1));
  std::vector<int64_t> dims = merged.dims();
  dims.insert(dims.begin() + a, n);
  return One(c.dtype(0), Shape(std::move(dims)));
}

Specs UnstackShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  const Shape& in = c.shape(0);
  if (in.unknown_rank()) {
    return Invalid("the rank of the tensor to unstack must be known");
  }
  if (in.rank() == 0) return Invalid("cannot unstack a scalar");
  RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, in.rank()));
  if (in.dim(a) < 0) {
    return Invalid(StrCat("dimension ", a, " of ", in.ToString(),
                          " must be known to unstack along it"));
  }
  std::vector<int64_t> dims = in.dims();
  dims.erase(dims.begin() + a);
  return std::vector<TensorSpec>(in.dim(a),
                                 TensorSpec{c.dtype(0), Shape(dims)});
}

Specs SplitShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(int64_t num, c.attr<int64_t>("num"));
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  if (num < 1) return Invalid(StrCat("num must be positive, got ", num));
  const Shape& in = c.shape(0);
  Shape out = Shape::UnknownRank();
  if (!in.unknown_rank()) {
    if (in.rank() == 0) return Invalid("cannot split a scalar");
    RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, in.rank()));
    out = in;
    int64_t d = in.dim(a);
    if (d >= 0 && d % num != 0) {
      return Invalid(StrCat("dimension ", a, " of ", in.ToString(), " (size ",
                            d, ") is not divisible by ", num));
    }
    out.mutable_dims()[a] = d < 0 ? kUnknownDim : d / num;
  }
  return std::vector<TensorSpec>(num, TensorSpec{c.dtype(0), out});
}

// ---- slicing and gathering -------------------------------------------------

Specs SliceShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckIndexVector(c, 1, "begin"));
  RN_RETURN_IF_ERROR(CheckIndexVector(c, 2, "size"));
  const Shape& in = c.shape(0);
  int64_t rank = in.unknown_rank() ? -1 : in.rank();
  for (int i : {1, 2}) {
    int64_t len = VectorLength(c, i);
    if (len >= 0 && rank >= 0 && len != rank) {
      return Invalid(StrCat(i == 1 ? "begin" : "size", " has ", len,
                            " entries for a tensor of rank ", rank));
    }
    if (rank < 0) rank = len;
  }
  if (rank < 0) return One(c.dtype(0), Shape::UnknownRank());
  std::vector<int64_t> begin, size;
  if (c.value(1) != nullptr) begin = c.value(1)->ToInt64s();
  if (c.value(2) != nullptr) size = c.value(2)->ToInt64s();
  std::vector<int64_t> dims(rank, kUnknownDim);
  for (int i = 0; i < rank; ++i) {
    const int64_t dim = in.unknown_rank() ? kUnknownDim : in.dim(i);
    const int64_t b = begin.empty() ? -1 : begin[i];
    const int64_t s = size.empty() ? -2 : size[i];
    if (!begin.empty() && (b < 0 || (dim >= 0 && b > dim))) {
      return Invalid(StrCat("begin ", b, " is out of range for dimension ", i,
                            " of ", in.ToString()));
    }
    if (s == -1) {
      if (b >= 0 && dim >= 0) dims[i] = dim - b;
    } else if (s < -1 && !size.empty()) {
      return Invalid(StrCat("size ", IntsToString(size),
                            " has a negative entry other than -1"));
    } else if (s >= 0) {
      if (b >= 0 && dim >= 0 && b + s > dim) {
        return Invalid(StrCat("slice [", b, ", ", b + s,
                              ") is out of range for dimension ", i, " of ",
                              in.ToString()));
      }
      dims[i] = s;
    }
  }
  return One(c.dtype(0), Shape(std::move(dims)));
}

Specs StridedSliceShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(StridedSlicePlan plan,
                      PlanStridedSlice(c.shape(0), c.attrs()));
  return One(c.dtype(0), std::move(plan.output));
}

Specs DynamicIndexShape(const ShapeContext& c) {
  if (!IsInteger(c.dtype(1))) {
    return Invalid(
        StrCat("an index must be an integer, got ", c.input(1).ToString()));
  }
  RN_RETURN_IF_ERROR(CheckScalar(c, 1, "the index"));
  const Shape& in = c.shape(0);
  if (in.unknown_rank()) return One(c.dtype(0), Shape::UnknownRank());
  if (in.rank() == 0) return Invalid("cannot index a scalar");
  std::vector<int64_t> dims(in.dims().begin() + 1, in.dims().end());
  return One(c.dtype(0), Shape(std::move(dims)));
}

// (x, index, value) -> x's shape; value is shaped like x[index].
Specs DynamicUpdateIndexShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(std::vector<TensorSpec> row, DynamicIndexShape(c));
  const Shape& v = c.shape(2);
  const Shape& r = row[0].shape;
  bool fits = r.unknown_rank() || v.unknown_rank() || r.rank() == v.rank();
  for (int k = 0;
       fits && !r.unknown_rank() && !v.unknown_rank() && k < r.rank(); ++k) {
    fits = r.dim(k) < 0 || v.dim(k) < 0 || r.dim(k) == v.dim(k);
  }
  if (c.dtype(2) != c.dtype(0) || !fits) {
    return Invalid(StrCat("the value ", c.input(2).ToString(),
                          " does not fit a row of ", c.input(0).ToString()));
  }
  return One(c.dtype(0), c.shape(0));
}

Specs GatherShape(const ShapeContext& c) {
  if (!IsIndexDType(c.dtype(1))) {
    return Invalid(
        StrCat("indices must be i32 or i64, got ", c.input(1).ToString()));
  }
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  const Shape& params = c.shape(0);
  const Shape& indices = c.shape(1);
  if (params.unknown_rank()) return One(c.dtype(0), Shape::UnknownRank());
  if (params.rank() == 0) return Invalid("cannot gather from a scalar");
  RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, params.rank()));
  if (indices.unknown_rank()) return One(c.dtype(0), Shape::UnknownRank());
  std::vector<int64_t> dims(params.dims().begin(), params.dims().begin() + a);
  dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
  dims.insert(dims.end(), params.dims().begin() + a + 1, params.dims().end());
  return One(c.dtype(0), Shape(std::move(dims)));
}

// ---- tile, pad, broadcast_to -----------------------------------------------

Specs TileShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckIndexVector(c, 1, "multiples"));
  const Shape& in = c.shape(0);
  int64_t len = VectorLength(c, 1);
  if (in.unknown_rank()) {
    if (len < 0) return One(c.dtype(0), Shape::UnknownRank());
    return One(c.dtype(0), Shape(std::vector<int64_t>(len, kUnknownDim)));
  }
  if (len >= 0 && len != in.rank()) {
    return Invalid(StrCat("multiples has ", len,
                          " entries for a tensor of rank ", in.rank()));
  }
  std::vector<int64_t> dims(in.rank(), kUnknownDim);
  if (c.value(1) != nullptr) {
    std::vector<int64_t> m = c.value(1)->ToInt64s();
    for (int i = 0; i < in.rank(); ++i) {
      if (m[i] < 0) {
        return Invalid(
            StrCat("multiples ", IntsToString(m), " has a negative entry"));
      }
      dims[i] = in.dim(i) < 0 ? kUnknownDim : in.dim(i) * m[i];
    }
  }
  return One(c.dtype(0), Shape(std::move(dims)));
}

Specs PadShape(const ShapeContext& c) {
  const TensorSpec& p = c.input(1);
  if (!IsIndexDType(p.dtype) ||
      (!p.shape.unknown_rank() &&
       (p.shape.rank() != 2 || (p.shape.dim(1) >= 0 && p.shape.dim(1) != 2)))) {
    return Invalid(
        StrCat("paddings must be an i32 or i64 [rank, 2] tensor, "
               "got ",
               p.ToString()));
  }
  if (c.dtype(2) != c.dtype(0)) {
    return Invalid(StrCat("the pad value ", c.input(2).ToString(),
                          " must have the dtype of ", c.input(0).ToString()));
  }
  RN_RETURN_IF_ERROR(CheckScalar(c, 2, "the pad value"));
  const Shape& in = c.shape(0);
  int64_t len = p.shape.unknown_rank() ? -1 : p.shape.dim(0);
  if (in.unknown_rank()) {
    if (len < 0) return One(c.dtype(0), Shape::UnknownRank());
    return One(c.dtype(0), Shape(std::vector<int64_t>(len, kUnknownDim)));
  }
  if (len >= 0 && len != in.rank()) {
    return Invalid(StrCat("paddings ", p.shape.ToString(), " must be [",
                          in.rank(), ",2] for ", in.ToString()));
  }
  std::vector<int64_t> dims(in.rank(), kUnknownDim);
  if (c.value(1) != nullptr) {
    std::vector<int64_t> pads = c.value(1)->ToInt64s();
    for (int i = 0; i < in.rank(); ++i) {
      if (pads[2 * i] < 0 || pads[2 * i + 1] < 0) {
        return Invalid(
            StrCat("paddings ", IntsToString(pads), " has a negative entry"));
      }
      if (in.dim(i) >= 0) dims[i] = in.dim(i) + pads[2 * i] + pads[2 * i + 1];
    }
  }
  return One(c.dtype(0), Shape(std::move(dims)));
}

Specs BroadcastToShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(Shape target, OutputShapeInput(c, 1));
  const Shape& in = c.shape(0);
  if (in.unknown_rank() || target.unknown_rank()) {
    return One(c.dtype(0), std::move(target));
  }
  auto fail = [&] {
    return Invalid(
        StrCat("cannot broadcast ", in.ToString(), " to ", target.ToString()));
  };
  if (in.rank() > target.rank()) return fail();
  const int offset = target.rank() - in.rank();
  for (int i = 0; i < in.rank(); ++i) {
    int64_t d = in.dim(i), t = target.dim(offset + i);
    if (d >= 0 && t >= 0 && d != 1 && d != t) return fail();
    // An unknown target dimension must be d unless d is 1.
    if (t < 0 && d > 1) target.mutable_dims()[offset + i] = d;
  }
  return One(c.dtype(0), std::move(target));
}

// ---- shape_of, size, rank --------------------------------------------------

absl::StatusOr<DType> OutType(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(DType d, c.attr_or<DType>("out_type", DType::kI32));
  if (!IsIndexDType(d)) {
    return Invalid(StrCat("out_type must be i32 or i64, got ", DTypeName(d)));
  }
  return d;
}

Specs ShapeOfShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(DType d, OutType(c));
  const Shape& in = c.shape(0);
  return One(d, Shape{in.unknown_rank() ? kUnknownDim : in.rank()});
}

Specs SizeShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(DType d, OutType(c));
  return One(d, Shape{});
}

Specs RankShape(const ShapeContext& c) { return One(DType::kI32, Shape{}); }

// ---- creation --------------------------------------------------------------

Specs FillShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckScalar(c, 1, "the fill value"));
  RN_ASSIGN_OR_RETURN(Shape s, OutputShapeInput(c, 0));
  return One(c.dtype(1), std::move(s));
}

Specs RangeShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 2));
  if (!IsNumeric(c.dtype(0))) {
    return Invalid(StrCat("range needs numbers, got ", c.input(0).ToString()));
  }
  for (int i = 0; i < 3; ++i) {
    RN_RETURN_IF_ERROR(CheckScalar(c, i,
                                   i == 0   ? "start"
                                   : i == 1 ? "limit"
                                            : "delta"));
  }
  if (c.value(0) == nullptr || c.value(1) == nullptr || c.value(2) == nullptr) {
    return One(c.dtype(0), Shape{kUnknownDim});
  }
  int64_t n = 0;
  if (IsInteger(c.dtype(0))) {
    RN_ASSIGN_OR_RETURN(int64_t start, c.value(0)->ScalarAsInt());
    RN_ASSIGN_OR_RETURN(int64_t limit, c.value(1)->ScalarAsInt());
    RN_ASSIGN_OR_RETURN(int64_t delta, c.value(2)->ScalarAsInt());
    if (delta == 0) return Invalid("delta must not be zero");
    if (delta > 0 && limit > start) n = (limit - start + delta - 1) / delta;
    if (delta < 0 && limit < start) n = (start - limit - delta - 1) / -delta;
  } else {
    RN_ASSIGN_OR_RETURN(double start, c.value(0)->ScalarAsDouble());
    RN_ASSIGN_OR_RETURN(double limit, c.value(1)->ScalarAsDouble());
    RN_ASSIGN_OR_RETURN(double delta, c.value(2)->ScalarAsDouble());
    if (delta == 0) return Invalid("delta must not be zero");
    double len = std::ceil((limit - start) / delta);
    if (!std::isfinite(len)) {
      return Invalid(StrCat("range(", start, ", ", limit, ", ", delta,
                            ") does not have a finite length"));
    }
    n = len > 0 ? static_cast<int64_t>(len) : 0;
  }
  return One(c.dtype(0), Shape{n});
}

Specs EyeShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(DType d, c.attr<DType>("dtype"));
  RN_ASSIGN_OR_RETURN(int64_t n, c.attr<int64_t>("n"));
  RN_ASSIGN_OR_RETURN(int64_t m, c.attr_or<int64_t>("m", n));
  if (n < 0 || m < 0) {
    return Invalid(StrCat("eye needs non-negative sizes, got ", n, " and ", m));
  }
  return One(d, Shape{n, m});
}

Specs OneHotShape(const ShapeContext& c) {
  if (!IsInteger(c.dtype(0))) {
    return Invalid(
        StrCat("indices must be integers, got ", c.input(0).ToString()));
  }
  RN_ASSIGN_OR_RETURN(DType d, c.attr<DType>("dtype"));
  RN_ASSIGN_OR_RETURN(int64_t depth, c.attr<int64_t>("depth"));
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  if (depth < 0) return Invalid(StrCat("depth must be >= 0, got ", depth));
  const Shape& in = c.shape(0);
  if (in.unknown_rank()) return One(d, Shape::UnknownRank());
  if (axis < -1 || axis > in.rank()) {
    return Invalid(
        StrCat("axis ", axis, " is out of range for indices ", in.ToString()));
  }
  std::vector<int64_t> dims = in.dims();
  dims.insert(axis < 0 ? dims.end() : dims.begin() + axis, depth);
  return One(d, Shape(std::move(dims)));
}

// ---- registrations ---------------------------------------------------------

RUNNEL_REGISTER_OP(OpDefBuilder("reshape")
                       .Cost(KernelClass::kFree)
                       .Inputs({"x", "shape"})
                       .Outputs({"y"})
                       .Shape(ReshapeShape)
                       .Doc("`x` with another shape of as many elements; one "
                            "dimension of `shape` may be -1 (inferred). "
                            "Shares x's buffer."));

RUNNEL_REGISTER_OP(OpDefBuilder("expand_dims")
                       .Cost(KernelClass::kFree)
                       .OptionalAttr("axis")
                       .Inputs({"x"})
                       .Outputs({"y"})
                       .Shape(ExpandDimsShape)
                       .Doc("Inserts an axis of size 1 at attribute `axis`."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("squeeze")
        .Cost(KernelClass::kFree)
        .OptionalAttr("axis")
        .Inputs({"x"})
        .Outputs({"y"})
        .Shape(SqueezeShape)
        .Doc("Removes the size-1 axes named by `axis` (int or list), or all "
             "size-1 axes when `axis` is absent."));

RUNNEL_REGISTER_OP(OpDefBuilder("transpose")
                       .OptionalAttr("perm")
                       .Inputs({"x"})
                       .Outputs({"y"})
                       .Shape(TransposeShape)
                       .Doc("Permutes the axes: y.shape[i] = x.shape[perm[i]]; "
                            "`perm` absent reverses them."));

RUNNEL_REGISTER_OP(OpDefBuilder("concat")
                       .Inputs({"values"})
                       .Variadic()
                       .Outputs({"y"})
                       .Attr("axis", int64_t{0})
                       .SameDTypeAllInputs()
                       .Shape(ConcatShape)
                       .Doc("Joins tensors along an existing axis."));

RUNNEL_REGISTER_OP(OpDefBuilder("stack")
                       .Inputs({"values"})
                       .Variadic()
                       .Outputs({"y"})
                       .Attr("axis", int64_t{0})
                       .SameDTypeAllInputs()
                       .Shape(StackShape)
                       .Doc("Joins tensors of one shape along a new axis."));

RUNNEL_REGISTER_OP(OpDefBuilder("unstack")
                       .Inputs({"x"})
                       .Outputs({"values"})
                       .Attr("axis", int64_t{0})
                       .Shape(UnstackShape)
                       .Doc("Splits along `axis` (of known size N) into N "
                            "tensors without that axis."));

RUNNEL_REGISTER_OP(OpDefBuilder("split")
                       .OptionalAttr("num")
                       .Inputs({"x"})
                       .Outputs({"values"})
                       .Attr("axis", int64_t{0})
                       .Shape(SplitShape)
                       .Doc("Splits along `axis` into `num` equal parts."));

RUNNEL_REGISTER_OP(OpDefBuilder("slice")
                       .Inputs({"x", "begin", "size"})
                       .Outputs({"y"})
                       .Shape(SliceShape)
                       .Doc("The block starting at `begin` of shape `size`; "
                            "a size of -1 takes the rest of that axis."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("strided_slice")
        .OptionalAttr("begin")
        .OptionalAttr("end")
        .OptionalAttr("strides")
        .Inputs({"x"})
        .Outputs({"y"})
        .Attr("begin_mask", int64_t{0})
        .Attr("end_mask", int64_t{0})
        .Attr("shrink_axis_mask", int64_t{0})
        .Attr("new_axis_mask", int64_t{0})
        .Shape(StridedSliceShape)
        .Doc("Python-style slicing x[a:b:s, i, ...] (see array_ops.h)."));

RUNNEL_REGISTER_OP(OpDefBuilder("dynamic_index")
                       .Inputs({"x", "index"})
                       .Outputs({"y"})
                       .Shape(DynamicIndexShape)
                       .Doc("x[index] for a run-time scalar index; negative "
                            "indices count from the end."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("dynamic_update_index")
        .Inputs({"x", "index", "value"})
        .Outputs({"y"})
        .SameDType({0, 2})
        .Shape(DynamicUpdateIndexShape)
        .Doc("x with x[index] replaced by `value` (a run-time scalar index; "
             "negative indices count from the end). Writes in place when "
             "nothing else holds x: scan's output accumulator."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("dynamic_index_add")
        .Inputs({"x", "index", "value"})
        .Outputs({"y"})
        .SameDType({0, 2})
        .Shape(DynamicUpdateIndexShape)
        .Doc("x with `value` added to x[index], in place when nothing else "
             "holds x: a loop's gradient of a row it read, summed over the "
             "iterations."));

RUNNEL_REGISTER_OP(OpDefBuilder("gather")
                       .Inputs({"params", "indices"})
                       .Outputs({"y"})
                       .Attr("axis", int64_t{0})
                       .Shape(GatherShape)
                       .Doc("Slices of `params` along `axis` at `indices`."));

RUNNEL_REGISTER_OP(OpDefBuilder("tile")
                       .Inputs({"x", "multiples"})
                       .Outputs({"y"})
                       .Shape(TileShape)
                       .Doc("Repeats x multiples[i] times along axis i."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("pad")
        .Inputs({"x", "paddings", "value"})
        .Outputs({"y"})
        .SameDType({0, 2})
        .Shape(PadShape)
        .Doc("Pads axis i with paddings[i, 0] values before and paddings[i, "
             "1] after; `value` is a scalar of x's dtype."));

RUNNEL_REGISTER_OP(OpDefBuilder("broadcast_to")
                       .Inputs({"x", "shape"})
                       .Outputs({"y"})
                       .Shape(BroadcastToShape)
                       .Doc("Broadcasts x to `shape` by NumPy rules."));

RUNNEL_REGISTER_OP(OpDefBuilder("shape_of")
                       .Cost(KernelClass::kFree)
                       .OptionalAttr("out_type")
                       .Inputs({"x"})
                       .Outputs({"shape"})
                       .Shape(ShapeOfShape)
                       .Doc("x's shape as a vector (`out_type` i32 or i64)."));

RUNNEL_REGISTER_OP(OpDefBuilder("size")
                       .Cost(KernelClass::kFree)
                       .OptionalAttr("out_type")
                       .Inputs({"x"})
                       .Outputs({"size"})
                       .Shape(SizeShape)
                       .Doc("x's element count (`out_type` i32 or i64)."));

RUNNEL_REGISTER_OP(OpDefBuilder("rank")
                       .Cost(KernelClass::kFree)
                       .Inputs({"x"})
                       .Outputs({"rank"})
                       .Shape(RankShape)
                       .Doc("x's rank as an i32 scalar."));

RUNNEL_REGISTER_OP(OpDefBuilder("fill")
                       .Inputs({"shape", "value"})
                       .Outputs({"y"})
                       .KernelDTypeFromInput(1)
                       .Shape(FillShape)
                       .Doc("A tensor of `shape` with every element `value`."));

RUNNEL_REGISTER_OP(OpDefBuilder("zeros_like")
                       .Inputs({"x"})
                       .Outputs({"y"})
                       .Shape(UnchangedShape)
                       .Doc("Zeros of x's dtype and shape."));

RUNNEL_REGISTER_OP(OpDefBuilder("ones_like")
                       .Inputs({"x"})
                       .Outputs({"y"})
                       .Shape(UnchangedShape)
                       .Doc("Ones of x's dtype and shape."));

RUNNEL_REGISTER_OP(OpDefBuilder("range")
                       .Inputs({"start", "limit", "delta"})
                       .Outputs({"y"})
                       .SameDType({0, 1, 2})
                       .Shape(RangeShape)
                       .Doc("start, start + delta, ... up to `limit` "
                            "(excluded): ceil((limit - start) / delta) "
                            "elements."));

RUNNEL_REGISTER_OP(OpDefBuilder("eye")
                       .OptionalAttr("n")
                       .OptionalAttr("m")
                       .Outputs({"y"})
                       .Attr("dtype", DType::kF32)
                       .KernelDTypeFromAttr("dtype")
                       .Shape(EyeShape)
                       .Doc("The [n, m] identity matrix (m defaults to n)."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("one_hot")
        .OptionalAttr("depth")
        .Inputs({"indices"})
        .Outputs({"y"})
        .Attr("on_value", 1.0)
        .Attr("off_value", 0.0)
        .Attr("dtype", DType::kF32)
        .Attr("axis", int64_t{-1})
        .KernelDTypeFromAttr("dtype")
        .Shape(OneHotShape)
        .Doc("`on_value` where an index selects a position of a new axis of "
             "size `depth`, `off_value` elsewhere; an index outside [0, "
             "depth) gives a row of `off_value`."));

}  // namespace

}  // namespace runnel
