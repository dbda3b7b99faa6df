// All-reduce between the workers of a cluster (framework/collectives.h,
// docs/cluster.md "All-reduce"), over the rendezvous and RecvTensor calls
// that Send/Recv pairs use: each worker sends its tensor under a key of
// its own in a rendezvous kept for the group's call (a step id of its own,
// negative, so never a run's), and fetches every other worker's from that
// worker. Each worker then adds the M tensors up in the workers' order, so
// all get the same sum, bit for bit. A worker sends its tensor once and
// receives M - 1: the fewest bytes for 2 workers (a ring would move
// 2 (M - 1) / M of them per worker for larger M).
#ifndef RUNNEL_DISTRIBUTED_COLLECTIVES_H_
#define RUNNEL_DISTRIBUTED_COLLECTIVES_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "distributed/worker.h"
#include "framework/collectives.h"

namespace runnel {

class WorkerCollectives : public Collectives {
 public:
  // `worker` (not owned) is this task's, worker `index` of `num_workers`;
  // it must outlive this.
  WorkerCollectives(Worker* worker, int num_workers, int index)
      : worker_(worker), num_workers_(num_workers), index_(index) {}

  int num_workers() const override { return num_workers_; }
  int worker_index() const override { return index_; }
  void AllReduceSum(const std::string& group, const Tensor& x,
                    Done done) override;

  // Waits up to `seconds` until the other workers have read every tensor
  // this worker sent them (a worker that ends before would fail them);
  // whether they have.
  bool Drain(double seconds);
  // Whether this worker has sent any tensor.
  bool has_sent() const {
    std::lock_guard<std::mutex> lock(mu_);
    return !sent_.empty();
  }

  // The step id of a group's n-th call: the same in every process.
  static int64_t CallStep(const std::string& group, int64_t call);

 private:
  struct Call;
  // Fetches worker `from`'s tensor of the call.
  void Fetch(const std::shared_ptr<Call>& state, int from);
  void Arrive(const std::shared_ptr<Call>& state, int from,
              const absl::Status& s, const Tensor& v, bool dead);
  void Finish(const std::shared_ptr<Call>& state);

  struct Group {
    int64_t next_call = 0;
    bool busy = false;  // a call is under way
  };
  Worker* const worker_;
  const int num_workers_;
  const int index_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, Group> groups_ ABSL_GUARDED_BY(mu_);
  // The workers that have answered a fetch (so are not starting).
  absl::flat_hash_set<int> answered_ ABSL_GUARDED_BY(mu_);
  // Each group's latest tensors sent (step and key), for Drain.
  absl::flat_hash_map<std::string, std::deque<std::pair<int64_t, std::string>>>
      sent_ ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_COLLECTIVES_H_
