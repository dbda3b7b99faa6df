#include "framework/live_workers.h"

#include <algorithm>
#include <vector>

namespace runnel {
namespace {
constexpr auto kSilence = std::chrono::seconds(3);
}  // namespace

LiveWorkers::LiveWorkers(int expected)
    : expected_(expected), watcher_([this] { Watch(); }) {}

LiveWorkers::~LiveWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  watcher_.join();
}

void LiveWorkers::Beat(const std::string& task, bool leaving) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Seen& s = seen_[task];
    changed = leaving != s.left || s.silent;
    s.last = std::chrono::steady_clock::now();
    s.left = leaving;
    s.silent = false;
  }
  if (changed) Notify();
}

int LiveWorkers::Count() const {
  std::lock_guard<std::mutex> lock(mu_);
  int gone = 0;
  for (const auto& [task, s] : seen_) gone += s.left || s.silent;
  // Workers beyond the spec's (a spec of another shape) count once seen.
  const int extra = std::max(0, static_cast<int>(seen_.size()) - expected_);
  return std::max(expected_ + extra - gone, 0);
}

bool LiveWorkers::Alive(const std::string& task) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = seen_.find(task);
  return it == seen_.end() || !(it->second.left || it->second.silent);
}

int LiveWorkers::Subscribe(std::function<void()> on_change) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.emplace(next_id_, std::move(on_change));
  return next_id_++;
}

void LiveWorkers::Unsubscribe(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.erase(id);
}

void LiveWorkers::Notify() {
  std::vector<std::function<void()>> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, f] : subscribers_) calls.push_back(f);
  }
  for (auto& f : calls) f();
}

void LiveWorkers::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(250));
    bool changed = false;
    const auto now = std::chrono::steady_clock::now();
    for (auto& [task, s] : seen_) {
      if (!s.left && !s.silent && now - s.last > kSilence) {
        s.silent = true;
        changed = true;
      }
    }
    if (changed && !stop_) {
      lock.unlock();
      Notify();
      lock.lock();
    }
  }
}

}  // namespace runnel
