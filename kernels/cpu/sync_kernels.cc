// Kernels of the synchronous-replica ops (framework/ops/sync_ops.cc): a
// gradient accumulator per variable and a barrier per optimizer, both
// resources of the task that holds the variable (or global_step).
#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/live_workers.h"
#include "framework/sync_barrier.h"

namespace runnel {
namespace {

// The sum and count of one step's gradients.
class Accumulator : public Resource {
 public:
  std::mutex mu;
  int64_t step = -1;
  int count = 0;
  Tensor sum;
};

// The variable feeding `ref`, or (inside a branch, where `ref` comes
// through a switch) the one attribute `var` names.
std::string VariableName(const Node& node) {
  if (node.attrs().contains("var")) return *node.attr<std::string>("var");
  return node.input(0).node != nullptr ? node.input(0).node->name() : "";
}

absl::StatusOr<std::shared_ptr<Accumulator>> AccumulatorOf(
    OpKernelContext* ctx) {
  return ctx->resources()->LookupOrCreate<Accumulator>(
      VariableName(ctx->node()) + "/sync_accumulator",
      [] { return std::make_shared<Accumulator>(); });
}

// One barrier per step counter (each synchronous optimizer has its own).
absl::StatusOr<std::shared_ptr<SyncBarrier>> BarrierOf(OpKernelContext* ctx) {
  const std::string name = VariableName(ctx->node());
  ResourceMgr* rm = ctx->resources();
  // (Looked up first: LookupOrCreate holds the manager's lock while making.)
  std::shared_ptr<LiveWorkers> live =
      rm->Lookup<LiveWorkers>(LiveWorkers::kName);
  return rm->LookupOrCreate<SyncBarrier>(
      "_sync_barrier/" + name, [&] { return SyncBarrier::Create(live); });
}

template <typename T>
class AccumulateKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Accumulator> acc, AccumulatorOf(ctx));
    const Tensor& grad = ctx->input(1);
    const int64_t step = ctx->input(2).data<int64_t>()[0];
    RN_ASSIGN_OR_RETURN(int64_t replicas,
                        ctx->node().attr<int64_t>("replicas"));
    bool accepted = true;
    {
      std::lock_guard<std::mutex> lock(acc->mu);
      // Stale, or a step that already has its M (a backup's, late).
      if (step < acc->step ||
          (step == acc->step && acc->count > 0 && acc->count >= replicas)) {
        accepted = false;
      } else if (step > acc->step || acc->count == 0) {
        acc->step = step;
        acc->count = 1;
        acc->sum = grad.Clone();
      } else {
        if (acc->sum.shape() != grad.shape()) {
          return absl::InvalidArgumentError(StrCat(
              "a gradient ", grad.shape().ToString(),
              " does not match the others ", acc->sum.shape().ToString()));
        }
        T* s = acc->sum.data<T>();
        const T* g = grad.data<T>();
        for (int64_t i = 0; i < grad.num_elements(); ++i) s[i] += g[i];
        ++acc->count;
      }
    }
    return ctx->set_output(0, Tensor::Scalar<bool>(accepted));
  }
  bool IsExpensive() const override { return false; }
};

template <typename T>
class TakeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Accumulator> acc, AccumulatorOf(ctx));
    const Tensor& like = ctx->input(0);
    const int64_t step = ctx->input(1).data<int64_t>()[0];
    Tensor mean(like.dtype(), like.shape(), ctx->device()->allocator());
    T* m = mean.data<T>();
    {
      std::lock_guard<std::mutex> lock(acc->mu);
      if (acc->step != step || acc->count == 0) {
        return absl::InternalError(
            StrCat("no gradients were accumulated for step ", step, " of '",
                   VariableName(ctx->node()), "'"));
      }
      const T* s = acc->sum.data<T>();
      const T n = static_cast<T>(acc->count);
      for (int64_t i = 0; i < mean.num_elements(); ++i) m[i] = s[i] / n;
      // The sum stays (the next step's first gradient replaces it): if
      // this applier dies before the step ends, the next one takes it
      // again (framework/sync_barrier.h). Late gradients of this step are
      // still refused once it holds `replicas`.
    }
    return ctx->set_output(0, std::move(mean));
  }
};

class BarrierKernel : public AsyncOpKernel {
 public:
  void ComputeAsync(OpKernelContext* ctx, Done done) override {
    absl::StatusOr<std::shared_ptr<SyncBarrier>> barrier = BarrierOf(ctx);
    absl::StatusOr<int64_t> replicas = ctx->node().attr<int64_t>("replicas");
    if (!barrier.ok() || !replicas.ok()) {
      done(!barrier.ok() ? barrier.status() : replicas.status());
      return;
    }
    const int64_t step = ctx->input(1).data<int64_t>()[0];
    (*barrier)->Arrive(
        step, *replicas, ctx->cancellation(), [ctx, done](bool applier) {
          done(ctx->set_output(0, Tensor::Scalar<bool>(applier)));
        });
  }
};

class AdvanceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<SyncBarrier> barrier, BarrierOf(ctx));
    const int64_t step = ctx->input(1).data<int64_t>()[0];
    barrier->Advance(step);
    return ctx->set_output(0, Tensor::Scalar<int64_t>(step + 1));
  }
  bool IsExpensive() const override { return false; }
};

class HoldKernel : public AsyncOpKernel {
 public:
  void ComputeAsync(OpKernelContext* ctx, Done done) override {
    absl::StatusOr<std::shared_ptr<SyncBarrier>> barrier = BarrierOf(ctx);
    if (!barrier.ok()) {
      done(barrier.status());
      return;
    }
    (*barrier)->Hold(ctx->cancellation(), [ctx, done] {
      done(ctx->set_output(0, Tensor::Scalar<int64_t>(0)));
    });
  }
};

class ReleaseKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<SyncBarrier> barrier, BarrierOf(ctx));
    barrier->Release(ctx->cancellation());
    return ctx->set_output(0, Tensor::Scalar<int64_t>(0));
  }
  bool IsExpensive() const override { return false; }
};

RUNNEL_STATIC_INIT(SyncKernels) {
  RegisterKernelForTypes<AccumulateKernel, float, double>("sync_accumulate");
  RegisterKernelForTypes<TakeKernel, float, double>("sync_take");
  RegisterKernel<BarrierKernel>("sync_barrier", kDeviceCpu, DType::kI64);
  RegisterKernel<AdvanceKernel>("sync_advance", kDeviceCpu, DType::kI64);
  RegisterKernel<HoldKernel>("sync_hold", kDeviceCpu, DType::kI64);
  RegisterKernel<ReleaseKernel>("sync_release", kDeviceCpu, DType::kI64);
}

}  // namespace
}  // namespace runnel
