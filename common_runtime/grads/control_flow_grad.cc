// Gradients of the conditional primitives (common_runtime/gradients.h). Loops
// are differentiated as units by the backward pass itself
// (common_runtime/backprop.cc), so enter, exit and next_iteration have no entry
// here.
#include "base/strings.h"
#include "common_runtime/gradients.h"

namespace runnel {
namespace {

// switch(data, pred) sends data to one output: its gradient is whichever of
// the two outputs' gradients is live, so a merge of them. An output nothing
// differentiated gets zeros, made from that output so that they are dead
// exactly when it is.
RUNNEL_REGISTER_GRADIENT("switch", [](GradBuilder& g, const Grads& dy) {
  NodeOut f = dy[0].node != nullptr ? dy[0] : g.ZerosLike(g.y(0));
  NodeOut t = dy[1].node != nullptr ? dy[1] : g.ZerosLike(g.y(1));
  return Grads{g.Op("merge", {f, t}), {}};
});

// merge forwards the input that was live: the gradient goes back to that
// input only, switched on value_index.
RUNNEL_REGISTER_GRADIENT("merge", [](GradBuilder& g, const Grads& dy) {
  Grads dx;
  if (dy[0].node == nullptr) return dx;
  for (int i = 0; i < g.node().num_inputs(); ++i) {
    NodeOut taken = g.Op("equal", {g.y(1), g.Scalar(i, DType::kI32)});
    std::vector<NodeOut> sw = g.OpN("switch", {dy[0], taken});
    dx.push_back(sw.empty() ? NodeOut{} : sw[1]);
  }
  return dx;
});

// A loop is differentiated whole (common_runtime/backprop.cc): the walk never
// reaches its enters, exits or next_iterations one by one.
Grads WholeLoopOnly(GradBuilder& g, const Grads&) {
  g.Fail(absl::InternalError(
      StrCat(g.node().op(), " is differentiated as part of its loop")));
  return {};
}
RUNNEL_REGISTER_GRADIENT("enter", WholeLoopOnly);
RUNNEL_REGISTER_GRADIENT("exit", WholeLoopOnly);
RUNNEL_REGISTER_GRADIENT("next_iteration", WholeLoopOnly);

RUNNEL_NO_GRADIENT("loop_cond");
RUNNEL_NO_GRADIENT("control_trigger");
RUNNEL_NO_GRADIENT("stack_new");
RUNNEL_NO_GRADIENT("stack_push");
RUNNEL_NO_GRADIENT("stack_pop");
RUNNEL_NO_GRADIENT("recompute_plan");

}  // namespace
}  // namespace runnel
