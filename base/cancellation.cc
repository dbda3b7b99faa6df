#include "base/cancellation.h"

#include <utility>
#include <vector>

namespace runnel {

CancellationManager::Token CancellationManager::Register(
    std::function<void()> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return kCancelled;
  const Token t = next_++;
  callbacks_.emplace(t, std::move(callback));
  return t;
}

void CancellationManager::Deregister(Token token) {
  std::lock_guard<std::mutex> lock(mu_);
  callbacks_.erase(token);
}

void CancellationManager::StartCancel() {
  std::vector<std::function<void()>> run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    for (auto& entry : callbacks_) run.push_back(std::move(entry.second));
    callbacks_.clear();
  }
  for (std::function<void()>& callback : run) callback();
}

bool CancellationManager::IsCancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

}  // namespace runnel
