// An optimizer's update by a product: the plan's one rewrite of a run's
// graph.
//
// A dense layer's weight gradient is a product, x^T dy, which optim.sgd's
// apply_sgd (optim.momentum's apply_momentum, optim.adam's apply_adam)
// reads once to update the weight. On CPU the product can feed the update
// without ever being written whole: for sgd the sgemm adds -lr * x^T dy
// into w itself (beta = 1), and the update's own pass over w is gone
// (apply_sgd_matmul); for momentum and adam the product is computed in
// blocks of rows, each applied to those rows of w and its slots while
// still in the cache (apply_momentum_matmul, apply_adam_matmul), which
// also changes the slots in place. Session::BuildPlan copies the run's nodes
// into its plan; where FindUpdateProducts finds such a pair, it copies one
// fused node in place of both, then OrderBeforeUpdate makes it wait for
// the variable's other readers, so that it finds the value no longer held
// and updates it in place (it would copy a value still held, correctly but
// at a cost):
//
//   UpdateProducts fuse = FindUpdateProducts(needed.nodes, fetches, fed);
//   ... copy each node but fuse.products; for an apply in fuse.product_of,
//       AddNode(FusedUpdateSpec(apply, product, mapped FusedInputs(...),
//                               controls)) ...
//   OrderBeforeUpdate(*plan_graph, fused_nodes);
//
// Only for plans on this process's CPU devices (not a cluster's: there the
// gradient is computed on the worker and only it crosses), without control
// flow (a control edge from inside a loop or a conditional branch would be
// wrong there), only where the product has no other use (no other input,
// fetch or feed), and only where the product was asked for no device but
// its update's or its variable's: the fused node goes where the update
// goes.
// A node that waits for the product (optim's updates wait for their
// gradient) waits for what the product waited for instead: its inputs. The
// result is the separate ops' within the sgemm's rounding (the fused sgd
// does not round the product and lr times it apart; the others' blocks may
// round the product's sums in another order).
#ifndef RUNNEL_COMMON_RUNTIME_FUSE_UPDATES_H_
#define RUNNEL_COMMON_RUNTIME_FUSE_UPDATES_H_

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "framework/graph.h"

namespace runnel {

struct UpdateProducts {
  // apply_sgd, apply_momentum or apply_adam node -> the matmul that
  // computes its gradient.
  absl::flat_hash_map<const Node*, const Node*> product_of;
  // Those matmuls: the plan leaves them out.
  absl::flat_hash_set<const Node*> products;
};

// The pairs among `nodes` (a run's, as PruneGraph orders them) that fuse,
// given the run's fetches and fed tensors.
UpdateProducts FindUpdateProducts(const std::vector<Node*>& nodes,
                                  const std::vector<NodeOut>& fetches,
                                  const std::vector<NodeOut>& fed);

// The inputs of the fused node that takes the place of `apply` and
// `product`, as edges of their graph: apply's, with the product's two in
// the place of its gradient.
std::vector<NodeOut> FusedInputs(const Node& apply, const Node& product);

// The spec of that fused node, with `inputs` (FusedInputs, as edges of the
// plan) and the control inputs of both.
NodeSpec FusedUpdateSpec(const Node& apply, const Node& product,
                         std::vector<NodeOut> inputs,
                         std::vector<Node*> control_inputs);

// Gives each of `updates` (fused nodes of `graph`) a control
// input from every other reader of its variable that does not depend on
// it: the variable's consumers, and those of the nodes that pass its value
// on (read_variable, identity).
void OrderBeforeUpdate(Graph& graph, const std::vector<Node*>& updates);

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_FUSE_UPDATES_H_
