// In-graph control flow: building loops from the five primitives, and the
// static frame structure of a graph (docs/architecture.md, Control flow).
//
// A loop over variables v_k, as TensorFlow builds it:
//
//   enter_k = enter(init_k, frame_name = F)        // into frame F, iteration 0
//   merge_k = merge(enter_k, next_k)               // the value at the top
//   pred    = loop_cond(cond(merge_0, merge_1, ...))
//   (out_k, in_k) = switch(merge_k, pred)          // leave, or run the body
//   exit_k  = exit(out_k)                          // the final value
//   next_k  = next_iteration(body(identity(in_k)))  // back to merge_k
//
// WhileBuilder makes those nodes in that order; the caller builds the
// condition and the body in between, with its own rules for naming nodes
// and for values that come from outside (`enter` with is_constant). The
// interpreter builds the loops a script writes; autodiff builds the
// backward loops. Every loop built here has a hidden counter as variable 0
// (an i32 from 0, marked `_loop_counter` on its enter): inside the body it
// is the iteration's index, and its exit is the trip count, which autodiff
// needs to index the stacks that carry forward values to the backward loop.
#ifndef RUNNEL_COMMON_RUNTIME_CONTROL_FLOW_H_
#define RUNNEL_COMMON_RUNTIME_CONTROL_FLOW_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "framework/graph.h"

namespace runnel {

// Makes one node; `base` is a name to make unique. `in_parent` is true for
// the nodes that belong to the frame around the loop (the exits).
using NodeMaker =
    std::function<absl::StatusOr<Node*>(NodeSpec spec, bool in_parent)>;
// A top-level value (the counter's constants) as seen in the frame around
// the loop.
using ToParent = std::function<absl::StatusOr<NodeOut>(NodeOut v)>;

class WhileBuilder {
 public:
  WhileBuilder(Graph* graph, NodeMaker make, ToParent to_parent,
               std::string frame_name, std::string scope, SourceSpan span,
               int parallel_iterations = 32);

  // Enters the counter and the loop variables `init` (each with `shapes[k]`
  // as its static shape when given: a dimension that changes between
  // iterations is unknown); `control` gates the enters. Returns the values
  // at the top of an iteration, the counter first.
  absl::StatusOr<std::vector<NodeOut>> Begin(
      const std::vector<NodeOut>& init,
      const std::vector<std::optional<Shape>>& shapes,
      const std::vector<Node*>& control);
  // Ends the condition: returns the values inside the body (the counter
  // first), one identity per variable.
  absl::StatusOr<std::vector<NodeOut>> Condition(NodeOut pred);
  // Closes the loop with the body's next values (without the counter, which
  // the builder increments; `effects` run before the next iteration starts)
  // and returns the exits (the counter's first: the trip count).
  absl::StatusOr<std::vector<NodeOut>> Finish(
      const std::vector<NodeOut>& next, const std::vector<Node*>& effects);

  // An outer value made visible in every iteration.
  absl::StatusOr<NodeOut> EnterInvariant(NodeOut v);
  // The loop's trip count (an outer i32 scalar) when known before it runs,
  // entered for autodiff (`_trip_count`): a memory budget's plan reads it.
  absl::Status EnterTripCount(NodeOut n);

  // Attributes for the counter's enter, before Begin: what autodiff reads
  // about the loop (`_checkpoint`: recompute with that interval;
  // `_trips`: the trip count when it is known statically).
  void set_counter_attrs(AttrMap attrs) { counter_attrs_ = std::move(attrs); }

  const std::string& frame_name() const { return frame_; }
  // A node inside the body that runs once per iteration: nodes with no
  // inputs made in the body take it as a control input.
  Node* pivot() const { return pivot_; }
  // The counter's next_iteration (autodiff adds the pushes' trigger to it).
  Node* counter_next() const { return counter_next_; }

 private:
  absl::StatusOr<Node*> Make(std::string op, std::string base,
                             std::vector<NodeOut> inputs, AttrMap attrs = {},
                             std::vector<Node*> control = {},
                             bool in_parent = false);

  absl::StatusOr<NodeOut> Constant(int value, const char* name);

  Graph* graph_;
  NodeMaker make_;
  ToParent to_parent_;
  std::string frame_;
  std::string scope_;
  SourceSpan span_;
  int parallel_iterations_;
  std::vector<Node*> merges_;
  std::vector<Node*> switches_;
  std::vector<NodeOut> body_;
  Node* pivot_ = nullptr;
  Node* counter_next_ = nullptr;
  absl::flat_hash_map<NodeOut, NodeOut> invariants_;
  AttrMap counter_attrs_;
};

// The static frame of every node: "" for the root, else the `frame_name` of
// the enter it descends from (exits leave to the parent). For autodiff.
class FrameMap {
 public:
  static absl::StatusOr<FrameMap> Build(const Graph& graph);

  const std::string& frame_of(const Node* n) const;
  const std::string& parent_of(const std::string& frame) const;
  void set(const Node* n, std::string frame);
  // The loop whose frame is `frame`: its enters, exits, and counter.
  struct Loop {
    std::vector<Node*> enters;  // in creation order
    std::vector<Node*> exits;
    Node* counter_enter = nullptr;
    Node* counter_body = nullptr;  // the iteration index inside the body
    Node* counter_exit = nullptr;  // the trip count
    Node* counter_next = nullptr;
  };
  const Loop* loop(const std::string& frame) const;
  // Data consumers of each node (forward graph at Build time).
  const std::vector<std::pair<Node*, int>>& consumers(const Node* n) const;

 private:
  absl::flat_hash_map<const Node*, std::string> frame_;
  absl::flat_hash_map<std::string, std::string> parent_;
  absl::flat_hash_map<std::string, Loop> loops_;
  absl::flat_hash_map<const Node*, std::vector<std::pair<Node*, int>>>
      consumers_;
};

bool IsEnter(const Node* n);
bool IsExit(const Node* n);
bool IsMerge(const Node* n);
bool IsSwitch(const Node* n);
bool IsNextIteration(const Node* n);
// One of the five above: a node of a loop's or a conditional's machinery.
bool IsControlFlow(const Node* n);
// A merge input that closes a loop (comes from a next_iteration).
bool IsBackEdge(const Node* n, int input);

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_CONTROL_FLOW_H_
