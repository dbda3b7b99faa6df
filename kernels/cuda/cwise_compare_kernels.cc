// GPU kernels of the comparisons (bool results) and the binary logical ops
// (the CPU's: kernels/cpu/cwise_compare_kernels.cc).
#include "kernels/cuda/cwise_kernels.h"

namespace runnel::gpu_cwise {

namespace {

RUNNEL_STATIC_INIT(GpuCwiseCompareKernels) {
  Binary<BinaryOp::kEqual>("equal", kAll);
  Binary<BinaryOp::kNotEqual>("not_equal", kAll);
  Binary<BinaryOp::kLess>("less", kNumbers);
  Binary<BinaryOp::kLessEqual>("less_equal", kNumbers);
  Binary<BinaryOp::kGreater>("greater", kNumbers);
  Binary<BinaryOp::kGreaterEqual>("greater_equal", kNumbers);
  Binary<BinaryOp::kLogicalAnd>("logical_and", kBools);
  Binary<BinaryOp::kLogicalOr>("logical_or", kBools);
}

}  // namespace
}  // namespace runnel::gpu_cwise
