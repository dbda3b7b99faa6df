// The control-flow kernels (control_flow_kernels.cc) for one device type.
#ifndef RUNNEL_KERNELS_COMMON_CONTROL_FLOW_KERNELS_H_
#define RUNNEL_KERNELS_COMMON_CONTROL_FLOW_KERNELS_H_

#include <string>

namespace runnel {

// Registers enter, exit, next_iteration, merge, switch, loop_cond,
// control_trigger and the stacks' ops for devices of type `device`, every
// dtype, with the inputs and outputs they read on the host in host memory
// (HostMemory, framework/kernel.h). The CPU's are registered at start-up;
// another device's (kernels/cuda/control_flow_kernels.cc) by its own code.
void RegisterControlFlowKernels(const std::string& device);

}  // namespace runnel

#endif  // RUNNEL_KERNELS_COMMON_CONTROL_FLOW_KERNELS_H_
