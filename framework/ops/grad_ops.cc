// Ops that gradient functions (common_runtime/grads/*.cc) build backward graphs
// from: the derivatives of element-wise activations, the reverse of NumPy
// broadcasting, and the adjoints of the slicing, gathering, tiling and
// padding ops (most scatter into zeros of the forward input's shape). The
// backward ops of conv2d and pooling are declared beside their forward ops in
// nn_ops.cc. Kernels live in kernels/cpu/grad_kernels.cc.
//
// Where an op takes a forward tensor only for its shape (sum_to_like's and
// broadcast_like's `x`, gather_grad's `params`, ...), its kernel never reads
// that tensor's data, and the output's static shape is that tensor's.
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/ops/array_ops.h"
#include "framework/shape_fns.h"
#include "framework/tensor.h"

namespace runnel {
namespace {

absl::Status Invalid(std::string message) {
  return absl::InvalidArgumentError(std::move(message));
}

// Inputs `a` and `b` have one dtype and compatible shapes; returns their
// shape with every dimension known in either.
absl::StatusOr<Shape> SameShapes(const ShapeContext& c, int a, int b) {
  RN_RETURN_IF_ERROR(SameDTypes(c, a, b));
  const Shape& sa = c.shape(a);
  const Shape& sb = c.shape(b);
  if (!sa.IsCompatibleWith(sb)) {
    return Invalid(StrCat("shapes differ: ", c.input(a).ToString(), " and ",
                          c.input(b).ToString()));
  }
  if (sa.unknown_rank()) return sb;
  Shape merged = sa;
  if (!sb.unknown_rank()) {
    for (int i = 0; i < sa.rank(); ++i) {
      if (sa.dim(i) < 0) merged.mutable_dims()[i] = sb.dim(i);
    }
  }
  return merged;
}

// ---- activations -----------------------------------------------------------

Specs ReluGradShape(const ShapeContext& c) {
  if (!IsNumeric(c.dtype(0))) {
    return Invalid(
        StrCat("expected a numeric tensor, got ", c.input(0).ToString()));
  }
  RN_ASSIGN_OR_RETURN(Shape s, SameShapes(c, 0, 1));
  return One(c.dtype(0), std::move(s));
}

Specs ActivationGradShape(const ShapeContext& c) {
  if (!IsFloating(c.dtype(0))) {
    return Invalid(StrCat("expected a floating-point tensor, got ",
                          c.input(0).ToString()));
  }
  RN_ASSIGN_OR_RETURN(Shape s, SameShapes(c, 0, 1));
  return One(c.dtype(0), std::move(s));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("relu_grad")
        .Inputs({"dy", "x"})
        .Outputs({"dx"})
        .Shape(ReluGradShape)
        .Doc("dy where x > 0, else 0: the gradient of relu (x: relu's "
             "output, positive where its input is)."));

RUNNEL_REGISTER_OP(OpDefBuilder("sigmoid_grad")
                       .Inputs({"y", "dy"})
                       .Outputs({"dx"})
                       .Shape(ActivationGradShape)
                       .Doc("dy * y * (1 - y) for y = sigmoid(x): the "
                            "gradient of sigmoid from its output."));

RUNNEL_REGISTER_OP(OpDefBuilder("tanh_grad")
                       .Inputs({"y", "dy"})
                       .Outputs({"dx"})
                       .Shape(ActivationGradShape)
                       .Doc("dy * (1 - y * y) for y = tanh(x): the gradient "
                            "of tanh from its output."));

RUNNEL_REGISTER_OP(OpDefBuilder("gelu_grad")
                       .Cost(KernelClass::kTranscendental)
                       .Inputs({"dy", "x"})
                       .Outputs({"dx"})
                       .Shape(ActivationGradShape)
                       .Doc("dy * (Phi(x) + x * phi(x)), Phi and phi the "
                            "standard normal CDF and density: the gradient "
                            "of gelu."));

RUNNEL_REGISTER_OP(OpDefBuilder("softmax_grad")
                       .Inputs({"dy", "y"})
                       .Outputs({"dx"})
                       .Shape(ActivationGradShape)
                       .Doc("(dy - sum(dy * y)) * y along the last axis, "
                            "for y = softmax(x) (or masked_softmax): "
                            "softmax's gradient in one pass."));

// ---- reversing broadcasting ------------------------------------------------

// Whether `small` broadcasts to `big` by NumPy's rules (unknown dimensions
// may); `big`'s rank must be at least `small`'s.
bool BroadcastsTo(const Shape& small, const Shape& big) {
  if (small.unknown_rank() || big.unknown_rank()) return true;
  if (small.rank() > big.rank()) return false;
  const int offset = big.rank() - small.rank();
  for (int i = 0; i < small.rank(); ++i) {
    const int64_t s = small.dim(i), b = big.dim(offset + i);
    if (s >= 0 && b >= 0 && s != 1 && s != b) return false;
  }
  return true;
}

Specs SumToLikeShape(const ShapeContext& c) {
  if (!IsNumeric(c.dtype(0))) {
    return Invalid(
        StrCat("expected a numeric tensor, got ", c.input(0).ToString()));
  }
  if (!BroadcastsTo(c.shape(1), c.shape(0))) {
    return Invalid(StrCat("cannot sum ", c.input(0).ToString(),
                          " to the shape of ", c.input(1).ToString(),
                          ", which does not broadcast to it"));
  }
  return One(c.dtype(0), c.shape(1));
}

Specs BroadcastLikeShape(const ShapeContext& c) {
  if (!BroadcastsTo(c.shape(0), c.shape(1))) {
    return Invalid(StrCat("cannot broadcast ", c.input(0).ToString(),
                          " to the shape of ", c.input(1).ToString()));
  }
  Shape out = c.shape(1);
  const Shape& g = c.shape(0);
  if (!out.unknown_rank() && !g.unknown_rank()) {
    // An unknown dimension of x must be g's where g's is not 1.
    const int offset = out.rank() - g.rank();
    for (int i = 0; i < g.rank(); ++i) {
      if (out.dim(offset + i) < 0 && g.dim(i) > 1) {
        out.mutable_dims()[offset + i] = g.dim(i);
      }
    }
  }
  return One(c.dtype(0), std::move(out));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("sum_to_like")
        .Cost(KernelClass::kReduction)
        .Inputs({"dy", "x"})
        .Outputs({"dx"})
        .Shape(SumToLikeShape)
        .Doc("dy summed over the axes along which x was broadcast to dy's "
             "shape (leading axes, and axes where x has size 1), giving x's "
             "shape: the gradient of a broadcast. Reads only x's shape."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("broadcast_like")
        .Inputs({"g", "x"})
        .Outputs({"y"})
        .Shape(BroadcastLikeShape)
        .Doc("g broadcast to x's shape by NumPy rules: the gradient of a "
             "reduction. Reads only x's shape."));

// ---- adjoints of slicing, gathering, tiling and padding --------------------
//
// Each takes the forward op's operands (some only for their shapes) and
// dy, the gradient of the forward output, and checks dy against the
// forward op's own shape function, so the checks are the forward op's.

// The output of forward op `op` on inputs `inputs` of this node (and
// `extra` specs after them, values unknown), with this node's attributes.
absl::StatusOr<TensorSpec> ForwardOutput(const ShapeContext& c,
                                         std::string_view op,
                                         const std::vector<int>& inputs,
                                         std::vector<TensorSpec> extra = {}) {
  const OpDef* def = OpRegistry::Global().Find(op);
  if (def == nullptr) {
    return absl::InternalError(StrCat("op ", op, " is not registered"));
  }
  std::vector<TensorSpec> specs;
  std::vector<const Tensor*> values;
  for (int i : inputs) {
    specs.push_back(c.input(i));
    values.push_back(c.value(i));
  }
  for (TensorSpec& s : extra) {
    specs.push_back(std::move(s));
    values.push_back(nullptr);
  }
  ShapeContext forward(c.attrs(), std::move(specs), std::move(values));
  RN_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, def->shape_fn(forward));
  return out.at(0);
}

// Input `dy` must have the dtype and (compatible) shape of `forward`.
absl::Status CheckDy(const ShapeContext& c, int dy, const TensorSpec& forward) {
  if (c.dtype(dy) != forward.dtype ||
      !c.shape(dy).IsCompatibleWith(forward.shape)) {
    return Invalid(StrCat("dy ", c.input(dy).ToString(),
                          " does not match the forward output ",
                          forward.ToString()));
  }
  return absl::OkStatus();
}

// (params, indices, dy) -> params' shape.
Specs GatherGradShape(const ShapeContext& c) {
  if (!IsNumeric(c.dtype(2))) {
    return Invalid(
        StrCat("expected a numeric tensor, got ", c.input(2).ToString()));
  }
  RN_ASSIGN_OR_RETURN(TensorSpec y, ForwardOutput(c, "gather", {0, 1}));
  RN_RETURN_IF_ERROR(CheckDy(c, 2, y));
  return One(c.dtype(2), c.shape(0));
}

// (x, begin, dy) -> x's shape: dy is the block of x at `begin`.
Specs SliceGradShape(const ShapeContext& c) {
  const TensorSpec& b = c.input(1);
  if ((b.dtype != DType::kI32 && b.dtype != DType::kI64) ||
      (!b.shape.unknown_rank() && b.shape.rank() != 1)) {
    return Invalid(
        StrCat("begin must be an i32 or i64 vector, got ", b.ToString()));
  }
  const Shape& x = c.shape(0);
  const Shape& dy = c.shape(2);
  const int64_t len = b.shape.unknown_rank() ? kUnknownDim : b.shape.dim(0);
  if (!x.unknown_rank()) {
    if ((!dy.unknown_rank() && dy.rank() != x.rank()) ||
        (len >= 0 && len != x.rank())) {
      return Invalid(StrCat("x ", c.input(0).ToString(), ", begin ",
                            b.ToString(), " and dy ", c.input(2).ToString(),
                            " must have one rank"));
    }
    if (c.value(1) != nullptr && !dy.unknown_rank()) {
      const std::vector<int64_t> begin = c.value(1)->ToInt64s();
      for (int i = 0; i < x.rank(); ++i) {
        if (begin[i] < 0 || (x.dim(i) >= 0 && dy.dim(i) >= 0 &&
                             begin[i] + dy.dim(i) > x.dim(i))) {
          return Invalid(StrCat("dy ", c.input(2).ToString(), " at begin ",
                                c.value(1)->ValuesString(),
                                " does not fit in x ", c.input(0).ToString()));
        }
      }
    }
  }
  return One(c.dtype(2), x);
}

// (x, dy) -> x's shape.
Specs StridedSliceGradShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(TensorSpec y, ForwardOutput(c, "strided_slice", {0}));
  RN_RETURN_IF_ERROR(CheckDy(c, 1, {c.dtype(1), y.shape}));
  return One(c.dtype(1), c.shape(0));
}

// (x, index, dy) -> x's shape.
Specs DynamicIndexGradShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(TensorSpec y, ForwardOutput(c, "dynamic_index", {0, 1}));
  RN_RETURN_IF_ERROR(CheckDy(c, 2, {c.dtype(2), y.shape}));
  return One(c.dtype(2), c.shape(0));
}

