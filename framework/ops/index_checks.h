// The shapes and the index plans of the index ops (framework/ops/
// index_ops.cc): gather_elements, scatter_elements, gather_nd, scatter_nd
// and top_k. The shape functions check what is known before a run; the
// kernels of every device plan with the same functions, so that they refuse
// the same indices with the same message.
#ifndef RUNNEL_FRAMEWORK_OPS_INDEX_CHECKS_H_
#define RUNNEL_FRAMEWORK_OPS_INDEX_CHECKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/graph.h"
#include "framework/shape.h"
#include "framework/tensor.h"

namespace runnel {

// How scatter_elements and scatter_nd combine an update with what is there.
enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };
absl::StatusOr<ScatterReduction> ParseScatterReduction(std::string_view name);

// gather_elements(x, indices) and scatter_elements(data, indices, updates):
// indices and updates of one shape, of data's rank (1 or more), with `axis`
// in it and no longer than data along the other axes. Unknown dimensions
// and ranks pass.
absl::Status CheckAlongAxis(const Shape& data, const Shape& indices,
                            const Shape& updates, int64_t axis,
                            std::string_view updates_name);

// gather_nd's result: indices' shape without its last dimension (the tuple
// length k), then x's past its first batch_dims + k dimensions. The first
// batch_dims dimensions of x and indices must agree.
absl::StatusOr<Shape> GatherNdOutput(const Shape& x, const Shape& indices,
                                     int64_t batch_dims);

// top_k's k against the length n of its axis (n unknown: -1).
absl::Status CheckTopK(int64_t k, int64_t n);

// top_k(x, k) as the kernels of both devices read it: the axis, k, and
// the shape of both outputs.
struct TopKPlan {
  int axis = 0;
  int64_t k = 0;
  Shape output;
};
absl::StatusOr<TopKPlan> PlanTopK(const Tensor& x, const Tensor& k,
                                  int64_t axis);
// top_k's attributes, as both devices' kernels read them.
struct TopKAttrs {
  int64_t axis = -1;
  bool largest = true;
  static absl::StatusOr<TopKAttrs> Of(const Node& node);
};

// unique_all's attributes, as both devices' kernels read them, and x
// viewed as [outer, n, inner]: its n slices along the axis (its n
// elements, outer = inner = 1, without one).
struct UniqueAttrs {
  std::optional<int64_t> axis;
  bool sorted = true;
  static absl::StatusOr<UniqueAttrs> Of(const Node& node);
};
struct UniquePlan {
  int64_t outer = 1, n = 0, inner = 1;
  int axis = -1;  // -1: none
  // The distinct values' shape when there are m of them.
  Shape Values(const Shape& x, int64_t m) const;
};
absl::StatusOr<UniquePlan> PlanUnique(const Shape& x,
                                      std::optional<int64_t> axis);

// Where each element of gather_elements' or scatter_elements' indices
// points into the data (row-major element offsets), its index checked.
struct AlongAxisPlan {
  std::vector<int64_t> target;  // one per element of indices
};
absl::StatusOr<AlongAxisPlan> PlanAlongAxis(const Shape& data,
                                            const Tensor& indices,
                                            int64_t axis);

// Where each index tuple of gather_nd or scatter_nd points into the data:
// the element offset of the slice it names (batch entries in order, the
// tuples of each in order), each coordinate checked.
struct NdPlan {
  int64_t slice = 1;            // elements per slice
  std::vector<int64_t> target;  // one per tuple
  Shape output;                 // gather_nd's result (scatter_nd's updates)
};
absl::StatusOr<NdPlan> PlanNd(const Shape& data, const Tensor& indices,
                              int64_t batch_dims);

// A scatter's attributes as the kernels of both devices read them:
// `at` is scatter_elements' axis or scatter_nd's batch_dims.
struct ScatterAttrs {
  ScatterReduction how = ScatterReduction::kNone;
  int64_t at = 0;
  static absl::StatusOr<ScatterAttrs> Of(const Node& node, bool nd);
};

// scatter_elements' (nd false: `at` is the axis) or scatter_nd's (nd true:
// `at` is batch_dims) targets for `updates`, each a slice of `slice`
// elements (1 for scatter_elements), checked: the updates' shape, the
// indices, and for reduction "none" distinct targets.
struct ScatterPlan {
  std::vector<int64_t> target;
  int64_t slice = 1;
};
absl::StatusOr<ScatterPlan> PlanScatter(bool nd, const Shape& data,
                                        const Tensor& indices,
                                        const Shape& updates, int64_t at,
                                        ScatterReduction how);

// The targets grouped by place, for a device that combines each place's
// updates in one thread: places[p] gets, in order, the updates
// order[starts[p]] .. order[starts[p + 1] - 1] (by position, as the CPU
// combines them).
struct TargetGroups {
  std::vector<int64_t> places, starts, order;
};
TargetGroups GroupTargets(const std::vector<int64_t>& target);

// For reduction "none": no two of the targets are one place (what a
// scatter writes would depend on the order of its updates). The message
// names the two positions in `name` (of `index_shape`) and what they do:
// "updates[0, 1] and updates[0, 2] write one element".
absl::Status CheckDistinctTargets(const std::vector<int64_t>& target,
                                  const Shape& index_shape,
                                  std::string_view name,
                                  std::string_view clash);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_OPS_INDEX_CHECKS_H_
