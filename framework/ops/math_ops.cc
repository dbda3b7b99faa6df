// Element-wise and reduction ops: arithmetic with NumPy broadcasting,
// comparisons, logic, unary math, clip, where, cast and the reductions.
// Kernels: kernels/cpu/cwise_*_kernels.cc and reduction_kernels.cc.
#include <string>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/shape_fns.h"

namespace runnel {
namespace {

// ---- dtype checks -----------------------------------------------------------

absl::Status RequireNumeric(const ShapeContext& c, int i) {
  if (!IsNumeric(c.dtype(i))) {
    return absl::InvalidArgumentError(
        StrCat("expected a numeric tensor, got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

absl::Status RequireFloating(const ShapeContext& c, int i) {
  if (!IsFloating(c.dtype(i))) {
    return absl::InvalidArgumentError(StrCat(
        "expected a floating-point tensor, got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

absl::Status RequireBool(const ShapeContext& c, int i) {
  if (c.dtype(i) != DType::kBool) {
    return absl::InvalidArgumentError(
        StrCat("expected a bool tensor, got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

// ---- unary ------------------------------------------------------------------

Specs NumericUnaryShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireNumeric(c, 0));
  return UnchangedShape(c);
}

// cumsum: numeric, of any rank with `axis` inside it (a scalar has none).
Specs CumsumShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireNumeric(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  if (!c.shape(0).unknown_rank()) {
    RN_RETURN_IF_ERROR(NormalizeAxis(axis, c.shape(0).rank()).status());
  }
  return UnchangedShape(c);
}

// isnan, isfinite: numeric in, bool out.
Specs NumericPredicateShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireNumeric(c, 0));
  return One(DType::kBool, c.shape(0));
}

Specs BoolUnaryShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireBool(c, 0));
  return UnchangedShape(c);
}

// ---- binary -----------------------------------------------------------------

Specs NumericBinaryShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  RN_RETURN_IF_ERROR(RequireNumeric(c, 0));
  return BinaryBroadcastShape(c);
}

// `/` on integers is true division: f32, or f64 for i64 (docs/language.md §3).
Specs DivShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, NumericBinaryShape(c));
  if (IsInteger(c.dtype(0))) {
    out[0].dtype = c.dtype(0) == DType::kI64 ? DType::kF64 : DType::kF32;
  }
  return out;
}

Specs EqualityShape(const ShapeContext& c) {
  return BinaryBroadcastShape(c, DType::kBool);
}

Specs OrderShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  RN_RETURN_IF_ERROR(RequireNumeric(c, 0));
  return BinaryBroadcastShape(c, DType::kBool);
}

Specs LogicalBinaryShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireBool(c, 0));
  RN_RETURN_IF_ERROR(RequireBool(c, 1));
  return BinaryBroadcastShape(c);
}

// ---- ternary ----------------------------------------------------------------

absl::StatusOr<Shape> BroadcastThree(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(c.shape(0), c.shape(1)));
  return BroadcastShapes(s, c.shape(2));
}

Specs ClipShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 2));
  RN_RETURN_IF_ERROR(RequireNumeric(c, 0));
  RN_ASSIGN_OR_RETURN(Shape s, BroadcastThree(c));
  return One(c.dtype(0), std::move(s));
}

Specs WhereShape(const ShapeContext& c) {
  if (c.dtype(0) != DType::kBool) {
    return absl::InvalidArgumentError(StrCat(
        "the condition must be a bool tensor, got ", c.input(0).ToString()));
  }
  RN_RETURN_IF_ERROR(SameDTypes(c, 1, 2));
  RN_ASSIGN_OR_RETURN(Shape s, BroadcastThree(c));
  return One(c.dtype(1), std::move(s));
}

Specs CastShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(DType d, c.attr<DType>("dtype"));
  return One(d, c.shape(0));
}

// ---- reductions -------------------------------------------------------------

enum class ReduceInput { kNumeric, kFloating, kBool };

