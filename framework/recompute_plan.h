// The checkpoint interval of a loop's gradient under a memory budget
// (--memory-budget, docs/training.md, Long sequences). Autodiff plans with
// it when the sizes are static (common_runtime/backprop.cc), the
// recompute_plan op when the trip count is known only at run time.
#ifndef RUNNEL_FRAMEWORK_RECOMPUTE_PLAN_H_
#define RUNNEL_FRAMEWORK_RECOMPUTE_PLAN_H_

#include <cstdint>
#include <string>

namespace runnel {

// Bytes a loop's gradient keeps per iteration: `recomputed` can be computed
// again from the state (`state` bytes, saved every k iterations), `stored`
// cannot (the index of each random draw, variable reads, queue elements,
// nested loops' results).
struct LoopStackSizes {
  int64_t trips = 0;
  int64_t recomputed = 0;
  int64_t stored = 0;
  int64_t state = 0;
};

// Iterations [0, split) are computed again, from the state saved every k
// of them; iterations [split, trips) keep their values, as without
// recomputation. split is a multiple of k, or trips.
struct CheckpointPlan {
  int64_t k = 0;      // 0: keep every iteration's values, no recomputation
  int64_t split = 0;  // the iterations computed again
  int64_t held = 0;   // the most the stacks hold, in bytes
};

// The backward iterations that may run at once in the gradient of a loop
// that may recompute (its parallel_iterations, common_runtime/backprop.cc):
// each holds the values it popped until its gradient is done.
inline constexpr int64_t kIterationsInFlight = 4;

// The stacks at their fullest under `plan`: what is stored at every
// iteration, the state saved every k iterations of the first `split`, and
// the larger of the values the forward loop keeps (iterations from split
// on) and those of one segment computed again with the iterations in
// flight beside it.
int64_t StacksHeld(const LoopStackSizes& sizes, int64_t k, int64_t split);

// Keeps everything when that fits in `budget`. Else computes again as few
// iterations as fit: the plan whose `split` is least and, among those, whose
// stacks hold least. When nothing fits, the plan whose stacks hold least
// (held > budget).
CheckpointPlan PlanCheckpoints(const LoopStackSizes& sizes, int64_t budget);

// Whether keeping a loop's saved values in host memory (`bytes` per
// iteration, swapped out of a GPU and back over a link of
// `link_bytes_per_s`) costs less time than computing them again, which
// costs about one more forward iteration (`forward_s`) per iteration. The
// copy out overlaps the forward iteration and costs only what exceeds it;
// the copy back in runs before the backward iteration that reads it.
bool SwapCostsLess(double bytes, double forward_s, double link_bytes_per_s);

// Why `plan` (held > budget) does not fit, for an error at the loop.
std::string PlanDoesNotFit(const LoopStackSizes& sizes,
                           const CheckpointPlan& plan, int64_t budget);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_RECOMPUTE_PLAN_H_
