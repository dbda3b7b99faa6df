// The devices a session places nodes on (docs/devices.md). Locally: one or
// more CPU devices (`runnel run --devices cpu=N` splits the cores between
// N of them, each with its own intra-op pool), sharing the session's
// resource manager, since they share memory. In a cluster (docs/cluster.md)
// the local devices are named after this task ("/job:worker/task:1/...")
// and the other tasks' devices join as remote ones: nodes are placed there
// only when a `device` block asks, and run there through the cluster.
// GPUs ("/gpu:K", docs/gpu.md) join after the CPUs when a kernels library
// provides them (kernels/cuda registers a DeviceFactory for "gpu"); the
// runtime itself names no device API.
#ifndef RUNNEL_FRAMEWORK_DEVICE_SET_H_
#define RUNNEL_FRAMEWORK_DEVICE_SET_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/thread_pool.h"
#include "framework/device.h"
#include "framework/device_spec.h"
#include "framework/resource_mgr.h"

namespace runnel {

struct GpuOptions {
  // The most bytes each GPU's allocator holds (`--gpu-memory`); 0: no cap
  // but the GPU's memory.
  size_t memory_limit = 0;
};

// Makes the devices of one type other than the CPU. Registered once at
// static initialisation by the library that implements them; the devices it
// makes share per-GPU state (streams, the caching allocator) process-wide,
// so that sessions come and go cheaply.
class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;
  // How many are visible to this process; when none, `why_none` says why
  // ("no CUDA driver", "no GPU").
  virtual int Count(std::string* why_none) = 0;
  // Device `index` (< Count), with full name `name`.
  virtual absl::StatusOr<std::unique_ptr<Device>> Create(
      int index, const std::string& name, ResourceMgr* resources,
      const GpuOptions& options) = 0;
};
// Returns the factory it replaces (tests put a fake in its place and back).
std::unique_ptr<DeviceFactory> RegisterDeviceFactory(
    const std::string& type, std::unique_ptr<DeviceFactory> factory);
DeviceFactory* FindDeviceFactory(const std::string& type);

// The GPUs this process sees; with none, `why_none` says why (also "this
// build has no CUDA (RUNNEL_CUDA is off)").
int VisibleGpus(std::string* why_none);

class DeviceSet {
 public:
  // `cpus` CPU devices ("/job:localhost/task:0/device:cpu:K") sharing one
  // intra-op pool, `shared_pool` or else one of `threads` threads (as
  // TensorFlow's CPU devices share its intra-op pool): a device at work
  // alone has every core, two at work share them. (Pools of threads / cpus
  // each left a graph placed on one device a fraction of the cores: the
  // Fashion MLP's step took 1.5 times as long on cpu=2 as on cpu=1.)
  DeviceSet(int cpus, int threads, ResourceMgr* resources,
            ThreadPool* shared_pool = nullptr,
            const std::string& task = "/job:localhost/task:0");
  ~DeviceSet();
  DeviceSet(const DeviceSet&) = delete;
  DeviceSet& operator=(const DeviceSet&) = delete;

  // Adds `count` GPUs ("<task>/device:gpu:K", K from 0) after the CPUs,
  // or every visible one when `count` is -1 (none is no error then, and
  // gpu_note() says why). Asking for more than are visible is an error
  // that says why. Call before AddRemote.
  absl::Status AddGpus(int count, ResourceMgr* resources,
                       const GpuOptions& options = {});
  // Why the set has no GPU ("" when it has one, or none was asked for).
  const std::string& gpu_note() const { return gpu_note_; }

  // Another task's device (a full name): it has no pool or resources here.
  void AddRemote(const std::string& name);

  int size() const { return static_cast<int>(devices_.size()); }
  // Whether device `i` belongs to this process's task.
  bool is_local(int i) const { return i < num_local_; }
  int num_local() const { return num_local_; }
  const std::string& task() const { return task_; }
  Device* device(int i) const { return devices_[i].get(); }
  // Devices in order; nullptr when no device has this full name.
  Device* Find(const std::string& name) const;
  int IndexOf(const std::string& name) const;
  // The indices of the devices `spec` matches, in order.
  std::vector<int> Matching(const DeviceSpec& spec) const;
  // "/cpu:0, /cpu:1": the short names, for messages and `:devices`.
  std::string Describe() const;
  // "/cpu:1" for "/job:localhost/task:0/device:cpu:1".
  static std::string ShortName(const std::string& full);

 private:
  std::unique_ptr<ThreadPool> own_pool_;  // without a shared pool
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<DeviceSpec> specs_;
  std::string task_;
  std::string gpu_note_;
  int num_local_ = 0;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_DEVICE_SET_H_
