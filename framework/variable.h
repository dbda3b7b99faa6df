// A variable: a typed, shaped value that persists across runs, held in
// host memory or in the memory of the device that last used it.
//
// Thread-safety: a Variable's value is copy-on-write: readers get the current
// Tensor (sharing its buffer), writers install a new buffer, so a value read
// earlier is never changed under its reader.
#ifndef RUNNEL_FRAMEWORK_VARIABLE_H_
#define RUNNEL_FRAMEWORK_VARIABLE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "framework/resource_mgr.h"
#include "framework/tensor.h"

namespace runnel {

class Device;

// One write of one update, so that a retried update writes once: a worker
// whose step failed on a replicated parameter server (docs/cluster.md,
// "Replicated parameter servers") runs it again against the backup, which
// may already hold some of the first attempt's writes. `writer` names the
// worker process, `seq` its update (each run of a step; a retry keeps
// it), `write` the node and loop iteration that writes.
struct WriteKey {
  std::string writer;
  int64_t seq = 0;
  std::string write;
};

// The update a run's writes belong to: set on the partitions a worker runs
// on a replicated parameter server (RunGraphRequest's writer and seq).
struct UpdateTag {
  std::string writer;
  int64_t seq = 0;
};

// The writes a variable holds of each writer's latest update: the update's
// number and which of its writes are in.
struct AppliedWrites {
  struct Latest {
    int64_t seq = 0;
    std::set<std::string> writes;
  };
  std::map<std::string, Latest> by_writer;
  // Whether `key`'s write is in (or belongs to an older update).
  bool Contains(const WriteKey& key) const;
  void Add(const WriteKey& key);
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
  // With `key`, a write that is already in changes nothing (WriteKey).
  absl::Status Assign(Tensor value, Device* holder = nullptr,
                      const WriteKey* key = nullptr);
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
  // With `key`, a write that is already in returns the current value
  // without calling fn.
  absl::StatusOr<Tensor> Update(
      const std::function<absl::StatusOr<Tensor>(const Tensor&)>& fn,
      const WriteKey* key = nullptr);
  // Changes the value in place with fn (scatter updates, which touch a few
  // rows of a large table). When a reader still holds the current buffer,
  // fn works on a copy that then replaces it, so the reader's value never
  // changes under it. fn must check before it writes: on an error the
  // value must be unchanged. Returns the new value. `copy` makes that copy
  // (Tensor::Clone when null; a GPU's value is copied on the GPU).
  absl::StatusOr<Tensor> Mutate(
      const std::function<absl::Status(Tensor*)>& fn,
      const std::function<absl::StatusOr<Tensor>(const Tensor&)>& copy =
          nullptr,
      const WriteKey* key = nullptr);

  // A replica's copy of the variable (distributed/replica.h): its value
  // in host memory, the writes it holds, and its version, which every
  // write raises.
  struct Copy {
    bool initialized = false;
    Tensor value;
    AppliedWrites applied;
    uint64_t version = 0;
  };
  absl::StatusOr<Copy> Snapshot();
  uint64_t version() const;
  // Installs a primary's copy (a backup's side).
  absl::Status Install(Copy copy);

 private:
  absl::Status CheckValue(const Tensor& value) const;
  // Whether `key` (when given) is already in; otherwise records it and
  // counts a new version.
  bool Seen(const WriteKey* key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const DType dtype_;
  const Shape shape_;
  mutable std::mutex mu_;
  Tensor value_ ABSL_GUARDED_BY(mu_);
  Device* holder_ ABSL_GUARDED_BY(mu_) = nullptr;  // nullptr: host memory
  bool initialized_ ABSL_GUARDED_BY(mu_) = false;
  AppliedWrites applied_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_VARIABLE_H_
