// The session's side of a cluster (docs/cluster.md): the chief initialises
// the variables on other tasks and the others wait for it, and a step whose
// partitions run on several tasks is run and ended on all of them.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <thread>

#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/rendezvous.h"
#include "common_runtime/session.h"
#include "common_runtime/session_plan.h"

namespace runnel {

absl::Status Session::InitializeRemoteVariables(Plan& plan) {
  ClusterContext& cluster = *options_.cluster;
  std::map<std::string, std::vector<const Node*>> by_task;
  // A plan on one device (a cluster of one task) keeps no tasks: every
  // variable is local.
  for (size_t k = 0; k < plan.variable_tasks.size(); ++k) {
    if (!plan.variable_tasks[k].empty()) {
      by_task[plan.variable_tasks[k]].push_back(plan.variables[k]);
    }
  }
  if (by_task.empty()) return absl::OkStatus();
  const auto start = std::chrono::steady_clock::now();
  bool informed = false;
  for (;;) {
    std::vector<std::pair<std::string, const Node*>> missing;
    for (const auto& [task, vars] : by_task) {
      std::vector<std::string> names;
      for (const Node* v : vars) names.push_back(v->name());
      RN_ASSIGN_OR_RETURN(std::vector<bool> ready,
                          cluster.VariablesInitialized(task, names));
      for (size_t i = 0; i < vars.size(); ++i) {
        if (!ready[i]) missing.emplace_back(task, vars[i]);
      }
    }
    if (missing.empty()) return absl::OkStatus();
    if (cluster.is_chief()) {
      // Restored values, else the initializers' (run together).
      std::vector<std::optional<Tensor>> values(missing.size());
      std::vector<NodeOut> initializers;
      std::vector<size_t> initialized;
      size_t constants = 0;
      for (size_t i = 0; i < missing.size(); ++i) {
        const Node& v = *missing[i].second;
        RN_ASSIGN_OR_RETURN(values[i], InitialValue(v));
        if (values[i].has_value()) continue;
        RN_ASSIGN_OR_RETURN(NodeOut init, InitializerOf(v));
        // A constant is its value: taken here, not computed on (and
        // shipped inside a graph to) the variable's task, which a large
        // table would not fit.
        if (init.node->op() == "const") {
          absl::StatusOr<Tensor> value = init.node->attr<Tensor>("value");
          if (value.ok()) {
            values[i] = *std::move(value);
            ++constants;
            continue;
          }
        }
        initializers.push_back(init);
        initialized.push_back(i);
      }
      if (!initializers.empty()) {
        RN_ASSIGN_OR_RETURN(std::vector<Tensor> computed,
                            Run(Feeds{}, initializers, {}));
        for (size_t k = 0; k < initialized.size(); ++k) {
          values[initialized[k]] = std::move(computed[k]);
        }
      }
      std::map<std::string,
               std::pair<std::vector<std::string>, std::vector<Tensor>>>
          sets;
      for (size_t i = 0; i < missing.size(); ++i) {
        auto& [names, tensors] = sets[missing[i].first];
        names.push_back(missing[i].second->name());
        tensors.push_back(*values[i]);
      }
      for (const auto& [task, set] : sets) {
        RN_RETURN_IF_ERROR(cluster.InitVariables(task, set.first, set.second));
      }
      const size_t restored = missing.size() - initialized.size() - constants;
      if (restored > 0) {
        std::lock_guard<std::mutex> lock(mu_);
        cluster.Inform(StrCat("restored ", restored, " variable(s) from ",
                              initial_source_));
      }
      return absl::OkStatus();
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    const Node& first = *missing.front().second;
    if (waited > cluster.chief_wait_seconds()) {
      return AttachNode(absl::DeadlineExceededError(StrCat(
                            "the chief (worker 0) did not initialize '",
                            first.name(), "' on ", missing.front().first,
                            " within ", cluster.chief_wait_seconds(), " s")),
                        first.name(), first.span());
    }
    if (!informed) {
      cluster.Inform(StrCat("waiting for the chief (worker 0) to initialize ",
                            missing.size(), " variable(s), first '",
                            first.name(), "' on ", missing.front().first));
      informed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

absl::Status Session::RunClusterStep(Plan& plan, CallFrame* frame,
                                     const RunOptions& run) {
  const std::atomic<bool>* cancelled = run.cancelled;
  const std::string& trace_lane = run.trace_lane;
  ClusterContext& cluster = *options_.cluster;
  const int64_t step = cluster.NewStepId();
  std::shared_ptr<Rendezvous> rendezvous = cluster.StepRendezvous(step);
  std::vector<std::string> tasks;
  for (const Plan::RemotePart& r : plan.remote) {
    if (std::find(tasks.begin(), tasks.end(), r.task) == tasks.end()) {
      tasks.push_back(r.task);
    }
  }
  // The remote partitions' outcomes; the first failure, here or there,
  // aborts the step everywhere and is the step's error (the others follow
  // from the abort: a kernel waiting on a barrier ends cancelled, with its
  // message, and must not hide an Unavailable that a retry would mend).
  struct Remote {
    std::mutex mu;
    std::condition_variable cv;
    size_t pending = 0;
    absl::Status first;
    absl::Status cause;
    // A task that answered Unavailable (it was not there, or stopped being
    // its task's primary): what failed elsewhere in the step may have
    // failed for that (a replica that steps down drops its state under the
    // kernels still running there), so the step is run again (Run).
    absl::Status unavailable;
    std::atomic<bool> aborted{false};
    std::vector<std::string> ended;  // tasks where the step ended with the run
  } remote;
  remote.pending = plan.remote.size();
  auto abort = [&](const absl::Status& s) {
    if (remote.aborted.exchange(true)) return;
    {
      std::lock_guard<std::mutex> lock(remote.mu);
      remote.cause = s;
    }
    cluster.AbortStep(step, tasks, s);
  };
  for (const Plan::RemotePart& r : plan.remote) {
    cluster.RunPartition(
        r.task, r.handle, step, run.snapshot, run.update, r.returns,
        /*ends=*/tasks.size() == 1, [&](absl::Status s, bool ended) {
          if (!s.ok()) abort(s);
          std::lock_guard<std::mutex> lock(remote.mu);
          if (ended) remote.ended.push_back(r.task);
          if (remote.first.ok()) remote.first = s;
          if (absl::IsUnavailable(s) && remote.unavailable.ok()) {
            remote.unavailable = s;
          }
          if (--remote.pending == 0) remote.cv.notify_all();
        });
  }
  std::vector<std::pair<Executor*, Executor::RunArgs>> runs;
  for (Plan::Part& p : plan.parts) {
    rendezvous->Prefetch(p.executor->RootRecvKeys(step));
    runs.push_back({p.executor.get(),
                    {.call_frame = frame,
                     .global_seed = options_.seed,
                     .cancelled = cancelled,
                     .rendezvous = rendezvous.get(),
                     .step_id = step,
                     .tracer = tracer_.load(),
                     .trace_lane = trace_lane,
                     .on_abort = abort}});
  }
  absl::Status local = Executor::RunPartitions(runs);
  if (!local.ok()) abort(local);
  {
    std::unique_lock<std::mutex> lock(remote.mu);
    remote.cv.wait(lock, [&] { return remote.pending == 0; });
  }
  std::erase_if(tasks, [&](const std::string& t) {
    return std::find(remote.ended.begin(), remote.ended.end(), t) !=
           remote.ended.end();
  });
  cluster.EndStep(step, tasks);
  if (!remote.unavailable.ok()) return remote.unavailable;
  if (!remote.cause.ok()) return remote.cause;
  return local.ok() ? remote.first : local;
}

}  // namespace runnel
