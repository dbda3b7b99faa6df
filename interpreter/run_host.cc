#include "interpreter/run_host.h"

#include <cstdio>
#include <utility>

#include "base/status_macros.h"
#include "base/strings.h"
#include "interpreter/runners.h"

namespace runnel::interp {

RunHost::RunHost(const Options& options, std::shared_ptr<Graph> graph)
    : options_(options), graph_(std::move(graph)) {
  if (!options_.trace_file.empty() && !options_.check_mode) {
    tracer_ = std::make_unique<Tracer>();
  }
}

RunHost::~RunHost() { StopRunners().IgnoreError(); }

Session& RunHost::session() {
  if (!session_) {
    session_ = std::make_unique<Session>(
        graph_,
        SessionOptions{.num_threads = options_.threads,
                       .seed = options_.seed,
                       .cpu_devices = options_.cpu_devices,
                       .gpu_devices = options_.gpu_devices,
                       .gpu = {.memory_limit = options_.gpu_memory},
                       .soft_placement = options_.soft_placement,
                       .f16_transfers = options_.f16_transfers,
                       // `device` blocks warn at their own line instead.
                       .warn = [](const Node&, const std::string&) {},
                       .cluster = options_.cluster});
  }
  return *session_;
}

Runners& RunHost::runners() {
  if (runners_ == nullptr) runners_ = std::make_unique<Runners>(&session());
  return *runners_;
}

bool RunHost::runners_running() const {
  return runners_ != nullptr && !runners_->empty();
}

absl::Status RunHost::runners_error() const {
  return runners_ == nullptr ? absl::OkStatus() : runners_->error();
}

absl::Status RunHost::StopRunners() {
  if (runners_ == nullptr) return absl::OkStatus();
  return runners_->StopAll();
}

absl::StatusOr<std::vector<Tensor>> RunHost::Traced(
    const std::string& where,
    const std::function<absl::StatusOr<std::vector<Tensor>>()>& run) {
  const bool traced = tracer_ != nullptr && runs_ >= options_.trace_first &&
                      runs_ <= options_.trace_last;
  if (!traced) return run();
  const double start = tracer_->Now();
  session().set_tracer(tracer_.get());
  absl::StatusOr<std::vector<Tensor>> ran = run();
  session().set_tracer(nullptr);
  tracer_->Add("host", StrCat("run ", runs_), where, start,
               tracer_->Now() - start);
  TraceMemory(session().devices(), *tracer_);
  if (runs_ == options_.trace_last) RN_RETURN_IF_ERROR(WriteTrace());
  return ran;
}

absl::Status RunHost::WriteTrace() {
  absl::Status s = tracer_->WriteFile(options_.trace_file);
  written_tracer_ = std::move(tracer_);
  if (!s.ok()) return absl::Status(s.code(), StrCat("--trace: ", s.message()));
  return s;
}

absl::Status RunHost::FinishTrace() {
  if (tracer_ == nullptr) return absl::OkStatus();
  const std::string covers =
      runs_ < options_.trace_first
          ? std::string("no run: it is empty")
          : StrCat("runs ", options_.trace_first, " to ", runs_);
  std::fprintf(options_.err,
               "note: the script made %lld runs, so the trace in %s (runs "
               "%lld to %lld asked) covers %s\n",
               static_cast<long long>(runs_), options_.trace_file.c_str(),
               static_cast<long long>(options_.trace_first),
               static_cast<long long>(options_.trace_last), covers.c_str());
  return WriteTrace();
}

}  // namespace runnel::interp
