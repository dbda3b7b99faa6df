// Ops that read or write a tensor at the positions an index tensor names
// (docs/ops.md; issue 34's operators):
//   gather_elements, scatter_elements: one element per index, along one
//     axis (numpy's take_along_axis and put_along_axis, PyTorch's gather and
//     scatter_reduce, ONNX's GatherElements and ScatterElements);
//   gather_nd, scatter_nd: one slice per index tuple (TensorFlow's
//     gather_nd and tensor_scatter_nd_update/_add/_min/_max, ONNX's GatherND
//     and ScatterND);
//   top_k: the k largest (or smallest) along an axis, with their positions;
//   nonzero: the coordinates of the elements that are not zero.
// Indices are i32 or i64 and count from 0, as `gather`'s: a negative or
// too large one is an error naming it (the kernels check).
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/ops/index_checks.h"
#include "framework/shape_fns.h"

namespace runnel {
namespace {

absl::Status Invalid(std::string message) {
  return absl::InvalidArgumentError(std::move(message));
}

absl::Status CheckIndexDType(const ShapeContext& c, int i) {
  if (c.dtype(i) != DType::kI32 && c.dtype(i) != DType::kI64) {
    return Invalid(
        StrCat("indices must be i32 or i64, got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

// A scatter's data, indices and updates: updates of data's dtype, and
// numbers for a reduction other than "none".
absl::Status CheckScatterInputs(const ShapeContext& c) {
  if (c.dtype(2) != c.dtype(0)) {
    return Invalid(StrCat("updates ", c.input(2).ToString(),
                          " differ in dtype from data ",
                          c.input(0).ToString()));
  }
  RN_RETURN_IF_ERROR(CheckIndexDType(c, 1));
  RN_ASSIGN_OR_RETURN(std::string r, c.attr<std::string>("reduction"));
  RN_ASSIGN_OR_RETURN(ScatterReduction how, ParseScatterReduction(r));
  if (how != ScatterReduction::kNone && !IsNumeric(c.dtype(0))) {
    return Invalid(StrCat("reduction \"", r, "\" needs numbers, got ",
                          c.input(0).ToString()));
  }
  return absl::OkStatus();
}

Specs GatherElementsShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckIndexDType(c, 1));
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  RN_RETURN_IF_ERROR(
      CheckAlongAxis(c.shape(0), c.shape(1), c.shape(1), axis, "indices"));
  return One(c.dtype(0), c.shape(1));
}

Specs ScatterElementsShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckScatterInputs(c));
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  RN_RETURN_IF_ERROR(
      CheckAlongAxis(c.shape(0), c.shape(1), c.shape(2), axis, "updates"));
  return One(c.dtype(0), c.shape(0));
}

Specs GatherNdShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckIndexDType(c, 1));
  RN_ASSIGN_OR_RETURN(int64_t batch, c.attr<int64_t>("batch_dims"));
  RN_ASSIGN_OR_RETURN(Shape out, GatherNdOutput(c.shape(0), c.shape(1), batch));
  return One(c.dtype(0), std::move(out));
}

Specs ScatterNdShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckScatterInputs(c));
  RN_ASSIGN_OR_RETURN(int64_t batch, c.attr<int64_t>("batch_dims"));
  RN_ASSIGN_OR_RETURN(Shape want,
                      GatherNdOutput(c.shape(0), c.shape(1), batch));
  if (!want.IsCompatibleWith(c.shape(2))) {
    return Invalid(StrCat("updates ", c.input(2).ToString(),
                          " must have shape ", want.ToString(),
                          " (the indices' shape without its last dimension, "
                          "then data's past the indexed dimensions)"));
  }
  return One(c.dtype(0), c.shape(0));
}

Specs TopKShape(const ShapeContext& c) {
  if (!IsNumeric(c.dtype(0))) {
    return Invalid(StrCat("x must be numeric, got ", c.input(0).ToString()));
  }
  if (c.dtype(1) != DType::kI32 && c.dtype(1) != DType::kI64) {
    return Invalid(StrCat("k must be i32 or i64, got ", c.input(1).ToString()));
  }
  if (!c.shape(1).IsCompatibleWith(Shape{})) {
    return Invalid(StrCat("k must be a scalar, got ", c.input(1).ToString()));
  }
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  const Shape& x = c.shape(0);
  Shape out = x;
  if (!x.unknown_rank()) {
    if (x.rank() == 0) return Invalid("x must have an axis, got a scalar");
    RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, x.rank()));
    int64_t k = kUnknownDim;
    if (const Tensor* v = c.value(1); v != nullptr) {
      k = v->ToInt64s()[0];
      RN_RETURN_IF_ERROR(CheckTopK(k, x.dim(a)));
    }
    std::vector<int64_t> dims = x.dims();
    dims[a] = k;
    out = Shape(std::move(dims));
  }
  return std::vector<TensorSpec>{{c.dtype(0), out}, {DType::kI32, out}};
}

