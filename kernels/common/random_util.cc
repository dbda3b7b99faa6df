#include "kernels/common/random_util.h"

#include <memory>
#include <string>

#include "framework/resource_mgr.h"

namespace runnel {

namespace {

// The counter of the stream named `name` (a random op's node name).
absl::StatusOr<std::shared_ptr<RandomCounter>> CounterOf(
    OpKernelContext* ctx, const std::string& name) {
  return ctx->resources()->LookupOrCreate<RandomCounter>(
      "random:" + name, [] { return std::make_shared<RandomCounter>(); });
}

}  // namespace

absl::StatusOr<RandomSampler> ReserveSamples(OpKernelContext* ctx, int64_t seed,
                                             int64_t n) {
  const Node& node = ctx->node();
  if (!node.op_def().replay_of.empty()) {
    RN_ASSIGN_OR_RETURN(std::string stream, node.attr<std::string>("stream"));
    const Tensor& first = ctx->input(ctx->num_inputs() - 1);
    return RandomSampler(EffectiveSeed(ctx->global_seed(), seed, stream),
                         static_cast<uint64_t>(first.data<int64_t>()[0]));
  }
  RN_ASSIGN_OR_RETURN(std::shared_ptr<RandomCounter> counter,
                      CounterOf(ctx, node.name()));
  return RandomSampler(EffectiveSeed(ctx->global_seed(), seed, node.name()),
                       counter->Reserve(n));
}

namespace {

class RandomReserveKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::string stream,
                        ctx->node().attr<std::string>("stream"));
    const Tensor& shape = ctx->input(0);
    uint64_t n = 0;
    if (ctx->input(1).data<bool>()[0]) {
      n = 1;
      for (int64_t i = 0; i < shape.num_elements(); ++i) {
        const int64_t d = shape.dtype() == DType::kI32
                              ? shape.data<int32_t>()[i]
                              : shape.data<int64_t>()[i];
        if (d < 0) {
          return absl::InvalidArgumentError(
              StrCat("random_reserve: shape has a negative dimension ", d));
        }
        n *= static_cast<uint64_t>(d);
      }
    }
    RN_ASSIGN_OR_RETURN(std::shared_ptr<RandomCounter> counter,
                        CounterOf(ctx, stream));
    return ctx->set_output(
        0, Tensor::ScalarOf(DType::kI64,
                            static_cast<int64_t>(counter->Reserve(n))));
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterRandomReserveKernel(const std::string& device) {
  for (DType d : {DType::kI32, DType::kI64}) {
    RegisterKernel<RandomReserveKernel>("random_reserve", device, d,
                                        {.inputs = {0, 1}, .outputs = {0}});
  }
}

absl::StatusOr<int64_t> IntegralAttr(const Node& node, std::string_view name) {
  absl::StatusOr<int64_t> i = node.attr<int64_t>(name);
  if (i.ok()) return i;
  RN_ASSIGN_OR_RETURN(double d, node.attr<double>(name));
  return static_cast<int64_t>(std::ceil(d));
}

}  // namespace runnel
