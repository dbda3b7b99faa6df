#include "interpreter/summaries.h"

#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/saver.h"
#include "common_runtime/session.h"
#include "io/event_file.h"

namespace runnel::interp {

namespace {
constexpr int64_t kDefaultHistogramsEvery = 100;
}  // namespace

absl::StatusOr<std::unique_ptr<Summaries>> Summaries::Open(
    const Options& options) {
  std::string dir = options.logdir;
  if (options.cluster != nullptr) {
    dir = StrCat(dir, "/", options.task_job, "_", options.task_index);
  }
  RN_ASSIGN_OR_RETURN(std::unique_ptr<EventWriter> writer,
                      EventWriter::Open(dir));
  const int64_t every = options.histograms_every > 0 ? options.histograms_every
                                                     : kDefaultHistogramsEvery;
  return std::unique_ptr<Summaries>(new Summaries(std::move(writer), every));
}

Summaries::Summaries(std::unique_ptr<EventWriter> writer,
                     int64_t histograms_every)
    : writer_(std::move(writer)), histograms_every_(histograms_every) {}

Summaries::~Summaries() = default;

absl::Status Summaries::Report(
    RunHost& host, const std::vector<std::pair<std::string, double>>& values) {
  ++reports_;
  // Before the first run there is no session: no step, graph or variables.
  const bool ran = host.runs() > 0;
  if (ran) {
    RN_ASSIGN_OR_RETURN(step_, Step(host));
    RN_RETURN_IF_ERROR(WriteGraphIfGrown(host, step_));
  } else {
    step_ = reports_;
  }
  for (const auto& [name, value] : values) {
    RN_RETURN_IF_ERROR(writer_->AddScalar(name, step_, value));
  }
  if (ran && (!histograms_written_ ||
              step_ - last_histogram_step_ >= histograms_every_)) {
    RN_RETURN_IF_ERROR(WriteHistograms(host, step_));
  }
  return absl::OkStatus();
}

absl::Status Summaries::Finish(RunHost& host) {
  if (host.runs() == 0) return absl::OkStatus();  // nothing ran: no session
  return WriteGraphIfGrown(host, step_);
}

absl::StatusOr<int64_t> Summaries::Step(RunHost& host) {
  Session& session = host.session();
  Node* step = session.graph().FindNode("global_step");
  if (step == nullptr) return reports_;
  RN_ASSIGN_OR_RETURN(std::vector<Tensor> value,
                      session.Run(Session::Feeds{}, {{step, 0}}, {}));
  return value[0].ScalarAsInt();
}

absl::Status Summaries::WriteGraphIfGrown(RunHost& host, int64_t step) {
  const Graph& graph = host.session().graph();
  if (graph.num_nodes() == graph_nodes_written_) return absl::OkStatus();
  graph_nodes_written_ = graph.num_nodes();
  return writer_->AddGraph(graph, step);
}

absl::Status Summaries::WriteHistograms(RunHost& host, int64_t step) {
  Session& session = host.session();
  std::vector<const Node*> trainable;
  for (const Node* v : VariableNodes(session)) {
    absl::StatusOr<bool> t = v->attr<bool>("trainable");
    if (t.ok() && *t) trainable.push_back(v);
  }
  if (trainable.empty()) return absl::OkStatus();
  RN_ASSIGN_OR_RETURN(TensorMap values, ReadVariables(session));
  for (const Node* v : trainable) {
    auto it = values.find(v->name());
    if (it == values.end()) continue;
    RN_RETURN_IF_ERROR(
        writer_->AddHistogram(v->name(), step, it->second.ToDoubles()));
  }
  histograms_written_ = true;
  last_histogram_step_ = step;
  return absl::OkStatus();
}

}  // namespace runnel::interp
