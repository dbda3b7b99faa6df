// Session's plan of one run signature, shared by session.cc (building and
// running plans) and session_cluster.cc (their steps across tasks). Not for
// users of Session.
#ifndef RUNNEL_COMMON_RUNTIME_SESSION_PLAN_H_
#define RUNNEL_COMMON_RUNTIME_SESSION_PLAN_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common_runtime/executor.h"
#include "common_runtime/session.h"

namespace runnel {

// What one run signature needs: the pruned graph's executor and the
// variables on its path.
struct Session::Plan {
  std::unique_ptr<Executor> executor;  // with one device
  struct Part {
    std::string device;
    std::unique_ptr<Executor> executor;
  };
  std::vector<Part> parts;  // with several: one per device used
  struct RemotePart {
    std::string task;  // "/job:ps/task:0"
    std::string handle;
    // It receives nothing and is its task's only partition: its values may
    // come back with its answer (ClusterContext::RunPartition).
    bool returns = false;
  };
  std::vector<RemotePart> remote;  // in a cluster: those on other tasks
  std::shared_ptr<const Graph> placed;
  int num_fetches = 0;
  std::vector<const Node*> variables;  // nodes of the session's graph
  // The task each of `variables` is on ("" = this one).
  std::vector<std::string> variable_tasks;
  std::atomic<bool> variables_ready{false};
};

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_SESSION_PLAN_H_
