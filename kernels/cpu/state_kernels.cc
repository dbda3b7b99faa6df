// Kernels of the variable ops (framework/ops/state_ops.cc).
#include <cstring>
#include <type_traits>

#include "base/strings.h"
#include "framework/kernel.h"
#include "kernels/common/variable_util.h"
#include "kernels/cpu/eigen_types.h"

namespace runnel {
namespace {

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
    RN_RETURN_IF_ERROR(var->Assign(value, ctx->device(), ctx->write_key()));
    return ctx->set_output(0, std::move(value));
  }
};

class ReadVariableKernel : public AssignBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto var, FindVariable(ctx, var_));
    RN_ASSIGN_OR_RETURN(Tensor value, var->Read());
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
        var->Update(
            [&](const Tensor& old) -> absl::StatusOr<Tensor> {
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
            },
            ctx->write_key()));
    return ctx->set_output(0, std::move(next));
  }
};

template <typename T>
using AssignAdd = AssignAddKernel<T, 1>;
template <typename T>
using AssignSub = AssignAddKernel<T, -1>;

enum class Scatter { kAdd, kSub, kUpdate };

// scatter_add/sub/update: rows indices[j] of the variable combined with
// updates[j], in order of j, in place (Variable::Mutate copies first when a
// reader holds the value), so a step costs the rows it touches, not the
// table.
template <typename T, Scatter kOp>
class ScatterKernel : public AssignBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto var, FindVariable(ctx, var_));
    const Tensor& indices = ctx->input(1);
    const Tensor& updates = ctx->input(2);
    const std::vector<int64_t> idx = indices.ToInt64s();
    const std::string& op = ctx->node().op();
    // Checked before anything is written: a failure leaves the value as it
    // was.
    Shape shape;
    {
      RN_ASSIGN_OR_RETURN(Tensor current, var->Read());
      shape = current.shape();
    }
    // Input 0 is the variable's value as the variable node read it; as a
    // reader of the buffer it would make Mutate copy the whole table. This
    // kernel never reads it: drop it. (The read above is dropped too.)
    ctx->release_input(0);
    RN_RETURN_IF_ERROR(
        CheckScatter(op, shape, indices.shape(), idx, updates.shape()));
    const int64_t rows = shape.dim(0);
    RN_ASSIGN_OR_RETURN(
        Tensor next,
        var->Mutate(
            [&](Tensor* value) -> absl::Status {
              const int64_t row = rows == 0 ? 0 : value->num_elements() / rows;
              const T* u = updates.data<T>();
              T* o = value->data<T>();
              for (size_t j = 0; j < idx.size(); ++j) {
                T* dst = o + idx[j] * row;
                const T* src = u + j * row;
                if constexpr (kOp == Scatter::kUpdate) {
                  std::memcpy(dst, src, row * sizeof(T));
                } else {
                  using E = EigenType<T>;
                  using A = AccumType<T>;
                  auto* d = reinterpret_cast<E*>(dst);
                  const auto* s = reinterpret_cast<const E*>(src);
                  for (int64_t k = 0; k < row; ++k) {
                    const A a = static_cast<A>(d[k]), b = static_cast<A>(s[k]);
                    d[k] = static_cast<E>(kOp == Scatter::kAdd ? a + b : a - b);
                  }
                }
              }
              return absl::OkStatus();
            },
            /*copy=*/nullptr, ctx->write_key()));
    return ctx->set_output(0, std::move(next));
  }
};

template <typename T>
using ScatterAdd = ScatterKernel<T, Scatter::kAdd>;
template <typename T>
using ScatterSub = ScatterKernel<T, Scatter::kSub>;
template <typename T>
using ScatterUpdate = ScatterKernel<T, Scatter::kUpdate>;

RUNNEL_STATIC_INIT(StateKernels) {
  RegisterKernelForAllTypes<VariableKernel>("variable");
  RegisterKernelForAllTypes<ReadVariableKernel>("read_variable");
  RegisterKernelForAllTypes<AssignKernel>("assign");
  RegisterKernelForTypes<AssignAdd, float, double, int8_t, uint8_t, int32_t,
                         int64_t>("assign_add");
  RegisterKernelForTypes<AssignSub, float, double, int8_t, uint8_t, int32_t,
                         int64_t>("assign_sub");
  RegisterKernelForTypes<ScatterAdd, Half, BFloat16, float, double, int8_t,
                         uint8_t, int32_t, int64_t>("scatter_add");
  RegisterKernelForTypes<ScatterSub, Half, BFloat16, float, double, int8_t,
                         uint8_t, int32_t, int64_t>("scatter_sub");
  RegisterKernelForTypes<ScatterUpdate, Half, BFloat16, float, double, int8_t,
                         uint8_t, int32_t, int64_t, bool>("scatter_update");
}

}  // namespace
}  // namespace runnel
