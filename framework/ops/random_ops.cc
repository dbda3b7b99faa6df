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

// A random op (stateful: each run reserves new draws from the node's
// counter), or with `at` its replay, `NAME_at`: the same op with one more
// input, `first`, that samples the draws from counter `first` of the
// stream of node `stream` instead of reserving them. A replay is a pure
// function of its inputs: the gradient of a loop that recomputes its
// iterations (common_runtime/backprop.cc) stores each iteration's `first`
// (from random_reserve), not its draws, and draws them again.
OpDefBuilder RandomOp(std::string name, std::vector<std::string> inputs,
                      bool at, ShapeFn shape) {
  const std::string replayed = name;
  if (at) {
    name += "_at";
    inputs.push_back("first");
  }
  OpDefBuilder b(std::move(name));
  b.Inputs(std::move(inputs)).Attr("seed", int64_t{-1});
  if (at) {
    b.Attr("stream", std::string()).ReplayOf(replayed);
    shape = [shape](const ShapeContext& c) -> Specs {
      const int first = c.num_inputs() - 1;
      if (c.dtype(first) != DType::kI64 ||
          (!c.shape(first).unknown_rank() && c.shape(first).rank() != 0)) {
        return absl::InvalidArgumentError(StrCat(
            "first must be an i64 scalar, got ", c.input(first).ToString()));
      }
      return shape(c);
    };
  } else {
    b.Stateful();
  }
  return std::move(b.Shape(std::move(shape)));
}

OpDefBuilder SamplingOp(std::string name, bool at, ShapeFn shape,
                        std::vector<std::pair<std::string, double>> params,
                        std::string doc) {
  OpDefBuilder b = RandomOp(name, {"shape"}, at, std::move(shape));
  b.Cost(KernelClass::kTranscendental).Outputs({"y"});
  for (auto& [param, value] : params) b.Attr(std::move(param), value);
  b.Attr("dtype", DType::kF32).KernelDTypeFromAttr("dtype");
  return std::move(b.Doc(at ? StrCat(name,
                                     " with its draws from counter "
                                     "`first` of node `stream`'s "
                                     "stream (a recomputed draw).")
                            : std::move(doc)));
}

OpDefBuilder DropoutOp(bool at) {
  OpDefBuilder b =
      RandomOp("dropout", {"x", "rate", "training"}, at, DropoutShape);
  b.Outputs({"y", "scale"}).SameDType({0, 1});
  return std::move(b.Doc(
      at ? "dropout with its draws from counter `first` of node `stream`'s "
           "stream (a recomputed draw)."
         : "When `training`, zeroes each element with probability `rate` and "
           "scales the rest by 1 / (1 - rate); otherwise x. Output `scale` "
           "is what multiplied each element (0, 1 / (1 - rate), or 1 when "
           "not training): y = x * scale, and the gradient is dy * scale."));
}

RUNNEL_STATIC_INIT(RandomOps) {
  for (bool at : {false, true}) {
    op_registry_internal::Registrar(SamplingOp(
        "random_normal", at, NormalShape, {{"mean", 0.0}, {"stddev", 1.0}},
        "Normal samples of mean `mean` and standard "
        "deviation `stddev`."));
    op_registry_internal::Registrar(SamplingOp(
        "random_uniform", at, UniformShape, {{"minval", 0.0}, {"maxval", 1.0}},
        "Uniform samples in [minval, maxval); integers for an integer "
        "dtype."));
    op_registry_internal::Registrar(SamplingOp(
        "truncated_normal", at, NormalShape, {{"mean", 0.0}, {"stddev", 1.0}},
        "Normal samples, redrawn until within two "
        "standard deviations of the mean."));
    op_registry_internal::Registrar(DropoutOp(at));
  }
}

// The draws a random op would reserve, reserved: for `shape`'s number of
// elements when `on` (dropout draws only when training at a nonzero rate).
Specs ReserveShape(const ShapeContext& c) {
  if (!IsInteger(c.dtype(0)) ||
      (!c.shape(0).unknown_rank() && c.shape(0).rank() != 1)) {
    return absl::InvalidArgumentError(
        StrCat("shape must be an integer vector, got ", c.input(0).ToString()));
  }
  if (c.dtype(1) != DType::kBool ||
      (!c.shape(1).unknown_rank() && c.shape(1).rank() != 0)) {
    return absl::InvalidArgumentError(
        StrCat("on must be a bool scalar, got ", c.input(1).ToString()));
  }
  return One(DType::kI64, Shape({}));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("random_reserve")
        .Inputs({"shape", "on"})
        .Outputs({"first"})
        .Attr("seed", int64_t{-1})
        .Attr("stream", std::string())
        .Stateful()
        .Cost(KernelClass::kFree)
        .Shape(ReserveShape)
        .Doc("Reserves the draws of node `stream`'s random op, as a run of "
             "it would (`shape`'s number of elements when `on`, else none), "
             "and gives the first one's counter, for a NAME_at op to sample "
             "them."));

}  // namespace
}  // namespace runnel
