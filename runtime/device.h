// A device: where kernels run and tensors live. Owns nothing but names; the
// session (or eager context) owns its allocator, pools and resources and
// outlives it.
#ifndef RUNNEL_RUNTIME_DEVICE_H_
#define RUNNEL_RUNTIME_DEVICE_H_

#include <string>

#include "runtime/allocator.h"
#include "runtime/resource_mgr.h"
#include "runtime/thread_pool.h"

namespace runnel {

inline constexpr char kDeviceCpu[] = "cpu";

class Device {
 public:
  Device(std::string name, std::string type, Allocator* allocator,
         ThreadPool* intra_op_pool, ResourceMgr* resources)
      : name_(std::move(name)),
        type_(std::move(type)),
        allocator_(allocator),
        intra_op_pool_(intra_op_pool),
        resources_(resources) {}

  // Full name, "/job:localhost/task:0/device:cpu:0".
  const std::string& name() const { return name_; }
  // Kernel registry key: "cpu", later "gpu".
  const std::string& type() const { return type_; }
  Allocator* allocator() const { return allocator_; }
  ThreadPool* intra_op_pool() const { return intra_op_pool_; }
  ResourceMgr* resources() const { return resources_; }

 private:
  std::string name_;
  std::string type_;
  Allocator* allocator_;
  ThreadPool* intra_op_pool_;
  ResourceMgr* resources_;
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_DEVICE_H_
