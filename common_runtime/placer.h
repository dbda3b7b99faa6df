// Placement: which device of the set runs each node (docs/devices.md).
//
//   1. Hard constraints: a node's requested device (its `device` blocks,
//      merged as nested blocks refine them) limits it to matching devices.
//   2. Colocation groups share one device: a variable with every op that
//      reads or updates it, an optimizer slot ("w/adam_m") with its variable,
//      a stack with its pushes and pops, and each loop's machinery (enters,
//      exits, merges, switches, condition; its body may spread over
//      devices). Their constraints are merged; two that disagree are an
//      error naming both nodes' lines.
//   3. A cost model places the rest: nodes are taken in topological order
//      and each free group goes to the device where its first node would
//      finish earliest, given the devices' estimated busy time, the
//      estimated time of the node (from its shapes and the device's
//      measured rates, common_runtime/cost_model.h) and the bytes its inputs
//      would cross between devices (list scheduling). A node stays
//      on its first input's device unless another would finish clearly
//      earlier (10% and 20 us), so with one device, or when moving gains
//      little, nothing moves. A group that takes nothing from another
//      (a variable, a constant, a feed) goes where its first consumer
//      goes. A CPU device left with under 5% of the estimated work gives
//      its free groups back to the first device.
//
// In a cluster (framework/device_set.h), nodes go to another task's device
// only when a request or a colocation puts them there. A request for task
// `*` ("/job:ps/task:*") spreads the variables asking for it over the
// matching tasks round-robin, in the order of `spread_order`. The feeds and
// fetches of a run stay on the local task.
//
// No matching device is an error at the node's line; with `soft_placement`
// the node may go anywhere and `warn` hears about it, once per spec.
#ifndef RUNNEL_COMMON_RUNTIME_PLACER_H_
#define RUNNEL_COMMON_RUNTIME_PLACER_H_

#include <functional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "common_runtime/cost_model.h"
#include "framework/device_set.h"
#include "framework/graph.h"

namespace runnel {

struct PlacerOptions {
  bool soft_placement = false;
  // Soft placement's warnings: the node that asked, and what happened.
  std::function<void(const Node&, const std::string&)> warn = {};
  // Stands for each unknown dimension (`?`) in the cost estimates.
  int64_t unknown_dim = 32;
  // Variable name -> its rank among the variables that ask for task `*`
  // (stable across runs and workers, so that every worker puts a shared
  // variable on the same task). Slots follow their variable.
  absl::flat_hash_map<std::string, int> spread_order = {};
  // A local device's rates. Unset: CostModel::Global()'s for the device's
  // type and intra-op threads (measured once, cached). Another task's
  // device takes the first local device's. With one device nothing is
  // asked.
  std::function<CostRates(const Device&)> rates = {};
};

// Sets every node's assigned device (Node::set_assigned_device).
absl::Status PlaceGraph(Graph& graph, const DeviceSet& devices,
                        const PlacerOptions& options = {});

// The cost model's estimate of a node's compute, in floating-point
// operations (matmul, conv2d and its gradients from their shapes;
// element-wise work from the output size), with `unknown_dim` for unknown
// dimensions.
double EstimatedFlops(const Node& node, int64_t unknown_dim);

// A GPU's rates for the estimates: nominal figures for a Hopper GPU over
// PCIe (transfer_bytes_per_s is the link's), not calibrated on one.
CostRates NominalGpuRates();

// The cost model's estimate of a node's time on a device with `rates`: the
// executor's overhead, plus by the op's class (ClassOfOp) its flops over
// the matmul rate, or its bytes (in and out; a reduction's in) over the
// element-wise, transcendental or reduction rate.
double EstimatedSeconds(const Node& node, const CostRates& rates,
                        int64_t unknown_dim);

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_PLACER_H_
