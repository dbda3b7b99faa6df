// Ops for sparse gradients and sharded embeddings (docs/sparse.md):
// unique and unsorted_segment_sum (an optimizer sums the rows of a sparse
// gradient that name one row, so each row is updated once), and
// dynamic_partition and dynamic_stitch (nn.embedding splits the ids of a
// lookup among its shards and puts the rows it gets back in order).
#include <optional>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/shape_fns.h"

namespace runnel {
namespace {

absl::Status Invalid(std::string message) {
  return absl::InvalidArgumentError(std::move(message));
}

absl::Status CheckIndices(const ShapeContext& c, int i, const char* what) {
  if (c.dtype(i) != DType::kI32 && c.dtype(i) != DType::kI64) {
    return Invalid(
        StrCat(what, " must be i32 or i64, got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

// `prefix` must be a prefix of `x`'s shape; the dims of `x` after it.
// Unknown (nullopt) when either rank is.
absl::StatusOr<std::optional<std::vector<int64_t>>> Rest(const ShapeContext& c,
                                                         int x, int prefix) {
  const Shape& xs = c.shape(x);
  const Shape& ps = c.shape(prefix);
  if (xs.unknown_rank() || ps.unknown_rank()) return std::nullopt;
  bool fits = ps.rank() <= xs.rank();
  for (int k = 0; fits && k < ps.rank(); ++k) {
    fits = ps.dim(k) < 0 || xs.dim(k) < 0 || ps.dim(k) == xs.dim(k);
  }
  if (!fits) {
    return Invalid(StrCat(c.input(prefix).ToString(),
                          " is not a prefix of the shape of ",
                          c.input(x).ToString()));
  }
  return std::vector<int64_t>(xs.dims().begin() + ps.rank(), xs.dims().end());
}

// [first] + rest, or unknown rank.
Shape Rows(int64_t first, const std::optional<std::vector<int64_t>>& rest) {
  if (!rest) return Shape::UnknownRank();
  std::vector<int64_t> dims{first};
  dims.insert(dims.end(), rest->begin(), rest->end());
  return Shape(std::move(dims));
}

Specs UniqueShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckIndices(c, 0, "x"));
  const Shape& x = c.shape(0);
  if (!x.unknown_rank() && x.rank() != 1) {
    return Invalid(StrCat("x must be a vector, got ", c.input(0).ToString()));
  }
  const int64_t n = x.unknown_rank() ? kUnknownDim : x.dim(0);
  return std::vector<TensorSpec>{{c.dtype(0), Shape{kUnknownDim}},
                                 {DType::kI32, Shape{n}}};
}

Specs SegmentSumShape(const ShapeContext& c) {
  if (!IsNumeric(c.dtype(0))) {
    return Invalid(StrCat("data must be numeric, got ", c.input(0).ToString()));
  }
  RN_RETURN_IF_ERROR(CheckIndices(c, 1, "segment_ids"));
  RN_RETURN_IF_ERROR(CheckIndices(c, 2, "num_segments"));
  if (!c.shape(2).IsCompatibleWith(Shape{})) {
    return Invalid(
        StrCat("num_segments must be a scalar, got ", c.input(2).ToString()));
  }
  RN_ASSIGN_OR_RETURN(auto rest, Rest(c, 0, 1));
  int64_t n = kUnknownDim;
  if (const Tensor* v = c.value(2); v != nullptr) {
    n = v->ToInt64s()[0];
    if (n < 0) return Invalid(StrCat("num_segments is negative: ", n));
  }
  return One(c.dtype(0), Rows(n, rest));
}

Specs PartitionShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(int64_t n, c.attr<int64_t>("num_partitions"));
  if (n < 1) return Invalid(StrCat("num_partitions must be positive, got ", n));
  if (c.dtype(1) != DType::kI32) {
    return Invalid(
        StrCat("partitions must be i32, got ", c.input(1).ToString()));
  }
  RN_ASSIGN_OR_RETURN(auto rest, Rest(c, 0, 1));
  return std::vector<TensorSpec>(
      static_cast<size_t>(n), TensorSpec{c.dtype(0), Rows(kUnknownDim, rest)});
}

// Inputs: values_0 .. values_{n-1}, indices_0 .. indices_{n-1}.
Specs StitchShape(const ShapeContext& c) {
  const int n = c.num_inputs() / 2;
  if (n < 1 || c.num_inputs() != 2 * n) {
    return Invalid("needs as many index tensors as value tensors, at least 1");
  }
  std::optional<std::vector<int64_t>> rest;
  for (int m = 0; m < n; ++m) {
    if (c.dtype(m) != c.dtype(0)) {
      return Invalid(StrCat("values ", c.input(m).ToString(), " and ",
                            c.input(0).ToString(), " differ in dtype"));
    }
    if (c.dtype(n + m) != DType::kI32) {
      return Invalid(
          StrCat("indices must be i32, got ", c.input(n + m).ToString()));
    }
    RN_ASSIGN_OR_RETURN(auto r, Rest(c, m, n + m));
    if (!r) continue;
    if (!rest) {
      rest = r;
    } else if (!Shape(*rest).IsCompatibleWith(Shape(*r))) {
      return Invalid(StrCat("the rows of ", c.input(m).ToString(), " and ",
                            c.input(0).ToString(), " differ"));
    }
  }
  return One(c.dtype(0), Rows(kUnknownDim, rest));
}

}  // namespace

RUNNEL_REGISTER_OP(
    OpDefBuilder("unique")
        .Inputs({"x"})
        .Outputs({"y", "idx"})
        .Shape(UniqueShape)
        .Doc("The distinct values of the vector `x` in order of first "
             "appearance, and for each element of `x` the position of its "
             "value in `y` (x = gather(y, idx))."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("unsorted_segment_sum")
        .Inputs({"data", "segment_ids", "num_segments"})
        .Outputs({"y"})
        .Shape(SegmentSumShape)
        .Doc("y[i] is the sum of the slices data[j] with segment_ids[j] = i, "
             "for i < num_segments (zeros where none); segment_ids' shape is "
             "a prefix of data's."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("dynamic_partition")
        .Inputs({"x", "partitions"})
        .Outputs({"parts"})
        .Attr("num_partitions", int64_t{1})
        .Shape(PartitionShape)
        .Doc("Splits x into `num_partitions` tensors: part i holds, in order, "
             "the slices x[j] with partitions[j] = i (partitions' shape is a "
             "prefix of x's)."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("dynamic_stitch")
        .Inputs({"values"})
        .Variadic()
        .Outputs({"merged"})
        .Shape(StitchShape)
        .Doc("Inputs values_0..values_{n-1} then indices_0..indices_{n-1}: "
             "merged[indices_m[j]] = values_m[j], later m winning; merged has "
             "max(index) + 1 rows, zeros where no index names a row."));

}  // namespace runnel
