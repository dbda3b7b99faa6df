#include "common_runtime/loop_shortcuts.h"

#include "common_runtime/control_flow.h"

namespace runnel {
namespace {

// A loop's switch (an `if`'s takes another predicate).
bool IsLoopSwitch(const Node* n) {
  return IsSwitch(n) && n->input(1).node->op() == "loop_cond";
}

// The value a loop's switch gives its body.
bool IsBodyOutput(const NodeOut& out) {
  return IsLoopSwitch(out.node) && out.index == 1;
}

// Whether `n` is a constant that waits only for a loop's body identity
// (the pivot).
bool WaitsOnlyForPivot(const Node* n) {
  if (n->op() != "const" || n->num_inputs() != 0 ||
      n->control_inputs().size() != 1) {
    return false;
  }
  const Node* pivot = n->control_inputs()[0];
  return pivot->op() == "identity" && pivot->num_inputs() == 1 &&
         IsBodyOutput(pivot->input(0));
}

// An op whose output is dead when any input, data or control, is (the
// executor's rule for every node but the control flow's and
// control_trigger).
bool DiesWithInputs(const Node* n) {
  return !IsControlFlow(n) && n->op() != "control_trigger";
}

}  // namespace

LoopShortcuts FindLoopShortcuts(
    const std::vector<Node*>& nodes,
    const std::function<bool(const Node*)>& can_deliver) {
  LoopShortcuts s;
  absl::flat_hash_map<const Node*, std::vector<const Node*>> data_out;
  absl::flat_hash_map<const Node*, std::vector<const Node*>> control_out;
  for (const Node* n : nodes) {
    for (const NodeOut& in : n->inputs()) data_out[in.node].push_back(n);
    for (const Node* c : n->control_inputs()) control_out[c].push_back(n);
  }

  // Constants the body makes again that nothing waits on.
  absl::flat_hash_set<const Node*> candidates;
  for (const Node* n : nodes) {
    if (WaitsOnlyForPivot(n) && !control_out.contains(n) &&
        data_out.contains(n) && can_deliver(n)) {
      candidates.insert(n);
    }
  }
  // The nodes dead in the iteration that leaves their loop, whichever
  // candidates are delivered: computed by ordinary ops from what a loop's
  // switch gives its body (only merges take a back edge, and they are not
  // ordinary).
  absl::flat_hash_set<const Node*> from_body;
  for (const Node* n : nodes) {
    if (!DiesWithInputs(n) || candidates.contains(n)) continue;
    bool dead = false;
    for (const NodeOut& in : n->inputs()) {
      dead = dead || IsBodyOutput(in) || from_body.contains(in.node);
    }
    for (const Node* c : n->control_inputs()) {
      dead = dead || from_body.contains(c);
    }
    if (dead) from_body.insert(n);
  }
  for (const Node* constant : candidates) {
    bool dies_anyway = true;
    for (const Node* c : data_out.at(constant)) {
      dies_anyway = dies_anyway && from_body.contains(c);
    }
    if (dies_anyway) s.constants.insert(constant);
  }

  // Body identities that no control edge hangs on, once those constants
  // no longer wait for them.
  for (const Node* n : nodes) {
    if (n->op() != "identity" || n->num_inputs() != 1 ||
        !n->control_inputs().empty() || !IsBodyOutput(n->input(0))) {
      continue;
    }
    bool held = false;
    if (auto it = control_out.find(n); it != control_out.end()) {
      for (const Node* c : it->second) held = held || !s.constants.contains(c);
    }
    if (!held) s.bypassed[n] = n->input(0);
  }
  return s;
}

}  // namespace runnel
