// Kernels of the control-flow ops (framework/ops/control_flow_ops.cc). The
// executor gives them their meaning (frames, iterations, dead values);
// the kernels only forward values. merge never runs a kernel: the executor
// forwards the live input itself. They touch no tensor's memory but that
// of a switch's predicate and a stack's handle and index, so a device
// whose memory is not the host's (a GPU) runs the same kernels, with those
// inputs in host memory (RegisterControlFlowKernels).
#include "kernels/common/control_flow_kernels.h"

#include <algorithm>
#include <string>

#include "base/strings.h"
#include "framework/device.h"
#include "framework/kernel.h"
#include "framework/recompute_plan.h"

namespace runnel {
namespace {

// enter, exit, next_iteration, loop_cond: output = input 0.
class ForwardKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    return ctx->set_output(0, ctx->input(0));
  }
  bool IsExpensive() const override { return false; }
};

class SwitchKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const bool pred = ctx->input(1).data<bool>()[0];
    const int live = pred ? 1 : 0;
    ctx->set_output_dead(1 - live);
    return ctx->set_output(live, ctx->input(0));
  }
  bool IsExpensive() const override { return false; }
};

class NoOpKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext*) override { return absl::OkStatus(); }
  bool IsExpensive() const override { return false; }
};

absl::StatusOr<StepContainer*> Step(OpKernelContext* ctx) {
  if (ctx->step_container() == nullptr) {
    return absl::FailedPreconditionError(
        StrCat(ctx->node().op(), " runs only inside a graph run"));
  }
  return ctx->step_container();
}

class StackNewKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(StepContainer * step, Step(ctx));
    return ctx->set_output(0, Tensor::ScalarOf(DType::kI64, step->NewStack()));
  }
  bool IsExpensive() const override { return false; }
};

// With `swap` set, a device that swaps (a GPU: Device::SwapsToHost) keeps
// the value in host memory: its copy out starts here and overlaps the
// kernels after it, and the pop brings it back.
class StackPushKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(const std::string swap, node.attr<std::string>("swap"));
    if (swap == "asked") {
      swap_ = Swap::kAsked;
    } else if (swap == "planned") {
      swap_ = Swap::kPlanned;
    } else if (!swap.empty()) {
      return absl::InvalidArgumentError(
          StrCat("stack_push: swap is \"\", \"asked\" or \"planned\", not \"",
                 swap, "\""));
    }
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(StepContainer * step, Step(ctx));
    StepContainer::Element element;
    Device* device = ctx->device();
    const bool swaps = device != nullptr && device->SwapsToHost();
    if (swap_ == Swap::kNone || (swap_ == Swap::kAsked && !swaps)) {
      element.value = ctx->input(2);
    } else if (!swaps) {
      return absl::FailedPreconditionError(StrCat(
          "the memory budget's plan keeps this loop's saved values in host "
          "memory, swapped out of a GPU, but the loop runs on ",
          device != nullptr ? device->name() : "the host",
          ", whose memory is the host's: they would hold more than the "
          "budget; choose the loop's interval with `with checkpoint = k` "
          "(docs/training.md, Long sequences)"));
    } else {
      RN_ASSIGN_OR_RETURN(element.swapped, device->SwapOut(ctx->input(2)));
    }
    RN_RETURN_IF_ERROR(step->Push(ctx->input(0).data<int64_t>()[0],
                                  ctx->input(1).data<int32_t>()[0],
                                  std::move(element)));
    return ctx->set_output(0, ctx->input(2));
  }
  bool IsExpensive() const override { return false; }

 private:
  // The op's `swap` attr, read once.
  enum class Swap { kNone, kAsked, kPlanned };
  Swap swap_ = Swap::kNone;
};

class StackPopKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(keep_, node.attr<bool>("keep"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(StepContainer * step, Step(ctx));
    RN_ASSIGN_OR_RETURN(std::optional<StepContainer::Element> e,
                        step->Pop(ctx->input(0).data<int64_t>()[0],
                                  ctx->input(1).data<int32_t>()[0], keep_));
    // Nothing pushed: the push was on a branch the forward pass did not
    // take, and so is everything that reads this value.
    if (!e) {
      ctx->set_output_dead(0);
      return absl::OkStatus();
    }
    if (e->swapped == nullptr) return ctx->set_output(0, std::move(e->value));
    Device* from = e->swapped->device();
    if (from != ctx->device()) {
      // The placer put the loop's gradient apart from the loop: only the
      // device that swapped the value out can bring it back.
      return absl::FailedPreconditionError(
          StrCat("stack_pop: a value the loop swapped out of ", from->name(),
                 " (swap_memory) is read on ",
                 ctx->device() != nullptr ? ctx->device()->name() : "the host",
                 "; put the loop and its gradient on one device (a `device` "
                 "block around both)"));
    }
    RN_ASSIGN_OR_RETURN(Tensor t, from->SwapIn(*e->swapped));
    return ctx->set_output(0, std::move(t));
  }
  bool IsExpensive() const override { return false; }

 private:
  bool keep_ = false;
};

class RecomputePlanKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(budget_, node.attr<int64_t>("budget"));
    RN_ASSIGN_OR_RETURN(sizes_.recomputed, node.attr<int64_t>("recomputed"));
    RN_ASSIGN_OR_RETURN(sizes_.stored, node.attr<int64_t>("stored"));
    RN_ASSIGN_OR_RETURN(sizes_.state, node.attr<int64_t>("state"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    LoopStackSizes sizes = sizes_;
    sizes.trips = std::max<int64_t>(ctx->input(0).data<int32_t>()[0], 0);
    const CheckpointPlan plan = PlanCheckpoints(sizes, budget_);
    if (plan.held > budget_) {
      return absl::ResourceExhaustedError(PlanDoesNotFit(sizes, plan, budget_));
    }
    RN_RETURN_IF_ERROR(ctx->set_output(
        0, Tensor::ScalarOf(DType::kI32, static_cast<int32_t>(plan.k))));
    return ctx->set_output(
        1, Tensor::ScalarOf(DType::kI32, static_cast<int32_t>(plan.split)));
  }
  bool IsExpensive() const override { return false; }

 private:
  int64_t budget_ = 0;
  LoopStackSizes sizes_;
};

RUNNEL_STATIC_INIT(ControlFlowKernels) {
  RegisterControlFlowKernels(kDeviceCpu);
}

}  // namespace

void RegisterControlFlowKernels(const std::string& device) {
  for (const char* op : {"enter", "exit", "next_iteration"}) {
    RegisterKernelForAllTypes<ForwardKernel>(op, device);
  }
  // The index of the live input, merge's second output, is made on the
  // host by the executor (which runs merges itself).
  RegisterKernelForAllTypes<ForwardKernel>("merge", device, {.outputs = {1}});
  RegisterKernelForAllTypes<SwitchKernel>("switch", device, {.inputs = {1}});
  // The loop's condition: read on the host by its switches, and sent to
  // the other devices that run the loop.
  RegisterKernel<ForwardKernel>("loop_cond", device, DType::kBool,
                                {.inputs = {0}, .outputs = {0}});
  RegisterKernelForAllTypes<NoOpKernel>("control_trigger", device);
  // A stack holds tensor handles wherever they live; its handle and the
  // index of a push or pop are read on the host.
  RegisterKernelForAllTypes<StackNewKernel>("stack_new", device,
                                            {.outputs = {0}});
  RegisterKernelForAllTypes<StackPushKernel>("stack_push", device,
                                             {.inputs = {0, 1}});
  RegisterKernelForAllTypes<StackPopKernel>("stack_pop", device,
                                            {.inputs = {0, 1}});
  // A loop's checkpoint interval and split, from its trip count, on the
  // host.
  RegisterKernel<RecomputePlanKernel>("recompute_plan", device, DType::kI32,
                                      {.inputs = {0}, .outputs = {0, 1}});
}
}  // namespace runnel
