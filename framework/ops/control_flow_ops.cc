// The control-flow primitives (docs/architecture.md, Control flow):
// switch and merge for conditionals; enter, exit, next_iteration and
// loop_cond for loops; control_trigger; and the stacks that carry forward
// values to a loop's gradient. They are graph ops, made by in-graph `if`
// and `loop` and by autodiff, never called as builtins.
#include <string>

#include "base/status_macros.h"
#include "framework/op_registry.h"
#include "framework/shape_fns.h"

namespace runnel {
namespace {

absl::Status ScalarBool(const ShapeContext& c, int i, std::string_view what) {
  const Shape& s = c.shape(i);
  if (c.dtype(i) != DType::kBool || (!s.unknown_rank() && s.rank() != 0)) {
    return absl::InvalidArgumentError(
        StrCat(what, " must be a bool scalar, got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

Specs SwitchShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(ScalarBool(c, 1, "the predicate"));
  return std::vector<TensorSpec>{c.input(0), c.input(0)};
}

// The most specific shape every input fits: a dimension all inputs agree
// on, else unknown; unknown rank when the ranks differ.
Shape CommonShape(const ShapeContext& c) {
  Shape s = c.shape(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    const Shape& t = c.shape(i);
    if (s.unknown_rank() || t.unknown_rank() || s.rank() != t.rank()) {
      return Shape::UnknownRank();
    }
    std::vector<int64_t> dims;
    for (int k = 0; k < s.rank(); ++k) {
      dims.push_back(s.dim(k) == t.dim(k) ? s.dim(k) : -1);
    }
    s = Shape(dims);
  }
  return s;
}

Specs MergeShape(const ShapeContext& c) {
  for (int i = 1; i < c.num_inputs(); ++i) {
    if (c.dtype(i) != c.dtype(0)) {
      return absl::InvalidArgumentError(
          StrCat("all inputs must have one dtype, got ", c.input(0).ToString(),
                 " and ", c.input(i).ToString()));
    }
  }
  Shape shape = CommonShape(c);
  if (c.attrs().contains("shape")) {
    RN_ASSIGN_OR_RETURN(shape, c.attr<Shape>("shape"));
    for (int i = 0; i < c.num_inputs(); ++i) {
      if (!c.shape(i).IsCompatibleWith(shape) &&
          !shape.IsCompatibleWith(c.shape(i))) {
        return absl::InvalidArgumentError(
            StrCat("input ", i, " ", c.input(i).ToString(),
                   " does not fit the declared shape ", shape.ToString()));
      }
    }
  }
  return std::vector<TensorSpec>{{c.dtype(0), shape}, {DType::kI32, Shape{}}};
}

Specs EnterShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(c.attr<std::string>("frame_name").status());
  return UnchangedShape(c);
}

Specs LoopCondShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(ScalarBool(c, 0, "a loop condition"));
  return UnchangedShape(c);
}

Specs NoOutputs(const ShapeContext&) { return std::vector<TensorSpec>{}; }

Specs RecomputePlanShape(const ShapeContext& c) {
  if (c.dtype(0) != DType::kI32) {
    return absl::InvalidArgumentError(
        StrCat("needs an i32 trip count, got ", DTypeName(c.dtype(0))));
  }
  return std::vector<TensorSpec>{{DType::kI32, Shape{}},
                                 {DType::kI32, Shape{}}};
}

Specs StackNewShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(c.attr<DType>("elem_dtype").status());
  return One(DType::kI64, Shape{});
}

absl::Status HandleAndIndex(const ShapeContext& c) {
  if (c.dtype(0) != DType::kI64 || c.dtype(1) != DType::kI32) {
    return absl::InvalidArgumentError(
        StrCat("needs an i64 stack handle and an i32 index, got ",
               c.input(0).ToString(), " and ", c.input(1).ToString()));
  }
  return absl::OkStatus();
}

Specs StackPushShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(HandleAndIndex(c));
  return One(c.dtype(2), c.shape(2));
}

Specs StackPopShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(HandleAndIndex(c));
  RN_ASSIGN_OR_RETURN(DType d, c.attr<DType>("elem_dtype"));
  RN_ASSIGN_OR_RETURN(Shape s, c.attr_or<Shape>("shape", Shape::UnknownRank()));
  return One(d, std::move(s));
}

