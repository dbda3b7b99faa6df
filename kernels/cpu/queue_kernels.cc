// Kernels of the queue ops (framework/ops/queue_ops.cc) on the Queue
// resource of framework/queue.h. Enqueues and dequeues are asynchronous: a
// full or empty queue keeps their `done` and no executor thread, and the
// run's CancellationManager ends the wait when the run aborts.
#include <memory>
#include <string>

#include "base/random.h"
#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/queue.h"

namespace runnel {
namespace {

// The queue named by the node's `queue` attribute. The `queue` node, which
// every other op on it takes as input 0 and so follows, makes it.
absl::StatusOr<std::shared_ptr<Queue>> QueueOf(OpKernelContext* ctx) {
  RN_ASSIGN_OR_RETURN(std::string name, ctx->node().attr<std::string>("queue"));
  std::shared_ptr<Queue> q = ctx->resources()->Lookup<Queue>(name);
  if (q == nullptr) {
    return absl::FailedPreconditionError(
        StrCat("there is no queue '", name, "' on this device"));
  }
  return q;
}

// Makes the queue from the node's attributes, or finds it: in a cluster,
// every worker's script declares the queue it shares on a ps task.
class QueueKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Node& node = ctx->node();
    RN_ASSIGN_OR_RETURN(std::string name, node.attr<std::string>("queue"));
    RN_ASSIGN_OR_RETURN(QueueComponents components,
                        GetQueueComponents(node.attrs()));
    Queue::Options options{.dtypes = components.dtypes,
                           .shapes = components.shapes};
    RN_ASSIGN_OR_RETURN(options.capacity, node.attr<int64_t>("capacity"));
    RN_ASSIGN_OR_RETURN(options.shuffle, node.attr<bool>("shuffle"));
    RN_ASSIGN_OR_RETURN(options.min_after_dequeue,
                        node.attr<int64_t>("min_after_dequeue"));
    RN_ASSIGN_OR_RETURN(int64_t seed, node.attr<int64_t>("seed"));
    options.seed = EffectiveSeed(ctx->global_seed(), seed, name);
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Queue> q,
                        ctx->resources()->LookupOrCreate<Queue>(name, [&] {
                          return std::make_shared<Queue>(name, options);
                        }));
    if (q->options().dtypes != options.dtypes ||
        q->options().shapes != options.shapes ||
        q->options().capacity != options.capacity ||
        q->options().shuffle != options.shuffle) {
      return absl::InvalidArgumentError(
          StrCat("queue '", name,
                 "' already exists with other components or capacity (two "
                 "scripts declare it differently)"));
    }
    return ctx->set_output(0, Tensor::Scalar<int64_t>(0));
  }
  bool IsExpensive() const override { return false; }
};

// The op's name before its message, as kernels' errors read.
absl::Status Named(const OpKernelContext* ctx, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), StrCat(ctx->node().op(), ": ", s.message()));
}

class EnqueueKernel : public AsyncOpKernel {
 public:
  explicit EnqueueKernel(bool many) : many_(many) {}
  void ComputeAsync(OpKernelContext* ctx, Done done) override {
    absl::StatusOr<std::shared_ptr<Queue>> q = QueueOf(ctx);
    if (!q.ok()) return done(q.status());
    Queue::Tuple tuple;
    for (int i = 1; i < ctx->num_inputs(); ++i) tuple.push_back(ctx->input(i));
    (*q)->Enqueue(std::move(tuple), many_, ctx->cancellation(),
                  [ctx, done](const absl::Status& s) { done(Named(ctx, s)); });
  }

 private:
  const bool many_;
};

class DequeueKernel : public AsyncOpKernel {
 public:
  explicit DequeueKernel(bool many) : many_(many) {}
  void ComputeAsync(OpKernelContext* ctx, Done done) override {
    absl::StatusOr<std::shared_ptr<Queue>> q = QueueOf(ctx);
    if (!q.ok()) return done(q.status());
    int64_t n = 1;
    if (many_) {
      absl::StatusOr<int64_t> asked = ctx->input(1).ScalarAsInt();
      if (!asked.ok()) return done(asked.status());
      n = *asked;
    }
    (*q)->Dequeue(n, many_, ctx->cancellation(),
                  [ctx, done](const absl::Status& s, Queue::Tuple tuple) {
                    absl::Status out = Named(ctx, s);
                    for (size_t i = 0; out.ok() && i < tuple.size(); ++i) {
                      out = ctx->set_output(static_cast<int>(i),
                                            std::move(tuple[i]));
                    }
                    done(out);
                  });
  }

 private:
  const bool many_;
};

class QueueSizeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Queue> q, QueueOf(ctx));
    return ctx->set_output(
        0, Tensor::Scalar<int32_t>(static_cast<int32_t>(q->size())));
  }
  bool IsExpensive() const override { return false; }
};

class QueueCloseKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Queue> q, QueueOf(ctx));
    RN_ASSIGN_OR_RETURN(bool cancel,
                        ctx->node().attr<bool>("cancel_pending_enqueues"));
    q->Close(cancel);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

template <bool kMany>
class Enqueue : public EnqueueKernel {
 public:
  Enqueue() : EnqueueKernel(kMany) {}
};
template <bool kMany>
class Dequeue : public DequeueKernel {
 public:
  Dequeue() : DequeueKernel(kMany) {}
};

RUNNEL_STATIC_INIT(QueueKernels) {
  RegisterKernelForAllTypes<QueueKernel>("queue");
  RegisterKernel<Enqueue<false>>("enqueue", kDeviceCpu, DType::kI64);
  RegisterKernel<Enqueue<true>>("enqueue_many", kDeviceCpu, DType::kI64);
  RegisterKernel<Dequeue<false>>("dequeue", kDeviceCpu, DType::kI64);
  RegisterKernel<Dequeue<true>>("dequeue_many", kDeviceCpu, DType::kI64);
  RegisterKernel<QueueSizeKernel>("queue_size", kDeviceCpu, DType::kI64);
  RegisterKernel<QueueCloseKernel>("queue_close", kDeviceCpu, DType::kI64);
}

}  // namespace
}  // namespace runnel