Specs NonzeroShape(const ShapeContext& c) {
  const Shape& x = c.shape(0);
  return One(DType::kI64, x.unknown_rank() ? Shape{kUnknownDim, kUnknownDim}
                                           : Shape{kUnknownDim, x.rank()});
}

// unique_all: the distinct values (or slices along `axis`), and i64
// positions, inverse and counts.
Specs UniqueAllShape(const ShapeContext& c) {
  const Shape& x = c.shape(0);
  const absl::StatusOr<int64_t> axis = c.attr<int64_t>("axis");
  Shape values{kUnknownDim};
  int64_t n = x.num_elements();
  if (axis.ok()) {
    values = x;
    n = kUnknownDim;
    if (!x.unknown_rank()) {
      if (x.rank() == 0) return Invalid("x must have an axis, got a scalar");
      RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(*axis, x.rank()));
      n = x.dim(a);
      values.mutable_dims()[a] = kUnknownDim;
    }
  } else if (x.unknown_rank()) {
    n = kUnknownDim;
  }
  const Shape some{kUnknownDim};
  return std::vector<TensorSpec>{{c.dtype(0), values},
                                 {DType::kI64, some},
                                 {DType::kI64, Shape{n}},
                                 {DType::kI64, some}};
}

}  // namespace

RUNNEL_REGISTER_OP(
    OpDefBuilder("unique_all")
        .Inputs({"x"})
        .Outputs({"values", "indices", "inverse", "counts"})
        .OptionalAttr("axis")
        .Attr("sorted", true)
        .Shape(UniqueAllShape)
        .Cost(KernelClass::kReduction)
        .Doc("The distinct elements of x (or, with `axis`, its distinct "
             "slices along that axis), sorted (numpy.unique_all, ONNX "
             "Unique) or, with sorted = false, in order of first appearance; "
             "the i64 position of each one's first appearance, for each "
             "element (slice) of x the position of its value in `values`, "
             "and how often each appears. NaNs are one value, the largest."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("gather_elements")
        .Inputs({"x", "indices"})
        .Outputs({"y"})
        .Attr("axis", int64_t{0})
        .Shape(GatherElementsShape)
        .Doc("y[p] = x[p with its `axis` coordinate replaced by indices[p]] "
             "(numpy.take_along_axis, torch.gather, ONNX GatherElements): "
             "indices of x's rank, no longer than x along the other axes; y "
             "has the indices' shape."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("scatter_elements")
        .Inputs({"data", "indices", "updates"})
        .Outputs({"y"})
        .SameDType({0, 2})
        .Attr("axis", int64_t{0})
        .Attr("reduction", std::string("none"))
        .Shape(ScatterElementsShape)
        .Doc("data with each updates[p] written at p with its `axis` "
             "coordinate replaced by indices[p] (torch.scatter_reduce, ONNX "
             "ScatterElements): `reduction` \"none\" replaces (two updates of "
             "one element are an error), \"add\", \"mul\", \"max\" and "
             "\"min\" combine them with what is there."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("gather_nd")
        .Inputs({"x", "indices"})
        .Outputs({"y"})
        .Attr("batch_dims", int64_t{0})
        .Shape(GatherNdShape)
        .Doc("The slices of x that the index tuples along indices' last "
             "dimension name (tf.gather_nd, ONNX GatherND): y has the "
             "indices' shape without its last dimension, then x's past the "
             "dimensions indexed. The first `batch_dims` dimensions of x and "
             "indices are a batch, each entry indexing its own x."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("scatter_nd")
        .Inputs({"data", "indices", "updates"})
        .Outputs({"y"})
        .SameDType({0, 2})
        .Attr("reduction", std::string("none"))
        .Attr("batch_dims", int64_t{0})
        .Shape(ScatterNdShape)
        .Doc("data with the slices the index tuples name replaced by (or, "
             "with `reduction` \"add\", \"mul\", \"max\" or \"min\", combined "
             "with) the slices of updates (tf.tensor_scatter_nd_update and "
             "friends, ONNX ScatterND); updates is shaped as gather_nd's "
             "result. With \"none\", two tuples naming one slice are an "
             "error."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("top_k")
        .Inputs({"x", "k"})
        .Outputs({"values", "indices"})
        .Attr("axis", int64_t{-1})
        .Attr("largest", true)
        .Shape(TopKShape)
        .Cost(KernelClass::kReduction)
        .Doc("The k largest elements along `axis` (the smallest with "
             "largest = false), in order, and their i32 positions "
             "(tf.math.top_k, torch.topk, ONNX TopK): equal values in order "
             "of position; NaN counts as larger than every number."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("nonzero")
        .Inputs({"x"})
        .Outputs({"y"})
        .Shape(NonzeroShape)
        .Doc("The i64 coordinates, one row each, of x's elements that are "
             "not zero (not false), in row-major order (torch.nonzero, "
             "tf.where of one argument; ONNX NonZero is its transpose)."));

}  // namespace runnel
