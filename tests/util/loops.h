// Loops built by hand for the control-flow and backprop tests: a counter
// from 0 while it is below `n`, and the loop's own variables.
#ifndef RUNNEL_TESTS_UTIL_LOOPS_H_
#define RUNNEL_TESTS_UTIL_LOOPS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common_runtime/control_flow.h"
#include "framework/graph.h"
#include "tests/util/test_ops.h"

namespace runnel::testing {

// Builds `loop vars = init while counter < n { body(index, vars) }` in g,
// nodes made at top level, and returns the exits (the trip count first).
// `in` brings an outer value into the body.
// `outer` is the loop around this one, if any: the counter's constants
// enter it first.
struct Loop {
  Graph& g;
  std::string name;
  WhileBuilder* outer;
  WhileBuilder wb{&g,
                  [this](NodeSpec spec, bool) -> absl::StatusOr<Node*> {
                    spec.name = g.UniqueName(spec.name);
                    return g.AddNode(std::move(spec));
                  },
                  [this](NodeOut v) -> absl::StatusOr<NodeOut> {
                    if (outer == nullptr) return v;
                    return outer->EnterInvariant(v);
                  },
                  name,
                  name,
                  SourceSpan{},
                  32};
};

inline std::vector<NodeOut> BuildLoop(
    Graph& g, const std::string& name, std::vector<NodeOut> init, NodeOut n,
    const std::function<std::vector<NodeOut>(WhileBuilder&, NodeOut,
                                             std::vector<NodeOut>)>& body,
    WhileBuilder* outer = nullptr) {
  Loop loop{g, name, outer};
  WhileBuilder& wb = loop.wb;
  auto top =
      *wb.Begin(init, std::vector<std::optional<Shape>>(init.size()), {});
  NodeOut limit = *wb.EnterInvariant(n);
  NodeOut pred = {
      testing::Add(g, g.UniqueName(name + "/less"), "less", {top[0], limit}),
      0};
  auto in = *wb.Condition(pred);
  std::vector<NodeOut> vars(in.begin() + 1, in.end());
  auto exits = *wb.Finish(body(wb, in[0], vars), {});
  return exits;
}

}  // namespace runnel::testing

#endif  // RUNNEL_TESTS_UTIL_LOOPS_H_
