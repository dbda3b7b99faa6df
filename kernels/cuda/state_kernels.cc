// GPU kernels of the variable ops (framework/ops/state_ops.cc; the CPU's:
// kernels/cpu/state_kernels.cc). The variable's value is in the GPU's
// memory: FindVariable moves it there when it is elsewhere (set from the
// host by its initializer or a restore, or used by the CPU in another plan;
// Variable::MoveTo), and updates here keep it there. assign_add/sub run the
// element-wise template (cwise.h) and the scatters state.cu, after the same
// checks on the host as the CPU's, so that bad indices fail with the CPU's
// error.
#include <algorithm>
#include <map>
#include <vector>

#include "base/strings.h"
#include "kernels/common/variable_util.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cwise.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_types.h"
#include "kernels/cuda/state.h"

namespace runnel {

absl::StatusOr<cuda::ElemType> GpuNumberType(DType d, const char* what) {
  if (d != DType::kF32 && d != DType::kF64 && d != DType::kI32 &&
      d != DType::kI64) {
    return absl::UnimplementedError(
        StrCat("no GPU ", what, " kernel for ", DTypeName(d)));
  }
  return GpuElemType(d);
}

absl::StatusOr<Tensor> CopyOnGpu(GpuContext& gpu, const Tensor& t) {
  RN_RETURN_IF_ERROR(gpu.Activate());
  Tensor out(t.dtype(), t.shape(), gpu.allocator());
  if (t.bytes() > 0) {
    RN_CUDA(cudaMemcpyAsync(out.raw_data(), t.raw_data(), t.bytes(),
                            cudaMemcpyDeviceToDevice, gpu.compute()));
  }
  return out;
}

namespace {

class GpuVariableKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    // `variable` names its resource; the others name it like assign.
    if (node.op() == "variable") {
      name_ = node.name();
      return absl::OkStatus();
    }
    RN_ASSIGN_OR_RETURN(std::vector<std::string> names, VariablesOf(node));
    name_ = names[0];
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Variable> var,
                        FindVariable(ctx, name_));
    RN_ASSIGN_OR_RETURN(Tensor value, var->Read());
    return ctx->set_output(0, std::move(value));
  }
  bool IsExpensive() const override { return false; }

 protected:
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// assign: the new value gets its own buffer, so readers of the old one (and
// of input 1) keep theirs.
class GpuAssignKernel : public GpuVariableKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Variable> var,
                        FindVariable(ctx, name()));
    RN_ASSIGN_OR_RETURN(Tensor value,
                        CopyOnGpu(GpuContextOf(ctx), ctx->input(1)));
    RN_RETURN_IF_ERROR(var->Assign(value, ctx->device(), ctx->write_key()));
    return ctx->set_output(0, std::move(value));
  }
};

template <cuda::BinaryOp kOp>
class GpuAssignAddKernel : public GpuVariableKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Variable> var,
                        FindVariable(ctx, name()));
    const Tensor& delta = ctx->input(1);
    GpuContext& gpu = GpuContextOf(ctx);
    RN_ASSIGN_OR_RETURN(cuda::ElemType type,
                        GpuNumberType(delta.dtype(), "variable"));
    RN_ASSIGN_OR_RETURN(
        Tensor next,
        var->Update(
            [&](const Tensor& value) -> absl::StatusOr<Tensor> {
              if (value.shape() != delta.shape()) {
                return absl::InvalidArgumentError(StrCat(
                    "delta ", delta.shape().ToString(),
                    " does not match the variable ", value.shape().ToString()));
              }
              Tensor out(value.dtype(), value.shape(), gpu.allocator());
              RN_RETURN_IF_ERROR(gpu.Activate());
              RN_CUDA(cuda::LaunchBinary(
                  kOp, type, value.raw_data(), delta.raw_data(), out.raw_data(),
                  out.num_elements(), nullptr, gpu.compute()));
              return out;
            },
            ctx->write_key()));
    return ctx->set_output(0, std::move(next));
  }
};

