// Ops that gradient functions (runtime/ops/*_grad.cc) build backward graphs
// from: the derivatives of element-wise activations, the reverse of NumPy
// broadcasting, and the adjoints of the slicing and gathering ops (each
// scatters into zeros of the forward input's shape). The backward ops of
// conv2d and pooling are declared beside their forward ops in nn_ops.cc.
// Kernels live in kernels/cpu/grad_kernels.cc.
//
// Where an op takes a forward tensor only for its shape (sum_to_like's and
// broadcast_like's `x`, gather_grad's `params`, ...), its kernel never reads
// that tensor's data, and the output's static shape is that tensor's.
#include <string>
#include <vector>

#include "runtime/op_registry.h"
#include "runtime/shape_fns.h"
#include "runtime/status_macros.h"
#include "runtime/strings.h"

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

RUNNEL_REGISTER_OP(OpDefBuilder("relu_grad")
                       .Inputs({"dy", "x"})
                       .Outputs({"dx"})
                       .Shape(ReluGradShape)
                       .Doc("dy where x > 0, else 0: the gradient of relu."));

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

}  // namespace
}  // namespace runnel
