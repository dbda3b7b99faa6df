// The state of an executor's run by frame (executor.h, executor_run.cc):
// each loop entered gets a frame instance per iteration of its parent, and
// each frame instance its iterations, each with the pending counts and
// input slots of the frame's nodes. The executor's plan (executor.cc)
// gives each frame's static layout (Executor::StaticFrame).
#ifndef RUNNEL_COMMON_RUNTIME_EXECUTOR_FRAMES_H_
#define RUNNEL_COMMON_RUNTIME_EXECUTOR_FRAMES_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common_runtime/executor.h"
#include "framework/tensor.h"

namespace runnel {

// A tensor slot: a value and whether it is dead (on an untaken branch).
struct Entry {
  Tensor tensor;
  bool is_dead = false;
  bool has_value = false;  // a live value arrived (merges read this)
};

// One iteration of one frame instance: pending counts and input slots of
// the frame's nodes, and what is still running in it.
struct IterationState {
  explicit IterationState(const Executor::StaticFrame& f)
      : pending(new std::atomic<int>[f.num_nodes]),
        merge_dead(new std::atomic<int>[f.num_nodes]),
        dead_controls(new std::atomic<bool>[f.num_nodes]),
        inputs(f.num_inputs) {
    Reset(f);
  }
  // As new, for another iteration of the same frame (a retired iteration's
  // state is reused: four allocations an iteration fewer). Its inputs were
  // emptied when it retired (Retire).
  void Reset(const Executor::StaticFrame& f) {
    for (int i = 0; i < f.num_nodes; ++i) {
      pending[i].store(f.initial_pending[i], std::memory_order_relaxed);
      merge_dead[i].store(0, std::memory_order_relaxed);
      dead_controls[i].store(false, std::memory_order_relaxed);
    }
    outstanding_ops.store(0, std::memory_order_relaxed);
    outstanding_frames.store(0, std::memory_order_relaxed);
    next.store(nullptr, std::memory_order_relaxed);
  }
  // Frees the tensors still waiting in its slots (inputs of nodes that
  // never ran: dead branches), as destroying it would.
  void Retire() {
    for (Entry& e : inputs) {
      if (e.has_value || e.is_dead || !e.tensor.empty()) e = Entry();
    }
  }
  std::unique_ptr<std::atomic<int>[]> pending;
  std::unique_ptr<std::atomic<int>[]> merge_dead;
  std::unique_ptr<std::atomic<bool>[]> dead_controls;
  std::vector<Entry> inputs;
  std::atomic<int> outstanding_ops{0};
  std::atomic<int> outstanding_frames{0};
  // The next iteration's state once a next_iteration of this one started
  // it: the loop's other next_iterations deliver there without the
  // frame's lock. It stays valid while this iteration runs (iterations
  // retire oldest first).
  std::atomic<IterationState*> next{nullptr};
};

// One instance of a frame: the root, or a loop entered from one iteration
// of its parent.
struct FrameState {
  const Executor::StaticFrame* def = nullptr;
  int static_id = 0;
  uint64_t id = 0;
  FrameState* parent = nullptr;
  int64_t parent_iter = 0;
  IterationState* parent_state = nullptr;
  std::mutex mu;
  std::map<int64_t, std::unique_ptr<IterationState>> iterations;
  // Retired iterations' states, for the next ones (at most
  // parallel_iterations).
  std::vector<std::unique_ptr<IterationState>> spare;
  int pending_enters = 0;
  // Loop invariants (enter is_constant): delivered to every iteration.
  struct Invariant {
    int item;
    std::vector<Tensor> value;  // as an output list, ready to deliver
    bool is_dead;
  };
  std::vector<Invariant> invariants;
  // next_iteration values waiting for an iteration slot: (iteration, item).
  // A list: empty, it holds no memory (a finished frame is kept until the
  // run ends; executor_run.cc, FinishFrame).
  std::list<std::tuple<int64_t, int, Entry>> deferred;
  absl::flat_hash_set<int> live_exits;
  bool done = false;
};

struct TaggedNode {
  int item;
  FrameState* frame;
  int64_t iter;
  IterationState* state;
};

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_EXECUTOR_FRAMES_H_
