// Kernels of the structural ops (runtime/ops/core_ops.cc).
#include "runtime/kernel.h"
#include "runtime/strings.h"

namespace runnel {
namespace {

class ConstKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(value_, node.attr<Tensor>("value"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    return ctx->set_output(0, value_);
  }
  bool IsExpensive() const override { return false; }

 private:
  Tensor value_;
};

class PlaceholderKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    return absl::InvalidArgumentError(
        StrCat("missing feed for input '", ctx->node().name(), "'"));
  }
};

// identity, placeholder_with_default: output = input 0, sharing the buffer.
class ForwardKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    return ctx->set_output(0, ctx->input(0));
  }
  bool IsExpensive() const override { return false; }
};

class NoOpKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext*) override { return absl::OkStatus(); }
  bool IsExpensive() const override { return false; }
};

class FeedKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(index_, node.attr<int64_t>("index"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->call_frame()->feeds[index_];
    if (t.dtype() != ctx->output_dtype(0) ||
        !ctx->node().output_shape(0).IsCompatibleWith(t.shape())) {
      return absl::InvalidArgumentError(
          StrCat("fed value ", DTypeName(t.dtype()), t.shape().ToString(),
                 " does not match ", ctx->node().output(0).ToString()));
    }
    return ctx->set_output(0, t);
  }
  bool IsExpensive() const override { return false; }

 private:
  int64_t index_ = 0;
};

class FetchKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(index_, node.attr<int64_t>("index"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    ctx->call_frame()->fetches[index_] = ctx->input(0);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  int64_t index_ = 0;
};

RUNNEL_STATIC_INIT(CoreKernels) {
  RegisterKernelForAllTypes<ConstKernel>("const");
  RegisterKernelForAllTypes<PlaceholderKernel>("placeholder");
  RegisterKernelForAllTypes<ForwardKernel>("placeholder_with_default");
  RegisterKernelForAllTypes<ForwardKernel>("identity");
  RegisterKernelForAllTypes<NoOpKernel>("noop");
  RegisterKernelForAllTypes<FeedKernel>("_feed");
  RegisterKernelForAllTypes<FetchKernel>("_fetch");
}

}  // namespace
}  // namespace runnel
