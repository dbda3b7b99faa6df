// Per-device state owned by a session (docs/architecture.md): variables
// (variable.h), random-generator counters, queues. Found by name; graph
// rewrites never copy state, they refer to it by name.
//
// Thread-safety: ResourceMgr and every Resource are safe to use from many
// kernels at once. A Variable's value is copy-on-write: readers get the
// current Tensor (sharing its buffer), writers install a new buffer, so a
// value read earlier is never changed under its reader (variable.h).
#ifndef RUNNEL_FRAMEWORK_RESOURCE_MGR_H_
#define RUNNEL_FRAMEWORK_RESOURCE_MGR_H_

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "framework/tensor.h"

namespace runnel {

class Resource {
 public:
  virtual ~Resource() = default;
};

// The draw counter of one random op, so each run draws new numbers while a
// whole program stays repeatable for a seed (docs/architecture.md).
class RandomCounter : public Resource {
 public:
  // Reserves `n` draws and returns the index of the first.
  uint64_t Reserve(uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t first = next_;
    next_ += n;
    return first;
  }
  // The next draw's index; setting it (a replica's copy,
  // distributed/replica.h).
  uint64_t next() const {
    std::lock_guard<std::mutex> lock(mu_);
    return next_;
  }
  void set_next(uint64_t next) {
    std::lock_guard<std::mutex> lock(mu_);
    next_ = next;
  }

 private:
  mutable std::mutex mu_;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

class ResourceMgr {
 public:
  // Returns the resource called `name`, making it with `make` if absent.
  // Fails when a resource of another type has that name.
  template <typename R>
  absl::StatusOr<std::shared_ptr<R>> LookupOrCreate(
      const std::string& name,
      const std::function<std::shared_ptr<R>()>& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = resources_.find(name);
    if (it == resources_.end()) {
      std::shared_ptr<R> r = make();
      resources_.emplace(name, r);
      return r;
    }
    auto typed = std::dynamic_pointer_cast<R>(it->second);
    if (!typed) {
      return absl::InvalidArgumentError("resource '" + name +
                                        "' exists with another type");
    }
    return typed;
  }
  template <typename R>
  std::shared_ptr<R> Lookup(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = resources_.find(name);
    if (it == resources_.end()) return nullptr;
    return std::dynamic_pointer_cast<R>(it->second);
  }
  // Names of all resources of type R, sorted.
  template <typename R>
  std::vector<std::string> Names() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [n, r] : resources_) {
      if (std::dynamic_pointer_cast<R>(r)) out.push_back(n);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Forgets every resource of type R (those in use live on with their
  // users; a later LookupOrCreate makes a new one).
  template <typename R>
  void Erase() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = resources_.begin(); it != resources_.end();) {
      if (std::dynamic_pointer_cast<R>(it->second) != nullptr) {
        resources_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    resources_.clear();
  }

 private:
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Resource>> resources_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_RESOURCE_MGR_H_
