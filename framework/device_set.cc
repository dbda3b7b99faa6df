#include "framework/device_set.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "base/status_macros.h"
#include "base/strings.h"

namespace runnel {
namespace {

absl::flat_hash_map<std::string, std::unique_ptr<DeviceFactory>>& Factories() {
  static auto* const kFactories =
      new absl::flat_hash_map<std::string, std::unique_ptr<DeviceFactory>>();
  return *kFactories;
}

}  // namespace

std::unique_ptr<DeviceFactory> RegisterDeviceFactory(
    const std::string& type, std::unique_ptr<DeviceFactory> factory) {
  std::swap(Factories()[type], factory);
  return factory;
}

DeviceFactory* FindDeviceFactory(const std::string& type) {
  auto it = Factories().find(type);
  return it == Factories().end() ? nullptr : it->second.get();
}

int VisibleGpus(std::string* why_none) {
  DeviceFactory* f = FindDeviceFactory(kDeviceGpu);
  if (f == nullptr) {
    *why_none = "this build has no CUDA (RUNNEL_CUDA is off)";
    return 0;
  }
  return f->Count(why_none);
}

DeviceSet::DeviceSet(int cpus, int threads, ResourceMgr* resources,
                     ThreadPool* shared_pool, const std::string& task)
    : task_(task) {
  cpus = std::max(cpus, 1);
  if (shared_pool == nullptr) {
    own_pool_ =
        std::make_unique<ThreadPool>(std::max(threads, 1), "runnel-intra");
    shared_pool = own_pool_.get();
  }
  for (int k = 0; k < cpus; ++k) {
    std::string name = StrCat(task, "/device:cpu:", k);
    specs_.push_back(*DeviceSpec::Parse(name));
    devices_.push_back(std::make_unique<Device>(std::move(name), kDeviceCpu,
                                                CpuAllocator::Get(),
                                                shared_pool, resources));
  }
  num_local_ = cpus;
}

absl::Status DeviceSet::AddGpus(int count, ResourceMgr* resources,
                                const GpuOptions& options) {
  if (count == 0) return absl::OkStatus();
  std::string why;
  const int visible = VisibleGpus(&why);
  if (count > visible) {
    return absl::InvalidArgumentError(
        visible == 0
            ? StrCat("asked for ", count, " GPU", count == 1 ? "" : "s",
                     " but none is visible: ", why)
            : StrCat("asked for ", count, " GPUs but only ", visible,
                     " is visible"));
  }
  if (visible == 0) gpu_note_ = why;
  if (count < 0) count = visible;
  DeviceFactory* factory = FindDeviceFactory(kDeviceGpu);
  for (int k = 0; k < count; ++k) {
    std::string name = StrCat(task_, "/device:gpu:", k);
    RN_ASSIGN_OR_RETURN(std::unique_ptr<Device> d,
                        factory->Create(k, name, resources, options));
    specs_.push_back(*DeviceSpec::Parse(name));
    devices_.push_back(std::move(d));
  }
  num_local_ = static_cast<int>(devices_.size());
  return absl::OkStatus();
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
