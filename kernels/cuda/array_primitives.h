// The GPU's primitives for the array kernels both devices share
// (kernels/common/array_kernels.h), and what the GPU's own array kernels
// share (slice_kernels.cc, grad_kernels.cc, sparse_kernels.cc): gather's
// plan, host vectors copied to the GPU, sums of rows by index.
#ifndef RUNNEL_KERNELS_CUDA_ARRAY_PRIMITIVES_H_
#define RUNNEL_KERNELS_CUDA_ARRAY_PRIMITIVES_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/kernel.h"

namespace runnel {

struct GpuArrays {
  using Dims = std::vector<int64_t>;
  // The shape function sees the inputs the kernel takes in host memory.
  static absl::StatusOr<std::vector<Shape>> OutputShapes(
      OpKernelContext* ctx, const OpKernel& kernel);
  // Size-1 dims dropped, neighbours contiguous on both sides merged, a
  // wholly contiguous block one memcpy, any other one strided-copy launch.
  static absl::Status Copy(OpKernelContext* ctx, size_t esz, const Dims& dims,
                           const void* src, const Dims& src_strides, void* dst,
                           const Dims& dst_strides);
  // One strided copy per part.
  static absl::Status CopyAlongAxis(OpKernelContext* ctx, size_t esz,
                                    int64_t outer, void* big,
                                    const std::vector<void*>& parts,
                                    const Dims& part_elements, bool join);
  static absl::Status Fill(OpKernelContext* ctx, void* dst, int64_t n,
                           const void* value, size_t esz);
  static absl::Status Zero(OpKernelContext* ctx, void* dst, size_t bytes);

  // gather's params viewed as [outer, n, inner] around the axis, and the
  // indices, checked as on the CPU (they are in host memory).
  struct GatherPlan {
    int axis = 0;
    int64_t outer = 1, n = 0, inner = 1;
    std::vector<int64_t> indices;
  };
  // gather's (and gather_grad's) plan; errors begin with `prefix`.
  static absl::StatusOr<GatherPlan> PlanGather(OpKernelContext* ctx,
                                               std::string_view prefix);
  // `v` in the GPU's memory, for a kernel on its compute stream.
  static absl::StatusOr<Tensor> ToGpu(OpKernelContext* ctx,
                                      const std::vector<int64_t>& v);
  // The sum of the rows of `dy` (viewed as [outer, m, inner]) by `indices`
  // (each in [0, n)) into `out` ([outer, n, inner]), deterministic, in the
  // CPU's order: gather_grad and unsorted_segment_sum.
  static absl::Status SumRowsByIndex(OpKernelContext* ctx, const Tensor& dy,
                                     const std::vector<int64_t>& indices,
                                     int64_t outer, int64_t n, int64_t inner,
                                     Tensor* out);
};

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CUDA_ARRAY_PRIMITIVES_H_
