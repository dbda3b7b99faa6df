// A device: where kernels run and tensors live. Owns nothing but names; the
// session (or eager context) owns its allocator, pools and resources and
// outlives it. A GPU (kernels/cuda/gpu_device.h) is a subclass whose
// memory the host cannot read: values cross between devices in host memory
// (common_runtime/rendezvous.h), so the executor copies a GPU's sends out of it
// and its receives into it (CopyToHost, CopyFromHost).
#ifndef RUNNEL_FRAMEWORK_DEVICE_H_
#define RUNNEL_FRAMEWORK_DEVICE_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "base/thread_pool.h"
#include "framework/allocator.h"
#include "framework/caching_allocator.h"
#include "framework/resource_mgr.h"
#include "framework/tensor.h"

namespace runnel {

inline constexpr char kDeviceCpu[] = "cpu";
inline constexpr char kDeviceGpu[] = "gpu";

class Device;

// A value a loop's gradient keeps (a stack's, framework/kernel.h) copied
// out of its device into host memory, asynchronously: Device::SwapOut
// starts the copy, Device::SwapIn brings the value back. The device's own
// record of the copy (its host buffer, its event).
class SwappedValue {
 public:
  explicit SwappedValue(Device* device) : device_(device) {}
  virtual ~SwappedValue() = default;
  SwappedValue(const SwappedValue&) = delete;
  SwappedValue& operator=(const SwappedValue&) = delete;
  // The device it was copied out of, and the only one that takes it back.
  Device* device() const { return device_; }

 private:
  Device* device_;
};

class Device {
 public:
  Device(std::string name, std::string type, Allocator* allocator,
         ThreadPool* intra_op_pool, ResourceMgr* resources)
      : name_(std::move(name)),
        type_(std::move(type)),
        allocator_(allocator),
        intra_op_pool_(intra_op_pool),
        resources_(resources) {}
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Full name, "/job:localhost/task:0/device:cpu:0".
  const std::string& name() const { return name_; }
  // Kernel registry key: "cpu", later "gpu".
  const std::string& type() const { return type_; }
  Allocator* allocator() const { return allocator_; }
  ThreadPool* intra_op_pool() const { return intra_op_pool_; }
  ResourceMgr* resources() const { return resources_; }

  // `t` (in this device's memory) in host memory, once its producer has
  // finished; and the reverse. The CPU's are `t` itself. Called by the
  // executor for every value a `_send` sends or a `_recv` receives.
  virtual absl::StatusOr<Tensor> CopyToHost(const Tensor& t) { return t; }
  virtual absl::StatusOr<Tensor> CopyFromHost(const Tensor& t) { return t; }
  // Whether a loop's gradient may keep its values in host memory instead
  // of this device's (swap_memory, docs/training.md): a device whose
  // memory is not the host's and that copies asynchronously. The CPU's
  // values are in host memory already.
  virtual bool SwapsToHost() const { return false; }
  // Starts copying `t` (in this device's memory, written by the kernels
  // started before) to host memory and returns at once; the copy frees
  // `t`'s memory when it is done. SwapIn gives the value back in this
  // device's memory, ready for the kernels started after it, without
  // waiting on the host. Unimplemented where SwapsToHost() is false.
  virtual absl::StatusOr<std::shared_ptr<SwappedValue>> SwapOut(
      const Tensor& /*t*/) {
    return absl::UnimplementedError(name_ + " does not swap to host memory");
  }
  virtual absl::StatusOr<Tensor> SwapIn(const SwappedValue& /*v*/) {
    return absl::UnimplementedError(name_ + " does not swap to host memory");
  }
  // What `:devices` adds after the name: the hardware and its memory
  // ("NVIDIA H100, 1.2 GiB in use, ..."); "" for the CPU.
  virtual std::string Describe() const { return ""; }
  // The memory its caching allocator holds (a GPU's: in use, reserved,
  // peaks), for the trace and `report` (common_runtime/trace.h); none for the
  // CPU.
  virtual std::optional<CachingAllocatorStats> MemoryStats() const {
    return std::nullopt;
  }

 private:
  std::string name_;
  std::string type_;
  Allocator* allocator_;
  ThreadPool* intra_op_pool_;
  ResourceMgr* resources_;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_DEVICE_H_
