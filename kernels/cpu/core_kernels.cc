// Kernels of the structural ops (framework/ops/core_ops.cc).
#include <cmath>
#include <cstdio>

#include "base/strings.h"
#include "framework/kernel.h"
#include "kernels/common/array_util.h"

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

// check_numerics: x, unless it holds a NaN or an infinity.
template <typename T>
class CheckNumericsKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(message_, node.attr<std::string>("message"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const T* p = x.data<T>();
    int64_t nans = 0, infs = 0, first = -1;
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const double v = ToDouble(p[i]);
      if (std::isfinite(v)) continue;
      (std::isnan(v) ? nans : infs) += 1;
      if (first < 0) first = i;
    }
    if (first >= 0) {
      return absl::InvalidArgumentError(StrCat(
          "check_numerics: ", message_, message_.empty() ? "" : ": ",
          "found NaN/Inf in ", DTypeName(x.dtype()), x.shape().ToString(), " (",
          nans, " NaN, ", infs, " Inf; the first at element ", first, ")"));
    }
    return ctx->set_output(0, x);
  }

 private:
  std::string message_;
};

// debug_print: x, printed to stderr after `message`.
class DebugPrintKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(message_, node.attr<std::string>("message"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    // One write, so concurrent prints do not interleave within a line.
    const std::string line =
        StrCat(message_, message_.empty() ? "" : " ", x.DebugString(), "\n");
    std::fwrite(line.data(), 1, line.size(), stderr);
    return ctx->set_output(0, x);
  }

 private:
  std::string message_;
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
    if (index_ < static_cast<int64_t>(ctx->call_frame()->fetched.size()))
      ctx->call_frame()->fetched[index_] = true;
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  int64_t index_ = 0;
};

// _send and _recv run inside the executor, which passes their values
// through the step's rendezvous; their kernels only say so elsewhere.
class TransferKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    return absl::FailedPreconditionError(
        StrCat(ctx->node().op(), " runs only in a partitioned step"));
  }
  bool IsExpensive() const override { return false; }
};

RUNNEL_STATIC_INIT(CoreKernels) {
  RegisterKernelForAllTypes<ConstKernel>("const");
  RegisterKernelForAllTypes<PlaceholderKernel>("placeholder");
  RegisterKernelForAllTypes<ForwardKernel>("placeholder_with_default");
  RegisterKernelForAllTypes<ForwardKernel>("identity");
  RegisterKernelForAllTypes<ForwardKernel>("stop_gradient");
  RegisterKernelForTypes<CheckNumericsKernel, Half, BFloat16, float, double>(
      "check_numerics");
  RegisterKernelForAllTypes<DebugPrintKernel>("debug_print");
  RegisterKernelForAllTypes<NoOpKernel>("noop");
  RegisterKernelForAllTypes<FeedKernel>("_feed");
  RegisterKernelForAllTypes<FetchKernel>("_fetch");
  RegisterKernelForAllTypes<TransferKernel>("_send");
  RegisterKernelForAllTypes<TransferKernel>("_recv");
  // These touch no tensor's memory, so they serve a GPU as they are
  // (kernels/cuda has its own const, which copies the value there).
  for (const char* op : {"identity", "stop_gradient"}) {
    RegisterKernelForAllTypes<ForwardKernel>(op, kDeviceGpu);
  }
  RegisterKernelForAllTypes<NoOpKernel>("noop", kDeviceGpu);
  RegisterKernelForAllTypes<TransferKernel>("_send", kDeviceGpu);
  RegisterKernelForAllTypes<TransferKernel>("_recv", kDeviceGpu);
}

}  // namespace
}  // namespace runnel
