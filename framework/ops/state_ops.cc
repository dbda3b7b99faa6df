// Variables and their assignment ops. A `variable` node reads the session's
// Variable resource named by the node; `assign*` and `scatter_*` nodes name
// the variable in attribute `var` (or by the node feeding input 0) and take
// its read as input 0, which orders them after the variable exists and
// colocates them with it.
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/shape_fns.h"

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

// (var, indices, updates): updates has indices' shape followed by the
// variable's without its first axis.
Specs ScatterShape(const ShapeContext& c, bool numeric) {
  if (numeric && !IsNumeric(c.dtype(0))) {
    return absl::InvalidArgumentError(
        StrCat("needs a numeric variable, got ", c.input(0).ToString()));
  }
  if (c.dtype(1) != DType::kI32 && c.dtype(1) != DType::kI64) {
    return absl::InvalidArgumentError(
        StrCat("indices must be i32 or i64, got ", c.input(1).ToString()));
  }
  if (c.dtype(2) != c.dtype(0)) {
    return absl::InvalidArgumentError(
        StrCat("updates ", c.input(2).ToString(),
               " must have the dtype of the variable ", c.input(0).ToString()));
  }
  const Shape& var = c.shape(0);
  const Shape& indices = c.shape(1);
  if (!var.unknown_rank() && var.rank() == 0) {
    return absl::InvalidArgumentError(StrCat(
        "cannot scatter into a scalar variable ", c.input(0).ToString()));
  }
  if (!var.unknown_rank() && !indices.unknown_rank()) {
    std::vector<int64_t> dims = indices.dims();
    dims.insert(dims.end(), var.dims().begin() + 1, var.dims().end());
    const Shape expected(std::move(dims));
    if (!expected.IsCompatibleWith(c.shape(2))) {
      return absl::InvalidArgumentError(
          StrCat("updates ", c.input(2).ToString(), " must have shape ",
                 expected.ToString(), " for indices ", c.input(1).ToString(),
                 " into a variable of type ", c.input(0).ToString()));
    }
  }
  return One(c.dtype(0), var);
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("variable")
        .Cost(KernelClass::kFree)
        .OptionalAttr("dtype")
        .OptionalAttr("shape")
        .Outputs({"value"})
        .Attr("trainable", true)
        .Attr("initializer", std::string())
        .Stateful()
        .KernelDTypeFromAttr("dtype")
        .Shape(VariableShape)
        .Doc("Reads the variable resource named like this node. Attribute "
             "`initializer` names the tensor (\"node:index\") that "
             "initialises it on first use."));

// Not stateful, like TensorFlow's ReadVariableOp: what a read sees is set by
// its input and control inputs, so two reads of one variable with the same
// control inputs are interchangeable, and the interpreter makes one per
// variable and device outside `after` blocks.
RUNNEL_REGISTER_OP(
    OpDefBuilder("read_variable")
        .Cost(KernelClass::kFree)
        .Inputs({"ref"})
        .Outputs({"value"})
        .Shape(UnchangedShape)
        .Doc("The value of the variable feeding input 0 at the moment this "
             "node runs. The language makes one where a var or state is "
             "read, so a read inside `after` waits for the block's "
             "dependencies. It runs where its variable lives, whatever "
             "`device` block it is in, as TensorFlow's reads do."));

RUNNEL_REGISTER_OP(OpDefBuilder("assign")
                       .Inputs({"ref", "value"})
                       .Outputs({"new_value"})
                       .SameDType({0, 1})
                       .Stateful()
                       .Shape(AssignShape)
                       .Doc("Sets the variable feeding `ref` to `value`; gives "
                            "the new value."));
RUNNEL_REGISTER_OP(OpDefBuilder("assign_add")
                       .Inputs({"ref", "delta"})
                       .Outputs({"new_value"})
                       .SameDType({0, 1})
                       .Stateful()
                       .Shape(NumericAssignShape)
                       .Doc("Adds `delta` to the variable feeding `ref`; gives "
                            "the new value."));
RUNNEL_REGISTER_OP(OpDefBuilder("assign_sub")
                       .Inputs({"ref", "delta"})
                       .Outputs({"new_value"})
                       .SameDType({0, 1})
                       .Stateful()
                       .Shape(NumericAssignShape)
                       .Doc("Subtracts `delta` from the variable feeding "
                            "`ref`; gives the new value."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("scatter_add")
        .Inputs({"ref", "indices", "updates"})
        .Outputs({"new_value"})
        .Stateful()
        .Shape([](const ShapeContext& c) { return ScatterShape(c, true); })
        .Doc("Adds updates[i] to row indices[i] (axis 0) of the variable; "
             "repeated indices add up. Gives the new value."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("scatter_sub")
        .Inputs({"ref", "indices", "updates"})
        .Outputs({"new_value"})
        .Stateful()
        .Shape([](const ShapeContext& c) { return ScatterShape(c, true); })
        .Doc("Subtracts updates[i] from row indices[i] (axis 0) of the "
             "variable. Gives the new value."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("scatter_update")
        .Inputs({"ref", "indices", "updates"})
        .Outputs({"new_value"})
        .Stateful()
        .Shape([](const ShapeContext& c) { return ScatterShape(c, false); })
        .Doc("Sets row indices[i] (axis 0) of the variable to updates[i]; "
             "of repeated indices the last wins. Gives the new value."));

}  // namespace
}  // namespace runnel
