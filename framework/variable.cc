#include "framework/variable.h"

#include "base/strings.h"
#include "framework/device.h"

namespace runnel {

bool AppliedWrites::Contains(const WriteKey& key) const {
  auto it = by_writer.find(key.writer);
  if (it == by_writer.end()) return false;
  return key.seq < it->second.seq ||
         (key.seq == it->second.seq && it->second.writes.contains(key.write));
}

void AppliedWrites::Add(const WriteKey& key) {
  Latest& latest = by_writer[key.writer];
  if (key.seq > latest.seq) {
    latest.seq = key.seq;
    latest.writes.clear();
  }
  latest.writes.insert(key.write);
}

bool Variable::Seen(const WriteKey* key) {
  if (key != nullptr) {
    if (applied_.Contains(*key)) return true;
    applied_.Add(*key);
  }
  ++version_;
  return false;
}

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

absl::Status Variable::Assign(Tensor value, Device* holder,
                              const WriteKey* key) {
  if (absl::Status s = CheckValue(value); !s.ok()) return s;
  if (holder != nullptr && holder->type() == kDeviceCpu) holder = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (Seen(key)) return absl::OkStatus();
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
    const std::function<absl::StatusOr<Tensor>(const Tensor&)>& fn,
    const WriteKey* key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    return absl::FailedPreconditionError("variable is not initialized");
  }
  if (key != nullptr && applied_.Contains(*key)) return value_;
  absl::StatusOr<Tensor> next = fn(value_);
  if (!next.ok()) return next.status();
  if (absl::Status s = CheckValue(*next); !s.ok()) return s;
  Seen(key);
  value_ = *next;
  return next;
}

absl::StatusOr<Tensor> Variable::Mutate(
    const std::function<absl::Status(Tensor*)>& fn,
    const std::function<absl::StatusOr<Tensor>(const Tensor&)>& copy,
    const WriteKey* key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    return absl::FailedPreconditionError("variable is not initialized");
  }
  if (key != nullptr && applied_.Contains(*key)) return value_;
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
  Seen(key);
  return value_;
}

uint64_t Variable::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

absl::StatusOr<Variable::Copy> Variable::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  Copy c;
  c.applied = applied_;
  c.version = version_;
  if (!initialized_) return c;
  c.initialized = true;
  c.value = value_;
  if (holder_ != nullptr) {
    absl::StatusOr<Tensor> h = holder_->CopyToHost(value_);
    if (!h.ok()) return h.status();
    c.value = *std::move(h);
  }
  return c;
}

absl::Status Variable::Install(Copy copy) {
  if (copy.initialized) {
    if (absl::Status s = CheckValue(copy.value); !s.ok()) return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  initialized_ = copy.initialized;
  value_ = std::move(copy.value);
  holder_ = nullptr;
  applied_ = std::move(copy.applied);
  ++version_;
  return absl::OkStatus();
}

}  // namespace runnel
