// Structural ops: constants, placeholders, identity and its variants
// (stop_gradient, check_numerics, debug_print), no-ops, and the executor's
// feed/fetch endpoints.
#include <string>

#include "base/status_macros.h"
#include "framework/op_registry.h"
#include "framework/shape_fns.h"

namespace runnel {
namespace {

Specs ConstShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(Tensor v, c.attr<Tensor>("value"));
  return One(v.dtype(), v.shape());
}

Specs DeclaredShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(DType d, c.attr<DType>("dtype"));
  RN_ASSIGN_OR_RETURN(Shape s, c.attr<Shape>("shape"));
  return One(d, std::move(s));
}

Specs PlaceholderWithDefaultShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(Shape s, c.attr<Shape>("shape"));
  if (!s.IsCompatibleWith(c.shape(0))) {
    return absl::InvalidArgumentError(
        StrCat("default value ", c.input(0).ToString(),
               " does not match the declared shape ", s.ToString()));
  }
  return One(c.dtype(0), std::move(s));
}

Specs NoOutputs(const ShapeContext&) { return std::vector<TensorSpec>{}; }

Specs CheckNumericsShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(c.attr<std::string>("message").status());
  return FloatUnchangedShape(c);
}

Specs DebugPrintShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(c.attr<std::string>("message").status());
  return UnchangedShape(c);
}

RUNNEL_REGISTER_OP(OpDefBuilder("const")
                       .Cost(KernelClass::kFree)
                       .OptionalAttr("value")
                       .Outputs({"value"})
                       .KernelDTypeFromAttr("value")
                       .Shape(ConstShape)
                       .Doc("A constant tensor, held in attribute `value`."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("placeholder")
        .Cost(KernelClass::kFree)
        .OptionalAttr("dtype")
        .OptionalAttr("shape")
        .Outputs({"value"})
        .KernelDTypeFromAttr("dtype")
        .Shape(DeclaredShape)
        .Doc("A value fed by `run ... with`; failing when run unfed."));

RUNNEL_REGISTER_OP(OpDefBuilder("placeholder_with_default")
                       .Cost(KernelClass::kFree)
                       .OptionalAttr("dtype")
                       .OptionalAttr("shape")
                       .Inputs({"default"})
                       .Outputs({"value"})
                       .Shape(PlaceholderWithDefaultShape)
                       .Doc("A value that may be fed; otherwise its input."));

RUNNEL_REGISTER_OP(OpDefBuilder("identity")
                       .Cost(KernelClass::kFree)
                       .Inputs({"x"})
                       .Outputs({"y"})
                       .Shape(UnchangedShape)
                       .Doc("x itself (a graph node of its own: a name, a "
                            "device, control inputs)."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("stop_gradient")
        .Cost(KernelClass::kFree)
        .Inputs({"x"})
        .Outputs({"y"})
        .Shape(UnchangedShape)
        .Doc("x, through which no gradient flows: autodiff treats it as a "
             "constant."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("check_numerics")
        .Inputs({"x"})
        .Outputs({"y"})
        .Attr("message", std::string())
        .Shape(CheckNumericsShape)
        .Doc("x, or an InvalidArgument error naming `message` when x holds a "
             "NaN or an infinity."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("debug_print")
        .Inputs({"x"})
        .Outputs({"y"})
        .Attr("message", std::string())
        .Stateful()
        .Shape(DebugPrintShape)
        .Doc("x, printing `message` and x's value to stderr when it runs."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("noop")
        .Cost(KernelClass::kFree)
        .Shape(NoOutputs)
        .Doc("Does nothing; with control inputs it groups them (`group`)."));

RUNNEL_REGISTER_OP(OpDefBuilder("_feed")
                       .Cost(KernelClass::kFree)
                       .OptionalAttr("dtype")
                       .OptionalAttr("shape")
                       .Outputs({"value"})
                       .Attr("index", int64_t{0})
                       .KernelDTypeFromAttr("dtype")
                       .Shape(DeclaredShape)
                       .Doc("Executor endpoint: feed `index` of the run."));

RUNNEL_REGISTER_OP(OpDefBuilder("_fetch")
                       .Cost(KernelClass::kFree)
                       .Inputs({"value"})
                       .Attr("index", int64_t{0})
                       .Shape(NoOutputs)
                       .Doc("Executor endpoint: fetch `index` of the run."));

// The two ends of an edge the partitioner cut between devices
// (common_runtime/partition.h); the executor hands their values to the step's
// rendezvous (common_runtime/rendezvous.h), dead ones included.
RUNNEL_REGISTER_OP(OpDefBuilder("_send")
                       .Cost(KernelClass::kFree)
                       .Inputs({"value"})
                       .Attr("edge", std::string())
                       .Attr("send_device", std::string())
                       .Attr("recv_device", std::string())
                       .Shape(NoOutputs)
                       .Doc("Partition endpoint: sends `value` to the "
                            "`_recv` of the same edge on `recv_device`."));

RUNNEL_REGISTER_OP(OpDefBuilder("_recv")
                       .Cost(KernelClass::kFree)
                       .OptionalAttr("dtype")
                       .OptionalAttr("shape")
                       .Outputs({"value"})
                       .Attr("edge", std::string())
                       .Attr("send_device", std::string())
                       .Attr("recv_device", std::string())
                       .KernelDTypeFromAttr("dtype")
                       .Shape(DeclaredShape)
                       .Doc("Partition endpoint: the value the `_send` of "
                            "the same edge on `send_device` sent."));

}  // namespace
}  // namespace runnel
