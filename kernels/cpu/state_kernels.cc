// Kernels of the variable ops (runtime/ops/state_ops.cc).
#include "runtime/kernel.h"
#include "runtime/strings.h"

namespace runnel {
namespace {

absl::StatusOr<std::shared_ptr<Variable>> FindVariable(
    OpKernelContext* ctx, const std::string& name) {
  std::shared_ptr<Variable> v = ctx->resources()->Lookup<Variable>(name);
  if (v == nullptr || !v->initialized()) {
    return absl::FailedPreconditionError(
        StrCat("variable '", name, "' is not initialized"));
  }
  return v;
}

class VariableKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto var, FindVariable(ctx, ctx->node().name()));
    RN_ASSIGN_OR_RETURN(Tensor value, var->Read());
    return ctx->set_output(0, std::move(value));
  }
  bool IsExpensive() const override { return false; }
};

// The variable an assign op updates: the node feeding input 0, or `var`.
class AssignBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    var_ = node.attrs().contains("var")
               ? *node.attr<std::string>("var")
               : (node.input(0).node ? node.input(0).node->name() : "");
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 protected:
  std::string var_;
};

class AssignKernel : public AssignBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto var, FindVariable(ctx, var_));
    // The new value gets its own buffer: readers of the old one keep it.
    Tensor value = ctx->input(1).Clone();
    RN_RETURN_IF_ERROR(var->Assign(value));
    return ctx->set_output(0, std::move(value));
  }
};

template <typename T, int kSign>
class AssignAddKernel : public AssignBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto var, FindVariable(ctx, var_));
    const Tensor& delta = ctx->input(1);
    RN_ASSIGN_OR_RETURN(
        Tensor next,
        var->Update([&](const Tensor& old) -> absl::StatusOr<Tensor> {
          if (old.shape() != delta.shape()) {
            return absl::InvalidArgumentError(StrCat(
                "delta ", delta.shape().ToString(),
                " does not match the variable ", old.shape().ToString()));
          }
          Tensor out(old.dtype(), old.shape(), ctx->device()->allocator());
          const T* a = old.data<T>();
          const T* d = delta.data<T>();
          T* o = out.data<T>();
          for (int64_t i = 0; i < out.num_elements(); ++i) {
            o[i] = kSign > 0 ? T(a[i] + d[i]) : T(a[i] - d[i]);
          }
          return out;
        }));
    return ctx->set_output(0, std::move(next));
  }
};

template <typename T>
using AssignAdd = AssignAddKernel<T, 1>;
template <typename T>
using AssignSub = AssignAddKernel<T, -1>;

RUNNEL_STATIC_INIT(StateKernels) {
  RegisterKernelForAllTypes<VariableKernel>("variable");
  RegisterKernelForAllTypes<AssignKernel>("assign");
  RegisterKernelForTypes<AssignAdd, float, double, int8_t, uint8_t, int32_t,
                         int64_t>("assign_add");
  RegisterKernelForTypes<AssignSub, float, double, int8_t, uint8_t, int32_t,
                         int64_t>("assign_sub");
}

}  // namespace
}  // namespace runnel
