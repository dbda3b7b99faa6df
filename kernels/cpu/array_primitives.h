// The CPU's primitives for the array kernels both devices share
// (kernels/common/array_kernels.h): strided copies, copies along an axis
// and fills, split over the intra-op pool (array_util.h).
#ifndef RUNNEL_KERNELS_CPU_ARRAY_PRIMITIVES_H_
#define RUNNEL_KERNELS_CPU_ARRAY_PRIMITIVES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/kernel.h"

namespace runnel {

struct CpuArrays {
  using Dims = std::vector<int64_t>;
  static absl::StatusOr<std::vector<Shape>> OutputShapes(OpKernelContext* ctx,
                                                         const OpKernel&);
  static absl::Status Copy(OpKernelContext* ctx, size_t esz, const Dims& dims,
                           const void* src, const Dims& src_strides, void* dst,
                           const Dims& dst_strides);
  static absl::Status CopyAlongAxis(OpKernelContext* ctx, size_t esz,
                                    int64_t outer, void* big,
                                    const std::vector<void*>& parts,
                                    const Dims& part_elements, bool join);
  static absl::Status Fill(OpKernelContext* ctx, void* dst, int64_t n,
                           const void* value, size_t esz);
  static absl::Status Zero(OpKernelContext* ctx, void* dst, size_t bytes);
};

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CPU_ARRAY_PRIMITIVES_H_
