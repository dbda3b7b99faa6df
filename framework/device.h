// A device: where kernels run and tensors live. Owns nothing but names; the
// session (or eager context) owns its allocator, pools and resources and
// outlives it. A GPU (kernels/cuda/gpu_device.h) is a subclass whose
// memory the host cannot read: values cross between devices in host memory
// (common_runtime/rendezvous.h), so the executor copies a GPU's sends out of it
// and its receives into it (CopyToHost, CopyFromHost).
#ifndef RUNNEL_FRAMEWORK_DEVICE_H_
#define RUNNEL_FRAMEWORK_DEVICE_H_

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
