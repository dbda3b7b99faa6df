// What a script's runs need beyond evaluating it: the session (made at the
// first use, over the interpreter's graph), the runners that feed queues
// on threads of their own, the trace of runs --trace-runs asks for, and
// the --checkpoint-dir schedule (restore at the first run, save when due
// and at the end). The interpreter evaluates; the host runs.
#ifndef RUNNEL_INTERPRETER_RUN_HOST_H_
#define RUNNEL_INTERPRETER_RUN_HOST_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common_runtime/session.h"
#include "common_runtime/trace.h"
#include "framework/graph.h"
#include "interpreter/options.h"

namespace runnel::interp {

class Runners;

class RunHost {
 public:
  // `options` outlives the host.
  RunHost(const Options& options, std::shared_ptr<Graph> graph);
  ~RunHost();  // stops the runners before the session goes
  RunHost(const RunHost&) = delete;
  RunHost& operator=(const RunHost&) = delete;

  Session& session();
  Runners& runners();
  // Whether a runner is running (one may dequeue while a run waits).
  bool runners_running() const;
  // The first runner error so far, OK when none.
  absl::Status runners_error() const;
  // Stops every runner and joins its threads; returns their first error.
  absl::Status StopRunners();

  // The `run` expressions counted so far (in check mode too).
  int64_t runs() const { return runs_; }
  void CountRun() { ++runs_; }
  // Saves a checkpoint when one is due (the first run restores the newest
  // instead); nothing in check mode. The error is --checkpoint-dir's.
  absl::Status CheckpointIfDue();
  // Calls `run` (the run counted last), traced when its number is among
  // the runs --trace-runs asks for; `where` names it in the trace.
  absl::StatusOr<std::vector<Tensor>> Traced(
      const std::string& where,
      const std::function<absl::StatusOr<std::vector<Tensor>>()>& run);

  // With --checkpoint-dir: writes the last checkpoint (at the end of the
  // script, after an error or an interruption too).
  absl::Status FinishCheckpoints();
  // Writes the --trace file if the traced runs have not all happened (the
  // script ended first); says so on stderr.
  absl::Status FinishTrace();

 private:
  absl::Status StartCheckpoints();
  absl::Status SaveCheckpoint();
  absl::Status WriteTrace();

  const Options& options_;
  std::shared_ptr<Graph> graph_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<Runners> runners_;  // declared after session_: goes first
  int64_t runs_ = 0;

  // --checkpoint-dir
  bool checkpoints_started_ = false;
  double last_checkpoint_time_ = 0;
  int64_t last_checkpoint_step_ = 0;
  int64_t runs_at_last_check_ = 0;

  std::unique_ptr<Tracer> tracer_;  // with --trace, until written
  // A written tracer, kept until the runners stop: their runs may still
  // be adding to it.
  std::unique_ptr<Tracer> written_tracer_;
};

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_RUN_HOST_H_
