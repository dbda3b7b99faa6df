// Gradient functions of the sparse and segment ops
// (framework/ops/sparse_ops.cc).
#include "common_runtime/gradients.h"

namespace runnel {
namespace {

RUNNEL_NO_GRADIENT("unique");
RUNNEL_REGISTER_GRADIENT("unsorted_segment_sum",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {g.Op("gather", {dy[0], g.x(1)}), {}, {}};
                         });
// Each part's gradient goes back to the positions its slices came from:
// the positions are partitioned like x, and the parts' gradients stitched
// by them.
RUNNEL_REGISTER_GRADIENT(
    "dynamic_partition", [](GradBuilder& g, const Grads& dy) -> Grads {
      const int64_t n = g.attr_or<int64_t>("num_partitions", 1);
      NodeOut parts = g.x(1);
      NodeOut count = g.Op("size", {parts}, {{"out_type", DType::kI32}});
      NodeOut positions = g.Op(
          "reshape", {g.Op("range", {g.Scalar(0, DType::kI32), count,
                                     g.Scalar(1, DType::kI32)}),
                      g.Op("shape_of", {parts}, {{"out_type", DType::kI32}})});
      std::vector<NodeOut> where = g.OpN(
          "dynamic_partition", {positions, parts}, {{"num_partitions", n}});
      std::vector<NodeOut> inputs;
      for (int64_t i = 0; i < n; ++i) {
        inputs.push_back(dy[i].node != nullptr ? dy[i] : g.ZerosLike(g.y(i)));
      }
      inputs.insert(inputs.end(), where.begin(), where.end());
      NodeOut stitched = g.Op("dynamic_stitch", inputs);
      return {g.ReshapeLike(stitched, g.x(0)), {}};
    });
RUNNEL_REGISTER_GRADIENT("dynamic_stitch",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           const int n = g.node().num_inputs() / 2;
                           Grads dx(2 * n);
                           for (int m = 0; m < n; ++m) {
                             dx[m] = g.Op("gather", {dy[0], g.x(n + m)});
                           }
                           return dx;
                         });

}  // namespace
}  // namespace runnel
