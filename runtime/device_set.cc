#include "runtime/device_set.h"

#include <algorithm>

#include "runtime/strings.h"

namespace runnel {

DeviceSet::DeviceSet(int cpus, int threads, ResourceMgr* resources,
                     ThreadPool* shared_pool, const std::string& task)
    : task_(task) {
  cpus = std::max(cpus, 1);
  const int per_device = std::max(threads / cpus, 1);
  for (int k = 0; k < cpus; ++k) {
    ThreadPool* pool = shared_pool;
    if (pool == nullptr || cpus > 1) {
      pools_.push_back(std::make_unique<ThreadPool>(per_device));
      pool = pools_.back().get();
    }
    std::string name = StrCat(task, "/device:cpu:", k);
    specs_.push_back(*DeviceSpec::Parse(name));
    devices_.push_back(std::make_unique<Device>(
        std::move(name), kDeviceCpu, CpuAllocator::Get(), pool, resources));
  }
  num_local_ = cpus;
}

void DeviceSet::AddRemote(const std::string& name) {
  absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(name);
  specs_.push_back(spec.ok() ? *spec : DeviceSpec{});
  devices_.push_back(
      std::make_unique<Device>(name, kDeviceCpu, nullptr, nullptr, nullptr));
}

DeviceSet::~DeviceSet() = default;

int DeviceSet::IndexOf(const std::string& name) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i]->name() == name) return static_cast<int>(i);
  }
  return -1;
}

Device* DeviceSet::Find(const std::string& name) const {
  const int i = IndexOf(name);
  return i < 0 ? nullptr : devices_[i].get();
}

std::vector<int> DeviceSet::Matching(const DeviceSpec& spec) const {
  std::vector<int> out;
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (spec.Matches(specs_[i])) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::string DeviceSet::ShortName(const std::string& full) {
  const std::string local = "/job:localhost/task:0/device:";
  if (full.rfind(local, 0) == 0) return "/" + full.substr(local.size());
  return full;
}

std::string DeviceSet::Describe() const {
  std::string out;
  for (const auto& d : devices_) {
    if (!out.empty()) out += ", ";
    out += ShortName(d->name());
  }
  return out;
}

}  // namespace runnel
