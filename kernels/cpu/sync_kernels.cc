// Kernels of the synchronous-replica ops (runtime/ops/sync_ops.cc): a
// gradient accumulator per variable and a barrier per optimizer, both
// resources of the task that holds the variable (or global_step).
#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/live_workers.h"
#include "runtime/strings.h"

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

// Workers meeting for a step (see sync_barrier's doc).
class Barrier : public Resource {
 public:
  using Done = std::function<void(bool applier)>;

  explicit Barrier(std::shared_ptr<LiveWorkers> live) : live_(std::move(live)) {
    if (live_ != nullptr) {
      subscription_ = live_->Subscribe([this] { Evaluate(); });
    }
  }
  ~Barrier() override {
    if (live_ != nullptr) live_->Unsubscribe(subscription_);
  }

  void Arrive(int64_t step, int64_t replicas, Done done) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (step < step_) {
        stale_.push_back(std::move(done));
      } else if (step == step_ && applying_) {
        // Too late for this step, but the update is under way: go on
        // once it is done, so the next step reads the new values.
        waiting_.push_back(std::move(done));
      } else {
        if (step > step_) {  // restored, or the first arrival
          step_ = step;
          arrived_ = 0;
        }
        replicas_ = replicas;
        ++arrived_;
        waiting_.push_back(std::move(done));
      }
    }
    Evaluate();
  }

  // Ends `step`: every worker waiting for it goes on.
  void Advance(int64_t step) {
    std::vector<Done> go;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (step != step_) return;
      step_ = step + 1;
      arrived_ = 0;
      applying_ = false;
      go.swap(waiting_);
    }
    for (Done& d : go) d(false);
  }

 private:
  // Completes stale arrivals, and picks the applier once enough arrived.
  void Evaluate() {
    std::vector<Done> stale;
    Done applier;
    const int live = live_ != nullptr ? live_->Count() : 1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stale.swap(stale_);
      const int64_t needed =
          std::max<int64_t>(1, std::min<int64_t>(replicas_, live));
      if (!applying_ && !waiting_.empty() && arrived_ >= needed) {
        applying_ = true;
        applier = std::move(waiting_.back());
        waiting_.pop_back();
      }
    }
    for (Done& d : stale) d(false);
    if (applier) applier(true);
  }

  std::shared_ptr<LiveWorkers> live_;
  int subscription_ = 0;
  std::mutex mu_;
  int64_t step_ = -1;
  int64_t replicas_ = 1;
  int64_t arrived_ = 0;
  bool applying_ = false;
  std::vector<Done> waiting_, stale_;
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
absl::StatusOr<std::shared_ptr<Barrier>> BarrierOf(OpKernelContext* ctx) {
  const std::string name = VariableName(ctx->node());
  ResourceMgr* rm = ctx->resources();
  // (Looked up first: LookupOrCreate holds the manager's lock while making.)
  std::shared_ptr<LiveWorkers> live =
      rm->Lookup<LiveWorkers>(LiveWorkers::kName);
  return rm->LookupOrCreate<Barrier>(
      "_sync_barrier/" + name, [&] { return std::make_shared<Barrier>(live); });
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
      acc->step = step + 1;
      acc->count = 0;
      acc->sum = Tensor();
    }
    return ctx->set_output(0, std::move(mean));
  }
};

class BarrierKernel : public AsyncOpKernel {
 public:
  void ComputeAsync(OpKernelContext* ctx, Done done) override {
    absl::StatusOr<std::shared_ptr<Barrier>> barrier = BarrierOf(ctx);
    absl::StatusOr<int64_t> replicas = ctx->node().attr<int64_t>("replicas");
    if (!barrier.ok() || !replicas.ok()) {
      done(!barrier.ok() ? barrier.status() : replicas.status());
      return;
    }
    const int64_t step = ctx->input(1).data<int64_t>()[0];
    (*barrier)->Arrive(step, *replicas, [ctx, done](bool applier) {
      done(ctx->set_output(0, Tensor::Scalar<bool>(applier)));
    });
  }
};

class AdvanceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Barrier> barrier, BarrierOf(ctx));
    const int64_t step = ctx->input(1).data<int64_t>()[0];
    barrier->Advance(step);
    return ctx->set_output(0, Tensor::Scalar<int64_t>(step + 1));
  }
  bool IsExpensive() const override { return false; }
};

RUNNEL_STATIC_INIT(SyncKernels) {
  RegisterKernelForTypes<AccumulateKernel, float, double>("sync_accumulate");
  RegisterKernelForTypes<TakeKernel, float, double>("sync_take");
  RegisterKernel<BarrierKernel>("sync_barrier", kDeviceCpu, DType::kI64);
  RegisterKernel<AdvanceKernel>("sync_advance", kDeviceCpu, DType::kI64);
}

}  // namespace
}  // namespace runnel
