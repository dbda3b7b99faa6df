#include "tests/util/test_ops.h"

#include <gtest/gtest.h>

#include <climits>

#include "framework/kernel.h"
#include "framework/shape_fns.h"

namespace runnel::testing {

std::atomic<int> g_in_flight{0};
std::atomic<int> g_max_in_flight{0};
std::atomic<int> g_runs{0};
std::mutex g_mu;
std::condition_variable g_cv;
int g_wait_for = 1;
int g_started = 0;
int g_hold_after = INT_MAX;
bool g_released = false;

void ResetCounters(int wait_for) {
  std::lock_guard<std::mutex> l(g_mu);
  g_in_flight = 0;
  g_max_in_flight = 0;
  g_runs = 0;
  g_wait_for = wait_for;
  g_started = 0;
  g_hold_after = INT_MAX;
  g_released = false;
}

namespace {

// test_wait(x): returns x once g_wait_for kernels are in flight together
// (and, past g_hold_after, once released); records overlap.
class WaitKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    {
      std::unique_lock<std::mutex> l(g_mu);
      const int now = ++g_in_flight;
      if (now > g_max_in_flight) g_max_in_flight = now;
      const bool hold = ++g_started > g_hold_after;
      g_cv.notify_all();
      g_cv.wait_for(l, kDeadline,
                    [] { return g_max_in_flight.load() >= g_wait_for; });
      if (hold) g_cv.wait_for(l, kDeadline, [] { return g_released; });
      --g_in_flight;
      ++g_runs;
      g_cv.notify_all();
    }
    return ctx->set_output(0, ctx->input(0));
  }
  bool IsExpensive() const override { return true; }
};

// test_sum(xs...): element-wise f32 sum of its inputs.
class SumKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Tensor * out,
                        ctx->allocate_output(0, ctx->input(0).shape()));
    for (int64_t i = 0; i < out->num_elements(); ++i) {
      float s = 0;
      for (int k = 0; k < ctx->num_inputs(); ++k)
        s += ctx->input(k).at<float>(i);
      out->data<float>()[i] = s;
    }
    ++g_runs;
    return absl::OkStatus();
  }
};

class FailKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext*) override {
    return absl::InvalidArgumentError("test_fail always fails");
  }
};

RUNNEL_REGISTER_OP(
    OpDefBuilder("test_wait").Inputs({"x"}).Shape(UnchangedShape));
RUNNEL_REGISTER_OP(
    OpDefBuilder("test_sum").Inputs({"xs"}).Variadic().Shape(UnchangedShape));
RUNNEL_REGISTER_OP(
    OpDefBuilder("test_fail").Inputs({"x"}).Shape(UnchangedShape));

RUNNEL_STATIC_INIT(TestOpKernels) {
  RegisterKernel<WaitKernel>("test_wait", kDeviceCpu, DType::kF32);
  RegisterKernel<SumKernel>("test_sum", kDeviceCpu, DType::kF32);
  RegisterKernel<FailKernel>("test_fail", kDeviceCpu, DType::kF32);
}

}  // namespace

Node* Add(Graph& g, const std::string& name, const std::string& op,
          std::vector<NodeOut> inputs, AttrMap attrs, SourceSpan span) {
  NodeSpec spec{.name = name,
                .op = op,
                .inputs = std::move(inputs),
                .attrs = std::move(attrs),
                .span = span};
  absl::StatusOr<Node*> n = g.AddNode(std::move(spec));
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? *n : nullptr;
}

Node* Placeholder(Graph& g, const std::string& name, Shape shape,
                  SourceSpan span) {
  return Add(g, name, "placeholder", {},
             {{"dtype", DType::kF32}, {"shape", std::move(shape)}}, span);
}

NodeOut Const(Graph& g, Tensor t) {
  return {*g.AddConst(std::move(t), g.UniqueName("c")), 0};
}

}  // namespace runnel::testing
