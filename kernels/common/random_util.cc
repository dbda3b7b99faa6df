#include "kernels/common/random_util.h"

#include <memory>
#include <string>

#include "framework/resource_mgr.h"

namespace runnel {

absl::StatusOr<RandomSampler> ReserveSamples(OpKernelContext* ctx, int64_t seed,
                                             int64_t n) {
  const std::string& name = ctx->node().name();
  RN_ASSIGN_OR_RETURN(
      std::shared_ptr<RandomCounter> counter,
      ctx->resources()->LookupOrCreate<RandomCounter>(
          "random:" + name, [] { return std::make_shared<RandomCounter>(); }));
  return RandomSampler(EffectiveSeed(ctx->global_seed(), seed, name),
                       counter->Reserve(n));
}

absl::StatusOr<int64_t> IntegralAttr(const Node& node, std::string_view name) {
  absl::StatusOr<int64_t> i = node.attr<int64_t>(name);
  if (i.ok()) return i;
  RN_ASSIGN_OR_RETURN(double d, node.attr<double>(name));
  return static_cast<int64_t>(std::ceil(d));
}

}  // namespace runnel
