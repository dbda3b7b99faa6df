// The data-movement kernels (array.cu) behind the GPU's shape ops
// (array_kernels.cc): one strided copy serves transpose, slice, tile,
// broadcast_to, concat, split and pad; one fill serves the creation ops.
// Plain C++ (nvcc compiles array.cu).
#ifndef RUNNEL_KERNELS_CUDA_ARRAY_H_
#define RUNNEL_KERNELS_CUDA_ARRAY_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

// A block of elements copied from src to dst: element (i_0, ..., i_r-1)
// (innermost last) goes from src[sum(i_k * src[k])] to dst[sum(i_k *
// dst[k])], strides in elements. A source stride may be 0 (repeat).
inline constexpr int kMaxCopyDims = 16;
struct CopyPlan {
  int rank = 0;
  int64_t dims[kMaxCopyDims] = {};
  int64_t src[kMaxCopyDims] = {};
  int64_t dst[kMaxCopyDims] = {};
};

// Copies the block of `plan` (its elements `elem_size` bytes: 1, 2, 4 or
// 8). Launches nothing for an empty block.
cudaError_t LaunchStridedCopy(const CopyPlan& plan, size_t elem_size,
                              const void* src, void* dst, cudaStream_t stream);

// Sets `n` elements of `elem_size` bytes (1, 2, 4 or 8) at dst to the
// element whose bytes are at `value` (host memory, read at the call).
cudaError_t LaunchFill(void* dst, int64_t n, const void* value,
                       size_t elem_size, cudaStream_t stream);

// gather along an axis: params viewed as [outer, n, inner] (inner in
// elements of `elem_size` bytes: 1, 2, 4 or 8), out as [outer, m, inner],
// out[o, j, :] = params[o, indices[j], :]. The indices (on the GPU) are in
// [0, n): checked on the host before.
cudaError_t LaunchGather(const void* params, const int64_t* indices, void* out,
                         int64_t outer, int64_t n, int64_t m, int64_t inner,
                         size_t elem_size, cudaStream_t stream);

// gather_grad: out ([outer, n, inner]) = the rows of dy ([outer, m,
// inner]) added up by index: out[o, r, :] = sum of dy[o, j, :] over the j
// with indices[j] == r, in increasing j, from 0. Sort-free and without
// atomics: `order` holds the j grouped by their index (row r's are
// order[starts[r]] .. order[starts[r + 1] - 1], increasing), made on the
// host; each output element adds its own rows, so the sums are
// deterministic and in the CPU kernel's order.
// The sums are in the CPU's element type rules: 16-bit floats add up in
// f32, integers wrap. bool is not summed (cudaErrorNotSupported).
cudaError_t LaunchGatherGrad(ElemType type, const void* dy,
                             const int64_t* starts, const int64_t* order,
                             void* out, int64_t outer, int64_t n, int64_t m,
                             int64_t inner, cudaStream_t stream);

// one_hot: out viewed as [outer, depth, inner] (elements of `elem_size`
// bytes: 1, 2, 4 or 8), indices (on the GPU) as [outer, inner]:
// out[o, d, i] = indices[o, i] == d ? on : off, so an index outside
// [0, depth) gives a row of off. on_value and off_value point to one
// element each in host memory, read at the call.
// The indices are integers (i8, u8, i32, i64).
cudaError_t LaunchOneHot(ElemType index_type, const void* indices, void* out,
                         size_t elem_size, int64_t outer, int64_t depth,
                         int64_t inner, const void* on_value,
                         const void* off_value, cudaStream_t stream);

// tile_grad: x's gradient (dims `dims`) from dy, x tiled `multiples` times
// (dy's dims are dims[k] * multiples[k], its strides in elements
// dy_strides): each element adds the elements of its tiles.
struct TilePlan {
  int rank = 0;
  int64_t dims[kMaxCopyDims] = {};
  int64_t multiples[kMaxCopyDims] = {};
  int64_t dy_strides[kMaxCopyDims] = {};
};
cudaError_t LaunchTileGrad(ElemType type, const TilePlan& plan, const void* dy,
                           void* out, cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_ARRAY_H_
