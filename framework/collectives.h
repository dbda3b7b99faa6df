// Collective operations between the workers of a cluster (docs/cluster.md,
// "All-reduce"): what the `all_reduce` kernel calls. The cluster layer
// (distributed/grpc_cluster.h) implements it over the tasks' gRPC
// channels, and the session of a worker keeps it in its resources as
// "_collectives"; a run without a cluster has none.
#ifndef RUNNEL_FRAMEWORK_COLLECTIVES_H_
#define RUNNEL_FRAMEWORK_COLLECTIVES_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "framework/resource_mgr.h"
#include "framework/tensor.h"

namespace runnel {

class Collectives : public Resource {
 public:
  static constexpr char kName[] = "_collectives";
  using Done = std::function<void(absl::StatusOr<Tensor>)>;

  // The workers of the cluster, and this task's index among them (-1 when
  // this task is not a worker).
  virtual int num_workers() const = 0;
  virtual int worker_index() const = 0;

  // Calls `done` with the element-wise sum of `x` over every worker, once
  // each worker has called AllReduceSum for `group` as many times as this
  // one has (each group's calls are matched in order). Every worker gets
  // the same sum, bit for bit: it is added up in the workers' order. On
  // any worker's failure (a dead task, another shape or dtype), `done`
  // gets the error.
  virtual void AllReduceSum(const std::string& group, const Tensor& x,
                            Done done) = 0;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_COLLECTIVES_H_
