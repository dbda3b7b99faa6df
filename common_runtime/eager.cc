#include "common_runtime/eager.h"

#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/graph.h"
#include "framework/kernel.h"

namespace runnel {

EagerContext::EagerContext(EagerOptions options)
    : options_(options),
      intra_op_pool_(options.num_threads > 0 ? options.num_threads
                                             : ThreadPool::DefaultNumThreads(),
                     "runnel-intra"),
      device_(std::make_unique<Device>("/job:localhost/task:0/device:cpu:0",
                                       kDeviceCpu, CpuAllocator::Get(),
                                       &intra_op_pool_, &resources_)) {}

EagerContext::~EagerContext() = default;

absl::StatusOr<std::vector<Tensor>> EagerContext::Execute(
    const std::string& op, std::vector<Tensor> inputs, AttrMap attrs,
    const std::string& name, const SourceSpan& span) {
  NodeSpec spec;
  spec.name = name.empty() ? op : name;
  spec.op = op;
  spec.attrs = std::move(attrs);
  spec.span = span;
  std::vector<TensorSpec> specs;
  std::vector<const Tensor*> values;
  for (const Tensor& t : inputs) {
    specs.push_back({t.dtype(), t.shape()});
    values.push_back(&t);
  }
  RN_ASSIGN_OR_RETURN(
      std::unique_ptr<Node> node,
      Node::Detached(std::move(spec), std::move(specs), std::move(values)));
  RN_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel,
                      KernelRegistry::Global().Create(*node, device_->type()));
  KernelInputs in;
  for (const Tensor& t : inputs) in.push_back(&t);
  OpKernelContext ctx(*node, device_.get(), std::move(in), options_.seed,
                      nullptr);
  absl::Status s = ComputeSafely(*kernel, &ctx);
  if (!s.ok()) return AttachNode(s, node->name(), node->span());
  return std::move(ctx.outputs());
}

absl::StatusOr<Tensor> EagerContext::Execute1(const std::string& op,
                                              std::vector<Tensor> inputs,
                                              AttrMap attrs,
                                              const std::string& name,
                                              const SourceSpan& span) {
  RN_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      Execute(op, std::move(inputs), std::move(attrs), name, span));
  if (out.size() != 1) {
    return absl::InvalidArgumentError(
        StrCat(op, ": has ", out.size(), " outputs, expected one"));
  }
  return std::move(out[0]);
}

}  // namespace runnel