// The output of reducing input 0 over attribute `axis` (int or int list;
// absent = all axes) keeping reduced dims as 1 when `keepdims`.
// `needs_elements`: the reduction has no identity (max, argmax), so reducing
// a dimension known to be empty is an error.
Specs ReductionShape(const ShapeContext& c, ReduceInput input,
                     std::optional<DType> out_dtype, bool needs_elements) {
  switch (input) {
    case ReduceInput::kNumeric:
      RN_RETURN_IF_ERROR(RequireNumeric(c, 0));
      break;
    case ReduceInput::kFloating:
      RN_RETURN_IF_ERROR(RequireFloating(c, 0));
      break;
    case ReduceInput::kBool:
      RN_RETURN_IF_ERROR(RequireBool(c, 0));
      break;
  }
  const DType dtype = out_dtype.value_or(c.dtype(0));
  RN_ASSIGN_OR_RETURN(bool keepdims, c.attr_or<bool>("keepdims", false));
  const Shape& in = c.shape(0);
  if (in.unknown_rank()) {
    if (!c.attrs().contains("axis") && !keepdims) return One(dtype, Shape{});
    return One(dtype, Shape::UnknownRank());
  }
  RN_ASSIGN_OR_RETURN(std::vector<int> axes, ReductionAxes(c, in.rank()));
  if (needs_elements) {
    for (int a : axes) {
      if (in.dim(a) == 0) {
        return absl::InvalidArgumentError(
            StrCat("cannot reduce over axis ", a, " of ", c.input(0).ToString(),
                   ": it is empty and the reduction has no identity"));
      }
    }
  }
  return One(dtype, ReducedShape(in, axes, keepdims));
}

// argmax, argmin: a single axis, or the flattened tensor when absent.
Specs ArgReductionShape(const ShapeContext& c) {
  if (c.attrs().contains("axis")) {
    RN_ASSIGN_OR_RETURN(std::vector<int64_t> axis,
                        c.attr<std::vector<int64_t>>("axis"));
    if (axis.size() != 1) {
      return absl::InvalidArgumentError(
          StrCat("takes a single axis, got ", axis.size()));
    }
  }
  return ReductionShape(c, ReduceInput::kNumeric, DType::kI32,
                        /*needs_elements=*/true);
}

// ---- registration -----------------------------------------------------------

OpDefBuilder Unary(const char* name, ShapeFn fn) {
  return OpDefBuilder(name).Inputs({"x"}).Outputs({"y"}).Shape(std::move(fn));
}

// x and y have one dtype (logical_and and logical_or take bools only).
OpDefBuilder Binary(const char* name, ShapeFn fn) {
  return OpDefBuilder(name)
      .Inputs({"x", "y"})
      .Outputs({"z"})
      .SameDType({0, 1})
      .Shape(std::move(fn));
}

OpDefBuilder Reduction(const char* name, ShapeFn fn) {
  return OpDefBuilder(name)
      .Inputs({"x"})
      .Outputs({"y"})
      .OptionalAttr("axis")
      .Attr("keepdims", false)
      .Shape(std::move(fn));
}

Specs NumericReduction(const ShapeContext& c) {
  return ReductionShape(c, ReduceInput::kNumeric, std::nullopt, false);
}
Specs NumericReductionNoIdentity(const ShapeContext& c) {
  return ReductionShape(c, ReduceInput::kNumeric, std::nullopt, true);
}
Specs BoolReduction(const ShapeContext& c) {
  return ReductionShape(c, ReduceInput::kBool, std::nullopt, false);
}
Specs FloatReduction(const ShapeContext& c) {
  return ReductionShape(c, ReduceInput::kFloating, std::nullopt, false);
}

// Unary ops on any numeric dtype.
RUNNEL_REGISTER_OP(Unary("abs", NumericUnaryShape).Doc("|x|."));
RUNNEL_REGISTER_OP(Unary("neg", NumericUnaryShape).Doc("-x."));
RUNNEL_REGISTER_OP(
    Unary("sign", NumericUnaryShape).Doc("-1, 0 or 1 (nan for nan)."));
RUNNEL_REGISTER_OP(Unary("square", NumericUnaryShape).Doc("x * x."));
RUNNEL_REGISTER_OP(Unary("relu", NumericUnaryShape).Doc("max(x, 0)."));
RUNNEL_REGISTER_OP(
    Unary("floor", NumericUnaryShape).Doc("Integers are returned unchanged."));
RUNNEL_REGISTER_OP(
    Unary("ceil", NumericUnaryShape).Doc("Integers are returned unchanged."));
RUNNEL_REGISTER_OP(Unary("round", NumericUnaryShape)
                       .Doc("Rounds half to even, like NumPy; integers are "
                            "returned unchanged."));
RUNNEL_REGISTER_OP(Unary("isnan", NumericPredicateShape)
                       .Doc("True where x is nan (never for integers)."));
RUNNEL_REGISTER_OP(
    Unary("isfinite", NumericPredicateShape)
        .Doc(
            "True where x is neither nan nor infinite (always for integers)."));