// The update rows grouped by destination row, in order (state.h), as
// three i64 tensors in host memory: rows, offsets (one more) and order.
struct ScatterPlan {
  Tensor rows, offsets, order;
};
ScatterPlan PlanScatter(const std::vector<int64_t>& idx) {
  std::map<int64_t, std::vector<int64_t>> by_row;
  for (size_t j = 0; j < idx.size(); ++j) {
    by_row[idx[j]].push_back(static_cast<int64_t>(j));
  }
  std::vector<int64_t> rows, offsets = {0}, order;
  for (const auto& [row, js] : by_row) {
    rows.push_back(row);
    order.insert(order.end(), js.begin(), js.end());
    offsets.push_back(static_cast<int64_t>(order.size()));
  }
  return {Tensor::FromVector(rows), Tensor::FromVector(offsets),
          Tensor::FromVector(order)};
}

// scatter_add/sub/update in place (Variable::Mutate, copying on the GPU
// when a reader holds the value). The indices are read on the host (one
// copy out of the GPU) for the CPU's checks and the grouping.
template <cuda::ScatterOp kOp>
class GpuScatterKernel : public GpuVariableKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Variable> var,
                        FindVariable(ctx, name()));
    GpuContext& gpu = GpuContextOf(ctx);
    const Tensor& updates = ctx->input(2);
    RN_ASSIGN_OR_RETURN(cuda::ElemType type,
                        GpuNumberType(updates.dtype(), "scatter"));
    RN_ASSIGN_OR_RETURN(Tensor indices, gpu.ToHost(ctx->input(1)));
    const std::vector<int64_t> idx = indices.ToInt64s();
    Shape shape;
    {
      RN_ASSIGN_OR_RETURN(Tensor current, var->Read());
      shape = current.shape();
    }
    // As on the CPU: the variable node's read is not a reader to copy for.
    ctx->release_input(0);
    RN_RETURN_IF_ERROR(CheckScatter(ctx->node().op(), shape, indices.shape(),
                                    idx, updates.shape()));
    const ScatterPlan host = PlanScatter(idx);
    RN_ASSIGN_OR_RETURN(Tensor rows, gpu.FromHost(host.rows));
    RN_ASSIGN_OR_RETURN(Tensor offsets, gpu.FromHost(host.offsets));
    RN_ASSIGN_OR_RETURN(Tensor order, gpu.FromHost(host.order));
    const int64_t row =
        shape.num_elements() / std::max<int64_t>(1, shape.dim(0));
    RN_ASSIGN_OR_RETURN(
        Tensor next,
        var->Mutate(
            [&](Tensor* value) -> absl::Status {
              RN_RETURN_IF_ERROR(gpu.Activate());
              RN_CUDA(cuda::LaunchScatter(
                  kOp, type, value->raw_data(), updates.raw_data(), row,
                  rows.data<int64_t>(), offsets.data<int64_t>(),
                  order.data<int64_t>(), host.rows.num_elements(),
                  gpu.compute()));
              return absl::OkStatus();
            },
            [&](const Tensor& value) { return CopyOnGpu(gpu, value); },
            ctx->write_key()));
    return ctx->set_output(0, std::move(next));
  }
};

const std::vector<DType> kNumbers = {DType::kF32, DType::kF64, DType::kI32,
                                     DType::kI64};

RUNNEL_STATIC_INIT(GpuStateKernels) {
  // variable, read_variable and assign move bytes only: every dtype.
  RegisterKernelForAllTypes<GpuVariableKernel>("variable", kDeviceGpu);
  RegisterKernelForAllTypes<GpuVariableKernel>("read_variable", kDeviceGpu);
  RegisterKernelForAllTypes<GpuAssignKernel>("assign", kDeviceGpu);
  for (DType d : kNumbers) {
    RegisterKernel<GpuAssignAddKernel<cuda::BinaryOp::kAdd>>("assign_add",
                                                             kDeviceGpu, d);
    RegisterKernel<GpuAssignAddKernel<cuda::BinaryOp::kSub>>("assign_sub",
                                                             kDeviceGpu, d);
    RegisterKernel<GpuScatterKernel<cuda::ScatterOp::kAdd>>("scatter_add",
                                                            kDeviceGpu, d);
    RegisterKernel<GpuScatterKernel<cuda::ScatterOp::kSub>>("scatter_sub",
                                                            kDeviceGpu, d);
    RegisterKernel<GpuScatterKernel<cuda::ScatterOp::kUpdate>>("scatter_update",
                                                               kDeviceGpu, d);
  }
}

}  // namespace
}  // namespace runnel
