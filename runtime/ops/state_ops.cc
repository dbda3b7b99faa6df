// Variables and their assignment ops. A `variable` node reads the session's
// Variable resource named by the node; `assign*` nodes name the variable in
// attribute `var` and take its read as input 0, which orders them after the
// variable exists and colocates them with it.
#include "runtime/op_registry.h"
#include "runtime/shape_fns.h"
#include "runtime/status_macros.h"

namespace runnel {
namespace {

Specs VariableShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(DType d, c.attr<DType>("dtype"));
  RN_ASSIGN_OR_RETURN(Shape s, c.attr<Shape>("shape"));
  if (!s.IsFullyDefined()) {
    return absl::InvalidArgumentError(
        StrCat("a variable needs a fully known shape, got ", s.ToString()));
  }
  return One(d, std::move(s));
}

Specs AssignShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  if (!c.shape(0).IsCompatibleWith(c.shape(1))) {
    return absl::InvalidArgumentError(
        StrCat("cannot assign ", c.input(1).ToString(),
               " to a variable of type ", c.input(0).ToString()));
  }
  return One(c.dtype(0), c.shape(0));
}

Specs NumericAssignShape(const ShapeContext& c) {
  if (!IsNumeric(c.dtype(0))) {
    return absl::InvalidArgumentError(
        StrCat("needs a numeric variable, got ", c.input(0).ToString()));
  }
  return AssignShape(c);
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("variable")
        .Outputs({"value"})
        .Attr("trainable", true)
        .Attr("initializer", std::string())
        .Stateful()
        .KernelDTypeFromAttr("dtype")
        .Shape(VariableShape)
        .Doc("Reads the variable resource named like this node. Attribute "
             "`initializer` names the tensor (\"node:index\") that "
             "initialises it on first use."));

RUNNEL_REGISTER_OP(OpDefBuilder("assign")
                       .Inputs({"ref", "value"})
                       .Outputs({"new_value"})
                       .Stateful()
                       .Shape(AssignShape));
RUNNEL_REGISTER_OP(OpDefBuilder("assign_add")
                       .Inputs({"ref", "delta"})
                       .Outputs({"new_value"})
                       .Stateful()
                       .Shape(NumericAssignShape));
RUNNEL_REGISTER_OP(OpDefBuilder("assign_sub")
                       .Inputs({"ref", "delta"})
                       .Outputs({"new_value"})
                       .Stateful()
                       .Shape(NumericAssignShape));

}  // namespace
}  // namespace runnel
