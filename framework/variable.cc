#include "framework/variable.h"

#include "base/strings.h"
#include "framework/device.h"

namespace runnel {

bool Variable::initialized() const {
  std::lock_guard<std::mutex> lock(mu_);
  return initialized_;
}

absl::StatusOr<Tensor> Variable::Read() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    return absl::FailedPreconditionError("variable is not initialized");
  }
  return value_;
}

absl::Status Variable::CheckValue(const Tensor& value) const {
  if (value.dtype() != dtype_ || !shape_.IsCompatibleWith(value.shape())) {
    return absl::InvalidArgumentError(StrCat(
        "cannot assign ", DTypeName(value.dtype()), value.shape().ToString(),
        " to a variable of type ", DTypeName(dtype_), shape_.ToString()));
  }
  return absl::OkStatus();
}

absl::Status Variable::Assign(Tensor value, Device* holder) {
  if (absl::Status s = CheckValue(value); !s.ok()) return s;
  if (holder != nullptr && holder->type() == kDeviceCpu) holder = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  value_ = std::move(value);
  holder_ = holder;
  initialized_ = true;
  return absl::OkStatus();
}

absl::Status Variable::MoveTo(Device* device) {
  if (device != nullptr && device->type() == kDeviceCpu) device = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_ || holder_ == device) return absl::OkStatus();
  Tensor host = value_;
  if (holder_ != nullptr) {
    absl::StatusOr<Tensor> h = holder_->CopyToHost(value_);
    if (!h.ok()) return h.status();
    host = *std::move(h);
  }
  if (device != nullptr) {
    absl::StatusOr<Tensor> d = device->CopyFromHost(host);
    if (!d.ok()) return d.status();
    host = *std::move(d);
  }
  value_ = std::move(host);
  holder_ = device;
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Variable::Update(
    const std::function<absl::StatusOr<Tensor>(const Tensor&)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    return absl::FailedPreconditionError("variable is not initialized");
  }
  absl::StatusOr<Tensor> next = fn(value_);
  if (!next.ok()) return next.status();
  if (absl::Status s = CheckValue(*next); !s.ok()) return s;
  value_ = *next;
  return next;
}

absl::StatusOr<Tensor> Variable::Mutate(
    const std::function<absl::Status(Tensor*)>& fn,
    const std::function<absl::StatusOr<Tensor>(const Tensor&)>& copy) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    return absl::FailedPreconditionError("variable is not initialized");
  }
  if (!value_.RefCountIsOne()) {
    if (copy) {
      absl::StatusOr<Tensor> c = copy(value_);
      if (!c.ok()) return c.status();
      value_ = *std::move(c);
    } else {
      value_ = value_.Clone();
    }
  }
  if (absl::Status s = fn(&value_); !s.ok()) return s;
  return value_;
}

}  // namespace runnel
