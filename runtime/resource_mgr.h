// Per-device state owned by a session (docs/architecture.md): variables,
// random-generator counters, later queues. Found by name; graph rewrites
// never copy state, they refer to it by name.
//
// Thread-safety: ResourceMgr and every Resource are safe to use from many
// kernels at once. A Variable's value is copy-on-write: readers get the
// current Tensor (sharing its buffer), writers install a new buffer, so a
// value read earlier is never changed under its reader.
#ifndef RUNNEL_RUNTIME_RESOURCE_MGR_H_
#define RUNNEL_RUNTIME_RESOURCE_MGR_H_

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "runtime/tensor.h"

namespace runnel {

class Device;

class Resource {
 public:
  virtual ~Resource() = default;
};

class Variable : public Resource {
 public:
  Variable(DType dtype, Shape shape)
      : dtype_(dtype), shape_(std::move(shape)) {}
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }

  bool initialized() const;
  // The current value; FailedPrecondition when not yet initialized.
  absl::StatusOr<Tensor> Read() const;
  // Replaces the value; checks dtype and shape. The value is in the memory
  // of device `holder`, host memory for nullptr or a CPU device.
  absl::Status Assign(Tensor value, Device* holder = nullptr);
  // Moves the value into the memory of `device` (nullptr or a CPU device:
  // host memory) when it is elsewhere, through the devices' copies
  // (Device::CopyToHost, CopyFromHost), so that a kernel on `device` can
  // use it: a variable placed on a GPU by one plan and on the CPU by another
  // (a checkpoint's read, a loop the GPU cannot run) follows its users.
  // Update and Mutate keep the value where it is. Does nothing before the
  // variable is initialized.
  absl::Status MoveTo(Device* device);
  // Atomically replaces the value with fn(old value) (read-modify-write, as
  // assign_add needs). fn must return a new tensor, not modify the old one.
  absl::StatusOr<Tensor> Update(
      const std::function<absl::StatusOr<Tensor>(const Tensor&)>& fn);
  // Changes the value in place with fn (scatter updates, which touch a few
  // rows of a large table). When a reader still holds the current buffer,
  // fn works on a copy that then replaces it, so the reader's value never
  // changes under it. fn must check before it writes: on an error the
  // value must be unchanged. Returns the new value. `copy` makes that copy
  // (Tensor::Clone when null; a GPU's value is copied on the GPU).
  absl::StatusOr<Tensor> Mutate(
      const std::function<absl::Status(Tensor*)>& fn,
      const std::function<absl::StatusOr<Tensor>(const Tensor&)>& copy =
          nullptr);

 private:
  absl::Status CheckValue(const Tensor& value) const;
  const DType dtype_;
  const Shape shape_;
  mutable std::mutex mu_;
  Tensor value_ ABSL_GUARDED_BY(mu_);
  Device* holder_ ABSL_GUARDED_BY(mu_) = nullptr;  // nullptr: host memory
  bool initialized_ ABSL_GUARDED_BY(mu_) = false;
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

 private:
  std::mutex mu_;
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

#endif  // RUNNEL_RUNTIME_RESOURCE_MGR_H_
