// Kernels of the synchronous-replica ops (framework/ops/sync_ops.cc): a
// gradient accumulator per variable and a barrier per optimizer, both
// resources of the task that holds the variable (or global_step). On a
// replicated parameter server both are copied to the backups
// (framework/replicated_state.h), and each run's tag makes a retried run's
// gradient count once, in the step its first attempt took part in.
#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/strings.h"
#include "framework/collectives.h"
#include "framework/graph_def.h"
#include "framework/kernel.h"
#include "framework/live_workers.h"
#include "framework/replicated_state.h"
#include "framework/sync_barrier.h"

namespace runnel {
namespace {

// The sum and count of one step's gradients.
class Accumulator : public ReplicatedState {
 public:
  std::string kind() const override { return "sync_accumulator"; }
  int rank() const override { return 1; }  // after the barriers
  uint64_t version() const override {
    std::lock_guard<std::mutex> lock(mu);
    return changes;
  }
  Saved Save() const override {
    proto::SyncAccumulatorState st;
    Saved saved;
    {
      std::lock_guard<std::mutex> lock(mu);
      st.set_step(step);
      st.set_count(count);
      if (count > 0) *st.mutable_sum() = ToProto(sum);
      runs.SaveTo(st.mutable_run());
      saved.version = changes;
    }
    saved.bytes = st.SerializeAsString();
    return saved;
  }
  absl::Status Load(const std::string& bytes) override {
    proto::SyncAccumulatorState st;
    if (!st.ParseFromString(bytes)) {
      return absl::DataLossError("a malformed copy of a gradient accumulator");
    }
    Tensor value;
    if (st.count() > 0) {
      RN_ASSIGN_OR_RETURN(value, FromProto(st.sum()));
    }
    std::lock_guard<std::mutex> lock(mu);
    step = st.step();
    count = st.count();
    sum = std::move(value);
    runs.LoadFrom(st.run());
    ++changes;
    return absl::OkStatus();
  }

  mutable std::mutex mu;
  int64_t step = -1;
  int count = 0;
  Tensor sum;
  RunSteps runs;         // replicated tasks only
  uint64_t changes = 0;  // the version
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
      bool retry = false;
      if (const UpdateTag* tag = ctx->update(); tag != nullptr) {
        const int64_t first = acc->runs.Resolve(*tag, step, &retry);
        if (!retry) ++acc->changes;  // (a retry changes nothing)
        // A retried run's gradient is in already (or was for a step that
        // has ended): it is not added again, and never to a later step.
        if (retry) accepted = first == acc->step;
      }
      if (retry) {
        // (nothing to add)
      } else if (step < acc->step || (step == acc->step && acc->count > 0 &&
                                      acc->count >= replicas)) {
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
    // (Its partition commits the sum before anything leaves the task:
    // distributed/worker.cc.)
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
    int64_t step = ctx->input(1).data<int64_t>()[0];
    Tensor mean(like.dtype(), like.shape(), ctx->device()->allocator());
    T* m = mean.data<T>();
    {
      std::lock_guard<std::mutex> lock(acc->mu);
      step = acc->runs.StepOf(ctx->update(), step);
      if (acc->step != step || acc->count == 0) {
        return absl::InternalError(
            StrCat("no gradients were accumulated for step ", step, " of '",
                   VariableName(ctx->node()), "' (it holds ", acc->count,
                   " for step ", acc->step, ")"));
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
        step, *replicas, ctx->cancellation(), ctx->update(),
        [ctx, done](bool applier) {
          // On a replicated task the choice of the applier reaches the
          // backups before the applier writes anything (sync_barrier.h).
          if (applier && ctx->update() != nullptr) {
            if (absl::Status s = CommitReplicas(ctx->resources()); !s.ok()) {
              done(s);
              return;
            }
          }
          done(ctx->set_output(0, Tensor::Scalar<bool>(applier)));
        });
  }
};

class AdvanceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<SyncBarrier> barrier, BarrierOf(ctx));
    const int64_t step = ctx->input(1).data<int64_t>()[0];
    barrier->Advance(step, ctx->update());
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

// all_reduce(x): the sum over the workers from the cluster's collectives
// (framework/collectives.h); x itself in a run without a cluster, where
// there is one worker.
class AllReduceKernel : public AsyncOpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(replicas_, node.attr<int64_t>("replicas"));
    RN_ASSIGN_OR_RETURN(group_, node.attr<std::string>("group"));
    if (group_.empty()) group_ = node.name();
    return absl::OkStatus();
  }

  void ComputeAsync(OpKernelContext* ctx, Done done) override {
    std::shared_ptr<Collectives> c =
        ctx->resources()->Lookup<Collectives>(Collectives::kName);
    const int workers = c == nullptr ? 1 : c->num_workers();
    if (c != nullptr && c->worker_index() < 0) {
      done(absl::FailedPreconditionError(
          "all_reduce runs on the workers of a cluster, not on a parameter "
          "server"));
      return;
    }
    if (replicas_ != workers) {
      done(absl::InvalidArgumentError(StrCat(
          "all_reduce over ", replicas_, " workers, but ",
          c == nullptr ? std::string("this run has no cluster (one worker; "
                                     "`runnel cluster` runs several)")
                       : StrCat("the cluster has ", workers, " workers"),
          ": replicas must be the number of workers (an all-reduce has no "
          "backup workers)")));
      return;
    }
    if (c == nullptr) {
      done(ctx->set_output(0, ctx->input(0)));
      return;
    }
    c->AllReduceSum(group_, ctx->input(0),
                    [ctx, done](absl::StatusOr<Tensor> sum) {
                      if (!sum.ok()) {
                        done(sum.status());
                        return;
                      }
                      done(ctx->set_output(0, *std::move(sum)));
                    });
  }

 private:
  int64_t replicas_ = 1;
  std::string group_;
};

RUNNEL_STATIC_INIT(SyncKernels) {
  RegisterKernel<AllReduceKernel>("all_reduce", kDeviceCpu, DType::kF32);
  RegisterKernel<AllReduceKernel>("all_reduce", kDeviceCpu, DType::kF64);
  RegisterReplicatedState("sync_accumulator", [](ResourceMgr*) {
    return std::make_shared<Accumulator>();
  });
  RegisterReplicatedState("sync_barrier", [](ResourceMgr* rm) {
    return SyncBarrier::Create(rm->Lookup<LiveWorkers>(LiveWorkers::kName));
  });
  RegisterKernelForTypes<AccumulateKernel, float, double>("sync_accumulate");
  RegisterKernelForTypes<TakeKernel, float, double>("sync_take");
  RegisterKernel<BarrierKernel>("sync_barrier", kDeviceCpu, DType::kI64);
  RegisterKernel<AdvanceKernel>("sync_advance", kDeviceCpu, DType::kI64);
  RegisterKernel<HoldKernel>("sync_hold", kDeviceCpu, DType::kI64);
  RegisterKernel<ReleaseKernel>("sync_release", kDeviceCpu, DType::kI64);
}

}  // namespace
}  // namespace runnel
