// Scatter updates of a variable's rows on the GPU (state.h).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/state.h"

namespace runnel::cuda {
namespace {

// Integer add and sub wrap, as on the CPU: computed in the unsigned twin.
template <typename T>
__device__ __forceinline__ T Combine(ScatterOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(op == ScatterOp::kAdd ? U(a) + U(b) : U(a) - U(b));
  } else {
    return op == ScatterOp::kAdd ? a + b : a - b;
  }
}

// One thread per (destination, column), grid-stride: it walks the update
// rows of its destination in order.
template <typename T>
__global__ void ScatterKernel(ScatterOp op, T* var, const T* updates,
                              int64_t row, const int64_t* rows,
                              const int64_t* offsets, const int64_t* order,
                              int64_t total) {
  for (int64_t t = FirstIndex(); t < total; t += GridStride()) {
    const int64_t u = t / row, k = t % row;
    T* dst = var + rows[u] * row + k;
    const int64_t begin = offsets[u], end = offsets[u + 1];
    if (op == ScatterOp::kUpdate) {
      *dst = updates[order[end - 1] * row + k];
      continue;
    }
    T acc = *dst;
    for (int64_t j = begin; j < end; ++j) {
      acc = Combine(op, acc, updates[order[j] * row + k]);
    }
    *dst = acc;
  }
}

template <typename T>
cudaError_t Launch(ScatterOp op, void* var, const void* updates, int64_t row,
                   const int64_t* rows, const int64_t* offsets,
                   const int64_t* order, int64_t num_rows,
                   cudaStream_t stream) {
  const int64_t total = num_rows * row;
  if (total == 0) return cudaSuccess;
  ScatterKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
      op, static_cast<T*>(var), static_cast<const T*>(updates), row, rows,
      offsets, order, total);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchScatter(ScatterOp op, ElemType type, void* var,
                          const void* updates, int64_t row, const int64_t* rows,
                          const int64_t* offsets, const int64_t* order,
                          int64_t num_rows, cudaStream_t stream) {
  switch (type) {
    case ElemType::kF32:
      return Launch<float>(op, var, updates, row, rows, offsets, order,
                           num_rows, stream);
    case ElemType::kF64:
      return Launch<double>(op, var, updates, row, rows, offsets, order,
                            num_rows, stream);
    case ElemType::kI32:
      return Launch<int32_t>(op, var, updates, row, rows, offsets, order,
                             num_rows, stream);
    case ElemType::kI64:
      return Launch<int64_t>(op, var, updates, row, rows, offsets, order,
                             num_rows, stream);
    default:
      return cudaErrorNotSupported;
  }
  return cudaErrorNotSupported;
}

}  // namespace runnel::cuda