// Unary ops on floating dtypes only.
RUNNEL_REGISTER_OP(Unary("sqrt", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("The square root; nan for negative x."));
RUNNEL_REGISTER_OP(Unary("rsqrt", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("1 / sqrt(x)."));
RUNNEL_REGISTER_OP(Unary("exp", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("e to the power x."));
RUNNEL_REGISTER_OP(Unary("log", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("The natural logarithm; -inf at 0, nan below."));
RUNNEL_REGISTER_OP(Unary("log1p", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("log(1 + x)."));
RUNNEL_REGISTER_OP(Unary("sin", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("The sine of x in radians."));
RUNNEL_REGISTER_OP(Unary("cos", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("The cosine of x in radians."));
RUNNEL_REGISTER_OP(Unary("tanh", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("The hyperbolic tangent."));
RUNNEL_REGISTER_OP(Unary("sigmoid", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("1 / (1 + exp(-x))."));
RUNNEL_REGISTER_OP(Unary("elu", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("x if x > 0 else exp(x) - 1."));
RUNNEL_REGISTER_OP(Unary("softplus", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("log(1 + exp(x)), stably."));
RUNNEL_REGISTER_OP(Unary("erf", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("The error function: 2 / sqrt(pi) times the "
                            "integral of exp(-t^2) from 0 to x."));
RUNNEL_REGISTER_OP(Unary("gelu", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("x * Phi(x), Phi the standard normal CDF: 0.5 * x "
                            "* (1 + erf(x / sqrt(2))), in one pass (the "
                            "exact GELU of Hendrycks and Gimpel, 2016)."));

// The inverse trigonometric and hyperbolic functions (ONNX Asin ... Atanh).
RUNNEL_REGISTER_OP(
    Unary("asin", FloatUnchangedShape)
        .Cost(KernelClass::kTranscendental)
        .Doc("The inverse sine, in [-pi/2, pi/2]; NaN outside [-1, 1]."));
RUNNEL_REGISTER_OP(
    Unary("acos", FloatUnchangedShape)
        .Cost(KernelClass::kTranscendental)
        .Doc("The inverse cosine, in [0, pi]; NaN outside [-1, 1]."));
RUNNEL_REGISTER_OP(Unary("atan", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("The inverse tangent, in (-pi/2, pi/2)."));
RUNNEL_REGISTER_OP(Unary("asinh", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("The inverse hyperbolic sine."));
RUNNEL_REGISTER_OP(
    Unary("acosh", FloatUnchangedShape)
        .Cost(KernelClass::kTranscendental)
        .Doc("The inverse hyperbolic cosine, for x >= 1; NaN below 1."));
RUNNEL_REGISTER_OP(Unary("atanh", FloatUnchangedShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("The inverse hyperbolic tangent, for |x| < 1: "
                            "+-inf at +-1, NaN beyond."));

RUNNEL_REGISTER_OP(
    Unary("logical_not", BoolUnaryShape).Doc("`not x` for bool x."));

// Arithmetic: one numeric dtype, NumPy broadcasting.
RUNNEL_REGISTER_OP(Binary("add", NumericBinaryShape).Doc("x + y."));
RUNNEL_REGISTER_OP(Binary("sub", NumericBinaryShape).Doc("x - y."));
RUNNEL_REGISTER_OP(
    Binary("mul", NumericBinaryShape).Doc("x * y, element-wise."));
RUNNEL_REGISTER_OP(
    Binary("div", DivShape)
        .Doc("True division; integers give f32 (f64 for i64). Integer "
             "division by zero is an error."));
RUNNEL_REGISTER_OP(Binary("floordiv", NumericBinaryShape)
                       .Doc("floor(x / y). Integer division by zero is an "
                            "error."));
RUNNEL_REGISTER_OP(Binary("mod", NumericBinaryShape)
                       .Doc("Remainder with the sign of the divisor, as in "
                            "Python. Integer division by zero is an error."));
RUNNEL_REGISTER_OP(Binary("pow", NumericBinaryShape)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("x ** y; an integer to a negative integer power "
                            "is an error."));
RUNNEL_REGISTER_OP(
    Binary("maximum", NumericBinaryShape).Doc("Propagates nan."));
RUNNEL_REGISTER_OP(
    Binary("minimum", NumericBinaryShape).Doc("Propagates nan."));

// Comparisons give bool; equality works on every dtype.
RUNNEL_REGISTER_OP(
    Binary("equal", EqualityShape).Doc("x == y, element-wise, as bool."));
RUNNEL_REGISTER_OP(
    Binary("not_equal", EqualityShape).Doc("x != y, element-wise, as bool."));
RUNNEL_REGISTER_OP(
    Binary("less", OrderShape).Doc("x < y, element-wise, as bool."));
RUNNEL_REGISTER_OP(
    Binary("less_equal", OrderShape).Doc("x <= y, element-wise, as bool."));
RUNNEL_REGISTER_OP(
    Binary("greater", OrderShape).Doc("x > y, element-wise, as bool."));
RUNNEL_REGISTER_OP(
    Binary("greater_equal", OrderShape).Doc("x >= y, element-wise, as bool."));

RUNNEL_REGISTER_OP(OpDefBuilder("logical_and")
                       .Inputs({"x", "y"})
                       .Outputs({"z"})
                       .Shape(LogicalBinaryShape)
                       .Doc("`x and y` for bool tensors, element-wise."));
RUNNEL_REGISTER_OP(OpDefBuilder("logical_or")
                       .Inputs({"x", "y"})
                       .Outputs({"z"})
                       .Shape(LogicalBinaryShape)
                       .Doc("`x or y` for bool tensors, element-wise."));

RUNNEL_REGISTER_OP(OpDefBuilder("clip")
                       .Inputs({"x", "lo", "hi"})
                       .Outputs({"y"})
                       .SameDType({0, 1, 2})
                       .Shape(ClipShape)
                       .Doc("min(max(x, lo), hi), broadcasting all three."));

RUNNEL_REGISTER_OP(OpDefBuilder("where")
                       .Inputs({"cond", "a", "b"})
                       .Outputs({"y"})
                       .SameDType({1, 2})
                       .KernelDTypeFromInput(1)
                       .Shape(WhereShape)
                       .Doc("a where cond is true, else b, broadcasting all "
                            "three."));

RUNNEL_REGISTER_OP(OpDefBuilder("cast")
                       .OptionalAttr("dtype")
                       .Inputs({"x"})
                       .Outputs({"y"})
                       .Shape(CastShape)
                       .Doc("Converts to attribute `dtype`. Floats to "
                            "integers truncate and saturate (nan gives 0); "
                            "anything to bool is x != 0."));

// Reductions: attribute `axis` (int or int list, negative allowed; absent =
// all axes) and `keepdims` (default false).
RUNNEL_REGISTER_OP(
    Reduction("sum", NumericReduction)
        .Cost(KernelClass::kReduction)
        .Doc("The sum over `axis` (all axes when absent); 0 for no elements."));
// The mean of an integer tensor is an integer of the same dtype, truncated
// toward zero (as in TensorFlow); cast to a float first for a float mean.
RUNNEL_REGISTER_OP(Reduction("mean", NumericReduction)
                       .Cost(KernelClass::kReduction)
                       .Doc("Integer inputs give the truncated integer mean."));
RUNNEL_REGISTER_OP(Reduction("prod", NumericReduction)
                       .Cost(KernelClass::kReduction)
                       .Doc("The product over `axis` (all axes when absent); 1 "
                            "for no elements."));
RUNNEL_REGISTER_OP(Reduction("max", NumericReductionNoIdentity)
                       .Cost(KernelClass::kReduction)
                       .Doc("Propagates nan."));
RUNNEL_REGISTER_OP(Reduction("min", NumericReductionNoIdentity)
                       .Cost(KernelClass::kReduction)
                       .Doc("Propagates nan."));
RUNNEL_REGISTER_OP(Reduction("all", BoolReduction)
                       .Cost(KernelClass::kReduction)
                       .Doc("Whether every element over `axis` is true; true "
                            "for no elements."));
RUNNEL_REGISTER_OP(Reduction("any", BoolReduction)
                       .Cost(KernelClass::kReduction)
                       .Doc("Whether some element over `axis` is true; false "
                            "for no elements."));
RUNNEL_REGISTER_OP(Reduction("logsumexp", FloatReduction)
                       .Cost(KernelClass::kTranscendental)
                       .Doc("log(sum(exp(x))), computed stably."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("cumsum")
        .Inputs({"x"})
        .Outputs({"y"})
        .Attr("axis", int64_t{0})
        .Attr("exclusive", false)
        .Attr("reverse", false)
        .Shape(CumsumShape)
        .Cost(KernelClass::kReduction)
        .Doc("Running sums along `axis` (numpy.cumsum, ONNX CumSum): "
             "element i is x[0] + ... + x[i]; with `exclusive`, x[0] + ... "
             "+ x[i - 1] (0 first); with `reverse`, the sums run from the "
             "end."));
RUNNEL_REGISTER_OP(Reduction("argmax", ArgReductionShape)
                       .Cost(KernelClass::kReduction)
                       .Doc("i32 index of the first maximum along one axis, "
                            "or into the flattened tensor when `axis` is "
                            "absent."));
RUNNEL_REGISTER_OP(Reduction("argmin", ArgReductionShape)
                       .Cost(KernelClass::kReduction)
                       .Doc("i32 index of the first minimum along one axis, "
                            "or into the flattened tensor when `axis` is "
                            "absent."));

}  // namespace
}  // namespace runnel
