// The control-flow ops on the GPU: the CPU's kernels, which move tensor
// handles and read only a switch's predicate, a loop's condition and a
// stack's handle and index, all of which they take in host memory (the
// executor copies a predicate computed on the GPU out of it; docs/gpu.md,
// Control flow).
#include "kernels/common/control_flow_kernels.h"

#include "framework/device.h"
#include "framework/op_registry.h"

namespace runnel {
namespace {

RUNNEL_STATIC_INIT(GpuControlFlowKernels) {
  RegisterControlFlowKernels(kDeviceGpu);
}

}  // namespace
}  // namespace runnel
