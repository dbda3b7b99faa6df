// Synchronous replicas (docs/cluster.md, `optim.NAME(..., replicas = M)`):
// each worker adds its gradients, tagged with the optimizer's step counter
// as it read it, to one accumulator per variable (on the variable's task),
// then meets the others at a barrier beside that counter. The worker whose
// gradient completes the set of min(M, live workers) applies the mean of
// the fresh gradients and advances the step; the others wait for that, and
// gradients of an older step are dropped (backup workers). Each optimizer
// has its own counter and barrier, so one script may hold several.
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/shape_fns.h"

namespace runnel {
namespace {

absl::Status CheckStep(const ShapeContext& c, int i) {
  if (c.dtype(i) != DType::kI64 || !c.shape(i).IsCompatibleWith(Shape{})) {
    return absl::InvalidArgumentError(
        StrCat("the step must be an i64 scalar, got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

Specs AccumulateShape(const ShapeContext& c) {
  if (c.dtype(0) != DType::kF32 && c.dtype(0) != DType::kF64) {
    return absl::InvalidArgumentError(
        StrCat("needs an f32 or f64 variable, got ", c.input(0).ToString()));
  }
  if (c.dtype(1) != c.dtype(0) || !c.shape(0).IsCompatibleWith(c.shape(1))) {
    return absl::InvalidArgumentError(StrCat("gradient ", c.input(1).ToString(),
                                             " does not match the variable ",
                                             c.input(0).ToString()));
  }
  RN_RETURN_IF_ERROR(CheckStep(c, 2));
  return One(DType::kBool, Shape{});
}

Specs TakeShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckStep(c, 1));
  return One(c.dtype(0), c.shape(0));
}

Specs BarrierShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckStep(c, 0));
  RN_RETURN_IF_ERROR(CheckStep(c, 1));
  RN_ASSIGN_OR_RETURN(int64_t replicas, c.attr<int64_t>("replicas"));
  if (replicas < 1) {
    return absl::InvalidArgumentError(
        StrCat("replicas must be at least 1, got ", replicas));
  }
  return One(DType::kBool, Shape{});
}

Specs AdvanceShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckStep(c, 0));
  RN_RETURN_IF_ERROR(CheckStep(c, 1));
  return One(DType::kI64, Shape{});
}

Specs HoldShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckStep(c, 0));
  return One(DType::kI64, Shape{});
}

Specs AllReduceShape(const ShapeContext& c) {
  if (c.dtype(0) != DType::kF32 && c.dtype(0) != DType::kF64) {
    return absl::InvalidArgumentError(
        StrCat("needs an f32 or f64 tensor, got ", c.input(0).ToString()));
  }
  RN_ASSIGN_OR_RETURN(int64_t replicas, c.attr<int64_t>("replicas"));
  if (replicas < 1) {
    return absl::InvalidArgumentError(
        StrCat("replicas must be at least 1, got ", replicas));
  }
  return One(c.dtype(0), c.shape(0));
}

}  // namespace

RUNNEL_REGISTER_OP(
    OpDefBuilder("sync_accumulate")
        .Inputs({"ref", "grad", "step"})
        .Outputs({"accepted"})
        .Attr("replicas", int64_t{1})
        .Stateful()
        .Shape(AccumulateShape)
        .Doc("Adds `grad`, computed at global step `step`, to the gradient "
             "accumulator of the variable feeding `ref`; true when taken, "
             "false when the accumulator has moved past `step` (a stale "
             "gradient) or already holds `replicas` gradients of it (a "
             "backup's): those are dropped."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("sync_take")
        .Inputs({"ref", "step"})
        .Outputs({"mean"})
        .Stateful()
        .Shape(TakeShape)
        .Doc("The mean of the gradients accumulated for step `step` of the "
             "variable feeding `ref`; the accumulator then waits for step "
             "`step` + 1."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("sync_barrier")
        .Inputs({"ref", "step"})
        .Outputs({"applier"})
        .Attr("replicas", int64_t{1})
        .Stateful()
        .Shape(BarrierShape)
        .Doc("Waits until min(`replicas`, live workers) workers have arrived "
             "for step `step` of the step counter `ref`, beside which the "
             "barrier lives (one barrier per counter). The arrival that "
             "completes the set gets true and must "
             "apply the update and call sync_advance; the others get false "
             "once it has. An arrival for an older step gets false at once."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("sync_advance")
        .Inputs({"ref", "step"})
        .Outputs({"next"})
        .Stateful()
        .Shape(AdvanceShape)
        .Doc("Ends step `step` at the barrier: the workers waiting there go "
             "on. Gives `step` + 1."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("sync_hold")
        .Inputs({"ref"})
        .Outputs({"held"})
        .Stateful()
        .Shape(HoldShape)
        .Doc("Waits until the barrier of step counter `ref` is applying no "
             "step, then keeps it from choosing an applier until sync_release "
             "in the same run (or until that run fails), so that reads in "
             "between see the variables between two steps: a checkpoint "
             "under synchronous replicas. Gives 0."));
RUNNEL_REGISTER_OP(OpDefBuilder("sync_release")
                       .Inputs({"ref"})
                       .Outputs({"released"})
                       .Stateful()
                       .Shape(HoldShape)
                       .Doc("Ends this run's sync_hold of the barrier of "
                            "step counter `ref`. Gives 0."));

// All-reduce (docs/cluster.md, `optim.NAME(..., replicas = M, reduce =
// "all")`): every worker holds its own copy of the variables, the workers
// sum their gradients with each other, and each applies the same update.
RUNNEL_REGISTER_OP(
    OpDefBuilder("all_reduce")
        .Inputs({"x"})
        .Outputs({"sum"})
        .Attr("replicas", int64_t{1})
        .Attr("group", std::string())
        .Stateful()
        .Shape(AllReduceShape)
        .Doc("The element-wise sum of `x` over the `replicas` workers of the "
             "cluster, which must be all of them; every worker gets the same "
             "sum, added up in the workers' order. Each worker's n-th call of "
             "a `group` (the node's name when empty) meets the others' n-th. "
             "Without a cluster, `replicas` must be 1 and the sum is `x`."));

}  // namespace runnel
