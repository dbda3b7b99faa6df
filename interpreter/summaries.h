// `runnel run --logdir DIR` (docs/training.md): TensorBoard's event file of
// a script's run (io/event_file.h).
//
// Each report(...) adds its numeric scalars, at the global step (the count
// of reports when the graph has no `global_step`). The graph is written at
// the first report and again at a later one, or at the end of the script,
// when it has grown since. Histograms of the trainable variables are
// written at the first report and then once --histograms-every global
// steps have passed. In a cluster each task that runs the script writes
// its own run, DIR/JOB_TASK (DIR/worker_0, ...), shown side by side.
#ifndef RUNNEL_INTERPRETER_SUMMARIES_H_
#define RUNNEL_INTERPRETER_SUMMARIES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "interpreter/options.h"
#include "interpreter/run_host.h"

namespace runnel {
class EventWriter;
}  // namespace runnel

namespace runnel::interp {

class Summaries {
 public:
  // The event file for `options.logdir`; errors name the directory.
  static absl::StatusOr<std::unique_ptr<Summaries>> Open(
      const Options& options);
  ~Summaries();

  // A report's numeric scalars, by name.
  absl::Status Report(
      RunHost& host, const std::vector<std::pair<std::string, double>>& values);
  // At the end of the script: the graph, when it grew since last written.
  absl::Status Finish(RunHost& host);

 private:
  Summaries(std::unique_ptr<EventWriter> writer, int64_t histograms_every);
  // These three need the session, so a run before them.
  // The global step's value, or the count of reports without one.
  absl::StatusOr<int64_t> Step(RunHost& host);
  absl::Status WriteGraphIfGrown(RunHost& host, int64_t step);
  absl::Status WriteHistograms(RunHost& host, int64_t step);

  std::unique_ptr<EventWriter> writer_;
  int64_t histograms_every_;
  int64_t reports_ = 0;
  int graph_nodes_written_ = 0;
  int64_t step_ = 0;  // the last report's
  bool histograms_written_ = false;
  int64_t last_histogram_step_ = 0;
};

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_SUMMARIES_H_
