#include "framework/recompute_plan.h"

#include <algorithm>
#include <optional>

#include "base/strings.h"

namespace runnel {

namespace {

// The iterations whose values a segment of k computed again holds at once:
// the segment's and those of the backward iterations in flight beside it.
int64_t SegmentIterations(const LoopStackSizes& s, int64_t k) {
  return std::min(k + kIterationsInFlight, s.trips);
}

}  // namespace

int64_t StacksHeld(const LoopStackSizes& s, int64_t k, int64_t split) {
  const int64_t t = s.trips;
  if (k <= 0 || split <= 0) return t * (s.recomputed + s.stored);
  const int64_t kept = std::max<int64_t>(t - split, 0);
  const int64_t segment = SegmentIterations(s, k);
  return t * s.stored + (split + k - 1) / k * s.state +
         std::max(kept, segment) * s.recomputed;
}

CheckpointPlan PlanCheckpoints(const LoopStackSizes& s, int64_t budget) {
  const int64_t t = s.trips;
  const int64_t everything = StacksHeld(s, 0, 0);
  if (everything <= budget || t <= 0) return {0, 0, everything};
  std::optional<CheckpointPlan> best;
  CheckpointPlan least{1, t, StacksHeld(s, 1, t)};
  auto consider = [&](int64_t k, int64_t split) {
    const CheckpointPlan p{k, split, StacksHeld(s, k, split)};
    if (split == s.trips && p.held < least.held) least = p;
    if (p.held > budget) return;
    if (!best || p.split < best->split ||
        (p.split == best->split && p.held < best->held))
      best = p;
  };
  for (int64_t k = 1; k <= t; ++k) {
    // Computing m segments of k again (split = m k < trips), the stacks
    // hold m states and the values of the iterations from m k on, which
    // fall by per = k r - c with each segment while they outweigh one
    // segment's: the least m that fits pays the excess over the budget
    // (past that, more segments only hold more).
    const int64_t segments = (t + k - 1) / k;
    const int64_t per = k * s.recomputed - s.state;
    if (per > 0) {
      const int64_t excess = everything - budget;  // > 0
      const int64_t m = std::max<int64_t>(1, (excess + per - 1) / per);
      if (m < segments) consider(k, m * k);
    } else {
      consider(k, k);
    }
    consider(k, t);
  }
  return best ? *best : least;
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
      s.recomputed, " bytes computed again per iteration, held for ",
      SegmentIterations(s, plan.k),
      " iterations: a segment and the backward iterations that may run "
      "beside it",
      s.stored > 0
          ? StrCat("; ", s.stored,
                   " bytes stored per iteration: random draws' indices, "
                   "variable reads, nested loops' results")
          : "",
      ")");
}

}  // namespace runnel
