#include "common_runtime/rendezvous.h"

#include <utility>
#include <vector>

#include "base/strings.h"

namespace runnel {

std::string RendezvousKey(std::string_view src_device,
                          std::string_view dst_device, std::string_view edge,
                          uint64_t frame, int64_t iteration, int64_t step) {
  return StrCat(src_device, ";", dst_device, ";", edge, ";frame ", frame, ":",
                iteration, ";step ", step);
}

std::string_view SrcDeviceOfKey(std::string_view key) {
  return key.substr(0, key.find(';'));
}

std::string_view DstDeviceOfKey(std::string_view key) {
  const size_t start = key.find(';');
  if (start == std::string_view::npos) return {};
  const size_t end = key.find(';', start + 1);
  return key.substr(start + 1, end == std::string_view::npos
                                   ? std::string_view::npos
                                   : end - start - 1);
}

absl::Status Rendezvous::Send(const std::string& key, Tensor value,
                              bool is_dead) {
  Done waiter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return aborted_;
    Item& item = items_[key];
    if (item.has_value) {
      return absl::InternalError(StrCat("'", key, "' was sent twice"));
    }
    if (!item.waiter) {
      item.has_value = true;
      item.value = std::move(value);
      item.is_dead = is_dead;
      return absl::OkStatus();
    }
    waiter = std::move(item.waiter);
    items_.erase(key);
  }
  waiter(absl::OkStatus(), value, is_dead);
  return absl::OkStatus();
}

bool Rendezvous::Recv(const std::string& key, Done done, absl::Status* status,
                      Tensor* value, bool* is_dead) {
  std::lock_guard<std::mutex> lock(mu_);
  *is_dead = true;
  if (!aborted_.ok()) {
    *status = aborted_;
    return true;
  }
  Item& item = items_[key];
  if (!item.has_value) {
    if (item.waiter) {
      *status = absl::InternalError(StrCat("'", key, "' was received twice"));
      return true;
    }
    item.waiter = std::move(done);
    return false;
  }
  *status = absl::OkStatus();
  *value = std::move(item.value);
  *is_dead = item.is_dead;
  items_.erase(key);
  return true;
}

bool Rendezvous::Abort(const absl::Status& status) {
  std::vector<Done> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return false;
    aborted_ = status.ok() ? absl::AbortedError("step aborted") : status;
    for (auto& [key, item] : items_) {
      if (item.waiter) waiters.push_back(std::move(item.waiter));
    }
    items_.clear();
  }
  for (Done& w : waiters) w(status, Tensor(), true);
  return true;
}

absl::Status Rendezvous::AbortStatus() {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

bool Rendezvous::Holds(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(key);
  return it != items_.end() && it->second.has_value;
}

bool Rendezvous::HasWaiter(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(key);
  return it != items_.end() && it->second.waiter != nullptr;
}

std::vector<Rendezvous::Held> Rendezvous::Take(const KeyFilter& which,
                                               bool* rest) {
  std::vector<Held> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = items_.begin(); it != items_.end();) {
    if (it->second.has_value && which(it->first)) {
      out.push_back(
          {it->first, std::move(it->second.value), it->second.is_dead});
      items_.erase(it++);
    } else {
      ++it;
    }
  }
  *rest = !items_.empty();
  return out;
}

void Rendezvous::FailWaiters(const KeyFilter& which,
                             const absl::Status& status) {
  std::vector<Done> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = items_.begin(); it != items_.end();) {
      if (it->second.waiter && which(it->first)) {
        waiters.push_back(std::move(it->second.waiter));
        items_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (Done& w : waiters) w(status, Tensor(), true);
}

}  // namespace runnel
