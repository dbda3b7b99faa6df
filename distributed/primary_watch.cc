#include "distributed/primary_watch.h"

#include <utility>
#include <vector>

#include "absl/strings/str_format.h"

namespace runnel {

PrimaryWatch::PrimaryWatch(Probe probe, Options options)
    : probe_(std::move(probe)), options_(options) {}

void PrimaryWatch::Stop() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t PrimaryWatch::Add(const std::string& address,
                          std::shared_ptr<grpc::ClientContext> ctx) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!thread_.joinable() && !state_->stopping) {
    thread_ = std::thread([this] { Loop(); });
  }
  const int64_t id = state_->next_id++;
  state_->calls.emplace(id, Call{.address = address,
                                 .ctx = std::move(ctx),
                                 .start = Clock::now(),
                                 .cancelled = std::nullopt});
  return id;
}

std::optional<std::string> PrimaryWatch::Remove(int64_t id) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->calls.find(id);
  if (it == state_->calls.end()) return std::nullopt;
  std::optional<std::string> why = std::move(it->second.cancelled);
  state_->calls.erase(it);
  return why;
}

int64_t PrimaryWatch::silent_probes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->silent_probes;
}

void PrimaryWatch::Loop() {
  const auto quiet = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.quiet_s));
  const auto tick = std::chrono::duration<double>(options_.tick_s);
  State& state = *state_;
  std::unique_lock<std::mutex> lock(state.mu);
  while (!state.stopping) {
    state.cv.wait_for(lock, tick);
    if (state.stopping) break;
    const Clock::time_point now = Clock::now();
    std::vector<std::string> due;
    for (const auto& [id, call] : state.calls) {
      if (call.cancelled.has_value() || now - call.start < quiet) continue;
      Address& a = state.addresses[call.address];
      if (a.probing || now - a.last_probe < quiet) continue;
      a.probing = true;
      a.last_probe = now;
      due.push_back(call.address);
    }
    if (due.empty()) continue;
    lock.unlock();
    for (const std::string& address : due) {
      probe_(address, options_.deadline_s,
             [state = state_, address,
              deadline = options_.deadline_s](bool answered) {
               Answered(*state, address, answered, deadline);
             });
    }
    lock.lock();
  }
}

void PrimaryWatch::Answered(State& state, const std::string& address,
                            bool answered, double deadline_s) {
  std::vector<std::shared_ptr<grpc::ClientContext>> cancel;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    state.addresses[address].probing = false;
    if (answered) return;
    ++state.silent_probes;
    const std::string why = absl::StrFormat(
        "no answer to a status probe within %.2g s", deadline_s);
    for (auto& [id, call] : state.calls) {
      if (call.address != address || call.cancelled.has_value()) continue;
      call.cancelled = why;
      cancel.push_back(call.ctx);
    }
  }
  // Outside the lock: a cancelled call's callback may run in TryCancel
  // and remove itself.
  for (const auto& ctx : cancel) ctx->TryCancel();
}

}  // namespace runnel
