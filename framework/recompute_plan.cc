#include "framework/recompute_plan.h"

#include <algorithm>

#include "base/strings.h"

namespace runnel {

CheckpointPlan PlanCheckpoints(const LoopStackSizes& s, int64_t budget) {
  const int64_t everything = s.trips * (s.recomputed + s.stored);
  if (everything <= budget) return {0, everything};
  CheckpointPlan best{1, -1};
  for (int64_t k = 1; k <= std::max<int64_t>(s.trips, 1); ++k) {
    const int64_t held = (s.trips + k - 1) / k * s.state +
                         std::min(k, s.trips) * s.recomputed +
                         s.trips * s.stored;
    if (best.held < 0 || held < best.held) best = {k, held};
  }
  return best;
}

bool SwapCostsLess(double bytes, double forward_s, double link_bytes_per_s) {
  if (link_bytes_per_s <= 0) return false;
  const double copy_s = bytes / link_bytes_per_s;
  const double swap_s = copy_s + std::max(0.0, copy_s - forward_s);
  return swap_s < forward_s;
}

std::string PlanDoesNotFit(const LoopStackSizes& s, const CheckpointPlan& plan,
                           int64_t budget) {
  return StrCat(
      "grad: --memory-budget ", budget,
      ": the gradient of this loop needs stacks of ", plan.held,
      " bytes even computing its values again (", s.trips,
      " iterations; the state, ", s.state, " bytes, saved every ", plan.k, "; ",
      s.recomputed, " bytes computed again per iteration",
      s.stored > 0
          ? StrCat("; ", s.stored,
                   " bytes stored per iteration: random draws' indices, "
                   "variable reads, nested loops' results")
          : "",
      ")");
}

}  // namespace runnel