// (dy, index) -> (dy's shape, dy's row shape).
Specs DynamicUpdateIndexGradShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(TensorSpec row,
                      ForwardOutput(c, "dynamic_index", {0, 1}));
  return Specs(std::vector<TensorSpec>{{c.dtype(0), c.shape(0)}, row});
}

// (dy, x) -> x's shape; dy's dimensions are multiples of x's.
Specs TileGradShape(const ShapeContext& c) {
  if (!IsNumeric(c.dtype(0))) {
    return Invalid(
        StrCat("expected a numeric tensor, got ", c.input(0).ToString()));
  }
  const Shape& dy = c.shape(0);
  const Shape& x = c.shape(1);
  if (!dy.unknown_rank() && !x.unknown_rank()) {
    bool ok = dy.rank() == x.rank();
    for (int i = 0; ok && i < x.rank(); ++i) {
      const int64_t d = dy.dim(i), n = x.dim(i);
      if (d >= 0 && n >= 0) ok = n == 0 ? d == 0 : d % n == 0;
    }
    if (!ok) {
      return Invalid(StrCat("dy ", c.input(0).ToString(),
                            " is not a tiling of x ", c.input(1).ToString()));
    }
  }
  return One(c.dtype(0), x);
}

// (dy, x, paddings) -> x's shape.
Specs PadGradShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(
      TensorSpec y,
      ForwardOutput(c, "pad", {1, 2}, {TensorSpec{c.dtype(1), Shape{}}}));
  RN_RETURN_IF_ERROR(CheckDy(c, 0, {c.dtype(0), y.shape}));
  return One(c.dtype(0), c.shape(1));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("gather_grad")
        .Inputs({"params", "indices", "dy"})
        .Outputs({"dparams"})
        .Attr("axis", int64_t{0})
        .KernelDTypeFromInput(2)
        .Shape(GatherGradShape)
        .Doc("The gradient of gather(params, indices): zeros of params' "
             "shape with dy's slices added at `indices` along `axis` "
             "(repeated indices add up). Reads only params' shape."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("gather_grad_add")
        .Inputs({"x", "indices", "dy"})
        .Outputs({"y"})
        .Attr("axis", int64_t{0})
        .SameDType({0, 2})
        .Shape(GatherGradShape)
        .Doc("x plus gather_grad(x, indices, dy): dy's slices added into x "
             "at `indices` along `axis`, in place when nothing else holds x "
             "(a loop's gradient of the rows it gathered, summed over the "
             "iterations, as dynamic_index_add is of a row it read)."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("slice_grad")
        .Inputs({"x", "begin", "dy"})
        .Outputs({"dx"})
        .KernelDTypeFromInput(2)
        .Shape(SliceGradShape)
        .Doc("The gradient of slice(x, begin, size): zeros of x's shape with "
             "dy at `begin`. Reads only x's shape."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("strided_slice_grad")
        .OptionalAttr("begin")
        .OptionalAttr("end")
        .OptionalAttr("strides")
        .Inputs({"x", "dy"})
        .Outputs({"dx"})
        .Attr("begin_mask", int64_t{0})
        .Attr("end_mask", int64_t{0})
        .Attr("shrink_axis_mask", int64_t{0})
        .Attr("new_axis_mask", int64_t{0})
        .KernelDTypeFromInput(1)
        .Shape(StridedSliceGradShape)
        .Doc("The gradient of strided_slice(x) with the same attributes: "
             "zeros of x's shape with dy at the sliced positions. Reads only "
             "x's shape."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("dynamic_index_grad")
        .Inputs({"x", "index", "dy"})
        .Outputs({"dx"})
        .KernelDTypeFromInput(2)
        .Shape(DynamicIndexGradShape)
        .Doc("The gradient of dynamic_index(x, index): zeros of x's shape "
             "with dy at x[index]. Reads only x's shape."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("dynamic_update_index_grad")
        .Inputs({"dy", "index"})
        .Outputs({"dx", "dvalue"})
        .Shape(DynamicUpdateIndexGradShape)
        .Doc("The gradient of dynamic_update_index(x, index, value): dy with "
             "row `index` zeroed (in place when nothing else holds dy), and "
             "that row of dy."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("tile_grad")
        .Inputs({"dy", "x"})
        .Outputs({"dx"})
        .Shape(TileGradShape)
        .Doc("The gradient of tile(x, multiples): dy's tiles summed to x's "
             "shape. Reads only x's shape."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("pad_grad")
        .Inputs({"dy", "x", "paddings"})
        .Outputs({"dx"})
        .Shape(PadGradShape)
        .Doc("The gradient of pad(x, paddings): the block of dy that x "
             "became. Reads only x's shape."));

}  // namespace
}  // namespace runnel
