#include "interpreter/runners.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/strings.h"
#include "interpreter/diag.h"

namespace runnel::interp {

Runners::~Runners() { StopAll().IgnoreError(); }

void Runners::Start(Spec spec) {
  // A later StopAll stops the runners started after it as well.
  auto group = std::make_unique<Group>();
  group->spec = std::move(spec);
  const int threads = std::max(1, group->spec.threads);
  group->running = threads;
  Group* g = group.get();
  for (int i = 0; i < threads; ++i) {
    g->threads.emplace_back([this, g, i] { Loop(g, i); });
  }
  groups_.push_back(std::move(group));
}

void Runners::Loop(Group* group, int thread) {
  const Spec& spec = group->spec;
  // A trace shows each runner thread's kernels on tracks of their own.
  const std::string lane = StrCat("runner ", spec.span.line, ".", thread);
  bool closes = true;  // whether ending this thread may close the queue
  while (!stop_.load()) {
    absl::StatusOr<std::vector<Tensor>> r = session_->Run(
        {}, {}, spec.targets, {.cancelled = &stop_, .trace_lane = lane});
    if (r.ok()) continue;
    const absl::StatusCode code = r.status().code();
    if (code == absl::StatusCode::kOutOfRange) break;  // end of input
    if (code == absl::StatusCode::kCancelled) break;   // closed or stopped
    Fail(*group, r.status());
    closes = false;
    break;
  }
  // The last thread closes the queue after the end of its input; pending
  // dequeues then get what is left.
  if (group->running.fetch_sub(1) == 1 && closes && !stop_.load()) {
    session_->Run({}, {}, {spec.close}).IgnoreError();
  }
}

void Runners::Fail(const Group& group, const absl::Status& s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) {
      lang::Diagnostic d = ToDiagnostic(s, group.spec.span);
      d.notes.push_back(Note(group.spec.span, "in the runner started here"));
      error_ = DiagStatus(std::move(d));
    }
  }
  // Nothing more will come: consumers waiting on the queue end (and then
  // report this error).
  session_->Run({}, {}, {group.spec.cancel}).IgnoreError();
}

absl::Status Runners::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

absl::Status Runners::StopAll() {
  stop_ = true;
  for (auto& group : groups_) {
    for (std::thread& t : group->threads) {
      if (t.joinable()) t.join();
    }
  }
  groups_.clear();
  stop_ = false;
  return error();
}

}  // namespace runnel::interp