RUNNEL_REGISTER_OP(OpDefBuilder("switch")
                       .Cost(KernelClass::kFree)
                       .Inputs({"data", "pred"})
                       .Outputs({"output_false", "output_true"})
                       .Shape(SwitchShape)
                       .Doc("Forwards data to output_true when pred holds, "
                            "else to output_false; the other output is "
                            "dead. In-graph `if` and loops."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("merge")
        .Cost(KernelClass::kFree)
        .Inputs({"inputs"})
        .Variadic()
        .OptionalAttr("shape")
        .Outputs({"output", "value_index"})
        .Shape(MergeShape)
        .Doc("Forwards the first live input and its index; dead when every "
             "input is. Joins the branches of an `if` and starts each "
             "iteration of a loop. `shape` declares the output's static "
             "shape (a loop variable whose dimensions change)."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("enter")
        .Cost(KernelClass::kFree)
        .Inputs({"data"})
        .Outputs({"output"})
        .OptionalAttr("frame_name")
        .Attr("is_constant", false)
        .Attr("parallel_iterations", int64_t{32})
        .Shape(EnterShape)
        .Doc("Moves data into the child frame `frame_name` (its iteration "
             "0, or every iteration when `is_constant`: a loop invariant). "
             "At most `parallel_iterations` iterations run at once."));

RUNNEL_REGISTER_OP(OpDefBuilder("exit")
                       .Cost(KernelClass::kFree)
                       .Inputs({"data"})
                       .Outputs({"output"})
                       .Shape(UnchangedShape)
                       .Doc("Moves data from a loop's frame to the frame "
                            "around it: the loop's result."));

RUNNEL_REGISTER_OP(OpDefBuilder("next_iteration")
                       .Cost(KernelClass::kFree)
                       .Inputs({"data"})
                       .Outputs({"output"})
                       .Shape(UnchangedShape)
                       .Doc("Moves data to the next iteration of its loop."));

RUNNEL_REGISTER_OP(OpDefBuilder("loop_cond")
                       .Cost(KernelClass::kFree)
                       .Inputs({"pred"})
                       .Outputs({"output"})
                       .Shape(LoopCondShape)
                       .Doc("A loop's condition: whether another iteration "
                            "runs."));

RUNNEL_REGISTER_OP(OpDefBuilder("control_trigger")
                       .Cost(KernelClass::kFree)
                       .Shape(NoOutputs)
                       .Doc("Runs when its control inputs are done, dead or "
                            "not, and is never dead itself."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("recompute_plan")
        .Cost(KernelClass::kFree)
        .Inputs({"trips"})
        .Outputs({"k", "split"})
        .Attr("budget", int64_t{0})
        .Attr("recomputed", int64_t{0})
        .Attr("stored", int64_t{0})
        .Attr("state", int64_t{0})
        .Shape(RecomputePlanShape)
        .Doc("The checkpoint interval of a loop's gradient under a memory "
             "budget, for a trip count known at run time "
             "(framework/recompute_plan.h): k, 0 to keep every iteration's "
             "values, and split, how many of the first iterations are "
             "computed again (the others keep their values); an error (at "
             "the loop's line) when even recomputing all does not fit."));

RUNNEL_REGISTER_OP(OpDefBuilder("stack_new")
                       .Cost(KernelClass::kFree)
                       .Outputs({"handle"})
                       .OptionalAttr("elem_dtype")
                       .Stateful()
                       .KernelDTypeFromAttr("elem_dtype")
                       .Shape(StackNewShape)
                       .Doc("A new empty stack of this run, freed when the "
                            "run ends: it carries a loop's forward values "
                            "to its gradient."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("stack_push")
        .Inputs({"handle", "index", "value"})
        .Outputs({"value"})
        .Attr("swap", std::string())
        .Stateful()
        .KernelDTypeFromInput(2)
        .Shape(StackPushShape)
        .Doc("Keeps value at `index` of the stack and forwards it. `swap`: "
             "\"\" keeps it where it is; \"asked\" (swap_memory = true) "
             "keeps a copy in host memory instead, made asynchronously, on a "
             "device whose memory is not the host's (a GPU), and the value "
             "itself elsewhere; \"planned\" (a memory budget's plan) the same, "
             "and is an error on a device that cannot swap."));

RUNNEL_REGISTER_OP(OpDefBuilder("stack_pop")
                       .Inputs({"handle", "index"})
                       .Outputs({"value"})
                       .OptionalAttr("elem_dtype")
                       .OptionalAttr("shape")
                       .Attr("keep", false)
                       .Stateful()
                       .KernelDTypeFromAttr("elem_dtype")
                       .Shape(StackPopShape)
                       .Doc("Removes and gives the value at `index` of the "
                            "stack (gives it and leaves it there with `keep`: "
                            "a loop's saved state, read again each time a "
                            "gradient recomputes from it); dead when nothing "
                            "was pushed there (the push was on an untaken "
                            "branch)."));

}  // namespace
}  // namespace runnel
