// In-graph `if` and `loop` (docs/language.md §5): the graph side of a
// conditional or loop whose condition, bounds or state is symbolic.
//
//   Value y = *GraphCond(b, pred, then_fn, else_fn, site);
//   Value s = *GraphLoop(b, init, {.cond = ..., .body = ...}, site);
//
// The callbacks build a branch or the loop's condition and body with the
// builder inside the construct's context (graph_builder.h, CfContext); the
// interpreter passes callbacks that bind names and evaluate the script's
// blocks, and `scan`/`map` pass their own. Values are structures (tuples,
// lists, records) of tensors; both branches, and a body and its state,
// must agree in structure and dtypes, and a body in ranks. A dimension
// that changes between iterations becomes unknown: the loop is built again
// with that dimension relaxed.
#ifndef RUNNEL_INTERPRETER_CONTROL_FLOW_H_
#define RUNNEL_INTERPRETER_CONTROL_FLOW_H_

#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "interpreter/graph_builder.h"
#include "interpreter/value.h"

namespace runnel::interp {

// A branch's value (built in the branch's context).
using BranchFn = std::function<absl::StatusOr<Value>()>;

struct LoopFns {
  // The condition, from the state at the top of an iteration and the
  // iteration index (an i32 scalar): a bool scalar.
  std::function<absl::StatusOr<Value>(const Value& state, const Value& index)>
      cond;
  // The next state, from the state and the index inside the body.
  std::function<absl::StatusOr<Value>(const Value& state, const Value& index)>
      body;
  // Where a body result that does not fit the state is reported.
  SourceSpan body_span;
  // Static shapes of the state's tensors where the initial values know
  // less (scan's accumulators); empty: the initial values' shapes.
  std::vector<std::optional<Shape>> shapes;
  // A gradient through the loop recomputes its values from the state saved
  // every `checkpoint` iterations (0: as the memory budget decides).
  int64_t checkpoint = 0;
  // A gradient through the loop keeps its saved values in host memory,
  // copied out of a GPU as the loop runs (`swap_memory = true`).
  bool swap_memory = false;
  // The number of iterations when known statically, else -1.
  int64_t trips = -1;
  // The number of iterations as a value before the loop (an i32 scalar),
  // for a memory budget's plan at run time; none for a while loop.
  std::optional<Value> trip_count;
};

absl::StatusOr<Value> GraphCond(GraphBuilder& b, const Value& pred,
                                const BranchFn& then_fn,
                                const BranchFn& else_fn, const OpSite& site);

absl::StatusOr<Value> GraphLoop(GraphBuilder& b, const Value& init,
                                const LoopFns& fns, const OpSite& site);

// `scan(f, xs, init)` and `map(f, xs)` (map when `init` is nullptr) in the
// graph: a loop over axis 0 of symbolic xs whose per-step results are
// accumulated into [n, ...] tensors. `call` applies f.
using StepFn = std::function<absl::StatusOr<Value>(std::vector<Value> args)>;
// `checkpoint` and `swap_memory` as LoopFns's; `trip_count`: enter the
// trip count for a memory budget's plan.
absl::StatusOr<Value> GraphScan(GraphBuilder& b, const StepFn& call,
                                const Value& xs, const Value* init,
                                const OpSite& site, int64_t checkpoint = 0,
                                bool trip_count = false,
                                bool swap_memory = false);

// The tensors of a structure, depth first; an error naming `what` at
// `span` for a leaf that is not a tensor.
absl::Status FlattenTensors(const Value& v, const SourceSpan& span,
                            std::string_view what, std::vector<Value>* out);
// `like`'s structure with `leaves` in place of its tensors.
Value Unflatten(const Value& like, const std::vector<Value>& leaves);

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_CONTROL_FLOW_H_
