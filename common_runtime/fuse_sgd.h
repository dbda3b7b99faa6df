// Gradient descent by a product: the plan's one rewrite of a run's graph.
//
// A dense layer's weight gradient is a product, x^T dy, which optim.sgd's
// apply_sgd reads once to write w - lr * g. On CPU the sgemm can add
// -lr * x^T dy into w itself (beta = 1): the gradient, as large as the
// weights, is then never written nor read back, and the update's own pass
// over w is gone. Session::BuildPlan copies the run's nodes into its plan;
// where SgdProducts finds such a pair, it copies one apply_sgd_matmul in
// place of both, then OrderBeforeUpdate makes it wait for the variable's
// other readers, so that it finds the value no longer held and updates it
// in place (it would copy a value still held, correctly but at a cost):
//
//   SgdProducts sgd = FindSgdProducts(needed.nodes, fetches, fed_outs);
//   ... copy each node but sgd.products; for an apply in sgd.product_of,
//       AddNode(FusedSgdSpec(apply, product, inputs, controls)) ...
//   OrderBeforeUpdate(*plan_graph, fused_nodes);
//
// Only for plans on one CPU device, without control flow (a control edge
// from inside a loop or a conditional branch would be wrong there), and
// only where the product has no other use: no other input, fetch or feed.
// A node that waits for the product (optim's updates wait for their
// gradient) waits for what the product waited for instead: its inputs. The
// result is the separate ops' within the sgemm's rounding (it does not round
// the product and lr times it apart).
#ifndef RUNNEL_COMMON_RUNTIME_FUSE_SGD_H_
#define RUNNEL_COMMON_RUNTIME_FUSE_SGD_H_

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "framework/graph.h"

namespace runnel {

struct SgdProducts {
  // apply_sgd node -> the matmul that computes its gradient.
  absl::flat_hash_map<const Node*, const Node*> product_of;
  // Those matmuls: the plan leaves them out.
  absl::flat_hash_set<const Node*> products;
};

// The pairs among `nodes` (a run's, as PruneGraph orders them) that fuse,
// given the run's fetches and fed tensors.
SgdProducts FindSgdProducts(const std::vector<Node*>& nodes,
                            const std::vector<NodeOut>& fetches,
                            const std::vector<NodeOut>& fed);

// The spec of the apply_sgd_matmul that takes the place of `apply` and
// `product`, with `inputs` for (ref, lr, a, b) and the control inputs of
// both.
NodeSpec FusedSgdSpec(const Node& apply, const Node& product,
                      std::vector<NodeOut> inputs,
                      std::vector<Node*> control_inputs);

// Gives each of `updates` (apply_sgd_matmul nodes of `graph`) a control
// input from every other reader of its variable that does not depend on
// it: the variable's consumers, and those of the nodes that pass its value
// on (read_variable, identity).
void OrderBeforeUpdate(Graph& graph, const std::vector<Node*>& updates);

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_FUSE_SGD_H_
