// Random ops. Each is stateful: every run draws new numbers from a counter
// kept per node, while a whole program stays repeatable for a global seed
// (docs/architecture.md; base/random.h). Attribute `seed` (-1 = none)
// picks the stream; without it the node name does.
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/ops/kernel_checks.h"
#include "framework/shape_fns.h"
#include "framework/tensor.h"

namespace runnel {
namespace {

// The `shape` input and `dtype` attribute of the sampling ops; `dtype` must
// be floating unless `allow_int`.
Specs SampledShape(const ShapeContext& c, bool allow_int) {
  RN_ASSIGN_OR_RETURN(DType d, c.attr<DType>("dtype"));
  if (!IsFloating(d) && !(allow_int && IsInteger(d))) {
    return absl::InvalidArgumentError(StrCat("dtype must be floating",
                                             allow_int ? " or integer" : "",
                                             ", got ", DTypeName(d)));
  }
  RN_ASSIGN_OR_RETURN(Shape s, ShapeFromTensor(c.value(0), c.input(0)));
  if (c.value(0) != nullptr) {
    for (int64_t dim : s.dims()) {
      if (dim < 0) {
        return absl::InvalidArgumentError(
            StrCat("shape ", s.ToString(), " has a negative dimension"));
      }
    }
  }
  return One(d, std::move(s));
}

Specs NormalShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(double stddev, c.attr<double>("stddev"));
  if (!(stddev >= 0)) {
    return absl::InvalidArgumentError(
        StrCat("stddev must be >= 0, got ", stddev));
  }
  return SampledShape(c, /*allow_int=*/false);
}

Specs UniformShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(double lo, c.attr<double>("minval"));
  RN_ASSIGN_OR_RETURN(double hi, c.attr<double>("maxval"));
  RN_ASSIGN_OR_RETURN(DType d, c.attr<DType>("dtype"));
  if (IsInteger(d) ? !(hi > lo) : !(hi >= lo)) {
    return absl::InvalidArgumentError(
        StrCat("need minval < maxval, got [", lo, ", ", hi, ")"));
  }
  return SampledShape(c, /*allow_int=*/true);
}

Specs DropoutShape(const ShapeContext& c) {
  if (!IsFloating(c.dtype(0))) {
    return absl::InvalidArgumentError(StrCat(
        "dropout needs a floating-point tensor, got ", c.input(0).ToString()));
  }
  if (c.dtype(1) != c.dtype(0) ||
      (!c.shape(1).unknown_rank() && c.shape(1).rank() != 0)) {
    return absl::InvalidArgumentError(
        StrCat("rate must be a scalar of x's dtype ", DTypeName(c.dtype(0)),
               ", got ", c.input(1).ToString()));
  }
  if (c.dtype(2) != DType::kBool ||
      (!c.shape(2).unknown_rank() && c.shape(2).rank() != 0)) {
    return absl::InvalidArgumentError(
        StrCat("training must be a bool scalar, got ", c.input(2).ToString()));
  }
  if (c.value(1) != nullptr) {
    RN_ASSIGN_OR_RETURN(double rate, c.value(1)->ScalarAsDouble());
    RN_RETURN_IF_ERROR(CheckDropoutRate(rate));
  }
  const TensorSpec like_x{c.dtype(0), c.shape(0)};
  return std::vector<TensorSpec>{like_x, like_x};
}

RUNNEL_REGISTER_OP(OpDefBuilder("random_normal")
                       .Cost(KernelClass::kTranscendental)
                       .Inputs({"shape"})
                       .Outputs({"y"})
                       .Attr("mean", 0.0)
                       .Attr("stddev", 1.0)
                       .Attr("seed", int64_t{-1})
                       .Attr("dtype", DType::kF32)
                       .Stateful()
                       .KernelDTypeFromAttr("dtype")
                       .Shape(NormalShape)
                       .Doc("Normal samples of mean `mean` and standard "
                            "deviation `stddev`."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("random_uniform")
        .Cost(KernelClass::kTranscendental)
        .Inputs({"shape"})
        .Outputs({"y"})
        .Attr("minval", 0.0)
        .Attr("maxval", 1.0)
        .Attr("seed", int64_t{-1})
        .Attr("dtype", DType::kF32)
        .Stateful()
        .KernelDTypeFromAttr("dtype")
        .Shape(UniformShape)
        .Doc("Uniform samples in [minval, maxval); integers for an integer "
             "dtype."));

RUNNEL_REGISTER_OP(OpDefBuilder("truncated_normal")
                       .Cost(KernelClass::kTranscendental)
                       .Inputs({"shape"})
                       .Outputs({"y"})
                       .Attr("mean", 0.0)
                       .Attr("stddev", 1.0)
                       .Attr("seed", int64_t{-1})
                       .Attr("dtype", DType::kF32)
                       .Stateful()
                       .KernelDTypeFromAttr("dtype")
                       .Shape(NormalShape)
                       .Doc("Normal samples, redrawn until within two "
                            "standard deviations of the mean."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("dropout")
        .Inputs({"x", "rate", "training"})
        .Outputs({"y", "scale"})
        .SameDType({0, 1})
        .Attr("seed", int64_t{-1})
        .Stateful()
        .Shape(DropoutShape)
        .Doc("When `training`, zeroes each element with probability `rate` "
             "and scales the rest by 1 / (1 - rate); otherwise x. Output "
             "`scale` is what multiplied each element (0, 1 / (1 - rate), or "
             "1 when not training): y = x * scale, and the gradient is "
             "dy * scale."));

}  // namespace
}  // namespace runnel
