// Partitioning a placed graph (common_runtime/placer.h): one graph per device,
// and for every edge between devices a `_send` on the producer's device and a
// `_recv` on the consumer's, meeting in the step's rendezvous
// (common_runtime/rendezvous.h). One pair serves every consumer of a tensor on
// one device. A constant used on another device is copied there instead.
// A control edge between devices becomes a pair carrying a placeholder
// scalar, so deadness (an untaken branch) crosses with it.
#ifndef RUNNEL_COMMON_RUNTIME_PARTITION_H_
#define RUNNEL_COMMON_RUNTIME_PARTITION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/graph.h"

namespace runnel {

struct PartitionOptions {
  // `--transfer-dtype f16`: f32 tensors cross as f16 (a cast before the
  // send, another after the receive), except those known to have fewer
  // than 1024 elements.
  bool f16_transfers = false;
};

struct GraphPartition {
  std::string device;  // full name
  std::shared_ptr<Graph> graph;
  int num_sends = 0, num_recvs = 0;
};

// Partitions in the order their devices first appear among the nodes.
// Every node must have an assigned device. A loop's back edge may not cross
// devices (the placer keeps each loop on one device).
absl::StatusOr<std::vector<GraphPartition>> PartitionGraph(
    const Graph& graph, const PartitionOptions& options = {});

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_PARTITION_H_
