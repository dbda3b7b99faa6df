// A variable: a typed, shaped value that persists across runs, held in
// host memory or in the memory of the device that last used it.
//
// Thread-safety: a Variable's value is copy-on-write: readers get the current
// Tensor (sharing its buffer), writers install a new buffer, so a value read
// earlier is never changed under its reader.
#ifndef RUNNEL_FRAMEWORK_VARIABLE_H_
#define RUNNEL_FRAMEWORK_VARIABLE_H_

#include <functional>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "framework/resource_mgr.h"
#include "framework/tensor.h"

namespace runnel {

class Device;

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

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_VARIABLE_H_
